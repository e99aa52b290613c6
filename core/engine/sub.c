/*
 * sub.c - a subscriber connection's protocol (sub.h): an output buffer and a
 * hiredis reader, and the meaning of what the node pushes.
 */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "bound.h"
#include "proto.h"
#include "sub.h"

struct rl_sub {
    char *out;          /* bytes to write */
    size_t out_len, out_cap;
    redisReader *reader;
    rl_bound bound;     /* what is received, scanned before the reader has it */
    bool authing;       /* AUTH's reply is the next one */
    bool broken;        /* the stream was not Redis protocol */
    redisReply *event;  /* the reply of the last event read, or NULL */
    const char *channel, *text;   /* the last event's, inside event (or "") */
};

static int append(rl_sub *s, int argc, const char **argv)
{
    rl_bytes b;
    if (rl_bytes_format(&b, argc, argv) != REDLOCK_OK)
        return REDLOCK_ENOMEM;
    if (s->out_len + b.len > s->out_cap) {
        /* Not realloc: the old buffer may hold AUTH's bytes, wiped here. */
        size_t cap = (s->out_len + b.len) * 2;
        char *p = malloc(cap);
        if (!p) {
            rl_bytes_wipe(&b);
            return REDLOCK_ENOMEM;
        }
        if (s->out_len)
            memcpy(p, s->out, s->out_len);
        rl_wipe(s->out, s->out_cap);
        free(s->out);
        s->out = p;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, b.p, b.len);
    s->out_len += b.len;
    rl_bytes_wipe(&b);   /* AUTH's, maybe: a subscriber's commands are few */
    return REDLOCK_OK;
}

rl_sub *rl_sub_new(const rl_node_addr *a)
{
    rl_sub *s = calloc(1, sizeof *s);
    if (!s || !(s->reader = rl_reader_new())) {
        free(s);
        return NULL;
    }
    s->channel = s->text = "";
    if (a->password) {
        const char *argv[3] = { "AUTH", a->user ? a->user : a->password, a->password };
        if (append(s, a->user ? 3 : 2, argv) != REDLOCK_OK) {
            rl_sub_free(s);
            return NULL;
        }
        s->authing = true;
    }
    return s;
}

void rl_sub_free(rl_sub *s)
{
    if (!s)
        return;
    if (s->event)
        freeReplyObject(s->event);
    redisReaderFree(s->reader);
    rl_wipe(s->out, s->out_cap);
    free(s->out);
    free(s);
}

int rl_sub_want(rl_sub *s, const char *channel, bool on)
{
    const char *argv[2] = { on ? "SUBSCRIBE" : "UNSUBSCRIBE", channel };
    return append(s, 2, argv);
}

size_t rl_sub_output(const rl_sub *s, const char **bytes)
{
    *bytes = s->out;
    return s->out_len;
}

void rl_sub_wrote(rl_sub *s, size_t n)
{
    if (n > s->out_len)
        n = s->out_len;
    memmove(s->out, s->out + n, s->out_len - n);
    s->out_len -= n;
    rl_wipe(s->out + s->out_len, n);   /* what was written may have been AUTH's */
}

/* Whether element i of the array r is a string. */
static bool text_at(const redisReply *r, size_t i)
{
    return r->elements > i && r->element[i]
        && (r->element[i]->type == REDIS_REPLY_STRING
            || r->element[i]->type == REDIS_REPLY_STATUS);
}

/* The event a reply means (AUTH's, or a push of the subscribed connection),
 * with its channel and text set; RL_SUB_NONE for one that means nothing. */
static int meaning(rl_sub *s, const redisReply *r)
{
    s->channel = s->text = "";
    if (r->type == REDIS_REPLY_ERROR) {
        s->authing = false;
        s->text = r->str;
        return RL_SUB_REFUSED;
    }
    if (s->authing) {
        s->authing = false;
        return RL_SUB_NONE;   /* +OK */
    }
    if (r->type != REDIS_REPLY_ARRAY || !text_at(r, 0) || !text_at(r, 1))
        return RL_SUB_NONE;
    const char *kind = r->element[0]->str;
    s->channel = r->element[1]->str;
    if (strcmp(kind, "subscribe") == 0)
        return RL_SUB_SUBSCRIBED;
    if (strcmp(kind, "message") == 0 && text_at(r, 2)) {
        s->text = r->element[2]->str;
        return RL_SUB_MESSAGE;
    }
    s->channel = "";
    return RL_SUB_NONE;
}

/* Whether bytes keep within the bounds of a subscriber's replies (bound.h):
 * a channel's name and a release's note, each small. */
static bool within_bounds(rl_sub *s, const char *bytes, size_t len)
{
    char why[160];
    for (size_t at = 0, used; at < len; at += used) {
        if (rl_bound_idle(&s->bound))
            s->bound.lim = (rl_reply_limits){ RL_REPLY_SMALL_BYTES, RL_REPLY_SMALL_ELEMS,
                                              "a subscriber's message" };
        if (rl_bound_scan(&s->bound, bytes + at, len - at, &used, why, sizeof why)
            == RL_BOUND_BAD)
            return false;
    }
    return true;
}

int rl_sub_received(rl_sub *s, const char *bytes, size_t len)
{
    if (s->broken || !within_bounds(s, bytes, len)
        || redisReaderFeed(s->reader, bytes, len) != REDIS_OK) {
        s->broken = true;
        return REDLOCK_EREDIS;
    }
    return REDLOCK_OK;
}

int rl_sub_next(rl_sub *s)
{
    for (;;) {
        if (s->event)
            freeReplyObject(s->event);
        s->event = NULL;
        s->channel = s->text = "";
        void *reply = NULL;
        if (s->broken || redisReaderGetReply(s->reader, &reply) != REDIS_OK) {
            s->broken = true;
            return REDLOCK_EREDIS;
        }
        if (!reply)
            return RL_SUB_NONE;
        s->event = reply;
        int event = meaning(s, s->event);
        if (event != RL_SUB_NONE)
            return event;
    }
}

const char *rl_sub_channel(const rl_sub *s)
{
    return s->channel;
}

const char *rl_sub_text(const rl_sub *s)
{
    return s->text;
}
