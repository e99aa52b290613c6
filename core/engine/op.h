/*
 * op.h - operations: acquire (with the wait and retry policy around its
 * attempts), extend and release, each a state machine over the nodes. An
 * operation does no I/O and reads no clock: a driver gives it connections
 * (rl_op_attach), moves bytes and reports events through engine.h, passes
 * the time, and asks what it wants next (rl_op_wants_conn, rl_op_wake_at)
 * until rl_op_done.
 *
 * One round sends one command to every node at once, each node with its own
 * deadline, and ends as soon as quorum.c can decide it. After a failed
 * acquire attempt the release goes to every node that may have run it (on
 * the same connection, behind the acquire), and the operation pauses
 * (retry_delay_ms +- retry_jitter_ms) and tries again with a fresh token
 * while wait_ms lasts; REDLOCK_ELOCKED, REDLOCK_ENOQUORUM, REDLOCK_EEXPIRED
 * and REDLOCK_EREDIS are worth another attempt, the rest are not.
 *
 * With the option fencing, an acquire also counts on each key's counter on
 * the nodes that take it, and the lock's fence is the largest count among
 * them; when fewer than a quorum counted that much, a second round writes it
 * back to the others before the lock is ours (quorum.h, rl_quorum_fences).
 */
#ifndef RL_OP_H
#define RL_OP_H

#include <stdatomic.h>

#include "cmd.h"
#include "handle.h"

struct rl_client;

typedef struct redlock_op rl_op;

/* Each checks its arguments and fails (REDLOCK_EINVAL, ...) with this
 * thread's message set, or makes an operation that starts at `now`. */
int rl_op_lock(rl_op **out, struct rl_client *ctx, const char *const *names, size_t n,
               int64_t ttl_ms, int64_t wait_ms, int64_t now);
/* A read-write lock's read lock (mode REDLOCK_READ: shared with other
 * readers) or write lock (REDLOCK_WRITE: exclusive, and exclusive of a
 * plain lock of the same name) of name; another mode is REDLOCK_EINVAL. held, when not NULL, is a lock of the same read-write
 * lock that the caller holds: its write lock lets a read lock join it (a
 * downgrade); its read lock refuses the write lock (no upgrade: EINVAL). */
int rl_op_lock_rw(rl_op **out, struct rl_client *ctx, const char *name, int mode,
                  const redlock_handle *held, int64_t ttl_ms, int64_t wait_ms, int64_t now);
/* A permit of the semaphore name of `permits` (1 to REDLOCK_MAX_PERMITS;
 * every client of it must give the same number): a lock whose token is the
 * permit's id, held on more than permits * N / (permits + 1) of the N nodes
 * (rl_quorum_of), each of which lets at most `permits` hold at once. */
int rl_op_acquire_permit(rl_op **out, struct rl_client *ctx, const char *name, int permits,
                         int64_t ttl_ms, int64_t wait_ms, int64_t now);
/* A query of the semaphore name's permits; once done (REDLOCK_OK),
 * rl_op_available. */
int rl_op_permits(rl_op **out, struct rl_client *ctx, const char *name, int permits,
                  int64_t now);
/* A finished query of permits: how many could be taken now (the permits
 * free on a permit's quorum of nodes). */
int64_t rl_op_available(const rl_op *op);
/* A fair lock of name: a plain lock's key (a plain lock of the name is the
 * same lock), taken in the order its waiters arrived (scripts/fair.lua): a
 * waiter refused at first gets a ticket and a place in every node's queue,
 * kept while it tries again, and the lock goes to the head of the queue. */
int rl_op_lock_fair(rl_op **out, struct rl_client *ctx, const char *name, int64_t ttl_ms,
                    int64_t wait_ms, int64_t now);
int rl_op_extend(rl_op **out, redlock_handle *h, int64_t ttl_ms, int64_t now);
int rl_op_unlock(rl_op **out, redlock_handle *h, int64_t now);
/* The renewal of n held locks at once, each by its lease: one command per
 * node for all their keys (RL_CMD_EXTEND_MANY), each lock decided on its own
 * by the verdict of an extend over the nodes' answers for its keys. The
 * handles must outlive the operation. A lock that cannot be renewed (not
 * held, expired) is decided at once. Once done (its status REDLOCK_OK),
 * rl_op_many_status tells each lock's outcome, as rl_op_extend's status
 * and message would. */
int rl_op_extend_many(rl_op **out, struct rl_client *ctx, redlock_handle *const *hs, size_t n,
                      int64_t now);
/* Whether b may be renewed in one batch with a: the same client, plain
 * locks (a read-write lock is renewed alone), and on a client with a
 * Cluster node, the same slot (one script's keys share one). */
bool rl_op_batches_with(const redlock_handle *a, const redlock_handle *b);
size_t rl_op_many_count(const rl_op *op);
redlock_handle *rl_op_many_handle(const rl_op *op, size_t j);
/* Lock j's outcome and *message (owned by op; "" on success). */
int rl_op_many_status(const rl_op *op, size_t j, const char **message);
/* A query of one resource's lock (is it held, by anyone, and for how
 * long), or with force a forced unlock (its key deleted on every node
 * whatever its token): one round, decided by rl_quorum_query; then
 * rl_op_answer. */
int rl_op_query(rl_op **out, struct rl_client *ctx, const char *name, bool force,
                int64_t now);
/* An operation that delivers the releases owed to nodes (cmd.h): it asks
 * for a connection to each node owed one that is due, and ends when they are answered
 * or the nodes' deadlines pass; what is still owed stays owed. */
int rl_op_deliver(rl_op **out, struct rl_client *ctx, int64_t now);
/* A PING of every node, decided once all answered or their deadlines
 * passed: REDLOCK_OK when a quorum answered and counts (rl_quorum_query);
 * rl_op_answer's deleted is how many did. */
int rl_op_ping(rl_op **out, struct rl_client *ctx, int64_t now);
/* Frees a finished operation (after its connections were taken back). */
void rl_op_free(rl_op *op);

/* The client the operation is for. */
struct rl_client *rl_op_ctx(const rl_op *op);
/* The connection the operation has to node, or NULL. */
rl_conn *rl_op_conn(const rl_op *op, size_t node);
/* The deadline of the operation's last command to node (INT64_MIN: none). */
int64_t rl_op_deadline(const rl_op *op, size_t node);
/* Once it is done: the first deadline, after now, of its connections still
 * sending (connecting, or bytes not yet written); INT64_MAX when there is
 * none. A driver keeps writing them until then, so that every node it can
 * reach gets the command though the outcome was decided at a quorum. */
int64_t rl_op_tail_at(const rl_op *op, int64_t now);
/* Whether the operation needs a connection to node now. */
bool rl_op_wants_conn(const rl_op *op, size_t node);
/* Gives it one (pooled, or new and connecting), or says none can be had.
 * The operation's command is queued on it at once: behind it on the stream,
 * so a release covers an acquire of its token still owed there (cmd.h)
 * before any late reply on it is read. */
void rl_op_attach(rl_op *op, size_t node, rl_conn *c, int64_t now);
/* A pooled connection still owing replies past their deadline: the node did
 * not answer in time (the call that sent them ended at a quorum). Call it
 * once what the connection received while idle has been read. */
void rl_op_overdue(rl_op *op, rl_conn *c, int64_t now);
void rl_op_no_conn(rl_op *op, size_t node, int code, const char *why, int64_t now);

/* Advances on timers and decides rounds; call after events and at wake-up. */
void rl_op_step(rl_op *op, int64_t now);
/* Cancels a lock operation that has not succeeded yet: what its attempt may
 * have taken is released, and it ends with REDLOCK_ECANCELED. Extend and
 * release are not cancelled (false): they end within one node deadline. */
bool rl_op_cancel(rl_op *op, int64_t now);
/* When the operation next needs rl_op_step if nothing else happens. */
int64_t rl_op_wake_at(const rl_op *op);
/* Whether a lock operation is pausing between attempts because the last
 * one found the lock held elsewhere: a release of its keys is worth waiting
 * for (its keys: rl_op_keys). */
bool rl_op_awaits_release(const rl_op *op);
const rl_keys *rl_op_keys(const rl_op *op);
/* A fair lock's waiter id (its place in the nodes' queues); "" for others. */
const char *rl_op_waiter(const rl_op *op);
/* The token of the lock an extend or unlock is for, NULL for the other
 * operations: a connection that still owes its acquire's reply is the one to
 * give it (the drivers' pools look for one). A release or an extension of
 * that lock belongs there, behind the acquire: on another connection the
 * node could run it first, and the late acquire would then leave its key. */
const char *rl_op_follows(const rl_op *op);
/* Ends a lock operation's pause now (a release was published): its next
 * attempt starts at the next rl_op_step. */
void rl_op_wake(rl_op *op, int64_t now);
/* Adds note (when not "") to the message of a lock that ended
 * REDLOCK_ELOCKED: why it was not woken by a release (waiters.h). */
void rl_op_note(rl_op *op, const char *note);
/* Whether it is done; then its status and message. */
bool rl_op_done(const rl_op *op);
int rl_op_status(const rl_op *op);
const char *rl_op_message(const rl_op *op);
/* A finished query's answer: whether a quorum has the lock (returned), its
 * PTTL on a quorum (-1: no expiry; -2: not held), and for a forced unlock
 * on how many nodes a lock was deleted. Either out may be NULL. */
bool rl_op_answer(const rl_op *op, int64_t *ttl_ms, size_t *deleted);
/* A finished lock operation's handle (the caller owns it), or NULL. */
redlock_handle *rl_op_take_handle(rl_op *op);
/* The handle an extend or unlock is for (NULL for others). */
redlock_handle *rl_op_handle(const rl_op *op);
/* Takes back, one at a time, the connections a finished operation held;
 * NULL when none is left. */
rl_conn *rl_op_take_conn(rl_op *op);
/* A driver that pools connections says so (rl_op_lend): then a lock pausing
 * between attempts lets go of its connections, and the driver takes them
 * back at once (rl_op_spare_conn, NULL when none) to serve other calls.
 * A driver that does not (the engine ABI's, so far) keeps them through the
 * pause, and they are not counted in the cap of connections meanwhile. */
void rl_op_lend(rl_op *op);
rl_conn *rl_op_spare_conn(rl_op *op);

/* What a driver does next (rl_op_drive): a set of these bits. */
enum {
    RL_DRIVE_CONNECT = 1,   /* nodes want a connection now (rl_op_next_wanted) */
    RL_DRIVE_WRITE = 2,     /* connections of the op have bytes to write */
    RL_DRIVE_WAIT = 4,      /* wait for events until *at, then drive again */
    RL_DRIVE_AWAITS = 8,    /* a lock pauses for a lock held elsewhere (rl_op_awaits_release) */
    RL_DRIVE_DONE = 16,     /* decided: status, message, handle */
    RL_DRIVE_TAIL = 32      /* with DONE: still sending; wait until *at, then drive again */
};
/* Steps op at now and says what its driver is to do next; *at: when to
 * drive it again if nothing happens (now after RL_DRIVE_CONNECT, INT64_MAX
 * for never). The loop every driver runs: give each wanted node a
 * connection and drive again while RL_DRIVE_CONNECT is set; write what the
 * connections hold on RL_DRIVE_WRITE; wait for events until *at unless
 * RL_DRIVE_DONE is set without RL_DRIVE_TAIL, which ends the operation. */
int rl_op_drive(rl_op *op, int64_t now, int64_t *at);
/* The first node from `from` on that the operation wants a connection to
 * now; -1 when none does. */
int rl_op_next_wanted(const rl_op *op, size_t from);
/* A new connection to node, for an operation that wants one when the
 * driver has none idle: attached to the operation, waiting for the
 * driver's connect. NULL when none may be made now (the node backs off
 * after failed connects, or no memory): the operation was told why. Also
 * NULL when the client has pool_size + RL_CONN_SPARE connections to the
 * node already (conn.h): the operation then waits for one to come back,
 * asking again (rl_op_next_wanted) every millisecond for as long as an
 * answer is of use (its lease), then counts the node failed; node_busy
 * tells it. While it waits, rl_op_next_wanted names no node after that one:
 * connections are taken in the order of the nodes, so operations at the cap
 * never wait for each other in a circle. */
rl_conn *rl_op_connect(rl_op *op, size_t node, int64_t now);
/* Whether the connection the operation wants to node must be a new one
 * (rl_op_connect), not an idle one: it asks a Sentinel node's sentinel
 * whether the master moved (option sentinel_poll_ms), or a Cluster node's
 * seed for the slot map. */
bool rl_op_wants_fresh(const rl_op *op, size_t node);
/* Whether an idle connection c may serve the operation's command to node:
 * always, but on a Cluster node only one to the master of the command's
 * slot. A driver takes an idle connection that fits, or makes one. */
bool rl_op_fits(const rl_op *op, size_t node, const rl_conn *c);

/* Events of the connections the operation has (engine.c calls these). */
void rl_op_reply(rl_op *op, rl_conn *c, const rl_entry *e, const struct redisReply *reply,
                 int64_t now);
void rl_op_entry_lost(rl_op *op, rl_conn *c, const rl_entry *e, bool written, int64_t now);
void rl_op_conn_connected(rl_op *op, rl_conn *c, int64_t now);
/* Bytes of c were written: a command of the op they end has its deadline
 * from now (conn.h). */
void rl_op_conn_wrote(rl_op *op, rl_conn *c, int64_t now);
void rl_op_conn_lost(rl_op *op, rl_conn *c, int64_t now);

#endif /* RL_OP_H */
