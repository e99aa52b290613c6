/*
 * io.c - the blocking driver's sockets: connections to nodes made
 * (non-blocking connects, TLS settings and sessions), attached to
 * operations, written, read and given back to their node's pool (pool.h).
 * Shared by the calls run on the caller's thread (run.h), the service
 * thread (service.h), the client's thread of asynchronous calls (async.h)
 * and the waker (wake.h).
 *
 * A rediss:// node's socket carries TLS (tls.h): the engine's bytes go
 * through the session, and the connection is connected for the engine once
 * the handshake is done, within the node's connect deadline.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "driver.h"
#include "engine.h"
#include "io.h"
#include "node.h"
#include "pool.h"

#define READ_CHUNK 16384
/* While a socket stays full, the clock is read every this many reads. */
#define CLOCK_READS 8
/* However late the replies owed, a drain may read this long. */
#define READ_MIN_MS 10

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
int rl_io_connect(const rl_node_addr *a, const rl_target *t, char *why, size_t whylen)
{
    if (!t->host) {
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
    snprintf(port, sizeof port, "%d", t->port);
    int families[2] = { AF_INET, AF_INET6 };
    int err = 0;
    snprintf(why, whylen, "cannot connect: no address for %s", t->host);
    for (int f = 0; f < 2; f++) {
        struct addrinfo hints = { .ai_family = families[f], .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        if ((err = getaddrinfo(t->host, port, &hints, &res)) != 0) {
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

int rl_io_tls_start(rl_client *ctx, const char *host, int fd, rl_tls **out, char *why,
                    size_t whylen)
{
    *out = NULL;
    int rc = rl_io_tls_ready(ctx, why, whylen);
    if (rc != REDLOCK_OK)
        return rc;
    const char *name = ctx->opt.tls_server_name[0] ? ctx->opt.tls_server_name : host;
    /* The settings are made once and never changed: no lock is needed. */
    return rl_tls_new(out, rl_driver_of(ctx)->tls, fd, name, why, whylen);
}

void rl_driver_fix_tls(struct rl_driver *d)
{
    atomic_store(&d->tls_fixed, true);
}

bool rl_driver_tls_fixed(const struct rl_driver *d)
{
    return atomic_load(&((struct rl_driver *)d)->tls_fixed);
}

/* Gives the operation a connection for every node it wants one for. */
static bool drain(rl_conn *c, int64_t now);

void rl_io_attach(rl_client *ctx, rl_op *op, int64_t now)
{
    rl_op_lend(op);   /* its spare connections are taken back (rl_io_give_spare) */
    for (int n = rl_op_next_wanted(op, 0); n >= 0; n = rl_op_next_wanted(op, (size_t)n + 1)) {
        size_t i = (size_t)n;
        rl_conn *c = rl_op_wants_fresh(op, i) ? NULL
                   : rl_pool_take(ctx, op, i, rl_op_follows(op));
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
        /* TLS that cannot be had (no OpenSSL 3, a bad file in the options)
         * is said before any connection is made. */
        char why[160];
        int code;
        if (ctx->nodes[i].addr.tls && (code = rl_io_tls_ready(ctx, why, sizeof why)) != 0) {
            rl_op_no_conn(op, i, code, why, now);
            continue;
        }
        /* None while the node backs off after failed connects: the engine
         * told the operation so. */
        if (!(c = rl_op_connect(op, i, now)))
            continue;
        int fd = rl_io_connect(&ctx->nodes[i].addr, &c->to, why, sizeof why);
        if (fd < 0) {
            /* Lost before it was connected: the node backs off, and the
             * operation counts it failed (engine.h). */
            rl_engine_lost(c, REDLOCK_ENOQUORUM, why, now);
            rl_io_bury(ctx, c, now);
            continue;
        }
        c->io = fd;
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
        rl_engine_wrote(c, (size_t)w, now);
    }
    return true;
}

/* Until when a drain that began at `since` may read: the deadline of the
 * oldest reply owed that has one (a node deadline from then when none
 * has), and no earlier than READ_MIN_MS from then. Asked only of a socket
 * that stays full. */
static int64_t read_until(const rl_conn *c, int64_t since)
{
    int64_t until = since + c->ctx->opt.node_timeout_ms;
    for (size_t i = 0; i < rl_conn_owed(c); i++) {
        const rl_entry *e = rl_conn_entry((rl_conn *)c, i);
        if (e->deadline > 0) {
            until = e->deadline < until ? e->deadline : until;
            break;
        }
    }
    return until > since + READ_MIN_MS ? until : since + READ_MIN_MS;
}

/* Reads what arrived; false when the connection ended or broke. A TLS
 * session is read until it would block: what it holds already does not
 * make its socket readable. A node that keeps the socket full (a stream
 * with no end) is read no longer than read_until says: the clock is read
 * as the reads go on, and the driver's loop then finds the deadline gone. */
static bool drain(rl_conn *c, int64_t now)
{
    char buf[READ_CHUNK];
    int64_t since = now, until = INT64_MIN;
    for (unsigned reads = 1;; reads++) {
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
        if (reads % CLOCK_READS != 0)
            continue;
        if (until == INT64_MIN)
            until = read_until(c, since);
        if ((now = rl_now_ms()) >= until)
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
        int rc = rl_io_tls_start(c->ctx, c->to.host, (int)c->io, &tls, why, sizeof why);
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
    rl_pool_close(c, c->why, now);
    if (stale)
        rl_pool_discard(ctx, node, now);
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

void rl_io_give_back(rl_client *ctx, rl_op *op, int64_t now)
{
    rl_conn *c;
    while ((c = rl_op_take_conn(op)) != NULL)
        rl_io_give(ctx, c, now);
}

void rl_io_give_spare(rl_client *ctx, rl_op *op, int64_t now)
{
    rl_conn *c;
    while ((c = rl_op_spare_conn(op)) != NULL)
        rl_io_give(ctx, c, now);
}

void rl_io_give(rl_client *ctx, rl_conn *c, int64_t now)
{
    if (c->state == RL_CONN_OPEN && !rl_io_flush(c, now)) {
        rl_io_bury(ctx, c, now);
        return;
    }
    rl_pool_give(ctx, c, now);
}
