/*
 * ctx.h - the client (redlock_ctx): its nodes, its options, what it has
 * learnt that outlives one operation, and the work it still owes the nodes
 * (releases to deliver once a node answers again). The engine's state; the
 * blocking driver keeps its own (connection pools) behind `driver`.
 */
#ifndef RL_CTX_H
#define RL_CTX_H

#include <pthread.h>
#include <stdatomic.h>

#include "node.h"
#include "options.h"

struct rl_cmd;
struct rl_driver;

/* A release still owed to a node: a command, and the node to send it to. */
typedef struct rl_owed {
    struct rl_cmd *cmd;
    size_t node;
    int64_t not_before;       /* sent no sooner: what it undoes lands first */
    int64_t until;            /* given up after this (the keys expired anyway) */
    struct rl_owed *next;
} rl_owed;

/* The source of random bytes: tokens and retry jitter. 0 on success. */
typedef int (*rl_random_fn)(void *data, void *buf, size_t n);

struct redlock_ctx {
    rl_node *nodes;
    size_t n_nodes;
    rl_options opt;
    _Atomic int64_t max_lease_ms;   /* the largest lease taken or extended so far */
    rl_random_fn random;
    void *random_data;

    pthread_mutex_t owed_mu;        /* guards owed and n_owed */
    rl_owed *owed;                  /* releases owed, oldest first */
    _Atomic size_t n_owed;          /* read without the lock: is anything owed? */

    struct rl_driver *driver;       /* the blocking driver's state, or NULL */
    _Atomic bool tls_fixed;         /* the tls_* options were read: they cannot change */

    /* The event hook (redlock_ctx_set_log, log.h): fn NULL is off. */
    _Atomic(redlock_log_fn) log_fn;
    void *_Atomic log_data;
    _Atomic int log_min;
};

/* Raises ctx->max_lease_ms to ttl_ms if it is larger. */
void rl_ctx_note_lease(struct redlock_ctx *ctx, int64_t ttl_ms);
int64_t rl_ctx_max_lease(const struct redlock_ctx *ctx);

#endif /* RL_CTX_H */
