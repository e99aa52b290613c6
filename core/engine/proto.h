/*
 * proto.h - the Redis protocol as the engine needs it: commands formatted
 * into bytes (hiredis's redisFormatCommandArgv) and replies reduced to what
 * the quorum rule needs (a vote). No I/O: bytes in, bytes out.
 */
#ifndef RL_PROTO_H
#define RL_PROTO_H

#include "base.h"

struct redisReader;
struct redisReply;

/* A formatted command, owned (free with rl_bytes_free). */
typedef struct rl_bytes {
    char *p;
    size_t len;
} rl_bytes;

/* Formats argv (NUL-terminated strings) as RESP; REDLOCK_OK or REDLOCK_ENOMEM. */
int rl_bytes_format(rl_bytes *out, int argc, const char **argv);
/* The same with each argument's length (binary-safe); lens NULL: strlen. */
int rl_bytes_format_len(rl_bytes *out, int argc, const char **argv, const size_t *lens);
void rl_bytes_free(rl_bytes *b);
/* rl_bytes_free for a command that holds a secret (AUTH): its bytes are
 * wiped first. */
void rl_bytes_wipe(rl_bytes *b);
/* v in decimal in out (room for any long long and its zero byte), as
 * snprintf's "%lld" writes it, without its cost on the hot path; returns
 * out. */
char *rl_decimal(char out[24], long long v);

/* A hiredis reader for a connection's replies, with the caps that hiredis
 * 1.x has set (see proto.c); NULL when out of memory. Free it with
 * redisReaderFree. */
struct redisReader *rl_reader_new(void);

/* What one node said, reduced to what the quorum rule needs. */
typedef enum rl_vote {
    RL_VOTE_PENDING = 0,
    RL_VOTE_YES,       /* did what was asked (set, extended, released); inspect:
                        * the key is there; force: it was deleted */
    RL_VOTE_NO,        /* answered, and refused: the key is someone else's;
                        * inspect, force: there is no key */
    RL_VOTE_FAILED     /* no usable answer: down, timed out, or an error reply */
} rl_vote;

typedef struct rl_result {
    rl_vote vote;
    int code;          /* for RL_VOTE_FAILED: the REDLOCK_E* that describes it */
    char why[160];     /* for RL_VOTE_FAILED: printable reason */
    int64_t guard_ms;  /* for RL_VOTE_FAILED: a yes the restart guard holds back, for this
                        * many ms more (rl_quorum_admit); 0 for any other failure */
    bool records;      /* for RL_VOTE_FAILED: a yes that waits for the records (records.h):
                        * counted as not answered yet, judged again as replies come (round.c) */
    uint64_t holder;   /* inspect, RL_VOTE_YES: a hash of the key's value (its token) */
    int64_t pttl;      /* inspect, RL_VOTE_YES: the key's PTTL in ms (-1: no expiry) */
    int64_t free;      /* a query of a semaphore's permits, RL_VOTE_YES: the free ones */
    int64_t ticket;    /* a fair lock's acquire: the waiter's ticket there, or the one
                        * the node gives it (0: none) */
} rl_result;

/* Marks r failed with code and a printf-style reason. */
void rl_result_fail(rl_result *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A failed vote from an error reply or a reply of an unexpected type. */
void rl_result_from_bad_reply(rl_result *r, const struct redisReply *reply);

/* The REDLOCK_E* code for a Redis error reply (WRONGTYPE, NOAUTH, ...). */
int rl_reply_error_code(const char *err);

/* An error reply that says the server is a replica (READONLY, also from
 * inside a script): a Sentinel node's master moved. */
bool rl_reply_readonly(const char *err);

/* An error reply NOSCRIPT: the node does not have the script (EVALSHA). */
bool rl_reply_is_noscript(const struct redisReply *reply);

/* An error reply to FCALL that says it did not run: no such function (the
 * library of this version is not there), no such command (before Redis
 * 7.0), or an ACL without +fcall. */
bool rl_reply_no_function(const struct redisReply *reply);

#endif /* RL_PROTO_H */
