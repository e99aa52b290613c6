package io.redlock;

/**
 * The lock's key, or a key kept beside it (a fair lock's queue), exists on the nodes and is not
 * of its kind (REDLOCK_EWRONGTYPE): another program uses that key.
 */
public class WrongTypeException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public WrongTypeException(int code, String message) {
        super(code, message);
    }
}
