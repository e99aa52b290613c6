package io.redlock;

import io.redlock.internal.RedlockNative;
import io.redlock.internal.RedlockNativeConstants;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * What a client knows of one node ({@link Redlock#health()}): its state as the calls so far
 * left it, its last error, a recent round trip, and counters since the client was made. The
 * library decodes and types every field, and says where the node has no value (an empty
 * {@link Optional}, null in {@link #fields()}), as for every language.
 */
public final class NodeHealth {
    // The fields of a node's health, in their order (redlock_health_field).
    private static final List<String> FIELDS = fieldNames();

    private final Map<String, Object> fields;

    private NodeHealth(Map<String, Object> fields) {
        this.fields = Collections.unmodifiableMap(fields);
    }

    private static List<String> fieldNames() {
        List<String> names = new ArrayList<>();
        String name = RedlockNative.redlock_health_field(0);
        while (name != null) {
            names.add(name);
            name = RedlockNative.redlock_health_field(names.size());
        }
        return Collections.unmodifiableList(names);
    }

    /** The node of index node (from 0) in text, from redlock_ctx_health, read field by field. */
    static NodeHealth read(String text, long node) {
        Map<String, Object> fields = new LinkedHashMap<>();
        for (String field : FIELDS) {
            fields.put(field, value(text, node, field));
        }
        return new NodeHealth(fields);
    }

    /** One field, as the library types it: null where the node has none. */
    private static Object value(String text, long node, String field) {
        int type = RedlockNative.redlock_health_type(text, node, field);
        if (type == RedlockNativeConstants.REDLOCK_TYPE_NONE) {
            return null;
        }
        String value = RedlockNative.redlock_java_health_value(text, node, field);
        if (type == RedlockNativeConstants.REDLOCK_TYPE_INT) {
            return Long.valueOf(value);
        }
        return type == RedlockNativeConstants.REDLOCK_TYPE_REAL ? Double.valueOf(value) : value;
    }

    /**
     * Every field of the node's health (docs/logging.md), by name in the library's order: a
     * String, a Long (counts and times) or a Double (rtt_ms), null where the node has none.
     */
    public Map<String, Object> fields() {
        return fields;
    }

    private long number(String key) {
        Object value = fields.get(key);
        return value instanceof Number ? ((Number) value).longValue() : 0;
    }

    private String text(String key, String otherwise) {
        Object value = fields.get(key);
        return value instanceof String ? (String) value : otherwise;
    }

    /** "host:port", "unix:path" or, for a Sentinel group, "NAME@host:port" of its first
     *  sentinel (never a password). */
    public String node() {
        return text("node", null);
    }

    /**
     * "unknown" (not contacted yet), "up", "slow", "down", "guarded", "auth_refused" or
     * "permission_denied" (its ACL refused a command or key: {@link #lastError()} says which).
     */
    public String state() {
        return text("state", null);
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
        Object rtt = fields.get("rtt_ms");
        return rtt instanceof Number ? OptionalDouble.of(((Number) rtt).doubleValue())
                : OptionalDouble.empty();
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
        return text("run_id", "");
    }

    /** Its Redis version, "7.0" ("0" before). */
    public String version() {
        return text("version", "0");
    }

    /** "master" (a redis://, rediss:// or unix:// node) or "sentinel" (a Sentinel group). */
    public String kind() {
        return text("kind", "master");
    }

    /**
     * The server a new connection goes to: the node's address, or a Sentinel group's master as
     * its sentinels last named it; empty before they have.
     */
    public Optional<String> server() {
        return Optional.ofNullable(text("server", null));
    }

    /** How the scripts go there: "functions" (FCALL), "eval" or "unknown" before it is known. */
    public String scripts() {
        return text("scripts", "unknown");
    }

    /**
     * Whether it runs scripts: "yes", "no" (plain locks go by plain commands there, and what needs
     * a script is refused: docs/servers.md) or "unknown" before it is known.
     */
    public String scripting() {
        return text("scripting", "unknown");
    }

    /** The last failure seen, if any (it stays once the node is back). */
    public Optional<String> lastError() {
        return Optional.ofNullable(text("last_error", null));
    }

    @Override
    public String toString() {
        return node() + " " + state() + (lastError().map(e -> " (" + e + ")").orElse(""));
    }
}
