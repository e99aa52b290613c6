/*
 * test_connect.c - how the client reaches its nodes: passwords, ACL users,
 * databases, unix sockets; and keys or replies that are not what a lock
 * expects (wrong types, Redis errors).
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 3
#define PASSWORD "s3cret-pass"
#define ACL_PASSWORD "p@ss:w/rd"
#define ACL_PASSWORD_ENCODED "p%40ss%3Aw%2Frd"

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

/* Writes one URI per node into buf (NODES rows): prefix, then the node's port
 * (its socket path with unix_socket), then suffix. */
static void make_uris(const nodes *ns, const char *prefix, int unix_socket,
                      const char *suffix, char buf[][400], const char **uris)
{
    for (size_t i = 0; i < NODES; i++) {
        if (unix_socket)
            snprintf(buf[i], 400, "%s%s%s", prefix, nodes_socket(ns, i), suffix);
        else
            snprintf(buf[i], 400, "%s%d%s", prefix, nodes_port(ns, i), suffix);
        uris[i] = buf[i];
    }
}

static redlock_ctx *ctx_from(const char **uris)
{
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    set_options(ctx, (const char *const[]){"node_timeout_ms", "2000", "connect_timeout_ms",
                                           "2000", NULL});
    return ctx;
}

static void assert_errmsg_hides(const char *secret)
{
    const char *msg = redlock_errmsg();
    if (strstr(msg, secret) != NULL)
        fail_msg("errmsg shows the password: %s", msg);
}

static void unix_socket_uris_work(void **state)
{
    nodes *ns = *state;
    char buf[NODES][400];
    const char *uris[NODES];
    make_uris(ns, "unix://", 1, "", buf, uris);
    redlock_ctx *ctx = ctx_from(uris);
    redlock_handle *h = NULL;

    assert_rc(redlock_lock(&h, ctx, "conn-unix", 10000, 0), REDLOCK_OK);
    assert_on_every_node(ns, "conn-unix", redlock_handle_token(h));
    /* The same nodes reached over TCP see the lock. */
    redlock_ctx *tcp = ctx_for(ns, NULL);
    redlock_handle *th = NULL;
    assert_fails(redlock_lock(&th, tcp, "conn-unix", 10000, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(ns, "conn-unix", NULL);

    redlock_handle_free(h);
    redlock_ctx_free(tcp);
    redlock_ctx_free(ctx);
}

static void unreachable_unix_nodes_are_named_by_path(void **state)
{
    nodes *ns = *state;
    char buf[NODES][400];
    const char *uris[NODES];
    make_uris(ns, "unix://", 1, ".missing", buf, uris);
    redlock_ctx *ctx = ctx_from(uris);
    redlock_handle *h = UNSET_HANDLE;

    assert_fails(redlock_lock(&h, ctx, "conn-unix-missing", 10000, 0), REDLOCK_ENOQUORUM);
    assert_null(h);
    char label[420];
    snprintf(label, sizeof(label), "unix:%s.missing", nodes_socket(ns, 0));
    if (strstr(redlock_errmsg(), label) == NULL)
        fail_msg("errmsg does not name %s: %s", label, redlock_errmsg());
    redlock_ctx_free(ctx);
}

static void database_is_selected(void **state)
{
    nodes *ns = *state;
    char buf[NODES][400];
    const char *uris[NODES];
    make_uris(ns, "redis://127.0.0.1:", 0, "/3", buf, uris);
    redlock_ctx *ctx = ctx_from(uris);
    redlock_handle *h = NULL;

    assert_rc(redlock_lock(&h, ctx, "conn-db", 10000, 0), REDLOCK_OK);
    assert_on_every_node_db(ns, 3, "conn-db", redlock_handle_token(h));
    assert_on_every_node(ns, "conn-db", NULL); /* database 0 */

    /* Database 0 is another namespace: the same name is free there. */
    redlock_ctx *db0 = ctx_for(ns, NULL);
    redlock_handle *h0 = NULL;
    assert_rc(redlock_lock(&h0, db0, "conn-db", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h0), REDLOCK_OK);
    redlock_handle_free(h0);
    redlock_ctx_free(db0);

    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node_db(ns, 3, "conn-db", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);

    /* The same over unix sockets, with ?db=. */
    make_uris(ns, "unix://", 1, "?db=5", buf, uris);
    ctx = ctx_from(uris);
    assert_rc(redlock_lock(&h, ctx, "conn-db-unix", 10000, 0), REDLOCK_OK);
    assert_on_every_node_db(ns, 5, "conn-db-unix", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void acl_user_and_password_work(void **state)
{
    nodes *ns = *state;
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "ACL SETUSER locker on %s ~* +@all",
                                    ">" ACL_PASSWORD), 0);
    char buf[NODES][400];
    const char *uris[NODES];
    make_uris(ns, "redis://locker:" ACL_PASSWORD_ENCODED "@127.0.0.1:", 0, "", buf, uris);
    redlock_ctx *ctx = ctx_from(uris);
    redlock_handle *h = NULL, *again = NULL;

    assert_rc(redlock_lock(&h, ctx, "conn-acl", 10000, 0), REDLOCK_OK);
    assert_on_every_node(ns, "conn-acl", redlock_handle_token(h));
    /* A failure's detail does not show the password. */
    assert_fails(redlock_lock(&again, ctx, "conn-acl", 10000, 0), REDLOCK_ELOCKED);
    assert_errmsg_hides(ACL_PASSWORD);
    assert_errmsg_hides(ACL_PASSWORD_ENCODED);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);

    /* The user with a wrong password is refused. */
    make_uris(ns, "redis://locker:wrong-guess-71@127.0.0.1:", 0, "", buf, uris);
    ctx = ctx_from(uris);
    assert_fails(redlock_lock(&h, ctx, "conn-acl", 10000, 0), REDLOCK_EAUTH);
    assert_errmsg_hides("wrong-guess-71");
    redlock_ctx_free(ctx);

    /* So is a user that does not exist. */
    make_uris(ns, "redis://nobody:" ACL_PASSWORD_ENCODED "@127.0.0.1:", 0, "", buf, uris);
    ctx = ctx_from(uris);
    assert_fails(redlock_lock(&h, ctx, "conn-acl", 10000, 0), REDLOCK_EAUTH);
    assert_errmsg_hides(ACL_PASSWORD);
    assert_errmsg_hides(ACL_PASSWORD_ENCODED);
    redlock_ctx_free(ctx);

    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "ACL DELUSER locker"), 0);
    assert_on_every_node(ns, "conn-acl", NULL);
}

static void password_is_required_and_never_shown(void **state)
{
    (void)state;
    nodes *secure = nodes_start(NODES, PASSWORD);
    assert_non_null(secure);
    char buf[NODES][400];
    const char *uris[NODES];
    redlock_handle *h = NULL;

    make_uris(secure, "redis://:" PASSWORD "@127.0.0.1:", 0, "", buf, uris);
    redlock_ctx *ctx = ctx_from(uris);
    assert_rc(redlock_lock(&h, ctx, "conn-pass", 10000, 0), REDLOCK_OK);
    assert_on_every_node(secure, "conn-pass", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);

    make_uris(secure, "unix://:" PASSWORD "@", 1, "", buf, uris);
    ctx = ctx_from(uris);
    assert_rc(redlock_lock(&h, ctx, "conn-pass-unix", 10000, 0), REDLOCK_OK);
    assert_on_every_node(secure, "conn-pass-unix", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);

    /* A wrong password. */
    make_uris(secure, "redis://:bad-guess-42@127.0.0.1:", 0, "", buf, uris);
    ctx = ctx_from(uris);
    h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, "conn-pass", 10000, 0), REDLOCK_EAUTH);
    assert_null(h);
    assert_errmsg_hides("bad-guess-42");
    const char *names[] = {"conn-pass-1", "conn-pass-2"};
    assert_fails(redlock_lock_multi(&h, ctx, names, 2, 10000, 0), REDLOCK_EAUTH);
    assert_errmsg_hides("bad-guess-42");
    redlock_ctx_free(ctx);

    /* No password at all. */
    make_uris(secure, "redis://127.0.0.1:", 0, "", buf, uris);
    ctx = ctx_from(uris);
    assert_fails(redlock_lock(&h, ctx, "conn-pass", 10000, 0), REDLOCK_EAUTH);
    redlock_ctx_free(ctx);

    assert_on_every_node(secure, "conn-pass", NULL);

    /* Nodes that cannot be reached are named without their password. */
    make_uris(secure, "redis://:" PASSWORD "@127.0.0.1:", 0, "", buf, uris);
    nodes_free(secure);
    ctx = ctx_from(uris);
    assert_int_not_equal(redlock_lock(&h, ctx, "conn-pass", 10000, 0), REDLOCK_OK);
    assert_true(redlock_errmsg()[0] != '\0');
    assert_errmsg_hides(PASSWORD);
    redlock_ctx_free(ctx);
}

static void lock_refuses_a_key_of_another_type(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "RPUSH conn-list item"), 0);

    int rc = redlock_lock(&h, ctx, "conn-list", 10000, 0);
    if (rc != REDLOCK_ELOCKED && rc != REDLOCK_EWRONGTYPE)
        fail_msg("lock on a list returned %d (%s)", rc, redlock_strerror(rc));
    assert_null(h);
    assert_true(redlock_errmsg()[0] != '\0');

    const char *names[] = {"conn-list-free", "conn-list"};
    rc = redlock_lock_multi(&h, ctx, names, 2, 10000, 0);
    if (rc != REDLOCK_ELOCKED && rc != REDLOCK_EWRONGTYPE)
        fail_msg("multi-lock on a list returned %d (%s)", rc, redlock_strerror(rc));
    assert_null(h);
    assert_on_every_node(ns, "conn-list-free", NULL);

    /* The list is untouched. */
    for (size_t i = 0; i < NODES; i++) {
        redisReply *r = nodes_cmd(ns, i, "LRANGE conn-list 0 -1");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 1);
        assert_string_equal(r->element[0]->str, "item");
        freeReplyObject(r);
        assert_int_equal(nodes_exec(ns, i, "DEL conn-list"), 0);
    }
    redlock_ctx_free(ctx);
}

/* Replaces key by a list on nodes 0 .. count-1. */
static void replace_with_list(nodes *ns, const char *key, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        assert_int_equal(nodes_exec(ns, i, "DEL %s", key), 0);
        assert_int_equal(nodes_exec(ns, i, "RPUSH %s item", key), 0);
    }
}

static void assert_list_kept(nodes *ns, const char *key, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        redisReply *r = nodes_cmd(ns, i, "LLEN %s", key);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
        assert_int_equal(nodes_exec(ns, i, "DEL %s", key), 0);
    }
}

static void extend_and_unlock_report_a_replaced_key(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = NULL;
    size_t quorum = NODES / 2 + 1;

    assert_rc(redlock_lock(&h, ctx, "conn-replaced-extend", 10000, 0), REDLOCK_OK);
    replace_with_list(ns, "conn-replaced-extend", quorum);
    assert_fails(redlock_extend(h, 20000), REDLOCK_EWRONGTYPE);
    assert_list_kept(ns, "conn-replaced-extend", quorum);
    redlock_handle_free(h);
    for (size_t i = quorum; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "DEL conn-replaced-extend"), 0);

    assert_rc(redlock_lock(&h, ctx, "conn-replaced-unlock", 10000, 0), REDLOCK_OK);
    replace_with_list(ns, "conn-replaced-unlock", quorum);
    assert_fails(redlock_unlock(h), REDLOCK_EWRONGTYPE);
    assert_true(redlock_handle_validity_ms(h) <= 0);
    assert_list_kept(ns, "conn-replaced-unlock", quorum);
    /* Where the key was still ours, unlock removed it. */
    assert_on_nodes(ns, quorum, NODES, "conn-replaced-unlock", NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void redis_errors_are_reported(void **state)
{
    nodes *ns = *state;
    redlock_ctx *ctx = ctx_for(ns, NULL);
    redlock_handle *h = UNSET_HANDLE;

    /* With no memory to spare, every node refuses writes with an OOM error. */
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "CONFIG SET maxmemory 1"), 0);
    int rc = redlock_lock(&h, ctx, "conn-oom", 10000, 0);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "CONFIG SET maxmemory 0"), 0);
    assert_rc(rc, REDLOCK_EREDIS);
    assert_null(h);
    assert_true(redlock_errmsg()[0] != '\0');
    assert_on_every_node(ns, "conn-oom", NULL);

    /* Once memory is back the lock works. */
    assert_rc(redlock_lock(&h, ctx, "conn-oom", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unix_socket_uris_work),
        cmocka_unit_test(unreachable_unix_nodes_are_named_by_path),
        cmocka_unit_test(database_is_selected),
        cmocka_unit_test(acl_user_and_password_work),
        cmocka_unit_test(password_is_required_and_never_shown),
        cmocka_unit_test(lock_refuses_a_key_of_another_type),
        cmocka_unit_test(extend_and_unlock_report_a_replaced_key),
        cmocka_unit_test(redis_errors_are_reported),
    };
    return cmocka_run_group_tests_name("connect", tests, group_setup, group_teardown);
}
