/* Three process.roles=broker,controller cairnd nodes (ids 1..3) on one
 * controller quorum, driven through the outbound client: synchronous calls
 * to a chosen node, Metadata as a view, CreateTopics, waits on what the
 * nodes list, /metrics samples, and librdkafka helpers the replication
 * tests share. Test thread only; the parse callbacks run on the client's
 * thread while the caller waits. */
#ifndef CAIRN_TESTS_CLUSTER_HARNESS_H
#define CAIRN_TESTS_CLUSTER_HARNESS_H
#include <stdbool.h>
#include <stdint.h>

#include "harness.h"
#include "net/client.h"

struct create_topics_request_creatable_topic;

#define N 3
#define ALL ((1u << 1) | (1u << 2) | (1u << 3))
#define VIEW_PARTS 16
#define VIEW_BROKERS 8

struct cluster {
    struct test_broker nodes[N];
    int controller_ports[N];
    int metrics_ports[N];
    int extra_ports[N]; /* of cluster_options.extra_listener, 0 without */
    struct net_client *client;
};

struct cluster_options {
    const char *cluster_id;
    int election_timeout_ms;     /* the quorum's; its fetch timeout is twice that */
    int session_timeout_ms;      /* broker.session.timeout.ms */
    int internal_partitions;     /* of __consumer_offsets and __transaction_state */
    const char *const *settings; /* NULL-terminated; every node's, after the listeners and the quorum */
    const char *const *extra;    /* NULL or NULL-terminated; added after settings */
    const char *node_setting[N]; /* NULL or one more setting for node i + 1 */
    const char *extra_listener;  /* NULL or a third listener's name, on 127.0.0.1 and a free port */
    unsigned not_awaited;        /* bit per node id: nodes cluster_start does not wait for (kept out) */
};

struct partition_view {
    int32_t leader;
    int32_t leader_epoch;
    int32_t isr[N];
    int isr_count;
    int replica_count;
};

/* What one Metadata answer says. */
struct view {
    int32_t controller_id;
    unsigned brokers; /* bit per listed broker id */
    int broker_count;
    int32_t broker_ids[VIEW_BROKERS]; /* in the answer's order */
    int broker_ports[VIEW_BROKERS];
    char rack[32];  /* of broker 1 */
    int partitions; /* of the topic asked about, -1 when absent */
    uint8_t topic_id[16];
    int32_t leaders[VIEW_PARTS]; /* by partition index */
    struct partition_view p[VIEW_PARTS];
};

/* Reads one answer on the client's thread; arg is the caller's. */
typedef void (*client_parse_fn)(const struct net_client_result *result, void *arg);

/* An outbound client that retries connections quickly; nodes not added. */
struct net_client *test_client_new(void);

/* Sends one request to node and waits for its answer (version -1
 * negotiates); parse sees every outcome, NULL skips it. */
enum net_client_status client_call(struct net_client *client, int node, int16_t api_key, int16_t version,
                                   const void *body, int timeout_ms, client_parse_fn parse, void *arg);

/* Metadata of every topic from node, keeping topic's partitions (topic
 * NULL or ""; none); false when the node did not answer. */
bool client_metadata(struct net_client *client, int node, const char *topic, struct view *out);
/* Metadata of one topic from node with allow_auto_topic_creation, the
 * answer not read: the node creates the topic (or forwards its creation). */
void client_metadata_auto_create(struct net_client *client, int node, const char *topic, int timeout_ms);

struct raft_quorum_view;

/* DescribeQuorum of __cluster_metadata at node: 0 with out filled, -1 when
 * unanswered or undecodable. */
int client_describe_quorum(struct net_client *client, int node, int timeout_ms, struct raft_quorum_view *out);

/* Waits until node's Metadata lists exactly the brokers in want (a bit
 * set over ids) and, when topic is set, `partitions` of it. */
struct view client_wait_view(struct net_client *client, int node, unsigned want, const char *topic, int partitions,
                             int timeout_ms);

/* n distinct free loopback ports in ports[] for controllers with node ids
 * 1..n, and voters_kv = "controller.quorum.voters=1@127.0.0.1:P1,...". */
void cluster_pick_voters(int n, int *ports, char *voters_kv, size_t len);
/* Spawns n controller-only nodes (ids 1..n, process.roles=controller) on
 * ports picked by cluster_pick_voters, with the given cluster id and quorum
 * timeouts; voters_kv gets their controller.quorum.voters entry for other
 * nodes. The caller waits for them (broker_wait_ready). */
void cluster_spawn_controllers(struct test_broker *nodes, int n, int *ports, const char *cluster_id, int election_ms,
                               int fetch_ms, char *voters_kv, size_t len);
void cluster_start(struct cluster *c, const struct cluster_options *o);

/* The replication tests' cluster: slow elections, sessions that outlast a
 * restart, one partition per internal topic; extra as in cluster_options. */
void replicated_cluster_start(struct cluster *c, const char *cluster_id, const char *const *extra);
/* The same with another broker.session.timeout.ms: a broker back from
 * kill -9 is refused registration until its previous session lapses. */
void replicated_cluster_start_session(struct cluster *c, const char *cluster_id, const char *const *extra,
                                      int session_timeout_ms);

void cluster_stop(struct cluster *c);

bool metadata(struct cluster *c, int node, const char *topic, struct view *out);

struct view wait_view(struct cluster *c, int node, unsigned want, const char *topic, int partitions, int timeout_ms);

/* CreateTopics of one topic at node: its error, -1 when unanswered. */
int16_t create_topic_rf(struct cluster *c, int node, const char *name, int partitions, int16_t rf);

/* The same with replication factor 1. */
int16_t create_topic(struct cluster *c, int node, const char *name, int partitions);

/* CreateTopics of the one topic at node: its error, -1 when unanswered. */
int16_t create_one_topic(struct cluster *c, int node, struct create_topics_request_creatable_topic *topic);

/* CreateTopics of topic, retried at each node in turn until a controller
 * takes it (or it exists); fails the test after 60 s. */
void create_topic_until_taken(struct cluster *c, struct create_topics_request_creatable_topic *topic);

/* The same for name (one partition, rf replicas, the topic config
 * min.insync.replicas = min_isr). */
void create_topic_min_isr(struct cluster *c, const char *name, int16_t rf, const char *min_isr);

/* The controller every live node names, once they agree and it is not
 * not_this (-1: any). */
int32_t agreed_controller(struct cluster *c, int32_t not_this, int timeout_ms);

/* A sample of node's /metrics (1-based); -1 when not exported. */
long long metric(const struct cluster *c, int node, const char *name);

/* Waits until node's metric reads want (at_least: want or more). */
void wait_metric(const struct cluster *c, int node, const char *name, long long want, bool at_least);

/* Creates topic (one partition, replication factor 3) through librdkafka
 * once a controller takes it, and returns the partition's leader id. */
/* Creates topic with partitions partitions at replication factor 3 once a
 * controller takes it; partition 0's leader once every partition has one. */
int32_t create_partitions(struct cluster *c, const char *topic, int partitions, const char *const *configs);

int32_t create_replicated(struct cluster *c, const char *topic, const char *const *configs);

/* Produces count records ("acked-<n>") spread over partitions 0..partitions-1
 * with an idempotent acks=all producer; every one must be delivered. */
void produce_acked(const char *bootstrap, const char *topic, int partitions, int count);

struct rk_record_set;

/* Every record of set has the value "p<partition>-m<offset>". */
void expect_partition_offset_values(const struct rk_record_set *set);

/* IncrementalAlterConfigs of the cluster-wide num.replica.fetchers=2 at
 * node via, retried for 30 s; at a voter that does not lead it goes to the
 * active controller in an Envelope, over the controller link. */
void cluster_alter_forwarded(struct cluster *c, int via);

/* True when some node's log holds needle. */
bool cluster_any_logged(const struct cluster *c, const char *needle);

#endif
