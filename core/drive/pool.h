/*
 * pool.h - each node's pool of idle connections (pool.c), in the blocking
 * driver's state (driver.h).
 */
#ifndef RL_POOL_H
#define RL_POOL_H

#include "cmd.h"

struct rl_client;
struct rl_driver;

/* The pools of a new driver, one per node (REDLOCK_ENOMEM), and their end:
 * idle connections closed. */
int rl_pools_new(struct rl_driver *d, size_t n);
void rl_pools_free(struct rl_driver *d, int64_t now);
/* In a child after fork(): the parent's connections dropped, no I/O. */
void rl_pools_forget(struct rl_driver *d);

/* An idle connection to node: the last one given back, or when follows is
 * set (rl_op_follows), one that still owes the reply of that lock's acquire,
 * so that what follows it runs after it on the node. NULL when none. */
rl_conn *rl_pool_take(struct rl_client *ctx, const struct redlock_op *op, size_t node,
                      const char *follows);
/* Gives a connection back after an operation: pooled when sound, or closed. */
void rl_pool_give(struct rl_client *ctx, rl_conn *c, int64_t now);
/* Closes every idle connection of a node (one was found dead: it restarted). */
void rl_pool_discard(struct rl_client *ctx, size_t node, int64_t now);
/* Closes a connection: what it still owed is settled first (engine.h). */
void rl_pool_close(rl_conn *c, const char *why, int64_t now);

#endif /* RL_POOL_H */
