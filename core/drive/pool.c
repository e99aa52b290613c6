/*
 * pool.c - each node's pool of idle connections (see pool.h): a connection
 * is given back to it after an operation when its stream is sound (nothing
 * half-written; replies still owed are read by the next user, and credited
 * by the stream to whoever sent them), and closed otherwise, which settles
 * what it still owed (engine.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "driver.h"
#include "engine.h"
#include "op.h"
#include "pool.h"

typedef struct rl_pool {
    pthread_mutex_t mu;
    rl_conn **idle;
    size_t n;
} pool;

int rl_pools_new(struct rl_driver *d, size_t n)
{
    if (!(d->pools = calloc(n, sizeof *d->pools)))
        return REDLOCK_ENOMEM;
    d->n_pools = n;
    for (size_t i = 0; i < d->n_pools; i++)
        pthread_mutex_init(&d->pools[i].mu, NULL);
    return REDLOCK_OK;
}

void rl_pools_free(struct rl_driver *d, int64_t now)
{
    for (size_t i = 0; i < d->n_pools; i++) {
        pool *p = &d->pools[i];
        for (size_t j = 0; j < p->n; j++)
            rl_pool_close(p->idle[j], "the client was closed", now);
        free(p->idle);
        pthread_mutex_destroy(&p->mu);
    }
    free(d->pools);
    d->pools = NULL;
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

void rl_pools_forget(struct rl_driver *d)
{
    for (size_t i = 0; i < d->n_pools; i++) {
        pool *p = &d->pools[i];
        pthread_mutex_lock(&p->mu);
        for (size_t j = 0; j < p->n; j++)
            drop_forked(p->idle[j]);
        p->n = 0;
        pthread_mutex_unlock(&p->mu);
    }
}

/* Closes a connection: what it still owed is settled first. */
void rl_pool_close(rl_conn *c, const char *why, int64_t now)
{
    bool open = c->state == RL_CONN_OPEN;   /* a TLS session ends with close_notify */
    if (c->state != RL_CONN_BROKEN || rl_conn_owed(c) > 0 || c->op)
        rl_engine_lost(c, REDLOCK_ENOQUORUM, why, now);
    rl_tls_free(c->io_data, open);
    if (c->io >= 0)
        close((int)c->io);
    rl_conn_free(c);
}

/* Whether c still owes the reply of the acquire of token, newest first:
 * that acquire was sent by the last calls, and a stalled node's long
 * stream is not read through on every unlock. */
static bool owes_acquire(rl_conn *c, const char *token)
{
    for (size_t i = rl_conn_owed(c); i-- > 0;) {
        const rl_entry *e = rl_conn_entry(c, i);
        if (e->kind == RL_ENTRY_CMD && e->cmd->kind == RL_CMD_ACQUIRE
            && e->cmd->token[0] == token[0] && strcmp(e->cmd->token, token) == 0)
            return true;
    }
    return false;
}

/* An idle connection to node that fits op (rl_op_fits: on a Cluster node,
 * one to the master of its slot): the last one given back, or when follows
 * is set (rl_op_follows), one that still owes the reply of that lock's
 * acquire, so that what follows it runs after it on the node. */
rl_conn *rl_pool_take(rl_client *ctx, const rl_op *op, size_t node, const char *follows)
{
    pool *p = &rl_driver_of(ctx)->pools[node];
    rl_conn *c = NULL;
    pthread_mutex_lock(&p->mu);
    size_t at = 0;
    for (size_t i = p->n; i-- > 0;) {
        if (!rl_op_fits(op, node, p->idle[i]))
            continue;
        if (at == 0)
            at = i + 1;
        if (!follows || owes_acquire(p->idle[i], follows)) {
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
    if (c && !rl_conn_poolable(c)) {
        /* A Sentinel node's master moved since it was pooled. */
        rl_pool_close(c, "the node's master moved", rl_now_ms());
        return rl_pool_take(ctx, op, node, follows);
    }
    return c;
}

/* Closes every idle connection of a node (one was found dead: it restarted). */
void rl_pool_discard(rl_client *ctx, size_t node, int64_t now)
{
    pool *p = &rl_driver_of(ctx)->pools[node];
    pthread_mutex_lock(&p->mu);
    rl_conn **idle = p->idle;
    size_t n = p->n;
    p->idle = NULL;
    p->n = 0;
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++)
        rl_pool_close(idle[i], "the node's connections went stale", now);
    free(idle);
}

/* Gives a connection back after an operation: pooled when sound. */
void rl_pool_give(rl_client *ctx, rl_conn *c, int64_t now)
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
    rl_pool_close(c, rl_conn_unwritten(c) ? "closed with a command half-written"
                                       : "closed by the client", now);
}
