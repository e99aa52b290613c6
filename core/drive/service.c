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

#define SERVICE_PERIOD_MS 100

static void *service_main(void *arg)
{
    rl_client *ctx = arg;
    struct rl_driver *d = rl_driver_of(ctx);
    pthread_mutex_lock(&d->service_mu);
    while (!d->service.stopping && rl_owed_any(ctx, SIZE_MAX)) {
        pthread_mutex_unlock(&d->service_mu);
        rl_op *op;
        if (rl_op_deliver(&op, ctx, rl_now_ms()) == REDLOCK_OK) {
            rl_run(ctx, op);
            rl_op_free(op);
        }
        pthread_mutex_lock(&d->service_mu);
        if (d->service.stopping || !rl_owed_any(ctx, SIZE_MAX))
            break;
        /* Nodes that did not answer are tried again a little later. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += SERVICE_PERIOD_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&d->service_cv, &d->service_mu, &until);
    }
    rl_worker_ended(&d->service);
    pthread_mutex_unlock(&d->service_mu);
    return NULL;
}

void rl_service_init(struct rl_driver *d)
{
    pthread_mutex_init(&d->service_mu, NULL);
    pthread_cond_init(&d->service_cv, NULL);
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
    pthread_mutex_init(&d->service_mu, NULL);
    pthread_cond_init(&d->service_cv, NULL);
    rl_worker_forget(&d->service);
}

/* Starts the service thread when releases are owed and it is not running. */
void rl_service_wake(rl_client *ctx)
{
    struct rl_driver *d = rl_driver_of(ctx);
    if (!rl_owed_any(ctx, SIZE_MAX))
        return;
    pthread_mutex_lock(&d->service_mu);
    rl_worker_start(&d->service, service_main, ctx);
    pthread_mutex_unlock(&d->service_mu);
}
