/* Partition leader election at the controller when a broker is fenced or
 * unfenced (Kafka's ReplicationControlManager handleBrokerFenced /
 * handleBrokerUnfenced with its PartitionChangeBuilder):
 *  - a fenced broker leaves the ISR of every partition, unless it is the
 *    last member (kept, so the partition knows whom to wait for);
 *  - the leader stays when it is still a live ISR member, else the first
 *    live ISR member in replica order leads;
 *  - with no live ISR member the leader is -1 (offline), unless
 *    unclean.leader.election.enable lets the first live replica outside the
 *    ISR lead, the ISR becoming that replica alone;
 *  - when a broker is unfenced, partitions without a leader elect again.
 * The changes are PartitionChangeRecords in the same batch as the fencing
 * record; applying one bumps the partition epoch, and the leader epoch when
 * the leader changes (metadata_builder_change_partition).
 *
 * Thread-safety: pure functions over images and caller-owned buffers. */
#ifndef CAIRN_METADATA_METADATA_ELECTION_H
#define CAIRN_METADATA_METADATA_ELECTION_H
#include <stdbool.h>
#include <stdint.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_image.h"

struct metadata_record_list;

#define METADATA_UNCLEAN_ELECTION_KEY "unclean.leader.election.enable"

/* Whether a broker may lead now (registered and unfenced, after the change
 * being decided). */
typedef bool (*metadata_broker_live_fn)(void *ctx, int32_t node_id);

/* Decides one partition. remove_id is a broker leaving the ISR (the fenced
 * one) or -1. Returns true when the partition changes, filling *out with the
 * new leader and ISR; the ISR is written to isr_buf, which holds at least
 * p->replica_count + p->isr_count ids. */
bool metadata_elect_partition(const struct metadata_partition *p, int32_t remove_id, metadata_broker_live_fn is_live,
                              void *live_ctx, bool unclean, struct metadata_partition_change *out, int32_t *isr_buf);

/* How the controller node decides unclean.leader.election.enable. */
struct metadata_unclean_source {
    int32_t controller_id; /* its own dynamic value ("<id>") comes second */
    bool static_default;   /* its config file's, last (Kafka's default: false) */
};

/* unclean.leader.election.enable for a topic, in Kafka's order: the topic's
 * config, the controller node's dynamic value, the cluster-wide dynamic
 * default, the controller's static config. */
bool metadata_unclean_election_enabled(const struct metadata_image *img, const struct metadata_topic *t,
                                       const struct metadata_unclean_source *src);

/* Appends to records the PartitionChangeRecords that node_id becoming
 * fenced (or unfenced) implies, img being the image before the change.
 * Returns how many were written, or -1 on allocation failure. */
int32_t metadata_election_for_broker(const struct metadata_image *img, int32_t node_id, bool fenced,
                                     const struct metadata_unclean_source *unclean,
                                     struct metadata_record_list *records);

#endif
