/*
 * test_native.c - a plain lock's extend and release by the server's own
 * commands where it has them (Valkey 9.0+: SET IFEQ, DELIFEQ), by the
 * scripts elsewhere (Redis 6.2, 7.0), and by the scripts again on a node
 * whose ACL refuses the command; each checked by what the nodes counted
 * (INFO commandstats), not by what the client says.
 */
#include "events.h"
#include "helpers.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 3
#define CYCLES 20

static int group_setup(void **state)
{
    *state = nodes_start(NODES, NULL);
    return *state != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

/* A figure of node i's INFO commandstats for command ("calls",
 * "rejected_calls", "usec"): 0 when the node never ran it. */
static long long stat_of(nodes *ns, size_t i, const char *command, const char *figure)
{
    redisReply *r = nodes_cmd(ns, i, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char field[64], name[40];
    snprintf(field, sizeof field, "cmdstat_%s:", command);
    snprintf(name, sizeof name, "%s=", figure);
    long long n = 0;
    const char *at = strstr(r->str, field);
    if (at) {
        const char *end = strchr(at, '\n');
        const char *f = strstr(at, name);
        /* The figure of this line ("calls=" is also the end of "rejected_calls="). */
        while (f && (!end || f < end) && f[-1] != ':' && f[-1] != ',')
            f = strstr(f + 1, name);
        if (f && (!end || f < end))
            n = atoll(f + strlen(name));
    }
    freeReplyObject(r);
    return n;
}

/* The scripts the nodes ran, all told: EVALSHA, EVAL and FCALL calls. */
static long long scripts_run(nodes *ns)
{
    long long n = 0;
    for (size_t i = 0; i < nodes_count(ns); i++)
        n += stat_of(ns, i, "evalsha", "calls") + stat_of(ns, i, "eval", "calls")
           + stat_of(ns, i, "fcall", "calls");
    return n;
}

static long long calls_everywhere(nodes *ns, const char *command)
{
    long long n = 0;
    for (size_t i = 0; i < nodes_count(ns); i++)
        n += stat_of(ns, i, command, "calls");
    return n;
}

/* Whether node i's server takes DELIFEQ and SET IFEQ: Valkey 9.0 or later,
 * as its INFO says (the library reads the same fields; this asks the
 * server itself whether it knows the command, to check the library). */
static bool server_has_native(nodes *ns, size_t i)
{
    redisReply *r = nodes_cmd(ns, i, "COMMAND INFO delifeq");
    assert_non_null(r);
    bool has = r->type == REDIS_REPLY_ARRAY && r->elements == 1
            && r->element[0]->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    return has;
}


/* Waits until the nodes ran `want` of command in all (the nodes past the
 * quorum answer after the call returned), for up to two seconds. */
static long long wait_calls(nodes *ns, const char *command, long long want)
{
    long long n = calls_everywhere(ns, command);
    for (int tries = 0; n < want && tries < 200; tries++) {
        sleep_ms(10);
        n = calls_everywhere(ns, command);
    }
    return n;
}

/* 20 lock/extend/unlock cycles of a plain lock: on a server with the
 * commands, no script at all, a SET IFEQ and a DELIFEQ each (and the
 * wake-up's PUBLISH after each DELIFEQ that deleted); elsewhere the
 * scripts, as before. */
static void plain_cycles_use_the_native_commands_where_there(void **state)
{
    nodes *ns = *state;
    bool native = server_has_native(ns, 0);
    redlock_ctx *ctx = ctx_for(ns, NULL);
    char value[64];
    health_value(ctx, NODES, 0, "native", value, sizeof value);
    assert_string_equal(value, "unknown");   /* no INFO read yet */
    /* The first commands go before the nodes' INFO is read: the scripted way. */
    lock_extend_unlock(ctx, "native-warm");
    /* The nodes past the quorum take and release it too, after the calls
     * returned (a PING on each connection delivers what is still queued):
     * the counts are read once they stay still for 100 ms. */
    int answered = 0;
    assert_rc(redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    assert_int_equal(answered, NODES);
    long long was = -1, counted = 0;
    for (int still = 0, tries = 0; still < 10 && tries < 300; tries++) {
        counted = scripts_run(ns) + calls_everywhere(ns, "set") + calls_everywhere(ns, "delifeq")
                + calls_everywhere(ns, "publish");
        still = counted == was ? still + 1 : 0;
        was = counted;
        sleep_ms(10);
    }
    assert_int_equal(nodes_count_exists(ns, "native-warm"), 0);
    long long scripts = scripts_run(ns), set = calls_everywhere(ns, "set");
    long long delifeq = calls_everywhere(ns, "delifeq");
    /* And their wake-ups follow the releases' answers (native: one each). */
    long long publish = native ? wait_calls(ns, "publish", delifeq) : 0;
    for (int i = 0; i < CYCLES; i++)
        lock_extend_unlock(ctx, "native-cycle");
    if (native) {
        assert_int_equal(wait_calls(ns, "delifeq", delifeq + NODES * CYCLES),
                         delifeq + NODES * CYCLES);
        /* An acquire and an extend each: both SET. */
        assert_int_equal(wait_calls(ns, "set", set + 2 * NODES * CYCLES), set + 2 * NODES * CYCLES);
        assert_int_equal(wait_calls(ns, "publish", publish + NODES * CYCLES),
                         publish + NODES * CYCLES);
        assert_int_equal(scripts_run(ns), scripts);
        for (size_t i = 0; i < NODES; i++) {
            health_value(ctx, NODES, i, "native", value, sizeof value);
            assert_string_equal(value, "ifeq,delifeq");
        }
    } else {
        /* An extend and a release each: scripts. */
        long long ran = scripts_run(ns);
        for (int tries = 0; ran < scripts + 2 * NODES * CYCLES && tries < 200; tries++) {
            sleep_ms(10);
            ran = scripts_run(ns);
        }
        assert_true(ran >= scripts + 2 * NODES * CYCLES);
        assert_int_equal(calls_everywhere(ns, "delifeq"), 0);
        health_value(ctx, NODES, 0, "native", value, sizeof value);
        assert_string_equal(value, "none");
    }
    assert_on_every_node(ns, "native-cycle", NULL);
    redlock_ctx_free(ctx);
}

/* The extend's and release's answers are the scripts': a lock another
 * client took over is neither extended nor released. */
static void native_votes_match_the_scripts(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    lock_extend_unlock(ctx, "native-warm2");   /* the nodes' INFO is read */
    long long delifeq = calls_everywhere(ns, "delifeq"), set = calls_everywhere(ns, "set");
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "native-votes", 10000, 0), REDLOCK_OK);
    /* Another token on every node: not ours any more. */
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "SET native-votes someone-else PX 10000"), 0);
    assert_fails(redlock_extend(h, 20000), REDLOCK_ENOTHELD);
    assert_fails(redlock_unlock(h), REDLOCK_ENOTHELD);
    assert_on_every_node(ns, "native-votes", "someone-else");
    assert_pttl_on_every_node(ns, "native-votes", 1, 10000);
    if (server_has_native(ns, 0)) {
        /* They went natively: an acquire, our SET and an extend each. */
        assert_true(wait_calls(ns, "set", set + 3 * NODES) >= set + 3 * NODES);
        assert_true(wait_calls(ns, "delifeq", delifeq + NODES) >= delifeq + NODES);
    }
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* A node whose ACL refuses DELIFEQ: the release goes by the script instead,
 * on the same connection, and the call does not fail; the node sends no
 * DELIFEQ again, and its health says it takes SET IFEQ alone. */
static void a_refused_command_falls_back_to_the_script(void **state)
{
    nodes *ns = *state;
    if (!server_has_native(ns, 0))
        skip();
    const char *uris[NODES];
    char buf[NODES][96];
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(nodes_exec(ns, i, "ACL SETUSER native-user on >pw ~* &* +@all -delifeq"),
                         0);
        snprintf(buf[i], sizeof buf[i], "redis://native-user:pw@127.0.0.1:%d", nodes_port(ns, i));
        uris[i] = buf[i];
    }
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    set_options(ctx, (const char *const[]){ "node_timeout_ms", "1000", NULL });
    events *ev = events_new();
    events_record(ev, ctx, REDLOCK_LOG_DEBUG);
    long long rejected = 0, ran = calls_everywhere(ns, "delifeq");
    for (size_t i = 0; i < NODES; i++)
        rejected += stat_of(ns, i, "delifeq", "rejected_calls");
    /* INFO is read in the first; then DELIFEQ is refused, the script goes
     * in its place, and the next releases go by the script. */
    for (int i = 0; i < 6; i++)
        lock_extend_unlock(ctx, "native-acl");
    sleep_ms(100);
    long long now = 0;
    for (size_t i = 0; i < NODES; i++)
        now += stat_of(ns, i, "delifeq", "rejected_calls");
    /* Refused once per node, and never run. */
    assert_int_equal(now - rejected, NODES);
    assert_int_equal(calls_everywhere(ns, "delifeq"), ran);
    assert_int_equal((long long)events_count(ev, "native_refused", "command=delifeq"),
                     now - rejected);
    char value[64];
    for (size_t i = 0; i < NODES; i++) {
        health_value(ctx, NODES, i, "failures", value, sizeof value);
        assert_string_equal(value, "0");
        health_value(ctx, NODES, i, "native", value, sizeof value);
        assert_string_equal(value, "ifeq");
    }
    assert_on_every_node(ns, "native-acl", NULL);
    redlock_ctx_free(ctx);
    events_free(ev);
    for (size_t i = 0; i < NODES; i++)
        nodes_exec(ns, i, "ACL DELUSER native-user");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_cycles_use_the_native_commands_where_there),
        cmocka_unit_test(native_votes_match_the_scripts),
        cmocka_unit_test(a_refused_command_falls_back_to_the_script),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
