/* The coordinator's txn_marker_ops: partitions led here are written to the
 * local logs; those led by other brokers go out as WriteTxnMarkers. */
#include "handlers/txn_markers_local.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "coordinator/purgatory.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

/* How long a marker waits for its replication before the write counts as
 * failed (the coordinator then writes it again). */
#define TXN_MARKER_REPLICATION_TIMEOUT_MS 5000

int16_t txn_markers_write_partition(const struct txn_markers_local *local, struct partition_log *log, const char *topic,
                                    int32_t partition, int64_t producer_id, int16_t producer_epoch,
                                    int32_t coordinator_epoch, bool commit, int32_t leader_epoch)
{
    if (leader_epoch < 0)
        leader_epoch = partition_log_latest_epoch(log);
    int64_t offset;
    int16_t code = partition_log_append_txn_marker(log, producer_id, producer_epoch, coordinator_epoch, commit,
                                                   leader_epoch, &offset);
    if (code == KAFKA_ERR_NONE && offset >= 0 && local->fetch_purgatory)
        /* The log's address is the watch key fetches park on, as for produce. */
        purgatory_notify(local->fetch_purgatory, (uintptr_t)log);
    if (code == KAFKA_ERR_NONE) {
        /* Done only once replicated, as Kafka writes markers with acks=all:
         * a marker lost with a change of leader would leave the
         * transaction open there, and the producer's next COMMIT marker
         * would commit the aborted records with it. A retry finds the
         * transaction closed and writes nothing: it waits for the log end,
         * which covers the marker written before. */
        int64_t end = offset >= 0 ? offset + 1 : partition_log_end_offset(log);
        code = partition_log_wait_replicated(log, partition_log_latest_epoch(log), end,
                                             TXN_MARKER_REPLICATION_TIMEOUT_MS);
        if (code != KAFKA_ERR_NONE)
            logger_warn(
                "txn", "%s marker for producer %" PRId64 " on %s-%" PRId32 " (log end %" PRId64 ") not replicated: %s",
                commit ? "COMMIT" : "ABORT", producer_id, topic ? topic : "?", partition, end, kafka_error_name(code));
    }
    if (code == KAFKA_ERR_NONE && local->groups && topic && strcmp(topic, GROUP_LOG_TOPIC) == 0) {
        /* A reload replays this marker to settle the pending offsets, so it
         * must be on disk before memory says they are settled. */
        code = partition_log_flush_records(log);
        if (code == KAFKA_ERR_NONE)
            group_coordinator_complete_txn(local->groups, partition, producer_id, commit);
    }
    return code;
}

/* Where a partition's marker goes: LEADER_HERE, NO_TOPIC (deleted: no
 * marker needed), NO_LEADER (retry later), or the leader's node id. */
#define LEADER_HERE (-1)
#define NO_TOPIC (-2)
#define NO_LEADER (-3)

static int32_t marker_destination(const struct txn_markers_local *local, const struct metadata_image *img,
                                  const char *topic_name, int32_t partition)
{
    if (!img)
        return LEADER_HERE; /* one node: every partition is ours */
    const struct metadata_topic *topic = topic_name ? metadata_image_topic_by_name(img, topic_name, strlen(topic_name))
                                                    : NULL;
    const struct metadata_partition *p = topic ? metadata_topic_partition(topic, partition) : NULL;
    if (!p || !p->present)
        return NO_TOPIC;
    if (p->leader < 0)
        return NO_LEADER;
    return p->leader == local->node_id ? LEADER_HERE : p->leader;
}

static int16_t write_here(const struct txn_markers_local *local, int64_t producer_id, int16_t producer_epoch,
                          int32_t coordinator_epoch, bool commit, const struct txn_marker_partition *part)
{
    struct partition_log *log = part->topic ? log_manager_get(local->logs, part->topic, part->partition) : NULL;
    if (!log)
        return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION; /* a deleted partition needs no marker */
    int16_t code = txn_markers_write_partition(local, log, part->topic, part->partition, producer_id, producer_epoch,
                                               coordinator_epoch, commit, -1);
    partition_log_close(log);
    return code;
}

static int16_t local_write_markers(void *ctx, int64_t producer_id, int16_t producer_epoch, int32_t coordinator_epoch,
                                   bool commit, struct txn_marker_partition *parts, size_t count)
{
    const struct txn_markers_local *local = ctx;
    const struct metadata_image *img = local->client && local->metadata ? metadata_image_acquire(local->metadata)
                                                                        : NULL;
    int32_t *remote = img ? calloc(count + 1, sizeof *remote) : NULL;
    if (img && !remote) {
        metadata_image_release(img);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR; /* retried later */
    }
    bool any_remote = false;
    for (size_t i = 0; i < count; i++) {
        int32_t dest = marker_destination(local, img, parts[i].topic, parts[i].partition);
        if (remote)
            remote[i] = dest >= 0 ? dest : -1;
        if (dest >= 0) {
            any_remote = true;
            continue;
        }
        parts[i].error_code = dest == NO_TOPIC    ? KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION
                              : dest == NO_LEADER ? KAFKA_ERR_NOT_LEADER_OR_FOLLOWER
                                                  : write_here(local, producer_id, producer_epoch, coordinator_epoch,
                                                               commit, &parts[i]);
    }
    if (any_remote)
        txn_markers_write_remote(local, img, remote, producer_id, producer_epoch, coordinator_epoch, commit, parts,
                                 count);
    free(remote);
    if (img)
        metadata_image_release(img);
    int16_t result = KAFKA_ERR_NONE;
    for (size_t i = 0; i < count; i++) {
        int16_t code = parts[i].error_code;
        if (code == KAFKA_ERR_NONE || code == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION)
            continue;
        logger_warn("txn", "%s marker for producer %" PRId64 " on %s-%" PRId32 " failed: %s",
                    commit ? "COMMIT" : "ABORT", producer_id, parts[i].topic, parts[i].partition,
                    kafka_error_name(code));
        result = code;
    }
    return result;
}

static const struct txn_marker_ops local_ops = {
    .write_markers = local_write_markers,
};

const struct txn_marker_ops *txn_markers_local_ops(void)
{
    return &local_ops;
}
