/*
 * test_wiped.c - the library wipes every copy of a password it frees: the
 * URI's, the sentinel_password option's (set, replaced, freed), and the
 * bytes of the AUTH commands it formatted and wrote.
 *
 * This program defines free() itself, and the dynamic linker binds the
 * library's calls (and hiredis's) to it: while armed, every block freed is
 * searched for the password before glibc frees it. A sanitizer brings its
 * own free(), so the test is built without one only.
 *
 * malloc() and realloc() are defined too, and clear what they hand out: a
 * block may come back holding what an earlier owner left in it (the test's
 * own servers are started with the password, unwiped), and only what the
 * library wrote there counts.
 */
#include "helpers.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define NODES 3
#define PASSWORD "Wp-s3cret-Q9"

extern void *__libc_malloc(size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static atomic_int armed;
static atomic_long found;

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    if (p)
        memset(p, 0, malloc_usable_size(p));
    return p;
}

void *realloc(void *p, size_t n)
{
    size_t kept = p ? malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    size_t now = q ? malloc_usable_size(q) : 0;
    if (now > kept)
        memset((char *)q + kept, 0, now - kept);
    return q;
}

void free(void *p)
{
    if (p != NULL && atomic_load(&armed)) {
        size_t n = malloc_usable_size(p);
        if (memmem(p, n, PASSWORD, strlen(PASSWORD)) != NULL)
            atomic_fetch_add(&found, 1);
    }
    __libc_free(p);
}

/* The check itself sees a password freed unwiped. */
static void the_check_sees_a_password(void **state)
{
    (void)state;
    char *block = malloc(64);
    if (block == NULL) {   /* (assert_non_null is not known to end the test) */
        fail();
        return;
    }
    snprintf(block, 64, "AUTH %s", PASSWORD);
    atomic_store(&found, 0);
    atomic_store(&armed, 1);
    free(block);
    atomic_store(&armed, 0);
    assert_int_equal(atomic_load(&found), 1);
}

static void lock_session(const char *userinfo, int expected)
{
    nodes *ns = nodes_start(NODES, PASSWORD);
    assert_non_null(ns);
    char buf[NODES][128];
    const char *uris[NODES];
    for (size_t i = 0; i < NODES; i++) {
        snprintf(buf[i], sizeof buf[i], "redis://%s127.0.0.1:%d", userinfo, nodes_port(ns, i));
        uris[i] = buf[i];
    }
    atomic_store(&found, 0);
    atomic_store(&armed, 1);
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "node_timeout_ms", "2000"), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "connect_timeout_ms", "2000"), REDLOCK_OK);
    /* Set, replaced, and freed with the client. */
    assert_rc(redlock_ctx_set_option(ctx, "sentinel_password", PASSWORD), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "sentinel_password", PASSWORD "-2"), REDLOCK_OK);
    redlock_handle *h = UNSET_HANDLE;
    int rc = redlock_lock(&h, ctx, "wiped", 10000, 0);
    if (rc != expected)
        fail_msg("lock gave %d: %s", rc, redlock_errmsg());
    if (rc == REDLOCK_OK) {
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
    atomic_store(&armed, 0);
    long n = atomic_load(&found);
    nodes_free(ns);
    if (n != 0)
        fail_msg("%ld blocks freed with the password in them (%s)", n, userinfo);
}

static void a_session_frees_no_password(void **state)
{
    (void)state;
    lock_session(":" PASSWORD "@", REDLOCK_OK);
    lock_session("default:" PASSWORD "@", REDLOCK_OK);
}

static void a_refused_password_is_wiped_too(void **state)
{
    (void)state;
    lock_session(":x" PASSWORD "@", REDLOCK_EAUTH);
}

/* A URI refused after its password was decoded frees it wiped. */
static void a_refused_uri_is_wiped(void **state)
{
    (void)state;
    const char *uris[] = {"redis://:" PASSWORD "@127.0.0.1:0", "redis://:" PASSWORD "%zz@h"};
    for (size_t i = 0; i < 2; i++) {
        redlock_ctx *ctx = NULL;
        atomic_store(&found, 0);
        atomic_store(&armed, 1);
        assert_fails(redlock_ctx_new(&ctx, uris + i, 1), REDLOCK_EINVAL);
        atomic_store(&armed, 0);
        assert_int_equal(atomic_load(&found), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_check_sees_a_password),
        cmocka_unit_test(a_session_frees_no_password),
        cmocka_unit_test(a_refused_password_is_wiped_too),
        cmocka_unit_test(a_refused_uri_is_wiped),
    };
    return cmocka_run_group_tests_name("wiped", tests, NULL, NULL);
}
