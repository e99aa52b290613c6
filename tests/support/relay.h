/*
 * relay.h - a TCP relay between the library and one node, for the tests
 * that need a connection cut or stalled at a precise point: after the node
 * ran a command but before its reply arrives, or while the client is in the
 * middle of writing a command. It listens on a free loopback port and
 * forwards bytes both ways on its own thread.
 */
#ifndef REDLOCK_TEST_RELAY_H
#define REDLOCK_TEST_RELAY_H

#include <stddef.h>

typedef struct relay relay;

/* A relay to 127.0.0.1:port; NULL when it cannot start. */
relay *relay_start(int port);
void relay_free(relay *r);
/* "redis://127.0.0.1:PORT" of the relay. */
const char *relay_uri(const relay *r);

/* Waits until no byte has passed for quiet_ms (the replies owed to earlier
 * calls have arrived); 0, or -1 after 10 s. */
int relay_wait_quiet(relay *r, long quiet_ms);

/* The next bytes a client sends reach the node, the node's answer to them
 * is dropped, and that client's connection is closed: the node ran the
 * command, the client never hears of it. Once. */
void relay_cut_next_reply(relay *r);

/* When the node's next reply comes, hold it back and stall: read nothing
 * more from clients or the node (a node that stalls after running a
 * command; a client writing a large one fills its socket). */
void relay_stall_at_next_reply(relay *r);
/* Forwards exactly `bytes` more from clients, then stalls as above (a node
 * that stalls right after receiving one whole command). */
void relay_stall_after(relay *r, size_t bytes);
/* Ends a stall: the reply held back goes on, and everything flows again (a
 * connection the client closed meanwhile is closed towards the node too). */
void relay_resume(relay *r);

/* While on, the relay is a node that is down: its connections are closed
 * and new ones closed as soon as they are made; nothing reaches the node. */
void relay_refuse(relay *r, int on);

#endif /* REDLOCK_TEST_RELAY_H */
