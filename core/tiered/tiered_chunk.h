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

/* Downloads bytes [start, end) of seg to path (written as path.tmp and
 * renamed) and checks them: exactly end - start bytes, whole batches
 * within the segment's offsets, ascending, CRC intact. Returns 0 with the
 * file open read-only in *fd, or -1 with err (nothing left at path). */
int tiered_chunk_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg, int64_t start,
                          int64_t end, const char *path, int *fd, char *err, size_t errlen);

/* Downloads seg's offset index: *out (malloc'd, *count entries; NULL and 0
 * when the store holds none). Returns 0, or -1 with err. */
int tiered_index_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                          struct tiered_index_entry **out, size_t *count, char *err, size_t errlen);

#endif
