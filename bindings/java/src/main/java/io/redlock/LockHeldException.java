package io.redlock;

/**
 * The resource is held by someone else (REDLOCK_ELOCKED). The locking methods of {@link RLock}
 * report it by returning false or by waiting, so it reaches callers only from code that uses
 * the raw layer.
 */
public class LockHeldException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public LockHeldException(int code, String message) {
        super(code, message);
    }
}
