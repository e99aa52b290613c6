/*
 * node.c - connections to one Redis node: made lazily, kept in a small pool
 * of idle connections, and not retried for a while after connecting failed
 * (exponential backoff), so a dead node costs nothing until it may be back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "internal.h"

#define BACKOFF_FIRST_MS 25
#define BACKOFF_MAX_MS   1000
#define MAX_STALE_REPLIES 32

int rl_node_init(rl_node *node, const char *uri)
{
    memset(node, 0, sizeof *node);
    int rc = rl_uri_parse(&node->addr, uri);
    if (rc != REDLOCK_OK)
        return rc;
    pthread_mutex_init(&node->mu, NULL);
    return REDLOCK_OK;
}

static void conn_close(rl_conn *conn)
{
    redisFree(conn->rc);
    free(conn);
}

void rl_node_destroy(rl_node *node)
{
    rl_conn *c = node->idle;
    while (c) {
        rl_conn *next = c->next;
        conn_close(c);
        c = next;
    }
    node->idle = NULL;
    pthread_mutex_destroy(&node->mu);
    rl_uri_free(&node->addr);
}

rl_conn *rl_node_acquire(rl_node *node, char *err, size_t errlen)
{
    pthread_mutex_lock(&node->mu);
    rl_conn *conn = node->idle;
    if (conn) {
        node->idle = conn->next;
        node->n_idle--;
        pthread_mutex_unlock(&node->mu);
        conn->next = NULL;
        conn->reused = true;
        return conn;
    }
    int64_t wait = node->down_until_ms - rl_now_ms();
    pthread_mutex_unlock(&node->mu);
    if (wait > 0) {
        snprintf(err, errlen, "unreachable, next connection attempt in %lld ms", (long long)wait);
        return NULL;
    }

    redisContext *rc = node->addr.is_unix ? redisConnectUnixNonBlock(node->addr.path)
                                          : redisConnectNonBlock(node->addr.host, node->addr.port);
    if (!rc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (rc->err) {
        snprintf(err, errlen, "cannot connect: %s", rc->errstr);
        redisFree(rc);
        rl_node_connect_failed(node);
        return NULL;
    }
    conn = calloc(1, sizeof *conn);
    if (!conn) {
        redisFree(rc);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    conn->rc = rc;
    conn->fresh = true;
    return conn;
}

void rl_node_release(rl_node *node, rl_conn *conn, bool broken, int pool_size)
{
    if (!conn)
        return;
    if (!broken && conn->stale_replies <= MAX_STALE_REPLIES && conn->rc->err == 0) {
        pthread_mutex_lock(&node->mu);
        if (node->n_idle < pool_size) {
            conn->next = node->idle;
            node->idle = conn;
            node->n_idle++;
            conn = NULL;
        }
        pthread_mutex_unlock(&node->mu);
    }
    if (conn)
        conn_close(conn);
}

void rl_node_discard_idle(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    rl_conn *c = node->idle;
    node->idle = NULL;
    node->n_idle = 0;
    pthread_mutex_unlock(&node->mu);
    while (c) {
        rl_conn *next = c->next;
        conn_close(c);
        c = next;
    }
}

void rl_node_connect_failed(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    node->backoff_ms = node->backoff_ms ? node->backoff_ms * 2 : BACKOFF_FIRST_MS;
    if (node->backoff_ms > BACKOFF_MAX_MS)
        node->backoff_ms = BACKOFF_MAX_MS;
    node->down_until_ms = rl_now_ms() + node->backoff_ms;
    pthread_mutex_unlock(&node->mu);
}

void rl_node_connect_ok(rl_node *node)
{
    pthread_mutex_lock(&node->mu);
    node->backoff_ms = 0;
    node->down_until_ms = 0;
    pthread_mutex_unlock(&node->mu);
}

int rl_node_append_handshake(const rl_node *node, rl_conn *conn)
{
    int n = 0;
    const rl_node_addr *a = &node->addr;
    if (a->password) {
        const char *argv[3] = { "AUTH", a->user ? a->user : a->password, a->password };
        int argc = a->user ? 3 : 2;
        redisAppendCommandArgv(conn->rc, argc, argv, NULL);
        n++;
    }
    if (a->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", a->db);
        const char *argv[2] = { "SELECT", db };
        redisAppendCommandArgv(conn->rc, 2, argv, NULL);
        n++;
    }
    return n;
}
