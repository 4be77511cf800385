/* Leader epoch cache of one partition log: the ordered (epoch, start
 * offset) pairs Kafka keeps in leader-epoch-checkpoint, where start offset
 * is the first offset written under that leader epoch. It answers
 * OffsetForLeaderEpoch (KIP-101/279, KIP-320) and tells a follower where to
 * truncate.
 *
 * Thread-safety: none. The owner (struct partition_log) serialises changes
 * with its write mutex and publishes them under its rwlock; readers hold
 * that rwlock shared. The checkpoint functions touch only the path given. */
#ifndef CAIRN_LOG_LEADER_EPOCH_CACHE_H
#define CAIRN_LOG_LEADER_EPOCH_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET. */
#define LEADER_EPOCH_UNDEFINED (-1)
#define LEADER_EPOCH_UNDEFINED_OFFSET (-1LL)

#define LEADER_EPOCH_CHECKPOINT_FILE "leader-epoch-checkpoint"

struct leader_epoch_entry {
    int32_t epoch;
    int64_t start_offset;
};

/* Entries strictly ascending in both epoch and start offset. */
struct leader_epoch_cache {
    struct leader_epoch_entry *entries;
    size_t count, cap;
};

void leader_epoch_cache_init(struct leader_epoch_cache *c);
void leader_epoch_cache_free(struct leader_epoch_cache *c);
void leader_epoch_cache_clear(struct leader_epoch_cache *c);

/* Kafka's assign: record that epoch starts at start_offset. Nothing changes
 * when epoch is the latest and start_offset is not below its start. Any
 * entry with an epoch >= epoch or a start offset >= start_offset is
 * dropped first, so the list stays monotonic. Returns 0 (*changed tells
 * whether the list changed; may be NULL), EINVAL for a negative epoch or
 * offset, or ENOMEM (the list is then unchanged). */
int leader_epoch_cache_assign(struct leader_epoch_cache *c, int32_t epoch, int64_t start_offset, bool *changed);

/* The latest entry's epoch, LEADER_EPOCH_UNDEFINED when empty. */
int32_t leader_epoch_cache_latest_epoch(const struct leader_epoch_cache *c);

/* Kafka's endOffsetFor(requestedEpoch, logEndOffset):
 *  - requested is UNDEFINED (-1), or greater than every known epoch, or the
 *    cache is empty: (UNDEFINED, UNDEFINED_OFFSET);
 *  - requested is the latest epoch: (requested, log_end_offset);
 *  - requested is below the earliest epoch: (requested, start offset of the
 *    earliest entry);
 *  - otherwise: (largest epoch <= requested, start offset of the first
 *    epoch above requested). */
void leader_epoch_cache_end_offset_for(const struct leader_epoch_cache *c, int32_t requested, int64_t log_end_offset,
                                       int32_t *epoch_out, int64_t *offset_out);

/* The epoch that offset was written in: the entry with the largest start
 * offset <= offset, LEADER_EPOCH_UNDEFINED when offset precedes them all. */
int32_t leader_epoch_cache_epoch_for_offset(const struct leader_epoch_cache *c, int64_t offset);

/* The log end moved back to end_offset: drop entries starting at or past
 * it. Returns true when anything was dropped. A negative end_offset is
 * ignored, as Kafka does. */
bool leader_epoch_cache_truncate_from_end(struct leader_epoch_cache *c, int64_t end_offset);

/* The log start moved forward to start_offset: drop entries wholly below
 * it and move the start of the one covering it up to start_offset.
 * Returns true when the list changed. */
bool leader_epoch_cache_truncate_from_start(struct leader_epoch_cache *c, int64_t start_offset);

/* ---- leader-epoch-checkpoint ---- */

/* Kafka's text format: "0\n<count>\n" then "<epoch> <start offset>\n" per
 * entry. Returns a heap string in *text (free() it), or ENOMEM. */
int leader_epoch_checkpoint_format(const struct leader_epoch_cache *c, char **text, size_t *len);

/* Parse checkpoint text into an empty cache. Returns 0, or EINVAL with a
 * reason in err for anything malformed: another version, a count that does
 * not match the entry lines, unparsable or negative numbers, entries that
 * are not strictly ascending, trailing lines. The cache is left empty on
 * error. Never allocates more than the text can describe. */
int leader_epoch_checkpoint_parse(const char *text, size_t len, struct leader_epoch_cache *out, char *err,
                                  size_t errlen);

/* Replace the file at path atomically (temp file, rename). With durable,
 * the temp file is fsynced before the rename and the directory after it.
 * Returns 0 or an errno value. */
int leader_epoch_checkpoint_write(const char *path, const struct leader_epoch_cache *c, bool durable);

/* Read the file at path into an empty cache. Returns 0, ENOENT (no file),
 * EINVAL (malformed, reason in err) or another errno value. */
int leader_epoch_checkpoint_read(const char *path, struct leader_epoch_cache *out, char *err, size_t errlen);

#endif
