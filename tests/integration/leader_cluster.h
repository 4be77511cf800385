/* The leader election tests' requests on top of cluster_harness.h: raw
 * AlterPartition at a controller listener, ElectLeaders, CreateTopics on
 * chosen replicas, and the brokers' registered epochs. Test thread only. */
#ifndef CAIRN_TESTS_LEADER_CLUSTER_H
#define CAIRN_TESTS_LEADER_CLUSTER_H
#include <stdbool.h>
#include <stdint.h>

#include "cluster_harness.h"

#define PARTS 3
#define CLUSTER_ID "TGVhZGVyRWxlY3Rpb25Ucw"
#define SESSION_TIMEOUT_MS 2000
/* A loaded machine (ASan, 7 builds) may stretch heartbeats and commits. */
#define SLACK_MS 10000

struct ap_result {
    int16_t error;           /* the request's */
    int16_t partition_error; /* the one partition's */
    int32_t leader, leader_epoch, partition_epoch;
    int32_t isr[N];
    int isr_count;
};

#define EL_MAX 16

struct el_result {
    int16_t error; /* the request's (version 1+) */
    int n;         /* partitions answered */
    char topic[EL_MAX][32];
    int32_t partition[EL_MAX];
    int16_t errors[EL_MAX];
};

/* The leader tests' cluster; extra: NULL or NULL-terminated settings
 * added to every node's. */
void leader_cluster_start(struct cluster *c, const char *const *extra);

/* One partition's change: topic by name (v0-1) or id (v2+); epochs[i] are
 * sent at v3 only. */
struct ap_result alter_partition(int port, int16_t version, int32_t broker_id, int64_t broker_epoch, const char *topic,
                                 const uint8_t topic_id[16], int32_t partition, int32_t leader_epoch,
                                 int32_t partition_epoch, const int32_t *isr, const int64_t *epochs, int isr_count);

/* The AlterPartition range a listener advertises; false when absent. */
bool advertises_alter_partition(int port, int16_t *min, int16_t *max);

/* A broker's epoch, from the "registering broker <id> (epoch <e>)" lines
 * of whichever controllers wrote its registrations: the highest. */
int64_t registered_epoch(const struct cluster *c, int32_t id);

bool in_isr(const struct partition_view *p, int32_t id);

/* Waits until node lists the brokers in want, the topic with PARTS
 * partitions, and every partition with a leader; fails after timeout_ms. */
struct view wait_settled(struct cluster *c, int node, unsigned want, const char *topic, int timeout_ms);

/* ElectLeaders at node for "topic:partition" names (NULL names: every
 * partition); version -1 negotiates (2). */
struct el_result elect_leaders(struct cluster *c, int node, int16_t version, int8_t type, const char *const *names,
                               int count);

/* The error answered for topic-partition, or -1 when it is not listed. */
int16_t el_error(const struct el_result *r, const char *topic, int32_t partition);

/* CreateTopics of one partition on the given replicas. */
int16_t create_assigned(struct cluster *c, int node, const char *name, int32_t *replicas, int n);

#endif
