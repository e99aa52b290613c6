/*
 * cli_base.c - what every layer of the tool uses: its messages on stderr
 * (one line each, control bytes escaped, none with --quiet), memory that
 * ends the tool when it runs out, and the exit status for a failure of the
 * nodes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "hygiene.h"

int verbosity = NORMAL;

/* Writes "redlock: <message>" on stderr, one line: a newline or another
 * control byte in a name or a node's answer is escaped. */
static void print_line(const char *fmt, va_list ap)
{
    char text[4096], escaped[4096];

    vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr, "redlock: %s\n", rl_escape_controls(escaped, sizeof escaped, text));
}

/* Prints "redlock: <message>" on stderr unless --quiet. */
void say(const char *fmt, ...)
{
    va_list ap;

    if (verbosity == QUIET)
        return;
    va_start(ap, fmt);
    print_line(fmt, ap);
    va_end(ap);
}

/* Reports a library failure: what failed, the code's meaning and the detail. */
void say_failure(const char *what, const char *name, int rc)
{
    const char *detail = redlock_errmsg();

    say("%s '%s': %s%s%s", what, name, redlock_strerror(rc), *detail ? ": " : "", detail);
}

/* Usage errors are printed even with --quiet: nothing ran. */
void usage_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    print_line(fmt, ap);
    va_end(ap);
    fputs("Try 'redlock --help' for more information.\n", stderr);
    exit(EX_USAGE);
}

void *xmalloc(size_t size)
{
    void *p = malloc(size);

    if (p == NULL) {
        fputs("redlock: out of memory\n", stderr);
        exit(EX_SOFTWARE);
    }
    return p;
}

char *xstrdup(const char *s)
{
    size_t len = strlen(s) + 1;

    return memcpy(xmalloc(len), s, len);
}

/* Releases a string that may hold a password. */
void free_secret(char *s)
{
    if (s != NULL) {
        wipe(s, strlen(s));
        free(s);
    }
}

/* -v: the library's events, on stderr (from whichever thread runs the library). */
void print_event(void *data, int level, const char *event, const char *message)
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

/* The exit status for a failure of the nodes, the same for a lock and for
 * --check. */
int failure_status(int rc)
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
