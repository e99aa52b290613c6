/* conn.c - one connection's bytes and its stream of expected replies (see conn.h). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "conn.h"
#include "guard.h"
#include "node.h"
#include "proto.h"
#include "records.h"
#include "scripts.h"

#define GATE_OPEN UINT64_MAX

static bool push_entry(rl_conn *c, rl_entry e)
{
    if (c->q_len == c->q_cap) {
        size_t cap = c->q_cap ? c->q_cap * 2 : 8;
        rl_entry *grown = malloc(cap * sizeof *grown);
        if (!grown)
            return false;
        for (size_t i = 0; i < c->q_len; i++)
            grown[i] = c->q[(c->q_head + i) % c->q_cap];
        free(c->q);
        c->q = grown;
        c->q_cap = cap;
        c->q_head = 0;
    }
    c->q[(c->q_head + c->q_len) % c->q_cap] = e;
    c->q_len++;
    return true;
}

static rl_entry pop_entry(rl_conn *c)
{
    rl_entry e = c->q[c->q_head];
    c->q_head = (c->q_head + 1) % c->q_cap;
    c->q_len--;
    c->popped++;
    return e;
}

static bool append_bytes(rl_conn *c, const char *bytes, size_t len)
{
    if (c->out_len + len > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 256;
        while (cap < c->out_len + len)
            cap *= 2;
        char *grown;
        if (c->written < c->secret_end) {
            /* AUTH's bytes are still here: no copy of them is left behind. */
            if (!(grown = malloc(cap)))
                return false;
            memcpy(grown, c->out, c->out_len);
            rl_wipe(c->out, c->out_len);
            free(c->out);
        } else if (!(grown = realloc(c->out, cap))) {
            return false;
        }
        c->out = grown;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, bytes, len);
    c->out_len += len;
    c->queued += len;
    return true;
}

/* Queues one command of the handshake, sent in form (a guard's). */
static bool send_entry(rl_conn *c, rl_entry_kind kind, rl_form form, int argc,
                       const char **argv)
{
    rl_bytes b;
    if (rl_bytes_format(&b, argc, argv) != REDLOCK_OK)
        return false;
    bool ok = append_bytes(c, b.p, b.len)
        && push_entry(c, (rl_entry){ .kind = (uint8_t)kind, .form = (uint8_t)form,
                                     .end = c->queued });
    if (kind == RL_ENTRY_AUTH) {
        c->secret_end = c->queued;
        rl_bytes_wipe(&b);
    } else {
        rl_bytes_free(&b);
    }
    return ok;
}

static bool send_own(rl_conn *c, rl_entry_kind kind, int argc, const char **argv)
{
    return send_entry(c, kind, RL_FORM_EVAL, argc, argv);
}

/* AUTH [user] password, when there is a password. */
static bool send_auth(rl_conn *c, const char *user, const char *password)
{
    if (!password || !password[0])
        return true;
    const char *argv[3] = { "AUTH", user && user[0] ? user : password, password };
    return send_own(c, RL_ENTRY_AUTH, user && user[0] ? 3 : 2, argv);
}

/* A connection to a sentinel asks where the master is, and nothing else:
 * the gate never opens, so what an operation queues behind it is never
 * written; the reply ends the connection (handshake_reply). */
static bool queue_ask_sentinel(rl_conn *c)
{
    const rl_options *o = &c->ctx->opt;
    const char *name = c->ctx->nodes[c->node].addr.master_name;
    const char *master[3] = { "SENTINEL", "MASTER", name };
    const char *addr[3] = { "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name };
    if (!send_auth(c, o->sentinel_user, o->sentinel_password)
        || !send_own(c, RL_ENTRY_EPOCH, 3, master) || !send_own(c, RL_ENTRY_SENTINEL, 3, addr))
        return false;
    c->gate = c->queued;
    return true;
}

/* A connection to a Cluster's seed asks for the slot map, and nothing else,
 * as a sentinel's does (AUTH with the node's credentials first). */
static bool queue_ask_slots(rl_conn *c)
{
    const rl_node_addr *a = &c->ctx->nodes[c->node].addr;
    const char *argv[2] = { "CLUSTER", "SLOTS" };
    if (!send_auth(c, a->user, a->password) || !send_own(c, RL_ENTRY_SLOTS, 2, argv))
        return false;
    c->gate = c->queued;
    return true;
}

/* The guard's key on this connection's server: the prefix's, and on a
 * Cluster's master with a hash tag of a slot it serves (the key must be its
 * own). False when there is none (a master that serves no slot). */
static bool guard_key(rl_conn *c, char *key, size_t len)
{
    const rl_options *o = &c->ctx->opt;
    char tag[16] = "";
    rl_node *node = &c->ctx->nodes[c->node];
    if (node->addr.kind == RL_NODE_CLUSTER && !rl_node_server_tag(node, c->to.server, tag))
        return false;
    snprintf(key, len, "%.*s%s%s%s%s", (int)o->key_prefix_len, o->key_prefix, RL_GUARD_KEY,
             tag[0] ? "{" : "", tag, tag[0] ? "}" : "");
    return true;
}

/* The guard's plain form on a node without scripts (guard.h): its reads in
 * one transaction, as kind (its EXEC's entry). */
static bool queue_plain_guard(rl_conn *c, rl_entry_kind kind, const char *key)
{
    const char *multi[1] = { "MULTI" }, *get[2] = { "GET", key };
    const char *server[2] = { "INFO", "server" }, *repl[2] = { "INFO", "replication" };
    const char *time[1] = { "TIME" }, *exec[1] = { "EXEC" };
    return rl_conn_own(c, RL_ENTRY_TXN, 1, multi, NULL) == REDLOCK_OK
        && rl_conn_own(c, RL_ENTRY_TXN, 2, get, NULL) == REDLOCK_OK
        && rl_conn_own(c, RL_ENTRY_TXN, 2, server, NULL) == REDLOCK_OK
        && rl_conn_own(c, RL_ENTRY_TXN, 2, repl, NULL) == REDLOCK_OK
        && rl_conn_own(c, RL_ENTRY_TXN, 1, time, NULL) == REDLOCK_OK
        && rl_conn_own(c, kind, 1, exec, NULL) == REDLOCK_OK;
}

/* The guard script (scripts/guard.lua) on this connection's server, as
 * kind, in form (FCALL of its function, or EVAL): *keyed is false when the
 * server serves no slot (no guard). */
static bool queue_guard(rl_conn *c, rl_entry_kind kind, rl_form form, bool *keyed)
{
    rl_node *node = &c->ctx->nodes[c->node];
    char key[RL_GUARD_KEY_MAX], lease[24], epoch[24];
    *keyed = guard_key(c, key, sizeof key);
    if (!*keyed)
        return true;
    /* A node without scripts reads and writes the guard with plain commands. */
    if (rl_conn_no_scripting(c)) {
        if (!queue_plain_guard(c, kind, key))
            return false;
        c->guards_owed += kind == RL_ENTRY_GUARD;
        return true;
    }
    snprintf(lease, sizeof lease, "%lld", (long long)rl_node_guard_ms(node));
    snprintf(epoch, sizeof epoch, "%lld", (long long)rl_node_epoch(node));
    bool fcall = form == RL_FORM_FCALL;
    const char *guard[6] = { fcall ? "FCALL" : "EVAL",
                             fcall ? rl_script_guard.fn : rl_script_guard.body, "1", key, lease,
                             epoch };
    if (!send_entry(c, kind, form, 6, guard))
        return false;
    if (kind == RL_ENTRY_GUARD) {
        c->guards_owed++;
        c->guard_forms |= (uint8_t)(1u << form);
    }
    return true;
}

/* The record of the group on this connection's server (records.h): GET in
 * the handshake, APPEND of what rl_records_owed says before a command. */
static bool queue_records(rl_conn *c, rl_entry_kind kind, const char *ids)
{
    const rl_options *o = &c->ctx->opt;
    char key[RL_GUARD_KEY_MAX];
    snprintf(key, sizeof key, "%.*s%s", (int)o->key_prefix_len, o->key_prefix, RL_RECORDS_KEY);
    const char *argv[3] = { kind == RL_ENTRY_RECORDS ? "GET" : "APPEND", key, ids };
    return send_own(c, kind, kind == RL_ENTRY_RECORDS ? 2 : 3, argv);
}

/* The handshake's guard, the way the node's last probe said (both ways
 * when none has answered yet: the guard is idempotent, a second run reads
 * its own record, and so its answer comes before any command's whichever
 * way this connection takes). */
static bool queue_guards(rl_conn *c, bool *keyed)
{
    int way = atomic_load(&c->ctx->nodes[c->node].scripts_way);
    if (rl_conn_no_scripting(c))
        return queue_guard(c, RL_ENTRY_GUARD, RL_FORM_EXEC, keyed);
    if (!queue_guard(c, RL_ENTRY_GUARD,
                     way == RL_SCRIPTS_FUNCTIONS ? RL_FORM_FCALL : RL_FORM_EVAL, keyed))
        return false;
    return !*keyed || way != RL_SCRIPTS_UNKNOWN
        || queue_guard(c, RL_ENTRY_GUARD, RL_FORM_FCALL, keyed);
}

bool rl_conn_calls_functions(const rl_conn *c)
{
    int way = c->scripts_way != RL_SCRIPTS_UNKNOWN
            ? c->scripts_way : atomic_load(&c->ctx->nodes[c->node].scripts_way);
    return way == RL_SCRIPTS_FUNCTIONS;
}

bool rl_conn_no_scripting(const rl_conn *c)
{
    return rl_node_scripting(&c->ctx->nodes[c->node], NULL, 0) == 0;
}

/* Whether a reply to a script sent in form on c (or to SCRIPT LOAD, the
 * guard) says that no script can run on c's node: "Could not find
 * scripting engine" (any script), or NOPERM naming 'eval' or 'evalsha'
 * where FCALL is refused too, or does not exist (before Redis 7.0, where
 * the handshake asks no probe), or was not asked (c was made while its node
 * ran no scripts, which a new run_id then forgot: an ACL outlives a
 * restart): the user may run no script at all. An ACL
 * that refuses FCALL alone, or EVAL alone, is not one: the other way runs
 * the scripts. Nor is a library missing where the ACL allows FCALL and not
 * EVAL: the scripts can run once it is loaded, and the refusal says so. */
static bool refuses_scripts(const rl_conn *c, int form, const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ERROR)
        return false;
    const char *s = reply->str;
    if (strstr(s, "Could not find scripting engine"))
        return true;
    if (form != RL_FORM_EVAL && form != RL_FORM_EVALSHA)
        return false;
    int version = rl_node_version(&c->ctx->nodes[c->node]);
    return strncmp(s, "NOPERM", 6) == 0 && (strstr(s, "'eval'") || strstr(s, "'evalsha'"))
        && !rl_conn_calls_functions(c)
        && (c->fcall_refused || c->opened_scriptless || (version > 0 && version < 700));
}

/* Such a reply came: the node runs no scripts (told once: no_scripting).
 * Its reason names each way of running scripts that was refused. */
static void no_scripting_found(rl_conn *c, const redisReply *reply)
{
    rl_node *node = &c->ctx->nodes[c->node];
    char why[100];
    if (strncmp(reply->str, "NOPERM", 6) == 0)
        snprintf(why, sizeof why, "NOPERM for '%s' and %s",
                 strstr(reply->str, "'evalsha'") ? "evalsha" : "eval",
                 c->fcall_refused ? "'fcall'" : "no FCALL before Redis 7.0");
    else
        snprintf(why, sizeof why, "%s", reply->str);
    if (rl_node_no_scripting(node, why))
        RL_LOG(c->ctx, REDLOCK_LOG_WARN, "no_scripting",
               "node=%s: %s (plain locks go by plain commands there; multi, read-write, "
               "semaphore and fair locks are refused)", node->addr.label, why);
}

void rl_conn_no_functions(rl_conn *c, const char *why)
{
    c->fcall_refused |= rl_reply_error_code(why) == REDLOCK_ENOPERM;
    c->no_library |= strncmp(why, "ERR Function not found", 22) == 0;
    c->scripts_way = RL_SCRIPTS_EVAL;
    atomic_store(&c->ctx->nodes[c->node].scripts_way, RL_SCRIPTS_EVAL);
}

/* AUTH and SELECT first (and ROLE, on a Sentinel node's master), and
 * nothing after them is written before they succeed; then SCRIPT LOAD of
 * every script (so that EVALSHA finds them), INFO (the run_id for the
 * restart guard, the version for SET NX GET) and the guard script (whether
 * the server may have lost keys: a promoted replica, a restart). Their
 * replies come before those of any command behind them, so a vote is
 * always judged knowing them. */
static bool queue_handshake(rl_conn *c)
{
    rl_node *node = &c->ctx->nodes[c->node];
    if (c->to.sentinel)
        return node->addr.kind == RL_NODE_CLUSTER ? queue_ask_slots(c) : queue_ask_sentinel(c);
    const rl_node_addr *a = &node->addr;
    if (!send_auth(c, a->user, a->password))
        return false;
    if (a->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", a->db);
        const char *argv[2] = { "SELECT", db };
        if (!send_own(c, RL_ENTRY_SELECT, 2, argv))
            return false;
    }
    if (a->kind == RL_NODE_SENTINEL) {
        const char *argv[1] = { "ROLE" };
        if (!send_own(c, RL_ENTRY_ROLE, 1, argv))
            return false;
    }
    c->gate = c->q_len > 0 ? c->queued : GATE_OPEN;
    /* May the library be called? Not asked of a server known to predate
     * functions (Redis 7.0). */
    int version = rl_node_version(node);
    bool scriptless = rl_conn_no_scripting(c);   /* nothing to probe or load (plain.h) */
    c->opened_scriptless = scriptless;
    if ((version > 0 && version < 700) || scriptless) {
        c->scripts_way = RL_SCRIPTS_EVAL;
    } else {
        const char *probe[3] = { "FCALL", rl_library_probe, "0" };
        if (!send_own(c, RL_ENTRY_PROBE, 3, probe))
            return false;
    }
    bool loads = atomic_load(&node->scripts_way) != RL_SCRIPTS_FUNCTIONS && !scriptless;
    for (int i = 0; !c->to.census && loads && i < RL_N_SCRIPTS; i++) {
        const char *argv[3] = { "SCRIPT", "LOAD", rl_scripts[i]->body };
        if (!send_own(c, RL_ENTRY_SCRIPT, 3, argv))
            return false;
    }
    const char *info[2] = { "INFO", "server" };
    if (!send_own(c, RL_ENTRY_INFO, 2, info))
        return false;
    if (!c->ctx->opt.restart_guard)
        return true;
    bool keyed = false;
    if (!queue_guards(c, &keyed))
        return false;
    if (!c->to.census && rl_records_kept(c->ctx, c->node)
        && !queue_records(c, RL_ENTRY_RECORDS, NULL))
        return false;
    if (!keyed) {
        rl_node_guard_read(node, c->to.server);   /* it serves no slot: nothing to guard */
        if (c->to.census)
            c->gate = c->queued;   /* the census connection ends on INFO's reply */
        return true;
    }
    /* A census connection asks for the guard and ends: nothing behind it is
     * written (handshake_reply). */
    if (c->to.census)
        c->gate = c->queued;
    return true;
}

static rl_conn *make(rl_client *ctx, size_t node, const rl_target *to)
{
    rl_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    atomic_fetch_add(&ctx->conns[node].open, 1);
    c->capped = true;
    c->ctx = ctx;
    c->node = node;
    c->state = RL_CONN_CONNECTING;
    c->io = -1;
    c->ask_server = -1;
    c->gate = GATE_OPEN;
    c->to = *to;
    if (!(c->reader = rl_reader_new()) || !queue_handshake(c)) {
        c->q_len = 0;   /* handshake entries hold no references */
        rl_conn_free(c);
        return NULL;
    }
    return c;
}

rl_conn *rl_conn_new(rl_client *ctx, size_t node)
{
    rl_target to;
    rl_node_target(&ctx->nodes[node], &to);
    return make(ctx, node, &to);
}

rl_conn *rl_conn_new_capped(rl_client *ctx, size_t node, int cap, const rl_target *to,
                            bool *full)
{
    _Atomic int *open = &ctx->conns[node].open;
    int n = atomic_load(open);
    *full = false;
    do {
        if (n >= cap) {
            *full = true;
            return NULL;
        }
    } while (!atomic_compare_exchange_weak(open, &n, n + 1));
    /* The place is taken: making it counts it again, so give it back. */
    rl_conn *c = make(ctx, node, to);
    atomic_fetch_sub(open, 1);
    return c;
}

int rl_conn_count(const rl_client *ctx, size_t node)
{
    return atomic_load(&((rl_client *)ctx)->conns[node].open);
}

void rl_conn_free(rl_conn *c)
{
    if (!c)
        return;
    if (c->capped)
        atomic_fetch_sub(&c->ctx->conns[c->node].open, 1);
    if (c->reader)
        redisReaderFree(c->reader);
    free(c->q);
    if (c->secret_end)
        rl_wipe(c->out, c->out_cap);
    free(c->out);
    free(c);
}

void rl_conn_connected(rl_conn *c)
{
    if (c->state == RL_CONN_CONNECTING) {
        c->state = RL_CONN_OPEN;
        c->connected = true;
    }
}

void rl_conn_break(rl_conn *c, int code, const char *fmt, ...)
{
    if (c->state == RL_CONN_BROKEN)
        return;
    va_list ap;
    c->state = RL_CONN_BROKEN;
    c->code = code;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
}

int rl_conn_send(rl_conn *c, const char *bytes, size_t len, struct rl_cmd *cmd, int form,
                 size_t keys)
{
    if (c->state == RL_CONN_BROKEN)
        return REDLOCK_ENOQUORUM;
    /* A guard that refused a vote is read again first, once in a while: a
     * record deleted or corrected then holds the node back no longer. */
    bool keyed;
    if (!c->to.sentinel && !c->to.census && rl_node_take_reread(&c->ctx->nodes[c->node])
        && !queue_guard(c, RL_ENTRY_REGUARD,
                        rl_conn_calls_functions(c) ? RL_FORM_FCALL : RL_FORM_EVAL, &keyed))
        return REDLOCK_ENOMEM;
    /* Run_ids the node's record lacks go before the command (records.h). */
    char ids[RL_RECORDS_OWED_MAX];
    if (!c->to.sentinel && !c->to.census && rl_records_kept(c->ctx, c->node)
        && rl_records_owed(c->ctx, c->node, c->heard_at, ids, sizeof ids) > 0
        && !queue_records(c, RL_ENTRY_RECORD, ids))
        return REDLOCK_ENOMEM;
    if (!append_bytes(c, bytes, len))
        return REDLOCK_ENOMEM;
    c->unwatched += form == RL_FORM_EXEC;   /* EXEC forgets every WATCH (plain.h) */
    if (!push_entry(c, (rl_entry){ .kind = RL_ENTRY_CMD, .form = (uint8_t)form,
                                   .end = c->queued, .cmd = cmd,
                                   .keys = keys > UINT32_MAX ? UINT32_MAX : (uint32_t)keys })) {
        /* The bytes are queued without an entry: the stream would be wrong. */
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
        return REDLOCK_ENOMEM;
    }
    return REDLOCK_OK;
}

int rl_conn_asking(rl_conn *c)
{
    if (c->state == RL_CONN_BROKEN)
        return REDLOCK_ENOQUORUM;
    const char *argv[1] = { "ASKING" };
    return send_own(c, RL_ENTRY_ASKING, 1, argv) ? REDLOCK_OK : REDLOCK_ENOMEM;
}

bool rl_conn_serves(rl_conn *c, const char *key)
{
    rl_node *node = &c->ctx->nodes[c->node];
    if (node->addr.kind != RL_NODE_CLUSTER)
        return true;
    int slot = key ? rl_key_slot(key, strlen(key)) : -1;
    return c->to.server >= 0 && rl_node_server_for(node, slot, -1) == c->to.server;
}

size_t rl_conn_output(const rl_conn *c, const char **bytes)
{
    if (c->state != RL_CONN_OPEN || c->out_len == 0)
        return 0;
    uint64_t allowed = c->gate == GATE_OPEN ? c->out_len : c->gate - c->written;
    *bytes = c->out;
    return allowed < c->out_len ? (size_t)allowed : c->out_len;
}

void rl_conn_wrote(rl_conn *c, size_t n, int64_t now)
{
    memmove(c->out, c->out + n, c->out_len - n);
    c->out_len -= n;
    if (c->written < c->secret_end)   /* AUTH's bytes left a copy behind the rest */
        rl_wipe(c->out + c->out_len, n);
    c->written += n;
    /* The entries whose last byte just went: their deadlines start now.
     * stamped never falls behind popped, so each entry is seen once. */
    if (c->stamped < c->popped)
        c->stamped = c->popped;
    while (c->stamped < c->popped + c->q_len) {
        rl_entry *e = &c->q[(c->q_head + (c->stamped - c->popped)) % c->q_cap];
        if (e->end > c->written)
            break;
        if (e->budget > 0 && e->deadline == 0) {
            e->sent_at = e->fresh ? 0 : now;
            e->deadline = now + e->budget;
        }
        c->stamped++;
    }
}

void rl_conn_budget(rl_conn *c, rl_entry *e, int64_t budget)
{
    e->budget = budget;
    e->fresh = c->state != RL_CONN_OPEN;
    e->sent_at = e->deadline = 0;
}

bool rl_conn_written(const rl_conn *c, uint64_t end)
{
    return c->written >= end;
}

int rl_conn_refuses(rl_conn *c, int64_t now, int64_t silent_ms, bool release, char *why,
                    size_t whylen)
{
    if (c->state != RL_CONN_OPEN || c->q_len < RL_CONN_SILENT_OWED)
        return 0;
    if (c->q_len >= RL_CONN_MAX_OWED) {
        snprintf(why, whylen, "the client's connection to it owes %zu replies: it is busy",
                 c->q_len);
        return RL_CONN_FAR_BEHIND;
    }
    if (release)
        return 0;
    /* Silent: nothing came for silent_ms, and the oldest command owed (past
     * the handshake's entries, which have no deadline) is overdue. */
    if (now - c->heard_at < silent_ms)
        return 0;
    const rl_entry *oldest = NULL;
    for (size_t i = 0; i < c->q_len && !oldest; i++) {
        const rl_entry *e = &c->q[(c->q_head + i) % c->q_cap];
        if (e->kind == RL_ENTRY_CMD)
            oldest = e;
    }
    if (!oldest || oldest->deadline == 0 || now <= oldest->deadline)
        return 0;
    /* One command goes all the same every silent_ms: the operation that
     * sent it reads the connection, and hears the node when it is back. */
    if (now >= c->probe_at) {
        c->probe_at = now + silent_ms;
        return 0;
    }
    snprintf(why, whylen, "no reply for %lld ms, %zu owed: it is stalled",
             (long long)(now - c->heard_at), c->q_len);
    return RL_CONN_SILENT;
}

bool rl_conn_unwritten(const rl_conn *c)
{
    return c->out_len > 0;
}

bool rl_conn_sending(const rl_conn *c)
{
    return c->state == RL_CONN_CONNECTING || (c->state == RL_CONN_OPEN && c->out_len > 0);
}

bool rl_conn_poolable(const rl_conn *c)
{
    return c->state == RL_CONN_OPEN && c->out_len == 0
        && !c->to.sentinel && rl_node_current(&c->ctx->nodes[c->node], c->to.gen);
}

rl_reply_limits rl_conn_limits(const rl_entry *e)
{
    static const char *const what[] = {
        [RL_ENTRY_AUTH] = "AUTH", [RL_ENTRY_SELECT] = "SELECT", [RL_ENTRY_ROLE] = "ROLE",
        [RL_ENTRY_EPOCH] = "SENTINEL MASTER", [RL_ENTRY_SENTINEL] = "SENTINEL GET-MASTER-ADDR",
        [RL_ENTRY_SLOTS] = "CLUSTER SLOTS", [RL_ENTRY_ASKING] = "ASKING",
        [RL_ENTRY_PROBE] = "the library's probe", [RL_ENTRY_SCRIPT] = "SCRIPT LOAD",
        [RL_ENTRY_INFO] = "INFO", [RL_ENTRY_GUARD] = "the guard script",
        [RL_ENTRY_REGUARD] = "the guard script", [RL_ENTRY_LOAD] = "FUNCTION LOAD",
        [RL_ENTRY_RECORDS] = "GET of the group's record", [RL_ENTRY_RECORD] = "APPEND to it",
        [RL_ENTRY_WAKE] = "PUBLISH of a release", [RL_ENTRY_CMD] = "a command of a lock",
        [RL_ENTRY_TXN] = "a command of a transaction",
    };
    if (!e)
        return (rl_reply_limits){ RL_REPLY_SMALL_BYTES, RL_REPLY_SMALL_ELEMS,
                                  "a reply nobody asked for" };
    switch ((rl_entry_kind)e->kind) {
    case RL_ENTRY_SLOTS:
        return (rl_reply_limits){ RL_REPLY_SLOTS_BYTES, RL_REPLY_SLOTS_ELEMS, what[e->kind] };
    case RL_ENTRY_ROLE:
    case RL_ENTRY_EPOCH:
    case RL_ENTRY_SENTINEL:
    case RL_ENTRY_INFO:
    case RL_ENTRY_RECORDS:
        return (rl_reply_limits){ RL_REPLY_INFO_BYTES, RL_REPLY_INFO_ELEMS, what[e->kind] };
    case RL_ENTRY_GUARD:
    case RL_ENTRY_REGUARD:   /* the plain guard's EXEC holds two INFOs (plain.h) */
        if (e->form == RL_FORM_EXEC)
            return (rl_reply_limits){ RL_REPLY_INFO_BYTES, RL_REPLY_INFO_ELEMS, what[e->kind] };
        return (rl_reply_limits){ RL_REPLY_SMALL_BYTES, RL_REPLY_SMALL_ELEMS, what[e->kind] };
    case RL_ENTRY_CMD: {
        /* A command of many keys answers for each of them. */
        uint64_t keys = e->keys;
        return (rl_reply_limits){ RL_REPLY_CMD_BYTES + keys * RL_REPLY_CMD_KEY_BYTES,
                                  RL_REPLY_CMD_ELEMS + keys * RL_REPLY_CMD_KEY_ELEMS,
                                  what[e->kind] };
    }
    default:
        return (rl_reply_limits){ RL_REPLY_SMALL_BYTES, RL_REPLY_SMALL_ELEMS, what[e->kind] };
    }
}

void rl_conn_feed(rl_conn *c, const char *buf, size_t len)
{
    if (c->state == RL_CONN_BROKEN)
        return;
    /* Reply by reply, each against the bounds of what it answers: the
     * entry it will pop (replies scanned but not yet read are ahead). */
    for (size_t at = 0, used; at < len; at += used) {
        if (rl_bound_idle(&c->bound)) {
            uint64_t k = c->scanned - c->popped;
            c->bound.lim = rl_conn_limits(k < c->q_len ? rl_conn_entry(c, (size_t)k) : NULL);
        }
        char why[sizeof c->why];
        int r = rl_bound_scan(&c->bound, buf + at, len - at, &used, why, sizeof why);
        if (r == RL_BOUND_BAD) {
            rl_conn_break(c, REDLOCK_EREDIS, "%s", why);
            return;
        }
        c->scanned += r == RL_BOUND_DONE;
    }
    if (redisReaderFeed(c->reader, buf, len) != REDIS_OK)
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
}

/* Ends a connection whose node's master moved, or was just found: nothing
 * of an operation was written on it, and its operation asks again. */
static void redirect(rl_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void redirect(rl_conn *c, const char *fmt, ...)
{
    char why[sizeof c->why];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rl_conn_break(c, REDLOCK_ENOQUORUM, "%s", why);
    c->redirected = true;
}

/* A sentinel's answer: where the node's master is. */
static void sentinel_reply(rl_conn *c, const redisReply *reply)
{
    rl_node *node = &c->ctx->nodes[c->node];
    char sentinel[96];
    snprintf(sentinel, sizeof sentinel, "%s:%d", c->to.host, c->to.port);
    long port = 0;
    char *end = NULL;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2
        && reply->element[0]->type == REDIS_REPLY_STRING
        && reply->element[1]->type == REDIS_REPLY_STRING
        && (port = strtol(reply->element[1]->str, &end, 10)) > 0 && port < 65536 && !*end) {
        rl_node_resolved(node, c->to.gen, reply->element[0]->str, (int)port, c->opened_at);
        redirect(c, "sentinel %s named the master %s: connecting to it", sentinel,
                 reply->element[0]->str);
        return;
    }
    rl_node_sentinel_missed(node, c->to.gen);
    if (reply->type == REDIS_REPLY_ERROR && rl_reply_error_code(reply->str) == REDLOCK_EAUTH)
        redirect(c, "sentinel %s refused: %.60s (its credentials: sentinel_user, "
                 "sentinel_password)", sentinel, reply->str);
    else if (reply->type == REDIS_REPLY_ERROR)
        redirect(c, "sentinel %s refused: %.100s", sentinel, reply->str);
    else
        redirect(c, "sentinel %s does not know the master %.60s", sentinel,
                 node->addr.master_name);
}

/* A seed's CLUSTER SLOTS: the node's slot map. */
static void slots_reply(rl_conn *c, const redisReply *reply)
{
    rl_node *node = &c->ctx->nodes[c->node];
    char seed[96];
    snprintf(seed, sizeof seed, "%s:%d", c->to.host, c->to.port);
    rl_slot_map map;
    rl_slot_map_init(&map);
    int rc = reply->type == REDIS_REPLY_ERROR
           ? rl_fail(rl_reply_error_code(reply->str), "%.100s", reply->str)
           : rl_slot_map_from_slots(&map, reply, c->to.host);
    if (rc == REDLOCK_OK && map.n_shards == 0)
        rc = rl_fail(REDLOCK_EREDIS, "no slot is served");
    if (rc == REDLOCK_OK)
        rc = rl_node_mapped(node, c->to.gen, &map);
    rl_slot_map_free(&map);
    if (rc == REDLOCK_OK) {
        redirect(c, "seed %s told the slot map: connecting to the masters", seed);
        return;
    }
    rl_node_sentinel_missed(node, c->to.gen);
    redirect(c, "seed %s gave no slot map: %.100s", seed, rl_errmsg());
}

/* SENTINEL MASTER: the group's failover count (config-epoch), for the
 * guard of the master it names next. */
static void epoch_reply(rl_conn *c, const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *k = reply->element[i], *v = reply->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING
            && strcmp(k->str, "config-epoch") == 0)
            rl_node_saw_epoch(&c->ctx->nodes[c->node], strtoll(v->str, NULL, 10));
    }
}

/* ROLE of a Sentinel node's master: anything but a master sends the node
 * back to its sentinels. */
static void role_reply(rl_conn *c, const redisReply *reply, int64_t now)
{
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0
        && reply->element[0]->type == REDIS_REPLY_STRING
        && strcmp(reply->element[0]->str, "master") == 0)
        return;
    char server[96], role[32];
    snprintf(server, sizeof server, "%s:%d", c->to.host, c->to.port);
    snprintf(role, sizeof role, "%s",
             reply->type == REDIS_REPLY_ARRAY && reply->elements > 0
                     && reply->element[0]->type == REDIS_REPLY_STRING
                 ? reply->element[0]->str : "not a master");
    rl_node_master_lost(&c->ctx->nodes[c->node], c->to.gen, "its master is a replica now", now);
    redirect(c, "%s is %s now: asking the sentinels again", server, role);
}

/* The library's probe: the library's name when its functions may be
 * called. Otherwise the scripts go as EVALSHA and EVAL; and with the option
 * load_functions, a library not there is loaded (never replaced: a library
 * of this name holds these very functions). */
static void probe_reply(rl_conn *c, const redisReply *reply)
{
    rl_node *node = &c->ctx->nodes[c->node];
    bool callable = reply->type == REDIS_REPLY_STRING && strcmp(reply->str, rl_library_name) == 0;
    if (callable) {
        c->scripts_way = RL_SCRIPTS_FUNCTIONS;
        atomic_store(&node->scripts_way, RL_SCRIPTS_FUNCTIONS);
    } else {
        rl_conn_no_functions(c, reply->type == REDIS_REPLY_ERROR ? reply->str : "");
    }
    if (callable || c->to.census || !atomic_load(&c->ctx->opt.load_functions)
        || atomic_load(&node->load_refused) || reply->type != REDIS_REPLY_ERROR
        || strncmp(reply->str, "ERR Function not found", 22) != 0)
        return;
    const char *argv[3] = { "FUNCTION", "LOAD", rl_library };
    if (!send_own(c, RL_ENTRY_LOAD, 3, argv))
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
}

/* FUNCTION LOAD's answer: the library's name, or that it is there already
 * (another client loaded it meanwhile). A refusal is told once. */
static void load_reply(rl_conn *c, const redisReply *reply, int64_t now)
{
    rl_node *node = &c->ctx->nodes[c->node];
    bool there = reply->type == REDIS_REPLY_ERROR && strstr(reply->str, "already exists");
    if (reply->type == REDIS_REPLY_STRING || there) {
        c->no_library = false;
        c->scripts_way = RL_SCRIPTS_FUNCTIONS;
        atomic_store(&node->scripts_way, RL_SCRIPTS_FUNCTIONS);
        if (!there)
            RL_LOG(c->ctx, REDLOCK_LOG_INFO, "functions_loaded", "node=%s library=%s",
                   node->addr.label, rl_library_name);
        return;
    }
    atomic_store(&node->load_refused, true);
    char why[160];
    snprintf(why, sizeof why, "FUNCTION LOAD refused: %.120s",
             reply->type == REDIS_REPLY_ERROR ? reply->str : "not the library's name");
    rl_node_failed(node, RL_NODE_KEEP, why, now);
}

bool rl_conn_unrun(const rl_conn *c, int form, const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ERROR)
        return false;
    if (form == RL_FORM_FCALL)
        return rl_reply_no_function(reply) || rl_conn_no_scripting(c);
    /* A native command the server does not know (not the server its INFO
     * said), does not parse, or that the ACL refuses (NOPERM naming the
     * command, not a key: a key refused is refused to the script too). */
    if (form == RL_FORM_IFEQ || form == RL_FORM_DELIFEQ)
        return strncmp(reply->str, "ERR unknown command", 19) == 0
            || strncmp(reply->str, "ERR syntax error", 16) == 0
            || (strncmp(reply->str, "NOPERM", 6) == 0 && strstr(reply->str, "run the"));
    if (form != RL_FORM_EVAL && form != RL_FORM_EVALSHA)
        return false;
    /* A node that runs no scripts: whatever it said, the script did not run,
     * and the command goes in its plain form (plain.h). */
    if (rl_conn_no_scripting(c))
        return true;
    /* An ACL without +eval or +evalsha (the one for the library) refuses
     * the command itself, before any script runs: NOPERM and its name. */
    return rl_reply_is_noscript(reply)
        || (rl_conn_calls_functions(c) && strncmp(reply->str, "NOPERM", 6) == 0
            && (strstr(reply->str, "'eval") || strstr(reply->str, "'evalsha")));
}

int rl_conn_wake(rl_conn *c, const char *channel, const char *message)
{
    const char *argv[3] = { "PUBLISH", channel, message };
    return rl_conn_own(c, RL_ENTRY_WAKE, 3, argv, NULL);
}

int rl_conn_own(rl_conn *c, rl_entry_kind kind, int argc, const char **argv,
                const size_t *lens)
{
    if (c->state == RL_CONN_BROKEN)
        return REDLOCK_ENOQUORUM;
    rl_bytes b;
    if (rl_bytes_format_len(&b, argc, argv, lens) != REDLOCK_OK) {
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
        return REDLOCK_ENOMEM;
    }
    bool ok = append_bytes(c, b.p, b.len)
        && push_entry(c, (rl_entry){ .kind = (uint8_t)kind, .form = RL_FORM_EXEC,
                                     .end = c->queued });
    rl_bytes_free(&b);
    if (!ok) {
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");   /* its bytes may be queued */
        return REDLOCK_ENOMEM;
    }
    c->unwatched += strcmp(argv[0], "EXEC") == 0 || strcmp(argv[0], "UNWATCH") == 0
                  || strcmp(argv[0], "DISCARD") == 0;
    return REDLOCK_OK;
}

/* A guard of the handshake answered (e, its entry): false when its answer
 * is not told, as it went a way that does not run here while the other
 * way was or is now sent too (it reads the guard in its place). */
static bool guard_told(rl_conn *c, const rl_entry *e, const redisReply *reply)
{
    c->guards_owed--;
    if (reply->type != REDIS_REPLY_ERROR || e->form == RL_FORM_EXEC)
        return true;
    rl_form form = (rl_form)e->form, other = form == RL_FORM_FCALL ? RL_FORM_EVAL : RL_FORM_FCALL;
    bool keyed;
    if (rl_conn_no_scripting(c)) {
        /* No script runs there: the guard in plain commands (plain.h), once
         * the other script's guard, if one went, has answered too. */
        if (c->guards_owed > 0)
            return false;
        if (!queue_guard(c, RL_ENTRY_GUARD, RL_FORM_EXEC, &keyed)) {
            rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
            return false;
        }
        return !keyed;
    }
    bool both = c->guard_forms & (1u << other);
    bool fcall = rl_conn_calls_functions(c);
    /* Both went (the node's way was not known): the one of the other way
     * than this connection's says nothing. */
    if (both)
        return fcall == (form == RL_FORM_FCALL);
    if (!rl_conn_unrun(c, form, reply))
        return true;
    if (form == RL_FORM_FCALL)
        rl_conn_no_functions(c, reply->str);
    if (!queue_guard(c, RL_ENTRY_GUARD, other, &keyed)) {
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
        return false;
    }
    return !keyed;
}

/* The record's GET or APPEND answered. A refusal (an ACL without them, or
 * the key of another type) leaves the node out of the records, and its
 * health says why. */
static void records_reply(rl_conn *c, rl_entry_kind kind, const redisReply *reply, int64_t now)
{
    if (reply->type == REDIS_REPLY_ERROR) {
        char why[160];
        snprintf(why, sizeof why, "%s refused (a restart without data is not caught "
                 "through it): %.80s", kind == RL_ENTRY_RECORDS ? "GET" : "APPEND", reply->str);
        rl_records_refused(c->ctx, c->node);
        rl_node_failed(&c->ctx->nodes[c->node], RL_NODE_KEEP, why, now);
    } else if (kind == RL_ENTRY_RECORD) {
        rl_records_added(c->ctx, c->node);
    } else {
        rl_records_read(c->ctx, c->node, reply->type == REDIS_REPLY_STRING ? reply->str : NULL,
                        reply->type == REDIS_REPLY_STRING ? reply->len : 0);
    }
}

/* The plain guard's answer (guard.h): its milliseconds, or -1; its record
 * written with a plain SET when the script would write it. */
static int64_t plain_guard(rl_conn *c, const redisReply *reply)
{
    char key[RL_GUARD_KEY_MAX], record[96];
    bool refused = c->txn_error[0] != '\0';
    c->txn_error[0] = '\0';
    if (refused || !guard_key(c, key, sizeof key))
        return -1;
    int64_t left = rl_guard_plain(&c->ctx->nodes[c->node], reply, record, sizeof record);
    const char *set[3] = { "SET", key, record };
    if (left >= 0 && record[0] && rl_conn_own(c, RL_ENTRY_WAKE, 3, set, NULL) != REDLOCK_OK)
        return -1;
    return left;
}

/* A reply of the handshake: REDLOCK_OK, or breaks the connection. */
static void handshake_reply(rl_conn *c, const rl_entry *e, const redisReply *reply, int64_t now)
{
    rl_node *node = &c->ctx->nodes[c->node];
    rl_entry_kind kind = (rl_entry_kind)e->kind;
    if (kind == RL_ENTRY_SENTINEL) {
        sentinel_reply(c, reply);
        return;
    }
    if (kind == RL_ENTRY_SLOTS) {
        slots_reply(c, reply);
        return;
    }
    if (kind == RL_ENTRY_ASKING || kind == RL_ENTRY_WAKE)
        return;
    if (kind == RL_ENTRY_TXN) {   /* kept for the answer behind it (plain.h) */
        if (reply->type == REDIS_REPLY_ERROR && !c->txn_error[0])
            snprintf(c->txn_error, sizeof c->txn_error, "%s", reply->str);
        return;
    }
    /* Does the node run scripts? A script's answer says yes, some refusals
     * say no (plain.h). */
    bool scripted = (kind == RL_ENTRY_SCRIPT || kind == RL_ENTRY_GUARD
                     || kind == RL_ENTRY_REGUARD) && e->form != RL_FORM_EXEC;
    if (scripted && refuses_scripts(c, kind == RL_ENTRY_SCRIPT ? RL_FORM_EVAL : e->form, reply))
        no_scripting_found(c, reply);
    else if ((scripted && reply->type != REDIS_REPLY_ERROR)
             || (kind == RL_ENTRY_PROBE && reply->type == REDIS_REPLY_STRING))
        rl_node_scripts_ran(node);   /* an error here: the command behind it says it too; a wake-up's is
                   * dropped as release.lua's pcall drops it */
    if (kind == RL_ENTRY_EPOCH) {   /* an error here: the address's says it too */
        epoch_reply(c, reply);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR && node->addr.kind == RL_NODE_SENTINEL
        && rl_reply_readonly(reply->str)) {
        rl_node_master_lost(node, c->to.gen, "its master is a replica now", now);
        redirect(c, "%s is a replica now (READONLY): asking the sentinels again",
                 node->addr.label);
        return;
    }
    if (kind == RL_ENTRY_REGUARD) {   /* an error: the guard stays as it was read */
        int64_t left = e->form == RL_FORM_EXEC ? plain_guard(c, reply) : -1;
        if (left >= 0)
            rl_node_guard_reread(node, left, now);
        else if (e->form != RL_FORM_EXEC && reply->type == REDIS_REPLY_INTEGER)
            rl_node_guard_reread(node, reply->integer, now);
        return;
    }
    if (kind == RL_ENTRY_PROBE) {
        probe_reply(c, reply);
        return;
    }
    if (kind == RL_ENTRY_RECORDS || kind == RL_ENTRY_RECORD) {
        records_reply(c, kind, reply, now);
        return;
    }
    if (kind == RL_ENTRY_LOAD) {
        load_reply(c, reply, now);
        return;
    }
    /* SCRIPT LOAD's refusal says nothing when the library is called. */
    if (kind == RL_ENTRY_SCRIPT && c->scripts_way == RL_SCRIPTS_FUNCTIONS)
        return;
    if (kind == RL_ENTRY_GUARD && !guard_told(c, e, reply))
        return;   /* another guard tells */
    if (reply->type == REDIS_REPLY_ERROR) {
        if (kind == RL_ENTRY_AUTH || kind == RL_ENTRY_SELECT) {
            int code = rl_reply_error_code(reply->str);
            /* A sentinel's AUTH takes sentinel_user and sentinel_password,
             * not the master's credentials: say whose were refused. */
            bool of_sentinel = kind == RL_ENTRY_AUTH && c->to.sentinel
                               && node->addr.kind == RL_NODE_SENTINEL;
            rl_conn_break(c, code, "connection setup refused (%s): %.100s",
                          of_sentinel ? "a sentinel's AUTH: sentinel_user, sentinel_password"
                          : kind == RL_ENTRY_AUTH ? "AUTH" : "SELECT", reply->str);
            rl_node_failed(node, rl_node_state_after(code), c->why, now);
        } else {
            /* SCRIPT LOAD, INFO, ROLE or the guard refused (an ACL without
             * them): the connection works without them (EVAL; no restart
             * guard for this node), and the node's health says why. */
            static const char *const names[] = {
                [RL_ENTRY_ROLE] = "ROLE", [RL_ENTRY_SCRIPT] = "SCRIPT LOAD",
                [RL_ENTRY_INFO] = "INFO", [RL_ENTRY_GUARD] = "the guard script",
            };
            char why[160];
            snprintf(why, sizeof why, "%s refused: %.120s", names[kind], reply->str);
            /* The guard calls INFO too: INFO's refusal is the one to tell. */
            if (kind != RL_ENTRY_GUARD || !c->info_refused)
                rl_node_failed(node, RL_NODE_KEEP, why, now);
            c->info_refused |= kind == RL_ENTRY_INFO;
        }
    } else if (kind == RL_ENTRY_ROLE) {
        role_reply(c, reply, now);
    } else if (kind == RL_ENTRY_INFO && reply->type == REDIS_REPLY_STRING) {
        rl_nodes_saw_info(c->ctx->nodes, c->ctx->n_nodes, c->node, c->to.server, reply->str,
                          reply->len, now);
        /* The handshake's round trip (AUTH, SCRIPT LOAD and INFO together). */
        rl_node_answered(node, now - c->opened_at, now);
    } else if (kind == RL_ENTRY_GUARD && e->form == RL_FORM_EXEC) {
        int64_t left = plain_guard(c, reply);
        if (left >= 0)
            rl_node_guarded(node, left, now);
        else
            rl_node_failed(node, RL_NODE_KEEP, "the guard's transaction refused (a node without "
                           "scripts needs +multi +exec +info +time +get +set)", now);
    } else if (kind == RL_ENTRY_GUARD && reply->type == REDIS_REPLY_INTEGER) {
        rl_node_guarded(node, reply->integer, now);
    }
    /* The guard's answer, or its refusal (then this node has none), is
     * known; a census connection has done its work. */
    if (kind == RL_ENTRY_GUARD)
        rl_node_guard_read(node, c->to.server);
    if (c->to.census && c->state != RL_CONN_BROKEN
        && (kind == RL_ENTRY_GUARD
            || (kind == RL_ENTRY_INFO
                && (c->q_len == 0 || c->q[c->q_head].kind != RL_ENTRY_GUARD)))) {
        redirect(c, "read the guard of master %s:%d", c->to.host, c->to.port);
        return;
    }
    /* The last reply of AUTH, SELECT and ROLE opens the gate. */
    if (kind <= RL_ENTRY_ROLE && c->gate != GATE_OPEN && c->state != RL_CONN_BROKEN
        && !c->to.census && (c->q_len == 0 || c->q[c->q_head].kind > RL_ENTRY_SLOTS))
        c->gate = GATE_OPEN;
}

/* A Cluster master's -MOVED or -ASK: the map learns a MOVED, an ASK names
 * the master for the next try of this command alone (c->ask_server); the
 * connection ends as redirected either way. */
static bool cluster_moved(rl_conn *c, const redisReply *reply)
{
    rl_node *node = &c->ctx->nodes[c->node];
    rl_redirect r;
    if (rl_redirect_parse(&r, reply->str, reply->len, c->to.host) != REDLOCK_OK
        || r.kind == RL_REDIRECT_NONE)
        return false;
    if (r.kind == RL_REDIRECT_MOVED) {
        rl_node_slot_moved(node, r.slot, r.host, r.port);
        RL_LOG(c->ctx, REDLOCK_LOG_INFO, "slots_moved", "node=%s slot=%d old=%s:%d new=%s:%d",
               node->addr.label, r.slot, c->to.host, c->to.port, r.host, r.port);
        redirect(c, "slot %d moved to %s:%d", r.slot, r.host, r.port);
    } else {
        c->ask_server = rl_node_server_index(node, r.host, r.port);
        redirect(c, "slot %d is migrating to %s:%d: asking there", r.slot, r.host, r.port);
    }
    return true;
}

bool rl_conn_moved(rl_conn *c, const redisReply *reply, int64_t now)
{
    rl_node *node = &c->ctx->nodes[c->node];
    if (node->addr.kind == RL_NODE_CLUSTER && reply->type == REDIS_REPLY_ERROR)
        return cluster_moved(c, reply);
    if (node->addr.kind != RL_NODE_SENTINEL || reply->type != REDIS_REPLY_ERROR
        || !rl_reply_readonly(reply->str))
        return false;
    rl_node_master_lost(node, c->to.gen, "its master is a replica now", now);
    redirect(c, "%s:%d is a replica now (READONLY): asking the sentinels again", c->to.host,
             c->to.port);
    return true;
}

int rl_conn_next(rl_conn *c, redisReply **reply, rl_entry *entry, int64_t now)
{
    for (;;) {
        if (c->state == RL_CONN_BROKEN)
            return -1;
        void *r = NULL;
        if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
            rl_conn_break(c, REDLOCK_EREDIS, "bad reply: %s", c->reader->errstr);
            return -1;
        }
        if (!r)
            return 0;
        if (c->q_len == 0) {
            freeReplyObject(r);
            rl_conn_break(c, REDLOCK_EREDIS, "a reply that no command asked for");
            return -1;
        }
        rl_entry e = pop_entry(c);
        c->heard_at = now;
        if (e.kind == RL_ENTRY_CMD && refuses_scripts(c, e.form, r))
            no_scripting_found(c, r);   /* before its owner reads it */
        if (e.kind != RL_ENTRY_CMD) {
            handshake_reply(c, &e, r, now);
            freeReplyObject(r);
            continue;
        }
        *reply = r;
        *entry = e;
        return 1;
    }
}

size_t rl_conn_owed(const rl_conn *c)
{
    return c->q_len;
}

rl_entry *rl_conn_entry(rl_conn *c, size_t i)
{
    return i < c->q_len ? &c->q[(c->q_head + i) % c->q_cap] : NULL;
}

int rl_conn_pop_lost(rl_conn *c, rl_entry *entry, bool *written)
{
    while (c->q_len > 0) {
        rl_entry e = pop_entry(c);
        if (e.kind != RL_ENTRY_CMD)
            continue;
        *entry = e;
        *written = c->written >= e.end;
        return 1;
    }
    return 0;
}
