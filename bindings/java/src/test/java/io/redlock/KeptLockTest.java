package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Kept locks (taken without a lease, renewed by the library until unlocked) and the lost-lock
 * signal (isLost, onLost), against five real nodes. client keeps its locks with a lease of
 * LEASE_MS (renewed every LEASE_MS / 3, see {@link KeptClients}); other is the rival, with
 * explicit leases.
 */
class KeptLockTest extends KeptClients {
    @Override
    String keyPrefix() {
        return "kept:";
    }

    @Test
    void lockKeeps() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        assertKeptThenReleased(lock, name);
    }

    @Test
    void tryLockKeeps() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock());
        assertKeptThenReleased(lock, name);
    }

    @Test
    void tryLockWithAWaitKeeps() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(2, TimeUnit.SECONDS));
        assertKeptThenReleased(lock, name);
    }

    @Test
    void lockInterruptiblyKeeps() throws Exception {
        RLock lock = client.getLock(name);
        lock.lockInterruptibly();
        assertKeptThenReleased(lock, name);
    }

    @Test
    void lockAsyncKeeps() throws Exception {
        RLock lock = client.getLock(name);
        lock.lockAsync().get(10, TimeUnit.SECONDS);
        assertKeptThenReleased(lock, name);
    }

    @Test
    void tryLockAsyncKeeps() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLockAsync().get(10, TimeUnit.SECONDS));
        assertKeptThenReleased(lock, name);
    }

    @Test
    void aLeaseOfMinusOneKeepsInEveryAcquiringMethod() throws Exception {
        RLock lock = client.getLock(name);
        assertEquals(-1, RLock.KEPT);
        assertTrue(lock.tryLock(0, RLock.KEPT, TimeUnit.SECONDS));
        assertKeptThenReleased(lock, name);
        lock.lock(RLock.KEPT, TimeUnit.MILLISECONDS);
        assertKeptThenReleased(lock, name);
        lock.lockAsync(-1, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
        assertKeptThenReleased(lock, name);
        assertTrue(lock.tryLockAsync(1, -1, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
        assertKeptThenReleased(lock, name);
        // Any other value below 1 ms is still refused.
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(0, -2, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.extend(-1, TimeUnit.SECONDS));
    }

    @Test
    void aLockIsNamedByItsResources() {
        assertEquals(name, client.getLock(name).getName());
        assertEquals(name + "-a," + name + "-b",
                client.getMultiLock(name + "-a", name + "-b").getName());
        assertEquals(name, client.getFairLock(name).getName());
    }

    @Test
    void aMultiLockIsKeptWhole() throws Exception {
        RLock lock = client.getMultiLock(name + "-a", name + "-b");
        lock.lock();
        assertKeptThenReleased(lock, name + "-a", name + "-b");
    }

    @Test
    void theDefaultWatchdogLeaseIsThirtySeconds() throws Exception {
        assertEquals(Long.toString(RLock.DEFAULT_LEASE_MS), other.getOption("watchdog_lease_ms"));
        RLock lock = other.getLock(name);
        assertTrue(lock.tryLock());
        long validity = lock.remainingValidity(TimeUnit.MILLISECONDS);
        assertTrue(validity > RLock.DEFAULT_LEASE_MS - 5_000 && validity <= RLock.DEFAULT_LEASE_MS,
                "validity " + validity);
        lock.unlock();
    }

    /** Waits until lock's validity has run out; fails after timeoutMs. */
    private static void awaitExpiry(RLock lock, long timeoutMs) throws Exception {
        long start = System.nanoTime();
        while (lock.remainingValidity(TimeUnit.MILLISECONDS) > 0) {
            assertTrue(elapsedMs(start) < timeoutMs, "still valid after " + timeoutMs + " ms");
            Thread.sleep(10);
        }
    }

    /** awaitExpiry, and then the keys' own expiry on the nodes (the validity counts drift). */
    private static void awaitGone(RLock lock) throws Exception {
        awaitExpiry(lock, 3 * LEASE_MS);
        Thread.sleep(100);
    }

    /**
     * A hold with an explicit lease: not renewed; once it ran out while held it is lost (its keys
     * can have expired), with no listener told (no renewal failed).
     */
    private void assertExpiresUnrenewed(RLock lock) throws Exception {
        AtomicInteger told = new AtomicInteger();
        lock.onLost(told::incrementAndGet);
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(lock.isLost());
        awaitExpiry(lock, 3 * LEASE_MS);
        assertFalse(lock.isHeldByCurrentThread());
        assertTrue(lock.isLost(), "a lease that ran out while held is lost");
        RLock rival = other.getLock(name);
        assertTrue(rival.tryLock(2, 10, TimeUnit.SECONDS), "the lease was not renewed");
        assertTrue(lock.isLost());
        assertThrows(LockNotHeldException.class, lock::unlock);
        assertTrue(lock.isLost(), "the last hold was lost: so it stays until the next one");
        assertEquals(0, told.get(), "no listener for a lease that ran out");
        rival.unlock();
    }

    @Test
    void anExplicitLeaseIsNotRenewed() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(0, LEASE_MS, TimeUnit.MILLISECONDS));
        assertExpiresUnrenewed(lock);
    }

    @Test
    void lockWithALeaseIsNotRenewed() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock(LEASE_MS, TimeUnit.MILLISECONDS);
        assertExpiresUnrenewed(lock);
    }

    @Test
    void lockAsyncWithALeaseIsNotRenewed() throws Exception {
        RLock lock = client.getLock(name);
        lock.lockAsync(LEASE_MS, TimeUnit.MILLISECONDS).get(10, TimeUnit.SECONDS);
        assertExpiresUnrenewed(lock);
    }

    @Test
    void aReentrantHoldKeepsRenewingUntilTheLastUnlock() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        assertTrue(lock.tryLock());
        lock.lock();
        lock.unlock();
        lock.unlock();
        assertKeptThenReleased(lock, name); // the last unlock
    }

    /** The PTTL of name's key on each node. */
    private List<Long> pttls(String key) throws Exception {
        List<Long> ttls = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            ttls.add(Long.parseLong(nodes.call(i, "PTTL", "kept:" + key)));
        }
        return ttls;
    }

    /**
     * Regression: lock() (kept) then tryLock(wait, lease) in the same thread. Reentry once
     * renewed the keys to the shorter lease while renewal stayed on the kept schedule, and the
     * lock was lost. Reentry keeps the first terms: the hold stays kept, on its own lease.
     */
    @Test
    void aReentryWithAShortLeaseLeavesAKeptHoldOnItsRenewal() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        long shortLease = LEASE_MS / 6;
        assertTrue(lock.tryLock(2, shortLease, TimeUnit.MILLISECONDS));
        assertEquals(2, lock.getHoldCount());
        for (long ttl : pttls(name)) {
            assertTrue(ttl > shortLease, "the keys' TTL was cut to the reentry's lease: " + ttl);
        }
        assertStaysHeld(lock, other.getLock(name), 3 * LEASE_MS, LEASE_MS);
        assertFalse(lock.isLost());
        lock.unlock();
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock(); // the last: released in time, no exception
        assertTrue(other.getLock(name).tryLock(0, 10, TimeUnit.SECONDS));
    }

    /**
     * Regression: lock(lease) then tryLock() in the same thread. Reentry once reset the keys to
     * the watchdog lease with nothing renewing them, and the lock expired while isLost() stayed
     * false. Reentry keeps the first terms: the lease is not renewed, and once it runs out the
     * hold is lost; its unlocks say so, and acquiring again after it starts afresh.
     */
    @Test
    void aReentryWithoutALeaseLeavesALeaseUnrenewedAndItsLossTold() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock(LEASE_MS / 2, TimeUnit.MILLISECONDS);
        assertTrue(lock.tryLock());
        for (long ttl : pttls(name)) {
            assertTrue(ttl <= LEASE_MS / 2, "the keys' TTL was reset: " + ttl);
        }
        assertTrue(lock.remainingValidity(TimeUnit.MILLISECONDS) <= LEASE_MS / 2);
        awaitExpiry(lock, 3 * LEASE_MS);
        assertTrue(lock.isLost(), "a lease that ran out while held is lost");
        lock.unlock(); // one of the two holds
        assertThrows(LockNotHeldException.class, lock::unlock);
        assertEquals(0, lock.getHoldCount());
        assertTrue(lock.isLost(), "told until the next acquisition");
    }

    /**
     * A new acquisition after a lost hold starts afresh, as Redisson's and the Lock contract
     * expect: tryLock(), lock() and a fresh getLock of the name all acquire anew (the lost holds'
     * unlocks are forgotten); until then isLost() and unlock() tell the loss.
     */
    @Test
    void anAcquisitionAfterALossStartsAfresh() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(0, LEASE_MS / 2, TimeUnit.MILLISECONDS));
        assertTrue(lock.tryLock(0, LEASE_MS / 2, TimeUnit.MILLISECONDS)); // two holds
        awaitGone(lock);
        assertTrue(lock.isLost());
        assertTrue(lock.tryLock(), "a new acquisition");
        assertFalse(lock.isLost());
        assertEquals(1, lock.getHoldCount());
        lock.unlock();
        assertThrows(IllegalMonitorStateException.class, lock::unlock);

        lock.lock(LEASE_MS / 2, TimeUnit.MILLISECONDS);
        awaitGone(lock);
        lock.lock(); // kept, this time
        assertTrue(lock.isHeldByCurrentThread() && !lock.isLost());
        lock.unlock();

        assertTrue(lock.tryLock(0, LEASE_MS / 2, TimeUnit.MILLISECONDS));
        awaitGone(lock);
        RLock fresh = client.getLock(name);
        assertTrue(fresh.tryLock(), "through a fresh RLock of the name");
        assertFalse(lock.isLost());
        fresh.unlock();

        // A new attempt that fails leaves the lost hold, and its loss, as they were.
        assertTrue(lock.tryLock(0, LEASE_MS / 2, TimeUnit.MILLISECONDS));
        awaitGone(lock);
        RLock rival = other.getLock(name);
        assertTrue(rival.tryLock(0, 10, TimeUnit.SECONDS));
        assertFalse(lock.tryLock(), "held by the rival");
        assertTrue(lock.isLost());
        assertThrows(LockNotHeldException.class, lock::unlock);
        rival.unlock();
    }

    @Test
    void aHoldWithAnExplicitLeaseIsNotKeptByAReentrantLock() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(0, LEASE_MS, TimeUnit.MILLISECONDS));
        assertTrue(lock.tryLock()); // counts a hold, keeps nothing
        lock.unlock(); // the first hold is left
        assertExpiresUnrenewed(lock);
    }

    /** The keys of name on the five nodes, as GET sees them ("" when there is none). */
    private List<String> keysOnNodes(String key) throws Exception {
        List<String> values = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            values.add(nodes.call(i, "GET", "kept:" + key));
        }
        return values;
    }

    /** For forMs, no node holds any of the keys: nothing recreates them. */
    private void assertStayGone(List<String> keys, long forMs) throws Exception {
        List<String> exists = new ArrayList<>(List.of("EXISTS"));
        keys.forEach(key -> exists.add("kept:" + key));
        long start = System.nanoTime();
        int checks = 0;
        do {
            for (int i = 1; i <= 5; i++) {
                assertEquals("0", nodes.call(i, exists.toArray(new String[0])),
                        "keys on node " + i + " " + elapsedMs(start) + " ms after unlock");
            }
            checks++;
            Thread.sleep(50);
        } while (elapsedMs(start) < forMs);
        assertTrue(checks >= forMs / 200, "only " + checks + " checks");
    }

    @Test
    void noRenewalAfterUnlock() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        Thread.sleep(LEASE_MS * 2 / 3); // renewed once at least
        assertTrue(keysOnNodes(name).stream().allMatch(v -> v.matches("[0-9a-f]{32}")));
        lock.unlock();
        assertStayGone(List.of(name), 3 * LEASE_MS);
    }

    @Test
    void unlocksAtAnyMomentOfTheRenewalLeaveNothingBehind() throws Exception {
        // Redisson #7272: renewal going on after unlock. Unlocks land at every moment of the
        // renewal cycle, some asynchronous, some while a renewal is under way.
        int count = 24;
        List<String> keys = new ArrayList<>();
        List<CompletableFuture<Void>> unlocks = new ArrayList<>();
        ExecutorService executor = Executors.newFixedThreadPool(4);
        try {
            for (int i = 0; i < count; i++) {
                String key = name + "-" + i;
                keys.add(key);
                long holdMs = ThreadLocalRandom.current().nextLong(2 * LEASE_MS / 3);
                boolean async = i % 2 == 0;
                unlocks.add(CompletableFuture.runAsync(() -> {
                    RLock lock = client.getLock(key);
                    lock.lock();
                    try {
                        Thread.sleep(holdMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    if (async) {
                        lock.unlockAsync().join();
                    } else {
                        lock.unlock();
                    }
                }, executor));
            }
            CompletableFuture.allOf(unlocks.toArray(CompletableFuture<?>[]::new))
                    .get(60, TimeUnit.SECONDS);
        } finally {
            executor.shutdown();
        }
        assertStayGone(keys, 2 * LEASE_MS);
    }

    /** Deletes the lock's key on every node: its next renewal finds it not ours. */
    private void deleteKeys(String key) throws Exception {
        for (int i = 1; i <= 5; i++) {
            nodes.call(i, "DEL", "kept:" + key);
        }
    }

    /** Waits until lock is lost; fails after timeoutMs. */
    private static void awaitLost(RLock lock, long timeoutMs) throws Exception {
        long start = System.nanoTime();
        while (!lock.isLost()) {
            assertTrue(elapsedMs(start) < timeoutMs, "not lost after " + timeoutMs + " ms");
            Thread.sleep(5);
        }
    }

    /**
     * Keeps lock, then has takeAway remove it from the nodes (true when it did): it is lost at
     * its next renewal, its listener told on the notifier thread, and its unlock throws
     * LockNotHeldException.
     */
    private static void assertLostOnceTakenAway(RLock lock, Callable<Boolean> takeAway)
            throws Exception {
        CompletableFuture<String> told = new CompletableFuture<>();
        lock.onLost(() -> told.complete(Thread.currentThread().getName()));
        lock.lock();
        assertTrue(takeAway.call());
        assertEquals("redlock-lost", told.get(2 * LEASE_MS, TimeUnit.MILLISECONDS));
        assertTrue(lock.isLost());
        assertFalse(lock.isHeldByCurrentThread());
        assertEquals(0, lock.remainingValidity(TimeUnit.MILLISECONDS));
        assertThrows(LockNotHeldException.class, lock::unlock);
        assertTrue(lock.isLost(), "the last hold was lost: so it stays until the next one");
    }

    @Test
    void aLockTakenFromUnderItIsLostAtTheNextRenewal() throws Exception {
        assertLostOnceTakenAway(client.getLock(name), () -> {
            deleteKeys(name);
            return true;
        });
    }

    @Test
    void aForcedUnlockOfAKeptLockIsALoss() throws Exception {
        RLock lock = client.getLock(name);
        assertLostOnceTakenAway(lock, () -> other.getLock(name).forceUnlock());
        assertFalse(lock.isLocked());
        assertEquals(0, lock.getHoldCount());
        lock.lock();
        assertFalse(lock.isLost(), "a fresh hold");
        lock.unlock();
    }

    /** Waits until counter reaches 1; fails after timeoutMs. */
    private static void awaitOne(AtomicInteger counter, long timeoutMs) throws Exception {
        long start = System.nanoTime();
        while (counter.get() < 1) {
            assertTrue(elapsedMs(start) < timeoutMs, "not told after " + timeoutMs + " ms");
            Thread.sleep(5);
        }
    }

    @Test
    void aLossIsToldToTheRLocksThroughWhichTheHoldWasTaken() throws Exception {
        RLock taking = client.getLock(name);
        RLock reentering = client.getLock(name);
        RLock looking = client.getLock(name);
        AtomicInteger toldTaking = new AtomicInteger();
        AtomicInteger toldReentering = new AtomicInteger();
        AtomicInteger toldLooking = new AtomicInteger();
        taking.onLost(toldTaking::incrementAndGet);
        reentering.onLost(toldReentering::incrementAndGet);
        looking.onLost(toldLooking::incrementAndGet);
        taking.lock();
        assertTrue(reentering.tryLock(2, TimeUnit.SECONDS), "a reentry");
        deleteKeys(name);
        awaitOne(toldTaking, 2 * LEASE_MS);
        awaitOne(toldReentering, 2 * LEASE_MS);
        assertTrue(looking.isLost(), "the hold is the lock's, whichever RLock asks");

        // Added after the loss: run at once for an RLock that took part, not for the others.
        CountDownLatch late = new CountDownLatch(1);
        reentering.onLost(late::countDown);
        CountDownLatch lateLooking = new CountDownLatch(1);
        looking.onLost(lateLooking::countDown);
        assertTrue(late.await(1, TimeUnit.SECONDS));
        assertFalse(lateLooking.await(300, TimeUnit.MILLISECONDS));
        assertEquals(0, toldLooking.get());
        assertEquals(1, toldTaking.get());
        assertEquals(1, toldReentering.get());

        reentering.unlock(); // one of the two holds
        assertThrows(LockNotHeldException.class, taking::unlock);
        assertTrue(looking.isLost(), "the last hold was lost: so it stays until the next one");
    }

    /** Takes name's kept lock through an RLock that its caller then drops. */
    private WeakReference<RLock> lockThroughADroppedRLock() {
        RLock taking = client.getLock(name);
        taking.lock();
        return new WeakReference<>(taking);
    }

    @Test
    void aSharedKeptHoldOutlivesTheRLockThatTookIt() throws Exception {
        RLock staying = client.getLock(name);
        WeakReference<RLock> dropped = lockThroughADroppedRLock();
        long start = System.nanoTime();
        while (dropped.get() != null) {
            assertTrue(elapsedMs(start) < 10_000, "the dropped RLock was never collected");
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(1, staying.getHoldCount(), "the hold is the lock's, not the RLock's");
        assertKeptThenReleased(staying, name);
    }

    @Test
    void onLostAfterTheLossRunsAtOnceAndListenersPersistAcrossHolds() throws Exception {
        RLock lock = client.getLock(name);
        AtomicInteger early = new AtomicInteger();
        lock.onLost(early::incrementAndGet);
        lock.lock();
        deleteKeys(name);
        awaitLost(lock, 2 * LEASE_MS);

        CountDownLatch late = new CountDownLatch(1);
        long registered = System.nanoTime();
        lock.onLost(late::countDown);
        assertTrue(late.await(1, TimeUnit.SECONDS), "a listener added after the loss runs");
        assertTrue(elapsedMs(registered) < 500, "at once: " + elapsedMs(registered) + " ms");
        Thread.sleep(200);
        assertEquals(1, early.get(), "once per lost hold");
        assertThrows(LockNotHeldException.class, lock::unlock);

        // A fresh hold is not lost; the listeners stay, and are not told of an unlock.
        lock.lock();
        assertFalse(lock.isLost());
        Thread.sleep(LEASE_MS / 2);
        lock.unlock();
        Thread.sleep(LEASE_MS / 2);
        assertEquals(1, early.get(), "an unlock is not a loss");

        // The next lost hold is told again, to every listener.
        CountDownLatch lateAgain = new CountDownLatch(1);
        Runnable removed = late::countDown;
        lock.onLost(removed);
        assertTrue(lock.removeOnLost(removed));
        assertFalse(lock.removeOnLost(removed));
        lock.onLost(lateAgain::countDown);
        assertTrue(lock.tryLock());
        deleteKeys(name);
        assertTrue(lateAgain.await(2 * LEASE_MS, TimeUnit.MILLISECONDS));
        Thread.sleep(200);
        assertEquals(2, early.get());
        assertEquals(0, late.getCount());
        assertThrows(LockNotHeldException.class, lock::unlock);
    }

    @Test
    void aThrowingListenerStopsNeitherOtherListenersNorOtherLocks() throws Exception {
        RLock doomed = client.getLock(name + "-doomed");
        RLock kept = client.getLock(name + "-kept");
        CountDownLatch after = new CountDownLatch(1);
        doomed.onLost(() -> {
            throw new IllegalStateException("a listener that throws (expected by the test)");
        });
        doomed.onLost(after::countDown);
        doomed.lock();
        kept.lock();
        deleteKeys(name + "-doomed");
        assertTrue(after.await(2 * LEASE_MS, TimeUnit.MILLISECONDS));
        assertTrue(doomed.isLost());
        assertStaysHeld(kept, other.getLock(name + "-kept"), 3 * LEASE_MS, LEASE_MS);

        // The notifier still tells, on an executor when asked to.
        RLock next = client.getLock(name + "-next");
        CompletableFuture<String> told = new CompletableFuture<>();
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> new Thread(r, "mine"));
        try {
            next.onLost(() -> told.complete(Thread.currentThread().getName()), executor);
            next.lock();
            deleteKeys(name + "-next");
            assertEquals("mine", told.get(2 * LEASE_MS, TimeUnit.MILLISECONDS));
        } finally {
            executor.shutdown();
        }
        assertThrows(LockNotHeldException.class, next::unlock);
        assertThrows(LockNotHeldException.class, doomed::unlock);
        kept.unlock();
    }

    @Test
    void lostWhenAMajorityIsAwayBeforeAnyoneElseHoldsIt() throws Exception {
        // A lease of its own: a renewal every 500 ms leaves time to pause the nodes between two.
        long lease = 1_500;
        try (Redlock keeper = Redlock.create(nodes.uris(), Map.of("key_prefix", "kept:",
                "watchdog_lease_ms", Long.toString(lease), "retry_delay_ms", "50",
                "retry_jitter_ms", "20"))) {
            RLock lock = keeper.getLock(name);
            AtomicLong toldAt = new AtomicLong();
            AtomicInteger told = new AtomicInteger();
            lock.onLost(() -> {
                toldAt.compareAndSet(0, System.nanoTime());
                told.incrementAndGet();
            });
            lock.lock();

            // The rival tries all along; it must not succeed before the holder was told.
            AtomicLong rivalAt = new AtomicLong();
            AtomicInteger rivalTries = new AtomicInteger();
            AtomicReference<Throwable> rivalError = new AtomicReference<>();
            RLock rival = other.getLock(name);
            Thread rivalThread = new Thread(() -> {
                try {
                    while (rivalAt.get() == 0 && rivalTries.incrementAndGet() < 100_000) {
                        try {
                            if (rival.tryLock(0, 10, TimeUnit.SECONDS)) {
                                rivalAt.set(System.nanoTime());
                                rival.unlock();
                            }
                        } catch (NoQuorumException paused) {
                            // the majority is paused: not acquired either
                        }
                    }
                } catch (Throwable t) {
                    rivalError.set(t);
                }
            }, "rival");
            rivalThread.start();

            // Right after a renewal ended (validity jumps up), the next is a third of the lease
            // away: pause nodes 1-3 until 100 ms past the validity's end, so no renewal gets a
            // quorum, and the rival can get one soon after the validity's end.
            long previous = lock.remainingValidity(TimeUnit.MILLISECONDS);
            long start = System.nanoTime();
            long validity;
            while (true) {
                assertTrue(elapsedMs(start) < 3 * lease, "no renewal seen");
                Thread.sleep(1);
                validity = lock.remainingValidity(TimeUnit.MILLISECONDS);
                if (validity > previous + 50) {
                    break;
                }
                previous = validity;
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(validity);
            nodes.pause(validity + 100, 1, 2, 3);
            long pausedAt = System.nanoTime();
            assertTrue(elapsedMs(start) < 3 * lease);

            // From now on the validity only runs down; it ends at the deadline seen.
            long lastValid = pausedAt;
            long firstLost = 0;
            while (firstLost == 0 && elapsedMs(pausedAt) < 3 * lease) {
                long now = System.nanoTime();
                long left = lock.remainingValidity(TimeUnit.MILLISECONDS);
                if (left > 0) {
                    lastValid = now;
                    long end = now + TimeUnit.MILLISECONDS.toNanos(left);
                    assertTrue(end <= deadline + TimeUnit.MILLISECONDS.toNanos(5),
                            "a renewal slipped in before the pause");
                }
                if (lock.isLost()) {
                    firstLost = System.nanoTime();
                }
                Thread.sleep(1);
            }
            assertTrue(firstLost != 0, "never lost");
            assertTrue(TimeUnit.NANOSECONDS.toMillis(firstLost - lastValid) <= 100,
                    "lost " + TimeUnit.NANOSECONDS.toMillis(firstLost - lastValid)
                            + " ms after the validity was last seen");

            // The listener ran within 100 ms of the validity's end, and not before it.
            long waitTold = System.nanoTime();
            while (toldAt.get() == 0 && elapsedMs(waitTold) < 2_000) {
                Thread.sleep(1);
            }
            assertTrue(toldAt.get() != 0, "the listener never ran");
            long lateMs = TimeUnit.NANOSECONDS.toMillis(toldAt.get() - deadline);
            assertTrue(lateMs <= 100 && lateMs >= -20,
                    "told " + lateMs + " ms after the validity's end");

            // The rival gets the lock once the pause is over, only after the holder was told.
            rivalThread.join(10_000);
            assertFalse(rivalThread.isAlive());
            assertNull(rivalError.get());
            assertTrue(rivalAt.get() != 0, "the rival never got the lock ("
                    + rivalTries.get() + " tries)");
            assertTrue(rivalAt.get() > toldAt.get(), "the rival held the lock "
                    + TimeUnit.NANOSECONDS.toMillis(toldAt.get() - rivalAt.get())
                    + " ms before the holder was told it lost it");
            assertTrue(rivalTries.get() > 3, "the rival tried while the lock was held");

            assertTrue(lock.isLost());
            assertFalse(lock.isHeldByCurrentThread());
            assertThrows(LockNotHeldException.class, lock::unlock);
            assertEquals(1, told.get());
        }
    }

    @Test
    void unlocksRacingLossesNeverHang() throws Exception {
        // The loss is told on the client's thread while unlock (holding the RLock's monitor)
        // waits in the library for that callback: the callback must take no lock of ours.
        int count = 20;
        List<RLock> locks = new ArrayList<>();
        AtomicInteger told = new AtomicInteger();
        for (int i = 0; i < count; i++) {
            RLock lock = client.getLock(name + "-" + i);
            lock.onLost(told::incrementAndGet);
            lock.onLost(() -> lock.isLost()); // takes the RLock's monitor on the notifier
            locks.add(lock);
        }
        ExecutorService owner = Executors.newSingleThreadExecutor();
        try {
            // One owner thread locks and unlocks; a hang fails the wait below.
            owner.submit(() -> {
                for (RLock lock : locks) {
                    lock.lock();
                }
                Thread.sleep(LEASE_MS / 3 - 50); // the next renewals are about to start
                for (int i = 0; i < count; i++) {
                    deleteKeys(name + "-" + i);
                }
                for (RLock lock : locks) {
                    Thread.sleep(ThreadLocalRandom.current().nextInt(20));
                    try {
                        lock.unlock();
                    } catch (LockNotHeldException expected) {
                        // lost first, or its keys were gone
                    }
                }
                return null;
            }).get(30, TimeUnit.SECONDS);
        } finally {
            owner.shutdownNow();
        }
        for (RLock lock : locks) {
            assertFalse(lock.isLocked());
            assertTrue(lock.isLost(), "its keys were gone before its unlock");
        }
        assertTrue(told.get() <= count);
    }

    @Test
    void closingTheClientEndsTheRenewal() throws Exception {
        Redlock closing = Redlock.create(nodes.uris(), Map.of("key_prefix", "kept:",
                "watchdog_lease_ms", Long.toString(LEASE_MS)));
        RLock lock = closing.getLock(name);
        lock.lock();
        RLock rival = other.getLock(name);
        assertStaysHeld(lock, rival, LEASE_MS, LEASE_MS);
        long closedAt = System.nanoTime();
        closing.close();
        assertTrue(rival.tryLock(3 * LEASE_MS, 10_000, TimeUnit.MILLISECONDS),
                "a closed client still renews");
        long acquiredAfter = elapsedMs(closedAt);
        assertTrue(acquiredAfter <= LEASE_MS + 500, "acquired " + acquiredAfter
                + " ms after close");
        assertFalse(lock.isHeldByCurrentThread());
        assertThrows(ClientClosedException.class, lock::isLocked, "the nodes are not asked");
        rival.unlock();
    }

    /** A kept lock whose listener refers to it, then forgotten by its program. */
    private WeakReference<RLock> dropKeptLock() {
        RLock lock = client.getLock(name);
        lock.onLost(() -> System.err.println("lost " + lock));
        lock.lock();
        return new WeakReference<>(lock);
    }

    @Test
    void aKeptLockItsProgramDroppedIsNotRenewedForever() throws Exception {
        WeakReference<RLock> dropped = dropKeptLock();
        RLock rival = other.getLock(name);
        long start = System.nanoTime();
        boolean acquired = false;
        while (!acquired && elapsedMs(start) < 20_000) {
            System.gc();
            Thread.sleep(100);
            acquired = rival.tryLock(0, 10, TimeUnit.SECONDS);
        }
        assertTrue(acquired, "still renewed " + elapsedMs(start) + " ms after it was dropped");
        assertNull(dropped.get());
        rival.unlock();
    }
}
