/*
 * send.h - the form a command takes on a connection, and what goes beside
 * it: a script (EVALSHA, EVAL, or the library's FCALL), a native command
 * where the node has it (SET NX GET, SET IFEQ, DELIFEQ), or on a node that
 * runs no scripts its plain form (plain.h), and REDLOCK_EUNSUPPORTED when it
 * has none. Above cmd.h (the bytes of each form) and plain.h (the
 * transactions): the one place that chooses between them.
 */
#ifndef RL_SEND_H
#define RL_SEND_H

#include "cmd.h"
#include "conn.h"

struct redisReply;

/* Queues cmd on c, in the form the node takes (an acquire of one key on
 * Redis 7.0 and later: SET NX GET, and when fenced the INCR of its counter
 * behind it; a plain lock's extend or release of one key where the node
 * has them: SET IFEQ, DELIFEQ; FCALL when the connection calls the
 * library; EVALSHA otherwise, or EVAL for the rare commands; on a node
 * without scripts its plain form). REDLOCK_OK, or a code when it could not
 * be queued (REDLOCK_EUNSUPPORTED: it needs a script the node cannot run). */
int rl_cmd_send(rl_cmd *cmd, rl_conn *c);

/* Queues cmd again after such a reply, a new entry of the stream: as the
 * function when the connection calls the library (after a refused FCALL it
 * no longer does), else as the full script (EVAL); on a node found since to
 * run no scripts, its plain form. REDLOCK_OK or a code. */
int rl_cmd_send_again(rl_cmd *cmd, rl_conn *c, int form, const struct redisReply *reply);

#endif /* RL_SEND_H */
