/*
 * test_conns.c - a command's deadline and the cap on connections
 * (core/engine/conn.c, op.c), without Redis: a command queued behind
 * unwritten bytes has no deadline until its last byte is written, then
 * node_timeout_ms from that write; one never written fails its node for the
 * client's own sake, not the node's; an operation at a node's cap of
 * connections waits for one instead of making another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client.h"
#include "conn.h"
#include "engine.h"
#include "node.h"
#include "op.h"

#define T0 100000   /* the test's clock: any start will do */

static const char *const uris[] = { "redis://127.0.0.1:1", "redis://127.0.0.1:2",
                                    "redis://127.0.0.1:3" };

static int setup(void **state)
{
    rl_client *ctx;
    assert_int_equal(rl_client_new(&ctx, uris, 3), REDLOCK_OK);
    assert_int_equal(rl_options_set(&ctx->opt, "node_timeout_ms", "50"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&ctx->opt, "connect_timeout_ms", "100"), REDLOCK_OK);
    *state = ctx;
    return 0;
}

static int teardown(void **state)
{
    rl_client_free(*state);
    return 0;
}

/* A ping with an open connection to node 0 and none to the others. */
static rl_op *ping_on_node0(rl_client *ctx, rl_conn **out)
{
    rl_op *op;
    assert_int_equal(rl_op_ping(&op, ctx, T0), REDLOCK_OK);
    rl_conn *c = rl_conn_new(ctx, 0);
    assert_non_null(c);
    rl_engine_connected(c, T0);
    rl_op_attach(op, 0, c, T0);
    *out = c;
    return op;
}

/* Gives back and frees what the op holds (no socket: nothing to close). */
static void end_op(rl_op *op, int64_t now)
{
    rl_conn *c;
    while ((c = rl_op_take_conn(op)) != NULL) {
        rl_engine_lost(c, REDLOCK_ENOQUORUM, "test over", now);
        rl_conn_free(c);
    }
    rl_op_free(op);
}

static rl_entry *last_entry(rl_conn *c)
{
    return rl_conn_entry(c, rl_conn_owed(c) - 1);
}

static void deadline_starts_when_the_last_byte_is_written(void **state)
{
    rl_client *ctx = *state;
    rl_conn *c;
    rl_op *op = ping_on_node0(ctx, &c);
    /* Behind the handshake (SCRIPT LOAD, INFO), nothing written yet: the
     * PING has no deadline, and 50 ms later its node has not failed. */
    rl_entry *ping = last_entry(c);
    assert_int_equal(ping->kind, RL_ENTRY_CMD);
    assert_int_equal(ping->deadline, 0);
    rl_op_step(op, T0 + 80);
    assert_false(rl_op_done(op));
    assert_int_equal(ping->deadline, 0);
    assert_int_equal(atomic_load(&ctx->nodes[0].timeouts), 0);

    /* All but the PING's last byte written: still none. */
    const char *bytes;
    size_t n = rl_conn_output(c, &bytes);
    assert_true(n > 1);
    rl_engine_wrote(c, n - 1, T0 + 90);
    assert_int_equal(ping->deadline, 0);
    assert_true(rl_conn_unwritten(c));

    /* Its last byte at T0 + 120: the deadline is 50 ms from then. */
    rl_engine_wrote(c, 1, T0 + 120);
    assert_int_equal(ping->deadline, T0 + 170);
    assert_int_equal(ping->sent_at, T0 + 120);
    assert_int_equal(rl_op_deadline(op, 0), T0 + 170);
    rl_op_step(op, T0 + 169);
    assert_int_equal(atomic_load(&ctx->nodes[0].timeouts), 0);
    rl_op_step(op, T0 + 171);
    assert_int_equal(atomic_load(&ctx->nodes[0].timeouts), 1);
    end_op(op, T0 + 200);
}

static void a_command_never_written_is_not_the_nodes_fault(void **state)
{
    rl_client *ctx = *state;
    rl_conn *c;
    rl_op *op = ping_on_node0(ctx, &c);
    uint64_t timeouts = atomic_load(&ctx->nodes[0].timeouts);
    /* The wait's bound (a connect and an answer: 150 ms) passes with the
     * bytes still unwritten: node 0 failed this ping, but not as slow. */
    assert_int_equal(rl_op_wake_at(op) <= T0 + 150, true);
    rl_op_step(op, T0 + 151);
    assert_int_equal(atomic_load(&ctx->nodes[0].timeouts), timeouts);
    assert_int_not_equal(atomic_load(&ctx->nodes[0].state), RL_NODE_SLOW);
    assert_int_equal(last_entry(c)->deadline, 0);
    end_op(op, T0 + 200);
}

static int busy_events;
static char busy_message[512];

static void hook(void *data, int level, const char *event, const char *message)
{
    (void)data;
    (void)level;
    if (strcmp(event, "node_busy") == 0) {
        busy_events++;
        snprintf(busy_message, sizeof busy_message, "%s", message);
    }
}

static void at_the_cap_an_operation_waits_for_a_connection(void **state)
{
    rl_client *ctx = *state;
    busy_events = 0;
    atomic_store(&ctx->log.fn, hook);
    atomic_store(&ctx->log.min, REDLOCK_LOG_DEBUG);
    assert_int_equal(rl_options_set(&ctx->opt, "pool_size", "1"), REDLOCK_OK);
    int cap = 1 + RL_CONN_SPARE;
    rl_conn *held[1 + RL_CONN_SPARE];
    for (int i = 0; i < cap; i++) {
        assert_non_null(held[i] = rl_conn_new(ctx, 1));
        rl_engine_connected(held[i], T0);   /* closed later: no connect failed */
    }
    assert_int_equal(rl_conn_count(ctx, 1), cap);

    rl_op *op;
    assert_int_equal(rl_op_ping(&op, ctx, T0), REDLOCK_OK);
    int64_t at;
    assert_true(rl_op_drive(op, T0, &at) & RL_DRIVE_CONNECT);
    /* Node 1 is at its cap: no connection is made, and the op asks again
     * in a millisecond rather than at once. */
    rl_conn *c0 = rl_op_connect(op, 0, T0);
    assert_non_null(c0);
    assert_null(rl_op_connect(op, 1, T0));
    assert_int_equal(rl_conn_count(ctx, 1), cap);
    /* The client says node 1 is busy, once, and its health will. */
    assert_int_equal(busy_events, 1);
    assert_non_null(strstr(busy_message, "node=127.0.0.1:2 conns=3: all 3 connections"));
    assert_true(atomic_load(&ctx->conns[1].busy_until) > T0);
    assert_int_equal(atomic_load(&ctx->conns[0].busy_until), 0);
    /* Nor is node 2 given one while node 1 waits: connections go in the
     * order of the nodes. */
    assert_int_equal(rl_op_next_wanted(op, 0), -1);
    assert_int_equal(rl_op_next_wanted(op, 2), -1);
    int what = rl_op_drive(op, T0, &at);
    assert_false(what & RL_DRIVE_CONNECT);
    assert_int_equal(at, T0 + 1);

    /* One comes back: the next drive asks for it again, and gets it. */
    rl_engine_lost(held[0], REDLOCK_ENOQUORUM, "test", T0);
    rl_conn_free(held[0]);
    assert_true(rl_op_drive(op, T0 + 1, &at) & RL_DRIVE_CONNECT);
    assert_int_equal(rl_op_next_wanted(op, 0), 1);
    rl_conn *c1 = rl_op_connect(op, 1, T0 + 1);
    assert_non_null(c1);
    assert_int_equal(busy_events, 1);
    assert_int_equal(rl_conn_count(ctx, 1), cap);
    assert_int_equal(rl_op_next_wanted(op, 0), 2);
    assert_non_null(rl_op_connect(op, 2, T0 + 1));
    end_op(op, T0 + 2);
    for (int i = 1; i < cap; i++) {
        rl_engine_lost(held[i], REDLOCK_ENOQUORUM, "test", T0);
        rl_conn_free(held[i]);
    }
    assert_int_equal(rl_conn_count(ctx, 1), 0);
}

static void waiting_for_a_connection_ends_at_its_bound(void **state)
{
    rl_client *ctx = *state;
    assert_int_equal(rl_options_set(&ctx->opt, "pool_size", "0"), REDLOCK_OK);
    rl_conn *held[RL_CONN_SPARE];
    for (int i = 0; i < RL_CONN_SPARE; i++)
        assert_non_null(held[i] = rl_conn_new(ctx, 1));
    rl_op *op;
    assert_int_equal(rl_op_ping(&op, ctx, T0), REDLOCK_OK);
    int64_t at;
    rl_op_drive(op, T0, &at);
    assert_non_null(rl_op_connect(op, 0, T0));
    assert_null(rl_op_connect(op, 1, T0));
    /* Asked again every millisecond, it gets none: after a connect and an
     * answer's time (150 ms) the node fails, and nothing more is opened. */
    int64_t now = T0;
    int asked = 0;
    while (!rl_op_done(op) && now < T0 + 1000) {
        now++;
        int what = rl_op_drive(op, now, &at);
        for (int n = rl_op_next_wanted(op, 0); (what & RL_DRIVE_CONNECT) && n >= 0;
             n = rl_op_next_wanted(op, (size_t)n + 1)) {
            if (n == 2) {
                /* Only once node 1 failed: until then it came first. */
                assert_true(now >= T0 + 150 && now <= T0 + 151);
                assert_non_null(rl_op_connect(op, 2, now));
                continue;
            }
            assert_int_equal(n, 1);
            assert_null(rl_op_connect(op, (size_t)n, now));
            asked++;
        }
        assert_int_equal(rl_conn_count(ctx, 1), RL_CONN_SPARE);
    }
    assert_true(asked > 100);
    assert_non_null(rl_op_conn(op, 2));
    /* Done when node 2's connect (never completed) timed out too. */
    assert_true(rl_op_done(op));
    assert_true(now >= T0 + 250 && now <= T0 + 252);
    end_op(op, now);
    for (int i = 0; i < RL_CONN_SPARE; i++) {
        rl_engine_lost(held[i], REDLOCK_ENOQUORUM, "test", now);
        rl_conn_free(held[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(deadline_starts_when_the_last_byte_is_written, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_command_never_written_is_not_the_nodes_fault, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(at_the_cap_an_operation_waits_for_a_connection, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(waiting_for_a_connection_ends_at_its_bound, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
