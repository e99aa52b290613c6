/*
 * client.c - a contender of the mutual-exclusion run, in C.
 *
 *   mutex_client HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS WAIT_MS KIND PERMITS
 *                [OPTIONS [UNTIL_MS]]
 *
 * NODES is a comma-separated list of node URIs, COUNTER the port of the
 * redis-server (on 127.0.0.1) that holds the shared counters. OPS times, it
 * picks one of RESOURCES resources at random and tries to lock it; under the
 * lock it reads the resource's counter, waits a little and writes it back
 * plus one (a non-atomic read-modify-write), then unlocks, and rests
 * THINK_MS before the next attempt. Each attempt appends one JSON line to
 * OUT (the format is in checker.py).
 *
 * KIND is what it takes: "lock", the plain lock; "rw", the read lock
 * (READ_PERCENT of the attempts) or the write lock of the resource's
 * read-write lock, a reader only reading the counter and waiting as long;
 * "semaphore", a permit of the resource's semaphore of PERMITS permits,
 * under which it counts itself in and out of inside:<resource> (INCR, a
 * pause, DECR). PERMITS is ignored but by "semaphore".
 *
 * OPTIONS is a comma-separated list of the library's options, NAME=VALUE
 * ("-" for none), set after node_timeout_ms and max_lease_ms; with
 * fencing=1 each section's record carries its fence ("fence", null when the
 * handle has none). UNTIL_MS, when above 0, is a CLOCK_REALTIME deadline in
 * ms: no attempt starts after it (OPS stays a cap). The library's events of
 * level info and above go to stderr, each with its wall-clock time.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "redlock.h"

#define MAX_NODES 16
#define THINK_MS 20
#define READ_PERCENT 60

enum kind { KIND_LOCK, KIND_RW, KIND_SEMAPHORE };

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static const char *code_name(int rc)
{
    switch (rc) {
    case REDLOCK_OK: return "ok";
    case REDLOCK_ELOCKED: return "locked";
    case REDLOCK_ENOQUORUM: return "noquorum";
    case REDLOCK_ENOTHELD: return "notheld";
    case REDLOCK_EEXPIRED: return "expired";
    case REDLOCK_EREDIS: return "redis";
    default: return "error";
    }
}

/* The library's events, with the time to the ms (to line them up with the
 * records and the nemesis' log). */
static void log_event(void *data, int level, const char *event, const char *message)
{
    (void)level;
    int64_t ms = realtime_ns() / 1000000;
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char stamp[16];
    strftime(stamp, sizeof stamp, "%H:%M:%S", localtime_r(&secs, &tm));
    fprintf(stderr, "%s.%03d %s %s %s\n", stamp, (int)(ms % 1000), (const char *)data, event,
            message);
}

/* The read-modify-write of the counter: GET, a pause, SET. 0 when done. */
static int bump(redisContext *counter, const char *resource)
{
    redisReply *r = redisCommand(counter, "GET counter:%s", resource);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return -1;
    }
    long long value = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    pause_ms(2);
    r = redisCommand(counter, "SET counter:%s %lld", resource, value + 1);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* A reader's look at the counter: GET, then the writer's pause. 0 when done. */
static int peek(redisContext *counter, const char *resource)
{
    redisReply *r = redisCommand(counter, "GET counter:%s", resource);
    int ok = r && r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    pause_ms(2);
    return ok ? 0 : -1;
}

/* The concurrency probe under a permit: INCR inside:<resource>, a pause,
 * DECR. *inside is what INCR returned, -1 when it failed. 0 when done. */
static int probe(redisContext *counter, const char *resource, long long *inside)
{
    *inside = -1;
    redisReply *r = redisCommand(counter, "INCR inside:%s", resource);
    if (!r || r->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        return -1;
    }
    *inside = r->integer;
    freeReplyObject(r);
    pause_ms(2);
    r = redisCommand(counter, "DECR inside:%s", resource);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    enum kind kind = KIND_LOCK;
    int args_ok = argc >= 11 && argc <= 13;
    if (args_ok && strcmp(argv[9], "rw") == 0)
        kind = KIND_RW;
    else if (args_ok && strcmp(argv[9], "semaphore") == 0)
        kind = KIND_SEMAPHORE;
    if (!args_ok || (kind == KIND_LOCK && strcmp(argv[9], "lock") != 0)) {
        fprintf(stderr, "usage: %s HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS WAIT_MS "
                "lock|rw|semaphore PERMITS [OPTIONS [UNTIL_MS]]\n", argv[0]);
        return 64;
    }
    const char *holder = argv[1];
    int resources = atoi(argv[5]), ops = atoi(argv[6]), permits = atoi(argv[10]);
    int64_t lease_ms = atoll(argv[7]), wait_ms = atoll(argv[8]);
    int64_t until_ms = argc > 12 ? atoll(argv[12]) : 0;

    const char *uris[MAX_NODES];
    size_t n = 0;
    /* A comma followed by "scheme://" starts the next URI (a Sentinel URI
     * has commas of its own). */
    char *nodes = strdup(argv[3]);
    for (char *uri = nodes; n < MAX_NODES;) {
        size_t len = redlock_uri_list_next(uri);
        uris[n++] = uri;
        if (uri[len] == '\0')
            break;
        uri[len] = '\0';
        uri += len + 1;
    }

    FILE *out = fopen(argv[2], "a");
    redisContext *counter = redisConnect("127.0.0.1", atoi(argv[4]));
    redlock_ctx *ctx = NULL;
    if (!out || !counter || counter->err || redlock_ctx_new(&ctx, uris, n) != REDLOCK_OK
        || redlock_ctx_set_option(ctx, "node_timeout_ms", "100") != REDLOCK_OK
        || redlock_ctx_set_option(ctx, "max_lease_ms", argv[7]) != REDLOCK_OK
        || redlock_ctx_set_log(ctx, log_event, REDLOCK_LOG_INFO, (void *)holder) != REDLOCK_OK) {
        fprintf(stderr, "%s: cannot start: %s\n", holder, redlock_errmsg());
        return 1;
    }
    int fencing = 0;
    char *options = strdup(argc > 11 && strcmp(argv[11], "-") != 0 ? argv[11] : "");
    for (char *pair = strtok(options, ","); pair; pair = strtok(NULL, ",")) {
        char *value = strchr(pair, '=');
        if (!value) {
            fprintf(stderr, "%s: option %s: NAME=VALUE expected\n", holder, pair);
            return 64;
        }
        *value++ = '\0';
        if (redlock_ctx_set_option(ctx, pair, value) != REDLOCK_OK) {
            fprintf(stderr, "%s: option %s: %s\n", holder, pair, redlock_errmsg());
            return 64;
        }
        if (strcmp(pair, "fencing") == 0)
            fencing = strcmp(value, "1") == 0;
    }
    free(options);
    srand((unsigned)realtime_ns());

    int failures = 0;
    for (int op = 0; op < ops; op++) {
        if (op > 0)
            pause_ms(THINK_MS);
        if (until_ms > 0 && realtime_ns() / 1000000 >= until_ms)
            break;
        char resource[32];
        snprintf(resource, sizeof resource, "r%d", rand() % resources);
        /* A writer (or a lock) bumps the counter; a reader only reads it. */
        int write = kind != KIND_RW || rand() % 100 >= READ_PERCENT;
        char head[128];
        snprintf(head, sizeof head, "{\"holder\":\"%s\",\"lang\":\"c\",\"resource\":\"%s\",%s",
                 holder, resource,
                 kind != KIND_RW ? "" : write ? "\"mode\":\"write\"," : "\"mode\":\"read\",");
        redlock_handle *h = NULL;
        int64_t asked = realtime_ns();
        int rc;
        if (kind == KIND_RW)
            rc = redlock_lock_rw(&h, ctx, resource, write ? REDLOCK_WRITE : REDLOCK_READ, NULL,
                                 lease_ms, wait_ms);
        else if (kind == KIND_SEMAPHORE)
            rc = redlock_acquire_permit(&h, ctx, resource, permits, lease_ms, wait_ms);
        else
            rc = redlock_lock(&h, ctx, resource, lease_ms, wait_ms);
        if (rc != REDLOCK_OK) {
            fprintf(out, "%s\"start_ns\":%lld,\"end_ns\":%lld,\"validity_ms\":0,\"ok\":false,"
                    "\"result\":\"%s\"}\n",
                    head, (long long)asked, (long long)realtime_ns(), code_name(rc));
            continue;
        }
        int64_t start = realtime_ns();
        int64_t validity = redlock_handle_validity_ms(h);
        /* The fence, read before the section's work, as a holder would
         * send it with its writes. */
        char fenced[48] = "";
        int64_t fence = 0;
        if (fencing && redlock_handle_fence(h, 0, &fence) == REDLOCK_OK && fence > 0)
            snprintf(fenced, sizeof fenced, ",\"fence\":%lld", (long long)fence);
        else if (fencing)
            snprintf(fenced, sizeof fenced, ",\"fence\":null");
        long long inside = 0;
        int done;
        if (kind == KIND_SEMAPHORE)
            done = probe(counter, resource, &inside) == 0;
        else
            done = (write ? bump(counter, resource) : peek(counter, resource)) == 0;
        int64_t end = realtime_ns();
        int unlocked = redlock_unlock(h);
        redlock_handle_free(h);
        failures += !done;
        char probed[32] = "";
        if (kind == KIND_SEMAPHORE && inside >= 0)
            snprintf(probed, sizeof probed, ",\"inside\":%lld", inside);
        else if (kind == KIND_SEMAPHORE)
            snprintf(probed, sizeof probed, ",\"inside\":null");
        fprintf(out, "%s\"start_ns\":%lld,\"end_ns\":%lld,\"validity_ms\":%lld,\"ok\":true,"
                "\"result\":\"ok\",\"%s\":%s%s%s,\"unlock\":\"%s\"}\n",
                head, (long long)start, (long long)end, (long long)validity,
                write ? "wrote" : "read", done ? "true" : "false", probed, fenced,
                code_name(unlocked));
        fflush(out);
    }
    fclose(out);
    redisFree(counter);
    redlock_ctx_free(ctx);
    free(nodes);
    return failures == 0 ? 0 : 1;
}
