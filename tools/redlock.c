/*
 * redlock - run a command while holding a distributed lock, like flock(1)
 * across machines.
 *
 *     redlock --nodes URI[,URI...] --ttl 30s --wait 10s NAME -- COMMAND [ARGS]
 *     redlock --nodes URI[,URI...] --nonblock NAME -c 'COMMAND STRING'
 *     redlock --nodes URI[,URI...] --check
 *
 * Its options follow flock(1)'s where they mean the same: -n (one attempt),
 * -w (how long to wait), -E (status when held) and -c (a shell string);
 * without -n or -w it waits until the lock is free or the nodes stop
 * answering. The tool takes the lock, runs COMMAND in a child process, has the
 * library keep it while the child runs (redlock_handle_watch), forwards SIGINT, SIGTERM and
 * SIGHUP to it, and releases the lock when it exits. If the lock is lost
 * meanwhile, the child is sent SIGTERM and the tool exits with EX_IOERR.
 * Signals reach the main loop through a self-pipe watched by poll().
 * --check only asks the nodes (redlock_ctx_ping) and prints their health;
 * -v prints the library's events (redlock_ctx_set_log) on stderr.
 *
 * This file is main: the order of the steps. Each layer is a file of its
 * own, which tools/cli.h lists.
 */
#include <errno.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "hygiene.h"

int main(int argc, char **argv)
{
    struct config cfg;
    redlock_ctx *ctx = NULL;
    int status;

    keep_std_fds_open();
    ignore_sigpipe();
    hold_secrets();
    parse_args(&cfg, argc, argv);
    status = open_ctx(&ctx, &cfg);
    /* The library has the passwords: the environment, which COMMAND
     * inherits, keeps none. */
    if (status == EX_OK && !scrub_environment()) {
        say("cannot prepare the environment: %s", strerror(errno));
        status = EX_OSERR;
    }
    if (status == EX_OK && cfg.ttl_ms == TTL_UNSET)
        cfg.ttl_ms = kept_lease_ms(ctx);
    if (status == EX_OK)
        status = cfg.check ? check_nodes(ctx)
               : cfg.load ? load_functions(ctx) : acquire_and_run(ctx, &cfg);
    redlock_ctx_free(ctx);
    free_config(&cfg);
    if (wait_interrupted_by != 0)
        return die_of_signal(wait_interrupted_by);
    return status;
}
