/* Kafka metadata records (the values of __cluster_metadata records):
 * framing, encoding at the latest version, and decoding any valid version
 * straight into an image builder. The bodies go through the generated
 * codecs (the *_record.h files of protocol/generated); this file maps them
 * to the image.
 *
 * Framing: unsigned varint frame version (1, as Kafka writes it; 0 was the
 * 2.8 preview format), unsigned varint record type (the schema's apiKey),
 * unsigned varint record version, then the body. Every metadata record is
 * flexible in all versions: compact strings/arrays and a tagged-field
 * section after each struct.
 *
 * Thread-safety: pure functions over caller-owned writers and builders. */
#ifndef CAIRN_METADATA_METADATA_RECORDS_H
#define CAIRN_METADATA_METADATA_RECORDS_H
#include <stdint.h>

#include "metadata/metadata_builder.h"
#include "protocol/wire.h"

#define METADATA_RECORD_FRAME_VERSION 1

enum metadata_record_type {
    METADATA_RECORD_REGISTER_BROKER = 0,
    METADATA_RECORD_UNREGISTER_BROKER = 1,
    METADATA_RECORD_TOPIC = 2,
    METADATA_RECORD_PARTITION = 3,
    METADATA_RECORD_CONFIG = 4,
    METADATA_RECORD_PARTITION_CHANGE = 5,
    METADATA_RECORD_FENCE_BROKER = 7,
    METADATA_RECORD_UNFENCE_BROKER = 8,
    METADATA_RECORD_REMOVE_TOPIC = 9,
    METADATA_RECORD_FEATURE_LEVEL = 12,
    METADATA_RECORD_PRODUCER_IDS = 15,
    METADATA_RECORD_ACCESS_CONTROL_ENTRY = 18,
    METADATA_RECORD_REMOVE_ACCESS_CONTROL_ENTRY = 19,
    METADATA_RECORD_BROKER_REGISTRATION_CHANGE = 17,
    METADATA_RECORD_NO_OP = 20,
    METADATA_RECORD_USER_SCRAM_CREDENTIAL = 11,
    METADATA_RECORD_REMOVE_USER_SCRAM_CREDENTIAL = 22,
    METADATA_RECORD_CLIENT_QUOTA = 14,
};

/* metadata.version feature level written at bootstrap: the first level whose
 * records match the latest schema versions written here (PartitionRecord v2,
 * RegisterBrokerRecord v3, PartitionChangeRecord v2). */
#define METADATA_VERSION_LEVEL 22

/* Encoders: append one framed record to w (check w->failed afterwards). */
void metadata_record_write_feature_level(struct kafka_writer *w, const char *name, int16_t level);
/* supported_max: the highest metadata.version this broker supports. */
void metadata_record_write_register_broker(struct kafka_writer *w, const struct metadata_broker *broker,
                                           int16_t supported_max);
void metadata_record_write_unfence_broker(struct kafka_writer *w, int32_t node_id, int64_t epoch);
void metadata_record_write_fence_broker(struct kafka_writer *w, int32_t node_id, int64_t epoch);
void metadata_record_write_topic(struct kafka_writer *w, const char *name, const struct kafka_uuid *id);
void metadata_record_write_remove_topic(struct kafka_writer *w, const struct kafka_uuid *id);
void metadata_record_write_partition(struct kafka_writer *w, const struct kafka_uuid *topic_id,
                                     const struct metadata_partition *p);
void metadata_record_write_partition_change(struct kafka_writer *w, const struct kafka_uuid *topic_id,
                                            const struct metadata_partition_change *c);
/* ProducerIdsRecord: a block ending before next_producer_id went to broker_id. */
void metadata_record_write_producer_ids(struct kafka_writer *w, int32_t broker_id, int64_t broker_epoch,
                                        int64_t next_producer_id);
/* AccessControlEntryRecord / RemoveAccessControlEntryRecord. */
void metadata_record_write_acl(struct kafka_writer *w, const struct metadata_acl *acl);
void metadata_record_write_remove_acl(struct kafka_writer *w, const struct kafka_uuid *id);
/* UserScramCredentialRecord / RemoveUserScramCredentialRecord. */
void metadata_record_write_scram(struct kafka_writer *w, const struct metadata_scram *cred);
void metadata_record_write_remove_scram(struct kafka_writer *w, const char *name, int8_t mechanism);
/* value NULL writes a null value (delete). */
void metadata_record_write_config(struct kafka_writer *w, int8_t resource_type, const char *resource, const char *name,
                                  const char *value);
/* Writes an arbitrary framed record with an opaque body (tests: unknown types). */
void metadata_record_write_raw(struct kafka_writer *w, uint32_t type, uint32_t version, const void *body,
                               size_t body_len);

enum metadata_apply_result {
    METADATA_APPLY_OK = 0,
    METADATA_APPLY_SKIPPED = 1,  /* unknown type/version/frame: ignored, reason in err */
    METADATA_APPLY_INVALID = -1, /* malformed or inconsistent: not applied, reason in err */
};

/* Decodes one record value and applies it to the builder. offset is the
 * record's log offset (a RegisterBrokerRecord's offset is the broker epoch
 * only when the record carries none). */
enum metadata_apply_result metadata_record_apply(struct metadata_builder *b, const uint8_t *value, size_t len,
                                                 int64_t offset, char *err, size_t errlen);

#endif
