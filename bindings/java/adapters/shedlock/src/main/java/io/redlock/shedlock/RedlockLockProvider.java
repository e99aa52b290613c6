package io.redlock.shedlock;

import io.redlock.LeaseExpiredException;
import io.redlock.LockNotHeldException;
import io.redlock.RLock;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;

/**
 * A ShedLock {@link ExtensibleLockProvider} on redlock: each task's lock is a redlock lock,
 * granted only by a majority of the client's nodes.
 *
 * <ul>
 * <li>{@link #lock} makes one attempt (ShedLock skips a task whose lock is held) for the lock
 * named by the configuration's name, after the prefix given here (and the client's option
 * {@code key_prefix}), with a lease that ends at the configuration's lockAtMostUntil. Nothing
 * renews it: it ends with its lease unless the task ends first, as lockAtMostFor means.</li>
 * <li>{@link SimpleLock#unlock()} releases the lock, or, when lockAtLeastUntil is still to
 * come, keeps it until then: its lease is cut down to the time left (and up to a second more,
 * never past lockAtMostUntil) and a daemon thread of this class releases it at
 * lockAtLeastUntil.</li>
 * <li>{@link SimpleLock#extend} gives the lock a new lease of the new lockAtMostFor from now
 * (empty when the lock was lost meanwhile); ShedLock's {@code KeepAliveLockProvider} and
 * {@code LockExtender} use it. Any thread may unlock or extend a lock this provider gave.</li>
 * <li>With the client's option {@code fencing} set to {@code "1"}, the lock's
 * {@link RedlockLock#getFence()} is its fencing token.</li>
 * </ul>
 *
 * <p>A lock held by someone else, or whose lease ran out while it was being acquired, gives an
 * empty Optional; too few nodes answering, and the library's other failures, throw ShedLock's
 * {@link LockException} with the library's exception as its cause. A lock whose lease ran out
 * before its task ended is logged (System.Logger {@code io.redlock.shedlock}, WARNING) at its
 * unlock: the task may not have run alone.
 *
 * <p>The provider does not own the client: the application closes it, after the scheduler.
 */
public final class RedlockLockProvider implements ExtensibleLockProvider {
    private static final System.Logger LOG = System.getLogger("io.redlock.shedlock");

    /**
     * The owners of the locks this class takes: negative, so never a thread's id, and one per
     * acquisition, so that any thread may unlock or extend it and another acquisition of the
     * name (in this JVM too) waits for it as for any other holder.
     */
    private static final AtomicLong OWNERS = new AtomicLong();

    /**
     * How much longer than lockAtLeastFor the lease of an unlocked lock lasts, at most: the
     * release at lockAtLeastUntil ends it, and this margin lets a release that runs a little late
     * still find it held.
     */
    private static final long RELEASE_MARGIN_MS = 1_000;

    private final Redlock client;
    private final String prefix;

    /** A provider whose lock names are the tasks' names. */
    public RedlockLockProvider(Redlock client) {
        this(client, "");
    }

    /** A provider whose lock names are prefix followed by the tasks' names. */
    public RedlockLockProvider(Redlock client, String prefix) {
        this.client = Objects.requireNonNull(client, "client");
        this.prefix = Objects.requireNonNull(prefix, "prefix");
    }

    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        long leaseMs = msUntil(configuration.getLockAtMostUntil(), false);
        if (leaseMs <= 0) {
            return Optional.empty(); // lockAtMostFor has passed already
        }
        RLock lock = client.getLock(prefix + configuration.getName());
        long owner = OWNERS.decrementAndGet();
        boolean acquired;
        try {
            acquired = await(lock.tryLockAsync(0, leaseMs, TimeUnit.MILLISECONDS, owner));
        } catch (LeaseExpiredException notInTime) {
            return Optional.empty();
        } catch (RedlockException e) {
            throw new LockException("cannot lock " + lock.getName() + ": " + e.getMessage(), e);
        }
        if (!acquired) {
            return Optional.empty();
        }
        return Optional.of(new RedlockLock(configuration, lock, owner, lock.getFence()));
    }

    @Override
    public String toString() {
        return "RedlockLockProvider{prefix='" + prefix + "'}";
    }

    /**
     * A lock this provider gave: ShedLock's SimpleLock, with the fencing token of its
     * acquisition.
     */
    public static final class RedlockLock extends AbstractSimpleLock {
        private final RLock lock;
        private final long owner;
        private final Long fence;

        private RedlockLock(LockConfiguration configuration, RLock lock, long owner, Long fence) {
            super(configuration);
            this.lock = lock;
            this.owner = owner;
            this.fence = fence;
        }

        /**
         * The fencing token of the acquisition (the client's option {@code fencing}): larger for
         * every later holder of the name. Null without fencing.
         */
        public Long getFence() {
            return fence;
        }

        /** The lock's name on the nodes, after the provider's prefix. */
        public String getLockName() {
            return lock.getName();
        }

        @Override
        protected void doUnlock() {
            long keepMs = msUntil(lockConfiguration.getLockAtLeastUntil(), true);
            try {
                if (keepMs > 0) {
                    // Held until lockAtLeastUntil, and released then: the lease is cut down to
                    // the time left and a little more, so that the release finds it still held
                    // (never past lockAtMostUntil); the nodes let it expire if this process
                    // cannot release it.
                    long atMostMs = msUntil(lockConfiguration.getLockAtMostUntil(), false);
                    long leaseMs = Math.max(keepMs, Math.min(keepMs + RELEASE_MARGIN_MS, atMostMs));
                    await(lock.extendAsync(leaseMs, TimeUnit.MILLISECONDS, owner));
                    Releases.EXECUTOR.schedule(this::release, keepMs, TimeUnit.MILLISECONDS);
                } else {
                    await(lock.unlockAsync(owner));
                }
            } catch (LockNotHeldException | IllegalMonitorStateException lost) {
                LOG.log(System.Logger.Level.WARNING, "lock {0} was lost before its task ended "
                        + "(lockAtMostFor {1}): the task may not have run alone",
                        lock.getName(), lockConfiguration.getLockAtMostFor());
            } catch (RedlockException e) {
                throw new LockException("cannot unlock " + lock.getName() + ": " + e.getMessage(),
                        e);
            }
        }

        /** The release at lockAtLeastUntil; a failure only means the lease ends it instead. */
        private void release() {
            try {
                lock.unlockAsync(owner).whenComplete((released, error) -> {
                    if (error != null) {
                        LOG.log(System.Logger.Level.DEBUG, "lock {0} left to expire: {1}",
                                lock.getName(), error.toString());
                    }
                });
            } catch (RuntimeException closed) { // the client was closed: it released the lock
                LOG.log(System.Logger.Level.DEBUG, "lock {0} not released: {1}", lock.getName(),
                        closed.toString());
            }
        }

        @Override
        protected Optional<SimpleLock> doExtend(LockConfiguration configuration) {
            long leaseMs = msUntil(configuration.getLockAtMostUntil(), false);
            if (leaseMs <= 0) {
                return Optional.empty();
            }
            try {
                await(lock.extendAsync(leaseMs, TimeUnit.MILLISECONDS, owner));
            } catch (LockNotHeldException | IllegalMonitorStateException lost) {
                return Optional.empty();
            } catch (RedlockException e) {
                throw new LockException("cannot extend " + lock.getName() + ": " + e.getMessage(),
                        e);
            }
            return Optional.of(new RedlockLock(configuration, lock, owner, fence));
        }

        @Override
        public String toString() {
            return "RedlockLock{" + lock.getName() + ", " + lockConfiguration + "}";
        }
    }

    /** The thread that releases locks at their lockAtLeastUntil, made on first use. */
    private static final class Releases {
        static final ScheduledExecutorService EXECUTOR = Executors.newSingleThreadScheduledExecutor(
                task -> {
                    Thread thread = new Thread(task, "redlock-shedlock-release");
                    thread.setDaemon(true);
                    return thread;
                });
    }

    /** Milliseconds from now until instant, rounded down, or up with roundUp. */
    private static long msUntil(Instant instant, boolean roundUp) {
        Duration left = Duration.between(ClockProvider.now(), instant);
        long ms = left.toMillis();
        if (roundUp && left.minusMillis(ms).compareTo(Duration.ZERO) > 0) {
            ms++;
        }
        return ms;
    }

    /** The future's value; what it failed with, as thrown by the call itself. */
    private static <T> T await(CompletableFuture<T> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw e;
        }
    }
}
