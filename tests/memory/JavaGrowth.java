import io.redlock.RLock;
import io.redlock.Redlock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Memory growth of the Java binding over many lock/unlock cycles: after a warm-up, runs the
 * cycles (each: tryLock, unlock; every tenth also an extend, a refused tryLock and a
 * multi-lock), then checks that neither the Java heap after garbage collection (over all the
 * cycles) nor the process's resident set (the native core included; over their second half)
 * grew by more than a bound that one leaked object per cycle would exceed. A leak grows the
 * resident set in both halves alike; the JVM's own growth (code the JIT compiles late on a
 * busy machine, once 7 MB over all the cycles) comes mostly in the first.
 *
 * <p>Usage: java -cp redlock.jar JavaGrowth.java CYCLES URI...
 */
public final class JavaGrowth {
    private static final int WARM_UP = 10_000;
    /** Over the second half of the cycles: about 50 bytes a cycle for 100,000. */
    private static final long MAX_RSS_GROWTH = 5L * 1024 * 1024 / 2;
    private static final long MAX_HEAP_GROWTH = 1L * 1024 * 1024;

    private JavaGrowth() {}

    public static void main(String[] args) throws Exception {
        int cycles = Integer.parseInt(args[0]);
        List<String> nodes = Arrays.asList(args).subList(1, args.length);
        Map<String, String> options = Map.of("node_timeout_ms", "2000", "connect_timeout_ms", "2000");
        long heapGrowth;
        long rssGrowth;
        long firstHalf;
        try (Redlock client = Redlock.create(nodes, options);
                Redlock rival = Redlock.create(nodes, options)) {
            for (int i = 0; i < WARM_UP; i++) {
                cycle(client, rival, i);
            }
            long heapBefore = heapAfterGc();
            long rssBefore = rssBytes();
            for (int i = 0; i < cycles / 2; i++) {
                cycle(client, rival, i);
            }
            long rssHalf = rssBytes();
            for (int i = cycles / 2; i < cycles; i++) {
                cycle(client, rival, i);
            }
            heapGrowth = heapAfterGc() - heapBefore;
            rssGrowth = rssBytes() - rssHalf;
            firstHalf = rssHalf - rssBefore;
        }
        System.out.printf("%d cycles after %d to warm up: Java heap grew by %d bytes, "
                + "resident set by %d bytes in the first half and %d in the second%n", cycles,
                WARM_UP, heapGrowth, firstHalf, rssGrowth);
        if (heapGrowth > MAX_HEAP_GROWTH) {
            System.out.println("FAIL: the heap grew by more than " + MAX_HEAP_GROWTH + " bytes");
            System.exit(1);
        }
        if (rssGrowth > MAX_RSS_GROWTH) {
            System.out.println("FAIL: the resident set grew by more than " + MAX_RSS_GROWTH
                    + " bytes in the second half");
            System.exit(1);
        }
    }

    private static void cycle(Redlock client, Redlock rival, int i) throws InterruptedException {
        RLock lock = client.getLock("mem-growth");
        if (!lock.tryLock(0, 10, TimeUnit.SECONDS)) {
            throw new AssertionError("the lock was refused");
        }
        if (i % 10 == 0) {
            lock.extend(10, TimeUnit.SECONDS);
            if (rival.getLock("mem-growth").tryLock(0, 10, TimeUnit.SECONDS)) {
                throw new AssertionError("the rival took a held lock");
            }
            RLock multi = client.getMultiLock("mem-a", "mem-b", "mem-c");
            if (!multi.tryLock(0, 10, TimeUnit.SECONDS)) {
                throw new AssertionError("the multi-lock was refused");
            }
            multi.unlock();
        }
        lock.unlock();
    }

    /** Used heap once garbage collection (and the Cleaner's work) has settled. */
    private static long heapAfterGc() throws InterruptedException {
        Runtime runtime = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(100);
            used = Math.min(used, runtime.totalMemory() - runtime.freeMemory());
        }
        return used;
    }

    private static long rssBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IOException("no VmRSS in /proc/self/status");
    }
}
