/* conn.c - one connection's bytes and its stream of expected replies (see conn.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "conn.h"
#include "node.h"
#include "proto.h"
#include "scripts.h"

#define GATE_OPEN UINT64_MAX
#define MAX_OWED_POOLED 1024   /* owing more, its node stalls: close, do not pool */

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
    return e;
}

static bool append_bytes(rl_conn *c, const char *bytes, size_t len)
{
    if (c->out_len + len > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 256;
        while (cap < c->out_len + len)
            cap *= 2;
        char *grown = realloc(c->out, cap);
        if (!grown)
            return false;
        c->out = grown;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, bytes, len);
    c->out_len += len;
    c->queued += len;
    return true;
}

/* Queues one command of the handshake. */
static bool send_own(rl_conn *c, rl_entry_kind kind, int argc, const char **argv)
{
    rl_bytes b;
    if (rl_bytes_format(&b, argc, argv) != REDLOCK_OK)
        return false;
    bool ok = append_bytes(c, b.p, b.len)
        && push_entry(c, (rl_entry){ .kind = (uint8_t)kind, .end = c->queued });
    rl_bytes_free(&b);
    return ok;
}

/* AUTH and SELECT first, and nothing after them is written before they
 * succeed; then SCRIPT LOAD of every script (so that EVALSHA finds them) and
 * INFO (the run_id for the restart guard, the version for SET NX GET). */
static bool queue_handshake(rl_conn *c)
{
    const rl_node_addr *a = &c->ctx->nodes[c->node].addr;
    if (a->password) {
        const char *argv[3] = { "AUTH", a->user ? a->user : a->password, a->password };
        if (!send_own(c, RL_ENTRY_AUTH, a->user ? 3 : 2, argv))
            return false;
    }
    if (a->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", a->db);
        const char *argv[2] = { "SELECT", db };
        if (!send_own(c, RL_ENTRY_SELECT, 2, argv))
            return false;
    }
    c->gate = c->q_len > 0 ? c->queued : GATE_OPEN;
    for (int i = 0; i < RL_N_SCRIPTS; i++) {
        const char *argv[3] = { "SCRIPT", "LOAD", rl_scripts[i]->body };
        if (!send_own(c, RL_ENTRY_SCRIPT, 3, argv))
            return false;
    }
    const char *info[2] = { "INFO", "server" };
    return send_own(c, RL_ENTRY_INFO, 2, info);
}

rl_conn *rl_conn_new(rl_client *ctx, size_t node)
{
    rl_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ctx = ctx;
    c->node = node;
    c->state = RL_CONN_CONNECTING;
    c->io = -1;
    c->gate = GATE_OPEN;
    if (!(c->reader = redisReaderCreate()) || !queue_handshake(c)) {
        c->q_len = 0;   /* handshake entries hold no references */
        rl_conn_free(c);
        return NULL;
    }
    return c;
}

void rl_conn_free(rl_conn *c)
{
    if (!c)
        return;
    if (c->reader)
        redisReaderFree(c->reader);
    free(c->q);
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

int rl_conn_send(rl_conn *c, const char *bytes, size_t len, struct rl_cmd *cmd, int form)
{
    if (c->state == RL_CONN_BROKEN)
        return REDLOCK_ENOQUORUM;
    if (!append_bytes(c, bytes, len))
        return REDLOCK_ENOMEM;
    if (!push_entry(c, (rl_entry){ .kind = RL_ENTRY_CMD, .form = (uint8_t)form,
                                   .end = c->queued, .cmd = cmd })) {
        /* The bytes are queued without an entry: the stream would be wrong. */
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
        return REDLOCK_ENOMEM;
    }
    return REDLOCK_OK;
}

size_t rl_conn_output(const rl_conn *c, const char **bytes)
{
    if (c->state != RL_CONN_OPEN || c->out_len == 0)
        return 0;
    uint64_t allowed = c->gate == GATE_OPEN ? c->out_len : c->gate - c->written;
    *bytes = c->out;
    return allowed < c->out_len ? (size_t)allowed : c->out_len;
}

void rl_conn_wrote(rl_conn *c, size_t n)
{
    memmove(c->out, c->out + n, c->out_len - n);
    c->out_len -= n;
    c->written += n;
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
    return c->state == RL_CONN_OPEN && c->out_len == 0 && c->q_len <= MAX_OWED_POOLED;
}

void rl_conn_feed(rl_conn *c, const char *buf, size_t len)
{
    if (c->state == RL_CONN_BROKEN)
        return;
    if (redisReaderFeed(c->reader, buf, len) != REDIS_OK)
        rl_conn_break(c, REDLOCK_ENOMEM, "out of memory");
}

/* A reply of the handshake: REDLOCK_OK, or breaks the connection. */
static void handshake_reply(rl_conn *c, rl_entry_kind kind, const redisReply *reply, int64_t now)
{
    rl_node *node = &c->ctx->nodes[c->node];
    if (reply->type == REDIS_REPLY_ERROR) {
        if (kind == RL_ENTRY_AUTH || kind == RL_ENTRY_SELECT) {
            int code = rl_reply_error_code(reply->str);
            rl_conn_break(c, code, "connection setup refused (%s): %.100s",
                          kind == RL_ENTRY_AUTH ? "AUTH" : "SELECT", reply->str);
            rl_node_failed(node, rl_node_state_after(code), c->why, now);
        } else {
            /* SCRIPT LOAD or INFO refused (an ACL without +script|load or
             * +info): the connection works without them (EVAL; no restart
             * guard for this node), and the node's health says why. */
            char why[160];
            snprintf(why, sizeof why, "%s refused: %.120s",
                     kind == RL_ENTRY_INFO ? "INFO" : "SCRIPT LOAD", reply->str);
            rl_node_failed(node, RL_NODE_KEEP, why, now);
        }
        return;
    }
    if (kind == RL_ENTRY_INFO && reply->type == REDIS_REPLY_STRING) {
        rl_nodes_saw_info(c->ctx->nodes, c->ctx->n_nodes, c->node, reply->str, reply->len, now);
        /* The handshake's round trip (AUTH, SCRIPT LOAD and INFO together). */
        rl_node_answered(node, now - c->opened_at, now);
    }
    /* The last reply of AUTH and SELECT opens the gate. */
    if ((kind == RL_ENTRY_AUTH || kind == RL_ENTRY_SELECT) && c->gate != GATE_OPEN
        && (c->q_len == 0 || c->q[c->q_head].kind > RL_ENTRY_SELECT))
        c->gate = GATE_OPEN;
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
        if (e.kind != RL_ENTRY_CMD) {
            handshake_reply(c, (rl_entry_kind)e.kind, r, now);
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
