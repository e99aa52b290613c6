package bench;

import io.redlock.RLock;
import io.redlock.Redlock;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** libredlock from Java (the io.redlock binding) through the bench cycle. */
public final class OursBench {
    private OursBench() {}

    public static void main(String[] args) throws Exception {
        Harness h = new Harness(args);
        long lease = h.number("lease");
        try (Redlock client = Redlock.create(h.nodes(),
                Map.of("node_timeout_ms", Long.toString(lease / 20)))) {
            RLock lock = h.number("keys") == 1 ? client.getLock(h.resources().get(0))
                    : client.getMultiLock(h.resources().toArray(new String[0]));
            h.measure("ours-java", () -> {
                long t0 = System.nanoTime();
                if (!lock.tryLock(0, lease, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("not acquired");
                }
                long t1 = System.nanoTime();
                lock.unlock();
                return new long[] {t1 - t0, System.nanoTime() - t0};
            });
        }
    }
}
