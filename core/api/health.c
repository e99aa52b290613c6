/* health.c - redlock_ctx_health: what the client knows of each node, as text, and
 * redlock_health_*: that text read back field by field (see redlock.h). */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "driver.h"
#include "conn.h"
#include "node.h"

/* Values are cut to these many bytes once encoded, so a line always fits
 * REDLOCK_HEALTH_LINE_MAX (the other fields are numbers, names and a run_id). */
#define LABEL_MAX 100
#define ERROR_MAX 160

/* Copies s into out (room for max bytes and a NUL), percent-encoding
 * spaces, '%', control characters and bytes beyond ASCII (the text is
 * ASCII); an escape that does not fit whole is left out with the rest. */
static void encode(char *out, size_t max, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c > ' ' && c < 0x7f && c != '%') {
            if (n + 1 > max)
                break;
            out[n++] = (char)c;
        } else {
            if (n + 3 > max)
                break;
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n] = '\0';
}

/* How the node runs the scripts, as the last connection to ask found. */
static const char *scripts_way_name(rl_node *node)
{
    switch (atomic_load(&node->scripts_way)) {
    case RL_SCRIPTS_FUNCTIONS: return "functions";
    case RL_SCRIPTS_EVAL:      return "eval";
    default:                   return "unknown";
    }
}

/* The native commands the node takes (node.h), as its last INFO said and
 * no refusal since took back: "ifeq,delifeq", one of them, "none", or
 * "unknown" before any INFO. */
static const char *native_name(rl_node *node)
{
    int native = rl_node_native(node);
    if (native < 0)
        return "unknown";
    switch (native & (RL_NATIVE_IFEQ | RL_NATIVE_DELIFEQ)) {
    case RL_NATIVE_IFEQ | RL_NATIVE_DELIFEQ: return "ifeq,delifeq";
    case RL_NATIVE_IFEQ:                     return "ifeq";
    case RL_NATIVE_DELIFEQ:                  return "delifeq";
    default:                                 return "none";
    }
}

/* Whether the node runs scripts (node.h): "yes" once one ran there, "no"
 * once a reply said none can (plain locks go by plain commands), "unknown"
 * before either, and again after a restart. */
static const char *scripting_name(rl_node *node)
{
    int scripting = rl_node_scripting(node, NULL, 0);
    return scripting > 0 ? "yes" : scripting == 0 ? "no" : "unknown";
}

/* The fields of a line, in their order (redlock_health_field), each with
 * its type and the text that means it has no value (NULL: never none). */
enum {
    F_NODE, F_STATE, F_FOR, F_RETRY_IN, F_GUARD, F_RTT, F_COMMANDS, F_FAILURES, F_TIMEOUTS,
    F_RUN_ID, F_VERSION, F_KIND, F_SERVER, F_LAST_ERROR, F_CONNS, F_SCRIPTS, F_NATIVE,
    F_SCRIPTING, N_FIELDS
};
static const struct field {
    const char *name;
    int type;
    const char *none;
} fields[N_FIELDS] = {
    [F_NODE] = {"node", REDLOCK_TYPE_TEXT, NULL},
    [F_STATE] = {"state", REDLOCK_TYPE_TEXT, NULL},
    [F_FOR] = {"for_ms", REDLOCK_TYPE_INT, NULL},
    [F_RETRY_IN] = {"retry_in_ms", REDLOCK_TYPE_INT, NULL},
    [F_GUARD] = {"guard_ms", REDLOCK_TYPE_INT, NULL},
    [F_RTT] = {"rtt_ms", REDLOCK_TYPE_REAL, "-1"},
    [F_COMMANDS] = {"commands", REDLOCK_TYPE_INT, NULL},
    [F_FAILURES] = {"failures", REDLOCK_TYPE_INT, NULL},
    [F_TIMEOUTS] = {"timeouts", REDLOCK_TYPE_INT, NULL},
    [F_RUN_ID] = {"run_id", REDLOCK_TYPE_TEXT, NULL},
    [F_VERSION] = {"version", REDLOCK_TYPE_TEXT, NULL},
    [F_KIND] = {"kind", REDLOCK_TYPE_TEXT, NULL},
    [F_SERVER] = {"server", REDLOCK_TYPE_TEXT, "-"},
    [F_LAST_ERROR] = {"last_error", REDLOCK_TYPE_TEXT, ""},
    [F_CONNS] = {"conns", REDLOCK_TYPE_INT, NULL},
    [F_SCRIPTS] = {"scripts", REDLOCK_TYPE_TEXT, NULL},
    [F_NATIVE] = {"native", REDLOCK_TYPE_TEXT, NULL},
    [F_SCRIPTING] = {"scripting", REDLOCK_TYPE_TEXT, NULL},
};

/* One node's line, into line (REDLOCK_HEALTH_LINE_MAX bytes); its length. */
static size_t node_line(const rl_client *ctx, rl_node *node, int64_t now, char *line)
{
    char label[LABEL_MAX + 1], error[ERROR_MAX + 1], run_id[41], version[16];
    char server[LABEL_MAX + 1], resolved[LABEL_MAX + 1];
    char numbers[N_FIELDS][24];
    const char *value[N_FIELDS];
    rl_node_server(node, resolved, sizeof resolved);
    encode(server, LABEL_MAX, resolved[0] ? resolved : fields[F_SERVER].none);
    pthread_mutex_lock(&node->mu);
    rl_node_state state = (rl_node_state)atomic_load(&node->state);
    int64_t since = node->state_since, down_until = node->down_until;
    int v = node->version;
    memcpy(run_id, node->run_id, sizeof run_id);
    encode(error, ERROR_MAX, node->last_error);
    pthread_mutex_unlock(&node->mu);
    encode(label, LABEL_MAX, node->addr.label);

    int64_t guard = ctx->opt.restart_guard ? rl_node_guard_left(node, now) : 0;
    const char *name = state == RL_NODE_UP && guard > 0 ? "guarded" : rl_node_state_name(state);
    /* Busy: the client could not keep up with it lately (node_busy). */
    bool busy = atomic_load(&((rl_client *)ctx)->conns[node->index].busy_until) > now;
    if (busy && (state == RL_NODE_UP || state == RL_NODE_SLOW))
        name = "busy";
    int64_t rtt_us = atomic_load_explicit(&node->rtt_us, memory_order_relaxed);
    if (rtt_us < 0)
        snprintf(numbers[F_RTT], sizeof numbers[F_RTT], "%s", fields[F_RTT].none);
    else
        snprintf(numbers[F_RTT], sizeof numbers[F_RTT], "%lld.%lld", (long long)(rtt_us / 1000),
                 (long long)(rtt_us % 1000 / 100));
    if (v > 0)
        snprintf(version, sizeof version, "%d.%d", v / 100, v % 100);
    else
        snprintf(version, sizeof version, "0");
    unsigned long long counts[N_FIELDS] = {
        [F_FOR] = (unsigned long long)(since == INT64_MIN ? 0 : now - since),
        [F_RETRY_IN] = (unsigned long long)(state == RL_NODE_DOWN && down_until > now
                                            ? down_until - now : 0),
        [F_GUARD] = (unsigned long long)(state == RL_NODE_UP ? guard : 0),
        [F_COMMANDS] = atomic_load(&node->commands),
        [F_FAILURES] = atomic_load(&node->failures),
        [F_TIMEOUTS] = atomic_load(&node->timeouts),
        [F_CONNS] = (unsigned long long)rl_conn_count(ctx, node->index),
    };
    for (int f = 0; f < N_FIELDS; f++) {
        if (fields[f].type == REDLOCK_TYPE_INT) {
            snprintf(numbers[f], sizeof numbers[f], "%llu", counts[f]);
            value[f] = numbers[f];
        }
    }
    value[F_NODE] = label;
    value[F_STATE] = name;
    value[F_RTT] = numbers[F_RTT];
    value[F_RUN_ID] = run_id;
    value[F_VERSION] = version;
    value[F_KIND] = node->addr.kind == RL_NODE_SENTINEL ? "sentinel"
                  : node->addr.kind == RL_NODE_CLUSTER ? "cluster" : "master";
    value[F_SERVER] = server;
    value[F_LAST_ERROR] = error;
    value[F_SCRIPTS] = scripts_way_name(node);
    value[F_NATIVE] = native_name(node);
    value[F_SCRIPTING] = scripting_name(node);

    /* Only counters near their 20 digits beside the longest label, address
     * and error fill the line: it is cut there, and still ends a line. */
    size_t w = 0;
    for (int f = 0; f < N_FIELDS && w < REDLOCK_HEALTH_LINE_MAX - 1; f++) {
        int n = snprintf(line + w, REDLOCK_HEALTH_LINE_MAX - 1 - w, "%s%s=%s", f ? " " : "",
                         fields[f].name, value[f]);
        w += n < 0 ? 0 : (size_t)n;
    }
    if (w > REDLOCK_HEALTH_LINE_MAX - 2)
        w = REDLOCK_HEALTH_LINE_MAX - 2;
    line[w++] = '\n';
    line[w] = '\0';
    return w;
}

int redlock_ctx_health(const redlock_ctx *pair, char *buf, size_t buflen)
{
    const rl_client *ctx = pair ? &pair->client : NULL;
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!buf)
        return rl_fail(REDLOCK_EINVAL, "buf is NULL");
    if (buflen == 0)
        return rl_fail(REDLOCK_EINVAL, "buf is too small: 0 bytes given");
    int64_t now = rl_now_ms();
    size_t used = 0;
    char line[REDLOCK_HEALTH_LINE_MAX];
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        size_t len = node_line(ctx, &ctx->nodes[i], now, line);
        if (used + len + 1 > buflen) {
            buf[0] = '\0';
            return rl_fail(REDLOCK_EINVAL, "buf is too small: %zu bytes given, %zu needed at "
                           "most (REDLOCK_HEALTH_LINE_MAX per node)", buflen,
                           ctx->n_nodes * (size_t)REDLOCK_HEALTH_LINE_MAX);
        }
        memcpy(buf + used, line, len);
        used += len;
    }
    buf[used] = '\0';
    return REDLOCK_OK;
}

/* ---- Reading the lines back (redlock_health_*), for the bindings ---- */

const char *redlock_health_field(size_t index)
{
    return index < N_FIELDS ? fields[index].name : NULL;
}

size_t redlock_health_nodes(const char *text)
{
    size_t n = 0;
    for (const char *p = text; p && *p; p++)
        n += *p == '\n';
    return n;
}

/* The encoded value of field on node's line of text: *value and *len, and
 * the field's entry in *which. REDLOCK_EINVAL (the message says why) when
 * there is none. */
static int find_value(const char *text, size_t node, const char *field,
                      const struct field **which, const char **value, size_t *len)
{
    if (!text || !field)
        return rl_fail(REDLOCK_EINVAL, "%s is NULL", text ? "field" : "text");
    *which = NULL;
    for (int f = 0; f < N_FIELDS; f++)
        if (strcmp(fields[f].name, field) == 0)
            *which = &fields[f];
    if (!*which)
        return rl_fail(REDLOCK_EINVAL, "no field '%.64s' in the health of a node (the fields: "
                       "redlock_health_field)", field);
    const char *line = text;
    for (size_t i = 0; i < node && line; i++) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!line || !*line)
        return rl_fail(REDLOCK_EINVAL, "node %zu: the text has the health of %zu nodes", node,
                       redlock_health_nodes(text));
    size_t name_len = strlen(field);
    for (const char *p = line; *p && *p != '\n';) {
        size_t token = strcspn(p, " \n");
        if (token > name_len && strncmp(p, field, name_len) == 0 && p[name_len] == '=') {
            *value = p + name_len + 1;
            *len = token - name_len - 1;
            return REDLOCK_OK;
        }
        p += token + (p[token] == ' ');
    }
    return rl_fail(REDLOCK_EINVAL, "node %zu: no field '%.64s' on its line", node, field);
}

int redlock_health_type(const char *text, size_t node, const char *field)
{
    rl_clear_error();
    const struct field *which;
    const char *value;
    size_t len;
    int rc = find_value(text, node, field, &which, &value, &len);
    if (rc != REDLOCK_OK)
        return rc;
    if (which->none && strlen(which->none) == len && strncmp(value, which->none, len) == 0)
        return REDLOCK_TYPE_NONE;
    return which->type;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
         : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Undoes encode(): value's len bytes into out (NULL: only counts); the
 * decoded length. */
static size_t decode(char *out, const char *value, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++, n++) {
        int hi = value[i] == '%' && i + 2 < len ? hex_digit(value[i + 1]) : -1;
        int lo = hi >= 0 ? hex_digit(value[i + 2]) : -1;
        if (out)
            out[n] = lo >= 0 ? (char)(hi * 16 + lo) : value[i];
        if (lo >= 0)
            i += 2;
    }
    return n;
}

int redlock_health_value(const char *text, size_t node, const char *field, char *buf,
                         size_t buflen)
{
    int type = redlock_health_type(text, node, field);
    if (type < 0)
        return type;
    const struct field *which;
    const char *value = "";
    size_t len = 0;
    if (type != REDLOCK_TYPE_NONE)
        find_value(text, node, field, &which, &value, &len);
    size_t need = decode(NULL, value, len) + 1;
    if (!buf || need > buflen)
        return rl_fail(REDLOCK_EINVAL, "field %.64s: the buffer needs %zu bytes, not %zu", field,
                       need, buflen);
    buf[decode(buf, value, len)] = '\0';
    return REDLOCK_OK;
}
