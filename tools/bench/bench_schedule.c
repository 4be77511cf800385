#include "bench_schedule.h"

#define US_PER_S 1000000u

uint64_t bench_schedule_due_us(uint64_t start_us, uint64_t index, uint64_t rate)
{
    if (rate == 0)
        return start_us;
    /* Whole seconds first, then the remainder: index * 10^6 alone would
     * overflow for large indexes, and (index % rate) * 10^6 stays below
     * rate * 10^6. */
    return start_us + (index / rate) * US_PER_S + (index % rate) * US_PER_S / rate;
}

double bench_schedule_achieved_rate(uint64_t sent, uint64_t start_us, uint64_t last_send_us, uint64_t rate)
{
    if (sent == 0 || rate == 0)
        return 0.0;
    /* The last record occupies one interval of its own: N records on
     * schedule span N / rate seconds, not (N - 1) / rate. */
    double span_us = (double)(last_send_us > start_us ? last_send_us - start_us : 0) + (double)US_PER_S / (double)rate;
    return (double)sent * (double)US_PER_S / span_us;
}
