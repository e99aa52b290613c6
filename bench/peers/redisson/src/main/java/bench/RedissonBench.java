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
 * Drives Redisson through the bench's modes (bench/README.md). One Redisson
 * client per node, each with its defaults. --variant:
 *   redlock    RedissonRedLock over the RLock of the resource on each node
 *              (keys must be 1);
 *   rlock      a plain RLock on the first node only (a single master);
 *   multilock  RedissonMultiLock over the RLocks of the K resources on every
 *              node (K x N locks, every one required: Redisson has no
 *              multi-resource Redlock).
 * --mode:
 *   cycle      lock+unlock with tryLock(wait, lease), wait = lease: the
 *              resources are free, so the first attempt succeeds and nothing
 *              waits or retries;
 *   handoff    a holder and a waiter, each with its own Redisson clients, so
 *              the release reaches the waiter through the node (pub/sub);
 *   contend    --threads threads share the clients and the lock, each waiting
 *              with tryLock(wait, lease) (Redisson's locks belong to a thread).
 * The lease is explicit in every mode, so no watchdog runs.
 */
public final class RedissonBench {
    private RedissonBench() {}

    private static List<RedissonClient> connect(List<String> nodes) {
        List<RedissonClient> clients = new ArrayList<>();
        for (String uri : nodes) {
            Config config = new Config();
            config.useSingleServer().setAddress(uri);
            clients.add(Redisson.create(config));
        }
        return clients;
    }

    /** The lock of the variant over the resources, on these clients. */
    private static RLock lockOf(String variant, List<RedissonClient> clients, List<String> names) {
        List<RLock> parts = new ArrayList<>();
        for (String name : names) {
            for (RedissonClient c : variant.equals("rlock") ? clients.subList(0, 1) : clients) {
                parts.add(c.getLock(name));
            }
        }
        RLock[] locks = parts.toArray(new RLock[0]);
        switch (variant) {
            case "redlock":
                return new RedissonRedLock(locks);
            case "rlock":
                return locks[0];
            case "multilock":
                return new RedissonMultiLock(locks);
            default:
                throw new IllegalArgumentException("--variant redlock|rlock|multilock");
        }
    }

    private static Harness.Actor actor(RLock lock, long lease) {
        return new Harness.Actor() {
            @Override
            public boolean lock(long waitMs) throws InterruptedException {
                return lock.tryLock(waitMs, lease, TimeUnit.MILLISECONDS);
            }

            @Override
            public void unlock() {
                lock.unlock();
            }
        };
    }

    public static void main(String[] args) throws Exception {
        Harness h = new Harness(args);
        String variant = h.text("variant");
        String client = "redisson-" + variant;
        long lease = h.number("lease");
        List<RedissonClient> clients = connect(h.nodes());
        List<RedissonClient> others = new ArrayList<>();
        try {
            RLock lock = lockOf(variant, clients, h.resources());
            switch (h.text("mode")) {
                case "cycle":
                    h.measure(client, () -> {
                        long t0 = System.nanoTime();
                        if (!lock.tryLock(lease, lease, TimeUnit.MILLISECONDS)) {
                            throw new IllegalStateException("not acquired");
                        }
                        long t1 = System.nanoTime();
                        lock.unlock();
                        return new long[] {t1 - t0, System.nanoTime() - t0};
                    });
                    break;
                case "handoff":
                    others.addAll(connect(h.nodes()));
                    h.handoff(client, actor(lock, lease),
                            actor(lockOf(variant, others, h.resources()), lease));
                    break;
                case "contend":
                    h.contend(client, actor(lock, lease));
                    break;
                default:
                    throw new IllegalArgumentException("--mode cycle|handoff|contend");
            }
        } finally {
            clients.forEach(RedissonClient::shutdown);
            others.forEach(RedissonClient::shutdown);
        }
    }
}
