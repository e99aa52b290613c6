/*
 * fuzz_api.c - the public ABI from any input, without network I/O.
 *
 * The input is a list of lines, each a tag and its text:
 *     n<uri>          a node URI for redlock_ctx_new
 *     o<name>=<value> an option for redlock_ctx_set_option
 *     r<name>         a resource name
 *     t<number>       the lease (ttl_ms), w<number> the wait (wait_ms)
 *     c<number>       a status code for redlock_strerror
 * The fuzzed URIs only make a client (redlock_ctx_new does no I/O). The lock
 * calls go to a client whose one node is a unix socket that does not exist,
 * with the fuzzed options, so they fail at once: with REDLOCK_EINVAL exactly
 * when an argument is invalid, REDLOCK_ENOQUORUM otherwise.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "redlock.h"

#define MAX_ITEMS 80

/* What *out holds before a call, to see a failed call reset it to NULL. */
static char unset;
#define NOWHERE "unix:///nonexistent/redlock-fuzz/none.sock"

typedef struct input {
    const char *uris[MAX_ITEMS];
    size_t n_uris;
    char *options[MAX_ITEMS];    /* "name=value", split at '=' when set */
    size_t n_options;
    const char *names[MAX_ITEMS];
    size_t n_names;
    int64_t ttl_ms;
    int64_t wait_ms;
    int code;
} input;

static void parse_lines(input *in, char *text)
{
    in->ttl_ms = 1000;
    for (char *line = text; line; ) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char tag = line[0];
        char *rest = tag ? line + 1 : line;
        if (tag == 'n' && in->n_uris < MAX_ITEMS)
            in->uris[in->n_uris++] = rest;
        else if (tag == 'o' && in->n_options < MAX_ITEMS)
            in->options[in->n_options++] = rest;
        else if (tag == 'r' && in->n_names < MAX_ITEMS)
            in->names[in->n_names++] = rest;
        else if (tag == 't')
            in->ttl_ms = strtoll(rest, NULL, 10);
        else if (tag == 'w')
            in->wait_ms = strtoll(rest, NULL, 10);
        else if (tag == 'c')
            in->code = (int)strtol(rest, NULL, 10);
        line = next;
    }
}

static void check_failed(int rc, const void *out)
{
    CHECK(rc != REDLOCK_OK);
    CHECK(out == NULL);
    CHECK(redlock_errmsg()[0] != '\0');
}

/* Sets every option; returns the length of the last key_prefix accepted. */
static size_t set_options(redlock_ctx *ctx, const input *in, size_t prefix_len)
{
    for (size_t i = 0; i < in->n_options; i++) {
        char *name = in->options[i];
        char *eq = strchr(name, '=');
        const char *value = eq ? eq + 1 : "";
        if (eq)
            *eq = '\0';
        int rc = redlock_ctx_set_option(ctx, name, value);
        if (rc == REDLOCK_OK) {
            CHECK(redlock_errmsg()[0] == '\0');
            if (strcmp(name, "key_prefix") == 0)
                prefix_len = strlen(value);
        } else {
            CHECK(rc == REDLOCK_EINVAL);
            CHECK(redlock_errmsg()[0] != '\0');
        }
        if (eq)
            *eq = '=';
    }
    return prefix_len;
}

static void check_client(const input *in)
{
    redlock_ctx *ctx = (redlock_ctx *)&unset;
    int rc = redlock_ctx_new(&ctx, in->uris, in->n_uris);
    if (rc != REDLOCK_OK) {
        CHECK(rc == REDLOCK_EINVAL || rc == REDLOCK_EUNSUPPORTED);
        check_failed(rc, ctx);
        return;
    }
    CHECK(ctx != NULL);
    CHECK(in->n_uris >= 1 && in->n_uris <= REDLOCK_MAX_NODES);
    set_options(ctx, in, 0);
    redlock_ctx_free(ctx);
}

/* Whether the lock call must refuse its arguments. */
static bool invalid_arguments(const input *in, size_t prefix_len, long long max_lease_ms)
{
    if (in->ttl_ms <= 0 || in->ttl_ms > REDLOCK_MAX_TTL_MS || in->ttl_ms > max_lease_ms
        || in->wait_ms < 0)
        return true;
    if (in->n_names == 0)
        return true;
    for (size_t i = 0; i < in->n_names; i++) {
        size_t len = strlen(in->names[i]);
        if (len == 0 || prefix_len + len > REDLOCK_MAX_NAME_BYTES)
            return true;
        for (size_t j = 0; j < i; j++)
            if (strcmp(in->names[i], in->names[j]) == 0)
                return true;
    }
    return false;
}

static void check_handle_out(int rc, redlock_handle *h, bool invalid)
{
    CHECK(rc == (invalid ? REDLOCK_EINVAL : REDLOCK_ENOQUORUM));
    check_failed(rc, h);
}

static void check_locks(const input *in)
{
    const char *nowhere[] = { NOWHERE };
    redlock_ctx *ctx = NULL;
    CHECK(redlock_ctx_new(&ctx, nowhere, 1) == REDLOCK_OK);
    size_t prefix_len = set_options(ctx, in, 0);
    char max_lease[32];
    CHECK(redlock_ctx_get_option(ctx, "max_lease_ms", max_lease, sizeof max_lease) == REDLOCK_OK);
    long long max_lease_ms = atoll(max_lease);

    /* A positive wait would retry for as long as it says: one attempt only. */
    input one = *in;
    if (one.wait_ms > 0)
        one.wait_ms = 0;

    redlock_handle *h = (redlock_handle *)&unset;
    int rc = redlock_lock(&h, ctx, one.n_names ? one.names[0] : NULL, one.ttl_ms, one.wait_ms);
    input first = one;
    first.n_names = one.n_names ? 1 : 0;
    check_handle_out(rc, h, invalid_arguments(&first, prefix_len, max_lease_ms));

    h = (redlock_handle *)&unset;
    rc = redlock_lock_multi(&h, ctx, one.n_names ? one.names : NULL, one.n_names, one.ttl_ms,
                            one.wait_ms);
    check_handle_out(rc, h, invalid_arguments(&one, prefix_len, max_lease_ms));

    CHECK(redlock_extend(NULL, one.ttl_ms) == REDLOCK_EINVAL);
    redlock_ctx_free(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    input in = { 0 };
    parse_lines(&in, text);

    check_client(&in);
    check_locks(&in);

    const char *s = redlock_strerror(in.code);
    CHECK(s != NULL && s[0] != '\0');
    CHECK(redlock_handle_validity_ms(NULL) == 0);
    CHECK(redlock_handle_token(NULL) == NULL);
    redlock_handle_free(NULL);
    redlock_ctx_free(NULL);
    free(text);
    return 0;
}
