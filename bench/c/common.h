/*
 * common.h - what the C bench programs share: the command line every bench
 * client takes, the clock, CPU time, and the JSON they print.
 *
 * Every client (C, Python, Java, Lua, Go, Node) takes the same options and
 * prints one JSON object; bench/run reads it (see bench/README.md).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_args {
    const char *nodes[64];
    size_t n_nodes;
    long cycles;          /* measured cycles, per thread in "threads" mode */
    long warmup;          /* cycles before measuring (connections, caches) */
    long lease_ms;
    long keys;            /* resources per lock (multi-lock when > 1) */
    long threads;
    double seconds;       /* duration of the "threads" and "contend" modes */
    long hold_ms;         /* "contend": how long each acquisition is held before the
                             unlock; "handoff": how long the holder holds while
                             the waiter waits */
    const char *mode;     /* "cycle", "threads", "contend" or "handoff" */
    const char *prefix;   /* resource names start with this */
    int wait_all;         /* floor only: wait for every node's reply */
    long of;              /* floor only: the nodes given are the live ones of a group
                             of this many (--of), whose quorum the phases wait for */
    int fencing;          /* ours only: with fencing tokens (option fencing) */
    int rw;               /* ours only: a read-write lock's REDLOCK_READ (1, --read) or
                             REDLOCK_WRITE (2, --write) lock in place of a plain one */
    int permits;          /* ours only: a permit of a semaphore of this many (--permits) */
    int fair;             /* ours only, handoff: fair locks (--fair) */
} bench_args;

/* Parses argv; prints usage and exits on a bad command line. */
void bench_parse(bench_args *a, int argc, char **argv);

int64_t bench_now_ns(void);

/* User and system CPU time of the whole process, in microseconds. */
void bench_cpu_us(int64_t *user, int64_t *sys);

/* Latency samples of one run, in nanoseconds. */
typedef struct bench_samples {
    int64_t *lock_ns;
    int64_t *cycle_ns;
    long n;
} bench_samples;

void bench_samples_init(bench_samples *s, long capacity);
void bench_samples_free(bench_samples *s);

/* The figures of a run, printed as one JSON object on stdout. */
typedef struct bench_result {
    const char *client;
    const bench_args *args;
    const bench_samples *samples;   /* lock and cycle times ("cycle" mode), or NULL */
    const int64_t *handoff_ns;      /* "handoff" mode: unlock to the waiter's lock, or NULL */
    long ok, failed;                /* ok is also the number of handoff_ns */
    const long *per_thread;         /* acquisitions of each thread, or NULL */
    int64_t cpu_user_us, cpu_sys_us;
    double wall_s;
} bench_result;

void bench_print(const bench_result *r);

#endif
