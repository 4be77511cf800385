/* Downloads for the remote read path (tiered_fetch.c): byte ranges of a
 * remote segment into a file, checked batch by batch before anything is
 * served, and a segment's offset index into memory. */
#ifndef CAIRN_TIERED_TIERED_CHUNK_H
#define CAIRN_TIERED_TIERED_CHUNK_H

#include "tiered/tiered_internal.h"

/* One entry of a remote segment's offset index: a batch starts at position
 * and holds offsets from base + rel_offset on. */
struct tiered_index_entry {
    uint32_t rel_offset;
    uint32_t position;
};

/* One entry of a remote segment's time index: every record up to offset
 * base + rel_offset has a timestamp at most timestamp. */
struct tiered_time_entry {
    int64_t timestamp;
    uint32_t rel_offset;
};

/* Downloads bytes [start, end) of seg to path (written as path.tmp and
 * renamed) and checks them: exactly end - start bytes, whole batches
 * within the segment's offsets, ascending, CRC intact. Returns 0 with the
 * file open read-only in *fd, or -1 with err and *kind (nothing left at
 * path). Each plugin call lands in the fetch latency histogram. */
int tiered_chunk_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg, int64_t start,
                          int64_t end, const char *path, int *fd, enum tiered_error_kind *kind, char *err,
                          size_t errlen);

/* Downloads seg's offset index: *out (malloc'd, *count entries; NULL and 0
 * when the store holds none). Returns 0, or -1 with err and *kind. */
int tiered_index_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                          struct tiered_index_entry **out, size_t *count, enum tiered_error_kind *kind, char *err,
                          size_t errlen);

/* Downloads seg's time index: *out (malloc'd, *count entries; NULL and 0
 * when the store holds none). Returns 0, or -1 with err and *kind. */
int tiered_time_index_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                               struct tiered_time_entry **out, size_t *count, enum tiered_error_kind *kind, char *err,
                               size_t errlen);

/* As partition_log_read over the batches of one chunk file (holding bytes
 * [chunk_start, chunk_start + chunk_size) of the segment) from segment
 * position pos on: out gets a dup of fd and the range of whole batches from
 * offset on, up to max_bytes (one batch at least) and below max_offset.
 * *passed: the chunk ends before offset (the next chunk holds it). Returns
 * KAFKA_ERR_NONE or KAFKA_STORAGE_ERROR. */
int16_t tiered_chunk_read(int fd, int64_t chunk_start, int64_t chunk_size, int64_t pos, int64_t offset,
                          int32_t max_bytes, int64_t max_offset, struct log_read_result *out, bool *passed);

#endif
