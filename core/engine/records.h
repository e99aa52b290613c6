/*
 * records.h - the nodes remember each other: how a server that restarted
 * without its data is caught by a client that never met it.
 *
 * A server that lost its data cannot tell: its guard key (scripts/guard.lua)
 * is gone with the rest, and it looks like a server never used. The other
 * nodes can tell. Each node keeps a record (the string key
 * <prefix>redlock:members): the run_ids of the group's servers that clients
 * have seen, separated by spaces. Clients read it on every new connection
 * (GET) and add the run_ids they see that are missing (APPEND, sent before
 * the next command to that node). A server's yes counts for a new lock (and
 * a ping) when
 *   - its run_id is in the records of a majority of the nodes that keep
 *     them, or
 *   - it is not yet, but may be added: it has run for the guard's length
 *     (rl_node_guard_ms: max_lease_ms), so any key it lost has expired; or
 *     every node's record was read and none names a server that is no longer
 *     in the group (nothing was replaced: a fresh group). It counts once
 *     the majority acknowledged the addition (the vote waits, the round
 *     after is the next attempt at once: rl_records_standing's
 *     RL_STANDING_PENDING);
 *   - else it is held back until it has run for the guard's length
 *     (RL_STANDING_HELD): a record names a server gone from the group, and
 *     this one, new and young, may be what replaced it, empty.
 * So a group that was in use and lost a server's data is caught as long as
 * one node that recorded that server kept its data; every record is on a
 * majority at least (all nodes that answer). Nothing protects a group whose
 * nodes all lost their data together, nor one node alone.
 *
 * Records only grow: one run_id per server run, a few dozen bytes each. A
 * record that does not read as run_ids names no server of the group: it
 * holds young servers back, never longer than the guard's length.
 *
 * With the options restart_guard and restart_records on (both are by
 * default). Nodes that keep records: standalone masters and
 * Sentinel groups (a Cluster node has many masters: its restarts are its
 * replicas' business, see docs/topology.md), whose ACL lets GET and APPEND
 * run on the record (a node that refuses is left out, and its health says
 * why). Thread-safe.
 */
#ifndef RL_RECORDS_H
#define RL_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rl_client;

#define RL_RECORDS_KEY "redlock:members"

typedef struct rl_records rl_records;

rl_records *rl_records_new(size_t n_nodes);
void rl_records_free(rl_records *r);

/* Whether node i keeps a record (see above). */
bool rl_records_kept(struct rl_client *ctx, size_t i);
/* A GET of node i's record answered: value (len bytes; NULL: no record). */
void rl_records_read(struct rl_client *ctx, size_t i, const char *value, size_t len);
/* Node i refused the record's GET or APPEND (its ACL, or the key holds
 * another type): it keeps none from now on. */
void rl_records_refused(struct rl_client *ctx, size_t i);
/* The run_ids to add to node i's record now (" id id..."), written into out
 * (cap bytes at least RL_RECORDS_OWED_MAX): its length, 0 when none. One
 * addition is out at a time (another goes a second later if it got lost). */
size_t rl_records_owed(struct rl_client *ctx, size_t i, int64_t now, char *out, size_t cap);
#define RL_RECORDS_OWED_MAX (64 * 41 + 1)
/* Node i's APPEND of what rl_records_owed gave answered OK. */
void rl_records_added(struct rl_client *ctx, size_t i);

typedef enum rl_standing {
    RL_STANDING_COUNTS,    /* its yes counts */
    RL_STANDING_PENDING,   /* not yet: the records are being read or written */
    RL_STANDING_HELD       /* not before it has run for the guard's length */
} rl_standing;

/* Whether node i's yes counts for a new lock now. *left_ms: when it is not
 * counted, how long until it has run for the guard's length (then it counts
 * whatever the records say); 0 otherwise. */
rl_standing rl_records_standing(struct rl_client *ctx, size_t i, int64_t now, int64_t *left_ms);

#endif /* RL_RECORDS_H */
