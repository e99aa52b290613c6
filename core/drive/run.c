/*
 * run.c - one operation run to its end on the calling thread: the 1.0
 * calls (calls.c) and the service thread (service.c) each make an operation
 * (op.h) and drive it here, in one poll loop over its connections (io.h),
 * woken early by a release of the keys a lock waits for (wake.h), and
 * cancelled by the calling thread's interrupt check.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "io.h"
#include "run.h"
#include "wake.h"

/* ---- the calling thread's interrupt check (redlock_set_interrupt_check) ---- */

#define INTERRUPT_CHECK_MS 100

static _Thread_local redlock_interrupt_fn interrupt_check;
static _Thread_local void *interrupt_data;

void redlock_set_interrupt_check(redlock_interrupt_fn check, void *data)
{
    interrupt_check = check;
    interrupt_data = data;
}

/* One poll over the operation's connections until `at` at the latest, and
 * their events, as the engine said (rl_op_drive's `what` and `at`): all of
 * them, or once it is done only those still sending within their deadline
 * (its tail). */
static void poll_once(rl_client *ctx, rl_op *op, int what, int64_t at, int64_t *now,
                      int64_t *checked, rl_waiter *waiter)
{
    bool tail = what & RL_DRIVE_DONE;
    struct pollfd pfd[REDLOCK_MAX_NODES + 1];
    rl_conn *who[REDLOCK_MAX_NODES];
    /* What can be written now is written before waiting: the usual command
     * fits the socket, and no poll is spent on learning that. */
    for (size_t i = 0; (what & RL_DRIVE_WRITE) && i < ctx->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, i);
        const char *bytes;
        if (c && rl_conn_output(c, &bytes) > 0 && !rl_io_flush(c, *now))
            rl_io_bury(ctx, c, *now);
    }
    size_t k = rl_io_watch(ctx, op, tail, *now, pfd, who);
    if (tail && k == 0)
        return;
    int64_t cap = interrupt_check ? INTERRUPT_CHECK_MS : 1000;
    int64_t timeout = at == INT64_MAX ? cap : at - *now;
    timeout = timeout < 0 ? 0 : timeout > cap ? cap : timeout;
    /* A release of the keys waited for ends the pause (the last entry). */
    if (waiter)
        pfd[k] = (struct pollfd){ .fd = rl_waiter_fd(waiter), .events = POLLIN };
    int r = poll(pfd, k + (waiter != NULL), (int)timeout);
    int err = r < 0 ? errno : 0;
    *now = rl_now_ms();
    if (waiter && r > 0 && pfd[k].revents && rl_waiter_told(waiter)) {
        rl_op_wake(op, *now);
        r--;
    }
    if (interrupt_check && !tail && (err == EINTR || *now >= *checked + cap)) {
        *checked = *now;
        if (interrupt_check(interrupt_data) && rl_op_cancel(op, *now))
            return;
    }
    if (r < 0 && err != EINTR) {
        char why[160];
        snprintf(why, sizeof why, "poll: %s", strerror(err));
        for (size_t j = 0; j < k; j++) {
            rl_engine_lost(who[j], REDLOCK_ESYSTEM, why, *now);
            rl_io_bury(ctx, who[j], *now);
        }
        return;
    }
    for (size_t j = 0; r > 0 && j < k; j++)
        if (pfd[j].revents && !rl_io_service(who[j], pfd[j].revents, *now))
            rl_io_bury(ctx, who[j], *now);
    /* Replies may have queued more (a release, a script sent again). */
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, i);
        if (c && c->state == RL_CONN_OPEN && !rl_io_flush(c, *now))
            rl_io_bury(ctx, c, *now);
    }
}

/*
 * Runs op until it is done, then until its commands are written to every
 * node it can reach (within each node's deadline): the outcome is decided at
 * a quorum, but every node that can be reached gets the command. Returns the
 * status with this thread's message set.
 */
int rl_run(rl_client *ctx, rl_op *op)
{
    int64_t now = rl_now_ms(), checked = now, at;
    int what;
    rl_waiter *waiter = NULL;   /* once the lock was found held elsewhere */
    for (;;) {
        while ((what = rl_op_drive(op, now, &at)) & RL_DRIVE_CONNECT)
            rl_io_attach(ctx, op, now);
        if (what & RL_DRIVE_DONE)
            break;
        rl_io_give_spare(ctx, op, now);
        if (!waiter && (what & RL_DRIVE_AWAITS))
            waiter = rl_waker_await(ctx, rl_op_keys(op));
        poll_once(ctx, op, what, at, &now, &checked, waiter);
    }
    char note[256] = "";
    if (waiter)
        rl_waker_done(ctx, waiter, note, sizeof note);
    /* Decided: its connections still sending are written until the
     * engine's time (the last drive said whether any is). */
    while (what & RL_DRIVE_TAIL) {
        poll_once(ctx, op, what, at, &now, &checked, NULL);
        what = rl_op_drive(op, now, &at);
    }

    rl_op_note(op, note);
    int rc = rl_op_status(op);
    if (rc != REDLOCK_OK)
        rl_fail(rc, "%s", rl_op_message(op));
    rl_io_give_back(ctx, op, now);
    return rc;
}
