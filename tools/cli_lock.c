/*
 * cli_lock.c - the lock: taken as the options say (plain, shared, fair or
 * a permit; a signal ends the wait), kept by the library while the command
 * runs (redlock_handle_watch), the command stopped when it is lost, and
 * released after; and the exit status each outcome gives.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"

/* The exit status for a failure to take the lock. */
static int acquire_failure_status(int rc, const struct config *cfg)
{
    return rc == REDLOCK_ELOCKED ? cfg->conflict_exit : failure_status(rc);
}

/* The lost lock, as the library's thread tells it (redlock_handle_watch):
 * its status and message, for the main loop, which a byte 0 in the
 * self-pipe wakes (no signal is numbered 0). */
static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static int lost_status;   /* REDLOCK_OK until the lock is lost */
static char lost_message[512];

static void on_lost(void *data, redlock_handle *lock, int status, const char *message)
{
    unsigned char wake = 0;
    ssize_t written;

    (void)data;
    (void)lock;
    pthread_mutex_lock(&lost_mu);
    lost_status = status;
    snprintf(lost_message, sizeof lost_message, "%s", message ? message : "");
    pthread_mutex_unlock(&lost_mu);
    written = write(signal_pipe[1], &wake, 1);
    (void)written; /* a full pipe already has wake-ups pending */
}

/* The lock was lost (on_lost): the command is stopped. */
static void stop_lost(struct run *run)
{
    int status;
    char message[sizeof lost_message];

    pthread_mutex_lock(&lost_mu);
    status = lost_status;
    snprintf(message, sizeof message, "%s", lost_message);
    pthread_mutex_unlock(&lost_mu);
    if (status == REDLOCK_OK || run->lost)
        return;
    run->lost = true;
    say("lost the lock on '%s': %s%s%s", run->cfg->name, redlock_strerror(status),
        *message ? ": " : "", message);
    if (run->child_done)
        return;
    say("stopping '%s' with SIGTERM", run->cfg->command[0]);
    kill(run->child, SIGTERM);
}

/* Waits for the child, while the library keeps the lock (redlock_handle_watch)
 * until the child exits or the lock is lost. */
static void supervise(struct run *run)
{
    struct pollfd pfd = {.fd = signal_pipe[0], .events = POLLIN};

    while (!run->child_done) {
        if (poll(&pfd, 1, -1) > 0)
            forward_signals(run);
        reap_child(run);
        stop_lost(run);
    }
}

/* Releases the lock after the command; returns the tool's exit status. */
static int release(struct run *run)
{
    const struct config *cfg = run->cfg;
    int rc = redlock_unlock(run->lock);

    if (run->lost) /* the unlock above only cleaned up the nodes still holding it */
        return EXIT_LOST;
    if (rc == REDLOCK_ENOTHELD) {
        say_failure("cannot release", cfg->name, rc);
        say("the lock expired while '%s' ran: it may not have run alone", cfg->command[0]);
        return EXIT_LOST;
    }
    if (rc != REDLOCK_OK)
        say_failure("cannot release", cfg->name, rc);
    else if (verbosity == VERBOSE)
        say("released '%s'", cfg->name);
    return command_status(run->child_status);
}

static int run_locked(redlock_handle *lock, const struct config *cfg)
{
    struct run run = {.cfg = cfg, .lock = lock};

    int64_t fence = 0;
    char fence_text[24];
    (void)redlock_handle_fence(lock, 0, &fence);
    snprintf(fence_text, sizeof fence_text, "%lld", (long long)fence);
    if (setenv("REDLOCK_NAME", cfg->name, 1) != 0 ||
        setenv("REDLOCK_TOKEN", redlock_handle_token(lock), 1) != 0 ||
        (fence > 0 ? setenv("REDLOCK_FENCE", fence_text, 1) : unsetenv("REDLOCK_FENCE")) != 0) {
        say("cannot prepare the command: %s", strerror(errno));
        redlock_unlock(lock);
        return EX_SOFTWARE;
    }
    /* The library keeps it, by its rule for kept locks: extended to its
     * lease every third of it, again after a failed extension while
     * validity lasts, lost when a quorum says so or validity runs out. */
    int rc = redlock_handle_watch(lock, on_lost, NULL);
    if (rc != REDLOCK_OK) {
        say_failure("cannot keep", cfg->name, rc);
        redlock_unlock(lock);
        return rc == REDLOCK_ENOTHELD ? EXIT_LOST : EX_SOFTWARE;
    }
    if (!start_command(&run)) {
        redlock_unlock(lock);
        return EX_SOFTWARE;
    }
    supervise(&run);
    return release(&run);
}

/* How long redlock_lock may retry: -n wins over -w, as in flock. */
static int64_t wait_for(const struct config *cfg)
{
    if (cfg->nonblock)
        return 0;
    return cfg->wait_ms == WAIT_UNTIL_FREE ? INT64_MAX : cfg->wait_ms;
}

int acquire_and_run(redlock_ctx *ctx, const struct config *cfg)
{
    redlock_handle *lock;
    int rc, status;

    /* Caught from here on: while waiting, a signal ends the wait. */
    if (install_signal_handlers() != 0) {
        say("cannot prepare for signals: %s", strerror(errno));
        return EX_SOFTWARE;
    }
    redlock_set_interrupt_check(wait_interrupted, NULL);
    /* The exclusive lock is a plain lock: one key with a write lock of the
     * name, which no read lock shares. */
    if (cfg->fair)
        rc = redlock_lock_fair(&lock, ctx, cfg->name, cfg->ttl_ms, wait_for(cfg));
    else if (cfg->permits > 0)
        rc = redlock_acquire_permit(&lock, ctx, cfg->name, cfg->permits, cfg->ttl_ms,
                                    wait_for(cfg));
    else if (cfg->shared)
        rc = redlock_lock_rw(&lock, ctx, cfg->name, REDLOCK_READ, NULL, cfg->ttl_ms,
                             wait_for(cfg));
    else
        rc = redlock_lock(&lock, ctx, cfg->name, cfg->ttl_ms, wait_for(cfg));
    redlock_set_interrupt_check(NULL, NULL);
    if (wait_interrupted_by != 0) {
        if (rc == REDLOCK_OK) { /* taken as the signal came: give it back */
            redlock_unlock(lock);
            redlock_handle_free(lock);
        }
        if (verbosity == VERBOSE)
            say("stopped waiting for '%s' on SIG%s", cfg->name,
                signal_name(wait_interrupted_by));
        return 128 + wait_interrupted_by;
    }
    if (rc != REDLOCK_OK) {
        say_failure("cannot acquire", cfg->name, rc);
        return acquire_failure_status(rc, cfg);
    }
    if (verbosity == VERBOSE)
        /* The owner, as the library's events show it: the token's first 8
         * characters. The whole token would let a reader of the log release
         * the lock; the command alone gets it (REDLOCK_TOKEN). */
        say("acquired '%s' (owner %.8s, valid for %" PRId64 " ms)", cfg->name,
            redlock_handle_token(lock), redlock_handle_validity_ms(lock));
    status = run_locked(lock, cfg);
    redlock_handle_free(lock);
    return status;
}
