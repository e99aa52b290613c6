/*
 * test_wakes.c - wake-ups tended (core/engine/wakes.c), through
 * redlock_engine.h's redlock_waiters, without Redis: when each node's
 * subscriber is connected, what it writes, what its bytes mean, when it is
 * closed and made again, and when there is nothing left to tend.
 */
#define _GNU_SOURCE   /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "redlock_engine.h"

#define N 3
#define T1 "0123456789abcdef0123456789abcdef"
#define NEVER INT64_MAX
#define NOW 1000000

typedef struct fixture {
    redlock_ctx *ctx;
    redlock_waiters *w;
    redlock_op *op;         /* a lock of "job", waiting: waiter 1 */
    char channel[128];
} fixture;

static int setup(void **state)
{
    static fixture f;
    const char *uris[N] = { "redis://127.0.0.1:1", "redis://127.0.0.1:2",
                            "redis://127.0.0.1:3" };
    const char *names[] = { "job" };
    memset(&f, 0, sizeof f);
    assert_int_equal(redlock_ctx_new(&f.ctx, uris, N), REDLOCK_OK);
    assert_int_equal(redlock_waiters_new(&f.w, f.ctx), REDLOCK_OK);
    assert_int_equal(redlock_op_lock(&f.op, f.ctx, names, 1, 10000, 5000, NOW), REDLOCK_OK);
    snprintf(f.channel, sizeof f.channel, "%s", redlock_op_key(f.op, 0));
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    redlock_op_free(f->op);
    redlock_waiters_free(f->w);
    redlock_ctx_free(f->ctx);
    return 0;
}

/* The nodes named by next_connect (or next_close), as a string of digits. */
static const char *nodes(redlock_waiters *w, int (*next)(redlock_waiters *))
{
    static char s[16];
    size_t n = 0;
    for (int i; (i = next(w)) >= 0 && n + 1 < sizeof s;)
        s[n++] = (char)('0' + i);
    s[n] = '\0';
    return s;
}

static void feed(fixture *f, size_t node, const char *bytes, int expected, int64_t now)
{
    assert_int_equal(redlock_waiters_received(f->w, node, bytes, strlen(bytes), now), expected);
}

/* The RESP of a confirmed subscription, or of a release of token. */
static const char *subscribed(const fixture *f)
{
    static char s[256];
    snprintf(s, sizeof s, "*3\r\n$9\r\nsubscribe\r\n$%zu\r\n%s\r\n:1\r\n", strlen(f->channel),
             f->channel);
    return s;
}

static const char *released(const fixture *f, const char *token)
{
    static char s[256];
    snprintf(s, sizeof s, "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
             strlen(f->channel), f->channel, strlen(token), token);
    return s;
}

/* Connects every node the drive names, as a driver would. */
static void connect_all(fixture *f, int64_t now)
{
    int64_t at;
    assert_int_equal(redlock_waiters_drive(f->w, now, &at), REDLOCK_WAITERS_CONNECT);
    assert_string_equal(nodes(f->w, redlock_waiters_next_connect), "012");
    for (size_t i = 0; i < N; i++)
        redlock_waiters_connected(f->w, i);
}

static void nothing_is_tended_until_someone_waits(void **state)
{
    fixture *f = *state;
    int64_t at = 0;
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at), 0);
    assert_true(at == NEVER);
    const char *bytes = NULL;
    assert_int_equal(redlock_waiters_output(f->w, 0, &bytes), 0);
    assert_string_equal(bytes, "");
}

static void a_waiter_brings_one_subscriber_per_node_subscribed_to_its_keys(void **state)
{
    fixture *f = *state;
    int64_t at;
    assert_int_equal(redlock_waiters_add(f->w, 1, f->op), REDLOCK_OK);
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at), REDLOCK_WAITERS_CONNECT);
    assert_string_equal(nodes(f->w, redlock_waiters_next_connect), "012");
    /* While they connect: nothing to write, nothing more to connect. */
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at), 0);
    assert_true(at == NEVER);
    redlock_waiters_connected(f->w, 1);
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at), REDLOCK_WAITERS_WRITE);
    const char *bytes;
    size_t n = redlock_waiters_output(f->w, 1, &bytes);
    assert_true(n > 0 && memmem(bytes, n, "SUBSCRIBE", 9) && memmem(bytes, n, f->channel,
                                                                      strlen(f->channel)));
    assert_int_equal(redlock_waiters_output(f->w, 0, &bytes), 0);   /* still connecting */
    redlock_waiters_wrote(f->w, 1, n);
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at), 0);
}

static void what_a_subscriber_hears_wakes_the_waiter(void **state)
{
    fixture *f = *state;
    int64_t at;
    assert_int_equal(redlock_waiters_add(f->w, 1, f->op), REDLOCK_OK);
    connect_all(f, NOW);
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at), REDLOCK_WAITERS_WRITE);
    /* A confirmed subscription wakes it once (the release may have come first). */
    feed(f, 0, subscribed(f), REDLOCK_OK, NOW);
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at) & REDLOCK_WAITERS_WAKE,
                     REDLOCK_WAITERS_WAKE);
    assert_int_equal(redlock_waiters_next(f->w), 1);
    assert_int_equal(redlock_waiters_next(f->w), 0);
    /* A release wakes it once a quorum (2 of 3) told it. */
    feed(f, 1, subscribed(f), REDLOCK_OK, NOW);
    feed(f, 0, released(f, T1), REDLOCK_OK, NOW);
    assert_int_equal(redlock_waiters_next(f->w), 0);
    feed(f, 2, released(f, T1), REDLOCK_OK, NOW);
    assert_int_equal(redlock_waiters_next(f->w), 1);
}

static void a_refusal_closes_the_subscriber_and_it_comes_back_after_a_long_pause(void **state)
{
    fixture *f = *state;
    int64_t at;
    assert_int_equal(redlock_waiters_add(f->w, 1, f->op), REDLOCK_OK);
    connect_all(f, NOW);
    feed(f, 2, "-NOPERM this user has no permissions to access one of the channels\r\n",
         REDLOCK_EREDIS, NOW);
    int todo = redlock_waiters_drive(f->w, NOW, &at);
    assert_int_equal(todo & (REDLOCK_WAITERS_CLOSE | REDLOCK_WAITERS_CONNECT),
                     REDLOCK_WAITERS_CLOSE);
    assert_string_equal(nodes(f->w, redlock_waiters_next_close), "2");
    assert_true(at > NOW + 30000 && at < NEVER);
    /* What the closed connection still delivers counts for nothing. */
    feed(f, 2, subscribed(f), REDLOCK_OK, NOW);
    assert_int_equal(redlock_waiters_next(f->w), 0);
    assert_int_equal(redlock_waiters_drive(f->w, at, NULL) & REDLOCK_WAITERS_CONNECT,
                     REDLOCK_WAITERS_CONNECT);
    assert_string_equal(nodes(f->w, redlock_waiters_next_connect), "2");
    /* The lock ends with a note that waiters were not woken. */
    redlock_waiters_remove(f->w, 1, f->op, NOW);
}

static void a_lost_subscriber_is_made_again_after_a_pause(void **state)
{
    fixture *f = *state;
    int64_t at;
    assert_int_equal(redlock_waiters_add(f->w, 1, f->op), REDLOCK_OK);
    connect_all(f, NOW);
    redlock_waiters_lost(f->w, 0, NOW);
    assert_int_equal(redlock_waiters_drive(f->w, NOW, &at) & ~REDLOCK_WAITERS_WRITE, 0);
    assert_true(at > NOW && at <= NOW + 5000);
    assert_int_equal(redlock_waiters_drive(f->w, at, NULL) & REDLOCK_WAITERS_CONNECT,
                     REDLOCK_WAITERS_CONNECT);
    assert_string_equal(nodes(f->w, redlock_waiters_next_connect), "0");
    /* Garbage from a node breaks its connection at once. */
    redlock_waiters_connected(f->w, 0);
    feed(f, 0, "?not redis\r\n", REDLOCK_EREDIS, at);
    assert_int_equal(redlock_waiters_drive(f->w, at, NULL) & REDLOCK_WAITERS_CLOSE,
                     REDLOCK_WAITERS_CLOSE);
    assert_string_equal(nodes(f->w, redlock_waiters_next_close), "0");
}

static void subscribers_linger_after_the_last_waiter_then_nothing_is_left(void **state)
{
    fixture *f = *state;
    int64_t at;
    assert_int_equal(redlock_waiters_add(f->w, 1, f->op), REDLOCK_OK);
    connect_all(f, NOW);
    redlock_waiters_remove(f->w, 1, f->op, NOW + 100);
    assert_int_equal(redlock_waiters_drive(f->w, NOW + 100, &at) & REDLOCK_WAITERS_CLOSE, 0);
    assert_true(at > NOW + 100 && at < NEVER);
    assert_int_equal(redlock_waiters_drive(f->w, at, NULL), REDLOCK_WAITERS_CLOSE);
    assert_string_equal(nodes(f->w, redlock_waiters_next_close), "012");
    assert_int_equal(redlock_waiters_drive(f->w, at, &at), 0);
    assert_true(at == NEVER);
    /* A waiter coming back starts over, at once. */
    assert_int_equal(redlock_waiters_add(f->w, 2, f->op), REDLOCK_OK);
    connect_all(f, NOW + 5000);
}

static void bad_arguments_are_refused_without_a_crash(void **state)
{
    fixture *f = *state;
    int64_t at = 0;
    const char *bytes = NULL;
    assert_int_equal(redlock_waiters_new(NULL, f->ctx), REDLOCK_EINVAL);
    assert_int_equal(redlock_waiters_add(f->w, 0, f->op), REDLOCK_EINVAL);
    assert_int_equal(redlock_waiters_add(NULL, 1, f->op), REDLOCK_EINVAL);
    assert_int_equal(redlock_waiters_received(f->w, 0, NULL, 3, NOW), REDLOCK_EINVAL);
    assert_int_equal(redlock_waiters_received(f->w, 99, "x", 1, NOW), REDLOCK_OK);
    assert_int_equal(redlock_waiters_drive(NULL, NOW, &at), 0);
    assert_true(at == NEVER);
    assert_int_equal(redlock_waiters_next_connect(NULL), -1);
    assert_int_equal(redlock_waiters_output(f->w, 99, &bytes), 0);
    redlock_waiters_connected(f->w, 99);
    redlock_waiters_lost(f->w, 99, NOW);
    redlock_waiters_wrote(NULL, 0, 1);
    redlock_waiters_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(nothing_is_tended_until_someone_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_waiter_brings_one_subscriber_per_node_subscribed_to_its_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(what_a_subscriber_hears_wakes_the_waiter, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_refusal_closes_the_subscriber_and_it_comes_back_after_a_long_pause, setup,
            teardown),
        cmocka_unit_test_setup_teardown(a_lost_subscriber_is_made_again_after_a_pause, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            subscribers_linger_after_the_last_waiter_then_nothing_is_left, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_arguments_are_refused_without_a_crash, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
