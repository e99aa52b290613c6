/*
 * conn.h - one connection to one node, as the engine sees it: bytes to
 * write, bytes read, and the stream of replies it still expects, entry by
 * entry. No sockets here: a driver moves the bytes (rl_conn_output,
 * rl_conn_wrote, rl_conn_feed) and tells what happened to its socket.
 *
 * The rules of the stream, in one place:
 *   - Every command queued on a connection appends one entry; every reply
 *     read pops the oldest. A reply is credited to the entry it pops, and to
 *     nothing else: an entry never moves, and a command sent again (EVAL
 *     after NOSCRIPT) is a new entry at the tail.
 *   - The handshake of a new connection (AUTH, SELECT, the library's probe,
 *     SCRIPT LOAD, INFO, the guard) is the stream's own. Nothing queued
 *     behind AUTH or SELECT is written before their replies say OK; an
 *     error from either breaks the connection, so what was held back never
 *     runs.
 *   - Scripts go as FCALL of the library's functions or as EVALSHA/EVAL
 *     (scripts.h): the way the handshake's probe found for this connection,
 *     and until it answers the way the node's last probe found. The guard
 *     of the handshake goes that way, or both ways while no probe of the
 *     node has answered, so that its answer precedes every command's. A
 *     command refused for its way alone (rl_conn_unrun: no library there,
 *     an ACL that allows the other way) is sent again the other way, a new
 *     entry at the tail.
 *   - The entry of a command records how many bytes had been queued when it
 *     ended: once that many are written it may have run, before that it
 *     certainly has not. When a connection breaks, rl_conn_pop_lost hands out
 *     the entries still owed with that knowledge, for their owners to decide
 *     (a release is sent again elsewhere; an acquire that may have run is
 *     undone when its owner gave up).
 *   - A broken connection (closed, cut mid-reply, a reply that matches no
 *     entry, a refused handshake) is never used again.
 *   - A command's deadline runs from when its last byte was written to the
 *     socket, not from when it was queued: one stuck behind unwritten bytes
 *     of the client's own has none yet (its entry's budget waits), so a node
 *     busy with our own commands is not taken for a slow one.
 *   - A connection is not replaced while its node answers. One that owes
 *     many replies takes no more commands but releases while its node is
 *     silent (rl_conn_refuses): a stalled node costs one connection, not a
 *     new connection every few hundred calls.
 *   - A client has at most pool_size + RL_CONN_SPARE connections to a node
 *     at once (pooled, in use, connecting) for acquires, RL_CONN_ENDS more
 *     for releases and extensions: rl_conn_new_capped is how an operation
 *     makes one; at the cap it waits for one to come back.
 */
#ifndef RL_CONN_H
#define RL_CONN_H

#include "base.h"
#include "bound.h"
#include "node.h"

struct redisReply;
struct redisReader;
struct rl_client;
struct rl_cmd;
struct redlock_op;

/* The guard script's hash (scripts/guard.lua), after the key prefix. */
#define RL_GUARD_KEY "redlock:guard"
#define RL_GUARD_KEY_MAX (4096 + sizeof RL_GUARD_KEY)

typedef enum rl_conn_state {
    RL_CONN_CONNECTING,   /* the driver's connect has not completed */
    RL_CONN_OPEN,
    RL_CONN_BROKEN        /* see why; the driver closes its socket */
} rl_conn_state;

/* How a command was written on one connection. */
typedef enum rl_form {
    RL_FORM_SET,        /* acquire one key: SET key token NX GET PX ttl (Redis 7.0+) */
    RL_FORM_EVALSHA,    /* the command's script by digest */
    RL_FORM_EVAL,       /* the command's script in full (after NOSCRIPT) */
    RL_FORM_COUNT,      /* a fenced acquire of one key on Redis 7.0+: INCR of its counter,
                         * queued right behind its SET (an entry of its own) */
    RL_FORM_FCALL,      /* the command's function in the library (scripts.h), when the
                         * connection calls it (rl_conn_calls_functions) */
    RL_FORM_IFEQ,       /* extend a plain lock: SET key token IFEQ token PX ttl, where the
                         * node has it (rl_node_has_native) */
    RL_FORM_DELIFEQ,    /* release a plain lock: DELIFEQ key token, where the node has it;
                         * its wake-up an entry of its own (RL_ENTRY_WAKE) */
    /* On a node that runs no scripts (plain.h): */
    RL_FORM_SETNX,      /* acquire one key before Redis 7.0: SET key token NX PX ttl */
    RL_FORM_READ,       /* a transaction's read: WATCH (an RL_ENTRY_TXN) then GET key (a
                         * fence's: MGET key counter); its reply says what comes next */
    RL_FORM_EXEC,       /* a transaction's end: MULTI and its commands (RL_ENTRY_TXN
                         * each), then EXEC, whose reply is the answer */
    RL_FORMS
} rl_form;

typedef enum rl_entry_kind {
    /* Held back behind these (the gate): */
    RL_ENTRY_AUTH,        /* handshake: an error breaks the connection */
    RL_ENTRY_SELECT,      /* handshake: an error breaks the connection */
    RL_ENTRY_ROLE,        /* handshake of a Sentinel node's master: not a master, it breaks */
    RL_ENTRY_EPOCH,       /* a sentinel asked for its failover count (config-epoch) */
    RL_ENTRY_SENTINEL,    /* a sentinel asked where the master is: the connection ends */
    RL_ENTRY_SLOTS,       /* a Cluster's seed asked for the slot map: the connection ends */
    /* Not held back: */
    RL_ENTRY_ASKING,      /* ASKING, right before a command a -ASK sent here */
    RL_ENTRY_PROBE,       /* handshake: FCALL of the library's probe (may it be called?) */
    RL_ENTRY_SCRIPT,      /* handshake: SCRIPT LOAD; an error only means NOSCRIPT later */
    RL_ENTRY_INFO,        /* handshake: the node's run_id and version */
    RL_ENTRY_GUARD,       /* handshake: the guard script (may the node have lost keys?) */
    RL_ENTRY_REGUARD,     /* the guard script again, before a command (rl_node_guard_stale) */
    RL_ENTRY_LOAD,        /* FUNCTION LOAD of the library (the option load_functions) */
    RL_ENTRY_RECORDS,     /* handshake: GET of the node's record of the group (records.h) */
    RL_ENTRY_RECORD,      /* APPEND to it, before a command (rl_records_owed) */
    RL_ENTRY_WAKE,        /* PUBLISH of a release's wake-up, behind its DELIFEQ
                           * (rl_conn_wake): its reply is nobody's */
    RL_ENTRY_TXN,         /* WATCH, MULTI, a command queued in MULTI, UNWATCH, or the
                           * plain guard's SET (plain.h): its reply is nobody's, an
                           * error is kept for the answer behind it (txn_error) */
    RL_ENTRY_CMD          /* a command of an operation: see cmd */
} rl_entry_kind;

typedef struct rl_entry {
    uint8_t kind;         /* rl_entry_kind */
    uint8_t form;         /* RL_ENTRY_CMD, RL_ENTRY_GUARD: how it was sent (rl_form) */
    bool covered;         /* an acquire with a release of its token behind it */
    bool late;            /* its deadline passed without its reply: counted once (node.h) */
    bool fresh;           /* queued while connecting: its round trip is not measured */
    uint64_t end;         /* bytes queued on the connection up to this command's end */
    struct rl_cmd *cmd;   /* RL_ENTRY_CMD: the command; the entry holds a reference */
    uint32_t keys;        /* RL_ENTRY_CMD: the keys its reply answers for (its bound) */
    uint32_t unwatched;   /* RL_FORM_READ: the connection's `unwatched` when its WATCH
                           * was queued (plain.h) */
    /* An operation's command, for the node's health: when its last byte was
     * written (0: not yet, or queued while connecting: no round trip) and
     * its deadline (0: none yet), which is `budget` ms after that write. */
    int64_t sent_at, deadline;
    int64_t budget;
} rl_entry;

/* Connections a client may have to a node beyond pool_size: the ones
 * replacing broken ones while those are closed, and one more in use. */
#define RL_CONN_SPARE 2
/* ... and beyond those, the ones only releases and extensions may take. */
#define RL_CONN_ENDS 2
/* A connection owing this many replies takes no more commands but releases
 * while its node is silent (no reply for node_timeout_ms), and none at all
 * past RL_CONN_MAX_OWED however it answers: the node is busy, the client
 * says so (node_busy) and the operation counts that node failed. */
#define RL_CONN_SILENT_OWED 64
#define RL_CONN_MAX_OWED 8192

typedef struct redlock_conn {
    struct rl_client *ctx;
    size_t node;
    rl_target to;               /* where it goes: the master, or a sentinel to ask */
    bool redirected;            /* RL_CONN_BROKEN because the node's master moved (or was
                                 * found, or a Cluster's slot is elsewhere): what was
                                 * redirected did not run */
    int ask_server;             /* redirected by -ASK: the master to try (masters index) */
    rl_conn_state state;
    bool info_refused;          /* its handshake's INFO was (an ACL without +info) */
    int8_t scripts_way;         /* node.h's rl_scripts_way, as its probe answered (unknown
                                 * before: then the node's) */
    bool fcall_refused;         /* its ACL refused FCALL (NOPERM) */
    bool opened_scriptless;     /* made while its node ran no scripts: no probe */
    bool no_library;            /* its probe found no library of this version */
    uint8_t guards_owed;        /* guard scripts of its handshake still unanswered */
    uint8_t guard_forms;        /* the forms its guard went in (bits of 1 << rl_form) */
    uint32_t unwatched;         /* EXECs, UNWATCHes and DISCARDs queued on it so far: each
                                 * forgets every key a WATCH before it watched (plain.h) */
    char txn_error[120];        /* the first error a WATCH, MULTI or queued command
                                 * answered since the last read or EXEC was answered */
    int code;                   /* RL_CONN_BROKEN: the REDLOCK_E* that describes why */
    char why[160];              /* RL_CONN_BROKEN: printable reason */
    unsigned uses;              /* operations it has served (0: new) */
    bool connected;             /* the driver's connect completed */
    int64_t opened_at;          /* when it did: the handshake's round trip */

    char *out;                  /* out[0 .. out_len): bytes not yet written */
    size_t out_len, out_cap;
    uint64_t queued;            /* bytes queued since the connection was made */
    uint64_t written;           /* bytes written since the connection was made */
    uint64_t gate;              /* bytes past this wait for AUTH and SELECT */
    uint64_t secret_end;        /* bytes before this one (as queued counts) hold AUTH's
                                 * password: every copy of them is wiped */
    uint64_t popped;            /* entries popped since the connection was made */
    uint64_t stamped;           /* entries (counted as popped is) known written */
    uint64_t overdue;           /* entries before this one were checked overdue (op.c) */
    int64_t heard_at;           /* when the last reply was read (or it connected) */
    int64_t probe_at;           /* refusing: when one command goes all the same */
    bool capped;                /* counted in its node's connections (client.h) */

    struct redisReader *reader;
    rl_bound bound;             /* what is received, scanned before the reader has it */
    uint64_t scanned;           /* replies scanned whole (counted as popped is) */
    rl_entry *q;                /* the replies expected, oldest first (a ring) */
    size_t q_head, q_len, q_cap;

    struct redlock_op *op;           /* the operation that has it now, or NULL */
    intptr_t io;                /* the driver's: its socket */
    void *io_data;              /* the driver's */
} rl_conn;

/* A new connection to node `node` of ctx, with its handshake queued. The
 * driver connects its socket and calls rl_conn_connected (or breaks it). */
rl_conn *rl_conn_new(struct rl_client *ctx, size_t node);
/* The same for an operation, to target `to` (a master, or a sentinel or a
 * Cluster's seed to ask: node.h), when the client has fewer than cap
 * connections to the node (counted with every rl_conn_new, until
 * rl_conn_free): NULL with *full set when it has cap already. */
rl_conn *rl_conn_new_capped(struct rl_client *ctx, size_t node, int cap, const rl_target *to,
                            bool *full);
/* How many connections the client has to node now. */
int rl_conn_count(const struct rl_client *ctx, size_t node);
/* Frees a connection whose stream is empty (after rl_conn_pop_lost). */
void rl_conn_free(rl_conn *c);

void rl_conn_connected(rl_conn *c);
/* Marks the connection broken (the driver's socket failed, or the engine
 * found the stream unusable). The first reason is kept. */
void rl_conn_break(rl_conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Queues a command: its bytes, and its entry, which keeps the reference on
 * cmd that the caller gives it (on success only); keys: how many keys its
 * reply answers for. */
int rl_conn_send(rl_conn *c, const char *bytes, size_t len, struct rl_cmd *cmd, int form,
                 size_t keys);
/* Whether a reply to a command sent in form on c says that it did not run for the
 * way it was sent alone: NOSCRIPT (the node lost its scripts); of FCALL, no
 * such function (no library of this version there), no FCALL (before Redis
 * 7.0) or an ACL without +fcall; of EVAL or EVALSHA, an ACL without them
 * while the connection calls the library; of a native command (IFEQ,
 * DELIFEQ), an unknown command, a syntax error or an ACL without it. Such
 * a command is sent again, once per change of way, by rl_cmd_send_again. */
bool rl_conn_unrun(const rl_conn *c, int form, const struct redisReply *reply);
/* Queues PUBLISH channel message, the wake-up of the clients waiting for a
 * key that a native release (RL_FORM_DELIFEQ) deletes: what release.lua
 * publishes (cmd.c's rl_cmd_released says when). Its answer (a count, or
 * a refusal: an ACL without the channel) is read and dropped, as the
 * script's pcall drops it. REDLOCK_OK, or a code and the connection
 * broken. */
int rl_conn_wake(rl_conn *c, const char *channel, const char *message);
/* Queues a command of the connection's own as an entry of kind (not an
 * operation's: RL_ENTRY_TXN, the plain guard's, its SET as RL_ENTRY_WAKE),
 * lens NULL: strlen. An EXEC, UNWATCH or DISCARD counts in unwatched
 * (plain.h), as does any command sent in RL_FORM_EXEC. REDLOCK_OK, or a
 * code and the connection broken. */
int rl_conn_own(rl_conn *c, rl_entry_kind kind, int argc, const char **argv,
                const size_t *lens);


/* Whether commands on c call the library's functions (FCALL): as its probe
 * answered, or before that as the node's last probe did. */
bool rl_conn_calls_functions(const rl_conn *c);
/* An FCALL on c was refused (no function of that name, no FCALL, an ACL
 * without +fcall: why): c and its node's next connections send the scripts
 * (EVALSHA, EVAL) until a probe finds the library callable. */
void rl_conn_no_functions(rl_conn *c, const char *why);
/* Whether c's node is known to run no scripts (plain.h): found once per
 * node, from the first reply that says no script can run there ("Could not
 * find scripting engine"; NOPERM naming 'eval' or 'evalsha' where FCALL is
 * refused too, or does not exist), kept by the node (node.h's scripting,
 * the health's scripting=no, the event no_scripting once) until its run_id
 * changes. Its handshake then loads no script, and its guard goes in plain
 * commands (guard.h). */
bool rl_conn_no_scripting(const rl_conn *c);

/* Queues ASKING: the command queued next goes to a slot this Cluster
 * master is importing (-ASK). REDLOCK_OK or a code. */
int rl_conn_asking(rl_conn *c);
/* Whether the keys' slot is served by c's server (always, but on a Cluster
 * node). */
bool rl_conn_serves(rl_conn *c, const char *key);

/* The bytes that may be written now (none while connecting, or while held
 * back behind the handshake), and how many of them were written. */
size_t rl_conn_output(const rl_conn *c, const char **bytes);
/* n of them were written at now: the commands whose last byte went get
 * their deadline (their budget from now). */
void rl_conn_wrote(rl_conn *c, size_t n, int64_t now);
/* Gives the entry just queued (the last one) its budget: its deadline will
 * be budget ms after its last byte is written. */
void rl_conn_budget(rl_conn *c, rl_entry *e, int64_t budget);
/* Whether the command ending at byte `end` was written whole. */
bool rl_conn_written(const rl_conn *c, uint64_t end);
/* Whether the connection takes no more commands now (see RL_CONN_SILENT_OWED):
 * 0, or why not (RL_CONN_SILENT: its node says nothing; RL_CONN_FAR_BEHIND:
 * it owes RL_CONN_MAX_OWED), with why in words. A silent node still gets one command every silent_ms, so
 * that someone reads its connection and hears it when it is back; and a
 * release (`release`) is always queued, up to RL_CONN_MAX_OWED: it must run
 * after what it releases, which may be on this very stream. */
enum { RL_CONN_SILENT = 1, RL_CONN_FAR_BEHIND = 2 };
int rl_conn_refuses(rl_conn *c, int64_t now, int64_t silent_ms, bool release, char *why,
                    size_t whylen);
/* Whether bytes are queued that are not yet written (including held back). */
bool rl_conn_unwritten(const rl_conn *c);

/* Whether it still has bytes to send: connecting, or bytes not yet written. */
bool rl_conn_sending(const rl_conn *c);
/* Whether it may serve another operation: open and nothing half-written.
 * Replies still owed do not matter: the next user reads them, and one that
 * owes too many takes no commands (rl_conn_refuses) rather than being
 * replaced. */
bool rl_conn_poolable(const rl_conn *c);

/* Feeds bytes read from the socket, each reply checked against its bounds
 * first (bound.h): one past them breaks the connection before the reader
 * has any of it. */
void rl_conn_feed(rl_conn *c, const char *buf, size_t len);
/* The bounds of the reply to entry e (NULL: a reply nobody asked for). */
rl_reply_limits rl_conn_limits(const rl_entry *e);
/* The next reply to a command of an operation: 1 with *reply (free it with
 * freeReplyObject) and *entry (the caller owns its reference on the cmd);
 * 0 when none is complete yet; -1 when the connection broke (see why).
 * Replies of the handshake are handled here, for node `nodes` of the ctx. */
int rl_conn_next(rl_conn *c, struct redisReply **reply, rl_entry *entry, int64_t now);

/* Whether a reply says that a Sentinel node's master is a replica now
 * (READONLY), or that a Cluster's slot is served elsewhere (-MOVED, -ASK):
 * then the node asks its sentinels again, or learns where the slot went,
 * and the connection is broken as redirected (the command did not run). */
bool rl_conn_moved(rl_conn *c, const struct redisReply *reply, int64_t now);

/* Replies still expected, and the i-th of them (0: the oldest). */
size_t rl_conn_owed(const rl_conn *c);
rl_entry *rl_conn_entry(rl_conn *c, size_t i);
/* Pops the oldest entry still owed, for a broken (or abandoned) connection:
 * 1 with *entry and *written (its bytes were all written: it may have run),
 * 0 when none is left. Handshake entries are dropped. */
int rl_conn_pop_lost(rl_conn *c, rl_entry *entry, bool *written);

#endif /* RL_CONN_H */
