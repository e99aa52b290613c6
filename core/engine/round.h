/*
 * round.h - the insides of an operation (op.h) and its rounds: a command out
 * to every node, the votes coming in, the verdict, and a Cluster node's
 * chain of parts. Shared by the engine's files that make and drive
 * operations (round.c, then op.c and many.c above it), and by no other.
 * Where round.c must run a step of a kind of its own (extend many's votes
 * and verdicts), the operation carries it (decide_each, reply_each).
 */
#ifndef RL_ROUND_H
#define RL_ROUND_H

#include <hiredis/hiredis.h>

#include "client.h"
#include "conn.h"
#include "handle.h"
#include "quorum.h"

typedef struct redlock_op rl_op;   /* as op.h names it */

typedef enum slot_state {
    SLOT_IDLE,        /* nothing asked of this node in this round */
    SLOT_WANT_CONN,   /* the round's command waits for a connection */
    SLOT_WAITING,     /* the command is queued; its reply is awaited */
    SLOT_DONE         /* the vote is in */
} slot_state;

typedef struct slot {
    rl_conn *conn;        /* the connection to this node, kept across rounds */
    slot_state state;
    bool sent;            /* this round's command was queued on conn */
    bool maybe_ran;       /* ... on a connection lost after writing it */
    bool retried;         /* a stale pooled connection was replaced this round */
    uint8_t redirects;    /* connections ended this round because the master moved */
    int key_slot;         /* a Cluster node: the slot of the command's keys; -1 any */
    int ask_server;       /* a Cluster node: the master a -ASK named this round; -1 none */
    bool ask;             /* its next connection asks a sentinel whether the master moved */
    bool counting;        /* a fenced SET answered: its vote waits for the INCR's reply */
    bool txn;             /* its command went as a transaction (plain.h): an unlock waits
                           * for its end, whose second step only a reader of the
                           * connection sends */
    bool written;         /* the command's last byte was written: its deadline runs */
    bool parked;          /* SLOT_WANT_CONN: the node's connections are all in use */
    bool paused;          /* its connection counted in the node's paused ones (let_go) */
    rl_result set;        /* ... and is this */
    uint64_t end;         /* the connection's bytes queued up to the command's end */
    int64_t deadline;     /* written: node_timeout_ms after; else when to look again */
    int64_t queued_at;    /* when the command was queued: unwritten, its bound runs from it */
    int64_t tail_until;   /* once decided, how long its bytes are still written */
    int64_t retry_at;     /* parked: when to ask for a connection again */
    int64_t park_until;   /* parked: when to stop asking (0: not parked this round) */
    /* A Cluster node's chain (a lock whose keys span slots: chained below):
     * the part whose command is the current one, the first answer of the
     * chain that was not a yes (an unlock goes on through every part), and
     * how many of its connections were set aside for other masters, counted
     * as paused until the operation ends. */
    size_t part;
    rl_result chain;
    unsigned aside;
} slot;

/* How often an operation that waits for a connection (its node has
 * pool_size + RL_CONN_SPARE of them, all in use) asks again. */
#define PARK_RETRY_MS 1

typedef enum phase {
    PHASE_ROUND,          /* a command is out to the nodes */
    PHASE_PAUSE,          /* between two acquire attempts (or ping rounds) */
    PHASE_DONE
} phase;

typedef enum op_kind {
    OP_LOCK,
    OP_EXTEND,
    OP_UNLOCK,
    OP_DELIVER,     /* releases owed to nodes, and nothing else */
    OP_INSPECT,     /* a query: is the lock held, by anyone, and how long */
    OP_FORCE,       /* a forced unlock: the key deleted whatever its token */
    OP_PING,        /* a PING of every node: how many answer */
    OP_EXTEND_MANY  /* the renewal of many locks, one command per node (extend_many below) */
} op_kind;

/* Extend many: what one lock of the batch came to. */
typedef struct many_end {
    bool decided;
    int rc;
    int64_t old_expires_at;   /* its expiry before the renewal */
    char *msg;                /* why it failed (owned), or NULL */
} many_end;

struct redlock_op {
    rl_client *ctx;
    op_kind kind;
    redlock_handle *h;
    bool owns_handle;     /* lock: the handle is the op's until taken */
    int64_t ttl_ms;
    int64_t give_up;      /* lock: no attempt starts after this */
    int64_t unavailable_since;  /* lock: start of the attempts that all lacked answers */
    int64_t round_start;
    int64_t started;      /* when the operation was made */
    unsigned attempts;    /* lock: acquire rounds started */
    bool settled;         /* lock, ping: a round went again at once for the records (round.c) */
    bool keep_token;      /* lock: the next round takes the same keys again for the same token */
    int64_t wake_at;      /* pause: when the next attempt starts */
    phase phase;
    rl_cmd *cmd;          /* the current round's command */
    rl_cmd *attempt;      /* lock: the acquire of the current attempt */
    bool fenced;          /* lock: with fencing */
    char joins[RL_TOKEN_LEN + 1];   /* a read lock: the caller's write lock it may join */
    /* A fair lock: its waiter's id, its ticket (0 until the first attempt
     * refused gave it one), and the channel its wake-up comes on (the key,
     * ":waiter:" and the id), which rl_op_keys names. */
    char waiter[RL_TOKEN_LEN + 1];
    int64_t ticket;
    rl_keys *channel;
    int64_t *got;         /* fenced lock: each node's counters, node by node */
    bool saw_noscript;    /* a node had lost its scripts, or its library: this round
                           * waits for all */
    bool was_held;        /* unlock: the lock as it was when unlock began */
    int64_t old_expires_at;
    rl_verdict answer;    /* inspect, force: what the nodes said */
    int rc;
    char what[300];
    char msg[RL_ERRMSG_MAX];
    size_t next_conn;     /* rl_op_take_conn's cursor */
    rl_conn **dropped;    /* broken connections let go of, for the driver to close */
    size_t n_dropped;
    rl_conn **spare;      /* let go of in a pause, for the driver to pool (rl_op_spare_conn) */
    size_t n_spare;
    bool lends;           /* its driver takes them (rl_op_lend) */
    /* A lock whose keys span slots on a client with a Cluster node (the
     * handle's parts, or a renewal of one such lock): a Cluster node takes
     * one command per part (parts[g] with part_cmds[g]), one after another
     * on its chain, and votes yes only when every part was a yes; a lock's
     * parts taken before a no are released there, so that the node holds
     * all of the lock or none of it. Other nodes take cmd, every key. */
    size_t n_parts;
    rl_keys **parts;      /* the handle's */
    rl_cmd **part_cmds;   /* this round's, one per part */
    slot *slots;          /* one per node, allocated with the op */
    rl_result *results;   /* one per node, allocated with the op */
    /* extend many: the locks (not owned), where each one's keys start in
     * the command's (first_key[n_many] is the number of keys), each node's
     * answer for each key (node by node; valid where results[node] is a
     * yes), and each lock's outcome */
    redlock_handle **many;
    size_t n_many, n_undecided;
    size_t *first_key;
    signed char *key_votes;
    many_end *ends;
    /* Steps of its kind's own, or NULL: extend many decides each lock of
     * the batch, and reads a node's answer per key (many.c); plain: the
     * answer of a transaction (a node without scripts), else NULL. */
    void (*decide_each)(rl_op *op, bool final, int64_t now);
    void (*reply_each)(rl_op *op, rl_conn *c, const rl_entry *e, const redisReply *reply,
                       const rl_result *plain, int64_t now);
};

/* An operation of kind, not started. */
rl_op *rl_op_new(rl_client *ctx, op_kind kind, int64_t now);

/* What the operation asks of the nodes, for the quorum's rules. */
rl_verb rl_round_verb(const rl_op *op);

/* Whether node i takes the round one part at a time. */
bool rl_round_chained(const rl_op *op, size_t i);

/* The command node i waits for (or is to be sent) now. */
rl_cmd *rl_round_cmd_of(const rl_op *op, size_t i);

/* No operation waits for the round's commands any more: their replies are
 * late (owed.h). */
void rl_round_detach_cmds(rl_op *op);

/* A release of the lock's keys owed to node i: of its parts from `from` on
 * for a chained node, else of all of them. */
void rl_round_owe(rl_op *op, size_t i, size_t from, int64_t now);

/* The connections set aside for other masters go back to the driver. */
void rl_round_end_aside(rl_op *op);

/* This round's command for each part (with cmd as their parent: a lock
 * given up is given up in every part, owed.h). */
int rl_round_new_part_cmds(rl_op *op, rl_cmd_kind kind);

/* A new token (token.h) from the client's random source. */
int rl_round_new_token(rl_client *ctx, char out[RL_TOKEN_LEN + 1]);

/* The operation ends with rc and msg (its events told). */
void rl_round_finish(rl_op *op, int rc, const char *msg, int64_t now);

/* How long a command may wait to be written, behind bytes of the client's
 * own, before the operation counts its node failed: as long as an answer
 * may be of use (a lock's or an extension's lease), and at least as long as
 * a connect and an answer take. */
int64_t rl_round_patience(const rl_op *op);

/* Node i is busy: the client cannot keep up with it (its connections all in
 * use, or one owing too many replies). Told once (node_busy) when it was not
 * busy the second before; the health says "busy" for a second after. */
void rl_round_busy(rl_op *op, size_t i, const char *why, int64_t now);

/* A round's command is queued on s's connection, ending at its byte `end`:
 * its deadline runs from when that byte is written (rl_op_conn_wrote).
 * Until then the slot is looked at every node_timeout_ms (a connect's
 * deadline first), as drivers expect a wake-up that soon, and fails only
 * past the wait's bound (rl_round_patience) from when it was queued. */
void rl_round_queued(rl_op *op, size_t i, int64_t now);

/* Marks late the entries of cmd on c still owed, once: their deadline passed. */
void rl_round_mark_late(rl_conn *c, const rl_cmd *cmd);

/* Queues the round's command on the slot's connection. */
void rl_round_send_on(rl_op *op, size_t i, int64_t now);

/* The pause is over (another attempt, or the end): its connections count
 * as any other again. */
void rl_round_resume(rl_op *op);

/* A new round: a command of kind for every node. */
int rl_round_start(rl_op *op, rl_cmd_kind kind, int64_t now);

/* A failed attempt: its release goes wherever the acquire may have run. */
void rl_round_undo_attempt(rl_op *op, int64_t now);

/* The round is decided (v): the operation ends, pauses or goes on. */
void rl_round_end(rl_op *op, const rl_verdict *v, int64_t now);

/* Decides the round if it can be decided now. */
void rl_round_try_decide(rl_op *op, int64_t now);

/* Node i's vote is r (admitted by the quorum's rules first). */
void rl_round_vote(rl_op *op, size_t i, const rl_result *r, int64_t now);

/* A chained node answered for its current part (r): it goes on to the next
 * part, on its connection when that serves the next part's slot, else on
 * another (true); or its chain ends here and r, or the first answer of its
 * chain that was not a yes, is its vote (false, r set so). A lock's or an
 * extend's chain goes on after a yes; an unlock's after any answer, as every
 * part must be released. */
bool rl_round_next_part(rl_op *op, size_t i, rl_result *r, int64_t now);

#endif /* RL_ROUND_H */
