/*
 * test_tokens.c - lock tokens come from the operating system's CSPRNG.
 *
 * This program defines getrandom(2) itself, and the dynamic linker binds the
 * library's calls to it, so the test can see where tokens come from: with
 * the real system call (the default) tokens are distinct and their bits
 * evenly spread; with known bytes the token is exactly those bytes in hex;
 * when the random source fails, no lock is taken rather than one with a
 * weak token; where the kernel lacks getrandom, /dev/urandom is used.
 */
#include "helpers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ACQUISITIONS 100000
#define TOKEN_BITS 128

typedef enum source { REAL, KNOWN_BYTES, FAILING, NO_SYSCALL } source;
static source mode = REAL;
static long calls;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    calls++;
    switch (mode) {
    case KNOWN_BYTES:
        for (size_t i = 0; i < len; i++)
            ((unsigned char *)buf)[i] = (unsigned char)(0xa5 ^ (i * 17));
        return (ssize_t)len;
    case FAILING:
        errno = EIO;
        return -1;
    case NO_SYSCALL:
        errno = ENOSYS;
        return -1;
    case REAL:
        break;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}

static int group_setup(void **state)
{
    *state = nodes_start(1, NULL);
    return *state != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

/* Each test starts with the real source, whatever the one before left. */
static int real_source(void **state)
{
    (void)state;
    mode = REAL;
    return 0;
}

static int compare_tokens(const void *a, const void *b)
{
    return memcmp(a, b, 32);
}

static int hex_value(char c)
{
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

static void tokens_are_distinct_and_evenly_spread(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    char *tokens = malloc((size_t)ACQUISITIONS * 32);
    long ones[TOKEN_BITS] = {0};
    assert_non_null(tokens);

    mode = REAL;
    long calls_before = calls;
    for (long n = 0; n < ACQUISITIONS; n++) {
        redlock_handle *h = NULL;
        assert_rc(redlock_lock(&h, ctx, "token-spread", 10000, 0), REDLOCK_OK);
        const char *token = redlock_handle_token(h);
        if (!is_token(token))
            fail_msg("not 32 lowercase hex characters: '%s'", token);
        memcpy(tokens + n * 32, token, 32);
        for (int i = 0; i < 32; i++)
            for (int bit = 0; bit < 4; bit++)
                ones[i * 4 + bit] += (hex_value(token[i]) >> (3 - bit)) & 1;
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
    }
    /* Every acquisition asked the kernel. */
    assert_true(calls - calls_before >= ACQUISITIONS);

    qsort(tokens, ACQUISITIONS, 32, compare_tokens);
    for (long n = 1; n < ACQUISITIONS; n++)
        if (memcmp(tokens + (n - 1) * 32, tokens + n * 32, 32) == 0)
            fail_msg("token %.32s was given twice", tokens + n * 32);
    free(tokens);

    /* Each bit is 1 in half the tokens: the count is binomial with standard
     * deviation sqrt(n)/2 (158 for 100000); 6 deviations is far beyond chance
     * for any of the 128 bits, and far below a stuck or biased bit. */
    long mean = ACQUISITIONS / 2, bound = 6 * 158;
    for (int b = 0; b < TOKEN_BITS; b++)
        if (labs(ones[b] - mean) > bound)
            fail_msg("bit %d is 1 in %ld of %d tokens", b, ones[b], ACQUISITIONS);
    redlock_ctx_free(ctx);
}

static void token_is_the_random_bytes_in_hex(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    char expected[33];
    for (int i = 0; i < 16; i++)
        snprintf(expected + 2 * i, 3, "%02x", (unsigned)(0xa5 ^ (i * 17)) & 0xffu);

    mode = KNOWN_BYTES;
    int rc = redlock_lock(&h, ctx, "token-known", 10000, 0);
    mode = REAL;
    assert_rc(rc, REDLOCK_OK);
    assert_string_equal(redlock_handle_token(h), expected);
    assert_on_every_node(ns, "token-known", expected);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void no_lock_without_the_random_source(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;
    const char *names[] = {"token-none-1", "token-none-2"};

    mode = FAILING;
    int rc = redlock_lock(&h, ctx, "token-none", 10000, 0);
    int rc_multi = redlock_lock_multi(&h, ctx, names, 2, 10000, 500);
    mode = REAL;
    assert_rc(rc, REDLOCK_ESYSTEM);
    assert_rc(rc_multi, REDLOCK_ESYSTEM);
    assert_true(redlock_errmsg()[0] != '\0');
    assert_null(h);
    assert_int_equal(nodes_count_exists(ns, "token-none"), 0);
    assert_int_equal(nodes_count_exists(ns, "token-none-1"), 0);
    redlock_ctx_free(ctx);
}

static void dev_urandom_when_the_kernel_lacks_getrandom(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    char first[33] = "";
    mode = NO_SYSCALL;
    for (int n = 0; n < 100; n++) {
        redlock_handle *h = NULL;
        assert_rc(redlock_lock(&h, ctx, "token-urandom", 10000, 0), REDLOCK_OK);
        assert_true(is_token(redlock_handle_token(h)));
        if (n == 0)
            snprintf(first, sizeof(first), "%s", redlock_handle_token(h));
        else
            assert_string_not_equal(redlock_handle_token(h), first);
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
    }
    mode = REAL;
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(token_is_the_random_bytes_in_hex, real_source),
        cmocka_unit_test_setup(no_lock_without_the_random_source, real_source),
        cmocka_unit_test_setup(dev_urandom_when_the_kernel_lacks_getrandom, real_source),
        cmocka_unit_test_setup(tokens_are_distinct_and_evenly_spread, real_source),
    };
    return cmocka_run_group_tests_name("tokens", tests, group_setup, group_teardown);
}
