package io.redlock;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What the {@link RLock} objects of one lock share: its hold (the native handle of the current
 * acquisition) and which owner holds it; how many times is the library's count on the handle
 * (redlock_handle_reenter, redlock_handle_leave), where the reentry rule lives. {@link Redlock#getLock} gives every
 * RLock of a name the same state while any of them is reachable, so that the hold counts per
 * client, name and owner thread, as in Redisson ({@link Redlock#getFairLock} likewise, with a
 * state apart); each multi-lock has a state of its own, and so has each permit of an
 * {@link RPermitExpirableSemaphore}.
 *
 * <p>The native handles are made with this state as their owner: once no RLock refers to it,
 * the Cleaner frees its handle (the lock is left to expire; a kept one is no longer renewed).
 * The fields and the methods that change them are used under this object's monitor.
 *
 * <p>A loss of a kept hold reaches this state from NativeClient (which refers to it weakly), on
 * the client's thread, and goes on to the {@link LostSignal} of each RLock object that took the
 * hold or acquired it again (the hold's followers): the listeners of an RLock are told of the
 * holds taken through it, not of those taken through the other RLocks of the name.
 */
final class LockState implements NativeClient.Watcher {
    final String[] names;
    // 0 for a plain lock; a read-write lock's REDLOCK_READ or REDLOCK_WRITE (of names[0]),
    // whose other half's state is pair.
    final int mode;
    LockState pair;
    // A semaphore's number of permits when this is the state of one of its permits (names[0]
    // is the semaphore's name); 0 otherwise.
    final int permits;
    // Whether this is the state of a fair lock of names[0] (taken in the order of arrival).
    final boolean fair;

    // Guarded by this. The owner is a thread id (Thread.getId()), or an id given to the async
    // methods; 0 when not held.
    long owner;
    NativeHandle handle;
    // Whether the last hold, now ended, was lost: what isLost() says until the next hold.
    boolean lastLost;

    // Changed under this, read without it by lost() (on the client's thread, which must not
    // wait for our locks).
    private final List<LostSignal> followers = new CopyOnWriteArrayList<>();

    LockState(String[] names) {
        this(names, 0);
    }

    LockState(String[] names, int mode) {
        this(names, mode, 0, false);
    }

    private LockState(String[] names, int mode, int permits, boolean fair) {
        this.names = names;
        this.mode = mode;
        this.permits = permits;
        this.fair = fair;
    }

    /** The state of one permit of the semaphore name of permits permits: a hold of its own. */
    static LockState permit(String name, int permits) {
        return new LockState(new String[] {name}, 0, permits, false);
    }

    /** The state of the fair lock of name, which its fair RLocks from a client share. */
    static LockState fair(String name) {
        return new LockState(new String[] {name}, 0, 0, true);
    }

    /** A new hold by ownerId, taken through the RLock of via. */
    void take(NativeHandle acquired, long ownerId, LostSignal via) {
        if (handle != null) {
            handle.free(); // a lost hold: its lease ran out (or renewal failed) before its unlock
        }
        endFollowers();
        handle = acquired;
        lastLost = false;
        owner = ownerId;
        follow(via);
    }

    /**
     * The RLock of via takes part in the current hold (acquires it again): its listeners are
     * told of this hold's loss too. A loss told before is found here.
     */
    void follow(LostSignal via) {
        if (handle.isKept() && !followers.contains(via)) {
            followers.add(via);
            via.begin(handle.watchId(), handle.isLost());
        }
    }

    /** Ends the hold (its last unlock): the handle, which the caller unlocks and frees. */
    NativeHandle detach() {
        NativeHandle released = handle;
        lastLost = released != null && released.isLost();
        handle = null;
        owner = 0;
        endFollowers();
        return released;
    }

    /**
     * Acquiring again by the owner (reentry): counts one more hold and keeps the first terms (the
     * keys' TTL and the renewal are not changed), true; false, counting nothing, when the hold
     * was lost: the owner then acquires afresh, and take() replaces the lost hold.
     */
    boolean reenter(LostSignal via) {
        if (handle.isLost()) {
            return false;
        }
        try {
            handle.reenter();
        } catch (LockNotHeldException lost) {
            return false; // its lease ran out just now
        }
        follow(via);
        return true;
    }

    /** Gives back one hold; true when it was the last (the caller then unlocks the handle). */
    boolean leave() {
        return handle.leave() == 0;
    }

    /** The holds of the current owner (0 when not held). */
    int holds() {
        return handle == null ? 0 : handle.holds();
    }

    /** Whether ownerId holds the lock and its lease has not run out. */
    boolean isHeldBy(long ownerId) {
        return handle != null && owner == ownerId && handle.validityMs() > 0;
    }

    void checkOwner(String action, long ownerId, RLock lock) {
        if (owner == 0 || owner != ownerId) {
            throw new IllegalMonitorStateException("cannot " + action + " " + lock
                    + ": owner " + ownerId + " does not hold it");
        }
    }

    /** The library's news of a lost kept hold, on the client's thread: queued, never waits. */
    @Override
    public void lost(long watchId, int status, String message) {
        for (LostSignal signal : followers) {
            signal.lost(watchId, status, message);
        }
    }

    private void endFollowers() {
        for (LostSignal signal : followers) {
            signal.end();
        }
        followers.clear();
    }
}
