#include "config/topic_config.h"

#include "config/config_internal.h"
#include "protocol/generated/errors.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define I32 INT32_MAX
#define I64 INT64_MAX
#define LONG_MAX_TEXT "9223372036854775807"
#define TOPIC_RANGE(n, t, dflt, lo, hi)                                                                                \
    .def = {.name = (n),                                                                                               \
            .type = (t),                                                                                               \
            .default_value = (dflt),                                                                                   \
            .validator = CONFIG_VALID_RANGE,                                                                           \
            .min = (lo),                                                                                               \
            .max = (hi),                                                                                               \
            .group = CONFIG_GROUP_TOPIC,                                                                               \
            .flags = CONFIG_FLAG_DYNAMIC
#define TOPIC_OTHER(n, t, dflt, v, ch)                                                                                 \
    .def = {.name = (n),                                                                                               \
            .type = (t),                                                                                               \
            .default_value = (dflt),                                                                                   \
            .validator = (v),                                                                                          \
            .choices = (ch),                                                                                           \
            .group = CONFIG_GROUP_TOPIC,                                                                               \
            .flags = CONFIG_FLAG_DYNAMIC
#define SYN(...) .synonyms = {__VA_ARGS__}

static const struct topic_key_def
    topic_keys[] = {{TOPIC_OTHER("cleanup.policy", CONFIG_TYPE_LIST, "delete", CONFIG_VALID_LIST_OF, "compact,delete"),
                     .doc = "delete removes old segments, compact keeps the last record per key; both may be given."},
                    SYN("log.cleanup.policy")},
    {TOPIC_OTHER("compression.type", CONFIG_TYPE_STRING, "producer", CONFIG_VALID_ONE_OF,
                 "uncompressed,zstd,lz4,snappy,gzip,producer"),
     .doc = "Compression of stored batches; producer keeps what the producer sent."},
    SYN("compression.type")
}
,
    {TOPIC_RANGE("delete.retention.ms", CONFIG_TYPE_LONG, "86400000", 0, I64),
     .doc = "How long tombstones stay in a compacted topic. A tiered one (remote.storage.enable) keeps "
            "them until total retention: older values of their keys may be in remote segments."},
    SYN("log.cleaner.delete.retention.ms")
}
,
    {TOPIC_RANGE("file.delete.delay.ms", CONFIG_TYPE_LONG, "60000", 0, I64),
     .doc = "Wait between removing a segment and deleting its files."},
    SYN("log.segment.delete.delay.ms")
}
,
    {TOPIC_RANGE("flush.messages", CONFIG_TYPE_LONG, LONG_MAX_TEXT, 1, I64),
     .doc = "Messages appended before the partition is fsynced."},
    SYN("log.flush.interval.messages")
}
,
    {TOPIC_RANGE("flush.ms", CONFIG_TYPE_LONG, LONG_MAX_TEXT, 0, I64),
     .doc = "Longest time appended data stays unsynced."},
    SYN("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
}
,
{
    TOPIC_OTHER("follower.replication.throttled.replicas", CONFIG_TYPE_LIST, "", CONFIG_VALID_ANY, NULL),
        .doc = "Replicas whose follower fetches follower.replication.throttled.rate limits: partition:broker "
               "pairs naming the follower's replica, or * for every replica of the topic; any other value is "
               "refused (INVALID_CONFIG)."
}
}
,
    {TOPIC_RANGE("index.interval.bytes", CONFIG_TYPE_INT, "4096", 0, I32),
     .doc = "Bytes appended between two offset index entries."},
    SYN("log.index.interval.bytes")
}
,
{
    TOPIC_OTHER("leader.replication.throttled.replicas", CONFIG_TYPE_LIST, "", CONFIG_VALID_ANY, NULL),
        .doc = "Replicas whose leader answers to followers outside the ISR leader.replication.throttled.rate "
               "limits: partition:broker pairs naming the leader's replica, or * for every replica of the topic; "
               "any other value is refused (INVALID_CONFIG)."
}
}
,
    {TOPIC_RANGE("local.retention.bytes", CONFIG_TYPE_LONG, "-2", -2, I64),
     .doc = "Tiered topics: local size beyond which copied segments are deleted; -2 means retention.bytes."},
    SYN("log.local.retention.bytes")
}
,
    {TOPIC_RANGE("local.retention.ms", CONFIG_TYPE_LONG, "-2", -2, I64),
     .doc = "Tiered topics: age after which copied local segments are deleted; -2 means retention.ms."},
    SYN("log.local.retention.ms")
}
,
    {TOPIC_RANGE("max.compaction.lag.ms", CONFIG_TYPE_LONG, LONG_MAX_TEXT, 1, I64),
     .doc = "Greatest age of a record before its segment must be compacted."},
    SYN("log.cleaner.max.compaction.lag.ms")
}
,
    {TOPIC_RANGE("max.message.bytes", CONFIG_TYPE_INT, "1048588", 0, I32),
     .doc = "Largest record batch accepted, after compression."},
    SYN("message.max.bytes")
}
,
    {.def = {.name = "message.format.version",
             .type = CONFIG_TYPE_STRING,
             .default_value = "3.0-IV1",
             .group = CONFIG_GROUP_TOPIC,
             .flags = CONFIG_FLAG_DYNAMIC | CONFIG_FLAG_UNUSED,
             .doc = "Deprecated by Kafka; accepted for old tools. Cairn always writes message format v2."},
     SYN("log.message.format.version")},
    {TOPIC_OTHER("message.timestamp.type", CONFIG_TYPE_STRING, "CreateTime", CONFIG_VALID_ONE_OF,
                 "CreateTime,LogAppendTime"),
     .doc = "Whether record timestamps are the producer's or the broker's append time."},
    SYN("log.message.timestamp.type")
}
,
    {TOPIC_RANGE("message.timestamp.difference.max.ms", CONFIG_TYPE_LONG, LONG_MAX_TEXT, 0, I64),
     .doc = "Largest gap between a CreateTime timestamp and the broker clock."},
    SYN("log.message.timestamp.difference.max.ms")
}
,
    {TOPIC_RANGE("message.timestamp.before.max.ms", CONFIG_TYPE_LONG, LONG_MAX_TEXT, 0, I64),
     .doc = "How far in the past a CreateTime timestamp may be."},
    SYN("log.message.timestamp.before.max.ms")
}
,
    {TOPIC_RANGE("message.timestamp.after.max.ms", CONFIG_TYPE_LONG, LONG_MAX_TEXT, 0, I64),
     .doc = "How far in the future a CreateTime timestamp may be."},
    SYN("log.message.timestamp.after.max.ms")
}
,
    {.def = {.name = "min.cleanable.dirty.ratio",
             .type = CONFIG_TYPE_DOUBLE,
             .default_value = "0.5",
             .validator = CONFIG_VALID_DOUBLE_RANGE,
             .dmin = 0.0,
             .dmax = 1.0,
             .group = CONFIG_GROUP_TOPIC,
             .flags = CONFIG_FLAG_DYNAMIC,
             .doc = "Dirty fraction that makes a compacted log eligible for cleaning."},
     SYN("log.cleaner.min.cleanable.ratio")},
    {TOPIC_RANGE("min.compaction.lag.ms", CONFIG_TYPE_LONG, "0", 0, I64),
     .doc = "Least age of a record before it may be compacted."},
    SYN("log.cleaner.min.compaction.lag.ms")
}
,
    {TOPIC_RANGE("min.insync.replicas", CONFIG_TYPE_INT, "1", 1, I32),
     .doc = "In-sync replicas needed for an acks=all write to succeed."},
    SYN("min.insync.replicas")
}
,
    {TOPIC_OTHER("preallocate", CONFIG_TYPE_BOOLEAN, "false", CONFIG_VALID_ANY, NULL),
     .doc = "Preallocate segment files when they are created."},
    SYN("log.preallocate")
}
,
    {TOPIC_OTHER("remote.storage.enable", CONFIG_TYPE_BOOLEAN, "false", CONFIG_VALID_ANY, NULL),
     .doc = "Copy closed segments to the remote store (needs remote.log.storage.system.enable). A compacted "
            "topic copies a segment once the cleaner has cleaned it."},
    SYN(NULL) /* Kafka has no broker-wide default for it */
}
,
    {TOPIC_RANGE("retention.bytes", CONFIG_TYPE_LONG, "-1", INT64_MIN, I64),
     .doc = "Size beyond which old segments are deleted; -1 means no limit."},
    SYN("log.retention.bytes")
}
,
    {TOPIC_RANGE("retention.ms", CONFIG_TYPE_LONG, "604800000", -1, I64),
     .doc = "Age after which segments are deleted; -1 keeps them."},
    SYN("log.retention.ms", "log.retention.minutes", "log.retention.hours")
}
,
    {TOPIC_RANGE("segment.bytes", CONFIG_TYPE_INT, "1073741824", 14, I32),
     .doc = "Size at which the active segment is rolled."},
    SYN("log.segment.bytes")
}
,
    {TOPIC_RANGE("segment.index.bytes", CONFIG_TYPE_INT, "10485760", 4, I32),
     .doc = "Largest offset or time index file of a segment."},
    SYN("log.index.size.max.bytes")
}
,
    {TOPIC_RANGE("segment.jitter.ms", CONFIG_TYPE_LONG, "0", 0, I64),
     .doc = "Random jitter subtracted from the segment roll time."},
    SYN("log.roll.jitter.ms", "log.roll.jitter.hours")
}
,
    {TOPIC_RANGE("segment.ms", CONFIG_TYPE_LONG, "604800000", 1, I64),
     .doc = "Age at which the active segment is rolled."},
    SYN("log.roll.ms", "log.roll.hours")
}
,
    {TOPIC_OTHER("unclean.leader.election.enable", CONFIG_TYPE_BOOLEAN, "false", CONFIG_VALID_ANY, NULL),
     .doc = "Allow an out-of-sync replica to become leader, losing data."},
    SYN("unclean.leader.election.enable")
}
,
    {.def = {.name = "message.downconversion.enable",
             .type = CONFIG_TYPE_BOOLEAN,
             .default_value = "true",
             .group = CONFIG_GROUP_TOPIC,
             .flags = CONFIG_FLAG_DYNAMIC | CONFIG_FLAG_UNUSED,
             .doc = "Convert batches to older formats for old consumers."},
     SYN("log.message.downconversion.enable")},
}
;

size_t topic_config_key_count(void)
{
    return sizeof topic_keys / sizeof topic_keys[0];
}

const struct topic_key_def *topic_config_key_at(size_t index)
{
    return index < topic_config_key_count() ? &topic_keys[index] : NULL;
}

const struct topic_key_def *topic_config_find(const char *name)
{
    for (size_t i = 0; i < topic_config_key_count(); i++)
        if (strcmp(topic_keys[i].def.name, name) == 0)
            return &topic_keys[i];
    return NULL;
}

/* Kafka's release names as message.format.version takes them: "0.8.0" to
 * "0.11.0" and "1.0" to "3.9", optionally with a protocol suffix such as
 * "-IV1"; extra trailing segments ("0.10.0.0", "2.8.1") are ignored. */
static bool message_format_version_valid(const char *value)
{
    static const char *const releases[] = {
        "0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.10.0", "0.10.1", "0.10.2", "0.11.0", "1.0", "1.1",
        "2.0",   "2.1",   "2.2",   "2.3",   "2.4",    "2.5",    "2.6",    "2.7",    "2.8", "3.0",
        "3.1",   "3.2",   "3.3",   "3.4",   "3.5",    "3.6",    "3.7",    "3.8",    "3.9",
    };
    char buf[32];
    if (strlen(value) >= sizeof buf)
        return false;
    snprintf(buf, sizeof buf, "%s", value);
    char *suffix = strstr(buf, "-IV");
    if (suffix) {
        const char *digits = suffix + 3;
        if (!*digits)
            return false;
        for (const char *d = digits; *d; d++)
            if (*d < '0' || *d > '9')
                return false;
        *suffix = '\0';
    }
    int keep = strncmp(buf, "0.", 2) == 0 ? 3 : 2;
    int dots = 0;
    for (char *c = buf; *c; c++) {
        if (*c == '.' && ++dots == keep) {
            if (suffix)
                return false; /* a suffix goes after the short name only */
            *c = '\0';
            break;
        }
    }
    for (size_t i = 0; i < sizeof releases / sizeof releases[0]; i++)
        if (strcmp(buf, releases[i]) == 0)
            return true;
    return false;
}

/* Kafka's ThrottledReplicaListValidator for
 * {leader,follower}.replication.throttled.replicas: the literal "*", or a
 * comma-separated list whose elements (blanks around each ignored) are each
 * empty or partitionId:brokerId in digits. */
static bool throttled_replicas_valid(const char *value)
{
    const char *start = value;
    while (*start == ' ' || *start == '\t')
        start++;
    const char *end = start + strlen(start);
    while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (end - start == 1 && *start == '*')
        return true;
    for (const char *c = start; c < end;) {
        while (c < end && (*c == ' ' || *c == '\t'))
            c++;
        size_t digits = 0;
        while (c < end && *c >= '0' && *c <= '9')
            c++, digits++;
        if (digits > 0) { /* partition, then ':' and the broker */
            if (c >= end || *c != ':')
                return false;
            c++;
            size_t broker = 0;
            while (c < end && *c >= '0' && *c <= '9')
                c++, broker++;
            if (broker == 0)
                return false;
        }
        while (c < end && (*c == ' ' || *c == '\t'))
            c++;
        if (c < end && *c++ != ',')
            return false;
    }
    return true;
}

static bool is_throttled_replicas_key(const char *key)
{
    return strcmp(key, "leader.replication.throttled.replicas") == 0 ||
           strcmp(key, "follower.replication.throttled.replicas") == 0;
}

int topic_config_validate(const char *key, const char *value, char *err, size_t errlen)
{
    const struct topic_key_def *tk = topic_config_find(key);
    if (!tk) {
        snprintf(err, errlen, "unknown topic config '%s'", key);
        return KAFKA_ERR_INVALID_CONFIG;
    }
    if (!value) {
        snprintf(err, errlen, "null value for topic config '%s'", key);
        return KAFKA_ERR_INVALID_CONFIG;
    }
    if (strcmp(key, "message.format.version") == 0 && !message_format_version_valid(value)) {
        snprintf(err, errlen,
                 "invalid value '%s' for 'message.format.version': expected a Kafka version such as 2.8 or 0.10.0",
                 value);
        return KAFKA_ERR_INVALID_CONFIG;
    }
    if (is_throttled_replicas_key(key) && !throttled_replicas_valid(value)) {
        snprintf(err, errlen,
                 "invalid value '%s' for '%s': expected the literal '*' or a comma-separated list of "
                 "partitionId:brokerId pairs",
                 value, key);
        return KAFKA_ERR_INVALID_CONFIG;
    }
    struct config_parsed parsed;
    if (config_value_parse(&tk->def, value, &parsed, err, errlen) < 0)
        return KAFKA_ERR_INVALID_CONFIG;
    config_parsed_free(&parsed);
    return 0;
}

static const char *override_for(const struct config_kv *overrides, size_t count, const char *key)
{
    const char *found = NULL;
    for (size_t i = 0; i < count; i++)
        if (strcmp(overrides[i].key, key) == 0)
            found = overrides[i].value; /* last one wins */
    return found;
}

/* Effective text of a topic key without overrides, from the broker config. */
static const char *broker_value(const struct broker_config *cfg, const struct topic_key_def *tk,
                                enum config_source *source, char buf[24])
{
    int64_t derived;
    bool have_derived = true;
    if (strcmp(tk->def.name, "retention.ms") == 0)
        derived = config_log_retention_ms(cfg);
    else if (strcmp(tk->def.name, "segment.ms") == 0)
        derived = config_log_roll_ms(cfg);
    else if (strcmp(tk->def.name, "segment.jitter.ms") == 0)
        derived = config_log_roll_jitter_ms(cfg);
    else if (strcmp(tk->def.name, "flush.ms") == 0)
        derived = config_log_flush_interval_ms(cfg);
    else
        have_derived = false;
    *source = CONFIG_SOURCE_DEFAULT_CONFIG;
    /* The first synonym set anywhere (static or dynamic) names the source. */
    for (size_t i = 0; i < TOPIC_CONFIG_MAX_SYNONYMS && tk->synonyms[i]; i++) {
        enum config_source s = config_source(cfg, tk->synonyms[i]);
        if (s != CONFIG_SOURCE_DEFAULT_CONFIG && config_has_value(cfg, tk->synonyms[i])) {
            *source = s;
            break;
        }
    }
    if (have_derived) {
        snprintf(buf, 24, "%" PRId64, derived);
        return buf;
    }
    return tk->synonyms[0] ? config_value_text(cfg, tk->synonyms[0]) : NULL;
}

enum field_kind { FIELD_I32, FIELD_I64, FIELD_BOOL, FIELD_DOUBLE, FIELD_CLEANUP, FIELD_COMPRESSION, FIELD_TIMESTAMP };

struct field_binding {
    const char *key;
    size_t offset;
    enum field_kind kind;
};

#define BIND(k, member, kind)                                                                                          \
    {                                                                                                                  \
        k, offsetof(struct topic_config_values, member), kind                                                          \
    }
static const struct field_binding field_bindings[] = {
    BIND("cleanup.policy", cleanup_delete, FIELD_CLEANUP),
    BIND("compression.type", compression_type, FIELD_COMPRESSION),
    BIND("delete.retention.ms", delete_retention_ms, FIELD_I64),
    BIND("file.delete.delay.ms", file_delete_delay_ms, FIELD_I64),
    BIND("flush.messages", flush_messages, FIELD_I64),
    BIND("flush.ms", flush_ms, FIELD_I64),
    BIND("index.interval.bytes", index_interval_bytes, FIELD_I32),
    BIND("local.retention.bytes", local_retention_bytes, FIELD_I64),
    BIND("local.retention.ms", local_retention_ms, FIELD_I64),
    BIND("max.compaction.lag.ms", max_compaction_lag_ms, FIELD_I64),
    BIND("max.message.bytes", max_message_bytes, FIELD_I32),
    BIND("message.timestamp.type", message_timestamp_type, FIELD_TIMESTAMP),
    BIND("message.timestamp.difference.max.ms", message_timestamp_difference_max_ms, FIELD_I64),
    BIND("message.timestamp.before.max.ms", message_timestamp_before_max_ms, FIELD_I64),
    BIND("message.timestamp.after.max.ms", message_timestamp_after_max_ms, FIELD_I64),
    BIND("min.cleanable.dirty.ratio", min_cleanable_dirty_ratio, FIELD_DOUBLE),
    BIND("min.compaction.lag.ms", min_compaction_lag_ms, FIELD_I64),
    BIND("min.insync.replicas", min_insync_replicas, FIELD_I32),
    BIND("preallocate", preallocate, FIELD_BOOL),
    BIND("remote.storage.enable", remote_storage_enable, FIELD_BOOL),
    BIND("retention.bytes", retention_bytes, FIELD_I64),
    BIND("retention.ms", retention_ms, FIELD_I64),
    BIND("segment.bytes", segment_bytes, FIELD_I32),
    BIND("segment.index.bytes", segment_index_bytes, FIELD_I32),
    BIND("segment.jitter.ms", segment_jitter_ms, FIELD_I64),
    BIND("segment.ms", segment_ms, FIELD_I64),
    BIND("unclean.leader.election.enable", unclean_leader_election_enable, FIELD_BOOL),
    BIND("message.downconversion.enable", message_downconversion_enable, FIELD_BOOL),
};

static void store_field(struct topic_config_values *out, const struct field_binding *binding,
                        const struct config_parsed *parsed)
{
    char *field = (char *)out + binding->offset;
    switch (binding->kind) {
    case FIELD_I32:
        *(int32_t *)(void *)field = (int32_t)parsed->integer;
        break;
    case FIELD_I64:
        *(int64_t *)(void *)field = parsed->integer;
        break;
    case FIELD_BOOL:
        *(bool *)(void *)field = parsed->integer != 0;
        break;
    case FIELD_DOUBLE:
        *(double *)(void *)field = parsed->number;
        break;
    case FIELD_CLEANUP:
        out->cleanup_delete = out->cleanup_compact = false;
        for (size_t i = 0; i < parsed->list_len; i++) {
            if (strcmp(parsed->list[i], "delete") == 0)
                out->cleanup_delete = true;
            if (strcmp(parsed->list[i], "compact") == 0)
                out->cleanup_compact = true;
        }
        break;
    case FIELD_COMPRESSION:
        snprintf(out->compression_type, sizeof out->compression_type, "%s", parsed->text);
        break;
    case FIELD_TIMESTAMP:
        out->message_timestamp_type = strcmp(parsed->text, "LogAppendTime") == 0 ? TOPIC_TIMESTAMP_LOG_APPEND_TIME
                                                                                 : TOPIC_TIMESTAMP_CREATE_TIME;
        break;
    }
}

/* Effective text and its source for one topic key. */
static const char *effective_text(const struct broker_config *cfg, const struct config_kv *overrides,
                                  size_t override_count, const struct topic_key_def *tk, enum config_source *source,
                                  char buf[24])
{
    const char *value = override_for(overrides, override_count, tk->def.name);
    if (value) {
        *source = CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG;
        return value;
    }
    if (cfg) {
        value = broker_value(cfg, tk, source, buf);
        if (value)
            return value;
    }
    *source = CONFIG_SOURCE_DEFAULT_CONFIG;
    return tk->def.default_value;
}

int topic_config_resolve(const struct broker_config *broker_cfg, const struct config_kv *overrides,
                         size_t override_count, struct topic_config_values *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < override_count; i++) {
        int rc = topic_config_validate(overrides[i].key, overrides[i].value, err, errlen);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < sizeof field_bindings / sizeof field_bindings[0]; i++) {
        const struct topic_key_def *tk = topic_config_find(field_bindings[i].key);
        enum config_source source;
        char buf[24];
        const char *text = effective_text(broker_cfg, overrides, override_count, tk, &source, buf);
        struct config_parsed parsed;
        if (config_value_parse(&tk->def, text, &parsed, err, errlen) < 0)
            return KAFKA_ERR_INVALID_CONFIG;
        store_field(out, &field_bindings[i], &parsed);
        config_parsed_free(&parsed);
    }
    return 0;
}

int topic_config_describe(const struct broker_config *broker_cfg, const struct config_kv *overrides,
                          size_t override_count, size_t index, struct topic_config_describe_entry *out)
{
    const struct topic_key_def *tk = topic_config_key_at(index);
    if (!tk)
        return -1;
    memset(out, 0, sizeof *out);
    out->name = tk->def.name;
    out->type = tk->def.type;
    out->is_sensitive = tk->def.type == CONFIG_TYPE_PASSWORD;
    out->read_only = false;
    out->documentation = tk->def.doc;
    out->value = effective_text(broker_cfg, overrides, override_count, tk, &out->source, out->value_buffer);

    const char *topic_value = override_for(overrides, override_count, tk->def.name);
    if (topic_value)
        out->synonyms[out->synonym_count++] = (struct topic_config_synonym){tk->def.name, topic_value,
                                                                            CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG};
    if (!broker_cfg)
        return 0;
    for (size_t i = 0; i < TOPIC_CONFIG_MAX_SYNONYMS && tk->synonyms[i]; i++) {
        const char *name = tk->synonyms[i];
        const struct config_key_def *def;
        if (!config_slot_for(broker_cfg, name, &def))
            continue;
        enum config_source set = config_source(broker_cfg, name);
        if (set != CONFIG_SOURCE_DEFAULT_CONFIG && config_has_value(broker_cfg, name))
            out->synonyms[out->synonym_count++] = (struct topic_config_synonym){
                name, config_value_text(broker_cfg, name), set};
        if (def->default_value)
            out->synonyms[out->synonym_count++] = (struct topic_config_synonym){name, def->default_value,
                                                                                CONFIG_SOURCE_DEFAULT_CONFIG};
    }
    return 0;
}
