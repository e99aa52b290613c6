/* events.c - a recorder of a client's events for the C tests (see events.h). */
#include "events.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodes.h"

typedef struct event {
    int level;
    char *name;
    char *message;
} event;

struct events {
    pthread_mutex_t mu;
    event *list;
    size_t n, cap;
};

static void on_event(void *data, int level, const char *name, const char *message)
{
    events *e = data;
    pthread_mutex_lock(&e->mu);
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        event *grown = realloc(e->list, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&e->mu);
            return;
        }
        e->list = grown;
        e->cap = cap;
    }
    e->list[e->n++] = (event){ level, strdup(name), strdup(message) };
    pthread_mutex_unlock(&e->mu);
}

events *events_new(void)
{
    events *e = calloc(1, sizeof *e);
    if (e)
        pthread_mutex_init(&e->mu, NULL);
    return e;
}

void events_clear(events *e)
{
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n; i++) {
        free(e->list[i].name);
        free(e->list[i].message);
    }
    e->n = 0;
    pthread_mutex_unlock(&e->mu);
}

void events_free(events *e)
{
    if (!e)
        return;
    events_clear(e);
    free(e->list);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

void events_record(events *e, redlock_ctx *ctx, int min_level)
{
    redlock_ctx_set_log(ctx, on_event, min_level, e);
}

size_t events_total(events *e)
{
    pthread_mutex_lock(&e->mu);
    size_t n = e->n;
    pthread_mutex_unlock(&e->mu);
    return n;
}

int events_line(events *e, size_t i, char *out, size_t len)
{
    int found = 0;
    pthread_mutex_lock(&e->mu);
    if (i < e->n) {
        snprintf(out, len, "%d %s: %s", e->list[i].level, e->list[i].name, e->list[i].message);
        found = 1;
    }
    pthread_mutex_unlock(&e->mu);
    return found;
}

static int matches(const event *ev, const char *name, const char *needle)
{
    return strcmp(ev->name, name) == 0 && (!needle || strstr(ev->message, needle));
}

size_t events_count(events *e, const char *name, const char *needle)
{
    size_t n = 0;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n; i++)
        n += matches(&e->list[i], name, needle);
    pthread_mutex_unlock(&e->mu);
    return n;
}

int events_find(events *e, const char *name, const char *needle, char *out, size_t len)
{
    int level = 0;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n && level == 0; i++) {
        if (matches(&e->list[i], name, needle)) {
            snprintf(out, len, "%s", e->list[i].message);
            level = e->list[i].level;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return level;
}

size_t events_wait(events *e, const char *name, const char *needle, long ms)
{
    long long deadline = now_ms() + ms;
    size_t n;
    while ((n = events_count(e, name, needle)) == 0 && now_ms() < deadline)
        sleep_ms(5);
    return n;
}
