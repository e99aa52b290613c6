/*
 * floor.c - the least any Redlock client can wait for one lock+unlock cycle.
 *
 * One connection per node, nothing but hiredis and poll(). Each cycle makes a
 * fresh token, sends SET key token NX PX lease to all N nodes at once and ends
 * the phase when N/2+1 replies are in (with --wait-all: all N); then sends the
 * compare-and-delete script (EVALSHA) to all N at once, the same way. Replies
 * that come after their phase ended are read and dropped when they arrive.
 * There is no per-node deadline, retry or error handling beyond counting:
 * this is the lower bound, not a client.
 * --of N gives it the live nodes of a group of N (the others stopped): a
 * client that knew which are stopped would send them nothing, and wait for
 * N/2+1 replies of the live ones.
 * --mode threads runs --threads such clients at once for --seconds, each on
 * its own thread with its own connections and its own resource: the most a
 * client with that many threads could get from the same nodes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <hiredis/hiredis.h>

#include "common.h"

#define PHASE_LIMIT_NS 5000000000LL /* a phase this long means a node is gone */

static const char release_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

typedef struct node {
    redisContext *c;
    int outstanding;     /* replies still to come; the last one is the current phase's */
} node;

static redisContext *connect_uri(const char *uri)
{
    char host[256];
    int port = 6379;
    if (strncmp(uri, "unix://", 7) == 0)
        return redisConnectUnix(uri + 7);
    if (sscanf(uri, "redis://%255[^:/]:%d", host, &port) < 1) {
        fprintf(stderr, "floor: bad node URI %s (redis://host:port or unix://path)\n", uri);
        exit(64);
    }
    return redisConnect(host, port);
}

static void open_nodes(node *nodes, const bench_args *a, char *sha)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        redisContext *c = connect_uri(a->nodes[i]);
        if (!c || c->err) {
            fprintf(stderr, "floor: %s: %s\n", a->nodes[i], c ? c->errstr : "out of memory");
            exit(1);
        }
        redisReply *r = redisCommand(c, "SCRIPT LOAD %s", release_script);
        if (!r || r->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "floor: %s: SCRIPT LOAD failed\n", a->nodes[i]);
            exit(1);
        }
        snprintf(sha, 41, "%s", r->str);
        freeReplyObject(r);
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        c->flags &= ~REDIS_BLOCK;
        nodes[i] = (node){ .c = c };
    }
}

/* A reply that means "done": OK to SET, 1 from the script. */
static int is_yes(const redisReply *r)
{
    return (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
        || (r->type == REDIS_REPLY_INTEGER && r->integer == 1);
}

/* Reads what node i has sent; returns 1 when the current phase's reply was
 * among it, and adds it to *yes. Earlier phases' replies are dropped. */
static int read_node(node *nd, size_t *yes)
{
    int current = 0;
    if (redisBufferRead(nd->c) != REDIS_OK) {
        fprintf(stderr, "floor: read: %s\n", nd->c->errstr);
        exit(1);
    }
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(nd->c, &reply) != REDIS_OK) {
            fprintf(stderr, "floor: bad reply: %s\n", nd->c->errstr);
            exit(1);
        }
        if (!reply)
            return current;
        if (--nd->outstanding == 0) {
            current = 1;
            *yes += is_yes(reply);
        }
        freeReplyObject(reply);
    }
}

/* Sends cmd to every node at once; returns the yes votes among the first
 * `need` current replies. */
static size_t phase(node *nodes, size_t n, const char *cmd, int len, size_t need)
{
    struct pollfd pfd[64];
    size_t in = 0, yes = 0;
    for (size_t i = 0; i < n; i++) {
        int done = 0;
        redisAppendFormattedCommand(nodes[i].c, cmd, (size_t)len);
        nodes[i].outstanding++;
        while (!done)
            if (redisBufferWrite(nodes[i].c, &done) != REDIS_OK) {
                fprintf(stderr, "floor: write: %s\n", nodes[i].c->errstr);
                exit(1);
            }
    }
    int64_t give_up = bench_now_ns() + PHASE_LIMIT_NS;
    while (in < need) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            pfd[k++] = (struct pollfd){ .fd = nodes[i].c->fd, .events = POLLIN };
        if (poll(pfd, k, 5000) < 0 || bench_now_ns() > give_up) {
            fprintf(stderr, "floor: no quorum of replies within 5 seconds\n");
            exit(1);
        }
        for (size_t i = 0; i < k; i++)
            if (pfd[i].revents)
                in += (size_t)read_node(&nodes[i], &yes);
    }
    return yes;
}

static void new_token(char out[33])
{
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        perror("floor: getrandom");
        exit(1);
    }
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* One lock+unlock cycle; 1 when both phases had a quorum of yes. */
static int cycle(node *nodes, const bench_args *a, const char *key, const char *sha,
                 bench_samples *s)
{
    size_t n = a->n_nodes, quorum = (a->of ? (size_t)a->of : n) / 2 + 1;
    size_t need = a->wait_all ? n : quorum;
    char token[33], *cmd;
    new_token(token);
    int64_t t0 = bench_now_ns();
    int len = redisFormatCommand(&cmd, "SET %s %s NX PX %ld", key, token, a->lease_ms);
    size_t locked = phase(nodes, n, cmd, len, need);
    redisFreeCommand(cmd);
    int64_t t1 = bench_now_ns();
    len = redisFormatCommand(&cmd, "EVALSHA %s 1 %s %s", sha, key, token);
    size_t released = phase(nodes, n, cmd, len, need);
    redisFreeCommand(cmd);
    int64_t t2 = bench_now_ns();
    if (s) {
        s->lock_ns[s->n] = t1 - t0;
        s->cycle_ns[s->n++] = t2 - t0;
    }
    return locked >= quorum && released >= quorum;
}

/* threads mode: one floor client cycling on its own resource until stop_ns. */
typedef struct worker {
    const bench_args *args;
    char key[512];
    int64_t stop_ns;
    long ok, failed;
    pthread_t thread;
} worker;

static void *own_resource(void *arg)
{
    worker *w = arg;
    node nodes[64];
    char sha[41];
    open_nodes(nodes, w->args, sha);
    while (bench_now_ns() < w->stop_ns) {
        if (cycle(nodes, w->args, w->key, sha, NULL))
            w->ok++;
        else
            w->failed++;
    }
    for (size_t i = 0; i < w->args->n_nodes; i++)
        redisFree(nodes[i].c);
    return NULL;
}

static void run_threads(const bench_args *a, bench_result *r, long *per_thread)
{
    worker *ws = calloc((size_t)a->threads, sizeof *ws);
    int64_t u0, s0, u1, s1;
    bench_cpu_us(&u0, &s0);
    int64_t w0 = bench_now_ns();
    for (long i = 0; i < a->threads; i++) {
        ws[i] = (worker){ .args = a, .stop_ns = w0 + (int64_t)(a->seconds * 1e9) };
        snprintf(ws[i].key, sizeof ws[i].key, "%s:%ld", a->prefix, i);
        pthread_create(&ws[i].thread, NULL, own_resource, &ws[i]);
    }
    for (long i = 0; i < a->threads; i++) {
        pthread_join(ws[i].thread, NULL);
        per_thread[i] = ws[i].ok;
        r->ok += ws[i].ok;
        r->failed += ws[i].failed;
    }
    r->wall_s = (double)(bench_now_ns() - w0) / 1e9;
    bench_cpu_us(&u1, &s1);
    r->cpu_user_us = u1 - u0;
    r->cpu_sys_us = s1 - s0;
    free(ws);
}

int main(int argc, char **argv)
{
    bench_args a;
    bench_parse(&a, argc, argv);
    int threads = strcmp(a.mode, "threads") == 0;
    if ((!threads && strcmp(a.mode, "cycle") != 0) || a.keys != 1 || (!threads && a.threads != 1)) {
        fprintf(stderr, "floor: only --mode cycle (one thread) or threads, with one key\n");
        return 64;
    }
    if (threads) {
        long *per_thread = calloc((size_t)a.threads, sizeof *per_thread);
        bench_result r = { .client = "floor", .args = &a, .per_thread = per_thread };
        run_threads(&a, &r, per_thread);
        bench_print(&r);
        free(per_thread);
        return 0;
    }
    node nodes[64];
    char sha[41], key[512];
    snprintf(key, sizeof key, "%s:0", a.prefix);
    open_nodes(nodes, &a, sha);

    for (long i = 0; i < a.warmup; i++)
        cycle(nodes, &a, key, sha, NULL);

    bench_samples s;
    bench_samples_init(&s, a.cycles);
    bench_result r = { .client = a.wait_all ? "floor-all" : "floor", .args = &a, .samples = &s };
    int64_t u0, s0, u1, s1;
    bench_cpu_us(&u0, &s0);
    int64_t w0 = bench_now_ns();
    for (long i = 0; i < a.cycles; i++) {
        if (cycle(nodes, &a, key, sha, &s))
            r.ok++;
        else
            r.failed++;
    }
    r.wall_s = (double)(bench_now_ns() - w0) / 1e9;
    bench_cpu_us(&u1, &s1);
    r.cpu_user_us = u1 - u0;
    r.cpu_sys_us = s1 - s0;
    bench_print(&r);

    bench_samples_free(&s);
    for (size_t i = 0; i < a.n_nodes; i++)
        redisFree(nodes[i].c);
    return 0;
}
