/*
 * test_bad_input.c - the ABI's arguments at and past their limits, beyond
 * what tests/c/test_api.c covers: huge strings (URIs, hosts, option names
 * and values, resource names in a multi-lock), counts far past the limits
 * with short arrays (the count must be checked before the array is read),
 * the largest and smallest int64_t values for leases and waits, and option
 * values one past their documented range.
 */
#include "helpers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HUGE_LEN (1024 * 1024)

static int group_setup(void **state)
{
    *state = nodes_start(3, NULL);
    return *state != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

/* prefix, then fill repeated up to len bytes in all, as a new string. */
static char *huge_string(const char *prefix, char fill, size_t len)
{
    char *s = malloc(len + 1);
    assert_non_null(s);
    size_t plen = strlen(prefix);
    memcpy(s, prefix, plen);
    memset(s + plen, fill, len - plen);
    s[len] = '\0';
    return s;
}

static void ctx_new_refuses_huge_uris_and_counts(void **state)
{
    (void)state;
    redlock_ctx *ctx = UNSET_CTX;
    static const char *const prefixes[] = {"redis://", "redis://:", "unix:///", "redis://h:",
                                           "redis://h:1/", "unix:///s?db="};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        char *uri = huge_string(prefixes[i], '1', HUGE_LEN);
        const char *uris[] = {uri};
        assert_fails(redlock_ctx_new(&ctx, uris, 1), REDLOCK_EINVAL);
        assert_null(ctx);
        free(uri);
    }

    /* A host one byte longer than DNS allows, and the longest allowed. */
    char *host = huge_string("redis://", 'h', 8 + 256);
    const char *one[] = {host};
    assert_fails(redlock_ctx_new(&ctx, one, 1), REDLOCK_EINVAL);
    host[8 + 255] = '\0';
    assert_rc(redlock_ctx_new(&ctx, one, 1), REDLOCK_OK);
    redlock_ctx_free(ctx);
    free(host);

    /* Counts far past the limit, with an array of one: refused unread. */
    const char *uris[] = {"redis://127.0.0.1:7001"};
    ctx = UNSET_CTX;
    assert_fails(redlock_ctx_new(&ctx, uris, SIZE_MAX), REDLOCK_EINVAL);
    assert_null(ctx);
    assert_fails(redlock_ctx_new(&ctx, uris, (size_t)REDLOCK_MAX_NODES + 1), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_new(&ctx, uris, SIZE_MAX / 2 + 1), REDLOCK_EINVAL);
}

static void options_refuse_huge_and_out_of_range_values(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);

    char *huge = huge_string("", 'k', HUGE_LEN);
    assert_fails(redlock_ctx_set_option(ctx, huge, "1"), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_set_option(ctx, "key_prefix", huge), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_set_option(ctx, "node_timeout_ms", huge), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_set_option(ctx, "drift_factor", huge), REDLOCK_EINVAL);
    free(huge);
    char *digits = huge_string("0.", '1', HUGE_LEN);
    assert_rc(redlock_ctx_set_option(ctx, "drift_factor", digits), REDLOCK_OK);
    free(digits);

    /* key_prefix: REDLOCK_MAX_NAME_BYTES - 1 bytes at most. */
    char *prefix = huge_string("", 'p', REDLOCK_MAX_NAME_BYTES);
    assert_fails(redlock_ctx_set_option(ctx, "key_prefix", prefix), REDLOCK_EINVAL);
    prefix[REDLOCK_MAX_NAME_BYTES - 1] = '\0';
    assert_rc(redlock_ctx_set_option(ctx, "key_prefix", prefix), REDLOCK_OK);
    /* ... which leaves room for a one-byte name: a key is at most
     * REDLOCK_MAX_NAME_BYTES, key_prefix included. */
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, "xy", 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    assert_rc(redlock_lock(&h, ctx, "x", 5000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    free(prefix);
    assert_rc(redlock_ctx_set_option(ctx, "key_prefix", ""), REDLOCK_OK);

    /* Numbers just past each range, and the largest of the types. */
    static const char *const refused[][2] = {
        {"node_timeout_ms", "0"},
        {"node_timeout_ms", "600001"},
        {"connect_timeout_ms", "0"},
        {"connect_timeout_ms", "9223372036854775807"},
        {"connect_timeout_ms", "9223372036854775808"},
        {"retry_delay_ms", "3600001"},
        {"retry_jitter_ms", "-0"},
        {"retry_jitter_ms", "+5"},
        {"pool_size", "1025"},
        {"pool_size", "4294967297"},
        {"drift_factor", "1"},
        {"drift_factor", "inf"},
        {"drift_factor", "nan"},
        {"drift_factor", "1e308"},
        {"drift_factor", "-0.0"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        int rc = redlock_ctx_set_option(ctx, refused[i][0], refused[i][1]);
        if (rc != REDLOCK_EINVAL)
            fail_msg("set_option(%s, %s) returned %d", refused[i][0], refused[i][1], rc);
        assert_true(redlock_errmsg()[0] != '\0');
    }
    /* The limits themselves; the last value of each is a usual one. */
    static const char *const accepted[][2] = {
        {"node_timeout_ms", "1"},
        {"node_timeout_ms", "600000"},
        {"connect_timeout_ms", "1"},
        {"connect_timeout_ms", "600000"},
        {"retry_delay_ms", "3600000"},
        {"retry_jitter_ms", "3600000"},
        {"retry_jitter_ms", "0"},
        {"pool_size", "0"},
        {"pool_size", "1024"},
        {"drift_factor", "0.999"},
        {"drift_factor", "0.01"},
    };
    for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
        assert_rc(redlock_ctx_set_option(ctx, accepted[i][0], accepted[i][1]), REDLOCK_OK);
        /* A call that succeeds leaves no error detail. */
        assert_string_equal(redlock_errmsg(), "");
    }

    /* The client still works with the last values set. */
    assert_rc(redlock_lock(&h, ctx, "bad-input-options", 5000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void lock_multi_refuses_huge_names_and_counts(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, (const char *[]){"max_lease_ms", "2147483647", NULL});
    redlock_handle *h = UNSET_HANDLE;

    char *huge = huge_string("", 'n', HUGE_LEN);
    const char *with_huge[] = {"bad-input-m1", huge};
    assert_fails(redlock_lock_multi(&h, ctx, with_huge, 2, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    free(huge);

    /* Counts far past the limit, with an array of two: refused unread. */
    const char *two[] = {"bad-input-m1", "bad-input-m2"};
    h = UNSET_HANDLE;
    assert_fails(redlock_lock_multi(&h, ctx, two, SIZE_MAX, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    assert_fails(redlock_lock_multi(&h, ctx, two, (size_t)REDLOCK_MAX_RESOURCES + 1, 1000, 0),
                 REDLOCK_EINVAL);

    /* The extremes of the int64_t arguments. */
    assert_fails(redlock_lock_multi(&h, ctx, two, 2, INT64_MAX, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, two, 2, INT64_MIN, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, two, 2, 1000, INT64_MIN), REDLOCK_EINVAL);
    assert_int_equal(nodes_count_exists(ns, "bad-input-m1"), 0);

    /* The longest wait there is, on free resources, returns at once. */
    assert_rc(redlock_lock_multi(&h, ctx, two, 2, 5000, INT64_MAX), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_rc(redlock_lock(&h, ctx, "bad-input-one", 5000, INT64_MAX), REDLOCK_OK);

    /* extend at the int64_t extremes leaves the lock held. */
    assert_fails(redlock_extend(h, INT64_MAX), REDLOCK_EINVAL);
    assert_fails(redlock_extend(h, INT64_MIN), REDLOCK_EINVAL);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_rc(redlock_extend(h, REDLOCK_MAX_TTL_MS), REDLOCK_OK);
    assert_pttl_on_every_node(ns, "bad-input-one", (long long)REDLOCK_MAX_TTL_MS - 60000,
                              REDLOCK_MAX_TTL_MS);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void status_texts_for_any_code(void **state)
{
    (void)state;
    for (int code = -1000; code <= 1000; code++) {
        const char *text = redlock_strerror(code);
        assert_non_null(text);
        assert_true(text[0] != '\0');
    }
    assert_non_null(redlock_strerror(INT32_MIN));
    assert_non_null(redlock_strerror(INT32_MAX));
    /* ESYSTEM, the newest code, has a text of its own. */
    assert_string_not_equal(redlock_strerror(REDLOCK_ESYSTEM), redlock_strerror(-1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ctx_new_refuses_huge_uris_and_counts),
        cmocka_unit_test(options_refuse_huge_and_out_of_range_values),
        cmocka_unit_test(lock_multi_refuses_huge_names_and_counts),
        cmocka_unit_test(status_texts_for_any_code),
    };
    return cmocka_run_group_tests_name("bad_input", tests, group_setup, group_teardown);
}
