package bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the Java bench clients share: the bench command line, the timed loop,
 * process CPU time and the JSON figures (bench/README.md).
 */
public final class Harness {
    /** One lock+unlock; returns {lock ns, cycle ns}, or throws when it failed. */
    public interface Cycle {
        long[] run() throws Exception;
    }

    /**
     * One client's hold on a lock (handoff and contend modes): acquire, waiting
     * up to waitMs (false when it was not acquired by then), and release. The
     * calls of one acquisition come from the same thread.
     */
    public interface Actor {
        boolean lock(long waitMs) throws Exception;

        void unlock() throws Exception;
    }

    private final Map<String, String> opts = new HashMap<>();

    public Harness(String[] args) {
        opts.put("cycles", "1000");
        opts.put("warmup", "100");
        opts.put("lease", "10000");
        opts.put("keys", "1");
        opts.put("prefix", "bench");
        opts.put("variant", "");
        opts.put("mode", "cycle");
        opts.put("threads", "1");
        opts.put("seconds", "2");
        opts.put("hold-ms", "0");
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + args[i]);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        if (!opts.containsKey("nodes")) {
            throw new IllegalArgumentException("--nodes URI[,URI...] is required");
        }
    }

    public List<String> nodes() {
        return Arrays.asList(opts.get("nodes").split(","));
    }

    public int number(String name) {
        return Integer.parseInt(opts.get(name));
    }

    public String text(String name) {
        return opts.get(name);
    }

    /** The names of the resources of one lock: prefix:0 .. prefix:K-1. */
    public List<String> resources() {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < number("keys"); i++) {
            names.add(text("prefix") + ":" + i);
        }
        return names;
    }

    /** Many kept locks of one client (the kept scenario): take, count the lost, release. */
    public interface KeptLocks {
        void lockAll() throws Exception;

        long lost() throws Exception;

        void unlockHeld() throws Exception;
    }

    /**
     * The kept scenario's run (bench/c/kept.c's figures where a Java client has them): takes
     * the locks, holds them --seconds (the first half untouched, for the CPU; the second
     * sampling sockets), counts the lost, releases the others, and prints one JSON line. A
     * lock is renewed every renewalPeriodMs.
     */
    public void kept(String client, int nodes, double renewalPeriodMs, KeptLocks locks)
            throws Exception {
        int n = number("locks");
        long lease = number("lease");
        double seconds = Double.parseDouble(text("seconds"));
        System.gc();
        long rss0 = rssBytes();
        long t0 = System.nanoTime();
        locks.lockAll();
        double acquireS = (System.nanoTime() - t0) / 1e9;
        long rss1 = rssBytes();
        long holdMs = (long) (seconds * 1000);
        long cpu0 = cpuNanos();
        long start = System.nanoTime();
        Thread.sleep(holdMs / 2);
        long cpu = cpuNanos() - cpu0;
        double quietS = (System.nanoTime() - start) / 1e9;
        int maxSockets = 0;
        while ((System.nanoTime() - start) / 1_000_000 < holdMs) {
            Thread.sleep(100);
            maxSockets = Math.max(maxSockets, sockets());
        }
        long lost = locks.lost();
        t0 = System.nanoTime();
        locks.unlockHeld();
        double releaseS = (System.nanoTime() - t0) / 1e9;
        double renewals = n * quietS * 1000 / renewalPeriodMs;
        System.out.println(String.format(Locale.ROOT,
                "{\"client\": \"%s\", \"locks\": %d, \"nodes\": %d, \"lease_ms\": %d, "
                + "\"held_s\": %.1f, \"lost\": %d, \"acquire_s\": %.1f, \"release_s\": %.1f, "
                + "\"bytes_per_lock\": %.0f, \"max_sockets\": %d, \"cpu_ms_per_s\": %.1f, "
                + "\"cpu_ms_per_1000_renewals\": %.2f}",
                client, n, nodes, lease, seconds, lost, acquireS, releaseS,
                (double) (rss1 - rss0) / n, maxSockets, cpu / 1e6 / quietS,
                cpu / 1e6 / (renewals / 1000)));
    }

    /** The process's resident set, in bytes. */
    public static long rssBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return 0;
    }

    /** The process's open sockets. */
    public static int sockets() throws IOException {
        int n = 0;
        try (java.util.stream.Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : (Iterable<Path>) fds::iterator) {
                try {
                    n += Files.readSymbolicLink(fd).toString().startsWith("socket:") ? 1 : 0;
                } catch (IOException gone) {
                    // closed meanwhile
                }
            }
        }
        return n;
    }

    /** User and system CPU time of the whole JVM (every thread), in nanoseconds. */
    public static long cpuNanos() throws IOException {
        long[] us = cpuMicros();
        return (us[0] + us[1]) * 1000;
    }

    /** User and system CPU time of the whole JVM (every thread), in microseconds. */
    private static long[] cpuMicros() throws IOException {
        String stat = Files.readString(Path.of("/proc/self/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long usPerTick = 1_000_000 / 100; // Linux reports CPU time in USER_HZ = 100 ticks
        return new long[] {Long.parseLong(f[11]) * usPerTick, Long.parseLong(f[12]) * usPerTick};
    }

    /** Runs the warm-up, then the measured cycles, and prints the figures. */
    public void measure(String client, Cycle cycle) throws Exception {
        for (int i = 0; i < number("warmup"); i++) {
            try {
                cycle.run();
            } catch (Exception e) {
                // warming up: failures are not counted
            }
        }
        int cycles = number("cycles");
        StringBuilder lock = new StringBuilder();
        StringBuilder total = new StringBuilder();
        int ok = 0;
        int failed = 0;
        long[] cpu0 = cpuMicros();
        long w0 = System.nanoTime();
        for (int i = 0; i < cycles; i++) {
            long[] t;
            try {
                t = cycle.run();
            } catch (Exception e) {
                failed++;
                continue;
            }
            String sep = ok++ == 0 ? "" : ",";
            lock.append(sep).append(t[0]);
            total.append(sep).append(t[1]);
        }
        print(client, 1, ok, failed, cpu0, w0,
                ", \"lock_ns\": [" + lock + "], \"cycle_ns\": [" + total + "]");
    }

    /**
     * The handoff mode: holder and waiter (each its own client) on one
     * resource, the waiter on a thread of its own. Each round the holder locks,
     * the waiter starts waiting (up to the lease), the holder unlocks after
     * --hold-ms; the time from the unlock call to the waiter's lock returning,
     * over --warmup + --cycles rounds, is printed as handoff_ns.
     */
    public void handoff(String client, Actor holder, Actor waiter) throws Exception {
        int warmup = number("warmup");
        int rounds = warmup + number("cycles");
        long lease = number("lease");
        Semaphore go = new Semaphore(0);
        Semaphore done = new Semaphore(0);
        AtomicLong acquiredAt = new AtomicLong();
        Thread waiting = new Thread(() -> {
            for (int i = 0; i < rounds; i++) {
                go.acquireUninterruptibly();
                long t1 = -1;
                try {
                    if (waiter.lock(lease)) {
                        t1 = System.nanoTime();
                        waiter.unlock();
                    }
                } catch (Exception e) {
                    t1 = -1;
                }
                acquiredAt.set(t1);
                done.release();
            }
        });
        waiting.setDaemon(true);   // not left waiting should the holder fail
        waiting.start();
        StringBuilder handoffs = new StringBuilder();
        int ok = 0;
        int failed = 0;
        long[] cpu0 = null;
        long w0 = 0;
        for (int i = 0; i < rounds; i++) {
            if (i == warmup) {
                cpu0 = cpuMicros();
                w0 = System.nanoTime();
            }
            // The lease as the wait: the waiter's release may still be on its way.
            if (!holder.lock(lease)) {
                throw new IllegalStateException("the holder did not get the lock");
            }
            go.release();
            Thread.sleep(number("hold-ms"));
            long t0 = System.nanoTime();
            holder.unlock();
            done.acquire();
            long t1 = acquiredAt.get();
            if (i < warmup) {
                continue;
            }
            if (t1 < 0) {
                failed++;
            } else {
                handoffs.append(ok++ == 0 ? "" : ",").append(t1 - t0);
            }
        }
        print(client, 1, ok, failed, cpu0, w0, ", \"handoff_ns\": [" + handoffs + "]");
    }

    /**
     * The contend mode: --threads threads share one lock for --seconds, each
     * waiting for it, holding it --hold-ms, releasing it and asking again;
     * acquisitions per thread are printed as per_thread.
     */
    public void contend(String client, Actor shared) throws Exception {
        int threads = number("threads");
        long hold = number("hold-ms");
        long[] counts = new long[threads];
        long[] failures = new long[threads];
        long[] cpu0 = cpuMicros();
        long w0 = System.nanoTime();
        long stop = w0 + (long) (Double.parseDouble(text("seconds")) * 1e9);
        List<Thread> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int me = t;
            Thread thread = new Thread(() -> {
                long now;
                while ((now = System.nanoTime()) < stop) {
                    try {
                        if (shared.lock((stop - now) / 1_000_000)) {
                            counts[me]++;
                            Thread.sleep(hold);
                            shared.unlock();
                        }
                    } catch (Exception e) {
                        failures[me]++;
                    }
                }
            });
            thread.start();
            running.add(thread);
        }
        for (Thread thread : running) {
            thread.join();
        }
        int ok = (int) Arrays.stream(counts).sum();
        int failed = (int) Arrays.stream(failures).sum();
        print(client, threads, ok, failed, cpu0, w0,
                ", \"per_thread\": " + Arrays.toString(counts).replace(" ", ""));
    }

    /** Prints the figures of a run measured from w0 and cpu0, with its samples (extra). */
    private void print(String client, int threads, int ok, int failed, long[] cpu0, long w0,
            String extra) throws IOException {
        double wall = (System.nanoTime() - w0) / 1e9;
        long[] cpu1 = cpuMicros();
        System.out.printf(Locale.ROOT, "{\"client\": \"%s\", \"mode\": \"%s\", \"n\": %d, \"keys\": %d, "
                + "\"threads\": %d, \"ok\": %d, \"failed\": %d, \"cpu_user_us\": %d, "
                + "\"cpu_sys_us\": %d, \"wall_s\": %.6f%s}%n",
                client, text("mode"), nodes().size(), number("keys"), threads, ok, failed,
                cpu1[0] - cpu0[0], cpu1[1] - cpu0[1], wall, extra);
    }
}
