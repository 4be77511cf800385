/* Building a new metadata image from a base image plus changes.
 *
 * Thread-safety: a builder is owned by one thread (the store's writer, under
 * the store mutex, or the replay at open). The base image is only read; topics
 * are copied on first change (copy-on-write) so the base stays valid. */
#ifndef CAIRN_METADATA_METADATA_BUILDER_H
#define CAIRN_METADATA_METADATA_BUILDER_H
#include "metadata/metadata_image.h"

/* The finalized feature that turns Eligible Leader Replicas on (level 1),
 * as Kafka names it. */
#define METADATA_ELR_FEATURE "eligible.leader.replicas.version"

struct metadata_builder;

/* base may be NULL (empty cluster). Returns NULL on allocation failure. */
struct metadata_builder *metadata_builder_new(const struct metadata_image *base);
void metadata_builder_free(struct metadata_builder *b);

/* The image as built so far (valid until the next builder call); lets the
 * controller validate a later record of a batch against earlier ones. */
const struct metadata_image *metadata_builder_peek(struct metadata_builder *b);

/* Each change returns 0, or -1 with a reason in err (unknown topic, bad
 * index, out of memory); replay logs the reason and goes on. */
int metadata_builder_set_cluster(struct metadata_builder *b, const char *cluster_id, int32_t controller_id, char *err,
                                 size_t errlen);
int metadata_builder_set_feature(struct metadata_builder *b, const char *name, size_t name_len, int16_t level,
                                 char *err, size_t errlen);
/* ProducerIdsRecord: the first id of the next block; must not move back. */
int metadata_builder_set_next_producer_id(struct metadata_builder *b, int64_t next_producer_id, char *err,
                                          size_t errlen);
/* Replaces any previous registration of broker->node_id; deep-copies. */
int metadata_builder_register_broker(struct metadata_builder *b, const struct metadata_broker *broker, char *err,
                                     size_t errlen);
int metadata_builder_unregister_broker(struct metadata_builder *b, int32_t node_id, char *err, size_t errlen);
/* fenced / in_controlled_shutdown: -1 keep, 0 false, 1 true. */
int metadata_builder_change_broker(struct metadata_builder *b, int32_t node_id, int64_t epoch, int fenced,
                                   int in_controlled_shutdown, char *err, size_t errlen);

int metadata_builder_add_topic(struct metadata_builder *b, const char *name, size_t name_len,
                               const struct kafka_uuid *id, char *err, size_t errlen);
int metadata_builder_remove_topic(struct metadata_builder *b, const struct kafka_uuid *id, char *err, size_t errlen);
/* Sets a whole partition (PartitionRecord); deep-copies replicas and isr. */
int metadata_builder_set_partition(struct metadata_builder *b, const struct kafka_uuid *topic_id,
                                   const struct metadata_partition *p, char *err, size_t errlen);

/* A partial change (PartitionChangeRecord): NULL arrays and leader -2 mean
 * unchanged; any other leader, the current one included, bumps the leader
 * epoch (writers name the current leader only to force that bump). */
struct metadata_partition_change {
    int32_t partition_index;
    int32_t leader; /* -2 = unchanged, -1 = no leader */
    const int32_t *isr;
    int32_t isr_count;
    const int32_t *replicas;
    int32_t replica_count;
    const int32_t *adding; /* reassignment; NULL = unchanged, empty = cleared */
    int32_t adding_count;
    const int32_t *removing;
    int32_t removing_count;
    const int32_t *elr; /* KIP-966; NULL = unchanged, empty = cleared */
    int32_t elr_count;
    const int32_t *last_known_elr;
    int32_t last_known_elr_count;
};
int metadata_builder_change_partition(struct metadata_builder *b, const struct kafka_uuid *topic_id,
                                      const struct metadata_partition_change *c, char *err, size_t errlen);

/* value NULL deletes the key. Topic configs need the topic to exist. */
int metadata_builder_set_config(struct metadata_builder *b, int8_t resource_type, const char *resource,
                                size_t resource_len, const char *name, size_t name_len, const char *value,
                                int32_t value_len, char *err, size_t errlen);

/* AccessControlEntryRecord: adds (deep-copies) a binding; an id already
 * present is replaced, as a replayed record wins. */
int metadata_builder_add_acl(struct metadata_builder *b, const struct metadata_acl *acl, char *err, size_t errlen);
/* RemoveAccessControlEntryRecord: an unknown id is an error. */
int metadata_builder_remove_acl(struct metadata_builder *b, const struct kafka_uuid *id, char *err, size_t errlen);

/* UserScramCredentialRecord: adds or replaces (deep-copies) the credential
 * of (name, mechanism). RemoveUserScramCredentialRecord: an unknown one is
 * an error. */
int metadata_builder_put_scram(struct metadata_builder *b, const struct metadata_scram *cred, char *err, size_t errlen);
int metadata_builder_remove_scram(struct metadata_builder *b, const char *name, int8_t mechanism, char *err,
                                  size_t errlen);

/* Finishes the image (indexes it) and frees the builder. Returns NULL on
 * allocation failure (the builder is freed either way). */
struct metadata_image *metadata_builder_finish(struct metadata_builder *b, int64_t last_offset);

#endif
