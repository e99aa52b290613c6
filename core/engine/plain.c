/* plain.c - plain locks on a node that runs no scripts (see plain.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "cmd.h"
#include "node.h"
#include "plain.h"

/* ---- the forms ---- */

rl_form rl_plain_form(const rl_cmd *cmd, rl_conn *c)
{
    rl_node *node = &c->ctx->nodes[c->node];
    if (cmd->keys->n != 1 || cmd->keys->kind != RL_LOCK_PLAIN)
        return RL_FORMS;
    switch (cmd->kind) {
    case RL_CMD_ACQUIRE:
        return rl_node_has_set_nx_get(node) ? RL_FORM_SET : RL_FORM_SETNX;
    case RL_CMD_EXTEND:
    case RL_CMD_EXTEND_MANY:
        return rl_node_has_native(node, RL_NATIVE_IFEQ) ? RL_FORM_IFEQ : RL_FORM_READ;
    case RL_CMD_RELEASE:
        return rl_node_has_native(node, RL_NATIVE_DELIFEQ) ? RL_FORM_DELIFEQ : RL_FORM_READ;
    case RL_CMD_FENCE:
        return RL_FORM_READ;
    case RL_CMD_INSPECT:
        return RL_FORM_EXEC;
    default:
        return RL_FORMS;
    }
}

/* Queues one command of a transaction (an RL_ENTRY_TXN). */
static int txn(rl_conn *c, int argc, const char **argv, const size_t *lens)
{
    return rl_conn_own(c, RL_ENTRY_TXN, argc, argv, lens);
}

/* The key, and a fence's counter beside it, that cmd's transaction watches. */
static int watch(rl_cmd *cmd, rl_conn *c)
{
    bool cluster = c->ctx->nodes[c->node].addr.kind == RL_NODE_CLUSTER;
    const char *argv[3] = { "WATCH", cmd->keys->k[0], NULL };
    size_t lens[3] = { 5, strlen(cmd->keys->k[0]), 0 };
    char *counter = NULL;
    if (cmd->kind == RL_CMD_FENCE && !(counter = rl_counter_key(cmd->keys->k[0], cluster,
                                                                &lens[2])))
        return REDLOCK_ENOMEM;
    argv[2] = counter;
    int rc = txn(c, counter ? 3 : 2, argv, lens);
    free(counter);
    return rc;
}

int rl_plain_send(rl_cmd *cmd, rl_conn *c, rl_form form, bool cache)
{
    int rc;
    if (form == RL_FORM_READ) {
        uint32_t at = c->unwatched;
        if ((rc = watch(cmd, c)) != REDLOCK_OK
            || (rc = rl_cmd_send_form(cmd, c, RL_FORM_READ, cache)) != REDLOCK_OK)
            return rc;
        rl_conn_entry(c, rl_conn_owed(c) - 1)->unwatched = at;
        return REDLOCK_OK;
    }
    /* A query: its key's value and PTTL at one time, as inspect.lua reads them. */
    const char *multi[1] = { "MULTI" }, *get[2] = { "GET", cmd->keys->k[0] };
    const char *pttl[2] = { "PTTL", cmd->keys->k[0] };
    if ((rc = txn(c, 1, multi, NULL)) != REDLOCK_OK || (rc = txn(c, 2, get, NULL)) != REDLOCK_OK
        || (rc = txn(c, 2, pttl, NULL)) != REDLOCK_OK)
        return rc;
    return rl_cmd_send_form(cmd, c, RL_FORM_EXEC, cache);
}

/* ---- the answers ---- */

static const char *token_of(const rl_cmd *cmd)
{
    return cmd->kind == RL_CMD_EXTEND_MANY ? cmd->tokens[0] : cmd->token;
}

/* The second step of cmd's transaction: MULTI, its write (counter: the
 * fence's counter, which holds `count`), EXEC. */
static int finish(rl_cmd *cmd, rl_conn *c, long long count)
{
    bool cluster = c->ctx->nodes[c->node].addr.kind == RL_NODE_CLUSTER;
    const char *multi[1] = { "MULTI" }, *argv[3] = { "PEXPIRE", cmd->keys->k[0], NULL };
    size_t lens[3] = { 0, strlen(cmd->keys->k[0]), 0 };
    char number[24], *counter = NULL;
    if (cmd->kind == RL_CMD_RELEASE) {
        argv[0] = "DEL";
    } else if (cmd->kind == RL_CMD_FENCE) {
        if (!(counter = rl_counter_key(cmd->keys->k[0], cluster, &lens[1])))
            return REDLOCK_ENOMEM;
        argv[0] = "SET";
        argv[1] = counter;
        argv[2] = rl_decimal(number, count);
    } else {
        argv[2] = rl_decimal(number, (long long)(cmd->kind == RL_CMD_EXTEND_MANY
                                                 ? cmd->leases[0] : cmd->ttl_ms));
    }
    lens[0] = strlen(argv[0]);
    lens[2] = argv[2] ? strlen(argv[2]) : 0;
    int rc = txn(c, 1, multi, NULL);
    if (rc == REDLOCK_OK)
        rc = txn(c, argv[2] ? 3 : 2, argv, lens);
    free(counter);
    return rc == REDLOCK_OK ? rl_cmd_send_form(cmd, c, RL_FORM_EXEC, false) : rc;
}

/* An answer without a write: UNWATCH first (the WATCH is not left behind
 * for another transaction's EXEC to trip on). */
static int answer(rl_conn *c, rl_result *out)
{
    const char *argv[1] = { "UNWATCH" };
    if (txn(c, 1, argv, NULL) != REDLOCK_OK && out->vote != RL_VOTE_FAILED)
        rl_result_fail(out, REDLOCK_ENOMEM, "out of memory");
    return 0;
}

/* Goes on with a step queued (1), or fails for want of memory (0). */
static int went_on(int rc, rl_result *out)
{
    if (rc == REDLOCK_OK)
        return 1;
    rl_result_fail(out, rc, "%s", rc == REDLOCK_ENOMEM ? "out of memory" : "connection unusable");
    return 0;
}

/* The read's reply: the key's value (a fence's: the key's and its counter's). */
static int read_reply(rl_cmd *cmd, rl_conn *c, const rl_entry *e, const redisReply *r,
                      rl_result *out)
{
    const redisReply *value = r, *counter = NULL;
    if (cmd->kind == RL_CMD_FENCE) {
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            rl_result_from_bad_reply(out, r);
            return answer(c, out);
        }
        value = r->element[0];
        counter = r->element[1];
    }
    if (value->type == REDIS_REPLY_NIL
        || (value->type == REDIS_REPLY_STRING && strcmp(value->str, token_of(cmd)) != 0)) {
        out->vote = RL_VOTE_NO;
        return answer(c, out);
    }
    if (value->type != REDIS_REPLY_STRING) {   /* WRONGTYPE: the script's error */
        rl_result_from_bad_reply(out, value);
        return answer(c, out);
    }
    /* Ours. Its watch may have gone with another transaction's end: read again. */
    if (e->unwatched != c->unwatched)
        return went_on(rl_plain_send(cmd, c, RL_FORM_READ, false), out);
    long long count = 0;
    if (counter) {
        count = counter->type == REDIS_REPLY_STRING ? strtoll(counter->str, NULL, 10) : 0;
        if (count >= cmd->fences[0]) {   /* high enough already: fence.lua writes nothing */
            out->vote = RL_VOTE_YES;
            return answer(c, out);
        }
    }
    return went_on(finish(cmd, c, cmd->kind == RL_CMD_FENCE ? cmd->fences[0] : count), out);
}

int rl_plain_reply(rl_cmd *cmd, rl_conn *c, const rl_entry *e, const redisReply *reply,
                   rl_result *out)
{
    char refused[sizeof c->txn_error];
    memcpy(refused, c->txn_error, sizeof refused);
    c->txn_error[0] = '\0';
    memset(out, 0, sizeof *out);
    if (refused[0]) {
        /* WATCH or MULTI refused: nothing was written in a transaction. */
        char why[100];
        rl_node_scripting(&c->ctx->nodes[c->node], why, sizeof why);
        rl_result_fail(out, rl_reply_error_code(refused), "%s (a transaction: the node runs no "
                       "scripts, %s)", refused, why);
        return e->form == RL_FORM_READ ? answer(c, out) : 0;
    }
    if (e->form == RL_FORM_READ)
        return read_reply(cmd, c, e, reply, out);
    if (cmd->kind == RL_CMD_INSPECT) {
        rl_cmd_classify(cmd, RL_FORM_EXEC, reply, out);
        return 0;
    }
    if (reply->type == REDIS_REPLY_NIL)   /* the key changed since it was read */
        return went_on(rl_plain_send(cmd, c, RL_FORM_READ, false), out);
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1) {
        rl_result_from_bad_reply(out, reply);
        return 0;
    }
    const redisReply *done = reply->element[0];
    if (done->type == REDIS_REPLY_INTEGER && (done->integer == 0 || done->integer == 1))
        out->vote = done->integer == 1 ? RL_VOTE_YES : RL_VOTE_NO;   /* PEXPIRE, DEL */
    else if (done->type == REDIS_REPLY_STATUS && cmd->kind == RL_CMD_FENCE)
        out->vote = RL_VOTE_YES;   /* SET of the counter */
    else
        rl_result_from_bad_reply(out, done);
    return 0;
}

/* ---- what needs a script ---- */

void rl_plain_unsupported(const rl_cmd *cmd, rl_conn *c, rl_result *out)
{
    rl_node *node = &c->ctx->nodes[c->node];
    rl_lock_kind kind = cmd->keys->kind;
    const char *what = kind == RL_LOCK_READ || kind == RL_LOCK_WRITE ? "a read-write lock"
                     : kind == RL_LOCK_PERMIT ? "a semaphore"
                     : kind == RL_LOCK_FAIR ? "a fair lock"
                     : cmd->kind == RL_CMD_FORCE ? "a forced unlock"
                     : cmd->kind == RL_CMD_EXTEND_MANY ? "a renewal of many locks at once"
                     : "a lock of several keys";
    char why[100];
    rl_node_scripting(node, why, sizeof why);
    rl_result_fail(out, REDLOCK_EUNSUPPORTED, "node %s runs no scripting (%s): %s needs a "
                   "Lua script there; plain locks of one key work without", node->addr.label,
                   why, what);
    rl_fail(REDLOCK_EUNSUPPORTED, "%s", out->why);
}

void rl_plain_refused(const rl_cmd *cmd, rl_conn *c, int form, rl_result *r)
{
    /* A PING goes as no script whatever its form says: its refusal is its own. */
    if (r->vote == RL_VOTE_FAILED && cmd->kind != RL_CMD_PING && rl_conn_no_scripting(c)
        && (form == RL_FORM_EVAL || form == RL_FORM_EVALSHA || form == RL_FORM_FCALL))
        rl_plain_unsupported(cmd, c, r);
}
