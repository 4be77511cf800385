/* The __cluster_metadata log as the store sees it: replay every record value
 * in order, and append one batch of record values durably. This is the seam
 * where a Raft layer replaces the local append (a quorum commit) later; the
 * store needs nothing else from the log.
 *
 * Thread-safety: not thread-safe; the store calls it under its write mutex
 * (and during open, before the store is shared). */
#ifndef CAIRN_METADATA_METADATA_LOG_H
#define CAIRN_METADATA_METADATA_LOG_H
#include <stddef.h>
#include <stdint.h>

#define METADATA_LOG_TOPIC_DIR "__cluster_metadata-0"

struct metadata_log;

/* Opens (creating when missing) <parent_dir>/__cluster_metadata-0, running
 * recovery: a torn or corrupt tail is truncated. */
int metadata_log_open(const char *parent_dir, struct metadata_log **out, char *err, size_t errlen);
void metadata_log_close(struct metadata_log *log);

/* Offset the next appended record gets. */
int64_t metadata_log_end_offset(struct metadata_log *log);

/* Calls fn for every record value from the start, in offset order. A non-zero
 * return from fn stops the replay and is returned. Returns 0, or -1 with err
 * on a read error. */
typedef int (*metadata_log_record_fn)(void *ctx, int64_t offset, const uint8_t *value, size_t len);
int metadata_log_replay(struct metadata_log *log, metadata_log_record_fn fn, void *ctx, char *err, size_t errlen);

/* One batch of record values to append together. */
struct metadata_log_entry {
    const uint8_t *value;
    size_t len;
};

/* Appends the values as one batch (null keys) stamped with leader_epoch,
 * then fsyncs. *base_offset_out gets the first record's offset. Returns 0,
 * or -1 with err (nothing is appended on error). */
int metadata_log_append(struct metadata_log *log, const struct metadata_log_entry *entries, int32_t count,
                        int32_t leader_epoch, int64_t *base_offset_out, char *err, size_t errlen);

#endif
