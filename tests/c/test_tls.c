/*
 * test_tls.c - rediss:// nodes: real redis-server processes listening on
 * TLS only, with certificates this test makes (tests/support/tls-certs.sh).
 * Locks work over TLS (blocking calls, asynchronous calls, waiters woken by
 * releases, large commands); a wrong CA, an expired certificate, a name
 * that does not match and a refused client are REDLOCK_ETLS, with messages
 * naming the node and the certificate problem; tls_verify=0 skips the
 * check; client certificates; and a system without libssl.so.3 is told so.
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#define NODES 3

typedef struct fixture {
    char ca[256], other_ca[256], cert[256], key[256], expired_cert[256];
    char client_cert[256], client_key[256];
    nodes_tls good_tls, expired_tls, mutual_tls;
    nodes *good;       /* NODES nodes with a valid certificate */
    nodes *expired;    /* one node whose certificate has expired */
    nodes *mutual;     /* one node that requires client certificates */
    nodes *plain;      /* one node without TLS */
} fixture;

static int group_setup(void **state)
{
    const char *dir = nodes_certs();
    if (dir == NULL)
        return -1;
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    snprintf(f->ca, sizeof f->ca, "%s/ca.crt", dir);
    snprintf(f->other_ca, sizeof f->other_ca, "%s/other-ca.crt", dir);
    snprintf(f->cert, sizeof f->cert, "%s/server.crt", dir);
    snprintf(f->key, sizeof f->key, "%s/server.key", dir);
    snprintf(f->expired_cert, sizeof f->expired_cert, "%s/expired.crt", dir);
    snprintf(f->client_cert, sizeof f->client_cert, "%s/client.crt", dir);
    snprintf(f->client_key, sizeof f->client_key, "%s/client.key", dir);
    f->good_tls = (nodes_tls){ f->cert, f->key, f->ca, 0 };
    f->expired_tls = (nodes_tls){ f->expired_cert, f->key, f->ca, 0 };
    f->mutual_tls = (nodes_tls){ f->cert, f->key, f->ca, 1 };
    f->good = nodes_start_tls(NODES, &f->good_tls);
    f->expired = nodes_start_tls(1, &f->expired_tls);
    f->mutual = nodes_start_tls(1, &f->mutual_tls);
    f->plain = nodes_start(1, NULL);
    *state = f;
    return f->good && f->expired && f->mutual && f->plain ? 0 : -1;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    if (f != NULL) {
        nodes_free(f->good);
        nodes_free(f->expired);
        nodes_free(f->mutual);
        nodes_free(f->plain);
        free(f);
    }
    return 0;
}

/* A client of ns trusting ca (NULL: the system's CAs), plus options. Its
 * connect deadline leaves room for handshakes under valgrind. */
static redlock_ctx *tls_ctx(const nodes *ns, const char *ca, const char *const *options)
{
    redlock_ctx *ctx = ctx_for(ns, (const char *const[]){ "connect_timeout_ms", "10000", NULL });
    if (ca != NULL)
        assert_rc(redlock_ctx_set_option(ctx, "tls_ca_file", ca), REDLOCK_OK);
    set_options(ctx, options);
    return ctx;
}

/* redlock_errmsg() has each of the texts. */
static void assert_errmsg_has(const char *const *texts)
{
    for (size_t i = 0; texts[i] != NULL; i++)
        if (strstr(redlock_errmsg(), texts[i]) == NULL)
            fail_msg("errmsg lacks \"%s\": %s", texts[i], redlock_errmsg());
}

/* "127.0.0.1:PORT" of node i. */
static const char *label(const nodes *ns, size_t i)
{
    static char buf[4][32];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "127.0.0.1:%d", nodes_port(ns, i));
    return b;
}

static void locks_work_over_tls(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->good, f->ca, NULL);
    redlock_handle *h = NULL, *other = NULL;
    assert_rc(redlock_lock(&h, ctx, "tls-basic", 10000, 0), REDLOCK_OK);
    assert_on_every_node(f->good, "tls-basic", redlock_handle_token(h));
    assert_fails(redlock_lock(&other, ctx, "tls-basic", 10000, 0), REDLOCK_ELOCKED);
    assert_rc(redlock_extend(h, 20000), REDLOCK_OK);
    int locked = 0;
    int64_t ttl = 0;
    assert_rc(redlock_inspect(ctx, "tls-basic", &locked, &ttl), REDLOCK_OK);
    assert_true(locked && ttl > 10000);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(f->good, "tls-basic", NULL);
    redlock_handle_free(h);
    /* Pooled TLS connections serve the next calls. */
    for (int i = 0; i < 20; i++) {
        assert_rc(redlock_lock(&h, ctx, "tls-basic", 10000, 0), REDLOCK_OK);
        assert_rc(redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
    }
    redlock_ctx_free(ctx);
}

/* A host name is checked against the certificate's DNS names (and sent as
 * SNI); an address against its IP addresses, as above. */
static void a_host_name_is_checked_as_a_name(void **state)
{
    fixture *f = *state;
    char buf[NODES][64];
    const char *uris[NODES];
    for (size_t i = 0; i < NODES; i++) {
        snprintf(buf[i], sizeof buf[i], "rediss://localhost:%d", nodes_port(f->good, i));
        uris[i] = buf[i];
    }
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, NODES), REDLOCK_OK);
    set_options(ctx, (const char *const[]){ "tls_ca_file", f->ca, "connect_timeout_ms", "2000",
                                            "node_timeout_ms", "2000", NULL });
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "tls-name", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* Each node fails the same way: REDLOCK_ETLS, a message naming every node
 * and the problem, and no key left anywhere. */
static void assert_tls_refused(fixture *f, nodes *ns, redlock_ctx *ctx, const char *name,
                               const char *problem)
{
    redlock_handle *h = UNSET_HANDLE;
    assert_fails(redlock_lock(&h, ctx, name, 10000, 0), REDLOCK_ETLS);
    assert_null(h);
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_errmsg_has((const char *const[]){ label(ns, i), problem, NULL });
    /* A waiting call is not made to wait: the failure is not contention. */
    long long started = now_ms();
    assert_fails(redlock_lock(&h, ctx, name, 10000, 3000), REDLOCK_ETLS);
    assert_true(now_ms() - started < 2000);
    assert_errmsg_has((const char *const[]){ problem, NULL });
    for (size_t i = 0; i < nodes_count(ns); i++)
        assert_int_equal(nodes_exists(ns, i, name), 0);
    (void)f;
}

static void a_wrong_ca_is_a_certificate_problem(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->good, f->other_ca, NULL);
    assert_tls_refused(f, f->good, ctx, "tls-wrong-ca", "TLS certificate check failed: ");
    redlock_ctx_free(ctx);
}

static void an_expired_certificate_is_told(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->expired, f->ca, NULL);
    assert_tls_refused(f, f->expired, ctx, "tls-expired",
                       "TLS certificate check failed: certificate has expired");
    redlock_ctx_free(ctx);
}

static void a_name_mismatch_is_told(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->good, f->ca, (const char *const[]){
                                   "tls_server_name", "not-this-node.example", NULL });
    assert_tls_refused(f, f->good, ctx, "tls-mismatch",
                       "TLS certificate check failed: hostname mismatch");
    assert_errmsg_has((const char *const[]){ "not-this-node.example", NULL });
    redlock_ctx_free(ctx);
}

static void no_ca_option_trusts_the_system_cas_only(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->good, NULL, NULL);
    assert_tls_refused(f, f->good, ctx, "tls-system-cas", "TLS certificate check failed: ");
    redlock_ctx_free(ctx);
}

static void verification_off_accepts_any_certificate(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->good, f->other_ca, (const char *const[]){
                                   "tls_verify", "0", "tls_server_name", "whatever.example",
                                   NULL });
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "tls-no-verify", 10000, 0), REDLOCK_OK);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

static void a_client_certificate_is_sent_when_required(void **state)
{
    fixture *f = *state;
    redlock_ctx *without = tls_ctx(f->mutual, f->ca, NULL);
    redlock_handle *h = NULL;
    assert_fails(redlock_lock(&h, without, "tls-mutual", 10000, 0), REDLOCK_ETLS);
    assert_errmsg_has((const char *const[]){ label(f->mutual, 0), "TLS", NULL });
    redlock_ctx_free(without);

    redlock_ctx *with = tls_ctx(f->mutual, f->ca, (const char *const[]){
                                    "tls_cert_file", f->client_cert,
                                    "tls_key_file", f->client_key, NULL });
    assert_rc(redlock_lock(&h, with, "tls-mutual", 10000, 0), REDLOCK_OK);
    assert_on_every_node(f->mutual, "tls-mutual", redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(with);
}

static void unusable_files_are_named(void **state)
{
    fixture *f = *state;
    redlock_handle *h = NULL;
    redlock_ctx *ctx = tls_ctx(f->good, "/nonexistent/ca.pem", NULL);
    assert_fails(redlock_lock(&h, ctx, "tls-files", 10000, 0), REDLOCK_ETLS);
    assert_errmsg_has((const char *const[]){ "tls_ca_file '/nonexistent/ca.pem'",
                                             "No such file", NULL });
    redlock_ctx_free(ctx);

    ctx = tls_ctx(f->good, f->ca, (const char *const[]){ "tls_cert_file", f->client_cert,
                                                       "tls_key_file", f->key, NULL });
    assert_fails(redlock_lock(&h, ctx, "tls-files", 10000, 0), REDLOCK_ETLS);
    assert_errmsg_has((const char *const[]){ "tls_key_file", "key values mismatch", NULL });
    redlock_ctx_free(ctx);

    ctx = tls_ctx(f->good, f->ca, (const char *const[]){ "tls_key_file", f->key, NULL });
    assert_fails(redlock_lock(&h, ctx, "tls-files", 10000, 0), REDLOCK_ETLS);
    assert_errmsg_has((const char *const[]){ "without tls_cert_file", NULL });
    redlock_ctx_free(ctx);
}

static void a_plain_port_times_out_in_the_handshake(void **state)
{
    fixture *f = *state;
    char uri[64];
    snprintf(uri, sizeof uri, "rediss://127.0.0.1:%d", nodes_port(f->plain, 0));
    const char *uris[] = { uri };
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, 1), REDLOCK_OK);
    set_options(ctx, (const char *const[]){ "tls_ca_file", f->ca, "connect_timeout_ms", "300",
                                            NULL });
    /* The server waits for the end of a line that never comes: the
     * handshake counts against the connect deadline. */
    redlock_handle *h = NULL;
    long long started = now_ms();
    assert_fails(redlock_lock(&h, ctx, "tls-plain", 10000, 0), REDLOCK_ENOQUORUM);
    assert_true(now_ms() - started < 2000);
    assert_errmsg_has((const char *const[]){ label(f->plain, 0), "cannot connect within 300 ms",
                                             "TLS handshake", NULL });
    redlock_ctx_free(ctx);
}

/* The options are read on the first connection to a rediss:// node: after
 * that, changing them is refused rather than silently ignored. */
static void tls_options_are_fixed_once_used(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->good, f->ca, NULL);
    assert_rc(redlock_ctx_set_option(ctx, "tls_server_name", "localhost"), REDLOCK_OK);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, ctx, "tls-fixed", 10000, 0), REDLOCK_OK);
    assert_fails(redlock_ctx_set_option(ctx, "tls_ca_file", f->other_ca), REDLOCK_EINVAL);
    assert_errmsg_has((const char *const[]){ "tls_ca_file", "cannot change", NULL });
    assert_rc(redlock_ctx_set_option(ctx, "node_timeout_ms", "1000"), REDLOCK_OK);
    char value[256];
    assert_rc(redlock_ctx_get_option(ctx, "tls_ca_file", value, sizeof value), REDLOCK_OK);
    assert_string_equal(value, f->ca);
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

/* One command far larger than a TLS record (a multi-lock of many long
 * names) goes out in many records and partial writes. */
static void a_large_command_crosses_many_records(void **state)
{
    fixture *f = *state;
    enum { N = 3000 };
    static char names[N][120];
    static const char *list[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "tls-large-%zu-%0100d", i, 0);
        list[i] = names[i];
    }
    redlock_ctx *ctx = tls_ctx(f->good, f->ca, NULL);
    redlock_handle *h = NULL;
    assert_rc(redlock_lock_multi(&h, ctx, list, N, 20000, 0), REDLOCK_OK);
    assert_on_every_node(f->good, names[N - 1], redlock_handle_token(h));
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    assert_on_every_node(f->good, names[0], NULL);
    redlock_handle_free(h);
    redlock_ctx_free(ctx);
}

typedef struct outcome {
    atomic_int status;
    atomic_bool done;
    redlock_handle *h;
} outcome;

static void finished(void *data, int status, redlock_handle *h, const char *message)
{
    outcome *o = data;
    (void)message;
    o->h = h;
    atomic_store(&o->status, status);
    atomic_store(&o->done, true);
}

static void wait_done(outcome *o)
{
    long long deadline = now_ms() + 10000;
    while (!atomic_load(&o->done) && now_ms() < deadline)
        sleep_ms(2);
    assert_true(atomic_load(&o->done));
}

/* The client's thread (asynchronous calls) connects over TLS too. */
static void asynchronous_calls_work_over_tls(void **state)
{
    fixture *f = *state;
    redlock_ctx *ctx = tls_ctx(f->good, f->ca, NULL);
    const char *names[] = { "tls-async" };
    outcome locked = { 0 }, unlocked = { 0 };
    assert_rc(redlock_lock_async(ctx, names, 1, 10000, 0, finished, &locked), REDLOCK_OK);
    wait_done(&locked);
    assert_int_equal(atomic_load(&locked.status), REDLOCK_OK);
    assert_on_every_node(f->good, "tls-async", redlock_handle_token(locked.h));
    assert_rc(redlock_unlock_async(locked.h, finished, &unlocked), REDLOCK_OK);
    wait_done(&unlocked);
    assert_int_equal(atomic_load(&unlocked.status), REDLOCK_OK);
    redlock_handle_free(locked.h);

    /* And fails the same way. */
    redlock_ctx *wrong = tls_ctx(f->expired, f->ca, NULL);
    outcome refused = { 0 };
    assert_rc(redlock_lock_async(wrong, names, 1, 10000, 0, finished, &refused), REDLOCK_OK);
    wait_done(&refused);
    assert_int_equal(atomic_load(&refused.status), REDLOCK_ETLS);
    redlock_ctx_free(wrong);
    redlock_ctx_free(ctx);
}

typedef struct waiter {
    redlock_ctx *ctx;
    long long acquired_at;
    int rc;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    redlock_handle *h = NULL;
    w->rc = redlock_lock(&h, w->ctx, "tls-wake", 10000, 8000);
    w->acquired_at = now_ms();
    if (w->rc == REDLOCK_OK)
        redlock_unlock(h);
    redlock_handle_free(h);
    return NULL;
}

/* A waiter pausing 5 s between attempts is woken by the release, which its
 * subscriber connections (over TLS) hear. */
static void a_release_wakes_a_waiter_over_tls(void **state)
{
    fixture *f = *state;
    redlock_ctx *holder = tls_ctx(f->good, f->ca, NULL);
    waiter w = { .ctx = tls_ctx(f->good, f->ca, (const char *const[]){
                            "retry_delay_ms", "5000", "retry_jitter_ms", "0", NULL }) };
    redlock_handle *h = NULL;
    assert_rc(redlock_lock(&h, holder, "tls-wake", 10000, 0), REDLOCK_OK);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    /* The waiter's first attempt fails and it subscribes; give it time. */
    sleep_ms(1000);
    long long released_at = now_ms();
    assert_rc(redlock_unlock(h), REDLOCK_OK);
    pthread_join(t, NULL);
    assert_rc(w.rc, REDLOCK_OK);
    if (w.acquired_at - released_at > 3000)
        fail_msg("the waiter took %lld ms after the release: not woken",
                 w.acquired_at - released_at);
    redlock_handle_free(h);
    redlock_ctx_free(w.ctx);
    redlock_ctx_free(holder);
}

/* With no libssl.so.3 on the system, rediss:// nodes fail with
 * REDLOCK_EUNSUPPORTED saying so. This program runs again (a process that
 * has not loaded OpenSSL yet) with --without-libssl: it hides the library
 * directories in a mount namespace of its own (root only), its own
 * libraries being loaded already, and tries a lock. */
static int without_libssl(int argc, char **argv)
{
    static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                                        "/usr/lib64", "/lib64", "/usr/lib", "/lib",
                                        "/usr/local/lib" };
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return 3;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/libssl.so.3", dirs[i]);
        if (access(path, F_OK) == 0 && mount("none", dirs[i], "tmpfs", 0, NULL) != 0)
            return 4;
    }
    redlock_ctx *ctx = NULL;
    if (redlock_ctx_new(&ctx, (const char *const *)argv + 2, (size_t)argc - 2) != REDLOCK_OK)
        return 5;
    redlock_handle *h = NULL;
    int rc = redlock_lock(&h, ctx, "tls-no-libssl", 10000, 0);
    int ok = rc == REDLOCK_EUNSUPPORTED
             && strstr(redlock_errmsg(), "TLS needs OpenSSL 3's libssl.so.3, which was not "
                                         "found") != NULL;
    fprintf(stderr, "without libssl.so.3: rc %d: %s\n", rc, redlock_errmsg());
    redlock_ctx_free(ctx);
    return ok ? 0 : 6;
}

static void a_missing_libssl_is_told(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        print_message("skipped: hiding libssl.so.3 needs root (a mount namespace)\n");
        skip();
    }
    const char *argv[3 + NODES] = { "test_tls", "--without-libssl" };
    for (size_t i = 0; i < NODES; i++)
        argv[2 + i] = nodes_uri(f->good, i);
    /* This program's path (under valgrind too, which answers for it). */
    char self[512];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(len > 0);
    self[len] = '\0';
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execv(self, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 4) {
        print_message("skipped: no mount namespace here (status %d)\n", WEXITSTATUS(status));
        skip();
    }
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--without-libssl") == 0)
        return without_libssl(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(locks_work_over_tls),
        cmocka_unit_test(a_host_name_is_checked_as_a_name),
        cmocka_unit_test(a_wrong_ca_is_a_certificate_problem),
        cmocka_unit_test(an_expired_certificate_is_told),
        cmocka_unit_test(a_name_mismatch_is_told),
        cmocka_unit_test(no_ca_option_trusts_the_system_cas_only),
        cmocka_unit_test(verification_off_accepts_any_certificate),
        cmocka_unit_test(a_client_certificate_is_sent_when_required),
        cmocka_unit_test(unusable_files_are_named),
        cmocka_unit_test(a_plain_port_times_out_in_the_handshake),
        cmocka_unit_test(tls_options_are_fixed_once_used),
        cmocka_unit_test(a_large_command_crosses_many_records),
        cmocka_unit_test(asynchronous_calls_work_over_tls),
        cmocka_unit_test(a_release_wakes_a_waiter_over_tls),
        cmocka_unit_test(a_missing_libssl_is_told),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
