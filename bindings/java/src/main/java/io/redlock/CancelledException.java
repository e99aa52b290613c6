package io.redlock;

/**
 * A wait for a lock was cancelled because the waiting thread was interrupted
 * (REDLOCK_ECANCELED); whatever the attempt under way had taken was released. {@link RLock}
 * turns it into {@link InterruptedException} where the Lock contract allows one.
 */
public class CancelledException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public CancelledException(int code, String message) {
        super(code, message);
    }
}
