/* options.c - a client's options, set and read by name as text. Every
 * option is one line of options.def; the code below knows only the kinds. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "options.h"

enum kind { INT, BOOL, FRACTION, STRING };

typedef struct option {
    rl_option_info info;
    enum kind kind;
    int64_t min, max;
    size_t offset;       /* of the field in struct rl_options */
    size_t size;         /* of the field: an INT is an int or an int64_t */
} option;

#define FIELD(field) (((rl_options *)0)->field)

/* Whether a field can hold its kind's values from lo to hi. A line of
 * options.def with the wrong field type or bounds then fails to compile,
 * rather than writing the wrong number of bytes at run time. */
#define FITS_INT(f, lo, hi) \
    _Generic((f), int: (lo) <= (hi) && (lo) >= INT_MIN && (hi) <= INT_MAX, \
                  int64_t: (lo) <= (hi), default: 0)
#define FITS_BOOL(f, lo, hi)     _Generic((f), bool: (lo) == 0 && (hi) == 1, default: 0)
#define FITS_FRACTION(f, lo, hi) _Generic((f), double: (lo) < (hi), default: 0)
/* A string fits a name (key_prefix leaves room for at least one byte of it). */
#define FITS_STRING(f, lo, hi) \
    _Generic((f), char *: (lo) == 0 && (hi) < REDLOCK_MAX_NAME_BYTES, default: 0)

#define RL_OPTION(name, kind, field, min, max, def, help)                                    \
    _Static_assert(FITS_##kind(FIELD(field), min, max),                                      \
                   "options.def: " #name " does not fit a " #kind " field from " #min        \
                   " to " #max);
#include "options.def"
#undef RL_OPTION

#define RL_OPTION(name, kind, field, min, max, def, help)                                    \
    { { #name, #kind, #min, #max, def, help }, kind, min, max,                               \
      offsetof(rl_options, field), sizeof FIELD(field) },
static const option table[] = {
#include "options.def"
};
#undef RL_OPTION

#define N_OPTIONS (sizeof table / sizeof table[0])

size_t rl_options_count(void)
{
    return N_OPTIONS;
}

const rl_option_info *rl_options_info(size_t i)
{
    return i < N_OPTIONS ? &table[i].info : NULL;
}

static const option *find(const char *name)
{
    for (size_t i = 0; name && i < N_OPTIONS; i++)
        if (strcmp(table[i].info.name, name) == 0)
            return &table[i];
    return NULL;
}

static int unknown(const char *name)
{
    char known[512] = "";
    for (size_t i = 0; i < N_OPTIONS; i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, table[i].info.name, sizeof known - strlen(known) - 1);
    }
    return rl_fail(REDLOCK_EINVAL, "unknown option '%.64s' (known: %s)", name, known);
}

/* The option of name, or NULL with this thread's message set. */
static const option *lookup(const char *name)
{
    if (!name) {
        rl_fail(REDLOCK_EINVAL, "option name is NULL");
        return NULL;
    }
    const option *opt = find(name);
    if (!opt)
        unknown(name);
    return opt;
}

/* A whole decimal number in [min, max], nothing before or after it. */
static int parse_int(const option *opt, const char *value, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = value[0] >= '0' && value[0] <= '9' ? strtoll(value, &end, 10) : 0;
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno == ERANGE || v < opt->min
        || v > opt->max)
        return rl_fail(REDLOCK_EINVAL, "option %s: must be a whole number from %lld to %lld, "
                       "not '%.40s'", opt->info.name, (long long)opt->min, (long long)opt->max,
                       value);
    *out = v;
    return REDLOCK_OK;
}

/* A decimal in [min, max); "nan" and "inf" are refused. */
static int parse_fraction(const option *opt, const char *value, double *out)
{
    char *end;
    bool digits = (value[0] >= '0' && value[0] <= '9') || value[0] == '.';
    double v = digits ? strtod(value, &end) : 0;
    if (!digits || *end != '\0' || !isfinite(v) || v < (double)opt->min || v >= (double)opt->max)
        return rl_fail(REDLOCK_EINVAL, "option %s: must be a number from %lld and below %lld, "
                       "not '%.40s'", opt->info.name, (long long)opt->min, (long long)opt->max,
                       value);
    __atomic_store(out, &v, __ATOMIC_RELAXED);
    return REDLOCK_OK;
}

static int set_string(rl_options *o, const option *opt, const char *value)
{
    size_t len = strnlen(value, (size_t)opt->max + 1);
    if (len > (size_t)opt->max)
        return rl_fail(REDLOCK_EINVAL, "option %s: longer than %lld bytes", opt->info.name,
                       (long long)opt->max);
    char *copy = strdup(value);
    if (!copy)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    char **field = (char **)((char *)o + opt->offset);
    rl_free_secret(*field);   /* sentinel_password's, sentinel_user's: wiped */
    *field = copy;
    /* key_prefix's length is kept beside it. */
    if (opt->offset == offsetof(rl_options, key_prefix))
        o->key_prefix_len = len;
    return REDLOCK_OK;
}

/* The field's own width: the compile-time checks above make v fit it. The
 * numbers are atomic (options.h), written and read as such. */
static void store_int(const option *opt, void *field, int64_t v)
{
    if (opt->kind == BOOL)
        __atomic_store_n((bool *)field, v != 0, __ATOMIC_RELAXED);
    else if (opt->size == sizeof(int))
        __atomic_store_n((int *)field, (int)v, __ATOMIC_RELAXED);
    else
        __atomic_store_n((int64_t *)field, v, __ATOMIC_RELAXED);
}

static int64_t load_int(const option *opt, const void *field)
{
    if (opt->kind == BOOL)
        return __atomic_load_n((const bool *)field, __ATOMIC_RELAXED);
    if (opt->size == sizeof(int))
        return __atomic_load_n((const int *)field, __ATOMIC_RELAXED);
    return __atomic_load_n((const int64_t *)field, __ATOMIC_RELAXED);
}

/* A default that max_lease_ms would make invalid follows it: unless it was
 * set, the lease of a kept lock (watchdog_lease_ms) is its default or
 * max_lease_ms, whichever is less. */
static void follow_max_lease(rl_options *o)
{
    if (o->watchdog_lease_set)
        return;
    int64_t def = strtoll(find("watchdog_lease_ms")->info.def, NULL, 10);
    o->watchdog_lease_ms = def < o->max_lease_ms ? def : o->max_lease_ms;
}

static int set(rl_options *o, const char *name, const char *value);

int rl_options_set(rl_options *o, const char *name, const char *value)
{
    int rc = set(o, name, value);
    if (rc == REDLOCK_OK && strcmp(name, "watchdog_lease_ms") == 0)
        o->watchdog_lease_set = true;
    if (rc == REDLOCK_OK)
        follow_max_lease(o);
    return rc;
}

static int set(rl_options *o, const char *name, const char *value)
{
    const option *opt = lookup(name);
    if (!opt)
        return REDLOCK_EINVAL;
    if (!value)
        return rl_fail(REDLOCK_EINVAL, "option %.64s: value is NULL", name);
    void *field = (char *)o + opt->offset;
    int64_t v = 0;
    int rc;
    switch (opt->kind) {
    case INT:
    case BOOL:
        /* The value is parsed whole before anything is written: a refused
         * value leaves the option as it was. */
        if ((rc = parse_int(opt, value, &v)) == REDLOCK_OK)
            store_int(opt, field, v);
        return rc;
    case FRACTION:
        return parse_fraction(opt, value, field);
    case STRING:
        return set_string(o, opt, value);
    }
    return rl_fail(REDLOCK_EINVAL, "option %.64s: unknown kind", name);
}

int rl_options_init(rl_options *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        int rc = set(o, table[i].info.name, table[i].info.def);
        if (rc != REDLOCK_OK) {
            rl_options_free(o);
            return rc;
        }
    }
    follow_max_lease(o);
    return REDLOCK_OK;
}

void rl_options_free(rl_options *o)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (table[i].kind == STRING) {
            char **field = (char **)((char *)o + table[i].offset);
            rl_free_secret(*field);
            *field = NULL;
        }
    }
}

bool rl_options_is_secret(const char *name)
{
    const option *opt = find(name);
    return opt && opt->offset == offsetof(rl_options, sentinel_password);
}

bool rl_options_is_tls(const char *name)
{
    return name && strncmp(name, "tls_", 4) == 0;
}

/* Copies option name's text into buf, when it fits (NUL included). */
static int copy_out(const char *name, const char *text, char *buf, size_t buflen)
{
    size_t need = strlen(text) + 1;
    if (!buf || need > buflen)
        return rl_fail(REDLOCK_EINVAL, "option %.64s: the buffer needs %zu bytes, not %zu", name,
                       need, buflen);
    memcpy(buf, text, need);
    return REDLOCK_OK;
}

int rl_options_get(const rl_options *o, const char *name, char *buf, size_t buflen)
{
    const option *opt = lookup(name);
    if (!opt)
        return REDLOCK_EINVAL;
    const void *field = (const char *)o + opt->offset;
    char number[32];
    const char *text = number;
    switch (opt->kind) {
    case INT:
    case BOOL:
        snprintf(number, sizeof number, "%lld", (long long)load_int(opt, field));
        break;
    case FRACTION: {
        /* The shortest text that reads back as the same number. */
        double v;
        __atomic_load((const double *)field, &v, __ATOMIC_RELAXED);
        rl_format_double(number, sizeof number, v);
        break;
    }
    case STRING:
        text = *(char *const *)field;
        break;
    }
    return copy_out(name, text, buf, buflen);
}

/* ---- The table through the ABI (redlock_option_*), for the bindings ---- */

size_t redlock_option_count(void)
{
    return N_OPTIONS;
}

const char *redlock_option_name(size_t index)
{
    return index < N_OPTIONS ? table[index].info.name : NULL;
}

int redlock_option_type(const char *name)
{
    rl_clear_error();
    const option *opt = lookup(name);
    if (!opt)
        return REDLOCK_EINVAL;
    switch (opt->kind) {
    case INT:      return REDLOCK_TYPE_INT;
    case BOOL:     return REDLOCK_TYPE_BOOL;
    case FRACTION: return REDLOCK_TYPE_REAL;
    default:       return REDLOCK_TYPE_TEXT;
    }
}

int redlock_option_default(const char *name, char *buf, size_t buflen)
{
    rl_clear_error();
    const option *opt = lookup(name);
    if (!opt)
        return REDLOCK_EINVAL;
    return copy_out(name, opt->info.def, buf, buflen);
}
