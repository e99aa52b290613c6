package io.redlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.Redlock;
import io.redlock.testing.TwoInstances;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The provider as ShedLock uses it, on three redis-server nodes: two providers, each on a
 * client of its own, stand for two instances of a service.
 */
class RedlockLockProviderTest extends TwoInstances {
    private RedlockLockProvider a;
    private RedlockLockProvider b;

    @Override
    protected Map<String, String> options() {
        return Map.of("fencing", "1");
    }

    @BeforeEach
    void createProviders() {
        a = new RedlockLockProvider(clientA, "jobs:");
        b = new RedlockLockProvider(clientB, "jobs:");
    }

    private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
        return new LockConfiguration(Instant.now(), name, atMost, atLeast);
    }

    private static LockConfiguration config(String name) {
        return config(name, Duration.ofSeconds(30), Duration.ZERO);
    }

    /** Whether the nodes hold the lock of the task name (after the providers' prefix). */
    private boolean locked(String task) {
        return clientB.getLock("jobs:" + task).isLocked();
    }

    @Test
    void aHeldLockRefusesEveryOtherHolder() {
        Optional<SimpleLock> held = a.lock(config(name));
        assertTrue(held.isPresent());
        assertTrue(locked(name));
        assertTrue(b.lock(config(name)).isEmpty(), "another instance");
        assertTrue(a.lock(config(name)).isEmpty(), "the same instance again");
        held.get().unlock();
        assertFalse(locked(name));
        Optional<SimpleLock> next = b.lock(config(name));
        assertTrue(next.isPresent());
        next.get().unlock();
    }

    @Test
    void namesAreIndependentAndPrefixed() {
        SimpleLock one = a.lock(config(name + "1")).orElseThrow();
        SimpleLock two = b.lock(config(name + "2")).orElseThrow();
        assertEquals("jobs:" + name + "1", ((RedlockLockProvider.RedlockLock) one).getLockName());
        // Another prefix is another lock.
        RedlockLockProvider other = new RedlockLockProvider(clientB, "other:");
        SimpleLock three = other.lock(config(name + "1")).orElseThrow();
        one.unlock();
        two.unlock();
        three.unlock();
    }

    @Test
    void unlockKeepsTheLockUntilLockAtLeastFor() throws Exception {
        LockConfiguration configuration = config(name, Duration.ofSeconds(30), Duration.ofSeconds(2));
        SimpleLock held = a.lock(configuration).orElseThrow();
        held.unlock(); // a task much shorter than lockAtLeastFor
        Instant until = configuration.getLockAtLeastUntil();
        assertTrue(locked(name), "released before lockAtLeastFor");
        Optional<SimpleLock> next = Optional.empty();
        while (next.isEmpty()) {
            Instant tried = Instant.now();
            next = b.lock(config(name));
            assertTrue(next.isPresent() || tried.isBefore(until.plusSeconds(5)),
                    "still held 5 s after lockAtLeastUntil");
            if (next.isPresent()) {
                assertFalse(tried.isBefore(until), "acquired before lockAtLeastUntil");
            } else {
                Thread.sleep(20);
            }
        }
        next.get().unlock();
    }

    @Test
    void unlockReleasesOnceLockAtLeastForHasPassed() throws Exception {
        SimpleLock held = a.lock(config(name, Duration.ofSeconds(30), Duration.ofMillis(50)))
                .orElseThrow();
        Thread.sleep(150); // a task longer than lockAtLeastFor
        held.unlock();
        assertFalse(locked(name));
        b.lock(config(name)).orElseThrow().unlock();
    }

    @Test
    void aLockEndsWithLockAtMostFor() throws Exception {
        a.lock(config(name, Duration.ofMillis(300), Duration.ZERO)).orElseThrow(); // never unlocked
        assertTrue(b.lock(config(name)).isEmpty());
        Instant deadline = Instant.now().plusSeconds(10);
        Optional<SimpleLock> next = b.lock(config(name));
        while (next.isEmpty() && Instant.now().isBefore(deadline)) {
            Thread.sleep(50);
            next = b.lock(config(name));
        }
        assertTrue(next.isPresent(), "the lock outlived lockAtMostFor");
        next.get().unlock();
    }

    @Test
    void lockAtMostForLongerThanTheLongestLeaseIsRefused() {
        // The nodes' clients agree on the longest lease (max_lease_ms, 60 s unless set).
        LockException refused = assertThrows(LockException.class,
                () -> a.lock(config(name, Duration.ofMinutes(5), Duration.ZERO)));
        assertTrue(refused.getMessage().contains("max_lease_ms"), refused.getMessage());
        assertFalse(locked(name));
        try (Redlock longer = Redlock.create(nodes.uris(), Map.of("max_lease_ms", "600000"))) {
            new RedlockLockProvider(longer).lock(config("jobs:" + name, Duration.ofMinutes(5),
                    Duration.ZERO)).orElseThrow().unlock();
        }
    }

    @Test
    void aLockIsUnlockedOnce() {
        SimpleLock held = a.lock(config(name)).orElseThrow();
        held.unlock();
        assertThrows(IllegalStateException.class, held::unlock);
    }

    @Test
    void extendGivesANewLeaseAndEndsTheOldLock() throws Exception {
        SimpleLock held = a.lock(config(name, Duration.ofMillis(1500), Duration.ZERO)).orElseThrow();
        SimpleLock extended = held.extend(Duration.ofSeconds(30), Duration.ZERO).orElseThrow();
        assertThrows(IllegalStateException.class, held::unlock);
        assertThrows(IllegalStateException.class,
                () -> held.extend(Duration.ofSeconds(30), Duration.ZERO));
        Thread.sleep(2000); // past the first lease
        assertTrue(locked(name));
        assertTrue(b.lock(config(name)).isEmpty());
        extended.unlock();
        assertFalse(locked(name));
    }

    @Test
    void extendKeepsTheNewLockAtLeastFor() {
        SimpleLock held = a.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
        SimpleLock extended = held.extend(Duration.ofSeconds(10), Duration.ofSeconds(9))
                .orElseThrow();
        extended.unlock();
        assertTrue(locked(name), "released before the new lockAtLeastFor");
    }

    @Test
    void aLostLockCannotBeExtended() throws Exception {
        SimpleLock held = a.lock(config(name, Duration.ofMillis(100), Duration.ZERO)).orElseThrow();
        Thread.sleep(300);
        SimpleLock other = b.lock(config(name)).orElseThrow();
        assertTrue(held.extend(Duration.ofSeconds(30), Duration.ZERO).isEmpty());
        assertTrue(locked(name), "the other holder's lock was touched");
        other.unlock();
    }

    @Test
    void anyThreadMayExtendAndUnlock() throws Exception {
        SimpleLock held = a.lock(config(name, Duration.ofSeconds(2), Duration.ZERO)).orElseThrow();
        // As ShedLock's KeepAliveLockProvider does, from its scheduler's thread.
        SimpleLock extended = CompletableFuture.supplyAsync(
                () -> held.extend(Duration.ofSeconds(30), Duration.ZERO).orElseThrow()).get();
        CompletableFuture.runAsync(extended::unlock).get();
        assertFalse(locked(name));
    }

    @Test
    void fencingTokensGrowWithEachHolder() {
        RedlockLockProvider.RedlockLock first =
                (RedlockLockProvider.RedlockLock) a.lock(config(name)).orElseThrow();
        Long fence = first.getFence();
        assertNotNull(fence);
        first.unlock();
        RedlockLockProvider.RedlockLock second =
                (RedlockLockProvider.RedlockLock) b.lock(config(name)).orElseThrow();
        assertTrue(second.getFence() > fence);
        second.unlock();
        try (Redlock plain = Redlock.create(nodes.uris(), Map.of())) {
            SimpleLock unfenced = new RedlockLockProvider(plain).lock(config(name)).orElseThrow();
            assertNull(((RedlockLockProvider.RedlockLock) unfenced).getFence());
            unfenced.unlock();
        }
    }

    @Test
    void executorsOfTwoInstancesNeverRunTheTaskTogether() throws Exception {
        LockingTaskExecutor executorA = new DefaultLockingTaskExecutor(a);
        LockingTaskExecutor executorB = new DefaultLockingTaskExecutor(b);
        AtomicInteger running = new AtomicInteger();
        AtomicBoolean overlapped = new AtomicBoolean();
        AtomicInteger runs = new AtomicInteger();
        Runnable task = () -> {
            if (running.incrementAndGet() > 1) {
                overlapped.set(true);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            running.decrementAndGet();
            runs.incrementAndGet();
        };
        List<CompletableFuture<Void>> threads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            LockingTaskExecutor executor = i % 2 == 0 ? executorA : executorB;
            threads.add(CompletableFuture.runAsync(() -> {
                for (int j = 0; j < 40; j++) {
                    executor.executeWithLock(task, config(name));
                }
            }));
        }
        for (CompletableFuture<Void> thread : threads) {
            thread.get();
        }
        assertFalse(overlapped.get(), "two executors ran the task at once");
        assertTrue(runs.get() > 0);
        assertFalse(locked(name));
    }

    @Test
    void aTaskIsSkippedWhileAnotherInstanceRunsIt() throws Throwable {
        LockingTaskExecutor executorA = new DefaultLockingTaskExecutor(a);
        LockingTaskExecutor executorB = new DefaultLockingTaskExecutor(b);
        AtomicBoolean innerRan = new AtomicBoolean();
        // B on a thread of its own: ShedLock runs a task of a lock the thread holds at once.
        LockingTaskExecutor.TaskResult<Boolean> outer = executorA.executeWithLock(
                () -> CompletableFuture.supplyAsync(() -> {
                    try {
                        return executorB.executeWithLock(() -> innerRan.getAndSet(true),
                                config(name)).wasExecuted();
                    } catch (Throwable e) {
                        throw new IllegalStateException(e);
                    }
                }).get(), config(name));
        assertTrue(outer.wasExecuted());
        assertFalse(outer.getResult(), "B ran the task while A held its lock");
        assertFalse(innerRan.get());
        assertFalse(locked(name));
    }
}
