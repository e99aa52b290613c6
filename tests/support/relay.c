/* relay.c - a TCP relay for fault tests (see relay.h). */
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

#include "relay.h"

#define MAX_PAIRS 64
#define CHUNK 65536

typedef struct pair {
    int client, node;     /* -1 when closed */
    bool cut_armed;       /* this pair's next reply is dropped and the pair closed */
    char *held;           /* a reply held back by a stall */
    size_t held_len;
} pair;

struct relay {
    int listen_fd;
    int port, target;
    char uri[64];
    pthread_t thread;
    pthread_mutex_t mu;
    bool stop;
    bool cut_next;        /* the next client bytes arm a cut on their pair */
    bool stall_armed;     /* the next reply starts a stall */
    bool counting;        /* stall once `left` more client bytes are forwarded */
    size_t left;
    bool stalled;
    bool refusing;        /* down: connections closed as they come */
    pair pairs[MAX_PAIRS];
    int wake[2];          /* a pipe that wakes the thread when modes change */
    long long last_byte;  /* monotonic ms when bytes last passed */
};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_target(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void close_pair(pair *p)
{
    if (p->client >= 0)
        close(p->client);
    if (p->node >= 0)
        close(p->node);
    free(p->held);
    *p = (pair){ .client = -1, .node = -1 };
}

/* Writes all of buf to fd (blocking); false on failure. */
static bool write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        buf += w;
        len -= (size_t)w;
    }
    return true;
}

static void accept_one(relay *r)
{
    int c = accept(r->listen_fd, NULL, NULL);
    if (c < 0)
        return;
    if (r->refusing) {
        close(c);
        return;
    }
    int n = connect_target(r->target);
    for (int i = 0; n >= 0 && i < MAX_PAIRS; i++) {
        if (r->pairs[i].client < 0) {
            r->pairs[i] = (pair){ .client = c, .node = n };
            return;
        }
    }
    close(c);
    if (n >= 0)
        close(n);
}

/* Client bytes to the node, as many as the stall allows. */
static void from_client(relay *r, pair *p)
{
    char buf[CHUNK];
    size_t want = r->counting && r->left < sizeof buf ? r->left : sizeof buf;
    /* Never waiting here: a readiness seen by a poll that began before its
     * pair was closed and its slot taken again would block the relay for
     * every connection. */
    ssize_t n = recv(p->client, buf, want, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        close_pair(p);
        return;
    }
    r->last_byte = mono_ms();
    if (r->counting && (r->left -= (size_t)n) == 0) {
        r->counting = false;
        r->stalled = true;
    }
    if (r->cut_next) {
        r->cut_next = false;
        p->cut_armed = true;
    }
    if (!write_all(p->node, buf, (size_t)n))
        close_pair(p);
}

static void from_node(relay *r, pair *p)
{
    char buf[CHUNK];
    ssize_t n = recv(p->node, buf, sizeof buf, MSG_DONTWAIT);   /* as from_client */
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0 || p->cut_armed) {
        close_pair(p);
        return;
    }
    r->last_byte = mono_ms();
    if (r->stall_armed) {
        r->stall_armed = false;
        r->stalled = true;
        if ((p->held = malloc((size_t)n)) != NULL) {
            memcpy(p->held, buf, (size_t)n);
            p->held_len = (size_t)n;
        }
        return;
    }
    if (!write_all(p->client, buf, (size_t)n))
        close_pair(p);
}

static void *run(void *arg)
{
    relay *r = arg;
    struct pollfd pfd[2 * MAX_PAIRS + 2];
    pair *owner[2 * MAX_PAIRS + 2];
    bool is_client[2 * MAX_PAIRS + 2];
    for (;;) {
        pthread_mutex_lock(&r->mu);
        if (r->stop) {
            pthread_mutex_unlock(&r->mu);
            return NULL;
        }
        bool stalled = r->stalled;
        size_t k = 0;
        pfd[k++] = (struct pollfd){ .fd = r->listen_fd, .events = POLLIN };
        pfd[k++] = (struct pollfd){ .fd = r->wake[0], .events = POLLIN };
        for (int i = 0; i < MAX_PAIRS; i++) {
            pair *p = &r->pairs[i];
            if (p->client < 0 || stalled)
                continue;
            pfd[k] = (struct pollfd){ .fd = p->client, .events = POLLIN };
            owner[k] = p;
            is_client[k++] = true;
            pfd[k] = (struct pollfd){ .fd = p->node, .events = POLLIN };
            owner[k] = p;
            is_client[k++] = false;
        }
        pthread_mutex_unlock(&r->mu);
        if (poll(pfd, k, 100) <= 0)
            continue;
        pthread_mutex_lock(&r->mu);
        if (pfd[0].revents)
            accept_one(r);
        if (pfd[1].revents) {
            char drop[64];
            (void)!read(r->wake[0], drop, sizeof drop);
        }
        for (size_t j = 2; j < k; j++) {
            pair *p = owner[j];
            if (!pfd[j].revents || p->client < 0)
                continue;
            if (r->stalled)
                break;
            if (is_client[j])
                from_client(r, p);
            else
                from_node(r, p);
        }
        pthread_mutex_unlock(&r->mu);
    }
}

relay *relay_start(int port)
{
    relay *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->target = port;
    for (int i = 0; i < MAX_PAIRS; i++)
        r->pairs[i].client = r->pairs[i].node = -1;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    r->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    /* Small buffers, so that a stalled relay makes a client's writes back up soon. */
    int small = 16384;
    setsockopt(r->listen_fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0
        || listen(r->listen_fd, 64) != 0 || getsockname(r->listen_fd, (struct sockaddr *)&sa, &len)
        || pipe(r->wake) != 0) {
        fprintf(stderr, "relay: cannot listen: %s\n", strerror(errno));
        if (r->listen_fd >= 0)
            close(r->listen_fd);
        free(r);
        return NULL;
    }
    r->port = ntohs(sa.sin_port);
    snprintf(r->uri, sizeof r->uri, "redis://127.0.0.1:%d", r->port);
    pthread_mutex_init(&r->mu, NULL);
    pthread_create(&r->thread, NULL, run, r);
    return r;
}

static void poke(relay *r)
{
    (void)!write(r->wake[1], "x", 1);
}

void relay_free(relay *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_mutex_unlock(&r->mu);
    poke(r);
    pthread_join(r->thread, NULL);
    for (int i = 0; i < MAX_PAIRS; i++)
        close_pair(&r->pairs[i]);
    close(r->listen_fd);
    close(r->wake[0]);
    close(r->wake[1]);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

int relay_wait_quiet(relay *r, long quiet_ms)
{
    long long give_up = mono_ms() + 10000;
    while (mono_ms() < give_up) {
        pthread_mutex_lock(&r->mu);
        long long since = mono_ms() - r->last_byte;
        pthread_mutex_unlock(&r->mu);
        if (since >= quiet_ms)
            return 0;
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    return -1;
}

const char *relay_uri(const relay *r)
{
    return r->uri;
}

void relay_cut_next_reply(relay *r)
{
    pthread_mutex_lock(&r->mu);
    r->cut_next = true;
    pthread_mutex_unlock(&r->mu);
    poke(r);
}

void relay_stall_at_next_reply(relay *r)
{
    pthread_mutex_lock(&r->mu);
    r->stall_armed = true;
    pthread_mutex_unlock(&r->mu);
    poke(r);
}

void relay_stall_after(relay *r, size_t bytes)
{
    pthread_mutex_lock(&r->mu);
    r->counting = bytes > 0;
    r->left = bytes;
    r->stalled = bytes == 0;
    pthread_mutex_unlock(&r->mu);
    poke(r);
}

void relay_resume(relay *r)
{
    pthread_mutex_lock(&r->mu);
    r->stall_armed = r->stalled = r->counting = false;
    for (int i = 0; i < MAX_PAIRS; i++) {
        pair *p = &r->pairs[i];
        if (p->held && p->client >= 0 && !write_all(p->client, p->held, p->held_len))
            close_pair(p);
        if (p->held) {
            free(p->held);
            p->held = NULL;
        }
    }
    pthread_mutex_unlock(&r->mu);
    poke(r);
}

void relay_refuse(relay *r, int on)
{
    pthread_mutex_lock(&r->mu);
    r->refusing = on != 0;
    for (int i = 0; on && i < MAX_PAIRS; i++)
        close_pair(&r->pairs[i]);
    pthread_mutex_unlock(&r->mu);
    poke(r);
}
