/* Metadata snapshot files in Kafka's layout (KIP-630): in the metadata log
 * directory, <20-digit end offset>-<10-digit epoch>.checkpoint holds record
 * batches in the log format: a control batch with a SnapshotHeaderRecord,
 * data batches with the records that rebuild the image, and a control batch
 * with a SnapshotFooterRecord. Batches are numbered from offset 0 and
 * stamped with the snapshot's epoch, as Kafka writes them.
 *
 * Thread-safety: plain functions over caller-owned buffers; the caller
 * serializes writers of one directory. */
#ifndef CAIRN_METADATA_METADATA_SNAPSHOT_H
#define CAIRN_METADATA_METADATA_SNAPSHOT_H
#include <stddef.h>
#include <stdint.h>

#include "metadata/metadata_log.h"

#define METADATA_SNAPSHOT_SUFFIX ".checkpoint"
/* Snapshots kept after a new one is written. */
#define METADATA_SNAPSHOTS_KEPT 2

/* Writes the snapshot atomically (temp file, fsync, rename, directory
 * fsync). Returns 0, or -1 with err (no snapshot file is left behind). */
int metadata_snapshot_write(const char *log_dir, const struct metadata_snapshot_id *id, int64_t last_timestamp_ms,
                            const struct metadata_log_entry *records, int32_t count, char *err, size_t errlen);

/* The newest snapshot in log_dir: 1 found (*out set), 0 none, -1 with err. */
int metadata_snapshot_latest(const char *log_dir, struct metadata_snapshot_id *out, char *err, size_t errlen);

/* Removes the partial (.part) files of a write a crash interrupted. Only
 * at open, before the store's snapshot writer starts: at run time a .part
 * file is the writer's snapshot in progress. */
void metadata_snapshot_remove_parts(const char *log_dir);

/* A snapshot read back: records point into buf. Owned by the caller. */
struct metadata_snapshot_contents {
    uint8_t *buf;
    struct metadata_log_entry *records;
    int32_t count;
    int64_t last_timestamp_ms;
};

/* Reads and checks one snapshot (CRCs, header first, footer last, nothing
 * after it). Returns 0, or -1 with err naming the file and the fault. */
int metadata_snapshot_read(const char *log_dir, const struct metadata_snapshot_id *id,
                           struct metadata_snapshot_contents *out, char *err, size_t errlen);
void metadata_snapshot_contents_free(struct metadata_snapshot_contents *c);

/* All snapshot ids in log_dir, oldest first (*out malloc'd, NULL when
 * none); removes .part leftovers. Returns the count, or -1 with err. */
int metadata_snapshot_list(const char *log_dir, struct metadata_snapshot_id **out, char *err, size_t errlen);

/* Deletes all but the newest keep snapshots; returns how many it deleted. */
int metadata_snapshot_prune(const char *log_dir, int keep);

/* <log_dir>/<offset>-<epoch>.checkpoint; -1 when it does not fit. */
int metadata_snapshot_path(char *buf, size_t len, const char *log_dir, const struct metadata_snapshot_id *id);

#endif
