package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;
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
 * Permit-expirable semaphores (getPermitExpirableSemaphore) on five real nodes: at most P
 * permits across clients, the permits available, the same P from every client, leases that run
 * out, kept permits, ids this object does not hold, the async methods and bad input. client keeps
 * its permits with a watchdog lease of LEASE_MS; other and third are rivals.
 */
class SemaphoreTest extends KeptClients {
    private static final String PREFIX = "sem:";

    @Override
    String keyPrefix() {
        return PREFIX;
    }

    /** The key of the permits of the semaphore name, on a node (docs/kinds.md). */
    private static String permitsKey(String name) {
        return PREFIX + name + "\0permits";
    }

    /** client's semaphore of the test's name. */
    private RPermitExpirableSemaphore mine(int permits) {
        return client.getPermitExpirableSemaphore(name, permits);
    }

    /** other's semaphore of the test's name. */
    private RPermitExpirableSemaphore theirs(int permits) {
        return other.getPermitExpirableSemaphore(name, permits);
    }

    /** The id of a permit just had: fails when there is none or it is not 32 hex digits. */
    private static String permit(String id) {
        assertNotNull(id, "no permit");
        assertTrue(id.matches("[0-9a-f]{32}"), "a permit id: " + id);
        return id;
    }

    /** sem has a permit free at once: takes it (with a lease) and releases it. */
    private static void assertFree(RPermitExpirableSemaphore sem) throws InterruptedException {
        sem.release(permit(sem.tryAcquire(0, 10, TimeUnit.SECONDS)));
    }

    @Test
    void atMostThePermitsAreHeldAcrossClients() throws Exception {
        ExecutorService executor = Executors.newSingleThreadExecutor();
        try (Redlock third = Redlock.create(nodes.uris(), Map.of("key_prefix", PREFIX))) {
            RPermitExpirableSemaphore mine = mine(3);
            RPermitExpirableSemaphore theirs = theirs(3);
            RPermitExpirableSemaphore thirds = third.getPermitExpirableSemaphore(name, 3);
            assertEquals(name, mine.getName());
            assertEquals(3, mine.getPermits());
            String a = permit(mine.tryAcquire());   // kept
            String b = permit(theirs.tryAcquire(0, 10, TimeUnit.SECONDS));
            String c = permit(thirds.tryAcquire(1, TimeUnit.SECONDS));   // kept
            assertEquals(3, Set.of(a, b, c).size(), "three distinct ids");
            assertNull(thirds.tryAcquire());
            assertNull(theirs.tryAcquire(300, 10_000, TimeUnit.MILLISECONDS), "a wait, all taken");
            assertNull(mine.tryAcquire(0, 10, TimeUnit.SECONDS));

            mine.release(a);
            String d = permit(thirds.tryAcquire(0, 10, TimeUnit.SECONDS));
            assertNull(theirs.tryAcquire());

            // A waiter gets in once a permit is released.
            Future<String> waiting = executor.submit(() -> theirs.acquire(10, TimeUnit.SECONDS));
            Thread.sleep(300);
            assertFalse(waiting.isDone(), "all three are held");
            thirds.release(d);
            String e = permit(waiting.get(10, TimeUnit.SECONDS));
            assertNull(mine.tryAcquire());

            theirs.release(b);
            theirs.release(e);
            thirds.release(c);
            assertEquals(3, mine.availablePermits());
        } finally {
            executor.shutdownNow();
        }
    }

    @Test
    void availablePermitsCountsThePermitsFree() throws Exception {
        RPermitExpirableSemaphore mine = mine(2);
        RPermitExpirableSemaphore theirs = theirs(2);
        assertEquals(2, mine.availablePermits());
        String a = permit(mine.tryAcquire(0, 10, TimeUnit.SECONDS));
        assertEquals(1, theirs.availablePermits());
        String b = permit(theirs.tryAcquire());
        assertEquals(0, mine.availablePermits());
        assertEquals(0, theirs.availablePermitsAsync().get(10, TimeUnit.SECONDS));
        mine.release(a);
        assertEquals(1, mine.availablePermits());
        assertEquals(1, mine.availablePermitsAsync().get(10, TimeUnit.SECONDS));
        theirs.release(b);
        assertEquals(2, theirs.availablePermits());
    }

    @Test
    void everyClientMustGiveTheSamePermits() throws Exception {
        RPermitExpirableSemaphore two = mine(2);
        RPermitExpirableSemaphore three = theirs(3);
        String a = permit(two.tryAcquire(0, 10, TimeUnit.SECONDS));
        InvalidArgumentException refused = assertThrows(InvalidArgumentException.class,
                three::tryAcquire);
        String message = refused.getMessage();
        assertTrue(message.contains("2 permits") && message.contains("not 3"), message);
        assertThrows(InvalidArgumentException.class, three::availablePermits);
        ExecutionException async = assertThrows(ExecutionException.class,
                () -> three.tryAcquireAsync(0, 10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
        assertInstanceOf(InvalidArgumentException.class, async.getCause());
        assertEquals(1, two.availablePermits(), "the refusals took nothing");

        // Once no permit is held, the name may be used with another number: the
        // release answers once a permit's quorum (4 of 5) let go, the last node after.
        two.release(a);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (int i = 1; i <= 5; i++) {
            while (!"0".equals(nodes.call(i, "EXISTS", permitsKey(name)))) {
                assertTrue(System.nanoTime() < deadline, "node " + i + " still holds the permit");
                Thread.sleep(10);
            }
        }
        assertFree(three);
    }

    @Test
    void eachPermitsLeaseEndsUnlessUpdated() throws Exception {
        RPermitExpirableSemaphore mine = mine(2);
        RPermitExpirableSemaphore theirs = theirs(2);
        String expiring = permit(mine.tryAcquire(0, 1500, TimeUnit.MILLISECONDS));
        String extended = permit(mine.tryAcquire(0, 1500, TimeUnit.MILLISECONDS));
        assertTrue(mine.updateLeaseTime(extended, 10, TimeUnit.SECONDS));
        assertFalse(mine.isLost(expiring));
        assertNull(theirs.tryAcquire());
        Thread.sleep(2000);
        assertTrue(mine.isLost(expiring), "its lease ran out");
        assertFalse(mine.isLost(extended));
        assertFalse(mine.updateLeaseTime(expiring, 10, TimeUnit.SECONDS));
        String reclaimed = permit(theirs.tryAcquire(0, 10, TimeUnit.SECONDS));
        assertNull(theirs.tryAcquire(), "the extended permit is still held");
        assertThrows(LockNotHeldException.class, () -> mine.release(expiring));
        assertFalse(mine.tryRelease(expiring), "forgotten by the release that threw");
        assertFalse(mine.isLost(expiring));
        assertThrows(IllegalArgumentException.class,
                () -> mine.updateLeaseTime(extended, 0, TimeUnit.SECONDS));
        mine.release(extended);
        assertFree(theirs);
        theirs.release(reclaimed);
    }

    @Test
    void aKeptPermitIsRenewedAndNotLost() throws Exception {
        RPermitExpirableSemaphore mine = mine(2);
        RPermitExpirableSemaphore theirs = theirs(2);
        AtomicInteger told = new AtomicInteger();
        String first = permit(mine.tryAcquire());
        String second = permit(mine.acquire());
        mine.onLost(first, told::incrementAndGet);
        mine.onLost(second, told::incrementAndGet);
        long pttl = Long.parseLong(nodes.call(1, "PTTL", permitsKey(name)));
        assertTrue(pttl > 0 && pttl <= LEASE_MS, "PTTL " + pttl + ": the watchdog lease");

        long start = System.nanoTime();
        int checks = 0;
        while (TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) < 3 * LEASE_MS + 300) {
            assertNull(theirs.tryAcquire(0, 10, TimeUnit.SECONDS), "a kept permit expired");
            assertFalse(mine.isLost(first));
            assertFalse(mine.isLost(second));
            checks++;
            Thread.sleep(100);
        }
        assertTrue(checks >= 3, "only " + checks + " checks");
        assertEquals(0, told.get());

        mine.release(first);
        assertFree(theirs);
        mine.release(second);
        assertEquals(0, told.get(), "a release is not a loss");
    }

    @Test
    void aKeptPermitWhoseKeyIsGoneIsLost() throws Exception {
        RPermitExpirableSemaphore mine = mine(1);
        String id = permit(mine.acquire());
        CountDownLatch told = new CountDownLatch(1);
        mine.onLost(id, told::countDown);
        for (int i = 1; i <= 5; i++) {
            nodes.call(i, "DEL", permitsKey(name));
        }
        assertTrue(told.await(10 * LEASE_MS, TimeUnit.MILLISECONDS), "the loss was not told");
        assertTrue(mine.isLost(id));
        assertThrows(LockNotHeldException.class, () -> mine.release(id));
    }

    @Test
    void idsThisObjectDoesNotHoldAreRefused() throws Exception {
        RPermitExpirableSemaphore mine = mine(2);
        String unknown = "0123456789abcdef0123456789abcdef";
        IllegalMonitorStateException thrown = assertThrows(IllegalMonitorStateException.class,
                () -> mine.release(unknown));
        assertTrue(thrown.getMessage().contains(unknown), thrown.getMessage());
        assertFalse(mine.tryRelease(unknown));
        assertFalse(mine.updateLeaseTime(unknown, 10, TimeUnit.SECONDS));
        assertFalse(mine.isLost(unknown));
        assertThrows(IllegalMonitorStateException.class, () -> mine.onLost(unknown, () -> { }));
        assertThrows(NullPointerException.class, () -> mine.release(null));

        // Another object's permit of the same name, and one released already.
        RPermitExpirableSemaphore same = mine(2);
        String id = permit(same.tryAcquire(0, 10, TimeUnit.SECONDS));
        assertThrows(IllegalMonitorStateException.class, () -> mine.release(id));
        assertFalse(mine.tryRelease(id));
        assertEquals(1, mine.availablePermits(), "still held by the object that took it");
        assertTrue(same.tryRelease(id));
        assertThrows(IllegalMonitorStateException.class, () -> same.release(id));
        assertFalse(same.tryRelease(id));
        assertEquals(2, mine.availablePermits());
    }

    @Test
    void asyncAcquireAndRelease() throws Exception {
        RPermitExpirableSemaphore mine = mine(1);
        RPermitExpirableSemaphore theirs = theirs(1);
        String id = permit(mine.tryAcquireAsync(0, 10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
        assertNull(theirs.tryAcquireAsync(0, 10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));

        CompletableFuture<String> waiting = theirs.tryAcquireAsync(10, 10, TimeUnit.SECONDS);
        Thread.sleep(300);
        assertFalse(waiting.isDone(), "the one permit is held");
        mine.releaseAsync(id).get(10, TimeUnit.SECONDS);
        String next = permit(waiting.get(10, TimeUnit.SECONDS));
        ExecutionException again = assertThrows(ExecutionException.class,
                () -> mine.releaseAsync(id).get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalMonitorStateException.class, again.getCause());

        // A permit had after its future was cancelled is given back: the wait below is shorter
        // than its lease.
        CompletableFuture<String> cancelled = mine.tryAcquireAsync(10, 10, TimeUnit.SECONDS);
        Thread.sleep(300);
        assertTrue(cancelled.cancel(false));
        theirs.releaseAsync(next).get(10, TimeUnit.SECONDS);
        theirs.release(permit(theirs.tryAcquire(5, 10, TimeUnit.SECONDS)));
        // The cancelled acquisition may take the permit after theirs went back,
        // and give it back a moment later: within a few seconds, not its lease.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (mine.availablePermitsAsync().get(10, TimeUnit.SECONDS) != 1
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(1, mine.availablePermitsAsync().get(10, TimeUnit.SECONDS));
    }

    @Test
    void badInputIsRefused() throws Exception {
        for (int permits : new int[] {0, -1, 10_001}) {
            InvalidArgumentException refused = assertThrows(InvalidArgumentException.class,
                    () -> mine(permits));
            assertTrue(refused.getMessage().contains(Integer.toString(permits)),
                    refused.getMessage());
        }
        assertEquals(10_000, mine(10_000).getPermits());
        assertThrows(IllegalArgumentException.class,
                () -> client.getPermitExpirableSemaphore("", 1));
        assertThrows(NullPointerException.class,
                () -> client.getPermitExpirableSemaphore(null, 1));

        RPermitExpirableSemaphore mine = mine(1);
        assertThrows(IllegalArgumentException.class,
                () -> mine.tryAcquire(-1, 10, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class,
                () -> mine.tryAcquireAsync(-1, 10, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class,
                () -> mine.tryAcquire(0, 0, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class,
                () -> mine.acquire(-5, TimeUnit.SECONDS));
        assertThrows(NullPointerException.class, () -> mine.tryAcquire(0, 10, null));
        assertEquals(1, mine.availablePermits(), "nothing was taken");
    }

    @Test
    void anInterruptEndsTheWait() throws Exception {
        RPermitExpirableSemaphore mine = mine(1);
        RPermitExpirableSemaphore theirs = theirs(1);
        String held = permit(theirs.tryAcquire(0, 10, TimeUnit.SECONDS));
        ExecutorService executor = Executors.newSingleThreadExecutor();
        Future<String> waiting = executor.submit(() -> mine.acquire());
        Thread.sleep(300);
        executor.shutdownNow();   // interrupts the waiting thread
        ExecutionException ended = assertThrows(ExecutionException.class,
                () -> waiting.get(10, TimeUnit.SECONDS));
        assertInstanceOf(InterruptedException.class, ended.getCause());
        theirs.release(held);
        assertEquals(1, mine.availablePermits(), "the interrupted wait took nothing");
    }
}
