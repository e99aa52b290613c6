package io.redlock;

/**
 * A call on a {@link Redlock} client that is closed, or on a lock of it: thrown at once by every
 * method that acts (getLock and the other getters, lock, tryLock, unlock, extend, isLocked,
 * ping, ...), and by a wait under way when the client closes. It is an
 * {@link IllegalStateException}, as a call out of order is; the rule is the same in every
 * language (docs/locks.md, "A closed client").
 */
public class ClientClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /** what: the call refused ("unlock", ...), or null. */
    public ClientClosedException(String what) {
        super(what == null ? "the Redlock client is closed"
                : what + ": the Redlock client is closed");
    }
}
