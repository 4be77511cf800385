/* The cluster metadata image: an immutable snapshot of cluster state built by
 * replaying __cluster_metadata records.
 *
 * Thread-safety: an image is never modified after it is published, so any
 * thread may read it without locks while it holds a reference. References
 * are counted atomically (metadata_image_retain / metadata_image_release).
 * Topics are shared between successive images (structural sharing) and are
 * themselves immutable and refcounted; only the image builder, which is
 * owned by a single thread, creates or changes them before publication. */
#ifndef CAIRN_METADATA_METADATA_IMAGE_H
#define CAIRN_METADATA_METADATA_IMAGE_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/wire.h"

/* ConfigResource types as Kafka numbers them. */
enum metadata_config_resource {
    METADATA_CONFIG_RESOURCE_TOPIC = 2,
    METADATA_CONFIG_RESOURCE_BROKER = 4,
};

struct metadata_endpoint {
    char *listener; /* listener name, e.g. "PLAINTEXT" */
    char *host;
    uint16_t port;
    int16_t security_protocol; /* Kafka's ids: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL */
};

struct metadata_broker {
    int32_t node_id;
    int64_t epoch; /* offset of its RegisterBrokerRecord */
    struct kafka_uuid incarnation_id;
    char *rack; /* NULL when none */
    struct metadata_endpoint *endpoints;
    int32_t endpoint_count;
    bool fenced;
    bool in_controlled_shutdown;
};

struct metadata_partition {
    bool present; /* false for a hole (not yet created) */
    int32_t partition_index;
    int32_t leader; /* -1 when none */
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t *replicas;
    int32_t replica_count;
    int32_t *isr;
    int32_t isr_count;
    /* An in-progress reassignment (KIP-455): replicas being added to and
     * removed from the replica list; both empty when none is. */
    int32_t *adding;
    int32_t adding_count;
    int32_t *removing;
    int32_t removing_count;
    /* Eligible Leader Replicas (KIP-966): replicas outside the ISR that have
     * every record up to the high watermark, kept while the ISR is below
     * min.insync.replicas; last_known_elr holds former ELR members that lost
     * that guarantee (unclean restart), for an operator's unclean recovery.
     * Both empty unless eligible.leader.replicas.version is on. */
    int32_t *elr;
    int32_t elr_count;
    int32_t *last_known_elr;
    int32_t last_known_elr_count;
};

struct metadata_config_entry {
    char *name;
    char *value;
};

struct metadata_topic {
    atomic_int refcount;
    char *name;
    struct kafka_uuid topic_id;
    bool is_internal;                      /* __consumer_offsets, __transaction_state */
    struct metadata_partition *partitions; /* indexed by partition id */
    int32_t partition_count;
    struct metadata_config_entry *configs; /* dynamic topic configs, sorted by name */
    int32_t config_count;
};

/* One ACL binding (AccessControlEntryRecord), kept by id for the ACL APIs.
 * Numbers are Kafka's (ResourceType, PatternType, AclOperation,
 * AclPermissionType). */
struct metadata_acl {
    struct kafka_uuid id;
    int8_t resource_type;
    char *resource_name;
    int8_t pattern_type;
    char *principal;
    char *host;
    int8_t operation;
    int8_t permission_type;
};

/* One SCRAM credential (UserScramCredentialRecord): what a server needs to
 * check a SCRAM exchange, never the password. mechanism is Kafka's
 * ScramMechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512). */
struct metadata_scram {
    char *name;
    int8_t mechanism;
    uint8_t *salt;
    int32_t salt_len;
    uint8_t stored_key[64];
    uint8_t server_key[64];
    int32_t key_len; /* 32 or 64 */
    int32_t iterations;
};

/* A dynamic broker config: resource "" is the cluster-wide default, "<id>" one broker. */
struct metadata_broker_config {
    char *resource;
    char *name;
    char *value;
};

struct metadata_quota;

struct metadata_image {
    atomic_int refcount;
    int64_t last_offset; /* offset of the last record applied, -1 if none */
    char *cluster_id;
    int32_t controller_id;
    int16_t metadata_version;        /* metadata.version feature level, 0 if unset */
    int16_t elr_version;             /* eligible.leader.replicas.version feature level, 0 if unset */
    struct metadata_broker *brokers; /* sorted by node_id */
    int32_t broker_count;
    struct metadata_topic **topics; /* sorted by name */
    int32_t topic_count;
    struct metadata_broker_config *broker_configs;
    int32_t broker_config_count;
    int64_t next_producer_id;  /* first id of the next producer id block (ProducerIdsRecord) */
    struct metadata_acl *acls; /* sorted by id */
    int32_t acl_count;
    struct metadata_scram *scrams; /* sorted by name, then mechanism */
    int32_t scram_count;
    struct metadata_quota *quotas; /* client quotas, sorted by entity and key (metadata_quota.h) */
    int32_t quota_count;
    /* Open-addressing tables of (topic index + 1), 0 = empty; size is a power of two. */
    uint32_t *name_table;
    uint32_t *id_table;
    uint32_t table_mask;
};

/* Reference counting. */
const struct metadata_image *metadata_image_retain(const struct metadata_image *img);
void metadata_image_release(const struct metadata_image *img);

/* Lookups; return NULL when absent. Results live as long as the image. */
const struct metadata_topic *metadata_image_topic_by_name(const struct metadata_image *img, const char *name,
                                                          size_t name_len);
const struct metadata_topic *metadata_image_topic_by_id(const struct metadata_image *img, const struct kafka_uuid *id);
const struct metadata_broker *metadata_image_broker(const struct metadata_image *img, int32_t node_id);
/* The endpoint of b another broker connects to: the one of listener (the
 * inter-broker listener name); when there is none, or listener is NULL or
 * empty, b's first PLAINTEXT endpoint unless tls (a TLS link never falls
 * back to plaintext). NULL when b is NULL or has no such endpoint. */
const struct metadata_endpoint *metadata_broker_link_endpoint(const struct metadata_broker *b, const char *listener,
                                                              bool tls);
const struct metadata_acl *metadata_image_acl(const struct metadata_image *img, const struct kafka_uuid *id);
const struct metadata_scram *metadata_image_scram(const struct metadata_image *img, const char *name, int8_t mechanism);
const struct metadata_partition *metadata_topic_partition(const struct metadata_topic *topic, int32_t partition);
/* Value of a topic's dynamic config, NULL when not set. */
const char *metadata_topic_config(const struct metadata_topic *topic, const char *name);
int32_t metadata_image_live_broker_count(const struct metadata_image *img);
/* The dynamic broker configs of one resource ("" the default, "<id>" a
 * broker), sorted by name: returns the count and points *first at them. */
int32_t metadata_image_broker_configs(const struct metadata_image *img, const char *resource,
                                      const struct metadata_broker_config **first);
/* Replicas of p whose broker is fenced or unregistered (Metadata's
 * offline_replicas): writes up to max ids to out, returns how many exist. */
int32_t metadata_partition_offline_replicas(const struct metadata_image *img, const struct metadata_partition *p,
                                            int32_t *out, int32_t max);

/* Iterate topics in name order: for (i = 0; i < img->topic_count; i++) img->topics[i]. */

/* Structural equality of two images, ignoring last_offset; used to check
 * that a replay rebuilds exactly what was published. */
bool metadata_image_equal(const struct metadata_image *a, const struct metadata_image *b);

/* True when the uuid is all zeros. */
bool metadata_uuid_is_zero(const struct kafka_uuid *id);

#endif
