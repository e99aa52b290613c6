/* base.c - the calling thread's failure message (see base.h). */
#include <stdarg.h>
#include <stdio.h>

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
