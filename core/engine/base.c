/* base.c - the calling thread's failure message (see base.h). */
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
