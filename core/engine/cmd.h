/*
 * cmd.h - the commands of the algorithm (acquire, extend, release) and what
 * their replies mean. What happens to a command whose operation has moved
 * on (its late replies, its loss with a connection) is owed.h's.
 *
 * A command is shared by the entries it has on each node's connection, and
 * refcounted. While an operation waits for it, cmd->op names the operation
 * and replies go there (op.c); afterwards owed.h's rules apply.
 */
#ifndef RL_CMD_H
#define RL_CMD_H

#include <stdatomic.h>

#include "conn.h"
#include "proto.h"
#include "token.h"

struct redisReply;
struct rl_client;
struct redlock_op;

typedef enum rl_cmd_kind {
    RL_CMD_ACQUIRE,
    RL_CMD_EXTEND,
    RL_CMD_RELEASE,
    RL_CMD_INSPECT,     /* a query: read the key and its PTTL; of a semaphore's keys,
                         * its permits and how many are held */
    RL_CMD_FORCE,       /* delete the key whatever its token */
    RL_CMD_FENCE,       /* raise the keys' fencing counters, if the keys are ours */
    RL_CMD_PING,        /* PING: does the node answer */
    RL_CMD_EXTEND_MANY  /* renew many locks: each key by its own token and lease */
} rl_cmd_kind;

/* What a lock's keys hold: a plain lock, a read-write lock's read or write
 * lock (its one key, with its readers beside it: scripts/rw.lua), a
 * semaphore's permit (the permits live beside its one key: scripts/sem.lua),
 * or a fair lock (its one key, held as a plain lock's, with its queue of
 * waiters beside it: scripts/fair.lua). */
typedef enum rl_lock_kind {
    RL_LOCK_PLAIN,
    RL_LOCK_READ,
    RL_LOCK_WRITE,
    RL_LOCK_PERMIT,
    RL_LOCK_FAIR
} rl_lock_kind;

/* Keys (key_prefix + name), shared by a handle and its commands: what is
 * sent for them (an acquire, its release owed) follows their kind. */
typedef struct rl_keys {
    _Atomic int refs;
    size_t n;
    char **k;
    rl_lock_kind kind;
    int permits;                   /* RL_LOCK_PERMIT: the semaphore's number of permits */
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
    char joins[RL_TOKEN_LEN + 1];  /* a read lock's acquire: the token of the caller's write
                                    * lock it may join (a downgrade), or "" */
    /* A fair lock's acquire: its waiter's id (one for all its attempts), its
     * ticket (0: none yet) and how long the nodes keep its place. */
    char waiter[RL_TOKEN_LEN + 1];
    int64_t ticket;
    int64_t queue_ms;
    int64_t *fences;               /* fence: the value per key (owned) */
    struct redlock_op *op;              /* waits for its replies, or NULL */
    _Atomic bool undo;             /* acquire: its lock was given up */
    struct rl_cmd *parent;         /* acquire of one slot's keys of a lock whose keys span
                                    * slots (round.c): given up with it (referenced) */
    char (*tokens)[RL_TOKEN_LEN + 1];   /* extend many: each key's token (owned) */
    int64_t *leases;               /* extend many: each key's lease in ms (owned) */
    bool wake_ahead;               /* a holder's release (an unlock): sent as DELIFEQ, its
                                    * wake-up's PUBLISH goes right behind it (cmd.c) */
    bool cacheable;                /* made by an op, sent only from its thread while it runs */
    rl_bytes cached[2][RL_FORMS];  /* cacheable: formatted bytes per rl_form, for other
                                    * nodes [0] and Cluster nodes [1] (fencing's differ) */
} rl_cmd;

rl_cmd *rl_cmd_new(rl_cmd_kind kind, rl_keys *keys, const char *token, int64_t ttl_ms);
rl_cmd *rl_cmd_ref(rl_cmd *cmd);
void rl_cmd_unref(rl_cmd *cmd);
/* Whether cmd's lock was given up (cmd->undo, or its parent's). */
bool rl_cmd_undone(const rl_cmd *cmd);
/* Whether two key lists are the same keys in the same order. */
bool rl_keys_same(const rl_keys *a, const rl_keys *b);

/* Queues cmd in form on c, as one entry (no WATCH, no wake-up beside it),
 * from its cached bytes when cache is set. REDLOCK_OK or a code. */
int rl_cmd_send_form(rl_cmd *cmd, rl_conn *c, int form, bool cache);
/* The fencing counter's key of key (key, a zero byte, "fence"; on a Cluster
 * node with the key as its hash tag when it has none), malloc'd; its
 * length in *len; NULL when out of memory. */
char *rl_counter_key(const char *key, bool cluster, size_t *len);

/* What a reply to cmd (sent in `form`) says. */
void rl_cmd_classify(const rl_cmd *cmd, int form, const struct redisReply *reply, rl_result *out);
/* A script refused by the ACL (EVAL or EVALSHA) on a connection whose FCALL
 * was refused too, or that found no library: r says so (naming 'fcall', or
 * the missing library), the way the ACL for the library needs. */
void rl_cmd_refused_both(const rl_conn *c, int form, rl_result *r);
/* A fenced acquire's yes (classified so): its counters, one per key, into out. */
void rl_cmd_fences(const rl_cmd *cmd, const struct redisReply *reply, int64_t *out);
/* A fenced acquire of one key sent as SET and INCR (RL_FORM_SET, then
 * RL_FORM_COUNT): io is what the SET's reply said; a yes takes the INCR's
 * reply as its fence, or becomes a failure when that is not a count. */
void rl_cmd_count(const struct redisReply *reply, rl_result *io, int64_t *fence);

/* A renewal of many locks (RL_CMD_EXTEND_MANY): keys with room for each
 * key's token and lease (cmd->tokens, cmd->leases, filled by the caller). */
rl_cmd *rl_cmd_new_many(rl_keys *keys);
/* The reply of an extend of many keys: one verdict per key into out (1
 * extended, 0 not ours, -1 a key of another type), true; or false with bad
 * failed when the reply as a whole is not one (an error, NOSCRIPT...). The
 * renewal of one lock sent as SET IFEQ (a node without scripts, plain.h)
 * answers OK, nil or WRONGTYPE for its key. */
bool rl_cmd_many_votes(const rl_cmd *cmd, int form, const struct redisReply *reply,
                       signed char *out, rl_result *bad);
/* The same for the renewal of one lock on a node without scripts, from its
 * transaction's answer (plain.h). */
bool rl_cmd_plain_votes(const rl_result *plain, signed char *out, rl_result *bad);

/* The time a node is allowed for the work cmd asks of it, beyond
 * node_timeout_ms: RL_CMD_US_PER_KEY for each key of a command of many
 * keys (a multi-lock, a renewal of many locks), so that its deadline fits
 * the work; 0 for a command of one key. Measured on Redis 7.0: the acquire
 * script takes 1.4 us a key at 20,000 keys and 2.8 us at 100,000 on the
 * node, the renewal of many 0.9 us; from the call, a multi-lock of 100,000
 * on 3 local nodes sharing 2 cores with the client takes 6.7 to 11 us a key
 * (formatting, the bytes on the wire, the nodes' work one after another).
 * The allowance is twice that, in whole ms: 2 s more for 100,000 keys,
 * 10 ms for a renewal of 500, none under 50 keys. */
#define RL_CMD_US_PER_KEY 20
int64_t rl_cmd_work_ms(const rl_cmd *cmd);

/* A native command on c was refused (rl_conn_unrun): the node sends the
 * scripts in its place from now on, told once as the event native_refused.
 * rl_cmd_send_again (send.h) does it; a reply nobody waits for calls it. */
void rl_cmd_native_refused(rl_conn *c, int form, const struct redisReply *reply);
/* A release's reply on c: after a DELIFEQ that deleted the key, the
 * wake-up its script would have published (rl_conn_wake), unless it went
 * ahead (wake_ahead). Every reader of a release's reply calls it.
 * REDLOCK_OK or a code. */
int rl_cmd_released(rl_cmd *cmd, rl_conn *c, int form, const struct redisReply *reply);

/* The resource names of keys (key_prefix removed), comma-separated, cut
 * short with ",+N more" to fit len: what an event (log.h) shows of them. */
void rl_log_resources(const struct rl_client *ctx, const rl_keys *keys, char *buf, size_t len);

#endif /* RL_CMD_H */
