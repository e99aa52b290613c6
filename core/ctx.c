/* ctx.c - the client: its nodes and options; and the library's version. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void redlock_ctx_free(redlock_ctx *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->n_nodes; i++)
        rl_node_destroy(&ctx->nodes[i]);
    free(ctx->nodes);
    rl_options_free(&ctx->opt);
    free(ctx);
}

int redlock_ctx_new(redlock_ctx **out, const char *const *node_uris, size_t n_nodes)
{
    rl_clear_error();
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
    int rc = rl_options_init(&ctx->opt);
    for (size_t i = 0; rc == REDLOCK_OK && i < n_nodes; i++) {
        if ((rc = rl_node_init(&ctx->nodes[i], node_uris[i])) != REDLOCK_OK) {
            char detail[512];
            snprintf(detail, sizeof detail, "%s", redlock_errmsg());
            rl_fail(rc, "node %zu: %s", i + 1, detail);
            break;
        }
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

int redlock_ctx_set_option(redlock_ctx *ctx, const char *name, const char *value)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    return rl_options_set(&ctx->opt, name, value);
}

void rl_ctx_note_lease(redlock_ctx *ctx, int64_t ttl_ms)
{
    int64_t seen = atomic_load_explicit(&ctx->max_lease_ms, memory_order_relaxed);
    while (ttl_ms > seen
           && !atomic_compare_exchange_weak_explicit(&ctx->max_lease_ms, &seen, ttl_ms,
                                                     memory_order_relaxed, memory_order_relaxed))
        ;
}

const char *redlock_version_string(void)
{
    return REDLOCK_VERSION_STRING;
}

int redlock_version_number(void)
{
    return REDLOCK_VERSION_NUMBER;
}
