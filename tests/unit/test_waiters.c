/*
 * test_waiters.c - who is woken when (core/engine/waiters.c) and what a subscriber
 * hears (core/engine/sub.c), without Redis: subscriptions confirmed wake every
 * waiter once, a release wakes the longest waiter once a quorum told it and
 * again on each later message, the subscriptions follow the waiters, and
 * the subscriber connections' pauses and linger.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sub.h"
#include "waiters.h"

#define N 5
#define T1 "0123456789abcdef0123456789abcdef"
#define T2 "fedcba9876543210fedcba9876543210"

static const char *const just_a[] = { "a" };
static const char *const a_and_b[] = { "b", "a" };

/* The ids rl_waiters_next gives, in order, as a string of digits. */
static const char *woken(rl_waiters *w)
{
    static char ids[32];
    size_t n = 0;
    uint64_t id;
    while ((id = rl_waiters_next(w)) != 0 && n + 1 < sizeof ids)
        ids[n++] = (char)('0' + id);
    ids[n] = '\0';
    return ids;
}

static void message(rl_waiters *w, size_t node, const char *channel, const char *token)
{
    assert_false(rl_waiters_event(w, node, RL_SUB_MESSAGE, channel, token));
}

static void a_confirmed_subscription_wakes_each_waiter_once(void **state)
{
    (void)state;
    rl_waiters *w = rl_waiters_new(N);
    assert_int_equal(rl_waiters_add(w, 1, just_a, 1), REDLOCK_OK);
    assert_int_equal(rl_waiters_add(w, 2, a_and_b, 2), REDLOCK_OK);
    assert_int_equal(rl_waiters_add(w, 3, a_and_b, 1), REDLOCK_OK);   /* "b" only */
    assert_string_equal(woken(w), "");
    assert_false(rl_waiters_event(w, 0, RL_SUB_SUBSCRIBED, "a", ""));
    assert_string_equal(woken(w), "12");
    /* The same channel on another node, or another of its channels: once. */
    assert_false(rl_waiters_event(w, 1, RL_SUB_SUBSCRIBED, "a", ""));
    assert_false(rl_waiters_event(w, 0, RL_SUB_SUBSCRIBED, "b", ""));
    assert_string_equal(woken(w), "3");
    assert_false(rl_waiters_event(w, 0, RL_SUB_SUBSCRIBED, "nobody", ""));
    assert_string_equal(woken(w), "");
    rl_waiters_free(w);
}

static void a_release_wakes_the_longest_waiter_once_a_quorum_told_it(void **state)
{
    (void)state;
    rl_waiters *w = rl_waiters_new(N);
    assert_int_equal(rl_waiters_add(w, 1, just_a, 1), REDLOCK_OK);
    assert_int_equal(rl_waiters_add(w, 2, just_a, 1), REDLOCK_OK);
    message(w, 0, "a", T1);
    message(w, 1, "a", T1);
    assert_string_equal(woken(w), "");   /* 2 of 5: still held on too many nodes */
    message(w, 3, "a", T1);
    assert_string_equal(woken(w), "1");
    /* Each later message of it tells the longest waiter again. */
    message(w, 4, "a", T1);
    assert_string_equal(woken(w), "1");
    /* The first took it; a message of its release counts from its own start. */
    rl_waiters_remove(w, 1, 100);
    message(w, 0, "a", T2);
    message(w, 2, "a", T2);
    assert_string_equal(woken(w), "");
    message(w, 2, "a", T2);   /* the same node twice is one teller */
    assert_string_equal(woken(w), "");
    message(w, 4, "a", T2);
    assert_string_equal(woken(w), "2");
    /* Another channel's release wakes nobody here. */
    message(w, 0, "b", T1);
    message(w, 1, "b", T1);
    message(w, 2, "b", T1);
    assert_string_equal(woken(w), "");
    rl_waiters_free(w);
}

static void a_waiter_removed_is_not_woken(void **state)
{
    (void)state;
    rl_waiters *w = rl_waiters_new(3);
    assert_int_equal(rl_waiters_add(w, 1, a_and_b, 2), REDLOCK_OK);
    assert_int_equal(rl_waiters_add(w, 2, just_a, 1), REDLOCK_OK);
    assert_false(rl_waiters_event(w, 0, RL_SUB_SUBSCRIBED, "a", ""));
    rl_waiters_remove(w, 1, 0);
    assert_string_equal(woken(w), "2");
    /* A multi-key waiter hears the release of any of its keys. */
    assert_int_equal(rl_waiters_add(w, 3, a_and_b, 2), REDLOCK_OK);
    message(w, 0, "b", T1);
    message(w, 2, "b", T1);
    assert_string_equal(woken(w), "3");
    rl_waiters_remove(w, 7, 0);   /* not registered: nothing happens */
    rl_waiters_free(w);
}

/* What s has to write, as text, then marked written. */
static const char *written(rl_sub *s)
{
    static char text[512];
    const char *bytes;
    size_t n = rl_sub_output(s, &bytes);
    assert_true(n < sizeof text);
    memcpy(text, bytes, n);
    text[n] = '\0';
    rl_sub_wrote(s, n);
    return text;
}

static void subscriptions_follow_the_waiters(void **state)
{
    (void)state;
    rl_node_addr addr = { .host = "10.0.0.1", .port = 6379 };
    rl_sub *s = rl_sub_new(&addr);
    rl_waiters *w = rl_waiters_new(N);
    assert_int_equal(rl_waiters_add(w, 1, a_and_b, 2), REDLOCK_OK);
    assert_int_equal(rl_waiters_add(w, 2, just_a, 1), REDLOCK_OK);
    assert_int_equal(rl_waiters_match(w, 2, s), REDLOCK_OK);
    const char *out = written(s);
    assert_non_null(strstr(out, "SUBSCRIBE\r\n$1\r\na\r\n"));
    assert_non_null(strstr(out, "SUBSCRIBE\r\n$1\r\nb\r\n"));
    assert_int_equal(rl_waiters_match(w, 2, s), REDLOCK_OK);
    assert_string_equal(written(s), "");
    /* "b" is waited for no more, "a" still is. */
    rl_waiters_remove(w, 1, 0);
    assert_int_equal(rl_waiters_match(w, 2, s), REDLOCK_OK);
    assert_string_equal(written(s), "*2\r\n$11\r\nUNSUBSCRIBE\r\n$1\r\nb\r\n");
    /* A connection made again subscribes again. */
    rl_waiters_closed(w, 2, true, 0);
    assert_int_equal(rl_waiters_match(w, 2, s), REDLOCK_OK);
    assert_string_equal(written(s), "*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n");
    rl_waiters_remove(w, 2, 0);
    assert_int_equal(rl_waiters_match(w, 2, s), REDLOCK_OK);
    assert_string_equal(written(s), "*2\r\n$11\r\nUNSUBSCRIBE\r\n$1\r\na\r\n");
    assert_int_equal(rl_waiters_match(w, 2, s), REDLOCK_OK);
    assert_string_equal(written(s), "");
    rl_waiters_free(w);
    rl_sub_free(s);
}

static void connections_linger_and_pause_after_failures(void **state)
{
    (void)state;
    rl_waiters *w = rl_waiters_new(N);
    assert_true(rl_waiters_idle_at(w) < 0);   /* nobody ever waited: none needed */
    assert_int_equal(rl_waiters_add(w, 1, just_a, 1), REDLOCK_OK);
    assert_true(rl_waiters_idle_at(w) == INT64_MAX);
    assert_int_equal(rl_waiters_add(w, 2, just_a, 1), REDLOCK_OK);
    rl_waiters_remove(w, 1, 1000);
    assert_true(rl_waiters_idle_at(w) == INT64_MAX);
    rl_waiters_remove(w, 2, 1000);
    assert_int_equal(rl_waiters_idle_at(w), 1000 + RL_WAITERS_LINGER_MS);
    assert_int_equal(rl_waiters_add(w, 3, just_a, 1), REDLOCK_OK);
    assert_true(rl_waiters_idle_at(w) == INT64_MAX);

    assert_int_equal(rl_waiters_connect_at(w, 1), 0);
    rl_waiters_closed(w, 1, true, 5000);
    assert_int_equal(rl_waiters_connect_at(w, 1), 5000 + RL_WAITERS_RECONNECT_MS);
    assert_string_equal(rl_waiters_note(w), "");
    assert_true(rl_waiters_event(w, 3, RL_SUB_REFUSED, "", "NOPERM no permission"));
    assert_non_null(strstr(rl_waiters_note(w), "refused SUBSCRIBE (NOPERM no permission)"));
    rl_waiters_closed(w, 3, true, 5000);
    assert_int_equal(rl_waiters_connect_at(w, 3), 5000 + RL_WAITERS_REFUSED_MS);
    /* Closed by the driver once idle: a new one may come at once. */
    rl_waiters_closed(w, 3, false, 6000);
    assert_int_equal(rl_waiters_connect_at(w, 3), 0);
    rl_waiters_closed(w, 4, true, 7000);   /* no refusal on node 4: the short pause */
    assert_int_equal(rl_waiters_connect_at(w, 4), 7000 + RL_WAITERS_RECONNECT_MS);
    rl_waiters_free(w);
}

/* Feeds text to s, then checks the events it gives, "kind channel text"
 * each, separated by '|'. */
static void hears(rl_sub *s, const char *text, const char *expected)
{
    char got[512] = "";
    assert_int_equal(rl_sub_received(s, text, strlen(text)), REDLOCK_OK);
    for (int event; (event = rl_sub_next(s)) != RL_SUB_NONE;) {
        size_t len = strlen(got);
        snprintf(got + len, sizeof got - len, "%s%d %s %s", len ? "|" : "", event,
                 rl_sub_channel(s), rl_sub_text(s));
        if (event < 0)
            break;
    }
    assert_string_equal(got, expected);
}

static void a_subscriber_hears_confirmations_messages_and_refusals(void **state)
{
    (void)state;
    rl_node_addr addr = { .host = "10.0.0.1", .port = 6379, .user = "app", .password = "pw" };
    rl_sub *s = rl_sub_new(&addr);
    assert_string_equal(written(s), "*3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$2\r\npw\r\n");
    /* AUTH's +OK means nothing; a push cut in two is heard once whole. */
    hears(s, "+OK\r\n*3\r\n$9\r\nsubscribe\r\n$4\r\nlock\r\n:1\r\n*3\r\n$7\r\nmess", "1 lock ");
    hears(s, "age\r\n$4\r\nlock\r\n$3\r\ntok\r\n", "2 lock tok");
    hears(s, "*3\r\n$11\r\nunsubscribe\r\n$4\r\nlock\r\n:0\r\n", "");
    hears(s, "-NOPERM this user has no permissions to access one of the channels\r\n",
          "3  NOPERM this user has no permissions to access one of the channels");
    /* What is not Redis protocol, or goes past a message's bounds, is
     * refused as it arrives (bound.h). */
    assert_int_equal(rl_sub_received(s, "?junk\r\n", 7), REDLOCK_EREDIS);
    assert_int_equal(rl_sub_next(s), REDLOCK_EREDIS);
    rl_sub_free(s);
    s = rl_sub_new(&addr);
    assert_int_equal(rl_sub_received(s, "$2000000000\r\n", 13), REDLOCK_EREDIS);
    assert_int_equal(rl_sub_next(s), REDLOCK_EREDIS);
    rl_sub_free(s);
    s = rl_sub_new(&addr);
    assert_int_equal(rl_sub_received(s, "*2147483647\r\n", 13), REDLOCK_EREDIS);
    assert_int_equal(rl_sub_received(s, "+OK\r\n", 5), REDLOCK_EREDIS);
    rl_sub_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_confirmed_subscription_wakes_each_waiter_once),
        cmocka_unit_test(a_release_wakes_the_longest_waiter_once_a_quorum_told_it),
        cmocka_unit_test(a_waiter_removed_is_not_woken),
        cmocka_unit_test(subscriptions_follow_the_waiters),
        cmocka_unit_test(connections_linger_and_pause_after_failures),
        cmocka_unit_test(a_subscriber_hears_confirmations_messages_and_refusals),
    };
    return cmocka_run_group_tests_name("waiters", tests, NULL, NULL);
}
