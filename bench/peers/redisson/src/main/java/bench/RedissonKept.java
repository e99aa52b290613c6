package bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Many kept locks held by one Redisson client (the bench scenario "kept",
 * beside bench/c/kept.c): --locks RLocks on the first node, each taken with
 * lock() and so renewed by Redisson's watchdog (lockWatchdogTimeout = --lease),
 * held --seconds, then released. Prints one JSON object with kept.c's
 * figures where Redisson has them: a lock is lost when, at the end, it is no
 * longer held by this thread on the node; memory is the resident set's
 * growth per lock; CPU is the process's while it only held them.
 */
public final class RedissonKept {
    private RedissonKept() {}

    private static long rssBytes() throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return 0;
    }

    private static int sockets() throws IOException {
        int n = 0;
        try (Stream<Path> fds = Files.list(Paths.get("/proc/self/fd"))) {
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

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    public static void main(String[] args) throws Exception {
        Harness h = new Harness(args);
        int n = h.number("locks");
        long lease = h.number("lease");
        double seconds = Double.parseDouble(h.text("seconds"));
        Config config = new Config();
        config.useSingleServer().setAddress(h.nodes().get(0));
        config.setLockWatchdogTimeout(lease);
        RedissonClient client = Redisson.create(config);
        try {
            List<RLock> locks = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                locks.add(client.getLock(h.text("prefix") + ":" + i));
            }
            System.gc();
            long rss0 = rssBytes();
            long t0 = System.nanoTime();
            for (RLock lock : locks) {
                lock.lock();
            }
            double acquireS = (System.nanoTime() - t0) / 1e9;
            long rss1 = rssBytes();
            // The first half only holds (CPU), the second samples sockets too.
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
            long lost = 0;
            for (RLock lock : locks) {
                lost += lock.isHeldByCurrentThread() ? 0 : 1;
            }
            t0 = System.nanoTime();
            for (RLock lock : locks) {
                if (lock.isHeldByCurrentThread()) {
                    lock.unlock();
                }
            }
            double releaseS = (System.nanoTime() - t0) / 1e9;
            double renewals = n * quietS * 1000 / (lease / 3.0);
            System.out.println(String.format(Locale.ROOT,
                    "{\"client\": \"redisson-rlock\", \"locks\": %d, \"nodes\": 1, "
                    + "\"lease_ms\": %d, \"held_s\": %.1f, \"lost\": %d, \"acquire_s\": %.1f, "
                    + "\"release_s\": %.1f, \"bytes_per_lock\": %.0f, \"max_sockets\": %d, "
                    + "\"cpu_ms_per_s\": %.1f, \"cpu_ms_per_1000_renewals\": %.2f}",
                    n, lease, seconds, lost, acquireS, releaseS, (double) (rss1 - rss0) / n,
                    maxSockets, cpu / 1e6 / quietS, cpu / 1e6 / (renewals / 1000)));
        } finally {
            client.shutdown();
        }
    }
}
