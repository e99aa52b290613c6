/*
 * driver.h - the blocking driver's state of a client (pools, the service,
 * async and waker threads, TLS settings), and the client of the public API
 * (redlock_ctx): the engine's client with that state beside it. The engine
 * never sees the driver; the driver finds its state from the engine's
 * client. Made, freed and reset after fork() by setup.h.
 */
#ifndef RL_DRIVER_H
#define RL_DRIVER_H

#include <pthread.h>
#include <stdatomic.h>

#include "client.h"
#include "tls.h"
#include "worker.h"

struct rl_driver {
    struct rl_pool *pools;     /* one per node (pool.c) */
    size_t n_pools;
    _Atomic unsigned gen;      /* fork generation the pools belong to */
    pthread_mutex_t fork_mu;

    /* The service thread: delivers releases owed to nodes (a failed
     * attempt's, or one cut off with its connection) while the client lives,
     * without waiting for the application's next call. Started when
     * something is owed, it ends when nothing is. */
    pthread_mutex_t service_mu;
    pthread_cond_t service_cv;
    rl_worker service;         /* service.c */
    int64_t service_until;     /* while it waits: until when (0: it does not wait) */

    struct rl_async *async;    /* the asynchronous calls (async.c) */
    struct rl_waker *waker;    /* lock calls woken by releases (wake.c) */

    /* TLS settings for rediss:// nodes, made from the options on first use
     * (tls_code: why they could not be, REDLOCK_OK while they may be). */
    pthread_mutex_t tls_mu;
    rl_tls_ctx *tls;
    _Atomic bool tls_fixed;    /* tls was made from the options: they cannot change */
    int tls_code;
    char tls_why[160];
};

/* The client of the public API. */
struct redlock_ctx {
    rl_client client;          /* first: a client made by redlock_ctx_new is its ctx's */
    struct rl_driver *driver;
};

/* The engine's client of a ctx (NULL for NULL). */
static inline rl_client *rl_client_of(redlock_ctx *ctx)
{
    return ctx ? &ctx->client : NULL;
}

/* The driver's state of a client made by redlock_ctx_new. */
static inline struct rl_driver *rl_driver_of(const rl_client *c)
{
    return ((const redlock_ctx *)(const void *)c)->driver;
}

/* The client's asynchronous calls (async.h) and its waker (wake.h). */
static inline struct rl_async *rl_io_async(rl_client *ctx)
{
    return rl_driver_of(ctx)->async;
}

static inline struct rl_waker *rl_io_waker(rl_client *ctx)
{
    return rl_driver_of(ctx)->waker;
}

#endif /* RL_DRIVER_H */
