/*
 * test_async.c - the asynchronous calls: one thread per client drives them
 * all, callbacks come exactly once, many locks on few resources exclude each
 * other, freeing the client cancels the waiting locks.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALLS 1000
#define RESOURCES 50

/* What the callbacks of one run saw. A lock acquired is held until the
 * test's thread takes it from `held` and starts its release. */
typedef struct run {
    redlock_ctx *ctx;
    pthread_mutex_t mu;              /* guards holder and held */
    struct call *holder[RESOURCES];  /* who holds each resource */
    struct call *held;               /* acquired, release not started */
    atomic_int acquired, released, failed, overlaps, wrong_thread;
    atomic_int finished;
    pthread_t callback_thread;
    atomic_bool have_thread;
} run;

typedef struct call {
    run *r;
    int resource;
    char name[32];
    redlock_handle *h;
    struct call *next;
} call;

static void note_thread(run *r)
{
    bool expected = false;
    if (atomic_compare_exchange_strong(&r->have_thread, &expected, true))
        r->callback_thread = pthread_self();
    else if (!pthread_equal(r->callback_thread, pthread_self()))
        r->wrong_thread++;
}

static void unlocked(void *data, int status, redlock_handle *h, const char *message)
{
    call *c = data;
    (void)h;
    (void)message;
    note_thread(c->r);
    if (status == REDLOCK_OK)
        c->r->released++;
    redlock_handle_free(c->h);
    c->r->finished++;
    free(c);
}

static void locked(void *data, int status, redlock_handle *h, const char *message)
{
    call *c = data;
    run *r = c->r;
    (void)message;
    note_thread(r);
    if (status != REDLOCK_OK) {
        assert_null(h);
        r->failed++;
        r->finished++;
        free(c);
        return;
    }
    r->acquired++;
    c->h = h;
    pthread_mutex_lock(&r->mu);
    if (r->holder[c->resource] != NULL)
        r->overlaps++;
    r->holder[c->resource] = c;
    c->next = r->held;
    r->held = c;
    pthread_mutex_unlock(&r->mu);
}

/* Starts the release of every lock held now: each resource is let go of
 * before its release is sent, so a next holder can only come after. */
static void release_held(run *r)
{
    pthread_mutex_lock(&r->mu);
    call *c = r->held;
    r->held = NULL;
    for (call *k = c; k; k = k->next)
        r->holder[k->resource] = NULL;
    pthread_mutex_unlock(&r->mu);
    while (c) {
        call *next = c->next;
        if (redlock_unlock_async(c->h, unlocked, c) != REDLOCK_OK) {
            redlock_handle_free(c->h);
            r->finished++;
            free(c);
        }
        c = next;
    }
}

static void thousand_calls_on_fifty_resources_exclude_each_other(void **state)
{
    nodes *ns = *state;
    /* A thousand calls at once: node deadlines far from the test's pace. */
    const char *opts[] = {"retry_delay_ms", "5", "retry_jitter_ms", "4", "node_timeout_ms", "2000",
                          "connect_timeout_ms", "2000", NULL};
    run r = {.ctx = ctx_for(ns, opts), .mu = PTHREAD_MUTEX_INITIALIZER};
    size_t before = threads_now();
    size_t most = before;
    for (int i = 0; i < CALLS; i++) {
        call *c = calloc(1, sizeof *c);
        assert_non_null(c);
        c->r = &r;
        c->resource = i % RESOURCES;
        snprintf(c->name, sizeof c->name, "async-r%d", c->resource);
        const char *name = c->name;
        assert_rc(redlock_lock_async(r.ctx, &name, 1, 10000, 20000, locked, c), REDLOCK_OK);
    }
    long long deadline = now_ms() + 60000;
    while (r.finished < CALLS && now_ms() < deadline) {
        size_t n = threads_now();
        most = n > most ? n : most;
        sleep_ms(2);   /* the critical sections */
        release_held(&r);
    }
    assert_int_equal(r.finished, CALLS);
    assert_int_equal(r.acquired, CALLS);
    assert_int_equal(r.released, CALLS);
    assert_int_equal(r.overlaps, 0);
    assert_int_equal(r.wrong_thread, 0);
    /* One thread drives them all (plus, at most, the one delivering
     * releases owed to nodes and the one listening for releases, and for a
     * moment one of those ending while its next one starts: seen under
     * ThreadSanitizer since connections are capped). Never one per call. */
    assert_true(most <= before + 4);
    /* Nothing left behind: what failed attempts took is released too (some
     * of it by the client's delivery of releases owed, while it lives). */
    for (int i = 0; i < RESOURCES; i++) {
        char key[32];
        snprintf(key, sizeof key, "async-r%d", i);
        assert_on_every_node(ns, key, NULL);
    }
    redlock_ctx_free(r.ctx);
}

typedef struct outcome {
    atomic_int calls;
    atomic_int status;
    redlock_handle *h;
    char message[256];
} outcome;

static void record(void *data, int status, redlock_handle *h, const char *message)
{
    outcome *o = data;
    o->h = h;
    snprintf(o->message, sizeof o->message, "%s", message);
    o->status = status;
    o->calls++;
}

static void wait_calls(outcome *o, int n)
{
    long long deadline = now_ms() + 10000;
    while (o->calls < n && now_ms() < deadline)
        sleep_ms(2);
    assert_int_equal(o->calls, n);
}

static void extend_and_refusal_report_as_the_blocking_calls_do(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *other = ctx_for(ns, NULL);
    const char *name = "async-extend";
    outcome got = {0}, refused = {0}, extended = {0}, released = {0};

    assert_rc(redlock_lock_async(ctx, &name, 1, 2000, 0, record, &got), REDLOCK_OK);
    wait_calls(&got, 1);
    assert_int_equal(got.status, REDLOCK_OK);
    assert_non_null(got.h);
    assert_string_equal(got.message, "");
    assert_on_every_node(ns, name, redlock_handle_token(got.h));

    assert_rc(redlock_lock_async(other, &name, 1, 2000, 0, record, &refused), REDLOCK_OK);
    wait_calls(&refused, 1);
    assert_int_equal(refused.status, REDLOCK_ELOCKED);
    assert_null(refused.h);
    assert_non_null(strstr(refused.message, name));

    assert_rc(redlock_extend_async(got.h, 20000, record, &extended), REDLOCK_OK);
    wait_calls(&extended, 1);
    assert_int_equal(extended.status, REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(got.h) > 19000);
    assert_pttl_on_every_node(ns, name, 19000, 20000);

    assert_rc(redlock_unlock_async(got.h, record, &released), REDLOCK_OK);
    wait_calls(&released, 1);
    assert_int_equal(released.status, REDLOCK_OK);
    assert_on_every_node(ns, name, NULL);
    /* Not held any more: refused at once, no callback. */
    assert_fails(redlock_extend_async(got.h, 1000, record, &released), REDLOCK_ENOTHELD);
    assert_fails(redlock_unlock_async(got.h, record, &released), REDLOCK_ENOTHELD);
    assert_int_equal(released.calls, 1);
    redlock_handle_free(got.h);
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

static void bad_arguments_fail_at_once_without_a_callback(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    const char *name = "async-bad";
    const char *empty = "";
    outcome o = {0};
    assert_fails(redlock_lock_async(NULL, &name, 1, 1000, 0, record, &o), REDLOCK_EINVAL);
    assert_fails(redlock_lock_async(ctx, &name, 1, 1000, 0, NULL, &o), REDLOCK_EINVAL);
    assert_fails(redlock_lock_async(ctx, NULL, 1, 1000, 0, record, &o), REDLOCK_EINVAL);
    assert_fails(redlock_lock_async(ctx, &name, 0, 1000, 0, record, &o), REDLOCK_EINVAL);
    assert_fails(redlock_lock_async(ctx, &name, 1, 0, 0, record, &o), REDLOCK_EINVAL);
    assert_fails(redlock_lock_async(ctx, &name, 1, 1000, -1, record, &o), REDLOCK_EINVAL);
    assert_fails(redlock_lock_async(ctx, &empty, 1, 1000, 0, record, &o), REDLOCK_EINVAL);
    assert_fails(redlock_extend_async(NULL, 1000, record, &o), REDLOCK_EINVAL);
    assert_fails(redlock_unlock_async(NULL, record, &o), REDLOCK_EINVAL);
    sleep_ms(50);
    assert_int_equal(o.calls, 0);
    redlock_ctx_free(ctx);
}

static void freeing_the_client_cancels_its_waiting_locks(void **state)
{
    nodes *ns = *state;
    redlock_ctx *holder = ctx_for(ns, NULL), *ctx = ctx_for(ns, NULL);
    const char *name = "async-cancel";
    redlock_handle *held = NULL;
    outcome waiting = {0};
    assert_rc(redlock_lock(&held, holder, name, 30000, 0), REDLOCK_OK);
    assert_rc(redlock_lock_async(ctx, &name, 1, 30000, 60000, record, &waiting), REDLOCK_OK);
    sleep_ms(300);
    assert_int_equal(waiting.calls, 0);
    long long started = now_ms();
    redlock_ctx_free(ctx);
    assert_true(now_ms() - started < 2000);
    assert_int_equal(waiting.calls, 1);
    assert_int_equal(waiting.status, REDLOCK_ECANCELED);
    assert_null(waiting.h);
    assert_on_every_node(ns, name, redlock_handle_token(held));
    assert_rc(redlock_unlock(held), REDLOCK_OK);
    redlock_handle_free(held);
    redlock_ctx_free(holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thousand_calls_on_fifty_resources_exclude_each_other),
        cmocka_unit_test(extend_and_refusal_report_as_the_blocking_calls_do),
        cmocka_unit_test(bad_arguments_fail_at_once_without_a_callback),
        cmocka_unit_test(freeing_the_client_cancels_its_waiting_locks),
    };
    return cmocka_run_group_tests(tests, five_nodes_setup, nodes_teardown);
}
