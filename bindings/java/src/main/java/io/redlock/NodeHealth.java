package io.redlock;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * What a client knows of one node ({@link Redlock#health()}): its state as the calls so far
 * left it, its last error, a recent round trip, and counters since the client was made.
 */
public final class NodeHealth {
    private final Map<String, String> fields;

    private NodeHealth(Map<String, String> fields) {
        this.fields = fields;
    }

    /** One line of redlock_ctx_health: space-separated key=value fields, values percent-encoded. */
    static NodeHealth parse(String line) {
        Map<String, String> fields = new HashMap<>();
        for (String field : line.split(" ")) {
            int eq = field.indexOf('=');
            if (eq > 0) {
                fields.put(field.substring(0, eq), unescape(field.substring(eq + 1)));
            }
        }
        return new NodeHealth(fields);
    }

    private static String unescape(String value) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '%' && i + 2 < value.length()) {
                bytes.write(Integer.parseInt(value.substring(i + 1, i + 3), 16));
                i += 2;
            } else {
                bytes.write(c);
            }
        }
        return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
    }

    private long number(String key) {
        return Long.parseLong(fields.getOrDefault(key, "0"));
    }

    /** "host:port", "unix:path" or, for a Sentinel group, "NAME@host:port" of its first
     *  sentinel (never a password). */
    public String node() {
        return fields.get("node");
    }

    /**
     * "unknown" (not contacted yet), "up", "slow", "down", "guarded", "auth_refused" or
     * "permission_denied" (its ACL refused a command or key: {@link #lastError()} says which).
     */
    public String state() {
        return fields.get("state");
    }

    /** How long it has been in that state, in ms. */
    public long forMs() {
        return number("for_ms");
    }

    /** When down: in how many ms a connection will be tried again (0: at the next call). */
    public long retryInMs() {
        return number("retry_in_ms");
    }

    /** When guarded (it restarted): for how many ms its votes do not count yet. */
    public long guardMs() {
        return number("guard_ms");
    }

    /** A recent round trip in ms (an average of its replies' times); empty before any. */
    public OptionalDouble rttMs() {
        double rtt = Double.parseDouble(fields.getOrDefault("rtt_ms", "-1"));
        return rtt < 0 ? OptionalDouble.empty() : OptionalDouble.of(rtt);
    }

    /** Commands sent to the node since the client was made. */
    public long commands() {
        return number("commands");
    }

    /** Its failed parts of calls: no connection, no answer in time, an error reply. */
    public long failures() {
        return number("failures");
    }

    /** Among the failures, the deadlines that passed without an answer. */
    public long timeouts() {
        return number("timeouts");
    }

    /** The run_id its INFO gave ("" before). */
    public String runId() {
        return fields.getOrDefault("run_id", "");
    }

    /** Its Redis version, "7.0" ("0" before). */
    public String version() {
        return fields.getOrDefault("version", "0");
    }

    /** "master" (a redis://, rediss:// or unix:// node) or "sentinel" (a Sentinel group). */
    public String kind() {
        return fields.getOrDefault("kind", "master");
    }

    /**
     * The server a new connection goes to: the node's address, or a Sentinel group's master as
     * its sentinels last named it; empty before they have.
     */
    public Optional<String> server() {
        String server = fields.getOrDefault("server", "-");
        return server.equals("-") ? Optional.empty() : Optional.of(server);
    }

    /** The last failure seen, if any (it stays once the node is back). */
    public Optional<String> lastError() {
        String error = fields.getOrDefault("last_error", "");
        return error.isEmpty() ? Optional.empty() : Optional.of(error);
    }

    @Override
    public String toString() {
        return node() + " " + state() + (lastError().map(e -> " (" + e + ")").orElse(""));
    }
}
