/*
 * test_quorum.c - the one verdict (core/engine/quorum.c), without Redis: rounds of
 * votes for acquire, extend and release, the validity arithmetic, the
 * restart guard and the same server under two names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client.h"
#include "engine.h"
#include "node.h"
#include "quorum.h"

#define N 5

static rl_client *five(void)
{
    const char *uris[N] = { "redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3",
                            "redis://10.0.0.4", "redis://10.0.0.5" };
    rl_client *ctx = NULL;
    assert_int_equal(rl_client_new(&ctx, uris, N), REDLOCK_OK);
    return ctx;
}

/* Votes from a string: y yes, n no, f failed (code), . pending. */
static void votes(rl_result *r, const char *v, int code)
{
    for (size_t i = 0; i < N; i++) {
        memset(&r[i], 0, sizeof r[i]);
        if (v[i] == 'y')
            r[i].vote = RL_VOTE_YES;
        else if (v[i] == 'n')
            r[i].vote = RL_VOTE_NO;
        else if (v[i] == 'f')
            rl_result_fail(&r[i], code, "failed");
    }
}

static rl_verdict decide(rl_client *ctx, rl_verb verb, const char *v, int code, int64_t start,
                         int64_t now, int64_t ttl, bool final)
{
    rl_result r[N];
    char msg[RL_ERRMSG_MAX];
    votes(r, v, code);
    rl_round round = { .verb = verb, .results = r, .start = start, .now = now, .ttl_ms = ttl,
                       .final = final, .was_held = true, .expires_at = start + 100000,
                       .old_expires_at = start + 100000 };
    rl_verdict out;
    rl_quorum_decide(ctx, &round, "lock 'x'", &out, msg, sizeof msg);
    return out;
}

static void quorum_and_validity(void **state)
{
    (void)state;
    assert_int_equal(rl_quorum(1), 1);
    assert_int_equal(rl_quorum(2), 2);
    assert_int_equal(rl_quorum(5), 3);
    assert_int_equal(rl_quorum(6), 4);
    assert_int_equal(rl_drift_ms(10000, 0.01), 102);
    assert_int_equal(rl_validity_ms(10000, 50, 0.01), 10000 - 50 - 102);
}

/* A permit's quorum: the fewest nodes such that P + 1 holders, each on that
 * many, would need more than the P places each of the N nodes has; and the
 * table of docs/kinds.md and the README (N = 5). */
static void a_permit_needs_more_than_p_n_over_p_plus_1(void **state)
{
    (void)state;
    for (size_t n = 1; n <= 9; n++) {
        assert_int_equal(rl_quorum_of(n, 1), rl_quorum(n));
        assert_int_equal(rl_quorum_of(n, 0), rl_quorum(n));   /* a lock */
        for (int p = 1; p <= 50; p++) {
            size_t q = rl_quorum_of(n, p);
            assert_true(q <= n);
            assert_true((size_t)(p + 1) * q > (size_t)p * n);          /* enough */
            assert_true((size_t)(p + 1) * (q - 1) <= (size_t)p * n);   /* and no more */
        }
    }
    assert_int_equal(rl_quorum_of(3, 2), 3);   /* {A,B}, {B,C}, {A,C} is not enough */
    static const size_t five_nodes[] = { 3, 4, 4, 5, 5 };
    for (int p = 1; p <= 5; p++)
        assert_int_equal(rl_quorum_of(5, p), five_nodes[p - 1]);
}

/* A permit's round is decided on its own quorum: 4 of 5 for 2 permits. */
static void a_permits_round_needs_its_quorum(void **state)
{
    (void)state;
    rl_client *ctx = five();
    rl_result r[N];
    char msg[RL_ERRMSG_MAX];
    votes(r, "yyy..", 0);
    rl_round round = { .verb = RL_VERB_ACQUIRE, .results = r, .start = 1000, .now = 1005,
                       .ttl_ms = 10000, .permits = 2 };
    rl_verdict v;
    rl_quorum_decide(ctx, &round, "permit of semaphore 'x'", &v, msg, sizeof msg);
    assert_false(v.decided);
    votes(r, "yyyn.", 0);   /* the last one may still make 4 */
    rl_quorum_decide(ctx, &round, "permit of semaphore 'x'", &v, msg, sizeof msg);
    assert_false(v.decided);
    votes(r, "yyynn", 0);
    rl_quorum_decide(ctx, &round, "permit of semaphore 'x'", &v, msg, sizeof msg);
    assert_true(v.decided);
    assert_int_equal(v.rc, REDLOCK_ELOCKED);
    assert_non_null(strstr(msg, "4 needed"));
    votes(r, "yyyy.", 0);
    rl_quorum_decide(ctx, &round, "permit of semaphore 'x'", &v, msg, sizeof msg);
    assert_int_equal(v.rc, REDLOCK_OK);
    /* Its query: the permits free on the 4th most free node. */
    votes(r, "yyyyf", REDLOCK_ENOQUORUM);
    static const int64_t free_here[N] = { 2, 0, 1, 3, 0 };
    for (size_t i = 0; i < N; i++)
        r[i].free = free_here[i];
    round = (rl_round){ .verb = RL_VERB_INSPECT, .results = r, .permits = 2, .final = true };
    rl_quorum_query(ctx, &round, "permits of semaphore 'x'", &v, msg, sizeof msg);
    assert_int_equal(v.rc, REDLOCK_OK);
    assert_int_equal(v.available, 0);
    r[1].free = 1;
    rl_quorum_query(ctx, &round, "permits of semaphore 'x'", &v, msg, sizeof msg);
    assert_int_equal(v.available, 1);
    votes(r, "yyyff", REDLOCK_ENOQUORUM);
    rl_quorum_query(ctx, &round, "permits of semaphore 'x'", &v, msg, sizeof msg);
    assert_int_equal(v.rc, REDLOCK_ENOQUORUM);
    rl_client_free(ctx);
}

static void acquire_is_decided_as_soon_as_it_can_be(void **state)
{
    (void)state;
    rl_client *ctx = five();
    rl_verdict v = decide(ctx, RL_VERB_ACQUIRE, "yy...", 0, 1000, 1005, 10000, false);
    assert_false(v.decided);
    v = decide(ctx, RL_VERB_ACQUIRE, "yyy..", 0, 1000, 1005, 10000, false);
    assert_true(v.decided);
    assert_int_equal(v.rc, REDLOCK_OK);
    assert_true(v.held);
    /* Validity counts from the start of the round, less the drift. */
    assert_int_equal(v.expires_at, 1000 + 10000 - 102);
    /* Three refusals: a quorum can no longer say yes. */
    v = decide(ctx, RL_VERB_ACQUIRE, "ynnn.", 0, 1000, 1005, 10000, false);
    assert_true(v.decided);
    assert_int_equal(v.rc, REDLOCK_ELOCKED);
    assert_false(v.held);
    rl_client_free(ctx);
}

static void a_quorum_too_late_has_no_validity(void **state)
{
    (void)state;
    rl_client *ctx = five();
    rl_verdict v = decide(ctx, RL_VERB_ACQUIRE, "yyy..", 0, 1000, 1000 + 100 - 3, 100, false);
    assert_int_equal(v.rc, REDLOCK_EEXPIRED);
    assert_false(v.held);
    v = decide(ctx, RL_VERB_EXTEND, "yyy..", 0, 1000, 1000 + 100 - 3, 100, false);
    assert_int_equal(v.rc, REDLOCK_ENOTHELD);
    assert_false(v.held);
    rl_client_free(ctx);
}

static void failures_say_what_failed(void **state)
{
    (void)state;
    rl_client *ctx = five();
    /* Every failure the same: that code. Mixed: no quorum. */
    rl_verdict v = decide(ctx, RL_VERB_ACQUIRE, "fffyy", REDLOCK_EAUTH, 0, 5, 10000, true);
    assert_int_equal(v.rc, REDLOCK_EAUTH);
    v = decide(ctx, RL_VERB_ACQUIRE, "fffnn", REDLOCK_EWRONGTYPE, 0, 5, 10000, true);
    assert_int_equal(v.rc, REDLOCK_EWRONGTYPE);
    v = decide(ctx, RL_VERB_ACQUIRE, "ffyyn", REDLOCK_ENOQUORUM, 0, 5, 10000, true);
    assert_int_equal(v.rc, REDLOCK_ELOCKED);
    rl_client_free(ctx);
}

/* Failures of mixed kinds: the one kind that alone leaves too few nodes for
 * a quorum decides (an ACL refusing a quorum is what the caller must fix,
 * whatever the other nodes did); when none does, no quorum. */
static void a_quorum_of_one_failure_names_it(void **state)
{
    (void)state;
    rl_client *ctx = five();
    static const struct {
        const char *codes;   /* p NOPERM, a AUTH, d down (no quorum), y yes, n no */
        int rc;
    } cases[] = {
        { "pppdd", REDLOCK_ENOPERM }, { "dpdpp", REDLOCK_ENOPERM }, { "pppyy", REDLOCK_ENOPERM },
        { "pppay", REDLOCK_ENOPERM }, { "ppddy", REDLOCK_ENOQUORUM }, { "ppady", REDLOCK_ENOQUORUM },
        { "aaapd", REDLOCK_EAUTH },   { "ppnnn", REDLOCK_ELOCKED },  { "pyyyn", REDLOCK_OK },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rl_result r[N];
        for (size_t i = 0; i < N; i++) {
            memset(&r[i], 0, sizeof r[i]);
            switch (cases[c].codes[i]) {
            case 'p': rl_result_fail(&r[i], REDLOCK_ENOPERM, "NOPERM no permissions"); break;
            case 'a': rl_result_fail(&r[i], REDLOCK_EAUTH, "WRONGPASS"); break;
            case 'd': rl_result_fail(&r[i], REDLOCK_ENOQUORUM, "cannot connect"); break;
            case 'y': r[i].vote = RL_VOTE_YES; break;
            default:  r[i].vote = RL_VOTE_NO; break;
            }
        }
        char msg[RL_ERRMSG_MAX];
        rl_round round = { .verb = RL_VERB_ACQUIRE, .results = r, .start = 0, .now = 5,
                           .ttl_ms = 10000, .final = true };
        rl_verdict v;
        rl_quorum_decide(ctx, &round, "lock 'x'", &v, msg, sizeof msg);
        if (v.rc != cases[c].rc)
            fail_msg("%s: %d, expected %d (%s)", cases[c].codes, v.rc, cases[c].rc, msg);
        /* The message names each failed node with its reason. */
        if (v.rc == REDLOCK_ENOPERM && !strstr(msg, "10.0.0.2:6379: NOPERM no permissions"))
            fail_msg("%s: %s", cases[c].codes, msg);
    }
    rl_client_free(ctx);
}

static void a_failed_extend_keeps_the_shorter_expiry(void **state)
{
    (void)state;
    rl_client *ctx = five();
    /* Without a quorum the lock keeps the sooner of its old expiry and the
     * new lease, which the nodes that did apply it end sooner. */
    rl_verdict v = decide(ctx, RL_VERB_EXTEND, "yyfff", REDLOCK_ENOQUORUM, 1000, 1100, 500, true);
    assert_int_equal(v.rc, REDLOCK_ENOQUORUM);
    assert_true(v.held);
    assert_int_equal(v.expires_at, 1000 + 500 - rl_drift_ms(500, 0.01));
    /* A quorum saying "not ours": lost. */
    v = decide(ctx, RL_VERB_EXTEND, "nnnyy", 0, 1000, 1100, 500, true);
    assert_int_equal(v.rc, REDLOCK_ENOTHELD);
    assert_false(v.held);
    rl_client_free(ctx);
}

static void release_reports_what_the_lock_was(void **state)
{
    (void)state;
    rl_client *ctx = five();
    rl_result r[N];
    char msg[RL_ERRMSG_MAX];
    rl_verdict v;
    votes(r, "yyy..", 0);
    rl_round round = { .verb = RL_VERB_RELEASE, .results = r, .start = 1000, .now = 1002,
                       .was_held = true, .expires_at = 5000 };
    rl_quorum_decide(ctx, &round, "unlock 'x'", &v, msg, sizeof msg);
    assert_int_equal(v.rc, REDLOCK_OK);
    round.expires_at = 900;   /* had expired before unlock */
    rl_quorum_decide(ctx, &round, "unlock 'x'", &v, msg, sizeof msg);
    assert_int_equal(v.rc, REDLOCK_ENOTHELD);
    assert_non_null(strstr(msg, "expired 100 ms before unlock"));
    round.was_held = false;
    rl_quorum_decide(ctx, &round, "unlock 'x'", &v, msg, sizeof msg);
    assert_int_equal(v.rc, REDLOCK_ENOTHELD);
    assert_false(v.held);
    rl_client_free(ctx);
}

static const char info_a[] = "# Server\r\nredis_version:7.0.15\r\n"
                             "run_id:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
static const char info_b[] = "# Server\r\nredis_version:7.0.15\r\n"
                             "run_id:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n";
static const char info_c[] = "# Server\r\nredis_version:7.0.15\r\n"
                             "run_id:cccccccccccccccccccccccccccccccccccccccc\r\n";

static void restarted_nodes_and_second_names_do_not_vote(void **state)
{
    (void)state;
    rl_client *ctx = five();
    assert_int_equal(rl_options_set(&ctx->opt, "max_lease_ms", "3000"), REDLOCK_OK);
    rl_result r;
    /* Node 0 seen with one run_id, then another: a restart at 1000. */
    rl_nodes_saw_info(ctx->nodes, N, 0, -1, info_a, sizeof info_a - 1, 500);
    rl_nodes_saw_info(ctx->nodes, N, 0, -1, info_b, sizeof info_b - 1, 1000);
    r = (rl_result){ .vote = RL_VOTE_YES };
    rl_quorum_admit(ctx, 0, RL_VERB_ACQUIRE, &r, 2000);
    assert_int_equal(r.vote, RL_VOTE_FAILED);
    assert_non_null(strstr(r.why, "not counted for 2000 ms more"));
    /* Releases always count; after max_lease_ms, acquires too. */
    r = (rl_result){ .vote = RL_VOTE_YES };
    rl_quorum_admit(ctx, 0, RL_VERB_RELEASE, &r, 2000);
    assert_int_equal(r.vote, RL_VOTE_YES);
    rl_quorum_admit(ctx, 0, RL_VERB_ACQUIRE, &r, 4000);
    assert_int_equal(r.vote, RL_VOTE_YES);
    /* Node 3 answers with node 0's run_id: the same server, counted once. */
    rl_nodes_saw_info(ctx->nodes, N, 3, -1, info_b, sizeof info_b - 1, 4000);
    r = (rl_result){ .vote = RL_VOTE_YES };
    rl_quorum_admit(ctx, 3, RL_VERB_EXTEND, &r, 4000);
    assert_int_equal(r.vote, RL_VOTE_FAILED);
    assert_non_null(strstr(r.why, "same server as node 1"));
    r = (rl_result){ .vote = RL_VOTE_YES };
    rl_quorum_admit(ctx, 0, RL_VERB_ACQUIRE, &r, 4000);
    assert_int_equal(r.vote, RL_VOTE_YES);
    /* With the guard off, a restarted node votes at once. */
    assert_int_equal(rl_options_set(&ctx->opt, "restart_guard", "0"), REDLOCK_OK);
    rl_nodes_saw_info(ctx->nodes, N, 2, -1, info_a, sizeof info_a - 1, 5000);
    rl_nodes_saw_info(ctx->nodes, N, 2, -1, info_c, sizeof info_c - 1, 5001);
    r = (rl_result){ .vote = RL_VOTE_YES };
    rl_quorum_admit(ctx, 2, RL_VERB_ACQUIRE, &r, 5002);
    assert_int_equal(r.vote, RL_VOTE_YES);
    rl_client_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quorum_and_validity),
        cmocka_unit_test(a_permit_needs_more_than_p_n_over_p_plus_1),
        cmocka_unit_test(a_permits_round_needs_its_quorum),
        cmocka_unit_test(acquire_is_decided_as_soon_as_it_can_be),
        cmocka_unit_test(a_quorum_too_late_has_no_validity),
        cmocka_unit_test(failures_say_what_failed),
        cmocka_unit_test(a_quorum_of_one_failure_names_it),
        cmocka_unit_test(a_failed_extend_keeps_the_shorter_expiry),
        cmocka_unit_test(release_reports_what_the_lock_was),
        cmocka_unit_test(restarted_nodes_and_second_names_do_not_vote),
    };
    return cmocka_run_group_tests_name("quorum", tests, NULL, NULL);
}
