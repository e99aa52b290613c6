package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.internal.RedlockNativeConstants;
import io.redlock.testing.RedisNodes;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Three nodes, of which the tests stop two: no majority. */
class NoQuorumTest {
    private static RedisNodes nodes;

    private Redlock client;

    @BeforeAll
    static void startNodes() throws Exception {
        nodes = RedisNodes.start(3);
    }

    @AfterAll
    static void stopNodes() {
        nodes.close();
    }

    @BeforeEach
    void createClient() {
        client = Redlock.create(nodes.uris(), Map.of());
    }

    @AfterEach
    void restartNodes() throws Exception {
        client.close();
        nodes.restartStopped();
    }

    @Test
    void oneNodeDownStillHasAMajority() throws Exception {
        nodes.stopNode(3);
        RLock lock = client.getLock("one-down");
        assertTrue(lock.tryLock());
        lock.extend(5, TimeUnit.SECONDS);
        lock.unlock();
    }

    @Test
    void tryLockThrowsNoQuorumWithoutMajority() throws Exception {
        nodes.stopNode(2);
        nodes.stopNode(3);
        RLock lock = client.getLock("no-majority");
        assertThrows(NoQuorumException.class, lock::tryLock);
        long start = System.nanoTime();
        assertThrows(NoQuorumException.class, () -> lock.tryLock(700, TimeUnit.MILLISECONDS));
        long elapsed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(elapsed >= 600 && elapsed < 10_000, "took " + elapsed + " ms");
        assertFalse(lock.isHeldByCurrentThread());
        CompletionException async = assertThrows(CompletionException.class,
                () -> lock.tryLockAsync(0, 5, TimeUnit.SECONDS).join());
        assertTrue(async.getCause() instanceof NoQuorumException, async.toString());
    }

    @Test
    void theNodesCannotBeAskedWithoutMajority() throws Exception {
        RLock lock = client.getLock("asked");
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        nodes.stopNode(2);
        nodes.stopNode(3);
        assertThrows(NoQuorumException.class, lock::isLocked);
        assertThrows(NoQuorumException.class, lock::remainTimeToLive);
        assertThrows(NoQuorumException.class, lock::forceUnlock);
        assertTrue(lock.isHeldByCurrentThread(), "its own hold is known without the nodes");
        assertThrows(NoQuorumException.class,
                () -> client.getMultiLock("asked", "other").isLocked());
        // The forced unlock deleted the key where it could, though too few nodes answered.
        assertEquals("0", nodes.call(1, "EXISTS", "asked"));
        nodes.restartStopped();
        assertFalse(lock.isLocked());
        assertFalse(lock.forceUnlock());
        assertThrows(LockNotHeldException.class, lock::unlock);
    }

    @Test
    void lockGivesUpAfterAnOutageOfUnavailableTimeout() throws Exception {
        nodes.stopNode(2);
        nodes.stopNode(3);
        try (Redlock impatient = Redlock.create(nodes.uris(),
                Map.of("unavailable_timeout_ms", "300", "retry_delay_ms", "50"))) {
            RLock lock = impatient.getLock("no-majority");
            long start = System.nanoTime();
            NoQuorumException e = assertThrows(NoQuorumException.class, lock::lock);
            long elapsed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(elapsed >= 300 && elapsed < 10_000, "took " + elapsed + " ms");
            assertTrue(e.getMessage().contains("unavailable_timeout_ms"), e.getMessage());
        }
    }

    @Test
    void unlockAndExtendReportLostMajority() throws Exception {
        RLock lock = client.getLock("lost-majority");
        assertTrue(lock.tryLock());
        nodes.stopNode(2);
        nodes.stopNode(3);
        RedlockException extend = assertThrows(RedlockException.class,
                () -> lock.extend(5, TimeUnit.SECONDS));
        assertEquals(RedlockNativeConstants.REDLOCK_ENOQUORUM, extend.getCode());
        RedlockException unlock = assertThrows(NoQuorumException.class, lock::unlock);
        assertFalse(unlock.getMessage().isEmpty());
        assertFalse(lock.isHeldByCurrentThread());
        assertEquals(0, lock.getHoldCount());
    }
}
