/* log.c - the client's events (see log.h) and redlock_ctx_set_log. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "log.h"

int redlock_ctx_set_log(redlock_ctx *ctx, redlock_log_fn fn, int min_level, void *data)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    /* The level first and the hook last: a thread that sees the new hook
     * sees its level and data too. */
    atomic_store(&ctx->log_min, min_level);
    atomic_store(&ctx->log_data, data);
    atomic_store(&ctx->log_fn, fn);
    return REDLOCK_OK;
}

void rl_log_emit(const redlock_ctx *ctx, int level, const char *event, const char *fmt, ...)
{
    redlock_ctx *c = (redlock_ctx *)ctx;
    redlock_log_fn fn = atomic_load(&c->log_fn);
    if (!fn)
        return;
    char message[RL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fn(atomic_load(&c->log_data), level, event, message);
}

void rl_log_owner(const char *token, char out[RL_OWNER_LEN + 1])
{
    size_t len = strnlen(token, RL_OWNER_LEN);
    memcpy(out, token, len);
    out[len] = '\0';
}

void rl_log_resources(const redlock_ctx *ctx, const rl_keys *keys, char *buf, size_t len)
{
    size_t prefix = ctx->opt.key_prefix_len, used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < keys->n; i++) {
        const char *name = keys->k[i] + prefix;
        size_t need = strlen(name) + (i > 0);
        /* Room for this name, and for ",+N more" after it unless it is the last. */
        if (used + need + (i + 1 < keys->n ? 24 : 0) >= len) {
            int cut = (int)(len > 40 ? len - 40 : 0);
            if (i == 0 && keys->n == 1)   /* the only name, cut short */
                snprintf(buf, len, "%.*s...", cut, name);
            else if (i == 0)
                snprintf(buf, len, "%.*s...,+%zu more", cut, name, keys->n - 1);
            else
                snprintf(buf + used, len - used, ",+%zu more", keys->n - i);
            return;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i > 0 ? "," : "", name);
    }
}

const char *rl_log_code(int code)
{
    switch (code) {
    case REDLOCK_OK:           return "ok";
    case REDLOCK_ELOCKED:      return "locked";
    case REDLOCK_ENOQUORUM:    return "noquorum";
    case REDLOCK_ENOTHELD:     return "notheld";
    case REDLOCK_EINVAL:       return "inval";
    case REDLOCK_ENOMEM:       return "nomem";
    case REDLOCK_EEXPIRED:     return "expired";
    case REDLOCK_EUNSUPPORTED: return "unsupported";
    case REDLOCK_EAUTH:        return "auth";
    case REDLOCK_EWRONGTYPE:   return "wrongtype";
    case REDLOCK_EREDIS:       return "redis";
    case REDLOCK_ESYSTEM:      return "system";
    case REDLOCK_ECANCELED:    return "canceled";
    default:                   return "unknown";
    }
}
