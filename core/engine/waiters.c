/*
 * waiters.c - who is woken, and when (waiters.h): the waiters in the order
 * they came, the channels they wait for with their state on each node, and
 * the wake-ups owed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quorum.h"
#include "token.h"
#include "waiters.h"

/* A channel (a key's name) some waiter waits for, or some node is still
 * subscribed to. */
typedef struct channel {
    char *name;
    size_t waiters;                   /* how many registered waiters wait for it */
    uint64_t sent;                    /* nodes its SUBSCRIBE was queued on (bit per node) */
    char release[RL_TOKEN_LEN + 1];   /* the token of the release being told */
    uint64_t told_by;                 /* the nodes that told it (bit per node) */
    struct channel *next;
} channel;

typedef struct waiter {
    uint64_t id;
    channel **channels;
    size_t n;
    bool armed;                       /* woken once on a subscription confirmed */
    bool woken;                       /* to wake (rl_waiters_next) */
    struct waiter *next;
} waiter;

struct rl_waiters {
    size_t n_nodes;
    waiter *waiters, **waiters_end;   /* the longest waiting first */
    channel *channels;
    int64_t idle_at;
    int64_t connect_at[REDLOCK_MAX_NODES];
    uint64_t refused_by;              /* nodes whose refusal closes their connection */
    char note[256];
};

rl_waiters *rl_waiters_new(size_t n_nodes)
{
    rl_waiters *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->n_nodes = n_nodes;
    w->waiters_end = &w->waiters;
    w->idle_at = INT64_MIN;
    return w;
}

static void free_channel(channel *c)
{
    free(c->name);
    free(c);
}

void rl_waiters_free(rl_waiters *w)
{
    if (!w)
        return;
    while (w->waiters) {
        waiter *r = w->waiters;
        w->waiters = r->next;
        free(r->channels);
        free(r);
    }
    while (w->channels) {
        channel *c = w->channels;
        w->channels = c->next;
        free_channel(c);
    }
    free(w);
}

static channel *find(const rl_waiters *w, const char *name)
{
    for (channel *c = w->channels; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* Frees the channels nobody waits for and no node is subscribed to. */
static void prune(rl_waiters *w)
{
    for (channel **pp = &w->channels; *pp;) {
        channel *c = *pp;
        if (c->waiters > 0 || c->sent) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        free_channel(c);
    }
}

int rl_waiters_add(rl_waiters *w, uint64_t id, const char *const *keys, size_t n)
{
    waiter *r = calloc(1, sizeof *r);
    if (!r || !(r->channels = calloc(n ? n : 1, sizeof *r->channels))) {
        free(r);
        return REDLOCK_ENOMEM;
    }
    r->id = id;
    for (size_t i = 0; i < n; i++) {
        channel *c = find(w, keys[i]);
        if (!c) {
            c = calloc(1, sizeof *c);
            if (!c || !(c->name = strdup(keys[i]))) {
                free(c);
                break;
            }
            c->next = w->channels;
            w->channels = c;
        }
        c->waiters++;
        r->channels[r->n++] = c;
    }
    if (r->n < n) {
        for (size_t i = 0; i < r->n; i++)
            r->channels[i]->waiters--;
        prune(w);
        free(r->channels);
        free(r);
        return REDLOCK_ENOMEM;
    }
    *w->waiters_end = r;
    w->waiters_end = &r->next;
    w->idle_at = INT64_MAX;
    return REDLOCK_OK;
}

void rl_waiters_remove(rl_waiters *w, uint64_t id, int64_t now)
{
    for (waiter **pp = &w->waiters; *pp; pp = &(*pp)->next) {
        waiter *r = *pp;
        if (r->id != id)
            continue;
        *pp = r->next;
        if (w->waiters_end == &r->next)
            w->waiters_end = pp;
        for (size_t i = 0; i < r->n; i++)
            r->channels[i]->waiters--;
        free(r->channels);
        free(r);
        prune(w);
        break;
    }
    if (!w->waiters && w->idle_at == INT64_MAX)
        w->idle_at = now + RL_WAITERS_LINGER_MS;
}

int64_t rl_waiters_idle_at(const rl_waiters *w)
{
    return w->idle_at;
}

int64_t rl_waiters_connect_at(const rl_waiters *w, size_t node)
{
    return node < w->n_nodes ? w->connect_at[node] : INT64_MAX;
}

void rl_waiters_closed(rl_waiters *w, size_t node, bool failed, int64_t now)
{
    if (node >= w->n_nodes)
        return;
    uint64_t bit = (uint64_t)1 << node;
    for (channel *c = w->channels; c; c = c->next)
        c->sent &= ~bit;
    prune(w);
    w->connect_at[node] = !failed ? 0
        : now + (w->refused_by & bit ? RL_WAITERS_REFUSED_MS : RL_WAITERS_RECONNECT_MS);
    w->refused_by &= ~bit;
}

int rl_waiters_match(rl_waiters *w, size_t node, rl_sub *s)
{
    if (node >= w->n_nodes)
        return REDLOCK_OK;
    uint64_t bit = (uint64_t)1 << node;
    int rc = REDLOCK_OK;
    for (channel *c = w->channels; c; c = c->next) {
        bool wanted = c->waiters > 0, sent = (c->sent & bit) != 0;
        if (wanted == sent)
            continue;
        if (rl_sub_want(s, c->name, wanted) == REDLOCK_OK)
            c->sent ^= bit;
        else
            rc = REDLOCK_ENOMEM;   /* the waiters have their timed retries */
    }
    prune(w);
    return rc;
}

static bool waits_for(const waiter *r, const channel *c)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->channels[i] == c)
            return true;
    return false;
}

/* Whether a message of a release on c, from node, makes a waiter try
 * again: once a quorum of the nodes has told the release. */
static bool release_reached_quorum(const rl_waiters *w, channel *c, size_t node,
                                   const char *token)
{
    if (strncmp(c->release, token, RL_TOKEN_LEN) != 0) {
        snprintf(c->release, sizeof c->release, "%s", token);
        c->told_by = 0;
    }
    c->told_by |= (uint64_t)1 << node;
    return (size_t)__builtin_popcountll(c->told_by) >= rl_quorum(w->n_nodes);
}

bool rl_waiters_event(rl_waiters *w, size_t node, int event, const char *channel_name,
                      const char *text)
{
    if (node >= w->n_nodes)
        return false;
    if (event == RL_SUB_REFUSED) {
        snprintf(w->note, sizeof w->note, "waiters are not woken by releases, only by their "
                 "timed retries: a node refused SUBSCRIBE (%.120s)", text ? text : "");
        w->refused_by |= (uint64_t)1 << node;
        return true;
    }
    channel *c = channel_name ? find(w, channel_name) : NULL;
    if (!c || (event != RL_SUB_SUBSCRIBED && event != RL_SUB_MESSAGE)
        || (event == RL_SUB_MESSAGE && !release_reached_quorum(w, c, node, text ? text : "")))
        return false;
    for (waiter *r = w->waiters; r; r = r->next) {
        if (!waits_for(r, c))
            continue;
        if (event == RL_SUB_MESSAGE) {
            r->woken = true;   /* the one that has waited longest */
            break;
        }
        if (!r->armed)
            r->armed = r->woken = true;
    }
    return false;
}

uint64_t rl_waiters_next(rl_waiters *w)
{
    for (waiter *r = w->waiters; r; r = r->next) {
        if (r->woken) {
            r->woken = false;
            return r->id;
        }
    }
    return 0;
}

bool rl_waiters_woken(const rl_waiters *w)
{
    for (const waiter *r = w->waiters; r; r = r->next)
        if (r->woken)
            return true;
    return false;
}

const char *rl_waiters_note(const rl_waiters *w)
{
    return w->note;
}
