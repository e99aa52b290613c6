package io.redlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Two clients of the five nodes whose client keeps its locks with a watchdog lease of LEASE_MS
 * (renewed every LEASE_MS / 3); other keeps its own with the default lease. With checks that a
 * kept lock stays held.
 */
abstract class KeptClients extends TwoClients {
    static final long LEASE_MS = 900;

    @Override
    Map<String, String> clientOptions() {
        return Map.of("watchdog_lease_ms", Long.toString(LEASE_MS));
    }

    static long elapsedMs(long sinceNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sinceNanos);
    }

    /**
     * One attempt of rival: whether it took the lock. Too few answers in time (NoQuorum: the
     * clients' node deadline is short, and a busy machine misses it now and then) is not taking
     * it either.
     */
    private static boolean rivalTakes(RLock rival) throws Exception {
        try {
            return rival.tryLock(0, 10, TimeUnit.SECONDS);
        } catch (NoQuorumException slow) {
            return false;
        }
    }

    /**
     * Whether the nodes say lock is held; too few answers in time (NoQuorum, as for rivalTakes)
     * tells nothing, and counts as held.
     */
    private static boolean lockedUnlessSlow(RLock lock) {
        try {
            return lock.isLocked();
        } catch (NoQuorumException slow) {
            return true;
        }
    }

    /**
     * For forMs: rival (another client) is refused again and again, and lock stays held, with
     * some validity left but never more than the watchdog lease, and not lost.
     */
    static void assertStaysHeld(RLock lock, RLock rival, long forMs, long leaseMs)
            throws Exception {
        long start = System.nanoTime();
        int checks = 0;
        while (elapsedMs(start) < forMs) {
            assertFalse(rivalTakes(rival),
                    "another client took a kept lock after " + elapsedMs(start) + " ms");
            long validity = lock.remainingValidity(TimeUnit.MILLISECONDS);
            assertTrue(validity > 0 && validity <= leaseMs,
                    "validity " + validity + " ms after " + elapsedMs(start) + " ms");
            assertTrue(lockedUnlessSlow(lock), "not locked after " + elapsedMs(start) + " ms");
            assertFalse(lock.isLost());
            checks++;
            Thread.sleep(100);
        }
        assertTrue(checks >= forMs / 300, "only " + checks + " checks");
    }

    /**
     * The lock of keys (resource names), taken by client without a lease, is kept past three
     * leases against other's plain lock of them, and released at once by unlock.
     */
    void assertKeptThenReleased(RLock lock, String... keys) throws Exception {
        assertTrue(lock.isHeldByCurrentThread());
        for (String key : keys) {
            long pttl = Long.parseLong(nodes.call(1, "PTTL", keyPrefix() + key));
            assertTrue(pttl > 0 && pttl <= LEASE_MS, "PTTL " + pttl + ": the watchdog lease");
        }
        RLock rival = other.getMultiLock(keys);
        assertStaysHeld(lock, rival, 3 * LEASE_MS + 300, LEASE_MS);
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertFalse(lock.isLocked());
        assertTrue(rival.tryLock(0, 10, TimeUnit.SECONDS), "released at once by unlock");
        rival.unlock();
    }
}
