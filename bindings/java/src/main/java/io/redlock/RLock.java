package io.redlock;

import io.redlock.internal.RedlockNativeConstants;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A distributed lock on one resource, or on several taken together (from
 * {@link Redlock#getMultiLock}), or a fair lock (from {@link Redlock#getFairLock}: its waiters
 * get it in the order they arrived). It is held only while a majority of the nodes agree and its
 * lease lasts: the lease is the time after which the nodes forget the lock even when its holder
 * never released it (crashed, paused or partitioned).
 *
 * <p><b>Kept locks and leases.</b> The methods that take no lease keep the lock, as Redisson's
 * watchdog does: {@link #lock()}, {@link #lockInterruptibly()}, {@link #tryLock()},
 * {@link #tryLock(long, TimeUnit)}, {@link #lockAsync()}, {@link #tryLockAsync()} and
 * {@link #tryLockAsync(long, TimeUnit)}. Such a lock is acquired with the client's option
 * {@code watchdog_lease_ms} as its lease ({@link #DEFAULT_LEASE_MS}, 30 seconds, unless set) and
 * the library renews it every third of that lease, on the client's own thread, until it is
 * unlocked (no renewal follows an unlock). Renewal is the library's business: the owner rule
 * below is unchanged, only the owner unlocks. The methods that take a lease use it and nothing
 * renews it, as in Redisson: the lock ends with its lease unless the holder calls
 * {@link #extend}. When a lease has run out while held, {@link #isLost()} is true (its keys can
 * have expired), {@link #isHeldByCurrentThread()} is false and {@link #unlock()} throws
 * {@link LockNotHeldException}: the critical section may not have been exclusive. A kept lock
 * whose program drops its RLocks is not renewed forever: once they are collected (this one and
 * the other RLocks of its name from the client) its renewal ends and the lock expires. The
 * renewal belongs to the acquisition, whichever RLock of the name made it: it goes on until
 * the hold's last unlock, through any of them.
 *
 * <p><b>The lost lock.</b> A lock is lost whenever its keys can have expired while it is held:
 * a kept lock when its renewal fails for good (a majority of the nodes says it is no longer
 * ours) or its validity runs out before a renewal succeeds (too few nodes answer), a lock with a
 * lease when its validity runs out before it is unlocked. {@link #isLost()} is true from then
 * on, no later than the moment its validity reaches 0. For a kept lock the listeners
 * registered with {@link #onLost(Runnable)} run at once (a lease that runs out has no renewal to
 * tell it: {@link #isLost()} says it). Listeners belong to this RLock object and stay
 * registered across holds: each runs once for each kept hold taken or acquired again through
 * this object that is lost (not for one that is unlocked, nor for a lease that just runs out,
 * nor for a hold taken only through another RLock of the name), and one registered while such a
 * hold is already lost runs at once. They run on a daemon thread of the library
 * ("redlock-lost"), never on the thread that renews locks, one after another: a listener should
 * return quickly (one that blocks delays the listeners of other locks, though never their
 * renewal nor {@link #isLost()}); {@link #onLost(Runnable, Executor)} runs it on an executor of
 * yours instead. What a listener throws is logged (System.Logger "io.redlock") and goes no further.
 * A listener does not own the lock: it cannot unlock it (a listener typically tells the owner,
 * which stops its work and calls {@link #unlock()}, which throws LockNotHeldException). No
 * renewal covers a whole-process pause (a long GC, SIGSTOP): while the process is stopped the
 * lock may expire unnoticed, and the loss is told when it runs again.
 *
 * <p><b>Threads.</b> Like a {@link java.util.concurrent.locks.ReentrantLock}, one RLock object
 * may be shared by threads: the thread that acquired it owns it, only that thread may unlock or
 * extend it ({@link IllegalMonitorStateException} otherwise), and it may acquire it again
 * (reentrancy: each acquisition needs its unlock; {@link #getHoldCount()} counts them).
 * <b>Acquiring again keeps the first terms</b>, in every language of this library (the C
 * library's redlock_handle_reenter): it only counts a hold, whatever lease it names; the keys'
 * TTL is not changed and a kept lock goes on being renewed as before, a lock with a lease stays
 * unrenewed. So no lease is ever left without its renewal, nor a renewal on a shorter lease
 * (Redisson instead renews to the new lease, which can leave a kept lock on a TTL shorter than
 * its renewal's period). To change the lease, call {@link #extend}. <b>Acquiring again after the
 * hold was lost</b> (its lease ran out, its renewal failed) starts afresh, as in Redisson and as
 * {@link Lock} expects: a new acquisition, whose holds count from 1 (the lost hold's unlocks are
 * forgotten: one more throws IllegalMonitorStateException). Until a new acquisition succeeds
 * the loss stays observable: {@link #isLost()} is true, the listeners were told, and
 * {@link #unlock()} throws {@link LockNotHeldException}. As in Redisson, the holds are per client, name and
 * owner: the RLocks that {@link Redlock#getLock} gives for one name share them, so a thread
 * holding the lock through one acquires it again at once through another, and the last unlock,
 * through any of them, releases it on the nodes; the other threads of the client wait for it
 * like any other client. A multi-lock ({@link Redlock#getMultiLock}) shares its holds with no
 * other RLock: it is reentrant through its own object only. The first
 * acquisition of a hold decides whether it is kept, and acquiring again leaves that as it is:
 * a kept hold stays kept until its last unlock, and a hold with an explicit lease is not
 * renewed automatically, even when acquired again without a lease. When the owner's lease ran
 * out and another thread acquired
 * this lock (through any RLock of its name), the former owner's hold is dropped and its
 * {@link #unlock()} throws IllegalMonitorStateException.
 *
 * <p><b>Asking the nodes.</b> {@link #isLocked()} and {@link #remainTimeToLive()} ask the nodes
 * whether the lock is held by anyone, and for how long (one round to every node; the answer may
 * be stale as soon as it is returned). {@link #isHeldByCurrentThread()},
 * {@link #isHeldByThread(long)}, {@link #getHoldCount()} and {@link #remainingValidity} answer
 * from this client's own hold, without a call. {@link #forceUnlock()} deletes the lock whoever
 * holds it: dangerous (see there).
 *
 * <p><b>Waiting.</b> Each acquiring method makes one call into the library with its whole wait
 * ({@link #lock()}: as long as it takes; {@link #tryLock()}: one attempt, the defaults of every
 * language of this library, as Redisson's). The library alone decides which failed attempts are
 * worth another (held by someone else, too few nodes answered, the lease ran out while
 * acquiring, nodes answered with Redis errors) and how long to pause between them (the
 * retry_delay_ms and retry_jitter_ms options); this class makes no such decision. When the wait
 * ends without the lock, "held by someone else" gives false (or, for {@link #lock()}, another
 * wait); an outage is not contention: "too few nodes answered" throws
 * {@link NoQuorumException}, from a wait without end too once the nodes have failed for the
 * option unavailable_timeout_ms (5 s by default). Other outcomes throw {@link RedlockException}
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
 * <p><b>Release.</b> RLock is AutoCloseable: {@link #close()} unlocks once when the current
 * thread owns the lock, so try-with-resources releases it. A lock whose RLocks all become
 * unreachable while it is held has its native handle freed without releasing it: it is left to
 * expire at the end of its lease (a kept lock is no longer renewed). Listeners that refer to
 * their RLock do not keep it reachable.
 */
public final class RLock implements Lock, AutoCloseable {
    /**
     * The lease, in milliseconds, of a kept lock (the methods that take none) when the client's
     * option {@code watchdog_lease_ms} is not set: 30 seconds, renewed every 10 seconds. Read
     * from the library's table of options ({@link Redlock#optionDefaults()}).
     */
    public static final long DEFAULT_LEASE_MS =
            Long.parseLong(Redlock.optionDefaults().get("watchdog_lease_ms"));

    /** {@link #remainTimeToLive()} when the lock is not held, as Redisson's (and PTTL's). */
    public static final long NOT_LOCKED = NativeClient.NOT_LOCKED;

    /** {@link #remainTimeToLive()} of a lock whose key has no expiry, as Redisson's. */
    public static final long NO_EXPIRY = NativeClient.NO_EXPIRY;

    /** A wait "as long as it takes": the library saturates it. */
    private static final long FOREVER_MS = Long.MAX_VALUE / 4;

    /**
     * The lease that means "kept" in every method that takes one to acquire ({@code lock},
     * {@code tryLock}, {@code lockAsync}, {@code tryLockAsync}), as in Redisson and in
     * {@link Redlock#withLock}: the lock is renewed until unlocked, as by the methods that
     * take no lease.
     */
    public static final long KEPT = -1;

    /** The lease argument of the methods that take none: the lock is kept. */
    private static final long KEEP = 0;

    private final Redlock client;
    private final String[] names;
    // Shared with the other RLocks of the name from the client (a multi-lock's is its own):
    // every access to the hold is under its monitor.
    private final LockState state;
    // This object's onLost listeners.
    private final LostSignal lostSignal;

    RLock(Redlock client, LockState state) {
        this.client = client;
        this.names = state.names;
        this.state = state;
        this.lostSignal = new LostSignal(toString());
    }

    /** Waits until acquired, and keeps the lock until unlocked. Not interruptible. */
    @Override
    public void lock() {
        lockUninterruptibly(KEEP);
    }

    /**
     * Waits until acquired, with the given lease (not renewed; {@link #KEPT}: kept until
     * unlocked). Not interruptible: an interrupt
     * does not end the wait, and the thread's interrupt status is set again once the lock is
     * held.
     */
    public void lock(long leaseTime, TimeUnit unit) {
        lockUninterruptibly(acquireLeaseMs(leaseTime, unit));
    }

    /** Waits until acquired or interrupted, and keeps the lock until unlocked. */
    @Override
    public void lockInterruptibly() throws InterruptedException {
        lockInterruptiblyMs(KEEP);
    }

    /** Waits until acquired or interrupted, with the given lease ({@link #KEPT}: kept). */
    void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        lockInterruptiblyMs(acquireLeaseMs(leaseTime, unit));
    }

    private void lockInterruptiblyMs(long lease) throws InterruptedException {
        if (!tryLockMs(FOREVER_MS, lease)) {
            throw new IllegalStateException("a wait without end ended"); // cannot happen
        }
    }

    /** One attempt; false when not acquired. An acquired lock is kept until unlocked. */
    @Override
    public boolean tryLock() {
        if (reenter()) {
            return true;
        }
        NativeHandle acquired = attemptThroughInterrupts(KEEP, 0, false);
        if (acquired == null) {
            return false;
        }
        take(acquired);
        return true;
    }

    /**
     * Tries until acquired or the time has passed (no wait when it is zero or negative); false
     * when not acquired. An acquired lock is kept until unlocked.
     */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        Objects.requireNonNull(unit, "unit");
        return tryLockMs(Math.max(0, unit.toMillis(time)), KEEP);
    }

    /**
     * Tries until acquired or waitTime has passed (0: one attempt), with a lease of leaseTime
     * (not renewed; {@link #KEPT}: kept until unlocked); false when not acquired.
     */
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit)
            throws InterruptedException {
        long leaseMs = acquireLeaseMs(leaseTime, unit);
        return tryLockMs(Checks.waitMs(waitTime, unit), leaseMs);
    }

    /**
     * Releases the lock; with reentrant holds, the last unlock (through any RLock of the name)
     * releases it, and ends the renewal of a kept lock before the release is sent. Throws
     * IllegalMonitorStateException when the current thread does not own it, and
     * {@link LockNotHeldException} when its lease had run out, the kept lock was lost or the
     * nodes no longer had it (a {@link #forceUnlock()}): it is released either way.
     */
    @Override
    public void unlock() {
        unlock(currentThreadId());
    }

    /** {@link #unlock()} for the owner ownerId (a permit's, released from any thread). */
    void unlock(long ownerId) {
        client.nativeClient().checkOpen("unlock");
        synchronized (state) {
            state.checkOwner("unlock", ownerId, this);
            if (!state.leave()) {
                return;
            }
            NativeHandle released = state.detach();
            try {
                released.unlock();
            } finally {
                state.lastLost = released.isLost(); // an unlock that found the keys gone too
                released.free();
            }
        }
    }

    /**
     * Renews the lease to leaseTime from now; a kept lock stays kept, and its renewals use
     * leaseTime from then on. Throws IllegalMonitorStateException when the current thread does
     * not own the lock, {@link LockNotHeldException} when it expired or was lost.
     */
    public void extend(long leaseTime, TimeUnit unit) {
        extend(leaseTime, unit, currentThreadId());
    }

    /** {@link #extend(long, TimeUnit)} for the owner ownerId. */
    void extend(long leaseTime, TimeUnit unit, long ownerId) {
        long leaseMs = Checks.leaseMs(leaseTime, unit);
        client.nativeClient().checkOpen("extend");
        synchronized (state) {
            state.checkOwner("extend", ownerId, this);
            state.handle.extend(leaseMs);
        }
    }

    /**
     * The time left in the lease of the current hold, by any thread (for a kept lock, until its
     * current lease ends unless renewed); 0 when not held, expired or lost.
     */
    public long remainingValidity(TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        long ms;
        synchronized (state) {
            ms = state.handle == null ? 0 : Math.max(0, state.handle.validityMs());
        }
        return unit.convert(ms, TimeUnit.MILLISECONDS);
    }

    /**
     * The fencing token of the current hold (client option {@code fencing}): larger for every
     * later holder of the resource. Send it with each write to the storage the lock protects,
     * and have the storage refuse one older than the newest it has seen. For a multi-lock, the
     * first resource's ({@link #getFence(String)} gives each). Null when not held, taken
     * without fencing, or for a fair lock (it has no fence).
     */
    public Long getFence() {
        return fenceAt(0);
    }

    /**
     * The fencing token of resource name of the current hold (see {@link #getFence()}); null when
     * not held or taken without fencing. IllegalArgumentException when the lock has no such
     * resource.
     */
    public Long getFence(String name) {
        Objects.requireNonNull(name, "name");
        int index = Arrays.asList(names).indexOf(name);
        if (index < 0) {
            throw new IllegalArgumentException("not a resource of this lock: " + name);
        }
        return fenceAt(index);
    }

    private Long fenceAt(int index) {
        long fence;
        synchronized (state) {
            fence = state.handle == null ? 0 : state.handle.fence(index);
        }
        return fence == 0 ? null : fence;
    }

    /**
     * Whether the current thread owns this lock (through this RLock or another of its name from
     * the client) and its lease has not run out. It does not ask the nodes.
     */
    public boolean isHeldByCurrentThread() {
        return isHeldByThread(currentThreadId());
    }

    /**
     * Whether the owner threadId (a thread's id, or an id given to the asynchronous methods)
     * holds this lock and its lease has not run out. It does not ask the nodes.
     */
    public boolean isHeldByThread(long threadId) {
        synchronized (state) {
            return state.isHeldBy(threadId);
        }
    }

    /**
     * How many times the current thread holds this lock: its acquisitions through this RLock and
     * the other RLocks of its name from the client, less its unlocks; 0 when it does not hold it
     * or its lease has run out (as {@link #isHeldByCurrentThread()} says). It does not ask the
     * nodes.
     */
    public int getHoldCount() {
        synchronized (state) {
            return state.isHeldBy(currentThreadId()) ? state.holds() : 0;
        }
    }

    /**
     * Whether the lock is held, by anyone (this client or another, or a key of that name set by
     * other means): asks the nodes, and is true when a quorum of them has its key under one
     * token. A multi-lock is locked when any of its resources is (the library's rule,
     * redlock_inspect_multi). The answer may be stale as
     * soon as it is returned: it is for display and diagnosis; to hold the lock, take it.
     * Throws {@link NoQuorumException} when too few nodes answer to tell,
     * {@link WrongTypeException} when the key is not a lock.
     */
    public boolean isLocked() {
        return client.nativeClient().timeToLive(names) != NOT_LOCKED;
    }

    /**
     * The milliseconds for which the lock is still held, by anyone, as Redisson's
     * remainTimeToLive: asks the nodes, and answers how long a quorum of them still has the key
     * (its lease as they count it, which may outlast the holder's validity). {@link #NOT_LOCKED}
     * (-2) when it is not held, {@link #NO_EXPIRY} (-1) when its key has no expiry. For a
     * multi-lock, the longest among its resources that are held (redlock_inspect_multi). Throws
     * {@link NoQuorumException} when too few nodes answer to tell, {@link WrongTypeException}
     * when the key is not a lock.
     */
    public long remainTimeToLive() {
        return client.nativeClient().timeToLive(names);
    }

    /**
     * Deletes the lock on every node whatever its holder, and wakes the clients waiting for it;
     * for a multi-lock, each of its resources. True when a lock was deleted on some node.
     *
     * <p><b>Dangerous</b>: it is for an operator whose holder is known to be gone. A holder
     * still alive is not told at once and goes on with its critical section while another
     * client takes the lock: two holders at once. A kept lock finds it lost at its next renewal
     * ({@link #isLost()}, {@link #onLost}); any holder's {@link #unlock()} then throws
     * {@link LockNotHeldException}, as for a lost lock. Holds of this client are not dropped by
     * this call: their owner still unlocks them, and learns it that way.
     *
     * <p>Throws {@link NoQuorumException} when too few nodes answered to be sure it is gone,
     * {@link WrongTypeException} when the key is not a lock (it is left alone).
     */
    public boolean forceUnlock() {
        boolean deleted = false;
        for (String name : names) {
            deleted |= client.nativeClient().forceUnlock(name) > 0;
        }
        return deleted;
    }

    /**
     * Whether the latest hold was lost: its keys can have expired while it was held (a kept
     * lock's renewal failed for good or its validity ran out first; a lease ran out before the
     * unlock). True no later than the moment its validity reached 0, and after its unlock too,
     * until the lock is acquired anew (as in every language of this library). False before any
     * hold and for a fresh acquisition. Any thread may ask.
     */
    public boolean isLost() {
        synchronized (state) {
            return state.handle != null ? state.handle.isLost() : state.lastLost;
        }
    }

    /**
     * Registers a listener told when a kept hold of this RLock is lost (see the class comment):
     * it runs on the library's "redlock-lost" daemon thread, once per lost hold, at once when
     * the current hold is lost already. It must return quickly; what it throws is logged.
     */
    public void onLost(Runnable listener) {
        addLostListener(Objects.requireNonNull(listener, "listener"), null);
    }

    /**
     * {@link #onLost(Runnable)}, run by executor (given the listener by the library's
     * "redlock-lost" thread; what the executor or the listener throws is logged).
     */
    public void onLost(Runnable listener, Executor executor) {
        addLostListener(Objects.requireNonNull(listener, "listener"),
                Objects.requireNonNull(executor, "executor"));
    }

    /** Removes a listener registered with onLost (its first registration); false if none. */
    public boolean removeOnLost(Runnable listener) {
        return lostSignal.remove(Objects.requireNonNull(listener, "listener"));
    }

    private void addLostListener(Runnable listener, Executor executor) {
        synchronized (state) {
            NativeHandle handle = state.handle;
            long watchId = handle == null ? 0 : handle.watchId();
            lostSignal.add(listener, executor, watchId, handle != null && handle.isLost());
        }
    }

    /**
     * Unlocks once when the current thread owns the lock (through any RLock of its name from
     * the client); does nothing otherwise.
     */
    @Override
    public void close() {
        synchronized (state) {
            if (state.owner == currentThreadId()) {
                unlock();
            }
        }
    }

    // ---- Asynchronous forms (Redisson's RLockAsync) ----
    //
    // They return at once; the waiting is done by the library on the client's one thread (no
    // thread per call). The owner is the calling thread's id, or the threadId given, as in
    // Redisson: unlockAsync(threadId) releases what tryLockAsync(..., threadId) took, from any
    // thread. Futures complete on the common ForkJoinPool. Reentry by the same owner counts the
    // hold and keeps the first terms, as the blocking forms do, through any RLock of the name
    // (the hold is per client, name and owner id). The forms without a lease keep the lock, as the
    // blocking ones do. isLocked, remainTimeToLive and forceUnlock have no asynchronous forms:
    // the library has no asynchronous call for them, and running them on a pool thread would
    // take a thread per call.

    /** {@link #lock()} asynchronously: completes once acquired; the lock is kept. */
    public CompletableFuture<Void> lockAsync() {
        return acquireAsync(FOREVER_MS, KEEP, currentThreadId()).thenApply(ok -> null);
    }

    /** {@link #lock(long, TimeUnit)} asynchronously: completes once acquired. */
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
        return lockAsync(leaseTime, unit, currentThreadId());
    }

    /** {@link #lock(long, TimeUnit)} asynchronously, for the owner threadId. */
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
        return acquireAsync(FOREVER_MS, acquireLeaseMs(leaseTime, unit), threadId)
                .thenApply(ok -> null);
    }

    /** {@link #tryLock()} asynchronously: one attempt; true when acquired. */
    public CompletableFuture<Boolean> tryLockAsync() {
        return tryLockAsync(currentThreadId());
    }

    /** {@link #tryLock()} asynchronously, for the owner threadId; the lock is kept. */
    public CompletableFuture<Boolean> tryLockAsync(long threadId) {
        return acquireAsync(0, KEEP, threadId);
    }

    /** {@link #tryLock(long, TimeUnit)} asynchronously; the lock is kept. */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        return acquireAsync(Math.max(0, unit.toMillis(waitTime)), KEEP, currentThreadId());
    }

    /** {@link #tryLock(long, long, TimeUnit)} asynchronously. */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return tryLockAsync(waitTime, leaseTime, unit, currentThreadId());
    }

    /** {@link #tryLock(long, long, TimeUnit)} asynchronously, for the owner threadId. */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit,
            long threadId) {
        long leaseMs = acquireLeaseMs(leaseTime, unit);
        return acquireAsync(Checks.waitMs(waitTime, unit), leaseMs, threadId);
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
        synchronized (state) {
            try {
                state.checkOwner("unlock", threadId, this);
            } catch (IllegalMonitorStateException notOwner) {
                return CompletableFuture.failedFuture(notOwner);
            }
            if (!state.leave()) {
                return CompletableFuture.completedFuture(null);
            }
            released = state.detach();
        }
        return released.unlockAsync().whenComplete((ignored, error) -> {
            synchronized (state) {
                if (state.handle == null) {
                    state.lastLost = released.isLost();
                }
            }
            released.free();
        });
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
        long leaseMs = Checks.leaseMs(leaseTime, unit);
        NativeHandle held;
        synchronized (state) {
            try {
                state.checkOwner("extend", threadId, this);
            } catch (IllegalMonitorStateException notOwner) {
                return CompletableFuture.failedFuture(notOwner);
            }
            held = state.handle;
        }
        return held.extendAsync(leaseMs);
    }

    /**
     * Acquires for ownerId (lease KEEP: a kept lock); true when acquired, false when held
     * elsewhere (no quorum completes it with NoQuorumException).
     */
    private CompletableFuture<Boolean> acquireAsync(long waitMs, long lease, long ownerId) {
        synchronized (state) {
            try {
                if (state.owner == ownerId && ownerId != 0 && state.reenter(lostSignal)) {
                    return CompletableFuture.completedFuture(true);
                }
            } catch (RuntimeException closed) {
                return CompletableFuture.failedFuture(closed);
            }
        }
        return startAsync(lease, waitMs, ownerId)
                .handle((acquired, error) -> {
                    if (error == null) {
                        take(acquired, ownerId);
                        return true;
                    }
                    Throwable cause = error instanceof CompletionException ? error.getCause() : error;
                    if (cause instanceof LockHeldException) {
                        return false;
                    }
                    throw cause instanceof RuntimeException ? (RuntimeException) cause
                            : new CompletionException(cause);
                });
    }

    /**
     * Starts an asynchronous acquisition for ownerId; of a read-write lock's half, naming the
     * other half's handle when ownerId holds it (a downgrade, or an upgrade refused), which the
     * call reads before it returns.
     */
    private CompletableFuture<NativeHandle> startAsync(long lease, long waitMs, long ownerId) {
        NativeClient nativeClient = client.nativeClient();
        NativeClient.Watcher keep = lease == KEEP ? state : null;
        if (state.permits != 0) {
            return nativeClient.acquirePermitAsync(state, names[0], state.permits,
                    leaseMsOf(lease), waitMs, keep);
        }
        if (state.fair) {
            return nativeClient.lockFairAsync(state, names[0], leaseMsOf(lease), waitMs, keep);
        }
        LockState pair = state.pair;
        if (pair != null) {
            synchronized (pair) {
                if (pair.handle != null && pair.owner == ownerId && ownerId != 0) {
                    return nativeClient.lockAsync(state, names, state.mode, pair.handle,
                            leaseMsOf(lease), waitMs, keep);
                }
            }
        }
        return nativeClient.lockAsync(state, names, state.mode, null, leaseMsOf(lease), waitMs,
                keep);
    }

    /** Not supported: a distributed lock has no conditions. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("RLock has no conditions");
    }

    @Override
    public String toString() {
        String kind = state.permits != 0 ? "a permit of " + state.permits
                : state.fair ? "fair"
                : state.mode == RedlockNativeConstants.REDLOCK_READ ? "read"
                : state.mode == RedlockNativeConstants.REDLOCK_WRITE ? "write" : "";
        return "RLock" + Arrays.toString(names) + (kind.isEmpty() ? "" : " (" + kind + ")");
    }

    /**
     * The lock's name: the resource name given to {@code getLock} (and the other getters), or
     * for a multi-lock its names joined by commas.
     */
    public String getName() {
        return String.join(",", names);
    }

    /** The resource names. */
    String[] names() {
        return names.clone();
    }

    /** The owner of the current hold; 0 when not held. */
    long holder() {
        synchronized (state) {
            return state.owner;
        }
    }

    /** The token of the current hold (a permit's id); null when not held. */
    String token() {
        synchronized (state) {
            return state.handle == null ? null : state.handle.token();
        }
    }

    /** The blocking lock methods: waits until acquired, through interrupts. */
    private void lockUninterruptibly(long lease) {
        if (reenter()) {
            return;
        }
        NativeHandle acquired = attemptThroughInterrupts(lease, FOREVER_MS, true);
        take(acquired);
    }

    private boolean tryLockMs(long waitMs, long lease) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (reenter()) {
            return true;
        }
        NativeHandle acquired;
        try {
            acquired = attempt(lease, waitMs);
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
     * when someone else held the lock all along. Throws NoQuorumException when too few nodes
     * answered (an outage is not contention: a wait without end gives up after the option
     * unavailable_timeout_ms), CancelledException when the thread was interrupted meanwhile.
     * With lease KEEP the lock is acquired with the watchdog lease and kept.
     */
    private NativeHandle attempt(long lease, long waitMs) {
        NativeClient nativeClient = client.nativeClient();
        NativeClient.Watcher keep = lease == KEEP ? state : null;
        try {
            if (state.permits != 0) {
                return nativeClient.acquirePermit(state, names[0], state.permits,
                        leaseMsOf(lease), waitMs, keep);
            }
            if (state.fair) {
                return nativeClient.lockFair(state, names[0], leaseMsOf(lease), waitMs, keep);
            }
            LockState pair = state.pair;
            if (pair != null) {
                // The other half of a read-write lock, held by this thread: its handle is
                // named (a downgrade, or an upgrade refused at once) and is not freed meanwhile.
                synchronized (pair) {
                    if (pair.handle != null && pair.owner == Thread.currentThread().getId()) {
                        return nativeClient.lock(state, names, state.mode, pair.handle,
                                leaseMsOf(lease), waitMs, keep);
                    }
                }
            }
            return nativeClient.lock(state, names, state.mode, null, leaseMsOf(lease), waitMs,
                    keep);
        } catch (LockHeldException notAcquired) {
            return null;
        }
    }

    /**
     * {@link #attempt} for the methods that are not interruptible: a call that an interrupt
     * cancelled is made again with the interrupt status cleared, and the status is set again at
     * the end, however it ends. With untilAcquired, calls are made until one acquires.
     */
    private NativeHandle attemptThroughInterrupts(long lease, long waitMs,
            boolean untilAcquired) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    NativeHandle acquired = attempt(lease, waitMs);
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

    /**
     * Acquiring again by the owner: counts the hold and keeps the first terms (the lease asked for
     * is not used: the keys' TTL and the renewal stay as the first acquisition made them). False
     * when the caller must acquire: it is not the owner, or its hold was lost (a new acquisition
     * then starts afresh; the lost hold stays until one succeeds).
     */
    private boolean reenter() {
        synchronized (state) {
            return state.owner == currentThreadId() && state.reenter(lostSignal);
        }
    }

    /** The lease in milliseconds of a lease argument: KEEP is the client's watchdog lease. */
    private long leaseMsOf(long lease) {
        return lease == KEEP ? client.nativeClient().watchdogLeaseMs() : lease;
    }

    private void take(NativeHandle acquired) {
        take(acquired, currentThreadId());
    }

    private void take(NativeHandle acquired, long ownerId) {
        synchronized (state) {
            state.take(acquired, ownerId, lostSignal);
        }
    }

    @SuppressWarnings("deprecation") // Thread.threadId() is Java 19; getId() is the same id
    private static long currentThreadId() {
        return Thread.currentThread().getId();
    }

    /** An acquiring method's lease: {@link #KEPT} keeps the lock, else as leaseMs. */
    private static long acquireLeaseMs(long leaseTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        return leaseTime == KEPT ? KEEP : Checks.leaseMs(leaseTime, unit);
    }
}
