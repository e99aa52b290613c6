package io.redlock;

import io.redlock.internal.RedlockNativeConstants;
import java.util.concurrent.locks.ReadWriteLock;

/**
 * A read-write lock on one resource name, from {@link Redlock#getReadWriteLock}: its
 * {@link #readLock()} is held by any number of readers at once, its {@link #writeLock()} by one
 * writer with no reader, as Redisson's RReadWriteLock. Each is an {@link RLock} (lock, tryLock,
 * unlock, extend, isLost, the async methods...), each acquisition with its own token and lease,
 * kept (renewed) when no lease is given. The write lock and a plain lock of the same name
 * ({@link Redlock#getLock}) exclude each other. Over several nodes each takes a majority; a
 * read majority and a write majority always share a node, where the conflict shows.
 *
 * <p>The two locks of one RReadWriteLock belong together, per owner thread: a thread that holds
 * its write lock may take its read lock too (a downgrade: unlock the write lock after, and no
 * other writer comes in between); a thread that holds its read lock is refused its write lock
 * with {@link InvalidArgumentException} (no upgrade: two readers upgrading would wait for each
 * other for ever). Each RReadWriteLock object's halves hold for themselves: they share no hold
 * with other objects of the same name (another object's reader is another reader).
 */
public final class RReadWriteLock implements ReadWriteLock {
    private final RLock read;
    private final RLock write;

    RReadWriteLock(Redlock client, String name) {
        LockState reading = new LockState(new String[] {name}, RedlockNativeConstants.REDLOCK_READ);
        LockState writing = new LockState(new String[] {name},
                RedlockNativeConstants.REDLOCK_WRITE);
        reading.pair = writing;
        writing.pair = reading;
        this.read = new RLock(client, reading);
        this.write = new RLock(client, writing);
    }

    /** The read lock (the same object on every call). */
    @Override
    public RLock readLock() {
        return read;
    }

    /** The write lock (the same object on every call). */
    @Override
    public RLock writeLock() {
        return write;
    }

    @Override
    public String toString() {
        return "RReadWriteLock[" + read.names()[0] + "]";
    }
}
