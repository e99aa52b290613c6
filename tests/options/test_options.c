/*
 * test_options.c - the options, driven by their one table: every default
 * reads back, every value set reads back, and every bound holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base.h"
#include "options.h"

static char *get(const rl_options *o, const char *name)
{
    static char buf[4200];
    assert_int_equal(rl_options_get(o, name, buf, sizeof buf), REDLOCK_OK);
    return buf;
}

static void defaults_read_back(void **state)
{
    (void)state;
    rl_options o;
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    for (size_t i = 0; i < rl_options_count(); i++) {
        const rl_option_info *info = rl_options_info(i);
        assert_string_equal(get(&o, info->name), info->def);
    }
    assert_null(rl_options_info(rl_options_count()));
    rl_options_free(&o);
}

/* For each whole-number option (INT, and BOOL: 0 or 1): its bounds are
 * taken, one past them is not, and what is set reads back. */
static void whole_numbers_keep_their_bounds(void **state)
{
    (void)state;
    rl_options o;
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    for (size_t i = 0; i < rl_options_count(); i++) {
        const rl_option_info *info = rl_options_info(i);
        if (strcmp(info->kind, "INT") != 0 && strcmp(info->kind, "BOOL") != 0)
            continue;
        long long min = atoll(info->min), max = atoll(info->max);
        char text[32];
        assert_int_equal(rl_options_set(&o, info->name, info->min), REDLOCK_OK);
        assert_string_equal(get(&o, info->name), info->min);
        assert_int_equal(rl_options_set(&o, info->name, info->max), REDLOCK_OK);
        assert_string_equal(get(&o, info->name), info->max);
        snprintf(text, sizeof text, "%lld", max + 1);
        assert_int_equal(rl_options_set(&o, info->name, text), REDLOCK_EINVAL);
        assert_non_null(strstr(redlock_errmsg(), "must be a whole number from"));
        if (min > 0) {
            snprintf(text, sizeof text, "%lld", min - 1);
            assert_int_equal(rl_options_set(&o, info->name, text), REDLOCK_EINVAL);
        }
        assert_int_equal(rl_options_set(&o, info->name, "-1"), REDLOCK_EINVAL);
        assert_int_equal(rl_options_set(&o, info->name, "12abc"), REDLOCK_EINVAL);
        assert_non_null(strstr(redlock_errmsg(), ", not '12abc'"));
        assert_string_equal(get(&o, info->name), info->max);
    }
    rl_options_free(&o);
}

/* The values land in the fields the rest of core/ reads, at their own
 * widths (int, bool, int64_t), not only in what rl_options_get says. */
static void values_reach_their_fields(void **state)
{
    (void)state;
    rl_options o;
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    assert_int_equal(o.node_timeout_ms, 50);
    assert_int_equal(o.pool_size, 16);
    assert_true(o.restart_guard);
    assert_true(o.drift_factor == 0.01);
    assert_string_equal(o.key_prefix, "");
    assert_int_equal(o.key_prefix_len, 0);

    assert_int_equal(rl_options_set(&o, "pool_size", "7"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "restart_guard", "0"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "retry_jitter_ms", "3600000"), REDLOCK_OK);
    assert_int_equal(o.pool_size, 7);
    assert_false(o.restart_guard);
    assert_int_equal(o.retry_jitter_ms, 3600000);
    assert_int_equal(rl_options_set(&o, "restart_guard", "2"), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "option restart_guard: must be a whole number from 0 to 1, not '2'"));
    assert_false(o.restart_guard);
    rl_options_free(&o);
}

static void drift_factor_is_a_fraction_below_one(void **state)
{
    (void)state;
    rl_options o;
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "drift_factor", "0.25"), REDLOCK_OK);
    assert_string_equal(get(&o, "drift_factor"), "0.25");
    assert_int_equal(rl_options_set(&o, "drift_factor", ".5"), REDLOCK_OK);
    assert_string_equal(get(&o, "drift_factor"), "0.5");
    assert_int_equal(rl_options_set(&o, "drift_factor", "0"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "drift_factor", "0.999"), REDLOCK_OK);
    assert_string_equal(get(&o, "drift_factor"), "0.999");
    assert_int_equal(rl_options_set(&o, "drift_factor", "-0.1"), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(),
                           "option drift_factor: must be a number from 0 and below 1, not '-0.1'"));
    /* A negative whole number says the rule too, not only that it is none. */
    assert_int_equal(rl_options_set(&o, "node_timeout_ms", "-5"), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "option node_timeout_ms: must be a whole number from "));
    assert_non_null(strstr(redlock_errmsg(), ", not '-5'"));
    assert_int_equal(rl_options_set(&o, "drift_factor", "0"), REDLOCK_OK);
    const char *bad[] = { "1", "1.5", "-0.1", "abc", "nan", "inf", "0.1x", "", " 0.1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rl_options_set(&o, "drift_factor", bad[i]), REDLOCK_EINVAL);
        assert_non_null(strstr(redlock_errmsg(), "option drift_factor: "));
    }
    assert_string_equal(get(&o, "drift_factor"), "0");
    rl_options_free(&o);
}

static void key_prefix_has_a_length_limit(void **state)
{
    (void)state;
    rl_options o;
    char longest[4096], too_long[4097];
    memset(longest, 'k', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    memset(too_long, 'k', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "key_prefix", "app:"), REDLOCK_OK);
    assert_string_equal(get(&o, "key_prefix"), "app:");
    assert_int_equal(o.key_prefix_len, 4);
    assert_int_equal(rl_options_set(&o, "key_prefix", longest), REDLOCK_OK);
    assert_int_equal(o.key_prefix_len, 4095);
    assert_string_equal(get(&o, "key_prefix"), longest);
    assert_int_equal(rl_options_set(&o, "key_prefix", too_long), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "longer than 4095 bytes"));
    assert_int_equal(o.key_prefix_len, 4095);
    assert_string_equal(o.key_prefix, longest);
    assert_int_equal(rl_options_set(&o, "key_prefix", ""), REDLOCK_OK);
    assert_string_equal(get(&o, "key_prefix"), "");
    rl_options_free(&o);
}

/* The other strings (the TLS options) are kept apart from key_prefix. */
static void string_options_are_their_own(void **state)
{
    (void)state;
    rl_options o;
    char name[257];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "key_prefix", "app:"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "tls_ca_file", "/etc/ca.pem"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "tls_ca_file", "/etc/other.pem"), REDLOCK_OK);
    assert_string_equal(o.tls_ca_file, "/etc/other.pem");
    assert_string_equal(get(&o, "tls_ca_file"), "/etc/other.pem");
    assert_string_equal(o.key_prefix, "app:");
    assert_int_equal(o.key_prefix_len, 4);
    assert_int_equal(rl_options_set(&o, "tls_server_name", name), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "longer than 255 bytes"));
    assert_string_equal(o.tls_server_name, "");
    assert_true(o.tls_verify);
    assert_true(rl_options_is_tls("tls_verify") && !rl_options_is_tls("key_prefix"));
    rl_options_free(&o);
}

static void unknown_names_and_small_buffers_are_refused(void **state)
{
    (void)state;
    rl_options o;
    char small[3];
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "no_such_option", "1"), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "unknown option 'no_such_option' (known: "));
    assert_non_null(strstr(redlock_errmsg(), "restart_guard"));
    assert_int_equal(rl_options_get(&o, "no_such_option", small, sizeof small), REDLOCK_EINVAL);
    assert_int_equal(rl_options_set(&o, NULL, "1"), REDLOCK_EINVAL);
    assert_int_equal(rl_options_set(&o, "pool_size", NULL), REDLOCK_EINVAL);
    assert_int_equal(rl_options_get(&o, "connect_timeout_ms", small, sizeof small),
                     REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "needs 4 bytes"));
    assert_int_equal(rl_options_get(&o, "pool_size", small, sizeof small), REDLOCK_OK);
    assert_string_equal(small, "16");
    rl_options_free(&o);
}

/* A default that max_lease_ms would make invalid follows it: the lease of a
 * kept lock is at most max_lease_ms, unless it was set. */
static void the_kept_lease_follows_a_lower_max_lease(void **state)
{
    (void)state;
    rl_options o;
    assert_int_equal(rl_options_init(&o), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "max_lease_ms", "10000"), REDLOCK_OK);
    assert_string_equal(get(&o, "watchdog_lease_ms"), "10000");
    assert_int_equal(rl_options_set(&o, "max_lease_ms", "90000"), REDLOCK_OK);
    assert_string_equal(get(&o, "watchdog_lease_ms"), "30000");
    assert_int_equal(rl_options_set(&o, "watchdog_lease_ms", "20000"), REDLOCK_OK);
    assert_int_equal(rl_options_set(&o, "max_lease_ms", "5000"), REDLOCK_OK);
    assert_string_equal(get(&o, "watchdog_lease_ms"), "20000");   /* the user's own */
    rl_options_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_read_back),
        cmocka_unit_test(whole_numbers_keep_their_bounds),
        cmocka_unit_test(values_reach_their_fields),
        cmocka_unit_test(drift_factor_is_a_fraction_below_one),
        cmocka_unit_test(key_prefix_has_a_length_limit),
        cmocka_unit_test(string_options_are_their_own),
        cmocka_unit_test(unknown_names_and_small_buffers_are_refused),
        cmocka_unit_test(the_kept_lease_follows_a_lower_max_lease),
    };
    return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
