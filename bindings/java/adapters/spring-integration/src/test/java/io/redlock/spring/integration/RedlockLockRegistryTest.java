package io.redlock.spring.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.NoQuorumException;
import io.redlock.Redlock;
import io.redlock.testing.TwoInstances;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * The registry as Spring Integration's users call it, on three redis-server nodes: two
 * registries, each on a client of its own, stand for two instances of a service.
 */
class RedlockLockRegistryTest extends TwoInstances {
    private RedlockLockRegistry a;
    private RedlockLockRegistry b;
    private String key;

    /** Kept locks on a lease of 1.5 s, renewed every 0.5 s: a test outlives a few leases. */
    @Override
    protected Map<String, String> options() {
        return Map.of("watchdog_lease_ms", "1500", "fencing", "1");
    }

    @BeforeEach
    void createRegistries() {
        a = new RedlockLockRegistry(clientA, "si:");
        b = new RedlockLockRegistry(clientB, "si:");
        key = name;
    }

    /** Whether the nodes hold the lock of key (after the registries' prefix). */
    private boolean locked(String key) {
        return clientB.getLock("si:" + key).isLocked();
    }

    /** Runs action on a thread of its own and returns what it returns. */
    private static <T> T elsewhere(Action<T> action) throws Exception {
        try {
            return CompletableFuture.supplyAsync(() -> {
                try {
                    return action.run();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }).get();
        } catch (ExecutionException e) {
            throw e.getCause().getCause() instanceof Exception ? (Exception) e.getCause().getCause()
                    : e;
        }
    }

    @FunctionalInterface
    interface Action<T> {
        T run() throws Exception;
    }

    @Test
    void theRegistryIsSpringIntegrations() {
        LockRegistry<?> registry = a;
        assertInstanceOf(ExpirableLockRegistry.class, registry);
        assertInstanceOf(RenewableLockRegistry.class, registry);
        assertSame(a.obtain(key), a.obtain(key));
    }

    @Test
    void twoRegistriesExcludeEachOther() throws Exception {
        Lock lock = a.obtain(key);
        lock.lock();
        try {
            assertTrue(locked(key));
            assertFalse(elsewhere(() -> b.obtain(key).tryLock()));
            assertFalse(elsewhere(() -> b.obtain(key).tryLock(200, TimeUnit.MILLISECONDS)));
        } finally {
            lock.unlock();
        }
        assertFalse(locked(key));
        assertTrue(elsewhere(() -> {
            Lock other = b.obtain(key);
            boolean acquired = other.tryLock(5, TimeUnit.SECONDS);
            other.unlock();
            return acquired;
        }));
    }

    @Test
    void lockWaitsForTheHolder() throws Exception {
        Lock lock = a.obtain(key);
        lock.lock();
        CountDownLatch waiting = new CountDownLatch(1);
        CompletableFuture<Void> other = CompletableFuture.runAsync(() -> {
            Lock theirs = b.obtain(key);
            waiting.countDown();
            theirs.lock();
            theirs.unlock();
        });
        waiting.await();
        Thread.sleep(300);
        assertFalse(other.isDone(), "lock() returned while the other registry held the lock");
        lock.unlock();
        other.get(10, TimeUnit.SECONDS);
    }

    @Test
    void threadsOfOneRegistryExcludeEachOther() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        CompletableFuture<?>[] threads = new CompletableFuture<?>[4];
        for (int i = 0; i < threads.length; i++) {
            threads[i] = CompletableFuture.runAsync(() -> {
                for (int j = 0; j < 10; j++) {
                    Lock lock = a.obtain(key);
                    lock.lock();
                    try {
                        most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        Thread.sleep(2);
                        inside.decrementAndGet();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        lock.unlock();
                    }
                }
            });
        }
        CompletableFuture.allOf(threads).get(60, TimeUnit.SECONDS);
        assertEquals(1, most.get(), "two threads held the lock at once");
        assertFalse(locked(key));
    }

    @Test
    void aLockIsReentrantPerThread() throws Exception {
        RedlockLockRegistry.RedlockLock lock = a.obtain(key);
        lock.lock();
        assertTrue(lock.tryLock());
        lock.unlock();
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(elsewhere(() -> a.obtain(key).tryLock()), "another thread took a held lock");
        lock.unlock();
        assertFalse(locked(key));
    }

    @Test
    void unlockByAThreadThatDoesNotHoldItThrows() throws Exception {
        Lock lock = a.obtain(key);
        assertThrows(IllegalStateException.class, lock::unlock);
        lock.lock();
        try {
            assertThrows(IllegalStateException.class, () -> elsewhere(() -> {
                a.obtain(key).unlock();
                return null;
            }));
            assertTrue(locked(key));
        } finally {
            lock.unlock();
        }
    }

    @Test
    void conditionsAreUnsupported() {
        assertThrows(UnsupportedOperationException.class, () -> a.obtain(key).newCondition());
    }

    @Test
    void aKeptLockOutlivesItsLease() throws Exception {
        Lock lock = a.obtain(key);
        lock.lock();
        Thread.sleep(3500); // more than two leases of 1.5 s
        assertTrue(locked(key));
        assertFalse(elsewhere(() -> b.obtain(key).tryLock()));
        lock.unlock();
    }

    @Test
    void aLeaseEndsTheLockAndItsUnlockSaysSo() throws Exception {
        RedlockLockRegistry leased = new RedlockLockRegistry(clientA, "si:", Duration.ofMillis(200));
        Lock lock = leased.obtain(key);
        lock.lock();
        Thread.sleep(500);
        assertFalse(locked(key));
        assertThrows(IllegalStateException.class, () -> leased.renewLock(key));
        assertThrows(ConcurrentModificationException.class, lock::unlock);
        assertTrue(lock.tryLock(), "the lock is not usable after its lease ran out");
        lock.unlock();
    }

    @Test
    void renewLockExtendsTheLease() throws Exception {
        RedlockLockRegistry leased = new RedlockLockRegistry(clientA, "si:", Duration.ofMillis(1500));
        assertThrows(IllegalStateException.class, () -> leased.renewLock(key));
        Lock lock = leased.obtain(key);
        lock.lock();
        // Any thread of the process renews it, as Spring Integration's renewal tasks do.
        elsewhere(() -> {
            leased.renewLock(key, Duration.ofSeconds(10));
            return null;
        });
        Thread.sleep(2000); // past the first lease
        assertTrue(locked(key));
        leased.renewLock(key); // the registry's lease from now
        lock.unlock();
        assertFalse(locked(key));
        assertThrows(IllegalStateException.class, () -> leased.renewLock(key));
    }

    @Test
    void expireUnusedOlderThanForgetsOnlyLocksNobodyHolds() throws Exception {
        RedlockLockRegistry.RedlockLock idle = a.obtain(key + "-idle");
        RedlockLockRegistry.RedlockLock held = a.obtain(key + "-held");
        held.lock();
        Thread.sleep(20);
        a.expireUnusedOlderThan(10);
        assertNotSame(idle, a.obtain(key + "-idle"));
        assertSame(held, a.obtain(key + "-held"));
        a.expireUnusedOlderThan(60_000);
        assertSame(held, a.obtain(key + "-held"), "a recent lock was forgotten");
        held.unlock();
        Thread.sleep(20);
        a.expireUnusedOlderThan(10);
        assertNotSame(held, a.obtain(key + "-held"));
    }

    @Test
    void executeLockedRunsUnderTheLock() throws Exception {
        String result = a.executeLocked(key, () -> {
            assertTrue(locked(key));
            return "done";
        });
        assertEquals("done", result);
        assertFalse(locked(key));
    }

    @Test
    void lockInterruptiblyEndsWithAnInterrupt() throws Exception {
        Lock lock = a.obtain(key);
        lock.lock();
        try {
            CountDownLatch started = new CountDownLatch(1);
            Thread waiter = new Thread(() -> {
                started.countDown();
                try {
                    b.obtain(key).lockInterruptibly();
                } catch (InterruptedException expected) {
                    return;
                }
                throw new AssertionError("acquired a held lock");
            });
            CompletableFuture<Void> ended = new CompletableFuture<>();
            waiter.setUncaughtExceptionHandler((thread, error) -> ended.completeExceptionally(error));
            waiter.start();
            started.await();
            waiter.interrupt();
            waiter.join(10_000);
            assertFalse(waiter.isAlive());
            assertFalse(ended.isCompletedExceptionally());
        } finally {
            lock.unlock();
        }
    }

    @Test
    void theLockCarriesItsFencingToken() throws Exception {
        RedlockLockRegistry.RedlockLock lock = a.obtain(key);
        lock.lock();
        Long first = lock.getFence();
        assertNotNull(first);
        lock.unlock();
        Long second = elsewhere(() -> {
            RedlockLockRegistry.RedlockLock other = b.obtain(key);
            other.lock(Duration.ofSeconds(5));
            try {
                return other.getFence();
            } finally {
                other.unlock();
            }
        });
        assertTrue(second > first);
    }

    @Test
    void tooFewNodesIsNotContention() {
        // One node of three answering: no quorum, which Spring's callers see as an exception.
        List<String> oneOfThree = List.of(nodes.uris().get(0), "redis://127.0.0.1:1",
                "redis://127.0.0.1:2");
        try (Redlock client = Redlock.create(oneOfThree, Map.of())) {
            RedlockLockRegistry registry = new RedlockLockRegistry(client);
            CannotAcquireLockException failed = assertThrows(CannotAcquireLockException.class,
                    () -> registry.obtain(key).tryLock());
            assertInstanceOf(NoQuorumException.class, failed.getCause());
        }
    }
}
