/*
 * test_faults.c - nodes that are down, killed and restarted, or paused: the
 * quorum decides, a dead or silent node costs at most its deadline, and the
 * client works normally once the nodes are back.
 */
#include "helpers.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAUSE_MS 2000

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

/* Every test starts and ends with all five nodes up and answering. */
static int all_up(void **state)
{
    return nodes_ensure_all_up(*state);
}

/* Options for tests that measure how long a failure takes. */
static const char *const short_deadlines[] = {
    "node_timeout_ms", "50",
    "connect_timeout_ms", "100",
    NULL,
};

/* Asserts that the calling thread's error detail names one of nodes
 * first..last as 127.0.0.1:port. */
static void assert_errmsg_names_a_node(const nodes *ns, size_t first, size_t last)
{
    const char *msg = redlock_errmsg();
    for (size_t i = first; i <= last; i++) {
        char name[32];
        snprintf(name, sizeof(name), "127.0.0.1:%d", nodes_port(ns, i));
        if (strstr(msg, name) != NULL)
            return;
    }
    fail_msg("errmsg names none of the failed nodes: %s", msg);
}

static void two_of_five_down_still_acquires(void **state)
{
    nodes *ns = *state;
    assert_int_equal(nodes_stop(ns, 0), 0);
    assert_int_equal(nodes_kill(ns, 1), 0);
    redlock_ctx *ctx = ctx_for(ns, short_deadlines);
    redlock_ctx *other = ctx_for(ns, short_deadlines);
    redlock_handle *h = NULL, *oh = NULL;

    assert_rc(redlock_lock(&h, ctx, "faults-two-down", 10000, 0), REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_on_nodes(ns, 2, 5, "faults-two-down", redlock_handle_token(h));
    /* Three nodes of five are a quorum for the holder, not for a rival. */
    assert_fails(redlock_lock(&oh, other, "faults-two-down", 10000, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_nodes(ns, 2, 5, "faults-two-down", NULL);

    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

static void three_of_five_down_fails_within_a_deadline(void **state)
{
    nodes *ns = *state;
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(nodes_stop(ns, i), 0);
    redlock_ctx *ctx = ctx_for(ns, short_deadlines);
    redlock_handle *h = UNSET_HANDLE;

    long long start = now_ms();
    assert_fails(redlock_lock(&h, ctx, "faults-three-down", 10000, 0), REDLOCK_ENOQUORUM);
    long long elapsed = now_ms() - start;
    assert_null(h);
    assert_true(elapsed < 1000);
    assert_errmsg_names_a_node(ns, 0, 2);
    /* The failed attempt was released on the nodes that granted it. */
    assert_on_nodes(ns, 3, 5, "faults-three-down", NULL);

    /* Retrying for a while ends with the same answer once wait_ms has passed. */
    start = now_ms();
    assert_fails(redlock_lock(&h, ctx, "faults-three-down", 10000, 500), REDLOCK_ENOQUORUM);
    elapsed = now_ms() - start;
    assert_true(elapsed >= 400);
    assert_true(elapsed < 5000);
    assert_on_nodes(ns, 3, 5, "faults-three-down", NULL);

    /* A wait as long as it takes ends too: the nodes are failing, not
     * refusing, for unavailable_timeout_ms. */
    set_options(ctx, (const char *const[]){"unavailable_timeout_ms", "300", NULL});
    start = now_ms();
    assert_fails(redlock_lock(&h, ctx, "faults-three-down", 10000, INT64_MAX),
                 REDLOCK_ENOQUORUM);
    elapsed = now_ms() - start;
    assert_true(elapsed >= 300);
    assert_true(elapsed < 5000);
    assert_non_null(strstr(redlock_errmsg(), "unavailable_timeout_ms"));
    set_options(ctx, (const char *const[]){"unavailable_timeout_ms", "0", NULL});

    /* Two nodes back make a quorum again, with the same client. It waits
     * out its connect back-off before it tries a node that refused it again
     * (up to a second): until it reaches both, a lock may be taken without
     * one of them, so the client's pings say when it does. */
    assert_int_equal(nodes_restart(ns, 0), 0);
    assert_int_equal(nodes_restart(ns, 1), 0);
    /* They come back empty, new servers where the records of nodes 3 and 4
     * name others: restart_records would hold them back for max_lease_ms
     * (tests/faults/test_restart.py); the back-off is what is tested here. */
    set_options(ctx, (const char *const[]){"node_timeout_ms", "2000", "restart_records", "0",
                                           NULL});
    int answered = 0;
    for (long long until = now_ms() + 5000; answered < 4 && now_ms() < until; sleep_ms(50))
        redlock_ctx_ping(ctx, &answered);
    assert_int_equal(answered, 4);
    assert_rc(redlock_lock(&h, ctx, "faults-three-down", 10000, 10000), REDLOCK_OK);
    assert_on_nodes(ns, 0, 2, "faults-three-down", redlock_handle_token(h));
    assert_on_nodes(ns, 3, 5, "faults-three-down", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_nodes(ns, 0, 2, "faults-three-down", NULL);
    assert_on_nodes(ns, 3, 5, "faults-three-down", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void three_of_five_paused_fails_within_a_deadline(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, short_deadlines);
    redlock_handle *h = UNSET_HANDLE;

    /* A paused node accepts connections and answers nothing: a black hole. */
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(nodes_pause(ns, i, PAUSE_MS), 0);
    long long start = now_ms();
    assert_fails(redlock_lock(&h, ctx, "faults-three-paused", 10000, 0), REDLOCK_ENOQUORUM);
    long long elapsed = now_ms() - start;
    assert_null(h);
    assert_true(elapsed < 1000);
    assert_errmsg_names_a_node(ns, 0, 2);
    assert_on_nodes(ns, 3, 5, "faults-three-paused", NULL);

    /* Once the pause is over the same client acquires on every node. */
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    set_options(ctx, (const char *const[]){"node_timeout_ms", "2000", NULL});
    for (int round = 0; round < 3; round++) {
        assert_rc(redlock_lock(&h, ctx, "faults-after-three-paused", 10000, 0), REDLOCK_OK);
        assert_on_every_node(ns, "faults-after-three-paused", redlock_handle_token(h));
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        assert_on_every_node(ns, "faults-after-three-paused", NULL);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
}

static void paused_nodes_do_not_slow_acquisition(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, (const char *const[]){"node_timeout_ms", "150", NULL});
    redlock_handle *h = NULL;

    /* Connections to every node exist before the pause, as in a busy client. */
    assert_rc(redlock_lock(&h, ctx, "faults-warm-up", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);

    for (size_t i = 0; i < 2; i++)
        assert_int_equal(nodes_pause(ns, i, PAUSE_MS), 0);
    long long paused_at = now_ms();
    assert_rc(redlock_lock(&h, ctx, "faults-paused", 10000, 0), REDLOCK_OK);
    long long lock_ms = now_ms() - paused_at;
    assert_true(lock_ms < PAUSE_MS / 2);
    assert_true(redlock_handle_validity_ms(h) > 5000);
    assert_on_nodes(ns, 2, 5, "faults-paused", redlock_handle_token(h));
    long long start = now_ms();
    assert_rc(redlock_extend(h, 10000), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_true(now_ms() - start < PAUSE_MS / 2);
    assert_true(now_ms() - paused_at < PAUSE_MS);
    redlock_handle_free(h);
    assert_on_nodes(ns, 2, 5, "faults-paused", NULL);

    /* After the pause, late replies must not be taken for answers to later
     * commands: every node holds exactly the current token, then nothing. */
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    set_options(ctx, (const char *const[]){"node_timeout_ms", "2000", NULL});
    for (int round = 0; round < 5; round++) {
        assert_rc(redlock_lock(&h, ctx, "faults-after-pause", 10000, 0), REDLOCK_OK);
        assert_on_every_node(ns, "faults-after-pause", redlock_handle_token(h));
        assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
        assert_pttl_on_every_node(ns, "faults-after-pause", 10001, 20000);
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        assert_on_every_node(ns, "faults-after-pause", NULL);
        redlock_handle_free(h);
    }
    /* Nothing sent during the pause took effect afterwards. */
    assert_on_every_node(ns, "faults-paused", NULL);
    redlock_ctx_free(ctx);
}

static void killed_node_comes_back_empty_and_rejoins(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_ctx *other = ctx_for(ns, NULL);
    redlock_handle *h = NULL, *oh = NULL;

    assert_rc(redlock_lock(&h, ctx, "faults-restart", 30000, 0), REDLOCK_OK);
    assert_int_equal(nodes_kill(ns, 0), 0);
    assert_int_equal(nodes_restart(ns, 0), 0);
    /* The restarted node lost the key; four of five still hold it. */
    assert_int_equal(nodes_exists(ns, 0, "faults-restart"), 0);
    assert_on_nodes(ns, 1, 5, "faults-restart", redlock_handle_token(h));
    assert_fails(redlock_lock(&oh, other, "faults-restart", 10000, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_extend(h, 30000), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, "faults-restart", NULL);
    redlock_handle_free(h);

    /* The client's old connection to node 0 is dead; it reconnects, so the
     * node takes part again within a couple of rounds. */
    for (int round = 0; round < 3; round++) {
        assert_rc(redlock_lock(&h, ctx, "faults-rejoin", 10000, 0), REDLOCK_OK);
        if (round == 2)
            assert_on_every_node(ns, "faults-rejoin", redlock_handle_token(h));
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        assert_on_every_node(ns, "faults-rejoin", NULL);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

/* After SCRIPT FLUSH every script call meets NOSCRIPT, also on the nodes
 * whose replies come after the call has returned (the client reads them at
 * its next call): the script is sent again as EVAL all the same, so every
 * node is extended and every node released. In the last rounds only node 4
 * lost its scripts and it answers late for sure (paused through the extend),
 * so the call is decided by the others before its NOSCRIPT comes. */
static void flushed_scripts_still_reach_every_node(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;

    for (int round = 0; round < 20; round++) {
        bool late = round >= 17;
        assert_rc(redlock_lock(&h, ctx, "faults-flush", 30000, 0), REDLOCK_OK);
        assert_on_every_node(ns, "faults-flush", redlock_handle_token(h));
        if (late)   /* the scripts back where they were flushed last round */
            assert_rc(redlock_extend(h, 30000), REDLOCK_OK);
        for (size_t i = late ? 4 : 0; i < 5; i++)
            assert_int_equal(nodes_exec(ns, i, "SCRIPT FLUSH"), 0);
        if (late)
            assert_int_equal(nodes_pause(ns, 4, 300), 0);
        assert_rc(redlock_extend(h, 60000), REDLOCK_OK);
        assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);
        assert_pttl_on_every_node(ns, "faults-flush", 30001, 60000);
        for (size_t i = 0; i < 5; i++)
            assert_int_equal(nodes_exec(ns, i, "SCRIPT FLUSH"), 0);
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        assert_on_every_node(ns, "faults-flush", NULL);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(two_of_five_down_still_acquires, all_up, all_up),
        cmocka_unit_test_setup_teardown(three_of_five_down_fails_within_a_deadline, all_up,
                                        all_up),
        cmocka_unit_test_setup_teardown(three_of_five_paused_fails_within_a_deadline, all_up,
                                        all_up),
        cmocka_unit_test_setup_teardown(paused_nodes_do_not_slow_acquisition, all_up, all_up),
        cmocka_unit_test_setup_teardown(killed_node_comes_back_empty_and_rejoins, all_up,
                                        all_up),
        cmocka_unit_test_setup_teardown(flushed_scripts_still_reach_every_node, all_up, all_up),
    };
    return cmocka_run_group_tests_name("faults", tests, group_setup, group_teardown);
}
