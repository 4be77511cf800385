/* Keys and values of __consumer_offsets records in Kafka's byte layout: an
 * int16 schema version, then the schema's fields. Offsets use
 * OffsetCommitKey (key version 0/1) and OffsetCommitValue; groups use
 * GroupMetadataKey (key version 2) and GroupMetadataValue. Other key
 * versions belong to record types Cairn does not keep (the new consumer
 * group protocol) and are reported as unknown.
 *
 * Thread-safety: stateless; writers and arenas belong to the caller. */
#ifndef CAIRN_GROUP_GROUP_LOG_CODEC_H
#define CAIRN_GROUP_GROUP_LOG_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "group/group_persistence.h"
#include "protocol/wire.h"

#define GROUP_LOG_OFFSET_KEY_VERSION 1
#define GROUP_LOG_GROUP_KEY_VERSION 2
/* Value versions written: 3 carries the leader epoch; 1 is the only one
 * that carries an explicit expire timestamp (OffsetCommit v2-v4 retention). */
#define GROUP_LOG_OFFSET_VALUE_VERSION 3
#define GROUP_LOG_OFFSET_VALUE_VERSION_EXPIRING 1
#define GROUP_LOG_GROUP_VALUE_VERSION 3
#define GROUP_LOG_MAX_VALUE_VERSION 4

/* Each encoder appends to w; returns 0, or -1 when a field cannot be
 * represented (a string longer than 32767 bytes) or memory ran out. NULL
 * strings that the schema does not allow to be null are written as "". */
int group_log_encode_offset_key(struct kafka_writer *w, const char *group_id, const char *topic, int32_t partition);
int group_log_encode_offset_value(struct kafka_writer *w, const struct group_offset_record *rec);
int group_log_encode_group_key(struct kafka_writer *w, const char *group_id);
int group_log_encode_group_value(struct kafka_writer *w, const struct group_snapshot_record *group);

enum group_log_key_type {
    GROUP_LOG_KEY_OFFSET = 1,
    GROUP_LOG_KEY_GROUP = 2,
};

/* A decoded key; strings are NUL-terminated copies in the arena. */
struct group_log_key {
    enum group_log_key_type type;
    const char *group_id;
    const char *topic; /* offsets only */
    int32_t partition; /* offsets only */
};

/* Each decoder returns 0, or -1 with the reason in err (unknown version,
 * truncated or malformed bytes). Outputs point into the arena. */
int group_log_decode_key(const uint8_t *key, size_t len, struct kafka_arena *arena, struct group_log_key *out,
                         char *err, size_t errlen);
/* metadata comes back as "" when it was written for a null one: the value
 * schema has no null metadata (Kafka stores "" too). */
int group_log_decode_offset_value(const uint8_t *value, size_t len, struct kafka_arena *arena,
                                  struct group_offset_record *out, char *err, size_t errlen);
/* out->group_id is set to group_id; members live in the arena. */
int group_log_decode_group_value(const uint8_t *value, size_t len, const char *group_id, struct kafka_arena *arena,
                                 struct group_snapshot_record *out, char *err, size_t errlen);

#endif
