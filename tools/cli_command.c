/*
 * cli_command.c - the command run under the lock: the signals caught into
 * a self-pipe (SIGINT, SIGTERM and SIGHUP forwarded to the command; while
 * the lock is awaited, they end the wait), the command forked and exec'd
 * with the dispositions redlock started with, and its exit reaped.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"

/* ---- Signals: the handler writes the signal number to a self-pipe. ---- */

int signal_pipe[2] = {-1, -1};
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* The name of a forwarded signal without its SIG (glibc's sigabbrev_np is
 * 2.32's; the tool runs on 2.17). */
const char *signal_name(int signo)
{
    switch (signo) {
    case SIGINT: return "INT";
    case SIGTERM: return "TERM";
    case SIGHUP: return "HUP";
    default: return "?";
    }
}
/* The dispositions and signal mask redlock started with, for the command. */
static struct sigaction saved_actions[NSIG];
static sigset_t saved_mask;
/* Set (signals blocked) just before the command is forked. */
static volatile sig_atomic_t command_started;
/* The forwarded signal that ended the wait for the lock, 0 if none. */
int wait_interrupted_by;

static void on_signal(int signo, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    unsigned char byte = (unsigned char)signo;
    ssize_t written;

    /* A signal that the kernel sent to the whole foreground process group
     * (Ctrl-C, terminal hangup) has reached the command already: forwarding
     * it would deliver it twice. Before the command starts, it is for us. */
    if (signo != SIGCHLD && info->si_code == SI_KERNEL && command_started)
        return;
    written = write(signal_pipe[1], &byte, 1);
    (void)written; /* a full pipe already has wake-ups pending */
    errno = saved_errno;
}

static void catch_signal(int signo)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(signo, &sa, &saved_actions[signo]);
}

/* Catches SIGCHLD and the forwarded signals, except those ignored on entry
 * (as under nohup): those stay ignored, for the command too. */
int install_signal_handlers(void)
{
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    catch_signal(SIGCHLD);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++) {
        int signo = forwarded_signals[i];

        sigaction(signo, NULL, &saved_actions[signo]);
        if (saved_actions[signo].sa_handler != SIG_IGN)
            catch_signal(signo);
    }
    return 0;
}

/* The interrupt check while redlock_lock waits: a forwarded signal in the
 * self-pipe cancels the wait (REDLOCK_ECANCELED). No command runs yet. */
int wait_interrupted(void *data)
{
    unsigned char signals[64];
    ssize_t n;

    (void)data;
    while ((n = read(signal_pipe[0], signals, sizeof signals)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (signals[i] != SIGCHLD)
                wait_interrupted_by = signals[i];
        }
    }
    return wait_interrupted_by != 0;
}

/* Ends redlock by the signal that interrupted its wait, as if uncaught. */
int die_of_signal(int signo)
{
    sigset_t set;

    signal(signo, SIG_DFL);
    sigemptyset(&set);
    sigaddset(&set, signo);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(signo);
    return 128 + signo;
}

/* SIGPIPE is ignored: a reader of stderr that goes away must not kill redlock
 * while it holds the lock (writes then fail, and the messages are lost). The
 * command gets the disposition redlock started with. */
void ignore_sigpipe(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &saved_actions[SIGPIPE]);
}

/* Opens /dev/null on whichever of stdin, stdout and stderr is closed, so
 * that no socket or pipe of redlock's takes its number and gets messages. */
void keep_std_fds_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF && open("/dev/null", O_RDWR) != fd)
            exit(EX_OSERR);
    }
}

/* Blocks the caught signals around fork, so that the child cannot run the
 * handler before it has restored the original dispositions. */
static void block_signals(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&set, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &set, &saved_mask);
}

static void unblock_signals(void)
{
    sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}

/* In the child, between fork and exec: only async-signal-safe calls. */
__attribute__((noreturn)) static void exec_command(char **command, int error_fd, pid_t parent)
{
    int err;
    ssize_t written;

    sigaction(SIGCHLD, &saved_actions[SIGCHLD], NULL);
    sigaction(SIGPIPE, &saved_actions[SIGPIPE], NULL);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaction(forwarded_signals[i], &saved_actions[forwarded_signals[i]], NULL);
    unblock_signals();
    /* If redlock dies, nobody extends the lock: stop the command too. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(EX_SOFTWARE);
    execvp(command[0], command);
    err = errno;
    written = write(error_fd, &err, sizeof err);
    (void)written; /* the exit status tells the parent anyway */
    _exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE);
}

/* Starts the command. Returns false (with a message) when it could not fork. */
bool start_command(struct run *run)
{
    int exec_pipe[2];
    pid_t parent = getpid();
    int err;
    ssize_t n;

    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        say("cannot create a pipe: %s", strerror(errno));
        return false;
    }
    block_signals();
    command_started = 1;
    run->child = fork();
    if (run->child == 0)
        exec_command(run->cfg->command, exec_pipe[1], parent);
    err = errno;
    if (run->child < 0)
        command_started = 0;
    unblock_signals();
    close(exec_pipe[1]);
    if (run->child < 0) {
        close(exec_pipe[0]);
        say("cannot start '%s': %s", run->cfg->command[0], strerror(err));
        return false;
    }
    /* The pipe closes on exec; otherwise the child sends exec's errno. */
    do {
        n = read(exec_pipe[0], &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    close(exec_pipe[0]);
    if (n == (ssize_t)sizeof err)
        say("cannot run '%s': %s", run->cfg->command[0], strerror(err));
    return true;
}

void reap_child(struct run *run)
{
    int status;

    if (!run->child_done && waitpid(run->child, &status, WNOHANG) == run->child) {
        run->child_done = true;
        run->child_status = status;
    }
}

/* Forwards the signals waiting in the self-pipe; SIGCHLD only woke us up. */
void forward_signals(struct run *run)
{
    unsigned char signals[64];
    ssize_t n;

    while ((n = read(signal_pipe[0], signals, sizeof signals)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (signals[i] == 0 || signals[i] == SIGCHLD || run->child_done)
                continue;   /* 0: the lock was lost (on_lost) */
            if (verbosity == VERBOSE)
                say("forwarding SIG%s to '%s'", signal_name(signals[i]), run->cfg->command[0]);
            kill(run->child, signals[i]);
        }
    }
}

/* The command's status as a shell reports it. */
int command_status(int wait_status)
{
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return WEXITSTATUS(wait_status);
}
