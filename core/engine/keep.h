/*
 * keep.h - the renewal of a kept lock: when to extend it, and when it is
 * lost. No I/O, no threads: the keeper of a driver's kept locks (keeper.h)
 * and the drivers that use redlock_keep (redlock_engine.h) ask it what to
 * do, run the extensions it asks for, and tell it how each ended.
 *
 * The rules, in one place:
 *   - The lock is extended by its lease (the one it was last taken or
 *     extended with) a third of that lease after the last success, less a
 *     spread of its own (up to a twelfth of the lease, from a hash of its
 *     token): locks taken together do not all fall due together. A renewal
 *     sooner than that is always safe (the lease only starts again).
 *   - Renewals are batched: one that is due takes along those due within
 *     RL_KEEP_WINDOW (a thirtieth of the lease, at most 100 ms; a retry
 *     after a failure is never sooner than its pause), so the
 *     driver sends one command per node for many locks (rl_op_extend_many,
 *     at most RL_KEEP_BATCH_LOCKS locks and RL_KEEP_BATCH_KEYS keys each);
 *     each lock is still decided on its own by the nodes' quorum.
 *   - When the nodes fail (no quorum, no answer, ...), the extension is
 *     tried again after retry_delay_ms (at least 10 ms), while validity lasts.
 *   - It is lost when a quorum says the key is not ours (REDLOCK_ENOTHELD),
 *     or when its validity runs out before an extension succeeds: at that
 *     moment, even with an extension under way, whose success then changes
 *     nothing.
 * Each failed extension is the event renewal_failed, and the loss the event
 * lost (log.h), made here and nowhere else. They are handed to the caller
 * (an rl_keep_event), to be told with rl_keep_tell once it holds no lock.
 */
#ifndef RL_KEEP_H
#define RL_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "redlock.h"

/* The parts of an event's text, each buffer's size with its NUL: which lock
 * ("resource=... owner=..."), the fields ("code=... retry_in_ms=..."), and
 * the message, k->message for the loss. */
#define RL_KEEP_WHICH_LEN 320
#define RL_KEEP_FIELDS_LEN 128
#define RL_KEEP_MESSAGE_LEN 256

typedef struct rl_keep {
    redlock_handle *h;
    int64_t next_at;       /* when the next extension is due */
    int64_t early;         /* it may start this much sooner: the batching window for a
                            * renewal, 0 for a retry (retry_delay_ms is a minimum) */
    int64_t until;         /* the validity's end before the extension under way */
    bool extending;        /* one is under way (asked for, not yet ended) */
    int status;            /* REDLOCK_OK, or why it was lost */
    char message[RL_KEEP_MESSAGE_LEN];
} rl_keep;

/* An event to tell (name NULL: none, or none the hook would take). The
 * caller zeroes it; the calls below set it when they make an event. */
typedef struct rl_keep_event {
    int level;
    const char *name;
    /* "which fields: message": the three parts' sizes hold their lengths and
     * the three separators' characters; one more for the NUL. The loss's
     * text is always whole; a longer message of a failed extension is cut. */
    char text[RL_KEEP_WHICH_LEN + RL_KEEP_FIELDS_LEN + RL_KEEP_MESSAGE_LEN + 1];
} rl_keep_event;

/* A renewal of many locks sends at most this many locks and keys in one
 * command: on Redis 7.0 the extend_many script takes about 0.9 us a key,
 * so a call of 500 keys holds a node under half a millisecond. */
#define RL_KEEP_BATCH_LOCKS 500
#define RL_KEEP_BATCH_KEYS 500
/* The batching window of a lease: renewals due this soon go together. */
#define RL_KEEP_WINDOW(lease_ms) ((lease_ms) / 30 < 100 ? (lease_ms) / 30 : 100)

#define RL_KEEP_WAIT 0      /* nothing to do before *at */
#define RL_KEEP_EXTEND 1    /* start an extension of h now; *at: when validity runs out */
#define RL_KEEP_LOST 2      /* lost: k->status and k->message say why */

/* Starts keeping h, taken (or extended) at now. */
void rl_keep_init(rl_keep *k, redlock_handle *h, int64_t now);
/* What to do at now; *at: when to ask again at the latest. */
int rl_keep_next(rl_keep *k, int64_t now, int64_t *at, rl_keep_event *ev);
/* An extension starts now that rl_keep_next did not ask for (the owner's):
 * it is told as any with rl_keep_extended. */
void rl_keep_start(rl_keep *k);
/* The latest time rl_keep_next must be asked again if nothing changes:
 * when validity runs out, or sooner when the next extension falls due (not
 * while one is under way). A driver of many keeps looks at all of them
 * only at the least of these. */
int64_t rl_keep_when(const rl_keep *k);
/* The extension asked for ended with status (message: the operation's, or
 * why it could not start). */
void rl_keep_extended(rl_keep *k, int status, const char *message, int64_t now,
                      rl_keep_event *ev);
/* Tells ev to the hook of ctx, if there is one to tell. */
void rl_keep_tell(const rl_client *ctx, const rl_keep_event *ev);

#endif /* RL_KEEP_H */
