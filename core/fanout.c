/*
 * fanout.c - sends one command to every node at once and collects the
 * replies over one poll loop, each node with its own deadline.
 *
 * A call returns as soon as the quorum outcome is decided, once its command
 * has been written to every node it could reach (so no node misses it); it
 * does not wait for the remaining replies. A connection that still awaits
 * replies remembers how many to drop before the next command's own, so a late
 * reply is never taken for the answer to a later command; and it stays with
 * the handle that sent the command (parked), so that handle's next command to
 * that node is queued behind it on the same connection.
 */
#include <stdatomic.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include "internal.h"

/* The state of the command on one node. */
typedef struct op {
    rl_conn *conn;
    int64_t deadline;
    int to_skip;         /* replies of earlier calls still ahead of ours (after the handshake) */
    bool connecting;     /* non-blocking connect not yet complete */
    bool retried;        /* a stale pooled connection was replaced once */
    bool active;         /* still waiting for something */
    bool broken;         /* close the connection when done */
} op;

typedef struct fanout {
    redlock_ctx *ctx;
    const rl_command *cmd;
    rl_wait_for wait;
    rl_result *results;
    rl_conn **parked;
    bool saw_noscript;   /* a node had lost its scripts: wait for every node */
    op ops[REDLOCK_MAX_NODES];
} fanout;

static void op_finish(fanout *f, size_t i, rl_vote vote, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void op_finish(fanout *f, size_t i, rl_vote vote, int code, const char *fmt, ...)
{
    rl_result *r = &f->results[i];
    r->vote = vote;
    r->code = code;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, sizeof r->why, fmt, ap);
        va_end(ap);
    }
    f->ops[i].active = false;
}

/* Writes what hiredis has buffered; send(MSG_NOSIGNAL), so a closed peer is an
 * error rather than a SIGPIPE for the whole process. 1: all written, 0: the
 * socket is full, -1: error (errno). */
static int conn_flush(redisContext *rc)
{
    size_t len = sdslen(rc->obuf);
    while (len > 0) {
        ssize_t w = send(rc->fd, rc->obuf, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        }
        sdsrange(rc->obuf, (int)w, -1);
        len -= (size_t)w;
    }
    return 1;
}

static bool has_output(const op *o)
{
    return sdslen(o->conn->rc->obuf) > 0;
}

static void op_start(fanout *f, size_t i, int64_t now);

/* The connection broke. A pooled connection may simply have gone stale (the
 * node restarted since it was used): then the pool is emptied and the command
 * is sent once more on a new connection. */
static void op_io_error(fanout *f, size_t i, const char *error, int64_t now)
{
    char why[128];
    snprintf(why, sizeof why, "%s", error); /* may live in the context freed below */
    op *o = &f->ops[i];
    rl_node *node = &f->ctx->nodes[i];
    bool retry = o->conn->reused && !o->retried;
    rl_node_release(node, o->conn, true, 0);
    o->conn = NULL;
    if (retry) {
        rl_node_discard_idle(node);
        o->retried = true;
        op_start(f, i, now);
        return;
    }
    op_finish(f, i, RL_VOTE_FAILED, REDLOCK_ENOQUORUM, "connection lost: %s", why);
}

static void op_flush(fanout *f, size_t i, int64_t now)
{
    op *o = &f->ops[i];
    if (conn_flush(o->conn->rc) < 0)
        op_io_error(f, i, strerror(errno), now);
    else if (f->wait == RL_WAIT_SENT && !has_output(o))
        op_finish(f, i, RL_VOTE_YES, REDLOCK_OK, NULL);
}

static void op_start(fanout *f, size_t i, int64_t now)
{
    op *o = &f->ops[i];
    rl_node *node = &f->ctx->nodes[i];
    rl_conn *c = NULL;
    if (f->parked && f->parked[i]) {
        c = f->parked[i];
        f->parked[i] = NULL;
    } else {
        char err[128];
        if (!(c = rl_node_acquire(node, err, sizeof err))) {
            op_finish(f, i, RL_VOTE_FAILED, REDLOCK_ENOQUORUM, "%s", err);
            return;
        }
    }
    o->conn = c;
    o->active = true;
    o->broken = false;
    o->connecting = c->fresh;
    if (c->fresh) {
        rl_node_append_handshake(node, c);
        o->deadline = now + f->ctx->opt.connect_timeout_ms;
    } else {
        o->deadline = now + f->ctx->opt.node_timeout_ms;
    }
    o->to_skip = c->pending_len;
    if (!rl_conn_push(c, f->cmd->fallback, f->cmd->fallback_len)) {
        o->broken = true;
        op_finish(f, i, RL_VOTE_FAILED, REDLOCK_ENOMEM, "out of memory");
        return;
    }
    redisAppendFormattedCommand(c->rc, f->cmd->bytes, f->cmd->len);
    if (!o->connecting)
        op_flush(f, i, now);
}

/* Redis error replies by their first word. */
int rl_reply_error_code(const char *err)
{
    if (strstr(err, "WRONGTYPE"))
        return REDLOCK_EWRONGTYPE;
    if (strncmp(err, "NOAUTH", 6) == 0 || strncmp(err, "WRONGPASS", 9) == 0
        || strncmp(err, "NOPERM", 6) == 0 || strstr(err, "invalid password")
        || strstr(err, "invalid username-password")
        || strstr(err, "The user executing the script can't"))  /* ACL, inside a script */
        return REDLOCK_EAUTH;
    return REDLOCK_EREDIS;
}

/* A yes from a node that restarted less than the largest lease ago does not
 * count: it may have lost a key it granted before (the restart guard). */
static void apply_restart_guard(fanout *f, size_t i, int64_t now)
{
    rl_result *r = &f->results[i];
    const redlock_ctx *ctx = f->ctx;
    if (r->vote != RL_VOTE_YES || !f->cmd->guarded || !ctx->opt.restart_guard)
        return;
    int64_t left = rl_node_guard_left(&f->ctx->nodes[i],
                                      atomic_load_explicit(&ctx->max_lease_ms,
                                                           memory_order_relaxed), now);
    if (left > 0) {
        r->vote = RL_VOTE_FAILED;
        r->code = REDLOCK_ENOQUORUM;
        snprintf(r->why, sizeof r->why,
                 "restarted recently; not counted for %lld ms more (restart_guard)",
                 (long long)left);
    }
}

static void op_reply(fanout *f, size_t i, redisReply *reply, int64_t now)
{
    op *o = &f->ops[i];
    rl_conn *c = o->conn;
    if (c->hs_done < c->hs_total) {
        char why[160];
        int code = rl_node_handshake_reply(&f->ctx->nodes[i], c, reply, why, sizeof why);
        if (code != REDLOCK_OK) {
            o->broken = true;
            op_finish(f, i, RL_VOTE_FAILED, code, "%s", why);
        }
        return;
    }
    rl_pending p = rl_conn_pop(c);
    bool noscript = reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0;
    if (noscript && p.eval) {
        /* The node lost its scripts (SCRIPT FLUSH): send the script itself.
         * This also serves replies of earlier calls that nobody waits for.
         * The others have likely lost theirs too, so this round now waits
         * for every node, to send each its script now rather than later. */
        f->saw_noscript = true;
        if (o->to_skip > 0)
            o->to_skip--;
        redisAppendFormattedCommand(c->rc, p.eval, p.len);
        if (p.owned)
            free(p.eval);
        if (!rl_conn_push(c, NULL, 0)) {
            o->broken = true;
            op_finish(f, i, RL_VOTE_FAILED, REDLOCK_ENOMEM, "out of memory");
            return;
        }
        op_flush(f, i, now);
        return;
    }
    if (p.owned)
        free(p.eval);
    if (o->to_skip > 0) {
        o->to_skip--;
        return;
    }
    f->cmd->classify(reply, f->cmd->n_keys, &f->results[i]);
    apply_restart_guard(f, i, now);
    o->active = false;
}

/* Reads what arrived and hands each complete reply to op_reply. */
static void op_read(fanout *f, size_t i, int64_t now)
{
    op *o = &f->ops[i];
    if (redisBufferRead(o->conn->rc) != REDIS_OK) {
        op_io_error(f, i, o->conn->rc->errstr, now);
        return;
    }
    while (o->active) {
        void *reply = NULL;
        if (redisGetReplyFromReader(o->conn->rc, &reply) != REDIS_OK) {
            o->broken = true;
            op_finish(f, i, RL_VOTE_FAILED, REDLOCK_EREDIS, "bad reply: %s", o->conn->rc->errstr);
            return;
        }
        if (!reply)
            break;
        op_reply(f, i, reply, now);
        freeReplyObject(reply);
    }
}

static void op_connected(fanout *f, size_t i, int64_t now)
{
    op *o = &f->ops[i];
    rl_node *node = &f->ctx->nodes[i];
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(o->conn->rc->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        rl_node_connect_failed(node);
        o->broken = true;
        op_finish(f, i, RL_VOTE_FAILED, REDLOCK_ENOQUORUM, "cannot connect: %s", strerror(err));
        return;
    }
    rl_node_connect_ok(node);
    o->conn->fresh = false;
    o->connecting = false;
    o->deadline = now + f->ctx->opt.node_timeout_ms;
    op_flush(f, i, now);
}

static void op_service(fanout *f, size_t i, short revents, int64_t now)
{
    op *o = &f->ops[i];
    if (o->connecting) {
        if (revents & (POLLOUT | POLLERR | POLLHUP))
            op_connected(f, i, now);
        return;
    }
    if (o->active && has_output(o) && (revents & POLLOUT))
        op_flush(f, i, now);
    if (o->active && o->conn && (revents & (POLLIN | POLLERR | POLLHUP)))
        op_read(f, i, now);
}

static void op_timeout(fanout *f, size_t i)
{
    op *o = &f->ops[i];
    rl_node *node = &f->ctx->nodes[i];
    if (o->connecting) {
        rl_node_connect_failed(node);
        o->broken = true;
        op_finish(f, i, RL_VOTE_FAILED, REDLOCK_ENOQUORUM, "cannot connect within %lld ms",
                  (long long)f->ctx->opt.connect_timeout_ms);
    } else {
        op_finish(f, i, RL_VOTE_FAILED, REDLOCK_ENOQUORUM, "no answer within %lld ms",
                  (long long)f->ctx->opt.node_timeout_ms);
    }
}

static bool decided(const fanout *f)
{
    if (f->wait != RL_WAIT_QUORUM || f->saw_noscript)
        return false;
    rl_tally t;
    rl_tally_count(&t, f->results, f->ctx->n_nodes);
    return rl_tally_decided(&t);
}

/* Once the outcome is decided, an op is still driven while its command is
 * not yet written (connecting, or output left): every reachable node gets
 * the command, but no one waits for more replies. */
static bool still_sending(const op *o)
{
    return o->connecting || has_output(o);
}

void rl_fanout(redlock_ctx *ctx, const rl_command *cmd, rl_wait_for wait, rl_result *results,
               rl_conn **parked)
{
    fanout f = { .ctx = ctx, .cmd = cmd, .wait = wait, .results = results, .parked = parked };
    size_t n = ctx->n_nodes;
    struct pollfd pfd[REDLOCK_MAX_NODES];
    size_t who[REDLOCK_MAX_NODES];
    int64_t now = rl_now_ms();

    memset(results, 0, n * sizeof *results);
    for (size_t i = 0; i < n; i++)
        op_start(&f, i, now);

    for (;;) {
        bool done = decided(&f);
        size_t k = 0;
        int64_t first_deadline = INT64_MAX;
        for (size_t i = 0; i < n; i++) {
            op *o = &f.ops[i];
            if (!o->active || (done && !still_sending(o)))
                continue;
            pfd[k].fd = o->conn->rc->fd;
            pfd[k].events = (short)(still_sending(o) ? POLLOUT : 0);
            if (!o->connecting && !done)
                pfd[k].events |= POLLIN;
            pfd[k].revents = 0;
            who[k++] = i;
            if (o->deadline < first_deadline)
                first_deadline = o->deadline;
        }
        if (k == 0)
            break;
        int64_t timeout = first_deadline - now;
        int r = poll(pfd, k, timeout < 0 ? 0 : (int)timeout);
        now = rl_now_ms();
        if (r < 0 && errno != EINTR) {
            for (size_t j = 0; j < k; j++)
                op_finish(&f, who[j], RL_VOTE_FAILED, REDLOCK_ESYSTEM, "poll: %s", strerror(errno));
            break;
        }
        for (size_t j = 0; r > 0 && j < k; j++)
            if (pfd[j].revents)
                op_service(&f, who[j], pfd[j].revents, now);
        for (size_t j = 0; j < k; j++)
            if (f.ops[who[j]].active && now >= f.ops[who[j]].deadline)
                op_timeout(&f, who[j]);
    }

    for (size_t i = 0; i < n; i++) {
        op *o = &f.ops[i];
        rl_conn *c = o->conn;
        if (!c)
            continue;
        o->conn = NULL;
        if (!rl_conn_own_pending(c))
            o->broken = true;
        if (!o->broken && c->pending_len > 0 && parked)
            parked[i] = c;
        else
            rl_node_release(&ctx->nodes[i], c, o->broken, ctx->opt.pool_size);
    }
}

void rl_fanout_unpark(redlock_ctx *ctx, rl_conn **parked)
{
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        if (parked[i])
            rl_node_release(&ctx->nodes[i], parked[i], false, ctx->opt.pool_size);
        parked[i] = NULL;
    }
}
