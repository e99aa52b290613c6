/*
 * test_stall.c - connections under load and under a stalled node: with a
 * node stopped by SIGSTOP (it takes bytes and answers nothing), or nodes
 * made busy by many calls at once from several threads and from the
 * asynchronous calls, the sockets the client has open to each node never
 * exceed pool_size + 2 (its own connections for acquires) + 2 (those only
 * releases and extensions take) + 1 (the subscriber of wake-ups), and every
 * lock reported taken is held by a quorum and released by its unlock.
 *
 * A watcher thread counts the process's sockets to each node (its fds from
 * /proc/self/fd, each one's peer by getpeername) every millisecond. Threads
 * never call cmocka: they count what they saw in atomics.
 */
#include "helpers.h"

#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_NODES 5

static pid_t stopped;   /* a node stopped with SIGSTOP: let go on a failure too */
#define SOCKETS_OVER_POOL 5   /* RL_CONN_SPARE (2) + RL_CONN_ENDS (2) + the wake-ups' subscriber */

typedef struct watch {
    const nodes *ns;
    atomic_bool stop;
    int most[MAX_NODES];   /* the most sockets seen open to each node at once */
    pthread_t thread;
} watch;

/* Sockets of this process connected to each node's port, now. */
static void count_sockets(const nodes *ns, int *count)
{
    memset(count, 0, MAX_NODES * sizeof *count);
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d))
            continue;
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0 || sa.ss_family != AF_INET)
            continue;
        int port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
        for (size_t i = 0; i < nodes_count(ns); i++)
            if (nodes_port(ns, i) == port)
                count[i]++;
    }
    closedir(d);
}

static void *watching(void *arg)
{
    watch *w = arg;
    while (!atomic_load(&w->stop)) {
        int now[MAX_NODES];
        count_sockets(w->ns, now);
        for (size_t i = 0; i < nodes_count(w->ns); i++)
            if (now[i] > w->most[i])
                w->most[i] = now[i];
        sleep_ms(1);
    }
    return NULL;
}

static void watch_start(watch *w, const nodes *ns)
{
    memset(w, 0, sizeof *w);
    w->ns = ns;
    assert_int_equal(pthread_create(&w->thread, NULL, watching, w), 0);
}

/* Stops the watcher and asserts the most sockets it saw to each node. */
static void watch_end(watch *w, int pool_size)
{
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    for (size_t i = 0; i < nodes_count(w->ns); i++) {
        if (w->most[i] > pool_size + SOCKETS_OVER_POOL)
            fprintf(stderr, "node %zu: %d sockets open at once, pool_size %d\n", i, w->most[i],
                    pool_size);
        assert_true(w->most[i] <= pool_size + SOCKETS_OVER_POOL);
        assert_true(w->most[i] >= 1);   /* the watcher saw them at all */
    }
}

/* The node's process id, from its INFO. */
static pid_t node_pid(nodes *ns, size_t i)
{
    redisReply *r = nodes_cmd(ns, i, "INFO server");
    assert_non_null(r);
    const char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, "process_id:") : NULL;
    pid_t pid = at ? (pid_t)atol(at + strlen("process_id:")) : 0;
    freeReplyObject(r);
    assert_true(pid > 0);
    return pid;
}

typedef struct run {
    nodes *ns;
    redlock_ctx *ctx;
    const char *prefix;
    int cycles;
    int asleep;   /* the node stopped (not asked: it would not answer), or -1 */
    atomic_int ok, failures, first_failure, unconfirmed, lost;
} run;

typedef struct worker {
    run *r;
    int id;
    pthread_t thread;
} worker;

static void check_ok(run *r, int rc)
{
    if (rc == REDLOCK_OK) {
        atomic_fetch_add(&r->ok, 1);
        return;
    }
    int none = 0;
    if (atomic_compare_exchange_strong(&r->first_failure, &none, rc))
        fprintf(stderr, "first failure %d: %s\n", rc, redlock_errmsg());
    atomic_fetch_add(&r->failures, 1);
}

/* Lock and unlock, cycles times, on resources of its own; now and then the
 * nodes are asked whether a quorum holds the token (raw connections, not the
 * client's). */
static void *cycling(void *arg)
{
    worker *w = arg;
    run *r = w->r;
    for (int i = 0; i < r->cycles; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d-%d", r->prefix, w->id, i % 8);
        redlock_handle *h = NULL;
        int rc = redlock_lock(&h, r->ctx, name, 10000, 10000);
        check_ok(r, rc);
        if (rc != REDLOCK_OK)
            continue;
        if (i % 16 == 0) {
            size_t quorum = nodes_count(r->ns) / 2 + 1, holding = 0;
            for (size_t k = 0; k < nodes_count(r->ns); k++) {
                char *v = (int)k == r->asleep ? NULL : nodes_get(r->ns, k, name);
                holding += v && strcmp(v, redlock_handle_token(h)) == 0;
                free(v);
            }
            if (holding < quorum)
                atomic_fetch_add(&r->unconfirmed, 1);
        }
        if (redlock_handle_lost(h))
            atomic_fetch_add(&r->lost, 1);
        check_ok(r, redlock_unlock(h));
        redlock_handle_free(h);
    }
    return NULL;
}

static void run_threads(run *r, int n)
{
    worker w[16];
    for (int i = 0; i < n; i++) {
        w[i] = (worker){ .r = r, .id = i };
        assert_int_equal(pthread_create(&w[i].thread, NULL, cycling, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(w[i].thread, NULL);
}

static void assert_released(nodes *ns, const char *prefix, int threads)
{
    for (int t = 0; t < threads; t++) {
        for (int k = 0; k < 8; k++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%d-%d", prefix, t, k);
            assert_on_every_node(ns, name, NULL);
        }
    }
}

static void assert_released_on_a_quorum(nodes *ns, const char *prefix, int threads)
{
    size_t quorum = nodes_count(ns) / 2 + 1;
    for (int t = 0; t < threads; t++) {
        for (int k = 0; k < 8; k++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%d-%d", prefix, t, k);
            size_t held = nodes_count_exists(ns, name);
            for (long long until = now_ms() + CONVERGE_MS; held > nodes_count(ns) - quorum
                 && now_ms() < until; held = nodes_count_exists(ns, name))
                sleep_ms(10);
            assert_true(held <= nodes_count(ns) - quorum);
        }
    }
}

/* The node deadline of the runs below: the default, 50 ms; under a
 * sanitizer, whose client answers several times slower, 250 ms (on a
 * starved machine 50 ms once missed the answers of healthy nodes, and a run
 * failed a call for it, not for what the run is about). Waiting for a
 * connection does not count against it either way. */
#ifdef REDLOCK_TEST_SANITIZED
#define DEADLINE "250"
#define DEADLINE_MS 250
#else
#define DEADLINE "50"
#define DEADLINE_MS 50
#endif

static void a_stalled_node_costs_one_connection(void **state)
{
    nodes *ns = nodes_start(5, NULL);
    assert_non_null(ns);
    *state = ns;
    const char *opts[] = { "node_timeout_ms", DEADLINE, "connect_timeout_ms", "100",
                           "pool_size", "4", NULL };
    run r = { .ns = ns, .ctx = ctx_for(ns, opts), .prefix = "stall", .cycles = 400,
            .asleep = 4 };
    pid_t pid = node_pid(ns, 4);
    watch w;
    watch_start(&w, ns);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    stopped = pid;
    run_threads(&r, 4);
    /* Then a second pause of the client, and more calls while it lasts. */
    sleep_ms(200);
    run_threads(&r, 4);
    assert_int_equal(kill(pid, SIGCONT), 0);
    stopped = 0;
    /* Back, the node answers what it was sent; late replies are read as its
     * connections are used again (an acquire that lands after its unlock
     * is undone then), and the releases it was owed are delivered. */
    r.asleep = -1;
    r.cycles = 50;
    run_threads(&r, 4);
    watch_end(&w, 4);
    if (r.failures)
        fprintf(stderr, "%d failed calls, the first %d\n", r.failures, r.first_failure);
    assert_int_equal(r.failures, 0);
    assert_int_equal(r.ok, (2 * 4 * 400 + 4 * 50) * 2);
    assert_int_equal(r.unconfirmed, 0);
    assert_int_equal(r.lost, 0);
    /* The stopped node, back, ran what it was sent in order, and is owed
     * the releases it was not sent: nothing is left held anywhere. */
    assert_released(ns, "stall", 4);
    redlock_ctx_free(r.ctx);
    nodes_free(ns);
    *state = NULL;
}

static void busy_nodes_are_not_replaced(void **state)
{
    nodes *ns = nodes_start(3, NULL);
    assert_non_null(ns);
    *state = ns;
    /* Eight threads on two pooled connections per node, and the default
     * node deadline: the calls queue for connections, none is opened past
     * the cap, and none fails for it. */
    const char *opts[] = { "node_timeout_ms", DEADLINE, "connect_timeout_ms", "100",
                           "pool_size", "2", NULL };
    run r = { .ns = ns, .ctx = ctx_for(ns, opts), .prefix = "busy", .cycles = 300,
            .asleep = -1 };
    watch w;
    watch_start(&w, ns);
    run_threads(&r, 8);
    watch_end(&w, 2);
    if (r.failures)
        fprintf(stderr, "%d failed calls, the first %d\n", r.failures, r.first_failure);
    assert_int_equal(r.failures, 0);
    assert_int_equal(r.ok, 8 * 300 * 2);
    /* The health tells the connections open to each node: within the cap. */
    char health[3 * REDLOCK_HEALTH_LINE_MAX];
    assert_int_equal(redlock_ctx_health(r.ctx, health, sizeof health), REDLOCK_OK);
    int lines = 0;
    for (const char *at = strstr(health, " conns="); at; at = strstr(at + 1, " conns=")) {
        assert_true(atoi(at + strlen(" conns=")) <= 2 + 2);
        lines++;
    }
    assert_int_equal(lines, 3);
    assert_int_equal(r.unconfirmed, 0);
    assert_int_equal(r.lost, 0);
    /* Released on a quorum at least: nobody is kept out. (An acquire still
     * owed on a connection closed because the pool was full may land after
     * its unlock's release on another connection; that node keeps the key
     * until its lease ends, on a minority.) */
    assert_released_on_a_quorum(ns, "busy", 8);
    redlock_ctx_free(r.ctx);
    nodes_free(ns);
    *state = NULL;
}

typedef struct async_run {
    atomic_int locked, unlocked, failures;
} async_run;

/* One lock's unlock: its run, and its handle, freed once the unlock ends. */
typedef struct unlocking {
    async_run *a;
    redlock_handle *h;
} unlocking;

static void unlocked(void *data, int status, redlock_handle *h, const char *message)
{
    unlocking *u = data;
    (void)h;   /* an unlock's end hands no handle: the lock's is u->h */
    redlock_handle_free(u->h);
    if (status == REDLOCK_OK)
        atomic_fetch_add(&u->a->unlocked, 1);
    else if (atomic_fetch_add(&u->a->failures, 1) == 0)
        fprintf(stderr, "first failure %d: %s\n", status, message);
    free(u);
}

static void locked(void *data, int status, redlock_handle *h, const char *message)
{
    async_run *a = data;
    if (status != REDLOCK_OK) {
        if (atomic_fetch_add(&a->failures, 1) == 0)
            fprintf(stderr, "first failure %d: %s\n", status, message);
        return;
    }
    atomic_fetch_add(&a->locked, 1);
    unlocking *u = malloc(sizeof *u);
    if (!u) {
        atomic_fetch_add(&a->failures, 1);
        redlock_handle_free(h);
        return;
    }
    *u = (unlocking){ a, h };
    if (redlock_unlock_async(h, unlocked, u) != REDLOCK_OK) {
        atomic_fetch_add(&a->failures, 1);
        redlock_handle_free(h);
        free(u);
    }
}

static void many_asynchronous_calls_share_the_capped_connections(void **state)
{
    nodes *ns = nodes_start(3, NULL);
    assert_non_null(ns);
    *state = ns;
    const char *opts[] = { "node_timeout_ms", DEADLINE, "connect_timeout_ms", "100",
                           "pool_size", "2", NULL };
    redlock_ctx *ctx = ctx_for(ns, opts);
    async_run a = { 0 };
    watch w;
    watch_start(&w, ns);
    enum { CALLS = 600 };
    for (int i = 0; i < CALLS; i++) {
        char name[32];
        snprintf(name, sizeof name, "async-%d", i);
        const char *names[1] = { name };
        assert_int_equal(redlock_lock_async(ctx, names, 1, 10000, 10000, locked, &a),
                         REDLOCK_OK);
    }
    long long until = now_ms() + 60000;
    while (atomic_load(&a.unlocked) + atomic_load(&a.failures) < CALLS && now_ms() < until)
        sleep_ms(5);
    watch_end(&w, 2);
    assert_int_equal(a.failures, 0);
    assert_int_equal(a.locked, CALLS);
    assert_int_equal(a.unlocked, CALLS);
    for (int i = 0; i < CALLS; i += 37) {
        char name[32];
        snprintf(name, sizeof name, "async-%d", i);
        assert_on_every_node(ns, name, NULL);
    }
    redlock_ctx_free(ctx);
    nodes_free(ns);
    *state = NULL;
}


/* Node i's redis_version as major * 100 + minor. */
static int server_version(nodes *ns, size_t i)
{
    redisReply *r = nodes_cmd(ns, i, "INFO server");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    const char *at = strstr(r->str, "redis_version:");
    assert_non_null(at);
    int major = atoi(at + strlen("redis_version:"));
    const char *dot = strchr(at, '.');
    int version = major * 100 + (dot ? atoi(dot + 1) : 0);
    freeReplyObject(r);
    return version;
}

/* Once a stopped node is silent, a lock's acquire is not sent there (but
 * for one every node_timeout_ms), and its unlock sends it nothing either:
 * the node, let go, has run no more releases than acquires, and holds
 * nothing. */
static void an_unlock_sends_nothing_where_its_lock_never_went(void **state)
{
    nodes *ns = nodes_start(5, NULL);
    assert_non_null(ns);
    *state = ns;
    const char *opts[] = { "node_timeout_ms", DEADLINE, "connect_timeout_ms", "100", NULL };
    redlock_ctx *ctx = ctx_for(ns, opts);
    /* A first lock+unlock loads the release's script on every node (else
     * the stopped node would answer each release NOSCRIPT, and run it
     * again as EVAL). */
    redlock_handle *first = NULL;
    assert_int_equal(redlock_lock(&first, ctx, "unreached", 10000, 0), REDLOCK_OK);
    /* The lock and the unlock each return once a quorum answered: node 4's
     * acquire (sent as a script while its connection had not yet told the
     * server's version) and its release may still be on their way, and must
     * not be counted below. The acquire has run once the key is there, the
     * release once it is gone again. */
    for (long long until = now_ms() + CONVERGE_MS; now_ms() < until
         && !nodes_exists(ns, 4, "unreached");)
        sleep_ms(5);
    assert_true(nodes_exists(ns, 4, "unreached"));
    assert_int_equal(redlock_unlock(first), REDLOCK_OK);
    redlock_handle_free(first);
    for (long long until = now_ms() + CONVERGE_MS; now_ms() < until
         && nodes_exists(ns, 4, "unreached");)
        sleep_ms(5);
    assert_false(nodes_exists(ns, 4, "unreached"));
    assert_int_equal(nodes_exec(ns, 4, "CONFIG RESETSTAT"), 0);
    pid_t pid = node_pid(ns, 4);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    stopped = pid;
    /* Until the first acquire sent there misses its deadline, every cycle
     * still sends one: the run lasts twenty deadlines (one second, by
     * default), so that those come to a twentieth of the cycles, and the
     * probes after them (one a deadline) to fewer still. */
    long cycles = 0;
    for (long long until = now_ms() + 20 * DEADLINE_MS; now_ms() < until; cycles++) {
        redlock_handle *h = NULL;
        assert_int_equal(redlock_lock(&h, ctx, "unreached", 10000, 0), REDLOCK_OK);
        assert_int_equal(redlock_unlock(h), REDLOCK_OK);
        redlock_handle_free(h);
    }
    assert_int_equal(kill(pid, SIGCONT), 0);
    stopped = 0;
    /* What it was sent, it runs now; the client is still connected. */
    for (long long until = now_ms() + CONVERGE_MS; now_ms() < until
         && nodes_count_exists(ns, "unreached") > 0;)
        sleep_ms(10);
    sleep_ms(100);
    /* Scripts run are releases, and before Redis 7.0 (no SET NX GET) the
     * acquires too, each calling SET once. */
    long long acquires = node_calls(ns, 4, "set");
    long long releases = node_calls(ns, 4, "evalsha") + node_calls(ns, 4, "eval");
    if (server_version(ns, 4) < 700)
        releases -= acquires;
    fprintf(stderr, "%ld cycles; the stopped node ran %lld acquires and %lld releases\n",
            cycles, acquires, releases);
    assert_true(cycles > 100);
    assert_true(acquires < cycles / 4);
    assert_true(releases <= acquires);
    assert_on_every_node(ns, "unreached", NULL);
    redlock_ctx_free(ctx);
    nodes_free(ns);
    *state = NULL;
}

static int cleanup(void **state)
{
    if (stopped > 0)
        kill(stopped, SIGCONT);
    stopped = 0;
    nodes_free(*state);   /* a failed test's nodes */
    *state = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(a_stalled_node_costs_one_connection, cleanup),
        cmocka_unit_test_teardown(busy_nodes_are_not_replaced, cleanup),
        cmocka_unit_test_teardown(many_asynchronous_calls_share_the_capped_connections, cleanup),
        cmocka_unit_test_teardown(an_unlock_sends_nothing_where_its_lock_never_went, cleanup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
