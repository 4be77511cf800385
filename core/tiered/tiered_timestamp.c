/* ListOffsets by timestamp across remote segments: the first offset whose
 * record timestamp is at or after the target, as Kafka answers, searched in
 * the remote segments (oldest first) before the local log. The segment
 * list's max timestamps pick the segment; the segment is then read through
 * the cache (downloaded when missing) and its batches walked, opening the
 * one batch that holds the answer. Runs on the request thread and waits
 * for a download, bounded by the caller's timeout (ListOffsets v10's
 * TimeoutMs), as Kafka before KIP-1075 did. */
#include "tiered/tiered_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/record_codec.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"

/* Most bytes a compressed batch is opened to: the broker accepted it once
 * under its own limit, so this only guards against a store's bad data. */
#define TIERED_TS_INFLATE_LIMIT ((size_t)256 << 20)

/* The first finished remote segment at or after from_offset whose max
 * timestamp reaches ts and which holds offsets at or after log_start;
 * copied into out without its arrays. */
static bool next_candidate(struct tiered_partition *p, int64_t from_offset, int64_t log_start, int64_t ts,
                           struct tiered_segment *out)
{
    bool found = false;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->count && !found; i++) {
        const struct tiered_segment *s = &p->segs[i];
        if (s->state != TIERED_COPY_FINISHED || s->end_offset < from_offset || s->end_offset < log_start ||
            s->max_timestamp_ms < ts)
            continue;
        *out = *s;
        out->epochs = NULL;
        out->epoch_starts = NULL;
        out->epoch_count = 0;
        out->aborted = NULL;
        out->aborted_count = 0;
        found = true;
    }
    pthread_mutex_unlock(&p->lock);
    return found;
}

/* Walks the segment file for the first record with timestamp >= ts and
 * offset >= min_offset. Returns 1 found, 0 not in this segment, -1 bad data. */
static int scan_segment(int fd, int64_t size, int64_t ts, int64_t min_offset, int64_t *offset, int64_t *timestamp)
{
    int64_t pos = 0;
    uint8_t *buf = NULL, *plain = NULL;
    size_t cap = 0, plain_cap = 0;
    int rc = 0;
    while (rc == 0 && pos + RECORD_BATCH_HEADER_SIZE <= size) {
        uint8_t head[RECORD_BATCH_HEADER_SIZE];
        struct record_batch_header h;
        if (pread(fd, head, sizeof head, pos) != (ssize_t)sizeof head) {
            rc = -1;
            break;
        }
        record_batch_parse_header(head, sizeof head, &h);
        size_t total = record_batch_total_size(&h);
        if (h.batch_length < RECORD_BATCH_HEADER_SIZE - 12 || (int64_t)total > size - pos) {
            rc = -1;
            break;
        }
        if (h.max_timestamp >= ts && record_batch_last_offset(&h) >= min_offset) {
            if (total > cap) {
                uint8_t *grown = realloc(buf, total);
                if (!grown) {
                    rc = -1;
                    break;
                }
                buf = grown;
                cap = total;
            }
            if (pread(fd, buf, total, pos) != (ssize_t)total) {
                rc = -1;
                break;
            }
            const uint8_t *records = buf;
            size_t len = total;
            if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE) {
                char err[160];
                if (record_codec_inflate_batch_into(buf, total, TIERED_TS_INFLATE_LIMIT, &plain, &plain_cap, &len, err,
                                                    sizeof err) != 0) {
                    rc = -1;
                    break;
                }
                records = plain;
            }
            struct record_batch_record_iter it;
            struct record_batch_record rec;
            if (record_batch_records_begin(&it, records, len) != 0) {
                rc = -1;
                break;
            }
            int more;
            while (rc == 0 && (more = record_batch_records_next(&it, &rec)) == 1) {
                if (rec.timestamp >= ts && rec.offset >= min_offset) {
                    *offset = rec.offset;
                    *timestamp = rec.timestamp;
                    rc = 1;
                }
            }
            if (rc == 0 && more < 0)
                rc = -1;
        }
        pos += (int64_t)total;
    }
    free(buf);
    free(plain);
    return rc;
}

int16_t tiered_offset_for_timestamp(struct tiered *t, struct partition_log *log, const char *topic, int32_t partition,
                                    int64_t ts, int64_t timeout_ms, int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    *timestamp = -1;
    if (!t)
        return KAFKA_ERR_NONE;
    pthread_mutex_lock(&t->lock);
    struct tiered_partition *p = tiered_partition_find_locked(t, topic, partition);
    pthread_mutex_unlock(&t->lock);
    if (!p)
        return KAFKA_ERR_NONE;
    int64_t log_start = partition_log_start_offset(log);
    int64_t local_start = partition_log_local_start_offset(log);
    int64_t from = log_start;
    struct tiered_segment seg;
    /* Only the part below the local start: the local log answers the rest. */
    while (from < local_start && next_candidate(p, from, log_start, ts, &seg)) {
        if (seg.start_offset >= local_start)
            break;
        int fd;
        int64_t size;
        int16_t rc = tiered_cache_open(t, p, &seg, timeout_ms, &fd, &size);
        if (rc != KAFKA_ERR_NONE)
            return rc;
        int found = scan_segment(fd, size, ts, log_start, offset, timestamp);
        close(fd);
        if (found < 0) {
            metrics_add(t->metrics.fetch_errors, 1);
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        }
        if (found == 1)
            return KAFKA_ERR_NONE;
        from = seg.end_offset + 1;
    }
    return KAFKA_ERR_NONE;
}
