/*
 * test_fence.c - fencing tokens (option fencing) against real nodes: each
 * holder of a resource gets a larger fence than the one before while the
 * quorums that grant the lock change, a fence is on a quorum's counters by
 * the time the lock is returned (written back to the nodes that counted
 * less), extend does not count, and a node restarted without its data can
 * make fences go back (the documented limit; the restart guard only delays
 * it). The nodes are reached through relays, so that a minority can be made
 * unreachable between two acquisitions with nothing of ours reaching it.
 */
#include "helpers.h"
#include "relay.h"

#include <stdlib.h>
#include <string.h>

#define N 5

typedef struct world {
    nodes *ns;
    relay *relays[N];
    const char *uris[N];
} world;

static int setup(void **state)
{
    world *w = calloc(1, sizeof *w);
    if (!w || !(w->ns = nodes_start(N, NULL)))
        return -1;
    for (size_t i = 0; i < N; i++) {
        if (!(w->relays[i] = relay_start(nodes_port(w->ns, i))))
            return -1;
        w->uris[i] = relay_uri(w->relays[i]);
    }
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    for (size_t i = 0; i < N; i++)
        relay_free(w->relays[i]);
    nodes_free(w->ns);
    free(w);
    return 0;
}

/* Every node reachable again, and every key gone (counters too) but the
 * group's records. */
static int reset(void **state)
{
    world *w = *state;
    for (size_t i = 0; i < N; i++)
        relay_refuse(w->relays[i], 0);
    if (nodes_ensure_all_up(w->ns) != 0)
        return -1;
    for (size_t i = 0; i < N; i++)
        if (nodes_exec(w->ns, i, "FLUSHALL") != 0)
            return -1;
    return nodes_record_group(w->ns);
}

/* A client of the relays, with fencing unless told otherwise. */
static redlock_ctx *fenced_ctx(world *w, const char *fencing, const char *guard)
{
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, w->uris, N), REDLOCK_OK);
    const char *options[] = { "fencing", fencing, "restart_guard", guard,
                              "node_timeout_ms", "1000", "connect_timeout_ms", "1000",
                              "retry_delay_ms", "50", "retry_jitter_ms", "10",
                              "unavailable_timeout_ms", "0", NULL };
    set_options(ctx, options);
    return ctx;
}

/* Only the nodes in `down` (a bit per node) are unreachable. */
static void only_down(world *w, unsigned down)
{
    for (size_t i = 0; i < N; i++)
        relay_refuse(w->relays[i], (down >> i) & 1);
}

/* The counter of key on node i (0 when there is none). */
static long long counter_on(world *w, size_t i, const char *key)
{
    char name[128];
    size_t len = strlen(key);
    memcpy(name, key, len);
    memcpy(name + len, "\0fence", 6);
    redisReply *r = nodes_cmd(w->ns, i, "GET %b", name, len + 6);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
}

/* Takes name for lease_ms (waiting out the reconnect backoff of nodes just
 * back), and returns its fence; the handle in *out. */
static long long lock_for(redlock_ctx *ctx, const char *name, int64_t lease_ms,
                          redlock_handle **out)
{
    assert_rc(redlock_lock(out, ctx, name, lease_ms, 5000), REDLOCK_OK);
    int64_t fence = -1;
    assert_rc(redlock_handle_fence(*out, 0, &fence), REDLOCK_OK);
    return fence;
}

/* Asserts that nodes first .. end-1 counted key to exactly fence. */
static void assert_counted(world *w, size_t first, size_t end, const char *key, long long fence)
{
    for (size_t i = first; i < end; i++)
        if (counter_on(w, i, key) != fence)
            fail_msg("node %zu counted %s to %lld, not %lld", i, key, counter_on(w, i, key),
                     fence);
}

/* Waits until every node has run the acquire of key (a lock returns once a
 * quorum has; the others follow). */
static void on_every_node(world *w, const char *key)
{
    long long give_up = now_ms() + 5000;
    while (nodes_count_exists(w->ns, key) < N && now_ms() < give_up)
        sleep_ms(5);
    assert_int_equal(nodes_count_exists(w->ns, key), N);
}

static long long lock_fenced(redlock_ctx *ctx, const char *name, redlock_handle **out)
{
    return lock_for(ctx, name, 10000, out);
}

static void unlock_and_free(redlock_handle *h)
{
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
}

static void fences_increase_while_the_quorums_change(void **state)
{
    world *w = *state;
    redlock_ctx *ctx = fenced_ctx(w, "1", "1");
    unsigned seed = 20261123;
    long long last = 0;
    int diverged = 0;
    for (int round = 0; round < 25; round++) {
        /* A minority of 0, 1 or 2 nodes, different each time. */
        unsigned down = 0;
        for (int k = rand_r(&seed) % 3; k > 0; k--)
            down |= 1u << (rand_r(&seed) % N);
        only_down(w, down);
        redlock_handle *h = NULL;
        long long fence = lock_fenced(ctx, "fence-quorums", &h);
        if (fence <= last)
            fail_msg("round %d: fence %lld after %lld", round, fence, last);
        last = fence;
        /* By the time the lock is ours a quorum has counted the fence. */
        size_t reached = 0;
        long long low = fence;
        for (size_t i = 0; i < N; i++) {
            long long c = counter_on(w, i, "fence-quorums");
            reached += c >= fence;
            low = c < low ? c : low;
        }
        if (reached < N / 2 + 1)
            fail_msg("round %d: fence %lld is on %zu nodes' counters", round, fence, reached);
        diverged += low < fence;
        unlock_and_free(h);
    }
    /* The nodes left out had fallen behind: the rounds did change quorums. */
    assert_true(diverged > 0);
    redlock_ctx_free(ctx);
}

static void a_fence_is_written_back_to_the_nodes_that_counted_less(void **state)
{
    world *w = *state;
    redlock_ctx *ctx = fenced_ctx(w, "1", "1");
    redlock_handle *h = NULL;
    only_down(w, 0x3);          /* nodes 0 and 1 miss three acquisitions */
    long long before = 0;
    for (int i = 0; i < 3; i++) {
        before = lock_fenced(ctx, "fence-back", &h);
        unlock_and_free(h);
    }
    assert_true(counter_on(w, 0, "fence-back") == 0 && counter_on(w, 1, "fence-back") == 0);
    only_down(w, 0x18);         /* now only 0, 1 and 2: two of them far behind */
    long long fence = lock_fenced(ctx, "fence-back", &h);
    assert_true(fence > before);
    assert_counted(w, 0, 3, "fence-back", fence);
    unlock_and_free(h);
    redlock_ctx_free(ctx);
}

static void extend_keeps_the_fence_and_does_not_count(void **state)
{
    world *w = *state;
    redlock_ctx *ctx = fenced_ctx(w, "1", "1");
    redlock_handle *h = NULL;
    long long fence = lock_fenced(ctx, "fence-extend", &h);
    on_every_node(w, "fence-extend");
    assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
    int64_t again = -1;
    assert_rc(redlock_handle_fence(h, 0, &again), REDLOCK_OK);
    assert_int_equal(again, fence);
    assert_counted(w, 0, N, "fence-extend", fence);
    unlock_and_free(h);
    redlock_ctx_free(ctx);
}

static void a_multi_lock_has_a_fence_per_resource(void **state)
{
    world *w = *state;
    redlock_ctx *ctx = fenced_ctx(w, "1", "1");
    redlock_handle *h = NULL;
    assert_int_equal(lock_fenced(ctx, "fence-a", &h), 1);
    unlock_and_free(h);
    assert_int_equal(lock_fenced(ctx, "fence-a", &h), 2);
    unlock_and_free(h);
    const char *names[] = { "fence-a", "fence-b" };
    assert_rc(redlock_lock_multi(&h, ctx, names, 2, 10000, 0), REDLOCK_OK);
    int64_t a = 0, b = 0, none = 7;
    assert_rc(redlock_handle_fence(h, 0, &a), REDLOCK_OK);
    assert_rc(redlock_handle_fence(h, 1, &b), REDLOCK_OK);
    assert_int_equal(a, 3);
    assert_int_equal(b, 1);
    assert_rc(redlock_handle_fence(h, 2, &none), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "out of range"));
    assert_int_equal(none, 7);
    assert_rc(redlock_handle_fence(NULL, 0, &a), REDLOCK_EINVAL);
    assert_rc(redlock_handle_fence(h, 0, NULL), REDLOCK_EINVAL);
    unlock_and_free(h);
    redlock_ctx_free(ctx);
}

static void without_fencing_the_fence_is_zero_and_nothing_counts(void **state)
{
    world *w = *state;
    redlock_ctx *ctx = fenced_ctx(w, "0", "1");
    redlock_handle *h = NULL;
    assert_int_equal(lock_fenced(ctx, "fence-off", &h), 0);
    assert_counted(w, 0, N, "fence-off", 0);
    unlock_and_free(h);
    redlock_ctx_free(ctx);
}

static void the_counter_sits_beside_the_prefixed_key(void **state)
{
    world *w = *state;
    assert_int_equal(nodes_record_group_for(w->ns, "app:"), 0);   /* a group in use */
    redlock_ctx *ctx = fenced_ctx(w, "1", "1");
    assert_rc(redlock_ctx_set_option(ctx, "key_prefix", "app:"), REDLOCK_OK);
    redlock_handle *h = NULL;
    assert_int_equal(lock_fenced(ctx, "orders", &h), 1);
    on_every_node(w, "app:orders");
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(counter_on(w, i, "app:orders"), 1);
        long long pttl = -3;
        redisReply *r = nodes_cmd(w->ns, i, "PTTL %b", "app:orders\0fence", (size_t)16);
        assert_non_null(r);
        pttl = r->integer;
        freeReplyObject(r);
        assert_int_equal(pttl, -1);   /* no expiry: it must outlive every lock */
    }
    unlock_and_free(h);
    redlock_ctx_free(ctx);
}

static void a_key_that_is_not_a_lock_is_refused_and_not_counted(void **state)
{
    world *w = *state;
    redlock_ctx *ctx = fenced_ctx(w, "1", "1");
    for (size_t i = 0; i < N; i++)
        assert_int_equal(nodes_exec(w->ns, i, "RPUSH fence-list item"), 0);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "fence-list", 10000, 0), REDLOCK_EWRONGTYPE);
    assert_non_null(strstr(redlock_errmsg(), "not a lock"));
    assert_counted(w, 0, N, "fence-list", 0);
    redlock_ctx_free(ctx);
}

/* Where the guarantee ends: three nodes count far (a long history of
 * locks: a million); one of them restarts without its data, the other two
 * become unreachable, and the quorum of the restarted node and the two that
 * never counted gives a smaller fence. Every attempt refused meanwhile still
 * counts on the nodes that said yes, so the history is long enough that
 * those attempts cannot make up for it. */
static void lost_counters_let_fences_go_back(world *w, int guarded)
{
    redlock_ctx *ctx = fenced_ctx(w, "1", guarded ? "1" : "0");
    set_options(ctx, (const char *[]){"max_lease_ms", "1000", NULL});
    redlock_handle *h = NULL;
    only_down(w, 0x18);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(nodes_exec(w->ns, i, "SET %b 1000000", "fence-lost\0fence",
                                    (size_t)16), 0);
    long long high = lock_for(ctx, "fence-lost", 1000, &h);
    assert_int_equal(high, 1000001);
    unlock_and_free(h);
    assert_int_equal(nodes_stop(w->ns, 0), 0);
    assert_int_equal(nodes_restart(w->ns, 0), 0);   /* empty: no persistence */
    only_down(w, 0x6);
    sleep_ms(1100);   /* past the reconnect backoff of nodes 3 and 4 */
    /* With the guard, the restarted node does not count at first: the lock
     * is refused, and says why. The first attempts may instead find node 0's
     * old connection closed, or node 0 in its reconnect backoff; the guard
     * starts when the new run_id is seen, so the refusal that names it comes
     * on the attempt that reconnects, and no attempt before may succeed.
     * Without the guard, the lock is had at once (retries only ride out a
     * slow machine). */
    if (guarded) {
        long long give_up = now_ms() + 10000;
        for (;;) {
            int rc = redlock_lock(&h, ctx, "fence-lost", 1000, 0);
            if (rc == REDLOCK_OK)
                fail_msg("taken while node 0 was guarded");
            assert_rc(rc, REDLOCK_ENOQUORUM);
            if (strstr(redlock_errmsg(), "restart_guard"))
                break;
            if (now_ms() > give_up)
                fail_msg("never refused by the restart guard; last: %s", redlock_errmsg());
            sleep_ms(20);
        }
    } else {
        assert_rc(redlock_lock(&h, ctx, "fence-lost", 1000, 10000), REDLOCK_OK);
        unlock_and_free(h);
    }
    /* The guard counts the restarted node again after max_lease_ms (1 s):
     * waiting takes it past. */
    assert_rc(redlock_lock(&h, ctx, "fence-lost", 1000, 15000), REDLOCK_OK);
    int64_t fence = -1;
    assert_rc(redlock_handle_fence(h, 0, &fence), REDLOCK_OK);
    if (fence >= high)
        fail_msg("fence %lld after %lld: expected it to go back", (long long)fence, high);
    unlock_and_free(h);
    redlock_ctx_free(ctx);
}

static void a_node_restarted_without_data_can_make_fences_go_back(void **state)
{
    lost_counters_let_fences_go_back(*state, 0);
}

static void the_restart_guard_delays_that_and_does_not_prevent_it(void **state)
{
    lost_counters_let_fences_go_back(*state, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(fences_increase_while_the_quorums_change, reset),
        cmocka_unit_test_setup(a_fence_is_written_back_to_the_nodes_that_counted_less, reset),
        cmocka_unit_test_setup(extend_keeps_the_fence_and_does_not_count, reset),
        cmocka_unit_test_setup(a_multi_lock_has_a_fence_per_resource, reset),
        cmocka_unit_test_setup(without_fencing_the_fence_is_zero_and_nothing_counts, reset),
        cmocka_unit_test_setup(the_counter_sits_beside_the_prefixed_key, reset),
        cmocka_unit_test_setup(a_key_that_is_not_a_lock_is_refused_and_not_counted, reset),
        cmocka_unit_test_setup(a_node_restarted_without_data_can_make_fences_go_back, reset),
        cmocka_unit_test_setup(the_restart_guard_delays_that_and_does_not_prevent_it, reset),
    };
    return cmocka_run_group_tests_name("fence", tests, setup, teardown);
}
