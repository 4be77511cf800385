/* The copiers' backoff while the remote store is unavailable. Without it
 * every pass retried every failed copy's cleanup delete and the next copy,
 * each call spending the plugin's whole retry budget against a dead store,
 * so passes grew with the outage. Now the first call that fails as
 * unavailable starts a backoff (remote.log.manager.task.retry.backoff.ms,
 * doubling up to .backoff.max.ms, times 1 +/- .jitter, like Kafka's
 * ExponentialBackoff); copiers skip their remote work until it ends, then
 * one call tries the store again. Nothing is lost meanwhile: copies not
 * made keep their local segments, and the entries of failed copies stay in
 * the partition's durable list until their objects are deleted. */
#include "tiered/tiered_internal.h"

#include <inttypes.h>
#include <sys/random.h>

#include "util/clock.h"
#include "util/logger.h"

/* The wait after `failures` failures in a row (at least 1). */
static int64_t backoff_ms(const struct tiered *t, int32_t failures)
{
    int64_t base = t->opts.retry_backoff_ms > 0 ? t->opts.retry_backoff_ms : 500;
    int64_t cap = t->opts.retry_backoff_max_ms > 0 ? t->opts.retry_backoff_max_ms : 30000;
    double term = (double)base;
    for (int32_t i = 1; i < failures && term < (double)cap; i++)
        term *= 2;
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint32_t)clock_mono_ms() * 2654435761u; /* no entropy yet: any spread will do */
    double unit = (double)r / 4294967295.0;          /* [0, 1] */
    double factor = 1.0 + t->opts.retry_jitter * (2.0 * unit - 1.0);
    double wait = term * factor;
    if (wait > (double)cap)
        wait = (double)cap;
    return wait < 1 ? 1 : (int64_t)wait;
}

bool tiered_store_admit(struct tiered *t)
{
    pthread_mutex_lock(&t->lock);
    bool admitted = t->store_failures == 0;
    int64_t now = clock_mono_ms();
    if (!admitted && now >= t->store_retry_at_ms) {
        admitted = true; /* this caller probes; the others wait another backoff */
        t->store_retry_at_ms = now + backoff_ms(t, t->store_failures);
    }
    pthread_mutex_unlock(&t->lock);
    return admitted;
}

void tiered_store_note(struct tiered *t, int status)
{
    if (status != CAIRN_OK && status != CAIRN_RETRIABLE)
        return;
    pthread_mutex_lock(&t->lock);
    int32_t failures = t->store_failures;
    int64_t wait = 0;
    if (status == CAIRN_OK) {
        t->store_failures = 0;
    } else {
        if (t->store_failures < INT32_MAX)
            t->store_failures++;
        wait = backoff_ms(t, t->store_failures);
        t->store_retry_at_ms = clock_mono_ms() + wait;
    }
    pthread_mutex_unlock(&t->lock);
    if (status == CAIRN_OK && failures > 0)
        logger_info("tiered", "%s answers again after %" PRId32 " failed attempts; remote work resumes", t->plugin_name,
                    failures);
    else if (status == CAIRN_RETRIABLE)
        logger_warn("tiered",
                    "%s unavailable (%" PRId32 " failures in a row): remote copies and deletes wait %" PRId64 " ms",
                    t->plugin_name, failures + 1, wait);
}
