/*
 * keeper.h - the kept locks of one driver of a client, scheduled: which is
 * due when, which renewals go together, how many run at once, which were
 * lost. No I/O, no clock, no threads: the C client's thread (async.c, under
 * its mutex) and the drivers of other event loops (redlock_engine.h's
 * redlock_keeper) add and remove locks under ids of their own, run the
 * operations it makes, tell it how each ended, and follow what it says.
 *
 * Each lock's rules are its rl_keep's (keep.h: due a third of its lease
 * after each success, again after a pause while validity lasts when the
 * nodes fail, lost when a quorum says the key is not ours or validity runs
 * out first). On top of them, the keeper's own:
 *   - A lock whose keep asks for an extension waits for a renewal. A
 *     renewal takes the first lock waiting and those after it that batch
 *     with it (rl_op_batches_with: on a Cluster node the same slot), up to
 *     RL_KEEP_BATCH_LOCKS locks and RL_KEEP_BATCH_KEYS keys, looking at no
 *     more than RL_KEEPER_LOOK locks waiting: one command per node for all
 *     of them (rl_op_extend_many).
 *   - At most max(1, pool_size) renewals run at once, so that they run on
 *     the pooled connections of each node rather than opening new ones;
 *     the locks of the others wait their turn (their validity still
 *     counts: one that runs out while waiting is lost).
 *   - A lock removed is renewed no more at once; when a renewal of it is
 *     under way, the driver is told once it ended (an unlock waits for it:
 *     no extension may follow the release).
 *   - The owner's own extension of a kept lock (rl_keeper_extend) goes
 *     through the keeper too: its lock's next renewal is planned from it.
 * The events (renewal_failed, lost: keep.h) are queued, for the driver to
 * tell where the hook may run (rl_keeper_events).
 */
#ifndef RL_KEEPER_H
#define RL_KEEPER_H

#include <stdbool.h>
#include <stdint.h>

#include "keep.h"
#include "op.h"

typedef struct redlock_keeper rl_keeper;

/* What rl_keeper_drive asks of the driver (bits). */
#define RL_KEEPER_RUN 1     /* operations to run: rl_keeper_take_op */
#define RL_KEEPER_LOST 2    /* kept locks lost: rl_keeper_next_lost */
#define RL_KEEPER_ENDED 4   /* removed locks whose last extension ended: rl_keeper_next_ended */

/* A renewal is made of the first RL_KEEPER_LOOK locks waiting at most. */
#define RL_KEEPER_LOOK (4 * RL_KEEP_BATCH_LOCKS)

/* An event to tell, queued. */
typedef struct rl_keeper_event {
    struct rl_keeper_event *next;
    rl_keep_event ev;
} rl_keeper_event;

/* The keeper of ctx's kept locks, or NULL when out of memory. */
rl_keeper *rl_keeper_new(rl_client *ctx);
/* The client whose locks it keeps. */
rl_client *rl_keeper_ctx(const rl_keeper *k);
/* Frees it, with the operations not yet taken; the ones taken are the
 * driver's (they must not be told to it afterwards). NULL is a no-op. */
void rl_keeper_free(rl_keeper *k);

/* Keeps h, held (taken or extended) at now, under id (not 0, and not kept
 * already). REDLOCK_OK; REDLOCK_ENOTHELD when h is not held (released,
 * lost, or its validity over); REDLOCK_EINVAL (a lock of another client,
 * an id 0 or in use) or REDLOCK_ENOMEM, with the message set. */
int rl_keeper_add(rl_keeper *k, uint64_t id, redlock_handle *h, int64_t now);
/* Stops keeping id: no renewal of it starts from now on. 0: done; 1: a
 * renewal of it is under way, and id is told by rl_keeper_next_ended once
 * it ended (h is used until then); REDLOCK_EINVAL when id is not kept. */
int rl_keeper_remove(rl_keeper *k, uint64_t id);
/* No renewal starts from now on (the client is closing); locks are still
 * found lost when their validity runs out. */
void rl_keeper_halt(rl_keeper *k);

/* Looks at the locks due at now, starts the renewals that may start, and
 * says what to do: RL_KEEPER_* bits (0: nothing before *at). *at: when to
 * drive it again at the latest (INT64_MAX: nothing kept). */
int rl_keeper_drive(rl_keeper *k, int64_t now, int64_t *at);
/* When the keeper is next to be driven, if nothing happens. */
int64_t rl_keeper_at(const rl_keeper *k);
/* The next operation to run (each once), or NULL. */
rl_op *rl_keeper_take_op(rl_keeper *k);
/* op, one of the keeper's, ended (done), or was given up (not done: each of
 * its locks is told REDLOCK_ENOQUORUM): each lock is told its outcome.
 * Before op is freed; then drive again. REDLOCK_EINVAL when op is not one
 * of the keeper's under way. */
int rl_keeper_op_ended(rl_keeper *k, rl_op *op, int64_t now);
/* The next lock lost (its id), the first found first; 0 when none. A lock
 * lost stays kept, renewed no more, until removed. */
uint64_t rl_keeper_next_lost(rl_keeper *k);
/* The next lock removed whose last renewal ended (its id); 0 when none. */
uint64_t rl_keeper_next_ended(rl_keeper *k);

/* REDLOCK_OK while id is kept; once lost, why (REDLOCK_EEXPIRED,
 * REDLOCK_ENOTHELD, ...) and *message (may be NULL) the keeper's until id
 * is removed; REDLOCK_EINVAL when id is not kept. */
int rl_keeper_status(const rl_keeper *k, uint64_t id, const char **message);
/* 1 while an extension of id waits or runs, 0 when none, REDLOCK_EINVAL when
 * id is not kept (nor removed with a renewal under way). */
int rl_keeper_busy(const rl_keeper *k, uint64_t id);
/* The owner's extension of id by ttl_ms, for the driver to run and tell
 * (rl_keeper_op_ended) as the keeper's own; a renewal of it that waited
 * for its turn is no longer needed. REDLOCK_EINVAL when id is not kept or
 * a renewal of it is under way (rl_keeper_busy), REDLOCK_ENOTHELD once
 * lost; when the operation cannot be made, its status, and the lock's keep
 * was told. */
int rl_keeper_extend(rl_op **out, rl_keeper *k, uint64_t id, int64_t ttl_ms, int64_t now);

/* The events made since last asked, oldest first: the caller's to tell. */
rl_keeper_event *rl_keeper_events(rl_keeper *k);
/* Tells each of evs to the hook of ctx, and frees them. */
void rl_keeper_tell(const rl_client *ctx, rl_keeper_event *evs);

#endif /* RL_KEEPER_H */
