/*
 * helpers.c - shared assertions and client set-up for the C tests.
 */
#include "helpers.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

char unset_out;

static const char *const generous_options[] = {
    "node_timeout_ms", "2000",
    "connect_timeout_ms", "2000",
    "retry_delay_ms", "20",
    "retry_jitter_ms", "10",
    NULL,
};

int five_nodes_setup(void **state)
{
    *state = nodes_start(5, NULL);
    return *state != NULL ? 0 : -1;
}

int nodes_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

void set_options(redlock_ctx *ctx, const char *const *options)
{
    for (size_t i = 0; options != NULL && options[i] != NULL; i += 2)
        assert_rc(redlock_ctx_set_option(ctx, options[i], options[i + 1]), REDLOCK_OK);
}

redlock_ctx *ctx_for(const nodes *ns, const char *const *options)
{
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, nodes_uris(ns), nodes_count(ns)), REDLOCK_OK);
    assert_non_null(ctx);
    set_options(ctx, generous_options);
    set_options(ctx, options);
    return ctx;
}

redlock_ctx *ctx_for_first(const nodes *ns, size_t n, const char *const *options)
{
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, nodes_uris(ns), n), REDLOCK_OK);
    assert_non_null(ctx);
    set_options(ctx, generous_options);
    set_options(ctx, options);
    return ctx;
}

size_t beside_key(char *buf, size_t len, const char *name, const char *suffix)
{
    size_t at = (size_t)snprintf(buf, len, "%s", name) + 1;
    assert_true(at < len);
    at += (size_t)snprintf(buf + at, len - at, "%s", suffix);
    assert_true(at < len);
    return at;
}

int is_token(const char *token)
{
    if (token == NULL || strlen(token) != 32)
        return 0;
    return strspn(token, "0123456789abcdef") == 32;
}

/* 1 when key on node i, database db, holds value (NULL: is missing). */
static int node_holds(nodes *ns, size_t i, int db, const char *key, const char *value)
{
    if (value == NULL)
        return nodes_exists_db(ns, i, db, key) == 0;
    char *v = nodes_get_db(ns, i, db, key);
    int same = v != NULL && strcmp(v, value) == 0;
    free(v);
    return same;
}

static void assert_on_nodes_db(nodes *ns, size_t first, size_t end, int db, const char *key,
                               const char *value)
{
    long long deadline = now_ms() + CONVERGE_MS;
    size_t i = first;
    while (i < end) {
        if (node_holds(ns, i, db, key, value)) {
            i++;
            continue;
        }
        if (now_ms() > deadline) {
            if (value == NULL) {
                char *found = nodes_get_db(ns, i, db, key);
                fail_msg("node %zu, db %d: key %s exists (%s, pttl %lld), expected no key", i, db,
                         key, found ? found : "not a string", nodes_pttl(ns, i, key));
            }
            fail_msg("node %zu, db %d: key %s does not hold %s", i, db, key, value);
        }
        sleep_ms(10);
    }
}

void assert_on_nodes(nodes *ns, size_t first, size_t end, const char *key, const char *value)
{
    assert_on_nodes_db(ns, first, end, 0, key, value);
}

void assert_on_every_node(nodes *ns, const char *key, const char *value)
{
    assert_on_nodes_db(ns, 0, nodes_count(ns), 0, key, value);
}

void assert_on_a_quorum(nodes *ns, const char *key, const char *value)
{
    long long deadline = now_ms() + CONVERGE_MS;
    for (;;) {
        size_t n = nodes_count(ns), holding = 0, other = n;
        for (size_t i = 0; i < n; i++) {
            if (node_holds(ns, i, 0, key, value))
                holding++;
            else if (!node_holds(ns, i, 0, key, NULL))
                other = i;
        }
        if (holding >= n / 2 + 1 && other == n)
            return;
        if (now_ms() > deadline) {
            if (other < n)
                fail_msg("node %zu: key %s holds another value than %s", other, key, value);
            fail_msg("key %s holds %s on %zu of %zu nodes only", key, value, holding, n);
        }
        sleep_ms(10);
    }
}

void assert_on_every_node_db(nodes *ns, int db, const char *key, const char *value)
{
    assert_on_nodes_db(ns, 0, nodes_count(ns), db, key, value);
}

void assert_pttl_on_every_node(nodes *ns, const char *key, long long low, long long high)
{
    long long deadline = now_ms() + CONVERGE_MS;
    size_t i = 0;
    while (i < nodes_count(ns)) {
        long long pttl = nodes_pttl(ns, i, key);
        if (pttl >= low && pttl <= high) {
            i++;
            continue;
        }
        if (now_ms() > deadline)
            fail_msg("node %zu: PTTL of %s is %lld, expected %lld to %lld", i, key, pttl, low,
                     high);
        sleep_ms(10);
    }
}

size_t threads_now(void)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

long long node_calls(nodes *ns, size_t i, const char *command)
{
    redisReply *r = nodes_cmd(ns, i, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char field[64];
    snprintf(field, sizeof field, "cmdstat_%s:calls=", command);
    const char *at = strstr(r->str, field);
    long long n = at ? atoll(at + strlen(field)) : 0;
    freeReplyObject(r);
    return n;
}

void health_value(redlock_ctx *ctx, size_t n_nodes, size_t i, const char *field, char *out,
               size_t len)
{
    size_t size = n_nodes * REDLOCK_HEALTH_LINE_MAX;
    char *text = malloc(size);
    assert_non_null(text);
    assert_rc(redlock_ctx_health(ctx, text, size), REDLOCK_OK);
    const char *line = text;
    for (size_t n = 0; n < i; n++) {
        line = strchr(line, '\n');
        assert_non_null(line);
        line++;
    }
    char key[40];
    snprintf(key, sizeof key, " %s=", field);
    const char *at = strstr(line, key), *end = strchr(line, '\n');
    assert_non_null(at);
    assert_true(!end || at < end);
    at += strlen(key);
    size_t n = strcspn(at, " \n");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), at);
    free(text);
}

void lock_extend_unlock(redlock_ctx *ctx, const char *name)
{
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, name, 10000, 0), REDLOCK_OK);
    assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
}
