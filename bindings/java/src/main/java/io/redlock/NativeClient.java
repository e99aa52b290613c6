package io.redlock;

import io.redlock.internal.RedlockNative;
import io.redlock.internal.RedlockNativeConstants;
import io.redlock.internal.RedlockNativeJNI;
import io.redlock.internal.SWIGTYPE_p_redlock_ctx;
import io.redlock.internal.SWIGTYPE_p_redlock_handle;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

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
    // Handles with an extend or unlock under way, and how many: the library uses
    // such a handle until the call ends, so a free meanwhile (the Cleaner's, once the owner is
    // gone; close()'s) waits for it. Guarded by busy itself, as is doomed: the handles whose
    // free waits.
    private final Map<SWIGTYPE_p_redlock_handle, Integer> busy = new HashMap<>();
    private final Set<SWIGTYPE_p_redlock_handle> doomed = new HashSet<>();
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

    /**
     * How the library ends an asynchronous call: on the client's own thread (one per client,
     * whatever the number of calls), which must not wait. JNI looks this interface up by name.
     */
    interface Done {
        void done(int status, long handle, byte[] message);
    }

    /**
     * Futures complete here, never on the library's thread: what a caller chains on them may
     * wait, or call the client again.
     */
    private static final Executor COMPLETIONS = ForkJoinPool.commonPool();

    /**
     * Acquires the names for owner asynchronously, as {@link #lock} does: the future completes
     * with the handle, or exceptionally with the RedlockException of the failure. A lock
     * acquired after the future was cancelled is released at once.
     */
    CompletableFuture<NativeHandle> lockAsync(Object owner, String[] names, long leaseMs,
            long waitMs) {
        CompletableFuture<NativeHandle> future = new CompletableFuture<>();
        byte[][] utf8 = Arrays.stream(names).map(n -> n.getBytes(StandardCharsets.UTF_8))
                .toArray(byte[][]::new);
        Done done = (status, address, message) -> {
            SWIGTYPE_p_redlock_handle ptr = RedlockNativeJNI.handle(address);
            if (ptr != null) {
                handles.add(ptr);
            }
            COMPLETIONS.execute(() -> {
                if (status != RedlockNativeConstants.REDLOCK_OK) {
                    future.completeExceptionally(RedlockException.fromNative(status, message));
                    return;
                }
                NativeHandle handle = new NativeHandle(this, ptr, owner);
                if (!future.complete(handle)) {
                    // Cancelled meanwhile: nobody holds it.
                    unlockAsync(ptr).whenComplete((ignored, error) -> handle.free());
                }
            });
        };
        Lock read = openForCall();
        try {
            RedlockNativeJNI.lockAsync(RedlockNativeJNI.pointer(ctx), utf8, leaseMs, waitMs, done);
        } finally {
            read.unlock();
        }
        return future;
    }

    CompletableFuture<Void> extendAsync(SWIGTYPE_p_redlock_handle ptr, long leaseMs) {
        return onHandle(ptr, done -> RedlockNativeJNI.extendAsync(RedlockNativeJNI.pointer(ptr),
                leaseMs, done));
    }

    CompletableFuture<Void> unlockAsync(SWIGTYPE_p_redlock_handle ptr) {
        return onHandle(ptr, done -> RedlockNativeJNI.unlockAsync(RedlockNativeJNI.pointer(ptr),
                done));
    }

    /** Starts an asynchronous call on ptr, which stays allocated until the call ends. */
    private CompletableFuture<Void> onHandle(SWIGTYPE_p_redlock_handle ptr,
            Consumer<Done> start) {
        CompletableFuture<Void> future = new CompletableFuture<>();
        Done done = (status, address, message) -> {
            release(ptr);
            COMPLETIONS.execute(() -> {
                if (status == RedlockNativeConstants.REDLOCK_OK) {
                    future.complete(null);
                } else {
                    future.completeExceptionally(RedlockException.fromNative(status, message));
                }
            });
        };
        Lock read = openForCall();
        hold(ptr);
        try {
            start.accept(done);
        } catch (RuntimeException e) {
            release(ptr); // it did not start
            throw e;
        } finally {
            read.unlock();
        }
        return future;
    }

    /** A call on ptr starts: ptr stays allocated until its release(ptr). */
    private void hold(SWIGTYPE_p_redlock_handle ptr) {
        synchronized (busy) {
            busy.merge(ptr, 1, Integer::sum);
        }
    }

    /**
     * A call on ptr ended (for an asynchronous one, on the library's thread, with no lock held:
     * close() may be waiting for it): a free that waited for it happens now.
     */
    private void release(SWIGTYPE_p_redlock_handle ptr) {
        synchronized (busy) {
            if (busy.merge(ptr, -1, Integer::sum) > 0) {
                return;
            }
            busy.remove(ptr);
            if (!doomed.remove(ptr)) {
                return;
            }
        }
        if (handles.remove(ptr)) {
            RedlockNative.redlock_handle_free(ptr);
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
        hold(ptr);
        try {
            RedlockNative.redlock_extend(ptr, leaseMs);
        } finally {
            release(ptr);
            read.unlock();
        }
    }

    void unlock(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = openForCall();
        hold(ptr);
        try {
            RedlockNative.redlock_unlock(ptr);
        } finally {
            release(ptr);
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
            synchronized (busy) {
                if (busy.containsKey(ptr)) {
                    doomed.add(ptr);
                    return;
                }
            }
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
            synchronized (busy) {
                for (SWIGTYPE_p_redlock_handle ptr : handles) {
                    if (!busy.containsKey(ptr) && handles.remove(ptr)) {
                        RedlockNative.redlock_handle_free(ptr);
                    }
                }
            }
            // Waits for the asynchronous calls under way (waiting locks are cancelled); the
            // handles they used or delivered meanwhile are freed after it.
            RedlockNative.redlock_ctx_free(ctx);
            ctx = null;
            for (SWIGTYPE_p_redlock_handle ptr : handles) {
                RedlockNative.redlock_handle_free(ptr);
            }
            handles.clear();
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
