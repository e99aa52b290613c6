package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Fair locks (getFairLock) on five real nodes: waiters served in the order they arrived, the
 * plain lock of the name excluded and excluding, a kept fair lock renewed, reentry, the async
 * methods and bad input. client keeps its locks with a watchdog lease of LEASE_MS; other is the
 * rival.
 */
class FairLockTest extends KeptClients {
    private static final String PREFIX = "fair:";
    /** How long a waiter may take to show in the nodes' queues (a bound, not a speed). */
    private static final long CONVERGE_MS = 10_000;

    @Override
    String keyPrefix() {
        return PREFIX;
    }

    /** The key of the queue of the test's fair lock, on a node (docs/kinds.md). */
    private String queueKey() {
        return PREFIX + name + "\0queue";
    }

    /** How many waiters node i queues for the test's lock: "counter ticket:id:expiry ...". */
    private int queuedOn(int i) throws Exception {
        String queue = nodes.call(i, "GET", queueKey());
        return queue.isEmpty() ? 0 : queue.split(" ").length - 1;
    }

    /** Waits until every node queues n waiters of the test's lock; fails after CONVERGE_MS. */
    private void awaitQueued(int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CONVERGE_MS);
        for (int i = 1; i <= 5; i++) {
            int seen;
            while ((seen = queuedOn(i)) != n && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(n, seen, "waiters queued on node " + i);
        }
    }

    @Test
    void waitersAreServedInTheOrderTheyArrived() throws Exception {
        RLock holder = other.getFairLock(name);
        assertTrue(holder.tryLock(0, 30, TimeUnit.SECONDS));
        ExecutorService threads = Executors.newFixedThreadPool(3);
        List<Redlock> clients = new ArrayList<>();
        AtomicInteger turn = new AtomicInteger();
        List<Future<Integer>> served = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                Redlock waiter = Redlock.create(nodes.uris(), Map.of("key_prefix", PREFIX));
                clients.add(waiter);
                CountDownLatch waiting = new CountDownLatch(1);
                served.add(threads.submit(() -> {
                    RLock lock = waiter.getFairLock(name);
                    waiting.countDown();
                    if (!lock.tryLock(20, 10, TimeUnit.SECONDS)) {
                        return 0;
                    }
                    int mine = turn.incrementAndGet();
                    Thread.sleep(100);
                    lock.unlock();
                    return mine;
                }));
                // Queued on every node, and still waiting, before the next one comes.
                assertTrue(waiting.await(CONVERGE_MS, TimeUnit.MILLISECONDS));
                awaitQueued(i + 1);
                assertFalse(served.get(i).isDone(), "waiter " + (i + 1) + " is not waiting");
            }
            assertEquals(0, turn.get());
            holder.unlock();
            for (int i = 0; i < 3; i++) {
                assertEquals(i + 1, served.get(i).get(30, TimeUnit.SECONDS),
                        "the turn of waiter " + (i + 1));
            }
            awaitQueued(0);
        } finally {
            threads.shutdownNow();
            clients.forEach(Redlock::close);
        }
    }

    @Test
    void itIsThePlainLockOfItsName() throws Exception {
        RLock fair = client.getFairLock(name);
        assertTrue(fair.tryLock(0, 10, TimeUnit.SECONDS));
        assertTrue(fair.toString().contains("fair"), fair.toString());
        assertFalse(client.getLock(name).toString().contains("fair"));
        RLock plain = other.getLock(name);
        assertFalse(plain.tryLock());
        assertTrue(plain.isLocked());
        assertFalse(other.getFairLock(name).tryLock());
        fair.unlock();
        assertFalse(fair.isLocked());
        assertTrue(plain.tryLock(0, 10, TimeUnit.SECONDS));
        assertFalse(fair.tryLock());
        assertTrue(fair.isLocked());
        plain.unlock();
        assertTrue(fair.tryLock(5, 10, TimeUnit.SECONDS));
        fair.unlock();
    }

    @Test
    void aFairLockHasNoFence() throws Exception {
        try (Redlock fencing = Redlock.create(nodes.uris(),
                Map.of("key_prefix", PREFIX, "fencing", "1"))) {
            RLock plain = fencing.getLock(name);
            assertTrue(plain.tryLock(0, 10, TimeUnit.SECONDS));
            assertNotNull(plain.getFence());
            plain.unlock();
            RLock fair = fencing.getFairLock(name);
            assertTrue(fair.tryLock(0, 10, TimeUnit.SECONDS));
            assertNull(fair.getFence());
            fair.unlock();
        }
    }

    @Test
    void aKeptFairLockIsRenewed() throws Exception {
        RLock lock = client.getFairLock(name);
        AtomicInteger lost = new AtomicInteger();
        lock.onLost(lost::incrementAndGet);
        assertTrue(lock.tryLock(1, TimeUnit.SECONDS));   // no lease: kept
        assertKeptThenReleased(lock, name);
        assertEquals(0, lost.get());
        RLock next = other.getFairLock(name);
        assertTrue(next.tryLock(5, 10, TimeUnit.SECONDS), "a fair waiter takes it after");
        next.unlock();
    }

    @Test
    void itIsReentrantThroughItsFairLocks() throws Exception {
        RLock lock = client.getFairLock(name);
        lock.lock();
        RLock again = client.getFairLock(name);
        assertTrue(again.tryLock(0, TimeUnit.SECONDS));
        assertEquals(2, lock.getHoldCount());
        assertEquals(2, again.getHoldCount());
        assertEquals(0, client.getLock(name).getHoldCount());   // the plain lock's holds apart
        assertFalse(client.getLock(name).tryLock());
        again.unlock();
        assertTrue(lock.isHeldByCurrentThread());
        RLock rival = other.getLock(name);
        assertFalse(rival.tryLock());
        lock.unlock();
        assertEquals(0, lock.getHoldCount());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertTrue(rival.tryLock(0, 10, TimeUnit.SECONDS));
        rival.unlock();
    }

    @Test
    void asyncTryLockAndUnlock() throws Exception {
        RLock mine = client.getFairLock(name);
        assertTrue(mine.tryLockAsync(0, 10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
        RLock theirs = other.getFairLock(name);
        long owner = 42;
        CompletableFuture<Boolean> waiting = theirs.tryLockAsync(20, 10, TimeUnit.SECONDS, owner);
        awaitQueued(1);
        assertFalse(waiting.isDone());
        mine.unlockAsync().get(10, TimeUnit.SECONDS);
        assertTrue(waiting.get(20, TimeUnit.SECONDS));
        assertTrue(theirs.isHeldByThread(owner));
        assertFalse(mine.tryLockAsync().get(10, TimeUnit.SECONDS));
        theirs.unlockAsync(owner).get(10, TimeUnit.SECONDS);
        mine.lockAsync().get(10, TimeUnit.SECONDS);   // kept
        assertTrue(mine.isHeldByCurrentThread());
        assertFalse(theirs.tryLockAsync(0, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
        mine.unlockAsync().get(10, TimeUnit.SECONDS);
        assertFalse(mine.isLocked());
        ExecutionException notHeld = assertThrows(ExecutionException.class,
                () -> mine.unlockAsync().get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalMonitorStateException.class, notHeld.getCause());
    }

    @Test
    void badInputIsRefused() throws Exception {
        assertThrows(NullPointerException.class, () -> client.getFairLock(null));
        assertThrows(IllegalArgumentException.class, () -> client.getFairLock(""));
        assertThrows(IllegalArgumentException.class, () -> client.getFairLock("a\0b"));
        RLock lock = client.getFairLock(name);
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(0, 0, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(-1, 1, TimeUnit.SECONDS));
        assertThrows(NullPointerException.class, () -> lock.tryLock(0, null));
        assertThrows(NullPointerException.class, () -> lock.tryLockAsync(0, 1, null));
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        // A key of another type where the queue lives.
        for (int i = 1; i <= 5; i++) {
            nodes.call(i, "RPUSH", queueKey(), "x");
        }
        try {
            WrongTypeException wrong = assertThrows(WrongTypeException.class, lock::tryLock);
            assertTrue(wrong.getMessage().contains("queue of"), wrong.getMessage());
            assertEquals(0, lock.getHoldCount());
        } finally {
            for (int i = 1; i <= 5; i++) {
                nodes.call(i, "DEL", queueKey());
            }
        }
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        lock.unlock();
    }
}
