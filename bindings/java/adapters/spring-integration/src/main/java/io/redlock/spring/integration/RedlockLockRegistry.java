package io.redlock.spring.integration;

import io.redlock.LockNotHeldException;
import io.redlock.RLock;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration lock registry on redlock: {@link #obtain(Object)} gives a
 * {@link java.util.concurrent.locks.Lock} held only while a majority of the client's nodes agree.
 *
 * <ul>
 * <li>The lock of a key is the redlock lock named by the registry's prefix followed by the
 * key's {@code toString()} (after the client's option {@code key_prefix}).</li>
 * <li>Without a lease (the default) a lock is kept: the library renews it every third of the
 * client's option {@code watchdog_lease_ms} until it is unlocked, and it is lost, and expires,
 * only when the nodes cannot be reached in time. With a lease, each acquisition lasts that
 * long unless renewed ({@link #renewLock}).</li>
 * <li>A lock is reentrant per thread, as Spring Integration's registries are: the thread that
 * holds it may take it again, and holds it until it has unlocked it as many times. Other
 * threads, of this process or another, wait. Unlock by a thread that does not hold it throws
 * {@link IllegalStateException}; unlock of a lock that was lost (its lease ran out, its
 * renewal failed) releases it and throws {@link ConcurrentModificationException}, as Spring
 * Integration's Redis registry does: what it protected may have been changed meanwhile.</li>
 * <li>Too few nodes answering, and the library's other failures while acquiring, throw
 * Spring's {@link CannotAcquireLockException} with the library's exception as its cause.</li>
 * </ul>
 *
 * <p>Besides {@link Lock}, the locks have the methods of Spring Integration 7's
 * {@code DistributedLock} ({@link RedlockLock#lock(Duration)},
 * {@link RedlockLock#tryLock(Duration, Duration)}) without declaring it, so that the registry
 * also runs with Spring Integration 6.5, which has no such interface; and
 * {@link RedlockLock#getFence()}, the fencing token (the client's option {@code fencing}).
 *
 * <p>The registry does not own the client: the application closes it.
 */
public final class RedlockLockRegistry implements ExpirableLockRegistry<RedlockLockRegistry.RedlockLock>,
        RenewableLockRegistry<RedlockLockRegistry.RedlockLock> {
    /** A wait "as long as it takes" (the library saturates it). */
    private static final long FOREVER_MS = Long.MAX_VALUE / 4;

    private final Redlock client;
    private final String prefix;
    private final Duration lease;
    private final Map<String, RedlockLock> locks = new ConcurrentHashMap<>();

    /** A registry of kept locks, named by their keys. */
    public RedlockLockRegistry(Redlock client) {
        this(client, "", null);
    }

    /** A registry of kept locks, named by prefix followed by their keys. */
    public RedlockLockRegistry(Redlock client, String prefix) {
        this(client, prefix, null);
    }

    /**
     * A registry of locks named by prefix followed by their keys, each acquisition with the
     * lease given; null: kept (renewed by the library until unlocked).
     */
    public RedlockLockRegistry(Redlock client, String prefix, Duration lease) {
        this.client = Objects.requireNonNull(client, "client");
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        if (lease != null && (lease.isNegative() || lease.isZero())) {
            throw new IllegalArgumentException("the lease must be positive, got " + lease);
        }
        this.lease = lease;
    }

    /**
     * The lock of key: the same object for the same key until {@link #expireUnusedOlderThan}
     * forgets it (another object of the key then shares its holds).
     */
    @Override
    public RedlockLock obtain(Object key) {
        String name = Objects.requireNonNull(key, "key").toString();
        RedlockLock lock = locks.computeIfAbsent(name,
                k -> new RedlockLock(client.getLock(prefix + k)));
        lock.lastUsed = System.currentTimeMillis();
        return lock;
    }

    /**
     * Forgets the locks obtained at least age milliseconds ago that no thread holds; a later
     * {@link #obtain} of their key makes a new object.
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.currentTimeMillis();
        locks.values().removeIf(lock -> now - lock.lastUsed >= age && !lock.isHeldInProcess());
    }

    /**
     * Renews the lock of key, held by a thread of this process, to the registry's lease from
     * now (for kept locks: the client's option {@code watchdog_lease_ms}). Throws
     * IllegalStateException when no thread of this process holds it, or it was lost.
     */
    @Override
    public void renewLock(Object key) {
        renewLock(key, lease != null ? lease
                : Duration.ofMillis(Long.parseLong(client.getOption("watchdog_lease_ms"))));
    }

    /**
     * Renews the lock of key, held by a thread of this process, to ttl from now; a kept lock
     * stays kept, its renewals using ttl from then on. Throws IllegalStateException when no
     * thread of this process holds it, or it was lost.
     */
    @Override
    public void renewLock(Object key, Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        String name = Objects.requireNonNull(key, "key").toString();
        RedlockLock lock = locks.get(name);
        long owner = lock == null ? 0 : lock.owner.get();
        if (owner == 0) {
            throw new IllegalStateException("cannot renew " + prefix + name
                    + ": no thread of this process holds it");
        }
        RuntimeException failure;
        try {
            lock.lock.extendAsync(ttl.toMillis(), TimeUnit.MILLISECONDS, owner).join();
            return;
        } catch (CompletionException e) {
            failure = e.getCause() instanceof RuntimeException ? (RuntimeException) e.getCause() : e;
        } catch (RuntimeException e) {
            failure = e;
        }
        if (failure instanceof LockNotHeldException
                || failure instanceof IllegalMonitorStateException) {
            throw new IllegalStateException("cannot renew " + prefix + name + ": "
                    + failure.getMessage(), failure);
        }
        throw failure;
    }

    @Override
    public String toString() {
        return "RedlockLockRegistry{prefix='" + prefix + "', lease="
                + (lease == null ? "kept" : lease) + "}";
    }

    /** A lock of the registry (see {@link RedlockLockRegistry}). */
    public final class RedlockLock implements Lock {
        private final RLock lock;
        // The thread that holds it (0: none), for renewLock and expireUnusedOlderThan.
        private final AtomicLong owner = new AtomicLong();
        private volatile long lastUsed;

        private RedlockLock(RLock lock) {
            this.lock = lock;
        }

        /** Waits until acquired, with the registry's lease (or kept). Not interruptible. */
        @Override
        public void lock() {
            acquire(() -> {
                if (lease == null) {
                    lock.lock();
                } else {
                    lock.lock(lease.toMillis(), TimeUnit.MILLISECONDS);
                }
                return true;
            });
        }

        /** Waits until acquired, with the lease ttl. Not interruptible. */
        public void lock(Duration ttl) {
            long ttlMs = ttl.toMillis();
            acquire(() -> {
                lock.lock(ttlMs, TimeUnit.MILLISECONDS);
                return true;
            });
        }

        /** Waits until acquired or interrupted, with the registry's lease (or kept). */
        @Override
        public void lockInterruptibly() throws InterruptedException {
            acquireInterruptibly(() -> {
                if (lease == null) {
                    lock.lockInterruptibly();
                    return true;
                }
                return lock.tryLock(FOREVER_MS, lease.toMillis(), TimeUnit.MILLISECONDS);
            });
        }

        /** One attempt, with the registry's lease (or kept); false when held elsewhere. */
        @Override
        public boolean tryLock() {
            return acquire(() -> {
                if (lease == null) {
                    return lock.tryLock();
                }
                try {
                    return lock.tryLock(0, lease.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            });
        }

        /** Tries for up to time, with the registry's lease (or kept); false when not acquired. */
        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            Objects.requireNonNull(unit, "unit");
            return acquireInterruptibly(() -> lease == null ? lock.tryLock(time, unit)
                    : lock.tryLock(Math.max(0, unit.toMillis(time)), lease.toMillis(),
                            TimeUnit.MILLISECONDS));
        }

        /** Tries for up to waitTime, with the lease ttl; false when not acquired. */
        public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
            long waitMs = Math.max(0, waitTime.toMillis());
            long ttlMs = ttl.toMillis();
            return acquireInterruptibly(() -> lock.tryLock(waitMs, ttlMs, TimeUnit.MILLISECONDS));
        }

        /**
         * Gives back one hold of the current thread; the last releases the lock on the nodes.
         * IllegalStateException when the current thread does not hold it;
         * ConcurrentModificationException when it was lost before (it is released).
         */
        @Override
        public void unlock() {
            try {
                lock.unlock();
            } catch (IllegalMonitorStateException notOwner) {
                throw new IllegalStateException("the current thread does not hold " + this,
                        notOwner);
            } catch (LockNotHeldException lost) {
                released();
                throw new ConcurrentModificationException(this + " was lost before its unlock "
                        + "(its lease ran out or its renewal failed): what it protected may have "
                        + "been changed by another holder meanwhile", lost);
            }
            released();
        }

        /** Not supported: a distributed lock has no conditions. */
        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("a distributed lock has no conditions");
        }

        /**
         * The fencing token of the current hold (the client's option {@code fencing}): larger
         * for every later holder of the name. Null when not held or without fencing.
         */
        public Long getFence() {
            return lock.getFence();
        }

        /** Whether the current thread holds the lock (without asking the nodes). */
        public boolean isHeldByCurrentThread() {
            return lock.isHeldByCurrentThread();
        }

        @Override
        public String toString() {
            return "RedlockLock{" + lock.getName() + "}";
        }

        private boolean isHeldInProcess() {
            long thread = owner.get();
            return thread != 0 && lock.isHeldByThread(thread);
        }

        /** After an unlock: the current thread's last hold gone, it no longer owns the lock. */
        private void released() {
            if (!lock.isHeldByCurrentThread()) {
                owner.compareAndSet(currentThreadId(), 0);
            }
        }

        private boolean acquire(Attempt attempt) {
            try {
                return acquireInterruptibly(attempt);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e); // the attempts given here do not throw it
            }
        }

        private boolean acquireInterruptibly(Attempt attempt) throws InterruptedException {
            boolean acquired;
            try {
                acquired = attempt.run();
            } catch (RedlockException e) {
                throw new CannotAcquireLockException("cannot lock " + lock.getName() + ": "
                        + e.getMessage(), e);
            }
            if (acquired) {
                owner.set(currentThreadId());
                lastUsed = System.currentTimeMillis();
            }
            return acquired;
        }
    }

    /** An acquisition through the RLock: true when acquired. */
    @FunctionalInterface
    private interface Attempt {
        boolean run() throws InterruptedException;
    }

    @SuppressWarnings("deprecation") // Thread.threadId() is Java 19; getId() is the same id
    private static long currentThreadId() {
        return Thread.currentThread().getId();
    }
}
