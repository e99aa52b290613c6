package io.redlock;

import io.redlock.internal.RedlockNative;
import io.redlock.internal.RedlockNativeConstants;
import java.lang.ref.Cleaner;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A Redlock client: N independent Redis masters, their connections and the options. It makes
 * {@link RLock}s, which are acquired only when a majority of the nodes (N/2 + 1) granted them.
 *
 * <pre>{@code
 * try (Redlock client = Redlock.create("redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3")) {
 *     RLock lock = client.getLock("orders:42");
 *     if (lock.tryLock(2, 10, TimeUnit.SECONDS)) {
 *         try {
 *             // at most one holder among all clients, for 10 seconds unless extended
 *         } finally {
 *             lock.unlock();
 *         }
 *     }
 *     lock.onLost(() -> log.warn("lost orders:42"));
 *     lock.lock(); // no lease: kept (renewed by the library) until unlocked
 *     try {
 *         // ... check lock.isLost() before each write that needs the lock
 *     } finally {
 *         lock.unlock();
 *     }
 * }
 * }</pre>
 *
 * <p>Node URIs are {@code redis://[[user]:password@]host[:port][/db]} (and {@code rediss://}
 * over TLS), {@code unix://[[user]:password@]/path.sock[?db=N]}, and for a Sentinel group (one
 * node: its master, followed through failovers)
 * {@code redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]?sentinelMasterId=NAME};
 * connections are made on first use.
 * Options, by name, with their text values: those of the library, whose table
 * {@link #optionDefaults()} reads (docs/options.md says what each does), such as
 * {@code node_timeout_ms}, {@code key_prefix} or {@code watchdog_lease_ms} (the lease of the
 * locks that {@link RLock} keeps, those taken without a lease, renewed every third of it).
 *
 * <p>Events: the library's events (acquired, released, no_quorum, node_down, lost, ...) go to
 * the {@link System.Logger} named {@code io.redlock}, and so to whatever backend the service
 * uses (java.util.logging by default, or SLF4J, Log4j... through their System.LoggerFinder):
 * DEBUG for each lock and release, WARNING for nodes that fail and renewals that fail, ERROR
 * for a lost lock. The levels sent are those the logger takes when the client is made.
 *
 * <p>A client is thread-safe: any number of threads may use it and its locks at once.
 * {@link #close()}, from any thread, ends the waits for a lock under way and waits for the other
 * calls in progress, releases every lock still held (best effort: a node that does not answer
 * keeps its key until the lease ends), ends their renewal and frees the native client; every
 * later call, on the client or its locks, throws {@link ClientClosedException} at once (the
 * rule of every language: docs/locks.md, "A closed client"). A client that becomes unreachable
 * without being closed is closed by a {@link Cleaner} (its locks, unreachable too, are left to
 * expire).
 */
public final class Redlock implements AutoCloseable {
    /** Frees native memory whose Java owner became unreachable. */
    static final Cleaner CLEANER = Cleaner.create();

    private final NativeClient nativeClient;
    private final Cleaner.Cleanable cleanable;
    // The state that the RLocks of each name share, while any of them is reachable; an entry
    // is removed when its state is collected. Guarded by itself. The fair RLocks' apart.
    private final Map<String, WeakReference<LockState>> shared = new HashMap<>();
    private final Map<String, WeakReference<LockState>> sharedFair = new HashMap<>();

    private Redlock(NativeClient nativeClient) {
        this.nativeClient = nativeClient;
        this.cleanable = CLEANER.register(this, nativeClient::close);
    }

    /** A client for the nodes, with the default options. */
    public static Redlock create(String... nodes) {
        return create(Arrays.asList(Objects.requireNonNull(nodes, "nodes")), Map.of());
    }

    /**
     * A client for the nodes, with options by name. Throws InvalidArgumentException for a bad
     * URI, the same node twice or a bad option. {@code rediss://} nodes are reached over TLS
     * (the {@code tls_*} options); a failed handshake or certificate check is a TlsException.
     */
    public static Redlock create(List<String> nodes, Map<String, String> options) {
        Objects.requireNonNull(nodes, "nodes");
        Objects.requireNonNull(options, "options");
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("at least one node is needed");
        }
        for (String node : nodes) {
            Objects.requireNonNull(node, "a node URI is null");
        }
        options.forEach((name, value) -> {
            Objects.requireNonNull(name, "an option name is null");
            Objects.requireNonNull(value, "the value of option " + name + " is null");
        });
        return new Redlock(new NativeClient(nodes.toArray(new String[0]), options));
    }

    /**
     * What the client knows of each node, in the order of the URIs: its state, last error,
     * a recent round trip and counters since the client was made (see {@link NodeHealth}). No
     * I/O: it is what the calls so far have seen ({@link #ping()} refreshes it).
     */
    public List<NodeHealth> health() {
        return nativeClient().health();
    }

    /**
     * Sends PING to every node at once and waits for each (up to its deadline): the number of
     * nodes that answered and count towards a quorum. Throws NoQuorumException (or
     * AuthException) when fewer than a quorum do; {@link #health()} then says which and why.
     */
    public int ping() {
        return nativeClient().ping();
    }

    /** The current value of a library option, as text (InvalidArgumentException if unknown). */
    public String getOption(String name) {
        return nativeClient().getOption(Objects.requireNonNull(name, "name"));
    }

    /**
     * A lock on one resource name (the Redis key is key_prefix + name). The RLocks of one name
     * from this client share their holds, as Redisson's do: a thread holding the lock through
     * one of them acquires it again at once through another, and holds it until it has unlocked
     * it as many times, through any of them (see {@link RLock}).
     */
    public RLock getLock(String name) {
        nativeClient.checkOpen("getLock");
        return new RLock(this, sharedState(shared, checkName(name),
                n -> new LockState(new String[] {n})));
    }

    /**
     * The fair lock of one resource name, as Redisson's getFairLock: an {@link RLock} whose
     * waiters, from every client, get it in the order they arrived. It is the plain lock of the
     * name on the nodes (the same key): {@link #getLock} of the name and it exclude each other,
     * and a plain lock is taken without waiting its turn. Its RLocks from this client share
     * their holds, as getLock's do, but not with getLock's: a thread holding one that takes the
     * other waits for itself, as for any other holder. It has no fence.
     */
    public RLock getFairLock(String name) {
        nativeClient.checkOpen("getFairLock");
        return new RLock(this, sharedState(sharedFair, checkName(name), LockState::fair));
    }

    /**
     * A lock on several resources taken together: on each node all of them or none, and held
     * only when a majority of the nodes granted all of them. Names must be distinct. Each
     * multi-lock is a lock of its own, reentrant through this object only: it shares no hold
     * with the other locks of its names (a thread holding {@code getLock("a")} that takes
     * {@code getMultiLock("a", "b")} waits for itself, as for any other holder of "a").
     */
    public RLock getMultiLock(String... names) {
        nativeClient.checkOpen("getMultiLock");
        Objects.requireNonNull(names, "names");
        if (names.length == 0) {
            throw new IllegalArgumentException("at least one name is needed");
        }
        Set<String> seen = new HashSet<>();
        for (String name : names) {
            if (!seen.add(checkName(name))) {
                throw new IllegalArgumentException("the name " + name + " is given twice");
            }
        }
        return new RLock(this, new LockState(names.clone()));
    }

    /**
     * A read-write lock on one resource name: any number of readers or one writer (see
     * {@link RReadWriteLock}).
     */
    public RReadWriteLock getReadWriteLock(String name) {
        nativeClient.checkOpen("getReadWriteLock");
        return new RReadWriteLock(this, checkName(name));
    }

    /**
     * A semaphore of permits permits (1 to 10000) on one resource name: at most that many
     * holders at once, each permit with an id and a lease of its own (see
     * {@link RPermitExpirableSemaphore}). Every client of the name must give the same number.
     * InvalidArgumentException for a number out of range, as the library's.
     */
    public RPermitExpirableSemaphore getPermitExpirableSemaphore(String name, int permits) {
        nativeClient.checkOpen("getPermitExpirableSemaphore");
        return new RPermitExpirableSemaphore(this, checkName(name), permits);
    }

    /**
     * Runs action under the lock of name and returns what it returns: acquired waiting up to
     * waitTime (0: one attempt), with leaseTime as its lease (0 or less: kept, renewed while
     * action runs), and unlocked after, whatever action does. Throws {@link LockHeldException}
     * when someone else still held the lock after waitTime, {@link NoQuorumException} when too few
     * nodes answered, {@link InterruptedException} when interrupted while waiting, what action
     * throws, and {@link LockNotHeldException} when the lock was lost while action ran (unless
     * action threw: its exception goes on, with the loss suppressed in it).
     */
    public <T> T withLock(String name, long waitTime, long leaseTime, TimeUnit unit,
            Callable<T> action) throws Exception {
        Objects.requireNonNull(action, "action");
        RLock lock = getLock(name);
        boolean acquired = leaseTime > 0 ? lock.tryLock(waitTime, leaseTime, unit)
                : lock.tryLock(waitTime, unit);
        if (!acquired) {
            throw new LockHeldException(RedlockNativeConstants.REDLOCK_ELOCKED,
                    "withLock: " + name + " is held by someone else");
        }
        T result;
        try {
            result = action.call();
        } catch (Exception | Error failure) {
            try {
                lock.unlock();
            } catch (RedlockException lost) {
                failure.addSuppressed(lost);
            }
            throw failure;
        }
        lock.unlock();
        return result;
    }

    /**
     * Releases the locks still held (best effort), ends their renewal, closes the connections
     * and frees the native client; waits for a lock under way in other threads end with
     * {@link ClientClosedException}, and so does every later call. Closing twice does nothing.
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    /**
     * The node URIs of one string (an environment variable such as REDLOCK_NODES, a setting): a
     * comma followed by {@code scheme://} starts the next URI, so the commas between a Sentinel
     * URI's sentinels stay in it. The library splits it, and refuses an empty URI
     * (InvalidArgumentException).
     */
    public static List<String> splitNodes(String text) {
        Objects.requireNonNull(text, "text");
        List<String> uris = new ArrayList<>();
        for (long i = 0, n = RedlockNative.redlock_uri_list_count(text); i < n; i++) {
            uris.add(RedlockNative.redlock_java_uri_list_item(text, i));
        }
        return uris;
    }

    /**
     * Every option of the library with its default, as the text an option takes, in the
     * library's order (docs/options.md says what each does): read from the library's table.
     */
    public static Map<String, String> optionDefaults() {
        Map<String, String> defaults = new LinkedHashMap<>();
        for (long i = 0, n = RedlockNative.redlock_option_count(); i < n; i++) {
            String name = RedlockNative.redlock_option_name(i);
            defaults.put(name, RedlockNative.redlock_java_option_default(name));
        }
        return Collections.unmodifiableMap(defaults);
    }

    /** The native library's version, such as "1.3.0". */
    public static String version() {
        return RedlockNative.redlock_version_string();
    }

    NativeClient nativeClient() {
        return nativeClient;
    }

    /**
     * The state of name's RLocks in shared: the one they share, or a new one (made by make) when
     * none is reachable.
     */
    private static LockState sharedState(Map<String, WeakReference<LockState>> shared,
            String name, Function<String, LockState> make) {
        synchronized (shared) {
            WeakReference<LockState> ref = shared.get(name);
            LockState state = ref == null ? null : ref.get();
            if (state == null) {
                state = make.apply(name);
                WeakReference<LockState> added = new WeakReference<>(state);
                shared.put(name, added);
                CLEANER.register(state, forget(shared, name, added));
            }
            return state;
        }
    }

    /** The Cleaner's action for a collected state: it must not refer to the state. */
    private static Runnable forget(Map<String, WeakReference<LockState>> shared, String name,
            WeakReference<LockState> ref) {
        return () -> {
            synchronized (shared) {
                shared.remove(name, ref);
            }
        };
    }

    private static String checkName(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name must not be empty");
        }
        if (name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("a lock name must not contain NUL");
        }
        return name;
    }
}
