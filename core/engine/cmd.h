/*
 * cmd.h - the commands of the algorithm (acquire, extend, release), what
 * their replies mean, and what happens to a command whose operation has
 * moved on: its late replies and its loss with a connection.
 *
 * A command is shared by the entries it has on each node's connection, and
 * refcounted. While an operation waits for it, cmd->op names the operation
 * and replies go there (op.c); afterwards the rules below apply:
 *   - release: must take effect. NOSCRIPT (the node lost its scripts) sends
 *     it again as EVAL on the same connection, behind whatever is queued; a
 *     connection lost before its reply makes it owed to that node: it goes
 *     out on the next connection to the node.
 *   - acquire: when its lock was given up (cmd->undo: the lock was released
 *     while this reply was still owed), a late yes is released on the same
 *     connection, and a loss after it was written makes a release owed to
 *     the node; unless a release of its token was queued behind it on the
 *     same connection (the entry is covered), which undoes it in order.
 *     NOSCRIPT means it never ran. A fenced acquire of one key may be two
 *     entries, its SET and the INCR of its counter (RL_FORM_COUNT): the rules
 *     go by the SET's reply, and a late INCR's reply means nothing.
 *   - extend: nothing; the handle already assumes the shorter lease.
 *   - inspect, force: nothing; a query changes nothing, and a forced unlock
 *     is its caller's to repeat.
 *   - fence: nothing; it only ever raises counters, which is harmless late.
 *   - ping: nothing.
 */
#ifndef RL_CMD_H
#define RL_CMD_H

#include <stdatomic.h>

#include "conn.h"
#include "proto.h"
#include "token.h"

struct redisReply;
struct redlock_ctx;
struct redlock_op;

typedef enum rl_cmd_kind {
    RL_CMD_ACQUIRE,
    RL_CMD_EXTEND,
    RL_CMD_RELEASE,
    RL_CMD_INSPECT,     /* a query: read the key and its PTTL */
    RL_CMD_FORCE,       /* delete the key whatever its token */
    RL_CMD_FENCE,       /* raise the keys' fencing counters, if the keys are ours */
    RL_CMD_PING         /* PING: does the node answer */
} rl_cmd_kind;

/* How a command was written on one connection. */
typedef enum rl_form {
    RL_FORM_SET,        /* acquire one key: SET key token NX GET PX ttl (Redis 7.0+) */
    RL_FORM_EVALSHA,    /* the command's script by digest */
    RL_FORM_EVAL,       /* the command's script in full (after NOSCRIPT) */
    RL_FORM_COUNT,      /* a fenced acquire of one key on Redis 7.0+: INCR of its counter,
                         * queued right behind its SET (an entry of its own) */
    RL_FORMS
} rl_form;

/* Keys (key_prefix + name), shared by a handle and its commands. */
typedef struct rl_keys {
    _Atomic int refs;
    size_t n;
    char **k;
} rl_keys;

rl_keys *rl_keys_new(size_t n);    /* n NULL keys, one reference */
rl_keys *rl_keys_ref(rl_keys *keys);
void rl_keys_unref(rl_keys *keys);

typedef struct rl_cmd {
    _Atomic int refs;
    rl_cmd_kind kind;
    rl_keys *keys;
    char token[RL_TOKEN_LEN + 1];
    int64_t ttl_ms;                /* acquire, extend */
    bool fenced;                   /* acquire: counts on the keys' fencing counters */
    int64_t *fences;               /* fence: the value per key (owned) */
    struct redlock_op *op;              /* waits for its replies, or NULL */
    _Atomic bool undo;             /* acquire: its lock was given up */
    bool cacheable;                /* made by an op, sent only from its thread while it runs */
    rl_bytes cached[RL_FORMS];     /* cacheable: formatted bytes per rl_form */
} rl_cmd;

rl_cmd *rl_cmd_new(rl_cmd_kind kind, rl_keys *keys, const char *token, int64_t ttl_ms);
rl_cmd *rl_cmd_ref(rl_cmd *cmd);
void rl_cmd_unref(rl_cmd *cmd);

/* Queues cmd on c, in the form the node takes (an acquire of one key on
 * Redis 7.0 and later: SET NX GET, and when fenced the INCR of its counter
 * behind it; EVALSHA otherwise); `eval` forces the full script.
 * REDLOCK_OK, or a code when it could not be queued. */
int rl_cmd_send(rl_cmd *cmd, rl_conn *c, bool eval);

/* What a reply to cmd (sent in `form`) says. */
void rl_cmd_classify(const rl_cmd *cmd, int form, const struct redisReply *reply, rl_result *out);
/* A fenced acquire's yes (classified so): its counters, one per key, into out. */
void rl_cmd_fences(const rl_cmd *cmd, const struct redisReply *reply, int64_t *out);
/* A fenced acquire of one key sent as SET and INCR (RL_FORM_SET, then
 * RL_FORM_COUNT): io is what the SET's reply said; a yes takes the INCR's
 * reply as its fence, or becomes a failure when that is not a count. */
void rl_cmd_count(const struct redisReply *reply, rl_result *io, int64_t *fence);

/* Whether c still owes the reply of an acquire of token. A release or an
 * extension of that lock belongs on c, behind it: on another connection the
 * node could run it first, and the late acquire would then leave its key. */
bool rl_cmd_owed_on(rl_conn *c, const char *token);

/* A reply to an entry that no operation waits for (see above). */
void rl_cmd_late_reply(const rl_entry *e, rl_conn *c, const struct redisReply *reply,
                       int64_t now);
/* An entry lost with its connection to node; written: it may have run. */
void rl_cmd_late_lost(const rl_entry *e, struct redlock_ctx *ctx, size_t node, bool written,
                      int64_t now);

/* A release of keys/token owed to node: sent on the next connection to it. */
void rl_owed_add(struct redlock_ctx *ctx, size_t node, rl_keys *keys, const char *token,
                 int64_t now);
/* Queues on c every release owed to its node (dropping those past their time). */
void rl_owed_send(struct redlock_ctx *ctx, rl_conn *c, int64_t now);
/* When the first release owed (to node, or to any node when node is
 * SIZE_MAX) may be sent; INT64_MAX when none is owed. */
int64_t rl_owed_next(struct redlock_ctx *ctx, size_t node);
/* Whether any release is owed (to node, or to any node when node is SIZE_MAX). */
bool rl_owed_any(struct redlock_ctx *ctx, size_t node);
void rl_owed_clear(struct redlock_ctx *ctx);

#endif /* RL_CMD_H */
