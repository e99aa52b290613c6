/*
 * sub.h - a subscriber connection to one node, as the engine sees it: bytes
 * out (AUTH, then SUBSCRIBE and UNSUBSCRIBE), bytes in, and what they meant,
 * read one event at a time. No I/O. Releases publish on a channel named
 * after each key they delete, with the released token as the message; a
 * client waiting for a lock subscribes to its keys' channels to try again as
 * soon as one is released (waiters.h decides who).
 *
 * Nothing on this connection is a reply to a lock command: it carries no
 * lock command at all, so no reply of it can be credited to one. Messages
 * are wake-ups only, never input to safety.
 */
#ifndef RL_SUB_H
#define RL_SUB_H

#include "redlock_engine.h"

#include "base.h"
#include "uri.h"

typedef struct rl_sub rl_sub;

/* The events. */
typedef enum rl_sub_event {
    RL_SUB_NONE = 0,        /* no complete event yet */
    RL_SUB_SUBSCRIBED = 1,  /* the node confirmed a channel: messages flow from now */
    RL_SUB_MESSAGE = 2,     /* a release on the channel; text: the released token */
    RL_SUB_REFUSED = 3      /* AUTH or SUBSCRIBE refused (say, no channel permission in the
                             * node's ACL): channel "", text the node's error */
} rl_sub_event;

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

/* Bytes read from the node, kept until their events are read. REDLOCK_OK,
 * or REDLOCK_EREDIS when the stream is broken: already, or by these bytes
 * (not Redis protocol, or a message past its bounds: bound.h). */
int rl_sub_received(rl_sub *s, const char *bytes, size_t len);
/* The next event of the bytes received (an rl_sub_event), RL_SUB_NONE when
 * no further one is complete, or REDLOCK_EREDIS when the stream is not
 * Redis protocol (the connection is then to be closed). The event's channel
 * and text stay valid until the next call, and are "" for none. */
int rl_sub_next(rl_sub *s);
const char *rl_sub_channel(const rl_sub *s);
const char *rl_sub_text(const rl_sub *s);

#endif /* RL_SUB_H */
