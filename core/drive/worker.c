/* worker.c - a lazy worker thread (see worker.h). */
#include <errno.h>
#include <signal.h>

#include "worker.h"

int rl_worker_start(rl_worker *w, void *(*main)(void *), void *arg)
{
    if (w->running)
        return 0;
    if (w->stopping)
        return ECANCELED;
    if (w->joinable) {
        pthread_join(w->thread, NULL);
        w->joinable = false;
    }
    /* Signals are the application's: the thread blocks them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&w->thread, NULL, main, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    w->running = err == 0;
    return err;
}

void rl_worker_ended(rl_worker *w)
{
    w->running = false;
    w->joinable = true;
}

bool rl_worker_stop(rl_worker *w)
{
    w->stopping = true;
    return w->running || w->joinable;
}

void rl_worker_join(rl_worker *w)
{
    pthread_join(w->thread, NULL);
}

bool rl_worker_is_self(const rl_worker *w)
{
    return w->running && pthread_equal(w->thread, pthread_self());
}

void rl_worker_forget(rl_worker *w)
{
    w->running = w->joinable = false;
}
