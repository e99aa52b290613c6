package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.internal.RedlockNativeConstants;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * What the binding checks and decodes through the library: the same message for the same bad
 * input as in every language, the health's "none" as an empty Optional, the options and their
 * defaults from the library's table. No node is contacted: the checks come first.
 */
class ChecksTest {
    private static final String LEASE =
            "lease must be a time above 0 ms and at most 2147483647 ms, not ";
    private static final String WAIT = "wait must be a finite time of 0 ms or more, not ";
    private static final String PERMITS = "permits must be a whole number from 1 to 10000, not ";

    private static Redlock lonely() {
        return Redlock.create("redis://127.0.0.1:1");
    }

    private static void refused(String message, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertEquals(message, e.getMessage());
    }

    @Test
    void aBadTimeHasTheLibrarysMessage() {
        try (Redlock client = lonely()) {
            RLock lock = client.getLock("job");
            // -1 of any unit is RLock.KEPT: a negative lease is another number.
            refused(LEASE + "-1000 ms", () -> lock.tryLock(0, -1000, TimeUnit.MILLISECONDS));
            refused(LEASE + "0 ms", () -> lock.tryLock(0, 0, TimeUnit.SECONDS));
            refused(LEASE + "2592000000 ms", () -> lock.tryLock(0, 30, TimeUnit.DAYS));
            refused(LEASE + "0 ms", () -> lock.tryLock(0, 400, TimeUnit.NANOSECONDS));
            refused(WAIT + "-1000 ms", () -> lock.tryLock(-1, 10, TimeUnit.SECONDS));
            refused(WAIT + "-1000 ms", () -> lock.tryLockAsync(-1, 10, TimeUnit.SECONDS));
            refused(LEASE + "-5000 ms", () -> lock.lock(-5, TimeUnit.SECONDS));
            refused(WAIT + "-1000 ms", () -> client.withLock("job", -1, 10, TimeUnit.SECONDS,
                    () -> null));
        }
    }

    @Test
    void timesRoundUpToAWholeMillisecond() {
        assertEquals(1, Checks.leaseMs(500, TimeUnit.MICROSECONDS));
        assertEquals(2, Checks.leaseMs(1500, TimeUnit.MICROSECONDS));
        assertEquals(3000, Checks.waitMs(3, TimeUnit.SECONDS));
        assertEquals(30L * 24 * 3600 * 1000, Checks.waitMs(30, TimeUnit.DAYS));
    }

    @Test
    void permitsHaveTheLibrarysMessage() {
        try (Redlock client = lonely()) {
            for (int permits : new int[] {0, -1, 10001}) {
                InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                        () -> client.getPermitExpirableSemaphore("s", permits));
                assertEquals(PERMITS + permits, e.getMessage());
                assertEquals(RedlockNativeConstants.REDLOCK_EINVAL, e.getCode());
            }
        }
    }

    @Test
    void anEmptyUriInAListIsRefused() {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> Redlock.splitNodes(" ,redis://a"));
        assertEquals("URI 1 of the list of nodes is empty", e.getMessage());
        assertEquals(List.of(), Redlock.splitNodes(" \t"));
        assertEquals(List.of("redis://a", "redis://b"),
                     Redlock.splitNodes("  redis://a ,\tredis://b  "));
    }

    @Test
    void healthMapsNoneToEmpty() {
        try (Redlock client = Redlock.create(List.of("redis://127.0.0.1:1",
                "redis-sentinel://127.0.0.1:1/?sentinelMasterId=m"), Map.of())) {
            List<NodeHealth> health = client.health();
            NodeHealth master = health.get(0);
            NodeHealth group = health.get(1);
            assertEquals("unknown", master.state());
            assertFalse(master.rttMs().isPresent());
            assertFalse(master.lastError().isPresent());
            assertEquals("127.0.0.1:1", master.server().orElseThrow());
            assertEquals("sentinel", group.kind());
            assertFalse(group.server().isPresent(), "no master named yet");
            assertTrue(master.fields().containsKey("server"));
            assertEquals(null, group.fields().get("server"));
            assertTrue(master.fields().get("conns") instanceof Long);
            assertEquals("node", master.fields().keySet().iterator().next());
        }
    }

    @Test
    void optionsAndDefaultsComeFromTheLibrary() {
        Map<String, String> defaults = Redlock.optionDefaults();
        assertEquals("node_timeout_ms", defaults.keySet().iterator().next());
        assertEquals("30000", defaults.get("watchdog_lease_ms"));
        assertEquals(30_000, RLock.DEFAULT_LEASE_MS);
        try (Redlock client = lonely()) {
            defaults.forEach((name, value) -> {
                if (!name.equals("sentinel_password")) {   // write-only
                    assertEquals(value, client.getOption(name), name);
                }
            });
        }
    }
}
