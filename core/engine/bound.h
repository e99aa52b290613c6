/*
 * bound.h - how large a reply may be, checked before hiredis's reader sees
 * a byte of it. A node, hostile or broken, could otherwise make the client
 * buffer without end: hiredis waits for the whole of a bulk string whose
 * header announces 2 GB, allocates an array for the count an array header
 * announces, and (0.14) has no cap on either. So every byte a connection
 * receives is scanned here first, reply by reply, and a reply that goes
 * past its bound is refused as soon as that is known: a bulk string's or
 * an array's header that announces more than the bound, before any of it
 * is buffered; a status or error line that goes on past it; arrays nested
 * deeper than RL_REPLY_DEPTH. The connection then breaks (REDLOCK_EREDIS,
 * the bound named), its node failing for the calls that wait on it, like
 * any broken connection.
 *
 * The rules, in one place:
 *   - Each reply has a bound of bytes (all of it: headers, lines, bodies)
 *     and a bound of elements (every value it holds, arrays included, at
 *     every level), set by what it answers (rl_reply_limits): a command of
 *     a lock, the handshake's INFO, a seed's CLUSTER SLOTS...
 *   - RESP2 only, as the library never asks for RESP3: a type byte other
 *     than + - : $ * is refused, and so is a number that is not one (an
 *     integer reply that does not fit in 64 bits, a length below -1).
 *   - The scanner keeps no bytes: its state is a few counters, so what
 *     it costs does not grow with what a node sends.
 * No I/O here: bytes in, a verdict out.
 */
#ifndef RL_BOUND_H
#define RL_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Arrays nested deeper than this are refused: the deepest reply the
 * library reads (CLUSTER SLOTS, with its nodes' metadata) has 4 levels, and
 * hiredis 0.14's reader gives up past 7. */
#define RL_REPLY_DEPTH 6

/* The bounds of replies, by what they answer. */
#define RL_REPLY_SMALL_BYTES (64 * 1024)       /* AUTH, SELECT, SCRIPT LOAD, the guard, a
                                                * subscriber's messages, a reply nobody
                                                * asked for */
#define RL_REPLY_SMALL_ELEMS 64
#define RL_REPLY_CMD_BYTES (1024 * 1024)       /* a command of a lock, and per key: */
#define RL_REPLY_CMD_KEY_BYTES 64
#define RL_REPLY_CMD_ELEMS 64                  /* and per key: */
#define RL_REPLY_CMD_KEY_ELEMS 2
#define RL_REPLY_INFO_BYTES (1024 * 1024)      /* INFO, ROLE, a sentinel's answers */
#define RL_REPLY_INFO_ELEMS 65536
#define RL_REPLY_SLOTS_BYTES (16 * 1024 * 1024)   /* a Cluster seed's CLUSTER SLOTS */
#define RL_REPLY_SLOTS_ELEMS (1024 * 1024)
/* The most a connection hands hiredis's reader at once (engine.c): with the
 * bound of the reply in progress, what the reader can hold. */
#define RL_REPLY_FEED_MAX (64 * 1024)

/* The bounds of one reply, and what it answers (for messages). */
typedef struct rl_reply_limits {
    uint64_t bytes, elems;
    const char *what;
} rl_reply_limits;

typedef struct rl_bound {
    rl_reply_limits lim;          /* of the reply being read */
    uint64_t bytes, elems;        /* of it, so far */
    uint64_t body;                /* a bulk string's bytes still to come, with its CRLF */
    int64_t left[RL_REPLY_DEPTH]; /* the elements still to come in each open array */
    int depth;                    /* arrays open */
    char type;                    /* the type byte of the line being read (0: none yet) */
    bool cr;                      /* the line's last byte was '\r' */
    bool neg;                     /* the line's number: its sign, */
    unsigned digits;              /* how many digits, */
    uint64_t num;                 /* and its magnitude so far */
    bool over;                    /* ... which went past 2^63 */
} rl_bound;

enum { RL_BOUND_BAD = -1, RL_BOUND_MORE = 0, RL_BOUND_DONE = 1 };

/* A scanner between replies, with no bounds yet. */
void rl_bound_init(rl_bound *b);
/* Whether it is between replies: the next byte starts one, whose bounds
 * are to be set (b->lim) before it is scanned. */
bool rl_bound_idle(const rl_bound *b);
/* Scans bytes p[0 .. len): RL_BOUND_DONE when a reply ends at p[*used],
 * RL_BOUND_MORE when all of them were scanned and the reply goes on (or
 * none began), RL_BOUND_BAD with why when the reply goes past its bounds or
 * is not RESP2. */
int rl_bound_scan(rl_bound *b, const char *p, size_t len, size_t *used, char *why,
                  size_t whylen);

#endif /* RL_BOUND_H */
