/* base.c - the calling thread's failure message, and the helpers every file shares (see base.h). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base.h"

static _Thread_local char last_error[RL_ERRMSG_MAX];

int rl_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

void rl_clear_error(void)
{
    last_error[0] = '\0';
}

const char *rl_errmsg(void)
{
    return last_error;
}

void rl_wipe(void *p, size_t n)
{
    /* A volatile pointer to memset: the call cannot be proven dead. */
    static void *(*volatile set)(void *, int, size_t) = memset;
    if (p && n)
        set(p, 0, n);
}

void rl_free_secret(char *s)
{
    if (s) {
        rl_wipe(s, strlen(s));
        free(s);
    }
}

void rl_format_double(char *buf, size_t len, double v)
{
    if (isnan(v)) {
        snprintf(buf, len, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, len, "%sinfinity", v < 0 ? "-" : "");
        return;
    }
    /* A whole number as such: "-1000", not "-1e+03". */
    if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v) {
        snprintf(buf, len, "%.0f", v);
        return;
    }
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}
