package io.redlock;

/**
 * The library refused an argument (REDLOCK_EINVAL): a bad node URI, the same node twice, an
 * unknown option or a bad option value, a name longer than 4096 bytes with its key_prefix, a
 * semaphore's permits out of range or not the number its nodes hold.
 */
public class InvalidArgumentException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(int code, String message) {
        super(code, message);
    }
}
