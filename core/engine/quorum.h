/*
 * quorum.h - the Redlock rules, in one place: the quorum, drift and
 * validity, which votes count (the restart guard, one server listed twice),
 * and the one verdict that decides "held or not" for acquire, extend and
 * release. Pure functions of the votes and the times they are given.
 */
#ifndef RL_QUORUM_H
#define RL_QUORUM_H

#include "proto.h"

struct rl_client;

typedef enum rl_verb {
    RL_VERB_ACQUIRE,
    RL_VERB_EXTEND,
    RL_VERB_RELEASE,
    RL_VERB_INSPECT,    /* is the lock held, by anyone, and for how long */
    RL_VERB_FORCE,      /* delete the key whatever its token */
    RL_VERB_PING        /* does a quorum of the nodes answer */
} rl_verb;

size_t rl_quorum(size_t n_nodes);
/* The nodes a permit of a semaphore of `permits` must be held on: more than
 * permits * n / (permits + 1). Were permits + 1 holders each on that many,
 * some node would hold more than `permits` of them, which none allows. One
 * permit (or 0: a lock) is the majority, rl_quorum. */
size_t rl_quorum_of(size_t n_nodes, int permits);
int64_t rl_drift_ms(int64_t ttl_ms, double drift_factor);
int64_t rl_validity_ms(int64_t ttl_ms, int64_t elapsed_ms, double drift_factor);

/* Whether node's yes may count for verb: not for acquire (nor ping) from a
 * node that may have lost keys less than max_lease_ms ago (restarted, or a
 * replica promoted: the restart guard; an extend's yes counts, since the
 * node holds our token), nor from one the records do not vouch for
 * (records.h: then r->records, while they may yet), nor, for acquire, extend and inspect, from a
 * second name of a server already counted. Turns such a yes into a
 * failure that says why. */
void rl_quorum_admit(struct rl_client *ctx, size_t node, rl_verb verb, rl_result *r,
                     int64_t now);

/* When an acquire's round lacks a quorum because the restart guard holds
 * back yes votes: how long until enough of those nodes count again for the
 * round's yes votes to make a quorum (a wait with a known end, not an
 * outage); 0 when the guard is not what it lacks. *only_guards: no node
 * failed otherwise (down, timed out, an error). */
int64_t rl_quorum_guard_wait(const rl_result *results, size_t n, size_t q, bool *only_guards);

/* One round of votes, as the verdict needs it. */
typedef struct rl_round {
    rl_verb verb;
    const rl_result *results;   /* one per node of the ctx */
    int64_t start;              /* when the round's commands were first queued */
    int64_t now;
    int64_t ttl_ms;             /* acquire, extend: the lease asked for */
    int permits;                /* a semaphore's permit: its number of permits (its quorum,
                                 * rl_quorum_of); 0 for a lock */
    bool final;                 /* no more replies will be waited for */
    /* release: the lock as the handle saw it when unlock began */
    bool was_held;
    int64_t expires_at;
    /* extend: the expiry before the extend */
    int64_t old_expires_at;
} rl_round;

typedef struct rl_verdict {
    bool decided;
    int rc;                     /* REDLOCK_OK, or why not */
    bool held;                  /* the lock is (still) held afterwards; inspect: by anyone */
    int64_t expires_at;         /* when held: when its validity ends */
    int64_t ttl_ms;             /* inspect, when held: its PTTL on a quorum (-1: no expiry) */
    size_t deleted;             /* force: the nodes that deleted a lock */
    int64_t available;          /* a semaphore's query: the permits free on a quorum */
} rl_verdict;

/*
 * Decides a round once it can be decided: a quorum said yes, or yes can no
 * longer reach a quorum, or the round is final. On failure writes the
 * message, naming `what` ("lock 'orders'") and each node that failed.
 *   acquire: held with a quorum of yes and a positive validity, measured
 *            from start to now: expires_at = start + ttl - drift.
 *   extend:  the same from the extend's start; without a quorum the lock
 *            keeps its old expiry, or start + ttl - drift if that is sooner
 *            (a node that did apply the shorter lease ends it sooner), and
 *            is lost when a quorum said "not ours". (op.c shortens the
 *            expiry the same way as the extend starts: a node may apply the
 *            shorter lease before the round is decided.)
 *   release: REDLOCK_OK when the lock was held until now and a quorum
 *            confirmed; never held afterwards.
 */
/*
 * Decides a query or a forced unlock (verb inspect or force).
 *   permits: (inspect of a semaphore: round.permits set) decided when every
 *            node answered or its deadline passed: REDLOCK_OK when a
 *            permit's quorum answered, available then the permits that
 *            could be had now: the quorum-th most free among the nodes
 *            (a node that did not answer counts none free).
 *   inspect: held when a quorum of the nodes has the key with one value
 *            (one holder), its ttl_ms then the quorum-th longest of their
 *            PTTLs (the time a quorum still has it); not held once no value
 *            can reach a quorum even counting every node that failed or has
 *            not answered; REDLOCK_ENOQUORUM when too few answered to tell.
 *   force:   decided when every node answered or its deadline passed:
 *            REDLOCK_OK when a quorum answered (the key is gone from a
 *            quorum: the lock is not held), deleted the nodes that had it.
 *   ping:    decided when every node answered or its deadline passed:
 *            REDLOCK_OK when a quorum answered and counts (rl_quorum_admit:
 *            not a node under the restart guard, nor a server counted
 *            already), deleted how many did.
 */
void rl_quorum_query(const struct rl_client *ctx, const rl_round *round, const char *what,
                     rl_verdict *out, char *msg, size_t msglen);

void rl_quorum_decide(const struct rl_client *ctx, const rl_round *round, const char *what,
                      rl_verdict *out, char *msg, size_t msglen);

/*
 * Fencing tokens across a quorum. Each node that takes a lock increments a
 * counter per key, right behind taking it (in the same script, or as the
 * INCR pipelined behind a single key's SET, which counts refused attempts
 * too), and a fence write-back raises the counter only while the key holds
 * our token: so each node whose count we use reached it, or our fence F,
 * with our key there (an INCR that ran after our key expired would answer
 * too late for the lock to have validity). Counters only grow. A later
 * holder takes its keys on a quorum after ours are gone, so on the node its
 * quorum shares with a quorum whose counters reached F, its increment
 * returns more than F, and its fence (the largest of its quorum) is larger
 * than F.
 *
 * Given the counters the nodes that said yes returned (got[node * n_keys +
 * key]), writes the fence of each key (the largest) into fences, marks in
 * behind[node] each yes that counted less on some key, and returns how many
 * yes nodes counted every fence: the lock is fenced when that is a quorum;
 * else the fences are written back to the nodes behind, and a quorum of
 * both together fences it (the round decided by rl_quorum_decide).
 */
size_t rl_quorum_fences(const rl_result *results, size_t n_nodes, const int64_t *got,
                        size_t n_keys, int64_t *fences, bool *behind);

#endif /* RL_QUORUM_H */
