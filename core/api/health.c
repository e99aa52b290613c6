/* health.c - redlock_ctx_health: what the client knows of each node, as text (see redlock.h). */
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

/* One node's line, into line (REDLOCK_HEALTH_LINE_MAX bytes); its length. */
static size_t node_line(const rl_client *ctx, rl_node *node, int64_t now, char *line)
{
    char label[LABEL_MAX + 1], error[ERROR_MAX + 1], run_id[41], rtt[32], version[16];
    char server[LABEL_MAX + 1], resolved[LABEL_MAX + 1];
    rl_node_server(node, resolved, sizeof resolved);
    encode(server, LABEL_MAX, resolved[0] ? resolved : "-");
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
    int64_t retry_in = state == RL_NODE_DOWN && down_until > now ? down_until - now : 0;
    int64_t rtt_us = atomic_load_explicit(&node->rtt_us, memory_order_relaxed);
    if (rtt_us < 0)
        snprintf(rtt, sizeof rtt, "-1");
    else
        snprintf(rtt, sizeof rtt, "%lld.%lld", (long long)(rtt_us / 1000),
                 (long long)(rtt_us % 1000 / 100));
    if (v > 0)
        snprintf(version, sizeof version, "%d.%d", v / 100, v % 100);
    else
        snprintf(version, sizeof version, "0");
    int w = snprintf(line, REDLOCK_HEALTH_LINE_MAX,
                     "node=%s state=%s for_ms=%lld retry_in_ms=%lld guard_ms=%lld rtt_ms=%s "
                     "commands=%llu failures=%llu timeouts=%llu run_id=%s version=%s "
                     "kind=%s server=%s last_error=%s conns=%d scripts=%s native=%s "
                     "scripting=%s\n",
                     label, name, (long long)(since == INT64_MIN ? 0 : now - since),
                     (long long)retry_in, (long long)(state == RL_NODE_UP ? guard : 0), rtt,
                     (unsigned long long)atomic_load(&node->commands),
                     (unsigned long long)atomic_load(&node->failures),
                     (unsigned long long)atomic_load(&node->timeouts), run_id, version,
                     node->addr.kind == RL_NODE_SENTINEL ? "sentinel"
                     : node->addr.kind == RL_NODE_CLUSTER ? "cluster" : "master", server, error,
                     rl_conn_count(ctx, node->index), scripts_way_name(node), native_name(node),
                     scripting_name(node));
    if (w < 0)
        return 0;
    /* Only counters near their 20 digits beside the longest label, address
     * and error fill the line: it is cut there, and still ends a line. */
    if (w >= REDLOCK_HEALTH_LINE_MAX) {
        line[REDLOCK_HEALTH_LINE_MAX - 2] = '\n';
        w = REDLOCK_HEALTH_LINE_MAX - 1;
    }
    return (size_t)w;
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
