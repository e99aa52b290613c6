/*
 * log.h - the client's events (redlock_ctx_set_log): where the engine and
 * the blocking driver tell what they decided. An event is one call of the
 * ctx's hook, synchronously, on the thread that decided it; with no hook,
 * or below its level, it costs the test of RL_LOG and nothing is formatted.
 * Events are emitted with no lock of the library's held.
 */
#ifndef RL_LOG_H
#define RL_LOG_H

#include "ctx.h"

struct rl_keys;

/* Whether an event of level reaches ctx's hook. */
static inline bool rl_logging(const redlock_ctx *ctx, int level)
{
    return atomic_load_explicit(&((redlock_ctx *)ctx)->log_fn, memory_order_relaxed) != NULL
        && level >= atomic_load_explicit(&((redlock_ctx *)ctx)->log_min, memory_order_relaxed);
}

/* Emits an event: its arguments are evaluated only when it reaches the hook. */
#define RL_LOG(ctx, level, event, ...)                                                  \
    do {                                                                               \
        if (rl_logging((ctx), (level)))                                                \
            rl_log_emit((ctx), (level), (event), __VA_ARGS__);                         \
    } while (0)

void rl_log_emit(const redlock_ctx *ctx, int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The part of a token an event shows: its first 8 characters. */
#define RL_OWNER_LEN 8
void rl_log_owner(const char *token, char out[RL_OWNER_LEN + 1]);
/* The resource names of keys (key_prefix removed), comma-separated, cut
 * short with ",+N more" to fit len. */
void rl_log_resources(const redlock_ctx *ctx, const struct rl_keys *keys, char *buf, size_t len);
/* A status code's short name, as the bindings name their errors ("noquorum"). */
const char *rl_log_code(int code);

#endif /* RL_LOG_H */
