/* options.h - the client's options, set by name from text. */
#ifndef RL_OPTIONS_H
#define RL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redlock.h"

typedef struct rl_options {
    int64_t node_timeout_ms;
    int64_t connect_timeout_ms;
    int64_t retry_delay_ms;
    int64_t retry_jitter_ms;
    double drift_factor;
    char *key_prefix;
    size_t key_prefix_len;
    int pool_size;
    bool restart_guard;
} rl_options;

int rl_options_init(rl_options *o);
void rl_options_free(rl_options *o);
int rl_options_set(rl_options *o, const char *name, const char *value);
int rl_options_get(const rl_options *o, const char *name, char *buf, size_t buflen);

#endif /* RL_OPTIONS_H */
