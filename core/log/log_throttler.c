#include "log/log_throttler.h"

#include <time.h>

#include "util/clock.h"
#include "util/lock_check.h"

void log_throttler_init(struct log_throttler *t, double bytes_per_second)
{
    t->enabled = bytes_per_second > 0.0 && bytes_per_second < 1e300;
    t->bytes_per_second = bytes_per_second;
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->cancel_lock, NULL);
    /* Monotonic waits: a wall-clock step must not stretch a sleep. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cancel_cond, &attr);
    pthread_condattr_destroy(&attr);
    t->cancelled = false;
    t->period_start_ns = clock_mono_ns();
    t->observed = 0;
    t->observed_total = 0;
}

/* Caller holds lock, and keeps it while asleep: the wait is on
 * cancel_lock. Sleep ns unless cancelled. */
static void sleep_locked(struct log_throttler *t, int64_t ns)
{
    LOCK_ASSERT_HELD(&t->lock);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t total = (int64_t)until.tv_nsec + ns % 1000000000;
    until.tv_sec += (time_t)(ns / 1000000000 + total / 1000000000);
    until.tv_nsec = (long)(total % 1000000000);
    pthread_mutex_lock(&t->cancel_lock);
    while (!t->cancelled && pthread_cond_timedwait(&t->cancel_cond, &t->cancel_lock, &until) == 0) {
    }
    pthread_mutex_unlock(&t->cancel_lock);
}

void log_throttler_observe(struct log_throttler *t, int64_t bytes)
{
    if (!t->enabled || bytes <= 0)
        return;
    pthread_mutex_lock(&t->lock);
    t->observed += bytes;
    t->observed_total += bytes;
    int64_t now = clock_mono_ns();
    int64_t elapsed = now - t->period_start_ns;
    /* Kafka checks once the period outgrows the interval; a burst of more
     * than one interval's worth is checked at once too, so a short pass
     * cannot run unthrottled. */
    double interval_bytes = t->bytes_per_second * LOG_THROTTLER_CHECK_INTERVAL_MS / 1000.0;
    if (elapsed > (int64_t)LOG_THROTTLER_CHECK_INTERVAL_MS * 1000000 || (double)t->observed > interval_bytes) {
        double rate = (double)t->observed * 1e9 / (double)elapsed;
        if (rate > t->bytes_per_second) {
            /* How long these bytes should have taken, less what they did. */
            double wanted_ns = (double)t->observed / t->bytes_per_second * 1e9;
            if (wanted_ns > 1e18)
                wanted_ns = 1e18;
            int64_t sleep_ns = (int64_t)wanted_ns - elapsed;
            if (sleep_ns > 0)
                sleep_locked(t, sleep_ns);
            now = clock_mono_ns();
        }
        t->period_start_ns = now;
        t->observed = 0;
    }
    pthread_mutex_unlock(&t->lock);
}

void log_throttler_cancel(struct log_throttler *t)
{
    pthread_mutex_lock(&t->cancel_lock);
    t->cancelled = true;
    pthread_cond_broadcast(&t->cancel_cond);
    pthread_mutex_unlock(&t->cancel_lock);
}

void log_throttler_destroy(struct log_throttler *t)
{
    pthread_cond_destroy(&t->cancel_cond);
    pthread_mutex_destroy(&t->cancel_lock);
    pthread_mutex_destroy(&t->lock);
}
