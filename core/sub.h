/*
 * sub.h - a subscriber connection to one node, as the engine sees it: bytes
 * out (AUTH, then SUBSCRIBE and UNSUBSCRIBE), bytes in, and what they meant.
 * No I/O. Releases publish on a channel named after each key they delete,
 * with the released token as the message; a client waiting for a lock
 * subscribes to its keys' channels to try again as soon as one is released.
 *
 * Nothing on this connection is a reply to a lock command: it carries no
 * lock command at all, so no reply of it can be credited to one. Messages
 * are wake-ups only, never input to safety.
 */
#ifndef RL_SUB_H
#define RL_SUB_H

#include "base.h"
#include "uri.h"

typedef struct rl_sub rl_sub;

typedef enum rl_sub_event {
    RL_SUB_SUBSCRIBED,   /* the node confirmed a channel: messages flow from now */
    RL_SUB_MESSAGE,      /* a release on the channel; text: the released token */
    RL_SUB_REFUSED       /* AUTH or SUBSCRIBE refused (say, no channel permission in
                          * the node's ACL): channel NULL, text the node's error */
} rl_sub_event;

/* Called by rl_sub_received for each event, in order. */
typedef void (*rl_sub_fn)(void *data, rl_sub_event event, const char *channel,
                          const char *text);

/* A subscriber for the node at a (AUTH queued when it has credentials), or
 * NULL when out of memory. */
rl_sub *rl_sub_new(const rl_node_addr *a);
void rl_sub_free(rl_sub *s);

/* Queues SUBSCRIBE (on) or UNSUBSCRIBE (off) of channel. REDLOCK_OK or
 * REDLOCK_ENOMEM. */
int rl_sub_want(rl_sub *s, const char *channel, bool on);

/* The bytes waiting to be written, and how many of them were. */
size_t rl_sub_output(const rl_sub *s, const char **bytes);
void rl_sub_wrote(rl_sub *s, size_t n);

/* Bytes read from the node: their events go to fn. REDLOCK_OK, or
 * REDLOCK_EREDIS when the stream is not Redis protocol (the connection is
 * then to be closed). */
int rl_sub_received(rl_sub *s, const char *bytes, size_t len, rl_sub_fn fn, void *data);

#endif /* RL_SUB_H */
