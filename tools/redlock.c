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
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include <hiredis/hiredis.h>   /* HIREDIS_MAJOR, ... for --version: nothing is called */

#include "hygiene.h"
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
#define PASSWORD_MAX_BYTES 1024

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

/* --help: usage_head, the library's options, then usage_tail. */
static const char usage_head[] =
    "Usage: redlock [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock [OPTIONS] NAME -c STRING\n"
    "       redlock [OPTIONS] --check\n"
    "       redlock [OPTIONS] --load-functions\n"
    "\n"
    "Run COMMAND while holding the distributed lock NAME, taken on a majority of\n"
    "independent Redis masters (the Redlock algorithm): flock(1) across machines,\n"
    "with NAME in place of flock's file. The lock is kept extended while COMMAND\n"
    "runs and released when it exits. Options come before NAME (-c also after it).\n"
    "Without -n or -w, redlock waits until the lock is free.\n"
    "\n"
    "Options:\n"
    "  -s, --shared                 take a shared lock: any number of -s commands\n"
    "                               run together, none beside an exclusive one (the\n"
    "                               read lock of NAME's read-write lock)\n"
    "  -x, -e, --exclusive          take the exclusive lock (the default): alone,\n"
    "                               as a plain lock or a write lock of NAME\n"
    "      --fair                   take NAME's fair lock: exclusive, and waiting\n"
    "                               commands get it in the order they came\n"
    "      --permits N              take one of N permits of NAME's semaphore: at\n"
    "                               most N commands of NAME run at once, across\n"
    "                               machines; every command of NAME must give the\n"
    "                               same N. Fewer nodes may be down as N grows\n"
    "                               (a permit is taken on more than N*nodes/(N+1))\n"
    "  -n, --nonblock, --nb         make one attempt: fail at once (see -E) when\n"
    "                               someone else holds the lock; wins over -w\n"
    "  -w, --wait, --timeout DURATION\n"
    "                               give up after DURATION (fractions allowed:\n"
    "                               -w 0.5); -w 0 makes one attempt, as -n does\n"
    "  -E, --conflict-exit-code N   exit status when someone else holds the lock\n"
    "                               (default 75)\n"
    "  -c, --command STRING         run STRING with " SHELL " -c, in place of\n"
    "                               COMMAND [ARGS...]\n"
    "      --nodes URI[,URI...]     the Redis masters, comma separated; may be\n"
    "                               repeated (default: $REDLOCK_NODES). URIs:\n"
    "                                 redis://[[user]:password@]host[:port][/db]\n"
    "                                 rediss://... the same over TLS (-o tls_*)\n"
    "                                 unix://[[user]:password@]/path.sock[?db=N]\n"
    "                                 redis-sentinel://[[user]:password@]host[:port]\n"
    "                                   [,host[:port]...][/db]?sentinelMasterId=NAME\n"
    "                                   (a Sentinel group; rediss-sentinel:// over TLS)\n"
    "                                 redis-cluster://[[user]:password@]host[:port]\n"
    "                                   [,host[:port]...] (a Cluster's seeds;\n"
    "                                   rediss-cluster:// over TLS)\n"
    "                               a comma followed by scheme:// starts the next\n"
    "                               URI; other commas belong to the URI\n"
    "  -t, --ttl DURATION           lease of the lock, extended every third of it\n"
    "                               while COMMAND runs (default: watchdog_lease_ms,\n"
    "                               30s, or max_lease_ms when that is less)\n"
    "      --key-prefix PREFIX      prepended to NAME to form the Redis key\n"
    "      --node-timeout DURATION  deadline for one node's reply (default 50ms)\n"
    "      --connect-timeout DURATION\n"
    "                               deadline for connecting to a node (default 100ms)\n"
    "      --retry-delay DURATION   pause between attempts while waiting (default 200ms)\n"
    "      --fencing                give COMMAND a fencing token in REDLOCK_FENCE\n"
    "                               (the same as -o fencing=1)\n"
    "  -o, --option NAME=VALUE      set any library option (listed below); may be\n"
    "                               repeated\n"
    "      --password-file FILE     password for the nodes whose URI has none,\n"
    "                               from the first line of FILE\n"
    "      --sentinel-password-file FILE\n"
    "                               password for the sentinels of redis-sentinel://\n"
    "                               nodes (sentinel_password), from the first line\n"
    "                               of FILE\n"
    "      --check                  take no lock: ask every node, print a line per\n"
    "                               node (state, round trip, run_id, version) and\n"
    "                               exit 0 when a quorum answers, 69 when not\n"
    "      --load-functions         take no lock: load this version's function\n"
    "                               library on every node that lacks it (Redis 7.0+;\n"
    "                               with credentials allowed FUNCTION LOAD), print\n"
    "                               what each did, exit 0 when every node has it\n"
    "  -q, --quiet                  print no messages, usage errors aside\n"
    "  -v, --verbose                print the owner (the token's first 8\n"
    "                               characters), validity, extensions and release\n"
    "                               on stderr, and the library's events (acquired,\n"
    "                               node_down, no_quorum, ...); never a whole token\n"
    "  -h, --help                   print this help and exit\n"
    "  -V, --version                print the versions (tool, library, hiredis) and exit\n";

static const char usage_tail[] =
    "\n"
    "Durations: numbers with a unit, ms, s, m or h (500ms, 30s, 2m, 1h);\n"
    "a bare number counts seconds. Fractions are allowed down to the\n"
    "millisecond (0.5, 1.25s, 0.1m). At most 596h (2147483647ms).\n"
    "\n"
    "Waiting: without -n or -w, redlock retries for as long as someone else holds\n"
    "the lock, but not through an outage: the wait ends with status 69 once every\n"
    "attempt for unavailable_timeout_ms (default 5s) lacked answers from enough\n"
    "nodes (-o unavailable_timeout_ms=0 waits through outages too). Nodes that\n"
    "the restart guard holds back after a failover or restart are no outage:\n"
    "the wait goes on until the guard ends.\n"
    "\n"
    "Environment:\n"
    "  REDLOCK_NODES     the nodes, when no --nodes is given\n"
    "  REDLOCK_PASSWORD  password for the nodes whose URI has none, when no\n"
    "                    --password-file is given\n"
    "  REDLOCK_SENTINEL_PASSWORD\n"
    "                    password for the sentinels, when no\n"
    "                    --sentinel-password-file is given (-o sentinel_password\n"
    "                    wins over both)\n"
    "COMMAND runs with REDLOCK_NAME (NAME) and REDLOCK_TOKEN (the lock's token,\n"
    "the value stored in the Redis key; with --permits, the permit's id) added\n"
    "to its environment, and with\n"
    "fencing on REDLOCK_FENCE: a number larger for every later holder of NAME,\n"
    "for the storage COMMAND writes to, to refuse writes of an older holder.\n"
    "\n"
    "Secrets: passwords are never printed (a refused password option is named,\n"
    "not shown). COMMAND gets neither REDLOCK_PASSWORD nor\n"
    "REDLOCK_SENTINEL_PASSWORD, and gets REDLOCK_NODES without the URIs'\n"
    "credentials (redis://host for redis://user:password@host). Once its\n"
    "arguments are read, redlock overwrites the credentials of --nodes URIs and\n"
    "the value of -o NAME=VALUE for a password option with 'x', so that the\n"
    "process list does not show them; it is not dumpable while it runs. A\n"
    "file or the environment keeps a password out of the process list\n"
    "altogether.\n"
    "\n"
    "Signals: SIGINT, SIGTERM and SIGHUP are forwarded to COMMAND, and the lock is\n"
    "released when COMMAND exits. When the lock is lost (it could not be extended\n"
    "before its validity ran out) or redlock itself dies, COMMAND gets SIGTERM.\n"
    "While redlock waits for the lock, these signals end the wait: it releases\n"
    "what it had taken and dies of the signal. SIGPIPE is ignored (a closed\n"
    "stderr loses the messages, not the lock); COMMAND gets it back as it was.\n"
    "\n"
    "Health check: redlock --check prints each node's address and state (up,\n"
    "down, slow, guarded: restarted and not counted yet, auth_refused,\n"
    "permission_denied: its ACL refused a command), its round trip, run_id and\n"
    "Redis version or its last error, then whether a quorum answers: for a\n"
    "container probe or a cron alert (0, 69, or 77 when a quorum refuses the\n"
    "credentials).\n"
    "\n"
    "Function library: the library's scripts run as Redis functions (FCALL) on\n"
    "the nodes that hold its library, so that a lock client's ACL needs +fcall\n"
    "and no +eval (docs/guarantees.md). redlock --load-functions, run once with\n"
    "an administrator's credentials, loads it on every node and says per node\n"
    "\"loaded\" or \"already loaded\"; running it again changes nothing. Each\n"
    "version of the library has a name of its own (redlock_v and a digest of its\n"
    "scripts), loaded beside the older ones, which clients of older versions go\n"
    "on calling: delete one (FUNCTION DELETE) once none of them runs.\n"
    "\n"
    "Exit status:\n"
    "  the status of COMMAND, or 128+N when a signal N killed it; otherwise:\n"
    "  64   usage error: bad option, duration, node URI or password file\n"
    "  69   no quorum: too few nodes reachable or answering in time, or they\n"
    "       answered with errors (--check: too few answer; --load-functions: a\n"
    "       node did not answer, or cannot hold functions)\n"
    "  70   other error\n"
    "  74   the lock was lost while COMMAND ran (COMMAND got SIGTERM if it\n"
    "       was still running)\n"
    "  75   someone else holds the lock (--permits: every permit is taken):\n"
    "       with -n, or when -w ran out (see -E)\n"
    "  77   permission denied: a node refused the credentials, or its ACL\n"
    "       does not allow a command or key the tool uses (NOPERM: the message\n"
    "       names the node and what it refused; --load-functions: a node refused\n"
    "       FUNCTION LOAD), or TLS failed (its handshake or the check of a\n"
    "       node's certificate). One status for the three, as sysexits.h has\n"
    "       one for permission denied; the message says which\n"
    "  126  COMMAND cannot be executed\n"
    "  127  COMMAND not found\n"
    "\n"
    "Changed in 1.2: -n means --nonblock, as in flock(1), not --nodes; and\n"
    "without -n or -w, redlock waits instead of making one attempt.\n"
    "\n"
    "Example:\n"
    "  export REDLOCK_NODES=redis://10.0.0.1,redis://10.0.0.2,redis://10.0.0.3\n"
    "  redlock --ttl 30s --wait 10s nightly-report -- ./make-report --full\n"
    "  redlock -n -E 0 backup -c 'pg_dump app > /backups/app.sql'\n";

/* library_options_help: the library's options, written at build time by
 * tools/gen_options from their one table (core/engine/options.def). */
#include "redlock_options_help.h"

static void print_usage(void)
{
    fputs(usage_head, stdout);
    fputs("\nLibrary options, for -o NAME=VALUE:\n", stdout);
    fputs(library_options_help, stdout);
    fputs(usage_tail, stdout);
}

static int verbosity = NORMAL;

/* Writes "redlock: <message>" on stderr, one line: a newline or another
 * control byte in a name or a node's answer is escaped. */
static void print_line(const char *fmt, va_list ap)
{
    char text[4096], escaped[4096];

    vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr, "redlock: %s\n", rl_escape_controls(escaped, sizeof escaped, text));
}

/* Prints "redlock: <message>" on stderr unless --quiet. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;

    if (verbosity == QUIET)
        return;
    va_start(ap, fmt);
    print_line(fmt, ap);
    va_end(ap);
}

/* Reports a library failure: what failed, the code's meaning and the detail. */
static void say_failure(const char *what, const char *name, int rc)
{
    const char *detail = redlock_errmsg();

    say("%s '%s': %s%s%s", what, name, redlock_strerror(rc), *detail ? ": " : "", detail);
}

/* Usage errors are printed even with --quiet: nothing ran. */
__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    print_line(fmt, ap);
    va_end(ap);
    fputs("Try 'redlock --help' for more information.\n", stderr);
    exit(EX_USAGE);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size);

    if (p == NULL) {
        fputs("redlock: out of memory\n", stderr);
        exit(EX_SOFTWARE);
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t len = strlen(s) + 1;

    return memcpy(xmalloc(len), s, len);
}

/*
 * Parses a duration: a number, with a fraction or not (1, 0.5, .5), followed
 * by ms, s, m or h; a bare number counts seconds. Returns false for anything
 * else, finer than a millisecond, or above REDLOCK_MAX_TTL_MS.
 */
static bool parse_duration(const char *text, int64_t *out_ms)
{
    static const struct {
        const char *suffix;
        int64_t ms;
    } units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    int64_t whole = 0, fraction = 0, scale = 1; /* the number is whole + fraction / scale */
    bool digits = isdigit((unsigned char)*text);
    const char *p = text;

    for (; isdigit((unsigned char)*p); p++) {
        whole = whole * 10 + (*p - '0');
        if (whole > REDLOCK_MAX_TTL_MS)
            return false;
    }
    if (*p == '.') {
        if (!isdigit((unsigned char)p[1]))
            return false;
        for (p++; isdigit((unsigned char)*p); p++) {
            if (scale == 1000000000) /* far below a millisecond in any unit */
                return false;
            fraction = fraction * 10 + (*p - '0');
            scale *= 10;
        }
        digits = true;
    }
    if (!digits)
        return false;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        int64_t unit = units[i].ms;

        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (whole > REDLOCK_MAX_TTL_MS / unit || fraction * unit % scale != 0)
            return false;
        *out_ms = whole * unit + fraction * unit / scale;
        return *out_ms <= REDLOCK_MAX_TTL_MS;
    }
    return false;
}

static int64_t duration_arg(const char *option, const char *text)
{
    int64_t ms;

    if (!parse_duration(text, &ms))
        usage_error("invalid duration for --%s: '%s' (use e.g. 0.5, 500ms, 30s, 2m, 1h)", option,
                    text);
    return ms;
}

static void add_setting(struct config *cfg, const char *name, const char *value)
{
    cfg->settings[cfg->n_settings].name = xstrdup(name);
    cfg->settings[cfg->n_settings].value = xstrdup(value);
    cfg->n_settings++;
}

/* A shorthand for a library option that takes milliseconds. */
static void add_duration_setting(struct config *cfg, const char *option, const char *name,
                                 const char *text)
{
    char value[24];

    snprintf(value, sizeof value, "%" PRId64, duration_arg(option, text));
    add_setting(cfg, name, value);
}

static void add_option_setting(struct config *cfg, char *text)
{
    const char *eq = strchr(text, '=');
    char *name;

    if (eq == NULL || eq == text)
        usage_error("--option takes NAME=VALUE, not '%s'", text);
    name = xstrdup(text);
    name[eq - text] = '\0';
    add_setting(cfg, name, eq + 1);
    /* The process list shows the arguments: a password's value goes. */
    if (secret_option(name))
        hide_option_value(text);
    free(name);
}

static int exit_code_arg(const char *text)
{
    char *end;
    long value;

    errno = 0;
    value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value > 255)
        usage_error("--conflict-exit-code takes a number from 0 to 255, not '%s'", text);
    return (int)value;
}

static int permits_arg(const char *text)
{
    char *end;
    long value;

    errno = 0;
    value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 1 || value > REDLOCK_MAX_PERMITS)
        usage_error("--permits takes a number from 1 to %d, not '%s'", REDLOCK_MAX_PERMITS,
                    text);
    return (int)value;
}

/* Whether NAME looks like the list of nodes that "-n URI" used to give. */
static bool looks_like_nodes(const char *name)
{
    return strncmp(name, "redis://", 8) == 0 || strncmp(name, "unix://", 7) == 0;
}

/* The command after NAME: "-c STRING" (as flock takes it), or [--] COMMAND [ARGS...]. */
static void parse_command(struct config *cfg, int argc, char **argv, int next)
{
    if (next < argc && cfg->shell_command == NULL &&
        (strcmp(argv[next], "-c") == 0 || strcmp(argv[next], "--command") == 0)) {
        if (next + 1 >= argc)
            usage_error("option '%s' needs a value", argv[next]);
        cfg->shell_command = argv[next + 1];
        next += 2;
    } else if (next < argc && strcmp(argv[next], "--") == 0) {
        next++;
    }
    if (cfg->shell_command != NULL) {
        if (next < argc)
            usage_error("-c takes the whole command as one STRING; unexpected '%s'", argv[next]);
        cfg->shell_argv[0] = (char *)SHELL;
        cfg->shell_argv[1] = "-c";
        cfg->shell_argv[2] = (char *)cfg->shell_command;
        cfg->shell_argv[3] = NULL;
        cfg->command = cfg->shell_argv;
        return;
    }
    if (next >= argc)
        usage_error("missing the COMMAND to run under '%s'", cfg->name);
    cfg->command = &argv[next];
}

static void parse_args(struct config *cfg, int argc, char **argv)
{
    enum {
        OPT_NODES = 256,
        OPT_KEY_PREFIX,
        OPT_NODE_TIMEOUT,
        OPT_CONNECT_TIMEOUT,
        OPT_RETRY_DELAY,
        OPT_PASSWORD_FILE,
        OPT_SENTINEL_PASSWORD_FILE,
        OPT_FENCING,
        OPT_CHECK,
        OPT_LOAD_FUNCTIONS,
        OPT_PERMITS,
        OPT_FAIR,
    };
    /* One option a line: tests/cli checks that --help documents each of them. */
    static const struct option long_options[] = {
        {"shared", no_argument, NULL, 's'},
        {"exclusive", no_argument, NULL, 'x'},
        {"permits", required_argument, NULL, OPT_PERMITS},
        {"fair", no_argument, NULL, OPT_FAIR},
        {"nonblock", no_argument, NULL, 'n'},
        {"nb", no_argument, NULL, 'n'},
        {"wait", required_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, 'w'},
        {"conflict-exit-code", required_argument, NULL, 'E'},
        {"command", required_argument, NULL, 'c'},
        {"nodes", required_argument, NULL, OPT_NODES},
        {"ttl", required_argument, NULL, 't'},
        {"key-prefix", required_argument, NULL, OPT_KEY_PREFIX},
        {"node-timeout", required_argument, NULL, OPT_NODE_TIMEOUT},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"retry-delay", required_argument, NULL, OPT_RETRY_DELAY},
        {"fencing", no_argument, NULL, OPT_FENCING},
        {"option", required_argument, NULL, 'o'},
        {"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
        {"sentinel-password-file", required_argument, NULL, OPT_SENTINEL_PASSWORD_FILE},
        {"check", no_argument, NULL, OPT_CHECK},
        {"load-functions", no_argument, NULL, OPT_LOAD_FUNCTIONS},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    bool short_n = false; /* -n, for the hint when NAME is a node URI */
    int opt, long_index = -1;

    memset(cfg, 0, sizeof *cfg);
    cfg->ttl_ms = TTL_UNSET;
    cfg->wait_ms = WAIT_UNTIL_FREE;
    cfg->conflict_exit = EX_TEMPFAIL;
    /* Each argument adds at most one entry to either array. */
    cfg->node_lists = xmalloc(sizeof *cfg->node_lists * (size_t)argc);
    cfg->settings = xmalloc(sizeof *cfg->settings * (size_t)argc);

    /* "+": stop at NAME, so that COMMAND's own options are left alone. */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:sxenw:E:c:t:o:qvhV", long_options, &long_index))
           != -1) {
        switch (opt) {
        case 's':
            cfg->shared = true;
            break;
        case 'x':
        case 'e':
            cfg->shared = false;   /* the later of -s and -x wins, as in flock */
            break;
        case OPT_PERMITS:
            cfg->permits = permits_arg(optarg);
            break;
        case OPT_FAIR:
            cfg->fair = true;
            break;
        case 'n':
            cfg->nonblock = true;
            short_n = short_n || long_index < 0;
            break;
        case 'c':
            cfg->shell_command = optarg;
            break;
        case OPT_NODES:
            /* A copy; the argument, as the process list shows it, loses its
             * credentials. */
            cfg->node_lists[cfg->n_node_lists++] = xstrdup(optarg);
            hide_list_credentials(optarg);
            break;
        case 't':
            cfg->ttl_ms = duration_arg("ttl", optarg);
            if (cfg->ttl_ms == 0)
                usage_error("--ttl must be more than 0");
            break;
        case 'w':
            cfg->wait_ms = duration_arg("wait", optarg);
            break;
        case OPT_KEY_PREFIX:
            add_setting(cfg, "key_prefix", optarg);
            break;
        case OPT_NODE_TIMEOUT:
            add_duration_setting(cfg, "node-timeout", "node_timeout_ms", optarg);
            break;
        case OPT_CONNECT_TIMEOUT:
            add_duration_setting(cfg, "connect-timeout", "connect_timeout_ms", optarg);
            break;
        case OPT_RETRY_DELAY:
            add_duration_setting(cfg, "retry-delay", "retry_delay_ms", optarg);
            break;
        case OPT_FENCING:
            add_setting(cfg, "fencing", "1");
            break;
        case 'o':
            add_option_setting(cfg, optarg);
            break;
        case OPT_PASSWORD_FILE:
            cfg->password_file = optarg;
            break;
        case OPT_SENTINEL_PASSWORD_FILE:
            cfg->sentinel_password_file = optarg;
            break;
        case OPT_CHECK:
            cfg->check = true;
            break;
        case OPT_LOAD_FUNCTIONS:
            cfg->load = true;
            break;
        case 'E':
            cfg->conflict_exit = exit_code_arg(optarg);
            break;
        case 'q':
            verbosity = QUIET;
            break;
        case 'v':
            verbosity = VERBOSE;
            break;
        case 'h':
            print_usage();
            exit(EX_OK);
        case 'V':
            /* hiredis: the headers the tool was built with, those of the
             * library's build beside it (linked into the library). */
            printf("redlock %s (libredlock %s, hiredis %d.%d.%d)\n", REDLOCK_VERSION_STRING,
                   redlock_version_string(), HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
            exit(EX_OK);
        case ':':
            usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt != 0)
                usage_error("unknown option '-%c'", optopt);
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
        long_index = -1;
    }
    if (cfg->permits > 0 && cfg->shared)
        usage_error("--permits and --shared do not go together: a permit is neither "
                    "shared nor exclusive");
    if (cfg->fair && (cfg->shared || cfg->permits > 0))
        usage_error("--fair goes with neither --shared nor --permits: the fair lock is "
                    "exclusive");
    if (cfg->check && cfg->load)
        usage_error("--check and --load-functions do not go together");
    if (cfg->check || cfg->load) {
        if (optind < argc)
            usage_error("%s takes no NAME or COMMAND; unexpected '%s'",
                        cfg->check ? "--check" : "--load-functions", argv[optind]);
        return;
    }
    if (optind >= argc)
        usage_error("missing the lock NAME and the COMMAND to run");
    cfg->name = argv[optind++];
    if (*cfg->name == '\0')
        usage_error("the lock NAME must not be empty");
    if (short_n && looks_like_nodes(cfg->name))
        usage_error("-n means --nonblock (as in flock); name the nodes with --nodes '%s'",
                    cfg->name);
    parse_command(cfg, argc, argv, optind);
}

/* Reads a password: the first line of FILE, else the variable env. NULL if neither. */
static char *read_password(const char *file, const char *variable)
{
    char buf[PASSWORD_MAX_BYTES + 2];
    char *password;
    const char *env;
    FILE *f;
    size_t len;

    if (file == NULL) {
        env = getenv(variable);
        return env != NULL && *env != '\0' ? xstrdup(env) : NULL;
    }
    f = fopen(file, "re");
    if (f == NULL)
        usage_error("cannot open the password file '%s': %s", file, strerror(errno));
    if (fgets(buf, sizeof buf, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    len = strcspn(buf, "\r\n");
    buf[len] = '\0';
    password = xstrdup(buf);
    wipe(buf, sizeof buf);
    if (len > PASSWORD_MAX_BYTES)
        usage_error("the password in '%s' is longer than %d bytes", file, PASSWORD_MAX_BYTES);
    if (len == 0)
        usage_error("the password file '%s' is empty", file);
    return password;
}

/* Appends s to out, percent-encoding every byte but the URI's unreserved ones. */
static char *percent_encode(char *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (isalnum(c) || strchr("-._~", c) != NULL) {
            *out++ = (char)c;
        } else {
            *out++ = '%';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 15];
        }
    }
    return out;
}

/*
 * Returns a copy of uri, with password added when the URI carries none:
 * redis://host -> redis://:password@host, and redis://user@host ->
 * redis://user:password@host. The userinfo ends at the last '@' before the
 * path, which starts at the first '/' after "scheme://".
 */
static char *uri_with_password(const char *uri, const char *password)
{
    const char *scheme_end = strstr(uri, "://");
    const char *authority, *path, *at = NULL, *insert_at;
    char *copy, *out;

    if (password == NULL || scheme_end == NULL)
        return xstrdup(uri);
    authority = scheme_end + 3;
    path = authority + strcspn(authority, "/");
    for (const char *p = authority; p < path; p++) {
        if (*p == '@')
            at = p;
    }
    if (at != NULL && memchr(authority, ':', (size_t)(at - authority)) != NULL)
        return xstrdup(uri); /* it has a password of its own */

    /* Insert ":password" before the '@', or ":password@" before the host. */
    insert_at = at != NULL ? at : authority;
    copy = xmalloc(strlen(uri) + 3 * strlen(password) + 3);
    out = copy;
    memcpy(out, uri, (size_t)(insert_at - uri));
    out += insert_at - uri;
    *out++ = ':';
    out = percent_encode(out, password);
    if (at == NULL)
        *out++ = '@';
    strcpy(out, insert_at);
    return copy;
}

/* Releases a string that may hold a password. */
static void free_secret(char *s)
{
    if (s != NULL) {
        wipe(s, strlen(s));
        free(s);
    }
}

/* Splits the node lists into URIs, each with the password when it lacks one. */
static size_t collect_nodes(const struct config *cfg, const char *password, char ***out)
{
    const char *env = getenv("REDLOCK_NODES");
    const char *const *lists = (const char *const *)cfg->node_lists;
    size_t n_lists = cfg->n_node_lists;
    size_t n = 0, max = 0;
    char **uris;

    if (n_lists == 0) {
        if (env == NULL || *env == '\0')
            usage_error("no nodes: use --nodes URI[,URI...] or set REDLOCK_NODES");
        lists = &env;
        n_lists = 1;
    }
    for (size_t i = 0; i < n_lists; i++) {
        for (const char *p = lists[i]; *p; p++)
            max += *p == ',';
        max++;
    }
    uris = xmalloc(sizeof *uris * max);
    for (size_t i = 0; i < n_lists; i++) {
        const char *p = lists[i];

        for (;;) {
            size_t len = redlock_uri_list_next(p);   /* a comma that starts a new URI */
            size_t start = 0;
            char *uri;

            while (start < len && isspace((unsigned char)p[start]))
                start++;
            while (len > start && isspace((unsigned char)p[len - 1]))
                len--;
            if (len == start)
                usage_error("empty node URI in the list of nodes");
            uri = xmalloc(len - start + 1);
            memcpy(uri, p + start, len - start);
            uri[len - start] = '\0';
            uris[n++] = uri_with_password(uri, password);
            free_secret(uri);
            p += redlock_uri_list_next(p);
            if (*p == '\0')
                break;
            p++;
        }
    }
    *out = uris;
    return n;
}

/* -v: the library's events, on stderr (from whichever thread runs the library). */
static void print_event(void *data, int level, const char *event, const char *message)
{
    const char *name = level >= REDLOCK_LOG_ERROR ? "error"
                     : level >= REDLOCK_LOG_WARN  ? "warn"
                     : level >= REDLOCK_LOG_INFO  ? "info" : "debug";

    char escaped[2][2048];

    (void)data;
    /* The library escapes its messages already; a name is escaped here too. */
    fprintf(stderr, "redlock: [%s] %s %s\n", name,
            rl_escape_controls(escaped[0], sizeof escaped[0], event),
            rl_escape_controls(escaped[1], sizeof escaped[1], message));
}

/* The library's events: all of them with -v; else only a failed renewal of
 * the lock (data: its name), which is retried while validity lasts. */
static void on_event(void *data, int level, const char *event, const char *message)
{
    if (verbosity == VERBOSE)
        print_event(NULL, level, event, message);
    if (strcmp(event, "renewal_failed") == 0)
        say("cannot extend '%s': %s", (const char *)data, message);
}

/* The client's lease of a kept lock (watchdog_lease_ms). */
static int64_t kept_lease_ms(redlock_ctx *ctx)
{
    char value[32];

    if (redlock_ctx_get_option(ctx, "watchdog_lease_ms", value, sizeof value) != REDLOCK_OK)
        return 30000;
    return strtoll(value, NULL, 10);
}

/* Makes the client and applies the settings. Returns an exit status, EX_OK on success. */
static int open_ctx(redlock_ctx **out, const struct config *cfg)
{
    char *password = read_password(cfg->password_file, "REDLOCK_PASSWORD");
    char *sentinel_password = read_password(cfg->sentinel_password_file,
                                            "REDLOCK_SENTINEL_PASSWORD");
    char **uris;
    size_t n = collect_nodes(cfg, password, &uris);
    int rc = redlock_ctx_new(out, (const char *const *)uris, n);

    for (size_t i = 0; i < n; i++)
        free_secret(uris[i]);
    free(uris);
    free_secret(password);
    if (rc != REDLOCK_OK) {
        const char *detail = redlock_errmsg();

        /* Not say(): the list of nodes is the user's input. */
        fprintf(stderr, "redlock: bad list of nodes: %s%s%s\n", redlock_strerror(rc),
                *detail ? ": " : "", detail);
        free_secret(sentinel_password);
        return rc == REDLOCK_ENOMEM ? EX_SOFTWARE : EX_USAGE;
    }
    /* Before the settings: -o sentinel_password wins. */
    if (sentinel_password != NULL)
        rc = redlock_ctx_set_option(*out, "sentinel_password", sentinel_password);
    free_secret(sentinel_password);
    if (rc != REDLOCK_OK) {
        fprintf(stderr, "redlock: cannot set the sentinels' password: %s\n", redlock_errmsg());
        return rc == REDLOCK_ENOMEM ? EX_SOFTWARE : EX_USAGE;
    }
    for (size_t i = 0; i < cfg->n_settings; i++) {
        const struct setting *s = &cfg->settings[i];

        rc = redlock_ctx_set_option(*out, s->name, s->value);
        if (rc != REDLOCK_OK) {
            const char *detail = redlock_errmsg();

            /* A password's value is named, never shown. */
            fprintf(stderr, "redlock: cannot set option %s%s%s%s: %s%s%s\n", s->name,
                    secret_option(s->name) ? " (its value is not shown)" : " to '",
                    secret_option(s->name) ? "" : s->value,
                    secret_option(s->name) ? "" : "'", redlock_strerror(rc),
                    *detail ? ": " : "", detail);
            return rc == REDLOCK_ENOMEM ? EX_SOFTWARE : EX_USAGE;
        }
    }
    if (verbosity != QUIET)
        redlock_ctx_set_log(*out, on_event,
                            verbosity == VERBOSE ? REDLOCK_LOG_DEBUG : REDLOCK_LOG_WARN,
                            (void *)cfg->name);
    return EX_OK;
}

/* Decodes a percent-encoded value of redlock_ctx_health in place. */
static char *unescape(char *value)
{
    char *out = value;

    for (const char *p = value; *p; p++) {
        if (p[0] == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
            char hex[3] = {p[1], p[2], '\0'};

            *out++ = (char)strtol(hex, NULL, 16);
            p += 2;
        } else {
            *out++ = *p;
        }
    }
    *out = '\0';
    return value;
}

/* The value of key in a line of redlock_ctx_health (decoded in place), or "". */
static const char *health_field(char **fields, size_t n, const char *key)
{
    size_t len = strlen(key);

    for (size_t i = 0; i < n; i++) {
        if (strncmp(fields[i], key, len) == 0 && fields[i][len] == '=')
            return fields[i] + len + 1;
    }
    return "";
}

/* Splits a line of redlock_ctx_health into its fields (up to 32, values
 * decoded in place); how many. */
static size_t split_health(char *line, char *fields[32])
{
    size_t n = 0;

    for (char *f = strtok(line, " "); f != NULL && n < 32; f = strtok(NULL, " ")) {
        char *eq = strchr(f, '=');

        if (eq != NULL)
            unescape(eq + 1);
        fields[n++] = f;
    }
    return n;
}

/* Prints one node's line of the health check. */
static void print_node(char *line)
{
    char *fields[32];
    size_t n = split_health(line, fields);
    const char *state, *error, *rtt;
    bool answers;

    state = health_field(fields, n, "state");
    error = health_field(fields, n, "last_error");
    rtt = health_field(fields, n, "rtt_ms");
    answers = strcmp(state, "up") == 0 || strcmp(state, "guarded") == 0;
    printf("%s", health_field(fields, n, "node"));
    /* A Sentinel group: the master its sentinels named; a Cluster: its
     * masters (each with a run_id of its own). */
    const char *kind = health_field(fields, n, "kind");
    bool cluster = strcmp(kind, "cluster") == 0;
    if (strcmp(kind, "sentinel") == 0 || cluster)
        printf(" (%s %s)", cluster ? "masters" : "master", health_field(fields, n, "server"));
    printf(" %s", state);
    /* The library's clock counts whole milliseconds: less than one reads 0.x. */
    if (answers && cluster)
        printf(" rtt %s ms, redis %s", strtod(rtt, NULL) < 1 ? "<1" : rtt,
               health_field(fields, n, "version"));
    else if (answers)
        printf(" rtt %s ms, run_id %s, redis %s", strtod(rtt, NULL) < 1 ? "<1" : rtt,
               health_field(fields, n, "run_id"), health_field(fields, n, "version"));
    if (strcmp(state, "guarded") == 0)
        printf(" (may have lost keys, restarted or failed over: not counted for new locks for "
               "%s ms more)", health_field(fields, n, "guard_ms"));
    else if (!answers && *error)
        printf(" (%s)", error);
    putchar('\n');
}

/* The exit status for a failure of the nodes, the same for a lock and for
 * --check. */
static int failure_status(int rc)
{
    switch (rc) {
    case REDLOCK_ENOQUORUM:
    case REDLOCK_EEXPIRED:
    case REDLOCK_EREDIS:
        return EX_UNAVAILABLE;
    case REDLOCK_EAUTH:
    case REDLOCK_ENOPERM:   /* shares 77 with refused credentials: see the help's exit status */
    case REDLOCK_ETLS:
        return EX_NOPERM;
    case REDLOCK_EINVAL:
        return EX_USAGE;
    default:
        return EX_SOFTWARE;
    }
}

/* The exit status for a failure to take the lock. */
static int acquire_failure_status(int rc, const struct config *cfg)
{
    return rc == REDLOCK_ELOCKED ? cfg->conflict_exit : failure_status(rc);
}

/* --check: pings every node, prints each one's health and whether a quorum
 * answers. EX_OK when it does; else as a lock that failed for the same
 * reason: EX_NOPERM when a quorum refused the credentials (or a command, or
 * TLS), EX_UNAVAILABLE when too few answer. */
static int check_nodes(redlock_ctx *ctx)
{
    size_t size = (size_t)REDLOCK_MAX_NODES * REDLOCK_HEALTH_LINE_MAX, n = 0;
    char *text = xmalloc(size);
    int answered = 0;
    int rc = redlock_ctx_ping(ctx, &answered);

    if (redlock_ctx_health(ctx, text, size) != REDLOCK_OK) {
        say("cannot read the nodes' health: %s", redlock_errmsg());
        free(text);
        return EX_SOFTWARE;
    }
    for (char *line = text, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        *end = '\0';
        if (verbosity != QUIET)
            print_node(line);
        n++;
    }
    if (verbosity != QUIET)
        printf("%s: %d of %zu nodes answer, %zu needed\n", rc == REDLOCK_OK ? "healthy"
               : "not healthy", answered, n, n / 2 + 1);
    free(text);
    return rc == REDLOCK_OK ? EX_OK : failure_status(rc);
}

/* --load-functions: the nodes where the library's event functions_loaded
 * said it was loaded now, one "node=LABEL " after another. */
struct loads {
    char text[8192];
};

static void note_load(void *data, int level, const char *event, const char *message)
{
    struct loads *loads = data;
    size_t used = strlen(loads->text), len = strcspn(message, " ");

    if (strcmp(event, "functions_loaded") == 0 && used + len + 2 < sizeof loads->text) {
        memcpy(loads->text + used, message, len);
        memcpy(loads->text + used + len, " ", 2);
    }
    if (verbosity == VERBOSE)
        print_event(NULL, level, event, message);
}

/* --load-functions: asks every node with the option load_functions on (a
 * node without this version's library gets it loaded), then prints per
 * node what it did. The load goes on a connection's handshake, behind its
 * probe, and its answer is read by the next command there: a few pings
 * read it. EX_OK when every node has the library; EX_NOPERM when a node
 * refused FUNCTION LOAD; EX_UNAVAILABLE otherwise. */
static int load_functions(redlock_ctx *ctx)
{
    size_t size = (size_t)REDLOCK_MAX_NODES * REDLOCK_HEALTH_LINE_MAX;
    char *text = xmalloc(size);
    struct loads loads = { .text = "" };
    int answered = 0, status = EX_OK;

    if (redlock_ctx_set_option(ctx, "load_functions", "1") != REDLOCK_OK
        || redlock_ctx_set_log(ctx, note_load, REDLOCK_LOG_DEBUG, &loads) != REDLOCK_OK) {
        say("cannot set up the client: %s", redlock_errmsg());
        free(text);
        return EX_SOFTWARE;
    }
    for (int i = 0; i < 3; i++)
        redlock_ctx_ping(ctx, &answered);
    redlock_ctx_set_log(ctx, NULL, REDLOCK_LOG_DEBUG, NULL);
    if (redlock_ctx_health(ctx, text, size) != REDLOCK_OK) {
        say("cannot read the nodes' health: %s", redlock_errmsg());
        free(text);
        return EX_SOFTWARE;
    }
    for (char *line = text, *end; *line; line = end + 1) {
        char *fields[32], mark[REDLOCK_HEALTH_LINE_MAX];
        end = strchr(line, '\n');
        *end = '\0';
        size_t n = split_health(line, fields);
        const char *node = health_field(fields, n, "node");
        const char *way = health_field(fields, n, "scripts");
        const char *error = health_field(fields, n, "last_error");
        const char *what = "already loaded";

        snprintf(mark, sizeof mark, "node=%s ", node);
        if (strcmp(way, "functions") == 0 && strstr(loads.text, mark)) {
            what = "loaded";
        } else if (strcmp(way, "functions") != 0) {
            what = "not loaded";
            if (strstr(error, "FUNCTION LOAD refused"))
                status = EX_NOPERM;
            else if (status == EX_OK)
                status = EX_UNAVAILABLE;
        }
        /* A Cluster's masters each hold their own functions: this run
         * reached some of them. */
        const char *note = strcmp(health_field(fields, n, "kind"), "cluster") == 0
                         ? " (on the Cluster masters it reached; each needs it)" : "";
        if (verbosity != QUIET && strcmp(what, "not loaded") == 0)
            printf("%s: not loaded (%s)%s\n", node, *error ? error
                   : strcmp(way, "eval") == 0 ? "it cannot call functions: a server before "
                     "Redis 7.0, or an ACL without +fcall" : "no answer", note);
        else if (verbosity != QUIET)
            printf("%s: %s%s\n", node, what, note);
    }
    free(text);
    return status;
}

/* ---- Signals: the handler writes the signal number to a self-pipe. ---- */

static int signal_pipe[2] = {-1, -1};
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* The name of a forwarded signal without its SIG (glibc's sigabbrev_np is
 * 2.32's; the tool runs on 2.17). */
static const char *signal_name(int signo)
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
static int wait_interrupted_by;

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
static int install_signal_handlers(void)
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
static int wait_interrupted(void *data)
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
static int die_of_signal(int signo)
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
static void ignore_sigpipe(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &saved_actions[SIGPIPE]);
}

/* Opens /dev/null on whichever of stdin, stdout and stderr is closed, so
 * that no socket or pipe of redlock's takes its number and gets messages. */
static void keep_std_fds_open(void)
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
static bool start_command(struct run *run)
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

static void reap_child(struct run *run)
{
    int status;

    if (!run->child_done && waitpid(run->child, &status, WNOHANG) == run->child) {
        run->child_done = true;
        run->child_status = status;
    }
}

/* Forwards the signals waiting in the self-pipe; SIGCHLD only woke us up. */
static void forward_signals(struct run *run)
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

/* The command's status as a shell reports it. */
static int command_status(int wait_status)
{
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return WEXITSTATUS(wait_status);
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

static int acquire_and_run(redlock_ctx *ctx, const struct config *cfg)
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

static void free_config(struct config *cfg)
{
    for (size_t i = 0; i < cfg->n_settings; i++) {
        free(cfg->settings[i].name);
        free_secret(cfg->settings[i].value);
    }
    for (size_t i = 0; i < cfg->n_node_lists; i++)
        free_secret(cfg->node_lists[i]);
    free(cfg->settings);
    free(cfg->node_lists);
}

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
