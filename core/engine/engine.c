/* engine.c - a client made and freed, and connection events dispatched to
 * operations and commands (see engine.h). */
#include <stdio.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "engine.h"
#include "node.h"
#include "op.h"
#include "owed.h"
#include "records.h"

int rl_client_init(rl_client *ctx, const char *const *node_uris, size_t n_nodes)
{
    if (!node_uris)
        return rl_fail(REDLOCK_EINVAL, "node_uris is NULL");
    if (n_nodes == 0 || n_nodes > REDLOCK_MAX_NODES)
        return rl_fail(REDLOCK_EINVAL, "n_nodes must be from 1 to %d, got %zu",
                       REDLOCK_MAX_NODES, n_nodes);
    if (!(ctx->nodes = calloc(n_nodes, sizeof *ctx->nodes)) || !(ctx->owed = rl_owed_list_new())
        || !(ctx->records = rl_records_new(n_nodes)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    int rc = rl_options_init(&ctx->opt);
    for (size_t i = 0; rc == REDLOCK_OK && i < n_nodes; i++) {
        if ((rc = rl_node_init(&ctx->nodes[i], node_uris[i], i)) != REDLOCK_OK) {
            char detail[512];
            snprintf(detail, sizeof detail, "%s", rl_errmsg());
            rl_fail(rc, "node %zu: %s", i + 1, detail);
            break;
        }
        ctx->nodes[i].ctx = ctx;
        ctx->n_nodes = i + 1;
        for (size_t j = 0; j < i; j++) {
            if (rl_uri_same_node(&ctx->nodes[j].addr, &ctx->nodes[i].addr)) {
                rc = rl_fail(REDLOCK_EINVAL, "nodes %zu and %zu are the same server (%s): "
                             "it would count twice towards the quorum", j + 1, i + 1,
                             ctx->nodes[i].addr.label);
                break;
            }
        }
    }
    return rc;
}

void rl_client_destroy(rl_client *ctx)
{
    rl_owed_list_free(ctx->owed);
    rl_records_free(ctx->records);
    for (size_t i = 0; i < ctx->n_nodes; i++)
        rl_node_destroy(&ctx->nodes[i]);
    free(ctx->nodes);
    rl_options_free(&ctx->opt);
}

int rl_client_new(rl_client **out, const char *const *node_uris, size_t n_nodes)
{
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    rl_client *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    int rc = rl_client_init(ctx, node_uris, n_nodes);
    if (rc != REDLOCK_OK) {
        rl_client_free(ctx);
        return rc;
    }
    *out = ctx;
    return REDLOCK_OK;
}

void rl_client_free(rl_client *ctx)
{
    if (!ctx)
        return;
    rl_client_destroy(ctx);
    free(ctx);
}

void rl_engine_connected(rl_conn *c, int64_t now)
{
    rl_conn_connected(c);
    c->opened_at = c->heard_at = now;
    rl_node_connect_ok(&c->ctx->nodes[c->node]);
    if (c->op)
        rl_op_conn_connected(c->op, c, now);
}

void rl_engine_wrote(rl_conn *c, size_t n, int64_t now)
{
    rl_conn_wrote(c, n, now);
    if (c->op)
        rl_op_conn_wrote(c->op, c, now);
}

/* Decides the fate of every entry still owed on a broken connection. */
static void settle(rl_conn *c, int64_t now)
{
    rl_entry e;
    bool written;
    rl_node *node = &c->ctx->nodes[c->node];
    while (rl_conn_pop_lost(c, &e, &written) == 1) {
        if (e.cmd->op && e.cmd->op == c->op)
            rl_op_entry_lost(c->op, c, &e, written, now);
        else
            rl_cmd_late_lost(&e, c->ctx, c->node, written, now);
        rl_cmd_unref(e.cmd);
    }
    if (!c->redirected && c->to.sentinel) {
        /* A sentinel that cannot be reached, or did not answer: the next
         * one is asked, at once; the node backs off only once every one of
         * them failed. */
        rl_node_sentinel_missed(node, c->to.gen);
        c->redirected = rl_node_sentinels_left(node);
    } else if (!c->connected && !c->redirected) {
        /* A master that cannot be reached may have moved: the sentinels
         * are asked again before the next connect. */
        rl_node_master_lost(node, c->to.gen, c->why, now);
    }
    if (!c->connected && !c->redirected) {
        rl_node_connect_failed(node, now);
        rl_node_failed(node, RL_NODE_DOWN, c->why, now);
        rl_node_connect_failure(node, c->code, c->why);
    }
    if (c->op)
        rl_op_conn_lost(c->op, c, now);
}

/* Hands out every complete reply the connection has read; false when it
 * broke. */
static bool hand_out(rl_conn *c, int64_t now)
{
    redisReply *reply;
    rl_entry e;
    int r;
    while ((r = rl_conn_next(c, &reply, &e, now)) == 1) {
        if (rl_conn_moved(c, reply, now)) {
            /* Refused by a replica: it did not run, and goes again to the
             * master the sentinels name (the operation asks for it). */
            if (e.cmd->op && e.cmd->op == c->op)
                rl_op_entry_lost(c->op, c, &e, false, now);
            else
                rl_cmd_late_lost(&e, c->ctx, c->node, false, now);
        } else if (e.cmd->op && e.cmd->op == c->op)
            rl_op_reply(c->op, c, &e, reply, now);
        else
            rl_cmd_late_reply(&e, c, reply, now);
        rl_cmd_unref(e.cmd);
        freeReplyObject(reply);
    }
    if (r < 0) {
        settle(c, now);
        return false;
    }
    return true;
}

bool rl_engine_received(rl_conn *c, const char *buf, size_t len, int64_t now)
{
    /* A piece at a time, its replies read before the next: the reader holds
     * at most a piece beside the reply in progress (bound.h), however much
     * a driver hands over at once. */
    do {
        size_t n = len < RL_REPLY_FEED_MAX ? len : RL_REPLY_FEED_MAX;
        rl_conn_feed(c, buf, n);
        if (!hand_out(c, now))
            return false;
        buf += n;
        len -= n;
    } while (len > 0);
    return true;
}

void rl_engine_lost(rl_conn *c, int code, const char *why, int64_t now)
{
    rl_conn_break(c, code, "%s", why);
    settle(c, now);
}
