/*
 * driver.h - the client of the public API (redlock_ctx): the engine's
 * client and, beside it, the blocking driver's state (drive/: pools, the
 * service, async and waker threads, TLS settings). The engine never sees
 * the driver; the driver finds its state from the engine's client.
 */
#ifndef RL_DRIVER_H
#define RL_DRIVER_H

#include "client.h"

struct rl_driver;

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

/* The driver's state of a new client (pools), and freeing it. */
int rl_driver_new(redlock_ctx *ctx);
void rl_driver_free(redlock_ctx *ctx);

/* Whether the client's TLS settings were made (from its tls_* options, on
 * its first rediss:// connection): the tls_* options cannot change then. */
bool rl_driver_tls_fixed(const struct rl_driver *d);

#endif /* RL_DRIVER_H */
