/*
 * test_rules.c - the rules the engine keeps, each against real nodes, and
 * the failures of the old connection bookkeeping they rule out: replies
 * owed after NOSCRIPT (scripts flushed), nodes that stall for a moment,
 * connections cut after the node ran a command, commands half-written.
 */
#include "helpers.h"
#include "relay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NODES 5
#define PAUSE_MS 300

/* Every test starts and ends with all nodes up, answering, with no keys. */
static int all_up(void **state)
{
    nodes *ns = *state;
    if (nodes_ensure_all_up(ns) != 0)
        return -1;
    for (size_t i = 0; i < NODES; i++)
        if (nodes_exec(ns, i, "FLUSHALL") != 0)
            return -1;
    return 0;
}

/* A short node deadline, so that paused nodes are given up on quickly. */
static const char *const short_deadline[] = { "node_timeout_ms", "100", NULL };

static void flush_scripts(nodes *ns)
{
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "SCRIPT FLUSH"), 0);
}

static void pause_nodes(nodes *ns, size_t first, size_t end)
{
    for (size_t i = first; i < end; i++)
        assert_int_equal(nodes_pause(ns, i, PAUSE_MS), 0);
}

/* Makes every connection of ctx: one lock and unlock on every node. */
static void warm(redlock_ctx *ctx)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "rules-warm-up", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
}

/* Waits until every node answers again (a pause is over). */
static void wait_pause_over(nodes *ns)
{
    sleep_ms(PAUSE_MS + 50);
    assert_int_equal(nodes_ensure_all_up(ns), 0);
}

/* 1. After NOSCRIPT, a script sent again for an earlier call (its replies
 * still owed when the call returned) is never taken for the answer to a
 * later command on the same pooled connection: a second client is never
 * granted a multi-lock that another holds. */
static void owed_noscript_replies_are_never_credited_to_a_later_command(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL), *b = ctx_for(ns, short_deadline);
    const char *names[] = { "rules-ms-1", "rules-ms-2" };
    redlock_handle *ha = NULL, *hb = NULL;
    assert_rc(redlock_lock_multi(&ha, a, names, 2, 60000, 0), REDLOCK_OK);
    warm(b);
    for (int round = 0; round < 5; round++) {
        flush_scripts(ns);
        pause_nodes(ns, 3, 5);
        hb = UNSET_HANDLE;
        assert_fails(redlock_lock_multi(&hb, b, names, 2, 60000, 0), REDLOCK_ELOCKED);
        wait_pause_over(ns);
        /* The replies owed by nodes 3 and 4 (NOSCRIPT for the acquire and
         * for its release) are read by these calls. */
        for (int k = 0; k < 3; k++)
            assert_fails(redlock_lock_multi(&hb, b, names, 2, 60000, 0), REDLOCK_ELOCKED);
        assert_null(hb);
        assert_on_every_node(ns, "rules-ms-1", redlock_handle_token(ha));
        assert_on_every_node(ns, "rules-ms-2", redlock_handle_token(ha));
    }
    assert_rc(redlock_unlock(ha), REDLOCK_OK);
    redlock_handle_free(ha);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
}

/* 2. An extend to a shorter lease that ends without a quorum leaves the
 * handle no more validity than the shorter lease: the slow nodes apply it
 * later, and another client may get in when it ends. */
static void a_failed_shorter_extend_shortens_the_validity(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, short_deadline), *other = ctx_for(ns, NULL);
    redlock_handle *h = NULL, *o = NULL;
    assert_rc(redlock_lock(&h, ctx, "rules-shorter", 30000, 0), REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(h) > 20000);
    pause_nodes(ns, 2, 5);
    assert_fails(redlock_extend(h, 1000), REDLOCK_ENOQUORUM);
    assert_true(redlock_handle_validity_ms(h) <= 1000);
    /* When the paused nodes have applied the 1 s lease and it has run out,
     * another client gets the lock; by then ours has no validity left. */
    assert_rc(redlock_lock(&o, other, "rules-shorter", 10000, 5000), REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(h) <= 0);
    assert_rc(redlock_unlock(o), REDLOCK_OK);
    redlock_handle_free(o);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

/* 3. A failed attempt whose acquire script is answered NOSCRIPT after its
 * release was sent is not run again after that release: no key stays. */
static void a_failed_attempt_answered_noscript_leaves_no_key(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, short_deadline);
    const char *names[] = { "rules-ns-1", "rules-ns-2" };
    redlock_handle *h = NULL;
    warm(ctx);
    flush_scripts(ns);
    pause_nodes(ns, 2, 5);
    assert_fails(redlock_lock_multi(&h, ctx, names, 2, 60000, 0), REDLOCK_ENOQUORUM);
    wait_pause_over(ns);
    warm(ctx);   /* reads what the paused nodes owed */
    assert_on_every_node(ns, "rules-ns-1", NULL);
    assert_on_every_node(ns, "rules-ns-2", NULL);
    redlock_ctx_free(ctx);
}

/* 4. Unlock after an extend that failed (replies owed, NOSCRIPT) reports
 * what it did: the lock was held, and every key is deleted. */
static void unlock_after_a_failed_extend_reports_the_release(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, short_deadline);
    redlock_handle *h = NULL;
    const char *names[] = { "rules-fx-1", "rules-fx-2" };
    assert_rc(redlock_lock_multi(&h, ctx, names, 2, 30000, 0), REDLOCK_OK);
    flush_scripts(ns);
    pause_nodes(ns, 2, 5);
    assert_fails(redlock_extend(h, 30000), REDLOCK_ENOQUORUM);
    assert_true(redlock_handle_validity_ms(h) > 0);
    wait_pause_over(ns);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, "rules-fx-1", NULL);
    assert_on_every_node(ns, "rules-fx-2", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* Three URIs: nodes 0 and 1 directly, node 2 through relay r. */
static redlock_ctx *ctx_with_relay(nodes *ns, relay *r, const char *node_timeout)
{
    const char *uris[3] = { nodes_uri(ns, 0), nodes_uri(ns, 1), relay_uri(r) };
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 3), REDLOCK_OK);
    set_options(ctx, (const char *const[]){ "node_timeout_ms", node_timeout,
                                            "connect_timeout_ms", "2000", NULL });
    return ctx;
}

/* The length of a RESP bulk string argument of len bytes. */
static size_t bulk_len(size_t len)
{
    char head[32];
    return (size_t)snprintf(head, sizeof head, "$%zu\r\n", len) + len + 2;
}

/* The size of the acquire of n names for lease_ms: EVALSHA sha n names...
 * token ttl, as the library formats it. */
static size_t acquire_size(char **names, size_t n, const char *lease_ms)
{
    char head[32], count[32];
    snprintf(count, sizeof count, "%zu", n);
    size_t size = (size_t)snprintf(head, sizeof head, "*%zu\r\n", n + 5)
                + bulk_len(7) + bulk_len(40) + bulk_len(strlen(count)) + bulk_len(32)
                + bulk_len(strlen(lease_ms));
    for (size_t i = 0; i < n; i++)
        size += bulk_len(strlen(names[i]));
    return size;
}

/* 5. A failed multi-lock whose release cannot be written within the node
 * deadline (the node stalled after running the acquire) is not left
 * half-written in a pooled connection: the release is sent again once the
 * node answers, without any further call, and no key stays. */
static void a_half_written_release_is_finished_once_the_node_answers(void **state)
{
    enum { N = 60000 };
    nodes *ns = *state;
    relay *r = relay_start(nodes_port(ns, 2));
    assert_non_null(r);
    redlock_ctx *ctx = ctx_with_relay(ns, r, "2000");
    char **names = calloc(N, sizeof *names);
    assert_non_null(names);
    for (size_t i = 0; i < N; i++) {
        names[i] = malloc(128);
        snprintf(names[i], 128, "rules-big-%06zu-%0100d", i, 0);
    }
    /* Nodes 0 and 1 refuse (another holds the first key): the attempt fails
     * at once, and its release goes to every node. */
    assert_int_equal(nodes_exec(ns, 0, "SET %s other PX 60000", names[0]), 0);
    assert_int_equal(nodes_exec(ns, 1, "SET %s other PX 60000", names[0]), 0);
    warm(ctx);
    assert_int_equal(relay_wait_quiet(r, 100), 0);
    /* Node 2 receives the whole acquire, runs it, then stalls: its reply and
     * the release wait, and the release is too large for the sockets. */
    relay_stall_after(r, acquire_size(names, N, "60000"));
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock_multi(&h, ctx, (const char *const *)names, N, 60000, 0),
                 REDLOCK_ELOCKED);
    assert_null(h);
    assert_true(nodes_exists(ns, 2, names[N - 1]) == 1);
    relay_resume(r);
    assert_on_nodes(ns, 2, 3, names[N - 1], NULL);
    assert_on_nodes(ns, 2, 3, names[1], NULL);
    for (size_t i = 0; i < N; i++)
        free(names[i]);
    free(names);
    redlock_ctx_free(ctx);
    relay_free(r);
}

/* 6. A pooled connection cut after the node ran SET NX but before its reply
 * came: the command goes again on a new connection, finds our own token,
 * and the lock is ours. */
static void an_acquire_cut_after_it_ran_counts_as_ours(void **state)
{
    nodes *ns = *state;
    relay *rs[3];
    const char *uris[3];
    for (size_t i = 0; i < 3; i++) {
        rs[i] = relay_start(nodes_port(ns, i));
        assert_non_null(rs[i]);
        uris[i] = relay_uri(rs[i]);
    }
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 3), REDLOCK_OK);
    set_options(ctx, (const char *const[]){ "node_timeout_ms", "2000", NULL });
    warm(ctx);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(relay_wait_quiet(rs[i], 100), 0);
    for (int round = 0; round < 3; round++) {
        const char *names[] = { "rules-cut-1", "rules-cut-2" };
        redlock_handle *h = NULL;
        for (size_t i = 0; i < 3; i++)
            relay_cut_next_reply(rs[i]);
        if (round < 2)
            assert_rc(redlock_lock(&h, ctx, names[0], 10000, 0), REDLOCK_OK);
        else
            assert_rc(redlock_lock_multi(&h, ctx, names, 2, 10000, 0), REDLOCK_OK);
        assert_on_nodes(ns, 0, 3, names[0], redlock_handle_token(h));
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        assert_on_nodes(ns, 0, 3, names[0], NULL);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
    for (size_t i = 0; i < 3; i++)
        relay_free(rs[i]);
}

/* A key of another type is reported at once, not after the whole wait. */
static void a_key_of_another_type_is_reported_at_once(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "RPUSH rules-list x"), 0);
    redlock_handle *h = UNSET_HANDLE;
    long long start = now_ms();
    assert_fails(redlock_lock(&h, ctx, "rules-list", 10000, 20000), REDLOCK_EWRONGTYPE);
    assert_true(now_ms() - start < 10000);
    assert_null(h);
    assert_non_null(strstr(redlock_errmsg(), "list"));
    redlock_ctx_free(ctx);
}

/* With wait_ms 0 a call takes at most one node deadline, even when it ends
 * refused with nodes silent. */
static void one_attempt_takes_one_node_deadline(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, (const char *const[]){ "node_timeout_ms", "1500", NULL });
    redlock_ctx *holder = ctx_for(ns, NULL);
    redlock_handle *h = NULL, *mine = UNSET_HANDLE;
    warm(ctx);
    assert_rc(redlock_lock(&h, holder, "rules-deadline", 30000, 0), REDLOCK_OK);
    pause_nodes(ns, 3, 5);
    long long start = now_ms();
    assert_fails(redlock_lock(&mine, ctx, "rules-deadline", 10000, 0), REDLOCK_ELOCKED);
    /* Three refusals decide it: no waiting for the paused nodes at all. */
    assert_true(now_ms() - start < 1500);
    wait_pause_over(ns);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    redlock_ctx_free(holder);
}

/* One server under two names (127.0.0.1 and localhost) votes once. */
static void one_server_under_two_names_votes_once(void **state)
{
    nodes *ns = *state;
    char alias[64];
    snprintf(alias, sizeof alias, "redis://localhost:%d", nodes_port(ns, 0));
    const char *uris[3] = { nodes_uri(ns, 0), alias, nodes_uri(ns, 1) };
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 3), REDLOCK_OK);
    set_options(ctx, (const char *const[]){ "node_timeout_ms", "2000", NULL });
    warm(ctx);   /* every name answered once: the run_ids are known */
    assert_int_equal(nodes_stop(ns, 1), 0);
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, "rules-alias", 10000, 0), REDLOCK_ENOQUORUM);
    assert_null(h);
    assert_non_null(strstr(redlock_errmsg(), "same server"));
    redlock_ctx_free(ctx);
}

/* Nothing queued behind a failed SELECT runs (in database 0 or anywhere). */
static void nothing_runs_behind_a_failed_select(void **state)
{
    nodes *ns = *state;
    char buf[NODES][64];
    const char *uris[NODES];
    for (size_t i = 0; i < NODES; i++) {
        snprintf(buf[i], sizeof buf[i], "redis://127.0.0.1:%d/9999", nodes_port(ns, i));
        uris[i] = buf[i];
    }
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    set_options(ctx, (const char *const[]){ "node_timeout_ms", "2000", NULL });
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, "rules-select", 10000, 0), REDLOCK_EREDIS);
    assert_non_null(strstr(redlock_errmsg(), "SELECT"));
    sleep_ms(100);
    assert_on_every_node(ns, "rules-select", NULL);
    redlock_ctx_free(ctx);
}

/* The connections a node serves this process: its connected clients. */
static long clients_of(nodes *ns, size_t i)
{
    redisReply *r = nodes_cmd(ns, i, "INFO clients");
    assert_non_null(r);
    const char *at = strstr(r->str, "connected_clients:");
    long n = at ? strtol(at + strlen("connected_clients:"), NULL, 10) : -1;
    freeReplyObject(r);
    return n - 1;   /* less the connection asking */
}

/* Held locks pin no connection: however many are held, a node sees no more
 * of this client's connections than the pool size. */
static void held_locks_pin_no_connection(void **state)
{
    enum { HELD = 500 };
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, (const char *const[]){ "pool_size", "4", NULL });
    redlock_handle **held = calloc(HELD, sizeof *held);
    for (int i = 0; i < HELD; i++) {
        char name[32];
        snprintf(name, sizeof name, "rules-pin-%d", i);
        assert_rc(redlock_lock(&held[i], ctx, name, 30000, 0), REDLOCK_OK);
    }
    /* Connections closed by earlier tests may take a moment to leave a
     * node's count; pinned ones would never leave. */
    for (size_t i = 0; i < NODES; i++) {
        long long give_up = now_ms() + CONVERGE_MS;
        while (clients_of(ns, i) > 4 && now_ms() < give_up)
            sleep_ms(20);
        assert_true(clients_of(ns, i) <= 4);
    }
    for (int i = 0; i < HELD; i++) {
        assert_rc(redlock_unlock(held[i]), REDLOCK_OK);
        redlock_handle_free(held[i]);
    }
    free(held);
    redlock_ctx_free(ctx);
}

/* After fork(), the child and the parent both use the client at once and
 * never share a connection: every call of both succeeds. */
static void parent_and_child_share_no_connection(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    warm(ctx);
    pid_t child = fork();
    assert_true(child >= 0);
    const char *name = child == 0 ? "rules-fork-child" : "rules-fork-parent";
    int failures = 0;
    for (int i = 0; i < 200; i++) {
        redlock_handle *h = NULL;
        if (redlock_lock(&h, ctx, name, 10000, 0) != REDLOCK_OK || redlock_unlock(h) != REDLOCK_OK)
            failures++;
        redlock_handle_free(h);
    }
    if (child == 0)
        _exit(failures == 0 ? 0 : 1);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_int_equal(failures, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    redlock_ctx_free(ctx);
}

/* The interrupt check cancels a long wait, which gives up what it took. */
static int cancel_after(void *data)
{
    return now_ms() >= *(long long *)data;
}

static void the_interrupt_check_cancels_a_wait(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *holder = ctx_for(ns, NULL);
    redlock_handle *h = NULL, *mine = UNSET_HANDLE;
    assert_rc(redlock_lock(&h, holder, "rules-cancel", 30000, 0), REDLOCK_OK);
    long long at = now_ms() + 300;
    redlock_set_interrupt_check(cancel_after, &at);
    assert_fails(redlock_lock(&mine, ctx, "rules-cancel", 10000, 60000), REDLOCK_ECANCELED);
    redlock_set_interrupt_check(NULL, NULL);
    assert_null(mine);
    assert_true(now_ms() - at < 10000);
    assert_on_every_node(ns, "rules-cancel", redlock_handle_token(h));
    /* Extend and unlock are not cancelled. */
    at = 0;
    redlock_set_interrupt_check(cancel_after, &at);
    assert_rc(redlock_extend(h, 30000), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_set_interrupt_check(NULL, NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    redlock_ctx_free(holder);
}

/* Options read back as set. */
static void options_read_back(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    char buf[64];
    assert_rc(redlock_ctx_set_option(ctx, "key_prefix", "app:"), REDLOCK_OK);
    assert_rc(redlock_ctx_get_option(ctx, "key_prefix", buf, sizeof buf), REDLOCK_OK);
    assert_string_equal(buf, "app:");
    assert_rc(redlock_ctx_get_option(ctx, "node_timeout_ms", buf, sizeof buf), REDLOCK_OK);
    assert_string_equal(buf, "2000");
    assert_fails(redlock_ctx_get_option(ctx, "no_such_option", buf, sizeof buf), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_get_option(ctx, "key_prefix", buf, 2), REDLOCK_EINVAL);
    redlock_ctx_free(ctx);
}

int main(void)
{
#define RULE(test) cmocka_unit_test_setup_teardown(test, all_up, all_up)
    const struct CMUnitTest tests[] = {
        RULE(owed_noscript_replies_are_never_credited_to_a_later_command),
        RULE(a_failed_shorter_extend_shortens_the_validity),
        RULE(a_failed_attempt_answered_noscript_leaves_no_key),
        RULE(unlock_after_a_failed_extend_reports_the_release),
        RULE(a_half_written_release_is_finished_once_the_node_answers),
        RULE(an_acquire_cut_after_it_ran_counts_as_ours),
        RULE(a_key_of_another_type_is_reported_at_once),
        RULE(one_attempt_takes_one_node_deadline),
        RULE(one_server_under_two_names_votes_once),
        RULE(nothing_runs_behind_a_failed_select),
        RULE(held_locks_pin_no_connection),
        RULE(parent_and_child_share_no_connection),
        RULE(the_interrupt_check_cancels_a_wait),
        RULE(options_read_back),
    };
    return cmocka_run_group_tests_name("rules", tests, five_nodes_setup, nodes_teardown);
}
