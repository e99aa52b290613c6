/*
 * topo.c - Sentinel groups and Clusters of local redis-server processes for
 * the tests (see topo.h).
 */
#include "topo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nodes.h"   /* now_ms, sleep_ms */

#define START_TRIES 5
#define READY_TIMEOUT_MS 10000
#define SETTLE_TIMEOUT_MS 60000
#define STOP_TIMEOUT_MS 10000
#define RAW_TIMEOUT_MS 10000
#define SLOTS 16384

#define DOWN_AFTER_MS 1000
#define FAILOVER_TIMEOUT_MS 3000
#define SENTINEL_PERIOD_MS 500
/* Sentinels ping every 250 ms, ask each other every 100 ms: a sentinel
 * promotes only a replica whose INFO is younger than five ping periods, and
 * while the master is down it asks replicas for INFO once a second, so a
 * shorter ping period often leaves no replica fresh enough (the failover is
 * given up and tried again twice failover-timeout later). */
#define SENTINEL_PING_MS 250
#define SENTINEL_ASK_MS 100
#define CLUSTER_NODE_TIMEOUT_MS 2000

typedef enum kind { SENTINEL_GROUP, CLUSTER } kind;

typedef struct proc {
    pid_t pid;           /* 0 when not running */
    bool paused;
    bool sentinel;
    bool no_data;        /* restarted without its data: --save "" --appendonly no */
    int port, bus_port;  /* bus_port: cluster nodes only */
    int replica_of;      /* at the start: the master's number, or -1 */
    char dir[256];
    char conf[300];
    char addr[32];
    char id[48];         /* cluster node id */
} proc;

struct topo {
    kind kind;
    char dir[128];
    char name[64];          /* a Sentinel group's master name */
    size_t n, n_servers, n_masters, per_master;
    proc *proc;
    char *uri;
    char master_addr[32];
    topo *next_live;
};

static topo *live_topos;
static int atexit_registered;

static struct timeval timeval_ms(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* A loopback port nobody listens on now, below the kernel's ephemeral range
 * (32768 up), where the local end of an outgoing connection could take it. */
static int free_port(void)
{
    static int seeded;
    if (!seeded) {
        srand((unsigned)(getpid() ^ now_ms()));
        seeded = 1;
    }
    for (int tries = 0; tries < 200; tries++) {
        int port = 20000 + rand() % 12768;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        struct sockaddr_in addr;
        memset(&addr, 0, sizeof(addr));
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons((uint16_t)port);
        int ok = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
        close(fd);
        if (ok)
            return port;
    }
    return -1;
}

/* ---- raw commands ---- */

static redisContext *raw_connect(const topo *t, size_t i)
{
    redisContext *c = redisConnectWithTimeout("127.0.0.1", t->proc[i].port,
                                              timeval_ms(RAW_TIMEOUT_MS));
    if (c == NULL || c->err) {
        if (c != NULL)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, timeval_ms(RAW_TIMEOUT_MS));
    return c;
}

static redisReply *vcmd(topo *t, size_t i, bool quiet, const char *fmt, va_list ap)
{
    redisContext *c = raw_connect(t, i);
    if (c == NULL) {
        if (!quiet)
            fprintf(stderr, "topo: cannot connect to %s\n", t->proc[i].addr);
        return NULL;
    }
    redisReply *r = redisvCommand(c, fmt, ap);
    if (r == NULL && !quiet)
        fprintf(stderr, "topo: %s: %s\n", t->proc[i].addr, c->errstr);
    redisFree(c);
    return r;
}

redisReply *topo_cmd(topo *t, size_t i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(t, i, false, fmt, ap);
    va_end(ap);
    return r;
}

/* The same, saying nothing when i cannot be reached (polling). */
static redisReply *quiet_cmd(topo *t, size_t i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(t, i, true, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *topo_cmd_argv(topo *t, size_t i, int argc, const char **argv, const size_t *lens)
{
    redisContext *c = raw_connect(t, i);
    if (c == NULL) {
        fprintf(stderr, "topo: cannot connect to %s\n", t->proc[i].addr);
        return NULL;
    }
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    if (r == NULL)
        fprintf(stderr, "topo: %s: %s\n", t->proc[i].addr, c->errstr);
    redisFree(c);
    return r;
}

/* 0 when r is a reply and not an error; else says so on stderr (what: the
 * command) and -1. Frees r. */
static int check_reply(topo *t, size_t i, redisReply *r, const char *what)
{
    int ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL && !ok)
        fprintf(stderr, "topo: %s: %s: %s\n", t->proc[i].addr, what, r->str);
    if (r != NULL)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int topo_exec(topo *t, size_t i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(t, i, false, fmt, ap);
    va_end(ap);
    return check_reply(t, i, r, fmt);
}

/* The value of field in a "field:value\r\n" text (INFO, CLUSTER INFO). */
static char *text_field(const char *text, const char *field)
{
    size_t len = strlen(field);
    for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, field, len) == 0 && p[len] == ':') {
            const char *v = p + len + 1;
            return strndup(v, strcspn(v, "\r\n"));
        }
    }
    return NULL;
}

static char *quiet_info(topo *t, size_t i, const char *section, const char *field)
{
    redisReply *r = quiet_cmd(t, i, "INFO %s", section);
    char *v = NULL;
    if (r != NULL && (r->type == REDIS_REPLY_STRING))
        v = text_field(r->str, field);
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

char *topo_info(topo *t, size_t i, const char *section, const char *field)
{
    return quiet_info(t, i, section, field);
}

/* Whether INFO section field on i is value. */
static bool info_is(topo *t, size_t i, const char *section, const char *field, const char *value)
{
    char *v = quiet_info(t, i, section, field);
    bool is = v != NULL && strcmp(v, value) == 0;
    free(v);
    return is;
}

static long info_long(topo *t, size_t i, const char *section, const char *field)
{
    char *v = quiet_info(t, i, section, field);
    long n = v != NULL ? strtol(v, NULL, 10) : -1;
    free(v);
    return n;
}

/* Process i answers, and is ours: its process id is the one we started (on
 * a port we found free, another test's server may have come first). */
static bool answers_as_ours(topo *t, size_t i)
{
    redisReply *r = quiet_cmd(t, i, "PING");
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r != NULL)
        freeReplyObject(r);
    return ok && info_long(t, i, "server", "process_id") == (long)t->proc[i].pid;
}

int topo_wait_sync(topo *t, size_t m, long timeout_ms)
{
    char *v = quiet_info(t, m, "replication", "master_repl_offset");
    long long target = v != NULL ? strtoll(v, NULL, 10) : -1;
    free(v);
    if (target < 0) {
        fprintf(stderr, "topo: no master_repl_offset from %s\n", t->proc[m].addr);
        return -1;
    }
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        int replicas = 0;
        bool ok = true;
        for (size_t i = 0; ok && i < t->n; i++) {
            if (i == m || t->proc[i].sentinel || t->proc[i].pid <= 0 || t->proc[i].paused
                || !info_is(t, i, "replication", "role", "slave")
                || info_long(t, i, "replication", "master_port") != t->proc[m].port)
                continue;
            v = quiet_info(t, i, "replication", "slave_repl_offset");
            ok = v != NULL && strtoll(v, NULL, 10) >= target
                 && info_is(t, i, "replication", "master_link_status", "up");
            free(v);
            replicas++;
        }
        if (ok)
            return replicas;
        if (now_ms() >= deadline) {
            fprintf(stderr, "topo: the replicas of %s are behind offset %lld after %ld ms\n",
                    t->proc[m].addr, target, timeout_ms);
            return -1;
        }
        sleep_ms(10);
    }
}

/* ---- processes ---- */

static bool usable(const topo *t, size_t i)
{
    return t->proc[i].pid > 0 && !t->proc[i].paused;
}

static int index_of_port(const topo *t, long port)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->proc[i].port == port)
            return (int)i;
    return -1;
}

/* Writes process i's config file (on its first start). */
static int write_conf(const topo *t, size_t i)
{
    const proc *p = &t->proc[i];
    FILE *f = fopen(p->conf, "w");
    if (f == NULL) {
        fprintf(stderr, "topo: cannot write %s: %s\n", p->conf, strerror(errno));
        return -1;
    }
    fprintf(f, "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s/%s.log\ndaemonize no\n"
            "protected-mode no\n", p->port, p->dir, p->dir, p->sentinel ? "sentinel" : "redis");
    if (p->sentinel) {
        int q = (int)((t->n - t->n_servers) / 2 + 1);
        fprintf(f, "sentinel monitor %s 127.0.0.1 %d %d\n", t->name, t->proc[0].port, q);
        fprintf(f, "sentinel down-after-milliseconds %s %d\n", t->name, DOWN_AFTER_MS);
        fprintf(f, "sentinel failover-timeout %s %d\n", t->name, FAILOVER_TIMEOUT_MS);
        fprintf(f, "sentinel parallel-syncs %s 1\n", t->name);
    } else {
        fprintf(f, "enable-debug-command yes\nappendonly yes\nappendfsync always\nsave \"\"\n"
                "repl-diskless-sync-delay 0\n");
        if (p->replica_of >= 0 && t->kind == SENTINEL_GROUP)
            fprintf(f, "replicaof 127.0.0.1 %d\n", t->proc[p->replica_of].port);
        if (t->kind == CLUSTER)
            fprintf(f, "cluster-enabled yes\ncluster-config-file nodes.conf\n"
                    "cluster-node-timeout %d\ncluster-port %d\n"
                    "cluster-allow-replica-migration no\nrepl-ping-replica-period 1\n",
                    CLUSTER_NODE_TIMEOUT_MS, p->bus_port);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static const char *binary(const char *env, const char *fallback)
{
    const char *b = getenv(env);
    return b != NULL && b[0] != '\0' ? b : fallback;
}

static void reap(proc *p, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    while (waitpid(p->pid, NULL, WNOHANG) == 0) {
        if (now_ms() >= deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, NULL, 0);
            break;
        }
        sleep_ms(5);
    }
    p->pid = 0;
    p->paused = false;
}

/* Starts process i from its config file and waits until it answers PING;
 * a sentinel then gets its shorter periods. */
static int start_proc(topo *t, size_t i)
{
    proc *p = &t->proc[i];
    const char *argv[12] = { binary("REDIS_SERVER", "redis-server"), p->conf };
    int argc = 2;
    if (p->sentinel)
        argv[argc++] = "--sentinel";
    if (p->no_data) {
        const char *extra[] = { "--save", "", "--appendonly", "no" };
        for (size_t j = 0; j < 4; j++)
            argv[argc++] = extra[j];
    }
    argv[argc] = NULL;
    p->pid = nodes_spawn(argv, NULL);
    if (p->pid < 0) {
        p->pid = 0;
        fprintf(stderr, "topo: cannot fork: %s\n", strerror(errno));
        return -1;
    }
    p->paused = false;
    long long deadline = now_ms() + READY_TIMEOUT_MS;
    while (now_ms() < deadline) {
        if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
            p->pid = 0;
            return -1; /* exited: port taken, or a bad binary or config */
        }
        if (answers_as_ours(t, i)) {
            if (!p->sentinel)
                return 0;
            redisReply *r = quiet_cmd(t, i, "SENTINEL DEBUG INFO-PERIOD %d PUBLISH-PERIOD %d "
                                      "PING-PERIOD %d ASK-PERIOD %d", SENTINEL_PERIOD_MS,
                                      SENTINEL_PERIOD_MS, SENTINEL_PING_MS, SENTINEL_ASK_MS);
            return check_reply(t, i, r, "SENTINEL DEBUG");
        }
        sleep_ms(10);
    }
    kill(p->pid, SIGKILL);
    reap(p, STOP_TIMEOUT_MS);
    return -1;
}

/* Process i's first start: free ports, its config file, and a few tries. */
static int first_start(topo *t, size_t i)
{
    proc *p = &t->proc[i];
    snprintf(p->dir, sizeof p->dir, "%s/%zu", t->dir, i);
    snprintf(p->conf, sizeof p->conf, "%s/%s.conf", p->dir, p->sentinel ? "sentinel" : "redis");
    mkdir(p->dir, 0700);
    for (int tries = 0; tries < START_TRIES; tries++) {
        p->port = free_port();
        p->bus_port = t->kind == CLUSTER ? free_port() : 0;
        if (p->port <= 0 || p->bus_port < 0 || p->bus_port == p->port
            || index_of_port(t, p->port) != (int)i)
            continue;
        snprintf(p->addr, sizeof p->addr, "127.0.0.1:%d", p->port);
        if (write_conf(t, i) == 0 && start_proc(t, i) == 0)
            return 0;
    }
    fprintf(stderr, "topo: %s %zu did not start; see %s\n", p->sentinel ? "sentinel" : "server",
            i, p->dir);
    return -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* SIGKILL: nothing of a topology is kept, and a server refuses SIGTERM
 * while it writes its first append-only file (after a full sync). */
static void stop_all(topo *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->proc[i].pid > 0)
            kill(t->proc[i].pid, SIGKILL);
    for (size_t i = 0; i < t->n; i++)
        if (t->proc[i].pid > 0)
            reap(&t->proc[i], STOP_TIMEOUT_MS);
    const char *keep = getenv("TOPO_KEEP");
    if (t->dir[0] != '\0' && keep != NULL && keep[0] != '\0' && strcmp(keep, "0") != 0)
        fprintf(stderr, "topo: kept %s (TOPO_KEEP)\n", t->dir);
    else if (t->dir[0] != '\0')
        nftw(t->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void stop_live_topos(void)
{
    for (topo *t = live_topos; t != NULL; t = t->next_live)
        stop_all(t);
}

static topo *topo_new(kind k, size_t n)
{
    if (!atexit_registered) {
        atexit(stop_live_topos);
        atexit_registered = 1;
    }
    topo *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->kind = k;
    t->n = n;
    t->proc = calloc(n, sizeof *t->proc);
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(t->dir, sizeof t->dir, "%s/redlock-topo-XXXXXX", tmp);
    if (t->proc == NULL || mkdtemp(t->dir) == NULL) {
        t->dir[0] = '\0';
        topo_free(t);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        t->proc[i].replica_of = -1;
    t->next_live = live_topos;
    live_topos = t;
    return t;
}

void topo_free(topo *t)
{
    if (t == NULL)
        return;
    stop_all(t);
    for (topo **p = &live_topos; *p != NULL; p = &(*p)->next_live) {
        if (*p == t) {
            *p = t->next_live;
            break;
        }
    }
    free(t->proc);
    free(t->uri);
    free(t);
}

/* "scheme://127.0.0.1:P,...suffix" over processes [from, to). */
static int make_uri(topo *t, const char *scheme, size_t from, size_t to, const char *suffix)
{
    size_t cap = strlen(scheme) + strlen(suffix) + (to - from) * 24 + 8;
    t->uri = malloc(cap);
    if (t->uri == NULL)
        return -1;
    size_t len = (size_t)snprintf(t->uri, cap, "%s://", scheme);
    for (size_t i = from; i < to; i++)
        len += (size_t)snprintf(t->uri + len, cap - len, "%s%s", i > from ? "," : "",
                                t->proc[i].addr);
    snprintf(t->uri + len, cap - len, "%s", suffix);
    return 0;
}

/* ---- Sentinel groups ---- */

size_t topo_sentinel(const topo *t, size_t j)
{
    return t->n_servers + j;
}

/* A flat map reply's field (SENTINEL MASTER), or NULL. */
static const char *map_field(const redisReply *r, const char *name)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, name) == 0
            && r->element[i + 1]->type == REDIS_REPLY_STRING)
            return r->element[i + 1]->str;
    return NULL;
}

/* The master's port sentinel s names, or -1. */
static int named_master_port(topo *t, size_t s)
{
    redisReply *r = quiet_cmd(t, s, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", t->name);
    int port = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2
        && r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r != NULL)
        freeReplyObject(r);
    return port;
}

int topo_sentinel_master(topo *t)
{
    int port = -1;
    for (size_t s = t->n_servers; s < t->n; s++) {
        if (!usable(t, s))
            continue;
        int p = named_master_port(t, s);
        if (p < 0 || (port >= 0 && p != port))
            return -1;
        port = p;
    }
    int i = port >= 0 ? index_of_port(t, port) : -1;
    return i >= 0 && (size_t)i < t->n_servers ? i : -1;
}

const char *topo_master_addr(topo *t)
{
    int m = topo_sentinel_master(t);
    if (m < 0)
        return NULL;
    snprintf(t->master_addr, sizeof t->master_addr, "%s", t->proc[m].addr);
    return t->master_addr;
}

/* Replica i replicates master m and is in sync. */
static bool replica_in_sync(topo *t, size_t i, size_t m)
{
    return info_is(t, i, "replication", "role", "slave")
           && info_long(t, i, "replication", "master_port") == t->proc[m].port
           && info_is(t, i, "replication", "master_link_status", "up");
}

/* Every sentinel names master m, knows the replicas and the other sentinels. */
static bool sentinels_settled(topo *t, size_t m)
{
    size_t replicas = t->n_servers - 1, others = t->n - t->n_servers - 1;
    for (size_t s = t->n_servers; s < t->n; s++) {
        if (!usable(t, s))
            continue;
        if (named_master_port(t, s) != t->proc[m].port)
            return false;
        redisReply *r = quiet_cmd(t, s, "SENTINEL MASTER %s", t->name);
        const char *flags = map_field(r, "flags"), *slaves = map_field(r, "num-slaves");
        const char *sentinels = map_field(r, "num-other-sentinels");
        bool ok = flags != NULL && strcmp(flags, "master") == 0 && slaves != NULL
                  && (size_t)atol(slaves) >= replicas && sentinels != NULL
                  && (size_t)atol(sentinels) == others;
        if (r != NULL)
            freeReplyObject(r);
        if (!ok)
            return false;
    }
    return true;
}

topo *topo_sentinel_start(size_t k_replicas, size_t k_sentinels, const char *name)
{
    if (k_sentinels == 0 || name == NULL || name[0] == '\0' || strlen(name) >= 64
        || strpbrk(name, " \t\r\n\"'") != NULL) {
        fprintf(stderr, "topo: a Sentinel group needs a sentinel and a plain name\n");
        return NULL;
    }
    topo *t = topo_new(SENTINEL_GROUP, 1 + k_replicas + k_sentinels);
    if (t == NULL)
        return NULL;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_servers = 1 + k_replicas;
    for (size_t i = 0; i < t->n; i++) {
        t->proc[i].sentinel = i >= t->n_servers;
        t->proc[i].replica_of = i > 0 && i < t->n_servers ? 0 : -1;
        if (first_start(t, i) != 0)
            goto fail;
    }
    char suffix[96];
    snprintf(suffix, sizeof suffix, "?sentinelMasterId=%s", name);
    if (make_uri(t, "redis-sentinel", t->n_servers, t->n, suffix) != 0)
        goto fail;
    long long deadline = now_ms() + SETTLE_TIMEOUT_MS;
    for (;;) {
        bool ok = sentinels_settled(t, 0);
        for (size_t i = 1; ok && i < t->n_servers; i++)
            ok = replica_in_sync(t, i, 0);
        if (ok)
            return t;
        if (now_ms() >= deadline) {
            fprintf(stderr, "topo: the Sentinel group did not settle; see %s\n", t->dir);
            goto fail;
        }
        sleep_ms(50);
    }
fail:
    topo_free(t);
    return NULL;
}

int topo_sentinel_wait_new_master(topo *t, int old, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        int m = topo_sentinel_master(t);
        bool ok = m >= 0 && m != old && usable(t, (size_t)m)
                  && info_is(t, (size_t)m, "replication", "role", "master");
        for (size_t i = 0; ok && i < t->n_servers; i++)
            if ((int)i != m && usable(t, i))
                ok = replica_in_sync(t, i, (size_t)m);
        if (ok)
            return m;
        if (now_ms() >= deadline) {
            fprintf(stderr, "topo: no new master settled in %ld ms (sentinels name %d, "
                    "old %d)\n", timeout_ms, m, old);
            return -1;
        }
        sleep_ms(20);
    }
}

int topo_sentinel_failover(topo *t, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    int old = topo_sentinel_master(t);
    if (old < 0) {
        fprintf(stderr, "topo: the sentinels do not agree on a master\n");
        return -1;
    }
    for (;;) {
        size_t s = t->n_servers;
        while (s < t->n && !usable(t, s))
            s++;
        if (s == t->n) {
            fprintf(stderr, "topo: no sentinel runs\n");
            return -1;
        }
        redisReply *r = topo_cmd(t, s, "SENTINEL FAILOVER %s", t->name);
        bool retry = r != NULL && r->type == REDIS_REPLY_ERROR
                     && (strncmp(r->str, "INPROG", 6) == 0 || strncmp(r->str, "NOGOODSLAVE", 11) == 0);
        if (!retry || now_ms() >= deadline) {
            if (check_reply(t, s, r, "SENTINEL FAILOVER") != 0)
                return -1;
            break;
        }
        freeReplyObject(r);
        sleep_ms(100);
    }
    long left = (long)(deadline - now_ms());
    return topo_sentinel_wait_new_master(t, old, left > 0 ? left : 1);
}

/* ---- Clusters ---- */

const char *topo_cluster_id(const topo *t, size_t i)
{
    return t->proc[i].id;
}

/* Who serves each slot as node asker sees it (CLUSTER SLOTS): owners[s] is
 * a process number, or -1. With roles (see roles_now), also whether every
 * range's master is a master now and its replicas are exactly the servers
 * that replicate it in sync. 0, or -1 when asker does not answer or its view
 * differs from roles. */
static int slot_owners_checked(topo *t, size_t asker, int *owners, const int *roles)
{
    redisReply *r = quiet_cmd(t, asker, "CLUSTER SLOTS");
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        if (r != NULL)
            freeReplyObject(r);
        return -1;
    }
    for (int s = 0; s < SLOTS; s++)
        owners[s] = -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3
            || e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
            continue;
        int owner = index_of_port(t, e->element[2]->element[1]->integer);
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer && s < SLOTS; s++)
            owners[s] = owner;
        if (roles == NULL)
            continue;
        if (owner < 0 || roles[owner] != -1) {
            rc = -1;
            break;
        }
        size_t listed = 0, want = 0;
        for (size_t j = 3; j < e->elements; j++) {
            const redisReply *n = e->element[j];
            int k = n->type == REDIS_REPLY_ARRAY && n->elements >= 2
                        ? index_of_port(t, n->element[1]->integer) : -1;
            if (k < 0 || roles[k] != owner)
                rc = -1;
            listed++;
        }
        for (size_t k = 0; k < t->n; k++)
            if (roles[k] == owner)
                want++;
        if (listed != want)
            rc = -1;
    }
    freeReplyObject(r);
    return rc;
}

static int slot_owners(topo *t, size_t asker, int *owners)
{
    return slot_owners_checked(t, asker, owners, NULL);
}

int topo_cluster_owner(topo *t, size_t asker, int slot)
{
    int owners[SLOTS];
    if (slot < 0 || slot >= SLOTS || slot_owners(t, asker, owners) != 0)
        return -1;
    return owners[slot];
}

int topo_cluster_keyslot(topo *t, size_t i, const char *key)
{
    redisReply *r = topo_cmd(t, i, "CLUSTER KEYSLOT %s", key);
    int slot = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    if (r != NULL)
        freeReplyObject(r);
    return slot;
}

/* Who replicates whom now, by each server's INFO replication: roles[i] is
 * i's master, -1 when i is a master, -2 when i does not run, is paused, or
 * is a replica out of sync. */
static void roles_now(topo *t, int *roles)
{
    for (size_t i = 0; i < t->n; i++) {
        roles[i] = -2;
        if (!usable(t, i))
            continue;
        char *role = quiet_info(t, i, "replication", "role");
        if (role != NULL && strcmp(role, "master") == 0) {
            roles[i] = -1;
        } else if (role != NULL && strcmp(role, "slave") == 0
                   && info_is(t, i, "replication", "master_link_status", "up")) {
            int m = index_of_port(t, info_long(t, i, "replication", "master_port"));
            roles[i] = m >= 0 ? m : -2;
        }
        free(role);
    }
}

/* Node k's CLUSTER NODES: every node known; every running server seen in
 * the role roles[] gives it, and not failing or in a handshake. */
static bool nodes_view_ok(topo *t, size_t k, const int *roles)
{
    redisReply *r = quiet_cmd(t, k, "CLUSTER NODES");
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        if (r != NULL)
            freeReplyObject(r);
        return false;
    }
    size_t lines = 0;
    bool ok = true;
    for (char *line = r->str; ok && line != NULL && *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end != NULL)
            *end = '\0';
        char id[48], addr[128], flags[128], master[48];
        if (sscanf(line, "%47s %127s %127s %47s", id, addr, flags, master) == 4) {
            lines++;
            int i = -1;
            for (size_t j = 0; j < t->n; j++)
                if (strcmp(t->proc[j].id, id) == 0)
                    i = (int)j;
            if (i < 0)
                ok = false;
            else if (!usable(t, (size_t)i))
                ;   /* down or paused: whatever the others think of it */
            else if (roles[i] == -2 || strstr(flags, "fail") || strstr(flags, "handshake")
                     || strstr(flags, "noaddr"))
                ok = false;
            else if (roles[i] >= 0)
                ok = strstr(flags, "slave") != NULL && strcmp(master, t->proc[roles[i]].id) == 0;
            else
                ok = strstr(flags, "master") != NULL;
        }
        line = end != NULL ? end + 1 : NULL;
    }
    freeReplyObject(r);
    return ok && lines == t->n;
}

/* Every running node says cluster_state:ok, sees every running server in
 * its present role (CLUSTER NODES, and CLUSTER SLOTS: each master with
 * exactly its replicas in sync), and agrees with the others on who serves
 * each slot (owners[], SLOTS entries). roles[]: as roles_now filled it. */
static bool cluster_settled(topo *t, int *roles, int *owners)
{
    int *other = malloc(SLOTS * sizeof *other);
    bool ok = other != NULL, have = false;
    roles_now(t, roles);
    for (size_t k = 0; ok && k < t->n; k++) {
        if (!usable(t, k))
            continue;
        if (roles[k] == -2) {
            ok = false;
            break;
        }
        redisReply *r = quiet_cmd(t, k, "CLUSTER INFO");
        char *state = r != NULL && r->type == REDIS_REPLY_STRING
                          ? text_field(r->str, "cluster_state") : NULL;
        ok = state != NULL && strcmp(state, "ok") == 0;
        free(state);
        if (r != NULL)
            freeReplyObject(r);
        ok = ok && nodes_view_ok(t, k, roles)
             && slot_owners_checked(t, k, have ? other : owners, roles) == 0;
        if (ok && have)
            ok = memcmp(owners, other, SLOTS * sizeof *owners) == 0;
        have = true;
    }
    free(other);
    return ok;
}

/* cluster_settled, repeated until it holds, and then until() too (NULL:
 * nothing more) with the roles and owners it saw. 0, or -1 after
 * timeout_ms with a line on stderr naming what. */
static int wait_settled(topo *t, long timeout_ms, const char *what,
                        bool (*until)(topo *, const int *, const int *, const void *),
                        const void *arg)
{
    int *roles = malloc(t->n * sizeof *roles), *owners = malloc(SLOTS * sizeof *owners);
    long long deadline = now_ms() + timeout_ms;
    int rc = -1;
    while (roles != NULL && owners != NULL) {
        if (cluster_settled(t, roles, owners) && (until == NULL || until(t, roles, owners, arg))) {
            rc = 0;
            break;
        }
        if (now_ms() >= deadline) {
            fprintf(stderr, "topo: %s did not settle in %ld ms; see %s\n", what, timeout_ms,
                    t->dir);
            break;
        }
        sleep_ms(20);
    }
    free(roles);
    free(owners);
    return rc;
}

int topo_cluster_wait_ok(topo *t, long timeout_ms)
{
    return wait_settled(t, timeout_ms, "the Cluster", NULL, NULL);
}

static int run_cluster_create(topo *t)
{
    const char **argv = calloc(t->n_masters + 6, sizeof *argv);
    if (argv == NULL)
        return -1;
    size_t argc = 0;
    argv[argc++] = binary("REDIS_CLI", "redis-cli");
    argv[argc++] = "--cluster";
    argv[argc++] = "create";
    for (size_t i = 0; i < t->n_masters; i++)
        argv[argc++] = t->proc[i].addr;
    argv[argc++] = "--cluster-yes";
    argv[argc] = NULL;
    char log[300];
    snprintf(log, sizeof log, "%s/cluster-create.log", t->dir);
    pid_t pid = nodes_spawn(argv, log);
    free(argv);
    if (pid < 0)
        return -1;
    int status = 0;
    long long deadline = now_ms() + SETTLE_TIMEOUT_MS;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        sleep_ms(20);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "topo: redis-cli --cluster create failed; see %s\n", log);
        return -1;
    }
    return 0;
}

/* Replica i joins the cluster and replicates its master. */
static int join_replica(topo *t, size_t i, long long deadline)
{
    const proc *m = &t->proc[t->proc[i].replica_of];
    if (topo_exec(t, i, "CLUSTER MEET 127.0.0.1 %d %d", m->port, m->bus_port) != 0)
        return -1;
    for (;;) {
        redisReply *r = topo_cmd(t, i, "CLUSTER REPLICATE %s", m->id);
        bool unknown = r != NULL && r->type == REDIS_REPLY_ERROR && now_ms() < deadline;
        if (!unknown)
            return check_reply(t, i, r, "CLUSTER REPLICATE");
        freeReplyObject(r);
        sleep_ms(50);
    }
}

/* The roles are those of want (an int array: each server's master, -1). */
static bool roles_are(topo *t, const int *roles, const int *owners, const void *want)
{
    (void)owners;
    return memcmp(roles, want, t->n * sizeof *roles) == 0;
}

topo *topo_cluster_start(size_t n_masters, size_t replicas_per_master)
{
    if (n_masters < 3) {
        fprintf(stderr, "topo: a Cluster needs 3 masters or more (redis-cli --cluster create)\n");
        return NULL;
    }
    topo *t = topo_new(CLUSTER, n_masters * (1 + replicas_per_master));
    if (t == NULL)
        return NULL;
    int *want = calloc(t->n, sizeof *want);
    if (want == NULL)
        goto fail;
    t->n_servers = t->n;
    t->n_masters = n_masters;
    t->per_master = replicas_per_master;
    for (size_t i = 0; i < t->n; i++) {
        t->proc[i].replica_of = i < n_masters ? -1 : (int)((i - n_masters) / replicas_per_master);
        want[i] = t->proc[i].replica_of;
        if (first_start(t, i) != 0)
            goto fail;
        redisReply *r = topo_cmd(t, i, "CLUSTER MYID");
        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len >= sizeof t->proc[i].id) {
            fprintf(stderr, "topo: no CLUSTER MYID from %s\n", t->proc[i].addr);
            if (r != NULL)
                freeReplyObject(r);
            goto fail;
        }
        snprintf(t->proc[i].id, sizeof t->proc[i].id, "%s", r->str);
        freeReplyObject(r);
    }
    if (make_uri(t, "redis-cluster", 0, t->n, "") != 0 || run_cluster_create(t) != 0)
        goto fail;
    long long deadline = now_ms() + SETTLE_TIMEOUT_MS;
    for (size_t i = n_masters; i < t->n; i++)
        if (join_replica(t, i, deadline) != 0)
            goto fail;
    long left = (long)(deadline - now_ms());
    if (wait_settled(t, left > 0 ? left : 1, "the new Cluster", roles_are, want) != 0)
        goto fail;
    free(want);
    return t;
fail:
    free(want);
    topo_free(t);
    return NULL;
}

int topo_cluster_migrate_begin(topo *t, int slot, size_t from, size_t to)
{
    if (topo_exec(t, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, t->proc[from].id) != 0)
        return -1;
    return topo_exec(t, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, t->proc[to].id);
}

int topo_cluster_migrate_keys(topo *t, int slot, size_t from, size_t to)
{
    int moved = 0;
    for (;;) {
        redisReply *keys = topo_cmd(t, from, "CLUSTER GETKEYSINSLOT %d 100", slot);
        if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
            check_reply(t, from, keys, "CLUSTER GETKEYSINSLOT");
            return -1;
        }
        if (keys->elements == 0) {
            freeReplyObject(keys);
            return moved;
        }
        size_t argc = 7 + keys->elements;
        const char **argv = calloc(argc, sizeof *argv);
        size_t *lens = calloc(argc, sizeof *lens);
        char port[16];
        snprintf(port, sizeof port, "%d", t->proc[to].port);
        const char *head[] = { "MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS" };
        redisReply *r = NULL;
        if (argv != NULL && lens != NULL) {
            for (size_t j = 0; j < 7; j++) {
                argv[j] = head[j];
                lens[j] = strlen(head[j]);
            }
            for (size_t j = 0; j < keys->elements; j++) {
                argv[7 + j] = keys->element[j]->str;
                lens[7 + j] = keys->element[j]->len;
            }
            r = topo_cmd_argv(t, from, (int)argc, argv, lens);
        }
        free(argv);
        free(lens);
        moved += (int)keys->elements;
        freeReplyObject(keys);
        if (check_reply(t, from, r, "MIGRATE") != 0)
            return -1;
    }
}

/* Every node sees slot want[0] on node want[1] (settled views agree). */
static bool slot_is_on(topo *t, const int *roles, const int *owners, const void *want)
{
    (void)t;
    (void)roles;
    const int *w = want;
    return owners[w[0]] == w[1];
}

int topo_cluster_migrate_end(topo *t, int slot, size_t from, size_t to, long timeout_ms)
{
    const char *to_id = t->proc[to].id;
    if (topo_exec(t, to, "CLUSTER SETSLOT %d NODE %s", slot, to_id) != 0
        || topo_exec(t, from, "CLUSTER SETSLOT %d NODE %s", slot, to_id) != 0)
        return -1;
    for (size_t k = 0; k < t->n; k++)
        if (k != from && k != to && usable(t, k)
            && info_is(t, k, "replication", "role", "master")
            && topo_exec(t, k, "CLUSTER SETSLOT %d NODE %s", slot, to_id) != 0)
            return -1;
    int want[2] = { slot, (int)to };
    return wait_settled(t, timeout_ms, "the slot's move", slot_is_on, want);
}

int topo_cluster_migrate(topo *t, int slot, size_t from, size_t to, long timeout_ms)
{
    if (topo_cluster_migrate_begin(t, slot, from, to) != 0
        || topo_cluster_migrate_keys(t, slot, from, to) < 0)
        return -1;
    return topo_cluster_migrate_end(t, slot, from, to, timeout_ms);
}

int topo_cluster_replica_of(topo *t, size_t m)
{
    for (size_t i = 0; i < t->n; i++)
        if (i != m && usable(t, i) && info_is(t, i, "replication", "role", "slave")
            && info_long(t, i, "replication", "master_port") == t->proc[m].port)
            return (int)i;
    return -1;
}

/* After a failover: the new master serves every slot its old master did,
 * and the old master, if it runs, is its replica. */
typedef struct failover_want {
    const int *before;
    int old, r;
} failover_want;

static bool failed_over(topo *t, const int *roles, const int *owners, const void *arg)
{
    const failover_want *w = arg;
    if (roles[w->r] != -1 || (usable(t, (size_t)w->old) && roles[w->old] != w->r))
        return false;
    for (int s = 0; s < SLOTS; s++)
        if (w->before[s] == w->old && owners[s] != w->r)
            return false;
    return true;
}

int topo_cluster_failover(topo *t, size_t r, long timeout_ms)
{
    int old = index_of_port(t, info_long(t, r, "replication", "master_port"));
    int *before = malloc(SLOTS * sizeof *before);
    int rc = -1;
    if (old < 0 || before == NULL)
        fprintf(stderr, "topo: %s is not a replica of ours\n", t->proc[r].addr);
    else if (slot_owners(t, r, before) == 0 && topo_exec(t, r, "CLUSTER FAILOVER") == 0) {
        failover_want want = { before, old, (int)r };
        rc = wait_settled(t, timeout_ms, "the failover", failed_over, &want);
    }
    free(before);
    return rc;
}

/* ---- both ---- */

const char *topo_uri(const topo *t)
{
    return t->uri;
}

size_t topo_count(const topo *t)
{
    return t->n;
}

bool topo_is_sentinel(const topo *t, size_t i)
{
    return t->proc[i].sentinel;
}

int topo_port(const topo *t, size_t i)
{
    return t->proc[i].port;
}

const char *topo_addr(const topo *t, size_t i)
{
    return t->proc[i].addr;
}

bool topo_is_running(const topo *t, size_t i)
{
    return t->proc[i].pid > 0;
}

bool topo_is_paused(const topo *t, size_t i)
{
    return t->proc[i].paused;
}

static int must_run(const topo *t, size_t i)
{
    if (i >= t->n || t->proc[i].pid <= 0) {
        fprintf(stderr, "topo: process %zu is not running\n", i);
        return -1;
    }
    return 0;
}

int topo_pause(topo *t, size_t i)
{
    if (must_run(t, i) != 0 || kill(t->proc[i].pid, SIGSTOP) != 0)
        return -1;
    t->proc[i].paused = true;
    return 0;
}

int topo_resume(topo *t, size_t i)
{
    if (must_run(t, i) != 0 || kill(t->proc[i].pid, SIGCONT) != 0)
        return -1;
    t->proc[i].paused = false;
    return 0;
}

int topo_kill(topo *t, size_t i)
{
    if (must_run(t, i) != 0)
        return -1;
    kill(t->proc[i].pid, SIGKILL);
    reap(&t->proc[i], STOP_TIMEOUT_MS);
    return 0;
}

int topo_restart(topo *t, size_t i, bool with_data)
{
    proc *p = &t->proc[i];
    if (i >= t->n || p->pid > 0) {
        fprintf(stderr, "topo: process %zu is already running\n", i);
        return -1;
    }
    if (!with_data && !p->sentinel) {
        char path[400];
        snprintf(path, sizeof path, "%s/appendonlydir", p->dir);
        nftw(path, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        snprintf(path, sizeof path, "%s/dump.rdb", p->dir);
        remove(path);
        p->no_data = true;
    }
    /* The port may linger for a moment after a kill: try a few times. */
    for (int tries = 0; tries < START_TRIES; tries++) {
        if (start_proc(t, i) == 0)
            return 0;
        sleep_ms(100);
    }
    fprintf(stderr, "topo: %s did not restart; see %s\n", p->addr, p->dir);
    return -1;
}
