/* many.c - the renewal of many locks in one command per node (see op.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "log.h"
#include "node.h"
#include "op.h"
#include "round.h"
#include "owed.h"
#include "plain.h"
#include "quorum.h"
#include "slots.h"

/* ---- the renewal of many locks ----
 *
 * One command per node renews every lock of the batch (the extend_many
 * script: each key by its own token and lease, one answer per key), and
 * each lock is decided on its own by the one verdict (rl_quorum_decide,
 * verb extend) over the nodes' answers for its keys: a node votes yes for
 * a lock when it extended every one of its keys, no when one was not ours,
 * and fails for it as the node failed for the whole command (no answer,
 * an error, the restart guard). A lock decided ends as an extend would:
 * its expiry moved, or held no more. The operation ends when every lock is
 * decided; its status is REDLOCK_OK, each lock's is rl_op_many_status. */

static void reply_many(rl_op *op, rl_conn *c, const rl_entry *e, const redisReply *reply,
                       const rl_result *plain, int64_t now);
static void decide_many(rl_op *op, bool final, int64_t now);

/* The event extended of one lock a renewal extended, as an extend tells it
 * (a failure is its keeper's to tell: keep.h). */
static void told_extended(const rl_op *op, const redlock_handle *h, const rl_result *votes,
                          int64_t now)
{
    if (!rl_logging(&op->ctx->log, REDLOCK_LOG_DEBUG))
        return;
    size_t n = op->ctx->n_nodes, yes = 0;
    for (size_t i = 0; i < n; i++)
        yes += votes[i].vote == RL_VOTE_YES;
    char resources[256] = "", owner[RL_OWNER_LEN + 1] = "";
    rl_log_resources(op->ctx, h->keys, resources, sizeof resources);
    rl_log_owner(h->token, owner);
    rl_log_emit(&op->ctx->log, REDLOCK_LOG_DEBUG, "extended",
                "op=renew resource=%s owner=%s nodes=%zu/%zu ms=%lld validity_ms=%lld",
                resources, owner, yes, n, (long long)(now - op->started),
                (long long)(h->expires_at - now));
}

static void end_many(rl_op *op, size_t j, int rc, const char *msg)
{
    many_end *end = &op->ends[j];
    end->decided = true;
    end->rc = rc;
    if (rc != REDLOCK_OK && msg)
        end->msg = strdup(msg);   /* out of memory: the code alone */
    op->n_undecided--;
}

int rl_op_extend_many(rl_op **out, rl_client *ctx, redlock_handle *const *hs, size_t n,
                      int64_t now)
{
    if (n == 0)
        return rl_fail(REDLOCK_EINVAL, "a renewal of no lock");
    for (size_t j = 1; j < n; j++)
        if (!rl_op_batches_with(hs[0], hs[j]))
            return rl_fail(REDLOCK_EINVAL, "a renewal of locks in different slots of a "
                           "Cluster node (rl_op_batches_with)");
    rl_op *op = rl_op_new(ctx, OP_EXTEND_MANY, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->decide_each = decide_many;
    op->reply_each = reply_many;
    op->many = malloc(n * sizeof *op->many);
    op->ends = calloc(n, sizeof *op->ends);
    op->first_key = malloc((n + 1) * sizeof *op->first_key);
    if (!op->many || !op->ends || !op->first_key) {
        rl_op_free(op);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    memcpy(op->many, hs, n * sizeof *hs);
    op->n_many = op->n_undecided = n;
    snprintf(op->what, sizeof op->what, "renewal of %zu locks", n);
    /* The locks that can be renewed, and their keys. */
    size_t n_keys = 0;
    for (size_t j = 0; j < n; j++) {
        redlock_handle *h = hs[j];
        op->first_key[j] = n_keys;
        if (!h->held) {
            end_many(op, j, REDLOCK_ENOTHELD, h->released ? "extend: the lock was released"
                                                         : "extend: the lock was lost");
        } else if (h->expires_at <= now) {
            h->held = false;
            char why[96];
            snprintf(why, sizeof why, "extend: the lock expired %lld ms ago",
                     (long long)(now - h->expires_at));
            end_many(op, j, REDLOCK_ENOTHELD, why);
        } else if (rl_handle_check_lease(ctx, h->lease_ms) != REDLOCK_OK) {
            end_many(op, j, REDLOCK_EINVAL, rl_errmsg());
        } else {
            n_keys += h->keys->n;
        }
    }
    op->first_key[n] = n_keys;
    if (op->n_undecided == 0) {
        rl_round_finish(op, REDLOCK_OK, "", now);
        *out = op;
        return REDLOCK_OK;
    }
    rl_keys *keys = rl_keys_new(n_keys);
    if (keys && n == 1) {
        keys->kind = hs[0]->keys->kind;
        keys->permits = hs[0]->keys->permits;
    }
    rl_cmd *cmd = keys ? rl_cmd_new_many(keys) : NULL;
    rl_keys_unref(keys);
    op->key_votes = malloc(ctx->n_nodes * n_keys);
    if (!cmd || !op->key_votes) {
        rl_cmd_unref(cmd);
        rl_op_free(op);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->cmd = cmd;
    for (size_t j = 0; j < n; j++) {
        redlock_handle *h = hs[j];
        if (op->ends[j].decided)
            continue;
        int64_t lease = h->lease_ms;
        for (size_t k = 0; k < h->keys->n; k++) {
            size_t at = op->first_key[j] + k;
            if (!(keys->k[at] = strdup(h->keys->k[k]))) {
                rl_op_free(op);
                return rl_fail(REDLOCK_ENOMEM, "out of memory");
            }
            memcpy(cmd->tokens[at], h->token, sizeof cmd->tokens[at]);
            cmd->leases[at] = lease;
        }
        /* As rl_op_extend: a node may apply the lease the moment it gets
         * the command, so the lock lasts no longer than that from now. */
        op->ends[j].old_expires_at = h->expires_at;
        int64_t shorter = now + lease - rl_drift_ms(lease, ctx->opt.drift_factor);
        if (shorter < h->expires_at)
            h->expires_at = shorter;
        rl_ctx_note_lease(ctx, lease);
    }
    cmd->op = op;
    cmd->cacheable = true;
    /* One lock whose keys span a Cluster node's slots: renewed there one
     * part at a time, as its extend would be. */
    if (n == 1 && hs[0]->n_parts > 1 && !op->ends[0].decided) {
        op->n_parts = hs[0]->n_parts;
        op->parts = hs[0]->parts;
        if (rl_round_new_part_cmds(op, RL_CMD_EXTEND_MANY) != REDLOCK_OK) {
            rl_op_free(op);
            return rl_fail(REDLOCK_ENOMEM, "out of memory");
        }
    }
    op->phase = PHASE_ROUND;
    op->round_start = now;
    /* only a Cluster node's */
    int key_slot = rl_handle_has_cluster(ctx) ? rl_handle_keys_slot(keys) : -1;
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        op->slots[i].chain.vote = RL_VOTE_YES;
        op->results[i].vote = RL_VOTE_PENDING;
        op->slots[i].state = SLOT_WANT_CONN;
        op->slots[i].ask = rl_node_poll_due(&ctx->nodes[i], ctx->opt.sentinel_poll_ms, now);
        op->slots[i].key_slot = key_slot;
    }
    *out = op;
    return REDLOCK_OK;
}

bool rl_op_batches_with(const redlock_handle *a, const redlock_handle *b)
{
    if (a == b)
        return true;
    /* A read-write lock's renewal is rw.lua's, one lock a call; where a
     * node runs no scripts, each lock is renewed by its own extend there
     * (plain.h), one lock a call. */
    if (a->keys->kind != RL_LOCK_PLAIN || b->keys->kind != RL_LOCK_PLAIN
        || rl_client_scriptless(a->ctx))
        return false;
    return a->ctx == b->ctx && (!rl_handle_has_cluster(a->ctx) || (a->n_parts < 2 && b->n_parts < 2
                                && rl_handle_keys_slot(a->keys) == rl_handle_keys_slot(b->keys)));
}

/* A node's reply to the renewal: its answer for each key, or a failure of
 * the whole command. */
static void reply_many(rl_op *op, rl_conn *c, const rl_entry *e, const redisReply *reply,
                       const rl_result *plain, int64_t now)
{
    size_t i = c->node;
    size_t n_keys = op->first_key[op->n_many], at = 0;
    for (size_t g = 0; rl_round_chained(op, i) && g < op->slots[i].part; g++)
        at += op->parts[g]->n;   /* a chained node answers for its part's keys */
    rl_result r;
    memset(&r, 0, sizeof r);
    signed char *votes = op->key_votes + i * n_keys + at;
    rl_cmd *cmd = rl_round_cmd_of(op, i);
    if (plain ? rl_cmd_plain_votes(plain, votes, &r)
              : rl_cmd_many_votes(cmd, e->form, reply, votes, &r)) {
        r.vote = RL_VOTE_YES;   /* the node answered: each lock's vote is its keys' */
        if (!e->late)
            rl_node_answered(&op->ctx->nodes[i], e->sent_at ? now - e->sent_at : -1, now);
    } else {
        rl_cmd_refused_both(c, e->form, &r);
        rl_plain_refused(cmd, c, e->form, &r);
        rl_node_failed(&op->ctx->nodes[i], rl_node_state_after(r.code), r.why, now);
    }
    if (rl_round_chained(op, i) && rl_round_next_part(op, i, &r, now))
        return;
    rl_round_vote(op, i, &r, now);
    rl_round_try_decide(op, now);
}

/* Lock j's vote from node i, as the node answered for its keys. */
static void vote_of(const rl_op *op, size_t j, size_t i, rl_result *out)
{
    const rl_result *node = &op->results[i];
    if (node->vote != RL_VOTE_YES) {
        *out = *node;
        return;
    }
    memset(out, 0, sizeof *out);
    out->vote = RL_VOTE_YES;
    const signed char *votes = op->key_votes + i * op->first_key[op->n_many];
    for (size_t k = op->first_key[j]; k < op->first_key[j + 1]; k++) {
        if (votes[k] < 0) {
            rl_result_fail(out, REDLOCK_EWRONGTYPE, "key '%.100s' holds another type, not a "
                           "lock", op->cmd->keys->k[k]);
            return;
        }
        if (votes[k] == 0)
            out->vote = RL_VOTE_NO;
    }
}

static void decide_many(rl_op *op, bool final, int64_t now)
{
    size_t n_nodes = op->ctx->n_nodes;
    rl_result votes[REDLOCK_MAX_NODES];
    char what[300], msg[RL_ERRMSG_MAX];
    for (size_t j = 0; j < op->n_many; j++) {
        if (op->ends[j].decided)
            continue;
        redlock_handle *h = op->many[j];
        for (size_t i = 0; i < n_nodes; i++)
            vote_of(op, j, i, &votes[i]);
        const rl_keys *k = h->keys;
        if (k->n == 1)
            snprintf(what, sizeof what, "extend '%.200s'", k->k[0]);
        else
            snprintf(what, sizeof what, "extend '%.200s' and %zu more", k->k[0], k->n - 1);
        rl_round round = {
            .verb = RL_VERB_EXTEND, .results = votes, .start = op->round_start, .now = now,
            .ttl_ms = op->cmd->leases[op->first_key[j]], .permits = k->permits, .final = final,
            .old_expires_at = op->ends[j].old_expires_at,
        };
        rl_verdict v;
        rl_quorum_decide(op->ctx, &round, what, &v, msg, sizeof msg);
        if (!v.decided)
            continue;
        /* As an extend's end (rl_round_end). */
        if (h->lost) {
            h->held = false;
            end_many(op, j, REDLOCK_ENOTHELD, "the lock was lost while it was being extended");
            continue;
        }
        h->held = v.held && !h->released;
        if (v.held || v.expires_at < h->expires_at)
            h->expires_at = v.expires_at;
        end_many(op, j, v.rc, msg);
        if (v.rc == REDLOCK_OK)
            told_extended(op, h, votes, now);
    }
    if (op->n_undecided == 0)
        rl_round_finish(op, REDLOCK_OK, "", now);
}

size_t rl_op_many_count(const rl_op *op)
{
    return op->kind == OP_EXTEND_MANY ? op->n_many : 0;
}

redlock_handle *rl_op_many_handle(const rl_op *op, size_t j)
{
    return op->kind == OP_EXTEND_MANY && j < op->n_many ? op->many[j] : NULL;
}

int rl_op_many_status(const rl_op *op, size_t j, const char **message)
{
    if (op->kind != OP_EXTEND_MANY || j >= op->n_many || !op->ends[j].decided) {
        if (message)
            *message = "no such lock in this renewal, or not decided";
        return REDLOCK_EINVAL;
    }
    if (message)
        *message = op->ends[j].msg ? op->ends[j].msg : "";
    return op->ends[j].rc;
}
