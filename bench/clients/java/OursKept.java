package bench;

import io.redlock.RLock;
import io.redlock.Redlock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Many kept locks held by one client through the Java binding (the bench
 * scenario "kept", beside bench/c/kept.c): --locks locks taken with lock()
 * (renewed by the library's thread, watchdog_lease_ms = --lease) on every
 * node, held --seconds, then released (Harness.kept). A lock is lost when
 * isLost() says so; memory per lock is the resident set's growth, the JVM's
 * heap included.
 */
public final class OursKept {
    private OursKept() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness(args);
        long lease = h.number("lease");
        try (Redlock client = Redlock.create(h.nodes(),
                Map.of("watchdog_lease_ms", Long.toString(lease)))) {
            List<RLock> locks = new ArrayList<>();
            for (int i = 0; i < h.number("locks"); i++) {
                locks.add(client.getLock(h.text("prefix") + ":" + i));
            }
            // A lock is renewed a third of its lease after the last, less its spread.
            h.kept("ours-java", h.nodes().size(), lease / 3.0 - lease / 24.0,
                    new Harness.KeptLocks() {
                        @Override
                        public void lockAll() {
                            locks.forEach(RLock::lock);
                        }

                        @Override
                        public long lost() {
                            return locks.stream().filter(RLock::isLost).count();
                        }

                        @Override
                        public void unlockHeld() {
                            locks.stream().filter(lock -> !lock.isLost()).forEach(RLock::unlock);
                        }
                    });
        }
    }
}
