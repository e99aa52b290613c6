package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Asking the nodes about a lock (isLocked: held by anyone, a quorum of the nodes has it under
 * one token; remainTimeToLive: for how long a quorum still has it) and forcing it open
 * (forceUnlock), against five real nodes.
 */
class LockQueryTest extends TwoClients {
    @Override
    String keyPrefix() {
        return "query:";
    }

    /** Runs a command on each of the nodes given (1-based). */
    private static void onNodes(String[] command, int... which) throws Exception {
        for (int i : which) {
            nodes.call(i, command);
        }
    }

    private static void onEveryNode(String... command) throws Exception {
        onNodes(command, 1, 2, 3, 4, 5);
    }

    @Test
    void isLockedAsksTheNodesAboutAnyHolder() throws Exception {
        RLock mine = client.getLock(name);
        RLock theirs = other.getLock(name);
        assertFalse(theirs.isLocked());
        assertEquals(RLock.NOT_LOCKED, theirs.remainTimeToLive());

        assertTrue(mine.tryLock(0, 10, TimeUnit.SECONDS));
        assertTrue(theirs.isLocked(), "held by another client");
        assertFalse(theirs.isHeldByCurrentThread());
        assertEquals(0, theirs.getHoldCount());
        long ttl = theirs.remainTimeToLive();
        assertTrue(ttl > 8_000 && ttl <= 10_000, "remainTimeToLive " + ttl);
        assertTrue(mine.isLocked());

        mine.unlock();
        assertFalse(theirs.isLocked());
        assertFalse(mine.isLocked());
        assertEquals(RLock.NOT_LOCKED, mine.remainTimeToLive());
    }

    @Test
    void aForeignKeyOnAQuorumIsLockedAndOnAMinorityIsNot() throws Exception {
        RLock lock = client.getLock(name);
        String key = "query:" + name;
        onNodes(new String[] {"SET", key, "another-library", "PX", "6000"}, 1, 2, 3);
        assertTrue(lock.isLocked());
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 4_000 && ttl <= 6_000, "remainTimeToLive " + ttl);
        assertFalse(lock.tryLock(), "the nodes hold it for someone else");

        nodes.call(3, "DEL", key);
        assertFalse(lock.isLocked(), "two nodes of five are no quorum");
        assertEquals(RLock.NOT_LOCKED, lock.remainTimeToLive());

        onEveryNode("SET", key, "forever");
        assertTrue(lock.isLocked());
        assertEquals(RLock.NO_EXPIRY, lock.remainTimeToLive());
        onEveryNode("DEL", key);
    }

    @Test
    void aMultiLockIsLockedWhenAnyResourceIs() throws Exception {
        RLock b = other.getLock(name + "-b");
        assertTrue(b.tryLock(0, 5, TimeUnit.SECONDS));
        RLock all = client.getMultiLock(name + "-a", name + "-b", name + "-c");
        assertTrue(all.isLocked());
        long ttl = all.remainTimeToLive();
        assertTrue(ttl > 3_000 && ttl <= 5_000, "remainTimeToLive " + ttl);
        assertFalse(client.getLock(name + "-a").isLocked());

        // The longest of the resources held: a key without expiry.
        onEveryNode("SET", "query:" + name + "-c", "forever");
        assertEquals(RLock.NO_EXPIRY, all.remainTimeToLive());
        // Such a key is no lock: forceUnlock leaves it alone and says so.
        assertThrows(WrongTypeException.class, client.getLock(name + "-c")::forceUnlock);
        for (int i = 1; i <= 5; i++) {
            assertEquals("1", nodes.call(i, "EXISTS", "query:" + name + "-c"));
        }
        onEveryNode("DEL", "query:" + name + "-c");

        assertFalse(all.tryLock());
        assertTrue(all.forceUnlock(), "each resource is forced open");
        assertFalse(all.isLocked());
        assertEquals(RLock.NOT_LOCKED, all.remainTimeToLive());
        for (int i = 1; i <= 5; i++) {
            assertEquals("0", nodes.call(i, "EXISTS", "query:" + name + "-b",
                    "query:" + name + "-c"));
        }
        assertThrows(LockNotHeldException.class, b::unlock);
        assertTrue(all.tryLock());
        all.unlock();
    }

    @Test
    void forceUnlockTakesTheLockFromItsHolderAndWakesAWaiter() throws Exception {
        RLock holder = client.getLock(name);
        assertTrue(holder.tryLock(0, 30, TimeUnit.SECONDS));
        String token = nodes.call(1, "GET", "query:" + name);
        // A waiter whose timed retries are 3 s apart: only the wake-up gets it the lock sooner.
        try (Redlock waiting = Redlock.create(nodes.uris(), Map.of("key_prefix", "query:",
                "retry_delay_ms", "3000", "retry_jitter_ms", "0"))) {
            CompletableFuture<Long> acquiredAt = new CompletableFuture<>();
            Thread waiter = new Thread(() -> {
                RLock lock = waiting.getLock(name);
                try {
                    lock.lock();
                    acquiredAt.complete(System.nanoTime());
                    lock.unlock();
                } catch (Throwable t) {
                    acquiredAt.completeExceptionally(t);
                }
            });
            waiter.start();
            Thread.sleep(300); // its first attempt failed: it waits
            assertFalse(acquiredAt.isDone());
            long forcedAt = System.nanoTime();
            assertTrue(other.getLock(name).forceUnlock());
            long tookMs = TimeUnit.NANOSECONDS.toMillis(
                    acquiredAt.get(10, TimeUnit.SECONDS) - forcedAt);
            assertTrue(tookMs < 1_000, "the waiter got the lock " + tookMs
                    + " ms after the forced unlock");
            waiter.join(5_000);
        }

        // The holder learns it at its unlock, as for any lost lock; its hold is gone after it.
        assertTrue(holder.isHeldByCurrentThread(), "the holder is not told at once");
        assertThrows(LockNotHeldException.class, holder::unlock);
        assertFalse(holder.isHeldByCurrentThread());
        assertEquals(0, holder.getHoldCount());
        assertEquals(0, holder.remainingValidity(TimeUnit.MILLISECONDS));
        assertThrows(IllegalMonitorStateException.class, holder::unlock);
        assertTrue(holder.tryLock(0, 10, TimeUnit.SECONDS), "usable again");
        assertFalse(token.equals(nodes.call(1, "GET", "query:" + name)), "a new hold");
        holder.unlock();
        assertFalse(other.getLock(name).forceUnlock(), "nothing left to delete");
    }

    @Test
    void forceUnlockOfTheLockOneHoldsItself() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
        assertTrue(lock.forceUnlock());
        assertFalse(lock.isLocked());
        RLock theirs = other.getLock(name);
        assertTrue(theirs.tryLock(0, 10, TimeUnit.SECONDS));
        assertThrows(LockNotHeldException.class, lock::unlock);
        assertTrue(theirs.isHeldByCurrentThread(), "the other client's hold is left alone");
        assertTrue(lock.isLocked());
        theirs.unlock();
    }

    @Test
    void aKeyThatIsNotALockIsRefusedAndKept() throws Exception {
        String key = "query:" + name;
        onEveryNode("RPUSH", key, "item");
        RLock lock = client.getLock(name);
        assertThrows(WrongTypeException.class, lock::isLocked);
        assertThrows(WrongTypeException.class, lock::remainTimeToLive);
        assertThrows(WrongTypeException.class, lock::forceUnlock);
        for (int i = 1; i <= 5; i++) {
            assertEquals("list", nodes.call(i, "TYPE", key));
            assertEquals("1", nodes.call(i, "LLEN", key));
        }
        onEveryNode("DEL", key);
        assertFalse(lock.isLocked());
    }
}
