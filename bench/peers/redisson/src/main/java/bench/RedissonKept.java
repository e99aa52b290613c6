package bench;

import java.util.ArrayList;
import java.util.List;
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
        long lease = h.number("lease");
        Config config = new Config();
        config.useSingleServer().setAddress(h.nodes().get(0));
        config.setLockWatchdogTimeout(lease);
        RedissonClient client = Redisson.create(config);
        try {
            List<RLock> locks = new ArrayList<>();
            for (int i = 0; i < h.number("locks"); i++) {
                locks.add(client.getLock(h.text("prefix") + ":" + i));
            }
            // The watchdog renews a lock every third of its timeout.
            h.kept("redisson-rlock", 1, lease / 3.0, new Harness.KeptLocks() {
                @Override
                public void lockAll() {
                    locks.forEach(RLock::lock);
                }

                @Override
                public long lost() {
                    return locks.stream().filter(lock -> !lock.isHeldByCurrentThread()).count();
                }

                @Override
                public void unlockHeld() {
                    locks.stream().filter(RLock::isHeldByCurrentThread).forEach(RLock::unlock);
                }
            });
        } finally {
            client.shutdown();
        }
    }
}
