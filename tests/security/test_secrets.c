/*
 * test_secrets.c - a password in a node URI never appears in an error
 * message, on every failure path the library has: malformed URIs, the same
 * node twice, nodes that are down, silent, refuse the password or refuse a
 * key (ACL), and extend or unlock failing after the nodes went away. Nor in
 * any event (redlock_ctx_set_log) at any level, nor the health text, which
 * show no whole token either, through a session that goes through them all.
 * A URI's error shows nothing of what precedes its last '@' (a password with
 * an unescaped '@', '/', '?' or '#'), redlock_ctx_get_option never reads a
 * password back, and an event's control bytes (a resource name's newline)
 * come escaped.
 * (tests/c/test_connect.c covers a wrong password and a wrong ACL user.)
 */
#include "helpers.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "events.h"

#define NODES 3
/* The password, and how it is written in a URI. */
#define PASSWORD "p@ss:Zq/51 x"
#define ENCODED "p%40ss%3AZq%2F51%20x"

static void assert_hidden(const char *what)
{
    const char *msg = redlock_errmsg();
    if (msg[0] == '\0')
        fail_msg("%s: no error message", what);
    static const char *const secrets[] = {PASSWORD, ENCODED, "Zq/51", "Zq%2F51"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (strstr(msg, secrets[i]) != NULL)
            fail_msg("%s: the message shows the password: %s", what, msg);
}

/* NODES URIs: "redis://" userinfo "127.0.0.1:PORT", or over the unix sockets. */
static void make_uris(const nodes *ns, const char *userinfo, int unix_socket,
                      char buf[][400], const char **uris)
{
    for (size_t i = 0; i < NODES; i++) {
        if (unix_socket)
            snprintf(buf[i], 400, "unix://%s%s", userinfo, nodes_socket(ns, i));
        else
            snprintf(buf[i], 400, "redis://%s127.0.0.1:%d", userinfo, nodes_port(ns, i));
        uris[i] = buf[i];
    }
}

static redlock_ctx *client(const char **uris, const char *prefix)
{
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    set_options(ctx, (const char *const[]){"node_timeout_ms", "300", "connect_timeout_ms",
                                           "300", "retry_delay_ms", "10", "key_prefix", prefix,
                                           NULL});
    return ctx;
}

/* Every lock call fails with code and says so without the password. */
static void assert_locks_fail_hidden(redlock_ctx *ctx, int code, const char *what)
{
    redlock_handle *h = NULL;
    const char *names[] = {"secret-1", "secret-2"};
    int rc = redlock_lock(&h, ctx, "secret-1", 10000, 0);
    if (rc != code)
        fail_msg("%s: lock gave %d (%s); errmsg: %s", what, rc, redlock_strerror(rc),
                 redlock_errmsg());
    assert_hidden(what);
    rc = redlock_lock(&h, ctx, "secret-1", 10000, 50);
    assert_int_equal(rc, code);
    assert_hidden(what);
    rc = redlock_lock_multi(&h, ctx, names, 2, 10000, 0);
    assert_int_equal(rc, code);
    assert_hidden(what);
}

static void malformed_uris_hide_the_password(void **state)
{
    (void)state;
    /* Each URI is the text before the password and the text after it. */
    static const char *const forms[][2] = {
        {"redis://user:", "@127.0.0.1:0"},
        {"redis://:", "@127.0.0.1:70000"},
        {"redis://:", "@127.0.0.1:port"},
        {"redis://:", "@"},
        {"redis://:", "@:7001"},
        {"redis://:", "@[::1"},
        {"redis://:", "@[::1]x"},
        {"redis://:", "@127.0.0.1:7001/x"},
        {"redis://:", "@127.0.0.1:7001?db=1"},
        {"redis://:", "@bad host"},
        {"redis://:", "%zz@127.0.0.1"},
        {"redis://user:", "%@127.0.0.1"},
        {"redis://", "@127.0.0.1:0"},
        {"unix://:", "@relative.sock"},
        {"unix://:", "@/tmp/x.sock?db=x"},
        {"unix://:", "@/tmp/x.sock?password=1"},
        {"rediss://:", "@127.0.0.1:0"},
        {"http://:", "@127.0.0.1"},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        for (int encoded = 0; encoded <= 1; encoded++) {
            char uri[256];
            snprintf(uri, sizeof(uri), "%s%s%s", forms[i][0], encoded ? ENCODED : PASSWORD,
                     forms[i][1]);
            /* Alone, and after a good node. */
            const char *uris[] = {"redis://:" ENCODED "@127.0.0.1:7001", uri};
            redlock_ctx *ctx = UNSET_CTX;
            int rc = redlock_ctx_new(&ctx, uris + 1, 1);
            if (rc != REDLOCK_EINVAL && rc != REDLOCK_EUNSUPPORTED)
                fail_msg("%s was accepted (%d)", uri, rc);
            assert_null(ctx);
            assert_hidden(uri);
            assert_int_not_equal(redlock_ctx_new(&ctx, uris, 2), REDLOCK_OK);
            assert_hidden(uri);
        }
    }

    /* A socket path too long for the system. */
    char uri[400];
    snprintf(uri, sizeof(uri), "unix://:%s@/%0300d.sock", ENCODED, 0);
    const char *one[] = {uri};
    redlock_ctx *ctx = NULL;
    assert_fails(redlock_ctx_new(&ctx, one, 1), REDLOCK_EINVAL);
    assert_hidden("long socket path");

    /* The same node twice, with passwords. */
    const char *twice[] = {"redis://:" ENCODED "@127.0.0.1:7001",
                           "redis://alice:" ENCODED "@127.0.0.1:7001/2"};
    assert_fails(redlock_ctx_new(&ctx, twice, 2), REDLOCK_EINVAL);
    assert_hidden("the same node twice");
}

static void unreachable_nodes_hide_the_password(void **state)
{
    nodes *ns = nodes_start(NODES, NULL);
    assert_non_null(ns);
    char tcp[NODES][400], sock[NODES][400];
    const char *tcp_uris[NODES], *sock_uris[NODES];
    make_uris(ns, ":" ENCODED "@", 0, tcp, tcp_uris);
    make_uris(ns, "alice:" ENCODED "@", 1, sock, sock_uris);
    nodes_free(ns); /* nobody listens there any more */
    (void)state;

    redlock_ctx *ctx = client(tcp_uris, "");
    assert_locks_fail_hidden(ctx, REDLOCK_ENOQUORUM, "closed ports");
    redlock_ctx_free(ctx);
    ctx = client(sock_uris, "");
    assert_locks_fail_hidden(ctx, REDLOCK_ENOQUORUM, "missing sockets");
    redlock_ctx_free(ctx);
}

static void refusals_and_silences_hide_the_password(void **state)
{
    (void)state;
    nodes *ns = nodes_start(NODES, PASSWORD);
    assert_non_null(ns);
    char buf[NODES][400];
    const char *uris[NODES];

    /* A wrong password, over TCP and unix sockets. */
    make_uris(ns, ":x" ENCODED "@", 0, buf, uris);
    redlock_ctx *ctx = client(uris, "");
    assert_locks_fail_hidden(ctx, REDLOCK_EAUTH, "wrong password");
    redlock_ctx_free(ctx);
    make_uris(ns, ":x" ENCODED "@", 1, buf, uris);
    ctx = client(uris, "");
    assert_locks_fail_hidden(ctx, REDLOCK_EAUTH, "wrong password, unix");
    redlock_ctx_free(ctx);

    /* An ACL user refused a key outside its prefix. */
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_exec(ns, i, "ACL SETUSER alice reset on >%s ~app:* +@all",
                                    PASSWORD), 0);
    make_uris(ns, "alice:" ENCODED "@", 0, buf, uris);
    ctx = client(uris, "other:");
    assert_locks_fail_hidden(ctx, REDLOCK_ENOPERM, "key outside the ACL");
    redlock_ctx_free(ctx);

    /* Held, then the nodes fall silent (paused), then they are gone. */
    make_uris(ns, ":" ENCODED "@", 0, buf, uris);
    ctx = client(uris, "");
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "secret-held", 30000, 0), REDLOCK_OK);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_pause(ns, i, 4000), 0);
    assert_int_not_equal(redlock_extend(h, 30000), REDLOCK_OK);
    assert_hidden("extend, nodes paused");
    assert_locks_fail_hidden(ctx, REDLOCK_ENOQUORUM, "nodes paused");
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    for (size_t i = 0; i < NODES; i++)
        assert_int_equal(nodes_kill(ns, i), 0);
    assert_int_not_equal(redlock_extend(h, 30000), REDLOCK_OK);
    assert_hidden("extend, nodes gone");
    assert_int_not_equal(redlock_unlock(h), REDLOCK_OK);
    assert_hidden("unlock, nodes gone");
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
    nodes_free(ns);
}

/* Fails when text shows the password (any of its forms) or one of the
 * tokens (NULL-terminated); with any_hex, a run of 32 hex characters (any
 * whole token: the health has run_ids, 40 of them, which are no secret). */
static void assert_no_secret(const char *what, const char *text, const char *const *tokens,
                             bool any_hex)
{
    static const char *const secrets[] = {PASSWORD, ENCODED, "Zq/51", "Zq%2F51"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (strstr(text, secrets[i]) != NULL)
            fail_msg("%s shows the password: %s", what, text);
    for (size_t i = 0; tokens[i]; i++)
        if (strstr(text, tokens[i]) != NULL)
            fail_msg("%s shows the token %s: %s", what, tokens[i], text);
    size_t run = 0;
    for (const char *p = text; any_hex && *p; p++) {
        run = isxdigit((unsigned char)*p) ? run + 1 : 0;
        if (run >= 32)
            fail_msg("%s shows a whole token: %s", what, text);
    }
}

static void lost(void *data, redlock_handle *h, int status, const char *message)
{
    (void)h, (void)status, (void)message;
    atomic_int *calls = data;
    (*calls)++;
}

/* Every event of a session with a password, at the lowest level: locks,
 * kept locks renewed then lost, nodes slow, down, restarted, a wrong
 * password; and the health text of both clients. */
static void events_hide_the_password_and_every_token(void **state)
{
    (void)state;
    nodes *ns = nodes_start(NODES, PASSWORD);
    assert_non_null(ns);
    char buf[NODES][400], wrong[NODES][400];
    const char *uris[NODES], *wrong_uris[NODES];
    make_uris(ns, ":" ENCODED "@", 0, buf, uris);
    make_uris(ns, ":x" ENCODED "@", 1, wrong, wrong_uris);
    events *ev = events_new();
    redlock_ctx *ctx = client(uris, "");
    redlock_ctx *refused = client(wrong_uris, "");
    set_options(ctx, (const char *const[]){"retry_delay_ms", "20", NULL});
    events_record(ev, ctx, REDLOCK_LOG_DEBUG);
    events_record(ev, refused, REDLOCK_LOG_DEBUG);

    redlock_handle *h = NULL, *multi = NULL, *kept = NULL;
    const char *names[] = {"secret-a", "secret-b"};
    assert_rc(redlock_lock(&h, ctx, "secret-events", 30000, 0), REDLOCK_OK);
    assert_rc(redlock_extend(h, 30000), REDLOCK_OK);
    assert_rc(redlock_lock_multi(&multi, ctx, names, 2, 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(multi), REDLOCK_OK);
    assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);
    redlock_handle *other = UNSET_HANDLE;
    assert_fails(redlock_lock(&other, refused, "secret-events", 10000, 0), REDLOCK_EAUTH);
    /* Kept, then its nodes fall silent: renewals fail, and it is lost. */
    atomic_int calls = 0;
    assert_rc(redlock_lock(&kept, ctx, "secret-kept", 900, 0), REDLOCK_OK);
    assert_rc(redlock_handle_watch(kept, lost, &calls), REDLOCK_OK);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(nodes_pause(ns, i, 2500), 0);
    /* A lock call meanwhile finds no quorum (renewals tell renewal_failed). */
    redlock_handle *none = UNSET_HANDLE;
    assert_fails(redlock_lock(&none, ctx, "secret-no-quorum", 1000, 0), REDLOCK_ENOQUORUM);
    assert_true(events_wait(ev, "lost", NULL, 4000) == 1);
    assert_int_equal(nodes_ensure_all_up(ns), 0);
    /* A node down, then restarted. */
    assert_int_equal(nodes_kill(ns, 2), 0);
    assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);   /* two of three answer */
    assert_int_equal(nodes_restart(ns, 2), 0);
    sleep_ms(1100);
    assert_rc(redlock_ctx_ping(ctx, NULL), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);

    const char *expected[] = {"acquired", "extended", "released", "refused", "no_quorum",
                              "failed", "auth_refused", "renewal_failed", "lost", "node_slow",
                              "node_down", "node_back", "node_restarted"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        /* (refused, node_slow and renewal_failed depend on timing: a kept
         * lock whose validity runs out while its renewal is still waiting
         * for the paused nodes is lost without a failed renewal first.) */
        if (events_count(ev, expected[i], NULL) == 0 && strcmp(expected[i], "refused") != 0
            && strcmp(expected[i], "node_slow") != 0
            && strcmp(expected[i], "renewal_failed") != 0)
            fail_msg("no %s event in the session", expected[i]);
    const char *tokens[] = {redlock_handle_token(h), redlock_handle_token(multi),
                            redlock_handle_token(kept), NULL};
    char line[1200];
    for (size_t i = 0; events_line(ev, i, line, sizeof line); i++)
        assert_no_secret("an event", line, tokens, true);
    char health[NODES * REDLOCK_HEALTH_LINE_MAX];
    assert_rc(redlock_ctx_health(ctx, health, sizeof health), REDLOCK_OK);
    assert_no_secret("the health", health, tokens, false);
    assert_rc(redlock_ctx_health(refused, health, sizeof health), REDLOCK_OK);
    assert_no_secret("the refused client's health", health, tokens, false);
    assert_non_null(strstr(health, "state=auth_refused"));

    redlock_handle_free(kept);
    redlock_handle_free(h);
    redlock_handle_free(multi);
    redlock_ctx_free(refused);
    redlock_ctx_free(ctx);
    events_free(ev);
    nodes_free(ns);
}

/* A password holding '@', '/', '?' or '#' unescaped: the credentials end at
 * the last '@', and an error shows "***@" and what follows it, nothing else. */
static void uri_errors_show_nothing_before_the_last_at(void **state)
{
    (void)state;
    static const struct {
        const char *uri, *shown;   /* shown NULL: accepted */
    } cases[] = {
        {"redis://:Xy@SecretTail/9@host/x", "'redis://***@host/x': db must be a number"},
        {"redis://:Xy@SecretTail/9@host:0", "'redis://***@host:0': port must be"},
        {"redis://:Xy@SecretTail/9@host", NULL},
        {"redis://us:Xy@SecretTail@host:70000", "'redis://***@host:70000'"},
        {"rediss://:Xy@Secret?Tail@host/x", "'rediss://***@host/x'"},
        {"redis-cluster://:Xy@SecretTail/9@h1,h2/1", "'redis-cluster://***@h1,h2/1'"},
        {"redis-sentinel://:Xy@Secret#Tail@h:1?sentinelMasterId=m", NULL},
        {"redis-sentinel://:Xy@Secret?Tail@h:1#m", NULL},
        {"redis-sentinel://:Xy@Secret#Tail@h:0?sentinelMasterId=m", "'redis-sentinel://***@h:0"},
        {"redis-sentinel://:Xy?SecretTail@h", "'redis-sentinel://***@h': no host"},
        {"redis://:Xy%zzSecretTail@host", "'redis://***@host': bad %-escape"},
        {"unix://:Xy@/Secret@Tail.sock?db=x", "'unix://***@Tail.sock?db=x'"},
        {"unix://:Xy/SecretTail@/s.sock", "'unix://***@/s.sock': the socket path"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *uris[] = {cases[i].uri};
        redlock_ctx *ctx = NULL;
        int rc = redlock_ctx_new(&ctx, uris, 1);
        if (cases[i].shown == NULL) {
            if (rc != REDLOCK_OK)
                fail_msg("%s refused: %s", cases[i].uri, redlock_errmsg());
            redlock_ctx_free(ctx);
            continue;
        }
        const char *msg = redlock_errmsg();
        if (rc != REDLOCK_EINVAL)
            fail_msg("%s gave %d: %s", cases[i].uri, rc, msg);
        if (strstr(msg, "Xy") || strstr(msg, "Secret") || strstr(msg, "us:"))
            fail_msg("%s: the message shows the credentials: %s", cases[i].uri, msg);
        if (!strstr(msg, cases[i].shown))
            fail_msg("%s: the message does not name it as %s: %s", cases[i].uri, cases[i].shown,
                     msg);
    }
    /* A control byte in a URI is shown escaped. */
    const char *uris[] = {"redis://ho\nst\x01:1"};
    redlock_ctx *ctx = NULL;
    assert_fails(redlock_ctx_new(&ctx, uris, 1), REDLOCK_EINVAL);
    assert_non_null(strstr(redlock_errmsg(), "'redis://ho\\nst\\x01:1'"));
}

/* sentinel_password is written, never read back; other strings are. */
static void get_option_never_reads_a_password(void **state)
{
    (void)state;
    const char *uris[] = {"redis://127.0.0.1:7001"};
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 1), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "sentinel_password", PASSWORD), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "sentinel_user", "watcher"), REDLOCK_OK);
    char buf[256] = "untouched";
    assert_fails(redlock_ctx_get_option(ctx, "sentinel_password", buf, sizeof buf),
                 REDLOCK_EINVAL);
    assert_string_equal(buf, "untouched");
    assert_non_null(strstr(redlock_errmsg(), "never read back"));
    assert_hidden("get_option");
    assert_rc(redlock_ctx_get_option(ctx, "sentinel_user", buf, sizeof buf), REDLOCK_OK);
    assert_string_equal(buf, "watcher");
    redlock_ctx_free(ctx);
}

/* A resource name with a newline and other control bytes cannot forge a
 * line: every event's message comes with them escaped. */
static void events_escape_control_bytes(void **state)
{
    (void)state;
    nodes *ns = nodes_start(1, NULL);
    assert_non_null(ns);
    char uri[64];
    snprintf(uri, sizeof uri, "redis://127.0.0.1:%d", nodes_port(ns, 0));
    const char *uris[] = {uri};
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 1), REDLOCK_OK);
    events *ev = events_new();
    events_record(ev, ctx, REDLOCK_LOG_DEBUG);
    redlock_handle *h = NULL;
    const char *name = "job\n[error] lost resource=x\r\t\x01\x1b[31m\x7f";
    assert_rc(redlock_lock(&h, ctx, name, 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    assert_true(events_count(ev, "acquired", "job\\n[error] lost resource=x\\r\\t\\x01\\x1b[31m\\x7f")
                == 1);
    assert_true(events_count(ev, "released", "job\\n[error] lost") == 1);
    char line[1200];
    size_t n = 0;
    for (; events_line(ev, n, line, sizeof line); n++)
        for (const char *p = line; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                fail_msg("an event holds the control byte 0x%02x: %s", (unsigned char)*p, line);
    assert_true(n >= 2);
    redlock_ctx_free(ctx);
    events_free(ev);
    nodes_free(ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(malformed_uris_hide_the_password),
        cmocka_unit_test(unreachable_nodes_hide_the_password),
        cmocka_unit_test(refusals_and_silences_hide_the_password),
        cmocka_unit_test(events_hide_the_password_and_every_token),
        cmocka_unit_test(uri_errors_show_nothing_before_the_last_at),
        cmocka_unit_test(get_option_never_reads_a_password),
        cmocka_unit_test(events_escape_control_bytes),
    };
    return cmocka_run_group_tests_name("secrets", tests, NULL, NULL);
}
