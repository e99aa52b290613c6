/*
 * test_inspect.c - asking the nodes about a lock (redlock_inspect) and
 * forcing it open (redlock_force_unlock): held means one token on a quorum
 * of the nodes, whoever wrote it; the time left is what a quorum still has;
 * too few answers is REDLOCK_ENOQUORUM, never a guess; a forced unlock
 * deletes any token, wakes the waiters, and leaves a key that is not a lock
 * alone.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* Sets key to value (with PX ms when ms > 0) on nodes first .. end-1. */
/* A holder's token, as the library writes one. */
#define SOMEONE "5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e"

static void set_on(nodes *ns, size_t first, size_t end, const char *key, const char *value,
                   long ms)
{
    for (size_t i = first; i < end; i++) {
        int rc = ms > 0 ? nodes_exec(ns, i, "SET %s %s PX %ld", key, value, ms)
                        : nodes_exec(ns, i, "SET %s %s", key, value);
        assert_int_equal(rc, 0);
    }
}

static void del_everywhere(nodes *ns, const char *key)
{
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "DEL %s", key), 0);
}

/* Asserts what redlock_inspect says of name. */
static void assert_inspect(redlock_ctx *ctx, const char *name, int locked, long long low,
                           long long high)
{
    int is_locked = -1;
    int64_t ttl = 12345;
    assert_rc(redlock_inspect(ctx, name, &is_locked, &ttl), REDLOCK_OK);
    assert_int_equal(is_locked, locked);
    if (ttl < low || ttl > high)
        fail_msg("%s: ttl %lld, expected %lld..%lld", name, (long long)ttl, low, high);
}

static void a_free_resource_is_not_locked(void **state)
{
    redlock_ctx *ctx = ctx_for(*state, NULL);
    assert_inspect(ctx, "inspect-free", 0, -2, -2);
    redlock_ctx_free(ctx);
}

static void a_lock_is_seen_with_its_lease_left_until_released(void **state)
{
    redlock_ctx *ctx = ctx_for(*state, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "inspect-held", 10000, 0), REDLOCK_OK);
    assert_inspect(ctx, "inspect-held", 1, 8000, 10000);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_inspect(ctx, "inspect-held", 0, -2, -2);
    redlock_ctx_free(ctx);
}

static void any_holder_on_a_quorum_counts_and_a_minority_does_not(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    /* Another library's token on 3 of 5 nodes, the longest leases first:
     * a quorum has it for as long as the third longest. */
    assert_int_equal(nodes_exec(ns, 0, "SET inspect-foreign other PX 9000"), 0);
    assert_int_equal(nodes_exec(ns, 1, "SET inspect-foreign other PX 8000"), 0);
    assert_int_equal(nodes_exec(ns, 2, "SET inspect-foreign other PX 5000"), 0);
    assert_inspect(ctx, "inspect-foreign", 1, 3000, 5000);
    /* On 2 of 5 it is an attempt that failed, not a lock. */
    assert_int_equal(nodes_exec(ns, 2, "DEL inspect-foreign"), 0);
    assert_inspect(ctx, "inspect-foreign", 0, -2, -2);
    /* Two holders with two nodes each: neither has a quorum. */
    set_on(ns, 2, 4, "inspect-foreign", "another", 9000);
    assert_inspect(ctx, "inspect-foreign", 0, -2, -2);
    del_everywhere(ns, "inspect-foreign");
    redlock_ctx_free(ctx);
}

static void a_key_without_expiry_has_no_end(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    set_on(ns, 0, 5, "inspect-forever", SOMEONE, 0);
    assert_inspect(ctx, "inspect-forever", 1, -1, -1);
    del_everywhere(ns, "inspect-forever");
    redlock_ctx_free(ctx);
}

static void the_key_prefix_is_applied(void **state)
{
    nodes *ns = *state;
    static const char *const prefixed[] = {"key_prefix", "app:", NULL};
    redlock_ctx *ctx = ctx_for(ns, prefixed);
    set_on(ns, 0, 5, "app:inspect-prefixed", SOMEONE, 7000);
    assert_inspect(ctx, "inspect-prefixed", 1, 5000, 7000);
    int deleted = -1;
    assert_rc(redlock_force_unlock(ctx, "inspect-prefixed", &deleted), REDLOCK_OK);
    assert_int_equal(deleted, 5);
    assert_on_every_node(ns, "app:inspect-prefixed", NULL);
    redlock_ctx_free(ctx);
}

static void too_few_answers_is_no_quorum_not_a_guess(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    set_on(ns, 0, 3, "inspect-down", SOMEONE, 20000);
    /* Two nodes down: the three that answer decide. */
    assert_int_equal(nodes_stop(ns, 3), 0);
    assert_int_equal(nodes_stop(ns, 4), 0);
    assert_inspect(ctx, "inspect-down", 1, 15000, 20000);
    /* Three down: the two that answer "none" cannot tell what the others hold. */
    assert_int_equal(nodes_stop(ns, 0), 0);
    int locked = -1;
    int64_t ttl = 0;
    assert_fails(redlock_inspect(ctx, "inspect-down", &locked, &ttl), REDLOCK_ENOQUORUM);
    assert_int_equal(locked, 0);
    assert_int_equal(ttl, -2);
    assert_non_null(strstr(redlock_errmsg(), "inspect 'inspect-down'"));
    int deleted = -1;
    assert_fails(redlock_force_unlock(ctx, "inspect-down", &deleted), REDLOCK_ENOQUORUM);
    assert_int_equal(deleted, 2);
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    del_everywhere(ns, "inspect-down");
    redlock_ctx_free(ctx);
}

static void a_key_that_is_not_a_lock_is_a_clear_error_and_left_alone(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(nodes_exec(ns, i, "RPUSH inspect-list item"), 0);
    assert_fails(redlock_inspect(ctx, "inspect-list", NULL, NULL), REDLOCK_EWRONGTYPE);
    assert_fails(redlock_force_unlock(ctx, "inspect-list", NULL), REDLOCK_EWRONGTYPE);
    assert_int_equal(nodes_count_exists(ns, "inspect-list"), 5);
    del_everywhere(ns, "inspect-list");
    redlock_ctx_free(ctx);
}

/* A forced unlock deletes only a lock: a typo that names application data
 * (a string, or a token's shape without an expiry) is refused, saying what
 * it found but not its value, and the data stays. */
static void a_forced_unlock_leaves_data_alone(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(nodes_exec(ns, i, "SET inspect-data secret-settings-of-the-app"), 0);
        assert_int_equal(nodes_exec(ns, i, "SET inspect-tokenish 0123456789abcdef0123456789abcdef"),
                         0);
    }
    int deleted = 7;
    assert_fails(redlock_force_unlock(ctx, "inspect-data", &deleted), REDLOCK_EWRONGTYPE);
    assert_non_null(strstr(redlock_errmsg(), "not a lock: left alone"));
    assert_null(strstr(redlock_errmsg(), "secret-settings"));
    assert_fails(redlock_force_unlock(ctx, "inspect-tokenish", NULL), REDLOCK_EWRONGTYPE);
    assert_non_null(strstr(redlock_errmsg(), "without an expiry"));
    assert_int_equal(nodes_count_exists(ns, "inspect-data"), 5);
    assert_int_equal(nodes_count_exists(ns, "inspect-tokenish"), 5);
    del_everywhere(ns, "inspect-data");
    del_everywhere(ns, "inspect-tokenish");
    /* A read lock's readers are a lock: forced open like any other. */
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_rw(&h, ctx, "inspect-readers", REDLOCK_READ, NULL, 10000, 0), REDLOCK_OK);
    assert_rc(redlock_force_unlock(ctx, "inspect-readers", &deleted), REDLOCK_OK);
    assert_true(deleted >= 3);
    assert_on_every_node(ns, "inspect-readers", NULL);
    redlock_unlock(h);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void bad_arguments_are_refused(void **state)
{
    redlock_ctx *ctx = ctx_for(*state, NULL);
    int locked = 7;
    int64_t ttl = 7;
    assert_fails(redlock_inspect(NULL, "x", &locked, &ttl), REDLOCK_EINVAL);
    assert_int_equal(locked, 0);
    assert_int_equal(ttl, -2);
    assert_fails(redlock_inspect(ctx, NULL, NULL, NULL), REDLOCK_EINVAL);
    assert_fails(redlock_inspect(ctx, "", NULL, NULL), REDLOCK_EINVAL);
    int deleted = 7;
    assert_fails(redlock_force_unlock(NULL, "x", &deleted), REDLOCK_EINVAL);
    assert_int_equal(deleted, 0);
    assert_fails(redlock_force_unlock(ctx, NULL, NULL), REDLOCK_EINVAL);
    redlock_ctx_free(ctx);
}

static void a_forced_unlock_takes_the_lock_from_its_holder(void **state)
{
    nodes *ns = *state;
    redlock_ctx *holder = ctx_for(ns, NULL), *operator = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, holder, "inspect-force", 10000, 0), REDLOCK_OK);
    int deleted = -1;
    assert_rc(redlock_force_unlock(operator, "inspect-force", &deleted), REDLOCK_OK);
    assert_int_equal(deleted, 5);
    assert_on_every_node(ns, "inspect-force", NULL);
    /* The holder learns it at its next call: the lock is not its any more. */
    assert_fails(redlock_extend(h, 10000), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    /* Nothing left to delete is no error. */
    assert_rc(redlock_force_unlock(operator, "inspect-force", &deleted), REDLOCK_OK);
    assert_int_equal(deleted, 0);
    redlock_ctx_free(operator);
    redlock_ctx_free(holder);
}

typedef struct waiter {
    redlock_ctx *ctx;
    int rc;
    redlock_handle *h;
    _Atomic long long acquired_at;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    w->rc = redlock_lock(&w->h, w->ctx, "inspect-wake", 10000, 10000);
    w->acquired_at = now_ms();
    return NULL;
}

static void a_forced_unlock_wakes_the_waiters(void **state)
{
    nodes *ns = *state;
    /* A timed retry this far off cannot be what took the lock in time. */
    static const char *const slow_retries[] = {
        "retry_delay_ms", "3000", "retry_jitter_ms", "0", NULL,
    };
    redlock_ctx *operator = ctx_for(ns, NULL);
    waiter w = { .ctx = ctx_for(ns, slow_retries) };
    set_on(ns, 0, 5, "inspect-wake", SOMEONE, 20000);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    sleep_ms(300);   /* its first attempt failed: it waits, subscribed */
    long long forced_at = now_ms();
    assert_rc(redlock_force_unlock(operator, "inspect-wake", NULL), REDLOCK_OK);
    pthread_join(t, NULL);
    assert_rc(w.rc, REDLOCK_OK);
    if (w.acquired_at - forced_at >= 1000)
        fail_msg("acquired %lld ms after the forced unlock", w.acquired_at - forced_at);
    assert_rc(redlock_unlock(w.h), REDLOCK_OK);
    redlock_handle_free(w.h);
    redlock_ctx_free(w.ctx);
    redlock_ctx_free(operator);
}

/* Asserts what redlock_inspect_multi says of names. */
static void assert_multi(redlock_ctx *ctx, const char *const *names, size_t n, int locked,
                         long long low, long long high)
{
    int is_locked = -1;
    int64_t ttl = 12345;
    assert_rc(redlock_inspect_multi(ctx, names, n, &is_locked, &ttl), REDLOCK_OK);
    assert_int_equal(is_locked, locked);
    if (ttl < low || ttl > high)
        fail_msg("%s...: ttl %lld, expected %lld..%lld", names[0], (long long)ttl, low, high);
}

static void a_multi_lock_is_locked_when_any_resource_is_for_the_longest(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    static const char *const names[] = {"inspect-m1", "inspect-m2", "inspect-m3"};
    assert_multi(ctx, names, 3, 0, -2, -2);
    /* One resource held elsewhere: the multi-lock cannot be taken. */
    set_on(ns, 0, 5, "inspect-m2", SOMEONE, 4000);
    assert_multi(ctx, names, 3, 1, 3000, 4000);
    /* Two: as long as the longest of them. */
    set_on(ns, 0, 5, "inspect-m3", "other", 9000);
    assert_multi(ctx, names, 3, 1, 8000, 9000);
    /* One without expiry: no end. */
    set_on(ns, 0, 5, "inspect-m1", "forever", 0);
    assert_multi(ctx, names, 3, 1, -1, -1);
    for (size_t i = 0; i < 3; i++)
        del_everywhere(ns, names[i]);
    /* A multi-lock held as one: its lease. */
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_multi(&h, ctx, names, 3, 6000, 0), REDLOCK_OK);
    assert_multi(ctx, names, 3, 1, 5000, 6000);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_multi(ctx, names, 3, 0, -2, -2);
    redlock_ctx_free(ctx);
}

static void the_multi_answer_merges_one_resource_at_a_time(void **state)
{
    (void)state;
    assert_int_equal(redlock_inspect_merge(-2, -2), -2);
    assert_int_equal(redlock_inspect_merge(-2, 500), 500);
    assert_int_equal(redlock_inspect_merge(500, -2), 500);
    assert_int_equal(redlock_inspect_merge(500, 700), 700);
    assert_int_equal(redlock_inspect_merge(700, 500), 700);
    assert_int_equal(redlock_inspect_merge(-1, 500), -1);
    assert_int_equal(redlock_inspect_merge(500, -1), -1);
    assert_int_equal(redlock_inspect_merge(-2, -1), -1);
    assert_int_equal(redlock_inspect_merge(-1, -2), -1);
    assert_int_equal(redlock_inspect_merge(0, -2), 0);
}

static void a_multi_inspect_fails_as_its_first_failure(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    static const char *const names[] = {"inspect-mfree", "inspect-mlist"};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(nodes_exec(ns, i, "RPUSH inspect-mlist item"), 0);
    int locked = 7;
    int64_t ttl = 7;
    assert_fails(redlock_inspect_multi(ctx, names, 2, &locked, &ttl), REDLOCK_EWRONGTYPE);
    assert_int_equal(locked, 0);
    assert_int_equal(ttl, -2);
    del_everywhere(ns, "inspect-mlist");
    const char *const with_null[] = {"inspect-mfree", NULL};
    assert_fails(redlock_inspect_multi(ctx, with_null, 2, &locked, &ttl), REDLOCK_EINVAL);
    assert_fails(redlock_inspect_multi(ctx, names, 0, NULL, NULL), REDLOCK_EINVAL);
    assert_fails(redlock_inspect_multi(ctx, NULL, 1, NULL, NULL), REDLOCK_EINVAL);
    assert_fails(redlock_inspect_multi(NULL, names, 2, &locked, &ttl), REDLOCK_EINVAL);
    assert_int_equal(ttl, -2);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_free_resource_is_not_locked),
        cmocka_unit_test(a_lock_is_seen_with_its_lease_left_until_released),
        cmocka_unit_test(any_holder_on_a_quorum_counts_and_a_minority_does_not),
        cmocka_unit_test(a_key_without_expiry_has_no_end),
        cmocka_unit_test(the_key_prefix_is_applied),
        cmocka_unit_test(too_few_answers_is_no_quorum_not_a_guess),
        cmocka_unit_test(a_key_that_is_not_a_lock_is_a_clear_error_and_left_alone),
        cmocka_unit_test(bad_arguments_are_refused),
        cmocka_unit_test(a_forced_unlock_takes_the_lock_from_its_holder),
        cmocka_unit_test(a_forced_unlock_leaves_data_alone),
        cmocka_unit_test(a_forced_unlock_wakes_the_waiters),
        cmocka_unit_test(a_multi_lock_is_locked_when_any_resource_is_for_the_longest),
        cmocka_unit_test(the_multi_answer_merges_one_resource_at_a_time),
        cmocka_unit_test(a_multi_inspect_fails_as_its_first_failure),
    };
    return cmocka_run_group_tests_name("inspect", tests, five_nodes_setup, nodes_teardown);
}
