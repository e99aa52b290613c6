/*
 * service.c - the service thread: delivers releases owed to nodes (a failed
 * attempt's, or one cut off with its connection) while the client lives,
 * without waiting for the application's next call. Started when something
 * is owed, it ends when nothing is.
 */
#include <time.h>

#include "clock.h"
#include "driver.h"
#include "owed.h"
#include "run.h"
#include "service.h"

/* Waits on the condition until at (the monotonic clock's ms, as
 * rl_now_ms) at the latest, or until woken (under the mutex). */
static void wait_until(struct rl_driver *d, int64_t at)
{
    struct timespec until = { .tv_sec = (time_t)(at / 1000),
                              .tv_nsec = (long)(at % 1000) * 1000000L };
    d->service_until = at;
    pthread_cond_timedwait(&d->service_cv, &d->service_mu, &until);
    d->service_until = 0;
}

/* Delivers the releases owed when the engine says they are due
 * (rl_owed_at), and ends when none is owed. When they are next due is
 * asked under the mutex, so that a release owed from now on is seen
 * either there or by rl_service_wake, which takes the mutex to wake the
 * thread. */
static void *service_main(void *arg)
{
    rl_client *ctx = arg;
    struct rl_driver *d = rl_driver_of(ctx);
    pthread_mutex_lock(&d->service_mu);
    while (!d->service.stopping) {
        int64_t now = rl_now_ms();
        int64_t at = rl_owed_at(ctx, now);
        if (at == INT64_MAX)
            break;
        if (at > now) {
            wait_until(d, at);
            continue;
        }
        pthread_mutex_unlock(&d->service_mu);
        rl_op *op;
        if (rl_op_deliver(&op, ctx, now) == REDLOCK_OK) {
            rl_run(ctx, op);
            rl_op_free(op);
        } else {
            /* No memory for it: the nodes count as tried, and the engine
             * says when to try again. */
            for (size_t i = 0; i < ctx->n_nodes; i++)
                rl_owed_try(ctx, i, now);
        }
        pthread_mutex_lock(&d->service_mu);
    }
    rl_worker_ended(&d->service);
    pthread_mutex_unlock(&d->service_mu);
    return NULL;
}

/* The mutex, and the condition on the monotonic clock (rl_now_ms's). */
static void init(struct rl_driver *d)
{
    d->service_until = 0;
    pthread_mutex_init(&d->service_mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&d->service_cv, &attr);
    pthread_condattr_destroy(&attr);
}

void rl_service_init(struct rl_driver *d)
{
    init(d);
}

void rl_service_stop(struct rl_driver *d)
{
    pthread_mutex_lock(&d->service_mu);
    bool join = rl_worker_stop(&d->service);
    pthread_cond_broadcast(&d->service_cv);
    pthread_mutex_unlock(&d->service_mu);
    if (join)
        rl_worker_join(&d->service);
    pthread_mutex_destroy(&d->service_mu);
    pthread_cond_destroy(&d->service_cv);
}

void rl_service_forget(struct rl_driver *d)
{
    /* The parent's service thread does not exist here. */
    init(d);
    rl_worker_forget(&d->service);
}

/* Starts the service thread when releases are owed and it is not running;
 * when it waits, wakes it if a release owed since it looked is due sooner
 * than what it waits for (when it does not wait, it is about to look). */
void rl_service_wake(rl_client *ctx)
{
    struct rl_driver *d = rl_driver_of(ctx);
    if (!rl_owed_any(ctx, SIZE_MAX))
        return;
    pthread_mutex_lock(&d->service_mu);
    if (!d->service.running)
        rl_worker_start(&d->service, service_main, ctx);
    else if (d->service_until != 0 && rl_owed_at(ctx, rl_now_ms()) < d->service_until)
        pthread_cond_signal(&d->service_cv);
    pthread_mutex_unlock(&d->service_mu);
}
