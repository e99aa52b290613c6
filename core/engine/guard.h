/*
 * guard.h - the restart guard's plain form, on a node that runs no scripts
 * (plain.h): what scripts/guard.lua decides, from the facts that one
 * MULTI GET INFO server, INFO replication, TIME EXEC read. conn.c queues
 * that transaction and the plain SET of the record it asks for: what it
 * decides is the script's; two clients writing at once write what the same
 * facts say.
 */
#ifndef RL_GUARD_H
#define RL_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "node.h"

struct redisReply;

/* The EXEC's reply on node (record: at least 96 bytes): the milliseconds
 * the node's votes do not count for, as guard.lua returns, and in record
 * the value to SET at the guard's key when the script would write one
 * ("" when none); -1 when the reply is no answer (a refusal, a reply not of
 * that shape). */
int64_t rl_guard_plain(rl_node *node, const struct redisReply *exec, char *record, size_t len);

#endif /* RL_GUARD_H */
