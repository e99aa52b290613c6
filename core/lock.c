/*
 * lock.c - acquiring, extending and releasing locks: the Redlock steps.
 * The quorum and validity rules themselves are in quorum.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "internal.h"

struct redlock_handle {
    redlock_ctx *ctx;
    char token[RL_TOKEN_LEN + 1];
    char **keys;          /* key_prefix + resource name, each */
    size_t n_keys;
    int64_t expires_at;   /* monotonic ms at which validity reaches 0 */
    bool held;            /* acquired, and not since lost or released */
    bool released;        /* redlock_unlock was called */
    rl_conn **parked;     /* per node: a connection awaiting replies of ours, or NULL */
};

/* ---- what each reply means ---- */

static void vote_failed(const redisReply *r, rl_result *out)
{
    out->vote = RL_VOTE_FAILED;
    if (r->type == REDIS_REPLY_ERROR) {
        out->code = rl_reply_error_code(r->str);
        snprintf(out->why, sizeof out->why, "%.150s", r->str);
    } else {
        out->code = REDLOCK_EREDIS;
        snprintf(out->why, sizeof out->why, "unexpected reply of type %d", r->type);
    }
}

/* SET NX: OK when set, nil when the key exists. */
static void classify_set(const redisReply *r, size_t n_keys, rl_result *out)
{
    (void)n_keys;
    if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
        out->vote = RL_VOTE_YES;
    else if (r->type == REDIS_REPLY_NIL)
        out->vote = RL_VOTE_NO;
    else
        vote_failed(r, out);
}

/* The acquire and extend scripts: 1 done, 0 not ours. */
static void classify_flag(const redisReply *r, size_t n_keys, rl_result *out)
{
    (void)n_keys;
    if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
        out->vote = r->integer == 1 ? RL_VOTE_YES : RL_VOTE_NO;
    else
        vote_failed(r, out);
}

/* The release script: how many keys it deleted; all of them is a yes. */
static void classify_count(const redisReply *r, size_t n_keys, rl_result *out)
{
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0)
        out->vote = (size_t)r->integer == n_keys ? RL_VOTE_YES : RL_VOTE_NO;
    else
        vote_failed(r, out);
}

/* TYPE: a type other than string (a lock) or none is a yes, for the
 * question "is this key of the wrong type?". */
static void classify_wrong_type(const redisReply *r, size_t n_keys, rl_result *out)
{
    (void)n_keys;
    if (r->type != REDIS_REPLY_STATUS) {
        vote_failed(r, out);
        return;
    }
    bool wrong = strcmp(r->str, "string") != 0 && strcmp(r->str, "none") != 0;
    out->vote = wrong ? RL_VOTE_YES : RL_VOTE_NO;
    if (wrong)
        snprintf(out->why, sizeof out->why, "%.40s", r->str);
}

/* ---- commands ---- */

typedef struct command_buf {
    rl_command cmd;
    char *bytes;
    char *fallback;
} command_buf;

static void command_free(command_buf *b)
{
    redisFreeCommand(b->bytes);
    redisFreeCommand(b->fallback);
    b->bytes = b->fallback = NULL;
}

/* SET key token NX PX ttl */
static int command_set(command_buf *b, const redlock_handle *h, int64_t ttl_ms)
{
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
    const char *argv[6] = { "SET", h->keys[0], h->token, "NX", "PX", ttl };
    int len = redisFormatCommandArgv(&b->bytes, 6, argv, NULL);
    if (len < 0)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    b->cmd = (rl_command){ .bytes = b->bytes, .len = (size_t)len, .classify = classify_set,
                           .n_keys = 1, .guarded = true };
    return REDLOCK_OK;
}

/* EVALSHA sha n key... token [ttl], with EVAL body ... as the fallback. */
static int command_script(command_buf *b, const redlock_handle *h, const rl_script *script,
                          int64_t ttl_ms, rl_classify_fn classify, bool guarded)
{
    size_t argc = 3 + h->n_keys + (ttl_ms > 0 ? 2 : 1);
    const char **argv = malloc(argc * sizeof *argv);
    char numkeys[24], ttl[24];
    if (!argv)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    snprintf(numkeys, sizeof numkeys, "%zu", h->n_keys);
    snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
    argv[2] = numkeys;
    for (size_t i = 0; i < h->n_keys; i++)
        argv[3 + i] = h->keys[i];
    argv[3 + h->n_keys] = h->token;
    if (ttl_ms > 0)
        argv[4 + h->n_keys] = ttl;

    argv[0] = "EVALSHA";
    argv[1] = script->sha1;
    int len = redisFormatCommandArgv(&b->bytes, (int)argc, argv, NULL);
    argv[0] = "EVAL";
    argv[1] = script->body;
    int flen = redisFormatCommandArgv(&b->fallback, (int)argc, argv, NULL);
    free(argv);
    if (len < 0 || flen < 0) {
        command_free(b);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    b->cmd = (rl_command){ .bytes = b->bytes, .len = (size_t)len, .fallback = b->fallback,
                           .fallback_len = (size_t)flen, .classify = classify,
                           .n_keys = h->n_keys, .guarded = guarded };
    return REDLOCK_OK;
}

/* ---- handles ---- */

static int compare_keys(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int check_lease(int64_t ttl_ms)
{
    if (ttl_ms <= 0)
        return rl_fail(REDLOCK_EINVAL, "ttl_ms must be positive, got %lld", (long long)ttl_ms);
    if (ttl_ms > REDLOCK_MAX_TTL_MS)
        return rl_fail(REDLOCK_EINVAL, "ttl_ms must be at most %d, got %lld", REDLOCK_MAX_TTL_MS,
                       (long long)ttl_ms);
    return REDLOCK_OK;
}

void redlock_handle_free(redlock_handle *h)
{
    if (!h)
        return;
    if (h->parked) {
        rl_fanout_unpark(h->ctx, h->parked);
        free(h->parked);
    }
    for (size_t i = 0; i < h->n_keys; i++)
        free(h->keys[i]);
    free(h->keys);
    free(h);
}

/* A handle for the given resources, their keys prefixed; names checked. */
static int handle_new(redlock_handle **out, redlock_ctx *ctx, const char *const *names, size_t n)
{
    const rl_options *o = &ctx->opt;
    redlock_handle *h = calloc(1, sizeof *h);
    if (!h || !(h->keys = calloc(n, sizeof *h->keys))
        || !(h->parked = calloc(ctx->n_nodes, sizeof *h->parked))) {
        if (h)
            free(h->keys);
        free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    h->ctx = ctx;
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) {
            redlock_handle_free(h);
            return rl_fail(REDLOCK_EINVAL, "resource name %zu is NULL", i);
        }
        size_t len = strnlen(names[i], REDLOCK_MAX_NAME_BYTES + 1);
        if (len == 0 || o->key_prefix_len + len > REDLOCK_MAX_NAME_BYTES) {
            redlock_handle_free(h);
            return rl_fail(REDLOCK_EINVAL, len == 0 ? "resource name %zu is empty"
                           : "resource name %zu is too long (key_prefix and name together "
                             "may have at most 4096 bytes)", i);
        }
        if (!(h->keys[i] = malloc(o->key_prefix_len + len + 1))) {
            redlock_handle_free(h);
            return rl_fail(REDLOCK_ENOMEM, "out of memory");
        }
        h->n_keys = i + 1;
        memcpy(h->keys[i], o->key_prefix, o->key_prefix_len);
        memcpy(h->keys[i] + o->key_prefix_len, names[i], len + 1);
    }
    if (n > 1) {
        char **sorted = malloc(n * sizeof *sorted);
        if (!sorted) {
            redlock_handle_free(h);
            return rl_fail(REDLOCK_ENOMEM, "out of memory");
        }
        memcpy(sorted, h->keys, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, compare_keys);
        for (size_t i = 1; i < n; i++) {
            if (strcmp(sorted[i - 1], sorted[i]) == 0) {
                int rc = rl_fail(REDLOCK_EINVAL, "resource '%.200s' is listed twice",
                                 sorted[i] + o->key_prefix_len);
                free(sorted);
                redlock_handle_free(h);
                return rc;
            }
        }
        free(sorted);
    }
    *out = h;
    return REDLOCK_OK;
}

/* ---- the Redlock steps ---- */

/* "lock 'orders'" or "lock 'orders' and 2 more", for messages. */
static const char *what_of(const redlock_handle *h, const char *verb, char *buf, size_t len)
{
    if (h->n_keys == 1)
        snprintf(buf, len, "%s '%.200s'", verb, h->keys[0]);
    else
        snprintf(buf, len, "%s '%.200s' and %zu more", verb, h->keys[0], h->n_keys - 1);
    return buf;
}

/* Sends the release script to every node and does not wait for the answers:
 * used after a failed attempt, where nothing is to be learnt from them. As
 * no one reads the reply, it is sent as EVAL, which cannot fail with NOSCRIPT. */
static void release_quietly(redlock_handle *h)
{
    command_buf b = { 0 };
    rl_result results[REDLOCK_MAX_NODES];
    if (command_script(&b, h, &rl_script_release, 0, classify_count, false) != REDLOCK_OK)
        return;
    b.cmd.bytes = b.fallback;
    b.cmd.len = b.cmd.fallback_len;
    b.cmd.fallback = NULL;
    rl_fanout(h->ctx, &b.cmd, RL_WAIT_SENT, results, h->parked);
    command_free(&b);
}

/* One attempt: a fresh token, the command to every node, the quorum rule. */
static int acquire_once(redlock_handle *h, int64_t ttl_ms)
{
    redlock_ctx *ctx = h->ctx;
    command_buf b = { 0 };
    rl_result results[REDLOCK_MAX_NODES];
    char what[300];
    int rc = rl_token_new(h->token);
    if (rc != REDLOCK_OK)
        return rc;
    rc = h->n_keys == 1 ? command_set(&b, h, ttl_ms)
                        : command_script(&b, h, &rl_script_acquire_multi, ttl_ms, classify_flag, true);
    if (rc != REDLOCK_OK)
        return rc;

    int64_t start = rl_now_ms();
    rl_fanout(ctx, &b.cmd, RL_WAIT_QUORUM, results, h->parked);
    int64_t elapsed = rl_now_ms() - start;
    command_free(&b);

    rl_tally t;
    rl_tally_count(&t, results, ctx->n_nodes);
    bool quorum = t.yes >= rl_quorum(ctx->n_nodes);
    if (quorum && rl_validity_ms(ttl_ms, elapsed, ctx->opt.drift_factor) > 0) {
        h->expires_at = start + ttl_ms - rl_drift_ms(ttl_ms, ctx->opt.drift_factor);
        h->held = true;
        return REDLOCK_OK;
    }
    if (quorum)
        rc = rl_fail(REDLOCK_EEXPIRED, "lock '%.200s': a quorum agreed after %lld ms, which left "
                     "no validity of the %lld ms lease", h->keys[0], (long long)elapsed,
                     (long long)ttl_ms);
    else
        rc = rl_tally_outcome(ctx, results, what_of(h, "lock", what, sizeof what), REDLOCK_ELOCKED);
    release_quietly(h);
    return rc;
}

/* SET NX cannot tell a lock held by someone else from a key of another type.
 * When acquiring one resource ends refused, TYPE on every node tells them
 * apart; the multi-lock script checks types itself. */
static int explain_refusal(redlock_handle *h, int rc)
{
    if (rc != REDLOCK_ELOCKED || h->n_keys != 1)
        return rc;
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", redlock_errmsg());
    const char *argv[2] = { "TYPE", h->keys[0] };
    char *bytes = NULL;
    int len = redisFormatCommandArgv(&bytes, 2, argv, NULL);
    if (len < 0)
        return rc;
    rl_command cmd = { .bytes = bytes, .len = (size_t)len, .classify = classify_wrong_type,
                       .n_keys = 1 };
    rl_result results[REDLOCK_MAX_NODES];
    rl_fanout(h->ctx, &cmd, RL_WAIT_QUORUM, results, h->parked);
    redisFreeCommand(bytes);

    rl_tally t;
    rl_tally_count(&t, results, h->ctx->n_nodes);
    if (t.yes < rl_quorum(h->ctx->n_nodes))
        return rl_fail(rc, "%s", saved);
    const char *kind = "other";
    for (size_t i = 0; i < h->ctx->n_nodes; i++)
        if (results[i].vote == RL_VOTE_YES)
            kind = results[i].why;
    return rl_fail(REDLOCK_EWRONGTYPE, "lock '%.200s': the key holds a %s, not a lock",
                   h->keys[0], kind);
}

/* Codes for which trying again cannot help. */
static bool retryable(int rc)
{
    return rc == REDLOCK_ELOCKED || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EEXPIRED
        || rc == REDLOCK_EREDIS;
}

static int64_t retry_pause_ms(const rl_options *o)
{
    int64_t pause = o->retry_delay_ms;
    if (o->retry_jitter_ms > 0)
        pause += (int64_t)(rl_random_u32() % (uint32_t)(2 * o->retry_jitter_ms + 1))
                 - o->retry_jitter_ms;
    return pause < 0 ? 0 : pause;
}

static int lock_resources(redlock_handle **out, redlock_ctx *ctx, const char *const *names,
                          size_t n, int64_t ttl_ms, int64_t wait_ms)
{
    rl_clear_error();
    if (!out)
        return rl_fail(REDLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    int rc = check_lease(ttl_ms);
    if (rc != REDLOCK_OK)
        return rc;
    if (wait_ms < 0)
        return rl_fail(REDLOCK_EINVAL, "wait_ms must not be negative, got %lld",
                       (long long)wait_ms);

    redlock_handle *h = NULL;
    if ((rc = handle_new(&h, ctx, names, n)) != REDLOCK_OK)
        return rc;
    rl_ctx_note_lease(ctx, ttl_ms);

    int64_t now = rl_now_ms();
    int64_t give_up = wait_ms > INT64_MAX - now ? INT64_MAX : now + wait_ms;
    for (;;) {
        rc = acquire_once(h, ttl_ms);
        if (rc == REDLOCK_OK) {
            *out = h;
            return REDLOCK_OK;
        }
        int64_t left = give_up - rl_now_ms();
        if (!retryable(rc) || left <= 0)
            break;
        int64_t pause = retry_pause_ms(&ctx->opt);
        rl_sleep_ms(pause < left ? pause : left);
    }
    rc = explain_refusal(h, rc);
    redlock_handle_free(h);
    return rc;
}

int redlock_lock(redlock_handle **out, redlock_ctx *ctx, const char *resource, int64_t ttl_ms,
                 int64_t wait_ms)
{
    if (!resource) {
        if (out)
            *out = NULL;
        return rl_fail(REDLOCK_EINVAL, "resource is NULL");
    }
    return lock_resources(out, ctx, &resource, 1, ttl_ms, wait_ms);
}

int redlock_lock_multi(redlock_handle **out, redlock_ctx *ctx, const char *const *resources,
                       size_t n_resources, int64_t ttl_ms, int64_t wait_ms)
{
    if (!resources || n_resources == 0 || n_resources > REDLOCK_MAX_RESOURCES) {
        if (out)
            *out = NULL;
        return rl_fail(REDLOCK_EINVAL, !resources ? "resources is NULL"
                       : "n_resources must be from 1 to %d", REDLOCK_MAX_RESOURCES);
    }
    return lock_resources(out, ctx, resources, n_resources, ttl_ms, wait_ms);
}

int redlock_extend(redlock_handle *h, int64_t ttl_ms)
{
    rl_clear_error();
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    int rc = check_lease(ttl_ms);
    if (rc != REDLOCK_OK)
        return rc;
    if (!h->held)
        return rl_fail(REDLOCK_ENOTHELD, "extend: the lock was %s",
                       h->released ? "released" : "lost");
    int64_t start = rl_now_ms();
    if (h->expires_at <= start) {
        h->held = false;
        return rl_fail(REDLOCK_ENOTHELD, "extend: the lock expired %lld ms ago",
                       (long long)(start - h->expires_at));
    }

    redlock_ctx *ctx = h->ctx;
    command_buf b = { 0 };
    rl_result results[REDLOCK_MAX_NODES];
    rl_ctx_note_lease(ctx, ttl_ms);
    if ((rc = command_script(&b, h, &rl_script_extend, ttl_ms, classify_flag, true)) != REDLOCK_OK)
        return rc;
    rl_fanout(ctx, &b.cmd, RL_WAIT_QUORUM, results, h->parked);
    int64_t elapsed = rl_now_ms() - start;
    command_free(&b);

    rl_tally t;
    rl_tally_count(&t, results, ctx->n_nodes);
    if (t.yes >= rl_quorum(ctx->n_nodes)) {
        if (rl_validity_ms(ttl_ms, elapsed, ctx->opt.drift_factor) > 0) {
            h->expires_at = start + ttl_ms - rl_drift_ms(ttl_ms, ctx->opt.drift_factor);
            return REDLOCK_OK;
        }
        h->held = false;
        return rl_fail(REDLOCK_ENOTHELD, "extend: a quorum agreed after %lld ms, which left no "
                       "validity of the %lld ms lease", (long long)elapsed, (long long)ttl_ms);
    }
    char what[300];
    rc = rl_tally_outcome(ctx, results, what_of(h, "extend", what, sizeof what), REDLOCK_ENOTHELD);
    /* A quorum saying "not ours" means it is gone; a quorum of silent nodes
     * says nothing, and the lease we had still bounds the lock. */
    if (rc == REDLOCK_ENOTHELD || rc == REDLOCK_EWRONGTYPE)
        h->held = false;
    return rc;
}

int redlock_unlock(redlock_handle *h)
{
    rl_clear_error();
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    if (h->released)
        return rl_fail(REDLOCK_ENOTHELD, "unlock: the lock was already released");

    redlock_ctx *ctx = h->ctx;
    command_buf b = { 0 };
    rl_result results[REDLOCK_MAX_NODES];
    int rc = command_script(&b, h, &rl_script_release, 0, classify_count, false);
    if (rc != REDLOCK_OK)
        return rc;
    int64_t left = h->expires_at - rl_now_ms();
    bool was_held = h->held;
    rl_fanout(ctx, &b.cmd, RL_WAIT_QUORUM, results, h->parked);
    command_free(&b);
    h->released = true;
    h->held = false;

    if (!was_held)
        return rl_fail(REDLOCK_ENOTHELD, "unlock: the lock had been lost before unlock");
    if (left <= 0)
        return rl_fail(REDLOCK_ENOTHELD, "unlock: the lock had expired %lld ms before unlock",
                       (long long)-left);
    rl_tally t;
    rl_tally_count(&t, results, ctx->n_nodes);
    if (t.yes >= rl_quorum(ctx->n_nodes))
        return REDLOCK_OK;
    char what[300];
    return rl_tally_outcome(ctx, results, what_of(h, "unlock", what, sizeof what),
                            REDLOCK_ENOTHELD);
}

int64_t redlock_handle_validity_ms(const redlock_handle *h)
{
    if (!h || !h->held)
        return 0;
    return h->expires_at - rl_now_ms();
}

const char *redlock_handle_token(const redlock_handle *h)
{
    return h ? h->token : NULL;
}
