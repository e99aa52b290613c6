/*
 * wake.c - waiters woken by releases: one thread per client, while some
 * lock call of the client waits for a lock held elsewhere, keeps one
 * subscriber connection per node (sub.h) subscribed to the channels of the
 * keys waited for. When a node confirms a channel, every waiter for it tries
 * again (the release may have come before the subscription). A release is
 * published by every node it reaches, with its token: once a quorum of the
 * nodes told it, the waiter for its key that has waited longest tries again
 * (before that, an attempt would find the lock still held on too many
 * nodes), and again on each later message of it, should its attempt have
 * raced the release on some node (its eventfd keeps one wake-up however
 * many come). The waiters' timed retries stay: messages only shorten a wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "cmd.h"
#include "ctx.h"
#include "sockets.h"
#include "quorum.h"
#include "sub.h"
#include "token.h"

#define LINGER_MS 2000      /* the thread stays this long after the last waiter */
#define RECONNECT_MS 1000   /* a lost subscriber connection is made again after this */
#define REFUSED_MS 60000    /* ... or this, when the node refused the subscription */

struct rl_waiter {
    const rl_keys *keys;    /* the lock call's, alive while it is registered */
    int fd;                 /* an eventfd: readable once told to try again */
    bool armed;             /* told once that its channels are subscribed */
    struct rl_waiter *next;
};

/* A channel (a key's name) and its state on each node. Thread-owned. */
typedef struct channel {
    char *name;
    uint64_t sent;          /* nodes it was subscribed on (bit per node) */
    bool wanted;
    char release[RL_TOKEN_LEN + 1];   /* the token of the release being told */
    uint64_t told_by;       /* the nodes that told it (bit per node) */
    struct channel *next;
} channel;

typedef struct subscriber {
    int fd;                 /* -1: not connected */
    bool connecting;
    rl_sub *sub;
    int64_t retry_at;
} subscriber;

struct rl_waker {
    pthread_mutex_t mu;
    rl_waiter *waiters, **waiters_end;   /* oldest first */
    bool running, joinable, stopping;
    pthread_t thread;
    int wake[2];
    char refused[256];      /* why a node refused the subscription, "" if none did */
    /* The thread's own: */
    subscriber *subs;
    size_t n_subs;
    channel *channels;
};

static void *waker_main(void *arg);

struct rl_waker *rl_waker_new(size_t n_nodes)
{
    struct rl_waker *w = calloc(1, sizeof *w);
    if (!w || !(w->subs = calloc(n_nodes, sizeof *w->subs))
        || pipe2(w->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        if (w)
            free(w->subs);
        free(w);
        return NULL;
    }
    w->n_subs = n_nodes;
    for (size_t i = 0; i < n_nodes; i++)
        w->subs[i].fd = -1;
    w->waiters_end = &w->waiters;
    pthread_mutex_init(&w->mu, NULL);
    return w;
}

static void poke(struct rl_waker *w)
{
    char byte = 1;
    ssize_t n = write(w->wake[1], &byte, 1);
    (void)n;   /* a full pipe wakes the thread as well */
}

static void close_sub(subscriber *s)
{
    if (s->fd >= 0)
        close(s->fd);
    rl_sub_free(s->sub);
    *s = (subscriber){ .fd = -1, .retry_at = s->retry_at };
}

/* The subscriber connections and channels, once the thread is gone. */
static void clear(struct rl_waker *w)
{
    for (size_t i = 0; i < w->n_subs; i++) {
        close_sub(&w->subs[i]);
        w->subs[i].retry_at = 0;
    }
    while (w->channels) {
        channel *c = w->channels;
        w->channels = c->next;
        free(c->name);
        free(c);
    }
}

void rl_waker_free(struct rl_waker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    bool join = w->running || w->joinable;
    pthread_mutex_unlock(&w->mu);
    poke(w);
    if (join)
        pthread_join(w->thread, NULL);
    clear(w);
    close(w->wake[0]);
    close(w->wake[1]);
    pthread_mutex_destroy(&w->mu);
    free(w->subs);
    free(w);
}

void rl_waker_forget(struct rl_waker *w)
{
    /* In a child after fork(): the parent's thread and waiters are not here. */
    pthread_mutex_init(&w->mu, NULL);
    w->waiters = NULL;
    w->waiters_end = &w->waiters;
    w->running = w->joinable = false;
    clear(w);
}

rl_waiter *rl_waker_await(redlock_ctx *ctx, const rl_keys *keys)
{
    struct rl_waker *w = rl_io_waker(ctx);
    rl_waiter *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    *r = (rl_waiter){ .keys = keys, .fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) };
    if (r->fd < 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_lock(&w->mu);
    bool ok = !w->stopping
        && (w->running || (w->running = rl_io_start_thread(&w->thread, &w->joinable,
                                                           waker_main, ctx) == 0));
    if (ok) {
        *w->waiters_end = r;
        w->waiters_end = &r->next;
    }
    pthread_mutex_unlock(&w->mu);
    if (!ok) {
        close(r->fd);
        free(r);
        return NULL;
    }
    poke(w);
    return r;
}

int rl_waiter_fd(const rl_waiter *r)
{
    return r->fd;
}

bool rl_waiter_told(rl_waiter *r)
{
    uint64_t n;
    return read(r->fd, &n, sizeof n) == (ssize_t)sizeof n;
}

void rl_waker_done(redlock_ctx *ctx, rl_waiter *r, char *note, size_t notelen)
{
    struct rl_waker *w = rl_io_waker(ctx);
    pthread_mutex_lock(&w->mu);
    for (rl_waiter **pp = &w->waiters; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            if (w->waiters_end == &r->next)
                w->waiters_end = pp;
            break;
        }
    }
    if (note)
        snprintf(note, notelen, "%s", w->refused);
    pthread_mutex_unlock(&w->mu);
    poke(w);
    close(r->fd);
    free(r);
}

/* ---- the thread ---- */

static void tell(rl_waiter *r)
{
    uint64_t one = 1;
    ssize_t n = write(r->fd, &one, sizeof one);
    (void)n;   /* an eventfd at its maximum is readable already */
}

static bool waits_for(const rl_waiter *r, const char *name)
{
    for (size_t i = 0; i < r->keys->n; i++)
        if (strcmp(r->keys->k[i], name) == 0)
            return true;
    return false;
}

static channel *find(struct rl_waker *w, const char *name)
{
    for (channel *c = w->channels; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* Marks the channels the waiters want, adding new ones (under the mutex).
 * Whether any is wanted. */
static bool want_channels(struct rl_waker *w)
{
    bool any = false;
    for (channel *c = w->channels; c; c = c->next)
        c->wanted = false;
    for (rl_waiter *r = w->waiters; r; r = r->next) {
        for (size_t i = 0; i < r->keys->n; i++) {
            channel *c = find(w, r->keys->k[i]);
            if (!c) {
                c = calloc(1, sizeof *c);
                if (c && !(c->name = strdup(r->keys->k[i]))) {
                    free(c);
                    c = NULL;
                }
                if (!c)
                    continue;   /* out of memory: that waiter has its timed retries */
                c->next = w->channels;
                w->channels = c;
            }
            c->wanted = any = true;
        }
    }
    return any;
}

/* Subscribes and unsubscribes node i's connection to match the channels. */
static void match(struct rl_waker *w, size_t i)
{
    subscriber *s = &w->subs[i];
    uint64_t bit = (uint64_t)1 << i;
    for (channel *c = w->channels; c; c = c->next) {
        bool sent = (c->sent & bit) != 0;
        if (c->wanted != sent && rl_sub_want(s->sub, c->name, c->wanted) == REDLOCK_OK)
            c->sent ^= bit;
    }
}

static void drop_unwanted(struct rl_waker *w)
{
    for (channel **pp = &w->channels; *pp;) {
        channel *c = *pp;
        if (c->wanted || c->sent) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        free(c->name);
        free(c);
    }
}

static void lost_sub(struct rl_waker *w, size_t i, int64_t retry_at)
{
    uint64_t bit = (uint64_t)1 << i;
    for (channel *c = w->channels; c; c = c->next)
        c->sent &= ~bit;
    close_sub(&w->subs[i]);
    w->subs[i].retry_at = retry_at;
}

typedef struct event_ctx {
    struct rl_waker *w;
    size_t node;
    size_t quorum;
    bool refused;
} event_ctx;

/* Whether a message of a release on c makes a waiter try again: once a
 * quorum of the nodes has told the release. */
static bool release_reached_quorum(channel *c, const event_ctx *e, const char *token)
{
    if (strncmp(c->release, token, RL_TOKEN_LEN) != 0) {
        snprintf(c->release, sizeof c->release, "%s", token);
        c->told_by = 0;
    }
    c->told_by |= (uint64_t)1 << e->node;
    return (size_t)__builtin_popcountll(c->told_by) >= e->quorum;
}

static void on_event(void *data, rl_sub_event event, const char *name, const char *text)
{
    event_ctx *e = data;
    struct rl_waker *w = e->w;
    if (event == RL_SUB_REFUSED) {
        pthread_mutex_lock(&w->mu);
        snprintf(w->refused, sizeof w->refused, "waiters are not woken by releases, only by "
                 "their timed retries: a node refused SUBSCRIBE (%.120s)", text);
        pthread_mutex_unlock(&w->mu);
        e->refused = true;
        return;
    }
    channel *c = find(w, name);
    if (!c || (event == RL_SUB_MESSAGE && !release_reached_quorum(c, e, text)))
        return;
    pthread_mutex_lock(&w->mu);
    for (rl_waiter *r = w->waiters; r; r = r->next) {
        if (!waits_for(r, name))
            continue;
        if (event == RL_SUB_MESSAGE) {
            tell(r);   /* the one that has waited longest */
            break;
        }
        if (!r->armed) {
            r->armed = true;
            tell(r);
        }
    }
    pthread_mutex_unlock(&w->mu);
}

/* Services node i's subscriber connection after poll. */
static void service(struct rl_waker *w, size_t i, size_t quorum, short revents, int64_t now)
{
    subscriber *s = &w->subs[i];
    if (s->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            lost_sub(w, i, now + RECONNECT_MS);
            return;
        }
        s->connecting = false;
    }
    const char *bytes;
    size_t n = rl_sub_output(s->sub, &bytes);
    if (n > 0) {
        ssize_t sent = send(s->fd, bytes, n, MSG_NOSIGNAL);
        if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            lost_sub(w, i, now + RECONNECT_MS);
            return;
        }
        if (sent > 0)
            rl_sub_wrote(s->sub, (size_t)sent);
    }
    if (!(revents & (POLLIN | POLLHUP | POLLERR)))
        return;
    char buf[4096];
    ssize_t got = recv(s->fd, buf, sizeof buf, 0);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    event_ctx e = { .w = w, .node = i, .quorum = quorum };
    if (got <= 0 || rl_sub_received(s->sub, buf, (size_t)got, on_event, &e) != REDLOCK_OK
        || e.refused)
        lost_sub(w, i, now + (e.refused ? REFUSED_MS : RECONNECT_MS));
}

/* Connects node i's subscriber when it is due. */
static void connect_sub(redlock_ctx *ctx, struct rl_waker *w, size_t i, int64_t now)
{
    subscriber *s = &w->subs[i];
    if (s->fd >= 0 || now < s->retry_at)
        return;
    char why[160];
    s->fd = rl_io_connect(&ctx->nodes[i].addr, why, sizeof why);
    if (s->fd < 0 || !(s->sub = rl_sub_new(&ctx->nodes[i].addr))) {
        lost_sub(w, i, now + RECONNECT_MS);
        return;
    }
    s->connecting = true;
}

static void *waker_main(void *arg)
{
    redlock_ctx *ctx = arg;
    struct rl_waker *w = rl_io_waker(ctx);
    struct pollfd pfd[1 + REDLOCK_MAX_NODES];
    size_t who[1 + REDLOCK_MAX_NODES];
    int64_t idle_until = 0;
    for (;;) {
        int64_t now = rl_now_ms();
        pthread_mutex_lock(&w->mu);
        bool any = want_channels(w);
        if (w->stopping || (!w->waiters && idle_until != 0 && now >= idle_until)) {
            pthread_mutex_unlock(&w->mu);
            clear(w);
            pthread_mutex_lock(&w->mu);
            if (!w->stopping && w->waiters) {
                /* A waiter came meanwhile: on, with new connections. */
                pthread_mutex_unlock(&w->mu);
                idle_until = 0;
                continue;
            }
            w->running = false;
            w->joinable = true;
            pthread_mutex_unlock(&w->mu);
            break;
        }
        pthread_mutex_unlock(&w->mu);
        idle_until = any ? 0 : idle_until ? idle_until : now + LINGER_MS;

        int64_t wake_at = any ? now + 1000 : idle_until;
        size_t k = 1;
        pfd[0] = (struct pollfd){ .fd = w->wake[0], .events = POLLIN };
        for (size_t i = 0; i < w->n_subs; i++) {
            subscriber *s = &w->subs[i];
            if (any)
                connect_sub(ctx, w, i, now);
            if (s->fd < 0) {
                if (any && s->retry_at < wake_at)
                    wake_at = s->retry_at;
                continue;
            }
            if (!s->connecting)
                match(w, i);
            const char *bytes;
            bool out = s->connecting || rl_sub_output(s->sub, &bytes) > 0;
            pfd[k] = (struct pollfd){ .fd = s->fd, .events = (short)(POLLIN | (out ? POLLOUT : 0)) };
            who[k++] = i;
        }
        drop_unwanted(w);
        int64_t timeout = wake_at - now;
        int r = poll(pfd, k, (int)(timeout < 0 ? 0 : timeout > 1000 ? 1000 : timeout));
        if (r <= 0)
            continue;
        if (pfd[0].revents) {
            char buf[64];
            while (read(w->wake[0], buf, sizeof buf) > 0) {
            }
        }
        now = rl_now_ms();
        for (size_t j = 1; j < k; j++)
            if (pfd[j].revents)
                service(w, who[j], rl_quorum(ctx->n_nodes), pfd[j].revents, now);
    }
    return NULL;
}
