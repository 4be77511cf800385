/* Time helpers: wall-clock milliseconds (Kafka timestamps) and monotonic time. */
#ifndef CAIRN_UTIL_CLOCK_H
#define CAIRN_UTIL_CLOCK_H
#include <stdint.h>

int64_t clock_wall_ms(void); /* milliseconds since the Unix epoch */
int64_t clock_mono_ns(void); /* monotonic nanoseconds */
int64_t clock_mono_ms(void); /* monotonic milliseconds */

#endif
