package io.redlock;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The onLost listeners of one {@link RLock}, and the kept hold they are told of: the current
 * one, when it was taken or acquired again through that RLock (see {@link LockState}).
 *
 * <p>The library tells a lost lock on the client's thread (NativeClient.lost, by the watch id of
 * the hold, to the LockState, which passes it on to the signals following the hold):
 * {@link #lost} only queues the news for the notifier thread, so that thread never waits for a
 * lock, never runs a listener, and never waits for one. Neither refers to the RLock:
 * NativeClient reaches the LockState, and so this object, through a weak reference only, so a
 * listener that refers to its RLock does not keep an RLock that its program dropped alive (once
 * the lock's RLocks are collected, the Cleaner frees the handle, which ends the renewal).
 *
 * <p>Each listener runs once per lost kept hold: when the notifier gets the news (if that hold
 * is still the current one), or at once when it is registered after the loss, or when the hold
 * is found lost as it begins (a loss before the hold was published). The {@code told} flag makes
 * these exclusive. This object's monitor is never held across a native call or a listener.
 */
final class LostSignal {
    private static final System.Logger LOG = System.getLogger("io.redlock");

    /**
     * Runs the listeners, one after another: a daemon thread that starts when needed and ends
     * after a minute without work.
     */
    private static final ThreadPoolExecutor NOTIFIER = notifier();

    private final String lock; // the RLock's description, for the log

    // Guarded by this.
    private final List<Listener> listeners = new ArrayList<>();
    private long hold; // the watch id of the current kept hold; 0 when there is none
    private boolean told; // the current kept hold's loss was told to the listeners

    LostSignal(String lock) {
        this.lock = lock;
    }

    /** A listener, and the executor it runs on (null: the notifier thread itself). */
    private static final class Listener {
        final Runnable action;
        final Executor executor;

        Listener(Runnable action, Executor executor) {
            this.action = action;
            this.executor = executor;
        }
    }

    /**
     * Adds a listener. watchId is the current kept hold (0: none) and lostNow whether it was
     * lost: then the listener runs at once (with the others, when the news has not been told
     * yet).
     */
    void add(Runnable action, Executor executor, long watchId, boolean lostNow) {
        Listener added = new Listener(Objects.requireNonNull(action, "listener"), executor);
        List<Listener> run;
        synchronized (this) {
            listeners.add(added);
            boolean current = watchId != 0 && watchId == hold;
            if (current && told) {
                run = List.of(added); // the others were told already
            } else if (current && lostNow) {
                run = tell();
            } else {
                run = List.of();
            }
        }
        submit(run);
    }

    /** Removes the first registration of action; false when there is none. */
    synchronized boolean remove(Runnable action) {
        for (int i = 0; i < listeners.size(); i++) {
            if (listeners.get(i).action.equals(action)) {
                listeners.remove(i);
                return true;
            }
        }
        return false;
    }

    /**
     * A hold begins (watchId 0: it is not kept). lostAlready: it was lost before this call,
     * when the library's news may have come too early to be matched.
     */
    void begin(long watchId, boolean lostAlready) {
        List<Listener> run;
        synchronized (this) {
            hold = watchId;
            told = false;
            run = lostAlready && watchId != 0 ? tell() : List.of();
        }
        submit(run);
    }

    /** The current hold ends (unlocked, or replaced): later news of it is not told. */
    synchronized void end() {
        hold = 0;
        told = false;
    }

    /**
     * The library's news, on the client's thread: the kept hold watchId was lost. Must not
     * block nor throw: it only queues the rest for the notifier thread.
     */
    void lost(long watchId, int status, String message) {
        NOTIFIER.execute(() -> {
            List<Listener> run;
            synchronized (this) {
                run = watchId == hold ? tell() : List.of();
            }
            if (!run.isEmpty()) {
                LOG.log(System.Logger.Level.DEBUG, "{0} lost (status {1}): {2}",
                        NativeClient.escape(String.valueOf(lock)), status,
                        NativeClient.escape(String.valueOf(message)));
            }
            runAll(run);
        });
    }

    /** The listeners to tell of the current hold's loss, once (empty when told already). */
    private List<Listener> tell() {
        if (told) {
            return List.of();
        }
        told = true;
        return new ArrayList<>(listeners);
    }

    /** Runs the listeners on the notifier thread (never on the caller's). */
    private void submit(List<Listener> run) {
        if (!run.isEmpty()) {
            NOTIFIER.execute(() -> runAll(run));
        }
    }

    /** Runs the listeners, on the notifier thread. */
    private void runAll(List<Listener> run) {
        for (Listener listener : run) {
            runOne(listener);
        }
    }

    /** Runs one listener, or hands it to its executor; what it throws is logged. */
    private void runOne(Listener listener) {
        try {
            if (listener.executor == null) {
                listener.action.run();
            } else {
                listener.executor.execute(() -> {
                    try {
                        listener.action.run();
                    } catch (Throwable t) {
                        logThrown(t);
                    }
                });
            }
        } catch (Throwable t) {
            logThrown(t);
        }
    }

    private void logThrown(Throwable t) {
        LOG.log(System.Logger.Level.WARNING,
                "an onLost listener of " + NativeClient.escape(String.valueOf(lock)) + " threw", t);
    }

    private static ThreadPoolExecutor notifier() {
        ThreadPoolExecutor executor = new ThreadPoolExecutor(1, 1, 60, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), runnable -> {
                    Thread thread = new Thread(runnable, "redlock-lost");
                    thread.setDaemon(true);
                    return thread;
                });
        executor.allowCoreThreadTimeOut(true);
        return executor;
    }
}
