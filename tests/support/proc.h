/*
 * proc.h - what the test support's process sets share (nodes.c, topo.c):
 * free loopback ports, timeouts, reaping a child, removing a directory.
 */
#ifndef REDLOCK_TEST_PROC_H
#define REDLOCK_TEST_PROC_H

#include <sys/time.h>
#include <sys/types.h>

/* A loopback port nobody listens on now, below the kernel's ephemeral range
 * (32768 up), where the local end of an outgoing connection could take it;
 * -1 when none was found. */
int proc_free_port(void);
struct timeval proc_timeval_ms(long ms);
/* Waits up to timeout_ms for *pid to exit (SIGKILL then), and sets it to 0. */
void proc_reap(pid_t *pid, long timeout_ms);
/* Removes dir and everything in it. */
void proc_remove_tree(const char *dir);

#endif /* REDLOCK_TEST_PROC_H */
