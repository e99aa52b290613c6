/*
 * test_acl.c - least privilege: the library works for the Redis ACL user
 * that its documentation gives, with every feature, and fails without any
 * one of that user's permissions with REDLOCK_ENOPERM naming what is missing.
 *
 * The ACL is not copied here: the test reads the documented line ("ACL
 * SETUSER locker ...", in README.md or a page of docs/) when it starts, so
 * the line users copy is the one tested. Its permissions are then given to
 * test users, all of them or all but one.
 *
 * What the library sends: on a new connection AUTH, SELECT (only for a
 * database other than 0), SCRIPT LOAD of its three common scripts and INFO
 * server (the node's run_id, for the restart guard); then SET (NX GET PX),
 * INCR of a fencing counter, EVALSHA (EVAL when a node has lost its scripts,
 * and for the rare scripts: inspect, force, fence) and PING (ping, health);
 * the scripts call get, set, del, exists, mget, type, incr, pexpire, pttl,
 * which Redis 7 checks against the same user, and publish (a release's
 * wake-up for waiters, on a channel named after the key); a waiting client
 * subscribes to those channels. AUTH needs no permission.
 */
#include "events.h"
#include "helpers.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef REDLOCK_SOURCE_DIR
#error "REDLOCK_SOURCE_DIR: the source tree, whose documentation gives the ACL"
#endif

#define NODES 3
#define USER "locker"
#define PASSWORD "Lk-9f2.w"
#define PREFIX "app:"
/* The documented line up to its permissions. */
#define DOCUMENTED_START "ACL SETUSER " USER " reset on >PASSWORD ~" PREFIX "* resetchannels -@all "

static char documented[2048];          /* the documented line */
static char documented_in[512];        /* the file it was first found in */
static char permission_words[2048];
static const char *permissions[64];    /* its permissions, in order */
static size_t n_permissions;

/* Permissions without which the library still works, with less (SCRIPT
 * LOAD: EVAL every time; INFO: no restart guard) or waking waiters by timed
 * retries only (the channel and its commands): each says so where it shows. */
static const char *const optional[] = {
    "+script|load", "+info", "+time", "+publish", "+subscribe", "+unsubscribe", "&" PREFIX "*",
};

static int is_optional(const char *permission)
{
    for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
        if (strcmp(permission, optional[i]) == 0)
            return 1;
    return 0;
}

/* Reads the documented lines of path into documented; 0, or -1 (said on
 * stderr) when two documented lines differ. */
static int read_documented(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[2048];
    int rc = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, DOCUMENTED_START, strlen(DOCUMENTED_START)) != 0)
            continue;
        line[strcspn(line, "\r\n")] = '\0';
        if (!documented[0]) {
            snprintf(documented, sizeof(documented), "%s", line);
            snprintf(documented_in, sizeof(documented_in), "%s", path);
        } else if (strcmp(documented, line) != 0) {
            fprintf(stderr, "two documented ACLs differ:\n  %s: %s\n  %s: %s\n", documented_in,
                    documented, path, line);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

/* Finds the documented line and splits its permissions; -1 when there is
 * none, or two that differ. */
static int load_documented_acl(void)
{
    int rc = read_documented(REDLOCK_SOURCE_DIR "/README.md");
    DIR *docs = opendir(REDLOCK_SOURCE_DIR "/docs");
    for (struct dirent *d; docs && (d = readdir(docs));) {
        size_t len = strlen(d->d_name);
        if (len < 3 || strcmp(d->d_name + len - 3, ".md") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/docs/%s", REDLOCK_SOURCE_DIR, d->d_name);
        if (read_documented(path) != 0)
            rc = -1;
    }
    if (docs)
        closedir(docs);
    if (!documented[0]) {
        fprintf(stderr, "no line \"%s...\" in README.md or docs/*.md\n", DOCUMENTED_START);
        return -1;
    }
    snprintf(permission_words, sizeof(permission_words), "%s",
             documented + strlen(DOCUMENTED_START));
    for (char *w = strtok(permission_words, " "); w; w = strtok(NULL, " ")) {
        if (n_permissions == sizeof(permissions) / sizeof(permissions[0]) || (*w != '+' && *w != '&')) {
            fprintf(stderr, "%s: not a command or channel permission: %s\n", documented_in, w);
            return -1;
        }
        permissions[n_permissions++] = w;
    }
    return rc;
}

static int group_setup(void **state)
{
    if (load_documented_acl() != 0)
        return -1;
    print_message("documented ACL (%s): %s\n", documented_in, documented);
    *state = nodes_start(NODES, NULL);
    return *state != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

/* The documented line for user and the test's password, without the
 * permission `without` (NULL: with all of them). */
static void acl_line(char *buf, size_t len, const char *user, const char *without)
{
    int n = snprintf(buf, len, "ACL SETUSER %s reset on >%s ~" PREFIX "* resetchannels -@all",
                     user, PASSWORD);
    for (size_t i = 0; i < n_permissions; i++)
        if (without == NULL || strcmp(permissions[i], without) != 0)
            n += snprintf(buf + n, len - (size_t)n, " %s", permissions[i]);
}

/* Creates the user on every node, from its ACL line split at spaces. */
static void create_user(nodes *ns, const char *user, const char *without)
{
    char line[1024], *argv[64];
    size_t argc = 0;
    acl_line(line, sizeof(line), user, without);
    for (char *word = strtok(line, " "); word && argc < 64; word = strtok(NULL, " "))
        argv[argc++] = word;
    for (size_t i = 0; i < NODES; i++) {
        redisContext *c = redisConnectUnix(nodes_socket(ns, i));
        assert_non_null(c);
        assert_int_equal(c->err, 0);
        redisReply *r = redisCommandArgv(c, (int)argc, (const char **)argv, NULL);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STATUS)
            fail_msg("ACL SETUSER %s: %s", user, r->type == REDIS_REPLY_ERROR ? r->str : "not OK");
        freeReplyObject(r);
        redisFree(c);
    }
}

/* A client that logs in as user, over TCP or the unix sockets, with key_prefix. */
static redlock_ctx *client_as(nodes *ns, const char *user, int unix_socket, const char *prefix,
                              int fencing)
{
    char buf[NODES][400];
    const char *uris[NODES];
    for (size_t i = 0; i < NODES; i++) {
        if (unix_socket)
            snprintf(buf[i], sizeof(buf[i]), "unix://%s:%s@%s", user, PASSWORD,
                     nodes_socket(ns, i));
        else
            snprintf(buf[i], sizeof(buf[i]), "redis://%s:%s@127.0.0.1:%d", user, PASSWORD,
                     nodes_port(ns, i));
        uris[i] = buf[i];
    }
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    set_options(ctx, (const char *const[]){"node_timeout_ms", "2000", "connect_timeout_ms",
                                           "2000", "retry_delay_ms", "20", "key_prefix", prefix,
                                           "fencing", fencing ? "1" : "0", NULL});
    return ctx;
}

/* Whether a failure's text names command: the node's own NOPERM ("... to run
 * the 'incr' command"), or, for a command refused inside a script (Redis
 * 7.0 does not say which), the library's list of what the script calls. */
static int names_command(const char *text, const char *command)
{
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "'%s'", command);
    if (strstr(text, quoted))
        return 1;
    size_t n = strlen(command);
    for (const char *list = strstr(text, "script calls "); list;
         list = strstr(list + 1, "script calls ")) {
        const char *p = list + strlen("script calls "), *end = strchr(p, ')');
        while (end && p < end) {
            size_t len = strcspn(p, ",)");
            if (len == n && strncmp(p, command, n) == 0)
                return 1;
            p += len;
            if (*p != ',')
                break;
            p += 2;   /* ", " */
        }
    }
    return 0;
}

/* The outcome of use_everything: REDLOCK_OK, or the code of the first step
 * that went otherwise (1 when it succeeded where it should not, or answered
 * wrong), its name, and the failure's message. */
typedef struct outcome {
    int rc;
    const char *step;
    char message[1024];
} outcome;

#define STEP(name, call, expected)                                                       \
    do {                                                                                 \
        out->step = (name);                                                              \
        int rc_ = (call);                                                                \
        if (rc_ != (expected)) {                                                         \
            out->rc = rc_ == REDLOCK_OK ? 1 : rc_;                                       \
            snprintf(out->message, sizeof(out->message), "%s", redlock_errmsg());        \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

#define CHECK(name, condition)                                                           \
    do {                                                                                 \
        out->step = (name);                                                              \
        if (!(condition)) {                                                              \
            out->rc = 1;                                                                 \
            snprintf(out->message, sizeof(out->message), "not so: %s", #condition);      \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

/*
 * Every feature but waiting and kept locks (tested below) as user: lock, a
 * refused lock, extend, inspect and unlock one resource; lock, a refused
 * lock, extend and unlock three at once, extending again after the nodes
 * forgot their scripts (SCRIPT FLUSH: EVALSHA, then EVAL); fenced locks of
 * one and of two resources, and a fence written back to the nodes that
 * counted less; a forced unlock; ping and health. The rival that holds
 * what user is refused is the documented user. ev (or NULL) records the
 * events of user's clients. The nodes are emptied afterwards.
 */
static outcome use_everything(nodes *ns, const char *user, int unix_socket, events *ev)
{
    outcome result = { .rc = REDLOCK_OK, .step = "" }, *out = &result;
    redlock_ctx *ctx = client_as(ns, user, unix_socket, PREFIX, 0);
    redlock_ctx *fenced = client_as(ns, user, unix_socket, PREFIX, 1);
    redlock_ctx *rival = client_as(ns, USER, unix_socket, PREFIX, 0);
    if (ev) {
        events_record(ev, ctx, REDLOCK_LOG_WARN);
        events_record(ev, fenced, REDLOCK_LOG_WARN);
    }
    redlock_handle *h = NULL, *other = NULL, *held = NULL;
    int locked = -1, deleted = -1, answered = -1;
    int64_t ttl = 0, fence = 0, fence_b = 0;
    const char *names[] = {"acl-a", "acl-b", "acl-c"};
    const char *theirs[] = {"acl-d", "acl-e"}, *overlapping[] = {"acl-e", "acl-f"};
    const char *pair[] = {"acl-fenced-a", "acl-fenced-b"};

    STEP("lock", redlock_lock(&h, ctx, "acl-one", 10000, 0), REDLOCK_OK);
    STEP("refused lock", redlock_lock(&other, rival, "acl-one", 10000, 0), REDLOCK_ELOCKED);
    STEP("extend", redlock_extend(h, 20000), REDLOCK_OK);
    STEP("inspect", redlock_inspect(ctx, "acl-one", &locked, &ttl), REDLOCK_OK);
    CHECK("inspect", locked == 1 && ttl > 10000 && ttl <= 20000);
    STEP("unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;
    STEP("inspect a free lock", redlock_inspect(ctx, "acl-one", &locked, &ttl), REDLOCK_OK);
    CHECK("inspect a free lock", locked == 0);

    STEP("multi-lock", redlock_lock_multi(&h, ctx, names, 3, 10000, 0), REDLOCK_OK);
    STEP("rival's multi-lock", redlock_lock_multi(&held, rival, theirs, 2, 10000, 0), REDLOCK_OK);
    STEP("refused multi-lock", redlock_lock_multi(&other, ctx, overlapping, 2, 10000, 0),
         REDLOCK_ELOCKED);
    STEP("multi-lock extend", redlock_extend(h, 20000), REDLOCK_OK);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "SCRIPT FLUSH"), 0);
    STEP("multi-lock extend after SCRIPT FLUSH", redlock_extend(h, 20000), REDLOCK_OK);
    STEP("multi-lock unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;

    STEP("fenced lock", redlock_lock(&h, fenced, "acl-fenced", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_handle_fence(h, 0, &fence), REDLOCK_OK);
    CHECK("fenced lock", fence >= 1);
    STEP("fenced unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;
    STEP("fenced multi-lock", redlock_lock_multi(&h, fenced, pair, 2, 10000, 0), REDLOCK_OK);
    assert_rc(redlock_handle_fence(h, 0, &fence), REDLOCK_OK);
    assert_rc(redlock_handle_fence(h, 1, &fence_b), REDLOCK_OK);
    CHECK("fenced multi-lock", fence >= 1 && fence_b >= 1);
    STEP("fenced multi-lock unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;
    /* Three nodes, three counts: whichever two take the lock disagree, and
     * the larger count is written back to the other (the fence script). */
    static const char counter[] = PREFIX "acl-fenced\0fence";
    assert_int_equal(nodes_exec(ns, 0, "SET %b 1000", counter, sizeof(counter) - 1), 0);
    assert_int_equal(nodes_exec(ns, 1, "SET %b 500", counter, sizeof(counter) - 1), 0);
    STEP("fence written back", redlock_lock(&h, fenced, "acl-fenced", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_handle_fence(h, 0, &fence), REDLOCK_OK);
    CHECK("fence written back", fence == 501 || fence == 1001);
    STEP("unlock after the fence", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;

    STEP("lock to force", redlock_lock(&h, ctx, "acl-forced", 10000, 0), REDLOCK_OK);
    STEP("force_unlock", redlock_force_unlock(ctx, "acl-forced", &deleted), REDLOCK_OK);
    CHECK("force_unlock", deleted == NODES);
    STEP("unlock after force_unlock", redlock_unlock(h), REDLOCK_ENOTHELD);

    STEP("ping", redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    CHECK("ping", answered == NODES);
    char health[NODES * REDLOCK_HEALTH_LINE_MAX];
    STEP("health", redlock_ctx_health(ctx, health, sizeof(health)), REDLOCK_OK);
    size_t up = 0;
    for (const char *p = strstr(health, " state=up "); p; p = strstr(p + 1, " state=up "))
        up++;
    CHECK("health", up == NODES);
done:
    redlock_handle_free(h);
    redlock_handle_free(other);
    if (held)
        redlock_unlock(held);
    redlock_handle_free(held);
    redlock_ctx_free(rival);
    redlock_ctx_free(fenced);
    redlock_ctx_free(ctx);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "FLUSHALL"), 0);
    return result;
}

static void the_documented_acl_is_enough_for_every_feature(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    for (int unix_socket = 0; unix_socket <= 1; unix_socket++) {
        outcome o = use_everything(ns, USER, unix_socket, NULL);
        if (o.rc != REDLOCK_OK)
            fail_msg("%s as %s (%s) failed: %s; errmsg: %s", o.step, USER,
                     unix_socket ? "unix" : "tcp", redlock_strerror(o.rc), o.message);
    }

    /* The keys are the prefixed names. */
    redlock_ctx *ctx = client_as(ns, USER, 0, PREFIX, 0);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "acl-seen", 10000, 0), REDLOCK_OK);
    assert_on_every_node(ns, PREFIX "acl-seen", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, PREFIX "acl-seen", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* A kept lock is renewed past its lease. */
static void a_kept_lock_is_renewed(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    redlock_ctx *ctx = client_as(ns, USER, 0, PREFIX, 0);
    events *ev = events_new();
    events_record(ev, ctx, REDLOCK_LOG_DEBUG);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "acl-kept", 1500, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(h, NULL, NULL), REDLOCK_OK);
    usleep(2500 * 1000);
    assert_int_equal(redlock_handle_lost(h), 0);
    assert_true(redlock_handle_validity_ms(h) > 0);
    assert_on_every_node(ns, PREFIX "acl-kept", redlock_handle_token(h));
    assert_true(events_count(ev, "extended", NULL) >= 1);
    assert_int_equal(events_count(ev, "renewal_failed", NULL), 0);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    events_free(ev);
}

static void keys_outside_the_prefix_are_refused(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    static const char *const prefixes[] = {"", "other:", "app", "APP:"};
    const char *names[] = {"acl-out-1", "acl-out-2"};

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        redlock_ctx *ctx = client_as(ns, USER, 0, prefixes[i], 0);
        redlock_handle *h = UNSET_HANDLE;
        assert_fails(redlock_lock(&h, ctx, "acl-out-1", 10000, 0), REDLOCK_ENOPERM);
        assert_null(h);
        assert_non_null(strstr(redlock_errmsg(), "no permissions to access one of the keys"));
        h = UNSET_HANDLE;
        assert_fails(redlock_lock_multi(&h, ctx, names, 2, 10000, 0), REDLOCK_ENOPERM);
        assert_null(h);
        redlock_ctx_free(ctx);

        char key[64];
        snprintf(key, sizeof(key), "%sacl-out-1", prefixes[i]);
        assert_on_every_node(ns, key, NULL);
    }
}

/* Without any one of the required permissions some feature fails, with
 * REDLOCK_ENOPERM (not REDLOCK_EAUTH: the credentials are fine), a message
 * naming the nodes and the missing command, and the nodes' permission_denied
 * events naming it too. */
static void each_required_permission_is_needed(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    size_t required = 0;
    for (size_t i = 0; i < n_permissions; i++) {
        const char *missing = permissions[i];
        if (is_optional(missing))
            continue;
        required++;
        const char *command = missing + 1;   /* "+incr": incr */
        char user[32];
        snprintf(user, sizeof(user), "lesser%zu", i);
        create_user(ns, user, missing);
        events *ev = events_new();
        outcome o = use_everything(ns, user, 0, ev);
        if (o.rc != REDLOCK_ENOPERM)
            fail_msg("without %s: %s gave %d (%s), expected REDLOCK_ENOPERM; errmsg: %s",
                     missing, o.step, o.rc, redlock_strerror(o.rc), o.message);
        if (!strstr(o.message, "127.0.0.1:") || !names_command(o.message, command))
            fail_msg("without %s: %s's message names no node or not %s: %s", missing, o.step,
                     command, o.message);
        char event[1200];
        size_t n_events = events_count(ev, "permission_denied", NULL);
        if (n_events == 0 || events_find(ev, "permission_denied", NULL, event, sizeof(event))
                                 != REDLOCK_LOG_ERROR
            || strncmp(event, "node=127.0.0.1:", 15) != 0 || !names_command(event, command))
            fail_msg("without %s: %zu permission_denied events, the first: %s", missing,
                     n_events, n_events ? event : "");
        print_message("without %-10s %s: %s\n", missing, o.step, o.message);
        events_free(ev);
    }
    assert_true(required >= 10);
}

/* The health line of node i of ctx, into line. */
static void health_of(redlock_ctx *ctx, size_t i, char *line, size_t len)
{
    char all[NODES * REDLOCK_HEALTH_LINE_MAX];
    assert_rc(redlock_ctx_health(ctx, all, sizeof(all)), REDLOCK_OK);
    const char *p = all;
    for (size_t k = 0; k < i; k++)
        p = strchr(p, '\n') + 1;
    snprintf(line, len, "%.*s", (int)strcspn(p, "\n"), p);
}

/* Without an optional permission everything works; without SCRIPT LOAD,
 * INFO or TIME (the guard script's), the nodes' health says why (INFO's or
 * the guard's absence turns the restart guard off for the node). */
static void optional_permissions_only_cost_something(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    for (size_t i = 0; i < n_permissions; i++) {
        const char *missing = permissions[i];
        if (!is_optional(missing))
            continue;
        char user[32];
        snprintf(user, sizeof(user), "without%zu", i);
        create_user(ns, user, missing);
        outcome o = use_everything(ns, user, 0, NULL);
        if (o.rc != REDLOCK_OK)
            fail_msg("without %s: %s failed: %s; errmsg: %s", missing, o.step,
                     redlock_strerror(o.rc), o.message);
        const char *said = strcmp(missing, "+script|load") == 0 ? "SCRIPT LOAD refused: NOPERM"
                         : strcmp(missing, "+info") == 0 ? "INFO refused: NOPERM"
                         : strcmp(missing, "+time") == 0 ? "the guard script refused: ERR"
                         : NULL;
        if (!said)
            continue;
        redlock_ctx *ctx = client_as(ns, user, 0, PREFIX, 0);
        redlock_handle *h = NULL;
        assert_rc(redlock_lock(&h, ctx, "acl-optional", 10000, 0), REDLOCK_OK);
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
        assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);   /* every node heard from */
        for (size_t k = 0; k < NODES; k++) {
            char line[REDLOCK_HEALTH_LINE_MAX];
            health_of(ctx, k, line, sizeof(line));
            /* Its spaces percent-encoded: "INFO%20refused:%20NOPERM". */
            char encoded[64];
            size_t w = 0;
            for (const char *c = said; *c && w + 4 < sizeof(encoded); c++)
                w += (size_t)snprintf(encoded + w, sizeof(encoded) - w, *c == ' ' ? "%%20" : "%c",
                                      *c);
            if (!strstr(line, encoded) || !strstr(line, " state=up "))
                fail_msg("without %s: node %zu's health does not say it: %s", missing, k, line);
        }
        redlock_ctx_free(ctx);
    }
}

/* Holds a lock for a while, then releases it and notes when. */
typedef struct holder {
    redlock_ctx *ctx;
    const char *name;
    int64_t released_at;
} holder;

static void *hold_then_release(void *arg)
{
    holder *hd = arg;
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, hd->ctx, hd->name, 10000, 0), REDLOCK_OK);
    usleep(300 * 1000);
    hd->released_at = now_ms();
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    return NULL;
}

/* A waiter, retrying every 2 s, takes the lock within moments of its
 * release: the release's message woke it (PUBLISH, SUBSCRIBE). */
static void a_release_wakes_the_waiter(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    redlock_ctx *ctx = client_as(ns, USER, 0, PREFIX, 0);
    redlock_ctx *waiting = client_as(ns, USER, 0, PREFIX, 0);
    set_options(waiting, (const char *const[]){"retry_delay_ms", "2000", "retry_jitter_ms", "0",
                                               NULL});
    holder hd = { .ctx = ctx, .name = "acl-wake" };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_then_release, &hd), 0);
    usleep(100 * 1000);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, waiting, "acl-wake", 10000, 10000), REDLOCK_OK);
    int64_t acquired_at = now_ms();
    pthread_join(t, NULL);
    if (acquired_at - hd.released_at >= 1000)
        fail_msg("acquired %lld ms after the release: not woken by it",
                 (long long)(acquired_at - hd.released_at));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(waiting);
    redlock_ctx_free(ctx);
}

/* Without the channel permission a wait falls back on timed retries, and a
 * wait that ends refused says why it was slower. */
static void without_channels_waiting_falls_back_on_retries(void **state)
{
    nodes *ns = *state;
    create_user(ns, "nochannels", "&" PREFIX "*");
    redlock_ctx *ctx = client_as(ns, "nochannels", 0, PREFIX, 0);
    redlock_ctx *rival = client_as(ns, "nochannels", 0, PREFIX, 0);
    redlock_handle *h = NULL, *other = UNSET_HANDLE;
    assert_rc(redlock_lock(&h, rival, "acl-nowake", 10000, 0), REDLOCK_OK);
    assert_fails(redlock_lock(&other, ctx, "acl-nowake", 10000, 500), REDLOCK_ELOCKED);
    if (!strstr(redlock_errmsg(), "refused SUBSCRIBE"))
        fail_msg("no word of the refused subscription: %s", redlock_errmsg());
    holder hd = { .ctx = rival, .name = "acl-nowake-2" };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_then_release, &hd), 0);
    usleep(100 * 1000);
    redlock_handle *later = NULL;
    assert_rc(redlock_lock(&later, ctx, "acl-nowake-2", 10000, 5000), REDLOCK_OK);
    pthread_join(t, NULL);
    assert_rc(redlock_unlock(later), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(later);
    redlock_handle_free(h);
    redlock_ctx_free(rival);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_documented_acl_is_enough_for_every_feature),
        cmocka_unit_test(a_kept_lock_is_renewed),
        cmocka_unit_test(a_release_wakes_the_waiter),
        cmocka_unit_test(keys_outside_the_prefix_are_refused),
        cmocka_unit_test(each_required_permission_is_needed),
        cmocka_unit_test(optional_permissions_only_cost_something),
        cmocka_unit_test(without_channels_waiting_falls_back_on_retries),
    };
    return cmocka_run_group_tests_name("acl", tests, group_setup, group_teardown);
}
