/*
 * async.c - the asynchronous calls (redlock_lock_async, ...; their entry
 * points are calls.c's): one thread per client drives every call under way,
 * all in one poll loop, with the blocking driver's sockets and pools (io.h).
 * The thread starts with the first call and ends when none is left
 * (worker.h); callbacks run on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "async.h"
#include "clock.h"
#include "driver.h"
#include "io.h"
#include "keep.h"
#include "log.h"
#include "service.h"
#include "wake.h"

#define MAX_WAIT_MS 1000
#define LINGER_MS 2000

static void *async_main(void *arg);

typedef struct job {
    rl_op *op;
    bool is_lock;
    bool is_unlock;
    redlock_done_fn done;    /* NULL for a renewal */
    void *data;
    struct rl_watch **batch; /* the watches a renewal is for (rl_op_extend_many) */
    size_t n_batch;
    rl_waiter *waiter;       /* a lock waiting for a release (wake.c) */
    struct job *next;
} job;

/* The renewal of a watched handle (redlock_handle_watch). Linked in the
 * client's list and from its handle, under the client's mutex. */
typedef struct rl_watch {
    redlock_handle *h;
    redlock_lost_fn lost;
    void *data;
    rl_keep keep;            /* when to extend it, and whether it is lost */
    bool notifying;          /* its lost callback runs */
    bool over;               /* lost or stopped: no more extensions */
    bool free_handle;        /* free the handle once extending and notifying end */
    job *parked;             /* unlocks held back until the extension ends */
    struct rl_watch *next, **prev;   /* prev: the pointer to it, to unlink it at once */
    int64_t when;            /* its key in the heap: when its keep is to be asked next */
    size_t slot;             /* its place in the heap, NOT_QUEUED when not there */
} rl_watch;

#define NOT_QUEUED SIZE_MAX

/* A lost callback to make, outside the mutex. */
typedef struct notice {
    rl_watch *w;
    redlock_lost_fn lost;
    void *data;
    int status;
    char message[256];
    rl_keep_event ev;        /* the event of the loss */
    struct notice *next;
} notice;

/* A connection taken back from a finished job with replies still owed: it
 * is read until they are in (a late reply may call for a release: an
 * acquire that lands after its unlock is undone at once), or its deadline. */
typedef struct draining {
    rl_conn *c;
    int64_t until;
    struct draining *next;
} draining;

struct rl_async {
    pthread_mutex_t mu;
    job *submitted;          /* handed over, not yet taken by the thread */
    rl_worker worker;        /* the client's thread; stopping: the client is being freed */
    int wake[2];             /* a pipe: a byte in it wakes the thread */
    draining *drains;        /* the thread's own */
    rl_watch *watches;       /* every watch, over ones too, until dropped */
    /* The live watches by when each keep is to be asked next (a binary
     * min-heap on rl_watch.when): plan_watches looks only at those due, so
     * holding many locks costs nothing between their renewals. Room for
     * every watch is made when it is linked. */
    rl_watch **heap;
    size_t heap_n, heap_cap;
    pthread_cond_t changed;  /* a watch's extension or lost callback ended */
};

struct rl_async *rl_async_new(void)
{
    struct rl_async *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    if (pipe2(a->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(a);
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->changed, NULL);
    return a;
}

void rl_async_forget(struct rl_async *a)
{
    /* In a child after fork(): the parent's thread and its calls are not
     * here (their jobs are the parent's to finish). */
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->changed, NULL);
    a->submitted = NULL;
    rl_worker_forget(&a->worker);
    /* Renewing the parent's locks is the parent's work. */
    while (a->watches) {
        rl_watch *w = a->watches;
        a->watches = w->next;
        w->h->driver_data = NULL;
        free(w);
    }
    a->heap_n = 0;
}

static void wake(struct rl_async *a)
{
    char byte = 1;
    ssize_t w = write(a->wake[1], &byte, 1);
    (void)w;   /* a full pipe wakes the thread as well */
}

static void empty_pipe(struct rl_async *a)
{
    char buf[64];
    while (read(a->wake[0], buf, sizeof buf) > 0) {
    }
}

void rl_async_free(rl_client *ctx, struct rl_async *a)
{
    (void)ctx;
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    bool join = rl_worker_stop(&a->worker);
    pthread_mutex_unlock(&a->mu);
    wake(a);
    if (join)
        rl_worker_join(&a->worker);
    /* Handles still watched (they should have been freed first) keep no
     * pointer into the client. */
    while (a->watches) {
        rl_watch *w = a->watches;
        a->watches = w->next;
        w->h->driver_data = NULL;
        free(w);
    }
    free(a->heap);
    close(a->wake[0]);
    close(a->wake[1]);
    pthread_cond_destroy(&a->changed);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* ---- watches: the renewal of kept locks ---- */

/* Whether the caller is the client's thread (under the mutex). */
static bool on_client_thread(const struct rl_async *a)
{
    return rl_worker_is_self(&a->worker);
}

/* ---- the heap of watches by time (under the mutex) ---- */

static void heap_put(struct rl_async *a, size_t i, rl_watch *w)
{
    a->heap[i] = w;
    w->slot = i;
}

static void sift_up(struct rl_async *a, size_t i)
{
    rl_watch *w = a->heap[i];
    while (i > 0 && a->heap[(i - 1) / 2]->when > w->when) {
        heap_put(a, i, a->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_put(a, i, w);
}

static void sift_down(struct rl_async *a, size_t i)
{
    rl_watch *w = a->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= a->heap_n)
            break;
        if (c + 1 < a->heap_n && a->heap[c + 1]->when < a->heap[c]->when)
            c++;
        if (a->heap[c]->when >= w->when)
            break;
        heap_put(a, i, a->heap[c]);
        i = c;
    }
    heap_put(a, i, w);
}

/* Queues w to be asked at `when`, or moves it there. */
static void heap_set(struct rl_async *a, rl_watch *w, int64_t when)
{
    if (w->slot == NOT_QUEUED) {
        w->when = when;
        heap_put(a, a->heap_n++, w);   /* room was made when w was linked */
        sift_up(a, w->slot);
        return;
    }
    int64_t old = w->when;
    w->when = when;
    if (when < old)
        sift_up(a, w->slot);
    else
        sift_down(a, w->slot);
}

static void heap_remove(struct rl_async *a, rl_watch *w)
{
    size_t i = w->slot;
    if (i == NOT_QUEUED)
        return;
    w->slot = NOT_QUEUED;
    rl_watch *last = a->heap[--a->heap_n];
    if (last == w)
        return;
    heap_put(a, i, last);
    sift_up(a, i);
    sift_down(a, last->slot);
}

/* Links w first in the client's list and queues it; REDLOCK_ENOMEM when
 * the heap has no room for it. */
static int link_watch(struct rl_async *a, rl_watch *w)
{
    /* Only a watch linked here enters the heap anew (one taken out goes back
     * in its place, or for good once over): heap_n stays within heap_cap. */
    if (a->heap_n == a->heap_cap) {
        size_t cap = a->heap_cap ? 2 * a->heap_cap : 64;
        rl_watch **grown = realloc(a->heap, cap * sizeof *grown);
        if (!grown)
            return REDLOCK_ENOMEM;
        a->heap = grown;
        a->heap_cap = cap;
    }
    w->next = a->watches;
    w->prev = &a->watches;
    if (a->watches)
        a->watches->prev = &w->next;
    a->watches = w;
    w->slot = NOT_QUEUED;
    heap_set(a, w, rl_keep_when(&w->keep));
    return REDLOCK_OK;
}

/* Unlinks w and frees it (under the mutex): at once, however many locks
 * are kept. */
static void drop_watch(struct rl_async *a, rl_watch *w)
{
    heap_remove(a, w);
    *w->prev = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->h->driver_data = NULL;
    free(w);
}

/* Marks w lost (its keep says why) and queues its callback and event
 * (under the mutex). */
static void lose(rl_watch *w, const rl_keep_event *ev, notice **notices)
{
    w->over = true;
    w->h->lost = true;
    notice *n = calloc(1, sizeof *n);
    if (!n)
        return;   /* out of memory: the lost state is there to poll */
    *n = (notice){ .w = w, .lost = w->lost, .data = w->data, .status = w->keep.status,
                   .ev = *ev, .next = *notices };
    snprintf(n->message, sizeof n->message, "%s", w->keep.message);
    w->notifying = true;
    *notices = n;
}

/* Makes the lost callbacks, outside the mutex; a handle freed by its own
 * callback is freed once that returns. Each loss is an event first. */
static void notify(struct rl_async *a, notice *notices)
{
    while (notices) {
        notice *n = notices;
        notices = n->next;
        rl_keep_tell(n->w->h->ctx, &n->ev);
        if (n->lost)
            n->lost(n->data, n->w->h, n->status, n->message);
        pthread_mutex_lock(&a->mu);
        rl_watch *w = n->w;
        w->notifying = false;
        redlock_handle *doomed = NULL;
        if (w->free_handle && !w->keep.extending) {
            doomed = w->h;
            drop_watch(a, w);
        }
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->mu);
        rl_handle_free(doomed);
        free(n);
    }
}

/* Starts a renewal of the batch's watches (their keep said extend), as a
 * job added to *active; when it cannot be made, each keep is told. */
static void start_batch(rl_client *ctx, struct rl_async *a, rl_watch **batch, size_t n,
                        int64_t now, job **active, size_t *n_active, notice **notices)
{
    redlock_handle *hs[RL_KEEP_BATCH_LOCKS];
    for (size_t i = 0; i < n; i++)
        hs[i] = batch[i]->h;
    rl_op *op = NULL;
    job *j = malloc(sizeof *j);
    rl_watch **ws = j ? malloc(n * sizeof *ws) : NULL;
    int rc = ws ? rl_op_extend_many(&op, ctx, hs, n, now) : REDLOCK_ENOMEM;
    if (rc == REDLOCK_OK) {
        memcpy(ws, batch, n * sizeof *ws);
        *j = (job){ .op = op, .batch = ws, .n_batch = n, .next = *active };
        *active = j;
        (*n_active)++;
        return;
    }
    free(ws);
    free(j);
    const char *why = rc == REDLOCK_ENOMEM ? "out of memory" : rl_errmsg();
    for (size_t i = 0; i < n; i++) {
        rl_watch *w = batch[i];
        rl_keep_event ev = { 0 };
        int64_t at;
        rl_keep_extended(&w->keep, rc, why, now, &ev);
        if (rl_keep_next(&w->keep, now, &at, &ev) == RL_KEEP_LOST)
            lose(w, &ev, notices);
        else
            heap_set(a, w, at);   /* its retry */
    }
}

/* Starts the renewals that are due, in batches (one command per node for
 * up to RL_KEEP_BATCH_LOCKS locks or RL_KEEP_BATCH_KEYS keys), and marks
 * lost the watches whose validity ran out, adding renewal jobs to *active.
 * Returns when a watch next needs the thread (INT64_MAX: no live watch).
 * It looks only at the watches due (the heap's first). */
static int64_t plan_watches(rl_client *ctx, struct rl_async *a, bool stopping, int64_t now,
                            job **active, size_t *n_active)
{
    int64_t first = INT64_MAX;
    notice *notices = NULL;
    rl_watch *batch[RL_KEEP_BATCH_LOCKS];
    size_t n_batch = 0, n_keys = 0;
    pthread_mutex_lock(&a->mu);
    while (!stopping && a->heap_n > 0 && a->heap[0]->when <= now) {
        rl_watch *w = a->heap[0];
        heap_remove(a, w);
        if (w->over)
            continue;   /* stopped: it goes for good */
        rl_keep_event ev = { 0 };
        int64_t at;
        int what = rl_keep_next(&w->keep, now, &at, &ev);
        if (what == RL_KEEP_EXTEND) {
            size_t keys = w->h->keys->n;
            if (n_batch > 0 && (n_batch == RL_KEEP_BATCH_LOCKS
                                || n_keys + keys > RL_KEEP_BATCH_KEYS
                                || !rl_op_batches_with(batch[0]->h, w->h))) {
                start_batch(ctx, a, batch, n_batch, now, active, n_active, &notices);
                n_batch = n_keys = 0;
            }
            batch[n_batch++] = w;
            n_keys += keys;
        }
        if (what == RL_KEEP_LOST) {
            lose(w, &ev, &notices);
            continue;
        }
        heap_set(a, w, at);   /* extending: asked again when validity runs out */
    }
    if (n_batch > 0)
        start_batch(ctx, a, batch, n_batch, now, active, n_active, &notices);
    if (!stopping && a->heap_n > 0)
        first = a->heap[0]->when;
    pthread_mutex_unlock(&a->mu);
    notify(a, notices);
    return first;
}

/* A watch's renewal ended with status: the next one is planned, or the lock
 * is lost; unlocks that waited for it go on (under the mutex). Returns the
 * handle to free, if any. */
static redlock_handle *watch_renewed(struct rl_async *a, rl_watch *w, int status,
                                     const char *message, int64_t now, rl_keep_event *ev,
                                     notice **notices)
{
    redlock_handle *doomed = NULL;
    if (w->parked) {
        job *last = w->parked;
        while (last->next)
            last = last->next;
        last->next = a->submitted;
        a->submitted = w->parked;
        w->parked = NULL;
    }
    if (w->over) {
        w->keep.extending = false;
        if (w->free_handle && !w->notifying) {
            doomed = w->h;
            drop_watch(a, w);
        }
    } else {
        rl_keep_extended(&w->keep, status, message, now, ev);
        if (w->keep.status != REDLOCK_OK) {
            lose(w, ev, notices);
            ev->name = NULL;   /* told with the notice */
        } else {
            heap_set(a, w, rl_keep_when(&w->keep));
        }
    }
    return doomed;
}

/* A batch's renewal ended: each watch is told its lock's outcome. */
static void renewal_ended(rl_client *ctx, struct rl_async *a, job *j, int64_t now)
{
    notice *notices = NULL;
    size_t n = j->n_batch;
    redlock_handle **doomed = calloc(n, sizeof *doomed);
    rl_keep_event *evs = calloc(n, sizeof *evs);   /* renewal_failed, told unlocked */
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < n; i++) {
        const char *message = "";
        int status = rl_op_done(j->op) ? rl_op_many_status(j->op, i, &message)
                                       : rl_op_status(j->op);
        rl_keep_event one = { 0 };
        redlock_handle *h = watch_renewed(a, j->batch[i], status, message, now,
                                          evs ? &evs[i] : &one, &notices);
        if (doomed)
            doomed[i] = h;
        else
            rl_handle_free(h);   /* out of memory: freed under the mutex, with no I/O */
    }
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->mu);
    for (size_t i = 0; evs && i < n; i++)
        rl_keep_tell(ctx, &evs[i]);
    wake(a);
    for (size_t i = 0; doomed && i < n; i++)
        rl_handle_free(doomed[i]);
    free(doomed);
    free(evs);
    free(j->batch);
    notify(a, notices);
}

/* No extension of h starts from now on (an unlock is coming); one under way
 * holds the unlock back until it ends (see park). */
void rl_async_stop_renewals(redlock_handle *h)
{
    struct rl_async *a = rl_io_async(h->ctx);
    pthread_mutex_lock(&a->mu);
    if (h->driver_data)
        ((rl_watch *)h->driver_data)->over = true;
    pthread_mutex_unlock(&a->mu);
}

/* An unlock of a watched handle waits for the extension under way, if any,
 * and ends the watch (on the client's thread). True when j was parked. */
static bool park(struct rl_async *a, job *j)
{
    if (!j->is_unlock)
        return false;
    pthread_mutex_lock(&a->mu);
    rl_watch *w = rl_op_handle(j->op)->driver_data;   /* the mutex is held */
    bool parked = w && w->keep.extending;
    if (parked) {
        j->next = w->parked;
        w->parked = j;
    } else if (w && !w->notifying) {
        drop_watch(a, w);
    }
    pthread_mutex_unlock(&a->mu);
    return parked;
}

/* Starts the client's thread if it is not running (under the mutex). */
static int ensure_running(rl_client *ctx, struct rl_async *a)
{
    int err = rl_worker_start(&a->worker, async_main, ctx);
    if (err != 0)
        return rl_fail(REDLOCK_ESYSTEM, "cannot start the client's thread: error %d", err);
    return REDLOCK_OK;
}

int rl_async_watch(redlock_handle *h, redlock_lost_fn lost, void *data)
{
    int64_t now = rl_now_ms();
    if (!h->held || h->released || h->lost || h->expires_at <= now)
        return rl_fail(REDLOCK_ENOTHELD, "watch: the lock is not held");
    struct rl_async *a = rl_io_async(h->ctx);
    rl_watch *w = calloc(1, sizeof *w);
    if (!w)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    *w = (rl_watch){ .h = h, .lost = lost, .data = data };
    rl_keep_init(&w->keep, h, now);
    pthread_mutex_lock(&a->mu);
    int rc = h->driver_data ? rl_fail(REDLOCK_EINVAL, "watch: the lock is watched already")
                      : ensure_running(h->ctx, a);
    if (rc == REDLOCK_OK)
        rc = link_watch(a, w) == REDLOCK_OK ? REDLOCK_OK : rl_fail(REDLOCK_ENOMEM, "out of memory");
    /* The thread sleeps until the first watch is due: it needs waking only
     * when this one is due first (20,000 locks kept one after another would
     * otherwise wake it 20,000 times, for nothing). */
    bool first = rc == REDLOCK_OK && a->heap[0] == w;
    if (rc == REDLOCK_OK)
        h->driver_data = w;
    pthread_mutex_unlock(&a->mu);
    if (rc != REDLOCK_OK) {
        free(w);
        return rc;
    }
    if (first)
        wake(a);
    return REDLOCK_OK;
}

bool rl_async_unwatch(redlock_handle *h, bool freeing)
{
    struct rl_async *a = rl_io_async(h->ctx);
    pthread_mutex_lock(&a->mu);
    rl_watch *w = h->driver_data;
    bool now = true;
    if (w) {
        w->over = true;
        if (on_client_thread(a)) {
            /* From a callback: what runs on this thread cannot be waited
             * for; the handle is freed when it ends. */
            if (w->keep.extending || w->notifying) {
                w->free_handle = w->free_handle || freeing;
                now = !freeing;
            } else {
                drop_watch(a, w);
            }
        } else {
            while (w->keep.extending || w->notifying)
                pthread_cond_wait(&a->changed, &a->mu);
            drop_watch(a, w);
        }
    }
    pthread_mutex_unlock(&a->mu);
    return now;
}

/* Ends a job: its connections back, its callback, its op freed. */
static void finish(rl_client *ctx, struct rl_async *a, job *j, int64_t now)
{
    if (j->waiter)
        rl_waker_done(ctx, j->waiter, NULL, 0);
    rl_conn *c;
    while ((c = rl_op_take_conn(j->op)) != NULL) {
        draining *d = c->state == RL_CONN_OPEN && rl_conn_owed(c) > 0 ? malloc(sizeof *d) : NULL;
        if (!d) {
            rl_io_give(ctx, c, now);
            continue;
        }
        *d = (draining){ .c = c, .until = now + ctx->opt.node_timeout_ms, .next = a->drains };
        a->drains = d;
    }
    if (j->batch) {
        renewal_ended(ctx, a, j, now);
    } else {
        redlock_handle *h = rl_op_take_handle(j->op);
        j->done(j->data, rl_op_status(j->op), h, rl_op_message(j->op));
    }
    rl_op_free(j->op);
    free(j);
    rl_service_wake(ctx);
}

/* Writes what the op's open connections hold; false when one failed (it
 * was buried: the op has news). */
static bool flush_all(rl_client *ctx, rl_op *op, int64_t now)
{
    bool sound = true;
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, i);
        if (c && c->state == RL_CONN_OPEN && !rl_io_flush(c, now)) {
            rl_io_bury(ctx, c, now);
            sound = false;
        }
    }
    return sound;
}

/* Advances a job as far as it goes without waiting, as the engine says
 * (rl_op_drive). Returns when to wake for it, or INT64_MIN when it is over
 * (and was finished). */
static int64_t advance(rl_client *ctx, struct rl_async *a, job *j, bool stopping, int64_t now)
{
    rl_op *op = j->op;
    if (stopping)
        rl_op_cancel(op, now);   /* a waiting lock; others run to their end */
    int what;
    int64_t at;
    bool flushed = false;
    for (;;) {
        while ((what = rl_op_drive(op, now, &at)) & RL_DRIVE_CONNECT)
            rl_io_attach(ctx, op, now);
        if (!(what & RL_DRIVE_WRITE) || flushed)
            break;
        /* A connection that failed to write changes the op: it is driven
         * again. So is a decided op, whose tail may have been written. */
        flushed = flush_all(ctx, op, now);
        if (flushed && !(what & RL_DRIVE_DONE))
            break;
    }
    rl_io_give_spare(ctx, op, now);
    if (!(what & RL_DRIVE_DONE)) {
        if ((what & RL_DRIVE_AWAITS) && j->is_lock && !j->waiter)
            j->waiter = rl_waker_await(ctx, rl_op_keys(op));
        return at;
    }
    if (what & RL_DRIVE_TAIL)
        return at;
    finish(ctx, a, j, now);
    return INT64_MIN;
}

/* Gives back the draining connections that are done; returns when to wake
 * for the others (INT64_MAX: none left). */
static int64_t advance_drains(rl_client *ctx, struct rl_async *a, int64_t now)
{
    int64_t first = INT64_MAX;
    bool ended = false;
    for (draining **pp = &a->drains; *pp;) {
        draining *d = *pp;
        if (d->c->state == RL_CONN_OPEN && !rl_io_flush(d->c, now)) {
            rl_io_bury(ctx, d->c, now);
        } else if (rl_conn_owed(d->c) > 0 && now < d->until) {
            first = d->until < first ? d->until : first;
            pp = &d->next;
            continue;
        } else {
            rl_io_give(ctx, d->c, now);
        }
        *pp = d->next;
        free(d);
        ended = true;
    }
    /* A connection closed with replies still owed may leave releases owed
     * (owed.h): the service thread delivers them. */
    if (ended)
        rl_service_wake(ctx);
    return first;
}

/* Locks under way at once: as many as a node's pool holds connections, so
 * that they run on pooled connections; more wait their turn (their wait
 * counts from the call). Extends and unlocks always start at once: a lock
 * waiting for a release must never hold the release up. */
static size_t lock_places(const rl_client *ctx)
{
    return ctx->opt.pool_size > 0 ? (size_t)ctx->opt.pool_size : 1;
}

/* Whether a job's operation has a deadline (or another time) that has come. */
static bool any_due(job *active, int64_t now)
{
    for (job *j = active; j; j = j->next)
        if (!rl_op_done(j->op) && rl_op_wake_at(j->op) <= now)
            return true;
    return false;
}

/* Before the jobs' deadlines are judged, reads what their connections have
 * received already, without waiting: a reply that came within its deadline
 * counts, however long this thread was kept from reading it (a loaded
 * machine, a burst of renewals to start). Grows the poll arrays as needed.
 * Returns whether a connection was buried. */
static bool read_ready(rl_client *ctx, job *active, size_t n_active, int64_t now,
                       struct pollfd **pfd, rl_conn ***who, job ***waiting, size_t *cap)
{
    if (!any_due(active, now))
        return false;
    size_t need = 1 + n_active * (ctx->n_nodes + 1);
    if (need > *cap) {
        struct pollfd *p = realloc(*pfd, need * sizeof *p);
        if (p)
            *pfd = p;
        rl_conn **w = p ? realloc(*who, need * sizeof *w) : NULL;
        if (w)
            *who = w;
        job **wj = w ? realloc(*waiting, need * sizeof *wj) : NULL;
        if (!wj)
            return false;   /* out of memory: judged as they are */
        *waiting = wj;
        *cap = need;
    }
    size_t k = 0;
    for (job *j = active; j; j = j->next)
        k += rl_io_watch(ctx, j->op, rl_op_done(j->op), now, *pfd + k, *who + k);
    bool buried = false;
    if (k == 0 || poll(*pfd, k, 0) <= 0)
        return false;
    for (size_t i = 0; i < k; i++) {
        if ((*pfd)[i].revents && !rl_io_service((*who)[i], (*pfd)[i].revents, now)) {
            rl_io_bury(ctx, (*who)[i], now);
            buried = true;
        }
    }
    return buried;
}

static void *async_main(void *arg)
{
    rl_client *ctx = arg;
    struct rl_async *a = rl_io_async(ctx);
    job *active = NULL, *queued = NULL, **queued_end = &queued;
    size_t n_active = 0, n_locks = 0;
    int64_t idle_until = 0;   /* when an idle thread ends (0: not idle) */
    struct pollfd *pfd = NULL;
    rl_conn **who = NULL;
    job **waiting = NULL;   /* by poll entry, for the locks' waiter entries */
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        job *taken = a->submitted;
        a->submitted = NULL;
        bool stopping = a->worker.stopping;
        pthread_mutex_unlock(&a->mu);
        /* Submitted newest first: locks join the queue oldest first. */
        job *oldest_first = NULL;
        while (taken) {
            job *j = taken;
            taken = j->next;
            j->next = oldest_first;
            oldest_first = j;
        }
        while (oldest_first) {
            job *j = oldest_first;
            oldest_first = j->next;
            j->next = NULL;
            if (park(a, j)) {
                continue;
            } else if (j->is_lock) {
                *queued_end = j;
                queued_end = &j->next;
            } else {
                j->next = active;
                active = j;
                n_active++;
            }
        }
        while (queued && (n_locks < lock_places(ctx) || stopping)) {
            job *j = queued;
            if (!(queued = j->next))
                queued_end = &queued;
            j->next = active;
            active = j;
            n_active++;
            n_locks++;
        }
        int64_t now = rl_now_ms();
        int64_t wake_at = advance_drains(ctx, a, now);
        int64_t watch_at = plan_watches(ctx, a, stopping, now, &active, &n_active);
        if (watch_at < wake_at)
            wake_at = watch_at;
        pthread_mutex_lock(&a->mu);
        bool idle = !active && !a->submitted && !a->drains && watch_at == INT64_MAX;
        if (idle && (stopping || (idle_until != 0 && now >= idle_until))) {
            rl_worker_ended(&a->worker);
            pthread_mutex_unlock(&a->mu);
            break;
        }
        pthread_mutex_unlock(&a->mu);
        if (idle) {
            /* Nothing to do: the thread stays a while for the next call
             * (starting one costs more than a call), then ends. */
            if (idle_until == 0)
                idle_until = now + LINGER_MS;
            struct pollfd p = { .fd = a->wake[0], .events = POLLIN };
            if (poll(&p, 1, (int)(idle_until - now)) > 0)
                empty_pipe(a);
            continue;
        }
        idle_until = 0;

        if (wake_at > now + MAX_WAIT_MS)
            wake_at = now + MAX_WAIT_MS;
        if (read_ready(ctx, active, n_active, now, &pfd, &who, &waiting, &cap))
            rl_service_wake(ctx);
        for (job **pp = &active; *pp;) {
            job *j = *pp, *next = j->next;
            bool was_lock = j->is_lock;
            int64_t at = advance(ctx, a, j, stopping, now);   /* may free j */
            if (at == INT64_MIN) {
                *pp = next;
                n_active--;
                n_locks -= was_lock;
                continue;
            }
            if (at < wake_at)
                wake_at = at;
            pp = &j->next;
        }
        if (queued && n_locks < lock_places(ctx))
            continue;
        if (!active && !a->drains) {
            /* Only watches: wait for the next one's time, or a call. */
            struct pollfd p = { .fd = a->wake[0], .events = POLLIN };
            int64_t timeout = wake_at - now;
            if (poll(&p, 1, (int)(timeout < 0 ? 0 : timeout > MAX_WAIT_MS ? MAX_WAIT_MS
                                                                          : timeout)) > 0)
                empty_pipe(a);
            continue;
        }

        size_t n_drains = 0;
        for (draining *d = a->drains; d; d = d->next)
            n_drains++;
        size_t need = 1 + n_active * (ctx->n_nodes + 1) + n_drains;
        if (need > cap) {
            struct pollfd *p = realloc(pfd, need * sizeof *p);
            rl_conn **w = p ? realloc(who, need * sizeof *w) : NULL;
            job **wj = w ? realloc(waiting, need * sizeof *wj) : NULL;
            if (p)
                pfd = p;
            if (w)
                who = w;
            if (!wj) {
                /* Out of memory: wait a little, then try again. */
                poll(NULL, 0, 10);
                continue;
            }
            waiting = wj;
            cap = need;
        }
        pfd[0] = (struct pollfd){ .fd = a->wake[0], .events = POLLIN };
        size_t k = 1;
        for (job *j = active; j; j = j->next)
            k += rl_io_watch(ctx, j->op, rl_op_done(j->op), now, pfd + k, who + k);
        for (draining *d = a->drains; d; d = d->next) {
            pfd[k] = (struct pollfd){ .fd = (int)d->c->io, .events = rl_io_events(d->c) };
            who[k++] = d->c;
        }
        /* Then the locks that wait for a release: told, they try again. */
        size_t n_conns = k;
        for (job *j = active; j; j = j->next) {
            if (j->waiter) {
                pfd[k] = (struct pollfd){ .fd = rl_waiter_fd(j->waiter), .events = POLLIN };
                waiting[k++] = j;
            }
        }
        int64_t timeout = wake_at - now;
        timeout = timeout < 0 ? 0 : timeout > MAX_WAIT_MS ? MAX_WAIT_MS : timeout;
        int r = poll(pfd, k, (int)timeout);
        now = rl_now_ms();
        if (r <= 0)
            continue;
        if (pfd[0].revents)
            empty_pipe(a);
        for (size_t i = n_conns; i < k; i++)
            if (pfd[i].revents && rl_waiter_told(waiting[i]->waiter))
                rl_op_wake(waiting[i]->op, now);
        bool buried = false;
        for (size_t i = 1; i < n_conns; i++) {
            if (!pfd[i].revents || rl_io_service(who[i], pfd[i].revents, now))
                continue;
            /* A draining connection that broke leaves the list first. */
            for (draining **pp = &a->drains; *pp; pp = &(*pp)->next) {
                if ((*pp)->c == who[i]) {
                    draining *d = *pp;
                    *pp = d->next;
                    free(d);
                    break;
                }
            }
            rl_io_bury(ctx, who[i], now);
            buried = true;
        }
        if (buried)
            rl_service_wake(ctx);
    }
    free(pfd);
    free(who);
    free(waiting);
    return NULL;
}

/* Hands a job to the client's thread, starting it if it is not running. */
int rl_async_submit(rl_client *ctx, rl_op *op, bool is_lock, bool is_unlock, redlock_done_fn done,
                    void *data)
{
    struct rl_async *a = rl_io_async(ctx);
    job *j = malloc(sizeof *j);
    if (!j) {
        rl_op_free(op);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    *j = (job){ .op = op, .is_lock = is_lock, .is_unlock = is_unlock, .done = done, .data = data };
    pthread_mutex_lock(&a->mu);
    int rc = ensure_running(ctx, a);
    if (rc == REDLOCK_OK) {
        j->next = a->submitted;
        a->submitted = j;
    }
    pthread_mutex_unlock(&a->mu);
    if (rc != REDLOCK_OK) {
        rl_op_free(op);
        free(j);
        return rc;
    }
    wake(a);
    return REDLOCK_OK;
}
