package bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Drives Redisson through the bench's lock+unlock cycle (bench/README.md).
 * One Redisson client per node, each with its defaults. --variant:
 *   redlock    RedissonRedLock over the RLock of the resource on each node
 *              (keys must be 1);
 *   rlock      a plain RLock on the first node only (a single master);
 *   multilock  RedissonMultiLock over the RLocks of the K resources on every
 *              node (K x N locks, every one required: Redisson has no
 *              multi-resource Redlock).
 * tryLock(wait, lease) with wait = lease: the resources are free, so the
 * first attempt succeeds and nothing waits or retries; the lease is explicit,
 * so no watchdog runs.
 */
public final class RedissonBench {
    private RedissonBench() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness(args);
        List<RedissonClient> clients = new ArrayList<>();
        for (String uri : h.nodes()) {
            Config config = new Config();
            config.useSingleServer().setAddress(uri);
            clients.add(Redisson.create(config));
        }
        String variant = h.text("variant");
        List<RLock> parts = new ArrayList<>();
        for (String name : h.resources()) {
            for (RedissonClient c : variant.equals("rlock") ? clients.subList(0, 1) : clients) {
                parts.add(c.getLock(name));
            }
        }
        RLock[] locks = parts.toArray(new RLock[0]);
        RLock lock;
        switch (variant) {
            case "redlock":
                lock = new RedissonRedLock(locks);
                break;
            case "rlock":
                lock = locks[0];
                break;
            case "multilock":
                lock = new RedissonMultiLock(locks);
                break;
            default:
                throw new IllegalArgumentException("--variant redlock|rlock|multilock");
        }
        long lease = h.number("lease");
        try {
            h.measure("redisson-" + variant, () -> {
                long t0 = System.nanoTime();
                if (!lock.tryLock(lease, lease, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("not acquired");
                }
                long t1 = System.nanoTime();
                lock.unlock();
                return new long[] {t1 - t0, System.nanoTime() - t0};
            });
        } finally {
            clients.forEach(RedissonClient::shutdown);
        }
    }
}
