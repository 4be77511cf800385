/* Helpers shared by the three-broker coordinator tests
 * (test_cluster_coordinators.c, test_cluster_group_commits.c). Test
 * thread only. */
#ifndef CAIRN_IT_CLUSTER_COORDINATOR_HELPERS_H
#define CAIRN_IT_CLUSTER_COORDINATOR_HELPERS_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster_harness.h"
#include "protocol/generated/all_messages.h"

#define COORD_CLUSTER_ID "Q29vcmRDbHVzdGVyVGVzdA"
#define FIND_MAX_KEYS 6

/* FindCoordinator's answers, one per key. */
struct find_answers {
    int answers;
    int16_t errors[FIND_MAX_KEYS];
    int32_t node_ids[FIND_MAX_KEYS];
    int32_t ports[FIND_MAX_KEYS];
    char keys[FIND_MAX_KEYS][32];
};

/* FindCoordinator at node, version pinned; answers stays 0 unanswered. */
bool find(struct cluster *c, int node, int16_t version, const struct find_coordinator_request *req,
          struct find_answers *s);
/* Waits until every node's Metadata lists the three brokers (registered
 * and unfenced), so a topic created next is spread over all of them. */
void wait_all_brokers(struct cluster *c, int timeout_ms);
/* java.lang.String#hashCode of an ASCII string. */
int32_t java_hash(const char *s);
/* Kafka's partitionFor: Utils.abs(hashCode) % partitions. */
int kafka_partition_for(const char *key, int partitions);
/* The coordinator of a group (key_type 0) or transactional id (1) as node
 * answers it (-1 on error). */
int32_t coordinator_of(struct cluster *c, int node, int8_t key_type, const char *id);
/* Starts the cluster (3 internal partitions, extra settings or NULL) until
 * the internal partition holding id has at least min_replicas replicas;
 * fills the agreed controller and id's coordinator. */
void start_with_replicas(struct cluster *c, const char *const *extra, int8_t key_type, const char *id, int min_replicas,
                         int32_t *controller, int32_t *coordinator);
/* Waits until the coordinator leads id's partition of the internal topic
 * with every replica in its ISR. */
void wait_full_isr(struct cluster *c, const char *internal, const char *id, int32_t coordinator);
/* A simple OffsetCommit (no generation) of partition 0 of topic at node:
 * its error, -1 when unanswered. */
int commit_offset(struct cluster *c, int node, const char *group, const char *topic, int64_t offset);

#endif
