/* A byte-rate throttle shared by threads, as Kafka's Throttler works: the
 * bytes observed since the period started are compared, once the period is
 * longer than the check interval or they exceed what the rate allows in one
 * interval, with the wanted rate, and the observer that finds them over it
 * sleeps until the rate is met; a new period starts. It sleeps holding
 * the throttle's lock, so every thread observing meanwhile waits too: the
 * rate bounds all of them together. Used by the log cleaner threads for
 * log.cleaner.io.max.bytes.per.second over the bytes they read and write.
 *
 * Thread-safety: every function may be called from any thread once
 * log_throttler_init returned; init and destroy are not concurrent with
 * anything else. */
#ifndef CAIRN_LOG_LOG_THROTTLER_H
#define CAIRN_LOG_LOG_THROTTLER_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define LOG_THROTTLER_CHECK_INTERVAL_MS 300

struct log_throttler {
    bool enabled; /* false: a rate no byte count can reach */
    double bytes_per_second;
    pthread_mutex_t lock; /* held through a sleep, so other observers wait */
    pthread_mutex_t cancel_lock;
    pthread_cond_t cancel_cond;
    bool cancelled;          /* under cancel_lock: sleeps end at once */
    int64_t period_start_ns; /* under lock, monotonic */
    int64_t observed;        /* under lock: bytes since period_start_ns */
    int64_t observed_total;  /* under lock: every byte observed since init */
};

/* bytes_per_second at or above 1e300 (Kafka's Double.MaxValue default), or
 * not positive, throttles nothing. */
void log_throttler_init(struct log_throttler *t, double bytes_per_second);
/* Count bytes read or written; may sleep to hold the rate. */
void log_throttler_observe(struct log_throttler *t, int64_t bytes);
/* End current and future sleeps (shutdown). */
void log_throttler_cancel(struct log_throttler *t);
void log_throttler_destroy(struct log_throttler *t);

#endif
