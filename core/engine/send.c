/* send.c - the form a command takes on a connection (see send.h). */
#include <hiredis/hiredis.h>

#include "client.h"
#include "node.h"
#include "plain.h"
#include "send.h"

/* Sends cmd in form, with what goes beside it: a native release's wake-up
 * ahead (see rl_cmd_released), a fenced SET's INCR, a transaction's WATCH
 * (plain.h). */
static int send_in(rl_cmd *cmd, rl_conn *c, rl_form form, bool cache)
{
    if (form == RL_FORM_READ || form == RL_FORM_EXEC)
        return rl_plain_send(cmd, c, form, cache);
    int rc = rl_cmd_send_form(cmd, c, form, cache);
    if (rc == REDLOCK_OK && form == RL_FORM_DELIFEQ && cmd->wake_ahead)
        rc = rl_conn_wake(c, cmd->keys->k[0], cmd->token);
    if (rc != REDLOCK_OK || !cmd->fenced || (form != RL_FORM_SET && form != RL_FORM_SETNX))
        return rc;
    /* Fenced: the counter's INCR right behind the SET, two entries that the
     * operation reads as one answer (op.c). The stream must never hold the
     * SET without it. */
    rc = rl_cmd_send_form(cmd, c, RL_FORM_COUNT, cache);
    if (rc != REDLOCK_OK)
        rl_conn_break(c, rc, "out of memory");
    return rc;
}

/* On a node that runs no scripts: cmd's plain form, or REDLOCK_EUNSUPPORTED
 * (and the thread's message) when it needs a script. */
static int send_plain(rl_cmd *cmd, rl_conn *c, bool cache)
{
    rl_form form = rl_plain_form(cmd, c);
    if (form == RL_FORMS) {
        rl_result r;
        rl_plain_unsupported(cmd, c, &r);
        return REDLOCK_EUNSUPPORTED;
    }
    return send_in(cmd, c, form, cache);
}

int rl_cmd_send_again(rl_cmd *cmd, rl_conn *c, int form, const redisReply *reply)
{
    if (form == RL_FORM_FCALL)
        rl_conn_no_functions(c, reply->str);
    rl_cmd_native_refused(c, form, reply);
    /* No cached bytes: its operation may have moved on, on another thread.
     * A node without scripts: the plain form. */
    if (rl_conn_no_scripting(c))
        return send_plain(cmd, c, false);
    /* The function when the node has the library; else the script itself:
     * the connection may not have loaded it (SCRIPT LOAD). */
    return rl_cmd_send_form(cmd, c, rl_conn_calls_functions(c) ? RL_FORM_FCALL : RL_FORM_EVAL,
                            false);
}

/* The native form of cmd on c's node, or RL_FORMS when it goes the
 * scripted way. Only a plain lock of one key, not fenced, has one: its
 * extend is SET IFEQ (extend.lua's GET and PEXPIRE in one command: OK when
 * the key held our token, nil otherwise, a key of another type an error),
 * its release DELIFEQ (release.lua's GET and DEL: 1 deleted, 0 not ours or
 * no key), so their votes are the scripts'. Never before the node's INFO
 * said it has them, nor after a reply refused them (rl_node_has_native). */
static rl_form native_form(const rl_cmd *cmd, rl_conn *c)
{
    if (cmd->keys->kind != RL_LOCK_PLAIN || cmd->keys->n != 1 || cmd->fenced
        || (cmd->kind != RL_CMD_EXTEND && cmd->kind != RL_CMD_RELEASE))
        return RL_FORMS;
    rl_form form = cmd->kind == RL_CMD_EXTEND ? RL_FORM_IFEQ : RL_FORM_DELIFEQ;
    int bit = form == RL_FORM_IFEQ ? RL_NATIVE_IFEQ : RL_NATIVE_DELIFEQ;
    return rl_node_has_native(&c->ctx->nodes[c->node], bit) ? form : RL_FORMS;
}

int rl_cmd_send(rl_cmd *cmd, rl_conn *c)
{
    if (cmd->kind != RL_CMD_PING && rl_conn_no_scripting(c))
        return send_plain(cmd, c, cmd->cacheable);
    rl_form native = cmd->kind == RL_CMD_PING ? RL_FORMS : native_form(cmd, c);
    if (native != RL_FORMS)
        return send_in(cmd, c, native, cmd->cacheable);
    bool rare = cmd->kind == RL_CMD_INSPECT || cmd->kind == RL_CMD_FORCE
             || cmd->kind == RL_CMD_FENCE || cmd->kind == RL_CMD_PING;   /* not loaded */
    /* A read lock's, a permit's and a fair lock's acquire have scripts of
     * their own (rw.lua, sem.lua, fair.lua); a write lock's is a plain one's. */
    rl_lock_kind kind = cmd->kind == RL_CMD_PING ? RL_LOCK_PLAIN : cmd->keys->kind;
    bool own_script = kind != RL_LOCK_PLAIN && kind != RL_LOCK_WRITE;
    if (rare || cmd->kind != RL_CMD_ACQUIRE || cmd->keys->n != 1 || own_script
        || !rl_node_has_set_nx_get(&c->ctx->nodes[c->node])) {
        rl_form form = cmd->kind != RL_CMD_PING && rl_conn_calls_functions(c) ? RL_FORM_FCALL
                     : rare ? RL_FORM_EVAL : RL_FORM_EVALSHA;
        return rl_cmd_send_form(cmd, c, form, cmd->cacheable);
    }
    return send_in(cmd, c, RL_FORM_SET, cmd->cacheable);
}
