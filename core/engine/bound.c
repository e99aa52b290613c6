/* bound.c - replies scanned against their bounds before they are read (see bound.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bound.h"

/* The longest header line: a sign, 19 digits (INT64_MIN's), and its CRLF. */
#define NUMBER_DIGITS 19

void rl_bound_init(rl_bound *b)
{
    memset(b, 0, sizeof *b);
}

bool rl_bound_idle(const rl_bound *b)
{
    return b->type == 0 && b->body == 0 && b->depth == 0 && b->bytes == 0;
}

/* The reply ended: the scanner waits for the next one. */
static void reset(rl_bound *b)
{
    rl_reply_limits lim = b->lim;
    rl_bound_init(b);
    b->lim = lim;
}

/* A value ended: RL_BOUND_DONE when it was the last of the reply. */
static int value_done(rl_bound *b)
{
    while (b->depth > 0) {
        if (--b->left[b->depth - 1] > 0)
            return RL_BOUND_MORE;
        b->depth--;   /* the array ended: a value of the one around it */
    }
    reset(b);
    return RL_BOUND_DONE;
}

static int bad(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return RL_BOUND_BAD;
}

/* A header line ended (its type and number read): what it opens. */
static int line_done(rl_bound *b, char *why, size_t whylen)
{
    char type = b->type;
    b->type = 0;
    if (type == '+' || type == '-')
        return value_done(b);
    if (b->digits == 0 || b->over || (!b->neg && b->num > (uint64_t)INT64_MAX)
        || (b->neg && b->num == 0))
        return bad(why, whylen, "a bad reply: %s that is not a 64-bit number (%s)",
                   type == ':' ? "an integer" : "a length", b->lim.what);
    if (type == ':')
        return value_done(b);
    if (b->neg) {
        if (b->num != 1)
            return bad(why, whylen, "a bad reply: a length of -%llu (%s)",
                       (unsigned long long)b->num, b->lim.what);
        return value_done(b);   /* a nil */
    }
    uint64_t room = b->lim.bytes - b->bytes;
    if (type == '$') {
        if (b->num > room || b->num + 2 > room)
            return bad(why, whylen, "a reply over the bound of %llu bytes (%s): a string of "
                       "%llu bytes", (unsigned long long)b->lim.bytes, b->lim.what,
                       (unsigned long long)b->num);
        b->body = b->num + 2;
        return RL_BOUND_MORE;
    }
    /* '*': an array of num values */
    if (b->num > b->lim.elems - b->elems)
        return bad(why, whylen, "a reply over the bound of %llu values (%s): an array of %llu",
                   (unsigned long long)b->lim.elems, b->lim.what, (unsigned long long)b->num);
    if (b->num == 0)
        return value_done(b);
    if (b->depth == RL_REPLY_DEPTH)
        return bad(why, whylen, "a reply of arrays nested deeper than %d (%s)", RL_REPLY_DEPTH,
                   b->lim.what);
    b->left[b->depth++] = (int64_t)b->num;
    return RL_BOUND_MORE;
}

/* One byte of a line (type byte excluded). */
static int line_byte(rl_bound *b, char c, char *why, size_t whylen)
{
    if (b->cr && c == '\n')
        return line_done(b, why, whylen);
    bool text = b->type == '+' || b->type == '-';
    if (b->cr && !text)
        return bad(why, whylen, "a bad reply: a header not ended by CRLF (%s)", b->lim.what);
    b->cr = c == '\r';
    if (text || b->cr)
        return RL_BOUND_MORE;
    if (c == '-' && !b->neg && b->digits == 0) {
        b->neg = true;
        return RL_BOUND_MORE;
    }
    /* Written as Redis writes numbers (and hiredis reads them): no leading
     * zero, no "-0". */
    if (c < '0' || c > '9' || b->digits == NUMBER_DIGITS || (b->digits == 1 && b->num == 0))
        return bad(why, whylen, "a bad reply: %s that is not a 64-bit number (%s)",
                   b->type == ':' ? "an integer" : "a length", b->lim.what);
    b->digits++;
    b->num = b->num * 10 + (uint64_t)(c - '0');
    b->over |= b->num > (uint64_t)INT64_MAX + 1;
    return RL_BOUND_MORE;
}

int rl_bound_scan(rl_bound *b, const char *p, size_t len, size_t *used, char *why,
                  size_t whylen)
{
    size_t i = 0;
    while (i < len) {
        if (b->body > 0) {
            /* A string's body: skipped, its length known and bounded. */
            size_t k = len - i < b->body ? len - i : (size_t)b->body;
            i += k;
            b->body -= k;
            b->bytes += k;
            if (b->body == 0 && value_done(b) == RL_BOUND_DONE) {
                *used = i;
                return RL_BOUND_DONE;
            }
            continue;
        }
        char c = p[i++];
        if (++b->bytes > b->lim.bytes)
            return bad(why, whylen, "a reply over the bound of %llu bytes (%s)",
                       (unsigned long long)b->lim.bytes, b->lim.what);
        int r;
        if (b->type == 0) {
            if (!strchr("+-:$*", c) || c == '\0')
                return bad(why, whylen, "a bad reply: not Redis protocol (a value of type "
                           "0x%02x, %s)", (unsigned)(unsigned char)c, b->lim.what);
            if (++b->elems > b->lim.elems)
                return bad(why, whylen, "a reply over the bound of %llu values (%s)",
                           (unsigned long long)b->lim.elems, b->lim.what);
            b->type = c;
            b->cr = b->neg = b->over = false;
            b->digits = 0;
            b->num = 0;
            continue;
        }
        if ((r = line_byte(b, c, why, whylen)) != RL_BOUND_MORE) {
            *used = i;
            return r;
        }
    }
    *used = i;
    return RL_BOUND_MORE;
}
