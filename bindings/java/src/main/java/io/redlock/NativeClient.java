package io.redlock;

import io.redlock.internal.RedlockNative;
import io.redlock.internal.SWIGTYPE_p_redlock_ctx;
import io.redlock.internal.SWIGTYPE_p_redlock_handle;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The native client (a redlock_ctx) and the native handles made from it.
 *
 * <p>Calls run under the read side of a read-write lock, so any number of threads call at once
 * (the ctx is thread-safe). {@link #close()} takes the write side: it waits for the calls in
 * progress, then frees every handle still alive and the ctx last, as the ABI requires. It is
 * the Cleaner action of {@link Redlock}, so it must not refer to it.
 */
final class NativeClient {
    private final ReadWriteLock closing = new ReentrantReadWriteLock();
    private final Set<SWIGTYPE_p_redlock_handle> handles = ConcurrentHashMap.newKeySet();
    private SWIGTYPE_p_redlock_ctx ctx; // null once closed; written under the write lock

    NativeClient(String[] nodes, Map<String, String> options) {
        ctx = RedlockNative.redlock_ctx_new(nodes);
        try {
            for (Map.Entry<String, String> option : options.entrySet()) {
                RedlockNative.redlock_ctx_set_option(ctx, option.getKey(), option.getValue());
            }
        } catch (RuntimeException e) {
            RedlockNative.redlock_ctx_free(ctx);
            throw e;
        }
    }

    /**
     * Acquires the names for owner, whose collection frees the handle, in one native call that
     * waits up to waitMs, retrying as the library decides. Throws LockHeldException or
     * NoQuorumException when the lock was not acquired within waitMs, CancelledException when
     * the calling thread was interrupted meanwhile (what the attempt had taken is released).
     */
    NativeHandle lock(Object owner, String[] names, long leaseMs, long waitMs) {
        Lock read = openForCall();
        try {
            SWIGTYPE_p_redlock_handle ptr = names.length == 1
                    ? RedlockNative.redlock_lock(ctx, names[0], leaseMs, waitMs)
                    : RedlockNative.redlock_lock_multi(ctx, names, leaseMs, waitMs);
            handles.add(ptr);
            return new NativeHandle(this, ptr, owner);
        } finally {
            read.unlock();
        }
    }

    /** An option's current value, as text. */
    String getOption(String name) {
        Lock read = openForCall();
        try {
            return RedlockNative.redlock_java_get_option(ctx, name);
        } finally {
            read.unlock();
        }
    }

    void extend(SWIGTYPE_p_redlock_handle ptr, long leaseMs) {
        Lock read = openForCall();
        try {
            RedlockNative.redlock_extend(ptr, leaseMs);
        } finally {
            read.unlock();
        }
    }

    void unlock(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = openForCall();
        try {
            RedlockNative.redlock_unlock(ptr);
        } finally {
            read.unlock();
        }
    }

    /** Milliseconds of validity left; 0 once the handle or the client was freed. */
    long validityMs(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = closing.readLock();
        read.lock();
        try {
            return handles.contains(ptr) ? RedlockNative.redlock_handle_validity_ms(ptr) : 0;
        } finally {
            read.unlock();
        }
    }

    /** Frees a handle, once: later calls, and calls after close(), do nothing. */
    void free(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = closing.readLock();
        read.lock();
        try {
            if (handles.remove(ptr)) {
                RedlockNative.redlock_handle_free(ptr);
            }
        } finally {
            read.unlock();
        }
    }

    /** Frees the handles still alive (their locks are left to expire), then the ctx. */
    void close() {
        Lock write = closing.writeLock();
        write.lock();
        try {
            if (ctx == null) {
                return;
            }
            for (SWIGTYPE_p_redlock_handle ptr : handles) {
                RedlockNative.redlock_handle_free(ptr);
            }
            handles.clear();
            RedlockNative.redlock_ctx_free(ctx);
            ctx = null;
        } finally {
            write.unlock();
        }
    }

    /** Takes the read lock for a call that needs the ctx; the caller unlocks it. */
    private Lock openForCall() {
        Lock read = closing.readLock();
        read.lock();
        if (ctx == null) {
            read.unlock();
            throw new IllegalStateException("the Redlock client is closed");
        }
        return read;
    }
}
