/*
 * client.h - the engine's client: its nodes, its options, what it has
 * learnt that outlives one operation, the releases it still owes the nodes
 * (owed.h) and its event hook (log.h). Its nodes point back to it: their
 * changes are its events. Made and freed by engine.h; a driver
 * keeps its own state beside it, never in it.
 */
#ifndef RL_CLIENT_H
#define RL_CLIENT_H

#include <stdatomic.h>

#include "log.h"
#include "options.h"

struct rl_node;
struct rl_owed_list;
struct rl_records;

/* The source of random bytes: tokens and retry jitter. 0 on success. */
typedef int (*rl_random_fn)(void *data, void *buf, size_t n);

typedef struct rl_client {
    struct rl_node *nodes;          /* n_nodes of them (node.h) */
    size_t n_nodes;
    rl_options opt;
    _Atomic int64_t max_lease_ms;   /* the largest lease taken or extended so far */
    rl_random_fn random;
    void *random_data;

    struct rl_owed_list *owed;      /* releases owed (owed.h) */
    struct rl_records *records;     /* what the nodes record of each other (records.h) */

    /* The event hook (redlock_ctx_set_log, log.h): fn NULL is off. */
    rl_log log;

    /* Each node's connections (conn.h): how many are open (pooled, in use,
     * connecting), and until when the node counts as busy (the client could
     * not keep up with it: node_busy, redlock_ctx_health). */
    struct rl_node_conns {
        _Atomic int open;
        _Atomic int paused;          /* held by locks pausing between attempts (round.c) */
        _Atomic int64_t busy_until;
    } conns[REDLOCK_MAX_NODES];
} rl_client;

/* Raises ctx->max_lease_ms to ttl_ms if it is larger. */
static inline void rl_ctx_note_lease(rl_client *ctx, int64_t ttl_ms)
{
    int64_t seen = atomic_load_explicit(&ctx->max_lease_ms, memory_order_relaxed);
    while (ttl_ms > seen
           && !atomic_compare_exchange_weak_explicit(&ctx->max_lease_ms, &seen, ttl_ms,
                                                     memory_order_relaxed, memory_order_relaxed))
        ;
}

static inline int64_t rl_ctx_max_lease(const rl_client *ctx)
{
    return atomic_load_explicit(&((rl_client *)ctx)->max_lease_ms, memory_order_relaxed);
}

#endif /* RL_CLIENT_H */
