/*
 * fuzz_uri.c - node URIs (rl_uri_parse) from any text.
 *
 * Beyond "no crash, no leak, no undefined behaviour": a parsed address keeps
 * the promises the rest of the library relies on, a refused URI leaves
 * nothing allocated and a message behind, and a password put in front of the
 * fuzzed text never shows in a message or a label.
 */
#include <string.h>
#include <sys/un.h>

#include "fuzz.h"
#include "uri.h"

/* Holds none of the characters a host may have, nor '/', '?', '#' or '@',
 * so whatever follows it, it stays inside the credentials. */
#define SECRET "Pw!=7*q~"

/* prefix followed by the input, up to its first NUL, as a C string. */
static char *join(const char *prefix, const uint8_t *data, size_t size)
{
    size_t plen = strlen(prefix);
    char *s = malloc(plen + size + 1);
    CHECK(s != NULL);
    memcpy(s, prefix, plen);
    memcpy(s + plen, data, size);
    s[plen + size] = '\0';
    return s;
}

static void check_parsed(const rl_node_addr *a)
{
    if (a->kind == RL_NODE_SENTINEL || a->kind == RL_NODE_CLUSTER) {
        CHECK(a->host == NULL && a->path == NULL && !a->is_unix);
        CHECK(a->n_sentinels >= 1 && a->sentinels != NULL);
        for (size_t i = 0; i < a->n_sentinels; i++) {
            const rl_server *s = &a->sentinels[i];
            CHECK(s->host != NULL && s->host[0] != '\0' && strlen(s->host) <= 255);
            CHECK(s->port >= 1 && s->port <= 65535);
        }
        CHECK(a->kind == RL_NODE_CLUSTER
              ? a->master_name == NULL && a->db == 0
              : a->master_name != NULL && a->master_name[0] != '\0');
    } else if (a->is_unix) {
        CHECK(a->host == NULL);
        CHECK(a->path != NULL && a->path[0] == '/');
        CHECK(strlen(a->path) < sizeof(((struct sockaddr_un *)0)->sun_path));
    } else {
        CHECK(a->path == NULL);
        CHECK(a->host != NULL && a->host[0] != '\0' && strlen(a->host) <= 255);
        CHECK(a->port >= 1 && a->port <= 65535);
    }
    CHECK(a->db >= 0);
    CHECK(a->user == NULL || a->password != NULL);
    CHECK(a->password == NULL || a->password[0] != '\0');
    CHECK(memchr(a->label, '\0', sizeof a->label) != NULL);
    CHECK(a->label[0] != '\0');
    CHECK(rl_uri_same_node(a, a));
}

static void check_refused(int rc, const rl_node_addr *a)
{
    CHECK(rc == REDLOCK_EINVAL || rc == REDLOCK_EUNSUPPORTED || rc == REDLOCK_ENOMEM);
    CHECK(a->host == NULL && a->path == NULL && a->user == NULL && a->password == NULL);
    CHECK(a->sentinels == NULL && a->master_name == NULL && a->n_sentinels == 0);
    CHECK(redlock_errmsg()[0] != '\0');
}

/* Parses prefix + input, where prefix ends in credentials holding SECRET. */
static void check_secret_hidden(const char *prefix, const uint8_t *data, size_t size)
{
    char *uri = join(prefix, data, size);
    rl_node_addr a;
    rl_clear_error();
    int rc = rl_uri_parse(&a, uri);
    if (rc == REDLOCK_OK) {
        check_parsed(&a);
        CHECK(a.password != NULL && strncmp(a.password, SECRET, strlen(SECRET)) == 0);
        CHECK(strstr(a.label, SECRET) == NULL);
        rl_uri_free(&a);
    } else {
        check_refused(rc, &a);
        CHECK(strstr(redlock_errmsg(), SECRET) == NULL);
    }
    free(uri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    if (nul)
        size = (size_t)(nul - data);

    char *uri = join("", data, size);
    rl_node_addr a;
    int rc = rl_uri_parse(&a, uri);
    if (rc == REDLOCK_OK) {
        check_parsed(&a);
        rl_uri_free(&a);
        CHECK(a.host == NULL && a.path == NULL && a.user == NULL && a.password == NULL);
    } else {
        check_refused(rc, &a);
    }
    free(uri);

    /* The input itself may spell the secret out (say, in a socket path). */
    if (memmem(data, size, SECRET, strlen(SECRET)) == NULL) {
        check_secret_hidden("redis://user:" SECRET "@", data, size);
        check_secret_hidden("redis://:" SECRET "@", data, size);
        check_secret_hidden("unix://user:" SECRET "@", data, size);
    }
    return 0;
}
