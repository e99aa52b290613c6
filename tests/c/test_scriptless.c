/*
 * test_scriptless.c - plain locks on nodes that run no scripts
 * (core/engine/plain.h): Valkey 9.1 with its Lua engine unloaded
 * (REDIS_NO_SCRIPTING=lua) or a server whose ACL refuses @scripting
 * (REDIS_NO_SCRIPTING=acl, the default on other servers). Plain locks are
 * taken, extended, fenced, kept and released, and the restart guard read,
 * with no script run (INFO commandstats); what needs a script is refused at
 * once with REDLOCK_EUNSUPPORTED.
 */
#include "helpers.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 3
#define CYCLES 20

static int group_setup(void **state)
{
    const char *server = getenv("REDIS_SERVER");
    if (!getenv("REDIS_NO_SCRIPTING"))
        setenv("REDIS_NO_SCRIPTING", server && strstr(server, "valkey") ? "lua" : "acl", 1);
    *state = nodes_start(NODES, NULL);
    return *state != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}


static long long calls(nodes *ns, const char *command)
{
    long long n = 0;
    for (size_t i = 0; i < NODES; i++)
        n += node_calls(ns, i, command);
    return n;
}

/* Scripts the nodes ran or tried (a refusal by the ACL is no call). */
static long long scripts(nodes *ns)
{
    return calls(ns, "eval") + calls(ns, "evalsha") + calls(ns, "fcall");
}

/* The commands counted, all nodes together, once the counts stay still
 * (the nodes past the quorum answer after the call returned). */
static const char *const counted[] = { "set", "get", "watch", "multi", "exec", "pexpire", "del",
                                       "unwatch", "delifeq", "publish", "incr", "mget" };
#define N_COUNTED (sizeof counted / sizeof counted[0])

static void settle(nodes *ns, long long out[N_COUNTED])
{
    long long was = -1;
    for (int still = 0, tries = 0; still < 5 && tries < 300; tries++) {
        long long sum = 0;
        for (size_t k = 0; k < N_COUNTED; k++)
            sum += out[k] = calls(ns, counted[k]);
        still = sum == was ? still + 1 : 0;
        was = sum;
        sleep_ms(10);
    }
}


/* A client whose first cycle found the nodes without scripts. */
static redlock_ctx *warm_ctx(nodes *ns, const char *const *options)
{
    redlock_ctx *ctx = ctx_for(ns, options);
    lock_extend_unlock(ctx, "warm");
    return ctx;
}

/* 20 lock/extend/unlock cycles: each works, the keys are gone after, no
 * script ran, and the health says scripting=no. */
static void plain_cycles_run_no_script(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = warm_ctx(ns, NULL);   /* the first commands find out (a script refused) */
    int answered = 0;
    assert_rc(redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    long long before[N_COUNTED], after[N_COUNTED];
    settle(ns, before);
    long long ran = scripts(ns), script_cmds = calls(ns, "script");
    assert_on_every_node(ns, "warm", NULL);
    long long t0 = now_ms();
    for (int i = 0; i < CYCLES; i++)
        lock_extend_unlock(ctx, "plain-cycle");
    long long took = now_ms() - t0;
    assert_rc(redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    settle(ns, after);
    assert_int_equal(scripts(ns), ran);
    assert_int_equal(calls(ns, "script"), script_cmds);
    assert_on_every_node(ns, "plain-cycle", NULL);
    printf("# per cycle on %d nodes (%lld ms a cycle):", NODES, took / CYCLES);
    for (size_t k = 0; k < N_COUNTED; k++)
        if (after[k] > before[k])
            printf(" %s %.1f", counted[k], (double)(after[k] - before[k]) / CYCLES / NODES);
    printf(" (a node)\n");
    /* Each cycle took, extended and released on every node. */
    assert_true(after[0] - before[0] >= (long long)CYCLES * NODES);   /* set */
    for (size_t i = 0; i < NODES; i++) {
        char value[32];
        health_value(ctx, NODES, i, "scripting", value, sizeof value);
        assert_string_equal(value, "no");
    }
    redlock_ctx_free(ctx);
}

/* A lock taken over by another client is neither extended nor released:
 * the answers are the scripts' (not ours: no). */
static void votes_match_the_scripts(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = warm_ctx(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "votes", 10000, 0), REDLOCK_OK);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "SET votes someone-else PX 60000"), 0);
    assert_rc(redlock_extend(h, 20000), REDLOCK_ENOTHELD);
    assert_rc(redlock_unlock(h), REDLOCK_ENOTHELD);
    assert_on_every_node(ns, "votes", "someone-else");
    redlock_handle_free(h);
    /* A key of another type is the scripts' error, not a "no". */
    assert_rc(redlock_lock(&h, ctx, "votes-type", 10000, 0), REDLOCK_OK);
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(nodes_exec(ns, i, "DEL votes-type"), 0);
        assert_int_equal(nodes_exec(ns, i, "LPUSH votes-type x"), 0);
    }
    assert_fails(redlock_extend(h, 20000), REDLOCK_EWRONGTYPE);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* The counter of key on node i (0 when there is none). */
static long long counter_on(nodes *ns, size_t i, const char *key)
{
    char name[128];
    size_t len = strlen(key);
    memcpy(name, key, len);
    memcpy(name + len, "\0fence", 6);
    redisReply *r = nodes_cmd(ns, i, "GET %b", name, len + 6);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
}

/* Fences increase from holder to holder; counters that differ between the
 * nodes are written back (the fence's transaction) until a quorum counted
 * the fence. */
static void fences_increase_and_are_written_back(void **state)
{
    nodes *ns = *state;
    const char *options[] = { "fencing", "1", NULL };
    redlock_ctx *ctx = warm_ctx(ns, options);
    /* Every quorum of two sees two counts: the larger is written back. */
    assert_int_equal(nodes_exec(ns, 0, "SET %b 100", "fenced\0fence", (size_t)12), 0);
    assert_int_equal(nodes_exec(ns, 1, "SET %b 50", "fenced\0fence", (size_t)12), 0);
    long long last = 0;
    for (int k = 0; k < 5; k++) {
        redlock_handle *h = NULL;
        assert_rc(redlock_lock(&h, ctx, "fenced", 10000, 2000), REDLOCK_OK);
        int64_t fence = -1;
        assert_rc(redlock_handle_fence(h, 0, &fence), REDLOCK_OK);
        assert_true(fence > last);
        assert_true(fence > 50);
        size_t at_least = 0;
        for (size_t i = 0; i < NODES; i++)
            at_least += counter_on(ns, i, "fenced") >= fence;
        assert_true(at_least >= 2);
        last = fence;
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
}

static void on_lost(void *data, redlock_handle *h, int status, const char *message)
{
    (void)h;
    (void)status;
    (void)message;
    *(int *)data = 1;
}

/* A kept lock is renewed (by its own extend on each node) past its lease. */
static void kept_lock_is_renewed(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = warm_ctx(ns, NULL);
    redlock_handle *h = NULL, *other = NULL;
    assert_rc(redlock_lock(&h, ctx, "kept", 600, 0), REDLOCK_OK);
    int lost = 0;
    assert_rc(redlock_handle_watch(h, on_lost, &lost), REDLOCK_OK);
    sleep_ms(1800);
    assert_int_equal(lost, 0);
    assert_int_equal(redlock_handle_lost(h), 0);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_on_every_node(ns, "kept", redlock_handle_token(h));
    assert_rc(redlock_lock(&other, ctx, "kept", 1000, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_on_every_node(ns, "kept", NULL);
    redlock_ctx_free(ctx);
}

/* The restart guard writes its record (run_id, epoch, until) by plain
 * commands, and a record of another server holds the node back. */
static void the_guard_is_read_and_written(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = warm_ctx(ns, NULL);
    for (size_t i = 0; i < NODES; i++) {
        redisReply *id = nodes_cmd(ns, i, "INFO server");
        redisReply *rec = nodes_cmd(ns, i, "GET redlock:guard");
        assert_non_null(id);
        assert_non_null(rec);
        assert_int_equal(rec->type, REDIS_REPLY_STRING);
        const char *run_id = strstr(id->str, "run_id:");
        assert_non_null(run_id);
        assert_memory_equal(rec->str, run_id + 7, 40);
        assert_string_equal(rec->str + 40, " -1 0");
        freeReplyObject(id);
        freeReplyObject(rec);
    }
    redlock_ctx_free(ctx);
    /* Another server's record on node 0: a new client counts it out. */
    assert_int_equal(nodes_exec(ns, 0, "SET redlock:guard %s",
                                "0123456789012345678901234567890123456789 -1 0"), 0);
    const char *options[] = { "max_lease_ms", "60000", NULL };
    ctx = warm_ctx(ns, options);
    char value[32];
    health_value(ctx, NODES, 0, "state", value, sizeof value);
    assert_string_equal(value, "guarded");
    health_value(ctx, NODES, 1, "state", value, sizeof value);
    assert_string_equal(value, "up");
    redlock_ctx_free(ctx);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "DEL redlock:guard"), 0);
}

/* Asserts that call failed with REDLOCK_EUNSUPPORTED, a message naming
 * scripting and a node, within a second. */
#define assert_unsupported(call)                                                         \
    do {                                                                                 \
        long long t = now_ms();                                                          \
        assert_fails(call, REDLOCK_EUNSUPPORTED);                                        \
        assert_true(now_ms() - t < 1000);                                                \
        assert_non_null(strstr(redlock_errmsg(), "scripting"));                          \
        assert_non_null(strstr(redlock_errmsg(), "node 127.0.0.1:"));                    \
    } while (0)

/* What needs a script is refused with REDLOCK_EUNSUPPORTED: by a fresh
 * client that finds out by the refusals, and at once by one that knows. */
static void what_needs_a_script_is_refused(void **state)
{
    nodes *ns = *state;
    for (int known = 0; known < 2; known++) {
        redlock_ctx *ctx = ctx_for(ns, NULL);
        if (known)
            lock_extend_unlock(ctx, "refused-warm");
        redlock_handle *h = NULL;
        const char *both[2] = { "multi-a", "multi-b" };
        assert_unsupported(redlock_lock_multi(&h, ctx, both, 2, 10000, 5000));
        assert_unsupported(redlock_lock_rw(&h, ctx, "rw", REDLOCK_READ, NULL, 10000, 5000));
        assert_unsupported(redlock_lock_rw(&h, ctx, "rw", REDLOCK_WRITE, NULL, 10000, 5000));
        assert_unsupported(redlock_acquire_permit(&h, ctx, "sem", 2, 10000, 5000));
        assert_unsupported(redlock_lock_fair(&h, ctx, "fair", 10000, 5000));
        assert_null(h);
        /* And plain locks still work. */
        lock_extend_unlock(ctx, "refused-plain");
        redlock_ctx_free(ctx);
    }
    for (const char *const *k = (const char *const[]){ "multi-a", "multi-b", "rw", "sem", "fair",
                                                        NULL }; *k; k++)
        assert_int_equal(nodes_count_exists(ns, *k), 0);
}

/* A query of a plain lock works (MULTI GET PTTL EXEC). */
static void inspect_works(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = warm_ctx(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "inspected", 10000, 0), REDLOCK_OK);
    int locked = 0;
    int64_t ttl = 0;
    assert_rc(redlock_inspect(ctx, "inspected", &locked, &ttl), REDLOCK_OK);
    assert_int_equal(locked, 1);
    assert_true(ttl > 5000 && ttl <= 10000);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_rc(redlock_inspect(ctx, "inspected", &locked, &ttl), REDLOCK_OK);
    assert_int_equal(locked, 0);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_cycles_run_no_script),
        cmocka_unit_test(votes_match_the_scripts),
        cmocka_unit_test(fences_increase_and_are_written_back),
        cmocka_unit_test(kept_lock_is_renewed),
        cmocka_unit_test(the_guard_is_read_and_written),
        cmocka_unit_test(what_needs_a_script_is_refused),
        cmocka_unit_test(inspect_works),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
