/*
 * test_keeper.c - the keeper of kept locks (redlock_engine.h's
 * redlock_keeper), driven at times of the test's (a third of the lease
 * ahead makes every lock due at once; the keeper reads no clock), its
 * operations run against real nodes by a small blocking driver of the
 * engine here, on the engine's clock: many locks renewed in batches, at most pool_size
 * renewals at once; a lock whose key was deleted reported lost, once; a
 * lock removed renewed no more, and its renewal under way told when it
 * ended; the owner's extension; no renewal once halted; bad arguments.
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "redlock_engine.h"

#define LEASE_MS 30000
#define DUE_MS (LEASE_MS / 3)   /* every lock is due this long after its last success */

static int64_t clock_now(void)
{
    return redlock_now_ms();
}

/* A time ahead of the engine's clock, to drive the keeper at. */
static int64_t ahead(int64_t ms)
{
    return redlock_now_ms() + ms;
}

/* ---- a blocking driver of one operation ---- */

static int connect_to(const redlock_ctx *ctx, const redlock_conn *c)
{
    const char *host = redlock_conn_host(c);
    int fd;
    if (host) {
        struct sockaddr_in a = { .sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)redlock_conn_port(c)) };
        if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
            return -1;
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            close(fd);
            fd = -1;
        }
    } else {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(a.sun_path, sizeof a.sun_path, "%s",
                 redlock_ctx_node_path(ctx, redlock_conn_node(c)));
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            close(fd);
            fd = -1;
        }
    }
    return fd;
}

/* Writes what c holds; false when the socket failed. */
static bool flush(redlock_conn *c, int fd)
{
    const char *bytes;
    size_t len;
    while ((len = redlock_conn_output(c, &bytes)) > 0) {
        ssize_t n = write(fd, bytes, len);
        if (n <= 0)
            return false;
        redlock_conn_wrote(c, (size_t)n);
    }
    return true;
}

/* Runs op to its end, over connections of its own, closed after. */
static void run_op(const redlock_ctx *ctx, redlock_op *op)
{
    redlock_conn *cs[REDLOCK_MAX_NODES] = { 0 };
    int fds[REDLOCK_MAX_NODES];
    size_t n = redlock_ctx_node_count(ctx);
    for (size_t i = 0; i < n; i++)
        fds[i] = -1;
    for (;;) {
        int64_t now = clock_now(), at;
        int what = redlock_op_drive(op, now, &at);
        if (what & REDLOCK_DRIVE_CONNECT) {
            for (int i = redlock_op_next_wanted(op, 0); i >= 0;
                 i = redlock_op_next_wanted(op, (size_t)i + 1)) {
                redlock_conn *c = redlock_op_connect(op, (size_t)i, now);
                if (!c)
                    continue;
                if (cs[i]) {
                    close(fds[i]);
                    redlock_conn_free(cs[i]);
                }
                cs[i] = c;
                fds[i] = connect_to(ctx, c);
                if (fds[i] < 0)
                    redlock_conn_lost(c, "cannot connect", now);
                else
                    redlock_conn_connected(c, now);
            }
            continue;
        }
        struct pollfd pfd[REDLOCK_MAX_NODES];
        size_t who[REDLOCK_MAX_NODES], k = 0;
        for (size_t i = 0; i < n; i++) {
            if (fds[i] < 0 || !redlock_conn_held(cs[i]))
                continue;
            if (!flush(cs[i], fds[i])) {
                redlock_conn_lost(cs[i], "write failed", now);
                continue;
            }
            pfd[k] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
            who[k++] = i;
        }
        if ((what & REDLOCK_DRIVE_DONE) && !(what & REDLOCK_DRIVE_TAIL))
            break;
        int64_t timeout = at - now;
        timeout = timeout < 0 ? 0 : timeout > 1000 ? 1000 : timeout;
        int r = poll(pfd, k, (int)timeout);
        now = clock_now();
        for (size_t j = 0; r > 0 && j < k; j++) {
            if (!pfd[j].revents)
                continue;
            char buf[65536];
            redlock_conn *c = cs[who[j]];
            ssize_t got = read(pfd[j].fd, buf, sizeof buf);
            if (got > 0)
                redlock_conn_received(c, buf, (size_t)got, now);
            else
                redlock_conn_lost(c, "closed by the node", now);
        }
    }
    while (redlock_op_take_conn(op)) {
    }
    for (size_t i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        redlock_conn_free(cs[i]);
    }
}

/* Runs a keeper's op, tells the keeper its end, and frees it. */
static void run_kept(redlock_ctx *ctx, redlock_keeper *k, redlock_op *op)
{
    run_op(ctx, op);
    assert_rc(redlock_keeper_op_ended(k, op, clock_now()), REDLOCK_OK);
    redlock_op_free(op);
}

/* ---- events ---- */

typedef struct told {
    int renewal_failed, lost;
    char last_lost[512];
} told;

static void on_event(void *data, int level, const char *event, const char *message)
{
    told *t = data;
    (void)level;
    if (strcmp(event, "renewal_failed") == 0)
        t->renewal_failed++;
    if (strcmp(event, "lost") == 0) {
        t->lost++;
        snprintf(t->last_lost, sizeof t->last_lost, "%s", message);
    }
}

/* A client of ns (options as ctx_for's), its events counted in *t, and
 * its keeper. */
static redlock_keeper *keeper_for(nodes *ns, const char *const *options, told *t,
                                  redlock_ctx **ctx)
{
    *ctx = ctx_for(ns, options);
    *t = (told){ 0 };
    assert_rc(redlock_ctx_set_log(*ctx, on_event, REDLOCK_LOG_WARN, t), REDLOCK_OK);
    redlock_keeper *k = NULL;
    assert_rc(redlock_keeper_new(&k, *ctx), REDLOCK_OK);
    return k;
}

static void done(redlock_keeper *k, redlock_ctx *ctx)
{
    redlock_keeper_free(k);
    redlock_ctx_free(ctx);
}

static redlock_handle *take(redlock_ctx *ctx, const char *name)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, name, LEASE_MS, 0), REDLOCK_OK);
    return h;
}

/* When h's validity runs out, by the engine's clock. */
static int64_t expiry(const redlock_handle *h)
{
    return redlock_now_ms() + redlock_handle_validity_ms(h);
}

/* Renewed since its expiry was `before`: a renewal comes at least
 * SETTLE_MS after the lock was taken, and moves its expiry as much. */
#define SETTLE_MS 20

static bool renewed(const redlock_handle *h, int64_t before)
{
    return expiry(h) > before + SETTLE_MS / 2;
}

static size_t count_renewed(redlock_handle *const *hs, const int64_t *before, size_t n)
{
    size_t renewed_now = 0;
    for (size_t i = 0; i < n; i++)
        renewed_now += renewed(hs[i], before[i]);
    return renewed_now;
}

/* Takes the expiries of n locks just taken, then lets SETTLE_MS pass. */
static void settle(redlock_handle *const *hs, int64_t *before, size_t n)
{
    for (size_t i = 0; i < n; i++)
        before[i] = expiry(hs[i]);
    sleep_ms(SETTLE_MS);
}

/* ---- the tests ---- */

enum { MANY = 1200 };   /* three renewals: 500, 500 and 200 locks */

static void many_locks_are_renewed_in_batches_at_most_pool_size_at_once(void **state)
{
    redlock_ctx *ctx;
    told t;
    const char *opts[] = { "pool_size", "2", NULL };
    redlock_keeper *k = keeper_for(*state, opts, &t, &ctx);
    static redlock_handle *hs[MANY];
    static int64_t before[MANY];
    int64_t start = clock_now(), at;
    for (size_t i = 0; i < MANY; i++) {
        char name[32];
        snprintf(name, sizeof name, "keeper-many-%zu", i);
        hs[i] = take(ctx, name);
        assert_rc(redlock_keeper_add(k, i + 1, hs[i], clock_now()), REDLOCK_OK);
    }
    /* Nothing is due before a third of the lease, less each lock's spread
     * (up to a twelfth of it). */
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), 0);
    assert_true(at >= start + DUE_MS - LEASE_MS / 12 && at <= clock_now() + DUE_MS);
    settle(hs, before, MANY);

    assert_int_equal(redlock_keeper_drive(k, ahead(DUE_MS), &at), REDLOCK_KEEPER_RUN);
    redlock_op *first = redlock_keeper_take_op(k), *second = redlock_keeper_take_op(k);
    assert_non_null(first);
    assert_non_null(second);
    assert_null(redlock_keeper_take_op(k));   /* two at once: the third waits */
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), 0);
    assert_int_equal(redlock_keeper_busy(k, 1), 1);

    run_kept(ctx, k, first);
    assert_int_equal(count_renewed(hs, before, MANY), 500);
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), REDLOCK_KEEPER_RUN);
    redlock_op *third = redlock_keeper_take_op(k);
    assert_non_null(third);
    assert_null(redlock_keeper_take_op(k));
    run_kept(ctx, k, second);
    assert_int_equal(count_renewed(hs, before, MANY), 1000);
    run_kept(ctx, k, third);
    assert_int_equal(count_renewed(hs, before, MANY), MANY);

    /* All renewed: next due a third of the lease from now, none lost. */
    int64_t now = clock_now();
    assert_int_equal(redlock_keeper_drive(k, now, &at), 0);
    assert_true(at > now + DUE_MS - LEASE_MS / 12 - 1000 && at <= now + DUE_MS);
    for (size_t i = 0; i < MANY; i++)
        assert_int_equal(redlock_keeper_status(k, i + 1), REDLOCK_OK);
    assert_int_equal(t.renewal_failed, 0);
    assert_int_equal(t.lost, 0);

    for (size_t i = 0; i < MANY; i++) {
        assert_int_equal(redlock_keeper_remove(k, i + 1), 0);
        assert_rc(redlock_unlock(hs[i]), REDLOCK_OK);
        redlock_handle_free(hs[i]);
    }
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), 0);
    assert_true(at == INT64_MAX);
    done(k, ctx);
}

static void a_lock_whose_key_was_deleted_is_reported_lost_once(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx;
    told t;
    redlock_keeper *k = keeper_for(ns, NULL, &t, &ctx);
    redlock_handle *hs[3] = { take(ctx, "keeper-gone-0"), take(ctx, "keeper-gone-1"),
                              take(ctx, "keeper-gone-2") };
    int64_t before[3];
    for (uint64_t i = 0; i < 3; i++)
        assert_rc(redlock_keeper_add(k, 10 + i, hs[i], clock_now()), REDLOCK_OK);
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exec(ns, i, "DEL keeper-gone-1"), 0);
    settle(hs, before, 3);

    int64_t at;
    assert_int_equal(redlock_keeper_drive(k, ahead(DUE_MS), &at), REDLOCK_KEEPER_RUN);
    redlock_op *op = redlock_keeper_take_op(k);
    assert_null(redlock_keeper_take_op(k));   /* the three in one renewal */
    run_kept(ctx, k, op);
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), REDLOCK_KEEPER_LOST);
    assert_true(redlock_keeper_next_lost(k) == 11);
    assert_true(redlock_keeper_next_lost(k) == 0);
    assert_int_equal(redlock_keeper_status(k, 11), REDLOCK_ENOTHELD);
    assert_non_null(strstr(redlock_keeper_message(k, 11), "keeper-gone-1"));
    assert_int_equal(t.lost, 1);
    assert_non_null(strstr(t.last_lost, "keeper-gone-1"));
    assert_int_equal(redlock_keeper_status(k, 10), REDLOCK_OK);
    assert_string_equal(redlock_keeper_message(k, 10), "");
    assert_true(renewed(hs[0], before[0]) && renewed(hs[2], before[2]));

    /* Lost, it is renewed no more, and not told again. */
    assert_int_equal(redlock_keeper_drive(k, ahead(DUE_MS), &at), REDLOCK_KEEPER_RUN);
    op = redlock_keeper_take_op(k);
    run_kept(ctx, k, op);
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), 0);
    assert_int_equal(t.lost, 1);
    assert_int_equal(redlock_keeper_busy(k, 11), 0);
    assert_int_equal(redlock_keeper_remove(k, 11), 0);
    assert_fails(redlock_keeper_remove(k, 11), REDLOCK_EINVAL);
    for (uint64_t i = 0; i < 3; i++) {
        if (i != 1)
            assert_int_equal(redlock_keeper_remove(k, 10 + i), 0);
        redlock_unlock(hs[i]);
        redlock_handle_free(hs[i]);
    }
    done(k, ctx);
}

static void a_lock_removed_is_renewed_no_more(void **state)
{
    redlock_ctx *ctx;
    told t;
    redlock_keeper *k = keeper_for(*state, NULL, &t, &ctx);
    redlock_handle *hs[2] = { take(ctx, "keeper-removed-a"), take(ctx, "keeper-removed-b") };
    redlock_handle *a = hs[0], *b = hs[1];
    int64_t before[2];
    assert_rc(redlock_keeper_add(k, 1, a, clock_now()), REDLOCK_OK);
    assert_rc(redlock_keeper_add(k, 2, b, clock_now()), REDLOCK_OK);
    assert_int_equal(redlock_keeper_remove(k, 1), 0);   /* nothing under way: done */
    settle(hs, before, 2);

    int64_t at;
    assert_int_equal(redlock_keeper_drive(k, ahead(DUE_MS), &at), REDLOCK_KEEPER_RUN);
    run_kept(ctx, k, redlock_keeper_take_op(k));
    assert_false(renewed(a, before[0]));
    assert_true(renewed(b, before[1]));

    /* Removed with its renewal under way: told once that renewal ended. */
    assert_int_equal(redlock_keeper_drive(k, ahead(DUE_MS), &at), REDLOCK_KEEPER_RUN);
    redlock_op *op = redlock_keeper_take_op(k);
    assert_int_equal(redlock_keeper_remove(k, 2), 1);
    assert_int_equal(redlock_keeper_busy(k, 2), 1);
    assert_int_equal(redlock_keeper_status(k, 2), REDLOCK_EINVAL);
    assert_fails(redlock_keeper_add(k, 2, b, clock_now()), REDLOCK_EINVAL);   /* still in use */
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), 0);
    run_kept(ctx, k, op);
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), REDLOCK_KEEPER_ENDED);
    assert_true(redlock_keeper_next_ended(k) == 2);
    assert_true(redlock_keeper_next_ended(k) == 0);
    assert_int_equal(redlock_keeper_busy(k, 2), REDLOCK_EINVAL);
    assert_int_equal(redlock_keeper_drive(k, clock_now(), &at), 0);
    assert_true(at == INT64_MAX);   /* nothing kept */

    assert_rc(redlock_unlock(a), REDLOCK_OK);
    assert_rc(redlock_unlock(b), REDLOCK_OK);
    redlock_handle_free(a);
    redlock_handle_free(b);
    done(k, ctx);
}

/* The owner's extension goes through the keeper: none while a renewal runs,
 * and the next renewal is planned from it. */
static void the_owners_extension_plans_the_next_renewal(void **state)
{
    redlock_ctx *ctx;
    told t;
    redlock_keeper *k = keeper_for(*state, NULL, &t, &ctx);
    redlock_handle *h = take(ctx, "keeper-owner");
    assert_rc(redlock_keeper_add(k, 7, h, clock_now()), REDLOCK_OK);
    int64_t at;
    assert_int_equal(redlock_keeper_drive(k, ahead(DUE_MS), &at), REDLOCK_KEEPER_RUN);
    redlock_op *renewal = redlock_keeper_take_op(k), *op = NULL;
    assert_fails(redlock_keeper_extend(&op, k, 7, 3000, clock_now()), REDLOCK_EINVAL);
    assert_null(op);
    run_kept(ctx, k, renewal);
    assert_int_equal(redlock_keeper_busy(k, 7), 0);

    assert_rc(redlock_keeper_extend(&op, k, 7, 3000, clock_now()), REDLOCK_OK);
    assert_int_equal(redlock_keeper_busy(k, 7), 1);
    run_kept(ctx, k, op);
    int64_t now = clock_now();
    assert_int_equal(redlock_keeper_drive(k, now, &at), 0);
    /* A third of the new lease, less its spread (a twelfth of it at most). */
    assert_true(at > now + 1000 - 250 - 100 && at <= now + 1000);
    assert_true(redlock_handle_validity_ms(h) <= 3000);

    assert_int_equal(redlock_keeper_remove(k, 7), 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    done(k, ctx);
}

/* Halted (its client closing), the keeper starts no renewal, and finds the
 * lock lost when its validity runs out. */
static void halted_it_renews_nothing_and_finds_the_loss(void **state)
{
    redlock_ctx *ctx;
    told t;
    redlock_keeper *k = keeper_for(*state, NULL, &t, &ctx);
    redlock_handle *h = take(ctx, "keeper-halted");
    assert_rc(redlock_keeper_add(k, 3, h, clock_now()), REDLOCK_OK);
    redlock_keeper_halt(k);
    int64_t at, now = ahead(DUE_MS);
    assert_int_equal(redlock_keeper_drive(k, now, &at), 0);
    assert_true(at > now && at <= now + 2 * DUE_MS);   /* when validity runs out */
    assert_int_equal(redlock_keeper_drive(k, ahead(LEASE_MS), &at), REDLOCK_KEEPER_LOST);
    assert_true(redlock_keeper_next_lost(k) == 3);
    assert_int_equal(redlock_keeper_status(k, 3), REDLOCK_EEXPIRED);
    assert_int_equal(t.lost, 1);
    assert_int_equal(redlock_keeper_remove(k, 3), 0);
    redlock_handle_free(h);
    done(k, ctx);
}

static void bad_arguments_are_refused(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL), *other = ctx_for(ns, NULL);
    redlock_keeper *k = (redlock_keeper *)&unset_out;
        assert_fails(redlock_keeper_new(NULL, ctx), REDLOCK_EINVAL);
    assert_fails(redlock_keeper_new(&k, NULL), REDLOCK_EINVAL);
    assert_null(k);
    assert_rc(redlock_keeper_new(&k, ctx), REDLOCK_OK);
    redlock_handle *h = take(ctx, "keeper-bad"), *elsewhere = take(other, "keeper-bad-other");
    int64_t now = clock_now(), at = 0;

    assert_fails(redlock_keeper_add(NULL, 1, h, now), REDLOCK_EINVAL);
    assert_fails(redlock_keeper_add(k, 1, NULL, now), REDLOCK_EINVAL);
    assert_fails(redlock_keeper_add(k, 0, h, now), REDLOCK_EINVAL);
    assert_fails(redlock_keeper_add(k, 1, elsewhere, now), REDLOCK_EINVAL);
    assert_rc(redlock_keeper_add(k, 1, h, now), REDLOCK_OK);
    assert_fails(redlock_keeper_add(k, 1, h, now), REDLOCK_EINVAL);
    assert_rc(redlock_unlock(elsewhere), REDLOCK_OK);
    redlock_handle_free(elsewhere);

    /* A handle not held: released, or its validity over. */
    redlock_handle *released = take(ctx, "keeper-bad-released");
    assert_rc(redlock_unlock(released), REDLOCK_OK);
    assert_fails(redlock_keeper_add(k, 2, released, now), REDLOCK_ENOTHELD);
    redlock_handle_free(released);
    assert_fails(redlock_keeper_add(k, 2, h, now + 2 * LEASE_MS), REDLOCK_ENOTHELD);

    /* Ids not kept. */
    assert_fails(redlock_keeper_remove(k, 99), REDLOCK_EINVAL);
    assert_fails(redlock_keeper_remove(NULL, 1), REDLOCK_EINVAL);
    assert_int_equal(redlock_keeper_status(k, 99), REDLOCK_EINVAL);
    assert_true(redlock_keeper_message(k, 99)[0] != '\0');
    assert_int_equal(redlock_keeper_status(NULL, 1), REDLOCK_EINVAL);
    assert_int_equal(redlock_keeper_busy(k, 99), REDLOCK_EINVAL);
    redlock_op *op = (redlock_op *)&unset_out;
    assert_fails(redlock_keeper_extend(&op, k, 99, 1000, now), REDLOCK_EINVAL);
    assert_null(op);
    assert_fails(redlock_keeper_extend(NULL, k, 1, 1000, now), REDLOCK_EINVAL);

    /* An operation that is not the keeper's. */
    assert_rc(redlock_op_extend(&op, h, LEASE_MS, now), REDLOCK_OK);
    assert_fails(redlock_keeper_op_ended(k, op, now), REDLOCK_EINVAL);
    redlock_op_free(op);
    assert_fails(redlock_keeper_op_ended(k, NULL, now), REDLOCK_EINVAL);

    /* NULL keeper: nothing to do. */
    assert_int_equal(redlock_keeper_drive(NULL, now, &at), 0);
    assert_true(at == INT64_MAX);
    assert_null(redlock_keeper_take_op(NULL));
    assert_true(redlock_keeper_next_lost(NULL) == 0);
    assert_true(redlock_keeper_next_ended(NULL) == 0);
    redlock_keeper_halt(NULL);
    redlock_keeper_free(NULL);

    assert_int_equal(redlock_keeper_remove(k, 1), 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_keeper_free(k);
    redlock_ctx_free(other);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(many_locks_are_renewed_in_batches_at_most_pool_size_at_once),
        cmocka_unit_test(a_lock_whose_key_was_deleted_is_reported_lost_once),
        cmocka_unit_test(a_lock_removed_is_renewed_no_more),
        cmocka_unit_test(the_owners_extension_plans_the_next_renewal),
        cmocka_unit_test(halted_it_renews_nothing_and_finds_the_loss),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, five_nodes_setup, nodes_teardown);
}
