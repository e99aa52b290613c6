/*
 * async.c - the asynchronous calls (redlock_lock_async, ...; their entry
 * points are calls.c's): one thread per client drives every call under way,
 * all in one poll loop, with the blocking driver's sockets and pools (io.h),
 * and the renewals of the client's watched handles, which the engine's
 * keeper schedules (keeper.h, used under the mutex). The thread starts with
 * the first call and ends when none is left (worker.h); callbacks run on it.
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
#include "keeper.h"
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
    bool renewal;            /* the keeper's: its end is told to the keeper */
    redlock_done_fn done;    /* NULL for a renewal */
    void *data;
    rl_waiter *waiter;       /* a lock waiting for a release (wake.c) */
    struct job *next;
} job;

/* A watched handle (redlock_handle_watch), kept by the client's keeper
 * under the watch's address. Linked in the client's list and from its
 * handle, under the client's mutex. */
typedef struct rl_watch {
    redlock_handle *h;
    redlock_lost_fn lost;
    void *data;
    bool notifying;          /* its lost callback runs */
    bool over;               /* lost or stopped: no more extensions */
    bool removed;            /* out of the keeper */
    bool renewing;           /* removed with a renewal under way: the keeper tells its end */
    bool free_handle;        /* free the handle once renewing and notifying end */
    job *parked;             /* unlocks held back until the renewal ends */
    struct rl_watch *next, **prev;   /* prev: the pointer to it, to unlink it at once */
} rl_watch;

/* A lost callback to make, outside the mutex. */
typedef struct notice {
    rl_watch *w;
    redlock_lost_fn lost;
    void *data;
    int status;
    char message[256];
    struct notice *next;
} notice;

/* What the keeper told, to act on outside the mutex: its events, the lost
 * callbacks, and the watches whose handles are to be freed with them. */
typedef struct told {
    rl_keeper_event *events;
    notice *notices;
    rl_watch *doomed;
} told;

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
    rl_keeper *keeper;       /* the renewals of the watches: made with the first */
    pthread_cond_t changed;  /* a watch's renewal or lost callback ended */
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

/* Forgets every watch and the keeper (their handles stay). */
static void forget_watches(struct rl_async *a)
{
    while (a->watches) {
        rl_watch *w = a->watches;
        a->watches = w->next;
        w->h->driver_data = NULL;
        free(w);
    }
    rl_keeper_free(a->keeper);
    a->keeper = NULL;
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
    forget_watches(a);
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
    forget_watches(a);
    close(a->wake[0]);
    close(a->wake[1]);
    pthread_cond_destroy(&a->changed);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* ---- watches: the renewal of kept locks (under the mutex unless said) ---- */

/* Whether the caller is the client's thread. */
static bool on_client_thread(const struct rl_async *a)
{
    return rl_worker_is_self(&a->worker);
}

static uint64_t id_of(const rl_watch *w)
{
    return (uint64_t)(uintptr_t)w;
}

static rl_watch *watch_of(uint64_t id)
{
    return (rl_watch *)(uintptr_t)id;
}

/* Links w first in the client's list. */
static void link_watch(struct rl_async *a, rl_watch *w)
{
    w->next = a->watches;
    w->prev = &a->watches;
    if (a->watches)
        a->watches->prev = &w->next;
    a->watches = w;
}

/* Unlinks w from the list and its handle. */
static void unlink_watch(rl_watch *w)
{
    *w->prev = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->h->driver_data = NULL;
}

/* No extension of w starts from now on; one under way is told by the
 * keeper when it ends (w->renewing until then). */
static void stop(struct rl_async *a, rl_watch *w)
{
    w->over = true;
    if (!w->removed) {
        w->removed = true;
        w->renewing = rl_keeper_remove(a->keeper, id_of(w)) == 1;
    }
}

/* Ends w (stopped, no renewal under way) and frees it: at once, however
 * many locks are kept. */
static void drop_watch(struct rl_async *a, rl_watch *w)
{
    stop(a, w);
    unlink_watch(w);
    free(w);
}

/* Marks w lost (status, message: why), stops it, and queues its callback. */
static void lose(struct rl_async *a, rl_watch *w, int status, const char *message,
                 notice **notices)
{
    notice *n = calloc(1, sizeof *n);
    if (n) {
        *n = (notice){ .w = w, .lost = w->lost, .data = w->data, .status = status,
                       .next = *notices };
        snprintf(n->message, sizeof n->message, "%s", message);
    }
    stop(a, w);   /* message belonged to the keeper's record of w, gone now */
    w->h->lost = true;
    if (!n)
        return;   /* out of memory: the lost state is there to poll */
    w->notifying = true;
    *notices = n;
}

/* Takes what the keeper has to tell: each lock lost is marked and its
 * callback queued; each renewal ended after its watch stopped lets the
 * unlocks parked behind it go on, and frees its handle when that waited. */
static void collect(struct rl_async *a, told *t)
{
    uint64_t id;
    while ((id = rl_keeper_next_lost(a->keeper)) != 0) {
        const char *message;
        int status = rl_keeper_status(a->keeper, id, &message);
        lose(a, watch_of(id), status, message, &t->notices);
    }
    while ((id = rl_keeper_next_ended(a->keeper)) != 0) {
        rl_watch *w = watch_of(id);
        w->renewing = false;
        if (w->parked) {
            job *last = w->parked;
            while (last->next)
                last = last->next;
            last->next = a->submitted;
            a->submitted = w->parked;
            w->parked = NULL;
        }
        if (w->free_handle && !w->notifying) {
            unlink_watch(w);
            w->next = t->doomed;
            t->doomed = w;
        }
    }
    /* Newest last: the events of a collect after one not yet told follow. */
    rl_keeper_event **end = &t->events;
    while (*end)
        end = &(*end)->next;
    *end = rl_keeper_events(a->keeper);
    pthread_cond_broadcast(&a->changed);
}

/* Makes the lost callbacks, outside the mutex; a handle freed by its own
 * callback is freed once that returns. */
static void notify(struct rl_async *a, notice *notices)
{
    while (notices) {
        notice *n = notices;
        notices = n->next;
        if (n->lost)
            n->lost(n->data, n->w->h, n->status, n->message);
        pthread_mutex_lock(&a->mu);
        rl_watch *w = n->w;
        w->notifying = false;
        redlock_handle *doomed = NULL;
        if (w->free_handle && !w->renewing) {
            doomed = w->h;
            drop_watch(a, w);
        }
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->mu);
        rl_handle_free(doomed);
        free(n);
    }
}

/* Acts on what collect took, outside the mutex: the events first (a loss's
 * before its callback), the handles freed, then the callbacks. */
static void tell(rl_client *ctx, struct rl_async *a, told *t)
{
    rl_keeper_tell(ctx, t->events);
    while (t->doomed) {
        rl_watch *w = t->doomed;
        t->doomed = w->next;
        rl_handle_free(w->h);
        free(w);
    }
    notify(a, t->notices);
}

/* The renewals the keeper made, as jobs added to *active. */
static void take_renewals(struct rl_async *a, int64_t now, job **active, size_t *n_active)
{
    rl_op *op;
    while ((op = rl_keeper_take_op(a->keeper)) != NULL) {
        job *j = malloc(sizeof *j);
        if (!j) {
            /* Out of memory: given up, and each of its locks told so. */
            rl_keeper_op_ended(a->keeper, op, now);
            rl_op_free(op);
            continue;
        }
        *j = (job){ .op = op, .renewal = true, .next = *active };
        *active = j;
        (*n_active)++;
    }
}

/* Drives the keeper: the renewals it starts become jobs in *active, the
 * locks found lost are told. Returns when it next needs the thread
 * (INT64_MAX: no lock kept, or the client is being freed). */
static int64_t plan_watches(rl_client *ctx, struct rl_async *a, bool stopping, int64_t now,
                            job **active, size_t *n_active)
{
    int64_t first = INT64_MAX;
    told t = { 0 };
    pthread_mutex_lock(&a->mu);
    if (!stopping && a->keeper) {
        rl_keeper_drive(a->keeper, now, &first);
        take_renewals(a, now, active, n_active);
        collect(a, &t);
    }
    pthread_mutex_unlock(&a->mu);
    tell(ctx, a, &t);
    return first;
}

/* A renewal ended: the keeper tells each lock its outcome. */
static void renewal_ended(rl_client *ctx, struct rl_async *a, job *j, int64_t now)
{
    told t = { 0 };
    pthread_mutex_lock(&a->mu);
    rl_keeper_op_ended(a->keeper, j->op, now);
    collect(a, &t);
    pthread_mutex_unlock(&a->mu);
    wake(a);   /* the next renewal may start, parked unlocks go on */
    tell(ctx, a, &t);
}

/* No extension of h starts from now on (an unlock is coming); one under way
 * holds the unlock back until it ends (see park). */
void rl_async_stop_renewals(redlock_handle *h)
{
    struct rl_async *a = rl_io_async(h->ctx);
    pthread_mutex_lock(&a->mu);
    if (h->driver_data)
        stop(a, h->driver_data);
    pthread_mutex_unlock(&a->mu);
}

int rl_async_extend(rl_op **op, redlock_handle *h, int64_t ttl_ms, bool *kept)
{
    struct rl_async *a = rl_io_async(h->ctx);
    int rc = REDLOCK_OK;
    *kept = false;
    pthread_mutex_lock(&a->mu);
    rl_watch *w = h->driver_data;
    if (w && !on_client_thread(a)) {
        /* A lost callback may extend on the client's thread: not waited for. */
        while (!w->over && rl_keeper_busy(a->keeper, id_of(w)) == 1)
            pthread_cond_wait(&a->changed, &a->mu);
        if (!w->over) {
            rc = rl_keeper_extend(op, a->keeper, id_of(w), ttl_ms, rl_now_ms());
            *kept = rc == REDLOCK_OK;
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (rc != REDLOCK_OK)
        wake(a);   /* the keeper knows: the thread tells the loss */
    if (*kept || rc != REDLOCK_OK)
        return rc;
    return rl_op_extend(op, h, ttl_ms, rl_now_ms());
}

void rl_async_extended(redlock_handle *h, rl_op *op)
{
    struct rl_async *a = rl_io_async(h->ctx);
    pthread_mutex_lock(&a->mu);
    rl_keeper_op_ended(a->keeper, op, rl_now_ms());
    pthread_mutex_unlock(&a->mu);
    wake(a);   /* the thread takes what the keeper has to tell, and plans the next renewal */
}

/* An unlock of a watched handle waits for the renewal under way, if any,
 * and ends the watch (on the client's thread). True when j was parked. */
static bool park(struct rl_async *a, job *j)
{
    if (!j->is_unlock)
        return false;
    pthread_mutex_lock(&a->mu);
    rl_watch *w = rl_op_handle(j->op)->driver_data;   /* the mutex is held */
    if (w)
        stop(a, w);
    bool parked = w && w->renewing;
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
    pthread_mutex_lock(&a->mu);
    int rc = h->driver_data ? rl_fail(REDLOCK_EINVAL, "watch: the lock is watched already")
                      : ensure_running(h->ctx, a);
    if (rc == REDLOCK_OK && !a->keeper && !(a->keeper = rl_keeper_new(h->ctx)))
        rc = rl_fail(REDLOCK_ENOMEM, "out of memory");
    /* The thread sleeps until the first lock is due: it needs waking only
     * when this one is due first (20,000 locks kept one after another would
     * otherwise wake it 20,000 times, for nothing). */
    int64_t due = rc == REDLOCK_OK ? rl_keeper_at(a->keeper) : 0;
    if (rc == REDLOCK_OK)
        rc = rl_keeper_add(a->keeper, id_of(w), h, now);
    bool first = rc == REDLOCK_OK && rl_keeper_at(a->keeper) < due;
    if (rc == REDLOCK_OK) {
        link_watch(a, w);
        h->driver_data = w;
    }
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
        stop(a, w);
        if (on_client_thread(a)) {
            /* From a callback: what runs on this thread cannot be waited
             * for; the handle is freed when it ends. */
            if (w->renewing || w->notifying) {
                w->free_handle = w->free_handle || freeing;
                now = !freeing;
            } else {
                drop_watch(a, w);
            }
        } else {
            while (w->renewing || w->notifying)
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
    if (j->renewal) {
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
