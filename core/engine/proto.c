/* proto.c - formatting commands and reading what replies mean. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "proto.h"

int rl_bytes_format(rl_bytes *out, int argc, const char **argv)
{
    return rl_bytes_format_len(out, argc, argv, NULL);
}

int rl_bytes_format_len(rl_bytes *out, int argc, const char **argv, const size_t *lens)
{
    out->p = NULL;
    out->len = 0;
    int len = redisFormatCommandArgv(&out->p, argc, argv, lens);
    if (len < 0)
        return REDLOCK_ENOMEM;
    out->len = (size_t)len;
    return REDLOCK_OK;
}

void rl_bytes_free(rl_bytes *b)
{
    redisFreeCommand(b->p);
    b->p = NULL;
    b->len = 0;
}

void rl_result_fail(rl_result *r, int code, const char *fmt, ...)
{
    va_list ap;
    r->vote = RL_VOTE_FAILED;
    r->code = code;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

void rl_result_from_bad_reply(rl_result *r, const redisReply *reply)
{
    if (reply->type == REDIS_REPLY_ERROR)
        rl_result_fail(r, rl_reply_error_code(reply->str), "%.150s", reply->str);
    else
        rl_result_fail(r, REDLOCK_EREDIS, "unexpected reply of type %d", reply->type);
}

/* Redis error replies by their first word. */
int rl_reply_error_code(const char *err)
{
    if (strstr(err, "WRONGTYPE"))
        return REDLOCK_EWRONGTYPE;
    if (strncmp(err, "NOAUTH", 6) == 0 || strncmp(err, "WRONGPASS", 9) == 0
        || strncmp(err, "NOPERM", 6) == 0 || strstr(err, "invalid password")
        || strstr(err, "invalid username-password")
        || strstr(err, "The user executing the script can't"))  /* ACL, inside a script */
        return REDLOCK_EAUTH;
    return REDLOCK_EREDIS;
}

bool rl_reply_is_noscript(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0;
}
