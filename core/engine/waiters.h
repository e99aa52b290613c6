/*
 * waiters.h - who is woken, and when, by the releases a client hears of:
 * the lock calls waiting for a lock held elsewhere, the channels they need
 * subscribed on each node, and what a subscriber's events (sub.h) mean for
 * them. No I/O, no clock, no threads: the blocking driver's waker thread
 * (wake.c) and the drivers of other event loops (redlock_engine.h) register
 * their waiters, feed it their subscribers' events and the time, and wake
 * the waiters it names.
 *
 * The rules, in one place:
 *   - When a node confirms a channel, every waiter for it tries again, once
 *     per waiter: the release may have come before the subscription.
 *   - A release is published by every node it reaches, with its token, on
 *     the channel of each key it deleted. Once a quorum of the nodes told the
 *     same token, the waiter for that channel that has waited longest tries
 *     again (before that, an attempt would find the lock still held on too
 *     many nodes), and again on each later message of it, should its attempt
 *     have raced the release on some node.
 *   - A node that refuses the subscription (no channel permission in its
 *     ACL) is asked again only after REFUSED_MS, and the note says waiters
 *     are not woken; a subscriber connection lost is made again after
 *     RECONNECT_MS. Subscriber connections are kept while anyone waits and
 *     LINGER_MS after that, unsubscribed.
 * Waiters keep their timed retries: a wake-up only shortens a wait, and is
 * never input to safety.
 */
#ifndef RL_WAITERS_H
#define RL_WAITERS_H

#include "sub.h"

typedef struct rl_waiters rl_waiters;

#define RL_WAITERS_LINGER_MS 2000      /* subscribers stay this long after the last waiter */
#define RL_WAITERS_RECONNECT_MS 1000   /* a lost subscriber is made again after this */
#define RL_WAITERS_REFUSED_MS 60000    /* ... or this, when the node refused it */

/* The waiters of a client of n_nodes nodes, or NULL when out of memory. */
rl_waiters *rl_waiters_new(size_t n_nodes);
void rl_waiters_free(rl_waiters *w);

/* Registers waiter id (not 0; the driver's, unique while registered),
 * waiting for the channels named keys, after those already registered.
 * REDLOCK_OK, or REDLOCK_ENOMEM (nothing registered). */
int rl_waiters_add(rl_waiters *w, uint64_t id, const char *const *keys, size_t n);
/* Ends id's registration (a wake-up not yet taken goes with it). */
void rl_waiters_remove(rl_waiters *w, uint64_t id, int64_t now);

/* When the driver closes its subscriber connections, nobody waiting any
 * more: INT64_MAX while someone waits. */
int64_t rl_waiters_idle_at(const rl_waiters *w);
/* When a new subscriber connection to node may be made. */
int64_t rl_waiters_connect_at(const rl_waiters *w, size_t node);
/* Node's subscriber connection ended: failed (lost, or refused), or closed
 * by the driver once idle. What it was subscribed to goes with it. */
void rl_waiters_closed(rl_waiters *w, size_t node, bool failed, int64_t now);

/* Queues on s, node's subscriber, the SUBSCRIBE and UNSUBSCRIBE that make
 * it match the channels waited for. REDLOCK_OK or REDLOCK_ENOMEM. */
int rl_waiters_match(rl_waiters *w, size_t node, rl_sub *s);
/* An event of node's subscriber (rl_sub_next): marks the waiters to wake.
 * true when the node refused, and its connection is to be closed. */
bool rl_waiters_event(rl_waiters *w, size_t node, int event, const char *channel,
                      const char *text);
/* The next waiter to wake, longest waiting first, or 0 when none is left. */
uint64_t rl_waiters_next(rl_waiters *w);
/* Whether some waiter is to be woken (rl_waiters_next would name it). */
bool rl_waiters_woken(const rl_waiters *w);

/* Why waiters are not being woken ("" when nothing says so). */
const char *rl_waiters_note(const rl_waiters *w);

#endif /* RL_WAITERS_H */
