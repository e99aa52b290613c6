/* keeper.c - the kept locks of a driver, scheduled (see keeper.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "handle.h"
#include "keeper.h"

#define NOT_QUEUED SIZE_MAX
#define FIRST_BUCKETS 64

/* The lines a kept lock may stand in, one at a time. */
typedef enum line { LINE_NONE, LINE_READY, LINE_LOST, LINE_ENDED, N_LINES } line;

typedef struct run run;

/* One kept lock. */
typedef struct kept {
    uint64_t id;
    rl_keep keep;
    struct kept *chain;          /* the next in its bucket of the ids' table */
    int64_t when;                /* its key in the heap: when its keep is asked next */
    size_t slot;                 /* its place in the heap, NOT_QUEUED when not there */
    line in;                     /* ready: waits for a renewal; lost, ended: to be told */
    struct kept *prev, *next;    /* its neighbours in that line */
    run *run;                    /* the operation under way that extends it, or NULL */
    bool removed;                /* no more kept: freed once its run ended and was told */
    bool told_lost;              /* its loss was queued (once) */
} kept;

/* An operation of the keeper's under way: a renewal, or the owner's extension. */
struct run {
    rl_op *op;
    bool taken;                  /* handed to the driver */
    bool owner;                  /* the owner's extension (rl_keeper_extend) */
    size_t n;
    kept **locks;                /* the locks it extends, in the operation's order */
    run *next;
};

typedef struct queue {
    kept *first, *last;
} queue;

struct redlock_keeper {
    rl_client *ctx;
    kept **buckets;              /* the ids' table: n_buckets chains, a power of two */
    size_t n_buckets, n_kept;
    /* The kept locks by when each keep is to be asked next (a binary
     * min-heap on kept.when): a drive looks only at those due, so holding
     * many locks costs nothing between their renewals. */
    kept **heap;
    size_t heap_n, heap_cap;
    queue lines[N_LINES];
    run *runs;                   /* oldest first */
    size_t n_renewals;           /* renewals under way (the owner's extensions not counted) */
    rl_keeper_event *events, **events_end;
    bool halted;
};

/* ---- the ids' table ---- */

static size_t bucket_of(const rl_keeper *k, uint64_t id)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (k->n_buckets - 1);
}

static kept *find(const rl_keeper *k, uint64_t id)
{
    kept *e = k->buckets[bucket_of(k, id)];
    while (e && e->id != id)
        e = e->chain;
    return e;
}

static void link_id(rl_keeper *k, kept *e)
{
    kept **b = &k->buckets[bucket_of(k, e->id)];
    e->chain = *b;
    *b = e;
    k->n_kept++;
}

static void unlink_id(rl_keeper *k, kept *e)
{
    kept **pp = &k->buckets[bucket_of(k, e->id)];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    k->n_kept--;
}

/* Room for one more kept lock, in the table and the heap. */
static int make_room(rl_keeper *k)
{
    if (k->n_kept >= k->heap_cap) {
        size_t cap = 2 * k->heap_cap;
        kept **grown = realloc(k->heap, cap * sizeof *grown);
        if (!grown)
            return REDLOCK_ENOMEM;
        k->heap = grown;
        k->heap_cap = cap;
    }
    if (k->n_kept < k->n_buckets)
        return REDLOCK_OK;
    size_t old_n = k->n_buckets;
    kept **old = k->buckets, **fresh = calloc(2 * old_n, sizeof *fresh);
    if (!fresh)
        return REDLOCK_ENOMEM;
    k->buckets = fresh;
    k->n_buckets = 2 * old_n;
    k->n_kept = 0;
    for (size_t i = 0; i < old_n; i++) {
        for (kept *e = old[i], *next; e; e = next) {
            next = e->chain;
            link_id(k, e);
        }
    }
    free(old);
    return REDLOCK_OK;
}

/* ---- the heap of kept locks by time ---- */

static void heap_put(rl_keeper *k, size_t i, kept *e)
{
    k->heap[i] = e;
    e->slot = i;
}

static void sift_up(rl_keeper *k, size_t i)
{
    kept *e = k->heap[i];
    while (i > 0 && k->heap[(i - 1) / 2]->when > e->when) {
        heap_put(k, i, k->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_put(k, i, e);
}

static void sift_down(rl_keeper *k, size_t i)
{
    kept *e = k->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= k->heap_n)
            break;
        if (c + 1 < k->heap_n && k->heap[c + 1]->when < k->heap[c]->when)
            c++;
        if (k->heap[c]->when >= e->when)
            break;
        heap_put(k, i, k->heap[c]);
        i = c;
    }
    heap_put(k, i, e);
}

/* Queues e to be asked at `when`, or moves it there. The heap has room for
 * every kept lock (make_room). */
static void heap_set(rl_keeper *k, kept *e, int64_t when)
{
    if (e->slot == NOT_QUEUED) {
        e->when = when;
        heap_put(k, k->heap_n++, e);
        sift_up(k, e->slot);
        return;
    }
    int64_t old = e->when;
    e->when = when;
    if (when < old)
        sift_up(k, e->slot);
    else
        sift_down(k, e->slot);
}

static void heap_remove(rl_keeper *k, kept *e)
{
    size_t i = e->slot;
    if (i == NOT_QUEUED)
        return;
    e->slot = NOT_QUEUED;
    kept *last = k->heap[--k->heap_n];
    if (last == e)
        return;
    heap_put(k, i, last);
    sift_up(k, i);
    sift_down(k, last->slot);
}

/* ---- the lines ---- */

static void line_push(rl_keeper *k, kept *e, line l)
{
    queue *q = &k->lines[l];
    e->in = l;
    e->next = NULL;
    e->prev = q->last;
    if (q->last)
        q->last->next = e;
    else
        q->first = e;
    q->last = e;
}

/* Takes e out of its line, if it stands in one. */
static void line_take(rl_keeper *k, kept *e)
{
    if (e->in == LINE_NONE)
        return;
    queue *q = &k->lines[e->in];
    if (e->prev)
        e->prev->next = e->next;
    else
        q->first = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        q->last = e->prev;
    e->in = LINE_NONE;
    e->prev = e->next = NULL;
}

/* ---- the keeper ---- */

rl_keeper *rl_keeper_new(rl_client *ctx)
{
    rl_keeper *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->ctx = ctx;
    k->n_buckets = k->heap_cap = FIRST_BUCKETS;
    k->buckets = calloc(k->n_buckets, sizeof *k->buckets);
    k->heap = malloc(k->heap_cap * sizeof *k->heap);
    k->events_end = &k->events;
    if (!k->buckets || !k->heap) {
        rl_keeper_free(k);
        return NULL;
    }
    return k;
}

rl_client *rl_keeper_ctx(const rl_keeper *k)
{
    return k->ctx;
}

void rl_keeper_free(rl_keeper *k)
{
    if (!k)
        return;
    while (k->runs) {
        run *r = k->runs;
        k->runs = r->next;
        if (!r->taken)
            rl_op_free(r->op);
        free(r->locks);
        free(r);
    }
    for (size_t i = 0; k->buckets && i < k->n_buckets; i++) {
        for (kept *e = k->buckets[i], *next; e; e = next) {
            next = e->chain;
            free(e);
        }
    }
    for (kept *e = k->lines[LINE_ENDED].first, *next; e; e = next) {
        next = e->next;
        free(e);   /* out of the table already */
    }
    rl_keeper_tell(NULL, rl_keeper_events(k));
    free(k->buckets);
    free(k->heap);
    free(k);
}

static void queue_event(rl_keeper *k, const rl_keep_event *ev)
{
    if (!ev->name)
        return;
    rl_keeper_event *q = malloc(sizeof *q);
    if (!q)
        return;   /* out of memory: the event is not told */
    q->next = NULL;
    q->ev = *ev;
    *k->events_end = q;
    k->events_end = &q->next;
}

rl_keeper_event *rl_keeper_events(rl_keeper *k)
{
    rl_keeper_event *evs = k->events;
    k->events = NULL;
    k->events_end = &k->events;
    return evs;
}

void rl_keeper_tell(const rl_client *ctx, rl_keeper_event *evs)
{
    while (evs) {
        rl_keeper_event *next = evs->next;
        if (ctx)
            rl_keep_tell(ctx, &evs->ev);
        free(evs);
        evs = next;
    }
}

int rl_keeper_add(rl_keeper *k, uint64_t id, redlock_handle *h, int64_t now)
{
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "handle is NULL");
    if (h->ctx != k->ctx)
        return rl_fail(REDLOCK_EINVAL, "keeper: a lock of another client");
    if (id == 0 || find(k, id))
        return rl_fail(REDLOCK_EINVAL, "keeper: id %llu is %s", (unsigned long long)id,
                       id == 0 ? "not allowed" : "kept already");
    if (!h->held || h->released || h->lost || h->expires_at <= now)
        return rl_fail(REDLOCK_ENOTHELD, "keeper: the lock is not held");
    kept *e = make_room(k) == REDLOCK_OK ? calloc(1, sizeof *e) : NULL;
    if (!e)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    e->id = id;
    e->slot = NOT_QUEUED;
    rl_keep_init(&e->keep, h, now);
    link_id(k, e);
    heap_set(k, e, rl_keep_when(&e->keep));
    return REDLOCK_OK;
}

/* e's loss is to be told (once); a renewal it waited for is no longer due. */
static void found_lost(rl_keeper *k, kept *e)
{
    heap_remove(k, e);
    if (e->in == LINE_READY) {
        line_take(k, e);
        e->keep.extending = false;
    }
    if (!e->told_lost) {
        e->told_lost = true;
        line_push(k, e, LINE_LOST);
    }
}

int rl_keeper_remove(rl_keeper *k, uint64_t id)
{
    kept *e = find(k, id);
    if (!e || e->removed)
        return rl_fail(REDLOCK_EINVAL, "keeper: no lock is kept under id %llu",
                       (unsigned long long)id);
    heap_remove(k, e);
    if (e->in == LINE_READY)
        e->keep.extending = false;
    line_take(k, e);   /* a loss not yet told is told no more */
    if (e->run) {
        e->removed = true;
        return 1;
    }
    unlink_id(k, e);
    free(e);
    return 0;
}

void rl_keeper_halt(rl_keeper *k)
{
    k->halted = true;
}

/* The extension of e under way (or that could not start) ended with status. */
static void extended(rl_keeper *k, kept *e, int status, const char *message, int64_t now)
{
    e->run = NULL;
    if (e->removed) {
        e->keep.extending = false;
        unlink_id(k, e);
        line_push(k, e, LINE_ENDED);
        return;
    }
    rl_keep_event ev = { 0 };
    rl_keep_extended(&e->keep, status, message, now, &ev);
    queue_event(k, &ev);
    if (e->keep.status != REDLOCK_OK)
        found_lost(k, e);
    else
        heap_set(k, e, rl_keep_when(&e->keep));
}

/* Links r last among the runs. */
static void add_run(rl_keeper *k, run *r)
{
    run **pp = &k->runs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = r;
    for (size_t i = 0; i < r->n; i++)
        r->locks[i]->run = r;
    if (!r->owner)
        k->n_renewals++;
}

/* Starts a renewal of the batch; when it cannot be made, each keep is told. */
static void start_renewal(rl_keeper *k, kept **batch, size_t n, int64_t now)
{
    redlock_handle *hs[RL_KEEP_BATCH_LOCKS];
    for (size_t i = 0; i < n; i++)
        hs[i] = batch[i]->keep.h;
    rl_op *op = NULL;
    run *r = calloc(1, sizeof *r);
    kept **locks = r ? malloc(n * sizeof *locks) : NULL;
    int rc = locks ? rl_op_extend_many(&op, k->ctx, hs, n, now) : REDLOCK_ENOMEM;
    if (rc == REDLOCK_OK) {
        memcpy(locks, batch, n * sizeof *locks);
        *r = (run){ .op = op, .n = n, .locks = locks };
        add_run(k, r);
        return;
    }
    free(locks);
    free(r);
    char why[256];
    snprintf(why, sizeof why, "%s", rc == REDLOCK_ENOMEM ? "out of memory" : rl_errmsg());
    for (size_t i = 0; i < n; i++)
        extended(k, batch[i], rc, why, now);
}

/* Renewals under way at once: as many as a node's pool keeps connections,
 * so that they run on pooled connections. */
static size_t places(const rl_keeper *k)
{
    return k->ctx->opt.pool_size > 0 ? (size_t)k->ctx->opt.pool_size : 1;
}

/* Starts renewals of the locks waiting, while places are free: each takes
 * the first waiting and those after it that batch with it. */
static void start_renewals(rl_keeper *k, int64_t now)
{
    while (!k->halted && k->lines[LINE_READY].first && k->n_renewals < places(k)) {
        kept *batch[RL_KEEP_BATCH_LOCKS];
        size_t n = 0, n_keys = 0, looked = 0;
        redlock_handle *first = k->lines[LINE_READY].first->keep.h;
        for (kept *e = k->lines[LINE_READY].first, *next;
             e && n < RL_KEEP_BATCH_LOCKS && looked < RL_KEEPER_LOOK; e = next, looked++) {
            next = e->next;
            size_t keys = e->keep.h->keys->n;
            if (n > 0 && (n_keys + keys > RL_KEEP_BATCH_KEYS
                          || !rl_op_batches_with(first, e->keep.h)))
                continue;
            line_take(k, e);
            batch[n++] = e;
            n_keys += keys;
        }
        start_renewal(k, batch, n, now);
    }
}

int rl_keeper_drive(rl_keeper *k, int64_t now, int64_t *at)
{
    while (k->heap_n > 0 && k->heap[0]->when <= now) {
        kept *e = k->heap[0];
        redlock_handle *h = e->keep.h;
        if (k->halted && !e->keep.extending && h->expires_at > now) {
            heap_set(k, e, h->expires_at);   /* only its loss is looked for */
            continue;
        }
        rl_keep_event ev = { 0 };
        int64_t next;
        int what = rl_keep_next(&e->keep, now, &next, &ev);
        queue_event(k, &ev);
        if (what == RL_KEEP_LOST) {
            found_lost(k, e);
            continue;
        }
        if (what == RL_KEEP_EXTEND)
            line_push(k, e, LINE_READY);
        heap_set(k, e, next);   /* extending: asked again when validity runs out */
    }
    start_renewals(k, now);
    int bits = 0;
    for (const run *r = k->runs; r && !bits; r = r->next)
        bits = r->taken ? 0 : RL_KEEPER_RUN;
    if (k->lines[LINE_LOST].first)
        bits |= RL_KEEPER_LOST;
    if (k->lines[LINE_ENDED].first)
        bits |= RL_KEEPER_ENDED;
    if (at)
        *at = rl_keeper_at(k);
    return bits;
}

int64_t rl_keeper_at(const rl_keeper *k)
{
    return k->heap_n > 0 ? k->heap[0]->when : INT64_MAX;
}

rl_op *rl_keeper_take_op(rl_keeper *k)
{
    for (run *r = k->runs; r; r = r->next) {
        if (!r->taken) {
            r->taken = true;
            return r->op;
        }
    }
    return NULL;
}

int rl_keeper_op_ended(rl_keeper *k, rl_op *op, int64_t now)
{
    run **pp = &k->runs;
    while (*pp && ((*pp)->op != op || !(*pp)->taken))
        pp = &(*pp)->next;
    if (!*pp)
        return rl_fail(REDLOCK_EINVAL, "keeper: not one of its operations under way");
    run *r = *pp;
    *pp = r->next;
    if (!r->owner)
        k->n_renewals--;
    bool done = rl_op_done(op);
    bool each = done && !r->owner && rl_op_many_count(op) == r->n;
    for (size_t j = 0; j < r->n; j++) {
        const char *message = "the extension ended before it was decided";
        int status = REDLOCK_ENOQUORUM;
        if (r->owner && done) {
            status = rl_op_status(op);
            message = rl_op_message(op);
        } else if (each) {
            status = rl_op_many_status(op, j, &message);
        }
        extended(k, r->locks[j], status, message, now);
    }
    free(r->locks);
    free(r);
    return REDLOCK_OK;
}

uint64_t rl_keeper_next_lost(rl_keeper *k)
{
    kept *e = k->lines[LINE_LOST].first;
    if (!e)
        return 0;
    line_take(k, e);
    return e->id;
}

uint64_t rl_keeper_next_ended(rl_keeper *k)
{
    kept *e = k->lines[LINE_ENDED].first;
    if (!e)
        return 0;
    line_take(k, e);
    uint64_t id = e->id;
    free(e);
    return id;
}

int rl_keeper_status(const rl_keeper *k, uint64_t id, const char **message)
{
    const kept *e = find(k, id);
    if (!e || e->removed) {
        if (message)
            *message = "keeper: no lock is kept under that id";
        return REDLOCK_EINVAL;
    }
    if (message)
        *message = e->keep.message;
    return e->keep.status;
}

int rl_keeper_busy(const rl_keeper *k, uint64_t id)
{
    const kept *e = find(k, id);
    return e ? e->keep.extending : REDLOCK_EINVAL;
}

int rl_keeper_extend(rl_op **out, rl_keeper *k, uint64_t id, int64_t ttl_ms, int64_t now)
{
    *out = NULL;
    kept *e = find(k, id);
    if (!e || e->removed)
        return rl_fail(REDLOCK_EINVAL, "keeper: no lock is kept under id %llu",
                       (unsigned long long)id);
    if (e->keep.status != REDLOCK_OK)
        return rl_fail(REDLOCK_ENOTHELD, "the kept lock was lost: %s", e->keep.message);
    if (e->run)
        return rl_fail(REDLOCK_EINVAL, "keeper: an extension of the lock is under way");
    run *r = calloc(1, sizeof *r);
    kept **locks = r ? malloc(sizeof *locks) : NULL;
    if (!locks) {
        free(r);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    line_take(k, e);   /* a renewal it waited for: this extension serves */
    rl_keep_start(&e->keep);
    int rc = rl_op_extend(out, e->keep.h, ttl_ms, now);
    if (rc != REDLOCK_OK) {
        free(locks);
        free(r);
        char why[256];
        snprintf(why, sizeof why, "%s", rl_errmsg());
        extended(k, e, rc, why, now);
        return rl_fail(rc, "%s", why);
    }
    locks[0] = e;
    *r = (run){ .op = *out, .taken = true, .owner = true, .n = 1, .locks = locks };
    add_run(k, r);
    heap_set(k, e, rl_keep_when(&e->keep));
    return REDLOCK_OK;
}
