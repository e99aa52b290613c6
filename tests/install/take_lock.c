/* take_lock.c - with the library it is linked against, takes the lock NAME,
 * sees a second client refused, releases it, and sees the second client
 * take it. With --no-tls, also checks that a rediss:// node is refused
 * with an error that names the TLS library looked for (where OpenSSL 3
 * cannot be loaded: hidden, or a static program).
 *   usage: take_lock [--no-tls] NAME URI... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redlock.h>

static void check(int rc, int want, const char *what)
{
    if (rc != want) {
        fprintf(stderr, "take_lock: %s: %s (%s), expected %s\n", what, redlock_strerror(rc),
                redlock_errmsg(), redlock_strerror(want));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int no_tls = argc > 1 && strcmp(argv[1], "--no-tls") == 0;
    if (argc < 3 + no_tls) {
        fprintf(stderr, "usage: take_lock [--no-tls] NAME URI...\n");
        return 2;
    }
    const char *name = argv[1 + no_tls];
    const char *const *uris = (const char *const *)argv + 2 + no_tls;
    size_t n = (size_t)argc - 2 - (size_t)no_tls;
    redlock_ctx *client, *rival;
    redlock_handle *lock, *other;

    check(redlock_ctx_new(&client, uris, n), REDLOCK_OK, "a client");
    check(redlock_ctx_new(&rival, uris, n), REDLOCK_OK, "a second client");
    check(redlock_lock(&lock, client, name, 10000, 0), REDLOCK_OK, "the lock");
    if (redlock_handle_validity_ms(lock) <= 0)
        check(REDLOCK_EEXPIRED, REDLOCK_OK, "its validity");
    check(redlock_lock(&other, rival, name, 10000, 0), REDLOCK_ELOCKED, "the held lock");
    check(redlock_unlock(lock), REDLOCK_OK, "the unlock");
    redlock_handle_free(lock);
    check(redlock_lock(&other, rival, name, 10000, 0), REDLOCK_OK, "the lock let go");
    check(redlock_unlock(other), REDLOCK_OK, "the second unlock");
    redlock_handle_free(other);
    redlock_ctx_free(rival);
    redlock_ctx_free(client);

    if (no_tls) {
        const char *tls[] = { "rediss://127.0.0.1:6379" };
        redlock_ctx *ctx = NULL;
        check(redlock_ctx_new(&ctx, tls, 1), REDLOCK_OK, "a client of a rediss:// node");
        check(redlock_lock(&lock, ctx, name, 10000, 0), REDLOCK_EUNSUPPORTED,
              "a lock on a rediss:// node");
        redlock_ctx_free(ctx);
        if (strstr(redlock_errmsg(), "libssl.so.3") == NULL) {
            fprintf(stderr, "take_lock: the TLS error does not name libssl.so.3: %s\n",
                    redlock_errmsg());
            return 1;
        }
        printf("take_lock: rediss:// refused: %s\n", redlock_errmsg());
    }
    printf("take_lock: %s takes and releases locks\n", redlock_version_string());
    return 0;
}
