#ifndef CAIRN_BENCH_HISTOGRAM_H
#define CAIRN_BENCH_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Log-linear latency histogram in microseconds: exact below 128 us, then 64
 * buckets per power of two (relative error under 1.6%). Fixed size, so
 * recording never allocates, whatever the record count.
 *
 * Thread-safety: none. In the producer it is only touched from delivery
 * report callbacks, which librdkafka runs on the thread calling
 * rd_kafka_poll()/rd_kafka_flush(), i.e. the main thread.
 */
#define BENCH_HISTOGRAM_SUB_BITS 6
#define BENCH_HISTOGRAM_BUCKETS (128 + 58 * 64)

struct bench_histogram {
    uint64_t counts[BENCH_HISTOGRAM_BUCKETS];
    uint64_t total;
    uint64_t max_us;
};

void bench_histogram_init(struct bench_histogram *h);
void bench_histogram_record(struct bench_histogram *h, uint64_t value_us);

/* Smallest recorded value v such that at least `quantile` of the samples are
 * <= v, reported as the midpoint of its bucket (never above the max seen).
 * Returns 0 for an empty histogram. */
uint64_t bench_histogram_quantile(const struct bench_histogram *h, double quantile);

/* Exposed for tests: bucket of a value, and the bucket's [low, high] range. */
size_t bench_histogram_bucket_of(uint64_t value_us);
void bench_histogram_bucket_range(size_t bucket, uint64_t *low, uint64_t *high);

#endif
