/* storage-local: a directory (a second disk, a mounted NFS or SMB share)
 * as the remote store of tiered storage. Internal to the plugin. */
#ifndef CAIRN_STORAGE_LOCAL_INTERNAL_H
#define CAIRN_STORAGE_LOCAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cairn/plugin.h"

/* File kinds of one remote segment, in the order copy_segment writes
 * them: the .log goes last so a listing that shows it shows a whole copy. */
enum sl_kind {
    SL_OFFSET_INDEX,
    SL_TIME_INDEX,
    SL_TXN_INDEX,
    SL_PRODUCER_SNAPSHOT,
    SL_LEADER_EPOCH,
    SL_LOG,
    SL_KIND_COUNT,
};

/* The kernel's file-to-file copy, in copy_file_range's shape. */
typedef ssize_t (*sl_copy_range_fn)(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned flags);

/* Immutable after init; calls for different segments run concurrently
 * and share nothing else. */
struct sl_store {
    char *root;
    bool fsync;
    sl_copy_range_fn copy_range; /* sl_copy_range_default; NULL: read/write only */
};

/* "<root>/<topic>-<partition>/<topic-id hex>" into out; CAIRN_INVALID for
 * a topic name that could leave the root. */
int sl_segment_dir(const struct sl_store *store, const struct cairn_remote_segment *segment, char *out, size_t outlen);
/* "<dir>/<base offset, 20 digits>-<segment-id hex>.<suffix of kind>". */
int sl_segment_path(const struct sl_store *store, const struct cairn_remote_segment *segment, enum sl_kind kind,
                    char *out, size_t outlen);
const char *sl_kind_suffix(enum sl_kind kind);

/* mkdir -p, fsyncing each parent that gained an entry. */
int sl_make_dirs(const struct sl_store *store, const char *path, char *err, size_t errlen);
/* Writes src (a file path) or data/len (src NULL) to dest through
 * dest.tmp: written, fsynced, renamed, then (sync_dir) the directory
 * fsynced; without sync_dir the rename is durable at the caller's next
 * sl_sync_dir of that directory. */
int sl_put_file(const struct sl_store *store, const char *dest, const char *src, const uint8_t *data, size_t len,
                bool sync_dir, char *err, size_t errlen);
/* Streams [start, end) of path (end < 0: to its end) into sink. */
int sl_stream_file(const char *path, int64_t start, int64_t end, const struct cairn_byte_sink *sink, char *err,
                   size_t errlen);
extern const sl_copy_range_fn sl_copy_range_default; /* copy_file_range */

/* Bytes of a durable copy started writing out at a time. */
#define SL_COPY_WINDOW (8u * 1024 * 1024)

struct sl_copy_stats {
    int64_t kernel_bytes; /* moved by copy_range */
    int64_t plain_bytes;  /* moved by read/write */
    bool fell_back;       /* copy_range refused and read/write took over */
};

/* Copies in (from its offset) to out (at its offset) until in's end: by
 * copy_range while it answers (NULL: never), by read/write from where it
 * refused (another filesystem, no support). durable: writes behind the
 * copy with sync_file_range (the caller still fsyncs). 0, or -1 with
 * errno. stats may be NULL. */
int sl_copy_file(int in, int out, bool durable, sl_copy_range_fn copy_range, struct sl_copy_stats *stats);

/* fsync of a directory; CAIRN_OK when fsync is off. */
int sl_sync_dir(const struct sl_store *store, const char *dir, char *err, size_t errlen);
/* CAIRN_RETRIABLE for errors that a remount or freed space may cure. */
int sl_status_of_errno(int error);

#endif
