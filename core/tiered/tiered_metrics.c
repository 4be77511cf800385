/* The remote log manager's metrics: what it copies, deletes and fetches,
 * how long plugin fetches take, and its failures by operation and kind. */
#include <stdio.h>

#include "tiered/tiered_internal.h"
#include "util/clock.h"

static const char *const op_names[TIERED_OP_COUNT] = {
    [TIERED_OP_COPY] = "copy",
    [TIERED_OP_FETCH] = "fetch",
    [TIERED_OP_DELETE] = "delete",
};

static const char *const kind_names[TIERED_ERROR_KIND_COUNT] = {
    [TIERED_ERROR_MISSING] = "missing",
    [TIERED_ERROR_CORRUPT] = "corrupt",
    [TIERED_ERROR_UNAVAILABLE] = "unavailable",
    [TIERED_ERROR_OTHER] = "other",
};

static const char *const object_names[TIERED_FETCH_OBJECT_COUNT] = {
    [TIERED_FETCH_SEGMENT] = "segment",
    [TIERED_FETCH_INDEX] = "index",
    [TIERED_FETCH_MANIFEST] = "manifest",
};

/* From a local store's reads (a tenth of a millisecond) to an object
 * store's slowest ranged GETs (its own retries included). */
static const double fetch_latency_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};

enum tiered_error_kind tiered_error_kind_of(int status)
{
    switch (status) {
    case CAIRN_NOT_FOUND:
        return TIERED_ERROR_MISSING;
    case CAIRN_RETRIABLE:
        return TIERED_ERROR_UNAVAILABLE;
    default:
        return TIERED_ERROR_OTHER;
    }
}

void tiered_count_error(struct tiered *t, enum tiered_op op, enum tiered_error_kind kind)
{
    if ((unsigned)op < TIERED_OP_COUNT && (unsigned)kind < TIERED_ERROR_KIND_COUNT)
        metrics_add(t->metrics.errors[op][kind], 1);
}

void tiered_observe_fetch(struct tiered *t, enum tiered_fetch_object object, int64_t started_ns)
{
    if ((unsigned)object < TIERED_FETCH_OBJECT_COUNT)
        metrics_observe(t->metrics.fetch_latency[object], (double)(clock_mono_ns() - started_ns) / 1e9);
}

void tiered_metrics_register(struct tiered_metrics *m)
{
    m->bytes_copied = metrics_register(METRICS_COUNTER, "cairn_remote_copy_bytes_total", NULL,
                                       "Bytes of segments copied to the remote store");
    m->segments_copied = metrics_register(METRICS_COUNTER, "cairn_remote_copy_segments_total", NULL,
                                          "Segments copied to the remote store");
    m->segments_deleted = metrics_register(METRICS_COUNTER, "cairn_remote_delete_segments_total", NULL,
                                           "Remote segments deleted (retention, deleted topics)");
    for (int op = 0; op < TIERED_OP_COUNT; op++)
        for (int kind = 0; kind < TIERED_ERROR_KIND_COUNT; kind++) {
            char labels[64];
            snprintf(labels, sizeof labels, "op=\"%s\",kind=\"%s\"", op_names[op], kind_names[kind]);
            m->errors[op][kind] = metrics_register(
                METRICS_COUNTER, "cairn_remote_errors_total", labels,
                "Failed remote storage operations, by operation and kind (missing: the store has no "
                "such object; corrupt: downloaded bytes failed the broker's checks; unavailable: the "
                "plugin reported a transient failure or timeout; other: anything else)");
        }
    for (int object = 0; object < TIERED_FETCH_OBJECT_COUNT; object++) {
        char labels[32];
        snprintf(labels, sizeof labels, "object=\"%s\"", object_names[object]);
        m->fetch_latency[object] = metrics_register_histogram(
            "cairn_remote_fetch_latency_seconds", labels,
            "Seconds each remote storage plugin fetch took (segment chunks, indexes, manifests; failed ones too)",
            fetch_latency_bounds, sizeof fetch_latency_bounds / sizeof fetch_latency_bounds[0]);
    }
    m->fetch_requests = metrics_register(METRICS_COUNTER, "cairn_remote_fetch_requests_total", NULL,
                                         "Ranged reads of remote segments (chunks) from the remote store");
    m->fetch_bytes = metrics_register(METRICS_COUNTER, "cairn_remote_fetch_bytes_total", NULL,
                                      "Bytes read from the remote store");
    m->cache_hits = metrics_register(METRICS_COUNTER, "cairn_remote_cache_hits_total", NULL,
                                     "Remote reads that found the index or chunk they needed in the local chunk cache");
    m->cache_misses = metrics_register(METRICS_COUNTER, "cairn_remote_cache_misses_total", NULL,
                                       "Remote reads that queued an index or chunk download from the remote store");
    m->read_ahead_started = metrics_register(METRICS_COUNTER, "cairn_remote_read_ahead_started_total", NULL,
                                             "Remote chunk downloads started ahead of a sequential reader");
    m->read_ahead_hits = metrics_register(METRICS_COUNTER, "cairn_remote_read_ahead_hits_total", NULL,
                                          "Remote reads that found a read-ahead chunk already downloaded");
    m->copy_lag_segments = metrics_register(METRICS_GAUGE, "cairn_remote_copy_lag_segments", NULL,
                                            "Closed segments below the high watermark not yet copied");
    m->copy_lag_bytes = metrics_register(METRICS_GAUGE, "cairn_remote_copy_lag_bytes", NULL,
                                         "Bytes of the closed segments below the high watermark not yet copied");
    m->copy_throttle_ms = metrics_register(
        METRICS_COUNTER, "cairn_remote_copy_throttle_time_ms_total", NULL,
        "Milliseconds copies waited for remote.log.manager.copy.max.bytes.per.second");
    m->fetch_throttled = metrics_register(
        METRICS_COUNTER, "cairn_remote_fetch_throttled_total", NULL,
        "Fetches answered without remote data because remote.log.manager.fetch.max.bytes.per.second was exceeded");
    m->fetch_throttle_ms = metrics_register(METRICS_COUNTER, "cairn_remote_fetch_throttle_time_ms_total", NULL,
                                            "Sum of the fetch quota's throttle time at each throttled fetch");
}
