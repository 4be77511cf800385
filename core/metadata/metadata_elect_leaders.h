/* ElectLeaders at the controller and the automatic preferred-leader
 * rebalance (Kafka's ReplicationControlManager.electLeaders and the
 * controller's leader-imbalance check):
 *  - PREFERRED moves the leadership to the first replica when it is a live
 *    ISR member; ELECTION_NOT_NEEDED when it leads already,
 *    PREFERRED_LEADER_NOT_AVAILABLE when it cannot lead;
 *  - UNCLEAN elects for a partition without a leader: a live ISR member,
 *    else any live replica (which becomes the ISR alone, possibly without
 *    acknowledged records); ELECTION_NOT_NEEDED when it has a leader,
 *    ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live.
 * The changes of one call are one batch of PartitionChangeRecords.
 *
 * Thread-safety: callable from any thread; takes the controller lock. */
#ifndef CAIRN_METADATA_METADATA_ELECT_LEADERS_H
#define CAIRN_METADATA_METADATA_ELECT_LEADERS_H
#include <stddef.h>
#include <stdint.h>

#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

#define METADATA_ELECTION_PREFERRED 0
#define METADATA_ELECTION_UNCLEAN 1

/* One partition asked for and, after the call, its error. */
struct metadata_election_target {
    const char *topic; /* not NUL-terminated */
    size_t topic_len;
    int32_t partition_index;
    int16_t error_code; /* out */
};

/* Called (under the controller lock; topic valid for the call only) for
 * each partition when no targets are given, except ELECTION_NOT_NEEDED
 * ones, as Kafka answers a request naming no topics. */
typedef void (*metadata_election_report_fn)(void *ctx, const char *topic, int32_t partition, int16_t error_code);

/* Elects leaders of type (METADATA_ELECTION_*) for targets, or for every
 * partition when targets is NULL (report then receives the results).
 * Returns NOT_CONTROLLER when this node cannot write the metadata log,
 * INVALID_REQUEST for an unknown type, or the commit's error; NONE leaves
 * the per-partition errors. */
int16_t metadata_elect_leaders(struct metadata_store *store, int8_t type, struct metadata_election_target *targets,
                               int32_t count, metadata_election_report_fn report, void *report_ctx, char *err,
                               size_t errlen);

/* The partitions whose leader is not their first replica (leaderless ones
 * included, as Kafka's PreferredReplicaImbalanceCount) and those without a
 * leader (OfflinePartitionsCount). */
void metadata_leader_balance_counts(const struct metadata_image *img, int64_t *imbalanced, int64_t *offline);

/* The automatic rebalance: for each broker whose share of partitions it is
 * the preferred (first) replica of but does not lead exceeds
 * percentage / 100, elects it preferred leader wherever it is a live ISR
 * member. Returns how many partitions moved (>= 0) or -1 with err set
 * (NOT_CONTROLLER included, as a negative result). */
int32_t metadata_rebalance_leaders(struct metadata_store *store, int32_t percentage, char *err, size_t errlen);

#endif
