/*
 * test_observe.c - what a client tells about itself: its events
 * (redlock_ctx_set_log) with their fields, for every step of a lock and
 * every change of a node (down, slow, back, restarted, refusing the
 * credentials); nothing below the level asked for, nor without a hook; the
 * health of each node (redlock_ctx_health) right after the call that met a
 * killed node; and redlock_ctx_ping's quorum.
 */
#include "helpers.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

#define LEASE_MS 1500

/* The value of key in node i's line of ctx's health, into out. */
static void health_field(redlock_ctx *ctx, size_t i, const char *key, char *out, size_t len)
{
    char buf[REDLOCK_MAX_NODES * REDLOCK_HEALTH_LINE_MAX];
    assert_rc(redlock_ctx_health(ctx, buf, sizeof buf), REDLOCK_OK);
    char *line = buf;
    for (size_t k = 0; k < i && line; k++) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!line || !*line)
        fail_msg("no line %zu in the health:\n%s", i, buf);
    char *end = strchr(line, '\n');
    if (end)
        *end = '\0';
    size_t klen = strlen(key);
    char *at = NULL;
    for (char *p = line; p && !at; p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL)
        if (strncmp(p, key, klen) == 0 && p[klen] == '=')
            at = p + klen + 1;
    if (!at)
        fail_msg("no %s in the health line: %s", key, line);
    size_t n = strcspn(at, " ");
    snprintf(out, len, "%.*s", (int)n, at);
}

static long long health_number(redlock_ctx *ctx, size_t i, const char *key)
{
    char value[64];
    health_field(ctx, i, key, value, sizeof value);
    return atoll(value);
}

static void assert_state(redlock_ctx *ctx, size_t i, const char *state)
{
    char value[64];
    health_field(ctx, i, "state", value, sizeof value);
    if (strcmp(value, state) != 0)
        fail_msg("node %zu is %s, expected %s", i, value, state);
}

/* "node=127.0.0.1:PORT" of node i. */
static void node_field(const nodes *ns, size_t i, char *out, size_t len)
{
    snprintf(out, len, "node=127.0.0.1:%d", nodes_port(ns, i));
}

/* Asserts that the message of the first event name (holding about, unless
 * NULL) holds every needle. */
static void assert_event_about(events *ev, const char *name, const char *about, int level,
                               const char *const *needles)
{
    char msg[1100];
    int got = events_find(ev, name, about, msg, sizeof msg);
    if (got == 0)
        fail_msg("no %s event (%zu events)", name, events_total(ev));
    if (got != level)
        fail_msg("%s came at level %d, expected %d: %s", name, got, level, msg);
    for (size_t i = 0; needles && needles[i]; i++)
        if (!strstr(msg, needles[i]))
            fail_msg("%s: '%s' is not in '%s'", name, needles[i], msg);
}

static void assert_event(events *ev, const char *name, int level, const char *const *needles)
{
    assert_event_about(ev, name, NULL, level, needles);
}

/* A client of ns with options, its events at every level recorded in *ev. */
static redlock_ctx *observed(nodes *ns, const char *const *options, events **ev)
{
    redlock_ctx *ctx = ctx_for(ns, options);
    *ev = events_new();
    events_record(*ev, ctx, REDLOCK_LOG_DEBUG);
    return ctx;
}

static void a_lock_cycle_tells_each_step(void **state)
{
    nodes *ns = *state;
    events *ev = events_new();
    redlock_ctx *ctx = ctx_for(ns, NULL), *rival = ctx_for(ns, NULL);
    events_record(ev, ctx, REDLOCK_LOG_DEBUG);
    events_record(ev, rival, REDLOCK_LOG_DEBUG);

    redlock_handle *h = NULL, *other = UNSET_HANDLE;
    assert_rc(redlock_lock(&h, ctx, "obs-cycle", 10000, 0), REDLOCK_OK);
    char owner[16];
    snprintf(owner, sizeof owner, "owner=%.8s ", redlock_handle_token(h));
    assert_event(ev, "acquired", REDLOCK_LOG_DEBUG, (const char *[]){
        "op=lock resource=obs-cycle ", owner, " nodes=", "/5 ms=", " attempts=1 validity_ms=",
        NULL});
    assert_int_equal(events_count(ev, "acquired", NULL), 1);

    assert_fails(redlock_lock(&other, rival, "obs-cycle", 10000, 0), REDLOCK_ELOCKED);
    assert_event(ev, "refused", REDLOCK_LOG_DEBUG, (const char *[]){
        "op=lock resource=obs-cycle nodes=0/5 ms=", " attempts=1: lock 'obs-cycle'", NULL});
    events_clear(ev);
    assert_fails(redlock_lock(&other, rival, "obs-cycle", 10000, 150), REDLOCK_ELOCKED);
    assert_int_equal(events_count(ev, "refused", NULL), 1);   /* one per call, not per attempt */
    assert_int_equal(events_count(ev, "refused", " attempts=1:"), 0);

    assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
    assert_event(ev, "extended", REDLOCK_LOG_DEBUG, (const char *[]){
        "op=extend resource=obs-cycle ", owner, " validity_ms=", NULL});
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_event(ev, "released", REDLOCK_LOG_DEBUG, (const char *[]){
        "op=unlock resource=obs-cycle ", owner, NULL});

    /* Several resources, and the lock's token shown nowhere. */
    const char *names[] = {"obs-a", "obs-b", "obs-c"};
    redlock_handle *multi = NULL;
    assert_rc(redlock_lock_multi(&multi, ctx, names, 3, 10000, 0), REDLOCK_OK);
    assert_event(ev, "acquired", REDLOCK_LOG_DEBUG, (const char *[]){
        "resource=obs-a,obs-b,obs-c ", NULL});
    assert_rc(redlock_unlock(multi), REDLOCK_OK);
    char line[1200];
    for (size_t i = 0; events_line(ev, i, line, sizeof line); i++) {
        assert_null(strstr(line, redlock_handle_token(h)));
        assert_null(strstr(line, redlock_handle_token(multi)));
    }
    redlock_handle_free(multi);
    redlock_handle_free(h);
    redlock_ctx_free(rival);
    redlock_ctx_free(ctx);
    events_free(ev);
}

static atomic_int hook_calls;

static void count_calls(void *data, int level, const char *event, const char *message)
{
    (void)data, (void)level, (void)event, (void)message;
    hook_calls++;
}

static void lock_cycle(redlock_ctx *ctx, const char *name)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, name, 10000, 0), REDLOCK_OK);
    assert_rc(redlock_extend(h, 10000), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
}

static void nothing_below_the_level_nor_without_a_hook(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    assert_fails(redlock_ctx_set_log(NULL, count_calls, 0, NULL), REDLOCK_EINVAL);
    hook_calls = 0;
    lock_cycle(ctx, "obs-quiet");   /* no hook */
    assert_rc(redlock_ctx_set_log(ctx, count_calls, REDLOCK_LOG_WARN, NULL), REDLOCK_OK);
    lock_cycle(ctx, "obs-quiet");
    assert_int_equal(hook_calls, 0);
    assert_rc(redlock_ctx_set_log(ctx, count_calls, REDLOCK_LOG_DEBUG, NULL), REDLOCK_OK);
    lock_cycle(ctx, "obs-quiet");
    assert_int_equal(hook_calls, 3);   /* acquired, extended, released */
    assert_rc(redlock_ctx_set_log(ctx, NULL, REDLOCK_LOG_DEBUG, NULL), REDLOCK_OK);
    lock_cycle(ctx, "obs-quiet");
    assert_int_equal(hook_calls, 3);
    redlock_ctx_free(ctx);
}

/* A node killed: the next call finds it down (and the health says so when
 * that call returns); restarted, it is back, under the restart guard. */
static void a_killed_node_is_down_then_back_and_guarded(void **state)
{
    nodes *ns = *state;
    events *ev;
    redlock_ctx *ctx = observed(ns, (const char *[]){"max_lease_ms", "10000", NULL}, &ev);
    char node[64];
    node_field(ns, 4, node, sizeof node);
    /* A call returns at a quorum: a ping waits for every node. */
    assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);
    for (size_t i = 0; i < 5; i++)
        assert_state(ctx, i, "up");
    assert_true(health_number(ctx, 4, "commands") >= 1);
    assert_int_equal(health_number(ctx, 4, "failures"), 0);
    char run_id[64];
    health_field(ctx, 4, "run_id", run_id, sizeof run_id);
    assert_int_equal(strlen(run_id), 40);

    assert_int_equal(nodes_kill(ns, 4), 0);
    lock_cycle(ctx, "obs-down");   /* the first call since */
    assert_event(ev, "node_down", REDLOCK_LOG_WARN, (const char *[]){
        node, " was=up retry_in_ms=", ": ", NULL});
    assert_state(ctx, 4, "down");
    assert_true(health_number(ctx, 4, "failures") >= 1);
    char error[200];
    health_field(ctx, 4, "last_error", error, sizeof error);
    assert_non_null(strstr(error, "connect"));
    assert_int_equal(events_count(ev, "node_down", NULL), 1);   /* a change, told once */
    lock_cycle(ctx, "obs-down");
    assert_int_equal(events_count(ev, "node_down", NULL), 1);

    assert_int_equal(nodes_restart(ns, 4), 0);
    sleep_ms(1100);   /* the longest backoff between connects */
    assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);
    assert_event(ev, "node_back", REDLOCK_LOG_INFO, (const char *[]){node, " was=down for_ms=",
                                                                      NULL});
    assert_event(ev, "node_restarted", REDLOCK_LOG_WARN, (const char *[]){
        node, " run_id=", " guard_ms=10000", NULL});
    assert_state(ctx, 4, "guarded");
    assert_true(health_number(ctx, 4, "guard_ms") > 0);
    redlock_ctx_free(ctx);
    events_free(ev);
}

static void a_paused_node_is_slow_then_back(void **state)
{
    nodes *ns = *state;
    events *ev;
    redlock_ctx *ctx = observed(ns, (const char *[]){"node_timeout_ms", "500", NULL}, &ev);
    char node[64];
    node_field(ns, 3, node, sizeof node);
    lock_cycle(ctx, "obs-slow");
    assert_int_equal(nodes_pause(ns, 3, 2000), 0);
    /* The calls end at a quorum, without the paused node; the next call
     * after its deadline finds its reply missing. */
    lock_cycle(ctx, "obs-slow");
    sleep_ms(600);
    lock_cycle(ctx, "obs-slow");
    assert_event_about(ev, "node_slow", node, REDLOCK_LOG_WARN, (const char *[]){
        " was=up: no answer within its deadline", NULL});
    assert_state(ctx, 3, "slow");
    assert_true(health_number(ctx, 3, "timeouts") >= 1);
    assert_int_equal(nodes_ensure_all_up(ns), 0);   /* waits out the pause */
    /* A call ends at a quorum, so the node's first answer may come after
     * one; it is back once a call of its own hears it. */
    for (int i = 0; i < 100 && events_count(ev, "node_back", node) == 0; i++)
        lock_cycle(ctx, "obs-slow");
    assert_event_about(ev, "node_back", node, REDLOCK_LOG_INFO, (const char *[]){" was=slow",
                                                                                NULL});
    redlock_ctx_free(ctx);
    events_free(ev);
}

static void a_majority_down_is_no_quorum(void **state)
{
    nodes *ns = *state;
    events *ev;
    redlock_ctx *ctx = observed(ns, NULL, &ev);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(nodes_stop(ns, i), 0);
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, "obs-majority", 10000, 0), REDLOCK_ENOQUORUM);
    char node[64];
    node_field(ns, 0, node, sizeof node);
    assert_event(ev, "no_quorum", REDLOCK_LOG_WARN, (const char *[]){
        "op=lock resource=obs-majority nodes=", "/5 need=3 ", node + 5, NULL});
    assert_int_equal(events_count(ev, "node_down", NULL), 3);
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    redlock_ctx_free(ctx);
    events_free(ev);
}

static void lost(void *data, redlock_handle *h, int status, const char *message)
{
    (void)h, (void)status, (void)message;
    atomic_int *calls = data;
    (*calls)++;
}

/* A kept lock whose nodes stop answering: each failed renewal is told,
 * then the loss. */
static void failed_renewals_then_the_loss(void **state)
{
    nodes *ns = *state;
    events *ev;
    redlock_ctx *ctx = observed(ns, (const char *[]){"node_timeout_ms", "200", "retry_delay_ms",
                                                     "20", NULL}, &ev);
    redlock_handle *h = NULL;
    atomic_int calls = 0;
    assert_rc(redlock_lock(&h, ctx, "obs-kept", LEASE_MS, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(h, lost, &calls), REDLOCK_OK);
    char owner[16];
    snprintf(owner, sizeof owner, "owner=%.8s", redlock_handle_token(h));
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(nodes_pause(ns, i, 4 * LEASE_MS), 0);
    assert_true(events_wait(ev, "lost", NULL, 4 * LEASE_MS) == 1);
    assert_int_equal(calls, 1);
    assert_event(ev, "renewal_failed", REDLOCK_LOG_WARN, (const char *[]){
        "resource=obs-kept ", owner, " code=noquorum retry_in_ms=20 validity_ms=", NULL});
    assert_event(ev, "lost", REDLOCK_LOG_ERROR, (const char *[]){
        "resource=obs-kept ", owner, " code=expired: ", NULL});
    redlock_handle_free(h);
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    redlock_ctx_free(ctx);
    events_free(ev);
}

static void refused_credentials_are_told(void **state)
{
    (void)state;
    nodes *ns = nodes_start(3, "obs-secret");
    assert_non_null(ns);
    const char *uris[3];
    char buf[3][128];
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf[i], sizeof buf[i], "redis://:wrong@127.0.0.1:%d", nodes_port(ns, i));
        uris[i] = buf[i];
    }
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 3), REDLOCK_OK);
    events *ev = events_new();
    events_record(ev, ctx, REDLOCK_LOG_DEBUG);
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, "obs-auth", 10000, 0), REDLOCK_EAUTH);
    assert_int_equal(events_count(ev, "auth_refused", NULL), 3);
    assert_event(ev, "auth_refused", REDLOCK_LOG_ERROR, (const char *[]){"was=unknown: ",
                                                                        "AUTH", NULL});
    assert_event(ev, "failed", REDLOCK_LOG_ERROR, (const char *[]){"op=lock resource=obs-auth",
                                                                  " code=auth: ", NULL});
    for (size_t i = 0; i < 3; i++)
        assert_state(ctx, i, "auth_refused");
    char line[1200];
    for (size_t i = 0; events_line(ev, i, line, sizeof line); i++)
        assert_null(strstr(line, "wrong"));
    redlock_ctx_free(ctx);
    events_free(ev);
    nodes_free(ns);
}

static void ping_counts_a_quorum(void **state)
{
    (void)state;
    nodes *ns = nodes_start(5, NULL);
    assert_non_null(ns);
    redlock_ctx *ctx = ctx_for(ns, NULL);
    char small[8];
    assert_fails(redlock_ctx_health(ctx, small, sizeof small), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "needed"));
    assert_state(ctx, 0, "unknown");
    assert_int_equal(health_number(ctx, 0, "rtt_ms"), -1);

    int answered = -1;
    assert_rc(redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    assert_int_equal(answered, 5);
    for (size_t i = 0; i < 5; i++) {
        char version[16];
        assert_state(ctx, i, "up");
        health_field(ctx, i, "version", version, sizeof version);
        assert_true(atoi(version) >= 5);
        assert_true(health_number(ctx, i, "rtt_ms") >= 0);
    }
    assert_int_equal(nodes_stop(ns, 0), 0);
    assert_int_equal(nodes_stop(ns, 1), 0);
    assert_rc(redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    assert_int_equal(answered, 3);
    assert_state(ctx, 0, "down");
    assert_int_equal(nodes_stop(ns, 2), 0);
    assert_fails(redlock_ctx_ping(ctx, &answered), REDLOCK_ENOQUORUM);
    assert_int_equal(answered, 2);
    assert_non_null(strstr(redlock_errmsg(), "ping: 2 of 5 nodes agreed, 3 needed"));
    assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_ENOQUORUM);
    assert_fails(redlock_ctx_ping(NULL, &answered), REDLOCK_EINVAL);
    redlock_ctx_free(ctx);
    nodes_free(ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_lock_cycle_tells_each_step),
        cmocka_unit_test(nothing_below_the_level_nor_without_a_hook),
        cmocka_unit_test(a_killed_node_is_down_then_back_and_guarded),
        cmocka_unit_test(a_paused_node_is_slow_then_back),
        cmocka_unit_test(a_majority_down_is_no_quorum),
        cmocka_unit_test(failed_renewals_then_the_loss),
        cmocka_unit_test(refused_credentials_are_told),
        cmocka_unit_test(ping_counts_a_quorum),
    };
    return cmocka_run_group_tests_name("observe", tests, five_nodes_setup, nodes_teardown);
}
