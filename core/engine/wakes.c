/*
 * wakes.c - wake-ups on release, tended (wakes.h): each node's subscriber
 * through its states, the waiters' rules applied to what it hears.
 */
#include <stdlib.h>

#include "client.h"
#include "node.h"
#include "wakes.h"

typedef enum { SUB_NONE, SUB_CONNECTING, SUB_OPEN } sub_state;

struct redlock_waiters {
    const rl_client *client;         /* read only while lock calls wait: it may go first */
    size_t n_nodes;
    rl_waiters *waiters;
    struct {
        sub_state state;
        rl_sub *sub;
    } node[REDLOCK_MAX_NODES];
    uint64_t to_connect, to_close;   /* bit per node: told by the next calls */
};

rl_wakes *rl_wakes_new(const rl_client *c)
{
    rl_wakes *w = calloc(1, sizeof *w);
    if (!w || !(w->waiters = rl_waiters_new(c->n_nodes))) {
        free(w);
        return NULL;
    }
    w->client = c;
    w->n_nodes = c->n_nodes;
    return w;
}

void rl_wakes_free(rl_wakes *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_nodes; i++)
        rl_sub_free(w->node[i].sub);
    rl_waiters_free(w->waiters);
    free(w);
}

int rl_wakes_add(rl_wakes *w, uint64_t id, const rl_keys *keys)
{
    return rl_waiters_add(w->waiters, id, (const char *const *)keys->k, keys->n);
}

void rl_wakes_remove(rl_wakes *w, uint64_t id, int64_t now)
{
    rl_waiters_remove(w->waiters, id, now);
}

const char *rl_wakes_note(const rl_wakes *w)
{
    return rl_waiters_note(w->waiters);
}

/* Ends node i's subscriber: failed (broke, refused, never made) or closed
 * once idle. A connect not yet told is simply not told; otherwise the
 * driver is told to close it unless it reported it lost itself. */
static void end_sub(rl_wakes *w, size_t i, bool failed, bool told_lost, int64_t now)
{
    uint64_t bit = (uint64_t)1 << i;
    if (w->to_connect & bit)
        w->to_connect &= ~bit;
    else if (!told_lost)
        w->to_close |= bit;
    rl_sub_free(w->node[i].sub);
    w->node[i].sub = NULL;
    w->node[i].state = SUB_NONE;
    rl_waiters_closed(w->waiters, i, failed, now);
}

int rl_wakes_drive(rl_wakes *w, int64_t now, int64_t *at)
{
    int64_t idle_at = rl_waiters_idle_at(w->waiters);
    int64_t next = now >= idle_at ? INT64_MAX : idle_at;
    bool waiting = idle_at == INT64_MAX, output = false;
    for (size_t i = 0; i < w->n_nodes; i++) {
        if (now >= idle_at) {
            if (w->node[i].state != SUB_NONE)
                end_sub(w, i, false, false, now);
            continue;
        }
        if (w->node[i].state == SUB_NONE && waiting) {
            int64_t connect_at = rl_waiters_connect_at(w->waiters, i);
            if (now < connect_at) {
                next = connect_at < next ? connect_at : next;
                continue;
            }
            if (!(w->node[i].sub = rl_sub_new(&w->client->nodes[i].addr))) {
                rl_waiters_closed(w->waiters, i, true, now);   /* tried again after a pause */
                connect_at = rl_waiters_connect_at(w->waiters, i);
                next = connect_at < next ? connect_at : next;
                continue;
            }
            w->node[i].state = SUB_CONNECTING;
            w->to_connect |= (uint64_t)1 << i;
        }
        if (w->node[i].state == SUB_OPEN) {
            /* Out of memory, the waiters keep their timed retries. */
            (void)rl_waiters_match(w->waiters, i, w->node[i].sub);
            const char *bytes;
            output = output || rl_sub_output(w->node[i].sub, &bytes) > 0;
        }
    }
    if (at)
        *at = next;
    return (w->to_connect ? RL_WAKES_CONNECT : 0) | (output ? RL_WAKES_WRITE : 0)
           | (w->to_close ? RL_WAKES_CLOSE : 0)
           | (rl_waiters_woken(w->waiters) ? RL_WAKES_WAKE : 0);
}

/* The lowest node of *bits, taken out of it; -1 when none. */
static int take_bit(uint64_t *bits)
{
    if (!*bits)
        return -1;
    int i = __builtin_ctzll(*bits);
    *bits &= *bits - 1;
    return i;
}

int rl_wakes_next_connect(rl_wakes *w)
{
    return take_bit(&w->to_connect);
}

int rl_wakes_next_close(rl_wakes *w)
{
    return take_bit(&w->to_close);
}

void rl_wakes_connected(rl_wakes *w, size_t node)
{
    if (node < w->n_nodes && w->node[node].state == SUB_CONNECTING)
        w->node[node].state = SUB_OPEN;
}

void rl_wakes_lost(rl_wakes *w, size_t node, int64_t now)
{
    if (node < w->n_nodes && w->node[node].state != SUB_NONE)
        end_sub(w, node, true, true, now);
}

int rl_wakes_received(rl_wakes *w, size_t node, const char *bytes, size_t len, int64_t now)
{
    if (node >= w->n_nodes || w->node[node].state != SUB_OPEN)
        return REDLOCK_OK;   /* a connection ended already: nothing of it counts */
    rl_sub *sub = w->node[node].sub;
    bool broken = rl_sub_received(sub, bytes, len) != REDLOCK_OK;
    for (int event; !broken && (event = rl_sub_next(sub)) != RL_SUB_NONE;)
        broken = event < 0 || rl_waiters_event(w->waiters, node, event, rl_sub_channel(sub),
                                               rl_sub_text(sub));
    if (!broken)
        return REDLOCK_OK;
    end_sub(w, node, true, false, now);
    return REDLOCK_EREDIS;
}

size_t rl_wakes_output(const rl_wakes *w, size_t node, const char **bytes)
{
    *bytes = "";
    if (node >= w->n_nodes || w->node[node].state != SUB_OPEN)
        return 0;
    return rl_sub_output(w->node[node].sub, bytes);
}

void rl_wakes_wrote(rl_wakes *w, size_t node, size_t n)
{
    if (node < w->n_nodes && w->node[node].state == SUB_OPEN)
        rl_sub_wrote(w->node[node].sub, n);
}

uint64_t rl_wakes_next(rl_wakes *w)
{
    return rl_waiters_next(w->waiters);
}

bool rl_wakes_idle(const rl_wakes *w)
{
    if (rl_waiters_idle_at(w->waiters) == INT64_MAX || w->to_connect || w->to_close)
        return false;
    for (size_t i = 0; i < w->n_nodes; i++)
        if (w->node[i].state != SUB_NONE)
            return false;
    return true;
}
