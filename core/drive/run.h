/*
 * run.h - one operation run to its end on the calling thread (run.c).
 */
#ifndef RL_RUN_H
#define RL_RUN_H

#include "op.h"

struct rl_client;

/*
 * Runs op until it is done, then until its commands are written to every
 * node it can reach (within each node's deadline): the outcome is decided at
 * a quorum, but every node that can be reached gets the command. Returns the
 * status with this thread's message set; op's connections are given back.
 */
int rl_run(struct rl_client *ctx, rl_op *op);

#endif /* RL_RUN_H */
