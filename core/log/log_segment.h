/* One log segment: <base>.log with its sparse .index and .timeindex.
 * Internal to core/log. Not thread-safe by itself: struct partition_log
 * serialises writers with its append mutex and guards the index arrays and
 * size with its rwlock (readers hold it shared).
 *
 * Index files hold exactly the entries written (no preallocation):
 *   .index      relative offset uint32 BE + file position uint32 BE; the offset
 *               is the last offset of the batch that starts at that position.
 *   .timeindex  timestamp int64 BE + relative offset uint32 BE: the largest
 *               timestamp seen so far and the last offset of its batch.
 *
 * Block reservation: the active segment keeps disk blocks reserved past its
 * end with fallocate(FALLOC_FL_KEEP_SIZE), so appends skip the filesystem's
 * delayed-allocation bookkeeping. With log.preallocate the whole segment.bytes
 * is reserved at creation; otherwise LOG_SEGMENT_RESERVE_STEP at a time, from
 * the point the segment holds one step of data. The visible size never
 * changes, so recovery (which reads the size) is unaffected. The unused part
 * is released when the segment is sealed, closed or truncated: from then on
 * the file holds no blocks past its size. */
#ifndef CAIRN_LOG_LOG_SEGMENT_H
#define CAIRN_LOG_LOG_SEGMENT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_config.h"
#include "protocol/record_batch.h"

/* How far ahead of the write position blocks are reserved when
 * log.preallocate is off. On ext4 this removes most of the per-write
 * delayed-allocation work (docs/benchmarks.md, write-reserve-steps) while
 * bounding the disk held per active segment; a step spans several ~1 MB
 * produce requests, so the fallocate call itself is rare. */
#define LOG_SEGMENT_RESERVE_STEP (4 * 1024 * 1024)

struct log_offset_entry {
    uint32_t rel_offset;
    uint32_t position;
};

struct log_time_entry {
    int64_t timestamp;
    uint32_t rel_offset;
};

/* A batch whose partitionLeaderEpoch is above every earlier batch's in a
 * scan of the segment: where the leader epoch cache's recovery assigns. */
struct log_segment_epoch_mark {
    int32_t epoch;
    int64_t base_offset;
};

struct log_segment {
    int64_t base_offset;
    int log_fd;
    int index_fd;
    int time_fd;
    int64_t size;                    /* committed bytes of the .log */
    int64_t next_offset;             /* last offset in the segment + 1 (base_offset when empty) */
    int64_t max_timestamp;           /* -1 when empty */
    int64_t offset_of_max_timestamp; /* last offset of the batch holding it */
    int64_t first_batch_timestamp;   /* for segment.ms; -1 when empty */
    int64_t created_ms;
    int64_t bytes_since_index;
    struct log_offset_entry *index;
    size_t index_count, index_cap;
    struct log_time_entry *time_index;
    size_t time_count, time_cap;
    char *path; /* "<dir>/<20-digit base>" without extension */
    /* Written under the partition's append mutex only (writes, seal, close,
     * truncate). reserved_end: end of the blocks reserved with KEEP_SIZE, 0
     * when nothing is reserved past size. reserve_steps: extend it by
     * LOG_SEGMENT_RESERVE_STEP ahead of writes, up to reserve_limit. */
    int64_t reserved_end;
    int64_t reserve_limit;
    bool reserve_steps;
    /* Epoch rises seen by the last full rescan (open with rebuild, or a
     * rebuild), so recovery need not read the batches again; the partition
     * log frees them once it has used them. */
    struct log_segment_epoch_mark *epoch_marks;
    size_t epoch_mark_count, epoch_mark_cap;
};

/* Buffered reader over a segment file, used to walk batch headers. */
struct log_scanner {
    int fd;
    int64_t file_end;
    uint8_t *buf;
    size_t cap;
    int64_t buf_pos; /* file position of buf[0] */
    size_t buf_len;
    bool io_error;
};

void log_scanner_init(struct log_scanner *s, int fd, int64_t file_end, size_t cap);
/* Bytes [pos, pos + n) or NULL when they pass file_end or on I/O error. */
const uint8_t *log_scanner_get(struct log_scanner *s, int64_t pos, size_t n);
void log_scanner_free(struct log_scanner *s);

char *log_segment_path(const char *dir, int64_t base_offset, const char *ext);

int log_segment_create(const char *dir, int64_t base_offset, const struct log_config *cfg, int64_t now_ms,
                       struct log_segment **out, char *err, size_t errlen);
/* Open an existing segment. With rebuild, rescan the whole .log validating
 * CRCs, truncate at the first bad batch and rewrite both indexes; otherwise
 * load the index files, rebuilding them only when they look wrong, and
 * (when is_last) walk the tail after the last index entry. *truncated is set
 * when bytes were cut. */
int log_segment_open(const char *dir, int64_t base_offset, const struct log_config *cfg, bool rebuild, bool is_last,
                     int64_t now_ms, struct log_segment **out, bool *truncated, char *err, size_t errlen);
void log_segment_close(struct log_segment *seg, bool remove_files);
/* Release epoch_marks (they matter only while the log is opened). */
void log_segment_drop_epoch_marks(struct log_segment *seg);

/* Write the batches (already offset-assigned) at the end of the segment.
 * Returns 0 or an errno value; on failure the segment is unchanged. */
int log_segment_write(struct log_segment *seg, const uint8_t *data, size_t len);
/* After a successful write: index the batches and move size/next_offset.
 * Returns 0 or an errno value from writing the index files. */
int log_segment_commit(struct log_segment *seg, const uint8_t *data, size_t len, const struct log_config *cfg);
/* Add the final time-index entry when the segment stops being active, and
 * release the blocks reserved past its end. */
int log_segment_seal(struct log_segment *seg);
/* Free the blocks reserved past the segment's size and stop reserving ahead.
 * Returns 0 or an errno value (the data is untouched either way). */
int log_segment_release_reservation(struct log_segment *seg);
bool log_segment_index_full(const struct log_segment *seg, const struct log_config *cfg);

/* Position of the first batch whose last offset >= offset, scanning from the
 * sparse index entry. Returns 1 and fills pos/hdr, 0 if none, -1 on I/O error. */
int log_segment_find(const struct log_segment *seg, int64_t offset, struct log_scanner *scan, int64_t *pos,
                     struct record_batch_header *hdr);
/* Largest index entry position whose offset is < offset (lower bound). */
int64_t log_segment_index_lookup(const struct log_segment *seg, int64_t offset);
/* Starting offset for a timestamp search: the time-index entry below ts. */
int64_t log_segment_time_lookup(const struct log_segment *seg, int64_t ts);

/* Cut every batch whose last offset >= offset and rebuild the indexes.
 * Returns 0 or an errno value. */
int log_segment_truncate_to(struct log_segment *seg, int64_t offset, const struct log_config *cfg);
int log_segment_flush(struct log_segment *seg);
/* fdatasync of the .log file alone: the records are durable, the indexes
 * are not (recovery rebuilds them from the log). */
int log_segment_flush_data(struct log_segment *seg);

#endif
