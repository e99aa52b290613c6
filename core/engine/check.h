/*
 * check.h - the rules of the arguments every binding checks before a call
 * (redlock_arg_check): a wait, a lease, a semaphore's permits. One rule and
 * one message each, so that a bad value reads the same in C, Python, Lua,
 * Java and the tool; the calls check their own arguments by the same rules.
 */
#ifndef RL_CHECK_H
#define RL_CHECK_H

#include "base.h"

/* redlock_arg_check without clearing the thread's message first. */
int rl_check_arg(int64_t *out, int arg, const char *what, double value);

#endif /* RL_CHECK_H */
