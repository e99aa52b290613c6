/*
 * test_fair.c - fair locks (redlock_lock_fair) on five nodes: waiters get
 * the lock in the order they arrived, each woken by the release before it;
 * a waiter that gives up leaves the queues and the next one gets its turn;
 * it is the plain lock of its name; a kept fair lock is renewed; bad input.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many waiters node i queues for name (live or not). */
static int queued_on(nodes *ns, size_t i, const char *name)
{
    char key[64];
    size_t len = beside_key(key, sizeof key, name, "queue");
    redisReply *r = nodes_cmd(ns, i, "GET %b", key, len);
    int n = 0;
    for (const char *p = r && r->type == REDIS_REPLY_STRING ? strchr(r->str, ' ') : NULL; p;
         p = strchr(p + 1, ' '))
        n++;
    freeReplyObject(r);
    return n;
}

/* Waits up to `ms` for every node to queue n waiters of name. */
static void assert_queued(nodes *ns, const char *name, int n, long ms)
{
    long long deadline = now_ms() + ms;
    for (size_t i = 0; i < nodes_count(ns); i++) {
        int seen;
        while ((seen = queued_on(ns, i, name)) != n && now_ms() < deadline)
            sleep_ms(10);
        if (seen != n)
            fail_msg("node %zu queues %d waiters of %s, expected %d", i, seen, name, n);
    }
}

typedef struct waiter {
    redlock_ctx *ctx;
    const char *name;
    int64_t wait_ms;
    int rc;
    redlock_handle *h;
    int hold_ms;              /* holds it this long, then releases it */
    _Atomic int *turn;        /* the order of acquisitions: ours is ++*turn */
    int got;
} waiter;

static void *wait_fair(void *arg)
{
    waiter *w = arg;
    w->rc = redlock_lock_fair(&w->h, w->ctx, w->name, 5000, w->wait_ms);
    if (w->rc != REDLOCK_OK)
        return NULL;
    w->got = atomic_fetch_add(w->turn, 1) + 1;
    sleep_ms(w->hold_ms);
    redlock_unlock(w->h);
    return NULL;
}

/* n waiters (clients with options) arrive one after another, each queued
 * on every node before the next comes, while the lock of name is held;
 * then it is released: they must get it in the order they came, each
 * holding it hold_ms. */
static void served_in_order(nodes *ns, const char *name, int n, const char *const *options,
                            int64_t wait_ms, int hold_ms)
{
    redlock_ctx *holder = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_fair(&h, holder, name, 10000, 0), REDLOCK_OK);
    _Atomic int turn = 0;
    waiter w[3];
    pthread_t t[3];
    assert_true(n <= 3);
    for (int i = 0; i < n; i++) {
        w[i] = (waiter){ .ctx = ctx_for(ns, options), .name = name, .wait_ms = wait_ms,
                         .hold_ms = hold_ms, .turn = &turn };
        assert_int_equal(pthread_create(&t[i], NULL, wait_fair, &w[i]), 0);
        assert_queued(ns, name, i + 1, CONVERGE_MS);
    }
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        assert_rc(w[i].rc, REDLOCK_OK);
        assert_int_equal(w[i].got, i + 1);
        redlock_handle_free(w[i].h);
        redlock_ctx_free(w[i].ctx);
    }
    assert_queued(ns, name, 0, CONVERGE_MS);
    redlock_handle_free(h);
    redlock_ctx_free(holder);
}

static void waiters_are_served_in_arrival_order(void **state)
{
    served_in_order(*state, "fair-order", 3, NULL, 15000, 100);
}

/* Waiters whose own retries come after their wait ends (retry_delay_ms 8 s)
 * get the lock all the same: each is woken by the release before it. */
static void each_release_wakes_the_next(void **state)
{
    static const char *const slow[] = { "retry_delay_ms", "8000", "retry_jitter_ms", "0", NULL };
    served_in_order(*state, "fair-wake", 2, slow, 6000, 50);
}

/* The first waiter gives up; the one behind it gets the lock at the next
 * release, once the first one's place has lapsed. */
static void a_waiter_that_gives_up_leaves_the_queue(void **state)
{
    nodes *ns = *state;
    static const char *const quick[] = { "retry_delay_ms", "50", "retry_jitter_ms", "10",
                                         "node_timeout_ms", "200", NULL };
    redlock_ctx *holder = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_fair(&h, holder, "fair-leave", 10000, 0), REDLOCK_OK);
    _Atomic int turn = 0;
    waiter first = { .ctx = ctx_for(ns, quick), .name = "fair-leave", .wait_ms = 600,
                     .turn = &turn };
    waiter second = { .ctx = ctx_for(ns, quick), .name = "fair-leave", .wait_ms = 15000,
                      .turn = &turn };
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, wait_fair, &first), 0);
    assert_queued(ns, "fair-leave", 1, CONVERGE_MS);
    assert_int_equal(pthread_create(&t2, NULL, wait_fair, &second), 0);
    assert_queued(ns, "fair-leave", 2, CONVERGE_MS);
    pthread_join(t1, NULL);
    assert_rc(first.rc, REDLOCK_ELOCKED);
    /* Its place lapses 2 x (50 + 10 + 200) ms after its last attempt. */
    assert_queued(ns, "fair-leave", 1, CONVERGE_MS);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    pthread_join(t2, NULL);
    assert_rc(second.rc, REDLOCK_OK);
    assert_int_equal(second.got, 1);
    redlock_handle_free(h);
    redlock_handle_free(second.h);
    redlock_ctx_free(first.ctx);
    redlock_ctx_free(second.ctx);
    redlock_ctx_free(holder);
}

/* The id of the one waiter node i queues for name (its queue: "counter
 * ticket:id:expiry"), into id. */
static void only_waiter(nodes *ns, size_t i, const char *name, char id[33])
{
    char key[64];
    size_t len = beside_key(key, sizeof key, name, "queue");
    redisReply *r = nodes_cmd(ns, i, "GET %b", key, len);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    const char *colon = strchr(r->str, ':');
    assert_non_null(colon);
    snprintf(id, 33, "%.32s", colon + 1);
    freeReplyObject(r);
}

/* Whether node i has name's key, or queues waiter id for it. */
static bool taken_or_queued(nodes *ns, size_t i, const char *name, const char *id)
{
    char key[64];
    size_t len = beside_key(key, sizeof key, name, "queue");
    redisReply *r = nodes_cmd(ns, i, "MGET %s %b", name, key, len);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    bool yes = r->element[0]->type == REDIS_REPLY_STRING
            || (r->element[1]->type == REDIS_REPLY_STRING && strstr(r->element[1]->str, id));
    freeReplyObject(r);
    return yes;
}

/* The first waiter's attempts are let in by two nodes and refused by the
 * three where the holder's key stays: each fails, and where it took the
 * lock, it is queued again in the same step, so that the waiter behind it
 * cannot pass it while it pauses (before, its place there was gone until
 * its next attempt). Once the holder lets go, the first waiter is served
 * first. */
static void a_failed_attempt_keeps_its_place(void **state)
{
    nodes *ns = *state;
    static const char *const quick[] = { "retry_delay_ms", "30", "retry_jitter_ms", "10", NULL };
    redlock_ctx *holder = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_fair(&h, holder, "fair-keep", 10000, 0), REDLOCK_OK);
    _Atomic int turn = 0;
    waiter first = { .ctx = ctx_for(ns, quick), .name = "fair-keep", .wait_ms = 15000,
                     .hold_ms = 20, .turn = &turn };
    waiter second = first;
    second.ctx = ctx_for(ns, quick);
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, wait_fair, &first), 0);
    assert_queued(ns, "fair-keep", 1, CONVERGE_MS);
    char id[33];
    only_waiter(ns, 0, "fair-keep", id);
    assert_int_equal(pthread_create(&t2, NULL, wait_fair, &second), 0);
    assert_queued(ns, "fair-keep", 2, CONVERGE_MS);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(nodes_exec(ns, i, "DEL fair-keep"), 0);
    int looks = 0, gaps = 0;
    for (long long until = now_ms() + 600; now_ms() < until; looks++) {
        for (size_t i = 0; i < 2; i++)
            gaps += !taken_or_queued(ns, i, "fair-keep", id);
        sleep_ms(1);
    }
    assert_true(looks > 50);
    assert_int_equal(gaps, 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_rc(first.rc, REDLOCK_OK);
    assert_rc(second.rc, REDLOCK_OK);
    assert_int_equal(first.got, 1);
    assert_int_equal(second.got, 2);
    redlock_handle_free(h);
    redlock_handle_free(first.h);
    redlock_handle_free(second.h);
    redlock_ctx_free(first.ctx);
    redlock_ctx_free(second.ctx);
    redlock_ctx_free(holder);
}

/* The fair lock is its name's plain lock: each excludes the other. */
static void it_is_the_plain_lock_of_its_name(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL), *b = ctx_for(ns, NULL);
    redlock_handle *fair = NULL, *plain = NULL;
    assert_rc(redlock_lock_fair(&fair, a, "fair-plain", 5000, 0), REDLOCK_OK);
    assert_on_every_node(ns, "fair-plain", redlock_handle_token(fair));
    assert_fails(redlock_lock(&plain, b, "fair-plain", 1000, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_extend(fair, 8000), REDLOCK_OK);
    assert_pttl_on_every_node(ns, "fair-plain", 5001, 8000);
    assert_rc(redlock_unlock(fair), REDLOCK_OK);
    assert_rc(redlock_lock(&plain, b, "fair-plain", 5000, 0), REDLOCK_OK);
    redlock_handle *again = NULL;
    assert_fails(redlock_lock_fair(&again, a, "fair-plain", 1000, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_unlock(plain), REDLOCK_OK);
    int64_t fence = -1;
    static const char *const fencing[] = { "fencing", "1", NULL };
    redlock_ctx *f = ctx_for(ns, fencing);
    assert_rc(redlock_lock_fair(&again, f, "fair-plain", 1000, 0), REDLOCK_OK);
    assert_rc(redlock_handle_fence(again, 0, &fence), REDLOCK_OK);
    assert_int_equal(fence, 0);
    assert_rc(redlock_unlock(again), REDLOCK_OK);
    redlock_handle_free(fair);
    redlock_handle_free(plain);
    redlock_handle_free(again);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
    redlock_ctx_free(f);
}

static void a_kept_fair_lock_is_renewed(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *other = ctx_for(ns, NULL);
    redlock_handle *h = NULL, *no = NULL;
    assert_rc(redlock_lock_fair(&h, ctx, "fair-kept", 900, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(h, NULL, NULL), REDLOCK_OK);
    sleep_ms(2500);
    assert_int_equal(redlock_handle_lost(h), 0);
    assert_fails(redlock_lock_fair(&no, other, "fair-kept", 900, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, "fair-kept", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

static void bad_input_is_refused_with_a_reason(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock_fair(&h, ctx, NULL, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    h = UNSET_HANDLE;
    assert_fails(redlock_lock_fair(&h, NULL, "fair-bad", 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    assert_fails(redlock_lock_fair(NULL, ctx, "fair-bad", 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_fair(&h, ctx, "fair-bad", 0, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_fair(&h, ctx, "fair-bad", 1000, -1), REDLOCK_EINVAL);
    /* A key of another type where the queue lives. */
    char key[32];
    size_t klen = beside_key(key, sizeof key, "fair-bad", "queue");
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "RPUSH %b x", key, klen), 0);
    assert_fails(redlock_lock_fair(&h, ctx, "fair-bad", 1000, 0), REDLOCK_EWRONGTYPE);
    assert_non_null(strstr(redlock_errmsg(), "queue of fair-bad"));
    for (size_t i = 0; i < nodes_count(ns); i++)
        nodes_exec(ns, i, "DEL %b", key, klen);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waiters_are_served_in_arrival_order),
        cmocka_unit_test(each_release_wakes_the_next),
        cmocka_unit_test(a_waiter_that_gives_up_leaves_the_queue),
        cmocka_unit_test(a_failed_attempt_keeps_its_place),
        cmocka_unit_test(it_is_the_plain_lock_of_its_name),
        cmocka_unit_test(a_kept_fair_lock_is_renewed),
        cmocka_unit_test(bad_input_is_refused_with_a_reason),
    };
    return cmocka_run_group_tests(tests, five_nodes_setup, nodes_teardown);
}
