/*
 * engine.h - a client, made and freed; and the engine's events: what a
 * driver tells it about a connection.
 * A driver owns sockets, the clock and waiting; for each connection it
 * reports the connect (rl_engine_connected), the bytes it wrote from
 * rl_conn_output (rl_engine_wrote), the bytes it read (rl_engine_received)
 * and the end of the socket (rl_engine_lost), then steps the operation that
 * has the connection (op.h). Replies go to the operation that waits for them
 * or, when none does, to owed.h's rules for late replies.
 */
#ifndef RL_ENGINE_H
#define RL_ENGINE_H

#include "client.h"
#include "conn.h"

/* A client of nodes node_uris[0 .. n_nodes), in place (a driver keeps it
 * beside its own state) or allocated: checked here, with this thread's
 * message set on failure. Destroying one that failed to init is safe. Its
 * source of random bytes (client.h: random, random_data) is its driver's
 * to set before any operation is made. */
int rl_client_init(rl_client *ctx, const char *const *node_uris, size_t n_nodes);
void rl_client_destroy(rl_client *ctx);
int rl_client_new(rl_client **out, const char *const *node_uris, size_t n_nodes);
void rl_client_free(rl_client *ctx);

void rl_engine_connected(rl_conn *c, int64_t now);
/* n bytes of rl_conn_output were written at now: the deadlines of the
 * commands they end start then (conn.h). */
void rl_engine_wrote(rl_conn *c, size_t n, int64_t now);
/* Feeds bytes read and hands out every complete reply. false when the
 * connection broke (a refused handshake, a bad reply): the loss is already
 * handled, and the driver closes its socket and frees the connection. */
bool rl_engine_received(rl_conn *c, const char *buf, size_t len, int64_t now);
/* The socket failed, was closed, or the driver gives the connection up:
 * every reply still owed is decided lost (cmd.h's rules), the operation that
 * has it learns, and the driver may then free it (rl_conn_free). */
void rl_engine_lost(rl_conn *c, int code, const char *why, int64_t now);

#endif /* RL_ENGINE_H */
