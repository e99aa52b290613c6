/* ctx.c - the client of the public API: the engine's client and the
 * blocking driver beside it (driver.h), its options, its event hook; and the
 * library's version, with the hiredis it was built with. */
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "engine.h"
#include "io.h"
#include "random.h"
#include "setup.h"

void redlock_ctx_free(redlock_ctx *ctx)
{
    if (!ctx)
        return;
    rl_driver_free(ctx);
    rl_client_destroy(&ctx->client);
    free(ctx);
}

int redlock_ctx_new(redlock_ctx **out, const char *const *node_uris, size_t n_nodes)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    redlock_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    int rc = rl_client_init(&ctx->client, node_uris, n_nodes);
    ctx->client.random = rl_os_random;
    if (rc == REDLOCK_OK)
        rc = rl_driver_new(ctx);
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
    if (rl_options_is_tls(name) && rl_driver_tls_fixed(ctx->driver))
        return rl_fail(REDLOCK_EINVAL, "option %.64s: the TLS options cannot change once the "
                       "client has connected to a rediss:// node; set them before", name);
    return rl_options_set(&ctx->client.opt, name, value);
}

int redlock_ctx_get_option(const redlock_ctx *ctx, const char *name, char *buf, size_t buflen)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!buf)
        return rl_fail(REDLOCK_EINVAL, "buf is NULL");
    if (name && rl_options_is_secret(name))
        return rl_fail(REDLOCK_EINVAL, "option %s is write-only: a password is never read back",
                       name);
    return rl_options_get(&ctx->client.opt, name, buf, buflen);
}

int redlock_ctx_set_log(redlock_ctx *ctx, redlock_log_fn fn, int min_level, void *data)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    /* The level first and the hook last: a thread that sees the new hook
     * sees its level and data too. */
    atomic_store(&ctx->client.log.min, min_level);
    atomic_store(&ctx->client.log.data, data);
    atomic_store(&ctx->client.log.fn, fn);
    return REDLOCK_OK;
}

/* The hiredis the library was built with, as a string that stays in every
 * library and module holding this file (strings(1) finds it; the package
 * checks do): "redlock built with hiredis 1.4.1". Nothing refers to it:
 * retain keeps a linker's --gc-sections (zig's, by default) from dropping
 * it. */
#define RL_STR_(x) #x
#define RL_STR(x) RL_STR_(x)
#if defined(__has_attribute)
#if __has_attribute(retain)
#define RL_RETAIN __attribute__((retain))
#endif
#endif
#ifndef RL_RETAIN
#define RL_RETAIN
#endif
__attribute__((used)) RL_RETAIN static const char rl_hiredis_built_with[] =
    "redlock built with hiredis " RL_STR(HIREDIS_MAJOR) "." RL_STR(HIREDIS_MINOR) "."
    RL_STR(HIREDIS_PATCH);

const char *redlock_version_string(void)
{
    return REDLOCK_VERSION_STRING;
}

int redlock_version_number(void)
{
    return REDLOCK_VERSION_NUMBER;
}
