package io.redlock;

/**
 * Nodes answered with a Redis error (REDLOCK_EREDIS), such as READONLY or OOM; the message has
 * the nodes' replies.
 */
public class RedisErrorException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public RedisErrorException(int code, String message) {
        super(code, message);
    }
}
