/*
 * calls.c - the blocking driver's calls of the public API: the 1.0 calls
 * (redlock_lock, redlock_extend, redlock_unlock, ...), run to their end on
 * the caller's thread (run.h), their asynchronous twins, handed to the
 * client's thread (async.h), and a handle's accessors.
 *
 * Every call checks its arguments, then takes one course (place): the fork
 * check (setup.h), its operation made (op.h), run here or handed over, and
 * for a call run here, the service thread woken for the releases it left
 * owed (service.h).
 */
#include <stdlib.h>

#include "async.h"
#include "clock.h"
#include "run.h"
#include "service.h"
#include "setup.h"

/* ---- one course for every call ---- */

typedef enum call_kind { CALL_LOCK, CALL_QUERY, CALL_PING, CALL_EXTEND, CALL_UNLOCK } call_kind;

typedef struct call {
    call_kind kind;
    rl_client *ctx;                 /* checked not NULL; for extend and unlock, h's */
    redlock_handle *h;              /* extend, unlock */
    const char *const *names;       /* lock: n of them; query: names[0] */
    size_t n;
    bool rw;                        /* lock: a read-write lock's (of names[0]), of mode */
    int mode;
    const redlock_handle *held;     /* ... with the caller's lock of it, or NULL */
    bool fair;                      /* lock: the fair lock of names[0] */
    bool sem;                       /* lock, query: a permit of the semaphore names[0], */
    int permits;                    /* ... of this many permits (the operation checks it) */
    int64_t ttl_ms, wait_ms;
    bool force;                     /* query: a forced unlock */
    redlock_done_fn done;           /* asynchronous: called on the client's thread */
    void *data;
    rl_op *op;                      /* run here: the finished operation (see end) */
    bool kept;                      /* extend: the owner's extension of a watched lock,
                                     * made by its keeper and told to it at the end */
} call;

/* A call whose arguments were checked: the fork check, its operation made
 * at now, then handed to the client's thread (when c->done) or run here to
 * its end; then c->op holds it for the caller's answer, and end frees it. */
static int place(call *c)
{
    rl_driver_check_fork(c->ctx);
    if (c->kind == CALL_UNLOCK && c->h->driver_data) {
        if (c->done)
            rl_async_stop_renewals(c->h);
        else
            rl_async_unwatch(c->h, false);   /* no extension after the release */
    }
    rl_op *op;
    int64_t now = rl_now_ms();
    int rc;
    switch (c->kind) {
    case CALL_LOCK:
        rc = c->rw ? rl_op_lock_rw(&op, c->ctx, c->names[0], c->mode, c->held, c->ttl_ms,
                                   c->wait_ms, now)
           : c->fair ? rl_op_lock_fair(&op, c->ctx, c->names[0], c->ttl_ms, c->wait_ms, now)
           : c->sem ? rl_op_acquire_permit(&op, c->ctx, c->names[0], c->permits, c->ttl_ms,
                                               c->wait_ms, now)
           : rl_op_lock(&op, c->ctx, c->names, c->n, c->ttl_ms, c->wait_ms, now);
        break;
    case CALL_QUERY:
        rc = c->sem ? rl_op_permits(&op, c->ctx, c->names[0], c->permits, now)
                        : rl_op_query(&op, c->ctx, c->names[0], c->force, now);
        break;
    case CALL_PING:
        rc = rl_op_ping(&op, c->ctx, now);
        break;
    case CALL_EXTEND:
        rc = c->h->driver_data && !c->done ? rl_async_extend(&op, c->h, c->ttl_ms, &c->kept)
                                           : rl_op_extend(&op, c->h, c->ttl_ms, now);
        break;
    default:
        rc = rl_op_unlock(&op, c->h, now);
        break;
    }
    if (rc != REDLOCK_OK)
        return rc;
    if (c->done)
        return rl_async_submit(c->ctx, op, c->kind == CALL_LOCK, c->kind == CALL_UNLOCK,
                               c->done, c->data);
    c->op = op;
    return rl_run(c->ctx, op);
}

/* The end of a call run here, once its answer is read: its operation freed,
 * and the service thread woken for what it left owed. Returns rc. */
static int end(call *c, int rc)
{
    if (c->kept)
        rl_async_extended(c->h, c->op);
    if (c->op) {
        rl_op_free(c->op);
        rl_service_wake(c->ctx);
    }
    return rc;
}

/* ---- the 1.0 API ---- */

/* A lock call's checks (its mode and permits are the operation's to
 * check): REDLOCK_OK, or the code with the message set. */
static int check_lock(rl_client *ctx, const void *names, bool one)
{
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!names)
        return rl_fail(REDLOCK_EINVAL, one ? "resource is NULL" : "resources is NULL");
    return REDLOCK_OK;
}

/* c, a lock call (kind, names, n, rw, mode and held set), run here. */
static int lock_here(redlock_handle **out, call *c)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    int rc = check_lock(c->ctx, c->names, c->rw || c->sem || c->fair);
    if (rc != REDLOCK_OK)
        return rc;
    rc = place(c);
    if (c->op)
        *out = rl_op_take_handle(c->op);
    return end(c, rc);
}

static int lock_resources(redlock_handle **out, rl_client *ctx, const char *const *names,
                          size_t n, int64_t ttl_ms, int64_t wait_ms)
{
    call c = { .kind = CALL_LOCK, .ctx = ctx, .names = names, .n = n, .ttl_ms = ttl_ms,
               .wait_ms = wait_ms };
    return lock_here(out, &c);
}


int redlock_lock(redlock_handle **out, redlock_ctx *ctx, const char *resource, int64_t ttl_ms,
                 int64_t wait_ms)
{
    if (!resource) {
        if (out)
            *out = NULL;
        return rl_fail(REDLOCK_EINVAL, "resource is NULL");
    }
    return lock_resources(out, rl_client_of(ctx), &resource, 1, ttl_ms, wait_ms);
}

int redlock_lock_rw(redlock_handle **out, redlock_ctx *ctx, const char *resource, int mode,
                    const redlock_handle *held, int64_t ttl_ms, int64_t wait_ms)
{
    call c = { .kind = CALL_LOCK, .ctx = rl_client_of(ctx), .names = resource ? &resource : NULL,
               .n = 1, .rw = true, .mode = mode, .held = held, .ttl_ms = ttl_ms,
               .wait_ms = wait_ms };
    return lock_here(out, &c);
}

int redlock_lock_fair(redlock_handle **out, redlock_ctx *ctx, const char *resource,
                      int64_t ttl_ms, int64_t wait_ms)
{
    call c = { .kind = CALL_LOCK, .ctx = rl_client_of(ctx), .names = resource ? &resource : NULL,
               .n = 1, .fair = true, .ttl_ms = ttl_ms, .wait_ms = wait_ms };
    return lock_here(out, &c);
}

int redlock_acquire_permit(redlock_handle **out, redlock_ctx *ctx, const char *resource,
                           int permits, int64_t ttl_ms, int64_t wait_ms)
{
    call c = { .kind = CALL_LOCK, .ctx = rl_client_of(ctx), .names = resource ? &resource : NULL,
               .n = 1, .sem = true, .permits = permits, .ttl_ms = ttl_ms,
               .wait_ms = wait_ms };
    return lock_here(out, &c);
}

int redlock_lock_multi(redlock_handle **out, redlock_ctx *ctx, const char *const *resources,
                       size_t n_resources, int64_t ttl_ms, int64_t wait_ms)
{
    if (!resources || n_resources == 0 || n_resources > REDLOCK_MAX_RESOURCES) {
        if (out)
            *out = NULL;
        return rl_fail(REDLOCK_EINVAL, !resources ? "resources is NULL"
                       : "n_resources must be from 1 to %d", REDLOCK_MAX_RESOURCES);
    }
    return lock_resources(out, rl_client_of(ctx), resources, n_resources, ttl_ms, wait_ms);
}

/* Runs a query or a forced unlock of resource, and gives its answer
 * (rl_op_answer: not held, and what a forced unlock deleted, when it
 * failed); the callers' defaults stay when no operation could be made. */
static int query(rl_client *ctx, const char *resource, bool force, bool *held,
                 int64_t *ttl_ms, size_t *deleted)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!resource)
        return rl_fail(REDLOCK_EINVAL, "resource is NULL");
    call c = { .kind = CALL_QUERY, .ctx = ctx, .names = &resource, .n = 1, .force = force };
    int rc = place(&c);
    if (c.op)
        *held = rl_op_answer(c.op, ttl_ms, deleted);
    return end(&c, rc);
}

int redlock_inspect(redlock_ctx *ctx, const char *resource, int *locked, int64_t *ttl_ms)
{
    bool held = false;
    int64_t ttl = -2;
    int rc = query(rl_client_of(ctx), resource, false, &held, &ttl, NULL);
    if (locked)
        *locked = held;
    if (ttl_ms)
        *ttl_ms = ttl;
    return rc;
}

int redlock_force_unlock(redlock_ctx *ctx, const char *resource, int *deleted)
{
    bool held;
    size_t n = 0;
    int rc = query(rl_client_of(ctx), resource, true, &held, NULL, &n);
    if (deleted)
        *deleted = (int)n;
    return rc;
}

int redlock_permits_available(redlock_ctx *pair, const char *resource, int permits,
                              int *available)
{
    rl_client *ctx = rl_client_of(pair);
    rl_clear_error();
    if (available)
        *available = 0;
    int rc = check_lock(ctx, resource, true);
    if (rc != REDLOCK_OK)
        return rc;
    call c = { .kind = CALL_QUERY, .ctx = ctx, .names = &resource, .n = 1,
               .sem = true, .permits = permits };
    rc = place(&c);
    if (c.op && rc == REDLOCK_OK && available)
        *available = (int)rl_op_available(c.op);
    return end(&c, rc);
}

int redlock_ctx_ping(redlock_ctx *pair, int *answered)
{
    rl_client *ctx = rl_client_of(pair);
    rl_clear_error();
    if (answered)
        *answered = 0;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    call c = { .kind = CALL_PING, .ctx = ctx };
    int rc = place(&c);
    if (c.op) {
        size_t n = 0;
        rl_op_answer(c.op, NULL, &n);
        if (answered)
            *answered = (int)n;
    }
    return end(&c, rc);
}

/* Runs an extend or an unlock of h. */
static int handle_call(redlock_handle *h, int64_t ttl_ms, bool extend)
{
    rl_clear_error();
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    call c = { .kind = extend ? CALL_EXTEND : CALL_UNLOCK, .ctx = h->ctx, .h = h,
               .ttl_ms = ttl_ms };
    return end(&c, place(&c));
}

int redlock_extend(redlock_handle *h, int64_t ttl_ms)
{
    return handle_call(h, ttl_ms, true);
}

int redlock_unlock(redlock_handle *h)
{
    return handle_call(h, 0, false);
}

/* ---- the asynchronous calls ---- */

int redlock_lock_async(redlock_ctx *pair, const char *const *resources, size_t n_resources,
                       int64_t ttl_ms, int64_t wait_ms, redlock_done_fn done, void *data)
{
    rl_client *ctx = rl_client_of(pair);
    rl_clear_error();
    if (!ctx || !done)
        return rl_fail(REDLOCK_EINVAL, !ctx ? "ctx is NULL" : "done is NULL");
    if (!resources || n_resources == 0 || n_resources > REDLOCK_MAX_RESOURCES)
        return rl_fail(REDLOCK_EINVAL, !resources ? "resources is NULL"
                       : "n_resources must be from 1 to %d", REDLOCK_MAX_RESOURCES);
    call c = { .kind = CALL_LOCK, .ctx = ctx, .names = resources, .n = n_resources,
               .ttl_ms = ttl_ms, .wait_ms = wait_ms, .done = done, .data = data };
    return place(&c);
}

/* c, a lock call of one resource (its kind's fields, ttl_ms, wait_ms,
 * done and data set), handed to the client's thread once checked. */
static int lock_one_async(call *c, redlock_ctx *pair, const char *resource)
{
    rl_clear_error();
    if (!c->done)
        return rl_fail(REDLOCK_EINVAL, "done is NULL");
    c->kind = CALL_LOCK;
    c->ctx = rl_client_of(pair);
    int rc = check_lock(c->ctx, resource, true);
    if (rc != REDLOCK_OK)
        return rc;
    c->names = &resource;
    c->n = 1;
    return place(c);
}

int redlock_lock_rw_async(redlock_ctx *pair, const char *resource, int mode,
                          const redlock_handle *held, int64_t ttl_ms, int64_t wait_ms,
                          redlock_done_fn done, void *data)
{
    call c = { .rw = true, .mode = mode, .held = held, .ttl_ms = ttl_ms, .wait_ms = wait_ms,
               .done = done, .data = data };
    return lock_one_async(&c, pair, resource);
}

int redlock_lock_fair_async(redlock_ctx *pair, const char *resource, int64_t ttl_ms,
                            int64_t wait_ms, redlock_done_fn done, void *data)
{
    call c = { .fair = true, .ttl_ms = ttl_ms, .wait_ms = wait_ms, .done = done, .data = data };
    return lock_one_async(&c, pair, resource);
}

int redlock_acquire_permit_async(redlock_ctx *pair, const char *resource, int permits,
                                 int64_t ttl_ms, int64_t wait_ms, redlock_done_fn done,
                                 void *data)
{
    call c = { .sem = true, .permits = permits, .ttl_ms = ttl_ms, .wait_ms = wait_ms,
               .done = done, .data = data };
    return lock_one_async(&c, pair, resource);
}

/* An extend or an unlock of h, asynchronously. */
static int handle_async(redlock_handle *h, int64_t ttl_ms, bool extend, redlock_done_fn done,
                        void *data)
{
    rl_clear_error();
    if (!h || !done)
        return rl_fail(REDLOCK_EINVAL, !h ? "handle is NULL" : "done is NULL");
    call c = { .kind = extend ? CALL_EXTEND : CALL_UNLOCK, .ctx = h->ctx, .h = h,
               .ttl_ms = ttl_ms, .done = done, .data = data };
    return place(&c);
}

int redlock_extend_async(redlock_handle *h, int64_t ttl_ms, redlock_done_fn done, void *data)
{
    return handle_async(h, ttl_ms, true, done, data);
}

int redlock_unlock_async(redlock_handle *h, redlock_done_fn done, void *data)
{
    return handle_async(h, 0, false, done, data);
}

/* ---- handles ---- */

int redlock_handle_watch(redlock_handle *h, redlock_lost_fn lost, void *data)
{
    rl_clear_error();
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    rl_driver_check_fork(h->ctx);
    return rl_async_watch(h, lost, data);
}

void redlock_handle_free(redlock_handle *h)
{
    if (h && h->driver_data && !rl_async_unwatch(h, true))
        return;   /* freed once what runs on the client's thread ends */
    rl_handle_free(h);
}

int64_t redlock_handle_validity_ms(const redlock_handle *h)
{
    if (!h || !h->held || h->lost)
        return 0;
    return h->expires_at - rl_now_ms();
}

const char *redlock_handle_token(const redlock_handle *h)
{
    return h ? h->token : NULL;
}

int redlock_handle_fence(const redlock_handle *h, size_t index, int64_t *fence)
{
    if (!h || !fence)
        return rl_fail(REDLOCK_EINVAL, "redlock_handle_fence: %s is NULL", h ? "fence" : "h");
    if (index >= h->keys->n)
        return rl_fail(REDLOCK_EINVAL, "redlock_handle_fence: index %zu is out of range (the "
                       "lock has %zu resource%s)", index, h->keys->n, h->keys->n == 1 ? "" : "s");
    *fence = h->fences ? h->fences[index] : 0;
    return REDLOCK_OK;
}
