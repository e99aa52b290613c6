/*
 * block.c - the blocking driver: the 1.0 API as one driver of the engine.
 *
 * Each call makes an operation (op.h) and drives it to its end in one poll
 * loop over non-blocking sockets, each node's connection taken from the
 * node's pool or made anew, and given back afterwards: to the pool when
 * its stream is sound (nothing half-written; replies still owed are read by
 * the next user, and credited by the stream to whoever sent them), closed
 * otherwise, which settles what it still owed (engine.h).
 *
 * After fork() the child never uses a connection of its parent: pools made
 * before the fork are dropped (their sockets closed in the child only) on
 * the child's first call.
 *
 * A rediss:// node's socket carries TLS (tls.h): the engine's bytes go
 * through the session, and the connection is connected for the engine once
 * the handshake is done, within the node's connect deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "clock.h"
#include "driver.h"
#include "engine.h"
#include "node.h"
#include "op.h"
#include "owed.h"
#include "sockets.h"
#include "tls.h"

#define READ_CHUNK 16384

typedef struct pool {
    pthread_mutex_t mu;
    rl_conn **idle;
    size_t n;
} pool;

struct rl_driver {
    pool *pools;               /* one per node */
    size_t n_pools;
    _Atomic unsigned gen;      /* fork generation the pools belong to */
    pthread_mutex_t fork_mu;

    /* The service thread: delivers releases owed to nodes (a failed
     * attempt's, or one cut off with its connection) while the client lives,
     * without waiting for the application's next call. Started when
     * something is owed, it ends when nothing is. */
    pthread_mutex_t service_mu;
    pthread_cond_t service_cv;
    bool service_running;
    bool service_joinable;     /* a thread that ended is still to be joined */
    bool stopping;
    pthread_t service;

    struct rl_async *async;    /* the asynchronous calls (async.c) */
    struct rl_waker *waker;    /* lock calls woken by releases (wake.c) */

    /* TLS settings for rediss:// nodes, made from the options on first use
     * (tls_code: why they could not be, REDLOCK_OK while they may be). */
    pthread_mutex_t tls_mu;
    rl_tls_ctx *tls;
    _Atomic bool tls_fixed;    /* tls was made from the options: they cannot change */
    int tls_code;
    char tls_why[160];
};

#define SERVICE_PERIOD_MS 100

/* ---- the calling thread's interrupt check (redlock_set_interrupt_check) ---- */

#define INTERRUPT_CHECK_MS 100

static _Thread_local redlock_interrupt_fn interrupt_check;
static _Thread_local void *interrupt_data;

void redlock_set_interrupt_check(redlock_interrupt_fn check, void *data)
{
    interrupt_check = check;
    interrupt_data = data;
}

/* ---- fork ---- */

static _Atomic unsigned fork_generation;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void after_fork_in_child(void)
{
    atomic_fetch_add(&fork_generation, 1);
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

/* Drops a connection without any I/O: the child's copy of a parent's socket. */
static void drop_forked(rl_conn *c)
{
    rl_entry e;
    bool written;
    while (rl_conn_pop_lost(c, &e, &written) == 1)
        rl_cmd_unref(e.cmd);
    rl_tls_free(c->io_data, false);
    close((int)c->io);
    rl_conn_free(c);
}

/* In a child after fork(): forgets the parent's connections and owed work. */
void rl_io_check_fork(rl_client *ctx)
{
    struct rl_driver *d = rl_driver_of(ctx);
    unsigned now_gen = atomic_load_explicit(&fork_generation, memory_order_relaxed);
    if (atomic_load_explicit(&d->gen, memory_order_relaxed) == now_gen)
        return;
    pthread_mutex_lock(&d->fork_mu);
    if (atomic_load(&d->gen) != now_gen) {
        for (size_t i = 0; i < d->n_pools; i++) {
            pool *p = &d->pools[i];
            pthread_mutex_lock(&p->mu);
            for (size_t j = 0; j < p->n; j++)
                drop_forked(p->idle[j]);
            p->n = 0;
            pthread_mutex_unlock(&p->mu);
        }
        rl_owed_clear(ctx);
        rl_async_forget(d->async);
        rl_waker_forget(d->waker);
        /* The parent's service thread does not exist here. */
        pthread_mutex_init(&d->service_mu, NULL);
        pthread_cond_init(&d->service_cv, NULL);
        d->service_running = d->service_joinable = false;
        atomic_store(&d->gen, now_gen);
    }
    pthread_mutex_unlock(&d->fork_mu);
}

/* ---- pools ---- */

int rl_driver_new(redlock_ctx *ctx)
{
    pthread_once(&fork_once, register_fork_handler);
    struct rl_driver *d = calloc(1, sizeof *d);
    if (!d || !(d->pools = calloc(ctx->client.n_nodes, sizeof *d->pools))) {
        free(d);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    d->n_pools = ctx->client.n_nodes;
    if (!(d->async = rl_async_new()) || !(d->waker = rl_waker_new(ctx->client.n_nodes))) {
        rl_async_free(&ctx->client, d->async);
        free(d->pools);
        free(d);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < d->n_pools; i++)
        pthread_mutex_init(&d->pools[i].mu, NULL);
    pthread_mutex_init(&d->fork_mu, NULL);
    pthread_mutex_init(&d->service_mu, NULL);
    pthread_cond_init(&d->service_cv, NULL);
    pthread_mutex_init(&d->tls_mu, NULL);
    atomic_init(&d->gen, atomic_load(&fork_generation));
    ctx->driver = d;
    return REDLOCK_OK;
}

/* Closes a connection: what it still owed is settled first. */
static void conn_close(rl_conn *c, const char *why, int64_t now)
{
    bool open = c->state == RL_CONN_OPEN;   /* a TLS session ends with close_notify */
    if (c->state != RL_CONN_BROKEN || rl_conn_owed(c) > 0 || c->op)
        rl_engine_lost(c, REDLOCK_ENOQUORUM, why, now);
    rl_tls_free(c->io_data, open);
    if (c->io >= 0)
        close((int)c->io);
    rl_conn_free(c);
}

void rl_driver_free(redlock_ctx *ctx)
{
    struct rl_driver *d = ctx->driver;
    if (!d)
        return;
    rl_io_check_fork(&ctx->client);
    rl_async_free(&ctx->client, d->async);
    d->async = NULL;
    rl_waker_free(d->waker);
    d->waker = NULL;
    pthread_mutex_lock(&d->service_mu);
    d->stopping = true;
    bool join = d->service_running || d->service_joinable;
    pthread_cond_broadcast(&d->service_cv);
    pthread_mutex_unlock(&d->service_mu);
    if (join)
        pthread_join(d->service, NULL);
    pthread_mutex_destroy(&d->service_mu);
    pthread_cond_destroy(&d->service_cv);
    int64_t now = rl_now_ms();
    for (size_t i = 0; i < d->n_pools; i++) {
        pool *p = &d->pools[i];
        for (size_t j = 0; j < p->n; j++)
            conn_close(p->idle[j], "the client was closed", now);
        free(p->idle);
        pthread_mutex_destroy(&p->mu);
    }
    pthread_mutex_destroy(&d->fork_mu);
    rl_tls_ctx_free(d->tls);
    pthread_mutex_destroy(&d->tls_mu);
    free(d->pools);
    free(d);
    ctx->driver = NULL;
}

bool rl_driver_tls_fixed(const struct rl_driver *d)
{
    return atomic_load(&((struct rl_driver *)d)->tls_fixed);
}

struct rl_async *rl_io_async(rl_client *ctx)
{
    return rl_driver_of(ctx)->async;
}

struct rl_waker *rl_io_waker(rl_client *ctx)
{
    return rl_driver_of(ctx)->waker;
}

/* An idle connection to node: the last one given back, or when follows is
 * set (rl_op_follows), one that still owes the reply of that lock's acquire,
 * so that what follows it runs after it on the node. */
static rl_conn *pool_take(rl_client *ctx, size_t node, const char *follows)
{
    pool *p = &rl_driver_of(ctx)->pools[node];
    rl_conn *c = NULL;
    pthread_mutex_lock(&p->mu);
    size_t at = p->n;
    for (size_t i = p->n; follows && i-- > 0;) {
        if (rl_cmd_owed_on(p->idle[i], follows)) {
            at = i + 1;
            break;
        }
    }
    if (at > 0) {
        c = p->idle[at - 1];
        memmove(p->idle + at - 1, p->idle + at, (p->n - at) * sizeof *p->idle);
        p->n--;
    }
    pthread_mutex_unlock(&p->mu);
    return c;
}

/* Closes every idle connection of a node (one was found dead: it restarted). */
static void pool_discard(rl_client *ctx, size_t node, int64_t now)
{
    pool *p = &rl_driver_of(ctx)->pools[node];
    pthread_mutex_lock(&p->mu);
    rl_conn **idle = p->idle;
    size_t n = p->n;
    p->idle = NULL;
    p->n = 0;
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++)
        conn_close(idle[i], "the node's connections went stale", now);
    free(idle);
}

/* Gives a connection back after an operation: pooled when sound. */
static void pool_give(rl_client *ctx, rl_conn *c, int64_t now)
{
    pool *p = &rl_driver_of(ctx)->pools[c->node];
    int64_t size = ctx->opt.pool_size;
    if (rl_conn_poolable(c)) {
        pthread_mutex_lock(&p->mu);
        bool kept = false;
        if (p->n < (size_t)size) {
            rl_conn **grown = realloc(p->idle, (p->n + 1) * sizeof *grown);
            if (grown) {
                p->idle = grown;
                p->idle[p->n++] = c;
                kept = true;
            }
        }
        pthread_mutex_unlock(&p->mu);
        if (kept)
            return;
    }
    conn_close(c, rl_conn_unwritten(c) ? "closed with a command half-written"
                                       : "closed by the client", now);
}

/* ---- sockets ---- */

static int socket_for(int family)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

/* Starts a non-blocking connect: the fd, or -1 with why. IPv4 addresses are
 * tried before IPv6 ones, as hiredis does. */
int rl_io_connect(const rl_node_addr *a, char *why, size_t whylen)
{
    if (a->is_unix) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a->path);
        int fd = socket_for(AF_UNIX);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        snprintf(why, whylen, "cannot connect: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char port[16];
    snprintf(port, sizeof port, "%d", a->port);
    int families[2] = { AF_INET, AF_INET6 };
    int err = 0;
    snprintf(why, whylen, "cannot connect: no address for %s", a->host);
    for (int f = 0; f < 2; f++) {
        struct addrinfo hints = { .ai_family = families[f], .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        if ((err = getaddrinfo(a->host, port, &hints, &res)) != 0) {
            snprintf(why, whylen, "cannot connect: %s", gai_strerror(err));
            continue;
        }
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = socket_for(ai->ai_family);
            if (fd < 0)
                continue;
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
                freeaddrinfo(res);
                return fd;
            }
            snprintf(why, whylen, "cannot connect: %s", strerror(errno));
            close(fd);
        }
        freeaddrinfo(res);
    }
    return -1;
}

/* ---- TLS ---- */

int rl_io_tls_ready(rl_client *ctx, char *why, size_t whylen)
{
    struct rl_driver *d = rl_driver_of(ctx);
    pthread_mutex_lock(&d->tls_mu);
    int rc = d->tls_code;
    if (!d->tls && rc == REDLOCK_OK) {
        /* The options are read now: from here on they are fixed. */
        atomic_store(&d->tls_fixed, true);
        rc = rl_tls_ctx_new(&d->tls, &ctx->opt, d->tls_why, sizeof d->tls_why);
        /* A failure stays, as the options do, but for want of memory. */
        if (rc != REDLOCK_ENOMEM)
            d->tls_code = rc;
    }
    if (rc != REDLOCK_OK)
        snprintf(why, whylen, "%s", d->tls_why);
    pthread_mutex_unlock(&d->tls_mu);
    return rc;
}

int rl_io_tls_start(rl_client *ctx, size_t node, int fd, rl_tls **out, char *why,
                    size_t whylen)
{
    *out = NULL;
    int rc = rl_io_tls_ready(ctx, why, whylen);
    if (rc != REDLOCK_OK)
        return rc;
    const rl_node_addr *a = &ctx->nodes[node].addr;
    const char *name = ctx->opt.tls_server_name[0] ? ctx->opt.tls_server_name : a->host;
    /* The settings are made once and never changed: no lock is needed. */
    return rl_tls_new(out, rl_driver_of(ctx)->tls, fd, name, why, whylen);
}

/* Gives the operation a connection for every node it wants one for. */
static bool drain(rl_conn *c, int64_t now);

void rl_io_attach(rl_client *ctx, rl_op *op, int64_t now)
{
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        if (!rl_op_wants_conn(op, i))
            continue;
        rl_conn *c = pool_take(ctx, i, rl_op_follows(op));
        if (c) {
            /* The command is queued first, so that an unlock covers the
             * acquire still owed here before its late reply is read (read
             * first, that yes would be undone by a release of its own, ahead
             * of the unlock's, and the unlock would find the key gone).
             * Then what came while it was idle is read, and only what is
             * still missing past its deadline tells that the node is slow.
             * A connection found dead here is the op's to replace. */
            bool owed = rl_conn_owed(c) > 0;
            rl_op_attach(op, i, c, now);
            if (owed && !drain(c, now))
                rl_io_bury(ctx, c, now);
            else
                rl_op_overdue(op, c, now);
            continue;
        }
        char why[160];
        int code = rl_node_backoff(&ctx->nodes[i], now, why, sizeof why);
        if (code != REDLOCK_OK) {
            rl_op_no_conn(op, i, code, why, now);
            continue;
        }
        /* TLS that cannot be had (no OpenSSL 3, a bad file in the options)
         * is said before any connection is made. */
        if (ctx->nodes[i].addr.tls && (code = rl_io_tls_ready(ctx, why, sizeof why)) != 0) {
            rl_op_no_conn(op, i, code, why, now);
            continue;
        }
        if (!(c = rl_conn_new(ctx, i))) {
            rl_op_no_conn(op, i, REDLOCK_ENOMEM, "out of memory", now);
            continue;
        }
        int fd = rl_io_connect(&ctx->nodes[i].addr, why, sizeof why);
        if (fd < 0) {
            rl_node_connect_failed(&ctx->nodes[i], now);
            conn_close(c, why, now);
            rl_op_no_conn(op, i, REDLOCK_ENOQUORUM, why, now);
            continue;
        }
        c->io = fd;
        rl_op_attach(op, i, c, now);
    }
}

/* Writes what the connection may write now; false when the socket failed. */
bool rl_io_flush(rl_conn *c, int64_t now)
{
    const char *bytes;
    size_t len;
    while ((len = rl_conn_output(c, &bytes)) > 0) {
        int code;
        char why[160];
        ssize_t w = rl_sock_send((int)c->io, c->io_data, bytes, len, &code, why, sizeof why);
        if (w < 0) {
            rl_engine_lost(c, code, why, now);
            return false;
        }
        if (w == 0)
            return true;
        rl_engine_wrote(c, (size_t)w);
    }
    return true;
}

/* Reads what arrived; false when the connection ended or broke. A TLS
 * session is read until it would block: what it holds already does not
 * make its socket readable. */
static bool drain(rl_conn *c, int64_t now)
{
    char buf[READ_CHUNK];
    for (;;) {
        int code;
        char why[160];
        ssize_t r = rl_sock_recv((int)c->io, c->io_data, buf, sizeof buf, &code, why, sizeof why);
        if (r < 0) {
            rl_engine_lost(c, code, why, now);
            return false;
        }
        if (r == 0)
            return true;
        if (!rl_engine_received(c, buf, (size_t)r, now))
            return false;
        if (!c->io_data && (size_t)r < sizeof buf)
            return true;
    }
}

/* A connect completed (or failed); for a rediss:// node, the TLS handshake
 * then goes on until it is done. False when the connection broke. */
static bool connected(rl_conn *c, int64_t now)
{
    char why[160];
    rl_tls *tls = c->io_data;
    if (!tls) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt((int)c->io, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err != 0) {
            snprintf(why, sizeof why, "cannot connect: %s", strerror(err));
            rl_engine_lost(c, REDLOCK_ENOQUORUM, why, now);
            return false;
        }
        if (!c->ctx->nodes[c->node].addr.tls) {
            rl_engine_connected(c, now);
            return true;
        }
        int rc = rl_io_tls_start(c->ctx, c->node, (int)c->io, &tls, why, sizeof why);
        if (rc != REDLOCK_OK) {
            rl_engine_lost(c, rc, why, now);
            return false;
        }
        c->io_data = tls;
    }
    int r = rl_tls_handshake(tls, why, sizeof why);
    if (r < 0) {
        rl_engine_lost(c, r, why, now);
        return false;
    }
    if (r == 1)
        rl_engine_connected(c, now);
    return true;
}

/* Services one socket's events; false when its connection is gone. A TLS
 * session is written and read on any event: either way may be what it
 * waits for. */
bool rl_io_service(rl_conn *c, short revents, int64_t now)
{
    if (c->state == RL_CONN_CONNECTING) {
        if (!c->io_data && !(revents & (POLLOUT | POLLERR | POLLHUP)))
            return true;
        if (!connected(c, now))
            return false;
        if (c->state == RL_CONN_CONNECTING)
            return true;
    }
    bool tls = c->io_data != NULL;
    if ((tls || (revents & POLLOUT)) && !rl_io_flush(c, now))
        return false;
    if ((tls || (revents & (POLLIN | POLLERR | POLLHUP))) && !drain(c, now))
        return false;
    return c->state != RL_CONN_BROKEN;
}

short rl_io_events(const rl_conn *c)
{
    const rl_tls *tls = c->io_data;
    if (c->state == RL_CONN_CONNECTING)
        return tls ? (short)(POLLIN | rl_tls_events(tls)) : POLLOUT;
    const char *bytes;
    bool out = rl_conn_output(c, &bytes) > 0 || (tls && (rl_tls_events(tls) & POLLOUT));
    return (short)((out ? POLLOUT : 0) | (c->state == RL_CONN_OPEN ? POLLIN : 0));
}

/* Frees a connection the engine found broken, and if it was a pooled one,
 * the node's other idle connections with it (they are likely stale too). */
void rl_io_bury(rl_client *ctx, rl_conn *c, int64_t now)
{
    bool stale = c->uses > 1;
    size_t node = c->node;
    conn_close(c, c->why, now);
    if (stale)
        pool_discard(ctx, node, now);
}

size_t rl_io_watch(rl_client *ctx, rl_op *op, bool tail, int64_t now, struct pollfd *pfd,
                   rl_conn **who)
{
    size_t k = 0;
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, i);
        if (!c || (tail && (!rl_conn_sending(c) || rl_op_deadline(op, i) <= now)))
            continue;
        pfd[k] = (struct pollfd){ .fd = (int)c->io, .events = rl_io_events(c) };
        who[k++] = c;
    }
    return k;
}

/* One poll over the operation's connections (all of them, or when `tail`
 * only those still sending within their deadline), and their events. */
static void poll_once(rl_client *ctx, rl_op *op, bool tail, int64_t *now, int64_t *checked,
                      rl_waiter *waiter)
{
    struct pollfd pfd[REDLOCK_MAX_NODES + 1];
    rl_conn *who[REDLOCK_MAX_NODES];
    int64_t wake = tail ? INT64_MAX : rl_op_wake_at(op);
    /* What can be written now is written before waiting: the usual command
     * fits the socket, and no poll is spent on learning that. */
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, i);
        const char *bytes;
        if (c && rl_conn_output(c, &bytes) > 0 && !rl_io_flush(c, *now))
            rl_io_bury(ctx, c, *now);
    }
    size_t k = rl_io_watch(ctx, op, tail, *now, pfd, who);
    if (tail)
        wake = rl_op_tail_at(op, *now);
    if (tail && k == 0)
        return;
    int64_t cap = interrupt_check ? INTERRUPT_CHECK_MS : 1000;
    int64_t timeout = wake == INT64_MAX ? cap : wake - *now;
    timeout = timeout < 0 ? 0 : timeout > cap ? cap : timeout;
    /* A release of the keys waited for ends the pause (the last entry). */
    if (waiter)
        pfd[k] = (struct pollfd){ .fd = rl_waiter_fd(waiter), .events = POLLIN };
    int r = poll(pfd, k + (waiter != NULL), (int)timeout);
    int err = r < 0 ? errno : 0;
    *now = rl_now_ms();
    if (waiter && r > 0 && pfd[k].revents && rl_waiter_told(waiter)) {
        rl_op_wake(op, *now);
        r--;
    }
    if (interrupt_check && !tail && (err == EINTR || *now >= *checked + cap)) {
        *checked = *now;
        if (interrupt_check(interrupt_data) && rl_op_cancel(op, *now))
            return;
    }
    if (r < 0 && err != EINTR) {
        char why[160];
        snprintf(why, sizeof why, "poll: %s", strerror(err));
        for (size_t j = 0; j < k; j++) {
            rl_engine_lost(who[j], REDLOCK_ESYSTEM, why, *now);
            rl_io_bury(ctx, who[j], *now);
        }
        return;
    }
    for (size_t j = 0; r > 0 && j < k; j++)
        if (pfd[j].revents && !rl_io_service(who[j], pfd[j].revents, *now))
            rl_io_bury(ctx, who[j], *now);
    /* Replies may have queued more (a release, a script sent again). */
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, i);
        if (c && c->state == RL_CONN_OPEN && !rl_io_flush(c, *now))
            rl_io_bury(ctx, c, *now);
    }
}

/*
 * Runs op until it is done, then until its commands are written to every
 * node it can reach (within each node's deadline): the outcome is decided at
 * a quorum, but every node that can be reached gets the command. Returns the
 * status with this thread's message set.
 */
static int drive(rl_client *ctx, rl_op *op)
{
    int64_t now = rl_now_ms(), checked = now;
    rl_waiter *waiter = NULL;   /* once the lock was found held elsewhere */
    for (;;) {
        rl_io_attach(ctx, op, now);
        rl_op_step(op, now);
        if (rl_op_done(op))
            break;
        if (!waiter && rl_op_awaits_release(op))
            waiter = rl_waker_await(ctx, rl_op_keys(op));
        bool wants = false;
        for (size_t i = 0; i < ctx->n_nodes && !wants; i++)
            wants = rl_op_wants_conn(op, i);
        if (!wants)
            poll_once(ctx, op, false, &now, &checked, waiter);
    }
    char note[256] = "";
    if (waiter)
        rl_waker_done(ctx, waiter, note, sizeof note);
    while (rl_op_tail_at(op, now) != INT64_MAX)
        poll_once(ctx, op, true, &now, &checked, NULL);

    rl_op_note(op, note);
    int rc = rl_op_status(op);
    if (rc != REDLOCK_OK)
        rl_fail(rc, "%s", rl_op_message(op));
    rl_io_give_back(ctx, op, now);
    return rc;
}

void rl_io_give_back(rl_client *ctx, rl_op *op, int64_t now)
{
    rl_conn *c;
    while ((c = rl_op_take_conn(op)) != NULL)
        rl_io_give(ctx, c, now);
}

void rl_io_give(rl_client *ctx, rl_conn *c, int64_t now)
{
    if (c->state == RL_CONN_OPEN && !rl_io_flush(c, now)) {
        rl_io_bury(ctx, c, now);
        return;
    }
    pool_give(ctx, c, now);
}

/* ---- the service thread ---- */

static void *service_main(void *arg)
{
    rl_client *ctx = arg;
    struct rl_driver *d = rl_driver_of(ctx);
    pthread_mutex_lock(&d->service_mu);
    while (!d->stopping && rl_owed_any(ctx, SIZE_MAX)) {
        pthread_mutex_unlock(&d->service_mu);
        rl_op *op;
        if (rl_op_deliver(&op, ctx, rl_now_ms()) == REDLOCK_OK) {
            drive(ctx, op);
            rl_op_free(op);
        }
        pthread_mutex_lock(&d->service_mu);
        if (d->stopping || !rl_owed_any(ctx, SIZE_MAX))
            break;
        /* Nodes that did not answer are tried again a little later. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += SERVICE_PERIOD_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&d->service_cv, &d->service_mu, &until);
    }
    d->service_running = false;
    d->service_joinable = true;
    pthread_mutex_unlock(&d->service_mu);
    return NULL;
}

int rl_io_start_thread(pthread_t *thread, bool *joinable, void *(*main)(void *), void *arg)
{
    if (*joinable) {
        pthread_join(*thread, NULL);
        *joinable = false;
    }
    /* Signals are the application's: the thread blocks them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(thread, NULL, main, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return err;
}

/* Starts the service thread when releases are owed and it is not running. */
void rl_io_service_wake(rl_client *ctx)
{
    struct rl_driver *d = rl_driver_of(ctx);
    if (!rl_owed_any(ctx, SIZE_MAX))
        return;
    pthread_mutex_lock(&d->service_mu);
    if (!d->service_running && !d->stopping)
        d->service_running = rl_io_start_thread(&d->service, &d->service_joinable,
                                                service_main, ctx) == 0;
    pthread_mutex_unlock(&d->service_mu);
}

/* ---- the 1.0 API ---- */

static int lock_resources(redlock_handle **out, rl_client *ctx, const char *const *names,
                          size_t n, int64_t ttl_ms, int64_t wait_ms)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    rl_io_check_fork(ctx);
    rl_op *op;
    int rc = rl_op_lock(&op, ctx, names, n, ttl_ms, wait_ms, rl_now_ms());
    if (rc != REDLOCK_OK)
        return rc;
    rc = drive(ctx, op);
    *out = rl_op_take_handle(op);
    rl_op_free(op);
    rl_io_service_wake(ctx);
    return rc;
}

int redlock_lock(redlock_handle **out, redlock_ctx *ctx, const char *resource, int64_t ttl_ms,
                 int64_t wait_ms)
{
    if (!resource) {
        if (out)
            *out = NULL;
        return rl_fail(REDLOCK_EINVAL, "resource is NULL");
    }
    return lock_resources(out, rl_client_of(ctx), &resource, 1, ttl_ms, wait_ms);
}

int redlock_lock_multi(redlock_handle **out, redlock_ctx *ctx, const char *const *resources,
                       size_t n_resources, int64_t ttl_ms, int64_t wait_ms)
{
    if (!resources || n_resources == 0 || n_resources > REDLOCK_MAX_RESOURCES) {
        if (out)
            *out = NULL;
        return rl_fail(REDLOCK_EINVAL, !resources ? "resources is NULL"
                       : "n_resources must be from 1 to %d", REDLOCK_MAX_RESOURCES);
    }
    return lock_resources(out, rl_client_of(ctx), resources, n_resources, ttl_ms, wait_ms);
}

/* Runs a query or a forced unlock of resource, and gives its answer
 * (rl_op_answer: not held, and what a forced unlock deleted, when it
 * failed); the callers' defaults stay when no operation could be made. */
static int query(rl_client *ctx, const char *resource, bool force, bool *held,
                 int64_t *ttl_ms, size_t *deleted)
{
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!resource)
        return rl_fail(REDLOCK_EINVAL, "resource is NULL");
    rl_io_check_fork(ctx);
    rl_op *op;
    int rc = rl_op_query(&op, ctx, resource, force, rl_now_ms());
    if (rc != REDLOCK_OK)
        return rc;
    rc = drive(ctx, op);
    *held = rl_op_answer(op, ttl_ms, deleted);
    rl_op_free(op);
    rl_io_service_wake(ctx);
    return rc;
}

int redlock_inspect(redlock_ctx *ctx, const char *resource, int *locked, int64_t *ttl_ms)
{
    bool held = false;
    int64_t ttl = -2;
    int rc = query(rl_client_of(ctx), resource, false, &held, &ttl, NULL);
    if (locked)
        *locked = held;
    if (ttl_ms)
        *ttl_ms = ttl;
    return rc;
}

int redlock_force_unlock(redlock_ctx *ctx, const char *resource, int *deleted)
{
    bool held;
    size_t n = 0;
    int rc = query(rl_client_of(ctx), resource, true, &held, NULL, &n);
    if (deleted)
        *deleted = (int)n;
    return rc;
}

int redlock_ctx_ping(redlock_ctx *pair, int *answered)
{
    rl_client *ctx = rl_client_of(pair);
    rl_clear_error();
    if (answered)
        *answered = 0;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    rl_io_check_fork(ctx);
    rl_op *op;
    int rc = rl_op_ping(&op, ctx, rl_now_ms());
    if (rc != REDLOCK_OK)
        return rc;
    rc = drive(ctx, op);
    size_t n = 0;
    rl_op_answer(op, NULL, &n);
    if (answered)
        *answered = (int)n;
    rl_op_free(op);
    rl_io_service_wake(ctx);
    return rc;
}

/* Runs an extend or an unlock of h. */
static int handle_call(redlock_handle *h, int64_t ttl_ms, bool extend)
{
    rl_clear_error();
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    rl_io_check_fork(h->ctx);
    if (!extend && h->driver_data)
        rl_async_unwatch(h, false);   /* no extension after the release */
    rl_op *op;
    int64_t now = rl_now_ms();
    int rc = extend ? rl_op_extend(&op, h, ttl_ms, now) : rl_op_unlock(&op, h, now);
    if (rc != REDLOCK_OK)
        return rc;
    rc = drive(h->ctx, op);
    rl_op_free(op);
    rl_io_service_wake(h->ctx);
    return rc;
}

int redlock_extend(redlock_handle *h, int64_t ttl_ms)
{
    return handle_call(h, ttl_ms, true);
}

int redlock_unlock(redlock_handle *h)
{
    return handle_call(h, 0, false);
}

void redlock_handle_free(redlock_handle *h)
{
    if (h && h->driver_data && !rl_async_unwatch(h, true))
        return;   /* freed once what runs on the client's thread ends */
    rl_handle_free(h);
}

int64_t redlock_handle_validity_ms(const redlock_handle *h)
{
    if (!h || !h->held || h->lost)
        return 0;
    return h->expires_at - rl_now_ms();
}

const char *redlock_handle_token(const redlock_handle *h)
{
    return h ? h->token : NULL;
}

int redlock_handle_fence(const redlock_handle *h, size_t index, int64_t *fence)
{
    if (!h || !fence)
        return rl_fail(REDLOCK_EINVAL, "redlock_handle_fence: %s is NULL", h ? "fence" : "h");
    if (index >= h->keys->n)
        return rl_fail(REDLOCK_EINVAL, "redlock_handle_fence: index %zu is out of range (the "
                       "lock has %zu resource%s)", index, h->keys->n, h->keys->n == 1 ? "" : "s");
    *fence = h->fences ? h->fences[index] : 0;
    return REDLOCK_OK;
}
