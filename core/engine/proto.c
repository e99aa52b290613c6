/* proto.c - formatting commands and reading what replies mean. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "proto.h"

/* hiredis 1.x caps what its reader accepts (0.14, a system's hiredis, has
 * no maxelements): an array header of more elements than maxelements is a
 * protocol error before hiredis allocates its element pointers (8 bytes
 * each; its default allows 2^32 - 1), and a reader whose buffer is empty
 * frees it when it holds more than maxbuf (a large reply's buffer is not
 * kept). 1M elements is above any array a command's reply holds (CLUSTER
 * SLOTS, a multi-lock's reply of many keys); 64 kB is a few replies. */
#define RL_READER_MAX_ELEMENTS (1024 * 1024)
#define RL_READER_MAX_BUF (64 * 1024)

redisReader *rl_reader_new(void)
{
    redisReader *r = redisReaderCreate();
#if HIREDIS_MAJOR >= 1
    if (r) {
        r->maxelements = RL_READER_MAX_ELEMENTS;
        r->maxbuf = RL_READER_MAX_BUF;
    }
#endif
    return r;
}

int rl_bytes_format(rl_bytes *out, int argc, const char **argv)
{
    return rl_bytes_format_len(out, argc, argv, NULL);
}

/* Writes "<c><n>\r\n" at p; returns the end. */
static char *put_header(char *p, char c, size_t n)
{
    char digits[24];
    size_t k = strlen(rl_decimal(digits, (long long)n));
    *p++ = c;
    memcpy(p, digits, k);
    p += k;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* The command as RESP: an array of argc bulk strings (lens NULL: each
 * argument up to its zero byte). Written here rather than by hiredis's
 * formatter, which prints each length with sprintf: this is on every
 * operation's path. */
int rl_bytes_format_len(rl_bytes *out, int argc, const char **argv, const size_t *lens)
{
    out->p = NULL;
    out->len = 0;
    if (argc < 0)
        return REDLOCK_EINVAL;
    size_t total = 1 + 20 + 2, stack[16], *len = (size_t)argc <= 16 ? stack
                                                   : malloc((size_t)argc * sizeof *len);
    if (!len)
        return REDLOCK_ENOMEM;
    for (int i = 0; i < argc; i++) {
        len[i] = lens ? lens[i] : strlen(argv[i]);
        total += 1 + 20 + 2 + len[i] + 2;
    }
    char *p = malloc(total + 1);
    if (!p) {
        if (len != stack)
            free(len);
        return REDLOCK_ENOMEM;
    }
    char *at = put_header(p, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        at = put_header(at, '$', len[i]);
        memcpy(at, argv[i], len[i]);
        at += len[i];
        *at++ = '\r';
        *at++ = '\n';
    }
    *at = '\0';
    if (len != stack)
        free(len);
    out->p = p;
    out->len = (size_t)(at - p);
    return REDLOCK_OK;
}

char *rl_decimal(char out[24], long long v)
{
    char digits[24];
    int k = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        digits[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    char *p = out;
    if (v < 0)
        *p++ = '-';
    while (k)
        *p++ = digits[--k];
    *p = '\0';
    return out;
}

void rl_bytes_wipe(rl_bytes *b)
{
    rl_wipe(b->p, b->len);
    rl_bytes_free(b);
}

void rl_bytes_free(rl_bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->len = 0;
}

void rl_result_fail(rl_result *r, int code, const char *fmt, ...)
{
    va_list ap;
    r->vote = RL_VOTE_FAILED;
    r->code = code;
    r->guard_ms = 0;
    r->records = false;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

/* How much of an error reply to show: all of it, but for the " script:
 * <sha1>, on @user_script:N." that Redis appends to an error raised inside a
 * script, or " script: <function>, on @user_function:N." inside a function
 * (which script it was, the message around it says). */
static int shown_len(const char *err)
{
    const char *cut = NULL;
    for (const char *p = strstr(err, " script: "); p; p = strstr(p + 1, " script: ")) {
        size_t name = strcspn(p + 9, ", ");
        if (strspn(p + 9, "0123456789abcdef") == 40
            || strncmp(p + 9 + name, ", on @user_function:", 20) == 0)
            cut = p;
    }
    return cut ? (int)(cut - err) : (int)strlen(err);
}

void rl_result_from_bad_reply(rl_result *r, const redisReply *reply)
{
    if (reply->type == REDIS_REPLY_ERROR) {
        int len = shown_len(reply->str);
        rl_result_fail(r, rl_reply_error_code(reply->str), "%.*s", len < 150 ? len : 150,
                       reply->str);
        if (r->why[0] == '\0')   /* a node's error reply with no text */
            snprintf(r->why, sizeof r->why, "an error reply with no text");
    } else {
        rl_result_fail(r, REDLOCK_EREDIS, "unexpected reply of type %d", reply->type);
    }
}

/* Redis error replies by their first word; an ACL's refusal of a command or
 * key is NOPERM, but inside a script Redis words it otherwise (up to 7.0:
 * "ERR The user executing the script can't ...", since 7.2: "ERR ACL
 * failure in script: ..."). */
int rl_reply_error_code(const char *err)
{
    if (strstr(err, "WRONGTYPE"))
        return REDLOCK_EWRONGTYPE;
    if (strncmp(err, "PERMITS", 7) == 0)   /* sem.lua: a semaphore of another size */
        return REDLOCK_EINVAL;
    if (strncmp(err, "NOAUTH", 6) == 0 || strncmp(err, "WRONGPASS", 9) == 0
        || strstr(err, "invalid password") || strstr(err, "invalid username-password"))
        return REDLOCK_EAUTH;
    /* EXECABORT: a transaction (a node without scripts) whose EXEC, or a
     * command queued in it, the ACL refused. */
    if (strncmp(err, "NOPERM", 6) == 0 || strstr(err, "The user executing the script can't")
        || strstr(err, "ACL failure in script")
        || (strncmp(err, "EXECABORT", 9) == 0 && strstr(err, "NOPERM")))
        return REDLOCK_ENOPERM;
    return REDLOCK_EREDIS;
}

bool rl_reply_readonly(const char *err)
{
    return strncmp(err, "READONLY", 8) == 0 || strstr(err, "READONLY You can't write");
}

bool rl_reply_is_noscript(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

bool rl_reply_no_function(const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ERROR)
        return false;
    const char *e = reply->str;
    return strncmp(e, "ERR Function not found", 22) == 0
        || strncmp(e, "ERR unknown command", 19) == 0
        || (strncmp(e, "NOPERM", 6) == 0 && strstr(e, "'fcall'"));
}
