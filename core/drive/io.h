/*
 * io.h - the blocking driver's socket machinery (io.c), shared by its
 * synchronous calls (run.h) and by its asynchronous ones (async.h):
 * connections taken from a node's pool or made anew, written, read, given
 * back.
 */
#ifndef RL_IO_H
#define RL_IO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd.h"
#include "conn.h"
#include "op.h"
#include "uri.h"

struct rl_client;
struct rl_driver;

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
/* The connections an op let go of while it goes on (rl_op_spare_conn). */
void rl_io_give_spare(struct rl_client *ctx, rl_op *op, int64_t now);
/* The same for one connection no operation holds. */
void rl_io_give(struct rl_client *ctx, rl_conn *c, int64_t now);
/* Starts a non-blocking connect to a node's server t (a's unix socket when
 * t has no host): the fd, or -1 with why. */
int rl_io_connect(const rl_node_addr *a, const rl_target *t, char *why, size_t whylen);

/* TLS, for rediss:// nodes (tls.h). rl_io_tls_ready: whether the client
 * can make sessions (its settings are made from its options the first time,
 * which fixes its tls_* options); a negative code with why when not.
 * rl_io_tls_start: a session on fd, connected to host, checking the
 * server's name (tls_server_name, or host); then rl_tls_handshake. */
struct rl_tls;
int rl_io_tls_ready(struct rl_client *ctx, char *why, size_t whylen);
int rl_io_tls_start(struct rl_client *ctx, const char *host, int fd, struct rl_tls **out,
                    char *why, size_t whylen);
/* Whether the client's TLS settings were made (from its tls_* options, on
 * its first rediss:// connection): the tls_* options cannot change then. */
bool rl_driver_tls_fixed(const struct rl_driver *d);
/* Fixes the tls_* options: a driver of another runtime read them to make
 * its own TLS settings (redlock_ctx_tls_*). */
void rl_driver_fix_tls(struct rl_driver *d);
/* The poll events a connection waits for (connect, TLS handshake, bytes to
 * write, replies to read). */
short rl_io_events(const rl_conn *c);

#endif /* RL_IO_H */
