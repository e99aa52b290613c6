/*
 * ours.c - libredlock from C, in the three bench modes:
 *   cycle    one thread: lock (or lock_multi over --keys resources) + unlock,
 *            --cycles times, each timed;
 *   threads  --threads threads share one ctx, each locking its own resource
 *            for --seconds; acquisitions per thread;
 *   contend  --threads threads on one resource for --seconds, each waiting
 *            for it (woken by the release, or after the library's retry
 *            pause), holding it --hold-ms, then unlocking and asking again;
 *            acquisitions per thread. The threads share one ctx;
 *   handoff  two clients (two ctx) on one resource, a thread each: the holder
 *            locks, the waiter starts waiting, the holder unlocks after
 *            --hold-ms; the time from the unlock call to the waiter's lock
 *            returning, --cycles times.
 * node_timeout_ms is the lease / 20 in every client of ours, the per-node
 * deadline redsync uses; pool_size is at least the number of threads.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A client of the nodes, with the bench's options. */
static redlock_ctx *new_ctx(const bench_args *a)
{
    redlock_ctx *ctx;
    char pool[24], node_timeout[24];
    check(redlock_ctx_new(&ctx, a->nodes, a->n_nodes), "ctx_new");
    snprintf(pool, sizeof pool, "%ld", a->threads > 16 ? a->threads : 16);
    snprintf(node_timeout, sizeof node_timeout, "%ld", a->lease_ms / 20);
    check(redlock_ctx_set_option(ctx, "pool_size", pool), "pool_size");
    check(redlock_ctx_set_option(ctx, "node_timeout_ms", node_timeout), "node_timeout_ms");
    check(redlock_ctx_set_option(ctx, "fencing", a->fencing ? "1" : "0"), "fencing");
    return ctx;
}

/* One lock+unlock; REDLOCK_OK or why not. */
static int cycle(redlock_ctx *ctx, const bench_args *a, const char *const *names,
                 bench_samples *s)
{
    redlock_handle *h;
    int64_t t0 = bench_now_ns();
    int rc = a->permits ? redlock_acquire_permit(&h, ctx, names[0], a->permits, a->lease_ms, 0)
           : a->rw ? redlock_lock_rw(&h, ctx, names[0], a->rw, NULL, a->lease_ms, 0)
           : a->keys == 1 ? redlock_lock(&h, ctx, names[0], a->lease_ms, 0)
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
            if (w->args->hold_ms > 0)
                sleep_ms(w->args->hold_ms);
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

/* handoff mode: the waiter's side, on its own thread and its own ctx. For
 * each round the holder posts go once it holds the resource; the waiter
 * waits for it (wait_ms: the lease), notes when it got it, unlocks and posts
 * done. */
typedef struct waiter {
    redlock_ctx *ctx;
    const bench_args *args;
    const char *name;
    long rounds;
    sem_t go, done;
    int64_t acquired_ns;    /* this round's, or -1 when the lock failed */
    pthread_t thread;
} waiter;

/* The handoff's lock of name: the fair lock with --fair. */
static int handoff_lock(redlock_handle **h, redlock_ctx *ctx, const bench_args *a,
                        const char *name)
{
    return a->fair ? redlock_lock_fair(h, ctx, name, a->lease_ms, a->lease_ms)
                   : redlock_lock(h, ctx, name, a->lease_ms, a->lease_ms);
}

static void *wait_for_handoff(void *arg)
{
    waiter *w = arg;
    for (long i = 0; i < w->rounds; i++) {
        sem_wait(&w->go);
        redlock_handle *h;
        int rc = handoff_lock(&h, w->ctx, w->args, w->name);
        w->acquired_ns = rc == REDLOCK_OK ? bench_now_ns() : -1;
        if (rc == REDLOCK_OK) {
            redlock_unlock(h);
            redlock_handle_free(h);
        }
        sem_post(&w->done);
    }
    return NULL;
}

/* One round on the holder's side: lock, let the waiter wait hold_ms, unlock.
 * Returns the handoff in ns, or -1 when the waiter did not get the lock. */
static int64_t handoff_round(redlock_ctx *ctx, waiter *w)
{
    redlock_handle *h;
    /* wait_ms too: the waiter's release may still be on its way to a node. */
    check(handoff_lock(&h, ctx, w->args, w->name), "holder's lock");
    sem_post(&w->go);
    sleep_ms(w->args->hold_ms);
    int64_t t0 = bench_now_ns();
    int rc = redlock_unlock(h);
    redlock_handle_free(h);
    sem_wait(&w->done);
    return rc == REDLOCK_OK && w->acquired_ns >= 0 ? w->acquired_ns - t0 : -1;
}

static void run_handoff(redlock_ctx *ctx, const bench_args *a, bench_result *r, int64_t *handoff_ns)
{
    char name[256];
    snprintf(name, sizeof name, "%s:0", a->prefix);
    waiter w = { .ctx = new_ctx(a), .args = a, .name = name, .rounds = a->warmup + a->cycles };
    sem_init(&w.go, 0, 0);
    sem_init(&w.done, 0, 0);
    pthread_create(&w.thread, NULL, wait_for_handoff, &w);
    for (long i = 0; i < a->warmup; i++)
        handoff_round(ctx, &w);
    meter m;
    meter_start(&m);
    for (long i = 0; i < a->cycles; i++) {
        int64_t ns = handoff_round(ctx, &w);
        if (ns >= 0)
            handoff_ns[r->ok++] = ns;
        else
            r->failed++;
    }
    meter_stop(&m, r);
    pthread_join(w.thread, NULL);
    sem_destroy(&w.go);
    sem_destroy(&w.done);
    redlock_ctx_free(w.ctx);
}

int main(int argc, char **argv)
{
    bench_args a;
    bench_parse(&a, argc, argv);
    int cycles = strcmp(a.mode, "cycle") == 0;
    int handoff = strcmp(a.mode, "handoff") == 0;
    if (!cycles && !handoff && strcmp(a.mode, "threads") != 0 && strcmp(a.mode, "contend") != 0) {
        fprintf(stderr, "ours: unknown mode %s\n", a.mode);
        return 64;
    }
    redlock_ctx *ctx = new_ctx(&a);

    bench_samples s = { 0 };
    long *per_thread = calloc((size_t)a.threads, sizeof *per_thread);
    int64_t *handoff_ns = calloc((size_t)a.cycles, sizeof *handoff_ns);
    bench_result r = { .client = "ours-c", .args = &a };
    if (cycles) {
        r.samples = &s;
        run_cycles(ctx, &a, &r, &s);
    } else if (handoff) {
        r.handoff_ns = handoff_ns;
        run_handoff(ctx, &a, &r, handoff_ns);
    } else {
        r.per_thread = per_thread;
        run_threads(ctx, &a, &r, per_thread);
    }
    bench_print(&r);

    bench_samples_free(&s);
    free(per_thread);
    free(handoff_ns);
    redlock_ctx_free(ctx);
    return 0;
}
