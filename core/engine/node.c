/* node.c - what a client knows of one node (see node.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "node.h"

#define BACKOFF_FIRST_MS 25
#define BACKOFF_MAX_MS   1000

int rl_node_init(rl_node *node, const char *uri, size_t index)
{
    memset(node, 0, sizeof *node);
    int rc = rl_uri_parse(&node->addr, uri);
    if (rc != REDLOCK_OK)
        return rc;
    node->index = index;
    node->restarted_at = INT64_MIN;
    node->started_at = INT64_MIN;
    node->guarded_until = INT64_MIN;
    node->guard_seen_at = INT64_MIN;
    node->guard_asked_at = INT64_MIN;
    node->same_as = -1;
    node->native = -1;
    node->scripting = -1;
    node->master = -1;
    node->last_master = -1;
    node->epoch = -1;
    rl_slot_map_init(&node->map);
    atomic_init(&node->state, RL_NODE_UNKNOWN);
    atomic_init(&node->rtt_us, -1);
    atomic_init(&node->scripts_way, RL_SCRIPTS_UNKNOWN);
    atomic_init(&node->load_refused, false);
    node->state_since = INT64_MIN;
    pthread_mutex_init(&node->mu, NULL);
    return REDLOCK_OK;
}

void rl_node_destroy(rl_node *node)
{
    rl_slot_map_free(&node->map);
    for (size_t i = 0; i < node->n_masters; i++)
        free(node->masters[i].host);
    pthread_mutex_destroy(&node->mu);
    rl_uri_free(&node->addr);
}

/* ---- where connections go ---- */

/* The seed (a Cluster node's) to ask next for the slot map: the URI's, then
 * every master the node has known (under the lock). */
static void seed_target(rl_node *node, rl_target *t)
{
    const rl_node_addr *a = &node->addr;
    size_t k = node->next_sentinel % (a->n_sentinels + node->n_masters);
    const rl_server *s = k < a->n_sentinels ? &a->sentinels[k]
                                            : &node->masters[k - a->n_sentinels];
    *t = (rl_target){ .host = s->host, .port = s->port, .sentinel = true, .server = -1,
                      .gen = node->gen };
}

/* The index in masters of host:port, added when new (under the lock). */
static int server_index(rl_node *node, const char *host, int port)
{
    for (size_t i = 0; i < node->n_masters; i++)
        if (node->masters[i].port == port && strcmp(node->masters[i].host, host) == 0)
            return (int)i;
    if (node->n_masters == RL_NODE_MASTERS_MAX)
        return -1;
    rl_server *m = &node->masters[node->n_masters];
    if (!(m->host = strdup(host)))
        return -1;
    m->port = port;
    rl_server_label(m);
    return (int)node->n_masters++;
}

/* The master a Cluster node's connection for slot goes to (under the lock):
 * -1 when a seed must be asked. */
static int cluster_server(rl_node *node, int slot, int server)
{
    if (server >= 0 && (size_t)server < node->n_masters)
        return server;
    if (!node->mapped || node->map.n_shards == 0)
        return -1;
    const rl_shard *sh = slot >= 0 ? rl_slot_map_shard(&node->map, slot) : &node->map.shards[0];
    return sh ? server_index(node, sh->master.host, sh->master.port) : -1;
}

void rl_node_target_slot(rl_node *node, int slot, int server, rl_target *t)
{
    if (node->addr.kind != RL_NODE_CLUSTER) {
        rl_node_target(node, t);
        return;
    }
    pthread_mutex_lock(&node->mu);
    int k = cluster_server(node, slot, server);
    if (k < 0) {
        seed_target(node, t);
    } else {
        const rl_server *m = &node->masters[k];
        *t = (rl_target){ .host = m->host, .port = m->port, .server = k, .gen = node->gen,
                          .asking = server >= 0 };
    }
    pthread_mutex_unlock(&node->mu);
}

int rl_node_census(rl_node *node)
{
    if (node->addr.kind != RL_NODE_CLUSTER || !node->ctx->opt.restart_guard)
        return -1;
    int unread = -1;
    pthread_mutex_lock(&node->mu);
    for (size_t i = 0; node->mapped && i < node->map.n_shards && unread < 0; i++) {
        const rl_shard_node *m = &node->map.shards[i].master;
        int k = server_index(node, m->host, m->port);
        if (k >= 0 && !(node->guards_read & (UINT64_C(1) << k)))
            unread = k;
    }
    pthread_mutex_unlock(&node->mu);
    return unread;
}

void rl_node_census_target(rl_node *node, int server, rl_target *t)
{
    pthread_mutex_lock(&node->mu);
    const rl_server *m = &node->masters[server];
    *t = (rl_target){ .host = m->host, .port = m->port, .server = server, .gen = node->gen,
                      .census = true };
    pthread_mutex_unlock(&node->mu);
}

void rl_node_guard_read(rl_node *node, int server)
{
    if (server < 0 || server >= RL_NODE_MASTERS_MAX)
        return;
    pthread_mutex_lock(&node->mu);
    node->guards_read |= UINT64_C(1) << server;
    pthread_mutex_unlock(&node->mu);
}

int rl_node_server_for(rl_node *node, int slot, int server)
{
    if (node->addr.kind != RL_NODE_CLUSTER)
        return -1;
    pthread_mutex_lock(&node->mu);
    int k = cluster_server(node, slot, server);
    pthread_mutex_unlock(&node->mu);
    return k;
}

int rl_node_mapped(rl_node *node, uint64_t gen, rl_slot_map *map)
{
    int rc = REDLOCK_OK;
    pthread_mutex_lock(&node->mu);
    for (size_t i = 0; i < map->n_shards && rc == REDLOCK_OK; i++)
        if (server_index(node, map->shards[i].master.host, map->shards[i].master.port) < 0)
            rc = rl_fail(REDLOCK_EUNSUPPORTED, "a Cluster with more than %d masters",
                         RL_NODE_MASTERS_MAX);
    if (rc == REDLOCK_OK && gen == node->gen) {
        rl_slot_map_free(&node->map);
        node->map = *map;
        rl_slot_map_init(map);
        node->mapped = true;
        node->sentinel_misses = 0;
    }
    pthread_mutex_unlock(&node->mu);
    rl_slot_map_free(map);
    return rc;
}

void rl_node_slot_moved(rl_node *node, int slot, const char *host, int port)
{
    pthread_mutex_lock(&node->mu);
    int moved = node->mapped ? rl_slot_map_moved(&node->map, slot, host, port) : -1;
    if (moved >= 0)
        (void)server_index(node, host, port);
    /* A master the map did not know (a shard added, a failover): the next
     * connection asks a seed for the whole map. Connections already made
     * stay good (the generation is the same). */
    if (moved == 1)
        node->mapped = false;
    pthread_mutex_unlock(&node->mu);
}

int rl_node_server_index(rl_node *node, const char *host, int port)
{
    pthread_mutex_lock(&node->mu);
    int k = server_index(node, host, port);
    pthread_mutex_unlock(&node->mu);
    return k;
}

bool rl_node_server_tag(rl_node *node, int server, char out[16])
{
    bool found = false;
    pthread_mutex_lock(&node->mu);
    const rl_server *m = server >= 0 && (size_t)server < node->n_masters ? &node->masters[server]
                                                                         : NULL;
    /* The first number whose slot the master serves: every client with the
     * same map picks the same one. */
    for (int i = 0; m && node->mapped && i < 1000000 && !found; i++) {
        int n = snprintf(out, 16, "%d", i);
        const rl_shard *sh = rl_slot_map_shard(&node->map, rl_key_slot(out, (size_t)n));
        found = sh && sh->master.port == m->port && strcmp(sh->master.host, m->host) == 0;
    }
    pthread_mutex_unlock(&node->mu);
    return found;
}

void rl_node_target(rl_node *node, rl_target *t)
{
    const rl_node_addr *a = &node->addr;
    if (a->kind == RL_NODE_MASTER) {
        *t = (rl_target){ .host = a->is_unix ? NULL : a->host, .port = a->port, .server = -1 };
        return;
    }
    if (a->kind == RL_NODE_CLUSTER) {
        rl_node_target_slot(node, -1, -1, t);
        return;
    }
    pthread_mutex_lock(&node->mu);
    if (node->master >= 0) {
        const rl_server *m = &node->masters[node->master];
        *t = (rl_target){ .host = m->host, .port = m->port, .server = -1, .gen = node->gen };
    } else {
        const rl_server *s = &a->sentinels[node->next_sentinel % a->n_sentinels];
        *t = (rl_target){ .host = s->host, .port = s->port, .sentinel = true, .server = -1,
                          .gen = node->gen };
    }
    pthread_mutex_unlock(&node->mu);
}

void rl_node_sentinel_target(rl_node *node, rl_target *t)
{
    const rl_node_addr *a = &node->addr;
    pthread_mutex_lock(&node->mu);
    const rl_server *s = &a->sentinels[node->next_sentinel % a->n_sentinels];
    *t = (rl_target){ .host = s->host, .port = s->port, .sentinel = true, .server = -1,
                      .gen = node->gen };
    pthread_mutex_unlock(&node->mu);
}

bool rl_node_poll_due(rl_node *node, int64_t poll_ms, int64_t now)
{
    if (node->addr.kind != RL_NODE_SENTINEL || poll_ms <= 0)
        return false;
    pthread_mutex_lock(&node->mu);
    bool due = node->master >= 0 && now - node->resolved_at >= poll_ms && now >= node->poll_until;
    if (due)
        node->poll_until = now + poll_ms;
    pthread_mutex_unlock(&node->mu);
    return due;
}

/* The guard of a promoted master lasts max_lease_ms + sentinel_poll_ms
 * because a client that goes on with the old master does so for no longer
 * than sentinel_poll_ms after the promotion: the sentinels named the old
 * master when it asked, so before the promotion, and its vote on that master
 * counts for a new lock only if the lock was asked for less than
 * sentinel_poll_ms after it asked. Without this, a client whose polls went
 * unanswered (sentinels out of reach, or none asked) would go on with the
 * old master for as long as it answers. */
bool rl_node_confirmed(rl_node *node, int64_t at)
{
    const rl_options *o = &node->ctx->opt;
    if (node->addr.kind != RL_NODE_SENTINEL || o->sentinel_poll_ms <= 0 || !o->restart_guard)
        return true;
    pthread_mutex_lock(&node->mu);
    bool confirmed = at - node->resolved_at < o->sentinel_poll_ms;
    pthread_mutex_unlock(&node->mu);
    return confirmed;
}

bool rl_node_current(rl_node *node, uint64_t gen)
{
    if (node->addr.kind == RL_NODE_MASTER)
        return true;
    pthread_mutex_lock(&node->mu);
    bool current = node->gen == gen;
    pthread_mutex_unlock(&node->mu);
    return current;
}

void rl_node_resolved(rl_node *node, uint64_t gen, const char *host, int port, int64_t asked_at)
{
    char was[96] = "", is[96] = "";
    pthread_mutex_lock(&node->mu);
    int found = -1;
    for (size_t i = 0; i < node->n_masters && found < 0; i++)
        if (node->masters[i].port == port && strcmp(node->masters[i].host, host) == 0)
            found = (int)i;
    if (found < 0 && node->n_masters < RL_NODE_MASTERS_MAX) {
        rl_server *m = &node->masters[node->n_masters];
        if ((m->host = strdup(host)) != NULL) {
            m->port = port;
            rl_server_label(m);
            found = (int)node->n_masters++;
        }
    }
    node->sentinel_misses = 0;
    if (gen == node->gen && found >= 0 && node->master != found) {
        /* Found, or moved (a poll found another master while the old one
         * still answers): connections to the old one are not reused. */
        if (node->master >= 0)
            node->gen++;
        int before = node->last_master;
        node->master = found;
        node->last_master = found;
        if (before >= 0 && before != found) {
            snprintf(was, sizeof was, "%s", node->masters[before].label);
            snprintf(is, sizeof is, "%s", node->masters[found].label);
        }
    }
    if (found >= 0 && node->master == found) {
        if (asked_at > node->resolved_at)
            node->resolved_at = asked_at;
        node->poll_until = asked_at;
    }
    pthread_mutex_unlock(&node->mu);
    const rl_client *ctx = node->ctx;
    if (was[0] && rl_logging(&ctx->log, REDLOCK_LOG_WARN))
        rl_log_emit(&ctx->log, REDLOCK_LOG_WARN, "node_failover", "node=%s old=%s new=%s",
                    node->addr.label, was, is);
}

void rl_node_saw_epoch(rl_node *node, int64_t epoch)
{
    pthread_mutex_lock(&node->mu);
    if (epoch > node->epoch)
        node->epoch = epoch;
    pthread_mutex_unlock(&node->mu);
}

int64_t rl_node_epoch(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    int64_t epoch = node->addr.kind == RL_NODE_SENTINEL && node->epoch >= 0 ? node->epoch : -1;
    pthread_mutex_unlock(&node->mu);
    return epoch;
}

void rl_node_sentinel_missed(rl_node *node, uint64_t gen)
{
    pthread_mutex_lock(&node->mu);
    if (gen == node->gen) {
        node->next_sentinel++;
        node->sentinel_misses++;
    }
    pthread_mutex_unlock(&node->mu);
}

bool rl_node_sentinels_left(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    size_t n = node->addr.n_sentinels
             + (node->addr.kind == RL_NODE_CLUSTER ? node->n_masters : 0);
    bool left = node->sentinel_misses % n != 0;
    pthread_mutex_unlock(&node->mu);
    return left;
}

void rl_node_master_lost(rl_node *node, uint64_t gen, const char *why, int64_t now)
{
    if (node->addr.kind == RL_NODE_MASTER)
        return;
    pthread_mutex_lock(&node->mu);
    bool lost = gen == node->gen && (node->master >= 0 || node->mapped);
    if (lost) {
        /* A Cluster's map is read again from a seed. */
        node->master = -1;
        node->mapped = false;
        node->gen++;
    }
    pthread_mutex_unlock(&node->mu);
    const rl_client *ctx = node->ctx;
    if (lost && rl_logging(&ctx->log, REDLOCK_LOG_INFO))
        rl_log_emit(&ctx->log, REDLOCK_LOG_INFO, "node_master_lost", "node=%s: %s",
                    node->addr.label, why);
    (void)now;
}

void rl_node_server(rl_node *node, char *out, size_t len)
{
    if (node->addr.kind == RL_NODE_MASTER) {
        snprintf(out, len, "%s", node->addr.label);
        return;
    }
    pthread_mutex_lock(&node->mu);
    if (node->addr.kind == RL_NODE_CLUSTER) {
        /* Its masters, as the map has them: "h1:p1+h2:p2+..." */
        size_t w = 0;
        out[0] = '\0';
        for (size_t i = 0; node->mapped && i < node->map.n_shards && w < len; i++) {
            rl_server m = { .host = node->map.shards[i].master.host,
                            .port = node->map.shards[i].master.port };
            rl_server_label(&m);
            int n = snprintf(out + w, len - w, "%s%s", i ? "+" : "", m.label);
            w += n > 0 ? (size_t)n : 0;
        }
        pthread_mutex_unlock(&node->mu);
        return;
    }
    snprintf(out, len, "%s", node->master >= 0 ? node->masters[node->master].label : "");
    pthread_mutex_unlock(&node->mu);
}

/* When a guard read at now that said left_ms ends: never later than
 * rl_node_guard_ms from the first read of the guard now running (a forged or
 * garbled record, or a hostile node's answer, cannot make it longer; nor can
 * an answer near INT64_MAX overflow). Under node->mu. */
static int64_t guard_end(rl_node *node, int64_t left_ms, int64_t now)
{
    int64_t guard = rl_node_guard_ms(node);
    if (node->guarded_until < now || node->guard_seen_at == INT64_MIN)
        node->guard_seen_at = now;
    int64_t left = left_ms < guard ? left_ms : guard;
    int64_t end = now + left, cap = node->guard_seen_at + guard;
    return end < cap ? end : cap;
}

static void tell_guarded(rl_node *node, int64_t left_ms)
{
    const rl_client *ctx = node->ctx;
    if (rl_logging(&ctx->log, REDLOCK_LOG_WARN))
        rl_log_emit(&ctx->log, REDLOCK_LOG_WARN, "node_guarded", "node=%s guard_ms=%lld",
                    node->addr.label, (long long)left_ms);
}

void rl_node_guarded(rl_node *node, int64_t left_ms, int64_t now)
{
    if (left_ms <= 0 || rl_node_guard_ms(node) <= 0)
        return;
    pthread_mutex_lock(&node->mu);
    bool news = node->guarded_until < now;
    int64_t end = guard_end(node, left_ms, now);
    if (node->guarded_until < end)
        node->guarded_until = end;
    pthread_mutex_unlock(&node->mu);
    if (news)
        tell_guarded(node, end - now);
}

void rl_node_guard_reread(rl_node *node, int64_t left_ms, int64_t now)
{
    pthread_mutex_lock(&node->mu);
    bool was = node->guarded_until > now;
    int64_t end = INT64_MIN;
    if (left_ms > 0 && rl_node_guard_ms(node) > 0)
        end = guard_end(node, left_ms, now);
    else
        node->guard_seen_at = INT64_MIN;
    node->guarded_until = end;
    pthread_mutex_unlock(&node->mu);
    const rl_client *ctx = node->ctx;
    if (was && end <= now && rl_logging(&ctx->log, REDLOCK_LOG_INFO))
        rl_log_emit(&ctx->log, REDLOCK_LOG_INFO, "node_unguarded",
                    "node=%s: its guard record, read again, holds it back no longer",
                    node->addr.label);
    else if (!was && end > now)
        tell_guarded(node, end - now);
}

void rl_node_guard_stale(rl_node *node, int64_t now)
{
    if (node->addr.kind == RL_NODE_CLUSTER)
        return;   /* one guard per master: a read of one would speak for all */
    pthread_mutex_lock(&node->mu);
    if (node->guarded_until > now
        && (node->guard_asked_at == INT64_MIN || now - node->guard_asked_at >= RL_GUARD_REREAD_MS)) {
        node->guard_asked_at = now;
        atomic_store(&node->guard_reread, true);
    }
    pthread_mutex_unlock(&node->mu);
}

bool rl_node_take_reread(rl_node *node)
{
    /* On every command sent: a load, and no lock, when none is due. */
    return atomic_load_explicit(&node->guard_reread, memory_order_relaxed)
        && atomic_exchange(&node->guard_reread, false);
}

int64_t rl_node_connect_wait(rl_node *node, int64_t now)
{
    pthread_mutex_lock(&node->mu);
    int64_t wait = node->down_until - now;
    pthread_mutex_unlock(&node->mu);
    return wait > 0 ? wait : 0;
}

void rl_node_connect_failed(rl_node *node, int64_t now)
{
    pthread_mutex_lock(&node->mu);
    node->backoff_ms = node->backoff_ms ? node->backoff_ms * 2 : BACKOFF_FIRST_MS;
    if (node->backoff_ms > BACKOFF_MAX_MS)
        node->backoff_ms = BACKOFF_MAX_MS;
    node->down_until = now + node->backoff_ms;
    pthread_mutex_unlock(&node->mu);
}

void rl_node_connect_ok(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    node->backoff_ms = 0;
    node->down_until = 0;
    node->tls_failure[0] = '\0';
    pthread_mutex_unlock(&node->mu);
}

static const char *const state_names[] = {
    [RL_NODE_UNKNOWN] = "unknown", [RL_NODE_UP] = "up", [RL_NODE_SLOW] = "slow",
    [RL_NODE_DOWN] = "down", [RL_NODE_AUTH] = "auth_refused",
    [RL_NODE_NOPERM] = "permission_denied",
};

const char *rl_node_state_name(rl_node_state state)
{
    return state_names[state];
}

void rl_node_sent(rl_node *node)
{
    atomic_fetch_add_explicit(&node->commands, 1, memory_order_relaxed);
}

/* Moves the node to state (why: its last error, or NULL to keep it) and
 * tells the change. Returns nothing; the event is emitted unlocked. */
static void change(rl_node *node, rl_node_state to, const char *why, int64_t now)
{
    pthread_mutex_lock(&node->mu);
    rl_node_state was = (rl_node_state)atomic_load(&node->state);
    if (to == RL_NODE_KEEP)
        to = was;
    int64_t for_ms = node->state_since == INT64_MIN ? 0 : now - node->state_since;
    int64_t retry_in = node->down_until - now;
    if (why)
        snprintf(node->last_error, sizeof node->last_error, "%s", why);
    if (was != to) {
        atomic_store(&node->state, to);
        node->state_since = now;
    }
    pthread_mutex_unlock(&node->mu);
    if (was == to)
        return;
    const rl_client *ctx = node->ctx;
    const char *label = node->addr.label, *from = state_names[was];
    switch (to) {
    case RL_NODE_DOWN:
        RL_LOG(ctx, REDLOCK_LOG_WARN, "node_down", "node=%s was=%s retry_in_ms=%lld: %s", label,
               from, (long long)(retry_in > 0 ? retry_in : 0), why ? why : "");
        break;
    case RL_NODE_SLOW:
        RL_LOG(ctx, REDLOCK_LOG_WARN, "node_slow", "node=%s was=%s: %s", label, from,
               why ? why : "");
        break;
    case RL_NODE_AUTH:
        RL_LOG(ctx, REDLOCK_LOG_ERROR, "auth_refused", "node=%s was=%s: %s", label, from,
               why ? why : "");
        break;
    case RL_NODE_NOPERM:
        RL_LOG(ctx, REDLOCK_LOG_ERROR, "permission_denied", "node=%s was=%s: %s", label, from,
               why ? why : "");
        break;
    case RL_NODE_UP:
        if (was != RL_NODE_UNKNOWN)
            RL_LOG(ctx, REDLOCK_LOG_INFO, "node_back", "node=%s was=%s for_ms=%lld", label, from,
                   (long long)for_ms);
        break;
    case RL_NODE_UNKNOWN:
    case RL_NODE_KEEP:
        break;
    }
}

void rl_node_answered(rl_node *node, int64_t rtt_ms, int64_t now)
{
    if (rtt_ms >= 0) {
        /* An average that follows the last eight or so. */
        int64_t sample = rtt_ms * 1000, avg = atomic_load_explicit(&node->rtt_us,
                                                                   memory_order_relaxed);
        atomic_store_explicit(&node->rtt_us, avg < 0 ? sample : avg + (sample - avg) / 8,
                              memory_order_relaxed);
    }
    if (atomic_load_explicit(&node->state, memory_order_relaxed) != RL_NODE_UP)
        change(node, RL_NODE_UP, NULL, now);
}

void rl_node_failed(rl_node *node, rl_node_state state, const char *why, int64_t now)
{
    atomic_fetch_add_explicit(&node->failures, 1, memory_order_relaxed);
    if (state == RL_NODE_SLOW)
        atomic_fetch_add_explicit(&node->timeouts, 1, memory_order_relaxed);
    if (why)
        change(node, state, why, now);
}

rl_node_state rl_node_state_after(int code)
{
    return code == REDLOCK_EAUTH ? RL_NODE_AUTH : code == REDLOCK_ENOPERM ? RL_NODE_NOPERM
         : RL_NODE_UP;
}

void rl_node_connect_failure(rl_node *node, int code, const char *why)
{
    pthread_mutex_lock(&node->mu);
    snprintf(node->tls_failure, sizeof node->tls_failure, "%s",
             code == REDLOCK_ETLS && why ? why : "");
    pthread_mutex_unlock(&node->mu);
}

int rl_node_backoff(rl_node *node, int64_t now, char *why, size_t whylen)
{
    pthread_mutex_lock(&node->mu);
    int64_t wait = node->down_until - now;
    int code = wait <= 0 ? REDLOCK_OK : node->tls_failure[0] ? REDLOCK_ETLS : REDLOCK_ENOQUORUM;
    if (code == REDLOCK_ETLS)
        snprintf(why, whylen, "%s (next connection attempt in %lld ms)", node->tls_failure,
                 (long long)wait);
    else if (code != REDLOCK_OK)
        snprintf(why, whylen, "unreachable, next connection attempt in %lld ms", (long long)wait);
    pthread_mutex_unlock(&node->mu);
    return code;
}

int rl_info_run_id(const char *info, size_t len, char out[41])
{
    static const char field[] = "run_id:";
    const size_t flen = sizeof field - 1;
    for (size_t i = 0; i + flen + 40 <= len; i++) {
        if ((i > 0 && info[i - 1] != '\n') || memcmp(info + i, field, flen) != 0)
            continue;
        const char *id = info + i + flen;
        for (int j = 0; j < 40; j++)
            if (!isxdigit((unsigned char)id[j]))
                return -1;
        if (i + flen + 40 < len && !isspace((unsigned char)id[40]))
            return -1;
        memcpy(out, id, 40);
        out[40] = '\0';
        return 0;
    }
    return -1;
}

/* The value of INFO's field (its name with the colon) at the start of a
 * line: a pointer into info and its length up to the line's end, or NULL. */
static const char *info_field(const char *info, size_t len, const char *field, size_t *vlen)
{
    const size_t flen = strlen(field);
    for (size_t i = 0; i + flen < len; i++) {
        if ((i > 0 && info[i - 1] != '\n') || memcmp(info + i, field, flen) != 0)
            continue;
        size_t j = i + flen;
        while (j < len && info[j] != '\r' && info[j] != '\n')
            j++;
        *vlen = j - (i + flen);
        return info + i + flen;
    }
    return NULL;
}

/* A version "X.Y..." as X * 100 + Y (Y up to 99), or 0. */
static int parse_version(const char *v, size_t len)
{
    int major = 0, minor = 0;
    size_t j = 0;
    for (; j < len && isdigit((unsigned char)v[j]) && major < 10000; j++)
        major = major * 10 + (v[j] - '0');
    if (j == 0 || j >= len || v[j] != '.')
        return 0;
    for (j++; j < len && isdigit((unsigned char)v[j]) && minor < 100; j++)
        minor = minor * 10 + (v[j] - '0');
    return major * 100 + (minor > 99 ? 99 : minor);
}

int rl_info_version(const char *info, size_t len)
{
    size_t vlen;
    const char *v = info_field(info, len, "redis_version:", &vlen);
    return v ? parse_version(v, vlen) : 0;
}

int rl_info_native(const char *info, size_t len)
{
    /* Valkey says redis_version 7.2.4 whatever its own: its own version is
     * a field of its own, beside its name. */
    size_t nlen, vlen;
    const char *name = info_field(info, len, "server_name:", &nlen);
    const char *v = info_field(info, len, "valkey_version:", &vlen);
    if (!name || nlen != 6 || memcmp(name, "valkey", 6) != 0 || !v)
        return 0;
    int version = parse_version(v, vlen);
    return (version >= 801 ? RL_NATIVE_IFEQ : 0) | (version >= 900 ? RL_NATIVE_DELIFEQ : 0);
}

int64_t rl_info_uptime(const char *info, size_t len)
{
    size_t vlen;
    const char *v = info_field(info, len, "uptime_in_seconds:", &vlen);
    if (!v || vlen == 0)
        return -1;
    int64_t secs = 0;
    for (size_t j = 0; j < vlen; j++) {
        if (!isdigit((unsigned char)v[j]) || secs > (INT64_MAX / 1000 - 9) / 10)
            return -1;
        secs = secs * 10 + (v[j] - '0');
    }
    return secs;
}

/* The run_id node j is known by, copied under its lock. */
static void run_id_of(rl_node *node, char out[41])
{
    pthread_mutex_lock(&node->mu);
    memcpy(out, node->run_id, 41);
    pthread_mutex_unlock(&node->mu);
}

/* A Cluster master's INFO: its own run_id tells its restart. */
static void cluster_saw_info(rl_node *node, int server, int version, int native,
                             const char *run_id, int64_t now)
{
    bool restarted = false;
    pthread_mutex_lock(&node->mu);
    if (version)
        node->version = version;
    node->native = native;
    if (run_id && server >= 0 && server < RL_NODE_MASTERS_MAX) {
        char *was = node->server_run_id[server];
        if (was[0] != '\0' && strcmp(was, run_id) != 0) {
            node->restarted_at = now;
            node->native_refused = 0;
            node->scripting = -1;
            restarted = true;
        }
        memcpy(was, run_id, 41);
    }
    pthread_mutex_unlock(&node->mu);
    const rl_client *ctx = node->ctx;
    if (restarted && rl_logging(&ctx->log, REDLOCK_LOG_WARN)) {
        int64_t guard = rl_node_guard_ms(node);
        rl_log_emit(&ctx->log, REDLOCK_LOG_WARN, "node_restarted",
                    "node=%s server=%s run_id=%.8s guard_ms=%lld", node->addr.label,
                    node->masters[server].label, run_id, (long long)guard);
    }
}

void rl_nodes_saw_info(rl_node *nodes, size_t n, size_t i, int server, const char *info,
                       size_t len, int64_t now)
{
    rl_node *node = &nodes[i];
    char run_id[41];
    int version = rl_info_version(info, len);
    int native = rl_info_native(info, len);
    bool have_id = rl_info_run_id(info, len, run_id) == 0;
    int64_t uptime = rl_info_uptime(info, len);
    if (node->addr.kind == RL_NODE_CLUSTER) {
        cluster_saw_info(node, server, version, native, have_id ? run_id : NULL, now);
        return;
    }
    int same_as = -1;
    for (size_t j = 0; have_id && j < n; j++) {
        char other[41];
        if (j == i)
            continue;
        run_id_of(&nodes[j], other);
        if (strcmp(other, run_id) == 0) {
            same_as = (int)j;
            break;
        }
    }
    bool restarted = false;
    pthread_mutex_lock(&node->mu);
    if (version)
        node->version = version;
    node->native = native;
    if (have_id) {
        /* A run_id other than the one seen before means the node restarted:
         * it may have lost keys it held (the restart guard), and may be
         * another server now, whose commands are found again. */
        if (node->run_id[0] != '\0' && strcmp(node->run_id, run_id) != 0) {
            node->restarted_at = now;
            node->native_refused = 0;
            node->scripting = -1;
            restarted = true;
        }
        memcpy(node->run_id, run_id, sizeof node->run_id);
        /* Uptime is the difference of two whole seconds of the server's
         * clock (its start's and now's): up to a second more than the time
         * it has run. One second less gives a start never earlier than the
         * real one. */
        node->started_at = uptime >= 0 ? now - (uptime > 0 ? uptime - 1 : 0) * 1000 : INT64_MIN;
        /* Of two names for one server, the later one in the list does not
         * count: the server votes once. */
        node->same_as = same_as >= 0 && (size_t)same_as < i ? same_as : -1;
    }
    pthread_mutex_unlock(&node->mu);
    if (same_as >= 0 && (size_t)same_as > i) {
        pthread_mutex_lock(&nodes[same_as].mu);
        nodes[same_as].same_as = (int)i;
        pthread_mutex_unlock(&nodes[same_as].mu);
    }
    const rl_client *ctx = node->ctx;
    if (restarted && rl_logging(&ctx->log, REDLOCK_LOG_WARN)) {
        int64_t guard = rl_node_guard_ms(node);
        rl_log_emit(&ctx->log, REDLOCK_LOG_WARN, "node_restarted", "node=%s run_id=%.8s guard_ms=%lld",
                    node->addr.label, run_id, (long long)guard);
    }
}

void rl_node_identity(rl_node *node, char run_id[41], int64_t *started_at)
{
    pthread_mutex_lock(&node->mu);
    bool known = node->addr.kind != RL_NODE_CLUSTER;
    memcpy(run_id, known ? node->run_id : "", known ? 41 : 1);
    *started_at = known ? node->started_at : INT64_MIN;
    pthread_mutex_unlock(&node->mu);
}

int64_t rl_node_guard_ms(const rl_node *node)
{
    const rl_options *o = &node->ctx->opt;
    if (!o->restart_guard)
        return 0;
    return o->max_lease_ms + (node->addr.kind == RL_NODE_SENTINEL ? o->sentinel_poll_ms : 0);
}

int64_t rl_node_guard_left(rl_node *node, int64_t now)
{
    int64_t guard = rl_node_guard_ms(node);
    pthread_mutex_lock(&node->mu);
    int64_t since = node->restarted_at, until = node->guarded_until;
    pthread_mutex_unlock(&node->mu);
    if (since != INT64_MIN && rl_add_sat(since, guard) > until)
        until = rl_add_sat(since, guard);
    int64_t left = until == INT64_MIN ? 0 : rl_sub_sat(until, now);
    return left > 0 ? left : 0;
}

int rl_node_same_as(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    int same = node->same_as;
    pthread_mutex_unlock(&node->mu);
    return same;
}

int rl_node_version(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    int version = node->version;
    pthread_mutex_unlock(&node->mu);
    return version;
}

bool rl_node_has_set_nx_get(rl_node *node)
{
    return rl_node_version(node) >= 700;
}

bool rl_node_has_native(rl_node *node, int bit)
{
    pthread_mutex_lock(&node->mu);
    bool has = node->native > 0 && (node->native & ~node->native_refused & bit) != 0;
    pthread_mutex_unlock(&node->mu);
    return has;
}

bool rl_node_native_refused(rl_node *node, int bit)
{
    pthread_mutex_lock(&node->mu);
    bool first = (node->native_refused & bit) == 0;
    node->native_refused |= bit;
    pthread_mutex_unlock(&node->mu);
    return first;
}

int rl_node_native(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    int native = node->native < 0 ? -1 : node->native & ~node->native_refused;
    pthread_mutex_unlock(&node->mu);
    return native;
}

void rl_node_scripts_ran(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    node->scripting = 1;
    pthread_mutex_unlock(&node->mu);
}

bool rl_node_no_scripting(rl_node *node, const char *why)
{
    pthread_mutex_lock(&node->mu);
    bool first = node->scripting != 0;
    node->scripting = 0;
    if (first)
        snprintf(node->no_scripts_why, sizeof node->no_scripts_why, "%s", why);
    pthread_mutex_unlock(&node->mu);
    return first;
}

int rl_node_scripting(rl_node *node, char *why, size_t len)
{
    pthread_mutex_lock(&node->mu);
    int scripting = node->scripting;
    if (why && len > 0)
        snprintf(why, len, "%s", scripting == 0 ? node->no_scripts_why : "");
    pthread_mutex_unlock(&node->mu);
    return scripting;
}

size_t rl_client_scriptless(const rl_client *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < ctx->n_nodes; i++)
        n += rl_node_scripting(&ctx->nodes[i], NULL, 0) == 0;
    return n;
}
