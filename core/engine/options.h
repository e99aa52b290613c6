/* options.h - a client's options, set and read by name as text, from the
 * one table in options.def. */
#ifndef RL_OPTIONS_H
#define RL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redlock.h"

/* The numbers are atomic: a client's own threads (its service thread, its
 * keeper) go on reading them after a call returned, while
 * redlock_ctx_set_option may change one. The texts (key_prefix, the TLS
 * files, the sentinels' credentials) must not change once calls run
 * (abi/redlock.h). */
typedef struct rl_options {
    _Atomic int64_t node_timeout_ms;
    _Atomic int64_t connect_timeout_ms;
    _Atomic int64_t retry_delay_ms;
    _Atomic int64_t retry_jitter_ms;
    _Atomic double drift_factor;
    char *key_prefix;
    size_t key_prefix_len;
    _Atomic int pool_size;
    _Atomic bool restart_guard;
    _Atomic bool restart_records;
    _Atomic bool load_functions;
    _Atomic bool fencing;
    _Atomic int64_t max_lease_ms;
    char *sentinel_user;        /* redis-sentinel:// nodes' sentinels: "" when unset */
    char *sentinel_password;
    _Atomic int64_t sentinel_poll_ms;
    _Atomic int64_t watchdog_lease_ms;  /* unless set, its default capped by max_lease_ms */
    _Atomic bool watchdog_lease_set;
    _Atomic int64_t unavailable_timeout_ms;
    char *tls_ca_file;          /* the TLS options: "" when unset */
    char *tls_ca_dir;
    char *tls_cert_file;
    char *tls_key_file;
    char *tls_server_name;
    _Atomic bool tls_verify;
} rl_options;

/* One line of the table, as its text, for documentation and tests: kind is
 * "INT", "BOOL", "FRACTION" or "STRING"; def is the text rl_options_set takes. */
typedef struct rl_option_info {
    const char *name, *kind, *min, *max, *def, *help;
} rl_option_info;

/* Every option at its default. */
int rl_options_init(rl_options *o);
void rl_options_free(rl_options *o);
/* Sets one option from text; REDLOCK_EINVAL (with a message) for an unknown
 * name or a bad value, which leaves the options as they were. */
int rl_options_set(rl_options *o, const char *name, const char *value);
/* Writes the value as text (as set accepts it) into buf; REDLOCK_EINVAL
 * for an unknown name or when buflen is too small (the message says the
 * size needed). */
int rl_options_get(const rl_options *o, const char *name, char *buf, size_t buflen);
/* Whether name is one of the TLS options (tls_*). */
bool rl_options_is_tls(const char *name);
/* Whether name is a password (sentinel_password): written, never read
 * back through the ABI (redlock_ctx_get_option). */
bool rl_options_is_secret(const char *name);

/* The table, in its order; rl_options_info(i) is NULL past the end. */
size_t rl_options_count(void);
const rl_option_info *rl_options_info(size_t i);

#endif /* RL_OPTIONS_H */
