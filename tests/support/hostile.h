/*
 * hostile.h - a fake Redis node that answers a client's handshake as a
 * Redis 7.2 master would (SCRIPT LOAD, INFO, the guard script, PING) and
 * its lock commands (SET, EVALSHA, EVAL of anything but the guard) in a
 * chosen hostile way: a reply that announces gigabytes, one that never
 * ends, one that drips, arrays nested without end, numbers no Redis would
 * send. It listens on a free loopback port and serves each connection on a
 * thread of its own; what it sent is counted.
 */
#ifndef REDLOCK_TEST_HOSTILE_H
#define REDLOCK_TEST_HOSTILE_H

#include <stddef.h>

typedef enum hostile_mode {
    HOSTILE_HONEST,       /* answers as a Redis master with no keys would */
    HOSTILE_HUGE_BULK,    /* "$2000000000", then bytes without end */
    HOSTILE_HUGE_ARRAY,   /* "*2147483647", then ":1" elements without end */
    HOSTILE_ENDLESS,      /* a status line that never ends, sent as fast as it goes */
    HOSTILE_DRIP,         /* the honest reply, a byte every drip_ms */
    HOSTILE_DRIP_ENDLESS, /* a status line that never ends, a byte every drip_ms */
    HOSTILE_NESTED,       /* arrays of one array, a thousand deep */
    HOSTILE_INT_MAX,      /* the integer 9223372036854775807 */
    HOSTILE_INT_NEGATIVE, /* the integer -9223372036854775808 */
    HOSTILE_INT_GARBAGE,  /* ":12abc", not a number */
    HOSTILE_INT_HUGE,     /* ":99999999999999999999", past 64 bits */
} hostile_mode;

typedef struct hostile hostile;

/* A node on a free loopback port; NULL when it cannot start. */
hostile *hostile_start(void);
/* Closes every connection and stops it. NULL is a no-op. */
void hostile_free(hostile *h);
/* "redis://127.0.0.1:PORT" */
const char *hostile_uri(const hostile *h);

/* How it answers the lock commands from now on (mode), and the guard
 * script (guard: a mode too; HOSTILE_HONEST answers 0). */
void hostile_set(hostile *h, hostile_mode mode, hostile_mode guard, long drip_ms);
/* Bytes it sent so far, on every connection. */
size_t hostile_sent(const hostile *h);

#endif /* REDLOCK_TEST_HOSTILE_H */
