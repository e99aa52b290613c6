/*
 * test_lock.c - one resource on five healthy nodes: lock, refusal, expiry,
 * extension, safe unlock, validity, tokens, key prefix, waiting.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int group_setup(void **state)
{
    *state = nodes_start(5, NULL);
    return *state != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

static void lock_and_unlock(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;

    assert_rc(redlock_lock(&h, ctx, "lock-basic", 10000, 0), REDLOCK_OK);
    assert_non_null(h);
    const char *token = redlock_handle_token(h);
    assert_true(is_token(token));
    /* Without a prefix the key is the name and its value the token. */
    assert_on_every_node(ns, "lock-basic", token);
    assert_pttl_on_every_node(ns, "lock-basic", 1, 10000);

    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(h) <= 0);
    assert_on_every_node(ns, "lock-basic", NULL);
    /* Released already. */
    assert_fails(redlock_unlock(h), REDLOCK_ENOTHELD);
    assert_fails(redlock_extend(h, 1000), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void second_client_is_refused_until_release(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL);
    redlock_ctx *b = ctx_for(ns, NULL);
    redlock_handle *ha = NULL, *hb = UNSET_HANDLE;

    assert_rc(redlock_lock(&ha, a, "lock-refused", 10000, 0), REDLOCK_OK);
    assert_fails(redlock_lock(&hb, b, "lock-refused", 10000, 0), REDLOCK_ELOCKED);
    assert_null(hb);
    /* The same client is refused too: a lock is not reentrant. */
    assert_fails(redlock_lock(&hb, a, "lock-refused", 10000, 0), REDLOCK_ELOCKED);
    /* The refusals left the holder's key alone. */
    assert_on_every_node(ns, "lock-refused", redlock_handle_token(ha));

    assert_rc(redlock_unlock(ha), REDLOCK_OK);
    assert_rc(redlock_lock(&hb, b, "lock-refused", 10000, 0), REDLOCK_OK);
    assert_on_every_node(ns, "lock-refused", redlock_handle_token(hb));
    assert_rc(redlock_unlock(hb), REDLOCK_OK);

    redlock_handle_free(ha);
    redlock_handle_free(hb);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
}

static void expiry_frees_the_lock(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL);
    redlock_ctx *b = ctx_for(ns, NULL);
    redlock_handle *ha = NULL, *hb = NULL;

    assert_rc(redlock_lock(&ha, a, "lock-expiry", 300, 0), REDLOCK_OK);
    assert_fails(redlock_lock(&hb, b, "lock-expiry", 10000, 0), REDLOCK_ELOCKED);
    sleep_ms(600);
    assert_true(redlock_handle_validity_ms(ha) <= 0);
    assert_on_every_node(ns, "lock-expiry", NULL);
    assert_rc(redlock_lock(&hb, b, "lock-expiry", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(hb), REDLOCK_OK);

    redlock_handle_free(ha); /* never unlocked: freeing is enough */
    redlock_handle_free(hb);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
}

static void extend_renews_the_lease(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;

    assert_rc(redlock_lock(&h, ctx, "lock-extend", 3000, 0), REDLOCK_OK);
    sleep_ms(300);
    int64_t before = redlock_handle_validity_ms(h);
    assert_true(before > 0 && before < 3000);

    assert_rc(redlock_extend(h, 60000), REDLOCK_OK);
    int64_t after = redlock_handle_validity_ms(h);
    assert_true(after > before);
    assert_true(after > 30000 && after <= 60000);
    assert_pttl_on_every_node(ns, "lock-extend", 30001, 60000);
    /* Still ours, with the same token. */
    assert_on_every_node(ns, "lock-extend", redlock_handle_token(h));

    /* The lease outlives the first ttl. */
    sleep_ms(3200);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_on_every_node(ns, "lock-extend", redlock_handle_token(h));

    /* Shortening works the same way. */
    assert_rc(redlock_extend(h, 5000), REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(h) <= 5000);
    assert_pttl_on_every_node(ns, "lock-extend", 1, 5000);

    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, "lock-extend", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void extend_after_expiry_fails(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;

    assert_rc(redlock_lock(&h, ctx, "lock-extend-late", 200, 0), REDLOCK_OK);
    sleep_ms(500);
    assert_fails(redlock_extend(h, 10000), REDLOCK_ENOTHELD);
    assert_true(redlock_handle_validity_ms(h) <= 0);
    /* The failed extension did not bring the key back. */
    assert_on_every_node(ns, "lock-extend-late", NULL);
    assert_fails(redlock_unlock(h), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void unlock_never_deletes_another_holders_key(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL);
    redlock_ctx *b = ctx_for(ns, NULL);
    redlock_handle *ha = NULL, *hb = NULL;

    assert_rc(redlock_lock(&ha, a, "lock-stolen", 300, 0), REDLOCK_OK);
    sleep_ms(600);
    assert_rc(redlock_lock(&hb, b, "lock-stolen", 30000, 0), REDLOCK_OK);
    assert_string_not_equal(redlock_handle_token(ha), redlock_handle_token(hb));

    /* A's lease ran out: its unlock and extend touch nothing of B's. */
    assert_fails(redlock_extend(ha, 30000), REDLOCK_ENOTHELD);
    assert_fails(redlock_unlock(ha), REDLOCK_ENOTHELD);
    assert_on_every_node(ns, "lock-stolen", redlock_handle_token(hb));
    assert_pttl_on_every_node(ns, "lock-stolen", 20000, 30000);
    assert_true(redlock_handle_validity_ms(hb) > 0);

    assert_rc(redlock_unlock(hb), REDLOCK_OK);
    assert_on_every_node(ns, "lock-stolen", NULL);
    redlock_handle_free(ha);
    redlock_handle_free(hb);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
}

static void validity_is_within_bounds(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    const int64_t ttl = 10000;
    const int64_t drift = ttl / 100 + 2; /* drift_factor 0.01 plus 2 ms */

    assert_rc(redlock_lock(&h, ctx, "lock-validity", ttl, 0), REDLOCK_OK);
    int64_t first = redlock_handle_validity_ms(h);
    assert_true(first > 0);
    assert_true(first <= ttl - drift);
    /* Acquiring from loopback nodes takes far less than the whole lease. */
    assert_true(first > ttl / 2);

    sleep_ms(250);
    int64_t later = redlock_handle_validity_ms(h);
    assert_true(later < first);
    assert_true(later <= first - 200);
    assert_true(later > 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);

    /* A larger drift factor leaves less validity. */
    assert_rc(redlock_ctx_set_option(ctx, "drift_factor", "0.5"), REDLOCK_OK);
    assert_rc(redlock_lock(&h, ctx, "lock-validity", ttl, 0), REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_true(redlock_handle_validity_ms(h) <= ttl / 2 - 2);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void tokens_are_hex_and_fresh(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    enum { ROUNDS = 20 };
    char seen[ROUNDS][33];

    for (int r = 0; r < ROUNDS; r++) {
        redlock_handle *h = NULL;
        assert_rc(redlock_lock(&h, ctx, "lock-tokens", 10000, 0), REDLOCK_OK);
        const char *token = redlock_handle_token(h);
        assert_true(is_token(token));
        assert_on_every_node(ns, "lock-tokens", token);
        snprintf(seen[r], sizeof(seen[r]), "%s", token);
        for (int j = 0; j < r; j++)
            assert_string_not_equal(seen[j], token);
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        /* The token stays readable after unlock, until the handle is freed. */
        assert_string_equal(redlock_handle_token(h), seen[r]);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
}

static void key_prefix_is_applied(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, (const char *const[]){"key_prefix", "app:", NULL});
    redlock_ctx *plain = ctx_for(ns, NULL);
    redlock_handle *h = NULL, *other = NULL;

    assert_rc(redlock_lock(&h, ctx, "lock-prefix", 10000, 0), REDLOCK_OK);
    assert_on_every_node(ns, "app:lock-prefix", redlock_handle_token(h));
    assert_on_every_node(ns, "lock-prefix", NULL);

    /* A client without the prefix names another key. */
    assert_rc(redlock_lock(&other, plain, "lock-prefix", 10000, 0), REDLOCK_OK);
    assert_on_every_node(ns, "lock-prefix", redlock_handle_token(other));
    assert_rc(redlock_unlock(other), REDLOCK_OK);
    redlock_handle_free(other);
    /* ...and one with it names the same one. */
    other = NULL;
    assert_fails(redlock_lock(&other, ctx, "lock-prefix", 10000, 0), REDLOCK_ELOCKED);
    assert_fails(redlock_lock(&other, plain, "app:lock-prefix", 10000, 0), REDLOCK_ELOCKED);

    assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
    assert_pttl_on_every_node(ns, "app:lock-prefix", 10001, 20000);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, "app:lock-prefix", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    redlock_ctx_free(plain);
}

/* A lock held by another thread of the same client, released after a while. */
typedef struct holder {
    redlock_ctx *ctx;
    const char *resource;
    long hold_ms;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int locked; /* under mutex: 1 once held, -1 when locking failed */
    int unlock_rc;
} holder;

static void *hold_then_release(void *arg)
{
    holder *hd = arg;
    redlock_handle *h = NULL;
    int rc = redlock_lock(&h, hd->ctx, hd->resource, 60000, 0);
    pthread_mutex_lock(&hd->mutex);
    hd->locked = rc == REDLOCK_OK ? 1 : -1;
    pthread_cond_signal(&hd->cond);
    pthread_mutex_unlock(&hd->mutex);
    if (rc == REDLOCK_OK) {
        sleep_ms(hd->hold_ms);
        hd->unlock_rc = redlock_unlock(h);
        redlock_handle_free(h);
    }
    return NULL;
}

static void start_holder(holder *hd, pthread_t *thread)
{
    pthread_mutex_init(&hd->mutex, NULL);
    pthread_cond_init(&hd->cond, NULL);
    hd->locked = 0;
    hd->unlock_rc = 1;
    assert_int_equal(pthread_create(thread, NULL, hold_then_release, hd), 0);
    pthread_mutex_lock(&hd->mutex);
    while (hd->locked == 0)
        pthread_cond_wait(&hd->cond, &hd->mutex);
    int locked = hd->locked;
    pthread_mutex_unlock(&hd->mutex);
    assert_int_equal(locked, 1);
}

static void join_holder(holder *hd, pthread_t thread)
{
    assert_int_equal(pthread_join(thread, NULL), 0);
    pthread_mutex_destroy(&hd->mutex);
    pthread_cond_destroy(&hd->cond);
    assert_int_equal(hd->unlock_rc, REDLOCK_OK);
}

static void waiting_acquires_once_released(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    holder hd = {.ctx = ctx, .resource = "lock-wait", .hold_ms = 800};
    pthread_t thread;
    start_holder(&hd, &thread);

    redlock_handle *h = NULL;
    long long start = now_ms();
    assert_rc(redlock_lock(&h, ctx, "lock-wait", 10000, 30000), REDLOCK_OK);
    long long elapsed = now_ms() - start;
    join_holder(&hd, thread);
    /* It waited for the release rather than taking the lock early... */
    assert_true(elapsed >= 500);
    /* ...and took it soon after, long before wait_ms ran out. */
    assert_true(elapsed < 20000);
    /* Woken by the release, it may have raced it on a node or two. */
    assert_on_a_quorum(ns, "lock-wait", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void waiting_gives_up_after_wait_ms(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *held = NULL, *h = UNSET_HANDLE;
    assert_rc(redlock_lock(&held, ctx, "lock-wait-out", 60000, 0), REDLOCK_OK);

    long long start = now_ms();
    assert_fails(redlock_lock(&h, ctx, "lock-wait-out", 10000, 700), REDLOCK_ELOCKED);
    long long elapsed = now_ms() - start;
    assert_null(h);
    assert_true(elapsed >= 600);
    assert_true(elapsed < 10000);
    /* The attempts left the holder's key alone. */
    assert_on_every_node(ns, "lock-wait-out", redlock_handle_token(held));

    assert_rc(redlock_unlock(held), REDLOCK_OK);
    redlock_handle_free(held);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lock_and_unlock),
        cmocka_unit_test(second_client_is_refused_until_release),
        cmocka_unit_test(expiry_frees_the_lock),
        cmocka_unit_test(extend_renews_the_lease),
        cmocka_unit_test(extend_after_expiry_fails),
        cmocka_unit_test(unlock_never_deletes_another_holders_key),
        cmocka_unit_test(validity_is_within_bounds),
        cmocka_unit_test(tokens_are_hex_and_fresh),
        cmocka_unit_test(key_prefix_is_applied),
        cmocka_unit_test(waiting_acquires_once_released),
        cmocka_unit_test(waiting_gives_up_after_wait_ms),
    };
    return cmocka_run_group_tests_name("lock", tests, group_setup, group_teardown);
}
