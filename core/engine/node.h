/*
 * node.h - what a client knows of one node, shared by every operation and
 * every thread: its address, whether it may be connected to now (backoff
 * after failed connects), what its INFO said (run_id, version), when it was
 * seen to restart (the restart guard) and whether it is the same server as
 * another node of the client; and its health (state, last error, round
 * trip, counters), whose changes are the client's node events (log.h).
 * Times are the driver's monotonic milliseconds.
 */
#ifndef RL_NODE_H
#define RL_NODE_H

#include <pthread.h>
#include <stdatomic.h>

#include "slots.h"
#include "uri.h"

struct rl_client;

/* A node's state, as its last contact left it (redlock_ctx_health). */
typedef enum rl_node_state {
    RL_NODE_KEEP = -1,   /* rl_node_failed: no change of state */
    RL_NODE_UNKNOWN,     /* not contacted yet */
    RL_NODE_UP,          /* it answered */
    RL_NODE_SLOW,        /* its last command got no answer in time */
    RL_NODE_DOWN,        /* connecting to it failed */
    RL_NODE_AUTH,        /* it refused the credentials */
    RL_NODE_NOPERM       /* its ACL refused a command or key (NOPERM) */
} rl_node_state;

#define RL_NODE_MASTERS_MAX 64   /* masters a Sentinel or Cluster node can have had */

/* Where one new connection of a node goes: the node's master (its address,
 * or the one its sentinels named), or one of its sentinels, to ask where
 * the master is. host is NULL for a unix socket (the node's path). The
 * strings stay valid while the client lives. */
typedef struct rl_target {
    const char *host;
    int port;
    bool sentinel;   /* a sentinel, or a Cluster's seed: the connection asks and ends */
    bool census;     /* a Cluster's master whose guard is read: the connection asks and ends */
    bool asking;     /* a Cluster's master a -ASK named: ASKING before the command */
    int server;      /* a Cluster's master: its index in the node's masters; else -1 */
    uint64_t gen;    /* the node's generation it was chosen in */
} rl_target;

/* How a node runs the scripts (scripts.h), as the last connection to probe
 * it found (conn.h): its health's scripts= field. */
typedef enum rl_scripts_way {
    RL_SCRIPTS_UNKNOWN,     /* no connection has asked yet */
    RL_SCRIPTS_FUNCTIONS,   /* FCALL of the library's functions */
    RL_SCRIPTS_EVAL         /* EVALSHA and EVAL: no library of this version there, no
                             * functions (before Redis 7.0), or an ACL without +fcall */
} rl_scripts_way;

/* Commands a node's server has that do a script's work in one command
 * (bits of rl_node's native), as its INFO says: Valkey 8.1+ has SET key
 * value IFEQ old, Valkey 9.0+ DELIFEQ key value. Redis reports no such
 * version (Redis 8.4's DELEX ... IFEQ is not used: untested here). */
enum {
    RL_NATIVE_IFEQ = 1,      /* a plain lock's extend: SET key token IFEQ token PX ttl */
    RL_NATIVE_DELIFEQ = 2    /* a plain lock's release: DELIFEQ key token */
};

typedef struct rl_node {
    rl_node_addr addr;
    size_t index;
    const struct rl_client *ctx;   /* whose events its changes are */
    /* Health: counters and the round trip without the lock, the rest under it. */
    _Atomic int state;               /* rl_node_state */
    /* The next command on one of its connections reads the guard again first
     * (rl_node_guard_stale): atomic, as every command sent looks at it. */
    _Atomic bool guard_reread;
    /* rl_scripts_way: how its next connections send the scripts until their
     * own probe answers; and whether its ACL refused FUNCTION LOAD (the
     * option load_functions tries no more). */
    _Atomic int scripts_way;
    _Atomic bool load_refused;
    _Atomic uint64_t commands, failures, timeouts;
    _Atomic int64_t rtt_us;          /* an average of round trips, in microseconds; -1 none */
    pthread_mutex_t mu;      /* guards every field below */
    int64_t state_since;     /* when state last changed */
    char last_error[160];
    int64_t down_until;      /* no new connections before this (backoff) */
    int64_t backoff_ms;
    char tls_failure[160];   /* why the last connect failed, when TLS did ("" else) */
    char run_id[41];         /* the node's INFO run_id as last seen ("" before) */
    int64_t restarted_at;    /* when a new run_id was seen; INT64_MIN never */
    int64_t started_at;      /* when the server started, by its INFO's uptime (no earlier
                              * than it did); INT64_MIN unknown (records.h) */
    int version;             /* redis_version as major * 100 + minor; 0 unknown */
    int native;              /* RL_NATIVE_* bits its last INFO offers; -1 no INFO yet */
    int native_refused;      /* RL_NATIVE_* bits a reply refused (an ACL without the
                              * command...): not sent again until its run_id changes */
    int scripting;           /* whether it runs scripts: 1 one ran, 0 a reply said it cannot
                              * (rl_node_no_scripting), -1 not known yet; a new run_id
                              * makes it unknown again */
    char no_scripts_why[100];  /* scripting 0: the reply that said so */
    int same_as;             /* index of an earlier node with the same run_id, or -1 */
    int64_t guarded_until;   /* its guard script said so (any client's first sight); INT64_MIN none */
    int64_t guard_seen_at;   /* when this client first read the guard now running; INT64_MIN none */
    int64_t guard_asked_at;  /* when a refused vote last asked to read it again; INT64_MIN never */
    /* A Sentinel node's master: the addresses named so far (never freed
     * while the client lives, so targets stay valid), the one now (-1: ask
     * a sentinel), the sentinel to ask next, and the generation, which
     * advances whenever the master must be found again (connections of an
     * older one are not reused). */
    rl_server masters[RL_NODE_MASTERS_MAX];
    size_t n_masters;
    int master;
    int last_master;            /* the master before (for node_failover), -1 none */
    size_t next_sentinel;
    unsigned sentinel_misses;   /* sentinels that failed to answer in a row */
    int64_t epoch;              /* the group's config-epoch as a sentinel said; -1 none */
    /* A Cluster node: its slot map (empty: ask a seed), and each master's
     * run_id as last seen (masters[] is every server the map has named). */
    rl_slot_map map;
    bool mapped;
    char server_run_id[RL_NODE_MASTERS_MAX][41];
    uint64_t guards_read;       /* the masters (bits of masters[]) whose guard this client read */
    int64_t resolved_at;        /* when the asking began whose sentinel last named the master */
    int64_t poll_until;         /* an operation asks a sentinel until then (one at a time) */
    uint64_t gen;
} rl_node;

int rl_node_init(rl_node *node, const char *uri, size_t index);
void rl_node_destroy(rl_node *node);

/* Where a new connection goes now (on a Cluster node: any master). */
void rl_node_target(rl_node *node, rl_target *t);
/* Where a new connection for a key of slot `slot` goes (-1: any key): on a
 * Cluster node, the master that serves it, or the master `server` (an index
 * into masters, from a -ASK; -1 none) with ASKING; a seed to ask for the slot
 * map while the node has none. On other nodes, rl_node_target. */
void rl_node_target_slot(rl_node *node, int slot, int server, rl_target *t);
/* A Cluster node's census (the restart guard on): a master of its slot map
 * whose guard this client has not read yet (an index into masters), or -1
 * when it has read every one's, or the node is no Cluster, has no map yet,
 * or the guard is off. A new lock counts a Cluster node's yes only once it
 * has read them all, since a master held back holds back the whole node
 * (a slot may migrate off a promoted master). */
int rl_node_census(rl_node *node);
/* Where the next census connection goes: the first master rl_node_census
 * names, which the connection asks for its guard and ends (t->census). */
void rl_node_census_target(rl_node *node, int server, rl_target *t);
/* A guard script ran on a connection to master `server` (an index into
 * masters; -1 none): its answer (or its refusal) is known. */
void rl_node_guard_read(rl_node *node, int server);

/* The master a connection for slot would go to now (as rl_node_target_slot),
 * or -1 when a seed must be asked first; other nodes: -1. */
int rl_node_server_for(rl_node *node, int slot, int server);
/* A seed's CLUSTER SLOTS said map (taken over, emptied) on a connection
 * chosen in gen: it is the node's slot map from now on. REDLOCK_OK, or a
 * code with the thread's message (more masters than RL_NODE_MASTERS_MAX). */
int rl_node_mapped(rl_node *node, uint64_t gen, rl_slot_map *map);
/* A -MOVED: slot lives on host:port now; a master the map did not know
 * has the map read again from a seed before the next connection. */
void rl_node_slot_moved(rl_node *node, int slot, const char *host, int port);
/* The index in masters of host:port (added when new), or -1 (table full). */
int rl_node_server_index(rl_node *node, const char *host, int port);
/* A hash tag (digits) whose slot the master `server` serves, for a key of
 * the client's own on it (the guard's): false when it serves none. */
bool rl_node_server_tag(rl_node *node, int server, char out[16]);
/* One of its sentinels, for an operation that asks whether the master
 * moved (rl_node_poll_due). */
void rl_node_sentinel_target(rl_node *node, rl_target *t);
/* Whether a Sentinel node's master was named longer than poll_ms ago and
 * nobody is asking now: then the caller asks (a sentinel connection). */
bool rl_node_poll_due(rl_node *node, int64_t poll_ms, int64_t now);
/* Whether a connection chosen in generation gen still goes to the master
 * (a Cluster's: to a master of the map). */
bool rl_node_current(rl_node *node, uint64_t gen);
/* A sentinel named the master host:port (a connection chosen in gen asked,
 * opened at asked_at): it is the node's master from now on; a change is the
 * event node_failover. */
void rl_node_resolved(rl_node *node, uint64_t gen, const char *host, int port, int64_t asked_at);
/* Whether a Sentinel node's master was named by a sentinel asked less than
 * sentinel_poll_ms before at (always true for other nodes, and with polls or
 * the restart guard off): a new lock's vote counts only then (node.c). */
bool rl_node_confirmed(rl_node *node, int64_t at);
/* A sentinel said the group's failover count (config-epoch); the guard
 * script takes it (-1 for a node that is no Sentinel group). */
void rl_node_saw_epoch(rl_node *node, int64_t epoch);
int64_t rl_node_epoch(rl_node *node);
/* A sentinel did not answer where the master is: the next one is asked. */
void rl_node_sentinel_missed(rl_node *node, uint64_t gen);
/* Whether a sentinel is left to ask before the node counts as down: fewer
 * of them than there are failed in a row. */
bool rl_node_sentinels_left(rl_node *node);
/* The master (as chosen in gen) is not one any more, or cannot be reached:
 * a sentinel is asked again before the next connection. */
void rl_node_master_lost(rl_node *node, uint64_t gen, const char *why, int64_t now);
/* The master's address now ("" when a sentinel must be asked), for health. */
void rl_node_server(rl_node *node, char *out, size_t len);
/* Its guard script (the late client's guard) said its votes do not count
 * for left_ms more: whatever the answer, for no longer than rl_node_guard_ms
 * from when this client first read the guard now running. */
void rl_node_guarded(rl_node *node, int64_t left_ms, int64_t now);
/* A guard read again (rl_node_guard_stale) said left_ms: unlike a first
 * read, it may end the guard (a record deleted or corrected), never
 * lengthen it past rl_node_guard_ms from its first sight. */
void rl_node_guard_reread(rl_node *node, int64_t left_ms, int64_t now);
/* A vote was refused for the guard of a standalone or Sentinel node: asks,
 * at most once every RL_GUARD_REREAD_MS, that the next command to it read
 * the guard again first (rl_node_take_reread), so that a record deleted or
 * corrected stops holding it back. */
void rl_node_guard_stale(rl_node *node, int64_t now);
bool rl_node_take_reread(rl_node *node);
#define RL_GUARD_REREAD_MS 1000

/* Milliseconds before a new connection may be tried (0: now). */
int64_t rl_node_connect_wait(rl_node *node, int64_t now);
/* Connecting failed (backoff: 25 ms doubling to 1 s) or succeeded. */
void rl_node_connect_failed(rl_node *node, int64_t now);
void rl_node_connect_ok(rl_node *node);
/* What made the failed connect fail: code and why. A TLS failure
 * (REDLOCK_ETLS) is told again while the node backs off. */
void rl_node_connect_failure(rl_node *node, int code, const char *why);
/* While the node backs off: REDLOCK_ETLS with the TLS failure that made it,
 * or REDLOCK_ENOQUORUM, and why ("... next connection attempt in N ms");
 * REDLOCK_OK when it may be connected to now. */
int rl_node_backoff(rl_node *node, int64_t now, char *why, size_t whylen);

/* Reads an INFO reply of node i of nodes[0..n): its version, and its run_id,
 * which tells a restart (a new run_id) and the same server listed twice.
 * On a Cluster node, server is the master it came from (its masters index):
 * each master has its own run_id, and no other node can be the same. */
void rl_nodes_saw_info(rl_node *nodes, size_t n, size_t i, int server, const char *info,
                       size_t len, int64_t now);

/* Health. A command was sent; a reply came (rtt_ms < 0: its round trip is
 * not known, e.g. it waited for a connect); the node failed a command or a
 * connection: state RL_NODE_DOWN (cannot connect), RL_NODE_SLOW (no answer
 * in time: also a timeout), RL_NODE_AUTH (refused the credentials),
 * RL_NODE_NOPERM (its ACL refused a command or key), RL_NODE_UP (it
 * answered, with another error) or RL_NODE_KEEP (a connection lost: its
 * state is what connecting again says); why (its last error) NULL only
 * counts the failure. A change of state is an event: node_down, node_slow,
 * auth_refused, permission_denied, node_back. */
const char *rl_node_state_name(rl_node_state state);
void rl_node_sent(rl_node *node);
void rl_node_answered(rl_node *node, int64_t rtt_ms, int64_t now);
void rl_node_failed(rl_node *node, rl_node_state state, const char *why, int64_t now);
/* The state an error reply with code (rl_reply_error_code) leaves a node in:
 * RL_NODE_AUTH, RL_NODE_NOPERM, or RL_NODE_UP (it answered). */
rl_node_state rl_node_state_after(int code);

/* How long a node that may have lost keys counts for no new lock (the
 * restart guard): max_lease_ms, and on a Sentinel node sentinel_poll_ms
 * more, as a client that has not asked the sentinels since a failover may
 * go on taking locks on the demoted master for that long (all clients of a
 * node use the same values). */
int64_t rl_node_guard_ms(const rl_node *node);
/* Milliseconds for which the node's votes do not count yet, because it
 * may have lost keys less than rl_node_guard_ms ago (this client saw its
 * run_id change, or its guard script says so: see scripts/guard.lua); 0
 * when they count. */
int64_t rl_node_guard_left(rl_node *node, int64_t now);
/* The index of an earlier node that is the same server, or -1. */
int rl_node_same_as(rl_node *node);
/* Its redis_version as its last INFO said (major * 100 + minor; 0 unknown). */
int rl_node_version(rl_node *node);
/* Whether the node is known to run Redis 7.0 or later (SET with NX and GET). */
bool rl_node_has_set_nx_get(rl_node *node);
/* Whether the node is known to take the native command `bit` (RL_NATIVE_*):
 * its last INFO offers it and no reply since it started refused it. False
 * before any INFO: a connection's first commands go the scripted way. */
bool rl_node_has_native(rl_node *node, int bit);
/* A reply refused the native command `bit` (unknown, a syntax error, an ACL
 * without it): the node's commands go the scripted way until its run_id
 * changes. True the first time (the caller tells it once). */
bool rl_node_native_refused(rl_node *node, int bit);
/* The native commands the node takes now (RL_NATIVE_* bits), or -1 when no
 * INFO has said yet: its health's native= field. */
int rl_node_native(rl_node *node);
/* Scripting (node.h's scripting): a script ran there (the guard, SCRIPT
 * LOAD, the library's probe); or a reply said that no script can run there
 * (Lua unloaded, an ACL without EVAL and FCALL: plain.h says which replies):
 * plain locks go by plain commands from then on (plain.h) and what needs a
 * script is refused. rl_node_no_scripting is true the first time (the
 * caller tells it once, as the event no_scripting), and keeps why for the
 * messages of what is refused. */
void rl_node_scripts_ran(rl_node *node);
bool rl_node_no_scripting(rl_node *node, const char *why);
/* 1 scripts run there, 0 they cannot, -1 not known yet; why (may be NULL,
 * len bytes): the reply that said they cannot. */
int rl_node_scripting(rl_node *node, char *why, size_t len);
/* How many of ctx's nodes are known to run no scripts. */
size_t rl_client_scriptless(const struct rl_client *ctx);

/* Node i's server as its last INFO said: its run_id ("" unknown) and when it
 * started (INT64_MIN unknown). A Cluster node's: none. */
void rl_node_identity(rl_node *node, char run_id[41], int64_t *started_at);

/* Finds "run_id:<40 hex>" in an INFO reply; 0 when found. */
int rl_info_run_id(const char *info, size_t len, char out[41]);
/* Finds "redis_version:X.Y" in an INFO reply: X * 100 + Y, or 0. */
int rl_info_version(const char *info, size_t len);
/* The RL_NATIVE_* bits an INFO reply's server offers: from
 * "server_name:valkey" and "valkey_version:X.Y.Z"; 0 for any other server. */
int rl_info_native(const char *info, size_t len);
/* Finds "uptime_in_seconds:N" in an INFO reply: N, or -1. */
int64_t rl_info_uptime(const char *info, size_t len);

#endif /* RL_NODE_H */
