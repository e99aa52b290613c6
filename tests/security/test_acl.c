/*
 * test_acl.c - least privilege: the library works for a Redis ACL user that
 * may run only the commands it needs, on keys under one prefix.
 *
 * What the library sends: on a new connection AUTH, SELECT (only for a
 * database other than 0), SCRIPT LOAD of its three scripts and INFO server
 * (the node's run_id, for the restart guard); then SET, EVALSHA (EVAL when a
 * node has lost its scripts) and TYPE; the scripts call get, set, del, pexpire
 * and type, which Redis 7 checks against the same user, and publish (a
 * release's wake-up for waiters, on a channel named after the key); a
 * waiting client subscribes to those channels. AUTH needs no permission.
 * The test prints the ACL line that the README shows.
 */
#include "helpers.h"

#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define NODES 3
#define USER "locker"
#define PASSWORD "Lk-9f2.w"
#define PREFIX "app:"

/* Every permission the library uses; each test user gets them all but one. */
static const char *const permissions[] = {
    "+set", "+exists", "+mget", "+del", "+pexpire", "+type", "+eval", "+evalsha", "+script|load",
    "+info", "+publish", "+subscribe", "+unsubscribe", "&" PREFIX "*",
};
#define N_PERMISSIONS (sizeof(permissions) / sizeof(permissions[0]))

static int group_setup(void **state)
{
    *state = nodes_start(NODES, NULL);
    return *state != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    nodes_free(*state);
    return 0;
}

/* "ACL SETUSER user reset on >password ~app:* resetchannels -@all +... &app:*"
 * with every permission but `without` (NULL: all of them). */
static void acl_line(char *buf, size_t len, const char *user, const char *password,
                     const char *without)
{
    int n = snprintf(buf, len, "ACL SETUSER %s reset on >%s ~" PREFIX "* resetchannels -@all",
                     user, password);
    for (size_t i = 0; i < N_PERMISSIONS; i++)
        if (without == NULL || strcmp(permissions[i], without) != 0)
            n += snprintf(buf + n, len - (size_t)n, " %s", permissions[i]);
}

/* Creates the user on every node, from its ACL line split at spaces. */
static void create_user(nodes *ns, const char *line)
{
    char copy[512];
    const char *argv[32];
    size_t argc = 0;
    snprintf(copy, sizeof(copy), "%s", line);
    for (char *word = strtok(copy, " "); word && argc < 32; word = strtok(NULL, " "))
        argv[argc++] = word;
    for (size_t i = 0; i < NODES; i++) {
        redisContext *c = redisConnectUnix(nodes_socket(ns, i));
        assert_non_null(c);
        assert_int_equal(c->err, 0);
        redisReply *r = redisCommandArgv(c, (int)argc, argv, NULL);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STATUS)
            fail_msg("%s: %s", line, r->type == REDIS_REPLY_ERROR ? r->str : "not OK");
        freeReplyObject(r);
        redisFree(c);
    }
}

/* A client that logs in as user, over TCP or the unix sockets, with key_prefix. */
static redlock_ctx *client_as(nodes *ns, const char *user, int unix_socket, const char *prefix)
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
                                           NULL});
    return ctx;
}

/*
 * Everything a user of the library does: lock, a refused lock, extend and
 * unlock one resource; lock, extend and unlock three at once, extending again
 * after the nodes forgot their scripts (SCRIPT FLUSH: EVALSHA, then EVAL).
 * Returns REDLOCK_OK, or the code of the first step that failed (its name in
 * *step). The nodes are emptied afterwards.
 */
static int use_locks(nodes *ns, redlock_ctx *ctx, redlock_ctx *rival, const char **step)
{
    redlock_handle *h = NULL, *other = NULL;
    const char *names[] = {"acl-a", "acl-b", "acl-c"};
    int rc;

    *step = "lock";
    if ((rc = redlock_lock(&h, ctx, "acl-one", 10000, 0)) != REDLOCK_OK)
        goto done;
    *step = "refused lock";
    rc = redlock_lock(&other, rival, "acl-one", 10000, 0);
    redlock_handle_free(other);
    if (rc != REDLOCK_ELOCKED) {
        rc = rc == REDLOCK_OK ? REDLOCK_EREDIS : rc;
        goto done;
    }
    *step = "extend";
    if ((rc = redlock_extend(h, 20000)) != REDLOCK_OK)
        goto done;
    *step = "unlock";
    if ((rc = redlock_unlock(h)) != REDLOCK_OK)
        goto done;
    redlock_handle_free(h);
    h = NULL;

    *step = "multi-lock";
    if ((rc = redlock_lock_multi(&h, ctx, names, 3, 10000, 0)) != REDLOCK_OK)
        goto done;
    *step = "refused multi-lock";
    const char *theirs[] = {"acl-d", "acl-e"}, *overlapping[] = {"acl-e", "acl-f"};
    redlock_handle *held = NULL;
    assert_rc(redlock_lock_multi(&held, rival, theirs, 2, 10000, 0), REDLOCK_OK);
    rc = redlock_lock_multi(&other, ctx, overlapping, 2, 10000, 0);
    redlock_handle_free(other);
    assert_rc(redlock_unlock(held), REDLOCK_OK);
    redlock_handle_free(held);
    if (rc != REDLOCK_ELOCKED) {
        rc = rc == REDLOCK_OK ? REDLOCK_EREDIS : rc;
        goto done;
    }
    *step = "multi-lock extend";
    if ((rc = redlock_extend(h, 20000)) != REDLOCK_OK)
        goto done;
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "SCRIPT FLUSH"), 0);
    *step = "multi-lock extend after SCRIPT FLUSH";
    if ((rc = redlock_extend(h, 20000)) != REDLOCK_OK)
        goto done;
    *step = "multi-lock unlock";
    rc = redlock_unlock(h);
done:
    redlock_handle_free(h);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "FLUSHALL"), 0);
    return rc;
}

static void least_privilege_user_can_lock_under_its_prefix(void **state)
{
    nodes *ns = *state;
    char line[512];
    acl_line(line, sizeof(line), USER, PASSWORD, NULL);
    create_user(ns, line);
    /* The line the README shows. */
    acl_line(line, sizeof(line), USER, "PASSWORD", NULL);
    print_message("ACL line: %s\n", line);

    for (int unix_socket = 0; unix_socket <= 1; unix_socket++) {
        redlock_ctx *ctx = client_as(ns, USER, unix_socket, PREFIX);
        redlock_ctx *rival = client_as(ns, USER, unix_socket, PREFIX);
        const char *step = "";
        int rc = use_locks(ns, ctx, rival, &step);
        if (rc != REDLOCK_OK)
            fail_msg("%s as %s (%s) failed: %s; errmsg: %s", step, USER,
                     unix_socket ? "unix" : "tcp", redlock_strerror(rc), redlock_errmsg());
        redlock_ctx_free(rival);
        redlock_ctx_free(ctx);
    }

    /* The keys are the prefixed names. */
    redlock_ctx *ctx = client_as(ns, USER, 0, PREFIX);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "acl-seen", 10000, 0), REDLOCK_OK);
    assert_on_every_node(ns, PREFIX "acl-seen", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, PREFIX "acl-seen", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void keys_outside_the_prefix_are_refused(void **state)
{
    nodes *ns = *state;
    char line[512];
    acl_line(line, sizeof(line), USER, PASSWORD, NULL);
    create_user(ns, line);
    static const char *const prefixes[] = {"", "other:", "app", "APP:"};
    const char *names[] = {"acl-out-1", "acl-out-2"};

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        redlock_ctx *ctx = client_as(ns, USER, 0, prefixes[i]);
        redlock_handle *h = UNSET_HANDLE;
        assert_fails(redlock_lock(&h, ctx, "acl-out-1", 10000, 0), REDLOCK_ENOPERM);
        assert_null(h);
        h = UNSET_HANDLE;
        assert_fails(redlock_lock_multi(&h, ctx, names, 2, 10000, 0), REDLOCK_ENOPERM);
        assert_null(h);
        redlock_ctx_free(ctx);

        char key[64];
        snprintf(key, sizeof(key), "%sacl-out-1", prefixes[i]);
        assert_on_every_node(ns, key, NULL);
    }
}

/* Without any one of the commands that locking itself uses, some step fails,
 * and it fails as the ACL's refusal (REDLOCK_ENOPERM), not refused credentials. (SCRIPT LOAD and
 * INFO are not in the list: without them a node answers with an error that
 * the library works around, with EVAL and without the restart guard.) */
static void each_needed_permission_is_needed(void **state)
{
    nodes *ns = *state;
    static const char *const needed[] = {"+set", "+exists", "+mget", "+del", "+pexpire",
                                         "+type", "+eval", "+evalsha"};
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        char user[32], line[512];
        snprintf(user, sizeof(user), "lesser%zu", i);
        acl_line(line, sizeof(line), user, PASSWORD, needed[i]);
        create_user(ns, line);

        redlock_ctx *ctx = client_as(ns, user, 0, PREFIX);
        redlock_ctx *rival = client_as(ns, USER, 0, PREFIX);
        const char *step = "";
        int rc = use_locks(ns, ctx, rival, &step);
        if (rc != REDLOCK_ENOPERM)
            fail_msg("without %s: %s gave %d (%s), expected REDLOCK_ENOPERM; errmsg: %s",
                     needed[i], step, rc, redlock_strerror(rc), redlock_errmsg());
        redlock_ctx_free(rival);
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
 * release: the release's message woke it. */
static void a_release_wakes_the_waiter(void **state)
{
    nodes *ns = *state;
    char line[512];
    acl_line(line, sizeof(line), USER, PASSWORD, NULL);
    create_user(ns, line);
    redlock_ctx *ctx = client_as(ns, USER, 0, PREFIX);
    redlock_ctx *waiting = client_as(ns, USER, 0, PREFIX);
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

/* Without the channel permission locks still work, by timed retries, and a
 * wait that ends refused says why it was slower. */
static void without_channels_waiting_falls_back_on_retries(void **state)
{
    nodes *ns = *state;
    char line[512];
    acl_line(line, sizeof(line), "nochannels", PASSWORD, "&" PREFIX "*");
    create_user(ns, line);
    redlock_ctx *ctx = client_as(ns, "nochannels", 0, PREFIX);
    redlock_ctx *rival = client_as(ns, "nochannels", 0, PREFIX);
    const char *step = "";
    int rc = use_locks(ns, ctx, rival, &step);
    if (rc != REDLOCK_OK)
        fail_msg("%s without channels failed: %s; errmsg: %s", step, redlock_strerror(rc),
                 redlock_errmsg());

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
        cmocka_unit_test(least_privilege_user_can_lock_under_its_prefix),
        cmocka_unit_test(keys_outside_the_prefix_are_refused),
        cmocka_unit_test(each_needed_permission_is_needed),
        cmocka_unit_test(a_release_wakes_the_waiter),
        cmocka_unit_test(without_channels_waiting_falls_back_on_retries),
    };
    return cmocka_run_group_tests_name("acl", tests, group_setup, group_teardown);
}
