/* A three-node broker,controller cluster for the leader election tests,
 * driven through the outbound client: Metadata and CreateTopics to chosen
 * nodes, raw AlterPartition at a controller listener, raw ElectLeaders,
 * and the controller gauges from each node's /metrics. Test thread only. */
#ifndef CAIRN_TESTS_LEADER_CLUSTER_H
#define CAIRN_TESTS_LEADER_CLUSTER_H
#include <stdbool.h>
#include <stdint.h>

#include "harness.h"
#include "net/client.h"

#define N 3
#define PARTS 3
#define CLUSTER_ID "TGVhZGVyRWxlY3Rpb25Ucw"
#define SESSION_TIMEOUT_MS 2000
/* A loaded machine (ASan, 7 builds) may stretch heartbeats and commits. */
#define SLACK_MS 10000

struct partition_view {
    int32_t leader;
    int32_t leader_epoch;
    int32_t isr[N];
    int isr_count;
};

struct view {
    unsigned brokers; /* bit per listed broker id */
    int32_t controller_id;
    int partitions; /* -1 when the topic is absent */
    uint8_t topic_id[16];
    struct partition_view p[PARTS];
};

struct cluster {
    struct test_broker nodes[N];
    int controller_ports[N];
    int metrics_ports[N];
    struct net_client *client;
};

#define ALL ((1u << 1) | (1u << 2) | (1u << 3))

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

bool metadata(struct cluster *c, int node, const char *topic, struct view *out);

int16_t create_topic(struct cluster *c, int node, const char *name, int partitions, int16_t rf);

/* extra: NULL or NULL-terminated settings added to every node's. */
void cluster_start(struct cluster *c, const char *const *extra);

void cluster_stop(struct cluster *c);

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

/* The active controller, once the three nodes agree on it. */
int32_t agreed_controller(struct cluster *c);

/* A controller gauge at node (1-based); -1 when it is not exported. */
long long gauge(const struct cluster *c, int node, const char *name);

/* Waits until node's gauge reads want (at_least: want or more). */
void wait_gauge_cmp(const struct cluster *c, int node, const char *name, long long want, bool at_least);

void wait_gauge(const struct cluster *c, int node, const char *name, long long want);

#endif
