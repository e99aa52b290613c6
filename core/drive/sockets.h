/*
 * sockets.h - the blocking driver's socket machinery (block.c), shared by
 * its synchronous calls and by its asynchronous ones (async.c): connections
 * taken from a node's pool or made anew, written, read, given back.
 */
#ifndef RL_SOCKETS_H
#define RL_SOCKETS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd.h"
#include "conn.h"
#include "op.h"
#include "uri.h"

struct rl_client;
struct rl_async;
struct rl_waker;

/* In a child after fork(): forgets the parent's connections and owed work. */
void rl_io_check_fork(struct rl_client *ctx);
/* Gives the operation a connection for every node it wants one for. */
void rl_io_attach(struct rl_client *ctx, rl_op *op, int64_t now);
/* Writes what the connection may write now; false when the socket failed. */
bool rl_io_flush(rl_conn *c, int64_t now);
/* The poll entries of an op's connections: all of them, or in its tail
 * only those still sending within their deadline. Returns how many. */
struct pollfd;
size_t rl_io_watch(struct rl_client *ctx, rl_op *op, bool tail, int64_t now, struct pollfd *pfd,
                   rl_conn **who);
/* Services one socket's poll events; false when its connection is gone. */
bool rl_io_service(rl_conn *c, short revents, int64_t now);
/* Frees a connection the engine found broken (and its node's idle ones). */
void rl_io_bury(struct rl_client *ctx, rl_conn *c, int64_t now);
/* Takes a finished op's connections back: pooled when sound, else closed. */
void rl_io_give_back(struct rl_client *ctx, rl_op *op, int64_t now);
/* The same for one connection no operation holds. */
void rl_io_give(struct rl_client *ctx, rl_conn *c, int64_t now);
/* Starts a thread of the library's, with every signal blocked in it (they
 * are the application's), joining first the one that ran before (when
 * *joinable). The error of pthread_create, or 0. */
int rl_io_start_thread(pthread_t *thread, bool *joinable, void *(*main)(void *), void *arg);
/* Starts the service thread when releases are owed to nodes. */
void rl_io_service_wake(struct rl_client *ctx);
/* The client's asynchronous calls (async.c). */
struct rl_async *rl_io_async(struct rl_client *ctx);

/* async.c: the state of a client's asynchronous calls, and its end (which
 * waits for the calls under way; waiting locks are cancelled). */
struct rl_async *rl_async_new(void);
void rl_async_free(struct rl_client *ctx, struct rl_async *a);
/* In a child after fork(): the parent's thread is not there. */
void rl_async_forget(struct rl_async *a);
/* Stops the renewal of h, if it is watched, waiting for an extension or a
 * lost callback under way (unless called from the client's own thread).
 * freeing: h is about to be freed; false is returned when that must wait
 * for what runs on the client's thread (which then frees it). */
bool rl_async_unwatch(redlock_handle *h, bool freeing);

/* Starts a non-blocking connect to a node: the fd, or -1 with why. */
int rl_io_connect(const rl_node_addr *a, char *why, size_t whylen);

/* TLS, for rediss:// nodes (tls.h). rl_io_tls_ready: whether the client
 * can make sessions (its settings are made from its options the first time,
 * which fixes its tls_* options); a negative code with why when not.
 * rl_io_tls_start: a session on fd, connected to node, checking the node's
 * name (tls_server_name, or its host); then rl_tls_handshake. */
struct rl_tls;
int rl_io_tls_ready(struct rl_client *ctx, char *why, size_t whylen);
int rl_io_tls_start(struct rl_client *ctx, size_t node, int fd, struct rl_tls **out,
                    char *why, size_t whylen);
/* The poll events a connection waits for (connect, TLS handshake, bytes to
 * write, replies to read). */
short rl_io_events(const rl_conn *c);

/* wake.c: lock calls woken by releases. A lock call waiting for a lock
 * held elsewhere registers (rl_waker_await) with the keys it waits for; the
 * client's waker thread makes its eventfd (rl_waiter_fd) readable when it
 * is to try again; rl_waiter_told consumes that. rl_waker_done ends the
 * registration, with a note (maybe ""; note may be NULL) on why waiters are
 * not being woken. */
typedef struct rl_waiter rl_waiter;
struct rl_waker *rl_waker_new(size_t n_nodes);
void rl_waker_free(struct rl_waker *w);
void rl_waker_forget(struct rl_waker *w);
struct rl_waker *rl_io_waker(struct rl_client *ctx);
rl_waiter *rl_waker_await(struct rl_client *ctx, const rl_keys *keys);
int rl_waiter_fd(const rl_waiter *r);
bool rl_waiter_told(rl_waiter *r);
void rl_waker_done(struct rl_client *ctx, rl_waiter *r, char *note, size_t notelen);

#endif /* RL_SOCKETS_H */
