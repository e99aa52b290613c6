/*
 * driver.h - the blocking driver (block.c): the 1.0 API (redlock_lock,
 * redlock_extend, redlock_unlock, ...) as one driver of the engine, with its
 * own non-blocking sockets, one poll loop per call, the monotonic clock, and
 * a pool of connections per node.
 */
#ifndef RL_DRIVER_H
#define RL_DRIVER_H

struct redlock_ctx;

/* The driver's state of a new client (pools), and freeing it. */
int rl_driver_new(struct redlock_ctx *ctx);
void rl_driver_free(struct redlock_ctx *ctx);

/* The engine's part of a client alone (ctx.c), for drivers other than this. */
int rl_ctx_new(struct redlock_ctx **out, const char *const *node_uris, size_t n_nodes);

#endif /* RL_DRIVER_H */
