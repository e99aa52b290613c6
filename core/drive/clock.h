/* clock.h - the monotonic clock and sleeping: for drivers only. The engine
 * never reads a clock; time comes to it as an argument. */
#ifndef RL_CLOCK_H
#define RL_CLOCK_H

#include <stdint.h>

int64_t rl_now_ms(void);          /* monotonic milliseconds */
void rl_sleep_ms(int64_t ms);

#endif /* RL_CLOCK_H */
