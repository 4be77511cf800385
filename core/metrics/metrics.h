/* Process-wide metrics registry: counters and gauges as atomic int64s, and
 * histograms (atomic bucket counts and sum), rendered in the Prometheus text
 * format.
 *
 * Thread-safety: registration and rendering take the registry lock;
 * metrics_add/metrics_set are lock-free atomics callable from any thread.
 * A registered metric lives until metrics_registry_clear (process exit). */
#ifndef CAIRN_METRICS_METRICS_H
#define CAIRN_METRICS_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum metrics_kind { METRICS_COUNTER = 1, METRICS_GAUGE = 2, METRICS_HISTOGRAM = 3 };

struct metrics_metric;

/* True for a legal Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*). */
int metrics_name_valid(const char *name);

/* Registers (or finds, when name and labels match an existing one of the
 * same kind) a metric. labels is NULL or a Prometheus label set without
 * braces, e.g. api="Produce". Returns NULL on a bad name, a kind clash or
 * out of memory. A histogram needs metrics_register_histogram. */
struct metrics_metric *metrics_register(enum metrics_kind kind, const char *name, const char *labels, const char *help);

/* Registers (or finds, as metrics_register) a histogram named name (its
 * series are name_bucket{le=...}, name_sum and name_count). bounds are the
 * buckets' upper bounds, ascending, at most METRICS_HISTOGRAM_MAX_BUCKETS
 * (+Inf is implied). Returns NULL on a bad name or bounds, a kind clash or
 * out of memory. */
#define METRICS_HISTOGRAM_MAX_BUCKETS 32
struct metrics_metric *metrics_register_histogram(const char *name, const char *labels, const char *help,
                                                  const double *bounds, size_t bound_count);
/* Records one observation in a histogram (ignored for other kinds). */
void metrics_observe(struct metrics_metric *metric, double value);

/* Counters and gauges; ignored for a histogram. */
void metrics_add(struct metrics_metric *metric, int64_t delta);
void metrics_set(struct metrics_metric *metric, int64_t value);
/* A counter's or gauge's value; a histogram's observation count. */
int64_t metrics_value(const struct metrics_metric *metric);
enum metrics_kind metrics_kind_of(const struct metrics_metric *metric);

/* Renders every metric; *out is malloc'd (caller frees). Returns 0 or -1. */
int metrics_render(char **out, size_t *len);

/* Frees every metric; nothing may use a metric afterwards. */
void metrics_registry_clear(void);

/* The /metrics HTTP endpoint on its own thread. listen is "host:port"
 * (port 0 picks a free one). */
struct metrics_http;
int metrics_http_start(const char *listen, struct metrics_http **out, char *err, size_t errlen);
int metrics_http_port(const struct metrics_http *server);
void metrics_http_stop(struct metrics_http *server);

#endif
