package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

/** The asynchronous forms of RLock (Redisson's RLockAsync) against real nodes. */
class RLockAsyncTest extends TwoClients {
    @Override
    String keyPrefix() {
        return "async:";
    }

    @Override
    Map<String, String> clientOptions() {
        // A thousand calls at once on a small machine: node deadlines far from the test's pace.
        return Map.of("retry_delay_ms", "5", "retry_jitter_ms", "4", "node_timeout_ms", "2000",
                "connect_timeout_ms", "2000");
    }

    @Test
    void tryLockAsyncAndUnlockAsync() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLockAsync(0, 10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
        assertTrue(lock.isHeldByCurrentThread());
        String token = nodes.cli(1, "GET", "async:" + name);
        assertTrue(token.matches("[0-9a-f]{32}"), token);
        // Held elsewhere: false, not an exception.
        assertFalse(other.getLock(name).tryLockAsync(0, 10, TimeUnit.SECONDS)
                .get(10, TimeUnit.SECONDS));
        // Reentry by the same owner counts the hold, and keeps the first lease.
        assertTrue(lock.tryLockAsync(0, 20, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
        assertTrue(lock.remainingValidity(TimeUnit.MILLISECONDS) <= 10_000);
        lock.extendAsync(40, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
        assertTrue(lock.remainingValidity(TimeUnit.MILLISECONDS) > 39_000);
        long pttl = Long.parseLong(nodes.cli(2, "PTTL", "async:" + name));
        assertTrue(pttl > 39_000, "PTTL " + pttl);
        assertInstanceOf(IllegalMonitorStateException.class, assertThrows(ExecutionException.class,
                () -> lock.extendAsync(40, TimeUnit.SECONDS, Thread.currentThread().getId() + 1)
                        .get(10, TimeUnit.SECONDS))
                .getCause());
        assertEquals(2, lock.getHoldCount());
        lock.unlockAsync().get(10, TimeUnit.SECONDS);
        assertEquals(1, lock.getHoldCount());
        assertTrue(lock.isLocked());
        lock.unlockAsync().get(10, TimeUnit.SECONDS);
        assertEquals(0, lock.getHoldCount());
        assertFalse(lock.isLocked());
        for (int i = 1; i <= 5; i++) {
            assertEquals("0", nodes.cli(i, "EXISTS", "async:" + name));
        }
        // Not the owner: refused, as unlock() refuses.
        ExecutionException notOwner = assertThrows(ExecutionException.class,
                () -> lock.unlockAsync().get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalMonitorStateException.class, notOwner.getCause());
    }

    @Test
    void ownerIdsLetAnotherThreadUnlock() throws Exception {
        RLock lock = client.getLock(name);
        long owner = 4242;
        lock.lockAsync(10, TimeUnit.SECONDS, owner).get(10, TimeUnit.SECONDS);
        assertFalse(lock.isHeldByCurrentThread());
        assertTrue(lock.isHeldByThread(owner));
        assertEquals(0, lock.getHoldCount());
        CompletableFuture<Void> wrong = lock.unlockAsync(owner + 1);
        assertInstanceOf(IllegalMonitorStateException.class,
                assertThrows(ExecutionException.class, () -> wrong.get(10, TimeUnit.SECONDS))
                        .getCause());
        CompletableFuture.runAsync(() -> lock.unlockAsync(owner).join(), ForkJoinPool.commonPool())
                .get(10, TimeUnit.SECONDS);
        assertFalse(lock.isLocked());
    }

    @Test
    void lockAsyncWaitsForTheReleaseWithoutAThread() throws Exception {
        RLock held = other.getLock(name);
        assertTrue(held.tryLock(0, 30, TimeUnit.SECONDS));
        CompletableFuture<Void> waiting = client.getLock(name).lockAsync(10, TimeUnit.SECONDS);
        Thread.sleep(300);
        assertFalse(waiting.isDone());
        held.unlock();
        waiting.get(10, TimeUnit.SECONDS);
    }

    @Test
    void thousandCallsOnFiftyResourcesExcludeEachOtherOnFewThreads() throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        int before = threads.getThreadCount();
        int calls = 1000;
        int resources = 50;
        AtomicIntegerArray inside = new AtomicIntegerArray(resources);
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger most = new AtomicInteger(before);
        List<CompletableFuture<Boolean>> all = new ArrayList<>();
        // The common pool's own threads (without it, a pool of one thread on a small machine
        // makes CompletableFuture start a thread per task).
        Executor held = CompletableFuture.delayedExecutor(2, TimeUnit.MILLISECONDS,
                ForkJoinPool.commonPool());
        for (int i = 0; i < calls; i++) {
            int r = i % resources;
            RLock lock = client.getLock(name + "-" + r);
            long owner = 1_000_000 + i;
            all.add(lock.tryLockAsync(30, 10, TimeUnit.SECONDS, owner).thenCompose(acquired -> {
                if (!acquired) {
                    return CompletableFuture.completedFuture(false);
                }
                if (inside.incrementAndGet(r) > 1) {
                    overlaps.incrementAndGet();
                }
                most.accumulateAndGet(threads.getThreadCount(), Math::max);
                // Hold it for a moment (on a timer, not a sleeping thread).
                return CompletableFuture.runAsync(() -> inside.decrementAndGet(r), held)
                        .thenCompose(left -> lock.unlockAsync(owner))
                        .thenApply(released -> true);
            }));
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture<?>[]::new))
                .get(120, TimeUnit.SECONDS);
        for (CompletableFuture<Boolean> f : all) {
            assertTrue(f.get());
        }
        assertEquals(0, overlaps.get());
        // The library's one thread, the common pool completing the futures and the
        // timer of the delayed executor; never a thread per waiting call.
        int pool = Runtime.getRuntime().availableProcessors();
        assertTrue(most.get() <= before + pool + 3,
                "threads: " + before + " before, " + most.get() + " at most");
    }

    @Test
    void aLockDroppedWhileItsUnlockIsUnderWayIsStillReleased() throws Exception {
        // Once nobody refers to an RLock, the Cleaner frees its native handle; an unlock under
        // way keeps the handle until it ends (an AddressSanitizer run of this class found the
        // handle freed under the library's feet before).
        Redlock patient = Redlock.create(nodes.uris(), Map.of("key_prefix", "async:",
                "node_timeout_ms", "3000"));
        try {
            int count = 50;
            List<RLock> locks = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                RLock lock = patient.getLock(name + "-" + i);
                assertTrue(lock.tryLockAsync(0, 30, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
                locks.add(lock);
            }
            for (int n = 1; n <= 5; n++) {
                nodes.cli(n, "CLIENT", "PAUSE", "400", "ALL");
            }
            List<CompletableFuture<Void>> unlocks = new ArrayList<>();
            for (RLock lock : locks) {
                unlocks.add(lock.unlockAsync());
            }
            locks.clear();
            for (int i = 0; i < 4; i++) {
                System.gc();
                Thread.sleep(50);
            }
            CompletableFuture.allOf(unlocks.toArray(CompletableFuture<?>[]::new))
                    .get(10, TimeUnit.SECONDS);
            // Released at a quorum when each unlock ended; a node whose release had to wait
            // for a connection (at most pool_size + 4 of them) gets it as a release owed.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            for (int i = 0; i < count; i++) {
                for (int n = 1; n <= 5; n++) {
                    String key = "async:" + name + "-" + i;
                    while (!nodes.cli(n, "EXISTS", key).equals("0") && System.nanoTime() < deadline) {
                        Thread.sleep(20);
                    }
                    assertEquals("0", nodes.cli(n, "EXISTS", key));
                }
            }
        } finally {
            patient.close();
        }
    }
}
