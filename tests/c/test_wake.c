/*
 * test_wake.c - waiters woken by releases: a lock call that found the lock
 * held elsewhere is woken by the release itself (its timed retry is far
 * off), the one of a client that has waited longest first; a multi-lock is
 * woken by the release of the key it waited for, and so is an asynchronous
 * call; and a holder that does not publish (another library) is still caught
 * by the timed retries.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* A timed retry this far off cannot be what took the lock in time. */
static const char *const slow_retries[] = {
    "retry_delay_ms", "3000",
    "retry_jitter_ms", "0",
    NULL,
};

/* One waiting lock call on its own thread, and when it ended. */
typedef struct waiter {
    redlock_ctx *ctx;
    const char *const *names;
    size_t n;
    int64_t wait_ms;
    int rc;
    redlock_handle *h;
    _Atomic long long acquired_at;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    w->rc = redlock_lock_multi(&w->h, w->ctx, w->names, w->n, 10000, w->wait_ms);
    w->acquired_at = now_ms();
    return NULL;
}

static void start(pthread_t *t, waiter *w)
{
    assert_int_equal(pthread_create(t, NULL, wait_for_lock, w), 0);
}

/* Waits until the nodes have seen the waiter's first attempt fail (it now
 * pauses, subscribed). */
static void let_it_wait(void)
{
    sleep_ms(300);
}

/* Fails unless the lock was taken within moments of the release (a timed
 * retry would have come seconds later). */
static void taken_soon_after(long long released_at, long long acquired_at, const char *who)
{
    if (acquired_at - released_at >= 1000)
        fail_msg("%s acquired %lld ms after the release", who, acquired_at - released_at);
}

/* A client holding name, for the waiters to wait for. */
static redlock_handle *held_by(redlock_ctx *holder, const char *name)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, holder, name, 10000, 0), REDLOCK_OK);
    return h;
}

/* Starts w, releases h once w waits, and checks that w took the lock soon
 * after: woken by the release. */
static void release_to(waiter *w, redlock_handle *h, const char *who)
{
    pthread_t t;
    start(&t, w);
    let_it_wait();
    long long released_at = now_ms();
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    pthread_join(t, NULL);
    assert_rc(w->rc, REDLOCK_OK);
    taken_soon_after(released_at, w->acquired_at, who);
}

/* Unlocks what the waiter took; frees it, the holder's handle and both clients. */
static void finish(redlock_handle *taken, redlock_handle *held, redlock_ctx *ctx,
                   redlock_ctx *holder)
{
    assert_rc(redlock_unlock(taken), REDLOCK_OK);
    redlock_handle_free(taken);
    redlock_handle_free(held);
    redlock_ctx_free(ctx);
    redlock_ctx_free(holder);
}

static void a_release_wakes_a_waiter_of_another_client(void **state)
{
    nodes *ns = *state;
    redlock_ctx *holder = ctx_for(ns, NULL), *ctx = ctx_for(ns, slow_retries);
    redlock_handle *h = held_by(holder, "wake-one");
    const char *names[] = {"wake-one"};
    waiter w = { .ctx = ctx, .names = names, .n = 1, .wait_ms = 10000 };
    release_to(&w, h, "the waiter");
    /* Held by the waiter on a quorum (a node the release reached late may
     * have refused it): the old holder is refused now. */
    redlock_handle *again = UNSET_HANDLE;
    assert_fails(redlock_lock(&again, holder, "wake-one", 10000, 0), REDLOCK_ELOCKED);
    finish(w.h, h, ctx, holder);
}

static void the_longest_waiter_goes_first(void **state)
{
    nodes *ns = *state;
    redlock_ctx *holder = ctx_for(ns, NULL), *ctx = ctx_for(ns, slow_retries);
    redlock_handle *h = held_by(holder, "wake-order");
    const char *names[] = {"wake-order"};
    waiter first = { .ctx = ctx, .names = names, .n = 1, .wait_ms = 10000 };
    waiter second = first;
    pthread_t t1, t2;
    start(&t1, &first);
    let_it_wait();
    start(&t2, &second);
    let_it_wait();

    long long first_turn = now_ms();
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    pthread_join(t1, NULL);
    assert_rc(first.rc, REDLOCK_OK);
    taken_soon_after(first_turn, first.acquired_at, "the first waiter");
    sleep_ms(200);
    assert_int_equal(second.acquired_at, 0);   /* still waiting its turn */
    long long released_at = now_ms();
    assert_rc(redlock_unlock(first.h), REDLOCK_OK);
    pthread_join(t2, NULL);
    assert_rc(second.rc, REDLOCK_OK);
    taken_soon_after(released_at, second.acquired_at, "the second waiter");
    redlock_handle_free(first.h);
    finish(second.h, h, ctx, holder);
}

static void a_multi_lock_is_woken_by_the_key_it_waits_for(void **state)
{
    nodes *ns = *state;
    redlock_ctx *holder = ctx_for(ns, NULL), *ctx = ctx_for(ns, slow_retries);
    redlock_handle *h = held_by(holder, "wake-b");
    const char *names[] = {"wake-a", "wake-b", "wake-c"};
    waiter w = { .ctx = ctx, .names = names, .n = 3, .wait_ms = 10000 };
    release_to(&w, h, "the multi-lock");
    finish(w.h, h, ctx, holder);
}

/* The release of a multi-lock wakes a waiter of one of its keys: of its
 * keys' channels, release.lua publishes on those someone listens to, and
 * the waiter listens to its key's. */
static void a_multi_locks_release_wakes_a_waiter_of_one_of_its_keys(void **state)
{
    nodes *ns = *state;
    redlock_ctx *holder = ctx_for(ns, NULL), *ctx = ctx_for(ns, slow_retries);
    const char *held[] = {"wake-m1", "wake-m2", "wake-m3"};
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_multi(&h, holder, held, 3, 10000, 0), REDLOCK_OK);
    const char *names[] = {"wake-m2"};
    waiter w = { .ctx = ctx, .names = names, .n = 1, .wait_ms = 10000 };
    release_to(&w, h, "the waiter of one key of a multi-lock");
    finish(w.h, h, ctx, holder);
}

typedef struct async_result {
    atomic_int done;
    int status;
    redlock_handle *h;
    _Atomic long long at;
} async_result;

static void on_done(void *data, int status, redlock_handle *h, const char *message)
{
    async_result *r = data;
    (void)message;
    r->status = status;
    r->h = h;
    r->at = now_ms();
    r->done = 1;
}

static void an_asynchronous_lock_is_woken_too(void **state)
{
    nodes *ns = *state;
    redlock_ctx *holder = ctx_for(ns, NULL), *ctx = ctx_for(ns, slow_retries);
    redlock_handle *h = held_by(holder, "wake-async");
    const char *names[] = {"wake-async"};
    async_result r = {0};
    assert_rc(redlock_lock_async(ctx, names, 1, 10000, 10000, on_done, &r), REDLOCK_OK);
    let_it_wait();
    long long released_at = now_ms();
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    while (!r.done && now_ms() < released_at + 10000)
        sleep_ms(5);
    assert_int_equal(r.done, 1);
    assert_rc(r.status, REDLOCK_OK);
    taken_soon_after(released_at, r.at, "the asynchronous call");
    finish(r.h, h, ctx, holder);
}

static void a_holder_that_does_not_publish_is_caught_by_the_timed_retry(void **state)
{
    nodes *ns = *state;
    static const char *const quick_retries[] = {"retry_delay_ms", "200", NULL};
    redlock_ctx *ctx = ctx_for(ns, quick_retries);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(nodes_exec(ns, i, "SET wake-foreign someone PX 10000"), 0);
    const char *names[] = {"wake-foreign"};
    waiter w = { .ctx = ctx, .names = names, .n = 1, .wait_ms = 10000 };
    pthread_t t;
    start(&t, &w);
    let_it_wait();
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(nodes_exec(ns, i, "DEL wake-foreign"), 0);
    pthread_join(t, NULL);
    assert_rc(w.rc, REDLOCK_OK);
    assert_rc(redlock_unlock(w.h), REDLOCK_OK);
    redlock_handle_free(w.h);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_release_wakes_a_waiter_of_another_client),
        cmocka_unit_test(the_longest_waiter_goes_first),
        cmocka_unit_test(a_multi_lock_is_woken_by_the_key_it_waits_for),
        cmocka_unit_test(a_multi_locks_release_wakes_a_waiter_of_one_of_its_keys),
        cmocka_unit_test(an_asynchronous_lock_is_woken_too),
        cmocka_unit_test(a_holder_that_does_not_publish_is_caught_by_the_timed_retry),
    };
    return cmocka_run_group_tests_name("wake", tests, five_nodes_setup, nodes_teardown);
}
