/*
 * test_threads.c - one client shared by many threads: mutual exclusion on a
 * shared resource, private resources in parallel, races for one resource,
 * and a handle passed from one thread to another.
 *
 * Threads never call cmocka: they count what they saw in atomics, and the
 * test's own thread asserts on the counts after joining them.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define THREADS 8
#define ITERATIONS 20

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

typedef struct shared_run {
    nodes *ns;
    redlock_ctx *ctx;
    atomic_int inside;     /* threads inside the shared critical section */
    atomic_int overlaps;   /* times a thread found another one inside */
    atomic_int entries;    /* completed shared critical sections */
    atomic_int failures;   /* calls that did not return what they should */
    atomic_int first_failure;
    atomic_int unconfirmed; /* shared sections where no quorum held our token */
} shared_run;

typedef struct worker {
    shared_run *run;
    int id;
} worker;

/* Counts rc when it is not REDLOCK_OK, keeping the first such code. */
static void check_ok(shared_run *run, int rc)
{
    if (rc == REDLOCK_OK)
        return;
    int none = 0;
    atomic_compare_exchange_strong(&run->first_failure, &none, rc);
    atomic_fetch_add(&run->failures, 1);
}

static void *work(void *arg)
{
    worker *w = arg;
    shared_run *run = w->run;
    char own[32];
    snprintf(own, sizeof(own), "threads-own-%d", w->id);

    for (int i = 0; i < ITERATIONS; i++) {
        redlock_handle *h = NULL;
        int rc = redlock_lock(&h, run->ctx, own, 30000, 0);
        check_ok(run, rc);
        if (rc == REDLOCK_OK) {
            check_ok(run, redlock_extend(h, 30000));
            check_ok(run, redlock_unlock(h));
            redlock_handle_free(h);
        }

        h = NULL;
        rc = redlock_lock(&h, run->ctx, "threads-shared", 30000, 120000);
        check_ok(run, rc);
        if (rc != REDLOCK_OK)
            continue;
        if (atomic_fetch_add(&run->inside, 1) != 0)
            atomic_fetch_add(&run->overlaps, 1);
        if (nodes_count_value(run->ns, "threads-shared", redlock_handle_token(h)) < 3)
            atomic_fetch_add(&run->unconfirmed, 1);
        sleep_ms(1);
        atomic_fetch_sub(&run->inside, 1);
        atomic_fetch_add(&run->entries, 1);
        check_ok(run, redlock_unlock(h));
        redlock_handle_free(h);
    }
    return NULL;
}

static void threads_share_one_client(void **state)
{
    nodes *ns = *state;
    shared_run run = {.ns = ns};
    atomic_init(&run.inside, 0);
    atomic_init(&run.overlaps, 0);
    atomic_init(&run.entries, 0);
    atomic_init(&run.failures, 0);
    atomic_init(&run.first_failure, 0);
    atomic_init(&run.unconfirmed, 0);
    run.ctx = ctx_for(ns, NULL);

    pthread_t threads[THREADS];
    worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){&run, t};
        assert_int_equal(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_join(threads[t], NULL), 0);

    if (atomic_load(&run.failures) != 0)
        fail_msg("%d calls failed, the first with %d (%s)", atomic_load(&run.failures),
                 atomic_load(&run.first_failure),
                 redlock_strerror(atomic_load(&run.first_failure)));
    assert_int_equal(atomic_load(&run.overlaps), 0);
    assert_int_equal(atomic_load(&run.unconfirmed), 0);
    assert_int_equal(atomic_load(&run.entries), THREADS * ITERATIONS);
    assert_on_every_node(ns, "threads-shared", NULL);
    for (int t = 0; t < THREADS; t++) {
        char own[32];
        snprintf(own, sizeof(own), "threads-own-%d", t);
        assert_on_every_node(ns, own, NULL);
    }
    redlock_ctx_free(run.ctx);
}

typedef struct race {
    redlock_ctx *ctx;
    pthread_barrier_t start;
    pthread_barrier_t attempted; /* the winner holds until every thread has tried */
    atomic_int winners;
    atomic_int bad_codes; /* results other than OK and ELOCKED */
} race;

static void *race_once(void *arg)
{
    race *r = arg;
    redlock_handle *h = NULL;
    pthread_barrier_wait(&r->start);
    int rc = redlock_lock(&h, r->ctx, "threads-race", 30000, 0);
    pthread_barrier_wait(&r->attempted);
    if (rc == REDLOCK_OK) {
        atomic_fetch_add(&r->winners, 1);
        if (redlock_unlock(h) != REDLOCK_OK)
            atomic_fetch_add(&r->bad_codes, 1);
        redlock_handle_free(h);
    } else if (rc != REDLOCK_ELOCKED) {
        atomic_fetch_add(&r->bad_codes, 1);
    }
    return NULL;
}

static void racing_threads_get_one_winner_at_most(void **state)
{
    nodes *ns = *state;
    race r;
    r.ctx = ctx_for(ns, NULL);
    int rounds_won = 0;

    for (int round = 0; round < 20; round++) {
        atomic_init(&r.winners, 0);
        atomic_init(&r.bad_codes, 0);
        assert_int_equal(pthread_barrier_init(&r.start, NULL, THREADS), 0);
        assert_int_equal(pthread_barrier_init(&r.attempted, NULL, THREADS), 0);
        pthread_t threads[THREADS];
        for (int t = 0; t < THREADS; t++)
            assert_int_equal(pthread_create(&threads[t], NULL, race_once, &r), 0);
        for (int t = 0; t < THREADS; t++)
            assert_int_equal(pthread_join(threads[t], NULL), 0);
        pthread_barrier_destroy(&r.start);
        pthread_barrier_destroy(&r.attempted);

        /* Split votes may leave nobody with a quorum, never two winners. */
        assert_in_range(atomic_load(&r.winners), 0, 1);
        assert_int_equal(atomic_load(&r.bad_codes), 0);
        rounds_won += atomic_load(&r.winners);
        /* Losers released what they had taken; the winner unlocked. */
        assert_on_every_node(ns, "threads-race", NULL);
    }
    assert_true(rounds_won > 0);
    redlock_ctx_free(r.ctx);
}

typedef struct handoff {
    redlock_handle *h;
    int extend_rc;
    int unlock_rc;
} handoff;

static void *finish_elsewhere(void *arg)
{
    handoff *ho = arg;
    ho->extend_rc = redlock_extend(ho->h, 20000);
    ho->unlock_rc = redlock_unlock(ho->h);
    return NULL;
}

static void handle_moves_between_threads(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    handoff ho = {NULL, 1, 1};
    assert_rc(redlock_lock(&ho.h, ctx, "threads-handoff", 10000, 0), REDLOCK_OK);

    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, finish_elsewhere, &ho), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_rc(ho.extend_rc, REDLOCK_OK);
    assert_rc(ho.unlock_rc, REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(ho.h) <= 0);
    assert_on_every_node(ns, "threads-handoff", NULL);
    redlock_handle_free(ho.h);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_share_one_client),
        cmocka_unit_test(racing_threads_get_one_winner_at_most),
        cmocka_unit_test(handle_moves_between_threads),
    };
    return cmocka_run_group_tests_name("threads", tests, group_setup, group_teardown);
}
