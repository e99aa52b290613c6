/* quorum.c - the Redlock rules: quorum, drift, validity, and what a round of
 * votes means. Every decision about "held or not" is made here. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

size_t rl_quorum(size_t n_nodes)
{
    return n_nodes / 2 + 1;
}

int64_t rl_drift_ms(int64_t ttl_ms, double drift_factor)
{
    return (int64_t)((double)ttl_ms * drift_factor) + 2;
}

int64_t rl_validity_ms(int64_t ttl_ms, int64_t elapsed_ms, double drift_factor)
{
    return ttl_ms - elapsed_ms - rl_drift_ms(ttl_ms, drift_factor);
}

void rl_tally_count(rl_tally *t, const rl_result *results, size_t n)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    for (size_t i = 0; i < n; i++) {
        switch (results[i].vote) {
        case RL_VOTE_YES:     t->yes++; break;
        case RL_VOTE_NO:      t->no++; break;
        case RL_VOTE_FAILED:  t->failed++; break;
        case RL_VOTE_PENDING: t->pending++; break;
        }
    }
}

/* Decided once a quorum said yes, or once yes can no longer reach a quorum. */
bool rl_tally_decided(const rl_tally *t)
{
    size_t q = rl_quorum(t->n);
    return t->yes >= q || t->yes + t->pending < q;
}

/* Appends "; label: why" for each failed node, as room allows. */
static void describe_failures(const struct redlock_ctx *ctx, const rl_result *results,
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

/*
 * The status of a round that did not reach a quorum of yes votes.
 * Failures (down, timed out, error replies) decide it only when they alone
 * leave too few nodes for a quorum; then, when every failed node failed the
 * same way (all AUTH, all WRONGTYPE, ...), that code is returned, so a wrong
 * password reads as a wrong password, and otherwise REDLOCK_ENOQUORUM.
 * Otherwise the nodes that answered refused: refused_code is what that means
 * for this operation (REDLOCK_ELOCKED for acquiring, REDLOCK_ENOTHELD for
 * extend and release).
 */
int rl_tally_outcome(const struct redlock_ctx *ctx, const rl_result *results, const char *what,
                     int refused_code)
{
    rl_tally t;
    rl_tally_count(&t, results, ctx->n_nodes);
    size_t q = rl_quorum(ctx->n_nodes);
    char msg[900];
    int code = refused_code;

    if (t.failed > t.n - q || t.no == 0) {
        code = 0;
        for (size_t i = 0; i < ctx->n_nodes; i++) {
            if (results[i].vote != RL_VOTE_FAILED)
                continue;
            if (code == 0)
                code = results[i].code;
            else if (code != results[i].code)
                code = REDLOCK_ENOQUORUM;
        }
        if (code == 0)
            code = REDLOCK_ENOQUORUM;
    }
    snprintf(msg, sizeof msg, "%s: %zu of %zu nodes agreed, %zu needed (%zu refused, %zu failed, "
             "%zu not waited for)", what, t.yes, t.n, q, t.no, t.failed, t.pending);
    describe_failures(ctx, results, code != refused_code, msg, sizeof msg);
    return rl_fail(code, "%s", msg);
}
