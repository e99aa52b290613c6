/*
 * test_api.c - every bad argument gets its code and an error detail, never a
 * crash; status texts and version numbers.
 */
#include "helpers.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* Asserts that redlock_ctx_new fails on uris with code, and sets *out to NULL. */
static void assert_ctx_new_fails(const char *const *uris, size_t n, int code)
{
    redlock_ctx *ctx = UNSET_CTX;
    int rc = redlock_ctx_new(&ctx, uris, n);
    if (rc != code)
        fail_msg("ctx_new(%s%s) returned %d (%s), expected %d; errmsg: %s",
                 n > 0 && uris != NULL && uris[0] != NULL ? uris[0] : "",
                 n > 1 ? ", ..." : "", rc, redlock_strerror(rc), code, redlock_errmsg());
    assert_true(redlock_errmsg()[0] != '\0');
    assert_null(ctx);
}

static void assert_uri_rejected(const char *uri, int code)
{
    const char *uris[] = {uri};
    assert_ctx_new_fails(uris, 1, code);
}

static void ctx_new_rejects_null_and_counts(void **state)
{
    (void)state;
    const char *uris[] = {"redis://127.0.0.1:1"};
    assert_fails(redlock_ctx_new(NULL, uris, 1), REDLOCK_EINVAL);
    assert_ctx_new_fails(NULL, 1, REDLOCK_EINVAL);
    assert_ctx_new_fails(uris, 0, REDLOCK_EINVAL);
    const char *with_null[] = {"redis://127.0.0.1:1", NULL};
    assert_ctx_new_fails(with_null, 2, REDLOCK_EINVAL);

    /* One node more than REDLOCK_MAX_NODES, all distinct. */
    char names[REDLOCK_MAX_NODES + 1][40];
    const char *many[REDLOCK_MAX_NODES + 1];
    for (int i = 0; i <= REDLOCK_MAX_NODES; i++) {
        snprintf(names[i], sizeof(names[i]), "redis://127.0.0.1:%d", 20000 + i);
        many[i] = names[i];
    }
    assert_ctx_new_fails(many, REDLOCK_MAX_NODES + 1, REDLOCK_EINVAL);

    /* Exactly REDLOCK_MAX_NODES is fine (no connection is made). */
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, many, REDLOCK_MAX_NODES), REDLOCK_OK);
    assert_non_null(ctx);
    redlock_ctx_free(ctx);
    redlock_ctx_free(NULL);
}

static void ctx_new_rejects_bad_uris(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "redis://",
        "redis://:7001",
        "redis://127.0.0.1:0",
        "redis://127.0.0.1:70000",
        "redis://127.0.0.1:abc",
        "redis://127.0.0.1:",
        "redis://127.0.0.1:7001/abc",
        "redis://127.0.0.1:7001/-1",
        "redis://127.0.0.1:7001/3x",
        "http://127.0.0.1:7001",
        "127.0.0.1:7001",
        "redis:/127.0.0.1:7001",
        "unix://",
        "unix:///tmp/redlock-none.sock?db=abc",
        "unix:///tmp/redlock-none.sock?db=-2",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_uri_rejected(bad[i], REDLOCK_EINVAL);

    /* rediss:// (TLS) takes the same form, and its errors name its scheme. */
    assert_uri_rejected("rediss://127.0.0.1:99999", REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "bad rediss:// URI"));
    const char *tls[] = {"rediss://user:pw@127.0.0.1:7001/2", "REDISS://[::1]"};
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, tls, 2), REDLOCK_OK);
    redlock_ctx_free(ctx);

    /* A bad URI among good ones fails the whole set. */
    const char *mixed[] = {"redis://127.0.0.1:7001", "redis://127.0.0.1:99999"};
    assert_ctx_new_fails(mixed, 2, REDLOCK_EINVAL);
}

static void ctx_new_rejects_same_node_twice(void **state)
{
    (void)state;
    const char *tcp[] = {"redis://127.0.0.1:7001", "redis://127.0.0.1:7002",
                         "redis://127.0.0.1:7001"};
    assert_ctx_new_fails(tcp, 3, REDLOCK_EINVAL);
    const char *sockets[] = {"unix:///tmp/redlock-a.sock", "unix:///tmp/redlock-a.sock"};
    assert_ctx_new_fails(sockets, 2, REDLOCK_EINVAL);
}

static void ctx_new_accepts_good_uris(void **state)
{
    (void)state;
    static const char *const good[] = {
        "redis://127.0.0.1:7001",
        "redis://127.0.0.1:7001/0",
        "redis://127.0.0.1:7001/15",
        "redis://:secret@127.0.0.1:7001",
        "redis://alice:secret@127.0.0.1:7001/2",
        "redis://alice:p%40ss%3Aw%2Frd@127.0.0.1:7001",
        "redis://localhost:7001",
        "unix:///tmp/redlock-none.sock",
        "unix:///tmp/redlock-none.sock?db=4",
        "unix://:secret@/tmp/redlock-none.sock",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        redlock_ctx *ctx = NULL;
        int rc = redlock_ctx_new(&ctx, &good[i], 1);
        if (rc != REDLOCK_OK)
            fail_msg("ctx_new(%s) returned %d; errmsg: %s", good[i], rc, redlock_errmsg());
        assert_non_null(ctx);
        redlock_ctx_free(ctx);
    }
}

static void options_reject_bad_names_and_values(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);

    assert_fails(redlock_ctx_set_option(NULL, "node_timeout_ms", "10"), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_set_option(ctx, NULL, "10"), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_set_option(ctx, "node_timeout_ms", NULL), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_set_option(ctx, "no_such_option", "10"), REDLOCK_EINVAL);
    assert_fails(redlock_ctx_set_option(ctx, "", "10"), REDLOCK_EINVAL);

    static const char *const numeric[] = {"node_timeout_ms", "connect_timeout_ms",
                                          "retry_delay_ms", "retry_jitter_ms", "pool_size"};
    static const char *const bad_numbers[] = {"-1", "abc", "10ms", "", " ", "1e3",
                                              "99999999999999999999999"};
    for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
        for (size_t j = 0; j < sizeof(bad_numbers) / sizeof(bad_numbers[0]); j++) {
            int rc = redlock_ctx_set_option(ctx, numeric[i], bad_numbers[j]);
            if (rc != REDLOCK_EINVAL)
                fail_msg("set_option(%s, \"%s\") returned %d", numeric[i], bad_numbers[j], rc);
            assert_true(redlock_errmsg()[0] != '\0');
        }
    }
    static const char *const bad_drift[] = {"1.5", "-0.1", "abc", "0.01x", ""};
    for (size_t j = 0; j < sizeof(bad_drift) / sizeof(bad_drift[0]); j++) {
        int rc = redlock_ctx_set_option(ctx, "drift_factor", bad_drift[j]);
        if (rc != REDLOCK_EINVAL)
            fail_msg("set_option(drift_factor, \"%s\") returned %d", bad_drift[j], rc);
        assert_true(redlock_errmsg()[0] != '\0');
    }

    /* Good values are accepted. */
    assert_rc(redlock_ctx_set_option(ctx, "node_timeout_ms", "75"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "connect_timeout_ms", "150"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "retry_delay_ms", "0"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "retry_jitter_ms", "0"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "drift_factor", "0.02"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "drift_factor", "0"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "key_prefix", "app:"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "key_prefix", ""), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "pool_size", "4"), REDLOCK_OK);
    redlock_ctx_free(ctx);
}

static void lock_rejects_bad_arguments(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;

    assert_fails(redlock_lock(NULL, ctx, "api-bad", 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, NULL, "api-bad", 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, NULL, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    assert_fails(redlock_lock(&h, ctx, "", 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, ctx, "api-bad", 0, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, ctx, "api-bad", -1, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, ctx, "api-bad", INT64_MIN, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, ctx, "api-bad", (int64_t)REDLOCK_MAX_TTL_MS + 1, 0),
                 REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, ctx, "api-bad", INT64_MAX, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, ctx, "api-bad", 1000, -1), REDLOCK_EINVAL);
    assert_fails(redlock_lock(&h, ctx, "api-bad", 1000, INT64_MIN), REDLOCK_EINVAL);
    assert_null(h);

    /* Nothing was written by the refused calls. */
    assert_int_equal(nodes_count_exists(ns, "api-bad"), 0);
    redlock_ctx_free(ctx);
}

static void lock_checks_name_length(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;

    size_t huge_len = 1024 * 1024;
    char *huge = malloc(huge_len + 1);
    assert_non_null(huge);
    memset(huge, 'n', huge_len);
    huge[huge_len] = '\0';
    assert_fails(redlock_lock(&h, ctx, huge, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);

    /* REDLOCK_MAX_NAME_BYTES is allowed, one more is not. */
    huge[REDLOCK_MAX_NAME_BYTES + 1] = '\0';
    assert_fails(redlock_lock(&h, ctx, huge, 1000, 0), REDLOCK_EINVAL);
    huge[REDLOCK_MAX_NAME_BYTES] = '\0';
    assert_rc(redlock_lock(&h, ctx, huge, 5000, 0), REDLOCK_OK);
    assert_on_every_node(ns, huge, redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_on_every_node(ns, huge, NULL);

    /* The limit counts the key prefix too. */
    assert_rc(redlock_ctx_set_option(ctx, "key_prefix", "p:"), REDLOCK_OK);
    h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, huge, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    huge[REDLOCK_MAX_NAME_BYTES - 2] = '\0';
    assert_rc(redlock_lock(&h, ctx, huge, 5000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);

    free(huge);
    redlock_ctx_free(ctx);
}

static void lock_accepts_largest_ttl(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, (const char *[]){"max_lease_ms", "2147483647", NULL});
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "api-max-ttl", REDLOCK_MAX_TTL_MS, 0), REDLOCK_OK);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_pttl_on_every_node(ns, "api-max-ttl", (long long)REDLOCK_MAX_TTL_MS - 60000,
                              REDLOCK_MAX_TTL_MS);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void lock_multi_rejects_bad_arguments(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;
    const char *two[] = {"api-m1", "api-m2"};
    const char *dup[] = {"api-m1", "api-m2", "api-m1"};
    const char *with_null[] = {"api-m1", NULL};
    const char *with_empty[] = {"api-m1", ""};

    assert_fails(redlock_lock_multi(NULL, ctx, two, 2, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, NULL, two, 2, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    h = UNSET_HANDLE;
    assert_fails(redlock_lock_multi(&h, ctx, NULL, 2, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    assert_fails(redlock_lock_multi(&h, ctx, two, 0, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, dup, 3, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, with_null, 2, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, with_empty, 2, 1000, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, two, 2, 0, 0), REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, two, 2, (int64_t)REDLOCK_MAX_TTL_MS + 1, 0),
                 REDLOCK_EINVAL);
    assert_fails(redlock_lock_multi(&h, ctx, two, 2, 1000, -5), REDLOCK_EINVAL);

    /* More than REDLOCK_MAX_RESOURCES distinct names. */
    size_t n = REDLOCK_MAX_RESOURCES + 1;
    char *names = malloc(n * 16);
    const char **many = malloc(n * sizeof(*many));
    assert_non_null(names);
    assert_non_null(many);
    for (size_t i = 0; i < n; i++) {
        snprintf(names + i * 16, 16, "api-r%zu", i);
        many[i] = names + i * 16;
    }
    assert_fails(redlock_lock_multi(&h, ctx, many, n, 1000, 0), REDLOCK_EINVAL);
    assert_null(h);
    free(many);
    free(names);

    assert_int_equal(nodes_count_exists(ns, "api-m1"), 0);
    assert_int_equal(nodes_count_exists(ns, "api-m2"), 0);
    redlock_ctx_free(ctx);
}

static void handle_functions_reject_null(void **state)
{
    nodes *ns = *state;
    assert_fails(redlock_extend(NULL, 1000), REDLOCK_EINVAL);
    assert_fails(redlock_unlock(NULL), REDLOCK_EINVAL);
    assert_int_equal(redlock_handle_validity_ms(NULL), 0);
    assert_null(redlock_handle_token(NULL));
    redlock_handle_free(NULL);

    /* A held lock refuses a bad extension and stays held. */
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "api-extend-bad", 10000, 0), REDLOCK_OK);
    assert_fails(redlock_extend(h, 0), REDLOCK_EINVAL);
    assert_fails(redlock_extend(h, -100), REDLOCK_EINVAL);
    assert_fails(redlock_extend(h, (int64_t)REDLOCK_MAX_TTL_MS + 1), REDLOCK_EINVAL);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void strerror_is_distinct_for_every_code(void **state)
{
    (void)state;
    static const int codes[] = {
        REDLOCK_OK,     REDLOCK_ELOCKED,      REDLOCK_ENOQUORUM, REDLOCK_ENOTHELD,
        REDLOCK_EINVAL, REDLOCK_ENOMEM,       REDLOCK_EEXPIRED,  REDLOCK_EUNSUPPORTED,
        REDLOCK_EAUTH,  REDLOCK_EWRONGTYPE,   REDLOCK_EREDIS,    REDLOCK_ESYSTEM,
        REDLOCK_ECANCELED, REDLOCK_ETLS, REDLOCK_ENOPERM,
    };
    size_t n = sizeof(codes) / sizeof(codes[0]);
    const char *unknown = redlock_strerror(-1000);
    assert_non_null(unknown);
    assert_true(unknown[0] != '\0');
    for (size_t i = 0; i < n; i++) {
        const char *text = redlock_strerror(codes[i]);
        assert_non_null(text);
        assert_true(text[0] != '\0');
        assert_string_not_equal(text, unknown);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(text, redlock_strerror(codes[j]));
    }
    static const int unknown_codes[] = {1, 42, -99, -1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof(unknown_codes) / sizeof(unknown_codes[0]); i++) {
        const char *text = redlock_strerror(unknown_codes[i]);
        assert_non_null(text);
        for (size_t j = 0; j < n; j++)
            assert_string_not_equal(text, redlock_strerror(codes[j]));
    }
}

static void version_matches_header(void **state)
{
    (void)state;
    assert_int_equal(redlock_version_number(), REDLOCK_VERSION_NUMBER);
    assert_non_null(redlock_version_string());
    assert_string_equal(redlock_version_string(), REDLOCK_VERSION_STRING);
    char expected[32];
    snprintf(expected, sizeof(expected), "%d.%d.%d", REDLOCK_VERSION_MAJOR,
             REDLOCK_VERSION_MINOR, REDLOCK_VERSION_PATCH);
    assert_string_equal(redlock_version_string(), expected);
}

/* What a second thread saw of its own error detail. */
typedef struct thread_errmsg {
    int empty_at_start;
    int rc;
    int empty_after_failure;
} thread_errmsg;

static void *fail_in_thread(void *arg)
{
    thread_errmsg *seen = arg;
    seen->empty_at_start = redlock_errmsg()[0] == '\0';
    redlock_ctx *ctx = NULL;
    const char *uris[] = {"redis://127.0.0.1:abc"};
    seen->rc = redlock_ctx_new(&ctx, uris, 1);
    seen->empty_after_failure = redlock_errmsg()[0] == '\0';
    return NULL;
}

static void errmsg_is_kept_per_thread(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    assert_fails(redlock_ctx_set_option(ctx, "no_such_option", "1"), REDLOCK_EINVAL);
    char mine[1024];
    snprintf(mine, sizeof(mine), "%s", redlock_errmsg());

    thread_errmsg seen = {0, 0, 1};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, fail_in_thread, &seen), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_true(seen.empty_at_start);
    assert_int_equal(seen.rc, REDLOCK_EINVAL);
    assert_false(seen.empty_after_failure);

    /* The other thread's failure did not touch this thread's detail. */
    assert_string_equal(redlock_errmsg(), mine);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ctx_new_rejects_null_and_counts),
        cmocka_unit_test(ctx_new_rejects_bad_uris),
        cmocka_unit_test(ctx_new_rejects_same_node_twice),
        cmocka_unit_test(ctx_new_accepts_good_uris),
        cmocka_unit_test(options_reject_bad_names_and_values),
        cmocka_unit_test(lock_rejects_bad_arguments),
        cmocka_unit_test(lock_checks_name_length),
        cmocka_unit_test(lock_accepts_largest_ttl),
        cmocka_unit_test(lock_multi_rejects_bad_arguments),
        cmocka_unit_test(handle_functions_reject_null),
        cmocka_unit_test(strerror_is_distinct_for_every_code),
        cmocka_unit_test(version_matches_header),
        cmocka_unit_test(errmsg_is_kept_per_thread),
    };
    return cmocka_run_group_tests_name("api", tests, group_setup, group_teardown);
}
