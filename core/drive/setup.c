/*
 * setup.c - the blocking driver's state of a client (driver.h): made with
 * the client, freed with it, and reset in a child after fork(): the child
 * never uses a connection of its parent, so pools made before the fork are
 * dropped (their sockets closed in the child only) on the child's first
 * call, with the parent's owed work and threads.
 */
#include <stdlib.h>

#include "async.h"
#include "clock.h"
#include "owed.h"
#include "pool.h"
#include "service.h"
#include "setup.h"
#include "wake.h"

/* ---- fork ---- */

static _Atomic unsigned fork_generation;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void after_fork_in_child(void)
{
    atomic_fetch_add(&fork_generation, 1);
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

/* In a child after fork(): forgets the parent's connections and owed work. */
void rl_driver_check_fork(rl_client *ctx)
{
    struct rl_driver *d = rl_driver_of(ctx);
    unsigned now_gen = atomic_load_explicit(&fork_generation, memory_order_relaxed);
    if (atomic_load_explicit(&d->gen, memory_order_relaxed) == now_gen)
        return;
    pthread_mutex_lock(&d->fork_mu);
    if (atomic_load(&d->gen) != now_gen) {
        rl_pools_forget(d);
        rl_owed_clear(ctx);
        rl_async_forget(d->async);
        rl_waker_forget(d->waker);
        rl_service_forget(d);
        atomic_store(&d->gen, now_gen);
    }
    pthread_mutex_unlock(&d->fork_mu);
}

/* ---- the driver's state ---- */

int rl_driver_new(redlock_ctx *ctx)
{
    pthread_once(&fork_once, register_fork_handler);
    struct rl_driver *d = calloc(1, sizeof *d);
    if (!d || rl_pools_new(d, ctx->client.n_nodes) != REDLOCK_OK) {
        free(d);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    if (!(d->async = rl_async_new()) || !(d->waker = rl_waker_new(&ctx->client))) {
        rl_async_free(&ctx->client, d->async);
        rl_pools_free(d, 0);
        free(d);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&d->fork_mu, NULL);
    rl_service_init(d);
    pthread_mutex_init(&d->tls_mu, NULL);
    atomic_init(&d->gen, atomic_load(&fork_generation));
    ctx->driver = d;
    return REDLOCK_OK;
}

void rl_driver_free(redlock_ctx *ctx)
{
    struct rl_driver *d = ctx->driver;
    if (!d)
        return;
    rl_driver_check_fork(&ctx->client);
    rl_async_free(&ctx->client, d->async);
    d->async = NULL;
    rl_waker_free(d->waker);
    d->waker = NULL;
    rl_service_stop(d);
    rl_pools_free(d, rl_now_ms());
    pthread_mutex_destroy(&d->fork_mu);
    rl_tls_ctx_free(d->tls);
    pthread_mutex_destroy(&d->tls_mu);
    free(d);
    ctx->driver = NULL;
}
