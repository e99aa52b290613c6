/*
 * base.h - what every file of core/ shares: the public header, fixed-width
 * types, and the calling thread's failure message (base.c). Nothing in core/
 * is exported but the functions of redlock.h (hidden visibility and a linker
 * version script).
 */
#ifndef RL_BASE_H
#define RL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redlock.h"

#define RL_ERRMSG_MAX 1024

/* Sets this thread's message (printf-style) and returns code, so a failure
 * reads `return rl_fail(REDLOCK_EINVAL, "ttl_ms must be positive");`. */
int rl_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rl_clear_error(void);
/* This thread's message (redlock_errmsg). */
const char *rl_errmsg(void);

/* Overwrites n bytes at p with zeros in a way the compiler cannot drop as a
 * dead store (explicit_bzero is glibc 2.25's; the library runs on 2.17). */
void rl_wipe(void *p, size_t n);
/* Wipes the string s holds (a password, AUTH's bytes) and frees it; NULL is fine. */
void rl_free_secret(char *s);
/* The shortest decimal text of v that reads back as v ("0.01", "-1000",
 * "1e+20"); "NaN", "infinity" or "-infinity" for those. */
void rl_format_double(char *buf, size_t len, double v);
/* rl_escape_controls and rl_has_controls: control bytes escaped. */
#include "escape.h"
/* a + b and a - b held to int64_t's range: for numbers a node answered,
 * which may be anything a 64-bit integer holds. */
static inline int64_t rl_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t rl_sub_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

#endif /* RL_BASE_H */
