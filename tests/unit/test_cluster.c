/*
 * test_cluster.c - Cluster nodes in the engine, without Redis: their URIs,
 * a connection's way to the master of a slot (a seed's CLUSTER SLOTS, the
 * guard's key on each master, -MOVED and -ASK), a multi-lock across slots
 * taken one master's part at a time, and what a Cluster node refuses of an
 * operation, fed with replies by hand.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client.h"
#include "conn_feed.h"
#include "conn.h"
#include "engine.h"
#include "node.h"
#include "op.h"
#include "options.h"
#include "owed.h"
#include "scripts.h"
#include "slots.h"
#include "uri.h"

#define CLUSTER "redis-cluster://:pw@10.0.0.1:7000,10.0.0.2"

/* Two masters: 10.0.0.1:7000 serves slots 0-8191, 10.0.0.2:7001 the rest. */
static const char slots_reply[] =
    "*2\r\n"
    "*3\r\n:0\r\n:8191\r\n*3\r\n$8\r\n10.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
    "*3\r\n:8192\r\n:16383\r\n*3\r\n$8\r\n10.0.0.2\r\n:7001\r\n$3\r\nid2\r\n";

static void cluster_uris_name_their_seeds(void **state)
{
    (void)state;
    rl_node_addr a;
    assert_int_equal(rl_uri_parse(&a, CLUSTER), REDLOCK_OK);
    assert_int_equal(a.kind, RL_NODE_CLUSTER);
    assert_int_equal(a.n_sentinels, 2);
    assert_int_equal(a.sentinels[0].port, 7000);
    assert_int_equal(a.sentinels[1].port, 6379);   /* the default */
    assert_string_equal(a.password, "pw");
    assert_string_equal(a.label, "cluster@10.0.0.1:7000");
    rl_uri_free(&a);
    assert_int_equal(rl_uri_parse(&a, "rediss-cluster://h/0"), REDLOCK_OK);
    assert_true(a.tls);
    rl_uri_free(&a);
    static const struct { const char *uri, *says; } bad[] = {
        { "redis-cluster://h/1", "only database 0" },
        { "redis-cluster://h?x=1", "takes no parameters" },
        { "redis-cluster://h,", "no host" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rl_uri_parse(&a, bad[i].uri), REDLOCK_EINVAL);
        assert_non_null(strstr(redlock_errmsg(), bad[i].says));
    }
}

/* A name whose key hashes into [from, to]. */
static void name_in(char *buf, int from, int to)
{
    for (int i = 0;; i++) {
        snprintf(buf, 32, "k%d", i);
        int slot = rl_key_slot(buf, strlen(buf));
        if (slot >= from && slot <= to)
            return;
    }
}

static void a_connection_learns_the_map_then_goes_to_each_slots_master(void **state)
{
    (void)state;
    const char *uris[1] = { CLUSTER };
    rl_client *ctx = NULL;
    assert_int_equal(rl_client_new(&ctx, uris, 1), REDLOCK_OK);
    rl_node *node = &ctx->nodes[0];

    /* No map yet: a seed is asked, with the node's credentials, for the
     * slot map and nothing else. */
    rl_conn *c = rl_conn_new(ctx, 0);
    assert_true(c->to.sentinel);
    assert_string_equal(c->to.host, "10.0.0.1");
    rl_engine_connected(c, 10);
    size_t len;
    const char *bytes = out(c, &len);
    assert_non_null(memmem(bytes, len, "AUTH", 4));
    assert_non_null(memmem(bytes, len, "SLOTS", 5));
    assert_null(memmem(bytes, len, "SCRIPT", 6));
    rl_conn_wrote(c, len, 11);
    answer(c, "+OK\r\n", 12);
    answer(c, slots_reply, 13);
    assert_int_equal(c->state, RL_CONN_BROKEN);
    assert_true(c->redirected);
    rl_conn_free(c);
    char server[96];
    rl_node_server(node, server, sizeof server);
    assert_string_equal(server, "10.0.0.1:7000+10.0.0.2:7001");

    /* Each slot's master; the guard's key on each is one of its slots. */
    rl_target t;
    rl_node_target_slot(node, 100, -1, &t);
    assert_string_equal(t.host, "10.0.0.1");
    assert_false(t.sentinel);
    rl_node_target_slot(node, 9000, -1, &t);
    assert_string_equal(t.host, "10.0.0.2");
    assert_int_equal(t.port, 7001);
    char tag[16];
    assert_true(rl_node_server_tag(node, t.server, tag));
    assert_true(rl_key_slot(tag, strlen(tag)) >= 8192);

    /* A MOVED: the map learns it, the connection ends redirected. */
    bool full;
    c = rl_conn_new_capped(ctx, 0, 10, &t, &full);
    rl_engine_connected(c, 20);
    bytes = out(c, &len);
    rl_conn_wrote(c, len, 21);
    answer(c, "+OK\r\n", 22);   /* AUTH: the rest goes */
    bytes = out(c, &len);
    assert_non_null(memmem(bytes, len, "redlock:guard{", 14));
    rl_conn_wrote(c, len, 21);
    char key[32];
    name_in(key, 8192, 16383);
    int slot = rl_key_slot(key, strlen(key));
    rl_keys *keys = rl_keys_new(0);
    rl_cmd *cmd = rl_cmd_new(RL_CMD_INSPECT, keys, "", 0);
    rl_keys_unref(keys);
    assert_int_equal(rl_conn_send(c, "x", 1, rl_cmd_ref(cmd), RL_FORM_EVAL, 1), REDLOCK_OK);
    char moved[64];
    snprintf(moved, sizeof moved, "-MOVED %d 10.0.0.1:7000\r\n", slot);
    /* Replies of the handshake (the library's probe: not there; SCRIPT
     * LOADs, INFO, the guard both ways, as no probe had answered), then it. */
    answer(c, "-ERR Function not found\r\n", 22);
    for (int i = 0; i < RL_N_SCRIPTS; i++)
        answer(c, "$1\r\nx\r\n", 22);
    answer(c, "$10\r\nrun_id:abc\r\n:0\r\n-ERR Function not found\r\n", 22);
    answer(c, moved, 23);
    assert_int_equal(c->state, RL_CONN_BROKEN);
    assert_true(c->redirected);
    assert_int_equal(c->ask_server, -1);
    rl_conn_free(c);
    rl_node_target_slot(node, slot, -1, &t);
    assert_string_equal(t.host, "10.0.0.1");
    /* A MOVED to a master the map never named: the map is read again. */
    rl_node_slot_moved(node, slot, "10.0.0.3", 7002);
    rl_node_target_slot(node, slot, -1, &t);
    assert_true(t.sentinel);
    rl_cmd_unref(cmd);
    rl_client_free(ctx);
}

static int counting_bytes(void *data, void *buf, size_t n)
{
    unsigned char *p = buf, *next = data;
    for (size_t i = 0; i < n; i++)
        p[i] = (*next)++;
    return 0;
}

/* A client of the Cluster of slots_reply (and `more`, another node),
 * whose slot map is known already (and, but for census_client, every
 * master's guard read: rl_node_census), with tokens counted from `seed`. */
static rl_client *census_client(const char *more, unsigned char *seed)
{
    const char *uris[2] = { CLUSTER, more };
    rl_client *ctx = NULL;
    assert_int_equal(rl_client_new(&ctx, uris, more ? 2 : 1), REDLOCK_OK);
    ctx->random = counting_bytes;
    ctx->random_data = seed;
    rl_conn *c = rl_conn_new(ctx, 0);
    rl_engine_connected(c, 1);
    size_t len;
    out(c, &len);
    rl_conn_wrote(c, len, 1);
    answer(c, "+OK\r\n", 1);
    answer(c, slots_reply, 1);
    rl_conn_free(c);
    return ctx;
}

static rl_client *mapped_client(const char *more, unsigned char *seed)
{
    rl_client *ctx = census_client(more, seed);
    for (int k; (k = rl_node_census(&ctx->nodes[0])) >= 0;)
        rl_node_guard_read(&ctx->nodes[0], k);
    return ctx;
}

/* Answers a new master connection's handshake (a fresh server: the guard
 * says 0), and writes what it holds; what it wrote is in sent. */
static void handshake(rl_conn *c, int64_t now, char *sent, size_t room)
{
    size_t len, used = 0;
    sent[0] = '\0';
    rl_engine_connected(c, now);
    for (;;) {
        const char *bytes = out(c, &len);
        used += (size_t)snprintf(sent + used, room - used, "%.*s", (int)len, bytes);
        assert_true(used < room);
        rl_conn_wrote(c, len, now);
        if (rl_conn_owed(c) == 0 || rl_conn_entry(c, 0)->kind == RL_ENTRY_CMD)
            return;
        switch (rl_conn_entry(c, 0)->kind) {
        case RL_ENTRY_SCRIPT:
            answer(c, "$1\r\nx\r\n", now);
            break;
        case RL_ENTRY_INFO:
            answer(c, "$10\r\nrun_id:abc\r\n", now);
            break;
        case RL_ENTRY_GUARD:
            answer(c, rl_conn_entry(c, 0)->form == RL_FORM_FCALL
                      ? "-ERR Function not found\r\n" : ":0\r\n", now);
            break;
        case RL_ENTRY_PROBE:
            answer(c, "-ERR Function not found\r\n", now);
            break;
        default:
            answer(c, "+OK\r\n", now);
        }
    }
}

/* The connection op asks for next, made (not yet answered). */
static rl_conn *next_conn(rl_op *op, int64_t now)
{
    int64_t at;
    assert_true(rl_op_drive(op, now, &at) & RL_DRIVE_CONNECT);
    int node = rl_op_next_wanted(op, 0);
    assert_true(node >= 0);
    rl_conn *c = rl_op_connect(op, (size_t)node, now);
    assert_non_null(c);
    return c;
}

/* Gives op a new connection to the node it wants one for (a Cluster
 * node: the master of its current part's slot), ready, and returns it;
 * what it wrote is in sent. */
static rl_conn *give(rl_op *op, int64_t now, char *sent, size_t room)
{
    rl_conn *c = next_conn(op, now);
    handshake(c, now, sent, room);
    return c;
}

/* Closes a connection taken back from an operation, as a driver does. */
static void close_conn(rl_conn *c)
{
    rl_engine_lost(c, REDLOCK_ESYSTEM, "closed", 1000);
    rl_conn_free(c);
}

/* Takes back a finished operation's connections, closes them, frees it. */
static void end_op(rl_op *op)
{
    rl_conn *back;
    while ((back = rl_op_take_conn(op)) != NULL)
        close_conn(back);
    rl_op_free(op);
}

/* Whether a command in sent names key (a whole RESP argument). */
static bool has_key(const char *sent, const char *key)
{
    char arg[48];
    snprintf(arg, sizeof arg, "\r\n%s\r\n", key);
    return strstr(sent, arg) != NULL;
}

/* A multi-lock whose names hash to both masters' slots, on one Cluster
 * node: the node takes the first master's part, then the second's on a
 * connection to that master, and votes yes for both. */
static void a_multi_lock_across_slots_takes_each_masters_part_in_turn(void **state)
{
    (void)state;
    unsigned char seed = 0;
    rl_client *ctx = mapped_client(NULL, &seed);
    char a[32], b[32], c2[32];
    name_in(a, 9000, 9100);   /* the second master's */
    name_in(b, 0, 100);       /* the first master's */
    name_in(c2, 9200, 16383);
    const char *names[3] = { a, b, c2 };
    rl_op *op = NULL;
    assert_int_equal(rl_op_lock(&op, ctx, names, 3, 10000, 0, 100), REDLOCK_OK);
    char sent[16384];
    rl_conn *first = give(op, 100, sent, sizeof sent);
    assert_string_equal(first->to.host, "10.0.0.1");
    /* Its part is the first master's name alone. */
    assert_true(has_key(sent, b));
    assert_false(has_key(sent, a));
    assert_false(has_key(sent, c2));
    answer(first, ":1\r\n", 101);   /* the acquire script: taken */
    assert_false(rl_op_done(op));
    rl_conn *second = give(op, 102, sent, sizeof sent);
    assert_string_equal(second->to.host, "10.0.0.2");
    assert_true(has_key(sent, a));
    assert_false(has_key(sent, c2));
    assert_false(has_key(sent, b));
    answer(second, ":1\r\n", 103);
    /* The third name's slot is another part, on the same master: the same
     * connection takes it next. */
    size_t len;
    const char *bytes = out(second, &len);
    snprintf(sent, sizeof sent, "%.*s", (int)len, bytes);
    assert_true(has_key(sent, c2));
    rl_conn_wrote(second, len, 103);
    answer(second, ":1\r\n", 103);
    int64_t at;
    assert_true(rl_op_drive(op, 103, &at) & RL_DRIVE_DONE);
    assert_int_equal(rl_op_status(op), REDLOCK_OK);
    assert_false(rl_owed_any(ctx, 0));
    redlock_handle *h = rl_op_take_handle(op);
    end_op(op);

    /* Its unlock releases each part on its master. */
    assert_int_equal(rl_op_unlock(&op, h, 200), REDLOCK_OK);
    rl_conn *one = give(op, 200, sent, sizeof sent);
    assert_true(has_key(sent, b));
    answer(one, ":1\r\n", 201);
    rl_conn *two = give(op, 202, sent, sizeof sent);
    assert_true(has_key(sent, a));
    answer(two, ":1\r\n", 203);
    bytes = out(two, &len);
    snprintf(sent, sizeof sent, "%.*s", (int)len, bytes);
    assert_true(has_key(sent, c2));
    rl_conn_wrote(two, len, 203);
    answer(two, ":1\r\n", 203);
    assert_true(rl_op_drive(op, 203, &at) & RL_DRIVE_DONE);
    assert_int_equal(rl_op_status(op), REDLOCK_OK);
    end_op(op);
    rl_handle_free(h);
    rl_client_free(ctx);
}

/* A release of several keys of one slot tells release.lua that it runs on
 * a Cluster node ("c" after the token): a PUBLISH there reaches every
 * node's subscribers, so every key's channel gets its message, not only
 * those this master counts subscribers for. One key's release has no such
 * argument (it always publishes). */
static void a_release_of_several_keys_on_a_cluster_node_publishes_for_all(void **state)
{
    (void)state;
    unsigned char seed = 0;
    rl_client *ctx = mapped_client(NULL, &seed);
    const char *names[2] = { "{t}a", "{t}b" };
    for (size_t n = 1; n <= 2; n++) {
        rl_op *op = NULL;
        assert_int_equal(rl_op_lock(&op, ctx, names, n, 10000, 0, 100), REDLOCK_OK);
        char sent[16384];
        rl_conn *c = give(op, 100, sent, sizeof sent);
        /* SET NX GET's nil (it was free), or the acquire script's 1. */
        answer(c, strstr(sent, "$3\r\nSET\r\n") ? "$-1\r\n" : ":1\r\n", 101);
        int64_t at;
        assert_true(rl_op_drive(op, 101, &at) & RL_DRIVE_DONE);
        assert_int_equal(rl_op_status(op), REDLOCK_OK);
        redlock_handle *h = rl_op_take_handle(op);
        end_op(op);

        assert_int_equal(rl_op_unlock(&op, h, 200), REDLOCK_OK);
        c = give(op, 200, sent, sizeof sent);
        char tail[64];
        snprintf(tail, sizeof tail, "\r\n%s\r\n$1\r\nc\r\n", h->token);
        if (n == 1)
            assert_null(strstr(sent, tail));
        else
            assert_non_null(strstr(sent, tail));
        answer(c, n == 1 ? ":1\r\n" : ":2\r\n", 201);
        assert_true(rl_op_drive(op, 201, &at) & RL_DRIVE_DONE);
        assert_int_equal(rl_op_status(op), REDLOCK_OK);
        end_op(op);
        rl_handle_free(h);
    }
    rl_client_free(ctx);
}

/* The second master's part is held by another: the node votes no, the
 * first part it took is released there (owed), and the lock is refused. */
static void a_part_refused_releases_the_parts_taken(void **state)
{
    (void)state;
    unsigned char seed = 0;
    rl_client *ctx = mapped_client(NULL, &seed);
    char a[32], b[32];
    name_in(a, 9000, 9100);
    name_in(b, 0, 100);
    const char *names[2] = { a, b };
    rl_op *op = NULL;
    assert_int_equal(rl_op_lock(&op, ctx, names, 2, 10000, 0, 100), REDLOCK_OK);
    char sent[16384];
    rl_conn *first = give(op, 100, sent, sizeof sent);
    answer(first, ":1\r\n", 101);
    rl_conn *second = give(op, 102, sent, sizeof sent);
    answer(second, ":0\r\n", 103);   /* held by another token */
    int64_t at;
    assert_true(rl_op_drive(op, 103, &at) & RL_DRIVE_DONE);
    assert_int_equal(rl_op_status(op), REDLOCK_ELOCKED);
    /* The first part's release is owed to the node, on its master. */
    assert_true(rl_owed_any(ctx, 0));
    assert_int_equal(rl_owed_slot(ctx, 0), rl_key_slot(b, strlen(b)));
    end_op(op);
    rl_client_free(ctx);
}

/* A census connection of op's: its handshake (AUTH, the library's probe,
 * INFO, the guard, and no command behind them) answered, the guard saying `guard`; it ends
 * redirected. Returns the master it went to. */
static const char *census(rl_op *op, int64_t now, const char *guard)
{
    rl_conn *c = next_conn(op, now);
    assert_true(c->to.census);
    static char host[64];
    snprintf(host, sizeof host, "%s", c->to.host);
    rl_engine_connected(c, now);
    size_t len;
    const char *bytes = out(c, &len);
    assert_non_null(memmem(bytes, len, "INFO", 4));
    assert_non_null(memmem(bytes, len, "EVAL", 4));
    assert_null(memmem(bytes, len, "SCRIPT", 6));
    assert_null(memmem(bytes, len, "$3\r\nSET\r\n", 9));   /* the command waits behind the gate */
    rl_conn_wrote(c, len, now);
    answer(c, "+OK\r\n", now);
    answer(c, "-ERR Function not found\r\n", now);   /* the library's probe */
    answer(c, "$10\r\nrun_id:abc\r\n", now);
    bytes = out(c, &len);
    assert_null(memmem(bytes, len, "$3\r\nSET\r\n", 9));   /* still not */
    answer(c, guard, now);
    assert_int_equal(c->state, RL_CONN_BROKEN);
    assert_true(c->redirected);
    assert_null(c->op);   /* the operation let it go, and wants another */
    close_conn(c);
    return host;
}

/* A client that never met a Cluster's masters reads every master's guard
 * before a new lock's vote counts, since a master held back holds back the
 * whole node (a slot may migrate off it): one connection to each master,
 * which asks for its guard alone and ends; then the lock's own. A master
 * held back refuses locks of every master's slots. */
static void a_new_lock_reads_every_masters_guard_first(void **state)
{
    (void)state;
    unsigned char seed = 0;
    rl_client *ctx = census_client(NULL, &seed);
    rl_node *node = &ctx->nodes[0];
    assert_true(rl_node_census(node) >= 0);
    char a[32];
    name_in(a, 0, 100);   /* the first master's */
    const char *names[1] = { a };
    rl_op *op = NULL;
    assert_int_equal(rl_op_lock(&op, ctx, names, 1, 10000, 0, 100), REDLOCK_OK);
    const char *first = census(op, 100, ":0\r\n");
    const char *second = census(op, 101, ":0\r\n");
    (void)first;
    assert_string_equal(second, "10.0.0.2");
    assert_int_equal(rl_node_census(node), -1);
    char sent[16384];
    rl_conn *c = give(op, 102, sent, sizeof sent);
    assert_false(c->to.census);
    assert_string_equal(c->to.host, "10.0.0.1");
    assert_true(has_key(sent, a));
    answer(c, strstr(sent, "$3\r\nSET\r\n") ? "$-1\r\n" : ":1\r\n", 103);   /* it was free */
    int64_t at;
    assert_true(rl_op_drive(op, 103, &at) & RL_DRIVE_DONE);
    assert_int_equal(rl_op_status(op), REDLOCK_OK);
    redlock_handle *h = rl_op_take_handle(op);
    end_op(op);
    rl_handle_free(h);
    rl_client_free(ctx);

    /* The second master was promoted: its guard holds back the whole node,
     * and the first master's slots with it. */
    seed = 0;
    ctx = census_client(NULL, &seed);
    assert_int_equal(rl_op_lock(&op, ctx, names, 1, 10000, 0, 200), REDLOCK_OK);
    census(op, 200, ":0\r\n");
    census(op, 201, ":5000\r\n");
    c = give(op, 202, sent, sizeof sent);
    answer(c, strstr(sent, "$3\r\nSET\r\n") ? "$-1\r\n" : ":1\r\n", 203);
    assert_true(rl_op_drive(op, 203, &at) & RL_DRIVE_DONE);
    assert_int_equal(rl_op_status(op), REDLOCK_ENOQUORUM);
    assert_non_null(strstr(rl_op_message(op), "restart_guard"));
    end_op(op);
    rl_client_free(ctx);
}

static void a_cluster_node_refuses_names_in_two_slots_with_fencing(void **state)
{
    (void)state;
    unsigned char seed = 0;
    rl_client *ctx = mapped_client("redis://10.0.0.9", &seed);
    char a[32], b[32];
    name_in(a, 0, 100);
    name_in(b, 9000, 9100);
    const char *names[2] = { a, b };
    rl_op *op = NULL;
    assert_int_equal(rl_op_lock(&op, ctx, names, 2, 1000, 0, 0), REDLOCK_OK);
    rl_op_free(op);
    const char *tagged[2] = { "{order}:a", "{order}:b" };
    assert_int_equal(rl_options_set(&ctx->opt, "fencing", "1"), REDLOCK_OK);
    assert_int_equal(rl_op_lock(&op, ctx, names, 2, 1000, 0, 0), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "hash tag"));
    assert_int_equal(rl_op_lock(&op, ctx, tagged, 2, 1000, 0, 0), REDLOCK_OK);
    rl_op_free(op);
    assert_int_equal(rl_op_lock(&op, ctx, names, 1, 1000, 0, 0), REDLOCK_OK);
    rl_op_free(op);
    const char *odd[1] = { "a}b{c" };
    assert_int_equal(rl_op_lock(&op, ctx, odd, 1, 1000, 0, 0), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "fencing"));
    assert_int_equal(rl_op_lock(&op, ctx, tagged, 1, 1000, 0, 0), REDLOCK_OK);
    rl_op_free(op);
    rl_client_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cluster_uris_name_their_seeds),
        cmocka_unit_test(a_connection_learns_the_map_then_goes_to_each_slots_master),
        cmocka_unit_test(a_multi_lock_across_slots_takes_each_masters_part_in_turn),
        cmocka_unit_test(a_part_refused_releases_the_parts_taken),
        cmocka_unit_test(a_release_of_several_keys_on_a_cluster_node_publishes_for_all),
        cmocka_unit_test(a_new_lock_reads_every_masters_guard_first),
        cmocka_unit_test(a_cluster_node_refuses_names_in_two_slots_with_fencing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
