/*
 * ours.c - libredlock from C, in the three bench modes:
 *   cycle    one thread: lock (or lock_multi over --keys resources) + unlock,
 *            --cycles times, each timed;
 *   threads  --threads threads share one ctx, each locking its own resource
 *            for --seconds; acquisitions per thread;
 *   contend  --threads threads on one resource for --seconds, each waiting
 *            for it with the library's retries; acquisitions per thread.
 * node_timeout_ms is the lease / 20 in every client of ours, the per-node
 * deadline redsync uses; pool_size is at least the number of threads.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redlock.h>

#include "common.h"

typedef struct worker {
    redlock_ctx *ctx;
    const bench_args *args;
    char name[256];
    int64_t stop_ns;
    long acquired, failed;
    pthread_t thread;
} worker;

static void check(int rc, const char *what)
{
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "ours: %s: %s: %s\n", what, redlock_strerror(rc), redlock_errmsg());
        exit(1);
    }
}

/* One lock+unlock; REDLOCK_OK or why not. */
static int cycle(redlock_ctx *ctx, const bench_args *a, const char *const *names,
                 bench_samples *s)
{
    redlock_handle *h;
    int64_t t0 = bench_now_ns();
    int rc = a->keys == 1 ? redlock_lock(&h, ctx, names[0], a->lease_ms, 0)
                          : redlock_lock_multi(&h, ctx, names, (size_t)a->keys, a->lease_ms, 0);
    if (rc != REDLOCK_OK)
        return rc;
    int64_t t1 = bench_now_ns();
    rc = redlock_unlock(h);
    int64_t t2 = bench_now_ns();
    redlock_handle_free(h);
    if (s) {
        s->lock_ns[s->n] = t1 - t0;
        s->cycle_ns[s->n++] = t2 - t0;
    }
    return rc;
}

/* Times the measured part of a run: wall and CPU. */
typedef struct meter {
    int64_t wall_ns, user_us, sys_us;
} meter;

static void meter_start(meter *m)
{
    bench_cpu_us(&m->user_us, &m->sys_us);
    m->wall_ns = bench_now_ns();
}

static void meter_stop(const meter *m, bench_result *r)
{
    r->wall_s = (double)(bench_now_ns() - m->wall_ns) / 1e9;
    bench_cpu_us(&r->cpu_user_us, &r->cpu_sys_us);
    r->cpu_user_us -= m->user_us;
    r->cpu_sys_us -= m->sys_us;
}

static void run_cycles(redlock_ctx *ctx, const bench_args *a, bench_result *r, bench_samples *s)
{
    char **names = calloc((size_t)a->keys, sizeof *names);
    for (long i = 0; i < a->keys; i++) {
        names[i] = malloc(strlen(a->prefix) + 24);
        sprintf(names[i], "%s:%ld", a->prefix, i);
    }
    const char *const *cnames = (const char *const *)names;
    for (long i = 0; i < a->warmup; i++)
        cycle(ctx, a, cnames, NULL);
    bench_samples_init(s, a->cycles);
    meter m;
    meter_start(&m);
    for (long i = 0; i < a->cycles; i++) {
        if (cycle(ctx, a, cnames, s) == REDLOCK_OK)
            r->ok++;
        else
            r->failed++;
    }
    meter_stop(&m, r);
    for (long i = 0; i < a->keys; i++)
        free(names[i]);
    free(names);
}

/* threads mode: lock+unlock of the worker's own resource until stop_ns. */
static void *own_resource(void *arg)
{
    worker *w = arg;
    while (bench_now_ns() < w->stop_ns) {
        redlock_handle *h;
        int rc = redlock_lock(&h, w->ctx, w->name, w->args->lease_ms, 0);
        if (rc == REDLOCK_OK) {
            rc = redlock_unlock(h);
            redlock_handle_free(h);
        }
        if (rc == REDLOCK_OK)
            w->acquired++;
        else
            w->failed++;
    }
    return NULL;
}

/* contend mode: the shared resource until stop_ns, waiting for it with the
 * library's own retries (random pauses of retry_delay_ms +- retry_jitter_ms). */
static void *shared_resource(void *arg)
{
    worker *w = arg;
    int64_t now;
    while ((now = bench_now_ns()) < w->stop_ns) {
        redlock_handle *h;
        int64_t wait_ms = (w->stop_ns - now) / 1000000;
        int rc = redlock_lock(&h, w->ctx, w->name, w->args->lease_ms, wait_ms);
        if (rc == REDLOCK_OK) {
            w->acquired++;
            redlock_unlock(h);
            redlock_handle_free(h);
        } else if (rc != REDLOCK_ELOCKED) {
            w->failed++;
        }
    }
    return NULL;
}

static void run_threads(redlock_ctx *ctx, const bench_args *a, bench_result *r, long *per_thread)
{
    int contend = strcmp(a->mode, "contend") == 0;
    worker *ws = calloc((size_t)a->threads, sizeof *ws);
    meter m;
    meter_start(&m);
    int64_t stop = m.wall_ns + (int64_t)(a->seconds * 1e9);
    for (long i = 0; i < a->threads; i++) {
        ws[i] = (worker){ .ctx = ctx, .args = a, .stop_ns = stop };
        if (contend)
            snprintf(ws[i].name, sizeof ws[i].name, "%s:shared", a->prefix);
        else
            snprintf(ws[i].name, sizeof ws[i].name, "%s:%ld", a->prefix, i);
        pthread_create(&ws[i].thread, NULL, contend ? shared_resource : own_resource, &ws[i]);
    }
    for (long i = 0; i < a->threads; i++) {
        pthread_join(ws[i].thread, NULL);
        per_thread[i] = ws[i].acquired;
        r->ok += ws[i].acquired;
        r->failed += ws[i].failed;
    }
    meter_stop(&m, r);
    free(ws);
}

int main(int argc, char **argv)
{
    bench_args a;
    bench_parse(&a, argc, argv);
    int cycles = strcmp(a.mode, "cycle") == 0;
    if (!cycles && strcmp(a.mode, "threads") != 0 && strcmp(a.mode, "contend") != 0) {
        fprintf(stderr, "ours: unknown mode %s\n", a.mode);
        return 64;
    }
    redlock_ctx *ctx;
    char pool[24], node_timeout[24];
    check(redlock_ctx_new(&ctx, a.nodes, a.n_nodes), "ctx_new");
    snprintf(pool, sizeof pool, "%ld", a.threads > 16 ? a.threads : 16);
    snprintf(node_timeout, sizeof node_timeout, "%ld", a.lease_ms / 20);
    check(redlock_ctx_set_option(ctx, "pool_size", pool), "pool_size");
    check(redlock_ctx_set_option(ctx, "node_timeout_ms", node_timeout), "node_timeout_ms");

    bench_samples s = { 0 };
    long *per_thread = calloc((size_t)a.threads, sizeof *per_thread);
    bench_result r = { .client = "ours-c", .args = &a, .samples = cycles ? &s : NULL,
                       .per_thread = cycles ? NULL : per_thread };
    if (cycles)
        run_cycles(ctx, &a, &r, &s);
    else
        run_threads(ctx, &a, &r, per_thread);
    bench_print(&r);

    bench_samples_free(&s);
    free(per_thread);
    redlock_ctx_free(ctx);
    return 0;
}
