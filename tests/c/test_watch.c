/*
 * test_watch.c - kept locks (redlock_handle_watch): renewed on the client's
 * thread until unlocked, never after; lost when a quorum says so or when
 * the validity runs out first, and then told at once.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEASE_MS 600

typedef struct lost_call {
    atomic_int calls;
    atomic_int status;
    _Atomic long long at;           /* when it came, by now_ms() */
    redlock_handle *h;
    char message[256];
    bool free_it;                   /* the callback frees the handle */
} lost_call;

static void on_lost(void *data, redlock_handle *h, int status, const char *message)
{
    lost_call *c = data;
    c->at = now_ms();
    c->status = status;
    c->h = h;
    snprintf(c->message, sizeof c->message, "%s", message);
    if (c->free_it)
        redlock_handle_free(h);
    c->calls++;
}

/* Waits up to ms for a lost callback. */
static void wait_lost(const lost_call *c, long long ms)
{
    long long deadline = now_ms() + ms;
    while (c->calls == 0 && now_ms() < deadline)
        sleep_ms(5);
}

static redlock_handle *kept(redlock_ctx *ctx, const char *name, lost_call *lost)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, name, LEASE_MS, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(h, on_lost, lost), REDLOCK_OK);
    return h;
}

static void a_kept_lock_outlives_its_lease_until_unlocked(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *rival = ctx_for(ns, NULL);
    lost_call lost = {0};
    redlock_handle *h = kept(ctx, "watch-kept", &lost);
    long long until = now_ms() + 5 * LEASE_MS;
    while (now_ms() < until) {
        sleep_ms(LEASE_MS / 4);
        assert_true(redlock_handle_validity_ms(h) > 0);
        redlock_handle *other = NULL;
        assert_fails(redlock_lock(&other, rival, "watch-kept", 10000, 0), REDLOCK_ELOCKED);
    }
    assert_int_equal(redlock_handle_lost(h), 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    /* Nothing extends it after the unlock: no key comes back. */
    sleep_ms(LEASE_MS);
    assert_on_every_node(ns, "watch-kept", NULL);
    assert_int_equal(lost.calls, 0);
    redlock_handle_free(h);
    redlock_ctx_free(rival);
    redlock_ctx_free(ctx);
}

static void deleted_keys_make_it_lost_at_the_next_renewal(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    lost_call lost = {0};
    redlock_handle *h = kept(ctx, "watch-deleted", &lost);
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "DEL watch-deleted"), 0);
    wait_lost(&lost, LEASE_MS);
    assert_int_equal(lost.calls, 1);
    assert_int_equal(lost.status, REDLOCK_ENOTHELD);
    assert_ptr_equal(lost.h, h);
    assert_int_equal(redlock_handle_lost(h), 1);
    assert_true(redlock_handle_validity_ms(h) <= 0);
    sleep_ms(LEASE_MS);
    assert_int_equal(lost.calls, 1);   /* once */
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* Counts the renewals the client's keeper runs (events "extended" op=renew). */
static void count_renewals(void *data, int level, const char *event, const char *message)
{
    (void)level;
    if (strcmp(event, "extended") == 0 && strstr(message, "op=renew"))
        atomic_fetch_add((atomic_int *)data, 1);
}

/* The owner's extension of a kept lock goes through its keeper: the next
 * renewal is planned from it (a third of its lease after it), and a loss it
 * finds is told as a renewal's would be. */
static void the_owners_extension_plans_the_next_renewal(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    atomic_int renewals = 0;
    assert_rc(redlock_ctx_set_log(ctx, count_renewals, REDLOCK_LOG_DEBUG, &renewals),
              REDLOCK_OK);
    lost_call lost = {0};
    redlock_handle *h = kept(ctx, "watch-owner", &lost);
    long long until = now_ms() + 2000;
    while (renewals < 2 && now_ms() < until)
        sleep_ms(10);
    assert_true(renewals >= 2);   /* every 200 ms, by its 600 ms lease */
    assert_rc(redlock_extend(h, 3000), REDLOCK_OK);
    int before = renewals;
    /* The next one is due a third of 3 s after the extension, less the
     * lock's spread (a twelfth of the lease at most): none for 600 ms. */
    sleep_ms(600);
    assert_int_equal(renewals, before);
    assert_true(redlock_handle_validity_ms(h) > 1500);

    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "DEL watch-owner"), 0);
    assert_fails(redlock_extend(h, 3000), REDLOCK_ENOTHELD);
    wait_lost(&lost, 2000);
    assert_int_equal(lost.calls, 1);
    assert_int_equal(lost.status, REDLOCK_ENOTHELD);
    assert_int_equal(redlock_handle_lost(h), 1);
    assert_fails(redlock_unlock(h), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* A majority paused: no extension gets a quorum, and the lock is lost no
 * later than its validity reaching 0 (measured by polling it). */
static void a_majority_away_makes_it_lost_when_validity_ends(void **state)
{
    nodes *ns = *state;
    const char *opts[] = {"retry_delay_ms", "20", NULL};
    redlock_ctx *ctx = ctx_for(ns, opts);
    lost_call lost = {0};
    redlock_handle *h = kept(ctx, "watch-paused", &lost);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(nodes_pause(ns, i, 4 * LEASE_MS), 0);
    long long last_valid = now_ms();
    long long deadline = now_ms() + 3 * LEASE_MS;
    while (lost.calls == 0 && now_ms() < deadline) {
        long long t = now_ms();
        if (redlock_handle_validity_ms(h) > 0)
            last_valid = t;
        sleep_ms(1);
    }
    assert_int_equal(lost.calls, 1);
    assert_int_equal(lost.status, REDLOCK_EEXPIRED);
    assert_non_null(strstr(lost.message, "validity ran out"));
    assert_true(lost.at - last_valid <= 100);
    assert_true(lost.at >= last_valid);
    assert_int_equal(redlock_handle_lost(h), 1);
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    assert_fails(redlock_unlock(h), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* The callback may free its handle; an unlock from another thread waits
 * for an extension under way and is the last word. */
static void freeing_in_the_callback_and_unlocking_mid_extension(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    lost_call lost = {.free_it = true};
    redlock_handle *h = kept(ctx, "watch-free", &lost);
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "DEL watch-free"), 0);
    wait_lost(&lost, 2 * LEASE_MS);
    assert_int_equal(lost.calls, 1);   /* and h is gone: ASan watches */

    const char *slow[] = {"node_timeout_ms", "1000", NULL};
    redlock_ctx *patient = ctx_for(ns, slow);
    lost_call none = {0};
    h = kept(patient, "watch-mid", &none);
    /* Every node slow: the next renewal is under way when unlock comes. */
    sleep_ms(LEASE_MS / 3 - 50);
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_pause(ns, i, 300), 0);
    sleep_ms(100);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, "watch-mid", NULL);
    sleep_ms(LEASE_MS);
    assert_on_every_node(ns, "watch-mid", NULL);
    assert_int_equal(none.calls, 0);
    redlock_handle_free(h);
    redlock_ctx_free(patient);
    redlock_ctx_free(ctx);
}

static void many_kept_locks_take_one_thread(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    size_t before = threads_now();
    enum { N = 100 };
    redlock_handle *hs[N];
    lost_call lost = {0};
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "watch-many-%d", i);
        hs[i] = kept(ctx, name, &lost);
    }
    sleep_ms(2 * LEASE_MS);
    assert_true(threads_now() <= before + 2);   /* the client's thread, and the release service */
    for (int i = 0; i < N; i++) {
        assert_true(redlock_handle_validity_ms(hs[i]) > 0);
        redlock_handle_free(hs[i]);   /* stops renewing; the keys expire */
    }
    assert_int_equal(lost.calls, 0);
    redlock_ctx_free(ctx);
}

static void bad_watches_are_refused(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_fails(redlock_handle_watch(NULL, NULL, NULL), REDLOCK_EINVAL);
    assert_int_equal(redlock_handle_lost(NULL), 0);
    assert_rc(redlock_lock(&h, ctx, "watch-bad", LEASE_MS, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(h, NULL, NULL), REDLOCK_OK);
    assert_fails(redlock_handle_watch(h, NULL, NULL), REDLOCK_EINVAL);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_fails(redlock_handle_watch(h, NULL, NULL), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_kept_lock_outlives_its_lease_until_unlocked),
        cmocka_unit_test(deleted_keys_make_it_lost_at_the_next_renewal),
        cmocka_unit_test(the_owners_extension_plans_the_next_renewal),
        cmocka_unit_test(a_majority_away_makes_it_lost_when_validity_ends),
        cmocka_unit_test(freeing_in_the_callback_and_unlocking_mid_extension),
        cmocka_unit_test(many_kept_locks_take_one_thread),
        cmocka_unit_test(bad_watches_are_refused),
    };
    return cmocka_run_group_tests(tests, five_nodes_setup, nodes_teardown);
}
