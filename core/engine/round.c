/* round.c - an operation's rounds (see round.h): a command out to every
 * node, the votes coming in, the verdict, and a Cluster node's chain of
 * parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "log.h"
#include "node.h"
#include "round.h"
#include "send.h"
#include "owed.h"
#include "quorum.h"
#include "slots.h"

rl_verb rl_round_verb(const rl_op *op)
{
    switch (op->kind) {
    case OP_LOCK:    return RL_VERB_ACQUIRE;
    case OP_EXTEND:  return RL_VERB_EXTEND;
    case OP_INSPECT: return RL_VERB_INSPECT;
    case OP_FORCE:   return RL_VERB_FORCE;
    case OP_PING:    return RL_VERB_PING;
    case OP_EXTEND_MANY: return RL_VERB_EXTEND;
    default:         return RL_VERB_RELEASE;
    }
}

/* An operation of kind, not started. */
rl_op *rl_op_new(rl_client *ctx, op_kind kind, int64_t now)
{
    size_t n = ctx->n_nodes;
    rl_op *op = malloc(sizeof *op + n * (sizeof *op->slots + sizeof *op->results));
    if (!op)
        return NULL;
    memset(op, 0, sizeof *op);
    op->slots = (slot *)(op + 1);
    op->results = (rl_result *)(op->slots + n);
    memset(op->slots, 0, n * sizeof *op->slots);
    for (size_t i = 0; i < n; i++)
        op->slots[i].key_slot = op->slots[i].ask_server = -1;
    op->ctx = ctx;
    op->kind = kind;
    op->started = now;
    return op;
}

/* ---- a Cluster node's chain of parts ---- */

/* Whether node i takes the round one part at a time. */
bool rl_round_chained(const rl_op *op, size_t i)
{
    return op->n_parts > 1 && op->ctx->nodes[i].addr.kind == RL_NODE_CLUSTER;
}

/* The command node i waits for (or is to be sent) now. */
rl_cmd *rl_round_cmd_of(const rl_op *op, size_t i)
{
    return rl_round_chained(op, i) && op->part_cmds ? op->part_cmds[op->slots[i].part] : op->cmd;
}

static int part_slot(const rl_op *op, size_t g)
{
    return rl_handle_keys_slot(op->parts[g]);
}

/* No operation waits for the round's commands any more: their replies are
 * late (owed.h). */
void rl_round_detach_cmds(rl_op *op)
{
    if (op->cmd)
        op->cmd->op = NULL;
    for (size_t g = 0; op->part_cmds && g < op->n_parts; g++)
        if (op->part_cmds[g])
            op->part_cmds[g]->op = NULL;
}

/* A release of the lock's keys owed to node i: of its parts from `from` on
 * for a chained node, else of all of them. */
void rl_round_owe(rl_op *op, size_t i, size_t from, int64_t now)
{
    redlock_handle *h = op->h;
    if (!rl_round_chained(op, i)) {
        rl_owed_add(op->ctx, i, h->keys, h->token, false, now);
        return;
    }
    for (size_t g = from; g < op->n_parts; g++)
        rl_owed_add(op->ctx, i, op->parts[g], h->token, false, now);
}

/* Node i's vote is in (op->results[i]). A chained node's lock parts taken
 * before a part said no are released there (the node holds all of a lock
 * or none of it); an unlock's parts its chain did not reach are owed. */
static void chain_ended(rl_op *op, size_t i, int64_t now)
{
    if (!rl_round_chained(op, i))
        return;
    slot *s = &op->slots[i];
    if (op->kind == OP_LOCK && op->cmd->kind == RL_CMD_ACQUIRE
        && op->results[i].vote != RL_VOTE_YES)
        for (size_t g = 0; g < s->part; g++)   /* each said yes: they landed */
            rl_owed_add(op->ctx, i, op->parts[g], op->h->token, true, now);
    else if (op->kind == OP_UNLOCK)
        rl_round_owe(op, i, s->part + 1, now);
}

/* Node i's connection serves another master than its next part's: it goes
 * to the driver, as a pausing lock's do (let_go), or when the driver does
 * not take them back, it stays with the op and counts as paused. */
static bool set_aside(rl_op *op, size_t i)
{
    slot *s = &op->slots[i];
    rl_conn **grown = realloc(op->spare, (op->n_spare + 1) * sizeof *grown);
    if (!grown)
        return false;
    op->spare = grown;
    op->spare[op->n_spare++] = s->conn;
    s->conn->op = NULL;
    s->conn = NULL;
    if (!op->lends) {
        s->aside++;
        atomic_fetch_add(&op->ctx->conns[i].paused, 1);
    }
    return true;
}

void rl_round_end_aside(rl_op *op)
{
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->aside) {
            atomic_fetch_sub(&op->ctx->conns[i].paused, (int)s->aside);
            s->aside = 0;
        }
    }
}

/* This round's command for each part (with cmd as their parent: a lock
 * given up is given up in every part, owed.h). */
int rl_round_new_part_cmds(rl_op *op, rl_cmd_kind kind)
{
    if (op->n_parts < 2)
        return REDLOCK_OK;
    if (!op->part_cmds && !(op->part_cmds = calloc(op->n_parts, sizeof *op->part_cmds)))
        return REDLOCK_ENOMEM;
    rl_cmd *whole = op->cmd;
    for (size_t g = 0, start = 0; g < op->n_parts; g++) {
        rl_cmd_unref(op->part_cmds[g]);
        rl_cmd *c = kind == RL_CMD_EXTEND_MANY ? rl_cmd_new_many(op->parts[g])
                  : rl_cmd_new(kind, op->parts[g], whole->token, whole->ttl_ms);
        op->part_cmds[g] = c;
        if (!c)
            return REDLOCK_ENOMEM;
        size_t n = op->parts[g]->n;
        if (kind == RL_CMD_EXTEND_MANY) {
            memcpy(c->tokens, whole->tokens + start, n * sizeof *c->tokens);
            memcpy(c->leases, whole->leases + start, n * sizeof *c->leases);
        }
        start += n;
        c->parent = rl_cmd_ref(whole);
        c->op = op;
        c->cacheable = true;
    }
    return REDLOCK_OK;
}

/* ---- rounds ---- */

int rl_round_new_token(rl_client *ctx, char out[RL_TOKEN_LEN + 1])
{
    unsigned char raw[RL_TOKEN_BYTES];
    if (ctx->random(ctx->random_data, raw, sizeof raw) != 0)
        return REDLOCK_ESYSTEM;
    rl_token_hex(out, raw);
    return REDLOCK_OK;
}

static const char *const op_names[] = {
    [OP_LOCK] = "lock", [OP_EXTEND] = "extend", [OP_UNLOCK] = "unlock", [OP_DELIVER] = "deliver",
    [OP_INSPECT] = "inspect", [OP_FORCE] = "force_unlock", [OP_PING] = "ping",
    [OP_EXTEND_MANY] = "renew",
};

/* The event of a finished operation (log.h): one per call, never per attempt. */
static void report(const rl_op *op, int64_t now)
{
    if (op->kind == OP_EXTEND_MANY)
        return;   /* each lock's outcome is its keeper's to tell (keep.h) */
    int rc = op->rc, level = REDLOCK_LOG_WARN;
    const char *event = "failed";
    if (rc == REDLOCK_OK) {
        static const char *const done[] = {
            [OP_LOCK] = "acquired", [OP_EXTEND] = "extended", [OP_UNLOCK] = "released",
            [OP_FORCE] = "force_unlocked",
        };
        event = op->kind < sizeof done / sizeof done[0] ? done[op->kind] : NULL;
        level = op->kind == OP_FORCE ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG;
        if (!event)
            return;   /* queries, pings and deliveries succeed quietly */
    } else if (rc == REDLOCK_ELOCKED) {
        event = "refused";
        level = REDLOCK_LOG_DEBUG;
    } else if (rc == REDLOCK_ENOQUORUM) {
        event = "no_quorum";
    } else if (rc == REDLOCK_EAUTH || rc == REDLOCK_ENOPERM) {
        level = REDLOCK_LOG_ERROR;
    } else if (rc == REDLOCK_ECANCELED) {
        level = REDLOCK_LOG_DEBUG;
    }
    if (op->kind == OP_DELIVER || !rl_logging(&op->ctx->log, level))
        return;

    const redlock_handle *h = op->h;
    size_t n = op->ctx->n_nodes, yes = 0;
    for (size_t i = 0; i < n; i++)
        yes += op->results[i].vote == RL_VOTE_YES;
    char fields[512], resources[256] = "", owner[RL_OWNER_LEN + 1] = "";
    if (h && h->keys->n > 0)
        rl_log_resources(op->ctx, h->keys, resources, sizeof resources);
    /* A lock has an owner once taken; extend and unlock are the owner's. */
    if (h && ((op->kind == OP_LOCK && rc == REDLOCK_OK) || op->kind == OP_EXTEND
              || op->kind == OP_UNLOCK))
        rl_log_owner(h->token, owner);
    int w = snprintf(fields, sizeof fields, "op=%s", op_names[op->kind]);
    if (resources[0])
        w += snprintf(fields + w, sizeof fields - (size_t)w, " resource=%s", resources);
    if (owner[0])
        w += snprintf(fields + w, sizeof fields - (size_t)w, " owner=%s", owner);
    w += snprintf(fields + w, sizeof fields - (size_t)w, " nodes=%zu/%zu", yes, n);
    if (rc == REDLOCK_ENOQUORUM)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " need=%zu",
                      rl_quorum_of(n, h ? h->keys->permits : 0));
    if (op->kind == OP_FORCE)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " deleted=%zu", op->answer.deleted);
    w += snprintf(fields + w, sizeof fields - (size_t)w, " ms=%lld", (long long)(now - op->started));
    if (op->kind == OP_LOCK)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " attempts=%u", op->attempts);
    if (rc == REDLOCK_OK && (op->kind == OP_LOCK || op->kind == OP_EXTEND))
        w += snprintf(fields + w, sizeof fields - (size_t)w, " validity_ms=%lld",
                      (long long)(h->expires_at - now));
    if (rc == REDLOCK_OK && op->kind == OP_LOCK && h->fences)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " fence=%lld", (long long)h->fences[0]);
    if (rc != REDLOCK_OK && rc != REDLOCK_ELOCKED && rc != REDLOCK_ENOQUORUM)
        snprintf(fields + w, sizeof fields - (size_t)w, " code=%s", rl_log_code(rc));
    if (rc == REDLOCK_OK)
        rl_log_emit(&op->ctx->log, level, event, "%s", fields);
    else
        rl_log_emit(&op->ctx->log, level, event, "%s: %s", fields, op->msg[0] ? op->msg
                    : rl_log_code(rc));
}

void rl_round_finish(rl_op *op, int rc, const char *msg, int64_t now)
{
    /* Replies still to come are late from now on; this must happen before
     * the connections go back to a pool where another thread reads them. */
    rl_round_detach_cmds(op);
    /* An unlock decided while a node still waited for a connection (at the
     * cap, conn.h): its release is owed there. */
    for (size_t i = 0; op->kind == OP_UNLOCK && op->phase == PHASE_ROUND
                       && i < op->ctx->n_nodes; i++) {
        if (op->slots[i].state == SLOT_WANT_CONN)
            rl_round_owe(op, i, op->slots[i].part, now);
        else if (op->slots[i].state == SLOT_WAITING && rl_round_chained(op, i))
            /* the parts its chain did not reach */
            rl_round_owe(op, i, op->slots[i].part + 1, now);
    }
    rl_round_resume(op);
    rl_round_end_aside(op);
    op->phase = PHASE_DONE;
    op->rc = rc;
    /* An unlock that found the keys gone tells a loss (redlock_handle_lost). */
    if (op->kind == OP_UNLOCK && rc == REDLOCK_ENOTHELD && op->h)
        op->h->ran_out = true;
    if (msg != op->msg && msg && msg[0])
        snprintf(op->msg, sizeof op->msg, "%s", msg);
    else if (msg != op->msg)
        op->msg[0] = '\0';   /* none: no snprintf on a success's path */
    report(op, now);
}

/* Gives the entry just queued on c its budget, node_timeout_ms from when it
 * is written, for the node's health (conn.h). */
static void stamp(rl_conn *c, int64_t budget)
{
    size_t last = rl_conn_owed(c) - 1;
    rl_entry *e = rl_conn_entry(c, last);
    if (((e->kind == RL_ENTRY_CMD && e->form == RL_FORM_COUNT) || e->kind == RL_ENTRY_WAKE)
        && last > 0)
        e = rl_conn_entry(c, last - 1);   /* a fenced SET's INCR, a DELIFEQ's PUBLISH: the
                                           * command before is timed */
    rl_conn_budget(c, e, budget);
}

/* How long a command may wait to be written, behind bytes of the client's
 * own, before the operation counts its node failed: as long as an answer
 * may be of use (a lock's or an extension's lease), and at least as long as
 * a connect and an answer take. */
int64_t rl_round_patience(const rl_op *op)
{
    const rl_options *o = &op->ctx->opt;
    int64_t p = o->connect_timeout_ms + o->node_timeout_ms;
    int64_t lease = op->ttl_ms > 0 ? op->ttl_ms : op->h ? atomic_load(&op->h->lease_ms) : 0;
    return lease > p ? lease : p;
}

/* Node i is busy: the client cannot keep up with it (its connections all in
 * use, or one owing too many replies). Told once (node_busy) when it was not
 * busy the second before; the health says "busy" for a second after. */
void rl_round_busy(rl_op *op, size_t i, const char *why, int64_t now)
{
    _Atomic int64_t *until = &op->ctx->conns[i].busy_until;
    int64_t was = atomic_exchange(until, now + 1000);
    if (was < now)
        RL_LOG(op->ctx, REDLOCK_LOG_WARN, "node_busy", "node=%s conns=%d: %s",
               op->ctx->nodes[i].addr.label, rl_conn_count(op->ctx, i), why);
}

/* A round's command is queued on s's connection, ending at its byte `end`:
 * its deadline runs from when that byte is written (rl_op_conn_wrote).
 * Until then the slot is looked at every node_timeout_ms (a connect's
 * deadline first), as drivers expect a wake-up that soon, and fails only
 * past the wait's bound (rl_round_patience) from when it was queued. */
void rl_round_queued(rl_op *op, size_t i, int64_t now)
{
    const rl_options *o = &op->ctx->opt;
    slot *s = &op->slots[i];
    s->end = s->conn->queued;
    s->written = false;
    s->queued_at = now;
    /* A command of many keys gets an allowance for its work on the node. */
    rl_cmd *cmd = rl_round_cmd_of(op, i);
    int64_t work = cmd ? rl_cmd_work_ms(cmd) : 0;
    s->deadline = now + (s->conn->state == RL_CONN_CONNECTING ? o->connect_timeout_ms
                                                              : o->node_timeout_ms) + work;
    s->tail_until = now + o->connect_timeout_ms + o->node_timeout_ms + work;
    stamp(s->conn, o->node_timeout_ms + work);
}

/* Marks late the entries of cmd on c still owed, once: their deadline passed. */
void rl_round_mark_late(rl_conn *c, const rl_cmd *cmd)
{
    for (size_t k = 0; k < rl_conn_owed(c); k++) {
        rl_entry *e = rl_conn_entry(c, k);
        if (e->cmd == cmd)
            e->late = true;
    }
}

/* Queues the round's command on the slot's connection. */
void rl_round_send_on(rl_op *op, size_t i, int64_t now)
{
    slot *s = &op->slots[i];
    char why[160];
    int refused = rl_conn_refuses(s->conn, now, op->ctx->opt.node_timeout_ms,
                                  op->kind == OP_UNLOCK, why, sizeof why);
    if (refused) {
        /* Its node is stalled (its state says slow), or far behind (the
         * client cannot keep up: busy): nothing more is queued there (a
         * release is owed instead), and the connection stays. */
        s->state = SLOT_DONE;
        if (refused == RL_CONN_FAR_BEHIND)
            rl_round_busy(op, i, why, now);
        rl_node_failed(&op->ctx->nodes[i], RL_NODE_KEEP, NULL, now);
        if (op->kind == OP_UNLOCK)
            rl_round_owe(op, i, s->part, now);
        rl_result r;
        rl_result_fail(&r, REDLOCK_ENOQUORUM, "%s", why);
        op->results[i] = r;
        chain_ended(op, i, now);
        return;
    }
    int rc = s->ask_server >= 0 ? rl_conn_asking(s->conn) : REDLOCK_OK;
    if (rc == REDLOCK_OK)
        rc = rl_cmd_send(rl_round_cmd_of(op, i), s->conn);
    if (rc != REDLOCK_OK) {
        s->state = SLOT_DONE;
        rl_result_fail(&op->results[i], rc, "%s", rc == REDLOCK_ENOMEM ? "out of memory"
                       : "connection unusable");
        chain_ended(op, i, now);
        return;
    }
    s->sent = true;
    s->counting = false;
    rl_entry *last = rl_conn_entry(s->conn, rl_conn_owed(s->conn) - 1);
    s->txn = last && last->kind == RL_ENTRY_CMD && last->form == RL_FORM_READ;
    s->state = SLOT_WAITING;
    rl_round_queued(op, i, now);
    rl_node_sent(&op->ctx->nodes[i]);
}

/* Lets go of a slot's broken connection (its connect timed out): the
 * driver gets it back from rl_op_take_conn, to close it. */
static void drop(rl_op *op, slot *s)
{
    rl_conn **grown = realloc(op->dropped, (op->n_dropped + 1) * sizeof *grown);
    if (!grown)
        return;   /* out of memory: it stays in the slot until the op ends */
    op->dropped = grown;
    op->dropped[op->n_dropped++] = s->conn;
    s->conn = NULL;
}

/* A lock pausing between attempts lets go of its connections (their
 * attempt's release queued behind its acquire): held through the pause,
 * they would keep other calls waiting at the cap of connections (conn.h). */
static void let_go(rl_op *op)
{
    for (size_t i = 0; !op->lends && i < op->ctx->n_nodes; i++) {
        /* Its driver does not take them back (rl_op_lend): they are kept,
         * and counted apart, so that they keep no other call waiting. */
        slot *s = &op->slots[i];
        if (s->conn && !s->paused) {
            s->paused = true;
            atomic_fetch_add(&op->ctx->conns[i].paused, 1);
        }
    }
    for (size_t i = 0; op->lends && i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (!s->conn)
            continue;
        rl_conn **grown = realloc(op->spare, (op->n_spare + 1) * sizeof *grown);
        if (!grown)
            return;   /* out of memory: kept until the op ends */
        op->spare = grown;
        op->spare[op->n_spare++] = s->conn;
        s->conn->op = NULL;
        s->conn = NULL;
    }
}

/* The pause is over (another attempt, or the end): its connections count
 * as any other again. */
void rl_round_resume(rl_op *op)
{
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        if (op->slots[i].paused) {
            op->slots[i].paused = false;
            atomic_fetch_sub(&op->ctx->conns[i].paused, 1);
        }
    }
}

/* How long the nodes keep a fair lock's waiter in its place without a new
 * attempt: two of its longest pauses and rounds. A waiter that died or gave
 * up leaves every queue that long after its last attempt. */
static int64_t queue_ms(const rl_client *ctx)
{
    const rl_options *o = &ctx->opt;
    return 2 * ((int64_t)o->retry_delay_ms + o->retry_jitter_ms + o->node_timeout_ms);
}

int rl_round_start(rl_op *op, rl_cmd_kind kind, int64_t now)
{
    redlock_handle *h = op->h;
    rl_round_resume(op);
    bool again = kind == RL_CMD_ACQUIRE && op->keep_token;
    op->keep_token = false;
    if (kind == RL_CMD_ACQUIRE && !again) {
        int rc = rl_round_new_token(op->ctx, h->token);
        if (rc != REDLOCK_OK)
            return rl_fail(rc, "the operating system's random source failed");
    }
    rl_cmd_unref(op->cmd);
    op->cmd = rl_cmd_new(kind, h->keys, h->token, op->ttl_ms);
    if (!op->cmd)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->cmd->op = op;
    op->cmd->cacheable = true;
    if (rl_round_new_part_cmds(op, kind) != REDLOCK_OK)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    if (kind == RL_CMD_RELEASE && op->kind == OP_UNLOCK) {
        memcpy(op->cmd->waiter, h->waiter, sizeof h->waiter);
        op->cmd->wake_ahead = true;
    }
    if (kind == RL_CMD_ACQUIRE) {
        op->attempts++;
        op->cmd->fenced = op->fenced;
        memcpy(op->cmd->joins, op->joins, sizeof op->joins);
        memcpy(op->cmd->waiter, op->waiter, sizeof op->waiter);
        op->cmd->ticket = op->ticket;
        op->cmd->queue_ms = queue_ms(op->ctx);
        rl_cmd_unref(op->attempt);
        op->attempt = rl_cmd_ref(op->cmd);
    }
    op->phase = PHASE_ROUND;
    if (!again)   /* the keys kept may date from the round before */
        op->round_start = now;
    op->saw_noscript = false;
    /* only a Cluster node's */
    int key_slot = rl_handle_has_cluster(op->ctx) ? rl_handle_keys_slot(h->keys) : -1;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        op->results[i].vote = RL_VOTE_PENDING;
        s->sent = s->maybe_ran = s->retried = s->parked = false;
        s->redirects = 0;
        s->park_until = 0;
        s->key_slot = key_slot;
        s->ask_server = -1;
        s->part = 0;
        s->chain.vote = RL_VOTE_YES;
        if (kind == RL_CMD_RELEASE && op->kind == OP_UNLOCK
            && (h->unreached >> i & 1)) {
            s->state = SLOT_DONE;
            rl_result_fail(&op->results[i], REDLOCK_ENOQUORUM,
                           "the lock's acquire never reached this node");
            continue;
        }
        if (s->conn && s->conn->state == RL_CONN_BROKEN)
            drop(op, s);
        /* A chain's connection of the last attempt may serve another
         * master than its first part's. */
        if (s->conn && rl_round_chained(op, i) && !rl_conn_serves(s->conn, op->parts[0]->k[0]))
            set_aside(op, i);
        /* A poll of the sentinels that is due goes first, on a connection
         * of its own, on later attempts too (node.c, rl_node_confirmed). */
        bool ask = rl_node_poll_due(&op->ctx->nodes[i], op->ctx->opt.sentinel_poll_ms, now);
        if (s->conn && ask && !set_aside(op, i))
            ask = false;
        if (s->conn) {
            rl_round_send_on(op, i, now);
        } else {
            s->state = SLOT_WANT_CONN;
            s->ask = ask;
        }
    }
    return REDLOCK_OK;
}

static int64_t retry_pause_ms(rl_op *op)
{
    const rl_options *o = &op->ctx->opt;
    int64_t pause = o->retry_delay_ms;
    uint32_t r = 0;
    if (o->retry_jitter_ms > 0 && op->ctx->random(op->ctx->random_data, &r, sizeof r) == 0)
        pause += (int64_t)(r % (uint32_t)(2 * o->retry_jitter_ms + 1)) - o->retry_jitter_ms;
    return pause < 0 ? 0 : pause;
}

/* Codes for which another attempt may succeed. */
static bool retryable(int rc)
{
    return rc == REDLOCK_ELOCKED || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EEXPIRED
        || rc == REDLOCK_EREDIS;
}

/* Whether a lock's wait is to end for an outage: every attempt for
 * unavailable_timeout_ms failed for want of answers. */
static bool unavailable_too_long(const rl_op *op, int64_t now)
{
    int64_t limit = op->ctx->opt.unavailable_timeout_ms;
    return limit > 0 && op->unavailable_since != INT64_MAX
        && now - op->unavailable_since >= limit;
}

/* A failed attempt: its release goes wherever the acquire may have run. */
void rl_round_undo_attempt(rl_op *op, int64_t now)
{
    rl_cmd *rel = rl_cmd_new(RL_CMD_RELEASE, op->h->keys, op->h->token, 0);
    if (rel)
        rel->cacheable = true;
    if (rel && op->h->keys->kind == RL_LOCK_FAIR && op->ticket > 0) {
        /* Where the attempt took the lock, it left the queue: the waiter,
         * still waiting, gets its place back, ahead of those behind it. */
        memcpy(rel->waiter, op->waiter, sizeof rel->waiter);
        rel->ticket = op->ticket;
        rel->queue_ms = queue_ms(op->ctx);
    }
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (rl_round_chained(op, i)) {
            /* The parts before the current one were taken; the current
             * one's release goes behind it, as below. */
            for (size_t g = 0; g < s->part; g++)
                rl_owed_add(op->ctx, i, op->parts[g], op->h->token, true, now);
            rl_cmd *part = rl_cmd_new(RL_CMD_RELEASE, op->parts[s->part], op->h->token, 0);
            bool queued = s->sent && s->conn && part
                        && rl_cmd_send(part, s->conn) == REDLOCK_OK;
            if ((s->sent && !queued) || s->maybe_ran)
                rl_owed_add(op->ctx, i, op->parts[s->part], op->h->token, false, now);
            rl_cmd_unref(part);
            continue;
        }
        bool queued = s->sent && s->conn && rel && rl_cmd_send(rel, s->conn) == REDLOCK_OK;
        if ((s->sent && !queued) || s->maybe_ran)
            rl_owed_add(op->ctx, i, op->h->keys, op->h->token, false, now);
    }
    rl_cmd_unref(rel);
}

/* Fencing, once a quorum took the lock: its fence for each key is the
 * largest counter among the nodes that took it. When a quorum counted that
 * much already, that is all (0); otherwise it is written back, guarded by
 * our token, to the nodes that counted less, and that round decides the
 * lock instead, with the acquire's start, so validity runs to its end (1).
 * REDLOCK_ENOMEM when it could not be made. */
static int start_fence(rl_op *op, int64_t now)
{
    redlock_handle *h = op->h;
    size_t n_keys = h->keys->n, n_nodes = op->ctx->n_nodes;
    bool *behind = calloc(n_nodes, sizeof *behind);
    rl_cmd *fence = behind ? rl_cmd_new(RL_CMD_FENCE, h->keys, h->token, 0) : NULL;
    if (fence)
        fence->fences = malloc(n_keys * sizeof *fence->fences);
    if (!fence || !fence->fences) {
        free(behind);
        rl_cmd_unref(fence);
        return REDLOCK_ENOMEM;
    }
    size_t agree = rl_quorum_fences(op->results, n_nodes, op->got, n_keys, fence->fences,
                                    behind);
    memcpy(h->fences, fence->fences, n_keys * sizeof *h->fences);
    if (agree >= rl_quorum(n_nodes)) {
        free(behind);
        rl_cmd_unref(fence);
        return 0;
    }
    rl_cmd_unref(op->cmd);
    op->cmd = fence;
    fence->op = op;
    fence->cacheable = true;
    op->saw_noscript = false;
    for (size_t i = 0; i < n_nodes; i++) {
        slot *s = &op->slots[i];
        rl_result *r = &op->results[i];
        if (behind[i] && s->conn && s->conn->state != RL_CONN_BROKEN) {
            r->vote = RL_VOTE_PENDING;
            rl_round_send_on(op, i, now);
            continue;
        }
        s->state = SLOT_DONE;
        r->records = false;   /* a yes left out of the fence stays out (rejudge) */
        if (behind[i])
            rl_result_fail(r, REDLOCK_ENOQUORUM, "connection lost before its fence was written");
        else if (r->vote == RL_VOTE_PENDING)
            rl_result_fail(r, REDLOCK_ENOQUORUM, "no answer before the others decided");
    }
    free(behind);
    return 1;
}

/* A fair lock's ticket after its first attempt was refused: the largest the
 * nodes that answered gave. (A round is decided once a quorum can no longer
 * say yes: then more than N minus a quorum answered, and among them is a
 * node of the quorum that queued any waiter before this one arrived.) */
static int64_t ticket_of(const rl_op *op)
{
    int64_t ticket = 0;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        if (op->results[i].vote == RL_VOTE_NO && op->results[i].ticket > ticket)
            ticket = op->results[i].ticket;
    return ticket;
}

/* The nodes the decided acquire never reached (redlock_handle's unreached). */
static uint64_t unreached(const rl_op *op)
{
    uint64_t none = 0;
    if (op->h->keys->kind == RL_LOCK_FAIR)
        return 0;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_DONE && !s->sent && !s->maybe_ran && !rl_round_chained(op, i))
            none |= UINT64_C(1) << i;
    }
    return none;
}

/* Whether the round, refused, had yes votes waiting for the records
 * (records.h) and is the operation's first to: its replies read the
 * records, and the additions they lacked go before the next round's
 * commands, which then count those votes. So a fresh group's first lock
 * (and ping) takes one more round, not a wait. */
static bool settles(rl_op *op)
{
    if (op->settled)
        return false;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        if (op->results[i].vote == RL_VOTE_FAILED && op->results[i].records)
            return op->settled = true;
    return false;
}

/* The next round starts at once (rl_op_step), whatever the wait. */
static void pause_at_once(rl_op *op, int rc, int64_t now)
{
    op->phase = PHASE_PAUSE;
    op->wake_at = now;
    op->rc = rc;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        op->slots[i].state = SLOT_IDLE;
    let_go(op);
}

void rl_round_end(rl_op *op, const rl_verdict *v, int64_t now)
{
    redlock_handle *h = op->h;
    rl_round_detach_cmds(op);   /* later replies are late: owed.h's rules */
    switch (op->kind) {
    case OP_LOCK:
        if (v->rc == REDLOCK_OK && op->cmd->kind == RL_CMD_ACQUIRE)
            h->unreached = unreached(op);
        if (v->rc == REDLOCK_OK && op->fenced && op->cmd->kind == RL_CMD_ACQUIRE) {
            int fence = start_fence(op, now);
            if (fence == 1) {
                /* The write-back may have been sent to no node (every
                 * behind node's connection was lost): decide it now, as no
                 * reply will. */
                rl_round_try_decide(op, now);
                return;
            }
            if (fence != 0) {
                rl_round_undo_attempt(op, now);
                rl_round_finish(op, REDLOCK_ENOMEM, "out of memory", now);
                return;
            }
        }
        if (v->rc == REDLOCK_OK) {
            h->held = true;
            memcpy(h->waiter, op->waiter, sizeof h->waiter);
            h->expires_at = v->expires_at;
            h->lease_ms = op->ttl_ms;
            h->acquired_by = rl_cmd_ref(op->attempt);
            rl_round_finish(op, REDLOCK_OK, "", now);
            return;
        }
        if (h->keys->kind == RL_LOCK_FAIR && op->ticket == 0)
            op->ticket = ticket_of(op);
        /* A plain lock's yes votes that waited for the records stand: the
         * next round takes the same keys for the same token (a key that
         * holds it counts as taken), from this round's start, and nothing is
         * undone (an undo and a new token could meet the undo still under
         * way on a node without scripts, and made a fenced lock's first
         * fence 2). */
        if (v->rc == REDLOCK_ENOQUORUM && h->keys->kind == RL_LOCK_PLAIN && settles(op)) {
            op->keep_token = true;
            pause_at_once(op, v->rc, now);
            return;
        }
        rl_round_undo_attempt(op, now);
        if (v->rc == REDLOCK_ENOQUORUM && settles(op)) {
            pause_at_once(op, v->rc, now);
            return;
        }
        /* Nodes the restart guard holds back are not an outage: the guard's
         * end is known, and the wait goes on to it (guard_wait). */
        bool only_guards = false;
        int64_t guard_wait = v->rc != REDLOCK_ENOQUORUM ? 0
            : rl_quorum_guard_wait(op->results, op->ctx->n_nodes,
                                   rl_quorum_of(op->ctx->n_nodes, h->keys->permits), &only_guards);
        if (v->rc != REDLOCK_ENOQUORUM || guard_wait > 0)
            op->unavailable_since = INT64_MAX;
        else if (op->unavailable_since == INT64_MAX)
            op->unavailable_since = op->round_start;
        if (unavailable_too_long(op, now)) {
            size_t len = strlen(op->msg);
            snprintf(op->msg + len, sizeof op->msg - len, " (every attempt for %lld ms: the "
                     "nodes are failing, not refusing; see unavailable_timeout_ms)",
                     (long long)(now - op->unavailable_since));
            rl_round_finish(op, REDLOCK_ENOQUORUM, op->msg, now);
            return;
        }
        if (retryable(v->rc) && now < op->give_up) {
            int64_t pause = retry_pause_ms(op), left = op->give_up - now;
            /* Held back by guards alone, no attempt can succeed before the
             * guard ends (but through a release, which wakes a waiter):
             * the next one is then, or a second from now if that is
             * sooner: the attempt reads a guard's record again
             * (rl_node_guard_stale), and a record deleted or corrected ends
             * it. With nodes failing too, the attempts go on as usual, the
             * next one no later than the guard's end. */
            if (guard_wait > 0 && (only_guards || guard_wait < pause))
                pause = guard_wait < RL_GUARD_REREAD_MS ? guard_wait : RL_GUARD_REREAD_MS;
            op->phase = PHASE_PAUSE;
            op->wake_at = now + (pause < left ? pause : left);
            op->rc = v->rc;
            for (size_t i = 0; i < op->ctx->n_nodes; i++)
                op->slots[i].state = SLOT_IDLE;
            let_go(op);
            return;
        }
        rl_round_finish(op, v->rc, op->msg, now);
        return;
    case OP_EXTEND:
        if (h->lost) {
            /* Declared lost (its validity ran out) while this extension was
             * out: a late success does not bring it back. */
            h->held = false;
            rl_round_finish(op, REDLOCK_ENOTHELD, "the lock was lost while it was being extended",
                            now);
            return;
        }
        h->held = v->held && !h->released;   /* an unlock started meanwhile wins */
        if (v->held || v->expires_at < h->expires_at)
            h->expires_at = v->expires_at;
        if (v->held)
            h->lease_ms = op->ttl_ms;
        rl_round_finish(op, v->rc, op->msg, now);
        return;
    case OP_UNLOCK:
        h->held = false;
        rl_round_finish(op, v->rc, op->msg, now);
        return;
    case OP_PING:
        if (v->rc == REDLOCK_ENOQUORUM && settles(op)) {
            pause_at_once(op, v->rc, now);
            return;
        }
        /* fall through */
    case OP_INSPECT:
    case OP_FORCE:
        op->answer = *v;
        rl_round_finish(op, v->rc, op->msg, now);
        return;
    case OP_DELIVER:   /* decided by step_deliver, never by a verdict */
    case OP_EXTEND_MANY:   /* each lock decided by its decide_each */
        return;
    }
}

/* Whether node i's yes (op->results[i]) counts: rl_quorum_admit's rules,
 * and a Sentinel node's master must have been named lately. */
static void judge(rl_op *op, size_t i, int64_t now)
{
    rl_quorum_admit(op->ctx, i, rl_round_verb(op), &op->results[i], now);
    /* A Sentinel node's master that no sentinel named in the last
     * sentinel_poll_ms before the round began: its yes does not count for a
     * new lock (node.c). The next attempt asks the sentinels first. */
    rl_verb verb = rl_round_verb(op);
    if (op->results[i].vote == RL_VOTE_YES && (verb == RL_VERB_ACQUIRE || verb == RL_VERB_PING)
        && !rl_node_confirmed(&op->ctx->nodes[i], op->round_start))
        rl_result_fail(&op->results[i], REDLOCK_ENOQUORUM,
                       "no sentinel has named its master in the last sentinel_poll_ms (%lld ms): "
                       "not counted for a new lock until one does",
                       (long long)op->ctx->opt.sentinel_poll_ms);
}

void rl_round_vote(rl_op *op, size_t i, const rl_result *r, int64_t now)
{
    op->results[i] = *r;
    judge(op, i, now);
    op->slots[i].state = SLOT_DONE;
    chain_ended(op, i, now);
}

/* The yes votes that wait for the records (records.h), judged again: the
 * replies since may have read or added what they lacked. */
static void rejudge(rl_op *op, int64_t now)
{
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        if (op->results[i].vote == RL_VOTE_FAILED && op->results[i].records) {
            op->results[i].vote = RL_VOTE_YES;
            judge(op, i, now);
        }
    }
}

/* Decides the round if it can be decided now. */
void rl_round_try_decide(rl_op *op, int64_t now)
{
    bool final = true;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        if (op->slots[i].state == SLOT_WAITING || op->slots[i].state == SLOT_WANT_CONN)
            final = false;
    /* After a NOSCRIPT the other nodes have likely lost their scripts too:
     * the round waits for every node, to send each the script now rather
     * than leave it to a reply nobody reads. */
    if (op->saw_noscript && !final)
        return;
    /* An unlock's transactions (nodes without scripts, plain.h) are seen to
     * their end: the connection may sit unread in a pool after, and a
     * transaction's second step goes only when its read's reply is read. */
    for (size_t i = 0; !final && op->kind == OP_UNLOCK && i < op->ctx->n_nodes; i++)
        if (op->slots[i].state == SLOT_WAITING && op->slots[i].txn)
            return;
    /* A poll of the sentinels under way in this round (a connection that
     * still asks one where the master is) is waited for, up to its node's
     * deadline. Decided without it, the connection would be closed
     * unanswered; and as the other nodes answer sooner than a sentinel and
     * a new master connection can, a client would go on unconfirmed with an
     * old master, its polls lost one after another. */
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_WAITING && s->conn && s->conn->to.sentinel
            && op->ctx->nodes[i].addr.kind == RL_NODE_SENTINEL)
            return;
    }
    rejudge(op, now);
    if (op->decide_each) {   /* extend many: each lock on its own (many.c) */
        op->decide_each(op, final, now);
        return;
    }
    rl_round round = {
        .verb = rl_round_verb(op), .results = op->results, .start = op->round_start, .now = now,
        .ttl_ms = op->ttl_ms, .permits = op->h ? op->h->keys->permits : 0, .final = final,
        .was_held = op->was_held,
        .expires_at = op->old_expires_at, .old_expires_at = op->old_expires_at,
    };
    rl_verdict v;
    if (op->kind == OP_INSPECT || op->kind == OP_FORCE || op->kind == OP_PING)
        rl_quorum_query(op->ctx, &round, op->what, &v, op->msg, sizeof op->msg);
    else
        rl_quorum_decide(op->ctx, &round, op->what, &v, op->msg, sizeof op->msg);
    if (v.decided)
        rl_round_end(op, &v, now);
}

/* A chained node answered for its current part (r): it goes on to the next
 * part, on its connection when that serves the next part's slot, else on
 * another (true); or its chain ends here and r, or the first answer of its
 * chain that was not a yes, is its vote (false, r set so). A lock's or an
 * extend's chain goes on after a yes; an unlock's after any answer, as every
 * part must be released. */
bool rl_round_next_part(rl_op *op, size_t i, rl_result *r, int64_t now)
{
    slot *s = &op->slots[i];
    if (r->vote != RL_VOTE_YES && s->chain.vote == RL_VOTE_YES)
        s->chain = *r;
    bool more = s->part + 1 < op->n_parts
             && (op->kind == OP_UNLOCK || r->vote == RL_VOTE_YES);
    if (!more) {
        if (s->chain.vote != RL_VOTE_YES)
            *r = s->chain;
        return false;
    }
    s->part++;
    s->key_slot = part_slot(op, s->part);
    s->ask_server = -1;
    s->sent = s->maybe_ran = s->retried = false;
    s->redirects = 0;
    s->park_until = 0;
    if (s->conn && !rl_conn_serves(s->conn, op->parts[s->part]->k[0]))
        set_aside(op, i);
    if (s->conn) {
        rl_round_send_on(op, i, now);
    } else {
        s->state = SLOT_WANT_CONN;
    }
    rl_round_try_decide(op, now);
    return true;
}
