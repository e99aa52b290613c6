/* engine.c - connection events, dispatched to operations and commands (see engine.h). */
#include <hiredis/hiredis.h>

#include "ctx.h"
#include "engine.h"
#include "op.h"

void rl_engine_connected(rl_conn *c, int64_t now)
{
    rl_conn_connected(c);
    c->opened_at = now;
    rl_node_connect_ok(&c->ctx->nodes[c->node]);
    if (c->op)
        rl_op_conn_connected(c->op, c, now);
}

void rl_engine_wrote(rl_conn *c, size_t n)
{
    rl_conn_wrote(c, n);
}

/* Decides the fate of every entry still owed on a broken connection. */
static void settle(rl_conn *c, int64_t now)
{
    rl_entry e;
    bool written;
    while (rl_conn_pop_lost(c, &e, &written) == 1) {
        if (e.cmd->op && e.cmd->op == c->op)
            rl_op_entry_lost(c->op, c, &e, written, now);
        else
            rl_cmd_late_lost(&e, c->ctx, c->node, written, now);
        rl_cmd_unref(e.cmd);
    }
    if (!c->connected) {
        rl_node_connect_failed(&c->ctx->nodes[c->node], now);
        rl_node_failed(&c->ctx->nodes[c->node], RL_NODE_DOWN, c->why, now);
        rl_node_connect_failure(&c->ctx->nodes[c->node], c->code, c->why);
    }
    if (c->op)
        rl_op_conn_lost(c->op, c, now);
}

bool rl_engine_received(rl_conn *c, const char *buf, size_t len, int64_t now)
{
    rl_conn_feed(c, buf, len);
    redisReply *reply;
    rl_entry e;
    int r;
    while ((r = rl_conn_next(c, &reply, &e, now)) == 1) {
        if (e.cmd->op && e.cmd->op == c->op)
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

void rl_engine_lost(rl_conn *c, int code, const char *why, int64_t now)
{
    rl_conn_break(c, code, "%s", why);
    settle(c, now);
}
