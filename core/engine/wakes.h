/*
 * wakes.h - wake-ups on release, as one state machine: the waiters
 * (waiters.h: who is woken when) and the subscriber connection each node
 * needs for them (sub.h), tended. It says when a node's subscriber is to be
 * connected, what it writes, what its bytes mean, and when it is closed; a
 * driver (wake.c's thread, an event loop through redlock_engine.h) only
 * connects, writes, reads and closes as the action bits say, and wakes the
 * waiters it names. No I/O, no clock, no threads.
 *
 * A node's subscriber is NONE (no connection), CONNECTING (the driver was
 * told to connect it: rl_wakes_connected or rl_wakes_lost follows) or OPEN.
 * Connections are made while someone waits, no sooner than waiters.h's
 * pause after a failure, and closed once nobody has waited for its linger.
 */
#ifndef RL_WAKES_H
#define RL_WAKES_H

#include "cmd.h"
#include "waiters.h"

struct rl_client;
typedef struct redlock_waiters rl_wakes;

/* The actions of rl_wakes_drive, numbered as in redlock_engine.h. */
#define RL_WAKES_CONNECT REDLOCK_WAITERS_CONNECT   /* rl_wakes_next_connect */
#define RL_WAKES_WRITE REDLOCK_WAITERS_WRITE       /* rl_wakes_output of each open node */
#define RL_WAKES_CLOSE REDLOCK_WAITERS_CLOSE       /* rl_wakes_next_close */
#define RL_WAKES_WAKE REDLOCK_WAITERS_WAKE         /* rl_wakes_next */

/* The wake-ups of client c's lock calls, or NULL when out of memory. c is
 * read by rl_wakes_drive while someone waits; it may go before the wake-ups
 * are freed. */
rl_wakes *rl_wakes_new(const struct rl_client *c);
/* Frees it with its subscribers' state (the driver closes their sockets). */
void rl_wakes_free(rl_wakes *w);

/* Registers waiter id (not 0, unique while registered) for keys' channels.
 * REDLOCK_OK or REDLOCK_ENOMEM (it keeps its timed retries only). */
int rl_wakes_add(rl_wakes *w, uint64_t id, const rl_keys *keys);
/* Ends id's registration. */
void rl_wakes_remove(rl_wakes *w, uint64_t id, int64_t now);
/* Why waiters are not being woken ("" when nothing says so). */
const char *rl_wakes_note(const rl_wakes *w);

/* What to do at now: RL_WAKES_* bits (take closes before connects); *at:
 * when to drive again if nothing happens (INT64_MAX: nothing to tend). */
int rl_wakes_drive(rl_wakes *w, int64_t now, int64_t *at);
/* The next node whose subscriber is to be connected (to the node's server:
 * a Sentinel node's master), or to be closed; -1 when none. */
int rl_wakes_next_connect(rl_wakes *w);
int rl_wakes_next_close(rl_wakes *w);

/* The driver's connection to node: connected (for TLS, its handshake done),
 * or lost (it failed, broke, or could not be made). */
void rl_wakes_connected(rl_wakes *w, size_t node);
void rl_wakes_lost(rl_wakes *w, size_t node, int64_t now);
/* Bytes read from node's subscriber: its events mark waiters to wake.
 * REDLOCK_OK, or REDLOCK_EREDIS when the connection is to be closed (its
 * stream broke, or the node refused): the next drive says CLOSE. */
int rl_wakes_received(rl_wakes *w, size_t node, const char *bytes, size_t len, int64_t now);
/* The bytes node's open subscriber has to write, then how many were. */
size_t rl_wakes_output(const rl_wakes *w, size_t node, const char **bytes);
void rl_wakes_wrote(rl_wakes *w, size_t node, size_t n);

/* The next waiter to wake, longest waiting first; 0 when none. */
uint64_t rl_wakes_next(rl_wakes *w);

/* Whether there is nothing to tend: nobody waits or lingers, no subscriber
 * is left and nothing is to be told (a driver's thread may end). */
bool rl_wakes_idle(const rl_wakes *w);

#endif /* RL_WAKES_H */
