package io.redlock;

import io.redlock.internal.RedlockNativeConstants;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A distributed lock on one resource, or on several taken together (from
 * {@link Redlock#getMultiLock}). It is held only while a majority of the nodes agree and its
 * lease lasts: the lease is the time after which the nodes forget the lock even when its holder
 * never released it (crashed, paused or partitioned).
 *
 * <p><b>Leases.</b> {@link #lock()}, {@link #lockInterruptibly()}, {@link #tryLock()} and
 * {@link #tryLock(long, TimeUnit)} take a lease of {@link #DEFAULT_LEASE_MS} (30 seconds); the
 * other methods take the lease as an argument. There is no watchdog: a holder that works longer
 * calls {@link #extend}. When the lease has run out, {@link #isHeldByCurrentThread()} is false
 * and {@link #unlock()} throws {@link LockNotHeldException}: the critical section may not have
 * been exclusive.
 *
 * <p><b>Threads.</b> Like a {@link java.util.concurrent.locks.ReentrantLock}, one RLock object
 * may be shared by threads: the thread that acquired it owns it, only that thread may unlock or
 * extend it ({@link IllegalMonitorStateException} otherwise), and it may acquire it again
 * (reentrancy: each acquisition needs its unlock; acquiring again renews the lease to the
 * requested time, as Redisson does). Exclusion between two RLock objects, even for the same name
 * in the same client, is by the nodes alone: a thread holding one waits for the other like any
 * other client. When the owner's lease ran out and another thread acquired this RLock, the
 * former owner's hold is dropped and its {@link #unlock()} throws IllegalMonitorStateException.
 *
 * <p><b>Waiting.</b> Each acquiring method makes one call into the library with its whole wait
 * ({@link #lock()}: as long as it takes). The library alone decides which failed attempts are
 * worth another (held by someone else, too few nodes answered, the lease ran out while
 * acquiring, nodes answered with Redis errors) and how long to pause between them (the
 * retry_delay_ms and retry_jitter_ms options); this class makes no such decision. When the wait
 * ends without the lock, "held by someone else" and "too few nodes answered" give false (or,
 * for {@link #lock()}, another wait); other outcomes throw {@link RedlockException}
 * ({@link AuthException}, {@link LeaseExpiredException}, {@link RedisErrorException}, ...).
 *
 * <p><b>Interrupts.</b> While a call waits, the library asks at least every 100 ms whether the
 * thread was interrupted. {@link #lockInterruptibly()} and the tryLock methods that take a time
 * then end at once: whatever the attempt under way had taken on the nodes is released, and they
 * throw {@link InterruptedException} with the thread's interrupt status cleared (as they do
 * when called with it set). {@link #lock()} is not interruptible, as the Lock contract says: it
 * clears the status, waits on in a new call, and sets the status again once it holds the lock,
 * as java.util.concurrent's locks do. {@link #tryLock()} ignores interrupts the same way (an
 * attempt cancelled by one is made again).
 *
 * <p><b>Release.</b> RLock is AutoCloseable: {@link #close()} unlocks when the current thread
 * owns the lock, so try-with-resources releases it. An RLock that becomes unreachable while held
 * frees its native handle without releasing the lock, which is left to expire at the end of its
 * lease.
 */
public final class RLock implements Lock, AutoCloseable {
    /** The lease, in milliseconds, of the methods that take none: 30 seconds. */
    public static final long DEFAULT_LEASE_MS = 30_000;

    /** A wait "as long as it takes": the library saturates it. */
    private static final long FOREVER_MS = Long.MAX_VALUE / 4;

    private final Redlock client;
    private final String[] names;

    // Guarded by this. The owner is a thread id (Thread.getId()), or an id given to the async
    // methods; 0 when not held.
    private long owner;
    private int holds;
    private NativeHandle handle;

    RLock(Redlock client, String[] names) {
        this.client = client;
        this.names = names;
    }

    /** Waits until acquired, with a lease of {@link #DEFAULT_LEASE_MS}. Not interruptible. */
    @Override
    public void lock() {
        lock(DEFAULT_LEASE_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * Waits until acquired, with the given lease. Not interruptible: an interrupt does not end
     * the wait, and the thread's interrupt status is set again once the lock is held.
     */
    public void lock(long leaseTime, TimeUnit unit) {
        long leaseMs = leaseMs(leaseTime, unit);
        if (reenter(leaseMs)) {
            return;
        }
        NativeHandle acquired = attemptThroughInterrupts(leaseMs, FOREVER_MS, true);
        take(acquired);
    }

    /** Waits until acquired or interrupted, with a lease of {@link #DEFAULT_LEASE_MS}. */
    @Override
    public void lockInterruptibly() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (!tryLockMs(FOREVER_MS, DEFAULT_LEASE_MS)) {
            throw new IllegalStateException("a wait without end ended"); // cannot happen
        }
    }

    /** One attempt, with a lease of {@link #DEFAULT_LEASE_MS}; false when not acquired. */
    @Override
    public boolean tryLock() {
        if (reenter(DEFAULT_LEASE_MS)) {
            return true;
        }
        NativeHandle acquired = attemptThroughInterrupts(DEFAULT_LEASE_MS, 0, false);
        if (acquired == null) {
            return false;
        }
        take(acquired);
        return true;
    }

    /**
     * Tries until acquired or the time has passed (no wait when it is zero or negative), with a
     * lease of {@link #DEFAULT_LEASE_MS}; false when not acquired.
     */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        Objects.requireNonNull(unit, "unit");
        return tryLockMs(Math.max(0, unit.toMillis(time)), DEFAULT_LEASE_MS);
    }

    /**
     * Tries until acquired or waitTime has passed (0: one attempt), with a lease of leaseTime;
     * false when not acquired.
     */
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit)
            throws InterruptedException {
        long leaseMs = leaseMs(leaseTime, unit);
        if (waitTime < 0) {
            throw new IllegalArgumentException("waitTime must not be negative, got " + waitTime);
        }
        return tryLockMs(unit.toMillis(waitTime), leaseMs);
    }

    /**
     * Releases the lock; with reentrant holds, the last unlock releases it. Throws
     * IllegalMonitorStateException when the current thread does not own it, and
     * {@link LockNotHeldException} when its lease had run out (it is released either way).
     */
    @Override
    public synchronized void unlock() {
        checkOwner("unlock");
        if (--holds > 0) {
            return;
        }
        NativeHandle released = handle;
        handle = null;
        owner = 0;
        try {
            released.unlock();
        } finally {
            released.free();
        }
    }

    /**
     * Renews the lease to leaseTime from now. Throws IllegalMonitorStateException when the
     * current thread does not own the lock, {@link LockNotHeldException} when it expired or was
     * lost.
     */
    public synchronized void extend(long leaseTime, TimeUnit unit) {
        long leaseMs = leaseMs(leaseTime, unit);
        checkOwner("extend");
        handle.extend(leaseMs);
    }

    /** The time left in the lease of the current hold, by any thread; 0 when not held. */
    public synchronized long remainingValidity(TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        long ms = handle == null ? 0 : Math.max(0, handle.validityMs());
        return unit.convert(ms, TimeUnit.MILLISECONDS);
    }

    /** Whether the current thread owns this lock and its lease has not run out. */
    public synchronized boolean isHeldByCurrentThread() {
        return owner == currentThreadId() && handle.validityMs() > 0;
    }

    /**
     * Whether some thread holds the lock through this RLock and its lease has not run out. It
     * does not ask the nodes, so it says nothing of holders elsewhere.
     */
    public synchronized boolean isLocked() {
        return handle != null && handle.validityMs() > 0;
    }

    /** Unlocks once when the current thread owns the lock; does nothing otherwise. */
    @Override
    public synchronized void close() {
        if (owner == currentThreadId()) {
            unlock();
        }
    }

    // ---- Asynchronous forms (Redisson's RLockAsync) ----
    //
    // They return at once; the waiting is done by the library on the client's one thread (no
    // thread per call). The owner is the calling thread's id, or the threadId given, as in
    // Redisson: unlockAsync(threadId) releases what tryLockAsync(..., threadId) took, from any
    // thread. Futures complete on the common ForkJoinPool. Reentry by the same owner renews the
    // lease and counts the hold, as the blocking forms do.

    /** {@link #lock()} asynchronously: completes once acquired. */
    public CompletableFuture<Void> lockAsync() {
        return lockAsync(DEFAULT_LEASE_MS, TimeUnit.MILLISECONDS, currentThreadId());
    }

    /** {@link #lock(long, TimeUnit)} asynchronously: completes once acquired. */
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
        return lockAsync(leaseTime, unit, currentThreadId());
    }

    /** {@link #lock(long, TimeUnit)} asynchronously, for the owner threadId. */
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
        return acquireAsync(FOREVER_MS, leaseMs(leaseTime, unit), threadId).thenApply(ok -> null);
    }

    /** {@link #tryLock()} asynchronously: one attempt; true when acquired. */
    public CompletableFuture<Boolean> tryLockAsync() {
        return tryLockAsync(currentThreadId());
    }

    /** {@link #tryLock()} asynchronously, for the owner threadId. */
    public CompletableFuture<Boolean> tryLockAsync(long threadId) {
        return acquireAsync(0, DEFAULT_LEASE_MS, threadId);
    }

    /** {@link #tryLock(long, TimeUnit)} asynchronously. */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        return acquireAsync(Math.max(0, unit.toMillis(waitTime)), DEFAULT_LEASE_MS,
                currentThreadId());
    }

    /** {@link #tryLock(long, long, TimeUnit)} asynchronously. */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return tryLockAsync(waitTime, leaseTime, unit, currentThreadId());
    }

    /** {@link #tryLock(long, long, TimeUnit)} asynchronously, for the owner threadId. */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit,
            long threadId) {
        long leaseMs = leaseMs(leaseTime, unit);
        if (waitTime < 0) {
            throw new IllegalArgumentException("waitTime must not be negative, got " + waitTime);
        }
        return acquireAsync(unit.toMillis(waitTime), leaseMs, threadId);
    }

    /** {@link #unlock()} asynchronously, by the calling thread. */
    public CompletableFuture<Void> unlockAsync() {
        return unlockAsync(currentThreadId());
    }

    /**
     * {@link #unlock()} asynchronously, for the owner threadId: fails with
     * IllegalMonitorStateException when threadId does not hold the lock, with
     * {@link LockNotHeldException} when its lease had run out (released either way).
     */
    public CompletableFuture<Void> unlockAsync(long threadId) {
        NativeHandle released;
        synchronized (this) {
            try {
                checkOwner("unlock", threadId);
            } catch (IllegalMonitorStateException notOwner) {
                return CompletableFuture.failedFuture(notOwner);
            }
            if (--holds > 0) {
                return CompletableFuture.completedFuture(null);
            }
            released = handle;
            handle = null;
            owner = 0;
        }
        return released.unlockAsync().whenComplete((ignored, error) -> released.free());
    }

    /** {@link #extend(long, TimeUnit)} asynchronously, by the calling thread. */
    public CompletableFuture<Void> extendAsync(long leaseTime, TimeUnit unit) {
        return extendAsync(leaseTime, unit, currentThreadId());
    }

    /**
     * {@link #extend(long, TimeUnit)} asynchronously, for the owner threadId: fails with
     * IllegalMonitorStateException when threadId does not hold the lock, with
     * {@link LockNotHeldException} when its lease had run out.
     */
    public CompletableFuture<Void> extendAsync(long leaseTime, TimeUnit unit, long threadId) {
        long leaseMs = leaseMs(leaseTime, unit);
        NativeHandle held;
        synchronized (this) {
            try {
                checkOwner("extend", threadId);
            } catch (IllegalMonitorStateException notOwner) {
                return CompletableFuture.failedFuture(notOwner);
            }
            held = handle;
        }
        return held.extendAsync(leaseMs);
    }

    /** Acquires for ownerId; true when acquired, false when held elsewhere or no quorum. */
    private CompletableFuture<Boolean> acquireAsync(long waitMs, long leaseMs, long ownerId) {
        NativeHandle reentered;
        synchronized (this) {
            reentered = owner == ownerId && ownerId != 0 ? handle : null;
        }
        if (reentered != null) {
            return reentered.extendAsync(leaseMs).thenApply(ok -> {
                synchronized (this) {
                    holds++;
                }
                return true;
            });
        }
        return client.nativeClient().lockAsync(this, names, leaseMs, waitMs)
                .handle((acquired, error) -> {
                    if (error == null) {
                        take(acquired, ownerId);
                        return true;
                    }
                    Throwable cause = error instanceof CompletionException ? error.getCause() : error;
                    if (cause instanceof LockHeldException || cause instanceof NoQuorumException) {
                        return false;
                    }
                    throw cause instanceof RuntimeException ? (RuntimeException) cause
                            : new CompletionException(cause);
                });
    }

    /** Not supported: a distributed lock has no conditions. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("RLock has no conditions");
    }

    @Override
    public String toString() {
        return "RLock" + Arrays.toString(names);
    }

    private boolean tryLockMs(long waitMs, long leaseMs) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (reenter(leaseMs)) {
            return true;
        }
        NativeHandle acquired;
        try {
            acquired = attempt(leaseMs, waitMs);
        } catch (CancelledException cancelled) {
            Thread.interrupted();
            throw new InterruptedException("interrupted while waiting for " + this);
        }
        if (acquired == null) {
            return false;
        }
        take(acquired);
        return true;
    }

    /**
     * One native call that acquires, retrying for up to waitMs as the library decides; null
     * when not acquired. Throws CancelledException when the thread was interrupted meanwhile.
     */
    private NativeHandle attempt(long leaseMs, long waitMs) {
        try {
            return client.nativeClient().lock(this, names, leaseMs, waitMs);
        } catch (LockHeldException | NoQuorumException notAcquired) {
            return null;
        }
    }

    /**
     * {@link #attempt} for the methods that are not interruptible: a call that an interrupt
     * cancelled is made again with the interrupt status cleared, and the status is set again at
     * the end, however it ends. With untilAcquired, calls are made until one acquires.
     */
    private NativeHandle attemptThroughInterrupts(long leaseMs, long waitMs,
            boolean untilAcquired) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    NativeHandle acquired = attempt(leaseMs, waitMs);
                    if (acquired != null || !untilAcquired) {
                        return acquired;
                    }
                } catch (CancelledException cancelled) {
                    interrupted |= Thread.interrupted();
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Acquiring again by the owner: renews the lease and counts the hold. */
    private synchronized boolean reenter(long leaseMs) {
        if (owner != currentThreadId()) {
            return false;
        }
        handle.extend(leaseMs);
        holds++;
        return true;
    }

    private void take(NativeHandle acquired) {
        take(acquired, currentThreadId());
    }

    private synchronized void take(NativeHandle acquired, long ownerId) {
        if (handle != null) {
            handle.free(); // the former owner's lease ran out before it unlocked
        }
        handle = acquired;
        owner = ownerId;
        holds = 1;
    }

    private void checkOwner(String action) {
        checkOwner(action, currentThreadId());
    }

    private void checkOwner(String action, long ownerId) {
        if (owner == 0 || owner != ownerId) {
            throw new IllegalMonitorStateException("cannot " + action + " " + this
                    + ": owner " + ownerId + " does not hold it");
        }
    }

    @SuppressWarnings("deprecation") // Thread.threadId() is Java 19; getId() is the same id
    private static long currentThreadId() {
        return Thread.currentThread().getId();
    }

    private static long leaseMs(long leaseTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        long ms = unit.toMillis(leaseTime);
        if (ms <= 0 || ms > RedlockNativeConstants.REDLOCK_MAX_TTL_MS) {
            throw new IllegalArgumentException("the lease must be from 1 ms to "
                    + RedlockNativeConstants.REDLOCK_MAX_TTL_MS + " ms, got " + leaseTime + " "
                    + unit);
        }
        return ms;
    }
}
