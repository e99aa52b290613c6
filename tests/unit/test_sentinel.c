/*
 * test_sentinel.c - Sentinel nodes in the engine, without Redis: their URIs,
 * the separator of a list of URIs, and a connection's way to the master
 * (asking a sentinel, ROLE, READONLY), fed with replies by hand.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client.h"
#include "conn_feed.h"
#include "conn.h"
#include "engine.h"
#include "node.h"
#include "options.h"
#include "uri.h"

#define GROUP "redis-sentinel://:pw@10.0.0.1,10.0.0.2:26380,[::1]:26381/2?sentinelMasterId=orders"

static void sentinel_uris_name_their_sentinels_and_master(void **state)
{
    (void)state;
    rl_node_addr a;
    assert_int_equal(rl_uri_parse(&a, GROUP), REDLOCK_OK);
    assert_int_equal(a.kind, RL_NODE_SENTINEL);
    assert_int_equal(a.n_sentinels, 3);
    assert_string_equal(a.sentinels[0].host, "10.0.0.1");
    assert_int_equal(a.sentinels[0].port, 26379);   /* the sentinels' default */
    assert_int_equal(a.sentinels[1].port, 26380);
    assert_string_equal(a.sentinels[2].host, "::1");
    assert_string_equal(a.master_name, "orders");
    assert_string_equal(a.password, "pw");
    assert_int_equal(a.db, 2);
    assert_string_equal(a.label, "orders@10.0.0.1:26379");
    rl_uri_free(&a);

    assert_int_equal(rl_uri_parse(&a, "rediss-sentinel://s1#orders"), REDLOCK_OK);
    assert_true(a.tls);
    assert_string_equal(a.master_name, "orders");
    rl_uri_free(&a);

    static const char *const bad[][2] = {
        { "redis-sentinel://s1", "no master name" },
        { "redis-sentinel://s1,?sentinelMasterId=m", "no host" },
        { "redis-sentinel://s1:0?sentinelMasterId=m", "port must be 1 to 65535" },
        { "redis-sentinel://s1?sentinelMasterId=m&x=1", "the only parameter" },
        { "redis-sentinel://s1?sentinelMasterId=m#m", "named twice" },
        { "redis-sentinel://s1/x?sentinelMasterId=m", "db must be a number" },
        { "redis-sentinel://s1#a,b", "bad master name" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(rl_uri_parse(&a, bad[i][0]), REDLOCK_EINVAL);
        if (!strstr(redlock_errmsg(), bad[i][1]))
            fail_msg("%s: '%s' is not in '%s'", bad[i][0], bad[i][1], redlock_errmsg());
    }
}

static void a_comma_starts_a_node_only_before_a_scheme(void **state)
{
    (void)state;
    const char *list = "redis-sentinel://s1,s2:26380?sentinelMasterId=a, redis://m1:6379,"
                       "rediss-sentinel://s3,s4#b";
    size_t n = redlock_uri_list_next(list);
    assert_int_equal(n, strlen("redis-sentinel://s1,s2:26380?sentinelMasterId=a"));
    list += n + 1;
    n = redlock_uri_list_next(list);
    assert_int_equal(n, strlen(" redis://m1:6379"));
    list += n + 1;
    assert_int_equal(redlock_uri_list_next(list), strlen(list));
    assert_int_equal(redlock_uri_list_next(""), 0);
    assert_int_equal(redlock_uri_list_next(NULL), 0);
}

static void a_connection_asks_a_sentinel_then_goes_to_the_master(void **state)
{
    (void)state;
    const char *uris[1] = { GROUP };
    rl_client *ctx = NULL;
    assert_int_equal(rl_client_new(&ctx, uris, 1), REDLOCK_OK);
    rl_node *node = &ctx->nodes[0];

    /* The master is not known: the first connection goes to a sentinel and
     * asks, and nothing more; the master's password is not sent there. */
    rl_conn *c = rl_conn_new(ctx, 0);
    assert_true(c->to.sentinel);
    assert_string_equal(c->to.host, "10.0.0.1");
    rl_engine_connected(c, 10);
    size_t len;
    const char *bytes = out(c, &len);
    assert_non_null(memmem(bytes, len, "GET-MASTER-ADDR-BY-NAME", 23));
    assert_null(memmem(bytes, len, "AUTH", 4));
    rl_conn_wrote(c, len, 12);
    assert_int_equal(rl_conn_output(c, &bytes), 0);
    answer(c, "*4\r\n$4\r\nname\r\n$6\r\norders\r\n$12\r\nconfig-epoch\r\n$1\r\n3\r\n", 11);
    answer(c, "*2\r\n$8\r\n10.0.1.7\r\n$4\r\n6390\r\n", 11);
    assert_int_equal(c->state, RL_CONN_BROKEN);
    assert_true(c->redirected);
    assert_int_equal(rl_node_epoch(node), 3);
    char server[96];
    rl_node_server(node, server, sizeof server);
    assert_string_equal(server, "10.0.1.7:6390");
    rl_conn_free(c);

    /* Now to the master: AUTH, SELECT and ROLE before anything else. */
    c = rl_conn_new(ctx, 0);
    assert_false(c->to.sentinel);
    assert_string_equal(c->to.host, "10.0.1.7");
    assert_int_equal(c->to.port, 6390);
    rl_engine_connected(c, 20);
    bytes = out(c, &len);
    assert_non_null(memmem(bytes, len, "ROLE", 4));
    assert_null(memmem(bytes, len, "SCRIPT", 6));   /* held back until ROLE says master */
    rl_conn_wrote(c, len, 12);
    answer(c, "+OK\r\n+OK\r\n*3\r\n$5\r\nslave\r\n$8\r\n10.0.1.8\r\n:6390\r\n", 21);
    /* A replica: the node asks its sentinels again. */
    assert_int_equal(c->state, RL_CONN_BROKEN);
    assert_true(c->redirected);
    rl_node_server(node, server, sizeof server);
    assert_string_equal(server, "");
    assert_false(rl_node_current(node, c->to.gen));
    rl_conn_free(c);
    c = rl_conn_new(ctx, 0);
    assert_true(c->to.sentinel);
    rl_engine_lost(c, REDLOCK_ENOQUORUM, "cannot connect: refused", 30);
    rl_conn_free(c);
    /* That sentinel down, the next one is asked. */
    c = rl_conn_new(ctx, 0);
    assert_true(c->to.sentinel);
    assert_int_equal(c->to.port, 26380);
    rl_conn_free(c);
    rl_client_free(ctx);
}

/* The guard on a Sentinel group's master lasts max_lease_ms and
 * sentinel_poll_ms more: a client that asked the sentinels just before a
 * failover may take a lock on the demoted master until it asks again. */
static void a_masters_guard_covers_the_sentinels_poll(void **state)
{
    (void)state;
    const char *uris[1] = { GROUP };
    rl_client *ctx = NULL;
    assert_int_equal(rl_client_new(&ctx, uris, 1), REDLOCK_OK);
    assert_int_equal(rl_options_set(&ctx->opt, "max_lease_ms", "3000"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&ctx->opt, "sentinel_poll_ms", "1500"), REDLOCK_OK);
    assert_int_equal(rl_node_guard_ms(&ctx->nodes[0]), 4500);
    rl_conn *c = rl_conn_new(ctx, 0);
    rl_engine_connected(c, 10);
    size_t len;
    out(c, &len);
    rl_conn_wrote(c, len, 10);
    answer(c, "*4\r\n$4\r\nname\r\n$6\r\norders\r\n$12\r\nconfig-epoch\r\n$1\r\n0\r\n", 11);
    answer(c, "*2\r\n$8\r\n10.0.1.7\r\n$4\r\n6390\r\n", 11);
    rl_conn_free(c);
    c = rl_conn_new(ctx, 0);
    rl_engine_connected(c, 20);
    out(c, &len);
    rl_conn_wrote(c, len, 20);
    answer(c, "+OK\r\n+OK\r\n*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n", 21);
    const char *bytes = out(c, &len);
    assert_non_null(memmem(bytes, len, "redlock:guard", 13));
    assert_non_null(memmem(bytes, len, "\r\n$4\r\n4500\r\n", 12));
    rl_engine_lost(c, REDLOCK_ESYSTEM, "closed", 30);
    rl_conn_free(c);
    rl_client_free(ctx);

    /* A standalone master's is max_lease_ms. */
    const char *plain[1] = { "redis://10.0.0.9" };
    assert_int_equal(rl_client_new(&ctx, plain, 1), REDLOCK_OK);
    assert_int_equal(rl_options_set(&ctx->opt, "max_lease_ms", "3000"), REDLOCK_OK);
    assert_int_equal(rl_node_guard_ms(&ctx->nodes[0]), 3000);
    rl_client_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sentinel_uris_name_their_sentinels_and_master),
        cmocka_unit_test(a_comma_starts_a_node_only_before_a_scheme),
        cmocka_unit_test(a_connection_asks_a_sentinel_then_goes_to_the_master),
        cmocka_unit_test(a_masters_guard_covers_the_sentinels_poll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
