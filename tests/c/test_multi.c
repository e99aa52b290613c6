/*
 * test_multi.c - several resources taken together: all or nothing on every
 * node, one token for all, extend and unlock covering every key.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void assert_all_on_every_node(nodes *ns, const char *const *keys, size_t n,
                                     const char *value)
{
    for (size_t k = 0; k < n; k++)
        assert_on_every_node(ns, keys[k], value);
}

/* The keys on node i, but the guard's and the records' (its handshake keeps
 * them). */
static long long db_size(nodes *ns, size_t i)
{
    redisReply *r = nodes_cmd(ns, i, "DBSIZE");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long size = r->integer;
    freeReplyObject(r);
    for (int kept = 0; kept < 2; kept++) {
        r = nodes_cmd(ns, i, kept ? "KEYS *redlock:members" : "KEYS *redlock:guard");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        size -= (long long)r->elements;
        freeReplyObject(r);
    }
    return size;
}

/* Waits up to CONVERGE_MS for node i to hold expected keys. */
static void assert_db_size(nodes *ns, size_t i, long long expected)
{
    long long deadline = now_ms() + CONVERGE_MS;
    long long size;
    while ((size = db_size(ns, i)) != expected && now_ms() < deadline)
        sleep_ms(10);
    assert_int_equal(size, expected);
}

static void multi_lock_covers_every_resource(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    const char *names[] = {"multi-a", "multi-b", "multi-c"};
    redlock_handle *h = NULL;

    assert_rc(redlock_lock_multi(&h, ctx, names, 3, 3000, 0), REDLOCK_OK);
    const char *token = redlock_handle_token(h);
    assert_true(is_token(token));
    assert_all_on_every_node(ns, names, 3, token);
    int64_t validity = redlock_handle_validity_ms(h);
    assert_true(validity > 0 && validity <= 3000 - 32);

    /* Each resource is now refused on its own. */
    redlock_ctx *other = ctx_for(ns, NULL);
    redlock_handle *oh = NULL;
    for (size_t k = 0; k < 3; k++)
        assert_fails(redlock_lock(&oh, other, names[k], 1000, 0), REDLOCK_ELOCKED);

    /* Extend renews every key. */
    assert_rc(redlock_extend(h, 60000), REDLOCK_OK);
    for (size_t k = 0; k < 3; k++)
        assert_pttl_on_every_node(ns, names[k], 30001, 60000);
    assert_true(redlock_handle_validity_ms(h) > validity);

    /* Unlock deletes every key. */
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_all_on_every_node(ns, names, 3, NULL);
    assert_true(redlock_handle_validity_ms(h) <= 0);
    for (size_t k = 0; k < 3; k++) {
        assert_rc(redlock_lock(&oh, other, names[k], 1000, 0), REDLOCK_OK);
        assert_rc(redlock_unlock(oh), REDLOCK_OK);
        redlock_handle_free(oh);
    }
    redlock_handle_free(h);
    redlock_ctx_free(other);
    redlock_ctx_free(ctx);
}

static void multi_lock_takes_nothing_when_one_is_held(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL);
    redlock_ctx *b = ctx_for(ns, NULL);
    redlock_handle *held = NULL, *h = UNSET_HANDLE;
    assert_rc(redlock_lock(&held, a, "multi-taken", 30000, 0), REDLOCK_OK);

    const char *names[] = {"multi-free-1", "multi-taken", "multi-free-2"};
    assert_fails(redlock_lock_multi(&h, b, names, 3, 10000, 0), REDLOCK_ELOCKED);
    assert_null(h);
    /* No stray key of the refused attempt on any node. */
    assert_on_every_node(ns, "multi-free-1", NULL);
    assert_on_every_node(ns, "multi-free-2", NULL);
    assert_on_every_node(ns, "multi-taken", redlock_handle_token(held));

    /* Also while retrying for a while. */
    assert_fails(redlock_lock_multi(&h, b, names, 3, 10000, 300), REDLOCK_ELOCKED);
    assert_on_every_node(ns, "multi-free-1", NULL);
    assert_on_every_node(ns, "multi-free-2", NULL);

    /* Once released, all three are taken. */
    assert_rc(redlock_unlock(held), REDLOCK_OK);
    assert_rc(redlock_lock_multi(&h, b, names, 3, 10000, 0), REDLOCK_OK);
    assert_all_on_every_node(ns, names, 3, redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_all_on_every_node(ns, names, 3, NULL);

    redlock_handle_free(held);
    redlock_handle_free(h);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
}

static void multi_lock_is_all_or_nothing_per_node(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    const char *names[] = {"multi-node-1", "multi-node-2"};
    redlock_handle *h = NULL;

    /* multi-node-2 is taken on two nodes of five: a quorum still grants both,
     * and those two nodes grant neither. */
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(nodes_exec(ns, i, "SET multi-node-2 someone-else PX 60000"), 0);
    assert_rc(redlock_lock_multi(&h, ctx, names, 2, 10000, 0), REDLOCK_OK);
    const char *token = redlock_handle_token(h);
    assert_on_nodes(ns, 0, 2, "multi-node-1", NULL);
    assert_on_nodes(ns, 0, 2, "multi-node-2", "someone-else");
    assert_on_nodes(ns, 2, 5, "multi-node-1", token);
    assert_on_nodes(ns, 2, 5, "multi-node-2", token);
    /* Unlock removes ours and leaves the other holder's keys. */
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_on_every_node(ns, "multi-node-1", NULL);
    assert_on_nodes(ns, 0, 2, "multi-node-2", "someone-else");
    assert_on_nodes(ns, 2, 5, "multi-node-2", NULL);

    /* Taken on three nodes of five: refused, and nothing left behind. */
    assert_int_equal(nodes_exec(ns, 2, "SET multi-node-2 someone-else PX 60000"), 0);
    h = UNSET_HANDLE;
    assert_fails(redlock_lock_multi(&h, ctx, names, 2, 10000, 0), REDLOCK_ELOCKED);
    assert_null(h);
    assert_on_every_node(ns, "multi-node-1", NULL);
    assert_on_nodes(ns, 0, 3, "multi-node-2", "someone-else");
    assert_on_nodes(ns, 3, 5, "multi-node-2", NULL);

    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "DEL multi-node-2"), 0);
    redlock_ctx_free(ctx);
}

static void multi_lock_uses_the_prefix_and_many_names(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, (const char *const[]){"key_prefix", "mp:", NULL});
    enum { N = 200 };
    char buf[N][24];
    const char *names[N];
    for (size_t k = 0; k < N; k++) {
        snprintf(buf[k], sizeof(buf[k]), "multi-many-%zu", k);
        names[k] = buf[k];
    }
    long long sizes[5];
    assert_int_equal(nodes_count(ns), 5);
    for (size_t i = 0; i < 5; i++)
        sizes[i] = db_size(ns, i);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_multi(&h, ctx, names, N, 10000, 0), REDLOCK_OK);
    const char *token = redlock_handle_token(h);
    char key[32];
    for (size_t k = 0; k < N; k += 37) {
        snprintf(key, sizeof(key), "mp:%s", names[k]);
        assert_on_every_node(ns, key, token);
        assert_on_every_node(ns, names[k], NULL);
    }
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_db_size(ns, i, sizes[i] + N);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_db_size(ns, i, sizes[i]);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void multi_extend_and_unlock_after_expiry(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    const char *names[] = {"multi-late-1", "multi-late-2"};
    redlock_handle *h = NULL, *other = NULL;

    assert_rc(redlock_lock_multi(&h, ctx, names, 2, 300, 0), REDLOCK_OK);
    sleep_ms(600);
    /* Someone takes one of the two in the meantime. */
    assert_rc(redlock_lock(&other, ctx, "multi-late-2", 30000, 0), REDLOCK_OK);
    assert_fails(redlock_extend(h, 30000), REDLOCK_ENOTHELD);
    assert_fails(redlock_unlock(h), REDLOCK_ENOTHELD);
    assert_on_every_node(ns, "multi-late-1", NULL);
    assert_on_every_node(ns, "multi-late-2", redlock_handle_token(other));
    assert_rc(redlock_unlock(other), REDLOCK_OK);
    redlock_handle_free(other);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(multi_lock_covers_every_resource),
        cmocka_unit_test(multi_lock_takes_nothing_when_one_is_held),
        cmocka_unit_test(multi_lock_is_all_or_nothing_per_node),
        cmocka_unit_test(multi_lock_uses_the_prefix_and_many_names),
        cmocka_unit_test(multi_extend_and_unlock_after_expiry),
    };
    return cmocka_run_group_tests_name("multi", tests, group_setup, group_teardown);
}
