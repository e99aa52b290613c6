package bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
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
            long rss0 = Harness.rssBytes();
            long t0 = System.nanoTime();
            for (RLock lock : locks) {
                lock.lock();
            }
            double acquireS = (System.nanoTime() - t0) / 1e9;
            long rss1 = Harness.rssBytes();
            // The first half only holds (CPU), the second samples sockets too.
            long holdMs = (long) (seconds * 1000);
            long cpu0 = Harness.cpuNanos();
            long start = System.nanoTime();
            Thread.sleep(holdMs / 2);
            long cpu = Harness.cpuNanos() - cpu0;
            double quietS = (System.nanoTime() - start) / 1e9;
            int maxSockets = 0;
            while ((System.nanoTime() - start) / 1_000_000 < holdMs) {
                Thread.sleep(100);
                maxSockets = Math.max(maxSockets, Harness.sockets());
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
