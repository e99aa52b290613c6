/*
 * api_engine.c - redlock_engine.h: the engine's interface for drivers of
 * other runtimes, as thin wrappers of op.h, conn.h and engine.h. Arguments
 * are checked here, where they come from outside.
 */
#include <stdio.h>
#include <stdlib.h>

#include "redlock_engine.h"

#include "clock.h"
#include "cmd.h"
#include "driver.h"
#include "io.h"
#include "engine.h"
#include "node.h"
#include "op.h"
#include "owed.h"
#include "tls.h"
#include "wakes.h"

_Static_assert(REDLOCK_DRIVE_CONNECT == RL_DRIVE_CONNECT && REDLOCK_DRIVE_WRITE == RL_DRIVE_WRITE
               && REDLOCK_DRIVE_WAIT == RL_DRIVE_WAIT && REDLOCK_DRIVE_AWAITS == RL_DRIVE_AWAITS
               && REDLOCK_DRIVE_DONE == RL_DRIVE_DONE && REDLOCK_DRIVE_TAIL == RL_DRIVE_TAIL,
               "redlock_engine.h's REDLOCK_DRIVE_* are op.h's RL_DRIVE_*");

int64_t redlock_now_ms(void)
{
    return rl_now_ms();
}

/* ---- nodes ---- */

static const rl_node_addr *addr_of(const redlock_ctx *ctx, size_t i)
{
    return ctx && i < ctx->client.n_nodes ? &ctx->client.nodes[i].addr : NULL;
}

size_t redlock_ctx_node_count(const redlock_ctx *ctx)
{
    return ctx ? ctx->client.n_nodes : 0;
}

/* For a Sentinel node, where a new connection would go now (its master,
 * or a sentinel to ask): the connection's own (redlock_conn_host) says it
 * surely. */
static rl_target target_of(const redlock_ctx *ctx, size_t i)
{
    rl_target t = { 0 };
    if (addr_of(ctx, i))
        rl_node_target((rl_node *)&ctx->client.nodes[i], &t);
    return t;
}

const char *redlock_ctx_node_host(const redlock_ctx *ctx, size_t i)
{
    return target_of(ctx, i).host;
}

int redlock_ctx_node_port(const redlock_ctx *ctx, size_t i)
{
    rl_target t = target_of(ctx, i);
    return t.host ? t.port : 0;
}

const char *redlock_ctx_node_path(const redlock_ctx *ctx, size_t i)
{
    const rl_node_addr *a = addr_of(ctx, i);
    return a && a->is_unix ? a->path : NULL;
}

int64_t redlock_ctx_node_connect_wait(redlock_ctx *ctx, size_t i, int64_t now_ms)
{
    return ctx && i < ctx->client.n_nodes ? rl_node_connect_wait(&ctx->client.nodes[i], now_ms) : 0;
}

int redlock_ctx_node_tls(const redlock_ctx *ctx, size_t i)
{
    const rl_node_addr *a = addr_of(ctx, i);
    return a && a->tls;
}

const char *redlock_ctx_node_server_name(const redlock_ctx *ctx, size_t i)
{
    const rl_node_addr *a = addr_of(ctx, i);
    if (!a || !a->tls)
        return NULL;
    return ctx->client.opt.tls_server_name[0] ? ctx->client.opt.tls_server_name
                                              : target_of(ctx, i).host;
}

int redlock_ctx_owes(redlock_ctx *ctx)
{
    return ctx && rl_owed_any(&ctx->client, SIZE_MAX);
}

int64_t redlock_ctx_owed_at(redlock_ctx *ctx, int64_t now_ms)
{
    return ctx ? rl_owed_at(&ctx->client, now_ms) : INT64_MAX;
}

int redlock_ctx_node_server_ip(const redlock_ctx *ctx, size_t i)
{
    const char *name = redlock_ctx_node_server_name(ctx, i);
    return name && rl_tls_name_is_ip(name);
}

/* ---- TLS settings for drivers with their own TLS ---- */

/* The options, fixed from now on (as once the library's own TLS read
 * them): the strings given out stay valid while ctx lives. */
static const rl_options *tls_options(redlock_ctx *ctx)
{
    if (!ctx)
        return NULL;
    rl_driver_fix_tls(ctx->driver);
    return &ctx->client.opt;
}

/* An option's string, NULL for "" (and for no ctx). */
static const char *given(const char *value)
{
    return value && value[0] ? value : NULL;
}

int redlock_ctx_tls_check(redlock_ctx *ctx)
{
    rl_clear_error();
    const rl_options *o = tls_options(ctx);
    if (!o)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    char why[RL_ERRMSG_MAX];
    int rc = rl_tls_check_options(o, why, sizeof why);
    return rc == REDLOCK_OK ? rc : rl_fail(rc, "%s", why);
}

int redlock_ctx_tls_verify(redlock_ctx *ctx)
{
    const rl_options *o = tls_options(ctx);
    return !o || o->tls_verify;
}

const char *redlock_ctx_tls_ca_file(redlock_ctx *ctx)
{
    const rl_options *o = tls_options(ctx);
    return o && o->tls_verify ? given(o->tls_ca_file) : NULL;
}

const char *redlock_ctx_tls_ca_dir(redlock_ctx *ctx)
{
    const rl_options *o = tls_options(ctx);
    return o && o->tls_verify ? given(o->tls_ca_dir) : NULL;
}

const char *redlock_ctx_tls_cert_file(redlock_ctx *ctx)
{
    const rl_options *o = tls_options(ctx);
    return o ? given(o->tls_cert_file) : NULL;
}

const char *redlock_ctx_tls_key_file(redlock_ctx *ctx)
{
    const rl_options *o = tls_options(ctx);
    return o && o->tls_cert_file[0] ? given(rl_tls_key_file(o)) : NULL;
}

int redlock_ctx_tls_min_version(redlock_ctx *ctx)
{
    (void)ctx;
    return RL_TLS_MIN_VERSION;
}

/* ---- operations ---- */

int redlock_op_lock(redlock_op **out, redlock_ctx *ctx, const char *const *resources,
                    size_t n_resources, int64_t ttl_ms, int64_t wait_ms, int64_t now_ms)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!resources || n_resources == 0 || n_resources > REDLOCK_MAX_RESOURCES)
        return rl_fail(REDLOCK_EINVAL, !resources ? "resources is NULL"
                       : "n_resources must be from 1 to %d", REDLOCK_MAX_RESOURCES);
    return rl_op_lock(out, &ctx->client, resources, n_resources, ttl_ms, wait_ms, now_ms);
}

/* The checks every operation of one resource starts with: REDLOCK_OK (*out
 * NULL), or the code with the message set. */
static int one_resource(redlock_op **out, const redlock_ctx *ctx, const char *resource)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx || !resource)
        return rl_fail(REDLOCK_EINVAL, !ctx ? "ctx is NULL" : "resource is NULL");
    return REDLOCK_OK;
}

int redlock_op_lock_rw(redlock_op **out, redlock_ctx *ctx, const char *resource, int mode,
                       const redlock_handle *held, int64_t ttl_ms, int64_t wait_ms,
                       int64_t now_ms)
{
    int rc = one_resource(out, ctx, resource);
    if (rc != REDLOCK_OK)
        return rc;
    return rl_op_lock_rw(out, &ctx->client, resource, mode, held, ttl_ms, wait_ms, now_ms);
}

int redlock_op_lock_fair(redlock_op **out, redlock_ctx *ctx, const char *resource,
                         int64_t ttl_ms, int64_t wait_ms, int64_t now_ms)
{
    int rc = one_resource(out, ctx, resource);
    if (rc != REDLOCK_OK)
        return rc;
    return rl_op_lock_fair(out, &ctx->client, resource, ttl_ms, wait_ms, now_ms);
}

int redlock_op_acquire_permit(redlock_op **out, redlock_ctx *ctx, const char *resource,
                              int permits, int64_t ttl_ms, int64_t wait_ms, int64_t now_ms)
{
    int rc = one_resource(out, ctx, resource);
    if (rc != REDLOCK_OK)
        return rc;
    return rl_op_acquire_permit(out, &ctx->client, resource, permits, ttl_ms, wait_ms, now_ms);
}

int redlock_op_permits(redlock_op **out, redlock_ctx *ctx, const char *resource, int permits,
                       int64_t now_ms)
{
    int rc = one_resource(out, ctx, resource);
    if (rc != REDLOCK_OK)
        return rc;
    return rl_op_permits(out, &ctx->client, resource, permits, now_ms);
}

int redlock_op_available(const redlock_op *op)
{
    return op && rl_op_done(op) && rl_op_status(op) == REDLOCK_OK ? (int)rl_op_available(op)
                                                                  : 0;
}

int redlock_op_extend(redlock_op **out, redlock_handle *h, int64_t ttl_ms, int64_t now_ms)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    return rl_op_extend(out, h, ttl_ms, now_ms);
}

int redlock_op_unlock(redlock_op **out, redlock_handle *h, int64_t now_ms)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    return rl_op_unlock(out, h, now_ms);
}

/* The checks of an operation made for a ctx: out set to NULL first. */
static int check_ctx_op(redlock_op **out, const redlock_ctx *ctx)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    return REDLOCK_OK;
}

int redlock_op_deliver(redlock_op **out, redlock_ctx *ctx, int64_t now_ms)
{
    int rc = check_ctx_op(out, ctx);
    return rc == REDLOCK_OK ? rl_op_deliver(out, &ctx->client, now_ms) : rc;
}

static int query(redlock_op **out, redlock_ctx *ctx, const char *resource, bool force,
                 int64_t now_ms)
{
    int rc = check_ctx_op(out, ctx);
    if (rc != REDLOCK_OK)
        return rc;
    if (!resource)
        return rl_fail(REDLOCK_EINVAL, "resource is NULL");
    return rl_op_query(out, &ctx->client, resource, force, now_ms);
}

int redlock_op_inspect(redlock_op **out, redlock_ctx *ctx, const char *resource, int64_t now_ms)
{
    return query(out, ctx, resource, false, now_ms);
}

int redlock_op_force_unlock(redlock_op **out, redlock_ctx *ctx, const char *resource,
                            int64_t now_ms)
{
    return query(out, ctx, resource, true, now_ms);
}

int redlock_op_ping(redlock_op **out, redlock_ctx *ctx, int64_t now_ms)
{
    int rc = check_ctx_op(out, ctx);
    return rc == REDLOCK_OK ? rl_op_ping(out, &ctx->client, now_ms) : rc;
}

int redlock_op_answer(const redlock_op *op, int64_t *ttl_ms, int *deleted)
{
    size_t n = 0;
    int64_t ttl = -2;
    bool held = op && rl_op_done(op) && rl_op_status(op) == REDLOCK_OK
             && rl_op_answer(op, &ttl, &n);
    if (ttl_ms)
        *ttl_ms = held ? ttl : -2;
    if (deleted)
        *deleted = op && rl_op_done(op) ? (int)n : 0;
    return held;
}

void redlock_op_free(redlock_op *op)
{
    rl_op_free(op);
}

/* Whether node is one of the op's nodes. */
static bool has_node(const redlock_op *op, size_t node)
{
    return op && node < rl_op_ctx(op)->n_nodes;
}

int redlock_op_wants_conn(const redlock_op *op, size_t node)
{
    return has_node(op, node) && rl_op_wants_conn(op, node);
}

void redlock_op_attach(redlock_op *op, size_t node, redlock_conn *c, int64_t now_ms)
{
    if (has_node(op, node) && c && c->node == node && !c->op && rl_op_wants_conn(op, node)) {
        rl_op_attach(op, node, c, now_ms);
        rl_op_overdue(op, c, now_ms);
    }
}

void redlock_op_no_conn(redlock_op *op, size_t node, const char *why, int64_t now_ms)
{
    if (!has_node(op, node) || !rl_op_wants_conn(op, node))
        return;
    char failure[160];
    if (rl_node_backoff(&rl_op_ctx(op)->nodes[node], now_ms, failure, sizeof failure)
        == REDLOCK_ETLS)
        rl_op_no_conn(op, node, REDLOCK_ETLS, failure, now_ms);
    else
        rl_op_no_conn(op, node, REDLOCK_ENOQUORUM, why ? why : "no connection", now_ms);
}

redlock_conn *redlock_op_conn(const redlock_op *op, size_t node)
{
    return has_node(op, node) ? rl_op_conn(op, node) : NULL;
}

void redlock_op_step(redlock_op *op, int64_t now_ms)
{
    if (op)
        rl_op_step(op, now_ms);
}

int64_t redlock_op_wake_at(const redlock_op *op)
{
    return op ? rl_op_wake_at(op) : INT64_MAX;
}

int64_t redlock_op_deadline(const redlock_op *op, size_t node)
{
    return has_node(op, node) ? rl_op_deadline(op, node) : INT64_MIN;
}

int redlock_op_react(redlock_op *op, const redlock_conn *c, int64_t now_ms, int64_t waiting_ms)
{
    if (!op)
        return 1;
    rl_op_step(op, now_ms);
    const char *bytes;
    return rl_op_done(op) || rl_op_wake_at(op) != waiting_ms
        || (c && rl_conn_output(c, &bytes) > 0);
}

int redlock_op_drive(redlock_op *op, int64_t now_ms, int64_t *at_ms)
{
    int64_t at = INT64_MAX;
    int what = op ? rl_op_drive(op, now_ms, &at) : REDLOCK_DRIVE_DONE;
    if (at_ms)
        *at_ms = at;
    return what;
}

int redlock_op_next_wanted(const redlock_op *op, size_t start)
{
    return op ? rl_op_next_wanted(op, start) : -1;
}

int redlock_op_wants_fresh(const redlock_op *op, size_t node)
{
    return op && rl_op_wants_fresh(op, node);
}

int redlock_op_fits(const redlock_op *op, size_t node, const redlock_conn *c)
{
    return op && c && has_node(op, node) && rl_op_fits(op, node, c);
}

redlock_conn *redlock_op_connect(redlock_op *op, size_t node, int64_t now_ms)
{
    if (!has_node(op, node) || !rl_op_wants_conn(op, node))
        return NULL;
    return rl_op_connect(op, node, now_ms);
}

int64_t redlock_op_tail_at(const redlock_op *op, int64_t now_ms)
{
    return op ? rl_op_tail_at(op, now_ms) : INT64_MAX;
}

int redlock_op_cancel(redlock_op *op, int64_t now_ms)
{
    return op && rl_op_cancel(op, now_ms);
}

int redlock_op_done(const redlock_op *op)
{
    return !op || rl_op_done(op);
}

int redlock_op_status(const redlock_op *op)
{
    return !op ? REDLOCK_EINVAL : rl_op_done(op) ? rl_op_status(op) : REDLOCK_OK;
}

const char *redlock_op_message(const redlock_op *op)
{
    return op ? rl_op_message(op) : "";
}

redlock_handle *redlock_op_take_handle(redlock_op *op)
{
    return op && rl_op_done(op) ? rl_op_take_handle(op) : NULL;
}

redlock_conn *redlock_op_take_conn(redlock_op *op)
{
    return op && rl_op_done(op) ? rl_op_take_conn(op) : NULL;
}

/* ---- connections ---- */

int redlock_conn_new(redlock_conn **out, redlock_ctx *ctx, size_t node)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx || node >= ctx->client.n_nodes)
        return rl_fail(REDLOCK_EINVAL, !ctx ? "ctx is NULL" : "no node %zu", node);
    if (!(*out = rl_conn_new(&ctx->client, node)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    return REDLOCK_OK;
}

void redlock_conn_free(redlock_conn *c)
{
    if (!c)
        return;
    if (c->state != RL_CONN_BROKEN || rl_conn_owed(c) > 0 || c->op)
        rl_engine_lost(c, REDLOCK_ENOQUORUM, "closed by the client", redlock_now_ms());
    rl_conn_free(c);
}

size_t redlock_conn_node(const redlock_conn *c)
{
    return c ? c->node : 0;
}

void redlock_conn_connected(redlock_conn *c, int64_t now_ms)
{
    if (c && c->state == RL_CONN_CONNECTING)
        rl_engine_connected(c, now_ms);
}

size_t redlock_conn_output(const redlock_conn *c, const char **bytes)
{
    if (!c || !bytes)
        return 0;
    return rl_conn_output(c, bytes);
}

void redlock_conn_wrote(redlock_conn *c, size_t n)
{
    const char *bytes;
    if (c && n <= rl_conn_output(c, &bytes))
        rl_engine_wrote(c, n, redlock_now_ms());   /* the engine's clock (redlock_engine.h) */
}

int redlock_conn_received(redlock_conn *c, const char *bytes, size_t len, int64_t now_ms)
{
    if (!c || (!bytes && len > 0))
        return REDLOCK_EINVAL;
    if (c->state == RL_CONN_BROKEN)
        return c->code ? c->code : REDLOCK_ENOQUORUM;
    if (!rl_engine_received(c, bytes, len, now_ms))
        return c->code ? c->code : REDLOCK_ENOQUORUM;
    return REDLOCK_OK;
}

void redlock_conn_lost(redlock_conn *c, const char *why, int64_t now_ms)
{
    if (c && c->state != RL_CONN_BROKEN)
        rl_engine_lost(c, REDLOCK_ENOQUORUM, why ? why : "connection lost", now_ms);
}

void redlock_conn_tls_failed(redlock_conn *c, const char *why, int64_t now_ms)
{
    if (c && c->state != RL_CONN_BROKEN)
        rl_engine_lost(c, REDLOCK_ETLS, why ? why : "TLS failed", now_ms);
}

int redlock_conn_sending(const redlock_conn *c)
{
    return c && rl_conn_sending(c);
}

int redlock_conn_held(const redlock_conn *c)
{
    return c && c->op != NULL;
}

size_t redlock_conn_owed(const redlock_conn *c)
{
    return c ? rl_conn_owed(c) : 0;
}

const char *redlock_conn_host(const redlock_conn *c)
{
    return c ? c->to.host : NULL;
}

int redlock_conn_port(const redlock_conn *c)
{
    return c && c->to.host ? c->to.port : 0;
}

const char *redlock_conn_server_name(const redlock_conn *c)
{
    if (!c || !c->to.host || !c->ctx->nodes[c->node].addr.tls)
        return NULL;
    return c->ctx->opt.tls_server_name[0] ? c->ctx->opt.tls_server_name : c->to.host;
}

int redlock_conn_server_ip(const redlock_conn *c)
{
    const char *name = redlock_conn_server_name(c);
    return name && rl_tls_name_is_ip(name);
}

int redlock_conn_poolable(const redlock_conn *c)
{
    return c && rl_conn_poolable(c);
}

int redlock_conn_broken(const redlock_conn *c)
{
    return !c || c->state == RL_CONN_BROKEN;
}

/* ---- wake-ups ---- */

int redlock_op_awaits_release(const redlock_op *op)
{
    return op && rl_op_awaits_release(op);
}

size_t redlock_op_key_count(const redlock_op *op)
{
    const rl_keys *keys = op ? rl_op_keys(op) : NULL;
    return keys ? keys->n : 0;
}

const char *redlock_op_key(const redlock_op *op, size_t i)
{
    const rl_keys *keys = op ? rl_op_keys(op) : NULL;
    return keys && i < keys->n ? keys->k[i] : NULL;
}

void redlock_op_wake(redlock_op *op, int64_t now_ms)
{
    if (op)
        rl_op_wake(op, now_ms);
}

int redlock_waiters_new(redlock_waiters **out, const redlock_ctx *ctx)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!(*out = rl_wakes_new(&ctx->client)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    return REDLOCK_OK;
}

void redlock_waiters_free(redlock_waiters *w)
{
    rl_wakes_free(w);
}

int redlock_waiters_add(redlock_waiters *w, uint64_t id, const redlock_op *op)
{
    const rl_keys *keys = op ? rl_op_keys(op) : NULL;
    if (!w || id == 0 || !keys)
        return REDLOCK_EINVAL;
    return rl_wakes_add(w, id, keys);
}

void redlock_waiters_remove(redlock_waiters *w, uint64_t id, redlock_op *op, int64_t now_ms)
{
    if (!w)
        return;
    rl_wakes_remove(w, id, now_ms);
    if (op)
        rl_op_note(op, rl_wakes_note(w));
}

int redlock_waiters_drive(redlock_waiters *w, int64_t now_ms, int64_t *at_ms)
{
    if (!w) {
        if (at_ms)
            *at_ms = INT64_MAX;
        return 0;
    }
    return rl_wakes_drive(w, now_ms, at_ms);
}

int redlock_waiters_next_connect(redlock_waiters *w)
{
    return w ? rl_wakes_next_connect(w) : -1;
}

int redlock_waiters_next_close(redlock_waiters *w)
{
    return w ? rl_wakes_next_close(w) : -1;
}

void redlock_waiters_connected(redlock_waiters *w, size_t node)
{
    if (w)
        rl_wakes_connected(w, node);
}

void redlock_waiters_lost(redlock_waiters *w, size_t node, int64_t now_ms)
{
    if (w)
        rl_wakes_lost(w, node, now_ms);
}

int redlock_waiters_received(redlock_waiters *w, size_t node, const char *bytes, size_t len,
                             int64_t now_ms)
{
    if (!w || (!bytes && len > 0))
        return REDLOCK_EINVAL;
    return rl_wakes_received(w, node, bytes ? bytes : "", len, now_ms);
}

size_t redlock_waiters_output(const redlock_waiters *w, size_t node, const char **bytes)
{
    if (!bytes)
        return 0;
    if (!w) {
        *bytes = "";
        return 0;
    }
    return rl_wakes_output(w, node, bytes);
}

void redlock_waiters_wrote(redlock_waiters *w, size_t node, size_t n)
{
    if (w)
        rl_wakes_wrote(w, node, n);
}

uint64_t redlock_waiters_next(redlock_waiters *w)
{
    return w ? rl_wakes_next(w) : 0;
}

