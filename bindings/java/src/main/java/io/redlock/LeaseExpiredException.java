package io.redlock;

/**
 * A quorum of nodes granted the lock, but acquiring took the whole lease (REDLOCK_EEXPIRED):
 * the lease is too short for the nodes' latency.
 */
public class LeaseExpiredException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public LeaseExpiredException(int code, String message) {
        super(code, message);
    }
}
