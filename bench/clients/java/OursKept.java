package bench;

import io.redlock.RLock;
import io.redlock.Redlock;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Many kept locks held by one client through the Java binding (the bench
 * scenario "kept", beside bench/c/kept.c): --locks locks taken with lock()
 * (renewed by the library's thread, watchdog_lease_ms = --lease) on every
 * node, held --seconds, then released. Prints one JSON object with kept.c's
 * figures: lost locks (isLost), memory per lock (the resident set's growth,
 * the JVM's heap included), sockets, CPU while it only held them.
 */
public final class OursKept {
    private OursKept() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness(args);
        int n = h.number("locks");
        long lease = h.number("lease");
        double seconds = Double.parseDouble(h.text("seconds"));
        try (Redlock client = Redlock.create(h.nodes(),
                Map.of("watchdog_lease_ms", Long.toString(lease)))) {
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
                lost += lock.isLost() ? 1 : 0;
            }
            t0 = System.nanoTime();
            for (RLock lock : locks) {
                if (!lock.isLost()) {
                    lock.unlock();
                }
            }
            double releaseS = (System.nanoTime() - t0) / 1e9;
            double renewals = n * quietS * 1000 / (lease / 3.0 - lease / 24.0);
            System.out.println(String.format(Locale.ROOT,
                    "{\"client\": \"ours-java\", \"locks\": %d, \"nodes\": %d, "
                    + "\"lease_ms\": %d, \"held_s\": %.1f, \"lost\": %d, \"acquire_s\": %.1f, "
                    + "\"release_s\": %.1f, \"bytes_per_lock\": %.0f, \"max_sockets\": %d, "
                    + "\"cpu_ms_per_s\": %.1f, \"cpu_ms_per_1000_renewals\": %.2f}",
                    n, h.nodes().size(), lease, seconds, lost, acquireS, releaseS,
                    (double) (rss1 - rss0) / n, maxSockets, cpu / 1e6 / quietS,
                    cpu / 1e6 / (renewals / 1000)));
        }
    }
}
