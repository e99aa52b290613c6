/*
 * kept.c - many kept locks held by one client (the bench scenario "kept"):
 * takes --locks locks with --lease ms and keeps them (redlock_handle_watch:
 * the client's thread renews them), holds them --seconds, then releases
 * them. Prints one JSON object: how many were lost, the memory and sockets
 * the held locks cost, the client's CPU while it only held them, and how
 * late any lock's renewal came (sampled every 100 ms from each lock's
 * validity: a lock renewed at s has validity lease - drift - (now - s)).
 *
 *   kept --nodes URI,URI,... --locks N --lease MS --seconds S --prefix P
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "redlock.h"

static atomic_long lost_calls, renewal_failed;

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t cpu_us(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (int64_t)u.ru_utime.tv_sec * 1000000 + u.ru_utime.tv_usec
         + (int64_t)u.ru_stime.tv_sec * 1000000 + u.ru_stime.tv_usec;
}

/* Resident memory in KiB (VmRSS). */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* Open sockets of this process. */
static int sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    char path[300], target[64];
    while (d && (e = readdir(d)) != NULL) {
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = '\0';
            n += strncmp(target, "socket:", 7) == 0;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static void on_lost(void *data, redlock_handle *h, int status, const char *message)
{
    (void)data;
    (void)h;
    (void)status;
    if (atomic_fetch_add(&lost_calls, 1) == 0)
        fprintf(stderr, "kept: lost: %s\n", message);
}

static void on_event(void *data, int level, const char *event, const char *message)
{
    (void)data;
    (void)level;
    if (strcmp(event, "renewal_failed") == 0 && atomic_fetch_add(&renewal_failed, 1) == 0)
        fprintf(stderr, "kept: renewal_failed: %s\n", message);
}

int main(int argc, char **argv)
{
    const char *uris[64], *prefix = "bench:kept";
    size_t n_nodes = 0;
    long n = 10000, lease = 30000;
    double seconds = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--nodes") == 0) {
            for (char *p = strtok(argv[i + 1], ","); p && n_nodes < 64; p = strtok(NULL, ","))
                uris[n_nodes++] = p;
        } else if (strcmp(argv[i], "--locks") == 0) {
            n = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--lease") == 0) {
            lease = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--seconds") == 0) {
            seconds = atof(argv[i + 1]);
        } else if (strcmp(argv[i], "--prefix") == 0) {
            prefix = argv[i + 1];
        }
    }
    redlock_ctx *ctx = NULL;
    if (n <= 0 || n_nodes == 0 || redlock_ctx_new(&ctx, uris, n_nodes) != REDLOCK_OK) {
        fprintf(stderr, "kept: bad arguments or nodes: %s\n", redlock_errmsg());
        return 2;
    }
    redlock_ctx_set_log(ctx, on_event, REDLOCK_LOG_WARN, NULL);
    redlock_handle **hs = calloc((size_t)n, sizeof *hs);
    long rss0 = rss_kib();
    int64_t t0 = now_ms();
    for (long i = 0; i < n; i++) {
        char name[200];
        snprintf(name, sizeof name, "%s:%ld", prefix, i);
        if (redlock_lock(&hs[i], ctx, name, lease, 1000) != REDLOCK_OK
            || redlock_handle_watch(hs[i], on_lost, NULL) != REDLOCK_OK) {
            fprintf(stderr, "kept: lock %ld: %s\n", i, redlock_errmsg());
            return 1;
        }
    }
    int64_t acquired_ms = now_ms() - t0;
    long rss1 = rss_kib();
    /* Hold: the first half untouched, for the CPU the renewals cost; the
     * second sampling each lock's validity every 100 ms. */
    int64_t cpu0 = cpu_us(), start = now_ms(), quiet = start + (int64_t)(seconds * 500);
    while (now_ms() < quiet)
        usleep(20 * 1000);
    int64_t held_ms = now_ms() - start, cpu = cpu_us() - cpu0;
    int64_t until = now_ms() + (int64_t)(seconds * 500);
    int64_t drift = (int64_t)((double)lease * 0.01) + 2;
    int64_t worst_age = 0, min_validity = INT64_MAX;
    int max_sockets = 0;
    while (now_ms() < until) {
        usleep(100 * 1000);
        for (long i = 0; i < n; i++) {
            int64_t v = redlock_handle_validity_ms(hs[i]);
            int64_t age = lease - drift - v;   /* since the last renewal started */
            if (age > worst_age)
                worst_age = age;
            if (v < min_validity)
                min_validity = v;
        }
        int s = sockets();
        if (s > max_sockets)
            max_sockets = s;
    }
    long lost_now = 0;
    for (long i = 0; i < n; i++)
        lost_now += redlock_handle_lost(hs[i]) == 1;
    t0 = now_ms();
    for (long i = 0; i < n; i++) {
        redlock_unlock(hs[i]);
        redlock_handle_free(hs[i]);
    }
    int64_t released_ms = now_ms() - t0;
    free(hs);
    redlock_ctx_free(ctx);
    /* Renewals in the quiet half: each lock about every lease/3 less its spread
     * (a twelfth of the lease at most, a 24th on average). */
    double period_ms = (double)lease / 3 - (double)lease / 24;
    double renewals = (double)n * (double)held_ms / period_ms;
    printf("{\"client\": \"ours-c\", \"locks\": %ld, \"nodes\": %zu, \"lease_ms\": %ld, "
           "\"held_s\": %.1f, \"lost\": %ld, \"lost_calls\": %ld, \"renewal_failed\": %ld, "
           "\"acquire_s\": %.1f, \"release_s\": %.1f, \"bytes_per_lock\": %.0f, "
           "\"max_sockets\": %d, \"cpu_ms_per_s\": %.1f, \"cpu_ms_per_1000_renewals\": %.2f, "
           "\"worst_renewal_lag_ms\": %lld, \"min_validity_ms\": %lld}\n",
           n, n_nodes, lease, seconds, lost_now, (long)lost_calls,
           (long)renewal_failed, (double)acquired_ms / 1000, (double)released_ms / 1000,
           (double)(rss1 - rss0) * 1024 / (double)n, max_sockets,
           (double)cpu / 1000 / ((double)held_ms / 1000), (double)cpu / 1000 / (renewals / 1000),
           (long long)(worst_age - lease / 3), (long long)min_validity);
    return lost_now == 0 ? 0 : 1;
}
