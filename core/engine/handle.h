/*
 * handle.h - a lock's handle: what an acquired lock is (its keys, token,
 * expiry and state), made from the names a caller gave (checked, prefixed,
 * and split by slot for a Cluster node), and the bound of its lease.
 */
#ifndef RL_HANDLE_H
#define RL_HANDLE_H

#include <stdatomic.h>

#include "cmd.h"

struct rl_client;

/* An acquired lock. Its owner's thread and, while a driver renews it, the
 * driver's thread both use it: what both touch is atomic. */
struct redlock_handle {
    struct rl_client *ctx;
    rl_keys *keys;
    char token[RL_TOKEN_LEN + 1];
    _Atomic int64_t expires_at;   /* the driver's ms at which validity reaches 0 */
    _Atomic int64_t lease_ms;     /* of the last acquire or extend: renewals use it */
    _Atomic bool held;            /* acquired, and not since lost or released */
    _Atomic bool lost;            /* its renewal failed for good, or came too late */
    _Atomic bool released;        /* unlock was called */
    _Atomic bool ran_out;         /* unlock found it lost or its validity run out */
    _Atomic int reentries;        /* holds counted by redlock_handle_reenter (hold.c) */
    rl_cmd *acquired_by;          /* the acquire that made it: undone where late */
    int64_t *fences;              /* fencing: the fence of each key; else NULL */
    char waiter[RL_TOKEN_LEN + 1];   /* a fair lock: the id it waited under (its release
                                      * takes that waiter's place out of every queue) */
    /* The nodes (bit i: node i) its acquire never reached: refused there
     * unsent (the node silent, or its connection unusable), so that no
     * node of these can hold its token. Its release skips them: a stalled
     * node costs an unlock nothing. Not for a fair lock (its waiter may be
     * queued there by an earlier attempt), nor for a multi-lock taken part
     * by part on a Cluster node. */
    uint64_t unreached;
    /* On a client with a Cluster node, a multi-lock whose names hash to
     * several slots: its keys sorted by slot, and the keys of each slot
     * (n_parts of them, in that order), which a Cluster node takes one
     * command at a time (round.c); 0 and NULL otherwise. */
    size_t n_parts;
    rl_keys **parts;
    /* The driver's, as rl_conn's io_data is (the engine never reads it):
     * the blocking driver's record of its renewal, while it is watched. */
    void *_Atomic driver_data;
};

/* Frees a handle and its keys (no I/O). */
void rl_handle_free(redlock_handle *h);

/* Whether a node of the client is a Cluster. */
bool rl_handle_has_cluster(const struct rl_client *ctx);

/* The slot of a lock's keys (of its first part when it has parts), for a
 * Cluster node's connection; -1 for none. */
int rl_handle_keys_slot(const rl_keys *keys);

/* A handle for the given resources, their keys prefixed; names checked. */
int rl_handle_new(redlock_handle **out, struct rl_client *ctx, const char *const *names, size_t n);

/* A lease must not be longer than max_lease_ms: the guard of a node that
 * may have lost keys lasts that long, and holds only if no lease outlives
 * it. */
int rl_handle_check_lease(const struct rl_client *ctx, int64_t ttl_ms);

#endif /* RL_HANDLE_H */
