/* The metadata store: the controller of this (single-voter) node and the
 * loader of its metadata log. A controller operation validates against the
 * current image and prepares one batch of metadata records, which it hands
 * to the metadata log (metadata_log.h); the log tells the loader about the
 * commit, and the loader applies the records to a new image, publishes it
 * atomically, tells subscribers and, every
 * metadata.log.max.record.bytes.between.snapshots bytes, writes a snapshot.
 * An operation answers only once its commit is applied. At open the newest
 * snapshot is loaded and only the records after it are replayed.
 *
 * Thread-safety: every function may be called from any thread. Controller
 * operations are serialized by an internal mutex; readers take an immutable
 * image with metadata_image_acquire and never block writers for long.
 * Subscriber callbacks run on the thread that delivers the commit (today the
 * operation's), after the new image is published, with the loader's lock
 * held: they must not call mutating store functions (they may acquire
 * images). */
#ifndef CAIRN_METADATA_METADATA_STORE_H
#define CAIRN_METADATA_METADATA_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metadata/metadata_image.h"

struct metadata_log_ops;

struct metadata_store;

/* Checks one topic config (key, value); returns 0, or -1 with a reason.
 * The server wires Cairn's topic config validation here. */
typedef int (*metadata_config_validator)(void *ctx, const char *key, const char *value, char *err, size_t errlen);

struct metadata_store_options {
    const char *dir; /* metadata.log.dir or the first log.dir; the log lives in
                                      <dir>/__cluster_metadata-0 */
    int32_t node_id;
    const char *cluster_id;                    /* from meta.properties */
    const struct metadata_endpoint *endpoints; /* this broker's advertised listeners */
    int32_t endpoint_count;
    const char *rack;                                /* NULL when none */
    int32_t default_num_partitions;                  /* num.partitions; <= 0 means 1 */
    int16_t default_replication_factor;              /* default.replication.factor; <= 0 means 1 */
    metadata_config_validator validate_topic_config; /* NULL: accept any key/value */
    void *validate_ctx;
    /* metadata.log.max.record.bytes.between.snapshots: a snapshot after this
     * many bytes of new records; 0 means Kafka's default, < 0 never. */
    int64_t snapshot_bytes;
    /* metadata.log.max.snapshot.interval.ms: a snapshot of new records
     * once this long has passed since the last one; 0 never (Kafka's
     * meaning of 0), < 0 Kafka's default. */
    int64_t snapshot_interval_ms;
    /* unclean.leader.election.enable of this node's static config: the
     * election's last resort after the topic's and the cluster's dynamic
     * values (metadata_election.h). */
    bool unclean_leader_election_enable;
    /* min.insync.replicas of this node's static config: the ELR's minimum
     * after the topic's and the cluster's dynamic values. */
    int32_t min_insync_replicas;
    /* eligible.leader.replicas.enable: the level of the feature
     * eligible.leader.replicas.version this node finalizes as controller
     * (1 or 0) when a broker registers. */
    bool eligible_leader_replicas_enable;
    /* The metadata quorum's log (raft/raft_shell_metadata.h); NULL: the
     * single-voter local log in dir. With a quorum nothing is written at
     * open: the log is caught up as the quorum commits, and brokers are
     * registered with metadata_register_broker. */
    const struct metadata_log_ops *log_ops;
    void *log;
};

#define METADATA_SNAPSHOT_BYTES_DEFAULT 20971520
#define METADATA_SNAPSHOT_INTERVAL_MS_DEFAULT 3600000

/* What the last open loaded, and snapshots written since. */
struct metadata_load_stats {
    int64_t snapshot_end_offset; /* -1 when no snapshot was loaded */
    int64_t snapshot_records;    /* records read from that snapshot */
    int64_t log_records;         /* records replayed from the log after it */
    int64_t snapshots_written;
};

int metadata_store_open(const struct metadata_store_options *opts, struct metadata_store **out, char *err,
                        size_t errlen);
void metadata_store_close(struct metadata_store *store);
/* At shutdown, before the threads that run controller operations are
 * joined: an operation waiting for its batch to commit (up to 10 s, and
 * a quorum that is stopping never commits it) returns at once with
 * REQUEST_TIMED_OUT, and later ones do not wait. Any thread; NULL is a
 * no-op. */
void metadata_store_begin_shutdown(struct metadata_store *store);

void metadata_store_load_stats(struct metadata_store *store, struct metadata_load_stats *out);

/* The current image, retained; pair with metadata_image_release. Never NULL
 * for an open store. */
const struct metadata_image *metadata_image_acquire(struct metadata_store *store);

/* Called after each publish with the previous and the new image (both valid
 * only during the call; retain to keep). */
typedef void (*metadata_listener_fn)(void *ctx, const struct metadata_image *old_image,
                                     const struct metadata_image *new_image);
/* Returns a subscription id (> 0), or -1 on allocation failure. */
int metadata_store_subscribe(struct metadata_store *store, metadata_listener_fn fn, void *ctx);
void metadata_store_unsubscribe(struct metadata_store *store, int id);

/* What changed between two images (for listeners that create and delete
 * partition logs). Arrays point at topics of the images passed in. */
struct metadata_delta {
    const struct metadata_topic **created; /* in new, not in old (by id) */
    int32_t created_count;
    const struct metadata_topic **deleted; /* in old, not in new (by id) */
    int32_t deleted_count;
    const struct metadata_topic **changed; /* in both, different object (partitions or configs changed) */
    int32_t changed_count;
};
/* Returns 0, or -1 on allocation failure. Free with metadata_delta_free. */
int metadata_delta_compute(const struct metadata_image *old_image, const struct metadata_image *new_image,
                           struct metadata_delta *out);
void metadata_delta_free(struct metadata_delta *delta);

/* ---- controller operations; each returns a Kafka error code ---- */

struct metadata_config_kv {
    const char *key;
    const char *value; /* NULL deletes (alter) */
};

/* Manual assignment for one partition: the replica broker ids, leader first. */
struct metadata_replica_assignment {
    int32_t partition_index;
    const int32_t *broker_ids;
    int32_t broker_count;
};

/* num_partitions / replication_factor -1 use the defaults; with assignments
 * both must be -1 (Kafka's rule) and partitions are 0..count-1. */
int16_t metadata_create_topic(struct metadata_store *store, const char *name, int32_t num_partitions,
                              int16_t replication_factor, const struct metadata_replica_assignment *assignments,
                              int32_t assignment_count, const struct metadata_config_kv *configs, int32_t config_count,
                              bool validate_only, struct kafka_uuid *topic_id_out, char *err, size_t errlen);

/* A create's wait for this node to apply it, as the request's TimeoutMs:
 * METADATA_WAIT_APPLIED waits until this node has applied the commit
 * (partition logs created), up to the store's own bound; 0 answers once
 * the batch is committed and the image holds it; > 0 waits for the
 * application up to that many ms, then REQUEST_TIMED_OUT (the topic stays
 * created, as in Kafka). */
#define METADATA_WAIT_APPLIED (-1)
int16_t metadata_create_topic_within(struct metadata_store *store, const char *name, int32_t num_partitions,
                                     int16_t replication_factor, const struct metadata_replica_assignment *assignments,
                                     int32_t assignment_count, const struct metadata_config_kv *configs,
                                     int32_t config_count, bool validate_only, int32_t timeout_ms,
                                     struct kafka_uuid *topic_id_out, char *err, size_t errlen);
int16_t metadata_create_partitions_within(struct metadata_store *store, const char *name, int32_t new_total,
                                          const struct metadata_replica_assignment *assignments,
                                          int32_t assignment_count, bool validate_only, int32_t timeout_ms, char *err,
                                          size_t errlen);

/* Deletes by name, or by id when name is NULL. */
int16_t metadata_delete_topic(struct metadata_store *store, const char *name, const struct kafka_uuid *topic_id,
                              char *err, size_t errlen);

/* Grows a topic to new_total partitions; assignments (may be NULL) cover the
 * new partitions in order. */
int16_t metadata_create_partitions(struct metadata_store *store, const char *name, int32_t new_total,
                                   const struct metadata_replica_assignment *assignments, int32_t assignment_count,
                                   bool validate_only, char *err, size_t errlen);

/* Sets (value != NULL) or deletes (value NULL) dynamic topic configs. */
int16_t metadata_alter_topic_configs(struct metadata_store *store, const char *name,
                                     const struct metadata_config_kv *configs, int32_t config_count, bool validate_only,
                                     char *err, size_t errlen);

/* Who registers (BrokerRegistration's IncarnationId and
 * PreviousBrokerEpoch), and what the controller knows of the registered
 * one's session. */
struct metadata_incarnation {
    struct kafka_uuid id;          /* the process's random id */
    int64_t previous_epoch;        /* its epoch before a clean shutdown, -1 */
    bool registered_session_valid; /* the registered broker heard from within broker.session.timeout.ms */
};

/* Registers a broker (KRaft's BrokerRegistration at the controller): the
 * metadata.version feature on a fresh log, a RegisterBrokerRecord when the
 * broker is missing, its endpoints or rack changed, or incarnation (NULL:
 * any) is a new one (its epoch is that record's offset), and unfencing when
 * fenced (unless stay_fenced). A new incarnation while the registered one
 * is unfenced with a valid session gets DUPLICATE_BROKER_REGISTRATION, as
 * from Kafka's controller (two processes with one node.id, or a restart
 * within the session), unless its previous_epoch is the registered epoch (a
 * clean shutdown). *epoch_out gets the broker epoch (-1 when refused).
 * NOT_CONTROLLER when this node does not lead the metadata quorum. */
int16_t metadata_register_broker(struct metadata_store *store, int32_t node_id,
                                 const struct metadata_endpoint *endpoints, int32_t endpoint_count, const char *rack,
                                 const struct metadata_incarnation *incarnation, bool stay_fenced, int64_t *epoch_out,
                                 char *err, size_t errlen);

/* Fences (fenced) or unfences a registered broker at its current epoch; a
 * broker already in that state writes nothing. UNKNOWN_MEMBER_ID for a
 * broker not registered (or at another epoch when epoch >= 0). */
int16_t metadata_set_broker_fenced(struct metadata_store *store, int32_t node_id, int64_t epoch, bool fenced, char *err,
                                   size_t errlen);

/* True when this node can write the metadata log now (it leads the quorum
 * and has applied all of it; always true on the single-voter log). */
bool metadata_store_is_controller(struct metadata_store *store);
/* True while this node leads the quorum but its image has not caught up with
 * its log (is_controller says false meanwhile): still the controller, only
 * not able to write for a moment. */
bool metadata_store_catching_up(struct metadata_store *store);
/* Dynamic broker configs: resource "" is the cluster-wide default, "<id>"
 * one broker. Sets (value != NULL) or deletes (value NULL) each key as one
 * batch of ConfigRecords. A key set must pass config_dynamic_check_key
 * (INVALID_CONFIG naming the key, or INVALID_REQUEST for a per-broker key
 * at the default level) and parse as its type; a bad resource name is
 * INVALID_REQUEST. */
int16_t metadata_alter_broker_configs(struct metadata_store *store, const char *resource,
                                      const struct metadata_config_kv *configs, int32_t config_count,
                                      bool validate_only, char *err, size_t errlen);
/* "" or a non-negative decimal broker id. */
bool metadata_broker_resource_valid(const char *resource);

struct broker_config;
struct config_kv;
/* base with img's dynamic broker configs for node_id layered over it (see
 * config_build_layered). extra, when not NULL, replaces the entries of one
 * layer (the default with extra_is_default, else node_id's) to check a
 * proposed change. Free *out with config_free. */
int metadata_broker_config_layered(const struct metadata_image *img, const struct broker_config *base, int32_t node_id,
                                   const struct config_kv *extra, size_t extra_count, bool extra_is_default,
                                   struct broker_config **out, char *err, size_t errlen);
/* True when the default or node_id's dynamic broker configs differ (a NULL
 * image has none). */
bool metadata_broker_configs_changed(const struct metadata_image *old_image, const struct metadata_image *new_image,
                                     int32_t node_id);

/* Size of the producer id blocks the controller hands out (Kafka's). */
#define METADATA_PRODUCER_ID_BLOCK_SIZE 1000

/* Allocates a block of METADATA_PRODUCER_ID_BLOCK_SIZE producer ids for
 * broker_id, recorded as a ProducerIdsRecord so no id is reused after a
 * restart; *first gets the first id of the block. */
int16_t metadata_allocate_producer_ids(struct metadata_store *store, int32_t broker_id, int64_t *first, char *err,
                                       size_t errlen);

/* Where a new block of producer ids comes from when this node may not write
 * the metadata log: the active controller, asked over the network
 * (AllocateProducerIds). *first gets the block's first id. */
typedef int16_t (*metadata_producer_id_allocator)(void *ctx, int64_t *first, char *err, size_t errlen);
/* Set once, before the store is shared; NULL: metadata_allocate_producer_ids. */
void metadata_store_set_producer_id_allocator(struct metadata_store *store, metadata_producer_id_allocator fn,
                                              void *ctx);

/* Where a topic is created when this node may not write the metadata log
 * (a pure broker): the active controller, asked over the network. Used by
 * metadata_create_topic for creations without manual assignments that are
 * not validate_only (internal and auto-created topics) while this store is
 * not the controller. */
typedef int16_t (*metadata_topic_creator)(void *ctx, const char *name, int32_t num_partitions,
                                          int16_t replication_factor, const struct metadata_config_kv *configs,
                                          int32_t config_count, char *err, size_t errlen);
/* Set once, before the store is shared; NULL: this store's controller only. */
void metadata_store_set_topic_creator(struct metadata_store *store, metadata_topic_creator fn, void *ctx);
/* Where a voter that does not lead creates the topics it needs itself
 * (internal and auto-created), as Kafka's brokers forward them; its
 * CreateTopics still answer NOT_CONTROLLER. Set once, before sharing. */
void metadata_store_set_own_topic_creator(struct metadata_store *store, metadata_topic_creator fn, void *ctx);
/* A topic this node needs itself (an internal one, or auto-created by
 * Metadata or Produce): created here when this store is the controller,
 * otherwise through the topic creator (pure broker) or the own-topic
 * creator (voter), else answered as metadata_create_topic answers. */
int16_t metadata_create_own_topic(struct metadata_store *store, const char *name, int32_t num_partitions,
                                  int16_t replication_factor, const struct metadata_config_kv *configs,
                                  int32_t config_count, char *err, size_t errlen);

/* The next producer id for this broker, from its current block; allocates a
 * new block when the current one is used up (or none exists yet). */
int16_t metadata_next_producer_id(struct metadata_store *store, int64_t *id, char *err, size_t errlen);

/* One AlterUserScramCredentials alteration: remove the credential of
 * (name, mechanism), or put cred (whose name and mechanism it carries). */
struct metadata_scram_change {
    const char *name;
    int8_t mechanism;
    const struct metadata_scram *cred; /* NULL: remove */
    int16_t error_code;                /* in: an error found by the caller; out: the result */
};

/* Applies the changes in one batch, per user as Kafka does: a removal of a
 * credential that does not exist is RESOURCE_NOT_FOUND, and when any change
 * of a user failed (here or in the caller's checks), none of that user's
 * changes are written. Returns NONE, or the error of the batch commit. */
int16_t metadata_alter_scram(struct metadata_store *store, struct metadata_scram_change *changes, int32_t count,
                             char *err, size_t errlen);

/* ---- ACL bindings (metadata_acl_controller.c) ---- */

/* A DescribeAcls / DeleteAcls filter, Kafka's AclBindingFilter: ANY (1) in
 * a type, operation or permission matches all; a NULL string matches all;
 * pattern MATCH (2) with a name matches the LITERAL binding of that name,
 * the LITERAL "*" and every PREFIXED binding the name starts with. */
struct metadata_acl_filter {
    int8_t resource_type;
    const char *resource_name;
    int8_t pattern_type;
    const char *principal;
    const char *host;
    int8_t operation;
    int8_t permission_type;
};

bool metadata_acl_filter_matches(const struct metadata_acl_filter *f, const struct metadata_acl *acl);

/* Kafka's checks of a new binding (AclControlManager): INVALID_REQUEST
 * with a reason for UNKNOWN/ANY types, a pattern other than LITERAL or
 * PREFIXED, an empty resource name, a principal without "type:". */
int16_t metadata_acl_validate(const struct metadata_acl *acl, char *err, size_t errlen);
/* Kafka's check of a filter: INVALID_REQUEST when any part is UNKNOWN. */
int16_t metadata_acl_filter_validate(const struct metadata_acl_filter *f, char *err, size_t errlen);

/* Appends one AccessControlEntryRecord per binding not already present (an
 * identical binding is kept, as Kafka does) as one batch; ids are chosen
 * here. Each binding must have passed metadata_acl_validate. */
int16_t metadata_create_acls(struct metadata_store *store, const struct metadata_acl *acls, int32_t count, char *err,
                             size_t errlen);

/* Appends one RemoveAccessControlEntryRecord per id still in the image, as
 * one batch; ids already gone are skipped. */
int16_t metadata_delete_acls(struct metadata_store *store, const struct kafka_uuid *ids, int32_t count, char *err,
                             size_t errlen);

/* Topic name rules (Kafka's): returns KAFKA_ERR_NONE or INVALID_TOPIC_EXCEPTION with a reason. */
int16_t metadata_validate_topic_name(const char *name, char *err, size_t errlen);

#endif
