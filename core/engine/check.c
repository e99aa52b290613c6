/* check.c - the rules of a wait, a lease and a semaphore's permits (see check.h). */
#include <math.h>
#include <stdio.h>

#include "check.h"

/* The longest wait: one beyond it (about 146 million years) waits as long. */
#define LONGEST_WAIT_MS 4611686018427387904.0   /* 2^62 */

/* Below this a double of milliseconds may hold a fraction finer than a
 * microsecond, and its microseconds fit an int64_t. */
#define FRACTIONS_BELOW 4503599627370496.0      /* 2^52 */

/* ms rounded to the microsecond: a binding's float of seconds times 1000 is
 * off by a little (1.1 s makes 1100.0000000000002 ms), which must not make
 * another millisecond. */
static double to_microsecond(double ms)
{
    if (!(ms > -FRACTIONS_BELOW && ms < FRACTIONS_BELOW))
        return ms;
    double us = ms * 1000.0;
    int64_t whole = (int64_t)(us < 0 ? us - 0.5 : us + 0.5);
    return (double)whole / 1000.0;
}

/* ms (from 0 to LONGEST_WAIT_MS) rounded up to a whole millisecond. */
static int64_t up_to_ms(double ms)
{
    int64_t whole = (int64_t)ms;
    return (double)whole < ms ? whole + 1 : whole;
}

static int refuse(int arg, const char *what, double value)
{
    char text[40];
    rl_format_double(text, sizeof text, value);
    /* A time's unit, after a number only. */
    const char *unit = arg != REDLOCK_ARG_PERMITS && isfinite(value) ? " ms" : "";
    switch (arg) {
    case REDLOCK_ARG_WAIT:
        return rl_fail(REDLOCK_EINVAL, "%.64s must be a finite time of 0 ms or more, not %s%s",
                       what ? what : "wait", text, unit);
    case REDLOCK_ARG_LEASE:
        return rl_fail(REDLOCK_EINVAL, "%.64s must be a time above 0 ms and at most %d ms, "
                       "not %s%s", what ? what : "lease", REDLOCK_MAX_TTL_MS, text, unit);
    default:
        return rl_fail(REDLOCK_EINVAL, "%.64s must be a whole number from 1 to %d, not %s",
                       what ? what : "permits", REDLOCK_MAX_PERMITS, text);
    }
}

int rl_check_arg(int64_t *out, int arg, const char *what, double value)
{
    double v = arg == REDLOCK_ARG_PERMITS ? value : to_microsecond(value);
    bool ok;
    switch (arg) {
    case REDLOCK_ARG_WAIT:
        ok = v >= 0 && isfinite(v);
        break;
    case REDLOCK_ARG_LEASE:
        ok = v > 0 && v <= REDLOCK_MAX_TTL_MS;
        break;
    case REDLOCK_ARG_PERMITS:
        ok = v >= 1 && v <= REDLOCK_MAX_PERMITS && v == (double)(int64_t)v;
        break;
    default:
        return rl_fail(REDLOCK_EINVAL, "unknown kind of argument %d (REDLOCK_ARG_WAIT, "
                       "REDLOCK_ARG_LEASE or REDLOCK_ARG_PERMITS)", arg);
    }
    if (!ok)
        return refuse(arg, what, v);
    if (out)
        *out = arg == REDLOCK_ARG_PERMITS ? (int64_t)v
             : v >= LONGEST_WAIT_MS ? (int64_t)LONGEST_WAIT_MS : up_to_ms(v);
    return REDLOCK_OK;
}

int redlock_arg_check(int64_t *out, int arg, const char *what, double value)
{
    rl_clear_error();
    return rl_check_arg(out, arg, what, value);
}
