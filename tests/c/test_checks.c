/*
 * test_checks.c - what every binding checks and decodes through the library
 * (1.3): the rules of arguments and their one message each, the health of
 * the nodes field by field, the options' table, lists of node URIs; bad
 * arguments get a code and a message, never a crash. No node is contacted.
 */
#include "helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Asserts that the last call failed with message as its whole detail. */
#define assert_message(call, message)                                                    \
    do {                                                                                 \
        assert_fails(call, REDLOCK_EINVAL);                                              \
        assert_string_equal(redlock_errmsg(), message);                                  \
    } while (0)

#define LEASE_RULE "lease must be a time above 0 ms and at most 2147483647 ms, not "
#define WAIT_RULE "wait must be a finite time of 0 ms or more, not "
#define PERMITS_RULE "permits must be a whole number from 1 to 10000, not "

static int64_t checked(int arg, double value)
{
    int64_t out = -7;
    assert_rc(redlock_arg_check(&out, arg, NULL, value), REDLOCK_OK);
    return out;
}

static void arg_check_rounds_times_up_to_whole_ms(void **state)
{
    (void)state;
    assert_int_equal(checked(REDLOCK_ARG_LEASE, 1), 1);
    assert_int_equal(checked(REDLOCK_ARG_LEASE, 0.3), 1);
    assert_int_equal(checked(REDLOCK_ARG_LEASE, 1.1 * 1000), 1100);   /* 1100.0000000000002 */
    assert_int_equal(checked(REDLOCK_ARG_LEASE, 1100.001), 1101);
    assert_int_equal(checked(REDLOCK_ARG_LEASE, REDLOCK_MAX_TTL_MS), REDLOCK_MAX_TTL_MS);
    assert_int_equal(checked(REDLOCK_ARG_WAIT, 0), 0);
    assert_int_equal(checked(REDLOCK_ARG_WAIT, -0.0), 0);
    assert_int_equal(checked(REDLOCK_ARG_WAIT, 2.5), 3);
    assert_int_equal(checked(REDLOCK_ARG_WAIT, 1e300), INT64_C(4611686018427387904));
    assert_int_equal(checked(REDLOCK_ARG_PERMITS, 1), 1);
    assert_int_equal(checked(REDLOCK_ARG_PERMITS, REDLOCK_MAX_PERMITS), REDLOCK_MAX_PERMITS);
    assert_rc(redlock_arg_check(NULL, REDLOCK_ARG_LEASE, NULL, 1000), REDLOCK_OK);
    assert_string_equal(redlock_errmsg(), "");
}

static void arg_check_has_one_message_per_rule(void **state)
{
    (void)state;
    int64_t out = -7;
    assert_message(redlock_arg_check(&out, REDLOCK_ARG_LEASE, NULL, -1000), LEASE_RULE "-1000 ms");
    assert_int_equal(out, -7);
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_LEASE, NULL, 0), LEASE_RULE "0 ms");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_LEASE, NULL, 0.0004), LEASE_RULE "0 ms");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_LEASE, NULL, 2592000000.0),
                   LEASE_RULE "2592000000 ms");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_LEASE, NULL, 2147483647.5),
                   LEASE_RULE "2147483647.5 ms");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_LEASE, NULL, NAN), LEASE_RULE "NaN");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_LEASE, NULL, INFINITY),
                   LEASE_RULE "infinity");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_WAIT, NULL, -1000), WAIT_RULE "-1000 ms");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_WAIT, NULL, -0.5), WAIT_RULE "-0.5 ms");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_WAIT, NULL, NAN), WAIT_RULE "NaN");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_WAIT, NULL, INFINITY),
                   WAIT_RULE "infinity");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_WAIT, NULL, -INFINITY),
                   WAIT_RULE "-infinity");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_PERMITS, NULL, 0), PERMITS_RULE "0");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_PERMITS, NULL, 2.5), PERMITS_RULE "2.5");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_PERMITS, NULL, 10001),
                   PERMITS_RULE "10001");
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_PERMITS, NULL, NAN), PERMITS_RULE "NaN");
    /* what names the argument; an unknown kind is refused. */
    assert_message(redlock_arg_check(NULL, REDLOCK_ARG_WAIT, "timeout", -5000),
                   "timeout must be a finite time of 0 ms or more, not -5000 ms");
    assert_fails(redlock_arg_check(&out, 0, NULL, 1), REDLOCK_EINVAL);
    assert_fails(redlock_arg_check(&out, 99, NULL, 1), REDLOCK_EINVAL);
    assert_int_equal(out, -7);
}

/* The calls refuse their arguments with the rules' messages, before any I/O. */
static void calls_refuse_with_the_same_messages(void **state)
{
    (void)state;
    const char *uris[] = {"redis://127.0.0.1:1"};
    redlock_ctx *ctx = NULL;
    redlock_handle *h = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 1), REDLOCK_OK);
    assert_message(redlock_lock(&h, ctx, "x", 0, 0), LEASE_RULE "0 ms");
    assert_message(redlock_lock(&h, ctx, "x", -1000, 0), LEASE_RULE "-1000 ms");
    assert_message(redlock_lock(&h, ctx, "x", 1000, -1000), WAIT_RULE "-1000 ms");
    assert_message(redlock_lock_fair(&h, ctx, "x", INT64_C(2592000000), 0),
                   LEASE_RULE "2592000000 ms");
    assert_message(redlock_acquire_permit(&h, ctx, "x", 0, 1000, 0), PERMITS_RULE "0");
    int available = -1;
    assert_message(redlock_permits_available(ctx, "x", 10001, &available), PERMITS_RULE "10001");
    assert_null(h);
    redlock_ctx_free(ctx);
}

/* Two lines as redlock_ctx_health writes them. */
static const char health_text[] =
    "node=a:1 state=up for_ms=12 retry_in_ms=0 guard_ms=0 rtt_ms=0.3 commands=4 failures=1 "
    "timeouts=0 run_id=abc version=7.0 kind=master server=a:1 last_error=no%20route%25 conns=2 "
    "scripts=eval native=none scripting=yes\n"
    "node=unix:%2Ftmp%2Fx%20y.sock state=unknown for_ms=0 retry_in_ms=0 guard_ms=0 rtt_ms=-1 "
    "commands=0 failures=0 timeouts=0 run_id= version=0 kind=sentinel server=- last_error= "
    "conns=0 scripts=unknown native=unknown scripting=unknown\n";

static void assert_health(const char *text, size_t node, const char *field, int type,
                          const char *value)
{
    char buf[REDLOCK_HEALTH_LINE_MAX];
    assert_int_equal(redlock_health_type(text, node, field), type);
    assert_rc(redlock_health_value(text, node, field, buf, sizeof buf), REDLOCK_OK);
    assert_string_equal(buf, value);
}

static void health_is_read_field_by_field(void **state)
{
    (void)state;
    assert_int_equal(redlock_health_nodes(health_text), 2);
    assert_int_equal(redlock_health_nodes(""), 0);
    assert_int_equal(redlock_health_nodes(NULL), 0);
    static const struct {
        size_t node;
        const char *field;
        int type;
        const char *value;
    } expected[] = {
        {0, "node", REDLOCK_TYPE_TEXT, "a:1"},
        {0, "rtt_ms", REDLOCK_TYPE_REAL, "0.3"},
        {0, "for_ms", REDLOCK_TYPE_INT, "12"},
        {0, "conns", REDLOCK_TYPE_INT, "2"},
        {0, "server", REDLOCK_TYPE_TEXT, "a:1"},
        {0, "last_error", REDLOCK_TYPE_TEXT, "no route%"},
        {1, "node", REDLOCK_TYPE_TEXT, "unix:/tmp/x y.sock"},
        /* No value: one type, NONE, whatever the line writes for it. */
        {1, "rtt_ms", REDLOCK_TYPE_NONE, ""},
        {1, "server", REDLOCK_TYPE_NONE, ""},
        {1, "last_error", REDLOCK_TYPE_NONE, ""},
        {1, "run_id", REDLOCK_TYPE_TEXT, ""},
        {1, "kind", REDLOCK_TYPE_TEXT, "sentinel"},
        {0, "scripting", REDLOCK_TYPE_TEXT, "yes"},
    };
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++)
        assert_health(health_text, expected[i].node, expected[i].field, expected[i].type,
                      expected[i].value);

    /* Every field of the table is on every line, in its order. */
    size_t n = 0;
    while (redlock_health_field(n))
        n++;
    assert_int_equal(n, 18);
    assert_string_equal(redlock_health_field(0), "node");
    assert_null(redlock_health_field(n));
    assert_null(redlock_health_field(SIZE_MAX));
    for (size_t node = 0; node < 2; node++)
        for (size_t i = 0; i < n; i++)
            assert_true(redlock_health_type(health_text, node, redlock_health_field(i)) >= 0);
}

static void health_refuses_bad_arguments(void **state)
{
    (void)state;
    char buf[REDLOCK_HEALTH_LINE_MAX];
    assert_fails(redlock_health_type(NULL, 0, "node"), REDLOCK_EINVAL);
    assert_fails(redlock_health_type(health_text, 0, NULL), REDLOCK_EINVAL);
    assert_fails(redlock_health_type(health_text, 0, "nope"), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "nope"));
    assert_fails(redlock_health_type(health_text, 2, "node"), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "2 nodes"));
    assert_fails(redlock_health_type("node=a:1\n", 0, "state"), REDLOCK_EINVAL);
    assert_fails(redlock_health_value(NULL, 0, "node", buf, sizeof buf), REDLOCK_EINVAL);
    assert_fails(redlock_health_value(health_text, 0, "node", NULL, 10), REDLOCK_EINVAL);
    /* "no route%" takes 10 bytes with its NUL: 9 are too few, and buf is left alone. */
    strcpy(buf, "untouched");
    assert_fails(redlock_health_value(health_text, 0, "last_error", buf, 9), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "needs 10 bytes"));
    assert_string_equal(buf, "untouched");
    assert_rc(redlock_health_value(health_text, 0, "last_error", buf, 10), REDLOCK_OK);
    assert_fails(redlock_health_value(health_text, 1, "server", buf, 0), REDLOCK_EINVAL);
    assert_rc(redlock_health_value(health_text, 1, "server", buf, 1), REDLOCK_OK);
    assert_string_equal(buf, "");
}

/* A client's own health, before any I/O, reads back through the table. */
static void health_of_a_client_reads_back(void **state)
{
    (void)state;
    const char *uris[] = {"redis://127.0.0.1:1", "unix:///tmp/redlock test.sock"};
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 2), REDLOCK_OK);
    char text[2 * REDLOCK_HEALTH_LINE_MAX], buf[REDLOCK_HEALTH_LINE_MAX];
    assert_rc(redlock_ctx_health(ctx, text, sizeof text), REDLOCK_OK);
    assert_int_equal(redlock_health_nodes(text), 2);
    for (size_t i = 0; redlock_health_field(i); i++)
        assert_rc(redlock_health_value(text, 1, redlock_health_field(i), buf, sizeof buf),
                  REDLOCK_OK);
    assert_health(text, 0, "state", REDLOCK_TYPE_TEXT, "unknown");
    assert_health(text, 0, "rtt_ms", REDLOCK_TYPE_NONE, "");
    assert_health(text, 0, "last_error", REDLOCK_TYPE_NONE, "");
    assert_health(text, 1, "node", REDLOCK_TYPE_TEXT, "unix:/tmp/redlock test.sock");
    redlock_ctx_free(ctx);
}

static void options_table_reads_as_a_fresh_client(void **state)
{
    (void)state;
    const char *uris[] = {"redis://127.0.0.1:1"};
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 1), REDLOCK_OK);
    size_t n = redlock_option_count();
    assert_true(n >= 21);
    assert_null(redlock_option_name(n));
    for (size_t i = 0; i < n; i++) {
        const char *name = redlock_option_name(i);
        char def[256], now[256];
        assert_non_null(name);
        assert_true(redlock_option_type(name) >= REDLOCK_TYPE_TEXT);
        assert_rc(redlock_option_default(name, def, sizeof def), REDLOCK_OK);
        if (strcmp(name, "sentinel_password") == 0)
            continue;   /* write-only */
        assert_rc(redlock_ctx_get_option(ctx, name, now, sizeof now), REDLOCK_OK);
        if (strcmp(def, now) != 0)
            fail_msg("option %s: default '%s', a fresh client '%s'", name, def, now);
    }
    assert_int_equal(redlock_option_type("node_timeout_ms"), REDLOCK_TYPE_INT);
    assert_int_equal(redlock_option_type("fencing"), REDLOCK_TYPE_BOOL);
    assert_int_equal(redlock_option_type("drift_factor"), REDLOCK_TYPE_REAL);
    assert_int_equal(redlock_option_type("key_prefix"), REDLOCK_TYPE_TEXT);
    char def[8];
    assert_rc(redlock_option_default("watchdog_lease_ms", def, sizeof def), REDLOCK_OK);
    assert_string_equal(def, "30000");
    redlock_ctx_free(ctx);
}

static void options_table_refuses_bad_arguments(void **state)
{
    (void)state;
    char def[8] = "kept";
    assert_fails(redlock_option_type(NULL), REDLOCK_EINVAL);
    assert_fails(redlock_option_type("no_such_option"), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "known: node_timeout_ms"));
    assert_fails(redlock_option_default(NULL, def, sizeof def), REDLOCK_EINVAL);
    assert_fails(redlock_option_default("no_such_option", def, sizeof def), REDLOCK_EINVAL);
    assert_fails(redlock_option_default("watchdog_lease_ms", NULL, 8), REDLOCK_EINVAL);
    assert_fails(redlock_option_default("watchdog_lease_ms", def, 5), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "needs 6 bytes"));
    assert_string_equal(def, "kept");
    assert_null(redlock_option_name(SIZE_MAX));
}

static void assert_item(const char *list, size_t index, const char *uri)
{
    char buf[128];
    assert_rc(redlock_uri_list_item(list, index, buf, sizeof buf), REDLOCK_OK);
    assert_string_equal(buf, uri);
}

static void uri_lists_split_and_refuse_an_empty_uri(void **state)
{
    (void)state;
    assert_int_equal(redlock_uri_list_count(NULL), 0);
    assert_int_equal(redlock_uri_list_count(""), 0);
    assert_int_equal(redlock_uri_list_count(" \t "), 0);
    assert_int_equal(redlock_uri_list_count("redis://a"), 1);
    const char *list = " redis://a:1 ,redis-sentinel://s1,s2:5/?sentinelMasterId=m,\tunix:///x ";
    assert_int_equal(redlock_uri_list_count(list), 3);
    assert_item(list, 0, "redis://a:1");
    assert_item(list, 1, "redis-sentinel://s1,s2:5/?sentinelMasterId=m");
    assert_item(list, 2, "unix:///x");

    const char *holed = "redis://a, ,redis://c";   /* ", " starts no URI: it stays in the first */
    assert_int_equal(redlock_uri_list_count(holed), 2);
    assert_item(holed, 0, "redis://a,");
    const char *empty_first = " ,redis://b";
    char buf[64] = "kept";
    assert_int_equal(redlock_uri_list_count(empty_first), 2);
    assert_message(redlock_uri_list_item(empty_first, 0, buf, sizeof buf),
                   "URI 1 of the list of nodes is empty");
    assert_item(empty_first, 1, "redis://b");
    /* A comma that starts a URI is followed by one: only the first can be empty. */
    assert_int_equal(redlock_uri_list_count("redis://a,,redis://c"), 2);
    assert_item("redis://a,,redis://c", 0, "redis://a,");

    assert_fails(redlock_uri_list_item(NULL, 0, buf, sizeof buf), REDLOCK_EINVAL);
    assert_fails(redlock_uri_list_item("", 0, buf, sizeof buf), REDLOCK_EINVAL);
    assert_fails(redlock_uri_list_item(list, 3, buf, sizeof buf), REDLOCK_EINVAL);
    assert_fails(redlock_uri_list_item(list, 0, NULL, 64), REDLOCK_EINVAL);
    assert_fails(redlock_uri_list_item(list, 0, buf, 11), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "needs 12 bytes"));
    assert_string_equal(buf, "kept");
    assert_item(list, 0, "redis://a:1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arg_check_rounds_times_up_to_whole_ms),
        cmocka_unit_test(arg_check_has_one_message_per_rule),
        cmocka_unit_test(calls_refuse_with_the_same_messages),
        cmocka_unit_test(health_is_read_field_by_field),
        cmocka_unit_test(health_refuses_bad_arguments),
        cmocka_unit_test(health_of_a_client_reads_back),
        cmocka_unit_test(options_table_reads_as_a_fresh_client),
        cmocka_unit_test(options_table_refuses_bad_arguments),
        cmocka_unit_test(uri_lists_split_and_refuse_an_empty_uri),
    };
    return cmocka_run_group_tests_name("checks", tests, NULL, NULL);
}
