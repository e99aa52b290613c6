/*
 * owed.h - what a command leaves owed once its operation has moved on, and
 * the releases the client owes the nodes. Afterwards the rules are:
 *   - release: must take effect. A reply that says it did not run for the
 *     way it was sent (NOSCRIPT: the node lost its scripts; a refused FCALL:
 *     no library there; rl_conn_unrun) sends it again in a way that runs on
 *     the same connection, behind whatever is queued; a
 *     connection lost before its reply makes it owed to that node: it goes
 *     out on the next connection to the node.
 *   - acquire: when its lock was given up (cmd->undo: the lock was released
 *     while this reply was still owed), a late yes is released on the same
 *     connection, and a loss after it was written makes a release owed to
 *     the node; unless a release of its token was queued behind it on the
 *     same connection (the entry is covered), which undoes it in order.
 *     Such a reply (NOSCRIPT...) means it never ran. A fenced acquire of one key may be two
 *     entries, its SET and the INCR of its counter (RL_FORM_COUNT): the rules
 *     go by the SET's reply, and a late INCR's reply means nothing.
 *   - extend: a reply that says it did not run for the way it was sent is
 *     sent again as a release is (late, it extends a key only where it
 *     still holds the token, for longer than the handle counts: the safe
 *     side); anything else, nothing: the handle already assumes the shorter
 *     lease where a node did not answer.
 *   - inspect, force: nothing; a query changes nothing, and a forced unlock
 *     is its caller's to repeat.
 *   - fence: nothing; it only ever raises counters, which is harmless late.
 *   - ping: nothing.
 *
 * A release owed to a node waits one node deadline (what it undoes lands
 * first; none when the node answered it already), goes out on the next
 * connection to the node, and is given up once the keys it releases have
 * expired anyway.
 */
#ifndef RL_OWED_H
#define RL_OWED_H

#include "cmd.h"

struct redisReply;
struct rl_client;

/* The client's list of releases owed (client.h holds it). */
typedef struct rl_owed_list rl_owed_list;
rl_owed_list *rl_owed_list_new(void);
void rl_owed_list_free(rl_owed_list *l);

/* A reply to an entry that no operation waits for (see above). */
void rl_cmd_late_reply(const rl_entry *e, rl_conn *c, const struct redisReply *reply,
                       int64_t now);
/* An entry lost with its connection to node; written: it may have run. */
void rl_cmd_late_lost(const rl_entry *e, struct rl_client *ctx, size_t node, bool written,
                      int64_t now);

/* A release of keys/token owed to node: sent on the next connection to it,
 * one node deadline from now, or at once when what it undoes landed (the
 * node answered it: a Cluster node's parts taken before a part said no). */
void rl_owed_add(struct rl_client *ctx, size_t node, rl_keys *keys, const char *token,
                 bool landed, int64_t now);
/* Queues on c every release owed to its node (dropping those past their time). */
void rl_owed_send(struct rl_client *ctx, rl_conn *c, int64_t now);
/* When the first release owed (to node, or to any node when node is
 * SIZE_MAX) may be sent; INT64_MAX when none is owed. */
int64_t rl_owed_next(struct rl_client *ctx, size_t node);
/* A Cluster node's: the slot of the first release owed to it, which a
 * delivery's connection goes to (-1: none, or not a Cluster). */
int rl_owed_slot(struct rl_client *ctx, size_t node);
/* Whether any release is owed (to node, or to any node when node is SIZE_MAX). */
bool rl_owed_any(struct rl_client *ctx, size_t node);
/* Whether releases owed to node may be sent at now (the first one's time
 * came): a delivery asks for a connection to it, and they are marked tried. */
bool rl_owed_try(struct rl_client *ctx, size_t node, int64_t now);
/* When the releases owed are next to be delivered (rl_op_deliver): the
 * first time one of them may be sent, and its node be connected to (its
 * connect back-off), and no sooner than RL_OWED_RETRY_MS after a delivery
 * last tried it; INT64_MAX when none is owed. Those past their time are
 * dropped first. */
int64_t rl_owed_at(struct rl_client *ctx, int64_t now);
void rl_owed_clear(struct rl_client *ctx);

#endif /* RL_OWED_H */
