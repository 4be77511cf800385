/* Fills the request of one seed of fuzz_broker_requests for an (api,
 * version, variant): the APIs that matter most carry plausible values, the
 * rest stay default-initialised. See broker_request_fill.h. */
#include <stdlib.h>
#include <string.h>

#include "broker_fuzz_input.h"
#include "broker_request_fill.h"
#include "protocol/record_batch.h"
#include "../unit/codec/golden_librdkafka.inc"

#define ARENA_NEW(arena, type, count) ((type *)kafka_arena_alloc((arena), sizeof(type) * (size_t)(count)))

static struct kafka_str str(const char *s)
{
    return kafka_str_from_cstr(s);
}

static struct kafka_str *str_array(struct seed *s, const char *value)
{
    struct kafka_str *a = ARENA_NEW(s->arena, struct kafka_str, 1);
    if (a)
        a[0] = str(value);
    return a;
}

static int32_t *int_array(struct seed *s, int32_t count)
{
    int32_t *a = ARENA_NEW(s->arena, int32_t, count);
    for (int32_t i = 0; a && i < count; i++)
        a[i] = i;
    return a;
}

static struct kafka_uuid topic_id_placeholder(void)
{
    struct kafka_uuid id;
    memcpy(id.bytes, BROKER_FUZZ_TOPIC_ID_PLACEHOLDER, 16);
    return id;
}

/* ConsumerProtocolSubscription v0 for one topic, and the matching
 * ConsumerProtocolAssignment v0 of partitions 0 and 1. */
static const uint8_t subscription_v0[] = {0, 0, 0, 0, 0, 1, 0, 6, 'f', 'u', 'z', 'z', '-', 'a', 0xff, 0xff, 0xff, 0xff};
static const uint8_t assignment_v0[] = {0, 0, 0, 0, 0, 1, 0, 6, 'f', 'u', 'z', 'z',  '-',  'a',  0,
                                        0, 0, 2, 0, 0, 0, 0, 0, 0,   0,   1,   0xff, 0xff, 0xff, 0xff};

static uint8_t *plain_batch(size_t *len, int kind)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1700000000000);
    if (kind == PRODUCE_TRANSACTIONAL || kind == PRODUCE_IDEMPOTENT) {
        b.producer_id = BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID;
        b.producer_epoch = BROKER_FUZZ_PLACEHOLDER_EPOCH;
        b.base_sequence = 0;
        if (kind == PRODUCE_TRANSACTIONAL)
            b.attributes = RECORD_BATCH_TRANSACTIONAL_BIT;
    }
    const struct record_batch_header_field headers[] = {{(const uint8_t *)"h", 1, (const uint8_t *)"v", 1}};
    record_batch_builder_add(&b, 1700000000000, "k0", 2, "value zero", 10, headers, 1);
    record_batch_builder_add(&b, 1700000000001, "k0", 2, NULL, -1, NULL, 0);
    record_batch_builder_add(&b, 1700000000002, NULL, -1, "keyless", 7, NULL, 0);
    uint8_t *out = NULL;
    return record_batch_builder_finish(&b, &out, len) == 0 ? out : NULL;
}

static void fill_produce(struct seed *s, struct produce_request *m, int kind, uint8_t **owned)
{
    static const uint8_t *const golden[] = {golden_gzip, golden_snappy, golden_lz4, golden_zstd};
    static const size_t golden_len[] = {sizeof golden_gzip, sizeof golden_snappy, sizeof golden_lz4,
                                        sizeof golden_zstd};
    const uint8_t *batch;
    size_t len = 0;
    if (kind >= 2 && kind <= 5) {
        batch = golden[kind - 2];
        len = golden_len[kind - 2];
    } else {
        *owned = plain_batch(&len, kind);
        batch = *owned;
    }
    m->acks = kind == PRODUCE_ACKS_0 ? 0 : -1;
    m->timeout_ms = 1000;
    if (kind == PRODUCE_TRANSACTIONAL && s->version >= 3)
        m->transactional_id = str(BROKER_FUZZ_TXN_ID);
    struct produce_request_topic_produce_data *t = ARENA_NEW(s->arena, struct produce_request_topic_produce_data, 1);
    struct produce_request_partition_produce_data *p = ARENA_NEW(s->arena,
                                                                 struct produce_request_partition_produce_data, 1);
    if (!t || !p || !batch)
        return;
    produce_request_topic_produce_data_init(t);
    produce_request_partition_produce_data_init(p);
    t->name = str(kind >= 2 && kind <= 5 ? BROKER_FUZZ_COMPACTED_TOPIC : BROKER_FUZZ_TOPIC);
    p->index = 0;
    p->records = kafka_records_from_memory(batch, (int32_t)len);
    t->partition_data = p;
    t->partition_data_count = 1;
    m->topic_data = t;
    m->topic_data_count = 1;
}

/* Variant 1 reads committed records only (v4+). */
static void fill_fetch(struct seed *s, struct fetch_request *m, int variant)
{
    m->max_wait_ms = 50; /* under the harness's wait, so answers arrive */
    if (variant == 1 && s->version >= 4)
        m->isolation_level = 1;
    m->min_bytes = 1;
    m->max_bytes = 1 << 20;
    m->session_epoch = -1;
    struct fetch_request_fetch_topic *t = ARENA_NEW(s->arena, struct fetch_request_fetch_topic, 1);
    struct fetch_request_fetch_partition *p = ARENA_NEW(s->arena, struct fetch_request_fetch_partition, 2);
    if (!t || !p)
        return;
    fetch_request_fetch_topic_init(t);
    if (s->version <= 12)
        t->topic = str(BROKER_FUZZ_TOPIC);
    else
        t->topic_id = topic_id_placeholder();
    for (int i = 0; i < 2; i++) {
        fetch_request_fetch_partition_init(&p[i]);
        p[i].partition = i;
        p[i].partition_max_bytes = 1 << 20;
    }
    t->partitions = p;
    t->partitions_count = 2;
    m->topics = t;
    m->topics_count = 1;
}

static void fill_metadata(struct seed *s, struct metadata_request *m)
{
    struct metadata_request_metadata_request_topic *t = ARENA_NEW(s->arena,
                                                                  struct metadata_request_metadata_request_topic, 2);
    if (!t)
        return;
    metadata_request_metadata_request_topic_init(&t[0]);
    metadata_request_metadata_request_topic_init(&t[1]);
    t[0].name = str(BROKER_FUZZ_TOPIC);
    t[1].name = str("fuzz-auto");
    m->topics = t;
    m->topics_count = 2;
    if (s->version >= 4)
        m->allow_auto_topic_creation = true;
}

static void fill_create_topics(struct seed *s, struct create_topics_request *m)
{
    struct create_topics_request_creatable_topic *t = ARENA_NEW(s->arena, struct create_topics_request_creatable_topic,
                                                                1);
    struct create_topics_request_creatable_topic_config *c = ARENA_NEW(
        s->arena, struct create_topics_request_creatable_topic_config, 1);
    if (!t || !c)
        return;
    create_topics_request_creatable_topic_init(t);
    create_topics_request_creatable_topic_config_init(c);
    t->name = str("fuzz-new");
    t->num_partitions = 3;
    t->replication_factor = 1;
    c->name = str("retention.ms");
    c->value = str("60000");
    t->configs = c;
    t->configs_count = 1;
    m->topics = t;
    m->topics_count = 1;
    m->timeout_ms = 1000;
}

/* Variant 0 joins without a member id (v4+ then answers
 * MEMBER_ID_REQUIRED with one), variant 1 with the last one handed out. */
static void fill_join_group(struct seed *s, struct join_group_request *m, int variant)
{
    m->group_id = str(BROKER_FUZZ_GROUP);
    m->session_timeout_ms = 10000;
    if (s->version >= 1)
        m->rebalance_timeout_ms = 100;
    m->member_id = str(variant == 1 ? BROKER_FUZZ_MEMBER_ID_PLACEHOLDER : "");
    m->protocol_type = str("consumer");
    struct join_group_request_join_group_request_protocol *p = ARENA_NEW(
        s->arena, struct join_group_request_join_group_request_protocol, 1);
    if (!p)
        return;
    join_group_request_join_group_request_protocol_init(p);
    p->name = str("range");
    p->metadata = (struct kafka_bytes){subscription_v0, (int32_t)sizeof subscription_v0};
    m->protocols = p;
    m->protocols_count = 1;
}

static void fill_sync_group(struct seed *s, struct sync_group_request *m)
{
    m->group_id = str(BROKER_FUZZ_GROUP);
    m->generation_id = BROKER_FUZZ_PLACEHOLDER_GENERATION;
    m->member_id = str(BROKER_FUZZ_MEMBER_ID_PLACEHOLDER);
    if (s->version >= 5) {
        m->protocol_type = str("consumer");
        m->protocol_name = str("range");
    }
    struct sync_group_request_sync_group_request_assignment *a = ARENA_NEW(
        s->arena, struct sync_group_request_sync_group_request_assignment, 1);
    if (!a)
        return;
    sync_group_request_sync_group_request_assignment_init(a);
    a->member_id = str(BROKER_FUZZ_MEMBER_ID_PLACEHOLDER);
    a->assignment = (struct kafka_bytes){assignment_v0, (int32_t)sizeof assignment_v0};
    m->assignments = a;
    m->assignments_count = 1;
}

/* Variant 0 commits outside any generation, variant 1 as the last member. */
static void fill_offset_commit(struct seed *s, struct offset_commit_request *m, int variant)
{
    m->group_id = str(BROKER_FUZZ_GROUP);
    if (s->version >= 1) {
        m->generation_id_or_member_epoch = variant == 1 ? BROKER_FUZZ_PLACEHOLDER_GENERATION : -1;
        m->member_id = str(variant == 1 ? BROKER_FUZZ_MEMBER_ID_PLACEHOLDER : "");
    }
    struct offset_commit_request_offset_commit_request_topic *t = ARENA_NEW(
        s->arena, struct offset_commit_request_offset_commit_request_topic, 1);
    struct offset_commit_request_offset_commit_request_partition *p = ARENA_NEW(
        s->arena, struct offset_commit_request_offset_commit_request_partition, 1);
    if (!t || !p)
        return;
    offset_commit_request_offset_commit_request_topic_init(t);
    offset_commit_request_offset_commit_request_partition_init(p);
    t->name = str(BROKER_FUZZ_TOPIC);
    p->partition_index = 0;
    p->committed_offset = 1;
    p->committed_metadata = str("meta");
    t->partitions = p;
    t->partitions_count = 1;
    m->topics = t;
    m->topics_count = 1;
}

static void fill_offset_fetch(struct seed *s, struct offset_fetch_request *m)
{
    if (s->version <= 7) {
        m->group_id = str(BROKER_FUZZ_GROUP);
        struct offset_fetch_request_offset_fetch_request_topic *t = ARENA_NEW(
            s->arena, struct offset_fetch_request_offset_fetch_request_topic, 1);
        if (!t)
            return;
        offset_fetch_request_offset_fetch_request_topic_init(t);
        t->name = str(BROKER_FUZZ_TOPIC);
        t->partition_indexes = int_array(s, 2);
        t->partition_indexes_count = 2;
        m->topics = t;
        m->topics_count = 1;
        return;
    }
    struct offset_fetch_request_offset_fetch_request_group *g = ARENA_NEW(
        s->arena, struct offset_fetch_request_offset_fetch_request_group, 1);
    struct offset_fetch_request_offset_fetch_request_topics *t = ARENA_NEW(
        s->arena, struct offset_fetch_request_offset_fetch_request_topics, 1);
    if (!g || !t)
        return;
    offset_fetch_request_offset_fetch_request_group_init(g);
    offset_fetch_request_offset_fetch_request_topics_init(t);
    g->group_id = str(BROKER_FUZZ_GROUP);
    t->name = str(BROKER_FUZZ_TOPIC);
    t->partition_indexes = int_array(s, 2);
    t->partition_indexes_count = 2;
    g->topics = t;
    g->topics_count = 1;
    m->groups = g;
    m->groups_count = 1;
}

static void fill_find_coordinator(struct seed *s, struct find_coordinator_request *m, bool txn)
{
    const char *key = txn ? BROKER_FUZZ_TXN_ID : BROKER_FUZZ_GROUP;
    if (s->version >= 1)
        m->key_type = txn ? 1 : 0;
    if (s->version <= 3) {
        m->key = str(key);
    } else {
        m->coordinator_keys = str_array(s, key);
        m->coordinator_keys_count = 1;
    }
}

static void fill_add_partitions_to_txn(struct seed *s, struct add_partitions_to_txn_request *m)
{
    struct add_partitions_to_txn_request_add_partitions_to_txn_topic *t = ARENA_NEW(
        s->arena, struct add_partitions_to_txn_request_add_partitions_to_txn_topic, 1);
    if (!t)
        return;
    add_partitions_to_txn_request_add_partitions_to_txn_topic_init(t);
    t->name = str(BROKER_FUZZ_TOPIC);
    t->partitions = int_array(s, 2);
    t->partitions_count = 2;
    if (s->version <= 3) {
        m->v3_and_below_transactional_id = str(BROKER_FUZZ_TXN_ID);
        m->v3_and_below_producer_id = BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID;
        m->v3_and_below_producer_epoch = BROKER_FUZZ_PLACEHOLDER_EPOCH;
        m->v3_and_below_topics = t;
        m->v3_and_below_topics_count = 1;
        return;
    }
    struct add_partitions_to_txn_request_add_partitions_to_txn_transaction *x = ARENA_NEW(
        s->arena, struct add_partitions_to_txn_request_add_partitions_to_txn_transaction, 1);
    if (!x)
        return;
    add_partitions_to_txn_request_add_partitions_to_txn_transaction_init(x);
    x->transactional_id = str(BROKER_FUZZ_TXN_ID);
    x->producer_id = BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID;
    x->producer_epoch = BROKER_FUZZ_PLACEHOLDER_EPOCH;
    x->topics = t;
    x->topics_count = 1;
    m->transactions = x;
    m->transactions_count = 1;
}

static void fill_txn_offset_commit(struct seed *s, struct txn_offset_commit_request *m)
{
    m->transactional_id = str(BROKER_FUZZ_TXN_ID);
    m->group_id = str(BROKER_FUZZ_GROUP);
    m->producer_id = BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID;
    m->producer_epoch = BROKER_FUZZ_PLACEHOLDER_EPOCH;
    struct txn_offset_commit_request_txn_offset_commit_request_topic *t = ARENA_NEW(
        s->arena, struct txn_offset_commit_request_txn_offset_commit_request_topic, 1);
    struct txn_offset_commit_request_txn_offset_commit_request_partition *p = ARENA_NEW(
        s->arena, struct txn_offset_commit_request_txn_offset_commit_request_partition, 1);
    if (!t || !p)
        return;
    txn_offset_commit_request_txn_offset_commit_request_topic_init(t);
    txn_offset_commit_request_txn_offset_commit_request_partition_init(p);
    t->name = str(BROKER_FUZZ_TOPIC);
    p->committed_offset = 2;
    t->partitions = p;
    t->partitions_count = 1;
    m->topics = t;
    m->topics_count = 1;
}

static void fill_write_txn_markers(struct seed *s, struct write_txn_markers_request *m)
{
    struct write_txn_markers_request_writable_txn_marker *x = ARENA_NEW(
        s->arena, struct write_txn_markers_request_writable_txn_marker, 1);
    struct write_txn_markers_request_writable_txn_marker_topic *t = ARENA_NEW(
        s->arena, struct write_txn_markers_request_writable_txn_marker_topic, 1);
    if (!x || !t)
        return;
    write_txn_markers_request_writable_txn_marker_init(x);
    write_txn_markers_request_writable_txn_marker_topic_init(t);
    t->name = str(BROKER_FUZZ_TOPIC);
    t->partition_indexes = int_array(s, 1);
    t->partition_indexes_count = 1;
    x->producer_id = BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID;
    x->producer_epoch = BROKER_FUZZ_PLACEHOLDER_EPOCH;
    x->transaction_result = true;
    x->topics = t;
    x->topics_count = 1;
    m->markers = x;
    m->markers_count = 1;
}

static void fill_list_offsets(struct seed *s, struct list_offsets_request *m)
{
    m->replica_id = -1;
    struct list_offsets_request_list_offsets_topic *t = ARENA_NEW(s->arena,
                                                                  struct list_offsets_request_list_offsets_topic, 1);
    struct list_offsets_request_list_offsets_partition *p = ARENA_NEW(
        s->arena, struct list_offsets_request_list_offsets_partition, 2);
    if (!t || !p)
        return;
    list_offsets_request_list_offsets_topic_init(t);
    t->name = str(BROKER_FUZZ_TOPIC);
    for (int i = 0; i < 2; i++) {
        list_offsets_request_list_offsets_partition_init(&p[i]);
        p[i].partition_index = i;
        p[i].timestamp = i == 0 ? -1 : -2;
    }
    t->partitions = p;
    t->partitions_count = 2;
    m->topics = t;
    m->topics_count = 1;
}

static void fill_offset_for_leader_epoch(struct seed *s, struct offset_for_leader_epoch_request *m)
{
    struct offset_for_leader_epoch_request_offset_for_leader_topic *t = ARENA_NEW(
        s->arena, struct offset_for_leader_epoch_request_offset_for_leader_topic, 1);
    struct offset_for_leader_epoch_request_offset_for_leader_partition *p = ARENA_NEW(
        s->arena, struct offset_for_leader_epoch_request_offset_for_leader_partition, 1);
    if (!t || !p)
        return;
    offset_for_leader_epoch_request_offset_for_leader_topic_init(t);
    offset_for_leader_epoch_request_offset_for_leader_partition_init(p);
    t->topic = str(BROKER_FUZZ_TOPIC);
    p->leader_epoch = 0;
    t->partitions = p;
    t->partitions_count = 1;
    m->topics = t;
    m->topics_count = 1;
}

static void fill_delete_topics(struct seed *s, struct delete_topics_request *m)
{
    m->timeout_ms = 1000;
    if (s->version <= 5) {
        m->topic_names = str_array(s, "fuzz-new");
        m->topic_names_count = 1;
        return;
    }
    struct delete_topics_request_delete_topic_state *t = ARENA_NEW(s->arena,
                                                                   struct delete_topics_request_delete_topic_state, 1);
    if (!t)
        return;
    delete_topics_request_delete_topic_state_init(t);
    t->name = str("fuzz-new");
    m->topics = t;
    m->topics_count = 1;
}

static void fill_create_partitions(struct seed *s, struct create_partitions_request *m)
{
    struct create_partitions_request_create_partitions_topic *t = ARENA_NEW(
        s->arena, struct create_partitions_request_create_partitions_topic, 1);
    if (!t)
        return;
    create_partitions_request_create_partitions_topic_init(t);
    t->name = str("fuzz-new");
    t->count = 4;
    m->topics = t;
    m->topics_count = 1;
    m->timeout_ms = 1000;
}

static void fill_describe_configs(struct seed *s, struct describe_configs_request *m)
{
    struct describe_configs_request_describe_configs_resource *r = ARENA_NEW(
        s->arena, struct describe_configs_request_describe_configs_resource, 2);
    if (!r)
        return;
    for (int i = 0; i < 2; i++)
        describe_configs_request_describe_configs_resource_init(&r[i]);
    r[0].resource_type = 2; /* topic */
    r[0].resource_name = str(BROKER_FUZZ_COMPACTED_TOPIC);
    r[1].resource_type = 4; /* broker */
    r[1].resource_name = str("1");
    r[1].configuration_keys = str_array(s, "log.segment.bytes");
    r[1].configuration_keys_count = 1;
    m->resources = r;
    m->resources_count = 2;
    if (s->version >= 1)
        m->include_synonyms = true;
    if (s->version >= 3)
        m->include_documentation = true;
}

static void fill_alter_configs(struct seed *s, struct alter_configs_request *m)
{
    struct alter_configs_request_alter_configs_resource *r = ARENA_NEW(
        s->arena, struct alter_configs_request_alter_configs_resource, 1);
    struct alter_configs_request_alterable_config *c = ARENA_NEW(s->arena,
                                                                 struct alter_configs_request_alterable_config, 1);
    if (!r || !c)
        return;
    alter_configs_request_alter_configs_resource_init(r);
    alter_configs_request_alterable_config_init(c);
    r->resource_type = 2;
    r->resource_name = str("fuzz-new");
    c->name = str("segment.bytes");
    c->value = str("20000");
    r->configs = c;
    r->configs_count = 1;
    m->resources = r;
    m->resources_count = 1;
}

static void fill_incremental_alter_configs(struct seed *s, struct incremental_alter_configs_request *m)
{
    struct incremental_alter_configs_request_alter_configs_resource *r = ARENA_NEW(
        s->arena, struct incremental_alter_configs_request_alter_configs_resource, 1);
    struct incremental_alter_configs_request_alterable_config *c = ARENA_NEW(
        s->arena, struct incremental_alter_configs_request_alterable_config, 2);
    if (!r || !c)
        return;
    incremental_alter_configs_request_alter_configs_resource_init(r);
    r->resource_type = 2;
    r->resource_name = str(BROKER_FUZZ_COMPACTED_TOPIC);
    for (int i = 0; i < 2; i++)
        incremental_alter_configs_request_alterable_config_init(&c[i]);
    c[0].name = str("min.cleanable.dirty.ratio");
    c[0].config_operation = 0; /* SET */
    c[0].value = str("0.01");
    c[1].name = str("cleanup.policy");
    c[1].config_operation = 2; /* APPEND */
    c[1].value = str("delete");
    r->configs = c;
    r->configs_count = 2;
    m->resources = r;
    m->resources_count = 1;
}

static void fill_delete_records(struct seed *s, struct delete_records_request *m)
{
    struct delete_records_request_delete_records_topic *t = ARENA_NEW(
        s->arena, struct delete_records_request_delete_records_topic, 1);
    struct delete_records_request_delete_records_partition *p = ARENA_NEW(
        s->arena, struct delete_records_request_delete_records_partition, 1);
    if (!t || !p)
        return;
    delete_records_request_delete_records_topic_init(t);
    delete_records_request_delete_records_partition_init(p);
    t->name = str(BROKER_FUZZ_TOPIC);
    p->partition_index = 1;
    p->offset = 1;
    t->partitions = p;
    t->partitions_count = 1;
    m->topics = t;
    m->topics_count = 1;
    m->timeout_ms = 1000;
}

static void fill_group_by_name(struct seed *s, int16_t api_key, void *msg)
{
    switch (api_key) {
    case 12: {
        struct heartbeat_request *m = msg;
        m->group_id = str(BROKER_FUZZ_GROUP);
        m->generation_id = BROKER_FUZZ_PLACEHOLDER_GENERATION;
        m->member_id = str(BROKER_FUZZ_MEMBER_ID_PLACEHOLDER);
        break;
    }
    case 13: {
        struct leave_group_request *m = msg;
        m->group_id = str(BROKER_FUZZ_GROUP);
        if (s->version <= 2) {
            m->member_id = str(BROKER_FUZZ_MEMBER_ID_PLACEHOLDER);
        } else {
            struct leave_group_request_member_identity *id = ARENA_NEW(s->arena,
                                                                       struct leave_group_request_member_identity, 1);
            if (!id)
                return;
            leave_group_request_member_identity_init(id);
            id->member_id = str(BROKER_FUZZ_MEMBER_ID_PLACEHOLDER);
            m->members = id;
            m->members_count = 1;
        }
        break;
    }
    case 15: {
        struct describe_groups_request *m = msg;
        m->groups = str_array(s, BROKER_FUZZ_GROUP);
        m->groups_count = 1;
        break;
    }
    case 42: {
        struct delete_groups_request *m = msg;
        m->groups_names = str_array(s, BROKER_FUZZ_GROUP);
        m->groups_names_count = 1;
        break;
    }
    case 47: {
        struct offset_delete_request *m = msg;
        m->group_id = str(BROKER_FUZZ_GROUP);
        struct offset_delete_request_offset_delete_request_topic *t = ARENA_NEW(
            s->arena, struct offset_delete_request_offset_delete_request_topic, 1);
        struct offset_delete_request_offset_delete_request_partition *p = ARENA_NEW(
            s->arena, struct offset_delete_request_offset_delete_request_partition, 1);
        if (!t || !p)
            return;
        offset_delete_request_offset_delete_request_topic_init(t);
        offset_delete_request_offset_delete_request_partition_init(p);
        t->name = str(BROKER_FUZZ_TOPIC);
        t->partitions = p;
        t->partitions_count = 1;
        m->topics = t;
        m->topics_count = 1;
        break;
    }
    }
}

/* InitProducerId: variant 0 for the transactional id, 1 idempotent only.
 * EndTxn: variant 0 commits, 1 aborts. */
static void fill_txn_simple(struct seed *s, int16_t api_key, void *msg, int variant)
{
    switch (api_key) {
    case 22: {
        struct init_producer_id_request *m = msg;
        m->transactional_id = variant == 0 ? str(BROKER_FUZZ_TXN_ID) : (struct kafka_str){NULL, -1};
        m->transaction_timeout_ms = 60000;
        break;
    }
    case 25: {
        struct add_offsets_to_txn_request *m = msg;
        m->transactional_id = str(BROKER_FUZZ_TXN_ID);
        m->producer_id = BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID;
        m->producer_epoch = BROKER_FUZZ_PLACEHOLDER_EPOCH;
        m->group_id = str(BROKER_FUZZ_GROUP);
        break;
    }
    case 26: {
        struct end_txn_request *m = msg;
        m->transactional_id = str(BROKER_FUZZ_TXN_ID);
        m->producer_id = BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID;
        m->producer_epoch = BROKER_FUZZ_PLACEHOLDER_EPOCH;
        m->committed = variant == 0;
        break;
    }
    case 61: {
        struct describe_producers_request *m = msg;
        struct describe_producers_request_topic_request *t = ARENA_NEW(
            s->arena, struct describe_producers_request_topic_request, 1);
        if (!t)
            return;
        describe_producers_request_topic_request_init(t);
        t->name = str(BROKER_FUZZ_TOPIC);
        t->partition_indexes = int_array(s, 2);
        t->partition_indexes_count = 2;
        m->topics = t;
        m->topics_count = 1;
        break;
    }
    case 65: {
        struct describe_transactions_request *m = msg;
        m->transactional_ids = str_array(s, BROKER_FUZZ_TXN_ID);
        m->transactional_ids_count = 1;
        break;
    }
    }
}

/* Fills msg for (api_key, version); variant picks among several seeds of
 * one API. Returns how many variants the API has. */
int fill_request(struct seed *s, int16_t api_key, void *msg, int variant, uint8_t **owned)
{
    switch (api_key) {
    case 0:
        fill_produce(s, msg, variant, owned);
        return PRODUCE_KINDS;
    case 1:
        fill_fetch(s, msg, variant);
        return 2;
    case 2:
        fill_list_offsets(s, msg);
        return 1;
    case 3:
        fill_metadata(s, msg);
        return 1;
    case 8:
        fill_offset_commit(s, msg, variant);
        return 2;
    case 9:
        fill_offset_fetch(s, msg);
        return 1;
    case 10:
        fill_find_coordinator(s, msg, variant == 1);
        return 2;
    case 11:
        fill_join_group(s, msg, variant);
        return 2;
    case 12:
    case 13:
    case 15:
    case 42:
    case 47:
        fill_group_by_name(s, api_key, msg);
        return 1;
    case 14:
        fill_sync_group(s, msg);
        return 1;
    case 18:
        if (s->version >= 3) {
            struct api_versions_request *m = msg;
            m->client_software_name = str("cairn-fuzz");
            m->client_software_version = str("1.0");
        }
        return 1;
    case 19:
        fill_create_topics(s, msg);
        return 1;
    case 20:
        fill_delete_topics(s, msg);
        return 1;
    case 21:
        fill_delete_records(s, msg);
        return 1;
    case 22:
    case 26:
        fill_txn_simple(s, api_key, msg, variant);
        return 2;
    case 25:
    case 61:
    case 65:
        fill_txn_simple(s, api_key, msg, variant);
        return 1;
    case 23:
        fill_offset_for_leader_epoch(s, msg);
        return 1;
    case 24:
        fill_add_partitions_to_txn(s, msg);
        return 1;
    case 27:
        fill_write_txn_markers(s, msg);
        return 1;
    case 28:
        fill_txn_offset_commit(s, msg);
        return 1;
    case 32:
        fill_describe_configs(s, msg);
        return 1;
    case 33:
        fill_alter_configs(s, msg);
        return 1;
    case 37:
        fill_create_partitions(s, msg);
        return 1;
    case 44:
        fill_incremental_alter_configs(s, msg);
        return 1;
    default:
        return 1; /* default-initialised */
    }
}
