package io.redlock;

/**
 * The lock is not held any more (REDLOCK_ENOTHELD): its lease ran out, it was lost on too many
 * nodes, or it was already released. From {@link RLock#unlock()} it means the critical section
 * may not have been exclusive.
 */
public class LockNotHeldException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public LockNotHeldException(int code, String message) {
        super(code, message);
    }
}
