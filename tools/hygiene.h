/*
 * hygiene.h - what the redlock tool does so that secrets stay where they
 * were given and no name forges a line of its messages: the credentials of
 * node URIs found and hidden (in its argv, in the command's environment),
 * secret option values overwritten, and control bytes escaped.
 */
#ifndef REDLOCK_TOOL_HYGIENE_H
#define REDLOCK_TOOL_HYGIENE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a library option's value is a secret, never shown (its name
 * holds "password"). */
bool secret_option(const char *name);

/* Overwrites, in place, the credentials of every URI in a comma-separated
 * list of nodes (what precedes the '@' that ends them, as the library reads
 * them) with 'x': for an argument of the tool, as /proc/PID/cmdline shows it. */
void hide_list_credentials(char *list);

/* Overwrites s from its first '=' on with 'x' (a NAME=VALUE argument whose
 * value is secret). */
void hide_option_value(char *s);

/* A copy of the list of nodes without their credentials: redis://:pw@host
 * becomes redis://host. Free it with free(). */
char *list_without_credentials(const char *list);

/* Prepares the environment of the command: REDLOCK_PASSWORD and
 * REDLOCK_SENTINEL_PASSWORD are wiped and removed, and REDLOCK_NODES loses its
 * credentials (the original's bytes wiped). Returns false (errno set) when
 * the environment cannot be changed. */
bool scrub_environment(void);

/* Marks the process non-dumpable (no core file, no ptrace by others, its
 * /proc/PID/environ and mem readable by root only) while it holds secrets. */
void hold_secrets(void);

/* Overwrites n bytes at p in a way the compiler keeps (glibc's explicit_bzero
 * is 2.25's; the tool runs on 2.17). */
void wipe(void *p, size_t n);

/* rl_escape_controls: control bytes escaped as the library escapes them. */
#include "escape.h"

#endif /* REDLOCK_TOOL_HYGIENE_H */
