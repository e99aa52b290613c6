import io.redlock.NoQuorumException;
import io.redlock.RLock;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import java.io.BufferedInputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A contender of the mutual-exclusion run, in Java (the redlock binding).
 *
 * <pre>java MutexClient HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS WAIT_MS KIND PERMITS
 *                  [OPTIONS [UNTIL_MS]]</pre>
 *
 * The same arguments and the same JSON lines as client.c, for KIND lock or rw (no semaphore:
 * PERMITS is ignored); OPTIONS the library's options, NAME=VALUE,... ("-" for none;
 * fencing=1 records each section's fence), UNTIL_MS (above 0) the wall-clock deadline in ms
 * after which no attempt starts.
 */
public final class MutexClient {
    /** The rest between two attempts, as in client.c. */
    private static final long THINK_MS = 20;
    /** The share of readers in a rw run, as in client.c. */
    private static final int READ_PERCENT = 60;

    /** GET and SET on the counter server, in plain RESP. */
    static final class Counter {
        private final OutputStream out;
        private final InputStream in;

        Counter(int port) throws IOException {
            Socket socket = new Socket("127.0.0.1", port);
            out = socket.getOutputStream();
            in = new BufferedInputStream(socket.getInputStream());
        }

        private String line() throws IOException {
            StringBuilder text = new StringBuilder();
            for (int c = in.read(); c != '\n'; c = in.read()) {
                if (c < 0) {
                    throw new IOException("the counter server closed the connection");
                }
                if (c != '\r') {
                    text.append((char) c);
                }
            }
            return text.toString();
        }

        private String call(String... args) throws IOException {
            StringBuilder command = new StringBuilder("*" + args.length + "\r\n");
            for (String arg : args) {
                command.append('$').append(arg.getBytes(StandardCharsets.UTF_8).length)
                        .append("\r\n").append(arg).append("\r\n");
            }
            out.write(command.toString().getBytes(StandardCharsets.UTF_8));
            String reply = line();
            if (reply.startsWith("-")) {
                throw new IOException(reply);
            }
            if (reply.startsWith("$") && !reply.equals("$-1")) {
                return line();
            }
            return reply.startsWith("$") ? null : reply;
        }

        void bump(String resource) throws IOException, InterruptedException {
            String value = call("GET", "counter:" + resource);
            Thread.sleep(2);
            long next = (value == null ? 0 : Long.parseLong(value)) + 1;
            call("SET", "counter:" + resource, Long.toString(next));
        }

        /** A reader's look: GET, then the writer's pause. */
        void peek(String resource) throws IOException, InterruptedException {
            call("GET", "counter:" + resource);
            Thread.sleep(2);
        }
    }

    private static long nowNs() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private static String codeOf(RedlockException e) {
        return e instanceof NoQuorumException ? "noquorum" : e.getClass().getSimpleName();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 10 || args.length > 12
                || !(args[8].equals("lock") || args[8].equals("rw"))) {
            System.err.println("usage: MutexClient HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS"
                    + " WAIT_MS lock|rw PERMITS [OPTIONS [UNTIL_MS]]");
            System.exit(64);
        }
        Map<String, String> options = new HashMap<>();
        options.put("node_timeout_ms", "100");
        options.put("max_lease_ms", args[6]);
        if (args.length > 10 && !args[10].equals("-")) {
            for (String pair : args[10].split(",")) {
                if (!pair.isEmpty()) {
                    String[] nameValue = pair.split("=", 2);
                    options.put(nameValue[0], nameValue.length > 1 ? nameValue[1] : "");
                }
            }
        }
        boolean fencing = "1".equals(options.get("fencing"));
        long untilMs = args.length > 11 ? Long.parseLong(args[11]) : 0;
        boolean rw = args[8].equals("rw");
        String holder = args[0];
        int resources = Integer.parseInt(args[4]);
        int ops = Integer.parseInt(args[5]);
        long leaseMs = Long.parseLong(args[6]);
        long waitMs = Long.parseLong(args[7]);
        Counter counter = new Counter(Integer.parseInt(args[3]));
        int failures = 0;
        // A comma followed by "scheme://" starts the next URI (a Sentinel
        // URI has commas of its own).
        List<String> nodes = Arrays.asList(args[2].split(",(?=\\s*[A-Za-z][A-Za-z0-9+.-]*://)"));
        try (Redlock client = Redlock.create(nodes, options);
             PrintWriter out = new PrintWriter(new FileWriter(args[1], true))) {
            for (int op = 0; op < ops; op++) {
                if (op > 0) {
                    Thread.sleep(THINK_MS);
                }
                if (untilMs > 0 && System.currentTimeMillis() >= untilMs) {
                    break;
                }
                String resource = "r" + ThreadLocalRandom.current().nextInt(resources);
                // A writer (or a lock) bumps the counter; a reader only reads it.
                boolean write = !rw || ThreadLocalRandom.current().nextInt(100) >= READ_PERCENT;
                String head = "{\"holder\":\"" + holder + "\",\"lang\":\"java\",\"resource\":\""
                        + resource + "\"," + (!rw ? "" : write ? "\"mode\":\"write\","
                        : "\"mode\":\"read\",");
                RLock lock = !rw ? client.getLock(resource)
                        : write ? client.getReadWriteLock(resource).writeLock()
                        : client.getReadWriteLock(resource).readLock();
                long asked = nowNs();
                boolean acquired;
                String result = "locked";
                try {
                    acquired = lock.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS);
                } catch (RedlockException e) {
                    acquired = false;
                    result = codeOf(e);
                }
                if (!acquired) {
                    out.println(head + "\"start_ns\":" + asked + ",\"end_ns\":" + nowNs()
                            + ",\"validity_ms\":0,\"ok\":false,\"result\":\"" + result + "\"}");
                    continue;
                }
                long start = nowNs();
                long validity = lock.remainingValidity(TimeUnit.MILLISECONDS);
                String fenced = fencing ? ",\"fence\":" + lock.getFence() : "";
                boolean done = true;
                try {
                    if (write) {
                        counter.bump(resource);
                    } else {
                        counter.peek(resource);
                    }
                } catch (IOException e) {
                    done = false;
                    failures++;
                }
                long end = nowNs();
                String unlock = "ok";
                try {
                    lock.unlock();
                } catch (RedlockException e) {
                    unlock = codeOf(e);
                }
                out.println(head + "\"start_ns\":" + start + ",\"end_ns\":" + end
                        + ",\"validity_ms\":" + validity + ",\"ok\":true,\"result\":\"ok\""
                        + (write ? ",\"wrote\":" : ",\"read\":") + done + fenced
                        + ",\"unlock\":\"" + unlock + "\"}");
            }
        }
        System.exit(failures == 0 ? 0 : 1);
    }
}
