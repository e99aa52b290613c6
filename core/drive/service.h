/*
 * service.h - the service thread (service.c): releases owed to nodes
 * delivered while the client lives, between the application's calls.
 */
#ifndef RL_SERVICE_H
#define RL_SERVICE_H

#include "client.h"

struct rl_driver;

/* Starts the service thread when releases are owed and it is not running,
 * or wakes it when it runs (a release owed anew may be due sooner). */
void rl_service_wake(rl_client *ctx);

/* Its state in a new driver; its end (waiting for the thread), when the
 * client is freed; and in a child after fork(), where the thread is not. */
void rl_service_init(struct rl_driver *d);
void rl_service_stop(struct rl_driver *d);
void rl_service_forget(struct rl_driver *d);

#endif /* RL_SERVICE_H */
