/* hostile.c - a fake Redis node with hostile answers (see hostile.h). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

#define MAX_CONNS 64
#define MAX_ARGS 16

struct hostile {
    int listen_fd;
    char uri[64];
    pthread_t thread;
    atomic_bool stop;
    _Atomic int mode, guard;
    atomic_long drip_ms;
    atomic_size_t sent;
    pthread_mutex_t mu;
    pthread_t conns[MAX_CONNS];
    int fds[MAX_CONNS];
    size_t n_conns;
};

typedef struct conn_arg {
    hostile *h;
    int fd;
} conn_arg;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Sends all of buf; false once the client is gone or the node stops. */
static bool put(hostile *h, int fd, const char *buf, size_t len)
{
    while (len > 0) {
        if (atomic_load(&h->stop))
            return false;
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            return false;
        atomic_fetch_add(&h->sent, (size_t)w);
        buf += w;
        len -= (size_t)w;
    }
    return true;
}

static bool puts_(hostile *h, int fd, const char *s)
{
    return put(h, fd, s, strlen(s));
}

/* The honest reply a byte at a time, or a status line without end. */
static bool drip(hostile *h, int fd, const char *reply, long every_ms)
{
    for (size_t i = 0; reply ? reply[i] != '\0' : true; i++) {
        char c = reply ? reply[i] : (i == 0 ? '+' : 'A');
        if (!put(h, fd, &c, 1))
            return false;
        sleep_ms(every_ms);
    }
    return true;
}

/* Sends head, then `fill` (":1" elements for ':') until the client is gone. */
static bool endless(hostile *h, int fd, const char *head, char fill)
{
    char chunk[65536];
    if (!puts_(h, fd, head))
        return false;
    memset(chunk, fill, sizeof chunk);
    if (fill == ':')   /* ":1\r\n" elements */
        for (size_t i = 0; i + 4 <= sizeof chunk; i += 4)
            memcpy(chunk + i, ":1\r\n", 4);
    while (put(h, fd, chunk, sizeof chunk))
        ;
    return false;
}

/* Answers one lock command (or the guard) in `mode`; honest: its reply. */
static bool answer(hostile *h, int fd, int mode, const char *honest)
{
    switch ((hostile_mode)mode) {
    case HOSTILE_HONEST:       return puts_(h, fd, honest);
    case HOSTILE_HUGE_BULK:    return endless(h, fd, "$2000000000\r\n", 'x');
    case HOSTILE_HUGE_ARRAY:   return endless(h, fd, "*2147483647\r\n", ':');
    case HOSTILE_ENDLESS:      return endless(h, fd, "+", 'A');
    case HOSTILE_DRIP:         return drip(h, fd, honest, atomic_load(&h->drip_ms));
    case HOSTILE_DRIP_ENDLESS: return drip(h, fd, NULL, atomic_load(&h->drip_ms));
    case HOSTILE_NESTED: {
        for (int i = 0; i < 1000; i++)
            if (!puts_(h, fd, "*1\r\n"))
                return false;
        return puts_(h, fd, ":1\r\n");
    }
    case HOSTILE_INT_MAX:      return puts_(h, fd, ":9223372036854775807\r\n");
    case HOSTILE_INT_NEGATIVE: return puts_(h, fd, ":-9223372036854775808\r\n");
    case HOSTILE_INT_GARBAGE:  return puts_(h, fd, ":12abc\r\n");
    case HOSTILE_INT_HUGE:     return puts_(h, fd, ":99999999999999999999\r\n");
    }
    return false;
}

/* One command, its arguments NUL-terminated in args: the node's answer. */
static bool command(hostile *h, int fd, int argc, char **args)
{
    if (argc == 0)
        return true;
    const char *name = args[0];
    if (strcasecmp(name, "SCRIPT") == 0)
        return puts_(h, fd, "$40\r\n0123456789012345678901234567890123456789\r\n");
    if (strcasecmp(name, "INFO") == 0) {
        static const char info[] = "# Server\r\nredis_version:7.2.4\r\n"
                                   "run_id:abcdefabcdefabcdefabcdefabcdefabcdefabcd\r\n\r\n";
        char reply[256];
        snprintf(reply, sizeof reply, "$%zu\r\n%s\r\n", sizeof info - 1, info);
        return puts_(h, fd, reply);
    }
    if (strcasecmp(name, "PING") == 0)
        return puts_(h, fd, "+PONG\r\n");
    if (strcasecmp(name, "EVAL") == 0 && argc > 3 && strstr(args[3], "redlock:guard"))
        return answer(h, fd, atomic_load(&h->guard), ":0\r\n");
    if (strcasecmp(name, "SET") == 0)
        return answer(h, fd, atomic_load(&h->mode), "$-1\r\n");
    if (strcasecmp(name, "EVALSHA") == 0 || strcasecmp(name, "EVAL") == 0)
        return answer(h, fd, atomic_load(&h->mode), ":1\r\n");
    return puts_(h, fd, "+OK\r\n");
}

/* Parses whole commands (arrays of bulk strings) at the start of buf:
 * how many bytes they took, -1 on a protocol error. */
static long parse(hostile *h, int fd, char *buf, size_t len, bool *alive)
{
    size_t at = 0;
    while (at < len) {
        char *args[MAX_ARGS];
        size_t p = at;
        char *end = memchr(buf + p, '\n', len - p);
        if (!end)
            break;
        if (buf[p] != '*')
            return -1;
        long argc = strtol(buf + p + 1, NULL, 10);
        p = (size_t)(end - buf) + 1;
        bool whole = true;
        for (long i = 0; i < argc; i++) {
            end = p < len ? memchr(buf + p, '\n', len - p) : NULL;
            if (!end) {
                whole = false;
                break;
            }
            long n = strtol(buf + p + 1, NULL, 10);
            p = (size_t)(end - buf) + 1;
            if (p + (size_t)n + 2 > len) {
                whole = false;
                break;
            }
            if (i < MAX_ARGS)
                args[i] = buf + p;
            buf[p + (size_t)n] = '\0';
            p += (size_t)n + 2;
        }
        if (!whole)
            break;
        at = p;
        if (!command(h, fd, argc < MAX_ARGS ? (int)argc : MAX_ARGS, args)) {
            *alive = false;
            return (long)at;
        }
    }
    return (long)at;
}

static void *serve(void *arg)
{
    conn_arg a = *(conn_arg *)arg;
    free(arg);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    bool alive = buf != NULL;
    while (alive && !atomic_load(&a.h->stop)) {
        struct pollfd p = { .fd = a.fd, .events = POLLIN };
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t r = recv(a.fd, buf + len, cap - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        long used = parse(a.h, a.fd, buf, len, &alive);
        if (used < 0)
            break;
        memmove(buf, buf + used, len - (size_t)used);
        len -= (size_t)used;
        if (len == cap)
            break;
    }
    free(buf);
    shutdown(a.fd, SHUT_RDWR);
    return NULL;
}

static void *accepting(void *arg)
{
    hostile *h = arg;
    while (!atomic_load(&h->stop)) {
        struct pollfd p = { .fd = h->listen_fd, .events = POLLIN };
        if (poll(&p, 1, 100) <= 0)
            continue;
        int fd = accept(h->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        conn_arg *a = malloc(sizeof *a);
        pthread_mutex_lock(&h->mu);
        bool room = a && h->n_conns < MAX_CONNS;
        if (room) {
            *a = (conn_arg){ h, fd };
            room = pthread_create(&h->conns[h->n_conns], NULL, serve, a) == 0;
            if (room)
                h->fds[h->n_conns++] = fd;
        }
        pthread_mutex_unlock(&h->mu);
        if (!room) {
            free(a);
            close(fd);
        }
    }
    return NULL;
}

hostile *hostile_start(void)
{
    hostile *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    pthread_mutex_init(&h->mu, NULL);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof sa;
    h->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (h->listen_fd < 0 || bind(h->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0
        || listen(h->listen_fd, 16) != 0
        || getsockname(h->listen_fd, (struct sockaddr *)&sa, &sl) != 0
        || pthread_create(&h->thread, NULL, accepting, h) != 0) {
        if (h->listen_fd >= 0)
            close(h->listen_fd);
        free(h);
        return NULL;
    }
    snprintf(h->uri, sizeof h->uri, "redis://127.0.0.1:%d", ntohs(sa.sin_port));
    return h;
}

void hostile_free(hostile *h)
{
    if (!h)
        return;
    atomic_store(&h->stop, true);
    pthread_join(h->thread, NULL);
    for (size_t i = 0; i < h->n_conns; i++) {
        pthread_join(h->conns[i], NULL);
        close(h->fds[i]);
    }
    close(h->listen_fd);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

const char *hostile_uri(const hostile *h)
{
    return h->uri;
}

void hostile_set(hostile *h, hostile_mode mode, hostile_mode guard, long drip_ms)
{
    atomic_store(&h->mode, (int)mode);
    atomic_store(&h->guard, (int)guard);
    atomic_store(&h->drip_ms, drip_ms);
}

size_t hostile_sent(const hostile *h)
{
    return atomic_load(&((hostile *)h)->sent);
}
