/* options.c - the client's options, set by name from text. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "options.h"

#define MAX_TIMEOUT_MS 600000      /* 10 minutes */
#define MAX_DELAY_MS   3600000     /* 1 hour */
#define MAX_POOL_SIZE  1024

int rl_options_init(rl_options *o)
{
    o->node_timeout_ms = 50;
    o->connect_timeout_ms = 100;
    o->retry_delay_ms = 200;
    o->retry_jitter_ms = 100;
    o->drift_factor = 0.01;
    o->key_prefix = strdup("");
    o->key_prefix_len = 0;
    o->pool_size = 16;
    o->restart_guard = true;
    return o->key_prefix ? REDLOCK_OK : rl_fail(REDLOCK_ENOMEM, "out of memory");
}

void rl_options_free(rl_options *o)
{
    free(o->key_prefix);
    o->key_prefix = NULL;
}

/* A whole decimal number in [lo, hi], nothing before or after it. */
static int parse_int(const char *name, const char *value, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    if (value[0] < '0' || value[0] > '9')
        return rl_fail(REDLOCK_EINVAL, "option %s: '%.40s' is not a whole number", name, value);
    long long v = strtoll(value, &end, 10);
    if (*end != '\0')
        return rl_fail(REDLOCK_EINVAL, "option %s: '%.40s' is not a whole number", name, value);
    if (errno == ERANGE || v < lo || v > hi)
        return rl_fail(REDLOCK_EINVAL, "option %s: must be from %lld to %lld", name,
                       (long long)lo, (long long)hi);
    *out = v;
    return REDLOCK_OK;
}

static int parse_fraction(const char *name, const char *value, double *out)
{
    char *end;
    if (!((value[0] >= '0' && value[0] <= '9') || value[0] == '.'))
        return rl_fail(REDLOCK_EINVAL, "option %s: '%.40s' is not a number", name, value);
    double v = strtod(value, &end);
    if (*end != '\0' || !isfinite(v))
        return rl_fail(REDLOCK_EINVAL, "option %s: '%.40s' is not a number", name, value);
    if (v < 0.0 || v >= 1.0)
        return rl_fail(REDLOCK_EINVAL, "option %s: must be at least 0 and below 1", name);
    *out = v;
    return REDLOCK_OK;
}

int rl_options_set(rl_options *o, const char *name, const char *value)
{
    int64_t v = 0;
    int rc;
    if (!name)
        return rl_fail(REDLOCK_EINVAL, "option name is NULL");
    if (!value)
        return rl_fail(REDLOCK_EINVAL, "option %.64s: value is NULL", name);

    if (strcmp(name, "node_timeout_ms") == 0) {
        if ((rc = parse_int(name, value, 1, MAX_TIMEOUT_MS, &v)) == REDLOCK_OK)
            o->node_timeout_ms = v;
    } else if (strcmp(name, "connect_timeout_ms") == 0) {
        if ((rc = parse_int(name, value, 1, MAX_TIMEOUT_MS, &v)) == REDLOCK_OK)
            o->connect_timeout_ms = v;
    } else if (strcmp(name, "retry_delay_ms") == 0) {
        if ((rc = parse_int(name, value, 0, MAX_DELAY_MS, &v)) == REDLOCK_OK)
            o->retry_delay_ms = v;
    } else if (strcmp(name, "retry_jitter_ms") == 0) {
        if ((rc = parse_int(name, value, 0, MAX_DELAY_MS, &v)) == REDLOCK_OK)
            o->retry_jitter_ms = v;
    } else if (strcmp(name, "pool_size") == 0) {
        if ((rc = parse_int(name, value, 0, MAX_POOL_SIZE, &v)) == REDLOCK_OK)
            o->pool_size = (int)v;
    } else if (strcmp(name, "restart_guard") == 0) {
        if ((rc = parse_int(name, value, 0, 1, &v)) == REDLOCK_OK)
            o->restart_guard = v == 1;
    } else if (strcmp(name, "drift_factor") == 0) {
        rc = parse_fraction(name, value, &o->drift_factor);
    } else if (strcmp(name, "key_prefix") == 0) {
        size_t len = strnlen(value, REDLOCK_MAX_NAME_BYTES);
        if (len >= REDLOCK_MAX_NAME_BYTES)
            return rl_fail(REDLOCK_EINVAL, "option key_prefix: longer than %d bytes",
                           REDLOCK_MAX_NAME_BYTES - 1);
        char *copy = strdup(value);
        if (!copy)
            return rl_fail(REDLOCK_ENOMEM, "out of memory");
        free(o->key_prefix);
        o->key_prefix = copy;
        o->key_prefix_len = len;
        rc = REDLOCK_OK;
    } else {
        rc = rl_fail(REDLOCK_EINVAL,
                     "unknown option '%.64s' (known: node_timeout_ms, connect_timeout_ms, "
                     "retry_delay_ms, retry_jitter_ms, drift_factor, key_prefix, pool_size, "
                     "restart_guard)",
                     name);
    }
    return rc;
}

/* Writes text into buf when it fits. */
static int put_text(const char *name, const char *text, char *buf, size_t buflen)
{
    size_t need = strlen(text) + 1;
    if (need > buflen)
        return rl_fail(REDLOCK_EINVAL, "option %.64s: the buffer needs %zu bytes, not %zu", name,
                       need, buflen);
    memcpy(buf, text, need);
    return REDLOCK_OK;
}

int rl_options_get(const rl_options *o, const char *name, char *buf, size_t buflen)
{
    char text[64];
    if (!name)
        return rl_fail(REDLOCK_EINVAL, "option name is NULL");
    if (strcmp(name, "key_prefix") == 0)
        return put_text(name, o->key_prefix, buf, buflen);
    if (strcmp(name, "node_timeout_ms") == 0)
        snprintf(text, sizeof text, "%lld", (long long)o->node_timeout_ms);
    else if (strcmp(name, "connect_timeout_ms") == 0)
        snprintf(text, sizeof text, "%lld", (long long)o->connect_timeout_ms);
    else if (strcmp(name, "retry_delay_ms") == 0)
        snprintf(text, sizeof text, "%lld", (long long)o->retry_delay_ms);
    else if (strcmp(name, "retry_jitter_ms") == 0)
        snprintf(text, sizeof text, "%lld", (long long)o->retry_jitter_ms);
    else if (strcmp(name, "pool_size") == 0)
        snprintf(text, sizeof text, "%d", o->pool_size);
    else if (strcmp(name, "restart_guard") == 0)
        snprintf(text, sizeof text, "%d", o->restart_guard ? 1 : 0);
    else if (strcmp(name, "drift_factor") == 0)
        snprintf(text, sizeof text, "%g", o->drift_factor);
    else
        return rl_options_set((rl_options *)(uintptr_t)o, name, NULL);
    return put_text(name, text, buf, buflen);
}
