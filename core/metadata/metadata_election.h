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
 * With Eligible Leader Replicas on (KIP-966, the finalized feature
 * eligible.leader.replicas.version at level 1 or more in the image):
 *  - while the ISR is below the topic's min.insync.replicas, replicas that
 *    leave it join the ELR (they hold every record up to the high
 *    watermark, which the leader does not advance below the minimum);
 *    once the ISR is back at the minimum the ELR and LastKnownElr empty;
 *  - a fenced broker leaves the ISR even as its last member;
 *  - with an empty ISR, the first live ELR member in replica order leads
 *    and becomes the ISR alone (a clean election), before any unclean one;
 *  - a broker back from an unclean shutdown leaves the ELR for
 *    LastKnownElr, as it may have lost its unflushed tail;
 *  - an unclean election (unclean.leader.election.enable) with ISR and
 *    ELR empty takes a live LastKnownElr member first, in replica order
 *    (KIP-966's unclean recovery from the last known ELR), else any live
 *    replica; it clears both lists.
 * With it off, any ELR left in a partition is cleared at its next change.
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
#define METADATA_MIN_ISR_KEY "min.insync.replicas"

/* Whether a broker may lead now (registered and unfenced, after the change
 * being decided). */
typedef bool (*metadata_broker_live_fn)(void *ctx, int32_t node_id);

/* How one partition's election treats ELR (KIP-966). */
struct metadata_elr_policy {
    bool enabled;
    int32_t min_isr;            /* the topic's min.insync.replicas */
    int32_t unclean_restart_id; /* a broker back from an unclean shutdown, or -1 */
};

/* The ids metadata_elect_partition_elr's buffer holds for p. */
int32_t metadata_election_buffer_len(const struct metadata_partition *p);

/* The ELR and LastKnownElr p gets when its ISR becomes target_isr and its
 * replicas replicas (Kafka's populateTargetElr); both empty when policy is
 * NULL or off, or the ISR reaches min_isr. elr and last_known each hold
 * p->elr_count + p->isr_count + p->last_known_elr_count + 1 ids. */
void metadata_elr_target(const struct metadata_partition *p, const int32_t *replicas, int32_t replica_count,
                         const int32_t *target_isr, int32_t isr_n, const struct metadata_elr_policy *policy,
                         int32_t *elr, int32_t *elr_n, int32_t *last_known, int32_t *last_known_n);

/* Sets c's ELR and LastKnownElr from its ISR and replicas (p's where c
 * leaves them unchanged) by metadata_elr_target, writing them only when
 * they differ from p's: every change keeps both lists subsets of the
 * replicas and outside the ISR, as Kafka's PartitionChangeBuilder computes
 * them for every change. room holds metadata_elr_room(p) ids and must
 * outlive c. */
int32_t metadata_elr_room(const struct metadata_partition *p);
void metadata_partition_change_set_elr(const struct metadata_partition *p, const struct metadata_elr_policy *policy,
                                       struct metadata_partition_change *c, int32_t *room);

/* Decides one partition. remove_id is a broker leaving the ISR (the fenced
 * one) or -1. Returns true when the partition changes, filling *out with the
 * new leader and ISR; the ISR is written to isr_buf, which holds at least
 * p->replica_count + p->isr_count ids. */
bool metadata_elect_partition(const struct metadata_partition *p, int32_t remove_id, metadata_broker_live_fn is_live,
                              void *live_ctx, bool unclean, struct metadata_partition_change *out, int32_t *isr_buf);
/* The same with ELR under policy (NULL: off, as above; any ELR left in p
 * is then cleared); buf holds metadata_election_buffer_len(p) ids, and
 * *out points into it. */
bool metadata_elect_partition_elr(const struct metadata_partition *p, int32_t remove_id,
                                  metadata_broker_live_fn is_live, void *live_ctx, bool unclean,
                                  const struct metadata_elr_policy *policy, struct metadata_partition_change *out,
                                  int32_t *buf);

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

/* min.insync.replicas for a topic, in the same order, static_min_isr (the
 * controller's config file's, 0: 1) last; an invalid value falls through. */
int32_t metadata_min_insync_replicas(const struct metadata_image *img, const struct metadata_topic *t,
                                     int32_t controller_id, int32_t static_min_isr);

/* Appends to records the PartitionChangeRecords that node_id becoming
 * fenced (or unfenced, or staying as it is) implies, img being the image
 * before the change; unclean_restart: node_id is a new incarnation that did
 * not prove a clean shutdown (it leaves the ELR when ELR is on). Returns how
 * many were written, or -1 on allocation failure. */
int32_t metadata_election_for_broker(const struct metadata_image *img, int32_t node_id, bool fenced,
                                     bool unclean_restart, const struct metadata_unclean_source *unclean,
                                     int32_t static_min_isr, struct metadata_record_list *records);

#endif
