/*
 * test_sem.c - semaphores (redlock_acquire_permit): at most P permits held
 * at once, each with its own id and lease; the quorum of more than
 * P * N / (P + 1) nodes, with the case a majority gets wrong (holders on
 * {A,B}, {B,C} and {A,C} of three nodes with two permits); every client
 * giving the same P; the permits available; a release waking a waiter; a
 * kept permit renewed; the nodes that may fail; and bad input.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redlock_handle *take(redlock_ctx *ctx, const char *name, int permits, int64_t ttl_ms)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_acquire_permit(&h, ctx, name, permits, ttl_ms, 0), REDLOCK_OK);
    assert_non_null(h);
    assert_true(is_token(redlock_handle_token(h)));
    return h;
}

static void refused(redlock_ctx *ctx, const char *name, int permits)
{
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_acquire_permit(&h, ctx, name, permits, 1000, 0), REDLOCK_ELOCKED);
    assert_null(h);
}

static int available(redlock_ctx *ctx, const char *name, int permits)
{
    int n = -1;
    assert_rc(redlock_permits_available(ctx, name, permits, &n), REDLOCK_OK);
    return n;
}

/* The semaphore's state on node i: "P token:d ..." (NULL: none). */
static char *state_on(nodes *ns, size_t i, const char *name)
{
    char key[128];
    size_t len = beside_key(key, sizeof key, name, "permits");
    redisReply *r = nodes_cmd(ns, i, "GET %b", key, len);
    char *s = r && r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return s;
}

/* How many permits node i lists for name (live or not). */
static int listed_on(nodes *ns, size_t i, const char *name)
{
    char *s = state_on(ns, i, name);
    int n = 0;
    for (const char *p = s ? strchr(s, ' ') : NULL; p; p = strchr(p + 1, ' '))
        n++;
    free(s);
    return n;
}

/* Waits up to CONVERGE_MS for node i to list n permits of name. */
static void assert_listed(nodes *ns, size_t i, const char *name, int n)
{
    long long deadline = now_ms() + CONVERGE_MS;
    int seen;
    while ((seen = listed_on(ns, i, name)) != n && now_ms() < deadline)
        sleep_ms(10);
    if (seen != n)
        fail_msg("node %zu lists %d permits of %s, expected %d", i, seen, name, n);
}

static void at_most_p_hold_it(void **state)
{
    nodes *ns = *state;
    redlock_ctx *c[4];
    for (int i = 0; i < 4; i++)
        c[i] = ctx_for(ns, NULL);
    assert_int_equal(available(c[0], "sem-cap", 3), 3);
    redlock_handle *h[3];
    for (int i = 0; i < 3; i++)
        h[i] = take(c[i], "sem-cap", 3, 5000);
    assert_string_not_equal(redlock_handle_token(h[0]), redlock_handle_token(h[1]));
    assert_string_not_equal(redlock_handle_token(h[1]), redlock_handle_token(h[2]));
    assert_int_equal(available(c[3], "sem-cap", 3), 0);
    refused(c[3], "sem-cap", 3);
    /* One client may hold several permits: each is its own. */
    refused(c[0], "sem-cap", 3);

    assert_rc(redlock_unlock(h[1]), REDLOCK_OK);
    assert_int_equal(available(c[3], "sem-cap", 3), 1);
    redlock_handle *fourth = take(c[3], "sem-cap", 3, 5000);
    refused(c[1], "sem-cap", 3);
    /* A permit's extend and release are its own. */
    assert_rc(redlock_extend(h[0], 8000), REDLOCK_OK);
    assert_fails(redlock_extend(h[1], 8000), REDLOCK_ENOTHELD);
    assert_rc(redlock_unlock(h[0]), REDLOCK_OK);
    assert_rc(redlock_unlock(h[2]), REDLOCK_OK);
    assert_rc(redlock_unlock(fourth), REDLOCK_OK);
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_null(state_on(ns, i, "sem-cap"));   /* the last release removes it */
    assert_int_equal(available(c[0], "sem-cap", 3), 3);
    for (int i = 0; i < 3; i++)
        redlock_handle_free(h[i]);
    redlock_handle_free(fourth);
    for (int i = 0; i < 4; i++)
        redlock_ctx_free(c[i]);
}

/* Two permits on three nodes A, B, C. Holders of permits on {A,B} and on
 * {B,C} leave B full and one permit free on A and C: a majority (A and C)
 * would let a third client in, on {A,C}, and three would hold two permits.
 * A permit needs more than 2 * 3 / 3 = 2 nodes: all three, and B refuses. */
static void a_majority_is_not_enough_for_two_permits(void **state)
{
    nodes *ns = *state;
    static const char name[] = "sem-pairs";
    char key[32];
    size_t klen = beside_key(key, sizeof key, name, "permits");
    /* What the two holders left: their permits, for 20 s (each ends with
     * the key: d = 0). */
    static const char t1[] = "11111111111111111111111111111111";
    static const char t2[] = "22222222222222222222222222222222";
    const char *holders[3][2] = { { t1, NULL }, { t1, t2 }, { t2, NULL } };
    for (size_t i = 0; i < 3; i++) {
        char value[160];
        int w = snprintf(value, sizeof value, "2 %s:0", holders[i][0]);
        if (holders[i][1])
            snprintf(value + w, sizeof value - (size_t)w, " %s:0", holders[i][1]);
        assert_int_equal(nodes_exec(ns, i, "SET %b %s PX 20000", key, klen, value), 0);
    }
    redlock_ctx *three = ctx_for_first(ns, 3, NULL);
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_acquire_permit(&h, three, name, 2, 5000, 0), REDLOCK_ELOCKED);
    assert_null(h);
    assert_non_null(strstr(redlock_errmsg(), "3 needed"));
    /* A and C said yes before B's no decided it: the attempt was taken
     * back there, and they list their holder alone again. */
    assert_listed(ns, 0, name, 1);
    assert_listed(ns, 1, name, 2);
    assert_listed(ns, 2, name, 1);
    assert_int_equal(available(three, name, 2), 0);

    /* Once the holder on {A,B} is gone, a permit can be had on all three. */
    assert_int_equal(nodes_exec(ns, 0, "DEL %b", key, klen), 0);
    char *b = state_on(ns, 1, name);
    assert_non_null(b);
    char *second = strchr(b + 2, ' ');
    assert_non_null(second);
    char value[160];
    snprintf(value, sizeof value, "2%s", second);
    assert_int_equal(nodes_exec(ns, 1, "SET %b %s PX 20000", key, klen, value), 0);
    free(b);
    assert_int_equal(available(three, name, 2), 1);
    h = take(three, name, 2, 5000);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    for (size_t i = 0; i < 3; i++)
        nodes_exec(ns, i, "DEL %b", key, klen);
    redlock_ctx_free(three);
}

static void every_client_gives_the_same_number(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL), *b = ctx_for(ns, NULL);
    redlock_handle *h = take(a, "sem-size", 3, 5000);
    redlock_handle *other = UNSET_HANDLE;
    assert_fails(redlock_acquire_permit(&other, b, "sem-size", 5, 1000, 0), REDLOCK_EINVAL);
    assert_null(other);
    assert_non_null(strstr(redlock_errmsg(), "has 3 permits"));
    assert_non_null(strstr(redlock_errmsg(), "not 5"));
    int n = -1;
    assert_fails(redlock_permits_available(b, "sem-size", 5, &n), REDLOCK_EINVAL);
    assert_int_equal(n, 0);
    /* Once no permit is held, the semaphore may be made again with another:
     * the unlock answers once a permit's quorum (4 of 5) let go, and the
     * last node after. */
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    for (size_t i = 0; i < nodes_count(ns); i++) {
        char *kept;
        for (long long until = now_ms() + CONVERGE_MS;
             (kept = state_on(ns, i, "sem-size")) != NULL && now_ms() < until;) {
            free(kept);
            sleep_ms(10);
        }
        assert_null(kept);
    }
    other = take(b, "sem-size", 5, 1000);
    assert_rc(redlock_unlock(other), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_handle_free(other);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
}

/* A permit whose lease ran out is reclaimed: its holder died, say. */
static void an_expired_permit_is_reclaimed(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL), *b = ctx_for(ns, NULL);
    redlock_handle *brief = take(a, "sem-lease", 1, 1500);
    refused(b, "sem-lease", 1);
    sleep_ms(2000);
    assert_fails(redlock_extend(brief, 1000), REDLOCK_ENOTHELD);
    redlock_handle *h = take(b, "sem-lease", 1, 2000);
    assert_listed(ns, 0, "sem-lease", 1);
    /* The stale holder's release neither frees the new one's permit nor
     * counts as a release of its own. */
    assert_fails(redlock_unlock(brief), REDLOCK_ENOTHELD);
    refused(a, "sem-lease", 1);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(brief);
    redlock_handle_free(h);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
}

typedef struct waiter {
    redlock_ctx *ctx;
    int rc;
    redlock_handle *h;
    _Atomic long long acquired_at;
} waiter;

static void *wait_for_permit(void *arg)
{
    waiter *w = arg;
    w->rc = redlock_acquire_permit(&w->h, w->ctx, "sem-wake", 2, 5000, 2500);
    w->acquired_at = now_ms();
    return NULL;
}

/* A waiter is woken by a release: its own retry (retry_delay_ms 3 s) comes
 * after its wait ends. */
static void a_release_wakes_a_waiter(void **state)
{
    nodes *ns = *state;
    static const char *const slow[] = { "retry_delay_ms", "3000", "retry_jitter_ms", "0", NULL };
    redlock_ctx *a = ctx_for(ns, NULL);
    waiter w = { .ctx = ctx_for(ns, slow) };
    redlock_handle *one = take(a, "sem-wake", 2, 10000);
    redlock_handle *two = take(a, "sem-wake", 2, 10000);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_for_permit, &w), 0);
    sleep_ms(300);
    assert_int_equal(atomic_load(&w.acquired_at), 0);
    assert_rc(redlock_unlock(one), REDLOCK_OK);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, REDLOCK_OK);
    assert_listed(ns, 0, "sem-wake", 2);
    assert_rc(redlock_unlock(w.h), REDLOCK_OK);
    assert_rc(redlock_unlock(two), REDLOCK_OK);
    redlock_handle_free(one);
    redlock_handle_free(two);
    redlock_handle_free(w.h);
    redlock_ctx_free(a);
    redlock_ctx_free(w.ctx);
}

/* A kept permit is renewed past its lease (sem.lua's extend, alone). */
static void a_kept_permit_is_renewed(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *other = ctx_for(ns, NULL);
    redlock_handle *h = take(ctx, "sem-kept", 1, 900);
    assert_rc(redlock_handle_watch(h, NULL, NULL), REDLOCK_OK);
    sleep_ms(2500);
    assert_int_equal(redlock_handle_lost(h), 0);
    assert_true(redlock_handle_validity_ms(h) > 0);
    refused(other, "sem-kept", 1);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle *next = take(other, "sem-kept", 1, 900);
    assert_rc(redlock_unlock(next), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_handle_free(next);
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

/* With five nodes, one permit tolerates two down, two permits one (a
 * permit needs 4 nodes), five permits none (all 5). */
static void fewer_nodes_may_fail_as_permits_grow(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    assert_int_equal(nodes_stop(ns, 4), 0);
    redlock_handle *h = take(ctx, "sem-down", 2, 2000);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = UNSET_HANDLE;
    assert_fails(redlock_acquire_permit(&h, ctx, "sem-down", 5, 2000, 0), REDLOCK_ENOQUORUM);
    assert_non_null(strstr(redlock_errmsg(), "5 needed"));
    assert_null(h);
    assert_int_equal(nodes_stop(ns, 3), 0);
    assert_fails(redlock_acquire_permit(&h, ctx, "sem-down", 2, 2000, 0), REDLOCK_ENOQUORUM);
    assert_non_null(strstr(redlock_errmsg(), "4 needed"));
    h = take(ctx, "sem-down", 1, 2000);   /* one permit: a majority, 3 of 5 */
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    int n = -1;
    assert_fails(redlock_permits_available(ctx, "sem-down", 2, &n), REDLOCK_ENOQUORUM);
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    redlock_ctx_free(ctx);
}

static void a_permit_has_no_fence(void **state)
{
    nodes *ns = *state;
    static const char *const fencing[] = { "fencing", "1", NULL };
    redlock_ctx *ctx = ctx_for(ns, fencing);
    redlock_handle *h = take(ctx, "sem-fence", 2, 1000);
    int64_t fence = -1;
    assert_rc(redlock_handle_fence(h, 0, &fence), REDLOCK_OK);
    assert_int_equal(fence, 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void bad_input_is_refused_with_a_reason(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;
    static const int bad[] = { 0, -1, REDLOCK_MAX_PERMITS + 1 };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        h = UNSET_HANDLE;
        assert_fails(redlock_acquire_permit(&h, ctx, "sem-bad", bad[i], 1000, 0),
                     REDLOCK_EINVAL);
        assert_non_null(strstr(redlock_errmsg(), "permits must be a whole number from 1 to 10000"));
        assert_null(h);
        int n = -1;
        assert_fails(redlock_permits_available(ctx, "sem-bad", bad[i], &n), REDLOCK_EINVAL);
        assert_int_equal(n, 0);
    }
    assert_fails(redlock_acquire_permit(&h, ctx, NULL, 2, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_acquire_permit(&h, NULL, "sem-bad", 2, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_acquire_permit(NULL, ctx, "sem-bad", 2, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_acquire_permit(&h, ctx, "sem-bad", 2, 0, 0), REDLOCK_EINVAL);
    assert_fails(redlock_acquire_permit(&h, ctx, "sem-bad", 2, 1000, -1), REDLOCK_EINVAL);
    assert_fails(redlock_permits_available(ctx, NULL, 2, NULL), REDLOCK_EINVAL);
    /* A key of another type under the semaphore's name. */
    char key[32];
    size_t klen = beside_key(key, sizeof key, "sem-bad", "permits");
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "RPUSH %b x", key, klen), 0);
    assert_fails(redlock_acquire_permit(&h, ctx, "sem-bad", 2, 1000, 0), REDLOCK_EWRONGTYPE);
    assert_non_null(strstr(redlock_errmsg(), "not a semaphore"));
    for (size_t i = 0; i < nodes_count(ns); i++)
        nodes_exec(ns, i, "DEL %b", key, klen);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(at_most_p_hold_it),
        cmocka_unit_test(a_majority_is_not_enough_for_two_permits),
        cmocka_unit_test(every_client_gives_the_same_number),
        cmocka_unit_test(an_expired_permit_is_reclaimed),
        cmocka_unit_test(a_release_wakes_a_waiter),
        cmocka_unit_test(a_kept_permit_is_renewed),
        cmocka_unit_test(a_permit_has_no_fence),
        cmocka_unit_test(bad_input_is_refused_with_a_reason),
        /* Last: the nodes it restarts are guarded for max_lease_ms. */
        cmocka_unit_test(fewer_nodes_may_fail_as_permits_grow),
    };
    return cmocka_run_group_tests(tests, five_nodes_setup, nodes_teardown);
}
