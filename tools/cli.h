/*
 * cli.h - what crosses the files of the redlock tool. Each file is one
 * layer, and calls only those below it:
 *
 *   redlock.c      main: the order of the steps
 *   cli_lock.c     the lock: taken, kept while the command runs, lost, released
 *   cli_health.c   --check and --load-functions: no lock, the nodes' state
 *   cli_command.c  the command: started, its signals, reaped (the self-pipe)
 *   cli_client.c   the client: node URIs with their passwords, the options
 *   cli_args.c     the command line: options, durations, NAME and COMMAND
 *   cli_usage.c    --help's text
 *   cli_base.c     messages, memory, the exit status for the nodes' failures
 *
 * hygiene.c (hygiene.h) keeps the secrets out of argv, the environment and
 * the messages, for all of them.
 */
#ifndef REDLOCK_TOOL_CLI_H
#define REDLOCK_TOOL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "redlock.h"

/* Exit statuses of the tool itself, besides the command's own status. */
#define EXIT_LOST 74            /* EX_IOERR: the lock was lost while the command ran */
#define EXIT_CANNOT_EXECUTE 126 /* as in the shell */
#define EXIT_NOT_FOUND 127      /* as in the shell */

/* No --ttl: the library's lease of a kept lock (watchdog_lease_ms: 30 s,
 * or max_lease_ms when that is less), read once the options are set. */
#define TTL_UNSET 0
#define WAIT_UNTIL_FREE (-1) /* no -n or -w: wait as long as the lock is held */
#define SHELL "/bin/sh"      /* runs -c's string */

/* Verbosity levels. */
enum { QUIET, NORMAL, VERBOSE };

/* A library option to set, from --option or one of its shorthands. */
struct setting {
    char *name;
    char *value;
};

struct config {
    char **node_lists; /* --nodes arguments, each a comma-separated list */
    size_t n_node_lists;
    struct setting *settings; /* in command-line order: a later one wins */
    size_t n_settings;
    int64_t ttl_ms;
    int64_t wait_ms; /* WAIT_UNTIL_FREE unless -w */
    bool nonblock;   /* -n: one attempt, whatever -w says (as in flock) */
    bool shared;     /* -s: NAME's read lock (a read-write lock's); -x: the exclusive one */
    int permits;     /* --permits N: a permit of NAME's semaphore of N; 0: a lock */
    bool fair;       /* --fair: NAME's fair lock (waiters served in arrival order) */
    bool check;      /* --check: no lock; the nodes' health */
    bool load;       /* --load-functions: no lock; the function library on every node */
    const char *password_file;
    const char *sentinel_password_file;
    int conflict_exit;
    const char *name;
    const char *shell_command; /* -c STRING */
    char *shell_argv[4];       /* sh -c STRING, when -c is given */
    char **command;
};

/* The lock being held and the child running under it. */
struct run {
    const struct config *cfg;
    redlock_handle *lock;
    pid_t child;
    bool child_done;
    int child_status; /* from waitpid, once child_done */
    bool lost;
};

/* ---- cli_base.c: messages, memory, the nodes' failures ---- */

/* QUIET with -q, VERBOSE with -v, NORMAL otherwise. */
extern int verbosity;

/* Prints "redlock: <message>" on stderr unless --quiet. */
__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...);
/* Reports a library failure: what failed, the code's meaning and the detail. */
void say_failure(const char *what, const char *name, int rc);
/* Usage errors are printed even with --quiet: nothing ran. Exits EX_USAGE. */
__attribute__((format(printf, 1, 2), noreturn)) void usage_error(const char *fmt, ...);
/* -v: one of the library's events, on stderr (a redlock_log_fn). */
void print_event(void *data, int level, const char *event, const char *message);

/* malloc and strdup that end the tool (EX_SOFTWARE) when memory runs out. */
void *xmalloc(size_t size);
char *xstrdup(const char *s);
/* Releases a string that may hold a password. */
void free_secret(char *s);

/* The exit status for a failure of the nodes, the same for a lock and for
 * --check. */
int failure_status(int rc);

/* ---- cli_usage.c ---- */

/* --help's text: the tool's options, the library's, then the rest. */
void print_usage(void);

/* ---- cli_args.c ---- */

/* Reads the command line into cfg; exits on a usage error, --help and
 * --version. */
void parse_args(struct config *cfg, int argc, char **argv);
void free_config(struct config *cfg);

/* ---- cli_client.c ---- */

/* Makes the client and applies the settings. Returns an exit status, EX_OK on success. */
int open_ctx(redlock_ctx **out, const struct config *cfg);
/* The client's lease of a kept lock (watchdog_lease_ms). */
int64_t kept_lease_ms(redlock_ctx *ctx);

/* ---- cli_health.c ---- */

/* --check and --load-functions: each returns the tool's exit status. */
int check_nodes(redlock_ctx *ctx);
int load_functions(redlock_ctx *ctx);

/* ---- cli_command.c: signals, the self-pipe and the command ---- */

/* The self-pipe: the signal handler writes each signal's number to [1]; the
 * lost lock, a byte 0. The main loop reads [0]. */
extern int signal_pipe[2];
/* The forwarded signal that ended the wait for the lock, 0 if none. */
extern int wait_interrupted_by;

/* The name of a forwarded signal without its SIG. */
const char *signal_name(int signo);
/* Opens /dev/null on whichever of stdin, stdout and stderr is closed. */
void keep_std_fds_open(void);
/* SIGPIPE is ignored; the command gets it back as it was. */
void ignore_sigpipe(void);
/* Catches SIGCHLD and the forwarded signals into the self-pipe. -1 (errno
 * set) when the pipe cannot be made. */
int install_signal_handlers(void);
/* The interrupt check while redlock_lock waits (a redlock_interrupt_fn). */
int wait_interrupted(void *data);
/* Ends redlock by the signal that interrupted its wait, as if uncaught. */
int die_of_signal(int signo);

/* Starts the command. Returns false (with a message) when it could not fork. */
bool start_command(struct run *run);
/* Notes the child's status once it has exited. */
void reap_child(struct run *run);
/* Forwards the signals waiting in the self-pipe; SIGCHLD only woke us up. */
void forward_signals(struct run *run);
/* The command's status as a shell reports it. */
int command_status(int wait_status);

/* ---- cli_lock.c ---- */

/* Takes the lock, runs the command under it, releases it: the tool's exit
 * status. */
int acquire_and_run(redlock_ctx *ctx, const struct config *cfg);

#endif /* REDLOCK_TOOL_CLI_H */
