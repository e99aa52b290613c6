/* common.c - command line, clock, CPU time and JSON output of the C bench programs. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s --nodes URI[,URI...] [--cycles N] [--warmup N] [--lease MS] [--keys K]\n"
            "          [--threads T] [--seconds S] [--hold-ms MS] [--fencing] [--read | --write]\n"
            "          [--permits P] [--fair]\n"
            "          [--mode cycle|threads|contend|handoff] [--prefix NAME] [--wait-all]\n"
            "          [--of N]\n",
            prog);
    exit(64);
}

static long number(const char *prog, const char *text, long min)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*end != '\0' || v < min)
        usage(prog);
    return v;
}

/* Whether s starts a URI ("scheme://"). */
static int starts_uri(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    return n > 0 && strncmp(s + n, "://", 3) == 0;
}

/* A comma followed by "scheme://" starts the next URI, as in the library
 * (redlock_uri_list_next): a Sentinel URI's commas stay in it. */
static void split_nodes(bench_args *a, char *list, const char *prog)
{
    char *uri = list;
    for (char *p = list;; p++) {
        if (*p != '\0' && !(*p == ',' && starts_uri(p + 1)))
            continue;
        if (a->n_nodes == sizeof a->nodes / sizeof a->nodes[0])
            usage(prog);
        a->nodes[a->n_nodes++] = uri;
        if (*p == '\0')
            break;
        *p = '\0';
        uri = p + 1;
    }
}

void bench_parse(bench_args *a, int argc, char **argv)
{
    *a = (bench_args){ .cycles = 1000, .warmup = 100, .lease_ms = 10000, .keys = 1,
                       .threads = 1, .seconds = 2.0, .mode = "cycle", .prefix = "bench" };
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--wait-all") == 0) {
            a->wait_all = 1;
            continue;
        }
        if (strcmp(opt, "--fencing") == 0) {
            a->fencing = 1;
            continue;
        }
        if (strcmp(opt, "--fair") == 0) {
            a->fair = 1;
            continue;
        }
        if (strcmp(opt, "--read") == 0 || strcmp(opt, "--write") == 0) {
            a->rw = strcmp(opt, "--read") == 0 ? 1 : 2;
            continue;
        }
        if (i + 1 == argc)
            usage(argv[0]);
        char *val = argv[++i];
        if (strcmp(opt, "--nodes") == 0)
            split_nodes(a, val, argv[0]);
        else if (strcmp(opt, "--cycles") == 0)
            a->cycles = number(argv[0], val, 1);
        else if (strcmp(opt, "--warmup") == 0)
            a->warmup = number(argv[0], val, 0);
        else if (strcmp(opt, "--lease") == 0)
            a->lease_ms = number(argv[0], val, 1);
        else if (strcmp(opt, "--keys") == 0)
            a->keys = number(argv[0], val, 1);
        else if (strcmp(opt, "--threads") == 0)
            a->threads = number(argv[0], val, 1);
        else if (strcmp(opt, "--seconds") == 0)
            a->seconds = atof(val);
        else if (strcmp(opt, "--hold-ms") == 0)
            a->hold_ms = number(argv[0], val, 0);
        else if (strcmp(opt, "--mode") == 0)
            a->mode = val;
        else if (strcmp(opt, "--prefix") == 0)
            a->prefix = val;
        else if (strcmp(opt, "--permits") == 0)
            a->permits = number(argv[0], val, 1);
        else if (strcmp(opt, "--of") == 0)
            a->of = number(argv[0], val, 1);
        else
            usage(argv[0]);
    }
    if (a->n_nodes == 0 || a->seconds <= 0 || (a->of && ((size_t)a->of < a->n_nodes || (size_t)a->of / 2 + 1 > a->n_nodes)))
        usage(argv[0]);
}

int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_cpu_us(int64_t *user, int64_t *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
    *sys = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
}

void bench_samples_init(bench_samples *s, long capacity)
{
    s->n = 0;
    s->lock_ns = calloc((size_t)capacity, sizeof *s->lock_ns);
    s->cycle_ns = calloc((size_t)capacity, sizeof *s->cycle_ns);
    if (!s->lock_ns || !s->cycle_ns) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
}

void bench_samples_free(bench_samples *s)
{
    free(s->lock_ns);
    free(s->cycle_ns);
}

static void print_array(const char *name, const int64_t *v, long n)
{
    printf(", \"%s\": [", name);
    for (long i = 0; i < n; i++)
        printf("%s%lld", i ? "," : "", (long long)v[i]);
    printf("]");
}

void bench_print(const bench_result *r)
{
    const bench_args *a = r->args;
    printf("{\"client\": \"%s\", \"mode\": \"%s\", \"n\": %zu, \"keys\": %ld, \"threads\": %ld",
           r->client, a->mode, a->n_nodes, a->keys, a->threads);
    printf(", \"ok\": %ld, \"failed\": %ld, \"cpu_user_us\": %lld, \"cpu_sys_us\": %lld"
           ", \"wall_s\": %.6f",
           r->ok, r->failed, (long long)r->cpu_user_us, (long long)r->cpu_sys_us, r->wall_s);
    if (r->samples) {
        print_array("lock_ns", r->samples->lock_ns, r->samples->n);
        print_array("cycle_ns", r->samples->cycle_ns, r->samples->n);
    }
    if (r->handoff_ns)
        print_array("handoff_ns", r->handoff_ns, r->ok);
    if (r->per_thread) {
        printf(", \"per_thread\": [");
        for (long i = 0; i < a->threads; i++)
            printf("%s%ld", i ? "," : "", r->per_thread[i]);
        printf("]");
    }
    printf("}\n");
}
