/*
 * internal.h - declarations shared by the files of core/. Nothing here is
 * exported: the library is built with hidden visibility and a version script.
 */
#ifndef REDLOCK_INTERNAL_H
#define REDLOCK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redlock.h"

struct redisContext;
struct redisReply;

/* ---- error.c: status codes and the thread's last error message ---- */

/* Sets this thread's message (printf-style) and returns code, so a failure
 * reads `return rl_fail(REDLOCK_EINVAL, "ttl_ms must be positive");`. */
int rl_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rl_clear_error(void);

/* ---- clock.c ---- */
int64_t rl_now_ms(void);          /* monotonic milliseconds */
void rl_sleep_ms(int64_t ms);

/* ---- token.c ---- */
#define RL_TOKEN_BYTES 16
#define RL_TOKEN_LEN (RL_TOKEN_BYTES * 2)
int rl_token_new(char out[RL_TOKEN_LEN + 1]);   /* hex, from the OS CSPRNG */
uint32_t rl_random_u32(void);                   /* for retry jitter */

/* ---- uri.c: node URIs ---- */
typedef struct rl_node_addr {
    bool is_unix;
    char *host;      /* TCP host (brackets stripped from IPv6) */
    int port;
    char *path;      /* unix socket path */
    char *user;      /* NULL: no ACL user */
    char *password;  /* NULL: no AUTH */
    int db;
    char label[96];  /* "host:port" or "unix:path", safe to print */
} rl_node_addr;

int rl_uri_parse(rl_node_addr *out, const char *uri);
void rl_uri_free(rl_node_addr *addr);
bool rl_uri_same_node(const rl_node_addr *a, const rl_node_addr *b);

/* ---- options.c ---- */
typedef struct rl_options {
    int64_t node_timeout_ms;
    int64_t connect_timeout_ms;
    int64_t retry_delay_ms;
    int64_t retry_jitter_ms;
    double drift_factor;
    char *key_prefix;
    size_t key_prefix_len;
    int pool_size;
    bool restart_guard;
} rl_options;

int rl_options_init(rl_options *o);
void rl_options_free(rl_options *o);
int rl_options_set(rl_options *o, const char *name, const char *value);

/* ---- scripts.c: the Lua scripts and their SHA1 digests ---- */
typedef struct rl_script {
    const char *body;
    const char *sha1;
} rl_script;

extern const rl_script rl_script_acquire_multi; /* SET NX PX on all KEYS or none */
extern const rl_script rl_script_release;       /* DEL each KEY whose value is ARGV[1] */
extern const rl_script rl_script_extend;        /* PEXPIRE all KEYS if all are ARGV[1] */

/* ---- node.c: connections to one node, pooled ---- */

/* What a reply of the connection handshake is. */
typedef enum rl_hs_kind {
    RL_HS_REQUIRED,   /* AUTH, SELECT: an error makes the connection unusable */
    RL_HS_SCRIPT,     /* SCRIPT LOAD: an error only means EVALSHA may need EVAL */
    RL_HS_INFO        /* INFO server: the node's run_id, for the restart guard */
} rl_hs_kind;

#define RL_MAX_HANDSHAKE 6

typedef struct rl_pending {
    char *eval;              /* EVAL command to resend on NOSCRIPT, or NULL */
    size_t len;
    bool owned;              /* eval is a copy this connection frees */
} rl_pending;

typedef struct rl_conn {
    struct redisContext *rc;
    struct rl_conn *next;    /* in the idle list */
    unsigned char hs[RL_MAX_HANDSHAKE]; /* handshake replies, in order (rl_hs_kind) */
    int hs_total;            /* how many handshake commands were sent */
    int hs_done;             /* how many of their replies were read */
    /* After the handshake, one entry per reply still to come, in order: the
     * EVAL to send if that reply is NOSCRIPT, or NULL. Replies of earlier
     * calls are read and dropped by later ones, which also resend the EVAL
     * for a script nobody waited for. */
    struct rl_pending *pending;
    int pending_head, pending_len, pending_cap;
    bool fresh;              /* the connect has not completed yet */
    bool reused;             /* taken from the idle list (may have gone stale) */
} rl_conn;

typedef struct rl_node {
    rl_node_addr addr;
    pthread_mutex_t mu;      /* guards the fields below, but restarted_at_ms */
    rl_conn *idle;
    int n_idle;
    int64_t down_until_ms;   /* no new connections before this (backoff) */
    int64_t backoff_ms;
    char run_id[41];         /* the node's INFO run_id as last seen ("" before) */
    _Atomic int64_t restarted_at_ms; /* when a new run_id was seen; 0 never */
} rl_node;

int rl_node_init(rl_node *node, const char *uri);
void rl_node_destroy(rl_node *node);

/* Takes an idle connection or starts a non-blocking connect. On failure
 * returns NULL and writes why to err (node in backoff, or connect refused). */
rl_conn *rl_node_acquire(rl_node *node, char *err, size_t errlen);
/* Gives a connection back; a broken one (or one beyond pool_size) is closed. */
void rl_node_release(rl_node *node, rl_conn *conn, bool broken, int pool_size);
/* The queue of replies to come on a connection (see rl_conn). */
bool rl_conn_push(rl_conn *conn, const char *eval, size_t len);
rl_pending rl_conn_pop(rl_conn *conn);
/* Makes every queued EVAL a copy of its own, once the caller's command
 * buffers are about to go; false when out of memory. */
bool rl_conn_own_pending(rl_conn *conn);

/* Closes every idle connection (after one was found dead: the node restarted). */
void rl_node_discard_idle(rl_node *node);
/* Records that connecting failed or succeeded, for the backoff. */
void rl_node_connect_failed(rl_node *node);
void rl_node_connect_ok(rl_node *node);
/* Appends the handshake of a new connection: AUTH, SELECT, SCRIPT LOAD of
 * every script, INFO server. */
void rl_node_append_handshake(const rl_node *node, rl_conn *conn);
/* Reads one handshake reply; REDLOCK_OK, or the code that makes the
 * connection unusable (message in why). */
int rl_node_handshake_reply(rl_node *node, rl_conn *conn, const struct redisReply *reply,
                            char *why, size_t whylen);
/* Milliseconds for which the node's votes do not count yet, because it
 * restarted less than max_lease_ms ago; 0 when they count. */
int64_t rl_node_guard_left(rl_node *node, int64_t max_lease_ms, int64_t now);

/* Finds "run_id:<40 hex>" in an INFO reply; 0 when found. */
int rl_info_run_id(const char *info, size_t len, char out[41]);

/* ---- fanout.c: one command to every node at once, over one poll loop ---- */

/* What one node said, reduced to what the quorum rule needs. */
typedef enum rl_vote {
    RL_VOTE_PENDING = 0,
    RL_VOTE_YES,       /* did what was asked (set, extended, released) */
    RL_VOTE_NO,        /* answered, and refused: the key is someone else's */
    RL_VOTE_FAILED     /* no usable answer: down, timed out, or an error reply */
} rl_vote;

typedef struct rl_result {
    rl_vote vote;
    int code;          /* for RL_VOTE_FAILED: the REDLOCK_E* that describes it */
    char why[160];     /* for RL_VOTE_FAILED: printable reason */
} rl_result;

/* Reads one reply of the main command; decides YES, NO or FAILED. */
typedef void (*rl_classify_fn)(const struct redisReply *reply, size_t n_keys, rl_result *out);

typedef struct rl_command {
    const char *bytes;          /* the formatted command (RESP) */
    size_t len;
    const char *fallback;       /* sent again when the node says NOSCRIPT (EVAL), or NULL */
    size_t fallback_len;
    rl_classify_fn classify;
    size_t n_keys;
    bool guarded;               /* yes votes are subject to the restart guard */
} rl_command;

typedef enum rl_wait_for {
    RL_WAIT_QUORUM,    /* return as soon as the quorum outcome is decided */
    RL_WAIT_SENT       /* return once the command is written to every reachable node */
} rl_wait_for;

struct redlock_ctx;

/* The REDLOCK_E* code for a Redis error reply (WRONGTYPE, NOAUTH, ...). */
int rl_reply_error_code(const char *err);

/* Sends cmd to every node of ctx at once; fills results[ctx->n_nodes].
 * parked (per node, or NULL) holds connections that still await replies of
 * the caller's earlier commands: they are used first, so a handle's commands
 * reach each node in order, and connections left awaiting replies are
 * parked there again. */
void rl_fanout(struct redlock_ctx *ctx, const rl_command *cmd, rl_wait_for wait,
               rl_result *results, rl_conn **parked);
/* Returns parked connections to their pools. */
void rl_fanout_unpark(struct redlock_ctx *ctx, rl_conn **parked);

/* ---- quorum.c: the Redlock rules, in one place ---- */
typedef struct rl_tally {
    size_t yes, no, failed, pending, n;
} rl_tally;

size_t rl_quorum(size_t n_nodes);
void rl_tally_count(rl_tally *t, const rl_result *results, size_t n);
bool rl_tally_decided(const rl_tally *t);
int64_t rl_drift_ms(int64_t ttl_ms, double drift_factor);
int64_t rl_validity_ms(int64_t ttl_ms, int64_t elapsed_ms, double drift_factor);
/* Turns the votes of a round into a status code and this thread's message. */
int rl_tally_outcome(const struct redlock_ctx *ctx, const rl_result *results, const char *what,
                     int refused_code);

/* ---- ctx.c ---- */
struct redlock_ctx {
    rl_node *nodes;
    size_t n_nodes;
    rl_options opt;
    _Atomic int64_t max_lease_ms;   /* the largest lease taken or extended so far */
};

/* Raises ctx->max_lease_ms to ttl_ms if it is larger. */
void rl_ctx_note_lease(struct redlock_ctx *ctx, int64_t ttl_ms);

#endif /* REDLOCK_INTERNAL_H */
