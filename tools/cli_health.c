/*
 * cli_health.c - the two runs that take no lock: --check (each node's
 * health from redlock_ctx_health, and whether a quorum answers) and
 * --load-functions (the function library loaded on every node).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

/* The value of field on node's line of text (redlock_ctx_health's), as the
 * library decodes it (redlock_health_value): buf, "" where the node has none. */
static const char *health_field(const char *text, size_t node, const char *field,
                                char buf[REDLOCK_HEALTH_LINE_MAX])
{
    if (redlock_health_value(text, node, field, buf, REDLOCK_HEALTH_LINE_MAX) != REDLOCK_OK)
        buf[0] = '\0';
    return buf;
}

/* Prints the line of node in text for the health check (quiet: only reads
 * it); whether the node answers. */
static bool print_node(const char *text, size_t node, bool quiet)
{
    char state[REDLOCK_HEALTH_LINE_MAX], error[REDLOCK_HEALTH_LINE_MAX];
    char rtt[REDLOCK_HEALTH_LINE_MAX], kind[REDLOCK_HEALTH_LINE_MAX];
    char value[REDLOCK_HEALTH_LINE_MAX], version[REDLOCK_HEALTH_LINE_MAX];
    bool answers;

    health_field(text, node, "state", state);
    health_field(text, node, "last_error", error);
    health_field(text, node, "rtt_ms", rtt);
    answers = strcmp(state, "up") == 0 || strcmp(state, "guarded") == 0;
    if (quiet)
        return answers;
    printf("%s", health_field(text, node, "node", value));
    /* A Sentinel group: the master its sentinels named; a Cluster: its
     * masters (each with a run_id of its own). */
    health_field(text, node, "kind", kind);
    bool cluster = strcmp(kind, "cluster") == 0;
    if (strcmp(kind, "sentinel") == 0 || cluster) {
        const char *server = health_field(text, node, "server", value);
        printf(" (%s %s)", cluster ? "masters" : "master", *server ? server : "-");
    }
    printf(" %s", state);
    /* The library's clock counts whole milliseconds: less than one reads 0.x. */
    health_field(text, node, "version", version);
    if (answers && cluster)
        printf(" rtt %s ms, redis %s", strtod(rtt, NULL) < 1 ? "<1" : rtt, version);
    else if (answers)
        printf(" rtt %s ms, run_id %s, redis %s", strtod(rtt, NULL) < 1 ? "<1" : rtt,
               health_field(text, node, "run_id", value), version);
    if (strcmp(state, "guarded") == 0)
        printf(" (may have lost keys, restarted or failed over: not counted for new locks for "
               "%s ms more)", health_field(text, node, "guard_ms", value));
    else if (!answers && *error)
        printf(" (%s)", error);
    putchar('\n');
    return answers;
}

/* --check: pings every node, prints each one's health and whether a quorum
 * answers. EX_OK when it does; else as a lock that failed for the same
 * reason: EX_NOPERM when a quorum refused the credentials (or a command, or
 * TLS), EX_UNAVAILABLE when too few answer. */
int check_nodes(redlock_ctx *ctx)
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
    size_t answer = 0;
    n = redlock_health_nodes(text);
    for (size_t i = 0; i < n; i++)
        answer += print_node(text, i, verbosity == QUIET);
    /* Nodes may answer and not count: guarded, or young beside records
     * that cannot be read on a majority (restart_records). */
    const char *verdict = rc == REDLOCK_OK ? "healthy" : "not healthy";
    if (verbosity != QUIET && answer == (size_t)answered)
        printf("%s: %d of %zu nodes answer, %zu needed\n", verdict, answered, n, n / 2 + 1);
    else if (verbosity != QUIET)
        printf("%s: %zu of %zu nodes answer, %d of them count, %zu needed\n", verdict, answer, n,
               answered, n / 2 + 1);
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
int load_functions(redlock_ctx *ctx)
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
    for (size_t i = 0, n = redlock_health_nodes(text); i < n; i++) {
        char node[REDLOCK_HEALTH_LINE_MAX], way[REDLOCK_HEALTH_LINE_MAX];
        char error[REDLOCK_HEALTH_LINE_MAX], kind[REDLOCK_HEALTH_LINE_MAX];
        char mark[REDLOCK_HEALTH_LINE_MAX + 8];
        const char *what = "already loaded";

        health_field(text, i, "node", node);
        health_field(text, i, "scripts", way);
        health_field(text, i, "last_error", error);

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
        const char *note = strcmp(health_field(text, i, "kind", kind), "cluster") == 0
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
