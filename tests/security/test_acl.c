/*
 * test_acl.c - least privilege: the library works for the Redis ACL user
 * that its documentation gives, with every feature, and fails without any
 * one of that user's permissions with REDLOCK_ENOPERM naming what is missing;
 * that user cannot run code of its own (EVAL, SCRIPT LOAD, FUNCTION LOAD).
 *
 * The ACLs are not copied here: the test reads the documented lines ("ACL
 * SETUSER locker ..." for the nodes with the function library, "ACL SETUSER
 * locker-eval ..." for those without, "ACL SETUSER locker-plain ..." for
 * nodes without scripting, in README.md or a page of docs/) when
 * it starts, so the lines users copy are the ones tested. Their permissions
 * are then given to test users, all of them or all but one.
 *
 * What the library sends: on a new connection AUTH, SELECT (only for a
 * database other than 0), FCALL of the library's probe, SCRIPT LOAD of its
 * three common scripts (where the library was not found), INFO server (the
 * node's run_id, for the restart guard) and the guard; then SET (NX GET
 * PX), INCR of a fencing counter, FCALL of the library's functions where the
 * library is (else EVALSHA, and EVAL when a node has lost its scripts and
 * for the rare scripts: inspect, force, fence) and PING (ping, health); the
 * scripts call get, set, del, exists, mget, type, incr, pexpire, pttl, which
 * Redis 7 checks against the same user, and publish (a release's wake-up
 * for waiters, on a channel named after the key); a waiting client
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
#define USER "locker"              /* the documented user, for nodes with the library */
#define USER_EVAL "locker-eval"    /* the documented user for nodes without it */
#define USER_PLAIN "locker-plain"  /* the documented user for nodes without scripting */
#define PASSWORD "Lk-9f2.w"
#define PREFIX "app:"

/* A documented ACL line: "ACL SETUSER <user> reset on >PASSWORD ~app:*
 * resetchannels -@all " and its permissions. */
typedef struct acl {
    const char *user;
    char start[128];                  /* the line up to its permissions */
    char line[2048];
    char in[512];                     /* the file it was first found in */
    char words[2048];
    const char *permissions[64];      /* its permissions, in order */
    size_t n_permissions;
} acl;

static acl documented = { .user = USER }, documented_eval = { .user = USER_EVAL },
           documented_plain = { .user = USER_PLAIN };

/* Permissions without which the library still works, with less (SCRIPT
 * LOAD: EVAL every time; INFO: no restart guard; APPEND: no records of the
 * group, which restart_records keeps) or waking waiters by timed retries
 * only (the channel and its commands): each says so where it shows. */
static const char *const optional[] = {
    "+info", "+append", "+publish", "+subscribe", "+unsubscribe", "&" PREFIX "*",
};

static int is_optional(const char *permission)
{
    for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
        if (strcmp(permission, optional[i]) == 0)
            return 1;
    return 0;
}

/* Reads a's documented lines of path into a->line; 0, or -1 (said on
 * stderr) when two documented lines differ. */
static int read_documented(acl *a, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[2048];
    int rc = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, a->start, strlen(a->start)) != 0)
            continue;
        line[strcspn(line, "\r\n")] = '\0';
        if (!a->line[0]) {
            snprintf(a->line, sizeof(a->line), "%s", line);
            snprintf(a->in, sizeof(a->in), "%s", path);
        } else if (strcmp(a->line, line) != 0) {
            fprintf(stderr, "two documented ACLs differ:\n  %s: %s\n  %s: %s\n", a->in,
                    a->line, path, line);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

/* Finds a's documented line and splits its permissions; -1 when there is
 * none, or two that differ. */
static int load_documented_acl(acl *a)
{
    snprintf(a->start, sizeof(a->start),
             "ACL SETUSER %s reset on >PASSWORD ~" PREFIX "* resetchannels -@all ", a->user);
    int rc = read_documented(a, REDLOCK_SOURCE_DIR "/README.md");
    DIR *docs = opendir(REDLOCK_SOURCE_DIR "/docs");
    for (struct dirent *d; docs && (d = readdir(docs));) {
        size_t len = strlen(d->d_name);
        if (len < 3 || strcmp(d->d_name + len - 3, ".md") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/docs/%s", REDLOCK_SOURCE_DIR, d->d_name);
        if (read_documented(a, path) != 0)
            rc = -1;
    }
    if (docs)
        closedir(docs);
    if (!a->line[0]) {
        fprintf(stderr, "no line \"%s...\" in README.md or docs/*.md\n", a->start);
        return -1;
    }
    snprintf(a->words, sizeof(a->words), "%s", a->line + strlen(a->start));
    for (char *w = strtok(a->words, " "); w; w = strtok(NULL, " ")) {
        if (a->n_permissions == sizeof(a->permissions) / sizeof(a->permissions[0])
            || (*w != '+' && *w != '&')) {
            fprintf(stderr, "%s: not a command or channel permission: %s\n", a->in, w);
            return -1;
        }
        a->permissions[a->n_permissions++] = w;
    }
    return rc;
}

/* A client of the nodes' default user (every permission). */
static redlock_ctx *admin_client(nodes *ns)
{
    const char *uris[NODES];
    char buf[NODES][300];
    for (size_t i = 0; i < NODES; i++) {
        snprintf(buf[i], sizeof(buf[i]), "unix://%s", nodes_socket(ns, i));
        uris[i] = buf[i];
    }
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    return ctx;
}

/* How many nodes' health lines of ctx say scripts=way. */
static size_t nodes_running(redlock_ctx *ctx, const char *way)
{
    char health[NODES * REDLOCK_HEALTH_LINE_MAX], field[64];
    assert_rc(redlock_ctx_health(ctx, health, sizeof(health)), REDLOCK_OK);
    snprintf(field, sizeof(field), " scripts=%s ", way);   /* native= follows */
    size_t n = 0;
    for (const char *p = strstr(health, field); p; p = strstr(p + 1, field))
        n++;
    return n;
}

/* Loads the function library on every node, as a client of the default
 * user with the option load_functions: its first connection to each node
 * finds the library missing and loads it (the next command there reads the
 * answer); then every node runs the scripts as functions. */
static void load_library(nodes *ns)
{
    redlock_ctx *ctx = admin_client(ns);
    set_options(ctx, (const char *const[]){"load_functions", "1", NULL});
    for (int i = 0; i < 3; i++)
        assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);
    assert_int_equal(nodes_running(ctx, "functions"), NODES);
    redlock_ctx_free(ctx);
}

static int group_setup(void **state)
{
    if (load_documented_acl(&documented) != 0 || load_documented_acl(&documented_eval) != 0
        || load_documented_acl(&documented_plain) != 0)
        return -1;
    print_message("documented ACL (%s): %s\n", documented.in, documented.line);
    print_message("documented ACL without the library (%s): %s\n", documented_eval.in,
                  documented_eval.line);
    print_message("documented ACL without scripting (%s): %s\n", documented_plain.in,
                  documented_plain.line);
    *state = nodes_start(NODES, NULL);
    if (*state == NULL)
        return -1;
    load_library(*state);
    return 0;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

/* a's documented line for user and the test's password, without the
 * permission `without` (NULL: with all of them). */
static void acl_line(char *buf, size_t len, const acl *a, const char *user, const char *without)
{
    int n = snprintf(buf, len, "ACL SETUSER %s reset on >%s ~" PREFIX "* resetchannels -@all",
                     user, PASSWORD);
    for (size_t i = 0; i < a->n_permissions; i++)
        if (without == NULL || strcmp(a->permissions[i], without) != 0)
            n += snprintf(buf + n, len - (size_t)n, " %s", a->permissions[i]);
}

/* Creates the user on every node, from a's ACL line split at spaces. */
static void create_user_as(nodes *ns, const acl *a, const char *user, const char *without)
{
    char line[1024], *argv[64];
    size_t argc = 0;
    acl_line(line, sizeof(line), a, user, without);
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

/* The same from the documented line (for nodes with the library). */
static void create_user(nodes *ns, const char *user, const char *without)
{
    create_user_as(ns, &documented, user, without);
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

/* Three nodes, three counts for the fencing counter of name: whichever
 * two take its lock disagree, and the larger count is written back to the
 * other (the fence script, or its transaction). */
static void counters_apart(nodes *ns, const char *name)
{
    char counter[128];
    size_t len = beside_key(counter, sizeof(counter), name, "fence");
    assert_int_equal(nodes_exec(ns, 0, "SET %b 1000", counter, len), 0);
    assert_int_equal(nodes_exec(ns, 1, "SET %b 500", counter, len), 0);
}

/*
 * Every feature but waiting and kept locks (tested below) as user: lock, a
 * refused lock, extend, inspect and unlock one resource; lock, a refused
 * lock, extend and unlock three at once, extending again after the nodes
 * forgot their scripts (SCRIPT FLUSH: EVALSHA, then EVAL; nothing to
 * functions); fenced locks of one and of two resources, and a fence written
 * back to the nodes that counted less; a forced unlock; a read-write lock,
 * a semaphore's permit and a fair lock; ping and health, whose scripts=
 * field must be `way` on every node. The rival that holds what user is
 * refused is the documented user for these nodes. ev (or NULL) records the
 * events of user's clients. The nodes are emptied afterwards.
 */
static outcome use_everything_as(nodes *ns, const char *user, int unix_socket, events *ev,
                                 const char *rival_user, const char *way)
{
    outcome result = { .rc = REDLOCK_OK, .step = "" }, *out = &result;
    /* A group in use (the FLUSHALL below wipes its records): so a missing
     * permission shows where it is needed, not in a fresh group's first
     * attempt, which is undone (DEL) to go again once recorded. */
    assert_int_equal(nodes_record_group_for(ns, PREFIX), 0);
    redlock_ctx *ctx = client_as(ns, user, unix_socket, PREFIX, 0);
    redlock_ctx *fenced = client_as(ns, user, unix_socket, PREFIX, 1);
    redlock_ctx *rival = client_as(ns, rival_user, unix_socket, PREFIX, 0);
    if (ev) {
        events_record(ev, ctx, REDLOCK_LOG_WARN);
        events_record(ev, fenced, REDLOCK_LOG_WARN);
    }
    redlock_handle *h = NULL, *other = NULL, *held = NULL;
    int locked = -1, deleted = -1, answered = -1, available = -1;
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
    counters_apart(ns, PREFIX "acl-fenced");
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
    redlock_handle_free(h);
    h = NULL;

    STEP("read lock", redlock_lock_rw(&h, ctx, "acl-rw", REDLOCK_READ, NULL, 10000, 0),
         REDLOCK_OK);
    STEP("refused write lock", redlock_lock_rw(&other, rival, "acl-rw", REDLOCK_WRITE, NULL,
                                               10000, 0), REDLOCK_ELOCKED);
    STEP("read lock extend", redlock_extend(h, 20000), REDLOCK_OK);
    STEP("read unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;
    STEP("write lock", redlock_lock_rw(&h, ctx, "acl-rw", REDLOCK_WRITE, NULL, 10000, 0),
         REDLOCK_OK);
    STEP("write unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;

    STEP("permit", redlock_acquire_permit(&h, ctx, "acl-sem", 2, 10000, 0), REDLOCK_OK);
    STEP("permits available", redlock_permits_available(ctx, "acl-sem", 2, &available),
         REDLOCK_OK);
    CHECK("permits available", available == 1);
    STEP("permit extend", redlock_extend(h, 20000), REDLOCK_OK);
    STEP("permit release", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;

    STEP("fair lock", redlock_lock_fair(&h, ctx, "acl-fair", 10000, 0), REDLOCK_OK);
    STEP("refused fair lock", redlock_lock_fair(&other, rival, "acl-fair", 10000, 0),
         REDLOCK_ELOCKED);
    STEP("fair lock extend", redlock_extend(h, 20000), REDLOCK_OK);
    STEP("fair unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;

    STEP("ping", redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    CHECK("ping", answered == NODES);
    char health[NODES * REDLOCK_HEALTH_LINE_MAX];
    STEP("health", redlock_ctx_health(ctx, health, sizeof(health)), REDLOCK_OK);
    size_t up = 0;
    for (const char *p = strstr(health, " state=up "); p; p = strstr(p + 1, " state=up "))
        up++;
    CHECK("health", up == NODES);
    CHECK("the scripts' way", nodes_running(ctx, way) == NODES);
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

/* use_everything_as on the nodes with the library, whose documented user
 * is the rival: the scripts run as functions. */
static outcome use_everything(nodes *ns, const char *user, int unix_socket, events *ev)
{
    return use_everything_as(ns, user, unix_socket, ev, USER, "functions");
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

/* A kept lock of user (from a's line) is renewed past its lease. */
static void kept_lock_renewed_as(nodes *ns, const acl *a, const char *user)
{
    create_user_as(ns, a, user, NULL);
    redlock_ctx *ctx = client_as(ns, user, 0, PREFIX, 0);
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

/* A kept lock is renewed past its lease: by the documented user, and by
 * the one for nodes without scripting (its own extend, a transaction). */
static void a_kept_lock_is_renewed(void **state)
{
    nodes *ns = *state;
    kept_lock_renewed_as(ns, &documented, USER);
    kept_lock_renewed_as(ns, &documented_plain, USER_PLAIN);
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

/* Without any one of a's required permissions (those of a line the
 * user is made from, the others given) the run `use` fails, with
 * REDLOCK_ENOPERM (not REDLOCK_EAUTH: the credentials are fine), a message
 * naming the nodes and the missing command, and the nodes' events naming it
 * too: permission_denied, or for a user left without any way to run a
 * script (the library's line without +fcall) no_scripting, as its nodes
 * then take plain locks without scripts. The number of permissions tried. */
static size_t each_needed(nodes *ns, const acl *a, const char *name,
                          outcome (*use)(nodes *, const char *, events *))
{
    size_t required = 0;
    for (size_t i = 0; i < a->n_permissions; i++) {
        const char *missing = a->permissions[i];
        if (is_optional(missing))
            continue;
        required++;
        const char *command = missing + 1;   /* "+incr": incr */
        char user[32];
        snprintf(user, sizeof(user), "%s%zu", name, i);
        create_user_as(ns, a, user, missing);
        events *ev = events_new();
        outcome o = use(ns, user, ev);
        if (o.rc != REDLOCK_ENOPERM)
            fail_msg("without %s: %s gave %d (%s), expected REDLOCK_ENOPERM; errmsg: %s",
                     missing, o.step, o.rc, redlock_strerror(o.rc), o.message);
        if (!strstr(o.message, "127.0.0.1:") || !names_command(o.message, command))
            fail_msg("without %s: %s's message names no node or not %s: %s", missing, o.step,
                     command, o.message);
        int scriptless = a == &documented && strcmp(missing, "+fcall") == 0;
        if (scriptless && !strstr(o.message, "runs no scripts"))
            fail_msg("without %s: %s's message does not say the node runs no scripts: %s",
                     missing, o.step, o.message);
        const char *kind = scriptless ? "no_scripting" : "permission_denied";
        int level = scriptless ? REDLOCK_LOG_WARN : REDLOCK_LOG_ERROR;
        char event[1200];
        size_t n_events = events_count(ev, kind, NULL);
        if (n_events == 0 || events_find(ev, kind, NULL, event, sizeof(event)) != level
            || strncmp(event, "node=127.0.0.1:", 15) != 0 || !names_command(event, command))
            fail_msg("without %s: %zu %s events, the first: %s", missing, n_events, kind,
                     n_events ? event : "");
        print_message("without %-10s %s: %s\n", missing, o.step, o.message);
        events_free(ev);
    }
    return required;
}

static outcome use_everything_tcp(nodes *ns, const char *user, events *ev)
{
    return use_everything(ns, user, 0, ev);
}

static void each_required_permission_is_needed(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    assert_true(each_needed(ns, &documented, "lesser", use_everything_tcp) >= 10);
}

/* How many nodes' health lines of ctx say scripting=no. */
static size_t nodes_scriptless(redlock_ctx *ctx)
{
    char health[NODES * REDLOCK_HEALTH_LINE_MAX];
    assert_rc(redlock_ctx_health(ctx, health, sizeof(health)), REDLOCK_OK);
    size_t n = 0;
    for (const char *p = strstr(health, " scripting=no"); p; p = strstr(p + 1, " scripting=no"))
        n++;
    return n;
}

/*
 * What a user of the line for nodes without scripting (docs/servers.md)
 * has, its nodes running no script for it: 20 cycles of lock, extend and
 * unlock of one resource, a rival's lock refused; inspect; an unlock that
 * finds another's token (its read answers, UNWATCH) leaves that key, and
 * the next cycle works; a fenced lock, and its fence written back to the
 * nodes that counted less; ping; a multi-lock refused with
 * REDLOCK_EUNSUPPORTED naming scripting and a node; every node's health
 * says scripting=no. The rival is the documented user of that line. ev (or
 * NULL) records the events of user's clients. The nodes are emptied
 * afterwards.
 */
static outcome use_plain(nodes *ns, const char *user, events *ev)
{
    outcome result = { .rc = REDLOCK_OK, .step = "" }, *out = &result;
    redlock_ctx *ctx = client_as(ns, user, 0, PREFIX, 0);
    redlock_ctx *fenced = client_as(ns, user, 0, PREFIX, 1);
    redlock_ctx *rival = client_as(ns, USER_PLAIN, 0, PREFIX, 0);
    if (ev) {
        events_record(ev, ctx, REDLOCK_LOG_WARN);
        events_record(ev, fenced, REDLOCK_LOG_WARN);
    }
    redlock_handle *h = NULL, *other = NULL;
    int locked = -1, answered = -1;
    int64_t ttl = 0, fence = 0;
    const char *names[] = {"acl-plain-a", "acl-plain-b"};

    for (int i = 0; i < 20; i++) {
        STEP("lock", redlock_lock(&h, ctx, "acl-plain", 10000, 0), REDLOCK_OK);
        if (i == 0)
            STEP("refused lock", redlock_lock(&other, rival, "acl-plain", 10000, 0),
                 REDLOCK_ELOCKED);
        STEP("extend", redlock_extend(h, 20000), REDLOCK_OK);
        STEP("unlock", redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
        h = NULL;
    }
    STEP("lock to inspect", redlock_lock(&h, ctx, "acl-plain", 10000, 0), REDLOCK_OK);
    STEP("inspect", redlock_inspect(ctx, "acl-plain", &locked, &ttl), REDLOCK_OK);
    CHECK("inspect", locked == 1 && ttl > 0 && ttl <= 10000);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "SET %s theirs", PREFIX "acl-plain"), 0);
    STEP("unlock of a key taken over", redlock_unlock(h), REDLOCK_ENOTHELD);
    redlock_handle_free(h);
    h = NULL;
    CHECK("their key kept", nodes_count_value(ns, PREFIX "acl-plain", "theirs") == NODES);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "DEL %s", PREFIX "acl-plain"), 0);
    STEP("lock after it", redlock_lock(&h, ctx, "acl-plain", 10000, 0), REDLOCK_OK);
    STEP("extend after it", redlock_extend(h, 20000), REDLOCK_OK);
    STEP("unlock after it", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;

    counters_apart(ns, PREFIX "acl-plain-fenced");
    STEP("fenced lock", redlock_lock(&h, fenced, "acl-plain-fenced", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_handle_fence(h, 0, &fence), REDLOCK_OK);
    CHECK("fenced lock", fence == 501 || fence == 1001);
    STEP("fenced extend", redlock_extend(h, 20000), REDLOCK_OK);
    STEP("fenced unlock", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;
    /* Written back: the next fence is above the last on a quorum. */
    STEP("fenced lock again", redlock_lock(&h, fenced, "acl-plain-fenced", 10000, 0),
         REDLOCK_OK);
    int64_t next = 0;
    assert_rc(redlock_handle_fence(h, 0, &next), REDLOCK_OK);
    CHECK("fence written back", next > fence);
    STEP("fenced unlock again", redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    h = NULL;

    STEP("ping", redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    CHECK("ping", answered == NODES);
    STEP("refused multi-lock", redlock_lock_multi(&other, ctx, names, 2, 10000, 0),
         REDLOCK_EUNSUPPORTED);
    const char *said = redlock_errmsg();
    if (!strstr(said, "no scripting") || !strstr(said, "127.0.0.1:")) {
        out->rc = 1;
        snprintf(out->message, sizeof(out->message), "names no scripting or node: %s", said);
        goto done;
    }
    CHECK("scripting=no", nodes_scriptless(ctx) == NODES);
done:
    redlock_handle_free(h);
    redlock_handle_free(other);
    redlock_ctx_free(rival);
    redlock_ctx_free(fenced);
    redlock_ctx_free(ctx);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "FLUSHALL"), 0);
    return result;
}

/* The line for nodes without scripting is enough for what plain locks do
 * there (use_plain), and each of its required permissions is needed. */
static void the_scriptless_line_is_enough_and_needed(void **state)
{
    nodes *ns = *state;
    create_user_as(ns, &documented_plain, USER_PLAIN, NULL);
    outcome o = use_plain(ns, USER_PLAIN, NULL);
    if (o.rc != REDLOCK_OK)
        fail_msg("%s as %s failed: %d (%s); errmsg: %s", o.step, USER_PLAIN, o.rc,
                 redlock_strerror(o.rc), o.message);
    assert_true(each_needed(ns, &documented_plain, "plainless", use_plain) >= 10);
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
    for (size_t i = 0; i < documented.n_permissions; i++) {
        const char *missing = documented.permissions[i];
        if (!is_optional(missing))
            continue;
        char user[32];
        snprintf(user, sizeof(user), "without%zu", i);
        create_user(ns, user, missing);
        outcome o = use_everything(ns, user, 0, NULL);
        if (o.rc != REDLOCK_OK)
            fail_msg("without %s: %s failed: %s; errmsg: %s", missing, o.step,
                     redlock_strerror(o.rc), o.message);
        const char *said = strcmp(missing, "+info") == 0 ? "INFO refused: NOPERM" : NULL;
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

/* The name of the library on node 0 (FUNCTION LIST, as the default user). */
static void library_name(nodes *ns, char *name, size_t len)
{
    redisContext *c = redisConnectUnix(nodes_socket(ns, 0));
    assert_non_null(c);
    redisReply *r = redisCommand(c, "FUNCTION LIST LIBRARYNAME redlock_v*");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    const redisReply *lib = r->element[0];
    assert_true(lib->elements >= 2 && strcmp(lib->element[0]->str, "library_name") == 0);
    snprintf(name, len, "%s", lib->element[1]->str);
    freeReplyObject(r);
    redisFree(c);
}

/* What node 0 answers the command argv as user. */
static redisReply *as_user(nodes *ns, const char *user, int argc, const char **argv)
{
    redisContext *c = redisConnectUnix(nodes_socket(ns, 0));
    assert_non_null(c);
    redisReply *r = redisCommand(c, "AUTH %s %s", user, PASSWORD);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommandArgv(c, argc, argv, NULL);
    assert_non_null(r);
    redisFree(c);
    return r;
}

/* The documented user runs no code of its own: EVAL (a script that would
 * hold the server BUSY for ever), SCRIPT LOAD and FUNCTION LOAD are refused
 * with NOPERM before anything runs, as are FUNCTION DELETE and FLUSH of the
 * library; it calls the library's functions, and the server answers. */
static void the_documented_user_runs_no_code_of_its_own(void **state)
{
    nodes *ns = *state;
    create_user(ns, USER, NULL);
    char name[64], probe[80];
    library_name(ns, name, sizeof(name));
    snprintf(probe, sizeof(probe), "%s_version", name);
    static const char endless[] = "redis.call('set', KEYS[1], '1') while true do end";
    static const char library[] = "#!lua name=mine\n"
                                  "redis.register_function('mine', function() return 1 end)";
    const char *refused[][5] = {
        { "EVAL", endless, "1", PREFIX "x" },
        { "EVAL", "return 1", "0" },
        { "SCRIPT", "LOAD", endless },
        { "FUNCTION", "LOAD", library },
        { "FUNCTION", "LOAD", "REPLACE", library },
        { "FUNCTION", "DELETE", name },
        { "FUNCTION", "FLUSH" },
    };
    const int argcs[] = { 4, 3, 3, 3, 4, 3, 2 };
    for (size_t i = 0; i < sizeof(argcs) / sizeof(argcs[0]); i++) {
        redisReply *r = as_user(ns, USER, argcs[i], refused[i]);
        if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOPERM", 6) != 0)
            fail_msg("%s %s as %s was not refused: %s", refused[i][0], refused[i][1], USER,
                     r->type == REDIS_REPLY_ERROR ? r->str : "it ran");
        freeReplyObject(r);
    }
    const char *call[3] = { "FCALL", probe, "0" };
    redisReply *r = as_user(ns, USER, 3, call);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, name);
    freeReplyObject(r);
    const char *ping[1] = { "PING" };
    r = as_user(ns, USER, 1, ping);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    assert_on_every_node(ns, PREFIX "x", NULL);
}

/* Where the library is not (a server without functions, or not loaded
 * yet), the documented ACL for that case works for every feature, by
 * EVALSHA and EVAL; with the library loaded, that user (no +fcall) goes on
 * the same way. The documented user of the library, without it, cannot run
 * a script (it has no +evalsha), and the refusal says the library is
 * missing. */
static void without_the_library_scripts_go_by_eval(void **state)
{
    nodes *ns = *state;
    create_user_as(ns, &documented_eval, USER_EVAL, NULL);
    create_user(ns, USER, NULL);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "FUNCTION FLUSH"), 0);
    outcome o = use_everything_as(ns, USER_EVAL, 0, NULL, USER_EVAL, "eval");
    if (o.rc != REDLOCK_OK)
        fail_msg("without the library, %s as %s failed: %s; errmsg: %s", o.step, USER_EVAL,
                 redlock_strerror(o.rc), o.message);

    redlock_ctx *ctx = client_as(ns, USER, 0, PREFIX, 0);
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock_multi(&h, ctx, (const char *[]){ "acl-nolib-1", "acl-nolib-2" }, 2,
                                    10000, 0), REDLOCK_ENOPERM);
    if (!strstr(redlock_errmsg(), "'evalsha'") || !strstr(redlock_errmsg(), "--load-functions"))
        fail_msg("the refusal names no EVALSHA, or not the missing library: %s",
                 redlock_errmsg());
    /* The refusal was decided once a quorum refused: a ping waits for every
     * node, whose probe then says how it runs scripts. */
    int answered = 0;
    assert_int_equal(redlock_ctx_ping(ctx, &answered), REDLOCK_OK);
    assert_int_equal(nodes_running(ctx, "eval"), NODES);
    redlock_ctx_free(ctx);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "FLUSHALL"), 0);

    load_library(ns);
    o = use_everything_as(ns, USER_EVAL, 0, NULL, USER_EVAL, "eval");
    if (o.rc != REDLOCK_OK)
        fail_msg("with the library, %s as %s failed: %s; errmsg: %s", o.step, USER_EVAL,
                 redlock_strerror(o.rc), o.message);
}

/* A library loaded by the tool or a client is never replaced: an older
 * version's (another name: redlock_v and another digest) stays beside it,
 * for the clients of that version, and a client of this version loads its
 * own; loading again changes nothing. A client without FUNCTION LOAD in its
 * ACL says so in its node's health, once. */
static void a_new_version_loads_its_library_beside_the_old(void **state)
{
    nodes *ns = *state;
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(nodes_exec(ns, i, "FUNCTION FLUSH"), 0);
        assert_int_equal(nodes_exec(ns, i, "FUNCTION LOAD %s",
                                    "#!lua name=redlock_v000000000000\n"
                                    "redis.register_function{function_name = "
                                    "'redlock_v000000000000_version', flags = {'no-writes'}, "
                                    "callback = function() return 'redlock_v000000000000' end}"),
                         0);
    }
    create_user(ns, "noloader", NULL);
    redlock_ctx *ctx = client_as(ns, "noloader", 1, PREFIX, 0);
    set_options(ctx, (const char *const[]){"load_functions", "1", NULL});
    for (int i = 0; i < 3; i++)
        assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);
    assert_int_equal(nodes_running(ctx, "eval"), NODES);
    char health[NODES * REDLOCK_HEALTH_LINE_MAX];
    assert_rc(redlock_ctx_health(ctx, health, sizeof(health)), REDLOCK_OK);
    if (!strstr(health, "FUNCTION%20LOAD%20refused:%20NOPERM"))
        fail_msg("the refused load is not told: %s", health);
    redlock_ctx_free(ctx);

    load_library(ns);
    load_library(ns);   /* a second time: there already */
    for (size_t i = 0; i < NODES; i++) {
        redisContext *c = redisConnectUnix(nodes_socket(ns, i));
        assert_non_null(c);
        redisReply *r = redisCommand(c, "FUNCTION LIST LIBRARYNAME redlock_v*");
        assert_non_null(r);
        assert_int_equal(r->elements, 2);   /* the old one and this version's */
        freeReplyObject(r);
        r = redisCommand(c, "FCALL redlock_v000000000000_version 0");
        assert_string_equal(r->str, "redlock_v000000000000");
        freeReplyObject(r);
        redisFree(c);
    }
    outcome o = use_everything(ns, USER, 0, NULL);
    if (o.rc != REDLOCK_OK)
        fail_msg("beside the old library, %s failed: %s; errmsg: %s", o.step,
                 redlock_strerror(o.rc), o.message);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_documented_acl_is_enough_for_every_feature),
        cmocka_unit_test(a_kept_lock_is_renewed),
        cmocka_unit_test(a_release_wakes_the_waiter),
        cmocka_unit_test(keys_outside_the_prefix_are_refused),
        cmocka_unit_test(each_required_permission_is_needed),
        cmocka_unit_test(the_scriptless_line_is_enough_and_needed),
        cmocka_unit_test(optional_permissions_only_cost_something),
        cmocka_unit_test(without_channels_waiting_falls_back_on_retries),
        cmocka_unit_test(the_documented_user_runs_no_code_of_its_own),
        cmocka_unit_test(without_the_library_scripts_go_by_eval),
        cmocka_unit_test(a_new_version_loads_its_library_beside_the_old),
    };
    return cmocka_run_group_tests_name("acl", tests, group_setup, group_teardown);
}
