/*
 * wake.c - waiters woken by releases, in the blocking driver: one thread
 * per client, while some lock call of the client waits for a lock held
 * elsewhere, does what the engine's wake-ups (wakes.h) say: it connects,
 * writes, reads and closes one subscriber connection per node, and tells
 * the waiters named. A waiter's eventfd keeps one wake-up however many
 * come. The waiters' timed retries stay: messages only shorten a wait. A
 * rediss:// node's subscriber is connected once its TLS handshake is done,
 * as the lock calls' connections are.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "driver.h"
#include "io.h"
#include "node.h"
#include "tls.h"
#include "wake.h"
#include "wakes.h"
#include "worker.h"

/* The most reads of one subscriber's socket in one turn (4 KB each). */
#define SUB_READS 64

/* A waiter is registered with the wake-ups under its address. */
struct rl_waiter {
    int fd;                 /* an eventfd: readable once told to try again */
};

/* The thread's side of a node's subscriber connection. */
typedef struct subscriber {
    int fd;                 /* -1: not connected */
    rl_target to;           /* the server it subscribed on (a Sentinel node's master) */
    bool connecting;        /* the connect, or the TLS handshake, goes on */
    rl_tls *tls;            /* a rediss:// node's session, once connected */
} subscriber;

struct rl_waker {
    pthread_mutex_t mu;
    const rl_client *client;
    rl_wakes *wakes;        /* the engine's state machine; under mu */
    rl_worker worker;       /* the waker thread */
    int wake[2];
    /* The thread's own: */
    subscriber subs[REDLOCK_MAX_NODES];
};

static void *waker_main(void *arg);

struct rl_waker *rl_waker_new(const rl_client *c)
{
    struct rl_waker *w = calloc(1, sizeof *w);
    if (!w || !(w->wakes = rl_wakes_new(c)) || pipe2(w->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        if (w)
            rl_wakes_free(w->wakes);
        free(w);
        return NULL;
    }
    w->client = c;
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++)
        w->subs[i].fd = -1;
    pthread_mutex_init(&w->mu, NULL);
    return w;
}

static void poke(struct rl_waker *w)
{
    char byte = 1;
    ssize_t n = write(w->wake[1], &byte, 1);
    (void)n;   /* a full pipe wakes the thread as well */
}

/* Closes a subscriber connection; without notify, with no I/O (a child's
 * copy after fork(), a connection that failed). */
static void close_sub(subscriber *s, bool notify)
{
    rl_tls_free(s->tls, notify);
    if (s->fd >= 0)
        close(s->fd);
    *s = (subscriber){ .fd = -1 };
}

void rl_waker_free(struct rl_waker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    bool join = rl_worker_stop(&w->worker);
    pthread_mutex_unlock(&w->mu);
    poke(w);
    if (join)
        rl_worker_join(&w->worker);
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++)
        close_sub(&w->subs[i], true);
    close(w->wake[0]);
    close(w->wake[1]);
    pthread_mutex_destroy(&w->mu);
    rl_wakes_free(w->wakes);
    free(w);
}

void rl_waker_forget(struct rl_waker *w)
{
    /* In a child after fork(): the parent's thread and waiters are not here
     * (what they had may have been half-changed: it is left, not freed). */
    pthread_mutex_init(&w->mu, NULL);
    w->wakes = rl_wakes_new(w->client);
    rl_worker_forget(&w->worker);
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++)
        close_sub(&w->subs[i], false);
}

static uint64_t id_of(const rl_waiter *r)
{
    return (uint64_t)(uintptr_t)r;
}

rl_waiter *rl_waker_await(rl_client *ctx, const rl_keys *keys)
{
    struct rl_waker *w = rl_io_waker(ctx);
    rl_waiter *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->fd < 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_lock(&w->mu);
    bool ok = w->wakes && !w->worker.stopping
        && rl_wakes_add(w->wakes, id_of(r), keys) == REDLOCK_OK;
    if (ok && rl_worker_start(&w->worker, waker_main, ctx) != 0) {
        rl_wakes_remove(w->wakes, id_of(r), rl_now_ms());
        ok = false;
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

void rl_waker_done(rl_client *ctx, rl_waiter *r, char *note, size_t notelen)
{
    struct rl_waker *w = rl_io_waker(ctx);
    pthread_mutex_lock(&w->mu);
    rl_wakes_remove(w->wakes, id_of(r), rl_now_ms());
    if (note)
        snprintf(note, notelen, "%s", rl_wakes_note(w->wakes));
    pthread_mutex_unlock(&w->mu);
    poke(w);
    close(r->fd);
    free(r);
}

/* ---- the thread ---- */

/* Tells the waiters the engine says to wake (under the mutex). */
static void tell_woken(struct rl_waker *w)
{
    uint64_t id;
    while ((id = rl_wakes_next(w->wakes)) != 0) {
        const rl_waiter *r = (const rl_waiter *)(uintptr_t)id;
        uint64_t one = 1;
        ssize_t n = write(r->fd, &one, sizeof one);
        (void)n;   /* an eventfd at its maximum is readable already */
    }
}

/* Node i's subscriber connection failed: closed here, told to the engine. */
static void lost_sub(struct rl_waker *w, size_t i, int64_t now)
{
    close_sub(&w->subs[i], false);
    pthread_mutex_lock(&w->mu);
    rl_wakes_lost(w->wakes, i, now);
    pthread_mutex_unlock(&w->mu);
}

/* The connect of node i's subscriber completed, and for a rediss:// node
 * its TLS handshake goes on; false when it failed. */
static bool sub_connected(rl_client *ctx, struct rl_waker *w, size_t i)
{
    subscriber *s = &w->subs[i];
    char why[160];
    if (!s->tls) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
            return false;
        if (ctx->nodes[i].addr.tls
            && rl_io_tls_start(ctx, s->to.host, s->fd, &s->tls, why, sizeof why) != REDLOCK_OK)
            return false;
    }
    int r = s->tls ? rl_tls_handshake(s->tls, why, sizeof why) : 1;
    s->connecting = r == 0;
    if (r > 0) {
        pthread_mutex_lock(&w->mu);
        rl_wakes_connected(w->wakes, i);
        pthread_mutex_unlock(&w->mu);
    }
    return r >= 0;
}

/* The poll events of node i's subscriber connection (under the mutex). */
static short sub_events(const struct rl_waker *w, size_t i)
{
    const subscriber *s = &w->subs[i];
    const char *bytes;
    bool out = (s->connecting && !s->tls)
               || (!s->connecting && rl_wakes_output(w->wakes, i, &bytes) > 0)
               || (s->tls && (rl_tls_events(s->tls) & POLLOUT));
    return (short)(POLLIN | (out ? POLLOUT : 0));
}

/* Writes what node i's subscriber has to write; false when it failed. */
static bool send_sub(struct rl_waker *w, size_t i)
{
    subscriber *s = &w->subs[i];
    int code;
    char why[160];
    const char *bytes = "";
    pthread_mutex_lock(&w->mu);
    size_t n = rl_wakes_output(w->wakes, i, &bytes);
    ssize_t sent = n > 0 || s->tls ? rl_sock_send(s->fd, s->tls, bytes, n, &code, why, sizeof why)
                                   : 0;
    if (sent > 0)
        rl_wakes_wrote(w->wakes, i, (size_t)sent);
    pthread_mutex_unlock(&w->mu);
    return sent >= 0;
}

/* Services node i's subscriber connection after poll. A TLS session is
 * read until it would block: what it holds does not make the socket
 * readable. */
static void service(rl_client *ctx, struct rl_waker *w, size_t i, short revents, int64_t now)
{
    subscriber *s = &w->subs[i];
    if (s->connecting) {
        if (!sub_connected(ctx, w, i)) {
            lost_sub(w, i, now);
            return;
        }
        if (s->connecting)
            return;
    }
    if (!send_sub(w, i)) {
        lost_sub(w, i, now);
        return;
    }
    if (!s->tls && !(revents & (POLLIN | POLLHUP | POLLERR)))
        return;
    /* A node that keeps the socket full is read again on the next turn,
     * after the other subscribers: this loop has an end. */
    int code;
    char why[160], buf[4096];
    for (int reads = 0; reads < SUB_READS; reads++) {
        ssize_t got = rl_sock_recv(s->fd, s->tls, buf, sizeof buf, &code, why, sizeof why);
        if (got == 0)
            return;
        if (got < 0) {
            lost_sub(w, i, now);
            return;
        }
        pthread_mutex_lock(&w->mu);
        int rc = rl_wakes_received(w->wakes, i, buf, (size_t)got, now);
        tell_woken(w);
        pthread_mutex_unlock(&w->mu);
        if (rc != REDLOCK_OK)
            return;   /* the engine says to close it: the next turn does */
    }
}

/* Connects node i's subscriber (the engine says to). */
static void connect_sub(rl_client *ctx, struct rl_waker *w, size_t i, int64_t now)
{
    subscriber *s = &w->subs[i];
    char why[160];
    close_sub(s, false);
    if (ctx->nodes[i].addr.tls && rl_io_tls_ready(ctx, why, sizeof why) != REDLOCK_OK) {
        lost_sub(w, i, now);
        return;
    }
    /* On a Sentinel node, its master; while no sentinel has named it yet,
     * nothing (a waiter still tries again after retry_delay_ms). */
    rl_node_target(&ctx->nodes[i], &s->to);
    if (s->to.sentinel || (s->fd = rl_io_connect(&ctx->nodes[i].addr, &s->to, why, sizeof why)) < 0) {
        lost_sub(w, i, now);
        return;
    }
    s->connecting = true;
}

/* Whether any subscriber connection is open or being made. */
static bool any_sub(const struct rl_waker *w)
{
    for (size_t i = 0; i < w->client->n_nodes; i++)
        if (w->subs[i].fd >= 0)
            return true;
    return false;
}

static void *waker_main(void *arg)
{
    rl_client *ctx = arg;
    struct rl_waker *w = rl_io_waker(ctx);
    struct pollfd pfd[1 + REDLOCK_MAX_NODES];
    size_t who[1 + REDLOCK_MAX_NODES];
    for (;;) {
        int64_t now = rl_now_ms(), at;
        pthread_mutex_lock(&w->mu);
        int todo = rl_wakes_drive(w->wakes, now, &at);
        for (int i; (i = rl_wakes_next_close(w->wakes)) >= 0;)
            close_sub(&w->subs[i], true);
        bool due[REDLOCK_MAX_NODES] = { false };
        for (int i; (i = rl_wakes_next_connect(w->wakes)) >= 0;)
            due[i] = true;
        if (todo & RL_WAKES_WAKE)
            tell_woken(w);
        if (w->worker.stopping || (rl_wakes_idle(w->wakes) && !any_sub(w))) {
            /* Nobody waits any more (or the client ends): under the mutex,
             * so no waiter comes before the thread is marked gone. */
            for (size_t i = 0; i < w->client->n_nodes; i++) {
                if (w->subs[i].fd >= 0 || due[i])
                    rl_wakes_lost(w->wakes, i, now);
                close_sub(&w->subs[i], true);
            }
            rl_worker_ended(&w->worker);
            pthread_mutex_unlock(&w->mu);
            break;
        }
        pthread_mutex_unlock(&w->mu);

        /* Connects outside the mutex: a host name may take a while to resolve. */
        for (size_t i = 0; i < w->client->n_nodes; i++)
            if (due[i])
                connect_sub(ctx, w, i, now);
        size_t k = 1;
        pfd[0] = (struct pollfd){ .fd = w->wake[0], .events = POLLIN };
        pthread_mutex_lock(&w->mu);
        for (size_t i = 0; i < w->client->n_nodes; i++) {
            if (w->subs[i].fd < 0)
                continue;
            pfd[k] = (struct pollfd){ .fd = w->subs[i].fd, .events = sub_events(w, i) };
            who[k++] = i;
        }
        pthread_mutex_unlock(&w->mu);
        int64_t timeout = at - now;
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
                service(ctx, w, who[j], pfd[j].revents, now);
    }
    return NULL;
}
