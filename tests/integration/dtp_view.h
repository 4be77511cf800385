/* DescribeTopicPartitions (KIP-966) through the outbound client, copied
 * into plain arrays the test thread reads after the call. */
#ifndef CAIRN_TESTS_DTP_VIEW_H
#define CAIRN_TESTS_DTP_VIEW_H
#include <stdbool.h>
#include <stdint.h>

#include "cluster_harness.h"

#define DTP_TOPICS 16
#define DTP_IDS 8

struct dtp_partition {
    int16_t error_code;
    int32_t partition_index;
    int32_t leader;
    int32_t leader_epoch;
    int32_t replicas[DTP_IDS];
    int replica_count;
    int32_t isr[DTP_IDS];
    int isr_count;
    int32_t elr[DTP_IDS];
    int elr_count;
    int32_t last_known_elr[DTP_IDS];
    int last_known_elr_count;
    int32_t offline[DTP_IDS];
    int offline_count;
};

struct dtp_topic {
    int16_t error_code;
    char name[64];
    int32_t authorized_operations;
    int partition_count;
    struct dtp_partition p[VIEW_PARTS];
};

struct dtp_view {
    int topic_count;
    struct dtp_topic topics[DTP_TOPICS];
    bool has_cursor;
    char cursor_topic[64];
    int32_t cursor_partition;
};

/* DescribeTopicPartitions v0 at node: topics (NULL-terminated, NULL for
 * every topic), the partition limit and the cursor (cursor_topic NULL:
 * none). True when an answer came, with out filled. */
bool describe_topic_partitions(struct net_client *client, int node, const char *const *topics, int32_t limit,
                               const char *cursor_topic, int32_t cursor_partition, struct dtp_view *out);

#endif
