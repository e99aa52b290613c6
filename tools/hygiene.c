/* hygiene.c - secrets kept where they were given, names escaped (see hygiene.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>

#include "hygiene.h"
#include "redlock.h"

bool secret_option(const char *name)
{
    return strstr(name, "password") != NULL;
}

void wipe(void *p, size_t n)
{
    static void *(*volatile set)(void *, int, size_t) = memset;

    if (p != NULL && n > 0)
        set(p, 0, n);
}

void hold_secrets(void)
{
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/*
 * Where the credentials of the URI uri[0..len) are: *start just after
 * "scheme://", and the length up to the '@' that ends them (0 when it has
 * none). The library's rule (core/engine/uri.c): a unix:// URI's end at the
 * '@' before the path's first '/'; a Sentinel URI's at its last '@' before
 * its master name (which starts at its last '?' or '#'); any other's at its
 * last '@'.
 */
static size_t credentials(const char *uri, size_t len, size_t *start)
{
    const char *scheme_end = memmem(uri, len, "://", 3);
    size_t from, to = len, at = 0;

    if (scheme_end == NULL)
        return 0;
    from = (size_t)(scheme_end - uri) + 3;
    *start = from;
    if (strncasecmp(uri, "unix://", 7) == 0) {
        const char *slash = memchr(uri + from, '/', len - from);

        return slash != NULL && slash > uri + from && slash[-1] == '@'
             ? (size_t)(slash - 1 - (uri + from)) + 1 : 0;
    }
    if (strncasecmp(uri, "redis-sentinel://", 17) == 0
        || strncasecmp(uri, "rediss-sentinel://", 18) == 0) {
        for (size_t i = len; i > from; i--) {
            if (uri[i - 1] == '?' || uri[i - 1] == '#') {
                to = i - 1;
                break;
            }
        }
    }
    for (size_t i = from; i < to; i++) {
        if (uri[i] == '@')
            at = i - from + 1;
    }
    return at;
}

void hide_list_credentials(char *list)
{
    for (char *p = list;;) {
        size_t len = redlock_uri_list_next(p), start = 0;
        size_t n = credentials(p, len, &start);

        /* 'x' up to the '@', which stays: the URI keeps its shape. */
        if (n > 1)
            memset(p + start, 'x', n - 1);
        p += len;
        if (*p == '\0')
            return;
        p++;
    }
}

void hide_option_value(char *s)
{
    char *eq = strchr(s, '=');

    if (eq != NULL)
        memset(eq + 1, 'x', strlen(eq + 1));
}

char *list_without_credentials(const char *list)
{
    char *out = malloc(strlen(list) + 1), *o = out;

    if (out == NULL)
        return NULL;
    for (const char *p = list;;) {
        size_t len = redlock_uri_list_next(p), start = 0;
        size_t n = credentials(p, len, &start);

        memcpy(o, p, n > 0 ? start : len);
        o += n > 0 ? start : len;
        if (n > 0) {
            memcpy(o, p + start + n, len - start - n);
            o += len - start - n;
        }
        p += len;
        if (*p == '\0')
            break;
        *o++ = *p++;   /* the comma */
    }
    *o = '\0';
    return out;
}

/* Wipes the value of the environment variable name and removes it. */
static bool drop_variable(const char *name)
{
    char *value = getenv(name);

    if (value != NULL)
        wipe(value, strlen(value));
    return unsetenv(name) == 0;
}

bool scrub_environment(void)
{
    char *nodes = getenv("REDLOCK_NODES");

    if (!drop_variable("REDLOCK_PASSWORD") || !drop_variable("REDLOCK_SENTINEL_PASSWORD"))
        return false;
    if (nodes != NULL) {
        char *clean = list_without_credentials(nodes);
        bool ok;

        if (clean == NULL) {
            errno = ENOMEM;
            return false;
        }
        wipe(nodes, strlen(nodes));
        ok = setenv("REDLOCK_NODES", clean, 1) == 0;
        free(clean);
        return ok;
    }
    return true;
}
