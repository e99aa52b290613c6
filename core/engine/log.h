/*
 * log.h - the client's events (redlock_ctx_set_log): where the engine and
 * the blocking driver tell what they decided. An event is one call of the
 * client's hook, synchronously, on the thread that decided it; with no hook,
 * or below its level, it costs the test of RL_LOG and nothing is formatted.
 * Events are emitted with no lock of the library's held. A message's control
 * bytes (a newline in a resource name, say) reach the hook escaped (\n,
 * \xNN: rl_escape_controls), so that one event is always one line.
 */
#ifndef RL_LOG_H
#define RL_LOG_H

#include <stdatomic.h>

#include "base.h"

/* A client's hook: set by redlock_ctx_set_log, read by any thread. */
typedef struct rl_log {
    _Atomic(redlock_log_fn) fn;
    void *_Atomic data;
    _Atomic int min;
} rl_log;

/* Whether an event of level reaches the hook. */
static inline bool rl_logging(const rl_log *log, int level)
{
    return atomic_load_explicit(&((rl_log *)log)->fn, memory_order_relaxed) != NULL
        && level >= atomic_load_explicit(&((rl_log *)log)->min, memory_order_relaxed);
}

/* Emits an event of a client (anything with its rl_log as member `log`):
 * its arguments are evaluated only when it reaches the hook. */
#define RL_LOG(ctx, level, event, ...) RL_LOG_TO(&(ctx)->log, level, event, __VA_ARGS__)
#define RL_LOG_TO(log, level, event, ...)                                               \
    do {                                                                               \
        if (rl_logging((log), (level)))                                                \
            rl_log_emit((log), (level), (event), __VA_ARGS__);                         \
    } while (0)

void rl_log_emit(const rl_log *log, int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The part of a token an event shows: its first 8 characters. */
#define RL_OWNER_LEN 8
void rl_log_owner(const char *token, char out[RL_OWNER_LEN + 1]);
/* A status code's short name, as the bindings name their errors ("noquorum"). */
const char *rl_log_code(int code);

#endif /* RL_LOG_H */
