/*
 * test_hold.c - the rules of a hold (hold.c): acquiring a held lock again
 * counts a hold and keeps the first terms (the keys' TTL and the renewal
 * are untouched); a lock whose validity ran out while held is lost, kept or
 * not, and stays lost after its unlock; a lock released in time is not.
 */
#include "helpers.h"

#include <string.h>

/* The PTTL of key on node 0, in ms. */
static long long pttl(nodes *ns, const char *key)
{
    return nodes_pttl(ns, 0, key);
}

static void reentry_counts_holds_and_keeps_the_lease(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "hold-reenter", 3000, 0), REDLOCK_OK);
    assert_int_equal(redlock_handle_holds(h), 1);
    sleep_ms(300);
    long long before = pttl(ns, "hold-reenter");
    int64_t validity = redlock_handle_validity_ms(h);
    assert_rc(redlock_handle_reenter(h), REDLOCK_OK);
    assert_rc(redlock_handle_reenter(h), REDLOCK_OK);
    assert_int_equal(redlock_handle_holds(h), 3);
    /* Neither the keys' TTL nor the handle's validity moved forward. */
    assert_true(pttl(ns, "hold-reenter") <= before);
    assert_true(redlock_handle_validity_ms(h) <= validity);
    int left = -1;
    assert_rc(redlock_handle_leave(h, &left), REDLOCK_OK);
    assert_int_equal(left, 2);
    assert_rc(redlock_handle_leave(h, &left), REDLOCK_OK);
    assert_int_equal(left, 1);
    assert_int_equal(redlock_handle_holds(h), 1);
    /* The last hold is the caller's to release: leave does not release it. */
    assert_rc(redlock_handle_leave(h, &left), REDLOCK_OK);
    assert_int_equal(left, 0);
    assert_int_equal(redlock_handle_holds(h), 1);
    assert_int_equal(nodes_count_exists(ns, "hold-reenter"), 5);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_int_equal(redlock_handle_holds(h), 0);
    assert_int_equal(redlock_handle_lost(h), 0);
    assert_fails(redlock_handle_reenter(h), REDLOCK_ENOTHELD);
    assert_fails(redlock_handle_leave(h, &left), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void reentry_leaves_a_kept_lock_on_its_renewal(void **state)
{
    nodes *ns = *state;
    static const char *const opts[] = {"watchdog_lease_ms", "900", NULL};
    redlock_ctx *ctx = ctx_for(ns, opts);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "hold-kept", 900, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(h, NULL, NULL), REDLOCK_OK);
    assert_rc(redlock_handle_reenter(h), REDLOCK_OK);
    /* Three leases later, still renewed on its own schedule. */
    sleep_ms(2700);
    assert_int_equal(redlock_handle_lost(h), 0);
    assert_true(redlock_handle_validity_ms(h) > 0);
    long long left_ms = pttl(ns, "hold-kept");
    assert_true(left_ms > 0 && left_ms <= 900);
    int left = -1;
    assert_rc(redlock_handle_leave(h, &left), REDLOCK_OK);
    assert_int_equal(left, 1);
    assert_rc(redlock_handle_leave(h, &left), REDLOCK_OK);
    assert_int_equal(left, 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void a_lease_that_ran_out_while_held_is_lost(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "hold-expire", 300, 0), REDLOCK_OK);
    assert_int_equal(redlock_handle_lost(h), 0);
    sleep_ms(400);
    assert_int_equal(redlock_handle_lost(h), 1);
    /* Acquiring it again is refused: the holder learns it lost the lock. */
    assert_fails(redlock_handle_reenter(h), REDLOCK_ENOTHELD);
    assert_non_null(strstr(redlock_errmsg(), "lease ran out"));
    assert_int_equal(redlock_handle_holds(h), 1);
    assert_fails(redlock_unlock(h), REDLOCK_ENOTHELD);
    /* Still lost once released: the keys expired while it was held. */
    assert_int_equal(redlock_handle_lost(h), 1);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void a_lock_found_gone_by_an_extension_is_lost(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "hold-gone", 10000, 0), REDLOCK_OK);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(nodes_exec(ns, i, "DEL hold-gone"), 0);
    assert_int_equal(redlock_handle_lost(h), 0);   /* nobody asked the nodes yet */
    assert_fails(redlock_extend(h, 10000), REDLOCK_ENOTHELD);
    assert_int_equal(redlock_handle_lost(h), 1);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    int left = 7;
    assert_fails(redlock_handle_reenter(NULL), REDLOCK_EINVAL);
    assert_fails(redlock_handle_leave(NULL, &left), REDLOCK_EINVAL);
    assert_int_equal(left, 0);
    assert_int_equal(redlock_handle_holds(NULL), 0);
    assert_int_equal(redlock_handle_lost(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reentry_counts_holds_and_keeps_the_lease),
        cmocka_unit_test(reentry_leaves_a_kept_lock_on_its_renewal),
        cmocka_unit_test(a_lease_that_ran_out_while_held_is_lost),
        cmocka_unit_test(a_lock_found_gone_by_an_extension_is_lost),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests_name("hold", tests, five_nodes_setup, nodes_teardown);
}
