package io.redlock;

import io.redlock.internal.SWIGTYPE_p_redlock_handle;
import java.lang.ref.Cleaner;

/**
 * One native handle (one acquisition), freed exactly once: by {@link #free()}, by the Cleaner
 * once its owner became unreachable (a lock still held is then left to expire at the end of its
 * lease: freeing a kept lock ends its renewal), or by {@link NativeClient#close()}.
 */
final class NativeHandle {
    private final NativeClient client;
    private final SWIGTYPE_p_redlock_handle ptr;
    private final long watchId;
    private final Cleaner.Cleanable cleanable;

    /** watchId: the id the library tells this kept lock's loss with; 0 when it is not kept. */
    NativeHandle(NativeClient client, SWIGTYPE_p_redlock_handle ptr, Object owner, long watchId) {
        this.client = client;
        this.ptr = ptr;
        this.watchId = watchId;
        this.cleanable = Redlock.CLEANER.register(owner, freeAction(client, ptr));
    }

    /** The Cleaner's action: it must not refer to the owner, so it is built from a static method. */
    private static Runnable freeAction(NativeClient client, SWIGTYPE_p_redlock_handle ptr) {
        return () -> client.free(ptr);
    }

    /** The native handle, for a call that names it (a read-write lock's held lock). */
    SWIGTYPE_p_redlock_handle ptr() {
        return ptr;
    }

    /** The handle's token: a semaphore's permit id; null once freed. */
    String token() {
        return client.token(ptr);
    }

    void extend(long leaseMs) {
        client.extend(ptr, leaseMs);
    }

    void unlock() {
        client.unlock(ptr);
    }

    java.util.concurrent.CompletableFuture<Void> extendAsync(long leaseMs) {
        return client.extendAsync(ptr, leaseMs);
    }

    java.util.concurrent.CompletableFuture<Void> unlockAsync() {
        return client.unlockAsync(ptr);
    }

    long validityMs() {
        return client.validityMs(ptr);
    }

    long fence(int index) {
        return client.fence(ptr, index);
    }

    /** Whether the library keeps this lock (renews it until unlocked). */
    boolean isKept() {
        return watchId != 0;
    }

    long watchId() {
        return watchId;
    }

    /**
     * Whether this lock was lost: its keys can have expired while it was held (a kept lock's
     * renewal failed, or any lock's validity ran out before its release).
     */
    boolean isLost() {
        return client.isLost(ptr);
    }

    /** Counts one more hold (reentry keeps the first terms); LockNotHeldException when lost. */
    void reenter() {
        client.reenter(ptr);
    }

    /** Gives back one hold: the holds left, 0 when it was the last (then unlock it). */
    int leave() {
        return client.leave(ptr);
    }

    /** The holds counted: 1 after the acquisition, plus the reentries not yet left. */
    int holds() {
        return client.holds(ptr);
    }

    void free() {
        cleanable.clean();
    }
}
