/* hello.c - takes a lock on "hello" over the nodes named on the command line,
 * extends it once and releases it.   usage: hello URI [URI...] */
#include <stdio.h>

#include <redlock.h>

int main(int argc, char **argv)
{
    redlock_ctx *ctx;
    redlock_handle *lock;

    if (redlock_version_number() != REDLOCK_VERSION_NUMBER) {
        fprintf(stderr, "header %s, library %s\n", REDLOCK_VERSION_STRING,
                redlock_version_string());
        return 1;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s URI [URI...]\n", argv[0]);
        return 2;
    }
    if (redlock_ctx_new(&ctx, (const char *const *)argv + 1, (size_t)argc - 1) != REDLOCK_OK) {
        fprintf(stderr, "hello: %s\n", redlock_errmsg());
        return 1;
    }

    /* A 10 s lease; wait up to 2 s if someone else holds it. */
    int rc = redlock_lock(&lock, ctx, "hello", 10000, 2000);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "hello: %s: %s\n", redlock_strerror(rc), redlock_errmsg());
        redlock_ctx_free(ctx);
        return rc == REDLOCK_ELOCKED ? 3 : 1;
    }
    printf("holding 'hello' for %lld ms more\n", (long long)redlock_handle_validity_ms(lock));

    if (redlock_extend(lock, 10000) == REDLOCK_OK)
        printf("extended: %lld ms left\n", (long long)redlock_handle_validity_ms(lock));

    rc = redlock_unlock(lock);
    printf("released: %s\n", redlock_strerror(rc));
    redlock_handle_free(lock);
    redlock_ctx_free(ctx);
    return rc == REDLOCK_OK ? 0 : 1;
}
