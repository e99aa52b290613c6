/*
 * nodes.c - local redis-server processes for the C tests (see nodes.h).
 */
#include "nodes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TRIES 5
#define READY_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 10000
#define RAW_TIMEOUT_MS 10000

typedef struct node {
    pid_t pid; /* 0 when not running */
    int port;
    char dir[256];
    char socket[300];
    char uri[64];
    char unix_uri[320];
} node;

struct nodes {
    size_t n;
    char dir[128];
    char *password;
    const nodes_tls *tls;    /* NULL: plain TCP */
    node *node;
    const char **uris;
    nodes *next_live; /* in the list stopped at exit */
};

/* Every set not yet freed, so that an exit in the middle of a test still
 * stops the servers. Only the main thread starts and frees sets. */
static nodes *live_sets;
static int atexit_registered;

long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static struct timeval timeval_ms(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* A loopback port that nobody listens on right now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0
        && getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

/* Connects to node i over its unix socket, authenticated and in database db. */
static redisContext *raw_connect(const nodes *ns, size_t i, int db)
{
    const node *nd = &ns->node[i];
    redisContext *c = redisConnectUnixWithTimeout(nd->socket, timeval_ms(RAW_TIMEOUT_MS));
    if (c == NULL || c->err) {
        if (c != NULL)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, timeval_ms(RAW_TIMEOUT_MS));
    redisReply *r = NULL;
    if (ns->password != NULL) {
        r = redisCommand(c, "AUTH %s", ns->password);
        if (r == NULL || r->type == REDIS_REPLY_ERROR)
            goto fail;
        freeReplyObject(r);
    }
    if (db != 0) {
        r = redisCommand(c, "SELECT %d", db);
        if (r == NULL || r->type == REDIS_REPLY_ERROR)
            goto fail;
        freeReplyObject(r);
    }
    return c;
fail:
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return NULL;
}

static int answers_ping(const nodes *ns, size_t i)
{
    redisContext *c = raw_connect(ns, i, 0);
    if (c == NULL)
        return 0;
    redisReply *r = redisCommand(c, "PING");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

pid_t nodes_spawn(const char *const *argv, const char *out)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid; /* -1 on failure */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    int in = open("/dev/null", O_RDONLY);
    int fd = out != NULL ? open(out, O_WRONLY | O_CREAT | O_APPEND, 0600)
                         : open("/dev/null", O_WRONLY);
    if (in >= 0)
        dup2(in, STDIN_FILENO);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    /* Nothing else of the test's: a server that kept a copy of a relay's
     * or a client's socket would keep it open after the test closed it, and
     * its peer would never see the close. */
    long max = sysconf(_SC_OPEN_MAX);
    for (int i = STDERR_FILENO + 1; i < (max > 0 && max < 65536 ? max : 65536); i++)
        close(i);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* Whether the server takes --enable-debug-command (Redis 7.0 and later,
 * Valkey): Redis 6.2 has no such option, and runs DEBUG anyway. */
static bool has_debug_option(const char *server)
{
    static int known = -1;
    if (known >= 0)
        return known;
    char cmd[600], line[200] = "";
    snprintf(cmd, sizeof cmd, "'%s' --version 2>/dev/null", server);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (!fgets(line, sizeof line, p))
            line[0] = '\0';
        pclose(p);
    }
    const char *v = strstr(line, " v=");
    known = !(strstr(line, "Redis server") && v && atoi(v + 3) < 7);
    return known;
}

/* REDIS_NO_SCRIPTING: nodes that run no scripts. "lua": Valkey 9.1 with
 * its Lua engine unloaded (MODULE UNLOAD lua); "acl": the default user's
 * ACL without @scripting (no EVAL, EVALSHA, FCALL, SCRIPT, FUNCTION). */
enum { SCRIPTING, NO_LUA, NO_ACL };
static int no_scripting(void)
{
    const char *v = getenv("REDIS_NO_SCRIPTING");
    if (!v || !v[0] || strcmp(v, "0") == 0)
        return SCRIPTING;
    return strcmp(v, "acl") == 0 ? NO_ACL : NO_LUA;
}

/* Node i, just started, made to run no scripts as REDIS_NO_SCRIPTING says;
 * checked: EVAL is refused after. -1 when it cannot be. */
static int without_scripting(const nodes *ns, size_t i)
{
    int how = no_scripting();
    if (how == SCRIPTING)
        return 0;
    redisContext *c = raw_connect(ns, i, 0);
    if (!c)
        return -1;
    redisReply *r = how == NO_LUA ? redisCommand(c, "MODULE UNLOAD lua")
                                  : redisCommand(c, "ACL SETUSER default -@scripting");
    bool done = r && r->type == REDIS_REPLY_STATUS;
    if (!done)
        fprintf(stderr, "nodes: node %zu keeps its scripts (%s): %s\n", i,
                how == NO_LUA ? "MODULE UNLOAD lua" : "ACL SETUSER",
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no answer");
    freeReplyObject(r);
    r = done ? redisCommand(c, "EVAL %s 0", "return 1") : NULL;
    done = r && r->type == REDIS_REPLY_ERROR;
    if (r && !done)
        fprintf(stderr, "nodes: node %zu still runs EVAL\n", i);
    freeReplyObject(r);
    redisFree(c);
    return done ? 0 : -1;
}

/* Starts node i's process. */
static pid_t spawn_server(const nodes *ns, size_t i)
{
    const node *nd = &ns->node[i];
    const char *server = getenv("REDIS_SERVER");
    if (server == NULL || server[0] == '\0')
        server = "redis-server";
    char port[16], logfile[300];
    snprintf(port, sizeof(port), "%d", nd->port);
    snprintf(logfile, sizeof(logfile), "%s/redis.log", nd->dir);
    const char *argv[40] = {
        server, "--port", ns->tls ? "0" : port, "--bind", "127.0.0.1",
        "--unixsocket", nd->socket, "--unixsocketperm", "700",
        "--dir", nd->dir, "--logfile", logfile, "--daemonize", "no",
        "--save", "", "--appendonly", "no", "--protected-mode", "no",
    };
    size_t argc = 21;
    if (has_debug_option(server)) {
        argv[argc++] = "--enable-debug-command";
        argv[argc++] = "yes";
    }
    if (no_scripting() == NO_LUA) {   /* MODULE UNLOAD lua follows (without_scripting) */
        argv[argc++] = "--enable-module-command";
        argv[argc++] = "yes";
    }
    if (ns->password != NULL) {
        argv[argc++] = "--requirepass";
        argv[argc++] = ns->password;
    }
    if (ns->tls != NULL) {
        const char *tls[] = { "--tls-port", port, "--tls-cert-file", ns->tls->cert,
                              "--tls-key-file", ns->tls->key, "--tls-ca-cert-file", ns->tls->ca,
                              "--tls-auth-clients", ns->tls->auth_clients ? "yes" : "no" };
        for (size_t j = 0; j < sizeof tls / sizeof tls[0]; j++)
            argv[argc++] = tls[j];
    }
    argv[argc] = NULL;
    return nodes_spawn(argv, NULL);
}

static void reap(node *nd, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    while (waitpid(nd->pid, NULL, WNOHANG) == 0) {
        if (now_ms() >= deadline) {
            kill(nd->pid, SIGKILL);
            waitpid(nd->pid, NULL, 0);
            break;
        }
        sleep_ms(5);
    }
    nd->pid = 0;
}

/* Starts node i on its port and waits until it answers PING. */
static int start_node(nodes *ns, size_t i)
{
    node *nd = &ns->node[i];
    nd->pid = spawn_server(ns, i);
    if (nd->pid < 0) {
        nd->pid = 0;
        fprintf(stderr, "nodes: cannot fork: %s\n", strerror(errno));
        return -1;
    }
    long long deadline = now_ms() + READY_TIMEOUT_MS;
    while (now_ms() < deadline) {
        if (waitpid(nd->pid, NULL, WNOHANG) == nd->pid) {
            nd->pid = 0;
            return -1; /* exited: port taken, or a bad binary */
        }
        if (answers_ping(ns, i))
            return without_scripting(ns, i);
        sleep_ms(10);
    }
    kill(nd->pid, SIGKILL);
    reap(nd, STOP_TIMEOUT_MS);
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

static void stop_set(nodes *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        if (ns->node[i].pid > 0)
            kill(ns->node[i].pid, SIGTERM);
    for (size_t i = 0; i < ns->n; i++)
        if (ns->node[i].pid > 0)
            reap(&ns->node[i], STOP_TIMEOUT_MS);
    if (ns->dir[0] != '\0')
        nftw(ns->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void stop_live_sets(void)
{
    for (nodes *ns = live_sets; ns != NULL; ns = ns->next_live)
        stop_set(ns);
}

static nodes *start_set(size_t n, const char *password, const nodes_tls *tls);

nodes *nodes_start(size_t n, const char *password)
{
    return start_set(n, password, NULL);
}

nodes *nodes_start_tls(size_t n, const nodes_tls *tls)
{
    return start_set(n, NULL, tls);
}

static char certs_dir[128];

static void remove_certs(void)
{
    nftw(certs_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

const char *nodes_certs(void)
{
    if (certs_dir[0] != '\0')
        return certs_dir;
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(certs_dir, sizeof certs_dir, "%s/redlock-certs-XXXXXX", tmp);
    if (mkdtemp(certs_dir) == NULL) {
        certs_dir[0] = '\0';
        return NULL;
    }
    atexit(remove_certs);
    char command[512];
    snprintf(command, sizeof command, "bash '%s' '%s'", REDLOCK_TLS_CERTS_SH, certs_dir);
    if (system(command) != 0) {
        fprintf(stderr, "nodes: %s failed\n", command);
        return NULL;
    }
    return certs_dir;
}

static nodes *start_set(size_t n, const char *password, const nodes_tls *tls)
{
    if (!atexit_registered) {
        atexit(stop_live_sets);
        atexit_registered = 1;
    }
    nodes *ns = calloc(1, sizeof(*ns));
    if (ns == NULL)
        return NULL;
    ns->n = n;
    ns->node = calloc(n, sizeof(*ns->node));
    ns->uris = calloc(n, sizeof(*ns->uris));
    ns->password = password != NULL ? strdup(password) : NULL;
    ns->tls = tls;
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(ns->dir, sizeof(ns->dir), "%s/redlock-test-XXXXXX", tmp);
    if (ns->node == NULL || ns->uris == NULL || (password != NULL && ns->password == NULL)
        || mkdtemp(ns->dir) == NULL) {
        ns->dir[0] = '\0';
        nodes_free(ns);
        return NULL;
    }
    ns->next_live = live_sets;
    live_sets = ns;

    for (size_t i = 0; i < n; i++) {
        node *nd = &ns->node[i];
        snprintf(nd->dir, sizeof(nd->dir), "%s/%zu", ns->dir, i);
        snprintf(nd->socket, sizeof(nd->socket), "%s/redis.sock", nd->dir);
        snprintf(nd->unix_uri, sizeof(nd->unix_uri), "unix://%s", nd->socket);
        mkdir(nd->dir, 0700);
        int started = -1;
        for (int tries = 0; tries < START_TRIES && started != 0; tries++) {
            nd->port = free_port();
            if (nd->port > 0)
                started = start_node(ns, i);
        }
        if (started != 0) {
            fprintf(stderr, "nodes: node %zu did not start; see %s/redis.log\n", i, nd->dir);
            nodes_free(ns);
            return NULL;
        }
        snprintf(nd->uri, sizeof(nd->uri), "%s://127.0.0.1:%d", tls ? "rediss" : "redis",
                 nd->port);
        ns->uris[i] = nd->uri;
    }
    if (nodes_record_group(ns) != 0) {
        nodes_free(ns);
        return NULL;
    }
    return ns;
}

void nodes_free(nodes *ns)
{
    if (ns == NULL)
        return;
    stop_set(ns);
    for (nodes **p = &live_sets; *p != NULL; p = &(*p)->next_live) {
        if (*p == ns) {
            *p = ns->next_live;
            break;
        }
    }
    free(ns->password);
    free(ns->node);
    free(ns->uris);
    free(ns);
}

size_t nodes_count(const nodes *ns)
{
    return ns->n;
}

int nodes_port(const nodes *ns, size_t i)
{
    return ns->node[i].port;
}

const char *nodes_uri(const nodes *ns, size_t i)
{
    return ns->node[i].uri;
}

const char *nodes_unix_uri(const nodes *ns, size_t i)
{
    return ns->node[i].unix_uri;
}

const char *nodes_socket(const nodes *ns, size_t i)
{
    return ns->node[i].socket;
}

const char *const *nodes_uris(const nodes *ns)
{
    return ns->uris;
}

int nodes_is_running(const nodes *ns, size_t i)
{
    return ns->node[i].pid > 0;
}

static int signal_node(nodes *ns, size_t i, int sig)
{
    node *nd = &ns->node[i];
    if (nd->pid <= 0) {
        fprintf(stderr, "nodes: node %zu is not running\n", i);
        return -1;
    }
    kill(nd->pid, sig);
    reap(nd, STOP_TIMEOUT_MS);
    return 0;
}

int nodes_stop(nodes *ns, size_t i)
{
    return signal_node(ns, i, SIGTERM);
}

int nodes_kill(nodes *ns, size_t i)
{
    return signal_node(ns, i, SIGKILL);
}

int nodes_restart(nodes *ns, size_t i)
{
    if (ns->node[i].pid > 0) {
        fprintf(stderr, "nodes: node %zu is already running\n", i);
        return -1;
    }
    /* The port may linger for a moment after a kill: try a few times. */
    for (int tries = 0; tries < START_TRIES; tries++) {
        if (start_node(ns, i) == 0)
            return 0;
        sleep_ms(100);
    }
    fprintf(stderr, "nodes: node %zu did not restart on port %d\n", i, ns->node[i].port);
    return -1;
}

int nodes_ensure_all_up(nodes *ns)
{
    for (size_t i = 0; i < ns->n; i++) {
        if (ns->node[i].pid <= 0 && nodes_restart(ns, i) != 0)
            return -1;
        if (!answers_ping(ns, i)) {
            fprintf(stderr, "nodes: node %zu does not answer PING\n", i);
            return -1;
        }
    }
    return nodes_record_group(ns);
}

/* Node i's run_id, into id (41 bytes); false when it cannot be read. */
static bool run_id_of(nodes *ns, size_t i, char id[41])
{
    redisReply *r = nodes_cmd(ns, i, "INFO server");
    bool ok = false;
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "run_id:") : NULL;
    if (at && strlen(at + 7) >= 40) {
        memcpy(id, at + 7, 40);
        id[40] = '\0';
        ok = true;
    }
    if (r)
        freeReplyObject(r);
    return ok;
}

int nodes_record_group(nodes *ns)
{
    return nodes_record_group_for(ns, "");
}

int nodes_record_group_for(nodes *ns, const char *key_prefix)
{
    char *ids = calloc(ns->n, 41);
    bool ok = ids != NULL;
    for (size_t i = 0; ok && i < ns->n; i++) {
        ok = run_id_of(ns, i, ids + i * 41);
        ids[i * 41 + 40] = i + 1 < ns->n ? ' ' : '\0';
    }
    for (size_t i = 0; ok && i < ns->n; i++) {
        redisReply *r = nodes_cmd(ns, i, "SET %sredlock:members %s", key_prefix, ids);
        ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
    }
    free(ids);
    if (!ok)
        fprintf(stderr, "nodes: the group's records could not be written\n");
    return ok ? 0 : -1;
}

int nodes_pause(nodes *ns, size_t i, long ms)
{
    redisReply *r = nodes_cmd(ns, i, "CLIENT PAUSE %ld ALL", ms);
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static redisReply *vcmd(nodes *ns, size_t i, int db, const char *fmt, va_list ap)
{
    redisContext *c = raw_connect(ns, i, db);
    if (c == NULL) {
        fprintf(stderr, "nodes: cannot connect to node %zu\n", i);
        return NULL;
    }
    redisReply *r = redisvCommand(c, fmt, ap);
    if (r == NULL)
        fprintf(stderr, "nodes: node %zu: %s\n", i, c->errstr);
    redisFree(c);
    return r;
}

redisReply *nodes_cmd(nodes *ns, size_t i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(ns, i, 0, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *nodes_cmd_db(nodes *ns, size_t i, int db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(ns, i, db, fmt, ap);
    va_end(ap);
    return r;
}

int nodes_exec(nodes *ns, size_t i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(ns, i, 0, fmt, ap);
    va_end(ap);
    int ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL && !ok)
        fprintf(stderr, "nodes: node %zu: %s\n", i, r->str);
    if (r != NULL)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

char *nodes_get_db(nodes *ns, size_t i, int db, const char *key)
{
    redisReply *r = nodes_cmd_db(ns, i, db, "GET %s", key);
    char *value = NULL;
    if (r != NULL && r->type == REDIS_REPLY_STRING)
        value = strdup(r->str);
    if (r != NULL)
        freeReplyObject(r);
    return value;
}

char *nodes_get(nodes *ns, size_t i, const char *key)
{
    return nodes_get_db(ns, i, 0, key);
}

static long long integer_reply(nodes *ns, size_t i, int db, const char *cmd, const char *key,
                               long long on_error)
{
    redisReply *r = nodes_cmd_db(ns, i, db, "%s %s", cmd, key);
    long long v = on_error;
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

int nodes_exists_db(nodes *ns, size_t i, int db, const char *key)
{
    return (int)integer_reply(ns, i, db, "EXISTS", key, -1);
}

int nodes_exists(nodes *ns, size_t i, const char *key)
{
    return nodes_exists_db(ns, i, 0, key);
}

long long nodes_pttl(nodes *ns, size_t i, const char *key)
{
    return integer_reply(ns, i, 0, "PTTL", key, -3);
}

size_t nodes_count_value(nodes *ns, const char *key, const char *value)
{
    size_t count = 0;
    for (size_t i = 0; i < ns->n; i++) {
        char *v = nodes_get(ns, i, key);
        if (v != NULL && strcmp(v, value) == 0)
            count++;
        free(v);
    }
    return count;
}

size_t nodes_count_exists(nodes *ns, const char *key)
{
    size_t count = 0;
    for (size_t i = 0; i < ns->n; i++)
        if (nodes_exists(ns, i, key) == 1)
            count++;
    return count;
}
