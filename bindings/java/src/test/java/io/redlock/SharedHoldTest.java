package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The holds of one client's RLocks of one name are shared, as Redisson's are (per client, name
 * and owner thread): reentrant across the objects, counted across them, released by the last
 * unlock through any of them. Multi-locks keep theirs to themselves.
 */
class SharedHoldTest extends TwoClients {
    @Override
    String keyPrefix() {
        return "shared:";
    }

    private static long elapsedMs(long sinceNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sinceNanos);
    }

    @Test
    void aThreadHoldingTheLockAcquiresItAgainThroughAnotherRLock() throws Exception {
        RLock first = client.getLock(name);
        RLock second = client.getLock(name);
        assertTrue(first.tryLock(0, 10, TimeUnit.SECONDS));
        String token = nodes.call(1, "GET", "shared:" + name);

        assertTrue(second.tryLock(), "a reentry, not a rival");
        long start = System.nanoTime();
        assertTrue(second.tryLock(5, TimeUnit.SECONDS));
        second.lock();
        assertTrue(elapsedMs(start) < 1_000, "at once, not after a wait: " + elapsedMs(start));
        assertEquals(4, first.getHoldCount());
        assertEquals(4, second.getHoldCount());
        assertTrue(second.isHeldByCurrentThread());
        assertEquals(token, nodes.call(1, "GET", "shared:" + name), "one hold on the nodes");

        // Another thread of the client: refused its unlock, and waits for the last unlock.
        RLock third = client.getLock(name);
        CompletableFuture<Throwable> refused = new CompletableFuture<>();
        CompletableFuture<Long> acquiredAt = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                assertEquals(0, third.getHoldCount());
                assertFalse(third.isHeldByCurrentThread());
                refused.complete(assertThrows(IllegalMonitorStateException.class, first::unlock));
                third.close(); // not the owner: does nothing
                assertTrue(third.tryLock(20, 10, TimeUnit.SECONDS));
                acquiredAt.complete(System.nanoTime());
                assertEquals(1, third.getHoldCount());
                third.unlock();
            } catch (Throwable t) {
                refused.complete(t);
                acquiredAt.completeExceptionally(t);
            }
        });
        waiter.start();
        assertInstanceOf(IllegalMonitorStateException.class, refused.get(10, TimeUnit.SECONDS));
        for (RLock unlocking : new RLock[] {second, first, second}) {
            Thread.sleep(300);
            assertFalse(acquiredAt.isDone(), "acquired while held "
                    + first.getHoldCount() + " times");
            unlocking.unlock();
            assertTrue(first.isHeldByCurrentThread());
            assertEquals(token, nodes.call(1, "GET", "shared:" + name));
        }
        assertEquals(1, second.getHoldCount());
        Thread.sleep(300);
        assertFalse(acquiredAt.isDone());
        long releasedAt = System.nanoTime();
        first.unlock(); // the last one, through either object
        long tookMs = TimeUnit.NANOSECONDS.toMillis(
                acquiredAt.get(10, TimeUnit.SECONDS) - releasedAt);
        assertTrue(tookMs < 2_000, "acquired " + tookMs + " ms after the last unlock");
        waiter.join(10_000);
        assertEquals(0, first.getHoldCount());
        assertThrows(IllegalMonitorStateException.class, second::unlock);
    }

    @Test
    void anotherClientIsStillARival() throws Exception {
        RLock mine = client.getLock(name);
        assertTrue(mine.tryLock(0, 10, TimeUnit.SECONDS));
        RLock theirs = other.getLock(name);
        assertFalse(theirs.tryLock());
        assertEquals(0, theirs.getHoldCount());
        mine.unlock();
        assertTrue(theirs.tryLock());
        assertFalse(client.getLock(name).tryLock());
        theirs.unlock();
    }

    @Test
    void tryWithResourcesOnAnotherRLockReleasesOneHold() throws Exception {
        RLock outer = client.getLock(name);
        assertTrue(outer.tryLock(0, 10, TimeUnit.SECONDS));
        try (RLock inner = client.getLock(name)) {
            assertTrue(inner.tryLock());
            assertEquals(2, outer.getHoldCount());
        }
        assertEquals(1, outer.getHoldCount());
        assertFalse(other.getLock(name).tryLock());
        outer.unlock();
        assertFalse(outer.isLocked());
    }

    @Test
    void ownerIdsOfTheAsynchronousFormsAreSharedToo() throws Exception {
        long owner = 777_000;
        RLock first = client.getLock(name);
        assertTrue(first.tryLockAsync(0, 10, TimeUnit.SECONDS, owner).get(10, TimeUnit.SECONDS));
        RLock second = client.getLock(name);
        assertTrue(second.tryLockAsync(0, 10, TimeUnit.SECONDS, owner).get(10, TimeUnit.SECONDS));
        assertTrue(second.isHeldByThread(owner));
        assertFalse(second.isHeldByCurrentThread());
        assertFalse(second.tryLock(), "the calling thread is another owner");
        ExecutionException notOwner = assertThrows(ExecutionException.class,
                () -> second.unlockAsync(owner + 1).get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalMonitorStateException.class, notOwner.getCause());
        RLock third = client.getLock(name);
        third.unlockAsync(owner).get(10, TimeUnit.SECONDS);
        assertTrue(third.isHeldByThread(owner));
        third.unlockAsync(owner).get(10, TimeUnit.SECONDS);
        assertFalse(first.isHeldByThread(owner));
        assertFalse(third.isLocked());
    }

    @Test
    void aMultiLockSharesNoHold() throws Exception {
        RLock multi = client.getMultiLock(name + "-a", name + "-b");
        assertTrue(multi.tryLock(0, 10, TimeUnit.SECONDS));
        assertTrue(multi.tryLock(), "reentrant through its own object");
        assertEquals(2, multi.getHoldCount());
        RLock again = client.getMultiLock(name + "-a", name + "-b");
        assertFalse(again.tryLock(), "another multi-lock waits like any other holder");
        assertEquals(0, again.getHoldCount());
        RLock a = client.getLock(name + "-a");
        assertFalse(a.tryLock());
        assertEquals(0, a.getHoldCount());
        multi.unlock();
        multi.unlock();
        assertTrue(again.tryLock());
        again.unlock();
    }
}
