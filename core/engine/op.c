/* op.c - acquire, extend and release as state machines (see op.h): making
 * an operation, what the driver does next, and a connection's events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "check.h"
#include "client.h"
#include "log.h"
#include "node.h"
#include "op.h"
#include "round.h"
#include "send.h"
#include "owed.h"
#include "plain.h"
#include "quorum.h"
#include "slots.h"

/* "lock 'orders'" or "lock 'orders' and 2 more", for messages. */
static void describe(rl_op *op, const char *verb)
{
    const rl_keys *k = op->h->keys;
    if (k->n != 1) {
        snprintf(op->what, sizeof op->what, "%s '%.200s' and %zu more", verb, k->k[0], k->n - 1);
        return;
    }
    /* One resource, on every call: put together without snprintf's cost
     * (a verb of at most 60 bytes and 200 of the name fit in what). */
    size_t v = strnlen(verb, 60), r = strnlen(k->k[0], 200);
    memcpy(op->what, verb, v);
    op->what[v] = ' ';
    op->what[v + 1] = '\'';
    memcpy(op->what + v + 2, k->k[0], r);
    op->what[v + 2 + r] = '\'';
    op->what[v + 3 + r] = '\0';
}

/* ---- making operations ---- */

static int fair_waiter(rl_op *op);

/* A lock that needs a script on each node (a multi-lock, a read-write
 * lock, a semaphore, a fair lock) is refused at once where the nodes known
 * to run no scripts (plain.h) leave too few to make its quorum: it could
 * never be taken, and waiting would only end in "no quorum". With fewer of
 * them it goes on, and they count as failed, as nodes that are down. */
static int scripts_enough(rl_client *ctx, rl_lock_kind kind, int permits)
{
    size_t without = rl_client_scriptless(ctx);
    size_t q = kind == RL_LOCK_PERMIT ? rl_quorum_of(ctx->n_nodes, permits)
                                      : rl_quorum(ctx->n_nodes);
    if (without == 0 || ctx->n_nodes - without >= q)
        return REDLOCK_OK;
    size_t i = 0;
    char why[100];
    while (i + 1 < ctx->n_nodes && rl_node_scripting(&ctx->nodes[i], why, sizeof why) != 0)
        i++;
    rl_node_scripting(&ctx->nodes[i], why, sizeof why);
    return rl_fail(REDLOCK_EUNSUPPORTED, "%s needs a Lua script on each node, and %zu of %zu "
                   "nodes run no scripting (node %s: %.60s): too few for its quorum of %zu; "
                   "plain locks of one key work without",
                   kind == RL_LOCK_READ || kind == RL_LOCK_WRITE ? "a read-write lock"
                   : kind == RL_LOCK_PERMIT ? "a semaphore" : kind == RL_LOCK_FAIR ? "a fair lock"
                   : "a lock of several keys", without, ctx->n_nodes, ctx->nodes[i].addr.label,
                   why, q);
}

/* A lock operation: a plain lock of names, a read-write lock's read or
 * write lock of names[0] (kind), whose read lock may join the caller's
 * write lock of token joins (a downgrade; "" none), or a permit of the
 * semaphore names[0] of `permits`. */
static int lock_new(rl_op **out, rl_client *ctx, const char *const *names, size_t n,
                    rl_lock_kind kind, const char *joins, int permits, int64_t ttl_ms,
                    int64_t wait_ms, int64_t now)
{
    int rc = rl_handle_check_lease(ctx, ttl_ms);
    if (rc != REDLOCK_OK)
        return rc;
    if ((rc = rl_check_arg(NULL, REDLOCK_ARG_WAIT, NULL, (double)wait_ms)) != REDLOCK_OK)
        return rc;
    if ((kind != RL_LOCK_PLAIN || n > 1) && (rc = scripts_enough(ctx, kind, permits)) != REDLOCK_OK)
        return rc;
    redlock_handle *h = NULL;
    if ((rc = rl_handle_new(&h, ctx, names, n)) != REDLOCK_OK)
        return rc;
    h->keys->kind = kind;
    h->keys->permits = permits;
    const char *key = h->keys->k[0];
    if (kind != RL_LOCK_PLAIN && rl_handle_has_cluster(ctx) && !rl_key_has_tag(key)
        && strchr(key, '}')) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_EINVAL, "%s '%.100s': on a Cluster node, a name with a '}' "
                       "needs a hash tag (the part in braces, as in {order:7}), so that the "
                       "key beside its own (%s) lives in its slot",
                       kind == RL_LOCK_PERMIT ? "semaphore"
                       : kind == RL_LOCK_FAIR ? "fair lock" : "read-write lock",
                       key + ctx->opt.key_prefix_len,
                       kind == RL_LOCK_PERMIT ? "its permits"
                       : kind == RL_LOCK_FAIR ? "its queue" : "its readers");
    }
    rl_op *op = rl_op_new(ctx, OP_LOCK, now);
    if (!op) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->h = h;
    op->owns_handle = true;
    op->n_parts = h->n_parts;
    op->parts = h->parts;
    snprintf(op->joins, sizeof op->joins, "%s", joins);
    /* Fencing counts writers: a read lock, and a permit, have no fence. */
    op->fenced = ctx->opt.fencing && (kind == RL_LOCK_PLAIN || kind == RL_LOCK_WRITE);
    if (op->fenced && (!(h->fences = calloc(n, sizeof *h->fences))
                       || !(op->got = calloc(n * ctx->n_nodes, sizeof *op->got)))) {
        rl_op_free(op);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->ttl_ms = ttl_ms;
    op->give_up = wait_ms > INT64_MAX - now ? INT64_MAX : now + wait_ms;
    op->unavailable_since = INT64_MAX;
    describe(op, kind == RL_LOCK_READ ? "read lock" : kind == RL_LOCK_WRITE ? "write lock"
                 : kind == RL_LOCK_PERMIT ? "permit of semaphore"
                 : kind == RL_LOCK_FAIR ? "fair lock" : "lock");
    if (kind == RL_LOCK_FAIR && (rc = fair_waiter(op)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    rl_ctx_note_lease(ctx, ttl_ms);
    if ((rc = rl_round_start(op, RL_CMD_ACQUIRE, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_lock(rl_op **out, rl_client *ctx, const char *const *names, size_t n,
               int64_t ttl_ms, int64_t wait_ms, int64_t now)
{
    return lock_new(out, ctx, names, n, RL_LOCK_PLAIN, "", 0, ttl_ms, wait_ms, now);
}

int rl_op_lock_rw(rl_op **out, rl_client *ctx, const char *name, int mode,
                  const redlock_handle *held, int64_t ttl_ms, int64_t wait_ms, int64_t now)
{
    if (mode != REDLOCK_READ && mode != REDLOCK_WRITE)
        return rl_fail(REDLOCK_EINVAL, "mode must be REDLOCK_READ or REDLOCK_WRITE, got %d",
                       mode);
    bool write = mode == REDLOCK_WRITE;
    const char *joins = "";
    if (held) {
        size_t p = ctx->opt.key_prefix_len;
        if (held->ctx != ctx || held->keys->kind == RL_LOCK_PLAIN || !name
            || strcmp(held->keys->k[0] + p, name) != 0)
            return rl_fail(REDLOCK_EINVAL, "the lock held must be a read or write lock of the "
                           "same resource, from the same client");
        if (write && held->keys->kind == RL_LOCK_READ)
            return rl_fail(REDLOCK_EINVAL, "read-write lock '%.200s': a read lock cannot be "
                           "upgraded to the write lock (release it, then take the write lock)",
                           name);
        if (!write && held->keys->kind == RL_LOCK_WRITE && held->held && !held->released)
            joins = held->token;   /* its own write lock: a downgrade */
    }
    return lock_new(out, ctx, &name, 1, write ? RL_LOCK_WRITE : RL_LOCK_READ, joins, 0, ttl_ms,
                    wait_ms, now);
}

/* A fair lock's waiter: its id, and the channel of its wake-up. */
static int fair_waiter(rl_op *op)
{
    int rc = rl_round_new_token(op->ctx, op->waiter);
    if (rc != REDLOCK_OK)
        return rl_fail(rc, "the operating system's random source failed");
    const char *key = op->h->keys->k[0];
    size_t len = strlen(key) + sizeof ":waiter:" + RL_TOKEN_LEN;
    op->channel = rl_keys_new(1);
    if (!op->channel || !(op->channel->k[0] = malloc(len)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    snprintf(op->channel->k[0], len, "%s:waiter:%s", key, op->waiter);
    return REDLOCK_OK;
}

int rl_op_lock_fair(rl_op **out, rl_client *ctx, const char *name, int64_t ttl_ms,
                    int64_t wait_ms, int64_t now)
{
    return lock_new(out, ctx, &name, 1, RL_LOCK_FAIR, "", 0, ttl_ms, wait_ms, now);
}

int rl_op_acquire_permit(rl_op **out, rl_client *ctx, const char *name, int permits,
                         int64_t ttl_ms, int64_t wait_ms, int64_t now)
{
    int rc = rl_check_arg(NULL, REDLOCK_ARG_PERMITS, NULL, permits);
    if (rc != REDLOCK_OK)
        return rc;
    return lock_new(out, ctx, &name, 1, RL_LOCK_PERMIT, "", permits, ttl_ms, wait_ms, now);
}

int rl_op_extend(rl_op **out, redlock_handle *h, int64_t ttl_ms, int64_t now)
{
    int rc = rl_handle_check_lease(h->ctx, ttl_ms);
    if (rc != REDLOCK_OK)
        return rc;
    if (!h->held)
        return rl_fail(REDLOCK_ENOTHELD, "extend: the lock was %s",
                       h->released ? "released" : "lost");
    if (h->expires_at <= now) {
        h->held = false;
        return rl_fail(REDLOCK_ENOTHELD, "extend: the lock expired %lld ms ago",
                       (long long)(now - h->expires_at));
    }
    rl_op *op = rl_op_new(h->ctx, OP_EXTEND, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->h = h;
    op->n_parts = h->n_parts;
    op->parts = h->parts;
    op->ttl_ms = ttl_ms;
    op->old_expires_at = h->expires_at;
    /* A node may apply a shorter lease the moment it gets the command: from
     * now on the lock lasts no longer than that, whatever the outcome. */
    int64_t shorter = now + ttl_ms - rl_drift_ms(ttl_ms, h->ctx->opt.drift_factor);
    if (shorter < h->expires_at)
        h->expires_at = shorter;
    describe(op, "extend");
    rl_ctx_note_lease(h->ctx, ttl_ms);
    if ((rc = rl_round_start(op, RL_CMD_EXTEND, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_unlock(rl_op **out, redlock_handle *h, int64_t now)
{
    if (h->released)
        return rl_fail(REDLOCK_ENOTHELD, "unlock: the lock was already released");
    rl_op *op = rl_op_new(h->ctx, OP_UNLOCK, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->h = h;
    op->n_parts = h->n_parts;
    op->parts = h->parts;
    op->was_held = h->held;
    op->old_expires_at = h->expires_at;
    describe(op, "unlock");
    /* The keys may have expired while it was held: it stays lost once
     * released (redlock_handle_lost, hold.c). */
    h->ran_out = h->lost || !h->held || h->expires_at <= now;
    /* From here on the lock is given up: a late reply of the acquire that
     * made it is undone wherever it arrives. */
    h->released = true;
    if (h->acquired_by)
        atomic_store(&h->acquired_by->undo, true);
    int rc = rl_round_start(op, RL_CMD_RELEASE, now);
    if (rc != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

/* A query of name's lock, or of its semaphore's permits (permits > 0), or
 * a forced unlock. */
static int query_new(rl_op **out, rl_client *ctx, const char *name, bool force, int permits,
                     int64_t now)
{
    redlock_handle *h = NULL;
    int rc = rl_handle_new(&h, ctx, &name, 1);
    if (rc != REDLOCK_OK)
        return rc;
    if (permits > 0) {
        h->keys->kind = RL_LOCK_PERMIT;
        h->keys->permits = permits;
    }
    rl_op *op = rl_op_new(ctx, force ? OP_FORCE : OP_INSPECT, now);
    if (!op) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->h = h;   /* the key, for the commands; never anyone's lock */
    op->owns_handle = true;
    describe(op, force ? "force unlock" : permits > 0 ? "permits of semaphore" : "inspect");
    if ((rc = rl_round_start(op, force ? RL_CMD_FORCE : RL_CMD_INSPECT, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_query(rl_op **out, rl_client *ctx, const char *name, bool force, int64_t now)
{
    return query_new(out, ctx, name, force, 0, now);
}

int rl_op_permits(rl_op **out, rl_client *ctx, const char *name, int permits, int64_t now)
{
    int rc = rl_check_arg(NULL, REDLOCK_ARG_PERMITS, NULL, permits);
    if (rc != REDLOCK_OK)
        return rc;
    return query_new(out, ctx, name, false, permits, now);
}

int64_t rl_op_available(const rl_op *op)
{
    return op->answer.available;
}

int rl_op_ping(rl_op **out, rl_client *ctx, int64_t now)
{
    redlock_handle *h = NULL;
    int rc = rl_handle_new(&h, ctx, NULL, 0);
    if (rc != REDLOCK_OK)
        return rc;
    rl_op *op = rl_op_new(ctx, OP_PING, now);
    if (!op) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->h = h;   /* no keys: for the command's sake */
    op->owns_handle = true;
    snprintf(op->what, sizeof op->what, "ping");
    if ((rc = rl_round_start(op, RL_CMD_PING, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_deliver(rl_op **out, rl_client *ctx, int64_t now)
{
    rl_op *op = rl_op_new(ctx, OP_DELIVER, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->phase = PHASE_ROUND;
    bool any = false;
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        if (rl_owed_try(ctx, i, now)) {
            op->slots[i].state = SLOT_WANT_CONN;
            op->slots[i].key_slot = rl_owed_slot(ctx, i);
            any = true;
        }
    }
    if (!any)
        rl_round_finish(op, REDLOCK_OK, "", now);
    *out = op;
    return REDLOCK_OK;
}

void rl_op_free(rl_op *op)
{
    if (!op)
        return;
    if (op->phase != PHASE_DONE)
        rl_round_detach_cmds(op);   /* freed unfinished: nothing waits any more */
    rl_round_resume(op);
    rl_round_end_aside(op);
    for (size_t g = 0; op->part_cmds && g < op->n_parts; g++)
        rl_cmd_unref(op->part_cmds[g]);
    free(op->part_cmds);
    rl_cmd_unref(op->cmd);
    rl_cmd_unref(op->attempt);
    rl_keys_unref(op->channel);
    if (op->owns_handle)
        rl_handle_free(op->h);
    free(op->got);
    free(op->dropped);
    free(op->spare);
    for (size_t j = 0; op->ends && j < op->n_many; j++)
        free(op->ends[j].msg);
    free(op->ends);
    free(op->many);
    free(op->first_key);
    free(op->key_votes);
    free(op);
}

void rl_op_lend(rl_op *op)
{
    op->lends = true;
}

rl_conn *rl_op_spare_conn(rl_op *op)
{
    return op->n_spare > 0 ? op->spare[--op->n_spare] : NULL;
}

/* ---- driving ---- */

rl_client *rl_op_ctx(const rl_op *op)
{
    return op->ctx;
}

rl_conn *rl_op_conn(const rl_op *op, size_t node)
{
    return op->slots[node].conn;
}

int64_t rl_op_deadline(const rl_op *op, size_t node)
{
    return op->slots[node].sent ? op->slots[node].deadline : INT64_MIN;
}

int64_t rl_op_tail_at(const rl_op *op, int64_t now)
{
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        /* A command held back by the client's own bytes is written for no
         * longer than a connect and an answer would take. */
        int64_t end = s->written || s->deadline < s->tail_until ? s->deadline : s->tail_until;
        if (s->conn && s->sent && rl_conn_sending(s->conn) && end > now && end < first)
            first = end;
    }
    return first;
}

bool rl_op_wants_conn(const rl_op *op, size_t node)
{
    return op->phase == PHASE_ROUND && op->slots[node].state == SLOT_WANT_CONN
        && !op->slots[node].parked;
}

void rl_op_overdue(rl_op *op, rl_conn *c, int64_t now)
{
    /* Deadlines follow the order of the writes, so the entries from the
     * oldest not yet found overdue (c->overdue) are looked at until one
     * whose deadline has not passed, or one not written yet: a stalled
     * node's long stream is not read again on every call. */
    if (c->overdue < c->popped)
        c->overdue = c->popped;
    for (; c->overdue < c->popped + rl_conn_owed(c); c->overdue++) {
        rl_entry *e = rl_conn_entry(c, (size_t)(c->overdue - c->popped));
        if (e->deadline == 0 && e->budget > 0)
            break;   /* not written yet, nor is anything behind it */
        if (e->deadline == 0 || e->late)
            continue;
        if (now <= e->deadline)
            break;
        e->late = true;
        rl_node_failed(&op->ctx->nodes[c->node], RL_NODE_SLOW,
                       "no answer within its deadline", now);
    }
}

void rl_op_attach(rl_op *op, size_t node, rl_conn *c, int64_t now)
{
    slot *s = &op->slots[node];
    s->conn = c;
    s->parked = false;
    c->op = op;
    c->uses++;
    /* Releases owed to the node go behind what the connection carries, but
     * to a connection owing too many, only for a delivery. */
    if (op->kind == OP_DELIVER || rl_conn_owed(c) < RL_CONN_MAX_OWED)
        rl_owed_send(op->ctx, c, now);
    if (op->kind != OP_DELIVER) {
        rl_round_send_on(op, node, now);
        return;
    }
    const rl_options *o = &op->ctx->opt;
    s->sent = true;
    s->state = SLOT_WAITING;
    s->deadline = now + (c->state == RL_CONN_CONNECTING ? o->connect_timeout_ms : 0)
                + o->node_timeout_ms;
}

void rl_op_no_conn(rl_op *op, size_t node, int code, const char *why, int64_t now)
{
    /* Known down (backing off), or its connect failed: counted, and the
     * node's state is the connect's to tell. */
    rl_node_failed(&op->ctx->nodes[node], RL_NODE_KEEP, NULL, now);
    if (op->kind == OP_UNLOCK)   /* its release is owed, sent once the node answers */
        rl_round_owe(op, node, op->slots[node].part, now);
    rl_result r;
    rl_result_fail(&r, code, "%s", why);
    rl_round_vote(op, node, &r, now);
}

/* ---- what the driver does next ---- */

int rl_op_next_wanted(const rl_op *op, size_t from)
{
    /* Connections are taken in the order of the nodes, and none past a node
     * whose connections are all in use (parked): an operation waiting for
     * one holds none that another waiting operation needs first, so
     * operations at the cap never wait for each other in a circle. */
    for (size_t i = 0; op->phase == PHASE_ROUND && i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_WANT_CONN && s->parked)
            return -1;
        if (i >= from && s->state == SLOT_WANT_CONN)
            return (int)i;
    }
    return -1;
}

/* How many connections the client may have to the node for op. Those held
 * by locks pausing between attempts, of drivers that do not take them back,
 * keep no call waiting (rl_op_lend). The end of a lock (a release, an
 * extension) may take RL_CONN_ENDS more: it never waits behind the attempts
 * of many others to take that lock. */
static int conn_cap(const rl_op *op, size_t node)
{
    bool ends = op->kind == OP_UNLOCK || op->kind == OP_EXTEND || op->kind == OP_DELIVER
             || op->kind == OP_FORCE;
    return (int)op->ctx->opt.pool_size + RL_CONN_SPARE + (ends ? RL_CONN_ENDS : 0)
         + atomic_load(&op->ctx->conns[node].paused);
}

/* The node has all the connections it may have, all in use: the slot waits
 * for one to come back to the driver's pool, asking again every
 * PARK_RETRY_MS, for as long as an answer may be of use (rl_round_patience). */
static void park(rl_op *op, size_t node, int cap, int64_t now)
{
    slot *s = &op->slots[node];
    s->parked = true;
    s->retry_at = now + PARK_RETRY_MS;
    if (s->park_until == 0) {
        s->park_until = now + rl_round_patience(op);
        char why[160];
        snprintf(why, sizeof why, "all %d connections the client may have to it (pool_size + %d) "
                 "are in use", cap, cap - (int)op->ctx->opt.pool_size);
        rl_round_busy(op, node, why, now);
    }
}

/* Parked slots: asking again once their time came, failed past their bound. */
static void unpark(rl_op *op, int64_t now)
{
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->state != SLOT_WANT_CONN || !s->parked)
            continue;
        if (now >= s->park_until) {
            s->parked = false;
            rl_result r;
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "no connection to it came free within %lld ms "
                           "(the client has pool_size + %d, all in use)",
                           (long long)rl_round_patience(op),
                           conn_cap(op, i) - (int)op->ctx->opt.pool_size);
            if (op->kind == OP_UNLOCK)
                rl_round_owe(op, i, s->part, now);
            rl_round_vote(op, i, &r, now);
        } else if (now >= s->retry_at) {
            s->parked = false;
        }
    }
}

/* The master of node i whose guard the operation must read first, or -1:
 * a new lock (or a ping) on a Cluster node reads every master's guard before
 * its vote can count (rl_node_census). */
static int census_of(const rl_op *op, size_t i)
{
    rl_verb verb = rl_round_verb(op);
    if (verb != RL_VERB_ACQUIRE && verb != RL_VERB_PING)
        return -1;
    return rl_node_census(&op->ctx->nodes[i]);
}

rl_conn *rl_op_connect(rl_op *op, size_t node, int64_t now)
{
    char why[160];
    int code = rl_node_backoff(&op->ctx->nodes[node], now, why, sizeof why);
    rl_conn *c = NULL;
    slot *s = &op->slots[node];
    int cap = conn_cap(op, node);
    bool full = false;
    rl_target to;
    int census = s->ask ? -1 : census_of(op, node);
    if (s->ask)
        rl_node_sentinel_target(&op->ctx->nodes[node], &to);
    else if (census >= 0 && rl_node_server_for(&op->ctx->nodes[node], s->key_slot,
                                               s->ask_server) >= 0)
        rl_node_census_target(&op->ctx->nodes[node], census, &to);
    else
        rl_node_target_slot(&op->ctx->nodes[node], s->key_slot, s->ask_server, &to);
    if (code == REDLOCK_OK
        && !(c = rl_conn_new_capped(op->ctx, node, cap, &to, &full)) && full) {
        park(op, node, cap, now);
        return NULL;
    }
    if (code == REDLOCK_OK && !c) {
        code = REDLOCK_ENOMEM;
        snprintf(why, sizeof why, "out of memory");
    }
    s->ask = false;
    if (!c) {
        rl_op_no_conn(op, node, code, why, now);
        return NULL;
    }
    rl_op_attach(op, node, c, now);
    return c;
}

bool rl_op_wants_fresh(const rl_op *op, size_t node)
{
    if (node >= op->ctx->n_nodes)
        return false;
    const slot *s = &op->slots[node];
    rl_node *n = &op->ctx->nodes[node];
    /* A Cluster node without a slot map asks a seed for one, and one whose
     * masters' guards are not all read reads them first. */
    return s->ask || (n->addr.kind == RL_NODE_CLUSTER
                      && (rl_node_server_for(n, s->key_slot, s->ask_server) < 0
                          || census_of(op, node) >= 0));
}

bool rl_op_fits(const rl_op *op, size_t node, const rl_conn *c)
{
    if (node >= op->ctx->n_nodes || c->node != node)
        return false;
    rl_node *n = &op->ctx->nodes[node];
    const slot *s = &op->slots[node];
    return n->addr.kind != RL_NODE_CLUSTER
        || (c->to.server >= 0 && c->to.server == rl_node_server_for(n, s->key_slot,
                                                                     s->ask_server));
}

/* Whether a connection of the operation has bytes to write now. */
static bool writing(const rl_op *op)
{
    const char *bytes;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        if (op->slots[i].conn && rl_conn_output(op->slots[i].conn, &bytes) > 0)
            return true;
    return false;
}

int rl_op_drive(rl_op *op, int64_t now, int64_t *at)
{
    /* Connections first, as every driver did: a round is stepped once its
     * nodes have theirs (or were told they cannot). */
    if (rl_op_next_wanted(op, 0) < 0)
        rl_op_step(op, now);
    int what;
    if (op->phase == PHASE_DONE) {
        *at = rl_op_tail_at(op, now);
        what = RL_DRIVE_DONE | (*at != INT64_MAX ? RL_DRIVE_TAIL : 0);
    } else if (rl_op_next_wanted(op, 0) >= 0) {
        *at = now;
        return RL_DRIVE_CONNECT;
    } else {
        *at = rl_op_wake_at(op);
        what = RL_DRIVE_WAIT | (rl_op_awaits_release(op) ? RL_DRIVE_AWAITS : 0);
    }
    return what | (writing(op) ? RL_DRIVE_WRITE : 0);
}

/* Delivery ends on each node when every reply its connection owed is in
 * (the releases were answered), or at the node's deadline. */
static void step_deliver(rl_op *op, int64_t now)
{
    bool waiting = false;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->state != SLOT_WAITING)
            continue;
        if (now >= s->deadline || (s->conn && rl_conn_owed(s->conn) == 0))
            s->state = SLOT_DONE;
        else
            waiting = true;
    }
    if (!waiting)
        rl_round_finish(op, REDLOCK_OK, "", now);
}

void rl_op_step(rl_op *op, int64_t now)
{
    if (op->phase == PHASE_PAUSE) {
        if (now < op->wake_at)
            return;
        int rc = rl_round_start(op, op->kind == OP_PING ? RL_CMD_PING : RL_CMD_ACQUIRE, now);
        if (rc != REDLOCK_OK) {
            rl_round_finish(op, rc, "the operating system's random source failed", now);
            return;
        }
    }
    if (op->phase != PHASE_ROUND)
        return;
    unpark(op, now);
    if (op->kind == OP_DELIVER) {
        step_deliver(op, now);
        return;
    }
    const rl_options *o = &op->ctx->opt;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->state != SLOT_WAITING || now < s->deadline)
            continue;
        rl_result r;
        rl_node *node = &op->ctx->nodes[i];
        if (s->conn->state == RL_CONN_OPEN && !s->written
            && now < s->queued_at + rl_round_patience(op)) {
            /* Held back by the client's own bytes: no deadline runs yet. */
            int64_t next = now + o->node_timeout_ms, bound = s->queued_at + rl_round_patience(op);
            s->deadline = next < bound ? next : bound;
            continue;
        }
        if (s->conn->state == RL_CONN_OPEN && !s->written) {
            /* Never written: the client's own bytes held it back, which
             * says nothing of the node. */
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "not written within %lld ms: the client's "
                           "connection to it is busy with its own commands",
                           (long long)(now - s->queued_at));
            rl_round_busy(op, i, r.why, now);
        } else if (s->conn->state == RL_CONN_CONNECTING) {
            rl_node_connect_failed(node, now);
            rl_conn_break(s->conn, REDLOCK_ENOQUORUM, "connect timed out");
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "cannot connect within %lld ms%s",
                           (long long)o->connect_timeout_ms,
                           node->addr.tls ? " (TCP, then the TLS handshake)" : "");
            rl_node_failed(node, RL_NODE_DOWN, r.why, now);
        } else {
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "no answer within %lld ms",
                           (long long)o->node_timeout_ms);
            rl_node_failed(node, RL_NODE_SLOW, r.why, now);
            rl_round_mark_late(s->conn, rl_round_cmd_of(op, i));
        }
        rl_round_vote(op, i, &r, now);
    }
    rl_round_try_decide(op, now);
}

bool rl_op_cancel(rl_op *op, int64_t now)
{
    if (op->kind != OP_LOCK || op->phase == PHASE_DONE)
        return false;
    if (op->phase == PHASE_ROUND || op->keep_token) {   /* keys taken, or kept for the next round */
        rl_round_detach_cmds(op);
        rl_round_undo_attempt(op, now);
    }
    snprintf(op->msg, sizeof op->msg, "%s: cancelled while waiting", op->what);
    rl_round_finish(op, REDLOCK_ECANCELED, op->msg, now);
    return true;
}

bool rl_op_awaits_release(const rl_op *op)
{
    return op->kind == OP_LOCK && op->phase == PHASE_PAUSE && op->rc == REDLOCK_ELOCKED;
}

const rl_keys *rl_op_keys(const rl_op *op)
{
    if (op->channel)
        return op->channel;
    return op->h ? op->h->keys : NULL;
}

const char *rl_op_waiter(const rl_op *op)
{
    return op->waiter;
}

const char *rl_op_follows(const rl_op *op)
{
    return op->kind == OP_EXTEND || op->kind == OP_UNLOCK ? op->h->token : NULL;
}

void rl_op_wake(rl_op *op, int64_t now)
{
    if (op->kind == OP_LOCK && op->phase == PHASE_PAUSE && op->wake_at > now)
        op->wake_at = now;
}

void rl_op_note(rl_op *op, const char *note)
{
    if (op->phase == PHASE_DONE && op->rc == REDLOCK_ELOCKED && note && note[0]) {
        size_t len = strlen(op->msg);
        snprintf(op->msg + len, sizeof op->msg - len, "; %s", note);
    }
}

int64_t rl_op_wake_at(const rl_op *op)
{
    if (op->phase == PHASE_PAUSE)
        return op->wake_at;
    int64_t first = INT64_MAX;
    for (size_t i = 0; op->phase == PHASE_ROUND && i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_WAITING && s->deadline < first)
            first = s->deadline;
        if (s->state == SLOT_WANT_CONN && s->parked && s->retry_at < first)
            first = s->retry_at;
    }
    return first;
}

bool rl_op_done(const rl_op *op)
{
    return op->phase == PHASE_DONE;
}

int rl_op_status(const rl_op *op)
{
    return op->rc;
}

const char *rl_op_message(const rl_op *op)
{
    return op->msg;
}

bool rl_op_answer(const rl_op *op, int64_t *ttl_ms, size_t *deleted)
{
    if (ttl_ms)
        *ttl_ms = op->answer.held ? op->answer.ttl_ms : -2;
    if (deleted)
        *deleted = op->answer.deleted;
    return op->answer.held;
}

redlock_handle *rl_op_handle(const rl_op *op)
{
    return op->kind == OP_EXTEND || op->kind == OP_UNLOCK ? op->h : NULL;
}

redlock_handle *rl_op_take_handle(rl_op *op)
{
    if (op->kind != OP_LOCK || op->rc != REDLOCK_OK || !op->owns_handle)
        return NULL;
    op->owns_handle = false;
    return op->h;
}

rl_conn *rl_op_take_conn(rl_op *op)
{
    rl_conn *c = NULL;
    while (!c && op->next_conn < op->ctx->n_nodes) {
        slot *s = &op->slots[op->next_conn++];
        c = s->conn;
        s->conn = NULL;
    }
    if (!c && op->n_dropped > 0)
        c = op->dropped[--op->n_dropped];
    if (!c)
        c = rl_op_spare_conn(op);
    if (c)
        c->op = NULL;
    return c;
}

/* ---- connection events ---- */


void rl_op_reply(rl_op *op, rl_conn *c, const rl_entry *e, const redisReply *reply, int64_t now)
{
    size_t i = c->node;
    slot *s = &op->slots[i];
    rl_cmd *cmd = rl_round_cmd_of(op, i);
    if (e->cmd != cmd || s->state != SLOT_WAITING || s->conn != c) {
        rl_cmd_late_reply(e, c, reply, now);
        return;
    }
    if (rl_conn_unrun(c, e->form, reply)) {
        /* Not run for the way it was sent: the node lost its scripts (SCRIPT
         * FLUSH, a failover), or has no library to call, or its ACL allows
         * the other way only. It follows again on the same connection, in
         * the way that runs, a new entry of the stream. */
        if (rl_cmd_send_again(cmd, c, e->form, reply) == REDLOCK_OK) {
            op->saw_noscript = true;
            rl_round_queued(op, i, now);
            return;
        }
    }
    /* A transaction's read or end (a node without scripts, plain.h): its
     * next step goes on the same connection, or this is the answer. */
    rl_result plain;
    bool stepped = e->form == RL_FORM_READ || e->form == RL_FORM_EXEC;
    if (stepped && rl_plain_reply(cmd, c, e, reply, &plain)) {
        s->txn = true;
        rl_round_queued(op, i, now);
        return;
    }
    if (op->reply_each) {   /* extend many: an answer per key (many.c) */
        op->reply_each(op, c, e, reply, stepped ? &plain : NULL, now);
        return;
    }
    rl_result r;
    if (e->form == RL_FORM_COUNT) {
        /* The INCR behind a fenced SET: the node's answer is both. */
        if (!s->counting)
            return;
        s->counting = false;
        r = s->set;
        rl_cmd_count(reply, &r, op->got + i);
        if (s->set.vote == RL_VOTE_YES && r.vote == RL_VOTE_FAILED
            && reply->type == REDIS_REPLY_ERROR)   /* the INCR refused (its SET's was counted) */
            rl_node_failed(&op->ctx->nodes[i], rl_node_state_after(r.code), r.why, now);
        rl_round_vote(op, i, &r, now);
        return;
    }
    if (stepped)
        r = plain;
    else
        rl_cmd_classify(cmd, e->form, reply, &r);
    rl_cmd_refused_both(c, e->form, &r);
    rl_plain_refused(cmd, c, e->form, &r);
    if (cmd->kind == RL_CMD_RELEASE)   /* its wake-up, after a DELIFEQ that deleted */
        rl_cmd_released(cmd, c, e->form, reply);
    if (r.vote == RL_VOTE_FAILED)   /* an error reply: refused credentials, an ACL's NOPERM... */
        rl_node_failed(&op->ctx->nodes[i], rl_node_state_after(r.code), r.why, now);
    else if (!e->late)
        rl_node_answered(&op->ctx->nodes[i], e->sent_at ? now - e->sent_at : -1, now);
    if (rl_round_chained(op, i) && rl_round_next_part(op, i, &r, now))
        return;
    if ((e->form == RL_FORM_SET || e->form == RL_FORM_SETNX) && op->cmd->fenced) {
        s->set = r;
        s->counting = true;
        return;
    }
    if (r.vote == RL_VOTE_YES && op->cmd->fenced)
        rl_cmd_fences(op->cmd, reply, op->got + i * op->h->keys->n);
    rl_round_vote(op, i, &r, now);
}

void rl_op_entry_lost(rl_op *op, rl_conn *c, const rl_entry *e, bool written, int64_t now)
{
    /* The current attempt's acquire (its fence round has op->cmd) may have
     * run: a failed attempt is undone there too. */
    bool ours = e->cmd == op->cmd || (e->cmd == op->attempt && op->phase == PHASE_ROUND)
              || (e->cmd == rl_round_cmd_of(op, c->node) && op->phase == PHASE_ROUND);
    if (ours && op->kind == OP_UNLOCK)   /* a release that may not have run is owed */
        rl_round_owe(op, c->node, op->slots[c->node].part, now);
    else if (ours && written)
        op->slots[c->node].maybe_ran = true;
    else if (!ours)
        rl_cmd_late_lost(e, op->ctx, c->node, written, now);
}

void rl_op_conn_connected(rl_op *op, rl_conn *c, int64_t now)
{
    slot *s = &op->slots[c->node];
    if (s->conn == c && s->state == SLOT_WAITING)
        s->deadline = now + op->ctx->opt.node_timeout_ms + (op->cmd ? rl_cmd_work_ms(op->cmd) : 0);
}

void rl_op_conn_wrote(rl_op *op, rl_conn *c, int64_t now)
{
    slot *s = &op->slots[c->node];
    if (s->conn == c && s->state == SLOT_WAITING && s->sent && !s->written
        && op->kind != OP_DELIVER && rl_conn_written(c, s->end)) {
        s->written = true;
        s->deadline = now + op->ctx->opt.node_timeout_ms + (op->cmd ? rl_cmd_work_ms(op->cmd) : 0);
    }
}

void rl_op_conn_lost(rl_op *op, rl_conn *c, int64_t now)
{
    size_t i = c->node;
    slot *s = &op->slots[i];
    if (s->conn != c)
        return;
    s->conn = NULL;
    c->op = NULL;
    if (s->state != SLOT_WAITING)
        return;
    if (op->kind == OP_DELIVER) {
        s->state = SLOT_DONE;
        return;
    }
    /* A Sentinel node's connection that ended without writing the command
     * (a sentinel named the master, or the master turned replica), or a
     * Cluster node's (a seed gave the map, a master its guard): the command
     * goes on a new connection; a few times a round, so that every sentinel
     * may be asked, and every master of a Cluster. */
    const rl_node *n = &op->ctx->nodes[i];
    size_t redirects = n->addr.n_sentinels + 4
                     + (n->addr.kind == RL_NODE_CLUSTER ? RL_NODE_MASTERS_MAX : 0);
    if (c->redirected && s->redirects < redirects) {
        s->redirects++;
        s->state = SLOT_WANT_CONN;
        /* A -ASK: this command alone goes to the master it named. */
        s->ask_server = c->ask_server;
        return;
    }
    /* A pooled connection may simply have gone stale (the node restarted
     * since it was used): the command goes once more on a new connection.
     * That is safe because an acquire that finds our own token counts as
     * done, and extend and release may run twice. */
    if (c->uses > 1 && c->connected && !s->retried) {
        s->retried = true;
        s->state = SLOT_WANT_CONN;
        return;
    }
    rl_result r;
    rl_result_fail(&r, c->code ? c->code : REDLOCK_ENOQUORUM, "%s", c->why);
    /* A refused handshake or a failed connect told the node's state
     * already; a connection lost once open leaves it to the next connect. */
    rl_node_failed(&op->ctx->nodes[i], RL_NODE_KEEP, c->why, now);
    rl_round_vote(op, i, &r, now);
}
