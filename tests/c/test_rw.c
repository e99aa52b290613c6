/*
 * test_rw.c - read-write locks (redlock_lock_rw) on five nodes: readers
 * together, the writer alone (and a plain lock of the name with it), each
 * reader its own lease, a writer woken by the last reader's release, a
 * downgrade, no upgrade, renewal of a kept read lock, fences for writers
 * only, and bad input.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static const char SHARED[] = "redlock:readers";

/* Every node holds name shared by exactly the readers given (their tokens,
 * n of them, in any order): "redlock:readers", then " token:d" each. */
static void assert_readers_on_every_node(nodes *ns, const char *name, const char *const *tokens,
                                         size_t n)
{
    for (size_t i = 0; i < nodes_count(ns); i++) {
        redisReply *r = nodes_cmd(ns, i, "GET %s", name);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STRING || strncmp(r->str, SHARED, strlen(SHARED)) != 0)
            fail_msg("node %zu: %s is not shared by readers", i, name);
        size_t listed = 0;
        for (const char *p = strchr(r->str, ' '); p; p = strchr(p + 1, ' '))
            listed++;
        assert_int_equal(listed, n);
        for (size_t k = 0; k < n; k++) {
            char entry[64];
            snprintf(entry, sizeof entry, " %s:", tokens[k]);
            if (!strstr(r->str, entry))
                fail_msg("node %zu: reader %s is not listed in %s", i, tokens[k], r->str);
        }
        freeReplyObject(r);
    }
}

static redlock_handle *take(redlock_ctx *ctx, const char *name, int mode,
                            const redlock_handle *held, int64_t ttl_ms)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_rw(&h, ctx, name, mode, held, ttl_ms, 0), REDLOCK_OK);
    assert_non_null(h);
    return h;
}

static void refused(redlock_ctx *ctx, const char *name, int mode)
{
    redlock_handle *h = NULL;
    if (mode)
        assert_fails(redlock_lock_rw(&h, ctx, name, mode, NULL, 1000, 0), REDLOCK_ELOCKED);
    else
        assert_fails(redlock_lock(&h, ctx, name, 1000, 0), REDLOCK_ELOCKED);
}

/* Readers are one holder to a query, whatever each node lists of them:
 * which readers, in which order, how long before the key each lease ends. */
static void readers_are_one_holder_to_a_query(void **state)
{
    nodes *ns = *state;
    static const char *const lists[] = {
        "redlock:readers aaaa:0", "redlock:readers aaaa:3 bbbb:0", "redlock:readers bbbb:0 aaaa:7",
        "redlock:readers aaaa:1", "redlock:readers cccc:0",
    };
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "SET rw-query %s PX 8000", lists[i % 5]), 0);
    redlock_ctx *ctx = ctx_for(ns, NULL);
    int locked = 0;
    int64_t ttl = 0;
    assert_rc(redlock_inspect(ctx, "rw-query", &locked, &ttl), REDLOCK_OK);
    assert_int_equal(locked, 1);
    assert_true(ttl > 5000 && ttl <= 8000);
    refused(ctx, "rw-query", REDLOCK_WRITE);
    redlock_ctx_free(ctx);
}

static void readers_share_it_and_keep_the_writer_out(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL), *b = ctx_for(ns, NULL), *w = ctx_for(ns, NULL);
    redlock_handle *ra = take(a, "rw-basic", REDLOCK_READ, NULL, 5000);
    redlock_handle *rb = take(b, "rw-basic", REDLOCK_READ, NULL, 5000);
    assert_string_not_equal(redlock_handle_token(ra), redlock_handle_token(rb));
    const char *both[] = { redlock_handle_token(ra), redlock_handle_token(rb) };
    assert_readers_on_every_node(ns, "rw-basic", both, 2);
    refused(w, "rw-basic", REDLOCK_WRITE);
    refused(w, "rw-basic", 0);   /* a plain lock of the name too */

    assert_rc(redlock_unlock(ra), REDLOCK_OK);
    assert_readers_on_every_node(ns, "rw-basic", &both[1], 1);   /* b still reads */
    refused(w, "rw-basic", REDLOCK_WRITE);
    assert_rc(redlock_unlock(rb), REDLOCK_OK);
    assert_on_every_node(ns, "rw-basic", NULL);

    /* The writer alone: readers and a plain lock wait. */
    redlock_handle *wh = take(w, "rw-basic", REDLOCK_WRITE, NULL, 5000);
    assert_on_every_node(ns, "rw-basic", redlock_handle_token(wh));
    refused(a, "rw-basic", REDLOCK_READ);
    refused(a, "rw-basic", 0);
    refused(b, "rw-basic", REDLOCK_WRITE);
    assert_rc(redlock_extend(wh, 8000), REDLOCK_OK);
    assert_pttl_on_every_node(ns, "rw-basic", 5001, 8000);
    assert_rc(redlock_unlock(wh), REDLOCK_OK);
    assert_on_every_node(ns, "rw-basic", NULL);

    /* A plain lock keeps readers out. */
    redlock_handle *plain = NULL;
    assert_rc(redlock_lock(&plain, a, "rw-basic", 5000, 0), REDLOCK_OK);
    refused(b, "rw-basic", REDLOCK_READ);
    assert_rc(redlock_unlock(plain), REDLOCK_OK);
    redlock_handle_free(ra);
    redlock_handle_free(rb);
    redlock_handle_free(wh);
    redlock_handle_free(plain);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
    redlock_ctx_free(w);
}

/* Each reader's lease is its own: the key lasts as long as the longest,
 * and a reader whose lease ran out no longer counts. */
static void each_reader_has_its_own_lease(void **state)
{
    nodes *ns = *state;
    redlock_ctx *a = ctx_for(ns, NULL), *b = ctx_for(ns, NULL), *w = ctx_for(ns, NULL);
    redlock_handle *brief = take(a, "rw-lease", REDLOCK_READ, NULL, 300);
    redlock_handle *longer = take(b, "rw-lease", REDLOCK_READ, NULL, 2000);
    assert_pttl_on_every_node(ns, "rw-lease", 1000, 2000);
    sleep_ms(500);
    assert_fails(redlock_extend(brief, 1000), REDLOCK_ENOTHELD);
    refused(w, "rw-lease", REDLOCK_WRITE);
    assert_rc(redlock_extend(longer, 3000), REDLOCK_OK);
    assert_pttl_on_every_node(ns, "rw-lease", 2001, 3000);
    assert_rc(redlock_unlock(longer), REDLOCK_OK);
    assert_on_every_node(ns, "rw-lease", NULL);
    redlock_handle *wh = take(w, "rw-lease", REDLOCK_WRITE, NULL, 1000);
    assert_rc(redlock_unlock(wh), REDLOCK_OK);
    redlock_handle_free(brief);
    redlock_handle_free(longer);
    redlock_handle_free(wh);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
    redlock_ctx_free(w);
}

typedef struct writer {
    redlock_ctx *ctx;
    int rc;
    redlock_handle *h;
    _Atomic long long acquired_at;
} writer;

static void *write_lock(void *arg)
{
    writer *w = arg;
    w->rc = redlock_lock_rw(&w->h, w->ctx, "rw-wake", REDLOCK_WRITE, NULL, 5000, 2500);
    w->acquired_at = now_ms();
    return NULL;
}

/* A writer waiting for readers is woken by the last one's release: its own
 * retry (retry_delay_ms 3 s) comes after its wait ends. */
static void the_last_readers_release_wakes_the_writer(void **state)
{
    nodes *ns = *state;
    static const char *const slow[] = { "retry_delay_ms", "3000", "retry_jitter_ms", "0", NULL };
    redlock_ctx *a = ctx_for(ns, NULL), *b = ctx_for(ns, NULL);
    writer w = { .ctx = ctx_for(ns, slow) };
    redlock_handle *ra = take(a, "rw-wake", REDLOCK_READ, NULL, 10000);
    redlock_handle *rb = take(b, "rw-wake", REDLOCK_READ, NULL, 10000);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, write_lock, &w), 0);
    sleep_ms(300);
    assert_rc(redlock_unlock(ra), REDLOCK_OK);
    sleep_ms(300);
    assert_int_equal(atomic_load(&w.acquired_at), 0);   /* b still reads */
    assert_rc(redlock_unlock(rb), REDLOCK_OK);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, REDLOCK_OK);
    /* A quorum, not every node: the writer may have asked a node whose
     * reader b's release had not reached yet (the release returns once a
     * quorum let it go), and that node rightly refused it. */
    assert_on_a_quorum(ns, "rw-wake", redlock_handle_token(w.h));
    assert_rc(redlock_unlock(w.h), REDLOCK_OK);
    redlock_handle_free(ra);
    redlock_handle_free(rb);
    redlock_handle_free(w.h);
    redlock_ctx_free(a);
    redlock_ctx_free(b);
    redlock_ctx_free(w.ctx);
}

/* The writer takes the read lock beside its write lock, then lets the write
 * lock go: no other writer gets in between, and other readers join only
 * then. */
static void a_writer_downgrades_to_a_reader(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *other = ctx_for(ns, NULL);
    redlock_handle *wh = take(ctx, "rw-down", REDLOCK_WRITE, NULL, 1000);
    redlock_handle *rh = take(ctx, "rw-down", REDLOCK_READ, wh, 5000);
    assert_on_every_node(ns, "rw-down", redlock_handle_token(wh));
    refused(other, "rw-down", REDLOCK_READ);   /* the writer still holds it */
    /* A shorter extend of the write lock does not cut its reader short. */
    assert_rc(redlock_extend(wh, 500), REDLOCK_OK);
    assert_pttl_on_every_node(ns, "rw-down", 4000, 5000);
    assert_rc(redlock_unlock(wh), REDLOCK_OK);
    const char *reader[] = { redlock_handle_token(rh) };
    assert_readers_on_every_node(ns, "rw-down", reader, 1);   /* from beside the writer */
    refused(other, "rw-down", REDLOCK_WRITE);
    redlock_handle *joined = take(other, "rw-down", REDLOCK_READ, NULL, 1000);
    assert_rc(redlock_unlock(rh), REDLOCK_OK);
    assert_rc(redlock_unlock(joined), REDLOCK_OK);
    assert_on_every_node(ns, "rw-down", NULL);
    redlock_handle_free(wh);
    redlock_handle_free(rh);
    redlock_handle_free(joined);
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

static void a_reader_is_not_upgraded(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *rh = take(ctx, "rw-up", REDLOCK_READ, NULL, 5000);
    redlock_handle *h = NULL;
    assert_fails(redlock_lock_rw(&h, ctx, "rw-up", REDLOCK_WRITE, rh, 1000, 0), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "upgraded"));
    assert_null(h);
    assert_rc(redlock_unlock(rh), REDLOCK_OK);
    redlock_handle_free(rh);
    redlock_ctx_free(ctx);
}

/* A kept read lock is renewed past its lease, alone (rw.lua), and stays
 * shared. */
static void a_kept_read_lock_is_renewed(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *other = ctx_for(ns, NULL);
    redlock_handle *rh = take(ctx, "rw-kept", REDLOCK_READ, NULL, 900);
    redlock_handle *plain = NULL;
    assert_rc(redlock_lock(&plain, ctx, "rw-kept-plain", 900, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(rh, NULL, NULL), REDLOCK_OK);
    assert_rc(redlock_handle_watch(plain, NULL, NULL), REDLOCK_OK);
    sleep_ms(2500);
    assert_int_equal(redlock_handle_lost(rh), 0);
    assert_int_equal(redlock_handle_lost(plain), 0);
    const char *kept[] = { redlock_handle_token(rh) };
    assert_readers_on_every_node(ns, "rw-kept", kept, 1);
    refused(other, "rw-kept", REDLOCK_WRITE);
    assert_rc(redlock_unlock(rh), REDLOCK_OK);
    assert_rc(redlock_unlock(plain), REDLOCK_OK);
    assert_on_every_node(ns, "rw-kept", NULL);
    redlock_handle_free(rh);
    redlock_handle_free(plain);
    redlock_ctx_free(ctx);
    redlock_ctx_free(other);
}

static void the_write_lock_is_fenced_and_a_read_lock_is_not(void **state)
{
    nodes *ns = *state;
    static const char *const fencing[] = { "fencing", "1", NULL };
    redlock_ctx *ctx = ctx_for(ns, fencing);
    redlock_handle *wh = take(ctx, "rw-fence", REDLOCK_WRITE, NULL, 1000);
    int64_t first = 0, second = 0;
    assert_rc(redlock_handle_fence(wh, 0, &first), REDLOCK_OK);
    assert_true(first >= 1);
    assert_rc(redlock_unlock(wh), REDLOCK_OK);
    redlock_handle *rh = take(ctx, "rw-fence", REDLOCK_READ, NULL, 1000);
    int64_t none = -1;
    assert_rc(redlock_handle_fence(rh, 0, &none), REDLOCK_OK);
    assert_int_equal(none, 0);
    assert_rc(redlock_unlock(rh), REDLOCK_OK);
    redlock_handle *again = take(ctx, "rw-fence", REDLOCK_WRITE, NULL, 1000);
    assert_rc(redlock_handle_fence(again, 0, &second), REDLOCK_OK);
    assert_true(second > first);
    assert_rc(redlock_unlock(again), REDLOCK_OK);
    redlock_handle_free(wh);
    redlock_handle_free(rh);
    redlock_handle_free(again);
    redlock_ctx_free(ctx);
}

static void bad_input_is_refused_with_a_reason(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock_rw(&h, ctx, "rw-bad", 3, NULL, 1000, 0), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "mode"));
    assert_null(h);
    assert_fails(redlock_lock_rw(&h, ctx, NULL, REDLOCK_READ, NULL, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_rw(&h, NULL, "rw-bad", REDLOCK_READ, NULL, 1000, 0),
                 REDLOCK_EINVAL);
    /* held must be a lock of the same read-write lock. */
    redlock_handle *other = take(ctx, "rw-bad-other", REDLOCK_WRITE, NULL, 1000);
    assert_fails(redlock_lock_rw(&h, ctx, "rw-bad", REDLOCK_READ, other, 1000, 0),
                 REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "same resource"));
    redlock_handle *plain = NULL;
    assert_rc(redlock_lock(&plain, ctx, "rw-bad", 1000, 0), REDLOCK_OK);
    assert_fails(redlock_lock_rw(&h, ctx, "rw-bad", REDLOCK_READ, plain, 1000, 0),
                 REDLOCK_EINVAL);
    assert_rc(redlock_unlock(plain), REDLOCK_OK);
    assert_rc(redlock_unlock(other), REDLOCK_OK);
    redlock_handle_free(plain);
    redlock_handle_free(other);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(readers_share_it_and_keep_the_writer_out),
        cmocka_unit_test(readers_are_one_holder_to_a_query),
        cmocka_unit_test(each_reader_has_its_own_lease),
        cmocka_unit_test(the_last_readers_release_wakes_the_writer),
        cmocka_unit_test(a_writer_downgrades_to_a_reader),
        cmocka_unit_test(a_reader_is_not_upgraded),
        cmocka_unit_test(a_kept_read_lock_is_renewed),
        cmocka_unit_test(the_write_lock_is_fenced_and_a_read_lock_is_not),
        cmocka_unit_test(bad_input_is_refused_with_a_reason),
    };
    return cmocka_run_group_tests(tests, five_nodes_setup, nodes_teardown);
}
