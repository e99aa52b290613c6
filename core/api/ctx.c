/* ctx.c - the client: its nodes and options; and the library's version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ctx.h"
#include "driver.h"
#include "token.h"

void redlock_ctx_free(redlock_ctx *ctx)
{
    if (!ctx)
        return;
    rl_driver_free(ctx);
    rl_owed_clear(ctx);
    for (size_t i = 0; i < ctx->n_nodes; i++)
        rl_node_destroy(&ctx->nodes[i]);
    free(ctx->nodes);
    rl_options_free(&ctx->opt);
    pthread_mutex_destroy(&ctx->owed_mu);
    free(ctx);
}

/* The engine's part of a new client: nodes, options, no driver. */
int rl_ctx_new(redlock_ctx **out, const char *const *node_uris, size_t n_nodes)
{
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!node_uris)
        return rl_fail(REDLOCK_EINVAL, "node_uris is NULL");
    if (n_nodes == 0 || n_nodes > REDLOCK_MAX_NODES)
        return rl_fail(REDLOCK_EINVAL, "n_nodes must be from 1 to %d, got %zu",
                       REDLOCK_MAX_NODES, n_nodes);

    redlock_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx || !(ctx->nodes = calloc(n_nodes, sizeof *ctx->nodes))) {
        free(ctx);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&ctx->owed_mu, NULL);
    ctx->random = rl_os_random;
    int rc = rl_options_init(&ctx->opt);
    for (size_t i = 0; rc == REDLOCK_OK && i < n_nodes; i++) {
        if ((rc = rl_node_init(&ctx->nodes[i], node_uris[i], i)) != REDLOCK_OK) {
            char detail[512];
            snprintf(detail, sizeof detail, "%s", redlock_errmsg());
            rl_fail(rc, "node %zu: %s", i + 1, detail);
            break;
        }
        ctx->nodes[i].ctx = ctx;
        ctx->n_nodes = i + 1;
        for (size_t j = 0; j < i; j++) {
            if (rl_uri_same_node(&ctx->nodes[j].addr, &ctx->nodes[i].addr)) {
                rc = rl_fail(REDLOCK_EINVAL, "nodes %zu and %zu are the same server (%s): "
                             "it would count twice towards the quorum", j + 1, i + 1,
                             ctx->nodes[i].addr.label);
                break;
            }
        }
    }
    if (rc != REDLOCK_OK) {
        redlock_ctx_free(ctx);
        return rc;
    }
    *out = ctx;
    return REDLOCK_OK;
}

int redlock_ctx_new(redlock_ctx **out, const char *const *node_uris, size_t n_nodes)
{
    rl_clear_error();
    int rc = rl_ctx_new(out, node_uris, n_nodes);
    if (rc == REDLOCK_OK && (rc = rl_driver_new(*out)) != REDLOCK_OK) {
        redlock_ctx_free(*out);
        *out = NULL;
    }
    return rc;
}

int redlock_ctx_set_option(redlock_ctx *ctx, const char *name, const char *value)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (rl_options_is_tls(name) && atomic_load(&ctx->tls_fixed))
        return rl_fail(REDLOCK_EINVAL, "option %.64s: the TLS options cannot change once the "
                       "client has connected to a rediss:// node; set them before", name);
    return rl_options_set(&ctx->opt, name, value);
}

int redlock_ctx_get_option(const redlock_ctx *ctx, const char *name, char *buf, size_t buflen)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!buf)
        return rl_fail(REDLOCK_EINVAL, "buf is NULL");
    return rl_options_get(&ctx->opt, name, buf, buflen);
}

void rl_ctx_note_lease(redlock_ctx *ctx, int64_t ttl_ms)
{
    int64_t seen = atomic_load_explicit(&ctx->max_lease_ms, memory_order_relaxed);
    while (ttl_ms > seen
           && !atomic_compare_exchange_weak_explicit(&ctx->max_lease_ms, &seen, ttl_ms,
                                                     memory_order_relaxed, memory_order_relaxed))
        ;
}

int64_t rl_ctx_max_lease(const redlock_ctx *ctx)
{
    return atomic_load_explicit(&ctx->max_lease_ms, memory_order_relaxed);
}

const char *redlock_version_string(void)
{
    return REDLOCK_VERSION_STRING;
}

int redlock_version_number(void)
{
    return REDLOCK_VERSION_NUMBER;
}
