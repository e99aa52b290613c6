package io.redlock;

/**
 * Too few nodes answered to decide (REDLOCK_ENOQUORUM): nodes are down, unreachable or slower
 * than node_timeout_ms. {@link RLock#tryLock()} returns false instead; {@link RLock#unlock()}
 * and {@link RLock#extend} throw it.
 */
public class NoQuorumException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public NoQuorumException(int code, String message) {
        super(code, message);
    }
}
