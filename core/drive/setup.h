/*
 * setup.h - the blocking driver's state of a client (driver.h), made with
 * the client (api/ctx.c), freed with it, and reset after fork().
 */
#ifndef RL_SETUP_H
#define RL_SETUP_H

#include "driver.h"

/* The driver's state of a new client, and freeing it (the client's
 * threads are stopped and joined; its idle connections closed). */
int rl_driver_new(redlock_ctx *ctx);
void rl_driver_free(redlock_ctx *ctx);

/* In a child after fork(): forgets the parent's connections, owed work and
 * threads. Every call of the driver's makes this check first. */
void rl_driver_check_fork(rl_client *ctx);

#endif /* RL_SETUP_H */
