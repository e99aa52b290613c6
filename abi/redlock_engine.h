/*
 * redlock_engine.h - the Redlock engine without I/O, for drivers that own
 * their sockets, clock and event loop (OpenResty cosockets, Python asyncio,
 * Swoole coroutines). redlock.h's blocking calls are one such driver.
 *
 * Stable since libredlock 1.3: these functions are exported under the
 * symbol version REDLOCK_ENGINE_1.0 and held by the ABI check (abidiff) as
 * redlock.h's are; additions come in new version nodes, nothing is removed
 * or changed. (Until 1.2 they were experimental, REDLOCK_ENGINE_0, and
 * changed: a driver built against that must be built again.) They follow
 * redlock.h's rules: opaque types, fixed-width integers, no varargs, no
 * structs by value, callable from any FFI. docs/engine.md shows how a
 * driver is written, step by step.
 *
 * The model (as h11 and quinn-proto): an operation (lock, extend, unlock)
 * is a state machine over the ctx's nodes. The driver
 *   1. makes it: redlock_op_lock / _extend / _unlock (time in ms from
 *      redlock_now_ms(), the clock the blocking API uses, so handles can
 *      move between the two);
 *   2. asks what to do (redlock_op_drive, which steps the operation and
 *      answers with REDLOCK_DRIVE_* bits and a time), and does it:
 *      - CONNECT: gives a connection to every node the operation wants one
 *        for (redlock_op_next_wanted): one of its idle connections to that
 *        node that fits (redlock_op_fits; redlock_op_attach) unless
 *        redlock_op_wants_fresh, or else a
 *        new one (redlock_op_connect; the connection's own address is
 *        redlock_conn_host and _port),
 *        then its own connect to the node's address, over TLS when
 *        redlock_ctx_node_tls says so); then asks again, at once;
 *      - WRITE: writes what redlock_conn_output gives on its connections,
 *        and reports it (redlock_conn_wrote);
 *      - WAIT: waits for events until the time given, then asks again;
 *      - AWAITS: a lock waits for a lock held elsewhere (see wake-ups);
 *      - DONE with TAIL: decided, but connections are still sending (within
 *        their nodes' deadlines, so that every reachable node gets the
 *        command): it goes on writing and waiting until the time given,
 *        then asks again; DONE alone: the operation is over (step 4);
 *   3. moves bytes: feeds what it reads (redlock_conn_received), reports
 *      the connect (redlock_conn_connected: for TLS, once the handshake is
 *      done) and the end of a socket (redlock_conn_lost, or
 *      redlock_conn_tls_failed when TLS failed), and asks again (step 2)
 *      after each; after a reply, redlock_op_react says whether to;
 *   4. takes the connections back (redlock_op_take_conn): a connection that
 *      is redlock_conn_poolable may serve the next operation, others are
 *      closed with redlock_conn_lost and freed;
 *   5. frees the operation, after redlock_op_take_handle for a lock.
 * The finer calls under redlock_op_drive (redlock_op_step, _wake_at,
 * _tail_at, _wants_conn, _no_conn; redlock_conn_new with
 * redlock_ctx_node_connect_wait) stay for drivers that want them.
 * Releases owed to nodes that did not answer (cmd rules in the engine) are
 * sent on the next connection given to an operation for that node, or by
 * redlock_op_deliver, which the driver runs at redlock_ctx_owed_at (and
 * asks again after it, and after every operation).
 *
 * TLS (rediss:// nodes) with the driver's own TLS: the settings are the
 * ones the library's blocking calls use, from the tls_* options, given by
 * redlock_ctx_tls_* below (the driver only applies them to its TLS API).
 *
 * Wake-ups (optional; without them a waiting lock retries on its timer,
 * retry_delay_ms +- retry_jitter_ms). A release publishes its token on a
 * channel named after each key it deleted; a lock that waits for a lock held
 * elsewhere can try again as soon as it is released. redlock_waiters is the
 * state machine of it: who waits, and the subscriber connection each node
 * needs for them. The driver keeps one per ctx and
 *   1. registers in it every lock operation for which
 *      redlock_op_awaits_release turns 1 (redlock_waiters_add, under an id
 *      of its own), until the operation is done or given up
 *      (redlock_waiters_remove);
 *   2. drives it (redlock_waiters_drive) after each call below, and at the
 *      time it gives at the latest; the answer is bits, to act on in this
 *      order:
 *      - CLOSE: closes the subscriber connection of each node
 *        redlock_waiters_next_close names (until -1); nothing more of that
 *        connection is reported;
 *      - CONNECT: connects a subscriber to each node redlock_waiters_next_connect
 *        names (until -1), to the node's server (redlock_ctx_node_host and
 *        _port: a Sentinel node's master), over TLS when
 *        redlock_ctx_node_tls says so, and reports it connected
 *        (redlock_waiters_connected, after the handshake) or lost
 *        (redlock_waiters_lost, also when it cannot be made);
 *      - WRITE: writes what redlock_waiters_output gives for each connected
 *        node, and reports it (redlock_waiters_wrote);
 *      - WAKE: wakes every operation redlock_waiters_next names (until 0;
 *        redlock_op_wake, then redlock_op_step);
 *   3. feeds what a subscriber reads (redlock_waiters_received), and reports
 *      a connection that broke (redlock_waiters_lost);
 *   4. frees it once no operation is registered, after closing its
 *      connections.
 * Who is woken when is the library's rule, the one the blocking calls
 * follow: on a subscription confirmed, every waiter for the channel once;
 * on a release told by a quorum of the nodes, the waiter for its key that
 * has waited longest, and again on each later message of it. Wake-ups only
 * shorten waits; they are never input to safety.
 *
 * Threads: an operation and its connections belong to one thread at a time;
 * different operations on one ctx may run on different threads. A
 * redlock_waiters belongs to one thread at a time, as its operations do.
 */
#ifndef REDLOCK_ENGINE_H
#define REDLOCK_ENGINE_H

#include "redlock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redlock_op redlock_op;
typedef struct redlock_conn redlock_conn;
typedef struct redlock_waiters redlock_waiters;

/* What redlock_waiters_drive says to do (wake-ups, above). */
#define REDLOCK_WAITERS_CONNECT 1   /* subscribers to connect: redlock_waiters_next_connect */
#define REDLOCK_WAITERS_WRITE   2   /* bytes to write: redlock_waiters_output */
#define REDLOCK_WAITERS_CLOSE   4   /* subscribers to close: redlock_waiters_next_close */
#define REDLOCK_WAITERS_WAKE    8   /* operations to wake: redlock_waiters_next */

/* The engine's clock: monotonic milliseconds, as the blocking API uses. */
REDLOCK_API int64_t redlock_now_ms(void);

/* ---- nodes ---- */

REDLOCK_API size_t redlock_ctx_node_count(const redlock_ctx *ctx);
/* Node i's TCP host and port, or (host NULL, port 0) its unix socket path.
 * The strings belong to ctx. NULL / 0 for a bad index. */
REDLOCK_API const char *redlock_ctx_node_host(const redlock_ctx *ctx, size_t i);
REDLOCK_API int redlock_ctx_node_port(const redlock_ctx *ctx, size_t i);
REDLOCK_API const char *redlock_ctx_node_path(const redlock_ctx *ctx, size_t i);
/* Milliseconds before a new connection to node i may be tried (0: now):
 * after failed connects the engine backs off (25 ms doubling to 1 s). */
REDLOCK_API int64_t redlock_ctx_node_connect_wait(redlock_ctx *ctx, size_t i, int64_t now_ms);
/* 1 when node i is a rediss:// node: the driver's connection to it is
 * TLS, checked by the client's tls_* options (redlock_ctx_get_option), and
 * its certificate must be for redlock_ctx_node_server_name: the option
 * tls_server_name, or the node's host (an IP address is checked as one; a
 * name is also sent as SNI). 0, and NULL, for other nodes and bad indexes;
 * the string belongs to ctx. */
REDLOCK_API int redlock_ctx_node_tls(const redlock_ctx *ctx, size_t i);
REDLOCK_API const char *redlock_ctx_node_server_name(const redlock_ctx *ctx, size_t i);
/* 1 when node i's server name (redlock_ctx_node_server_name) is an IP
 * address: the certificate is checked for that address, and no SNI is
 * sent; 0 for a host name (checked, and sent as SNI), other nodes and bad
 * indexes. */
REDLOCK_API int redlock_ctx_node_server_ip(const redlock_ctx *ctx, size_t i);
/* 1 when releases are owed to some node (see redlock_op_deliver). */
REDLOCK_API int redlock_ctx_owes(redlock_ctx *ctx);
/* When the driver is next to run redlock_op_deliver: the first time a
 * release owed may be sent and its node connected to (its connect
 * back-off), no sooner than 100 ms after a delivery last tried it; at or
 * before now_ms: now. INT64_MAX when none is owed (those past their time
 * are given up here). */
REDLOCK_API int64_t redlock_ctx_owed_at(redlock_ctx *ctx, int64_t now_ms);

/* ---- TLS settings for a driver's own TLS ----
 *
 * What the library's own TLS does with the tls_* options, for a driver that
 * makes its sessions with its runtime's TLS (Python's ssl, nginx's). The
 * first of these calls fixes the tls_* options (redlock_ctx_set_option
 * refuses them from then on, as once the library's own TLS read them), so
 * the strings they give belong to ctx and live as long as it. */
/* REDLOCK_OK, or REDLOCK_ETLS (redlock_errmsg names the option and why)
 * when the settings cannot be made: a file named that cannot be read
 * (tls_ca_file and tls_ca_dir only when certificates are checked), or
 * tls_key_file without tls_cert_file. The driver's connects to rediss://
 * nodes then fail with that (redlock_conn_tls_failed). */
REDLOCK_API int redlock_ctx_tls_check(redlock_ctx *ctx);
/* 1 when the node's certificate is checked (chain and name), 0 when
 * nothing is (tls_verify 0: insecure). */
REDLOCK_API int redlock_ctx_tls_verify(redlock_ctx *ctx);
/* The certificate authorities trusted when checking: a PEM file and a
 * directory of hashed certificates (either or both NULL); both NULL: the
 * system's. NULL, NULL when nothing is checked. */
REDLOCK_API const char *redlock_ctx_tls_ca_file(redlock_ctx *ctx);
REDLOCK_API const char *redlock_ctx_tls_ca_dir(redlock_ctx *ctx);
/* The client's certificate (PEM, its chain) and its key (PEM, not
 * encrypted: no passphrase is ever asked), the certificate's file when the
 * key has none of its own; NULL, NULL: none is sent. */
REDLOCK_API const char *redlock_ctx_tls_cert_file(redlock_ctx *ctx);
REDLOCK_API const char *redlock_ctx_tls_key_file(redlock_ctx *ctx);
/* The lowest protocol version accepted, as TLS numbers it (0x0303: TLS 1.2;
 * Python's ssl.TLSVersion has the same values); the highest is the TLS
 * library's. Ciphers are the TLS library's defaults: the library sets none. */
REDLOCK_API int redlock_ctx_tls_min_version(redlock_ctx *ctx);

/* ---- operations ---- */

/* They check their arguments as redlock_lock etc. do (REDLOCK_EINVAL, with
 * redlock_errmsg); extend and unlock of a handle that is not held fail at
 * once (REDLOCK_ENOTHELD). Free with redlock_op_free. */
REDLOCK_API int redlock_op_lock(redlock_op **out, redlock_ctx *ctx, const char *const *resources,
                                size_t n_resources, int64_t ttl_ms, int64_t wait_ms,
                                int64_t now_ms);
/* A read-write lock's read or write lock (redlock_lock_rw's mode and held). */
REDLOCK_API int redlock_op_lock_rw(redlock_op **out, redlock_ctx *ctx, const char *resource,
                                   int mode, const redlock_handle *held, int64_t ttl_ms,
                                   int64_t wait_ms, int64_t now_ms);
/* A fair lock (redlock_lock_fair). */
REDLOCK_API int redlock_op_lock_fair(redlock_op **out, redlock_ctx *ctx, const char *resource,
                                     int64_t ttl_ms, int64_t wait_ms, int64_t now_ms);
/* A permit of a semaphore (redlock_acquire_permit's permits). */
REDLOCK_API int redlock_op_acquire_permit(redlock_op **out, redlock_ctx *ctx,
                                          const char *resource, int permits, int64_t ttl_ms,
                                          int64_t wait_ms, int64_t now_ms);
REDLOCK_API int redlock_op_extend(redlock_op **out, redlock_handle *h, int64_t ttl_ms,
                                  int64_t now_ms);
REDLOCK_API int redlock_op_unlock(redlock_op **out, redlock_handle *h, int64_t now_ms);
/* Delivers the releases owed to nodes, and nothing else. */
REDLOCK_API int redlock_op_deliver(redlock_op **out, redlock_ctx *ctx, int64_t now_ms);
/* A query of resource's lock, or a forced unlock of it (redlock_inspect,
 * redlock_force_unlock); once done, redlock_op_answer. */
REDLOCK_API int redlock_op_inspect(redlock_op **out, redlock_ctx *ctx, const char *resource,
                                   int64_t now_ms);
REDLOCK_API int redlock_op_force_unlock(redlock_op **out, redlock_ctx *ctx, const char *resource,
                                        int64_t now_ms);
/* A query of a semaphore's permits (redlock_permits_available); once done,
 * redlock_op_available. */
REDLOCK_API int redlock_op_permits(redlock_op **out, redlock_ctx *ctx, const char *resource,
                                   int permits, int64_t now_ms);
/* A finished query of permits: how many could be taken now (0 for another
 * operation, or one that failed). */
REDLOCK_API int redlock_op_available(const redlock_op *op);
/* A PING of every node (redlock_ctx_ping); its status once done. */
REDLOCK_API int redlock_op_ping(redlock_op **out, redlock_ctx *ctx, int64_t now_ms);
/* A finished query's answer, as redlock_inspect gives it: 1 when locked,
 * *ttl_ms its lease left on a quorum (-1 no expiry, -2 not locked); for a
 * forced unlock *deleted, the nodes that had a lock; for a ping *deleted,
 * the nodes that answered and count. Outs may be NULL. */
REDLOCK_API int redlock_op_answer(const redlock_op *op, int64_t *ttl_ms, int *deleted);
/* Frees an operation once its connections were taken back. NULL is a no-op. */
REDLOCK_API void redlock_op_free(redlock_op *op);

/* ---- driving an operation ---- */

/* What redlock_op_drive asks of the driver (bits; see the steps above). */
#define REDLOCK_DRIVE_CONNECT 1   /* nodes want a connection: give them, then drive again now */
#define REDLOCK_DRIVE_WRITE   2   /* connections of the operation have bytes to write */
#define REDLOCK_DRIVE_WAIT    4   /* wait for events until *at_ms, then drive again */
#define REDLOCK_DRIVE_AWAITS  8   /* a lock pauses for a lock held elsewhere: register it
                                   * with the waiters (redlock_op_awaits_release) */
#define REDLOCK_DRIVE_DONE    16  /* decided: redlock_op_status, _message, _take_handle */
#define REDLOCK_DRIVE_TAIL    32  /* with DONE: connections still sending; write them and
                                   * wait until *at_ms, then drive again */

/* Steps op at now_ms and says what its driver is to do: REDLOCK_DRIVE_*
 * bits. *at_ms (may be NULL): when to drive it again if nothing happens:
 * now_ms after CONNECT, INT64_MAX for never; DONE without TAIL: the
 * operation is over, its connections to be taken back. NULL op: DONE. */
REDLOCK_API int redlock_op_drive(redlock_op *op, int64_t now_ms, int64_t *at_ms);
/* The first node, from index start on, that the operation wants a
 * connection to now; -1 when none does. */
REDLOCK_API int redlock_op_next_wanted(const redlock_op *op, size_t start);
/* For a node the operation wants a connection to and the driver has no
 * idle one for: a new connection (as redlock_conn_new) attached to the
 * operation, for the driver to connect. NULL when none may be made now:
 * the node backs off after failed connects (REDLOCK_ETLS when TLS made
 * them fail), or no memory; the operation was told, nothing is left to do. */
REDLOCK_API redlock_conn *redlock_op_connect(redlock_op *op, size_t node, int64_t now_ms);
/* 1 when that connection must be a new one (redlock_op_connect), not an
 * idle one: it asks a Sentinel node's sentinel whether the master moved
 * (option sentinel_poll_ms); after it, the node is wanted again. */
REDLOCK_API int redlock_op_wants_fresh(const redlock_op *op, size_t node);
/* 1 when the idle connection c may serve the operation's command to node:
 * always, but on a Cluster node only one to the master of the command's
 * slot. A driver attaches an idle connection that fits, or else makes a new
 * one (redlock_op_connect). */
REDLOCK_API int redlock_op_fits(const redlock_op *op, size_t node, const redlock_conn *c);

/* 1 when the operation needs a connection to node now. */
REDLOCK_API int redlock_op_wants_conn(const redlock_op *op, size_t node);
REDLOCK_API void redlock_op_attach(redlock_op *op, size_t node, redlock_conn *c, int64_t now_ms);
/* No connection can be had: why is printable and names no secret. While
 * the node backs off after a failed TLS handshake or certificate check,
 * the node fails with that (REDLOCK_ETLS) instead. */
REDLOCK_API void redlock_op_no_conn(redlock_op *op, size_t node, const char *why, int64_t now_ms);
/* The connection the operation has to node, or NULL. */
REDLOCK_API redlock_conn *redlock_op_conn(const redlock_op *op, size_t node);

REDLOCK_API void redlock_op_step(redlock_op *op, int64_t now_ms);
/* When to call redlock_op_step next if nothing happens; INT64_MAX: never. */
REDLOCK_API int64_t redlock_op_wake_at(const redlock_op *op);
/* The deadline of the operation's last command to node (INT64_MIN: none). */
REDLOCK_API int64_t redlock_op_deadline(const redlock_op *op, size_t node);
/* After an event on c (a reply read): steps the operation at now_ms, and
 * says whether its driver has more to do than go on waiting until
 * waiting_ms (the wake-up time it waits for): 1 when the operation is done,
 * wants another wake-up time, or c has bytes to write (the reply queued a
 * command); 0 otherwise. One call instead of four on every reply. */
REDLOCK_API int redlock_op_react(redlock_op *op, const redlock_conn *c, int64_t now_ms,
                                 int64_t waiting_ms);
/* Once done: the first deadline after now_ms of its connections still
 * sending (connecting, or bytes not yet written), INT64_MAX when none is:
 * how long step 5 goes on. */
REDLOCK_API int64_t redlock_op_tail_at(const redlock_op *op, int64_t now_ms);
/* A lock that has not succeeded yet gives up (what it took is released)
 * and ends with REDLOCK_ECANCELED: 1. Extend and unlock are not cancelled: 0. */
REDLOCK_API int redlock_op_cancel(redlock_op *op, int64_t now_ms);
REDLOCK_API int redlock_op_done(const redlock_op *op);
/* Once done: the status, and a message naming the nodes and why ("" on
 * success). The message belongs to the operation. */
REDLOCK_API int redlock_op_status(const redlock_op *op);
REDLOCK_API const char *redlock_op_message(const redlock_op *op);
/* A successful lock's handle, now the caller's (redlock_handle_free), or NULL. */
REDLOCK_API redlock_handle *redlock_op_take_handle(redlock_op *op);
/* Once done: the connections, one at a time; NULL when none is left. */
REDLOCK_API redlock_conn *redlock_op_take_conn(redlock_op *op);

/* ---- connections ---- */

/* A new connection to node of ctx, with its handshake (AUTH, SELECT,
 * SCRIPT LOAD, INFO, the guard; for a Sentinel node ROLE, or the question
 * to a sentinel) queued, waiting for the driver's connect. */
REDLOCK_API int redlock_conn_new(redlock_conn **out, redlock_ctx *ctx, size_t node);
/* Frees a connection; what it still owed is settled first (as by
 * redlock_conn_lost). NULL is a no-op. */
REDLOCK_API void redlock_conn_free(redlock_conn *c);
REDLOCK_API size_t redlock_conn_node(const redlock_conn *c);
/* Where the driver connects it: a TCP host and port (host NULL: the node's
 * unix socket, redlock_ctx_node_path). For a Sentinel node this is its
 * master, or one of its sentinels while the master is being found; over
 * TLS the certificate must be for redlock_conn_server_name (tls_server_name,
 * or that host), an IP address when redlock_conn_server_ip is 1. The
 * strings stay valid while the ctx lives. */
REDLOCK_API const char *redlock_conn_host(const redlock_conn *c);
REDLOCK_API int redlock_conn_port(const redlock_conn *c);
REDLOCK_API const char *redlock_conn_server_name(const redlock_conn *c);
REDLOCK_API int redlock_conn_server_ip(const redlock_conn *c);

REDLOCK_API void redlock_conn_connected(redlock_conn *c, int64_t now_ms);
/* The bytes that may be written now (none while connecting, or while held
 * back behind AUTH and SELECT); *bytes belongs to the connection and is
 * valid until the next call on it. Then how many were written. */
REDLOCK_API size_t redlock_conn_output(const redlock_conn *c, const char **bytes);
/* A command's node deadline runs from when its last byte is reported
 * written here (at redlock_now_ms(), the clock every time given to the
 * engine comes from). */
REDLOCK_API void redlock_conn_wrote(redlock_conn *c, size_t n);
/* Bytes read. 0, or REDLOCK_ENOQUORUM (or the code of a refused handshake)
 * when the connection broke: the driver then closes its socket and frees it. */
REDLOCK_API int redlock_conn_received(redlock_conn *c, const char *bytes, size_t len,
                                      int64_t now_ms);
/* The socket failed or was closed (why: printable). The operation that had
 * the connection lets go of it (redlock_conn_held turns 0). */
REDLOCK_API void redlock_conn_lost(redlock_conn *c, const char *why, int64_t now_ms);
/* The same when TLS failed: the handshake, the check of the node's
 * certificate (why should say so, with the verifier's reason), or the
 * session. The operation fails the node with REDLOCK_ETLS. */
REDLOCK_API void redlock_conn_tls_failed(redlock_conn *c, const char *why, int64_t now_ms);
/* 1 while an operation holds the connection: it comes back from
 * redlock_op_take_conn. 0 when it is the driver's to pool or free: never
 * attached, taken back, or let go of when it broke. */
REDLOCK_API int redlock_conn_held(const redlock_conn *c);
/* 1 while connecting or with bytes not yet written. */
REDLOCK_API int redlock_conn_sending(const redlock_conn *c);
/* Replies the connection still expects (its handshake's included): a
 * driver that pools only quiet connections waits for 0. */
REDLOCK_API size_t redlock_conn_owed(const redlock_conn *c);
/* 1 when it may serve another operation: open, nothing half-written. */
REDLOCK_API int redlock_conn_poolable(const redlock_conn *c);
/* 1 when the connection broke (see redlock_conn_received). */
REDLOCK_API int redlock_conn_broken(const redlock_conn *c);

/* ---- wake-ups ---- */

/* 1 while a lock operation pauses between attempts because the last one
 * found the lock held elsewhere: a release of its keys is worth hearing. */
REDLOCK_API int redlock_op_awaits_release(const redlock_op *op);
/* A lock operation's keys (key_prefix + name): the channels its releases are
 * published on. 0 / NULL for other operations and bad indexes; the strings
 * belong to the operation. */
REDLOCK_API size_t redlock_op_key_count(const redlock_op *op);
REDLOCK_API const char *redlock_op_key(const redlock_op *op, size_t i);
/* Ends a lock operation's pause now: its next attempt starts at the next
 * redlock_op_step. Anything else is left alone. */
REDLOCK_API void redlock_op_wake(redlock_op *op, int64_t now_ms);

/* The wake-ups of ctx's lock operations that wait (no I/O). REDLOCK_OK,
 * REDLOCK_EINVAL or REDLOCK_ENOMEM. */
REDLOCK_API int redlock_waiters_new(redlock_waiters **out, const redlock_ctx *ctx);
/* NULL is a no-op. The driver closes its subscriber connections. */
REDLOCK_API void redlock_waiters_free(redlock_waiters *w);
/* Registers op, which redlock_op_awaits_release, under id (not 0, unique
 * among those registered), after the waiters registered already. It waits
 * for its keys' channels. REDLOCK_OK, REDLOCK_EINVAL or REDLOCK_ENOMEM (not
 * registered: it retries on its timer). */
REDLOCK_API int redlock_waiters_add(redlock_waiters *w, uint64_t id, const redlock_op *op);
/* Ends id's registration. op (may be NULL) is its operation: when it ended
 * with REDLOCK_ELOCKED and a node refused the subscription, its message
 * says that waiters are not woken by releases. */
REDLOCK_API void redlock_waiters_remove(redlock_waiters *w, uint64_t id, redlock_op *op,
                                        int64_t now_ms);
/* What to do at now_ms: REDLOCK_WAITERS_* bits, 0 for nothing. *at_ms (may
 * be NULL): when to drive it again if nothing happens (INT64_MAX: never;
 * once no operation has waited for a while, its connections are closed). */
REDLOCK_API int redlock_waiters_drive(redlock_waiters *w, int64_t now_ms, int64_t *at_ms);
/* The next node whose subscriber is to be connected, or closed; -1 when
 * none. */
REDLOCK_API int redlock_waiters_next_connect(redlock_waiters *w);
REDLOCK_API int redlock_waiters_next_close(redlock_waiters *w);
/* Node's subscriber connected (for TLS: its handshake done), or lost: it
 * failed, broke, or could not be made (a new one comes after a pause). */
REDLOCK_API void redlock_waiters_connected(redlock_waiters *w, size_t node);
REDLOCK_API void redlock_waiters_lost(redlock_waiters *w, size_t node, int64_t now_ms);
/* Bytes node's subscriber read. REDLOCK_OK; REDLOCK_EREDIS when the
 * connection is to be closed (the stream broke, or the node refused the
 * subscription): the next drive says CLOSE; REDLOCK_EINVAL. */
REDLOCK_API int redlock_waiters_received(redlock_waiters *w, size_t node, const char *bytes,
                                         size_t len, int64_t now_ms);
/* The bytes node's connected subscriber has to write (*bytes belongs to w,
 * valid until its next call), then how many were written. */
REDLOCK_API size_t redlock_waiters_output(const redlock_waiters *w, size_t node,
                                          const char **bytes);
REDLOCK_API void redlock_waiters_wrote(redlock_waiters *w, size_t node, size_t n);
/* The next waiter to wake (its id), the longest waiting first; 0 when none. */
REDLOCK_API uint64_t redlock_waiters_next(redlock_waiters *w);

/* ---- Kept locks: the keeper ----
 *
 * The scheduling of every lock a driver keeps, in one object, the one the
 * C client's own thread uses for redlock_handle_watch: which lock is due
 * when (the rules of redlock_handle_watch: an extension by the lease a
 * third of it after each success, a little sooner so that locks taken
 * together spread out; again after retry_delay_ms while validity lasts when
 * the nodes fail; lost when a quorum says the key is not ours, or when
 * validity runs out first, even with an extension under way), which
 * renewals go together (one operation for up to 500 locks, of one slot on a
 * Cluster node: one command per node for all their keys, each lock still
 * decided on its own by a quorum), how many run at once, and which locks
 * were lost. At most
 * max(1, pool_size) renewals run at once, so that they run on each node's
 * pooled connections; the locks of the others wait their turn, their
 * validity still counting. The driver keeps one redlock_keeper per client
 * and, on one thread (it is not thread-safe):
 *   1. adds each lock it keeps under an id of its own (redlock_keeper_add),
 *      and removes it when it stops (redlock_keeper_remove, before an
 *      unlock: when it says a renewal is under way, the unlock waits until
 *      the keeper tells that renewal ended, step 3);
 *   2. drives it (redlock_keeper_drive) after adding, after an operation
 *      ended, and at the time it gives at the latest; the answer is bits:
 *      - RUN: operations to run, each taken once (redlock_keeper_take_op
 *        until NULL): the driver runs each like any other operation, tells
 *        its end (redlock_keeper_op_ended) before freeing it, then drives
 *        again;
 *      - LOST: kept locks lost, each told once (redlock_keeper_next_lost
 *        until 0), why from redlock_keeper_status and _message; a lock
 *        lost is renewed no more, and stays until removed;
 *      - ENDED: locks removed whose last renewal ended
 *        (redlock_keeper_next_ended until 0): their handles are the
 *        driver's again, and their unlocks may go;
 *      none: nothing to do before the time given;
 *   3. frees it (redlock_keeper_free) once nothing is kept and none of its
 *      operations runs.
 * The events renewal_failed and lost (redlock_ctx_set_log) are told from
 * these calls. The handles must outlive their ids in the keeper. */
typedef struct redlock_keeper redlock_keeper;

#define REDLOCK_KEEPER_RUN   1   /* operations to run: redlock_keeper_take_op */
#define REDLOCK_KEEPER_LOST  2   /* locks lost: redlock_keeper_next_lost */
#define REDLOCK_KEEPER_ENDED 4   /* removed locks whose renewal ended: redlock_keeper_next_ended */

/* The keeper of ctx's kept locks. REDLOCK_OK, REDLOCK_EINVAL or
 * REDLOCK_ENOMEM. */
REDLOCK_API int redlock_keeper_new(redlock_keeper **out, redlock_ctx *ctx);
/* Frees it, and the operations it made that were not taken. NULL is a no-op. */
REDLOCK_API void redlock_keeper_free(redlock_keeper *k);
/* Keeps h, held (taken or extended) at now_ms, under id (not 0, not kept
 * already). REDLOCK_OK; REDLOCK_ENOTHELD when h is not held (released,
 * lost, or its validity over); REDLOCK_EINVAL (NULL, a lock of another
 * ctx, an id 0 or in use) or REDLOCK_ENOMEM. */
REDLOCK_API int redlock_keeper_add(redlock_keeper *k, uint64_t id, redlock_handle *h,
                                   int64_t now_ms);
/* Stops keeping id: no renewal of it starts from now on. 0: done, the
 * handle is the driver's; 1: a renewal of it is under way (the handle is
 * used until the keeper tells ENDED of id); REDLOCK_EINVAL when id is not
 * kept. */
REDLOCK_API int redlock_keeper_remove(redlock_keeper *k, uint64_t id);
/* No renewal starts from now on (the client is closing); locks are still
 * found lost when their validity runs out. */
REDLOCK_API void redlock_keeper_halt(redlock_keeper *k);
/* Looks at the locks due at now_ms and starts the renewals that may start:
 * REDLOCK_KEEPER_* bits. *at_ms (may be NULL): when to drive it again if
 * nothing happens (INT64_MAX: nothing kept). */
REDLOCK_API int redlock_keeper_drive(redlock_keeper *k, int64_t now_ms, int64_t *at_ms);
/* The next operation to run, each once; NULL when none. */
REDLOCK_API redlock_op *redlock_keeper_take_op(redlock_keeper *k);
/* op, taken from k (or made by redlock_keeper_extend), ended: done, or
 * given up (not done: each of its locks is told REDLOCK_ENOQUORUM). Each
 * lock is told its outcome. REDLOCK_OK, or REDLOCK_EINVAL when op is not
 * one of k's under way. */
REDLOCK_API int redlock_keeper_op_ended(redlock_keeper *k, redlock_op *op, int64_t now_ms);
/* The next lock lost, the first found first (its id); 0 when none. */
REDLOCK_API uint64_t redlock_keeper_next_lost(redlock_keeper *k);
/* The next lock removed whose renewal ended (its id); 0 when none. */
REDLOCK_API uint64_t redlock_keeper_next_ended(redlock_keeper *k);
/* REDLOCK_OK while id is kept; once lost, why (REDLOCK_EEXPIRED,
 * REDLOCK_ENOTHELD...) and a message that belongs to k until id is
 * removed ("" while kept); REDLOCK_EINVAL when id is not kept. */
REDLOCK_API int redlock_keeper_status(const redlock_keeper *k, uint64_t id);
REDLOCK_API const char *redlock_keeper_message(const redlock_keeper *k, uint64_t id);
/* 1 while an extension of id waits for its turn or runs (after removal:
 * until ENDED), 0 when none does; REDLOCK_EINVAL when id is not kept. */
REDLOCK_API int redlock_keeper_busy(const redlock_keeper *k, uint64_t id);
/* The owner's extension of kept id by ttl_ms, run by the driver and told
 * with redlock_keeper_op_ended like the keeper's own: the lock's renewals
 * are planned from it. REDLOCK_EINVAL when id is not kept or an extension
 * of it runs (wait while redlock_keeper_busy), REDLOCK_ENOTHELD once
 * lost; when the operation cannot be made, its status (the keeper knows). */
REDLOCK_API int redlock_keeper_extend(redlock_op **out, redlock_keeper *k, uint64_t id,
                                      int64_t ttl_ms, int64_t now_ms);

#ifdef __cplusplus
}
#endif

#endif /* REDLOCK_ENGINE_H */
