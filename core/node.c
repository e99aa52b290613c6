/*
 * node.c - connections to one Redis node: made lazily, kept in a small pool
 * of idle connections, and not retried for a while after connecting failed
 * (exponential backoff), so a dead node costs nothing until it may be back.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdatomic.h>
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
    while (conn->pending_len > 0) {
        rl_pending p = rl_conn_pop(conn);
        if (p.owned)
            free(p.eval);
    }
    free(conn->pending);
    redisFree(conn->rc);
    free(conn);
}

bool rl_conn_push(rl_conn *conn, const char *eval, size_t len)
{
    if (conn->pending_len == conn->pending_cap) {
        int cap = conn->pending_cap ? conn->pending_cap * 2 : 4;
        rl_pending *grown = malloc((size_t)cap * sizeof *grown);
        if (!grown)
            return false;
        for (int i = 0; i < conn->pending_len; i++)
            grown[i] = conn->pending[(conn->pending_head + i) % conn->pending_cap];
        free(conn->pending);
        conn->pending = grown;
        conn->pending_cap = cap;
        conn->pending_head = 0;
    }
    int tail = (conn->pending_head + conn->pending_len) % conn->pending_cap;
    conn->pending[tail] = (rl_pending){ .eval = (char *)eval, .len = len, .owned = false };
    conn->pending_len++;
    return true;
}

rl_pending rl_conn_pop(rl_conn *conn)
{
    rl_pending p = conn->pending[conn->pending_head];
    conn->pending_head = (conn->pending_head + 1) % conn->pending_cap;
    conn->pending_len--;
    return p;
}

bool rl_conn_own_pending(rl_conn *conn)
{
    for (int i = 0; i < conn->pending_len; i++) {
        rl_pending *p = &conn->pending[(conn->pending_head + i) % conn->pending_cap];
        if (p->eval && !p->owned) {
            char *copy = malloc(p->len);
            if (!copy)
                return false;
            memcpy(copy, p->eval, p->len);
            p->eval = copy;
            p->owned = true;
        }
    }
    return true;
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
    /* Connections are the library's own: a program that forks and execs
     * must not hand them to the child. */
    fcntl(rc->fd, F_SETFD, FD_CLOEXEC);
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
    if (!broken && conn->pending_len <= MAX_STALE_REPLIES && conn->rc->err == 0) {
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

static void append_argv(rl_conn *conn, rl_hs_kind kind, int argc, const char **argv)
{
    redisAppendCommandArgv(conn->rc, argc, argv, NULL);
    conn->hs[conn->hs_total++] = (unsigned char)kind;
}

void rl_node_append_handshake(const rl_node *node, rl_conn *conn)
{
    const rl_node_addr *a = &node->addr;
    conn->hs_total = conn->hs_done = 0;
    if (a->password) {
        const char *argv[3] = { "AUTH", a->user ? a->user : a->password, a->password };
        append_argv(conn, RL_HS_REQUIRED, a->user ? 3 : 2, argv);
    }
    if (a->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", a->db);
        const char *argv[2] = { "SELECT", db };
        append_argv(conn, RL_HS_REQUIRED, 2, argv);
    }
    /* Loaded on every new connection, so that EVALSHA finds them even in
     * replies nobody waits for (after an early return, or a restart). */
    const rl_script *scripts[3] = { &rl_script_acquire_multi, &rl_script_release,
                                    &rl_script_extend };
    for (int i = 0; i < 3; i++) {
        const char *argv[3] = { "SCRIPT", "LOAD", scripts[i]->body };
        append_argv(conn, RL_HS_SCRIPT, 3, argv);
    }
    const char *info[2] = { "INFO", "server" };
    append_argv(conn, RL_HS_INFO, 2, info);
}

int rl_info_run_id(const char *info, size_t len, char out[41])
{
    static const char field[] = "run_id:";
    const size_t flen = sizeof field - 1;
    for (size_t i = 0; i + flen + 40 <= len; i++) {
        if ((i > 0 && info[i - 1] != '\n') || memcmp(info + i, field, flen) != 0)
            continue;
        const char *id = info + i + flen;
        for (int j = 0; j < 40; j++)
            if (!isxdigit((unsigned char)id[j]))
                return -1;
        if (i + flen + 40 < len && !isspace((unsigned char)id[40]))
            return -1;
        memcpy(out, id, 40);
        out[40] = '\0';
        return 0;
    }
    return -1;
}

/* A run_id other than the one seen before means the node restarted: it may
 * have lost keys it held, so the restart guard stops counting it for a while. */
static void saw_run_id(rl_node *node, const char *run_id)
{
    pthread_mutex_lock(&node->mu);
    if (node->run_id[0] != '\0' && strcmp(node->run_id, run_id) != 0)
        atomic_store(&node->restarted_at_ms, rl_now_ms());
    memcpy(node->run_id, run_id, sizeof node->run_id);
    pthread_mutex_unlock(&node->mu);
}

int rl_node_handshake_reply(rl_node *node, rl_conn *conn, const redisReply *reply, char *why,
                            size_t whylen)
{
    rl_hs_kind kind = (rl_hs_kind)conn->hs[conn->hs_done++];
    char run_id[41];
    if (reply->type == REDIS_REPLY_ERROR) {
        if (kind != RL_HS_REQUIRED)
            return REDLOCK_OK;
        snprintf(why, whylen, "connection setup refused: %.100s", reply->str);
        return rl_reply_error_code(reply->str);
    }
    if (kind == RL_HS_INFO && reply->type == REDIS_REPLY_STRING
        && rl_info_run_id(reply->str, reply->len, run_id) == 0)
        saw_run_id(node, run_id);
    return REDLOCK_OK;
}

int64_t rl_node_guard_left(rl_node *node, int64_t max_lease_ms, int64_t now)
{
    int64_t since = atomic_load_explicit(&node->restarted_at_ms, memory_order_relaxed);
    if (since == 0)
        return 0;
    int64_t left = since + max_lease_ms - now;
    return left > 0 ? left : 0;
}
