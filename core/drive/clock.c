/* clock.c - the monotonic clock every validity computation uses. */
#include <errno.h>
#include <time.h>

#include "clock.h"

int64_t rl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rl_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}
