/*
 * api_keeper.c - redlock_engine.h's keeper: thin wrappers of keeper.h, for
 * a driver on one thread. Arguments are checked here, where they come from
 * outside; the events a call makes are told before it returns.
 */
#include "redlock_engine.h"

#include "driver.h"
#include "keeper.h"

_Static_assert(REDLOCK_KEEPER_RUN == RL_KEEPER_RUN && REDLOCK_KEEPER_LOST == RL_KEEPER_LOST
               && REDLOCK_KEEPER_ENDED == RL_KEEPER_ENDED,
               "redlock_engine.h's REDLOCK_KEEPER_* are keeper.h's RL_KEEPER_*");

/* Tells the events k made. */
static void tell(rl_keeper *k)
{
    rl_keeper_tell(rl_keeper_ctx(k), rl_keeper_events(k));
}

int redlock_keeper_new(redlock_keeper **out, redlock_ctx *ctx)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!(*out = rl_keeper_new(rl_client_of(ctx))))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    return REDLOCK_OK;
}

void redlock_keeper_free(redlock_keeper *k)
{
    rl_keeper_free(k);
}

int redlock_keeper_add(redlock_keeper *k, uint64_t id, redlock_handle *h, int64_t now_ms)
{
    rl_clear_error();
    if (!k)
        return rl_fail(REDLOCK_EINVAL, "keeper is NULL");
    return rl_keeper_add(k, id, h, now_ms);
}

int redlock_keeper_remove(redlock_keeper *k, uint64_t id)
{
    rl_clear_error();
    if (!k)
        return rl_fail(REDLOCK_EINVAL, "keeper is NULL");
    return rl_keeper_remove(k, id);
}

void redlock_keeper_halt(redlock_keeper *k)
{
    if (k)
        rl_keeper_halt(k);
}

int redlock_keeper_drive(redlock_keeper *k, int64_t now_ms, int64_t *at_ms)
{
    int64_t at = INT64_MAX;
    int bits = 0;
    if (k) {
        bits = rl_keeper_drive(k, now_ms, &at);
        tell(k);
    }
    if (at_ms)
        *at_ms = at;
    return bits;
}

redlock_op *redlock_keeper_take_op(redlock_keeper *k)
{
    return k ? rl_keeper_take_op(k) : NULL;
}

int redlock_keeper_op_ended(redlock_keeper *k, redlock_op *op, int64_t now_ms)
{
    rl_clear_error();
    if (!k || !op)
        return rl_fail(REDLOCK_EINVAL, "%s is NULL", k ? "op" : "keeper");
    int rc = rl_keeper_op_ended(k, op, now_ms);
    tell(k);
    return rc;
}

uint64_t redlock_keeper_next_lost(redlock_keeper *k)
{
    return k ? rl_keeper_next_lost(k) : 0;
}

uint64_t redlock_keeper_next_ended(redlock_keeper *k)
{
    return k ? rl_keeper_next_ended(k) : 0;
}

int redlock_keeper_status(const redlock_keeper *k, uint64_t id)
{
    return k ? rl_keeper_status(k, id, NULL) : REDLOCK_EINVAL;
}

const char *redlock_keeper_message(const redlock_keeper *k, uint64_t id)
{
    const char *message = "keeper is NULL";
    if (k)
        rl_keeper_status(k, id, &message);
    return message;
}

int redlock_keeper_busy(const redlock_keeper *k, uint64_t id)
{
    return k ? rl_keeper_busy(k, id) : REDLOCK_EINVAL;
}

int redlock_keeper_extend(redlock_op **out, redlock_keeper *k, uint64_t id, int64_t ttl_ms,
                          int64_t now_ms)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!k)
        return rl_fail(REDLOCK_EINVAL, "keeper is NULL");
    int rc = rl_keeper_extend(out, k, id, ttl_ms, now_ms);
    tell(k);
    return rc;
}
