#include "group/group_log_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/group_metadata_key.h"
#include "protocol/generated/group_metadata_value.h"
#include "protocol/generated/offset_commit_key.h"
#include "protocol/generated/offset_commit_value.h"

/* A C string as a schema string; NULL stays null only where allowed. */
static struct kafka_str str_of(const char *s, int nullable)
{
    if (!s)
        return nullable ? (struct kafka_str){NULL, -1} : (struct kafka_str){"", 0};
    size_t n = strlen(s);
    if (n > INT16_MAX)
        return (struct kafka_str){NULL, -2}; /* rejected below: too long for an int16 length */
    return (struct kafka_str){s, (int32_t)n};
}

static int str_ok(struct kafka_str s)
{
    return s.len >= -1;
}

static struct kafka_bytes bytes_of(const uint8_t *p, size_t len)
{
    if (!p || len == 0)
        return (struct kafka_bytes){(const uint8_t *)"", 0};
    if (len > INT32_MAX)
        return (struct kafka_bytes){NULL, -2};
    return (struct kafka_bytes){p, (int32_t)len};
}

int group_log_encode_offset_key(struct kafka_writer *w, const char *group_id, const char *topic, int32_t partition)
{
    struct offset_commit_key k;
    offset_commit_key_init(&k);
    k.group = str_of(group_id, 0);
    k.topic = str_of(topic, 0);
    k.partition = partition;
    if (!str_ok(k.group) || !str_ok(k.topic))
        return -1;
    kafka_write_int16(w, GROUP_LOG_OFFSET_KEY_VERSION);
    return offset_commit_key_encode(&k, w, GROUP_LOG_OFFSET_KEY_VERSION);
}

int group_log_encode_offset_value(struct kafka_writer *w, const struct group_offset_record *rec)
{
    struct offset_commit_value v;
    offset_commit_value_init(&v);
    v.offset = rec->offset;
    v.metadata = rec->metadata_len > INT16_MAX ? (struct kafka_str){NULL, -2}
                 : rec->metadata               ? (struct kafka_str){rec->metadata, (int32_t)rec->metadata_len}
                                               : (struct kafka_str){"", 0};
    v.commit_timestamp = rec->commit_timestamp;
    if (!str_ok(v.metadata))
        return -1;
    int16_t version = GROUP_LOG_OFFSET_VALUE_VERSION;
    if (rec->expire_timestamp >= 0) {
        /* Only version 1 can carry it; it has no leader epoch. */
        version = GROUP_LOG_OFFSET_VALUE_VERSION_EXPIRING;
        v.expire_timestamp = rec->expire_timestamp;
    } else {
        v.leader_epoch = rec->leader_epoch;
    }
    kafka_write_int16(w, version);
    return offset_commit_value_encode(&v, w, version);
}

int group_log_encode_group_key(struct kafka_writer *w, const char *group_id)
{
    struct group_metadata_key k;
    group_metadata_key_init(&k);
    k.group = str_of(group_id, 0);
    if (!str_ok(k.group))
        return -1;
    kafka_write_int16(w, GROUP_LOG_GROUP_KEY_VERSION);
    return group_metadata_key_encode(&k, w, GROUP_LOG_GROUP_KEY_VERSION);
}

int group_log_encode_group_value(struct kafka_writer *w, const struct group_snapshot_record *group)
{
    if (group->member_count > INT32_MAX || (group->member_count > 0 && !group->members))
        return -1;
    struct group_metadata_value v;
    group_metadata_value_init(&v);
    v.protocol_type = str_of(group->protocol_type, 0);
    v.generation = group->generation;
    v.protocol = str_of(group->protocol, 1);
    v.leader = str_of(group->leader, 1);
    v.current_state_timestamp = group->current_state_timestamp;
    if (!str_ok(v.protocol_type) || !str_ok(v.protocol) || !str_ok(v.leader))
        return -1;
    struct group_metadata_value_member_metadata *members = NULL;
    if (group->member_count > 0) {
        members = calloc(group->member_count, sizeof *members);
        if (!members)
            return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < group->member_count && rc == 0; i++) {
        const struct group_member_record *src = &group->members[i];
        struct group_metadata_value_member_metadata *m = &members[i];
        group_metadata_value_member_metadata_init(m);
        m->member_id = str_of(src->member_id, 0);
        m->group_instance_id = str_of(src->group_instance_id, 1);
        m->client_id = str_of(src->client_id, 0);
        m->client_host = str_of(src->client_host, 0);
        m->rebalance_timeout = src->rebalance_timeout_ms;
        m->session_timeout = src->session_timeout_ms;
        m->subscription = bytes_of(src->subscription, src->subscription_len);
        m->assignment = bytes_of(src->assignment, src->assignment_len);
        if (!str_ok(m->member_id) || !str_ok(m->group_instance_id) || !str_ok(m->client_id) ||
            !str_ok(m->client_host) || m->subscription.len < 0 || m->assignment.len < 0)
            rc = -1;
    }
    if (rc == 0) {
        v.members = members;
        v.members_count = (int32_t)group->member_count;
        kafka_write_int16(w, GROUP_LOG_GROUP_VALUE_VERSION);
        rc = group_metadata_value_encode(&v, w, GROUP_LOG_GROUP_VALUE_VERSION);
    }
    free(members);
    return rc;
}

/* A NUL-terminated arena copy; NULL for a null string or no memory. */
static const char *arena_cstr(struct kafka_arena *arena, struct kafka_str s)
{
    if (s.len < 0)
        return NULL;
    char *p = kafka_arena_alloc(arena, (size_t)s.len + 1);
    if (!p)
        return NULL;
    if (s.len > 0)
        memcpy(p, s.data, (size_t)s.len);
    return p;
}

/* Non-null strings must copy; a NULL result then means no memory. */
static int copy_required(struct kafka_arena *arena, struct kafka_str s, const char **out)
{
    *out = arena_cstr(arena, s.len < 0 ? (struct kafka_str){"", 0} : s);
    return *out ? 0 : -1;
}

static int copy_nullable(struct kafka_arena *arena, struct kafka_str s, const char **out)
{
    *out = arena_cstr(arena, s);
    return (s.len >= 0 && !*out) ? -1 : 0;
}

static int read_version(struct kafka_reader *r, const char *what, int16_t *version, char *err, size_t errlen)
{
    *version = kafka_read_int16(r);
    if (r->failed) {
        snprintf(err, errlen, "%s shorter than its version", what);
        return -1;
    }
    return 0;
}

int group_log_decode_key(const uint8_t *key, size_t len, struct kafka_arena *arena, struct group_log_key *out,
                         char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!key) {
        snprintf(err, errlen, "record without a key");
        return -1;
    }
    struct kafka_reader r;
    kafka_reader_init(&r, key, len);
    int16_t version;
    if (read_version(&r, "key", &version, err, errlen) != 0)
        return -1;
    if (version == 0 || version == 1) {
        struct offset_commit_key k;
        if (offset_commit_key_decode(&k, &r, version, arena) != 0) {
            snprintf(err, errlen, "offset key: %s", r.error);
            return -1;
        }
        out->type = GROUP_LOG_KEY_OFFSET;
        out->partition = k.partition;
        if (copy_required(arena, k.group, &out->group_id) != 0 || copy_required(arena, k.topic, &out->topic) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    if (version == 2) {
        struct group_metadata_key k;
        if (group_metadata_key_decode(&k, &r, version, arena) != 0) {
            snprintf(err, errlen, "group key: %s", r.error);
            return -1;
        }
        out->type = GROUP_LOG_KEY_GROUP;
        out->partition = -1;
        if (copy_required(arena, k.group, &out->group_id) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "unknown key version %d", (int)version);
    return -1;
}

int group_log_decode_offset_value(const uint8_t *value, size_t len, struct kafka_arena *arena,
                                  struct group_offset_record *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct kafka_reader r;
    kafka_reader_init(&r, value, len);
    int16_t version;
    if (read_version(&r, "offset value", &version, err, errlen) != 0)
        return -1;
    if (version < 0 || version > GROUP_LOG_MAX_VALUE_VERSION) {
        snprintf(err, errlen, "unknown offset value version %d", (int)version);
        return -1;
    }
    struct offset_commit_value v;
    if (offset_commit_value_decode(&v, &r, version, arena) != 0) {
        snprintf(err, errlen, "offset value v%d: %s", (int)version, r.error);
        return -1;
    }
    out->offset = v.offset;
    out->leader_epoch = v.leader_epoch;
    out->commit_timestamp = v.commit_timestamp;
    out->expire_timestamp = v.expire_timestamp;
    if (copy_required(arena, v.metadata, &out->metadata) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    out->metadata_len = v.metadata.len > 0 ? (size_t)v.metadata.len : 0;
    return 0;
}

int group_log_decode_group_value(const uint8_t *value, size_t len, const char *group_id, struct kafka_arena *arena,
                                 struct group_snapshot_record *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct kafka_reader r;
    kafka_reader_init(&r, value, len);
    int16_t version;
    if (read_version(&r, "group value", &version, err, errlen) != 0)
        return -1;
    if (version < 0 || version > GROUP_LOG_MAX_VALUE_VERSION) {
        snprintf(err, errlen, "unknown group value version %d", (int)version);
        return -1;
    }
    struct group_metadata_value v;
    if (group_metadata_value_decode(&v, &r, version, arena) != 0) {
        snprintf(err, errlen, "group value v%d: %s", (int)version, r.error);
        return -1;
    }
    out->group_id = group_id;
    out->generation = v.generation;
    out->current_state_timestamp = v.current_state_timestamp;
    struct group_member_record *members = NULL;
    if (v.members_count > 0) {
        members = kafka_arena_alloc(arena, (size_t)v.members_count * sizeof *members);
        if (!members)
            goto oom;
    }
    if (copy_required(arena, v.protocol_type, &out->protocol_type) != 0 ||
        copy_nullable(arena, v.protocol, &out->protocol) != 0 || copy_nullable(arena, v.leader, &out->leader) != 0)
        goto oom;
    for (int32_t i = 0; i < v.members_count; i++) {
        const struct group_metadata_value_member_metadata *src = &v.members[i];
        struct group_member_record *m = &members[i];
        if (copy_required(arena, src->member_id, &m->member_id) != 0 ||
            copy_nullable(arena, src->group_instance_id, &m->group_instance_id) != 0 ||
            copy_required(arena, src->client_id, &m->client_id) != 0 ||
            copy_required(arena, src->client_host, &m->client_host) != 0)
            goto oom;
        m->rebalance_timeout_ms = src->rebalance_timeout;
        m->session_timeout_ms = src->session_timeout;
        /* Bytes alias the value buffer, which outlives the visitor call. */
        m->subscription = src->subscription.len > 0 ? src->subscription.data : NULL;
        m->subscription_len = src->subscription.len > 0 ? (size_t)src->subscription.len : 0;
        m->assignment = src->assignment.len > 0 ? src->assignment.data : NULL;
        m->assignment_len = src->assignment.len > 0 ? (size_t)src->assignment.len : 0;
    }
    out->members = members;
    out->member_count = v.members_count > 0 ? (size_t)v.members_count : 0;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}
