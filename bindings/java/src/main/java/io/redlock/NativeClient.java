package io.redlock;

import io.redlock.internal.RedlockNative;
import io.redlock.internal.RedlockNativeConstants;
import io.redlock.internal.RedlockNativeJNI;
import io.redlock.internal.SWIGTYPE_p_redlock_ctx;
import io.redlock.internal.SWIGTYPE_p_redlock_handle;
import java.lang.System.Logger.Level;
import java.lang.ref.WeakReference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The native client (a redlock_ctx) and the native handles made from it.
 *
 * <p>Calls run under the read side of a read-write lock, so any number of threads call at once
 * (the ctx is thread-safe). {@link #close()} refuses new calls at once
 * ({@link ClientClosedException}), ends the waits for a lock under way (the native interrupt
 * check asks {@link #isClosing}), takes the write side (so waits for the calls in progress),
 * releases every lock still held, best effort, and frees the handles and the ctx last, as the
 * ABI requires. It is the Cleaner action of {@link Redlock}, so it must not refer to it.
 *
 * <p>Kept locks: a handle acquired with a {@link Watcher} is watched (redlock_handle_watch): the
 * library renews it on the client's thread, and tells its loss through {@link #lost} with the
 * watch's id. Ids are never reused; an id is forgotten when its handle is freed, and news for an
 * id not known (any more) is ignored, so the callback never reaches a freed handle or a
 * collected object.
 *
 * <p>Events: the library's events go to the System.Logger named "io.redlock" (see {@link #log}),
 * from the least level that logger takes when the client is made.
 */
final class NativeClient {
    /** Where the library's events go: whatever backend the service's System.Logger uses. */
    static final System.Logger LOGGER = System.getLogger("io.redlock");

    /** The watchers of the kept holds of every client, by watch id, weakly: see LockState. */
    private static final Map<Long, WeakReference<Watcher>> WATCHES = new ConcurrentHashMap<>();
    private static final AtomicLong WATCH_IDS = new AtomicLong();

    /** The ctxs (their addresses) whose close() began: their waits end (see isClosing). */
    private static final Set<Long> CLOSING = ConcurrentHashMap.newKeySet();

    /** {@link #timeToLive} of a lock nobody holds, as Redis's PTTL of a missing key. */
    static final long NOT_LOCKED = -2;
    /** {@link #timeToLive} of a key without expiry, as Redis's PTTL. */
    static final long NO_EXPIRY = -1;

    private final ReadWriteLock closing = new ReentrantReadWriteLock();
    private final Set<SWIGTYPE_p_redlock_handle> handles = ConcurrentHashMap.newKeySet();
    // The watch id of each watched handle, until it is freed.
    private final Map<SWIGTYPE_p_redlock_handle, Long> watched = new ConcurrentHashMap<>();
    private final long watchdogLeaseMs;
    // Handles with an extend or unlock under way, and how many: the library uses
    // such a handle until the call ends, so a free meanwhile (the Cleaner's, once the owner is
    // gone; close()'s) waits for it. Guarded by busy itself, as is doomed: the handles whose
    // free waits.
    private final Map<SWIGTYPE_p_redlock_handle, Integer> busy = new HashMap<>();
    private final Set<SWIGTYPE_p_redlock_handle> doomed = new HashSet<>();
    private SWIGTYPE_p_redlock_ctx ctx; // null once closed; written under the write lock
    private final long ctxAddress;
    private volatile boolean closed; // close() began: every call is refused

    NativeClient(String[] nodes, Map<String, String> options) {
        ctx = RedlockNative.redlock_ctx_new(nodes);
        ctxAddress = RedlockNativeJNI.pointer(ctx);
        try {
            for (Map.Entry<String, String> option : options.entrySet()) {
                RedlockNative.redlock_ctx_set_option(ctx, option.getKey(), option.getValue());
            }
            watchdogLeaseMs = Long.parseLong(
                    RedlockNative.redlock_java_get_option(ctx, "watchdog_lease_ms"));
            int minLevel = leastLevel();
            if (minLevel != 0) {
                RedlockNativeJNI.setLog(RedlockNativeJNI.pointer(ctx), minLevel);
            }
        } catch (RuntimeException e) {
            RedlockNative.redlock_ctx_free(ctx);
            throw e;
        }
    }

    /**
     * The library's levels (REDLOCK_LOG_*) and System.Logger's, from the least. Its info events
     * (a node back, a forced unlock, a Cluster slot moved) are routine: DEBUG, as its debug
     * ones, so that java.util.logging's default (INFO and above, on stderr) shows only what
     * needs attention: WARNING (nodes failing, renewals failing) and ERROR (a lost lock,
     * refused credentials).
     */
    private static final int[] LEVELS = {
        RedlockNativeConstants.REDLOCK_LOG_INFO, RedlockNativeConstants.REDLOCK_LOG_WARN,
        RedlockNativeConstants.REDLOCK_LOG_ERROR,
    };
    private static final Level[] LOGGER_LEVELS = {
        Level.DEBUG, Level.WARNING, Level.ERROR,
    };

    /** The least of the library's levels that LOGGER takes now; 0 when it takes none. */
    private static int leastLevel() {
        if (LOGGER.isLoggable(Level.DEBUG)) {
            return RedlockNativeConstants.REDLOCK_LOG_DEBUG;
        }
        for (int i = 1; i < LEVELS.length; i++) {
            if (LOGGER.isLoggable(LOGGER_LEVELS[i])) {
                return LEVELS[i];
            }
        }
        return 0;
    }

    /**
     * One of the library's events (JNI calls it by name), on whichever thread emitted it: a
     * thread in a blocking call, or the client's own. The message is "event fields...". It must
     * not throw, nor wait for anything the library may hold.
     */
    static void log(int level, byte[] event, byte[] message) {
        try {
            Level mapped = Level.ERROR;
            for (int i = 0; i < LEVELS.length; i++) {
                if (level <= LEVELS[i]) {
                    mapped = LOGGER_LEVELS[i];
                    break;
                }
            }
            LOGGER.log(mapped, escape(new String(event, StandardCharsets.UTF_8)) + " "
                    + escape(new String(message, StandardCharsets.UTF_8)));
        } catch (Throwable ignored) {
            // A failing backend must not stop the library's thread.
        }
    }

    /**
     * text with its control characters (below 0x20, and 0x7f) escaped as the C library escapes
     * them in its events: \n, \r, \t, else \xNN. The library's messages come escaped already;
     * what the binding logs is escaped here too, so that a record is always one line.
     */
    static String escape(String text) {
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c >= 0x20 && c != 0x7f) {
                if (out != null) {
                    out.append(c);
                }
                continue;
            }
            if (out == null) {
                out = new StringBuilder(text.length() + 8).append(text, 0, i);
            }
            out.append(c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                    : String.format("\\x%02x", (int) c));
        }
        return out == null ? text : out.toString();
    }

    /** What the client knows of each node (redlock_ctx_health), one entry per node. */
    List<NodeHealth> health() {
        String text;
        Lock read = openForCall();
        try {
            text = RedlockNative.redlock_swig_health(ctx);
        } finally {
            read.unlock();
        }
        if (text == null) {
            throw new OutOfMemoryError("redlock_ctx_health");
        }
        List<NodeHealth> nodes = new ArrayList<>();
        for (long i = 0, n = RedlockNative.redlock_health_nodes(text); i < n; i++) {
            nodes.add(NodeHealth.read(text, i));
        }
        return nodes;
    }

    /** redlock_ctx_ping: how many nodes answered and count; NoQuorumException when too few. */
    int ping() {
        return count(answered -> RedlockNative.redlock_ctx_ping(ctx, answered));
    }

    /**
     * How many permits of the semaphore name of permits could be taken now
     * (redlock_permits_available): NoQuorumException when too few nodes answered,
     * InvalidArgumentException when a node has the semaphore under another number of permits.
     */
    int permitsAvailable(String name, int permits) {
        return count(available ->
                RedlockNative.redlock_permits_available(ctx, name, permits, available));
    }

    /** Makes a call (which reads ctx) that answers a count through an int[1]: the count. */
    private int count(Consumer<int[]> call) {
        int[] answer = new int[1];
        Lock read = openForCall();
        try {
            call.accept(answer);
        } finally {
            read.unlock();
        }
        return answer[0];
    }

    /** The lease of kept locks, the option watchdog_lease_ms (options never change later). */
    long watchdogLeaseMs() {
        return watchdogLeaseMs;
    }

    /**
     * Acquires the names for owner, whose collection frees the handle, in one native call that
     * waits up to waitMs, retrying as the library decides. Throws LockHeldException or
     * NoQuorumException when the lock was not acquired within waitMs, CancelledException when
     * the calling thread was interrupted meanwhile (what the attempt had taken is released).
     * With keep (not null) the lock is kept: renewed until unlocked, its loss told to keep.
     */
    NativeHandle lock(Object owner, String[] names, long leaseMs, long waitMs, Watcher keep) {
        return lock(owner, names, 0, null, leaseMs, waitMs, keep);
    }

    /**
     * {@link #lock}, or with mode a read-write lock's read or write lock of names[0]; held, the
     * caller's handle of the same read-write lock (a downgrade, or an upgrade refused), or null.
     */
    NativeHandle lock(Object owner, String[] names, int mode, NativeHandle held, long leaseMs,
            long waitMs, Watcher keep) {
        return acquire(owner, keep, () -> mode != 0
                ? RedlockNative.redlock_lock_rw(ctx, names[0], mode,
                        held == null ? null : held.ptr(), leaseMs, waitMs)
                : names.length == 1
                ? RedlockNative.redlock_lock(ctx, names[0], leaseMs, waitMs)
                : RedlockNative.redlock_lock_multi(ctx, names, leaseMs, waitMs));
    }

    /**
     * A permit of the semaphore name of permits permits (redlock_acquire_permit), as
     * {@link #lock} acquires a lock: the handle is the permit, its token the permit's id.
     * LockHeldException when every permit stayed taken for waitMs.
     */
    NativeHandle acquirePermit(Object owner, String name, int permits, long leaseMs, long waitMs,
            Watcher keep) {
        return acquire(owner, keep,
                () -> RedlockNative.redlock_acquire_permit(ctx, name, permits, leaseMs, waitMs));
    }

    /**
     * The fair lock of name (redlock_lock_fair), as {@link #lock} acquires a lock: waiters get it
     * in the order they arrived.
     */
    NativeHandle lockFair(Object owner, String name, long leaseMs, long waitMs, Watcher keep) {
        return acquire(owner, keep,
                () -> RedlockNative.redlock_lock_fair(ctx, name, leaseMs, waitMs));
    }

    /** Makes the blocking acquisition call (which reads ctx) for {@link #lock}'s owner and keep. */
    private NativeHandle acquire(Object owner, Watcher keep,
            Supplier<SWIGTYPE_p_redlock_handle> call) {
        Lock read = openForCall();
        try {
            SWIGTYPE_p_redlock_handle ptr;
            try {
                ptr = call.get();
            } catch (CancelledException cancelled) {
                checkOpen("lock"); // close() ended the wait
                throw cancelled;
            }
            long watchId = 0;
            if (keep != null) {
                try {
                    watchId = watch(ptr, keep);
                } catch (RuntimeException e) {
                    giveUp(ptr);
                    throw e;
                }
            }
            handles.add(ptr);
            return new NativeHandle(this, ptr, owner, watchId);
        } finally {
            read.unlock();
        }
    }

    /**
     * Has the library keep ptr (not yet known to anyone else): returns the watch id. A lease
     * that ran out before the watch began throws LeaseExpiredException, as when it runs out
     * while acquiring; other failures (no thread, no memory) throw their RedlockException.
     */
    private long watch(SWIGTYPE_p_redlock_handle ptr, Watcher keep) {
        long id = WATCH_IDS.incrementAndGet();
        // Known before the watch begins: news of a loss can come at once.
        WATCHES.put(id, new WeakReference<>(keep));
        try {
            RedlockNativeJNI.watch(RedlockNativeJNI.pointer(ptr), id);
        } catch (LockNotHeldException expired) {
            WATCHES.remove(id);
            throw new LeaseExpiredException(RedlockNativeConstants.REDLOCK_EEXPIRED,
                    "the lease ran out before its renewal began: " + expired.getMessage());
        } catch (RuntimeException e) {
            WATCHES.remove(id);
            throw e;
        }
        watched.put(ptr, id);
        return id;
    }

    /** Releases and frees a handle that could not be kept (known to nobody else). */
    private static void giveUp(SWIGTYPE_p_redlock_handle ptr) {
        try {
            RedlockNative.redlock_unlock(ptr);
        } catch (RedlockException ignored) {
            // What could not be released expires at the end of its lease.
        } finally {
            RedlockNative.redlock_handle_free(ptr);
        }
    }

    /**
     * Told that a kept hold was lost, on the client's thread: it must not wait (take no lock
     * that an RLock method may hold) nor throw.
     */
    interface Watcher {
        void lost(long watchId, int status, String message);
    }

    /**
     * The library's news that a kept lock was lost, on the client's thread (JNI calls it by
     * name). It must not wait nor throw: threads waiting in the library for this callback to end
     * (an unlock or a free of the same handle, close()) may hold this client's locks or an
     * RLock's monitor, so it takes none of them.
     */
    static void lost(long watchId, int status, byte[] message) {
        try {
            WeakReference<Watcher> ref = WATCHES.get(watchId);
            Watcher watcher = ref == null ? null : ref.get();
            if (watcher != null) {
                watcher.lost(watchId, status, new String(message, StandardCharsets.UTF_8));
            }
        } catch (Throwable ignored) {
            // Out of memory or the like: isLost() still says it.
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
            long waitMs, Watcher keep) {
        return lockAsync(owner, names, 0, null, leaseMs, waitMs, keep);
    }

    /** {@link #lockAsync}, with a read-write lock's mode and held handle as {@link #lock}'s. */
    CompletableFuture<NativeHandle> lockAsync(Object owner, String[] names, int mode,
            NativeHandle held, long leaseMs, long waitMs, Watcher keep) {
        byte[][] utf8 = Arrays.stream(names).map(n -> n.getBytes(StandardCharsets.UTF_8))
                .toArray(byte[][]::new);
        return acquireAsync(owner, keep, done -> {
            if (mode != 0) {
                RedlockNativeJNI.lockRwAsync(RedlockNativeJNI.pointer(ctx), utf8[0], mode,
                        held == null ? 0 : RedlockNativeJNI.pointer(held.ptr()), leaseMs, waitMs,
                        done);
            } else {
                RedlockNativeJNI.lockAsync(RedlockNativeJNI.pointer(ctx), utf8, leaseMs, waitMs,
                        done);
            }
        });
    }

    /** {@link #acquirePermit} asynchronously, as {@link #lockAsync} acquires a lock. */
    CompletableFuture<NativeHandle> acquirePermitAsync(Object owner, String name, int permits,
            long leaseMs, long waitMs, Watcher keep) {
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        return acquireAsync(owner, keep, done -> RedlockNativeJNI.acquirePermitAsync(
                RedlockNativeJNI.pointer(ctx), utf8, permits, leaseMs, waitMs, done));
    }

    /** {@link #lockFair} asynchronously, as {@link #lockAsync} acquires a lock. */
    CompletableFuture<NativeHandle> lockFairAsync(Object owner, String name, long leaseMs,
            long waitMs, Watcher keep) {
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        return acquireAsync(owner, keep, done -> RedlockNativeJNI.lockFairAsync(
                RedlockNativeJNI.pointer(ctx), utf8, leaseMs, waitMs, done));
    }

    /**
     * Starts an asynchronous acquisition (start reads ctx) for {@link #lockAsync}'s owner and
     * keep; the handle it delivers is watched, known and handed over as there.
     */
    private CompletableFuture<NativeHandle> acquireAsync(Object owner, Watcher keep,
            Consumer<Done> start) {
        CompletableFuture<NativeHandle> future = new CompletableFuture<>();
        Done done = (status, address, message) -> {
            SWIGTYPE_p_redlock_handle ptr = RedlockNativeJNI.handle(address);
            // Watched at once, on the client's thread, before anyone else knows the handle (a
            // close() meanwhile frees only the handles it finds in the set).
            long watchId = 0;
            RuntimeException notKept = null;
            if (ptr != null && keep != null) {
                try {
                    watchId = watch(ptr, keep);
                } catch (RuntimeException e) {
                    notKept = e;
                }
            }
            if (ptr != null) {
                handles.add(ptr);
            }
            long id = watchId;
            RuntimeException failure = notKept;
            COMPLETIONS.execute(() -> {
                if (status != RedlockNativeConstants.REDLOCK_OK) {
                    future.completeExceptionally(RedlockException.fromNative(status, message));
                    return;
                }
                NativeHandle handle = new NativeHandle(this, ptr, owner, id);
                if (failure != null) {
                    unlockAsync(ptr).whenComplete((ignored, error) -> handle.free());
                    future.completeExceptionally(failure);
                    return;
                }
                if (!future.complete(handle)) {
                    // Cancelled meanwhile: nobody holds it.
                    unlockAsync(ptr).whenComplete((ignored, error) -> handle.free());
                }
            });
        };
        Lock read = openForCall();
        try {
            start.accept(done);
        } finally {
            read.unlock();
        }
        return future;
    }

    /**
     * A blocking call made on the pool the futures complete on, for a call the library has no
     * asynchronous form of: it takes a pool thread until the nodes have answered.
     */
    static <T> CompletableFuture<T> onPool(Supplier<T> call) {
        return CompletableFuture.supplyAsync(call, COMPLETIONS);
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
            freeNative(ptr);
        }
    }

    /**
     * Frees a handle taken out of the set (no other thread uses it), and forgets its watch: the
     * library ends the renewal first, and tells no loss after that.
     */
    private void freeNative(SWIGTYPE_p_redlock_handle ptr) {
        RedlockNative.redlock_handle_free(ptr);
        Long id = watched.remove(ptr);
        if (id != null) {
            WATCHES.remove(id);
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

    /**
     * What the nodes say of name's lock, held by anyone (redlock_inspect): the milliseconds for
     * which a quorum of them still has it, {@link #NO_EXPIRY} when its key has no expiry,
     * {@link #NOT_LOCKED} when nobody holds it. One round to the nodes; NoQuorumException when
     * too few answer, WrongTypeException when the key is not a lock.
     */
    long timeToLive(String name) {
        return timeToLive(new String[] {name});
    }

    /**
     * What the nodes say of the lock of names, held by anyone (redlock_inspect_multi: locked when
     * any of them is, for the longest of their times to live): as {@link #timeToLive(String)}.
     */
    long timeToLive(String[] names) {
        int[] locked = new int[1];
        long[] ttlMs = new long[1];
        Lock read = openForCall();
        try {
            RedlockNative.redlock_inspect_multi(ctx, names, locked, ttlMs);
        } finally {
            read.unlock();
        }
        return locked[0] != 0 ? ttlMs[0] : NOT_LOCKED;
    }

    /**
     * Deletes name's lock on every node whatever its token, and wakes its waiters
     * (redlock_force_unlock): the number of nodes on which a lock was deleted. NoQuorumException
     * when too few nodes answer, WrongTypeException (the key left alone) when it is not a lock.
     */
    int forceUnlock(String name) {
        return count(deleted -> RedlockNative.redlock_force_unlock(ctx, name, deleted));
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

    /**
     * Whether the library says the lock of ptr is lost (redlock_handle_lost: its keys can have
     * expired while held, kept or not); false once the handle or client was freed.
     */
    boolean isLost(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = closing.readLock();
        read.lock();
        try {
            return handles.contains(ptr) && RedlockNative.redlock_handle_lost(ptr) != 0;
        } finally {
            read.unlock();
        }
    }

    /** The token of ptr (redlock_handle_token); null once the handle or the client was freed. */
    String token(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = closing.readLock();
        read.lock();
        try {
            return handles.contains(ptr) ? RedlockNative.redlock_handle_token(ptr) : null;
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

    /**
     * Acquiring the lock of ptr again by its holder (redlock_handle_reenter): counts one more
     * hold, changes neither the keys' TTL nor the renewal. LockNotHeldException when it was
     * lost (its lease ran out, its renewal failed) or released; ClientClosedException once the
     * client is closed.
     */
    void reenter(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = openForCall();
        try {
            if (!handles.contains(ptr)) {
                throw new LockNotHeldException(RedlockNativeConstants.REDLOCK_ENOTHELD,
                        "the lock's handle was freed");
            }
            RedlockNative.redlock_handle_reenter(ptr);
        } finally {
            read.unlock();
        }
    }

    /**
     * Gives back one hold of ptr (redlock_handle_leave): the holds left; 0 when it was the
     * last, which the caller then unlocks (also once the handle or client was freed).
     */
    int leave(SWIGTYPE_p_redlock_handle ptr) {
        int[] left = new int[1];
        Lock read = closing.readLock();
        read.lock();
        try {
            if (handles.contains(ptr)) {
                RedlockNative.redlock_handle_leave(ptr, left);
            }
        } finally {
            read.unlock();
        }
        return left[0];
    }

    /** The holds of ptr (redlock_handle_holds); 0 once the handle or the client was freed. */
    int holds(SWIGTYPE_p_redlock_handle ptr) {
        Lock read = closing.readLock();
        read.lock();
        try {
            return handles.contains(ptr) ? RedlockNative.redlock_handle_holds(ptr) : 0;
        } finally {
            read.unlock();
        }
    }

    /**
     * The fence of resource index of a held lock (redlock_handle_fence); 0 when it was taken
     * without fencing, or once the handle or the client was freed.
     */
    long fence(SWIGTYPE_p_redlock_handle ptr, int index) {
        long[] fence = new long[1];
        Lock read = closing.readLock();
        read.lock();
        try {
            if (handles.contains(ptr)) {
                RedlockNative.redlock_handle_fence(ptr, index, fence);
            }
        } finally {
            read.unlock();
        }
        return fence[0];
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
                freeNative(ptr);
            }
        } finally {
            read.unlock();
        }
    }

    /**
     * Refuses new calls, ends the waits under way and waits for the other calls in progress,
     * then releases the locks still held (best effort: a node that does not answer keeps its key
     * until the lease ends) and frees their handles, then the ctx.
     */
    void close() {
        closed = true;
        CLOSING.add(ctxAddress);
        Lock write = closing.writeLock();
        write.lock();
        try {
            if (ctx == null) {
                return;
            }
            // The handles no call uses, taken out under busy and freed outside it: freeing a
            // watched handle waits for its renewal under way on the client's thread, whose
            // callbacks may meanwhile want busy (release).
            List<SWIGTYPE_p_redlock_handle> idle = new ArrayList<>();
            synchronized (busy) {
                for (SWIGTYPE_p_redlock_handle ptr : handles) {
                    if (!busy.containsKey(ptr) && handles.remove(ptr)) {
                        idle.add(ptr);
                    }
                }
            }
            for (SWIGTYPE_p_redlock_handle ptr : idle) {
                try {
                    RedlockNative.redlock_unlock(ptr); // ends a kept lock's renewal first
                } catch (RedlockException notHeld) {
                    // Expired or lost already: nothing to release.
                }
                freeNative(ptr);
            }
            // Waits for the asynchronous calls under way (waiting locks are cancelled); the
            // handles they used or delivered meanwhile are freed after it.
            RedlockNative.redlock_ctx_free(ctx);
            ctx = null;
            for (SWIGTYPE_p_redlock_handle ptr : handles) {
                freeNative(ptr);
            }
            handles.clear();
        } finally {
            CLOSING.remove(ctxAddress);
            write.unlock();
        }
    }

    /**
     * Whether close() began on the ctx at address: the native interrupt check of a wait for a
     * lock asks it (JNI calls it by name), so that the wait ends (REDLOCK_ECANCELED).
     */
    static boolean isClosing(long address) {
        return CLOSING.contains(address);
    }

    /** ClientClosedException, naming what (or null), once close() began. */
    void checkOpen(String what) {
        if (closed) {
            throw new ClientClosedException(what);
        }
    }

    /** Takes the read lock for a call that needs the ctx; the caller unlocks it. */
    private Lock openForCall() {
        checkOpen(null);
        Lock read = closing.readLock();
        read.lock();
        if (ctx == null || closed) {
            read.unlock();
            throw new ClientClosedException(null);
        }
        return read;
    }
}
