package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RLockTest extends TwoClients {
    @Override
    String keyPrefix() {
        return "test:";
    }

    @Test
    void lockAndUnlock() throws Exception {
        RLock lock = client.getLock(name);
        assertFalse(lock.isLocked());
        assertTrue(lock.tryLock());
        assertTrue(lock.isHeldByCurrentThread());
        assertTrue(lock.isLocked());
        long validity = lock.remainingValidity(TimeUnit.MILLISECONDS);
        assertTrue(validity > 25_000 && validity <= RLock.DEFAULT_LEASE_MS, "validity " + validity);
        for (int i = 1; i <= 5; i++) {
            assertTrue(nodes.cli(i, "GET", "test:" + name).matches("[0-9a-f]{32}"));
        }

        lock.unlock();
        assertFalse(lock.isHeldByCurrentThread());
        assertFalse(lock.isLocked());
        assertEquals(0, lock.remainingValidity(TimeUnit.MILLISECONDS));
        for (int i = 1; i <= 5; i++) {
            assertEquals("0", nodes.cli(i, "EXISTS", "test:" + name));
        }
    }

    @Test
    void namesAreUtf8Keys() throws Exception {
        String utf8 = name + "-é-ключ-🔒";
        RLock lock = client.getLock(utf8);
        assertTrue(lock.tryLock());
        assertEquals("test:" + utf8, nodes.cli(1, "KEYS", "test:" + name + "-*"));
        lock.unlock();
    }

    @Test
    void secondClientIsRefused() throws Exception {
        RLock mine = client.getLock(name);
        RLock theirs = other.getLock(name);
        assertTrue(mine.tryLock());

        assertFalse(theirs.tryLock());
        long start = System.nanoTime();
        assertFalse(theirs.tryLock(400, TimeUnit.MILLISECONDS));
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(350));
        assertTrue(theirs.isLocked(), "the nodes say it is held, by the other client");
        assertFalse(theirs.isHeldByCurrentThread());

        mine.unlock();
        assertTrue(theirs.tryLock());
        theirs.unlock();
    }

    @Test
    void leaseExpires() throws Exception {
        RLock mine = client.getLock(name);
        assertTrue(mine.tryLock(0, 300, TimeUnit.MILLISECONDS));
        Thread.sleep(600);
        assertFalse(mine.isHeldByCurrentThread());
        assertEquals(0, mine.remainingValidity(TimeUnit.MILLISECONDS));

        RLock theirs = other.getLock(name);
        assertTrue(theirs.tryLock());
        assertThrows(LockNotHeldException.class, mine::unlock);
        assertThrows(IllegalMonitorStateException.class, mine::unlock);
        assertTrue(theirs.isHeldByCurrentThread());
        theirs.unlock();
    }

    @Test
    void extendRenewsTheLease() throws Exception {
        RLock mine = client.getLock(name);
        assertTrue(mine.tryLock(0, 800, TimeUnit.MILLISECONDS));
        mine.extend(10, TimeUnit.SECONDS);
        assertTrue(mine.remainingValidity(TimeUnit.MILLISECONDS) > 5_000);
        Thread.sleep(1_200);
        assertTrue(mine.isHeldByCurrentThread());
        assertFalse(other.getLock(name).tryLock());
        mine.unlock();
    }

    @Test
    void extendAfterExpiryFails() throws Exception {
        RLock mine = client.getLock(name);
        assertTrue(mine.tryLock(0, 200, TimeUnit.MILLISECONDS));
        Thread.sleep(400);
        assertThrows(LockNotHeldException.class, () -> mine.extend(10, TimeUnit.SECONDS));
        assertThrows(LockNotHeldException.class, mine::unlock);
    }

    @Test
    void multiLockIsAllOrNothing() throws Exception {
        RLock b = other.getLock(name + "-b");
        assertTrue(b.tryLock());

        RLock all = client.getMultiLock(name + "-a", name + "-b", name + "-c");
        assertFalse(all.tryLock());
        RLock a = other.getLock(name + "-a");
        RLock c = other.getLock(name + "-c");
        assertTrue(a.tryLock(), "a must not be left locked by the failed multi-lock");
        assertTrue(c.tryLock(), "c must not be left locked by the failed multi-lock");
        a.unlock();
        b.unlock();
        c.unlock();

        assertTrue(all.tryLock());
        assertFalse(a.tryLock());
        assertFalse(b.tryLock());
        assertFalse(c.tryLock());
        all.extend(5, TimeUnit.SECONDS);
        all.unlock();
        assertTrue(b.tryLock());
        b.unlock();
    }

    /**
     * While another client holds the lock, runs attempt on a thread of its own: it must still be
     * waiting after 700 ms, and return true once the other client releases.
     */
    private void assertWaitsForRelease(Callable<Boolean> attempt) throws Exception {
        RLock theirs = other.getLock(name);
        assertTrue(theirs.tryLock());
        ExecutorService executor = Executors.newSingleThreadExecutor();
        try {
            Future<Boolean> waiter = executor.submit(attempt);
            Thread.sleep(700);
            assertFalse(waiter.isDone());
            theirs.unlock();
            assertTrue(waiter.get(10, TimeUnit.SECONDS));
        } finally {
            executor.shutdown();
        }
    }

    @Test
    void tryLockWaitsForRelease() throws Exception {
        RLock mine = client.getLock(name);
        assertWaitsForRelease(() -> {
            boolean acquired = mine.tryLock(10, TimeUnit.SECONDS);
            if (acquired) {
                mine.unlock();
            }
            return acquired;
        });
    }

    @Test
    void lockWaitsForRelease() throws Exception {
        RLock mine = client.getLock(name);
        assertWaitsForRelease(() -> {
            mine.lock();
            boolean held = mine.isHeldByCurrentThread();
            mine.unlock();
            return held;
        });
    }

    @Test
    void lockInterruptiblyReactsToInterrupt() throws Exception {
        RLock theirs = other.getLock(name);
        assertTrue(theirs.tryLock());
        RLock mine = client.getLock(name);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                mine.lockInterruptibly();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        Thread.sleep(300);
        long start = System.nanoTime();
        waiter.interrupt();
        Throwable thrown = outcome.get(10, TimeUnit.SECONDS);
        assertInstanceOf(InterruptedException.class, thrown);
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
        assertFalse(mine.isHeldByThread(waiter.getId()));
        theirs.unlock();
    }

    @Test
    void interruptedThreadDoesNotWait() {
        RLock mine = client.getLock(name);
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> mine.tryLock(5, TimeUnit.SECONDS));
        assertFalse(mine.isLocked());
    }

    @Test
    void onlyTheOwnerThreadUnlocks() throws Exception {
        RLock lock = client.getLock(name);
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertTrue(lock.tryLock());

        ExecutorService executor = Executors.newSingleThreadExecutor();
        Future<Throwable> unlock = executor.submit(() -> {
            assertFalse(lock.isHeldByCurrentThread());
            assertTrue(lock.isLocked());
            assertFalse(lock.tryLock(), "another thread is refused by the nodes");
            lock.close(); // not the owner: does nothing
            assertThrows(IllegalMonitorStateException.class, () -> lock.extend(1, TimeUnit.SECONDS));
            return assertThrows(IllegalMonitorStateException.class, lock::unlock);
        });
        assertInstanceOf(IllegalMonitorStateException.class, unlock.get(10, TimeUnit.SECONDS));
        executor.shutdown();

        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
    }

    @Test
    void reentrantHolds() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(0, 2, TimeUnit.SECONDS));
        assertTrue(lock.tryLock(0, 20, TimeUnit.SECONDS));
        assertTrue(lock.remainingValidity(TimeUnit.MILLISECONDS) <= 2_000,
                "reentry keeps the first lease");
        for (int i = 1; i <= 5; i++) {
            long pttl = Long.parseLong(nodes.cli(i, "PTTL", keyPrefix() + name));
            assertTrue(pttl <= 2_000, "the keys' TTL is not changed: " + pttl);
        }
        assertEquals(2, lock.getHoldCount());
        lock.unlock();
        assertEquals(1, lock.getHoldCount());
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(other.getLock(name).tryLock());
        lock.unlock();
        assertFalse(lock.isLocked());
        assertTrue(other.getLock(name).tryLock());
    }

    @Test
    void tryWithResourcesReleases() throws Exception {
        try (RLock lock = client.getLock(name)) {
            assertTrue(lock.tryLock());
            assertFalse(other.getLock(name).tryLock());
        }
        RLock theirs = other.getLock(name);
        assertTrue(theirs.tryLock());
        try (RLock refused = client.getLock(name)) {
            assertFalse(refused.tryLock());
        }
        assertTrue(theirs.isHeldByCurrentThread());
        theirs.unlock();
    }

    @Test
    void conditionsAreUnsupported() {
        assertThrows(UnsupportedOperationException.class, () -> client.getLock(name).newCondition());
    }

    @Test
    void badArguments() {
        RLock lock = client.getLock(name);
        assertThrows(NullPointerException.class, () -> client.getLock(null));
        assertThrows(IllegalArgumentException.class, () -> client.getLock(""));
        assertThrows(IllegalArgumentException.class, () -> client.getLock("a\0b"));
        assertThrows(NullPointerException.class, () -> client.getMultiLock((String[]) null));
        assertThrows(NullPointerException.class, () -> client.getMultiLock("a", null));
        assertThrows(IllegalArgumentException.class, () -> client.getMultiLock());
        assertThrows(IllegalArgumentException.class, () -> client.getMultiLock("a", "b", "a"));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(-1, 1000, TimeUnit.MILLISECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(0, 0, TimeUnit.MILLISECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(0, -5, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(0, 400, TimeUnit.NANOSECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(0, 30, TimeUnit.DAYS));
        assertThrows(IllegalArgumentException.class, () -> lock.lock(0, TimeUnit.SECONDS));
        assertThrows(NullPointerException.class, () -> lock.tryLock(0, 1, null));
        assertThrows(NullPointerException.class, () -> lock.tryLock(1, null));
        assertThrows(NullPointerException.class, () -> lock.remainingValidity(null));
        assertFalse(lock.isLocked());

        RedlockException tooLong = assertThrows(InvalidArgumentException.class,
                () -> client.getLock("x".repeat(5000)).tryLock());
        assertEquals(-4, tooLong.getCode());
        assertFalse(tooLong.getMessage().isEmpty());

        assertTrue(lock.tryLock());
        assertThrows(IllegalArgumentException.class, () -> lock.extend(0, TimeUnit.SECONDS));
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
    }

    @Test
    void negativeWaitOfTheLockInterfaceMeansNoWait() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(-1, TimeUnit.SECONDS));
        lock.unlock();
    }

    @Test
    void manyThreadsShareOneClient() throws Exception {
        Redlock shared = Redlock.create(nodes.uris(),
                Map.of("retry_delay_ms", "10", "retry_jitter_ms", "5", "key_prefix", "test:"));
        int threads = 8;
        int rounds = 15;
        RLock counterLock = shared.getLock(name);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        int[] counter = {0};
        ExecutorService executor = Executors.newFixedThreadPool(threads);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            done.add(executor.submit(() -> {
                RLock own = shared.getLock(name + "-own-" + id);
                for (int i = 0; i < rounds; i++) {
                    assertTrue(own.tryLock(), "a name of its own is never contended");
                    counterLock.lock();
                    try {
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        int seen = counter[0];
                        Thread.yield();
                        counter[0] = seen + 1;
                        inside.decrementAndGet();
                    } finally {
                        counterLock.unlock();
                        own.unlock();
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : done) {
            f.get(120, TimeUnit.SECONDS);
        }
        executor.shutdown();
        assertEquals(0, overlaps.get());
        assertEquals(threads * rounds, counter[0]);
        shared.close();
    }

    @Test
    void anInterruptEndsTheWaitAndLeavesTheHolderAlone() throws Exception {
        RLock held = other.getLock(name);
        assertTrue(held.tryLock(0, 30, TimeUnit.SECONDS));
        RLock waiting = client.getLock(name);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                waiting.lockInterruptibly();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        Thread.sleep(300);
        assertTrue(waiter.isAlive(), "still waiting before the interrupt");
        long interruptedAt = System.nanoTime();
        waiter.interrupt();
        Throwable thrown = outcome.get(10, TimeUnit.SECONDS);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - interruptedAt);
        assertInstanceOf(InterruptedException.class, thrown);
        assertTrue(tookMs < 1_000, "the wait ended " + tookMs + " ms after the interrupt");
        waiter.join(5_000);
        assertFalse(waiter.isInterrupted(), "InterruptedException clears the interrupt status");
        assertFalse(waiting.isHeldByThread(waiter.getId()));
        assertTrue(held.remainingValidity(TimeUnit.MILLISECONDS) > 0);
        assertTrue(nodes.cli(1, "GET", "test:" + name).matches("[0-9a-f]{32}"));
        held.unlock();
    }

    @Test
    void optionsReadBack() {
        assertEquals("test:", client.getOption("key_prefix"));
        assertEquals("50", client.getOption("node_timeout_ms"));
        assertEquals("200", client.getOption("retry_delay_ms"));
        assertThrows(InvalidArgumentException.class, () -> client.getOption("no_such_option"));
        assertThrows(NullPointerException.class, () -> client.getOption(null));
        String prefix = "é-ключ-🔒:";
        try (Redlock utf8 = Redlock.create(nodes.uris(),
                Map.of("key_prefix", prefix, "retry_jitter_ms", "7"))) {
            assertEquals(prefix, utf8.getOption("key_prefix"));
            assertEquals("7", utf8.getOption("retry_jitter_ms"));
        }
    }

    @Test
    void lockIsNotInterruptibleAndKeepsTheInterruptStatus() throws Exception {
        RLock theirs = other.getLock(name);
        assertTrue(theirs.tryLock());
        RLock mine = client.getLock(name);
        CompletableFuture<Boolean> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                mine.lock();
                boolean interrupted = Thread.currentThread().isInterrupted();
                mine.unlock();
                outcome.complete(interrupted);
            } catch (Throwable t) {
                outcome.completeExceptionally(t);
            }
        });
        waiter.start();
        Thread.sleep(300);
        waiter.interrupt();
        Thread.sleep(700);
        assertFalse(outcome.isDone(), "an interrupt does not end lock()");
        assertTrue(theirs.isHeldByCurrentThread());
        theirs.unlock();
        assertTrue(outcome.get(10, TimeUnit.SECONDS), "the interrupt status is set again");
    }

    @Test
    void tryLockWithoutWaitIgnoresTheInterruptStatus() {
        RLock mine = client.getLock(name);
        Thread.currentThread().interrupt();
        try {
            assertTrue(mine.tryLock());
            assertTrue(Thread.currentThread().isInterrupted(), "the status is left set");
        } finally {
            Thread.interrupted();
        }
        mine.unlock();
    }

    /** Node i refuses writes with an OOM error (maxmemory 1, noeviction), or accepts them again. */
    private static void refuseWrites(boolean refuse, int... which) throws Exception {
        for (int i : which) {
            assertEquals("OK", nodes.cli(i, "CONFIG", "SET", "maxmemory-policy", "noeviction"));
            assertEquals("OK", nodes.cli(i, "CONFIG", "SET", "maxmemory", refuse ? "1" : "0"));
        }
    }

    @Test
    void redisErrorsOnAMinorityDoNotEndTheWait() throws Exception {
        RLock theirs = other.getLock(name);
        long heldAt = System.nanoTime();
        assertTrue(theirs.tryLock(0, 2_000, TimeUnit.MILLISECONDS));
        RLock mine = client.getLock(name);
        refuseWrites(true, 4, 5);
        try {
            // Held on a majority, OOM on the rest: not acquired, and only when the wait is over.
            long start = System.nanoTime();
            assertFalse(mine.tryLock(500, TimeUnit.MILLISECONDS));
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(waited >= 450, "ended early, after " + waited + " ms");
            // Waiting on: acquired on the three other nodes once their lease has run out.
            assertTrue(mine.tryLock(10, TimeUnit.SECONDS));
            long acquiredAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - heldAt);
            assertTrue(acquiredAfter >= 1_900 && acquiredAfter < 10_000,
                    "acquired " + acquiredAfter + " ms after the other client");
            for (int i = 1; i <= 3; i++) {
                assertTrue(nodes.cli(i, "GET", "test:" + name).matches("[0-9a-f]{32}"));
            }
            mine.unlock();
        } finally {
            refuseWrites(false, 4, 5);
        }
    }

    @Test
    void redisErrorsOnAMajorityAreRetriedWhileTheWaitLasts() throws Exception {
        RLock mine = client.getLock(name);
        refuseWrites(true, 1, 2, 3);
        ExecutorService executor = Executors.newSingleThreadExecutor();
        try {
            // No wait: the error at once.
            RedisErrorException now = assertThrows(RedisErrorException.class, mine::tryLock);
            assertTrue(now.getMessage().contains("OOM"), now.getMessage());
            // A wait: the library tries again until it is over, then reports the error.
            long start = System.nanoTime();
            assertThrows(RedisErrorException.class, () -> mine.tryLock(600, TimeUnit.MILLISECONDS));
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(waited >= 550, "ended early, after " + waited + " ms");
            // Errors that clear while the wait lasts: acquired.
            Future<Boolean> waiter = executor.submit(() -> {
                boolean acquired = mine.tryLock(10, TimeUnit.SECONDS);
                if (acquired) {
                    mine.unlock();
                }
                return acquired;
            });
            Thread.sleep(700);
            assertFalse(waiter.isDone(), "still waiting while a majority refuses writes");
            refuseWrites(false, 1, 2, 3);
            assertTrue(waiter.get(10, TimeUnit.SECONDS));
        } finally {
            executor.shutdownNow();
            refuseWrites(false, 1, 2, 3);
        }
        assertFalse(mine.isLocked());
    }
}
