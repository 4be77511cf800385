#ifndef CAIRN_BENCH_SCHEDULE_H
#define CAIRN_BENCH_SCHEDULE_H

#include <stdint.h>

/*
 * Open-loop send schedule of `produce --rate`: record i is due at
 * start + i / rate seconds, whatever happened to the records before it, so
 * a stall delays the records due during it and their latency (measured
 * from the due time) shows the stall instead of hiding it (coordinated
 * omission). Pure arithmetic, no state.
 */

/* Due time of record `index` in microseconds, exact to the microsecond
 * (no drift: record `rate` is due exactly one second after record 0).
 * rate is in records per second (0: every record due at start_us). No
 * intermediate overflows: the result is exact whenever it fits in 64 bits
 * (index / rate under about 1.8 * 10^13 seconds). */
uint64_t bench_schedule_due_us(uint64_t start_us, uint64_t index, uint64_t rate);

/* Records per second actually sent: `sent` records, the first due at
 * start_us, the last handed to the client at last_send_us. A run that kept
 * to the schedule gets `rate` (up to the due times' microsecond rounding);
 * one that fell behind gets less.
 * Returns 0 when nothing was sent. */
double bench_schedule_achieved_rate(uint64_t sent, uint64_t start_us, uint64_t last_send_us, uint64_t rate);

#endif
