/* quorum.c - the Redlock rules (see quorum.h). Every decision about "held or
 * not" is made here. */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "node.h"
#include "quorum.h"
#include "records.h"

size_t rl_quorum(size_t n_nodes)
{
    return n_nodes / 2 + 1;
}

size_t rl_quorum_of(size_t n_nodes, int permits)
{
    if (permits <= 1)
        return rl_quorum(n_nodes);
    return n_nodes * (size_t)permits / ((size_t)permits + 1) + 1;
}

int64_t rl_drift_ms(int64_t ttl_ms, double drift_factor)
{
    return (int64_t)((double)ttl_ms * drift_factor) + 2;
}

int64_t rl_validity_ms(int64_t ttl_ms, int64_t elapsed_ms, double drift_factor)
{
    return ttl_ms - elapsed_ms - rl_drift_ms(ttl_ms, drift_factor);
}

/* A yes of a node the records (records.h) do not vouch for yet: waits for
 * them (counted as no answer yet), or is held back until its server has run
 * for the guard's length. */
static void admit_recorded(rl_client *ctx, size_t node, rl_result *r, int64_t now)
{
    int64_t left;
    switch (rl_records_standing(ctx, node, now, &left)) {
    case RL_STANDING_COUNTS:
        return;
    case RL_STANDING_PENDING:
        rl_result_fail(r, REDLOCK_ENOQUORUM, "its server is not yet in the others' records of "
                       "the group; not counted before it is (restart_guard)");
        r->records = true;
        r->guard_ms = left;
        return;
    case RL_STANDING_HELD:
        rl_result_fail(r, REDLOCK_ENOQUORUM, "new, where the others' records name a server gone: "
                       "it may have lost its data; not counted for %lld ms more (restart_guard)", (long long)left);
        r->guard_ms = left;
        return;
    }
}

void rl_quorum_admit(rl_client *ctx, size_t node, rl_verb verb, rl_result *r, int64_t now)
{
    if (r->vote != RL_VOTE_YES || verb == RL_VERB_RELEASE || verb == RL_VERB_FORCE)
        return;
    int same = rl_node_same_as(&ctx->nodes[node]);
    if (same >= 0) {
        rl_result_fail(r, REDLOCK_ENOQUORUM, "the same server as node %d (%s), counted once",
                       same + 1, ctx->nodes[same].addr.label);
        return;
    }
    /* Only a new key is held back: an extend's yes means the node holds our
     * token, so it did not lose this key whatever happened to it. */
    if (!ctx->opt.restart_guard || (verb != RL_VERB_ACQUIRE && verb != RL_VERB_PING))
        return;
    int unread = rl_node_census(&ctx->nodes[node]);
    if (unread >= 0) {
        rl_result_fail(r, REDLOCK_ENOQUORUM,
                       "not counted before the guard of every master is read (%s not yet)",
                       ctx->nodes[node].masters[unread].label);
        return;
    }
    int64_t left = rl_node_guard_left(&ctx->nodes[node], now);
    if (left > 0) {
        rl_node_guard_stale(&ctx->nodes[node], now);
        rl_result_fail(r, REDLOCK_ENOQUORUM,
                       "may have lost keys (restarted or failed over); not counted for %lld ms more (restart_guard)",
                       (long long)left);
        r->guard_ms = left;
        return;
    }
    admit_recorded(ctx, node, r, now);
}

int64_t rl_quorum_guard_wait(const rl_result *results, size_t n, size_t q, bool *only_guards)
{
    size_t yes = 0, guarded = 0;
    int64_t ends[64];
    *only_guards = true;
    for (size_t i = 0; i < n; i++) {
        if (results[i].vote == RL_VOTE_YES) {
            yes++;
        } else if (results[i].vote == RL_VOTE_FAILED && results[i].guard_ms > 0 && guarded < 64) {
            /* Kept in order: the soonest end first. */
            size_t j = guarded++;
            for (; j > 0 && ends[j - 1] > results[i].guard_ms; j--)
                ends[j] = ends[j - 1];
            ends[j] = results[i].guard_ms;
        } else if (results[i].vote != RL_VOTE_NO) {
            *only_guards = false;
        }
    }
    if (yes >= q || yes + guarded < q)
        return 0;
    return ends[q - yes - 1];
}

typedef struct tally {
    size_t yes, no, failed, pending, n;
} tally;

static void count(tally *t, const rl_result *results, size_t n)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    for (size_t i = 0; i < n; i++) {
        switch (results[i].vote) {
        case RL_VOTE_YES:     t->yes++; break;
        case RL_VOTE_NO:      t->no++; break;
        case RL_VOTE_FAILED:  results[i].records ? t->pending++ : t->failed++; break;
        case RL_VOTE_PENDING: t->pending++; break;
        }
    }
}

/* Appends "; label: why" for each failed node, as room allows. */
static void describe_failures(const rl_client *ctx, const rl_result *results,
                              bool with_pending, char *buf, size_t len)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < ctx->n_nodes && used + 1 < len; i++) {
        const char *why = results[i].vote == RL_VOTE_FAILED ? results[i].why
                        : results[i].vote == RL_VOTE_PENDING && with_pending ? "no answer yet"
                        : NULL;
        if (!why)
            continue;
        int w = snprintf(buf + used, len - used, "; %s: %s", ctx->nodes[i].addr.label, why);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* How many of the results failed with code. */
static size_t failed_with(const rl_result *results, size_t n, int code)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += results[i].vote == RL_VOTE_FAILED && results[i].code == code;
    return k;
}

/*
 * The status of a round without a quorum of yes votes. Failures (down, timed
 * out, error replies) decide it only when they alone leave too few nodes for
 * a quorum; then it is the code of one kind of failure that alone leaves too
 * few (a quorum refused the credentials, or its ACL refused a command: that
 * is what the caller must fix, whatever the other nodes did), else the code
 * every failed node shares (all AUTH, all WRONGTYPE, ...), so a wrong
 * password reads as a wrong password, and otherwise REDLOCK_ENOQUORUM.
 * Otherwise the nodes that answered refused: refused_code is what that
 * means for the verb.
 */
static int outcome(const rl_client *ctx, const rl_result *results, size_t q, const char *what,
                   int refused_code, char *msg, size_t msglen)
{
    tally t;
    count(&t, results, ctx->n_nodes);
    int code = refused_code;

    if (t.failed > t.n - q || t.no == 0) {
        code = 0;
        for (size_t i = 0; i < ctx->n_nodes; i++) {
            if (results[i].vote != RL_VOTE_FAILED)
                continue;
            if (failed_with(results, ctx->n_nodes, results[i].code) > t.n - q) {
                code = results[i].code;
                break;
            }
            if (code == 0)
                code = results[i].code;
            else if (code != results[i].code)
                code = REDLOCK_ENOQUORUM;
        }
        if (code == 0)
            code = REDLOCK_ENOQUORUM;
    }
    snprintf(msg, msglen, "%s: %zu of %zu nodes agreed, %zu needed (%zu refused, %zu failed, "
             "%zu not waited for)", what, t.yes, t.n, q, t.no, t.failed, t.pending);
    describe_failures(ctx, results, code != refused_code, msg, msglen);
    return code;
}

static void decide_acquire(const rl_client *ctx, const rl_round *r, const tally *t,
                           const char *what, rl_verdict *out, char *msg, size_t msglen)
{
    size_t q = rl_quorum_of(ctx->n_nodes, r->permits);
    int64_t elapsed = r->now - r->start;
    double drift = ctx->opt.drift_factor;
    bool extend = r->verb == RL_VERB_EXTEND;
    if (t->yes >= q) {
        if (rl_validity_ms(r->ttl_ms, elapsed, drift) > 0) {
            out->rc = REDLOCK_OK;
            out->held = true;
            out->expires_at = r->start + r->ttl_ms - rl_drift_ms(r->ttl_ms, drift);
            return;
        }
        out->rc = extend ? REDLOCK_ENOTHELD : REDLOCK_EEXPIRED;
        snprintf(msg, msglen, "%s: a quorum agreed after %lld ms, which left no validity of "
                 "the %lld ms lease", what, (long long)elapsed, (long long)r->ttl_ms);
        out->held = false;
        return;
    }
    out->rc = outcome(ctx, r->results, q, what, extend ? REDLOCK_ENOTHELD : REDLOCK_ELOCKED, msg,
                      msglen);
    if (!extend) {
        out->held = false;
        return;
    }
    /* A quorum saying "not ours" means it is gone. Otherwise the nodes that
     * did apply the new lease end it at start + ttl at the soonest: the lock
     * lasts no longer than that, nor than it did before. */
    out->held = out->rc != REDLOCK_ENOTHELD && out->rc != REDLOCK_EWRONGTYPE;
    int64_t shorter = r->start + r->ttl_ms - rl_drift_ms(r->ttl_ms, drift);
    out->expires_at = shorter < r->old_expires_at ? shorter : r->old_expires_at;
    if (out->held && out->expires_at <= r->now)
        out->held = false;
}

static void decide_release(const rl_client *ctx, const rl_round *r, const tally *t,
                           const char *what, rl_verdict *out, char *msg, size_t msglen)
{
    out->held = false;
    if (!r->was_held) {
        out->rc = REDLOCK_ENOTHELD;
        snprintf(msg, msglen, "%s: the lock had been lost before unlock", what);
    } else if (r->expires_at <= r->start) {
        out->rc = REDLOCK_ENOTHELD;
        snprintf(msg, msglen, "%s: the lock had expired %lld ms before unlock", what,
                 (long long)(r->start - r->expires_at));
    } else if (t->yes >= rl_quorum_of(ctx->n_nodes, r->permits)) {
        out->rc = REDLOCK_OK;
    } else {
        out->rc = outcome(ctx, r->results, rl_quorum_of(ctx->n_nodes, r->permits), what,
                          REDLOCK_ENOTHELD, msg, msglen);
    }
}

void rl_quorum_decide(const rl_client *ctx, const rl_round *r, const char *what,
                      rl_verdict *out, char *msg, size_t msglen)
{
    tally t;
    count(&t, r->results, ctx->n_nodes);
    size_t q = rl_quorum_of(ctx->n_nodes, r->permits);
    memset(out, 0, sizeof *out);
    out->decided = r->final || t.yes >= q || t.yes + t.pending < q;
    if (!out->decided)
        return;
    msg[0] = '\0';
    if (r->verb == RL_VERB_RELEASE)
        decide_release(ctx, r, &t, what, out, msg, msglen);
    else
        decide_acquire(ctx, r, &t, what, out, msg, msglen);
}

/* The holder (a hash of its token) that most nodes have, and on how many. */
static size_t most_held(const rl_result *results, size_t n, uint64_t *holder)
{
    size_t best = 0;
    *holder = 0;
    for (size_t i = 0; i < n; i++) {
        if (results[i].vote != RL_VOTE_YES)
            continue;
        size_t same = 0;
        for (size_t j = 0; j < n; j++)
            same += results[j].vote == RL_VOTE_YES && results[j].holder == results[i].holder;
        if (same > best) {
            best = same;
            *holder = results[i].holder;
        }
    }
    return best;
}

/* The q-th longest PTTL among the nodes that have holder (-1, no expiry,
 * being the longest): a quorum has the key at least that long. */
static int64_t quorum_pttl(const rl_result *results, size_t n, uint64_t holder, size_t q)
{
    int64_t best = INT64_MAX;   /* the q-th is the least of the q longest */
    bool taken[REDLOCK_MAX_NODES] = { false };
    for (size_t k = 0; k < q; k++) {
        size_t pick = n;
        int64_t longest = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            if (taken[i] || results[i].vote != RL_VOTE_YES || results[i].holder != holder)
                continue;
            int64_t t = results[i].pttl < 0 ? INT64_MAX : results[i].pttl;
            if (t > longest) {
                longest = t;
                pick = i;
            }
        }
        if (pick == n)
            break;
        taken[pick] = true;
        best = longest;
    }
    return best == INT64_MAX ? -1 : best;
}

static void decide_inspect(const rl_client *ctx, const rl_round *r, const tally *t,
                           const char *what, rl_verdict *out, char *msg, size_t msglen)
{
    size_t q = rl_quorum(ctx->n_nodes);
    uint64_t holder;
    size_t most = most_held(r->results, ctx->n_nodes, &holder);
    if (most >= q) {
        out->decided = true;
        out->rc = REDLOCK_OK;
        out->held = true;
        out->ttl_ms = quorum_pttl(r->results, ctx->n_nodes, holder, q);
        return;
    }
    if (most + t->pending + t->failed < q) {
        out->decided = true;
        out->rc = REDLOCK_OK;
        return;
    }
    if (!r->final)
        return;
    out->decided = true;
    out->rc = outcome(ctx, r->results, q, what, REDLOCK_ENOQUORUM, msg, msglen);
    snprintf(msg, msglen, "%s: too few nodes answered to tell whether a quorum has it "
             "(%zu have one holder, %zu have none, %zu failed, %zu needed)", what, most,
             t->no, t->failed, q);
    describe_failures(ctx, r->results, false, msg, msglen);
}

/* Force and ping: decided once every node answered or its deadline passed,
 * and done when a quorum answered (a ping has no refusals: an answer is a
 * yes, and counts only as rl_quorum_admit lets it). */
static void decide_answers(const rl_client *ctx, const rl_round *r, const tally *t,
                           const char *what, rl_verdict *out, char *msg, size_t msglen)
{
    size_t q = rl_quorum(ctx->n_nodes);
    if (!r->final)
        return;
    out->decided = true;
    out->deleted = t->yes;
    if (t->yes + t->no >= q) {
        out->rc = REDLOCK_OK;
        return;
    }
    out->rc = outcome(ctx, r->results, q, what, REDLOCK_ENOQUORUM, msg, msglen);
    if (r->verb != RL_VERB_FORCE)
        return;
    snprintf(msg, msglen, "%s: %zu of %zu nodes answered, %zu needed to be sure the lock is "
             "gone", what, t->yes + t->no, t->n, q);
    describe_failures(ctx, r->results, false, msg, msglen);
}

/* A semaphore's query: the permits a quorum has free. */
static void decide_permits(const rl_client *ctx, const rl_round *r, const tally *t,
                           const char *what, rl_verdict *out, char *msg, size_t msglen)
{
    size_t q = rl_quorum_of(ctx->n_nodes, r->permits);
    if (!r->final)
        return;
    out->decided = true;
    if (t->yes < q) {
        out->rc = outcome(ctx, r->results, q, what, REDLOCK_ENOQUORUM, msg, msglen);
        return;
    }
    /* The q-th most free: a permit can be had on q nodes only if each has
     * one free, so at most this many permits can be taken now. */
    int64_t free[REDLOCK_MAX_NODES];
    size_t n = 0;
    for (size_t i = 0; i < ctx->n_nodes; i++)
        free[n++] = r->results[i].vote == RL_VOTE_YES ? r->results[i].free : 0;
    for (size_t i = 1; i < n; i++)   /* most free first */
        for (size_t j = i; j > 0 && free[j] > free[j - 1]; j--) {
            int64_t swap = free[j];
            free[j] = free[j - 1];
            free[j - 1] = swap;
        }
    out->rc = REDLOCK_OK;
    out->available = free[q - 1];
}

void rl_quorum_query(const rl_client *ctx, const rl_round *r, const char *what,
                     rl_verdict *out, char *msg, size_t msglen)
{
    tally t;
    count(&t, r->results, ctx->n_nodes);
    memset(out, 0, sizeof *out);
    msg[0] = '\0';
    if (r->verb == RL_VERB_INSPECT && r->permits > 0)
        decide_permits(ctx, r, &t, what, out, msg, msglen);
    else if (r->verb == RL_VERB_INSPECT)
        decide_inspect(ctx, r, &t, what, out, msg, msglen);
    else
        decide_answers(ctx, r, &t, what, out, msg, msglen);
}

size_t rl_quorum_fences(const rl_result *results, size_t n_nodes, const int64_t *got,
                        size_t n_keys, int64_t *fences, bool *behind)
{
    for (size_t k = 0; k < n_keys; k++) {
        fences[k] = 0;
        for (size_t i = 0; i < n_nodes; i++)
            if (results[i].vote == RL_VOTE_YES && got[i * n_keys + k] > fences[k])
                fences[k] = got[i * n_keys + k];
    }
    size_t agree = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        behind[i] = false;
        for (size_t k = 0; k < n_keys && results[i].vote == RL_VOTE_YES; k++)
            behind[i] = behind[i] || got[i * n_keys + k] < fences[k];
        agree += results[i].vote == RL_VOTE_YES && !behind[i];
    }
    return agree;
}
