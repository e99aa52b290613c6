package io.redlock;

/**
 * The lock's key exists on the nodes and is not a lock (REDLOCK_EWRONGTYPE): another program
 * uses that key.
 */
public class WrongTypeException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public WrongTypeException(int code, String message) {
        super(code, message);
    }
}
