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

/**
 * What the Java bench clients share: the bench command line, the timed loop,
 * process CPU time and the JSON figures (bench/README.md).
 */
public final class Harness {
    /** One lock+unlock; returns {lock ns, cycle ns}, or throws when it failed. */
    public interface Cycle {
        long[] run() throws Exception;
    }

    private final Map<String, String> opts = new HashMap<>();

    public Harness(String[] args) {
        opts.put("cycles", "1000");
        opts.put("warmup", "100");
        opts.put("lease", "10000");
        opts.put("keys", "1");
        opts.put("prefix", "bench");
        opts.put("variant", "");
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
        double wall = (System.nanoTime() - w0) / 1e9;
        long[] cpu1 = cpuMicros();
        System.out.printf(Locale.ROOT, "{\"client\": \"%s\", \"mode\": \"cycle\", \"n\": %d, \"keys\": %d, "
                + "\"threads\": 1, \"ok\": %d, \"failed\": %d, \"cpu_user_us\": %d, "
                + "\"cpu_sys_us\": %d, \"wall_s\": %.6f, \"lock_ns\": [%s], \"cycle_ns\": [%s]}%n",
                client, nodes().size(), number("keys"), ok, failed, cpu1[0] - cpu0[0],
                cpu1[1] - cpu0[1], wall, lock, total);
    }
}
