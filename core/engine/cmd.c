/* cmd.c - commands and their replies (see cmd.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "cmd.h"
#include "node.h"
#include "scripts.h"

rl_keys *rl_keys_new(size_t n)
{
    rl_keys *keys = calloc(1, sizeof *keys);
    if (!keys || !(keys->k = calloc(n ? n : 1, sizeof *keys->k))) {
        free(keys);
        return NULL;
    }
    atomic_init(&keys->refs, 1);
    keys->n = n;
    return keys;
}

rl_keys *rl_keys_ref(rl_keys *keys)
{
    atomic_fetch_add_explicit(&keys->refs, 1, memory_order_relaxed);
    return keys;
}

void rl_keys_unref(rl_keys *keys)
{
    if (!keys || atomic_fetch_sub_explicit(&keys->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < keys->n; i++)
        free(keys->k[i]);
    free(keys->k);
    free(keys);
}

rl_cmd *rl_cmd_new(rl_cmd_kind kind, rl_keys *keys, const char *token, int64_t ttl_ms)
{
    rl_cmd *cmd = calloc(1, sizeof *cmd);
    if (!cmd)
        return NULL;
    atomic_init(&cmd->refs, 1);
    atomic_init(&cmd->undo, false);
    cmd->kind = kind;
    cmd->keys = rl_keys_ref(keys);
    size_t len = strnlen(token, RL_TOKEN_LEN);
    memcpy(cmd->token, token, len);
    cmd->token[len] = '\0';
    cmd->ttl_ms = ttl_ms;
    return cmd;
}

rl_cmd *rl_cmd_new_many(rl_keys *keys)
{
    rl_cmd *cmd = rl_cmd_new(RL_CMD_EXTEND_MANY, keys, "", 0);
    if (!cmd)
        return NULL;
    size_t n = keys->n ? keys->n : 1;
    cmd->tokens = malloc(n * sizeof *cmd->tokens);
    cmd->leases = malloc(n * sizeof *cmd->leases);
    if (!cmd->tokens || !cmd->leases) {
        rl_cmd_unref(cmd);
        return NULL;
    }
    return cmd;
}

int64_t rl_cmd_work_ms(const rl_cmd *cmd)
{
    size_t n = cmd->kind == RL_CMD_PING ? 0 : cmd->keys->n;
    if (n < 2)
        return 0;
    return (int64_t)(n * RL_CMD_US_PER_KEY / 1000);   /* whole ms: none under 50 keys */
}

/* A SET's OK (done: a yes), its nil (not done: a no), or a failure. */
static void ok_or_nil(const redisReply *r, rl_result *out)
{
    if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
        out->vote = RL_VOTE_YES;
    else if (r->type == REDIS_REPLY_NIL)
        out->vote = RL_VOTE_NO;
    else
        rl_result_from_bad_reply(out, r);
}

bool rl_cmd_plain_votes(const rl_result *plain, signed char *out, rl_result *bad)
{
    if (plain->vote == RL_VOTE_FAILED && plain->code != REDLOCK_EWRONGTYPE) {
        *bad = *plain;
        return false;
    }
    out[0] = plain->vote == RL_VOTE_YES ? 1 : plain->vote == RL_VOTE_NO ? 0 : -1;
    return true;
}

bool rl_cmd_many_votes(const rl_cmd *cmd, int form, const redisReply *r, signed char *out,
                       rl_result *bad)
{
    if (form == RL_FORM_IFEQ) {
        rl_result one;
        memset(&one, 0, sizeof one);
        ok_or_nil(r, &one);
        return rl_cmd_plain_votes(&one, out, bad);
    }
    /* A read-write lock is renewed alone, by rw.lua's extend: 1 or 0. */
    if (cmd->keys->kind != RL_LOCK_PLAIN && cmd->keys->n == 1 && r->type == REDIS_REPLY_INTEGER
        && (r->integer == 0 || r->integer == 1)) {
        out[0] = (signed char)r->integer;
        return true;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != cmd->keys->n) {
        if (r->type == REDIS_REPLY_ARRAY)
            rl_result_fail(bad, REDLOCK_EREDIS, "a renewal of %zu keys answered with %zu",
                           cmd->keys->n, r->elements);
        else
            rl_result_from_bad_reply(bad, r);
        return false;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_INTEGER || e->integer < -1 || e->integer > 1) {
            rl_result_fail(bad, REDLOCK_EREDIS, "a renewal's answer for key %zu is not -1, 0 "
                           "or 1", i + 1);
            return false;
        }
        out[i] = (signed char)e->integer;
    }
    return true;
}

rl_cmd *rl_cmd_ref(rl_cmd *cmd)
{
    atomic_fetch_add_explicit(&cmd->refs, 1, memory_order_relaxed);
    return cmd;
}

void rl_cmd_unref(rl_cmd *cmd)
{
    if (!cmd || atomic_fetch_sub_explicit(&cmd->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int i = 0; i < RL_FORMS; i++) {
        rl_bytes_free(&cmd->cached[0][i]);
        rl_bytes_free(&cmd->cached[1][i]);
    }
    free(cmd->fences);
    free(cmd->tokens);
    free(cmd->leases);
    rl_keys_unref(cmd->keys);
    rl_cmd_unref(cmd->parent);
    free(cmd);
}

bool rl_cmd_undone(const rl_cmd *cmd)
{
    return atomic_load(&cmd->undo) || (cmd->parent && atomic_load(&cmd->parent->undo));
}

bool rl_keys_same(const rl_keys *a, const rl_keys *b)
{
    if (a == b)
        return true;
    if (a->n != b->n || a->kind != b->kind)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->k[i], b->k[i]) != 0)
            return false;
    return true;
}

/* Whether cmd goes to rw.lua: a read lock's acquire, a read or write lock's
 * extend, renewal or release (a write lock's acquire is a plain lock's). */
static bool rw(const rl_cmd *cmd)
{
    rl_lock_kind kind = cmd->keys->kind;
    switch (cmd->kind) {
    case RL_CMD_ACQUIRE:
        return kind == RL_LOCK_READ;
    case RL_CMD_EXTEND:
    case RL_CMD_EXTEND_MANY:
    case RL_CMD_RELEASE:
        return kind == RL_LOCK_READ || kind == RL_LOCK_WRITE;
    default:
        return false;
    }
}

/* Whether cmd goes to sem.lua: every call of a semaphore's permit, and a
 * query of its permits. */
static bool sem(const rl_cmd *cmd)
{
    return cmd->kind != RL_CMD_PING && cmd->kind != RL_CMD_FORCE && cmd->kind != RL_CMD_FENCE
        && cmd->keys->kind == RL_LOCK_PERMIT;
}

/* Whether cmd goes to fair.lua: a fair lock's acquire and release (its
 * extend is a plain lock's). */
static bool fair(const rl_cmd *cmd)
{
    return cmd->keys->kind == RL_LOCK_FAIR
        && (cmd->kind == RL_CMD_ACQUIRE || cmd->kind == RL_CMD_RELEASE);
}

static const rl_script *script_of(const rl_cmd *cmd)
{
    if (fair(cmd))
        return &rl_script_fair;
    if (sem(cmd))
        return &rl_script_sem;
    if (rw(cmd))
        return &rl_script_rw;
    switch (cmd->kind) {
    case RL_CMD_ACQUIRE: return &rl_script_acquire;
    case RL_CMD_EXTEND:  return &rl_script_extend;
    case RL_CMD_INSPECT: return &rl_script_inspect;
    case RL_CMD_FORCE:   return &rl_script_force;
    case RL_CMD_FENCE:   return &rl_script_fence;
    case RL_CMD_EXTEND_MANY: return &rl_script_extend_many;
    default:             return &rl_script_release;
    }
}

/* The start of a script's call in form: EVAL and its text, EVALSHA and its
 * digest, or FCALL and its function. */
static void script_head(const char **argv, rl_form form, const rl_script *script)
{
    argv[0] = form == RL_FORM_EVAL ? "EVAL" : form == RL_FORM_FCALL ? "FCALL" : "EVALSHA";
    argv[1] = form == RL_FORM_EVAL ? script->body
            : form == RL_FORM_FCALL ? script->fn : script->sha1;
}

/* Formats a renewal of many locks: EVALSHA/EVAL script n key... then each
 * key's token and lease. */
static int format_many(const rl_cmd *cmd, rl_form form, const rl_script *script, rl_bytes *out)
{
    size_t n = cmd->keys->n, argc = 3 + 3 * n;
    const char **argv = malloc(argc * sizeof *argv);
    char (*leases)[24] = malloc((n ? n : 1) * sizeof *leases);
    if (!argv || !leases) {
        free(argv);
        free(leases);
        return REDLOCK_ENOMEM;
    }
    char numkeys[24];
    rl_decimal(numkeys, (long long)n);
    script_head(argv, form, script);
    argv[2] = numkeys;
    memcpy(argv + 3, cmd->keys->k, n * sizeof *argv);
    for (size_t i = 0; i < n; i++) {
        rl_decimal(leases[i], (long long)cmd->leases[i]);
        argv[3 + n + 2 * i] = cmd->tokens[i];
        argv[3 + n + 2 * i + 1] = leases[i];
    }
    int rc = rl_bytes_format(out, (int)argc, argv);
    free(argv);
    free(leases);
    return rc;
}

/* A key that lives beside key: key, a zero byte and suffix (no resource
 * name holds a zero byte); on a Cluster node a key without a hash tag is
 * its tag ({key}), so that both share a slot. Its length in *len; NULL
 * when out of memory. */
static char *beside(const char *key, bool cluster, const char *suffix, size_t *len)
{
    size_t klen = strlen(key), slen = strlen(suffix);
    bool wrap = cluster && !rl_key_has_tag(key);
    char *name = malloc(klen + slen + 4);
    if (!name)
        return NULL;
    size_t at = 0;
    if (wrap)
        name[at++] = '{';
    memcpy(name + at, key, klen);
    at += klen;
    if (wrap)
        name[at++] = '}';
    name[at++] = '\0';
    memcpy(name + at, suffix, slen + 1);
    *len = at + slen;
    return name;
}

char *rl_counter_key(const char *key, bool cluster, size_t *len)
{
    return beside(key, cluster, "fence", len);
}

/* Formats a call of a script on a key and the key beside it (suffix):
 * EVALSHA/EVAL script 2 key beside args... */
static int format_beside(const rl_cmd *cmd, rl_form form, bool cluster, const rl_script *script,
                         const char *suffix, const char *const *args, int n_args, rl_bytes *out)
{
    size_t blen;
    char *beside_key = beside(cmd->keys->k[0], cluster, suffix, &blen);
    if (!beside_key)
        return REDLOCK_ENOMEM;
    const char *argv[12] = { NULL, NULL, "2", cmd->keys->k[0], beside_key };
    script_head(argv, form, script);
    size_t lens[12];
    int argc = 5 + n_args;
    for (int i = 0; i < n_args; i++)
        argv[5 + i] = args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = i == 4 ? blen : strlen(argv[i]);
    int rc = rl_bytes_format_len(out, argc, argv, lens);
    free(beside_key);
    return rc;
}

/* A read-write lock's call (scripts/rw.lua): call token [lease [joins]]. */
static int format_rw(const rl_cmd *cmd, rl_form form, bool cluster, rl_bytes *out)
{
    bool read = cmd->keys->kind == RL_LOCK_READ, many = cmd->kind == RL_CMD_EXTEND_MANY;
    const char *call = cmd->kind == RL_CMD_ACQUIRE ? "read"
                     : cmd->kind == RL_CMD_RELEASE ? (read ? "read_release" : "write_release")
                     : (read ? "read_extend" : "write_extend");
    char lease[24];
    rl_decimal(lease, (long long)(many ? cmd->leases[0] : cmd->ttl_ms));
    const char *args[4] = { call, many ? cmd->tokens[0] : cmd->token, lease, cmd->joins };
    int n = cmd->kind == RL_CMD_RELEASE ? 2 : cmd->kind == RL_CMD_ACQUIRE ? 4 : 3;
    return format_beside(cmd, form, cluster, &rl_script_rw, "readers", args, n, out);
}

/* A semaphore's call (scripts/sem.lua): call token permits [lease]. */
static int format_sem(const rl_cmd *cmd, rl_form form, bool cluster, rl_bytes *out)
{
    bool many = cmd->kind == RL_CMD_EXTEND_MANY;
    const char *call = cmd->kind == RL_CMD_ACQUIRE ? "acquire"
                     : cmd->kind == RL_CMD_RELEASE ? "release"
                     : cmd->kind == RL_CMD_INSPECT ? "query" : "extend";
    char permits[24], lease[24];
    rl_decimal(permits, cmd->keys->permits);
    rl_decimal(lease, (long long)(many ? cmd->leases[0] : cmd->ttl_ms));
    const char *args[4] = { call, many ? cmd->tokens[0] : cmd->token, permits, lease };
    bool with_lease = cmd->kind == RL_CMD_ACQUIRE || cmd->kind == RL_CMD_EXTEND || many;
    return format_beside(cmd, form, cluster, &rl_script_sem, "permits", args,
                         with_lease ? 4 : 3, out);
}

/* A fair lock's call (scripts/fair.lua): acquire token lease waiter ticket
 * queue_ms; release token waiter (the holder's own unlock, which takes
 * the waiter's place out of the queue; "" for the release of an attempt
 * that left no place); or release token waiter ticket queue_ms (a failed
 * attempt's, which gives the waiter back its place where the attempt took
 * the lock). */
static int format_fair(const rl_cmd *cmd, rl_form form, bool cluster, rl_bytes *out)
{
    char lease[24], ticket[24], queue_ms[24];
    rl_decimal(lease, (long long)cmd->ttl_ms);
    rl_decimal(ticket, (long long)cmd->ticket);
    rl_decimal(queue_ms, (long long)cmd->queue_ms);
    if (cmd->kind != RL_CMD_ACQUIRE) {
        const char *args[5] = { "release", cmd->token, cmd->waiter, ticket, queue_ms };
        return format_beside(cmd, form, cluster, &rl_script_fair, "queue", args,
                             cmd->ticket > 0 ? 5 : 3, out);
    }
    const char *args[6] = { "acquire", cmd->token, lease, cmd->waiter, ticket, queue_ms };
    return format_beside(cmd, form, cluster, &rl_script_fair, "queue", args, 6, out);
}

/* Formats cmd in form for a node (a Cluster node when cluster): SET key
 * token NX GET PX ttl, or EVALSHA/EVAL script n key... token, then the ttl
 * (acquire, extend), "1" or on a Cluster "c" (a fenced acquire), or the
 * counter of each key and on a Cluster "c" (fence). */
static int format(const rl_cmd *cmd, rl_form form, bool cluster, rl_bytes *out)
{
    char ttl[24], numkeys[24];
    if (cmd->kind == RL_CMD_PING) {
        const char *argv[1] = { "PING" };
        return rl_bytes_format(out, 1, argv);
    }
    if (form == RL_FORM_COUNT) {
        /* The counter's key is the lock's key, a zero byte and "fence", as
         * the scripts name it. */
        size_t len;
        char *counter = beside(cmd->keys->k[0], cluster, "fence", &len);
        if (!counter)
            return REDLOCK_ENOMEM;
        const char *argv[2] = { "INCR", counter };
        size_t lens[2] = { 4, len };
        int rc = rl_bytes_format_len(out, 2, argv, lens);
        free(counter);
        return rc;
    }
    /* A renewal of one lock (a node without scripts) has its token and lease. */
    bool one_of_many = cmd->kind == RL_CMD_EXTEND_MANY;
    const char *token = one_of_many ? cmd->tokens[0] : cmd->token;
    rl_decimal(ttl, (long long)(one_of_many ? cmd->leases[0] : cmd->ttl_ms));
    if (form == RL_FORM_SET || form == RL_FORM_SETNX) {
        const char *argv[7] = { "SET", cmd->keys->k[0], cmd->token, "NX", "PX", ttl, "GET" };
        return rl_bytes_format(out, form == RL_FORM_SET ? 7 : 6, argv);
    }
    if (form == RL_FORM_IFEQ) {
        const char *argv[7] = { "SET", cmd->keys->k[0], token, "IFEQ", token, "PX", ttl };
        return rl_bytes_format(out, 7, argv);
    }
    if (form == RL_FORM_EXEC) {   /* a transaction's end (plain.h) */
        const char *argv[1] = { "EXEC" };
        return rl_bytes_format(out, 1, argv);
    }
    if (form == RL_FORM_READ && cmd->kind == RL_CMD_FENCE) {   /* the key and its counter */
        size_t len;
        char *counter = beside(cmd->keys->k[0], cluster, "fence", &len);
        if (!counter)
            return REDLOCK_ENOMEM;
        const char *argv[3] = { "MGET", cmd->keys->k[0], counter };
        size_t lens[3] = { 4, strlen(cmd->keys->k[0]), len };
        int rc = rl_bytes_format_len(out, 3, argv, lens);
        free(counter);
        return rc;
    }
    if (form == RL_FORM_READ) {
        const char *argv[2] = { "GET", cmd->keys->k[0] };
        return rl_bytes_format(out, 2, argv);
    }
    if (form == RL_FORM_DELIFEQ) {
        const char *argv[3] = { "DELIFEQ", cmd->keys->k[0], cmd->token };
        return rl_bytes_format(out, 3, argv);
    }
    if (fair(cmd))
        return format_fair(cmd, form, cluster, out);
    if (sem(cmd))
        return format_sem(cmd, form, cluster, out);
    if (rw(cmd))
        return format_rw(cmd, form, cluster, out);
    const rl_script *script = script_of(cmd);
    if (cmd->kind == RL_CMD_EXTEND_MANY)
        return format_many(cmd, form, script, out);
    bool with_ttl = cmd->kind == RL_CMD_ACQUIRE || cmd->kind == RL_CMD_EXTEND;
    size_t n = cmd->keys->n;
    /* A release of several keys on a Cluster node publishes on every
     * key's channel ("c": release.lua). */
    bool everywhere = cmd->kind == RL_CMD_RELEASE && cluster && n > 1;
    size_t extra = (with_ttl ? 1 : 0) + (cmd->fenced ? 1 : 0) + (everywhere ? 1 : 0)
                 + (cmd->kind == RL_CMD_FENCE ? n + 1 : 0);
    size_t argc = 4 + n + extra;
    const char **argv = malloc(argc * sizeof *argv);
    char (*fences)[24] = cmd->kind == RL_CMD_FENCE ? malloc(n * sizeof *fences) : NULL;
    if (!argv || (cmd->kind == RL_CMD_FENCE && !fences)) {
        free(argv);
        free(fences);
        return REDLOCK_ENOMEM;
    }
    rl_decimal(numkeys, (long long)n);
    script_head(argv, form, script);
    argv[2] = numkeys;
    memcpy(argv + 3, cmd->keys->k, n * sizeof *argv);
    size_t at = 3 + n;
    argv[at++] = cmd->token;
    if (with_ttl)
        argv[at++] = ttl;
    if (cmd->fenced)
        argv[at++] = cluster ? "c" : "1";
    if (everywhere)
        argv[at++] = "c";
    for (size_t i = 0; fences && i < n; i++) {
        rl_decimal(fences[i], (long long)cmd->fences[i]);
        argv[at++] = fences[i];
    }
    if (fences)
        argv[at++] = cluster ? "c" : "-";
    int rc = rl_bytes_format(out, (int)argc, argv);
    free(argv);
    free(fences);
    return rc;
}

/* A release queued on c covers the acquires of its token and keys still
 * owed there: it runs after them, so they need no undo of their own. (A
 * lock whose keys span a Cluster node's slots is acquired and released one
 * slot's keys at a time, one token for all: a release covers its own.)
 * Only the COVER_WINDOW entries before it are looked at: an acquire that
 * far back is undone by a release of its own when its late yes comes,
 * which is idempotent; the whole queue, on a connection to a stalled node
 * owing thousands, cost a lock+unlock cycle 20 us of the client's CPU. */
#define COVER_WINDOW 64

static void cover(rl_cmd *rel, rl_conn *c)
{
    size_t owed = rl_conn_owed(c);
    for (size_t i = owed > COVER_WINDOW ? owed - COVER_WINDOW : 0; i + 1 < owed; i++) {
        rl_entry *e = rl_conn_entry(c, i);
        if (e->kind == RL_ENTRY_CMD && e->cmd->kind == RL_CMD_ACQUIRE
            && strcmp(e->cmd->token, rel->token) == 0 && rl_keys_same(e->cmd->keys, rel->keys))
            e->covered = true;
    }
}

/* Sends in form, from the cache when cache is set (the op's own sends, all
 * on its thread), else from bytes made for this send alone. */
int rl_cmd_send_form(rl_cmd *cmd, rl_conn *c, int form, bool cache)
{
    rl_bytes fresh = { 0 };
    bool cluster = c->ctx->nodes[c->node].addr.kind == RL_NODE_CLUSTER;
    rl_bytes *b = cache ? &cmd->cached[cluster][form] : &fresh;
    int rc = REDLOCK_OK;
    if (!b->p && (rc = format(cmd, form, cluster, b)) != REDLOCK_OK)
        return rc;
    rl_cmd_ref(cmd);
    rc = rl_conn_send(c, b->p, b->len, cmd, (int)form,
                      cmd->kind != RL_CMD_PING && cmd->keys ? cmd->keys->n : 0);
    if (rc != REDLOCK_OK)
        rl_cmd_unref(cmd);
    else if (cmd->kind == RL_CMD_RELEASE)
        cover(cmd, c);
    rl_bytes_free(&fresh);
    return rc;
}

/* The RL_NATIVE_* bit of a native form; 0 for the others. */
static int native_bit(int form)
{
    return form == RL_FORM_IFEQ ? RL_NATIVE_IFEQ : form == RL_FORM_DELIFEQ ? RL_NATIVE_DELIFEQ : 0;
}

void rl_cmd_native_refused(rl_conn *c, int form, const redisReply *reply)
{
    rl_node *node = &c->ctx->nodes[c->node];
    if (native_bit(form) && rl_node_native_refused(node, native_bit(form)))
        RL_LOG(c->ctx, REDLOCK_LOG_INFO, "native_refused", "node=%s command=%s: %.100s",
               node->addr.label, form == RL_FORM_IFEQ ? "ifeq" : "delifeq", reply->str);
}

int rl_cmd_released(rl_cmd *cmd, rl_conn *c, int form, const redisReply *reply)
{
    /* release.lua publishes when it deleted the key, and only then. DELIFEQ
     * cannot publish, and a PUBLISH pipelined behind it goes whatever it
     * answers. A holder's unlock sends it so (wake_ahead): its key is there
     * unless the lock was lost, and then the waiters' one try in vain is
     * the whole cost (a wake-up is never a grant). Any other release (of an
     * acquire given up, or owed) may well find another holder's key: a
     * wake-up then would send every waiter to try in vain, and each failed
     * try's releases would wake them again. Its PUBLISH follows its answer,
     * when it deleted; on a node that answered past the quorum, when the
     * connection is read next. */
    /* A transaction's DEL (plain.h) publishes after its EXEC, the same way. */
    if (form == RL_FORM_EXEC && cmd->kind == RL_CMD_RELEASE && reply->type == REDIS_REPLY_ARRAY
        && reply->elements == 1 && reply->element[0]->type == REDIS_REPLY_INTEGER
        && reply->element[0]->integer == 1 && c->state != RL_CONN_BROKEN)
        return rl_conn_wake(c, cmd->keys->k[0], cmd->token);
    if (form != RL_FORM_DELIFEQ || cmd->wake_ahead || reply->type != REDIS_REPLY_INTEGER
        || reply->integer != 1 || c->state == RL_CONN_BROKEN)
        return REDLOCK_OK;
    return rl_conn_wake(c, cmd->keys->k[0], cmd->token);
}

void rl_cmd_count(const redisReply *reply, rl_result *io, int64_t *fence)
{
    if (io->vote != RL_VOTE_YES)
        return;
    if (reply->type == REDIS_REPLY_INTEGER && reply->integer >= 1
        && reply->integer < ((long long)1 << 53))
        *fence = reply->integer;
    else if (reply->type == REDIS_REPLY_ERROR)   /* the INCR refused (an ACL without +incr) */
        rl_result_from_bad_reply(io, reply);
    else
        rl_result_fail(io, REDLOCK_EREDIS, "a fencing counter that is not a count from 1 "
                       "(was a counter key written by something else?)");
}

/* FNV-1a: holders are told apart by a hash of their token. */
static uint64_t hash_of(const char *p, size_t len)
{
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h ? h : 1;
}

/* The start of a read-write lock's key while readers hold it (rw.lua):
 * "redlock:readers", then each reader and how long before the key its
 * lease ends, which differ from node to node. */
static const char READERS[] = "redlock:readers";

/* An inspect's reply: { value or nil, pttl }. Readers hold a lock
 * together: whatever each node lists of them, they are one holder. */
static void classify_inspect(const redisReply *r, rl_result *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[1]->type != REDIS_REPLY_INTEGER) {
        rl_result_from_bad_reply(out, r);
        return;
    }
    const redisReply *value = r->element[0];
    if (value->type == REDIS_REPLY_NIL) {
        out->vote = RL_VOTE_NO;
    } else if (value->type == REDIS_REPLY_STRING) {
        bool readers = value->len >= sizeof READERS - 1
                    && memcmp(value->str, READERS, sizeof READERS - 1) == 0;
        out->vote = RL_VOTE_YES;
        out->holder = hash_of(value->str, readers ? sizeof READERS - 1 : value->len);
        out->pttl = r->element[1]->integer;
    } else {
        rl_result_from_bad_reply(out, value);
    }
}

/* A query of a semaphore's permits: { permits, held }; a yes, its free
 * permits in out->free. */
static void classify_permits(const redisReply *r, rl_result *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_INTEGER
        || r->element[1]->type != REDIS_REPLY_INTEGER) {
        rl_result_from_bad_reply(out, r);
        return;
    }
    int64_t free_here = rl_sub_sat(r->element[0]->integer, r->element[1]->integer);
    out->vote = RL_VOTE_YES;
    out->free = free_here > 0 ? free_here : 0;
}

/* A fair lock's acquire: { 1 taken or 0 not, the waiter's ticket }. */
static void classify_fair(const redisReply *r, rl_result *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_INTEGER
        || r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer < 0
        || (r->element[0]->integer != 0 && r->element[0]->integer != 1)) {
        rl_result_from_bad_reply(out, r);
        return;
    }
    out->vote = r->element[0]->integer == 1 ? RL_VOTE_YES : RL_VOTE_NO;
    out->ticket = r->element[1]->integer;
}

/* A fenced acquire's yes: one counter per key, each at least 1 (and below
 * 2^53, where the scripts' Lua numbers stay exact). */
static void classify_fences(const rl_cmd *cmd, const redisReply *r, rl_result *out)
{
    bool sound = r->elements == cmd->keys->n;
    for (size_t i = 0; sound && i < r->elements; i++)
        sound = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer >= 1
             && r->element[i]->integer < ((long long)1 << 53);
    if (sound)
        out->vote = RL_VOTE_YES;
    else
        rl_result_fail(out, REDLOCK_EREDIS, "a fencing counter that is not a count from 1 "
                       "(was a counter key written by something else?)");
}

void rl_cmd_fences(const rl_cmd *cmd, const redisReply *reply, int64_t *out)
{
    for (size_t i = 0; i < cmd->keys->n; i++)
        out[i] = reply->element[i]->integer;
}

/* Appends to why the commands that script calls, " (the acquire script
 * calls exists, type, ...)", read from its text: up to Redis 7.0 an ACL's
 * refusal inside a script does not say which command it refused. */
static void name_calls(const rl_cmd *cmd, char *why, size_t len)
{
    static const char *const names[] = {
        [RL_CMD_ACQUIRE] = "acquire", [RL_CMD_EXTEND] = "extend", [RL_CMD_RELEASE] = "release",
        [RL_CMD_INSPECT] = "inspect", [RL_CMD_FORCE] = "force", [RL_CMD_FENCE] = "fence",
        [RL_CMD_EXTEND_MANY] = "renewal",
    };
    const char *body = script_of(cmd)->body, *name = NULL;
    if ((size_t)cmd->kind < sizeof names / sizeof names[0])
        name = names[cmd->kind];
    size_t used = strlen(why);
    int w = snprintf(why + used, len - used, " (the %s script calls", name ? name : "library's");
    if (w < 0 || (size_t)w >= len - used)
        return;
    used += (size_t)w;
    const char *sep = " ";
    for (const char *p = strstr(body, "call('"); p; p = strstr(p + 1, "call('")) {
        const char *word = p + 6;
        size_t n = strcspn(word, "'");
        /* Each command once: skip one that an earlier call named. */
        bool seen = false;
        for (const char *q = strstr(body, "call('"); q < p && !seen; q = strstr(q + 1, "call('"))
            seen = strncmp(q + 6, word, n) == 0 && q[6 + n] == '\'';
        if (seen)
            continue;
        w = snprintf(why + used, len - used, "%s%.*s", sep, (int)n, word);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
        sep = ", ";
    }
    snprintf(why + used, len - used, ")");
}

void rl_cmd_refused_both(const rl_conn *c, int form, rl_result *r)
{
    if (r->vote != RL_VOTE_FAILED || r->code != REDLOCK_ENOPERM
        || (!c->fcall_refused && !c->no_library)
        || (form != RL_FORM_EVAL && form != RL_FORM_EVALSHA))
        return;
    size_t used = strlen(r->why);
    snprintf(r->why + used, sizeof r->why - used, "%s", c->fcall_refused
             ? "; and FCALL: no permissions to run the 'fcall' command"
             : "; and no function library here (redlock --load-functions)");
}

static void classify(const rl_cmd *cmd, int form, const redisReply *r, rl_result *out);

void rl_cmd_classify(const rl_cmd *cmd, int form, const redisReply *r, rl_result *out)
{
    classify(cmd, form, r, out);
    if (out->vote == RL_VOTE_FAILED && out->code == REDLOCK_ENOPERM
        && (form == RL_FORM_EVAL || form == RL_FORM_EVALSHA || form == RL_FORM_FCALL)
        && strstr(out->why, "run this command"))
        name_calls(cmd, out->why, sizeof out->why);
}

static void classify(const rl_cmd *cmd, int form, const redisReply *r, rl_result *out)
{
    memset(out, 0, sizeof *out);
    if (form == RL_FORM_COUNT) {   /* a count is no vote: its SET's reply is (rl_cmd_count) */
        out->vote = RL_VOTE_NO;
        return;
    }
    if ((form == RL_FORM_IFEQ && !cmd->fenced) || form == RL_FORM_SETNX) {
        /* SET IFEQ: OK, it held our token and has its new lease; nil, it did
         * not (another token, or no key). (A fenced command never goes so:
         * its yes would carry counters.) SET NX PX: OK, it was free and is
         * ours now; nil, it was not (another's key, or our own from a
         * command that ran before: a no, on the safe side). */
        ok_or_nil(r, out);
        return;
    }
    if (form == RL_FORM_SET) {
        /* nil: it was free and is ours now; our token: ours already (this
         * command ran before, on a connection lost before its reply). */
        if (r->type == REDIS_REPLY_NIL)
            out->vote = RL_VOTE_YES;
        else if (r->type == REDIS_REPLY_STRING)
            out->vote = strcmp(r->str, cmd->token) == 0 ? RL_VOTE_YES : RL_VOTE_NO;
        else
            rl_result_from_bad_reply(out, r);
        return;
    }
    if (cmd->kind == RL_CMD_ACQUIRE && fair(cmd)) {
        classify_fair(r, out);
        return;
    }
    if (cmd->kind == RL_CMD_INSPECT && cmd->keys->kind == RL_LOCK_PERMIT) {
        classify_permits(r, out);
        return;
    }
    if (cmd->kind == RL_CMD_INSPECT) {
        classify_inspect(r, out);
        return;
    }
    if (cmd->kind == RL_CMD_PING) {
        if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0)
            out->vote = RL_VOTE_YES;
        else
            rl_result_from_bad_reply(out, r);
        return;
    }
    if (cmd->fenced && r->type == REDIS_REPLY_ARRAY) {
        classify_fences(cmd, r, out);
        return;
    }
    /* A fenced acquire's yes is its counters: a bare 1 is no answer to it. */
    if (cmd->fenced && cmd->kind == RL_CMD_ACQUIRE && r->type == REDIS_REPLY_INTEGER
        && r->integer == 1) {
        rl_result_fail(out, REDLOCK_EREDIS, "a fenced acquire answered without its counters");
        return;
    }
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 0) {
        rl_result_from_bad_reply(out, r);
        return;
    }
    if (cmd->kind == RL_CMD_RELEASE)     /* how many keys it deleted: all of them is a yes */
        out->vote = (size_t)r->integer == cmd->keys->n ? RL_VOTE_YES : RL_VOTE_NO;
    else if (r->integer <= 1)            /* acquire, extend: 1 done, 0 not ours; force:
                                          * 1 deleted, 0 none was there */
        out->vote = r->integer == 1 ? RL_VOTE_YES : RL_VOTE_NO;
    else
        rl_result_from_bad_reply(out, r);
}

/* ---- what an event shows of keys ---- */

void rl_log_resources(const rl_client *ctx, const rl_keys *keys, char *buf, size_t len)
{
    size_t prefix = ctx->opt.key_prefix_len, used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < keys->n; i++) {
        const char *name = keys->k[i] + prefix;
        size_t need = strlen(name) + (i > 0);
        /* Room for this name, and for ",+N more" after it unless it is the last. */
        if (used + need + (i + 1 < keys->n ? 24 : 0) >= len) {
            int cut = (int)(len > 40 ? len - 40 : 0);
            if (i == 0 && keys->n == 1)   /* the only name, cut short */
                snprintf(buf, len, "%.*s...", cut, name);
            else if (i == 0)
                snprintf(buf, len, "%.*s...,+%zu more", cut, name, keys->n - 1);
            else
                snprintf(buf + used, len - used, ",+%zu more", keys->n - i);
            return;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i > 0 ? "," : "", name);
    }
}
