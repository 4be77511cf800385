/* Small text files of Kafka's log layer, written atomically (temp file,
 * fsync, rename, fsync of the directory). Stateless; thread-safe as long as
 * two threads do not write the same path at once. */
#ifndef CAIRN_LOG_LOG_CHECKPOINT_H
#define CAIRN_LOG_LOG_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>

/* Replace path with data. Returns 0 or an errno value. */
int log_file_write_atomic(const char *path, const char *data, size_t len);
/* The same rename without either fsync: after a crash the file may be
 * missing or empty, so only for files whose reader detects that and falls
 * back (checksummed caches that can be rebuilt). */
int log_file_write_atomic_unsynced(const char *path, const char *data, size_t len);
/* Read a whole file of at most max bytes into a NUL-terminated heap buffer.
 * Returns 0, ENOENT, EFBIG or another errno value. */
int log_file_read_all(const char *path, size_t max, char **out, size_t *out_len);

/* One "topic partition offset" line of an offset checkpoint. */
struct log_offset_checkpoint_entry {
    char *topic;
    int32_t partition;
    int64_t offset;
};

/* Kafka's offset checkpoint format: "0\n<count>\n" then one
 * "<topic> <partition> <offset>" line per entry. */
int log_offset_checkpoint_write(const char *path, const struct log_offset_checkpoint_entry *e, size_t n);
/* Returns 0 (entries in *out, free with log_offset_checkpoint_free), ENOENT,
 * or EINVAL for a malformed file. */
int log_offset_checkpoint_read(const char *path, struct log_offset_checkpoint_entry **out, size_t *n);
void log_offset_checkpoint_free(struct log_offset_checkpoint_entry *e, size_t n);

/* Split "<topic>-<partition>" on the last '-'. Returns 0 or -1. topic gets a
 * heap copy. */
int log_parse_partition_dir(const char *name, char **topic, int32_t *partition);

#endif
