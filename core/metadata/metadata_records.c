/* Metadata record codec: the frame, and the mapping between the generated
 * record codecs (Kafka's metadata record schemas, all flexible) and the
 * image: encoding at the latest versions, decoding every valid version into
 * builder changes. */
#include "metadata/metadata_records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/access_control_entry_record.h"
#include "metadata/metadata_quota.h"
#include "protocol/generated/broker_registration_change_record.h"
#include "protocol/generated/client_quota_record.h"
#include "protocol/generated/config_record.h"
#include "protocol/generated/feature_level_record.h"
#include "protocol/generated/fence_broker_record.h"
#include "protocol/generated/partition_change_record.h"
#include "protocol/generated/partition_record.h"
#include "protocol/generated/producer_ids_record.h"
#include "protocol/generated/register_broker_record.h"
#include "protocol/generated/remove_access_control_entry_record.h"
#include "protocol/generated/remove_topic_record.h"
#include "protocol/generated/remove_user_scram_credential_record.h"
#include "protocol/generated/topic_record.h"
#include "protocol/generated/unfence_broker_record.h"
#include "protocol/generated/unregister_broker_record.h"
#include "protocol/generated/user_scram_credential_record.h"

/* Latest versions this file writes and the highest it reads. */
#define REGISTER_BROKER_MAX_VERSION 3
#define PARTITION_MAX_VERSION 2
#define PARTITION_CHANGE_MAX_VERSION 2
#define BROKER_REGISTRATION_CHANGE_MAX_VERSION 2

/* ---- encoding ---- */

static void write_frame(struct kafka_writer *w, uint32_t type, uint32_t version)
{
    kafka_write_uvarint(w, METADATA_RECORD_FRAME_VERSION);
    kafka_write_uvarint(w, type);
    kafka_write_uvarint(w, version);
}

void metadata_record_write_raw(struct kafka_writer *w, uint32_t type, uint32_t version, const void *body,
                               size_t body_len)
{
    write_frame(w, type, version);
    kafka_write_raw(w, body, body_len);
}

/* Strings the generated encoders read; never NULL (the records' strings are not nullable). */
static struct kafka_str str_of(const char *s)
{
    return kafka_str_from_cstr(s ? s : "");
}

void metadata_record_write_feature_level(struct kafka_writer *w, const char *name, int16_t level)
{
    write_frame(w, METADATA_RECORD_FEATURE_LEVEL, 0);
    struct feature_level_record m = {.name = str_of(name), .feature_level = level};
    feature_level_record_encode(&m, w, 0);
}

void metadata_record_write_register_broker(struct kafka_writer *w, const struct metadata_broker *broker,
                                           int16_t supported_max)
{
    write_frame(w, METADATA_RECORD_REGISTER_BROKER, REGISTER_BROKER_MAX_VERSION);
    struct register_broker_record m;
    register_broker_record_init(&m);
    struct register_broker_record_broker_endpoint *eps = calloc(
        broker->endpoint_count > 0 ? (size_t)broker->endpoint_count : 1, sizeof(*eps));
    if (!eps) {
        w->failed = true;
        return;
    }
    for (int32_t i = 0; i < broker->endpoint_count; i++) {
        const struct metadata_endpoint *e = &broker->endpoints[i];
        eps[i] = (struct register_broker_record_broker_endpoint){.name = str_of(e->listener),
                                                                 .host = str_of(e->host),
                                                                 .port = e->port,
                                                                 .security_protocol = e->security_protocol};
    }
    struct register_broker_record_broker_feature feature = {
        .name = str_of("metadata.version"), .min_supported_version = 1, .max_supported_version = supported_max};
    m.broker_id = broker->node_id;
    m.incarnation_id = broker->incarnation_id;
    m.broker_epoch = broker->epoch;
    m.end_points = eps;
    m.end_points_count = broker->endpoint_count;
    m.features = &feature;
    m.features_count = 1;
    m.rack = broker->rack ? kafka_str_from_cstr(broker->rack) : (struct kafka_str){NULL, -1};
    m.fenced = broker->fenced;
    m.in_controlled_shutdown = broker->in_controlled_shutdown;
    register_broker_record_encode(&m, w, REGISTER_BROKER_MAX_VERSION); /* LogDirs left at its empty default */
    free(eps);
}

void metadata_record_write_unfence_broker(struct kafka_writer *w, int32_t node_id, int64_t epoch)
{
    write_frame(w, METADATA_RECORD_UNFENCE_BROKER, 0);
    struct unfence_broker_record m = {.id = node_id, .epoch = epoch};
    unfence_broker_record_encode(&m, w, 0);
}

void metadata_record_write_fence_broker(struct kafka_writer *w, int32_t node_id, int64_t epoch)
{
    write_frame(w, METADATA_RECORD_FENCE_BROKER, 0);
    struct fence_broker_record m = {.id = node_id, .epoch = epoch};
    fence_broker_record_encode(&m, w, 0);
}

void metadata_record_write_topic(struct kafka_writer *w, const char *name, const struct kafka_uuid *id)
{
    write_frame(w, METADATA_RECORD_TOPIC, 0);
    struct topic_record m = {.name = str_of(name), .topic_id = *id};
    topic_record_encode(&m, w, 0);
}

void metadata_record_write_producer_ids(struct kafka_writer *w, int32_t broker_id, int64_t broker_epoch,
                                        int64_t next_producer_id)
{
    write_frame(w, METADATA_RECORD_PRODUCER_IDS, 0);
    struct producer_ids_record m = {
        .broker_id = broker_id, .broker_epoch = broker_epoch, .next_producer_id = next_producer_id};
    producer_ids_record_encode(&m, w, 0);
}

void metadata_record_write_remove_topic(struct kafka_writer *w, const struct kafka_uuid *id)
{
    write_frame(w, METADATA_RECORD_REMOVE_TOPIC, 0);
    struct remove_topic_record m = {.topic_id = *id};
    remove_topic_record_encode(&m, w, 0);
}

void metadata_record_write_acl(struct kafka_writer *w, const struct metadata_acl *acl)
{
    write_frame(w, METADATA_RECORD_ACCESS_CONTROL_ENTRY, 0);
    struct access_control_entry_record m = {
        .id = acl->id,
        .resource_type = acl->resource_type,
        .resource_name = str_of(acl->resource_name),
        .pattern_type = acl->pattern_type,
        .principal = str_of(acl->principal),
        .host = str_of(acl->host),
        .operation = acl->operation,
        .permission_type = acl->permission_type,
    };
    access_control_entry_record_encode(&m, w, 0);
}

void metadata_record_write_remove_acl(struct kafka_writer *w, const struct kafka_uuid *id)
{
    write_frame(w, METADATA_RECORD_REMOVE_ACCESS_CONTROL_ENTRY, 0);
    struct remove_access_control_entry_record m = {.id = *id};
    remove_access_control_entry_record_encode(&m, w, 0);
}

void metadata_record_write_scram(struct kafka_writer *w, const struct metadata_scram *cred)
{
    write_frame(w, METADATA_RECORD_USER_SCRAM_CREDENTIAL, 0);
    struct user_scram_credential_record m = {
        .name = str_of(cred->name),
        .mechanism = cred->mechanism,
        .salt = {cred->salt, cred->salt_len},
        .stored_key = {cred->stored_key, cred->key_len},
        .server_key = {cred->server_key, cred->key_len},
        .iterations = cred->iterations,
    };
    user_scram_credential_record_encode(&m, w, 0);
}

void metadata_record_write_remove_scram(struct kafka_writer *w, const char *name, int8_t mechanism)
{
    write_frame(w, METADATA_RECORD_REMOVE_USER_SCRAM_CREDENTIAL, 0);
    struct remove_user_scram_credential_record m = {.name = str_of(name), .mechanism = mechanism};
    remove_user_scram_credential_record_encode(&m, w, 0);
}

void metadata_record_write_partition(struct kafka_writer *w, const struct kafka_uuid *topic_id,
                                     const struct metadata_partition *p)
{
    write_frame(w, METADATA_RECORD_PARTITION, PARTITION_MAX_VERSION);
    struct partition_record m;
    partition_record_init(&m);
    /* Directories (v1+): one unassigned (zero) directory id per replica. */
    struct kafka_uuid *dirs = calloc(p->replica_count > 0 ? (size_t)p->replica_count : 1, sizeof(*dirs));
    if (!dirs) {
        w->failed = true;
        return;
    }
    m.partition_id = p->partition_index;
    m.topic_id = *topic_id;
    m.replicas = p->replicas;
    m.replicas_count = p->replica_count;
    m.isr = p->isr;
    m.isr_count = p->isr_count;
    m.removing_replicas = p->removing;
    m.removing_replicas_count = p->removing_count;
    m.adding_replicas = p->adding;
    m.adding_replicas_count = p->adding_count;
    m.leader = p->leader;
    m.leader_epoch = p->leader_epoch;
    m.partition_epoch = p->partition_epoch;
    m.directories = dirs;
    m.directories_count = p->replica_count;
    /* Recovery state RECOVERED is the default, left out; so is an empty
     * ELR (null), as Kafka writes it. */
    if (p->elr_count > 0) {
        m.eligible_leader_replicas = p->elr;
        m.eligible_leader_replicas_count = p->elr_count;
    }
    if (p->last_known_elr_count > 0) {
        m.last_known_elr = p->last_known_elr;
        m.last_known_elr_count = p->last_known_elr_count;
    }
    partition_record_encode(&m, w, PARTITION_MAX_VERSION);
    free(dirs);
}

void metadata_record_write_partition_change(struct kafka_writer *w, const struct kafka_uuid *topic_id,
                                            const struct metadata_partition_change *c)
{
    write_frame(w, METADATA_RECORD_PARTITION_CHANGE, PARTITION_CHANGE_MAX_VERSION);
    struct partition_change_record m;
    partition_change_record_init(&m); /* absent tagged fields: unchanged */
    m.partition_id = c->partition_index;
    m.topic_id = *topic_id;
    if (c->isr) {
        m.isr = (int32_t *)c->isr;
        m.isr_count = c->isr_count;
    }
    m.leader = c->leader;
    if (c->replicas) {
        m.replicas = (int32_t *)c->replicas;
        m.replicas_count = c->replica_count;
    }
    if (c->adding) {
        m.adding_replicas = (int32_t *)c->adding;
        m.adding_replicas_count = c->adding_count;
    }
    if (c->removing) {
        m.removing_replicas = (int32_t *)c->removing;
        m.removing_replicas_count = c->removing_count;
    }
    if (c->elr) {
        m.eligible_leader_replicas = (int32_t *)c->elr;
        m.eligible_leader_replicas_count = c->elr_count;
    }
    if (c->last_known_elr) {
        m.last_known_elr = (int32_t *)c->last_known_elr;
        m.last_known_elr_count = c->last_known_elr_count;
    }
    partition_change_record_encode(&m, w, PARTITION_CHANGE_MAX_VERSION);
}

void metadata_record_write_config(struct kafka_writer *w, int8_t resource_type, const char *resource, const char *name,
                                  const char *value)
{
    write_frame(w, METADATA_RECORD_CONFIG, 0);
    struct config_record m = {
        .resource_type = resource_type,
        .resource_name = str_of(resource),
        .name = str_of(name),
        .value = value ? kafka_str_from_cstr(value) : (struct kafka_str){NULL, -1},
    };
    config_record_encode(&m, w, 0);
}

/* ---- decoding ---- */

static enum metadata_apply_result invalid(char *err, size_t errlen, const char *what, const struct kafka_reader *r)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", what, r && r->failed ? r->error : "malformed");
    return METADATA_APPLY_INVALID;
}

/* After a generated decode: the record must end where its bytes end. */
static int decoded(int rc, struct kafka_reader *r)
{
    if (rc == 0 && !r->failed && kafka_reader_remaining(r) > 0)
        kafka_reader_fail(r, "%zu trailing bytes", kafka_reader_remaining(r));
    return rc != 0 || r->failed ? -1 : 0;
}

/* A NUL-terminated arena copy of a decoded string (NULL on no memory). */
static char *arena_cstr(struct kafka_arena *arena, struct kafka_str s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = kafka_arena_alloc(arena, n + 1);
    if (p) {
        if (n)
            memcpy(p, s.data, n);
        p[n] = '\0';
    }
    return p;
}

static enum metadata_apply_result applied(int rc)
{
    return rc == 0 ? METADATA_APPLY_OK : METADATA_APPLY_INVALID;
}

static enum metadata_apply_result apply_register_broker(struct metadata_builder *b, struct kafka_reader *r,
                                                        uint32_t version, struct kafka_arena *arena, char *err,
                                                        size_t errlen)
{
    struct register_broker_record m;
    /* Arrays and strings land in the arena, bounded by the record's own length. */
    if (decoded(register_broker_record_decode(&m, r, (int16_t)version, arena), r) != 0)
        return invalid(err, errlen, "RegisterBrokerRecord", r);
    int32_t n = m.end_points_count > 0 ? m.end_points_count : 0;
    struct metadata_endpoint *eps = n > 0 ? kafka_arena_alloc(arena, (size_t)n * sizeof(*eps)) : NULL;
    if (n > 0 && !eps)
        goto oom;
    for (int32_t i = 0; i < n; i++) {
        eps[i].listener = arena_cstr(arena, m.end_points[i].name);
        eps[i].host = arena_cstr(arena, m.end_points[i].host);
        eps[i].port = m.end_points[i].port;
        eps[i].security_protocol = m.end_points[i].security_protocol;
        if (!eps[i].listener || !eps[i].host)
            goto oom;
    }
    struct metadata_broker br = {
        .node_id = m.broker_id,
        .epoch = m.broker_epoch,
        .incarnation_id = m.incarnation_id,
        .rack = m.rack.len >= 0 ? arena_cstr(arena, m.rack) : NULL,
        .endpoints = eps,
        .endpoint_count = n,
        .fenced = m.fenced,
        .in_controlled_shutdown = m.in_controlled_shutdown,
    };
    if (m.rack.len >= 0 && !br.rack)
        goto oom;
    return applied(metadata_builder_register_broker(b, &br, err, errlen));
oom:
    if (err && errlen)
        snprintf(err, errlen, "out of memory");
    return METADATA_APPLY_INVALID;
}

static enum metadata_apply_result apply_partition(struct metadata_builder *b, struct kafka_reader *r, uint32_t version,
                                                  struct kafka_arena *arena, char *err, size_t errlen)
{
    struct partition_record m;
    /* Recovery state and directories are decoded but not tracked. */
    if (decoded(partition_record_decode(&m, r, (int16_t)version, arena), r) != 0 || m.replicas_count < 0 ||
        m.isr_count < 0)
        return invalid(err, errlen, "PartitionRecord", r);
    struct metadata_partition p = {
        .partition_index = m.partition_id,
        .leader = m.leader,
        .leader_epoch = m.leader_epoch,
        .partition_epoch = m.partition_epoch,
        .replicas = m.replicas,
        .replica_count = m.replicas_count,
        .isr = m.isr,
        .isr_count = m.isr_count,
        .adding = m.adding_replicas,
        .adding_count = m.adding_replicas_count > 0 ? m.adding_replicas_count : 0,
        .removing = m.removing_replicas,
        .removing_count = m.removing_replicas_count > 0 ? m.removing_replicas_count : 0,
        .elr = m.eligible_leader_replicas,
        .elr_count = m.eligible_leader_replicas_count > 0 ? m.eligible_leader_replicas_count : 0,
        .last_known_elr = m.last_known_elr,
        .last_known_elr_count = m.last_known_elr_count > 0 ? m.last_known_elr_count : 0,
    };
    return applied(metadata_builder_set_partition(b, &m.topic_id, &p, err, errlen));
}

/* An empty array must still read as "changed": NULL means unchanged. */
static const int32_t *present_array(const int32_t *v, int32_t count)
{
    static const int32_t empty;
    return count < 0 ? NULL : (v ? v : &empty);
}

static enum metadata_apply_result apply_partition_change(struct metadata_builder *b, struct kafka_reader *r,
                                                         uint32_t version, struct kafka_arena *arena, char *err,
                                                         size_t errlen)
{
    struct partition_change_record m;
    if (decoded(partition_change_record_decode(&m, r, (int16_t)version, arena), r) != 0)
        return invalid(err, errlen, "PartitionChangeRecord", r);
    /* Absent (null) tagged fields mean unchanged; the rest are not tracked. */
    struct metadata_partition_change c = {
        .partition_index = m.partition_id,
        .leader = m.leader,
        .isr = present_array(m.isr, m.isr_count),
        .isr_count = m.isr_count > 0 ? m.isr_count : 0,
        .replicas = present_array(m.replicas, m.replicas_count),
        .replica_count = m.replicas_count > 0 ? m.replicas_count : 0,
        .adding = present_array(m.adding_replicas, m.adding_replicas_count),
        .adding_count = m.adding_replicas_count > 0 ? m.adding_replicas_count : 0,
        .removing = present_array(m.removing_replicas, m.removing_replicas_count),
        .removing_count = m.removing_replicas_count > 0 ? m.removing_replicas_count : 0,
        .elr = present_array(m.eligible_leader_replicas, m.eligible_leader_replicas_count),
        .elr_count = m.eligible_leader_replicas_count > 0 ? m.eligible_leader_replicas_count : 0,
        .last_known_elr = present_array(m.last_known_elr, m.last_known_elr_count),
        .last_known_elr_count = m.last_known_elr_count > 0 ? m.last_known_elr_count : 0,
    };
    return applied(metadata_builder_change_partition(b, &m.topic_id, &c, err, errlen));
}

static enum metadata_apply_result apply_broker_registration_change(struct metadata_builder *b, struct kafka_reader *r,
                                                                   uint32_t version, struct kafka_arena *arena,
                                                                   char *err, size_t errlen)
{
    struct broker_registration_change_record m;
    if (decoded(broker_registration_change_record_decode(&m, r, (int16_t)version, arena), r) != 0)
        return invalid(err, errlen, "BrokerRegistrationChangeRecord", r);
    /* Fencing change: 1 fence, -1 unfence, 0 none; shutdown only turns on. */
    int fenced = m.fenced == 0 ? -1 : (m.fenced > 0 ? 1 : 0);
    int shutdown = m.in_controlled_shutdown == 1 ? 1 : -1;
    return applied(metadata_builder_change_broker(b, m.broker_id, m.broker_epoch, fenced, shutdown, err, errlen));
}

static enum metadata_apply_result apply_config(struct metadata_builder *b, struct kafka_reader *r,
                                               struct kafka_arena *arena, char *err, size_t errlen)
{
    struct config_record m;
    if (decoded(config_record_decode(&m, r, 0, arena), r) != 0)
        return invalid(err, errlen, "ConfigRecord", r);
    return applied(metadata_builder_set_config(
        b, m.resource_type, m.resource_name.data ? m.resource_name.data : "", (size_t)m.resource_name.len,
        m.name.data ? m.name.data : "", (size_t)m.name.len,
        m.value.len >= 0 ? (m.value.data ? m.value.data : "") : NULL, m.value.len, err, errlen));
}

static enum metadata_apply_result apply_acl(struct metadata_builder *b, struct kafka_reader *r,
                                            struct kafka_arena *arena, char *err, size_t errlen)
{
    struct access_control_entry_record m;
    if (decoded(access_control_entry_record_decode(&m, r, 0, arena), r) != 0)
        return invalid(err, errlen, "AccessControlEntryRecord", r);
    struct metadata_acl acl = {
        .id = m.id,
        .resource_type = m.resource_type,
        .resource_name = arena_cstr(arena, m.resource_name),
        .pattern_type = m.pattern_type,
        .principal = arena_cstr(arena, m.principal),
        .host = arena_cstr(arena, m.host),
        .operation = m.operation,
        .permission_type = m.permission_type,
    };
    if (!acl.resource_name || !acl.principal || !acl.host) {
        snprintf(err, errlen, "out of memory");
        return METADATA_APPLY_INVALID;
    }
    return applied(metadata_builder_add_acl(b, &acl, err, errlen));
}

static enum metadata_apply_result apply_scram(struct metadata_builder *b, struct kafka_reader *r,
                                              struct kafka_arena *arena, char *err, size_t errlen)
{
    struct user_scram_credential_record m;
    if (decoded(user_scram_credential_record_decode(&m, r, 0, arena), r) != 0)
        return invalid(err, errlen, "UserScramCredentialRecord", r);
    if (m.stored_key.len != m.server_key.len || (m.stored_key.len != 32 && m.stored_key.len != 64) || m.salt.len < 0) {
        snprintf(err, errlen, "UserScramCredentialRecord with keys of %d and %d bytes", m.stored_key.len,
                 m.server_key.len);
        return METADATA_APPLY_INVALID;
    }
    struct metadata_scram cred = {
        .name = arena_cstr(arena, m.name),
        .mechanism = m.mechanism,
        .salt = (uint8_t *)m.salt.data,
        .salt_len = m.salt.len,
        .key_len = m.stored_key.len,
        .iterations = m.iterations,
    };
    if (!cred.name) {
        snprintf(err, errlen, "out of memory");
        return METADATA_APPLY_INVALID;
    }
    memcpy(cred.stored_key, m.stored_key.data, (size_t)m.stored_key.len);
    memcpy(cred.server_key, m.server_key.data, (size_t)m.server_key.len);
    return applied(metadata_builder_put_scram(b, &cred, err, errlen));
}

static enum metadata_apply_result apply_body(struct metadata_builder *b, uint32_t type, uint32_t version,
                                             struct kafka_reader *r, struct kafka_arena *arena, char *err,
                                             size_t errlen)
{
    switch (type) {
    case METADATA_RECORD_REGISTER_BROKER:
        if (version > REGISTER_BROKER_MAX_VERSION)
            break;
        return apply_register_broker(b, r, version, arena, err, errlen);
    case METADATA_RECORD_UNREGISTER_BROKER: {
        struct unregister_broker_record m;
        if (version > 0)
            break;
        if (decoded(unregister_broker_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "UnregisterBrokerRecord", r);
        return applied(metadata_builder_unregister_broker(b, m.broker_id, err, errlen));
    }
    case METADATA_RECORD_TOPIC: {
        struct topic_record m;
        if (version > 0)
            break;
        if (decoded(topic_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "TopicRecord", r);
        return applied(metadata_builder_add_topic(b, m.name.data ? m.name.data : "", (size_t)m.name.len, &m.topic_id,
                                                  err, errlen));
    }
    case METADATA_RECORD_PARTITION:
        if (version > PARTITION_MAX_VERSION)
            break;
        return apply_partition(b, r, version, arena, err, errlen);
    case METADATA_RECORD_CONFIG:
        if (version > 0)
            break;
        return apply_config(b, r, arena, err, errlen);
    case METADATA_RECORD_PARTITION_CHANGE:
        if (version > PARTITION_CHANGE_MAX_VERSION)
            break;
        return apply_partition_change(b, r, version, arena, err, errlen);
    case METADATA_RECORD_FENCE_BROKER: {
        struct fence_broker_record m;
        if (version > 0)
            break;
        if (decoded(fence_broker_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "FenceBrokerRecord", r);
        return applied(metadata_builder_change_broker(b, m.id, m.epoch, 1, -1, err, errlen));
    }
    case METADATA_RECORD_UNFENCE_BROKER: {
        struct unfence_broker_record m;
        if (version > 0)
            break;
        if (decoded(unfence_broker_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "UnfenceBrokerRecord", r);
        return applied(metadata_builder_change_broker(b, m.id, m.epoch, 0, -1, err, errlen));
    }
    case METADATA_RECORD_REMOVE_TOPIC: {
        struct remove_topic_record m;
        if (version > 0)
            break;
        if (decoded(remove_topic_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "RemoveTopicRecord", r);
        return applied(metadata_builder_remove_topic(b, &m.topic_id, err, errlen));
    }
    case METADATA_RECORD_FEATURE_LEVEL: {
        struct feature_level_record m;
        if (version > 0)
            break;
        if (decoded(feature_level_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "FeatureLevelRecord", r);
        return applied(metadata_builder_set_feature(b, m.name.data ? m.name.data : "", (size_t)m.name.len,
                                                    m.feature_level, err, errlen));
    }
    case METADATA_RECORD_PRODUCER_IDS: {
        struct producer_ids_record m;
        if (version > 0)
            break;
        if (decoded(producer_ids_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "ProducerIdsRecord", r);
        return applied(metadata_builder_set_next_producer_id(b, m.next_producer_id, err, errlen));
    }
    case METADATA_RECORD_ACCESS_CONTROL_ENTRY:
        if (version > 0)
            break;
        return apply_acl(b, r, arena, err, errlen);
    case METADATA_RECORD_REMOVE_ACCESS_CONTROL_ENTRY: {
        struct remove_access_control_entry_record m;
        if (version > 0)
            break;
        if (decoded(remove_access_control_entry_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "RemoveAccessControlEntryRecord", r);
        return applied(metadata_builder_remove_acl(b, &m.id, err, errlen));
    }
    case METADATA_RECORD_BROKER_REGISTRATION_CHANGE:
        if (version > BROKER_REGISTRATION_CHANGE_MAX_VERSION)
            break;
        return apply_broker_registration_change(b, r, version, arena, err, errlen);
    case METADATA_RECORD_USER_SCRAM_CREDENTIAL:
        if (version > 0)
            break;
        return apply_scram(b, r, arena, err, errlen);
    case METADATA_RECORD_REMOVE_USER_SCRAM_CREDENTIAL: {
        struct remove_user_scram_credential_record m;
        if (version > 0)
            break;
        if (decoded(remove_user_scram_credential_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "RemoveUserScramCredentialRecord", r);
        char *name = arena_cstr(arena, m.name);
        if (!name)
            return invalid(err, errlen, "RemoveUserScramCredentialRecord", r);
        return applied(metadata_builder_remove_scram(b, name, m.mechanism, err, errlen));
    }
    case METADATA_RECORD_CLIENT_QUOTA: {
        struct client_quota_record m;
        if (version > 0)
            break;
        if (decoded(client_quota_record_decode(&m, r, 0, arena), r) != 0)
            return invalid(err, errlen, "ClientQuotaRecord", r);
        return applied(metadata_builder_apply_quota_record(b, &m, err, errlen));
    }
    case METADATA_RECORD_NO_OP:
        return METADATA_APPLY_OK;
    default:
        if (err && errlen)
            snprintf(err, errlen, "unknown metadata record type %u (version %u)", type, version);
        return METADATA_APPLY_SKIPPED;
    }
    if (err && errlen)
        snprintf(err, errlen, "unsupported version %u of metadata record type %u", version, type);
    return METADATA_APPLY_SKIPPED;
}

enum metadata_apply_result metadata_record_apply(struct metadata_builder *b, const uint8_t *value, size_t len,
                                                 int64_t offset, char *err, size_t errlen)
{
    struct kafka_reader r;
    kafka_reader_init(&r, value, len);
    uint32_t frame = kafka_read_uvarint(&r);
    uint32_t type = kafka_read_uvarint(&r);
    uint32_t version = kafka_read_uvarint(&r);
    if (r.failed)
        return invalid(err, errlen, "metadata record frame", &r);
    if (frame != METADATA_RECORD_FRAME_VERSION) {
        if (err && errlen)
            snprintf(err, errlen, "unsupported metadata record frame version %u", frame);
        return METADATA_APPLY_SKIPPED;
    }
    (void)offset;
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    enum metadata_apply_result res = apply_body(b, type, version, &r, &arena, err, errlen);
    kafka_arena_free(&arena);
    return res;
}
