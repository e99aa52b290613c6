/*
 * plain.h - plain locks on a node that runs no scripts: Valkey 9.1 with its
 * Lua engine unloaded, or an ACL that refuses EVAL, EVALSHA and FCALL. The
 * scripts' work is done by plain commands there, with the same answers.
 *
 * The rules, in one place:
 *   - Found once per node by the connection that reads the reply saying so
 *     (conn.h's rl_conn_no_scripting): "Could not find scripting engine"
 *     (any script, SCRIPT LOAD included), or NOPERM naming 'eval' or
 *     'evalsha' on a connection refused FCALL too (or a server before Redis
 *     7.0): the user may run no script at all (not a missing library). A
 *     NOSCRIPT is sent again as EVAL first, which then says it. The node
 *     keeps it until its run_id changes. send.h sends each command in the
 *     form chosen here from then on.
 *   - What has a plain form (rl_plain_form): a plain lock of one key. Its
 *     acquire is SET NX GET PX (Redis 7.0+; SET NX PX before), fenced with
 *     the INCR of its counter behind it, as on any node; its extend SET
 *     IFEQ and its release DELIFEQ where the node has them (Valkey), else a
 *     transaction; the renewal of one kept lock its extend; the fence's
 *     write-back and the restart guard a transaction each; a query MULTI
 *     GET PTTL EXEC. Everything else needs a script (a multi-lock, a
 *     read-write lock, a semaphore, a fair lock, a forced unlock): refused
 *     with REDLOCK_EUNSUPPORTED, naming scripting and the node.
 *   - A transaction is two round trips on one connection. First WATCH key
 *     and GET key (a fence's: MGET key counter), whose reply decides: not
 *     ours (another token, no key) or an error (a key of another type): an
 *     UNWATCH, and that is the answer, as the script's 0 or error. Ours:
 *     MULTI, PEXPIRE key lease (an extend) or DEL key (a release) or SET
 *     counter fence (a fence), and EXEC, whose reply is the answer. EXEC's
 *     nil (the key changed between the read and EXEC): the first step again.
 *   - One connection, many transactions: an EXEC, UNWATCH or DISCARD forgets
 *     every key a WATCH before it watched, whoever's. A read is acted on only
 *     when none was queued since its WATCH (rl_entry's unwatched against the
 *     connection's); otherwise its first step goes again. The oldest
 *     transaction of a connection always goes through, so each does in turn.
 *   - A WATCH or MULTI refused (an ACL without them) makes the answer a
 *     failure with the refusal (txn_error), never a write: the least ACL of
 *     a node without scripts grants them (docs/servers.md).
 *   - The restart guard goes in plain commands too: guard.h.
 */
#ifndef RL_PLAIN_H
#define RL_PLAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "proto.h"

struct redisReply;
struct rl_cmd;

/* The form cmd takes on c's node without scripts, or RL_FORMS when it has
 * none (it needs a script). */
rl_form rl_plain_form(const struct rl_cmd *cmd, rl_conn *c);
/* Queues a transaction's first step (RL_FORM_READ) or a query's MULTI GET
 * PTTL EXEC (RL_FORM_EXEC), from cmd's cached bytes when cache is set.
 * REDLOCK_OK or a code. */
int rl_plain_send(struct rl_cmd *cmd, rl_conn *c, rl_form form, bool cache);
/* The reply to cmd's entry e (RL_FORM_READ or RL_FORM_EXEC) on c: 1 when
 * it queued the transaction's next step (no answer yet); 0 with *out the
 * answer, as the script's would have been classified. */
int rl_plain_reply(struct rl_cmd *cmd, rl_conn *c, const rl_entry *e,
                   const struct redisReply *reply, rl_result *out);
/* A failure for cmd on c's node, where it has no plain form: code
 * REDLOCK_EUNSUPPORTED, naming scripting, the node and the reply that said
 * so. Also the thread's message (rl_fail). */
void rl_plain_unsupported(const struct rl_cmd *cmd, rl_conn *c, rl_result *out);
/* Whether r, the answer to cmd sent as a script on c, is a refusal of a node
 * without scripts: then it becomes rl_plain_unsupported's. */
void rl_plain_refused(const struct rl_cmd *cmd, rl_conn *c, int form, rl_result *r);

#endif /* RL_PLAIN_H */
