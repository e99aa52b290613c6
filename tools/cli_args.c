/*
 * cli_args.c - the command line: flock's options and the tool's own, the
 * durations, -o NAME=VALUE and its shorthands, then NAME and the COMMAND
 * (or -c STRING). Secrets leave the process list as they are read.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <hiredis/hiredis.h>   /* HIREDIS_MAJOR, ... for --version: nothing is called */

#include "cli.h"
#include "hygiene.h"

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

/* A number read here, and checked by the library's rule for arg
 * (redlock_arg_check): its message is the one of every language. */
static int64_t checked_arg(int arg, const char *option, double value)
{
    int64_t out;

    if (redlock_arg_check(&out, arg, option, value) != REDLOCK_OK)
        usage_error("%s", redlock_errmsg());
    return out;
}

static int permits_arg(const char *text)
{
    char *end;
    double value;

    value = strtod(text, &end);
    if (end == text || *end != '\0' || !isdigit((unsigned char)text[*text == '-']))
        usage_error("--permits takes a number from 1 to %d, not '%s'", REDLOCK_MAX_PERMITS,
                    text);
    return (int)checked_arg(REDLOCK_ARG_PERMITS, "--permits", value);
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

void parse_args(struct config *cfg, int argc, char **argv)
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
            cfg->ttl_ms = checked_arg(REDLOCK_ARG_LEASE, "--ttl", duration_arg("ttl", optarg));
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

void free_config(struct config *cfg)
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
