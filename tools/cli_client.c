/*
 * cli_client.c - the client the tool uses: the node URIs from --nodes or
 * REDLOCK_NODES, each given the password (from a file or the environment)
 * when it has none, the settings applied, and the library's events.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "hygiene.h"

#define PASSWORD_MAX_BYTES 1024

/* Reads a password: the first line of FILE, else the variable env. NULL if neither. */
static char *read_password(const char *file, const char *variable)
{
    char buf[PASSWORD_MAX_BYTES + 2];
    char *password;
    const char *env;
    FILE *f;
    size_t len;

    if (file == NULL) {
        env = getenv(variable);
        return env != NULL && *env != '\0' ? xstrdup(env) : NULL;
    }
    f = fopen(file, "re");
    if (f == NULL)
        usage_error("cannot open the password file '%s': %s", file, strerror(errno));
    if (fgets(buf, sizeof buf, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    len = strcspn(buf, "\r\n");
    buf[len] = '\0';
    password = xstrdup(buf);
    wipe(buf, sizeof buf);
    if (len > PASSWORD_MAX_BYTES)
        usage_error("the password in '%s' is longer than %d bytes", file, PASSWORD_MAX_BYTES);
    if (len == 0)
        usage_error("the password file '%s' is empty", file);
    return password;
}

/* Appends s to out, percent-encoding every byte but the URI's unreserved ones. */
static char *percent_encode(char *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (isalnum(c) || strchr("-._~", c) != NULL) {
            *out++ = (char)c;
        } else {
            *out++ = '%';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 15];
        }
    }
    return out;
}

/*
 * Returns a copy of uri, with password added when the URI carries none:
 * redis://host -> redis://:password@host, and redis://user@host ->
 * redis://user:password@host. The userinfo ends at the last '@' before the
 * path, which starts at the first '/' after "scheme://".
 */
static char *uri_with_password(const char *uri, const char *password)
{
    const char *scheme_end = strstr(uri, "://");
    const char *authority, *path, *at = NULL, *insert_at;
    char *copy, *out;

    if (password == NULL || scheme_end == NULL)
        return xstrdup(uri);
    authority = scheme_end + 3;
    path = authority + strcspn(authority, "/");
    for (const char *p = authority; p < path; p++) {
        if (*p == '@')
            at = p;
    }
    if (at != NULL && memchr(authority, ':', (size_t)(at - authority)) != NULL)
        return xstrdup(uri); /* it has a password of its own */

    /* Insert ":password" before the '@', or ":password@" before the host. */
    insert_at = at != NULL ? at : authority;
    copy = xmalloc(strlen(uri) + 3 * strlen(password) + 3);
    out = copy;
    memcpy(out, uri, (size_t)(insert_at - uri));
    out += insert_at - uri;
    *out++ = ':';
    out = percent_encode(out, password);
    if (at == NULL)
        *out++ = '@';
    strcpy(out, insert_at);
    return copy;
}

/* Splits the node lists into URIs, each with the password when it lacks one. */
static size_t collect_nodes(const struct config *cfg, const char *password, char ***out)
{
    const char *env = getenv("REDLOCK_NODES");
    const char *const *lists = (const char *const *)cfg->node_lists;
    size_t n_lists = cfg->n_node_lists;
    size_t n = 0, max = 0;
    char **uris;

    if (n_lists == 0) {
        if (env == NULL || *env == '\0')
            usage_error("no nodes: use --nodes URI[,URI...] or set REDLOCK_NODES");
        lists = &env;
        n_lists = 1;
    }
    for (size_t i = 0; i < n_lists; i++)
        max += redlock_uri_list_count(lists[i]);
    if (max == 0)
        usage_error("no nodes: use --nodes URI[,URI...] or set REDLOCK_NODES");
    uris = xmalloc(sizeof *uris * max);
    /* The library splits each list (a comma that starts a new URI) and
     * refuses an empty URI, with the message of every language. */
    for (size_t i = 0; i < n_lists; i++) {
        size_t size = strlen(lists[i]) + 1;
        char *uri = xmalloc(size);

        for (size_t k = 0, count = redlock_uri_list_count(lists[i]); k < count; k++) {
            if (redlock_uri_list_item(lists[i], k, uri, size) != REDLOCK_OK)
                usage_error("%s", redlock_errmsg());
            uris[n++] = uri_with_password(uri, password);
        }
        wipe(uri, size);   /* each URI held there, a longer one's tail too */
        free(uri);
    }
    *out = uris;
    return n;
}

/* The library's events: all of them with -v; else only a failed renewal of
 * the lock (data: its name), which is retried while validity lasts. */
static void on_event(void *data, int level, const char *event, const char *message)
{
    if (verbosity == VERBOSE)
        print_event(NULL, level, event, message);
    if (strcmp(event, "renewal_failed") == 0)
        say("cannot extend '%s': %s", (const char *)data, message);
}

/* The client's lease of a kept lock (watchdog_lease_ms; its default, from
 * the library's table, should the client not say). */
int64_t kept_lease_ms(redlock_ctx *ctx)
{
    char value[32] = "";

    if (redlock_ctx_get_option(ctx, "watchdog_lease_ms", value, sizeof value) != REDLOCK_OK)
        redlock_option_default("watchdog_lease_ms", value, sizeof value);
    return strtoll(value, NULL, 10);
}

/* Makes the client and applies the settings. Returns an exit status, EX_OK on success. */
int open_ctx(redlock_ctx **out, const struct config *cfg)
{
    char *password = read_password(cfg->password_file, "REDLOCK_PASSWORD");
    char *sentinel_password = read_password(cfg->sentinel_password_file,
                                            "REDLOCK_SENTINEL_PASSWORD");
    char **uris;
    size_t n = collect_nodes(cfg, password, &uris);
    int rc = redlock_ctx_new(out, (const char *const *)uris, n);

    for (size_t i = 0; i < n; i++)
        free_secret(uris[i]);
    free(uris);
    free_secret(password);
    if (rc != REDLOCK_OK) {
        const char *detail = redlock_errmsg();

        /* Not say(): the list of nodes is the user's input. */
        fprintf(stderr, "redlock: bad list of nodes: %s%s%s\n", redlock_strerror(rc),
                *detail ? ": " : "", detail);
        free_secret(sentinel_password);
        return rc == REDLOCK_ENOMEM ? EX_SOFTWARE : EX_USAGE;
    }
    /* Before the settings: -o sentinel_password wins. */
    if (sentinel_password != NULL)
        rc = redlock_ctx_set_option(*out, "sentinel_password", sentinel_password);
    free_secret(sentinel_password);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "redlock: cannot set the sentinels' password: %s\n", redlock_errmsg());
        return rc == REDLOCK_ENOMEM ? EX_SOFTWARE : EX_USAGE;
    }
    for (size_t i = 0; i < cfg->n_settings; i++) {
        const struct setting *s = &cfg->settings[i];

        rc = redlock_ctx_set_option(*out, s->name, s->value);
        if (rc != REDLOCK_OK) {
            const char *detail = redlock_errmsg();

            /* A password's value is named, never shown. */
            fprintf(stderr, "redlock: cannot set option %s%s%s%s: %s%s%s\n", s->name,
                    secret_option(s->name) ? " (its value is not shown)" : " to '",
                    secret_option(s->name) ? "" : s->value,
                    secret_option(s->name) ? "" : "'", redlock_strerror(rc),
                    *detail ? ": " : "", detail);
            return rc == REDLOCK_ENOMEM ? EX_SOFTWARE : EX_USAGE;
        }
    }
    if (verbosity != QUIET)
        redlock_ctx_set_log(*out, on_event,
                            verbosity == VERBOSE ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_WARN,
                            (void *)cfg->name);
    return EX_OK;
}
