package io.redlock;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A semaphore of a number of permits on one resource name, from
 * {@link Redlock#getPermitExpirableSemaphore}, as Redisson's RPermitExpirableSemaphore: at most
 * that many permits are held at once, by all the clients of the name together. Each permit has
 * an id (32 hex digits) and a lease of its own. A permit taken with a lease ends with it unless
 * {@link #updateLeaseTime} extends it (a holder that died gives its permit back that way); one
 * taken without a lease is kept: renewed by the library until released, as a kept
 * {@link RLock} is, and its loss told to the {@link #onLost} listeners. A release wakes one
 * waiter.
 *
 * <p>Every client of the name must give the same number of permits: a node that holds permits
 * of it under another number refuses, with {@link InvalidArgumentException} naming both
 * numbers. A semaphore is not a lock: the lock of the same name ({@link Redlock#getLock}) and
 * the semaphore do not exclude each other. Over N nodes a permit is held on more than
 * permits * N / (permits + 1) of them, not on a mere majority, so the more permits, the fewer
 * nodes may fail.
 *
 * <p>A permit belongs to the object that gave it out, not to a thread: any thread releases,
 * extends or asks about it by its id, through that object (another object of the name does not
 * know it). Waiting, interrupts and errors are as for {@link RLock}'s tryLock: every permit
 * still taken when the wait ends gives null, too few nodes answering throws
 * {@link NoQuorumException}. Permits still held when this object is collected are left to
 * expire at the end of their lease (a kept one is no longer renewed).
 */
public final class RPermitExpirableSemaphore {
    private final Redlock client;
    private final String name;
    private final int permits;
    // The permits given out and not released yet, by id: each a hold of its own.
    private final Map<String, RLock> held = new ConcurrentHashMap<>();

    RPermitExpirableSemaphore(Redlock client, String name, int permits) {
        this.client = client;
        this.name = name;
        this.permits = Checks.permits(permits);
    }

    /**
     * Tries until a permit is had or waitTime has passed (0: one attempt), with a lease of
     * leaseTime (not renewed): the permit's id, or null when every permit stayed taken.
     */
    public String tryAcquire(long waitTime, long leaseTime, TimeUnit unit)
            throws InterruptedException {
        RLock permit = newPermit();
        return permit.tryLock(waitTime, leaseTime, unit) ? give(permit) : null;
    }

    /**
     * Tries until a permit is had or the time has passed (no wait when it is zero or negative):
     * the id of the permit, kept until released, or null when every permit stayed taken.
     */
    public String tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
        RLock permit = newPermit();
        return permit.tryLock(waitTime, unit) ? give(permit) : null;
    }

    /** One attempt: the id of the permit, kept until released, or null when all are taken. */
    public String tryAcquire() {
        RLock permit = newPermit();
        return permit.tryLock() ? give(permit) : null;
    }

    /** Waits until a permit is had or interrupted: its id; the permit is kept until released. */
    public String acquire() throws InterruptedException {
        RLock permit = newPermit();
        permit.lockInterruptibly();
        return give(permit);
    }

    /** Waits until a permit is had or interrupted, with a lease of leaseTime: its id. */
    public String acquire(long leaseTime, TimeUnit unit) throws InterruptedException {
        RLock permit = newPermit();
        permit.lockInterruptibly(leaseTime, unit);
        return give(permit);
    }

    /**
     * Releases the permit permitId, which wakes one waiter. Throws IllegalMonitorStateException
     * when this object does not hold it (did not give it out, or it was released already), and
     * {@link LockNotHeldException} when its lease had run out or it was lost: it is released
     * and forgotten either way.
     */
    public void release(String permitId) {
        RLock permit = held.remove(Objects.requireNonNull(permitId, "permitId"));
        if (permit == null) {
            throw notHeld("release", permitId);
        }
        permit.unlock(permit.holder());
    }

    /**
     * {@link #release}, but false instead of throwing when this object does not hold permitId
     * or its lease had run out.
     */
    public boolean tryRelease(String permitId) {
        try {
            release(permitId);
            return true;
        } catch (IllegalMonitorStateException | LockNotHeldException notHeld) {
            return false;
        }
    }

    /**
     * Extends the lease of permitId to leaseTime from now (a kept permit stays kept, renewed
     * with that lease from then on); false when this object does not hold it or its lease had
     * run out.
     */
    public boolean updateLeaseTime(String permitId, long leaseTime, TimeUnit unit) {
        RLock permit = held.get(Objects.requireNonNull(permitId, "permitId"));
        if (permit == null) {
            return false;
        }
        try {
            permit.extend(leaseTime, unit, permit.holder());
            return true;
        } catch (IllegalMonitorStateException | LockNotHeldException notHeld) {
            return false; // released meanwhile, or expired
        }
    }

    /**
     * How many permits could be taken now: asks the nodes, for display and diagnosis (the
     * answer may be stale as soon as it is returned). Throws {@link NoQuorumException} when too
     * few nodes answer, {@link InvalidArgumentException} when a node has the semaphore under
     * another number of permits.
     */
    public int availablePermits() {
        return client.nativeClient().permitsAvailable(name, permits);
    }

    /** The semaphore's resource name. */
    public String getName() {
        return name;
    }

    /** The number of permits, as given to {@link Redlock#getPermitExpirableSemaphore}. */
    public int getPermits() {
        return permits;
    }

    /**
     * Whether the permit permitId, held by this object, was lost: its lease ran out, or its
     * renewal failed. False for an id this object does not hold. It does not ask the nodes.
     */
    public boolean isLost(String permitId) {
        RLock permit = held.get(Objects.requireNonNull(permitId, "permitId"));
        return permit != null && permit.isLost();
    }

    /**
     * Registers a listener told when the kept permit permitId is lost, as
     * {@link RLock#onLost(Runnable)}: on the library's "redlock-lost" thread, at once when it is
     * lost already. IllegalMonitorStateException when this object does not hold the permit.
     */
    public void onLost(String permitId, Runnable listener) {
        Objects.requireNonNull(listener, "listener");
        RLock permit = held.get(Objects.requireNonNull(permitId, "permitId"));
        if (permit == null) {
            throw notHeld("watch", permitId);
        }
        permit.onLost(listener);
    }

    // ---- Asynchronous forms (Redisson's RPermitExpirableSemaphoreAsync) ----
    //
    // As RLock's: the waiting is done by the library on the client's thread, and the futures
    // complete on the common ForkJoinPool.

    /**
     * {@link #tryAcquire(long, long, TimeUnit)} asynchronously: completes with the permit's id,
     * or null when every permit stayed taken. A permit had after the future was cancelled is
     * released.
     */
    public CompletableFuture<String> tryAcquireAsync(long waitTime, long leaseTime,
            TimeUnit unit) {
        RLock permit = newPermit();
        CompletableFuture<String> result = new CompletableFuture<>();
        permit.tryLockAsync(waitTime, leaseTime, unit).whenComplete((acquired, error) -> {
            if (error != null) {
                result.completeExceptionally(error instanceof CompletionException
                        && error.getCause() != null ? error.getCause() : error);
            } else if (!acquired) {
                result.complete(null);
            } else {
                String id = give(permit);
                if (!result.complete(id)) {
                    releaseAsync(id); // cancelled meanwhile: nobody knows the id
                }
            }
        });
        return result;
    }

    /**
     * {@link #release} asynchronously: fails with IllegalMonitorStateException when this object
     * does not hold permitId, with {@link LockNotHeldException} when its lease had run out.
     */
    public CompletableFuture<Void> releaseAsync(String permitId) {
        RLock permit = held.remove(Objects.requireNonNull(permitId, "permitId"));
        if (permit == null) {
            return CompletableFuture.failedFuture(notHeld("release", permitId));
        }
        return permit.unlockAsync(permit.holder());
    }

    /**
     * {@link #availablePermits()} asynchronously. The library has no asynchronous form of it:
     * the call is made on the common ForkJoinPool, and takes one of its threads until the nodes
     * have answered.
     */
    public CompletableFuture<Integer> availablePermitsAsync() {
        return NativeClient.onPool(this::availablePermits);
    }

    @Override
    public String toString() {
        return "RPermitExpirableSemaphore[" + name + ", " + permits + " permits]";
    }

    /** A permit to acquire: a hold of its own, kept in {@link #held} once had. */
    private RLock newPermit() {
        return new RLock(client, LockState.permit(name, permits));
    }

    /** Keeps a permit just had: its id. */
    private String give(RLock permit) {
        String id = permit.token();
        if (id == null) {
            throw new ClientClosedException("acquire");
        }
        held.put(id, permit);
        return id;
    }

    private IllegalMonitorStateException notHeld(String action, String permitId) {
        return new IllegalMonitorStateException("cannot " + action + " permit " + permitId
                + " of " + this + ": this object does not hold it (it did not give it out, or"
                + " it was released already)");
    }
}
