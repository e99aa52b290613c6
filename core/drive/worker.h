/*
 * worker.h - a lazy worker thread, the one way the library runs a thread
 * of its own (the service thread, the client's thread of asynchronous
 * calls, the waker thread): started when there is work, ended by itself
 * when there is none, joined by whoever starts the next one or stops it.
 * Its owner guards it with its own mutex (with the owner's state), and wakes
 * it its own way (a pipe, a condition).
 */
#ifndef RL_WORKER_H
#define RL_WORKER_H

#include <pthread.h>
#include <stdbool.h>

typedef struct rl_worker {
    pthread_t thread;
    bool running;      /* the thread runs, or is about to */
    bool joinable;     /* a thread that ended is still to be joined */
    bool stopping;     /* its owner is going away: the thread ends, none starts */
} rl_worker;

/* All under the owner's mutex, but rl_worker_join.
 * rl_worker_start: starts the thread unless it runs, joining first the one
 * that ran before, with every signal blocked in it (they are the
 * application's): 0, ECANCELED once stopping, or pthread_create's error.
 * rl_worker_ended: said by the thread as it ends.
 * rl_worker_stop: no thread starts from now on; whether one is to be joined
 * (rl_worker_join, once the mutex is released and the thread woken).
 * rl_worker_is_self: whether the caller is the worker's thread.
 * rl_worker_forget: in a child after fork(), where the thread is not. */
int rl_worker_start(rl_worker *w, void *(*main)(void *), void *arg);
void rl_worker_ended(rl_worker *w);
bool rl_worker_stop(rl_worker *w);
void rl_worker_join(rl_worker *w);
bool rl_worker_is_self(const rl_worker *w);
void rl_worker_forget(rl_worker *w);

#endif /* RL_WORKER_H */
