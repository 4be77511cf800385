/* The requests of the every-API tenant walk (see tenant_probes.h). */
#include "tenant_probes.h"

#include "protocol/generated/all_messages.h"

static struct kafka_str str(const char *s)
{
    return kafka_str_from_cstr(s);
}

static int32_t partition0[] = {0};

/* The topic's name, or a null string when the request names it by id. */
static struct kafka_str topic_name(const struct names *n)
{
    return n->topic ? str(n->topic) : (struct kafka_str){NULL, -1};
}

static int build_produce(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct produce_request_partition_produce_data part;
    produce_request_partition_produce_data_init(&part);
    part.index = 0;
    part.records = kafka_records_from_memory("", 0);
    struct produce_request_topic_produce_data topic;
    produce_request_topic_produce_data_init(&topic);
    topic.name = str(n->topic);
    topic.partition_data = &part;
    topic.partition_data_count = 1;
    struct produce_request m;
    produce_request_init(&m);
    m.acks = 1; /* acks=0 gets no answer */
    m.timeout_ms = 5000;
    m.topic_data = &topic;
    m.topic_data_count = 1;
    return produce_request_encode(&m, w, v);
}

static int build_fetch(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct fetch_request_fetch_partition part;
    fetch_request_fetch_partition_init(&part);
    part.partition = 0;
    part.partition_max_bytes = 1 << 20;
    struct fetch_request_fetch_topic topic;
    fetch_request_fetch_topic_init(&topic);
    topic.topic = topic_name(n);
    topic.topic_id = n->topic_id;
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct fetch_request m;
    fetch_request_init(&m);
    m.max_wait_ms = 0;
    m.min_bytes = 1;
    m.max_bytes = 1 << 20;
    m.topics = &topic;
    m.topics_count = 1;
    return fetch_request_encode(&m, w, v);
}

static int build_list_offsets(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct list_offsets_request_list_offsets_partition part;
    list_offsets_request_list_offsets_partition_init(&part);
    part.partition_index = 0;
    part.timestamp = -1;
    struct list_offsets_request_list_offsets_topic topic;
    list_offsets_request_list_offsets_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct list_offsets_request m;
    list_offsets_request_init(&m);
    m.replica_id = -1;
    m.topics = &topic;
    m.topics_count = 1;
    return list_offsets_request_encode(&m, w, v);
}

static int build_metadata(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct metadata_request_metadata_request_topic topic;
    metadata_request_metadata_request_topic_init(&topic);
    topic.name = topic_name(n);
    topic.topic_id = n->topic_id;
    struct metadata_request m;
    metadata_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    m.allow_auto_topic_creation = true;
    m.include_topic_authorized_operations = true;
    return metadata_request_encode(&m, w, v);
}

/* Metadata of every topic (topics null). */
static int build_metadata_all(struct kafka_writer *w, int16_t v, const struct names *n)
{
    (void)n;
    struct metadata_request m;
    metadata_request_init(&m);
    m.topics = NULL;
    m.topics_count = -1;
    return metadata_request_encode(&m, w, v);
}

static int build_offset_commit(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct offset_commit_request_offset_commit_request_partition part;
    offset_commit_request_offset_commit_request_partition_init(&part);
    part.partition_index = 0;
    part.committed_offset = 1;
    struct offset_commit_request_offset_commit_request_topic topic;
    offset_commit_request_offset_commit_request_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct offset_commit_request m;
    offset_commit_request_init(&m);
    m.group_id = str(n->group);
    m.generation_id_or_member_epoch = -1;
    m.member_id = str("");
    m.topics = &topic;
    m.topics_count = 1;
    return offset_commit_request_encode(&m, w, v);
}

static int build_offset_fetch(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct offset_fetch_request_offset_fetch_request_topic topic;
    offset_fetch_request_offset_fetch_request_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partition_indexes = partition0;
    topic.partition_indexes_count = 1;
    struct offset_fetch_request m;
    offset_fetch_request_init(&m);
    m.group_id = str(n->group);
    m.topics = &topic;
    m.topics_count = 1;
    return offset_fetch_request_encode(&m, w, v);
}

/* Every committed offset of the group (topics null). */
static int build_offset_fetch_all(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct offset_fetch_request m;
    offset_fetch_request_init(&m);
    m.group_id = str(n->group);
    m.topics = NULL;
    m.topics_count = -1;
    return offset_fetch_request_encode(&m, w, v);
}

/* The same in the v8+ form (a groups array): every offset of one group. */
static int build_offset_fetch_group_all(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct offset_fetch_request_offset_fetch_request_group group;
    offset_fetch_request_offset_fetch_request_group_init(&group);
    group.group_id = str(n->group);
    group.topics = NULL;
    group.topics_count = -1;
    struct offset_fetch_request m;
    offset_fetch_request_init(&m);
    m.groups = &group;
    m.groups_count = 1;
    return offset_fetch_request_encode(&m, w, v);
}

static int find_coordinator(struct kafka_writer *w, int16_t v, const char *key, int8_t type)
{
    struct find_coordinator_request m;
    find_coordinator_request_init(&m);
    m.key = str(key);
    m.key_type = type;
    return find_coordinator_request_encode(&m, w, v);
}

static int build_find_group(struct kafka_writer *w, int16_t v, const struct names *n)
{
    return find_coordinator(w, v, n->group, 0);
}

static int build_find_txn(struct kafka_writer *w, int16_t v, const struct names *n)
{
    return find_coordinator(w, v, n->txn, 1);
}

static int build_join_group(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct join_group_request_join_group_request_protocol proto;
    join_group_request_join_group_request_protocol_init(&proto);
    proto.name = str("range");
    proto.metadata = (struct kafka_bytes){(const uint8_t *)"", 0};
    struct join_group_request m;
    join_group_request_init(&m);
    m.group_id = str(n->group);
    m.session_timeout_ms = 10000;
    m.rebalance_timeout_ms = 10000;
    m.member_id = str("");
    m.protocol_type = str("consumer");
    m.protocols = &proto;
    m.protocols_count = 1;
    return join_group_request_encode(&m, w, v);
}

static int build_heartbeat(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct heartbeat_request m;
    heartbeat_request_init(&m);
    m.group_id = str(n->group);
    m.generation_id = 1;
    m.member_id = str("member-1");
    return heartbeat_request_encode(&m, w, v);
}

static int build_leave_group(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct leave_group_request_member_identity member;
    leave_group_request_member_identity_init(&member);
    member.member_id = str("member-1");
    struct leave_group_request m;
    leave_group_request_init(&m);
    m.group_id = str(n->group);
    m.members = &member;
    m.members_count = 1;
    return leave_group_request_encode(&m, w, v);
}

static int build_sync_group(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct sync_group_request m;
    sync_group_request_init(&m);
    m.group_id = str(n->group);
    m.generation_id = 1;
    m.member_id = str("member-1");
    m.protocol_type = str("consumer");
    m.protocol_name = str("range");
    return sync_group_request_encode(&m, w, v);
}

static int build_describe_groups(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct kafka_str group = str(n->group);
    struct describe_groups_request m;
    describe_groups_request_init(&m);
    m.groups = &group;
    m.groups_count = 1;
    m.include_authorized_operations = true;
    return describe_groups_request_encode(&m, w, v);
}

static int build_list_groups(struct kafka_writer *w, int16_t v, const struct names *n)
{
    (void)n;
    struct list_groups_request m;
    list_groups_request_init(&m);
    return list_groups_request_encode(&m, w, v);
}

static int build_create_topics(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct create_topics_request_creatable_topic topic;
    create_topics_request_creatable_topic_init(&topic);
    topic.name = str(n->topic);
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    struct create_topics_request m;
    create_topics_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    m.timeout_ms = 10000;
    return create_topics_request_encode(&m, w, v);
}

static int build_delete_topics(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct delete_topics_request_delete_topic_state topic;
    delete_topics_request_delete_topic_state_init(&topic);
    topic.name = topic_name(n);
    topic.topic_id = n->topic_id;
    struct kafka_str name = topic_name(n);
    struct delete_topics_request m;
    delete_topics_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    m.topic_names = &name;
    m.topic_names_count = 1;
    m.timeout_ms = 10000;
    return delete_topics_request_encode(&m, w, v);
}

static int build_delete_records(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct delete_records_request_delete_records_partition part;
    delete_records_request_delete_records_partition_init(&part);
    part.partition_index = 0;
    part.offset = 0;
    struct delete_records_request_delete_records_topic topic;
    delete_records_request_delete_records_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct delete_records_request m;
    delete_records_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    m.timeout_ms = 10000;
    return delete_records_request_encode(&m, w, v);
}

static int build_init_producer_id(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct init_producer_id_request m;
    init_producer_id_request_init(&m);
    m.transactional_id = str(n->txn);
    m.transaction_timeout_ms = 60000;
    m.producer_id = -1;
    m.producer_epoch = -1;
    return init_producer_id_request_encode(&m, w, v);
}

static int build_offset_for_leader_epoch(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct offset_for_leader_epoch_request_offset_for_leader_partition part;
    offset_for_leader_epoch_request_offset_for_leader_partition_init(&part);
    part.partition = 0;
    part.current_leader_epoch = -1;
    part.leader_epoch = 0;
    struct offset_for_leader_epoch_request_offset_for_leader_topic topic;
    offset_for_leader_epoch_request_offset_for_leader_topic_init(&topic);
    topic.topic = str(n->topic);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct offset_for_leader_epoch_request m;
    offset_for_leader_epoch_request_init(&m);
    m.replica_id = -1;
    m.topics = &topic;
    m.topics_count = 1;
    return offset_for_leader_epoch_request_encode(&m, w, v);
}

static int build_add_partitions_to_txn(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct add_partitions_to_txn_request_add_partitions_to_txn_topic topic;
    add_partitions_to_txn_request_add_partitions_to_txn_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partitions = partition0;
    topic.partitions_count = 1;
    struct add_partitions_to_txn_request m;
    add_partitions_to_txn_request_init(&m);
    m.v3_and_below_transactional_id = str(n->txn);
    m.v3_and_below_producer_id = 1;
    m.v3_and_below_producer_epoch = 0;
    m.v3_and_below_topics = &topic;
    m.v3_and_below_topics_count = 1;
    return add_partitions_to_txn_request_encode(&m, w, v);
}

static int build_add_offsets_to_txn(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct add_offsets_to_txn_request m;
    add_offsets_to_txn_request_init(&m);
    m.transactional_id = str(n->txn);
    m.producer_id = 1;
    m.producer_epoch = 0;
    m.group_id = str(n->group);
    return add_offsets_to_txn_request_encode(&m, w, v);
}

static int build_end_txn(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct end_txn_request m;
    end_txn_request_init(&m);
    m.transactional_id = str(n->txn);
    m.producer_id = 1;
    m.producer_epoch = 0;
    m.committed = true;
    return end_txn_request_encode(&m, w, v);
}

static int build_write_txn_markers(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct write_txn_markers_request_writable_txn_marker_topic topic;
    write_txn_markers_request_writable_txn_marker_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partition_indexes = partition0;
    topic.partition_indexes_count = 1;
    struct write_txn_markers_request_writable_txn_marker marker;
    write_txn_markers_request_writable_txn_marker_init(&marker);
    marker.producer_id = 1;
    marker.producer_epoch = 0;
    marker.transaction_result = true;
    marker.topics = &topic;
    marker.topics_count = 1;
    struct write_txn_markers_request m;
    write_txn_markers_request_init(&m);
    m.markers = &marker;
    m.markers_count = 1;
    return write_txn_markers_request_encode(&m, w, v);
}

static int build_txn_offset_commit(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct txn_offset_commit_request_txn_offset_commit_request_partition part;
    txn_offset_commit_request_txn_offset_commit_request_partition_init(&part);
    part.partition_index = 0;
    part.committed_offset = 1;
    struct txn_offset_commit_request_txn_offset_commit_request_topic topic;
    txn_offset_commit_request_txn_offset_commit_request_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct txn_offset_commit_request m;
    txn_offset_commit_request_init(&m);
    m.transactional_id = str(n->txn);
    m.group_id = str(n->group);
    m.producer_id = 1;
    m.producer_epoch = 0;
    m.member_id = str("");
    m.topics = &topic;
    m.topics_count = 1;
    return txn_offset_commit_request_encode(&m, w, v);
}

/* Kafka's resource type of a name kind: TOPIC 2, GROUP 3, TRANSACTIONAL_ID 5. */
static const char *acl_resource(const struct names *n, enum name_kind kind, int8_t *type)
{
    *type = kind == KIND_GROUP ? 3 : kind == KIND_TXN ? 5 : 2;
    return kind == KIND_GROUP ? n->group : kind == KIND_TXN ? n->txn : n->topic;
}

static int describe_acls(struct kafka_writer *w, int16_t v, const struct names *n, enum name_kind kind)
{
    struct describe_acls_request m;
    describe_acls_request_init(&m);
    m.resource_name_filter = str(acl_resource(n, kind, &m.resource_type_filter));
    m.pattern_type_filter = 1; /* ANY */
    m.operation = 1;           /* ANY */
    m.permission_type = 1;     /* ANY */
    return describe_acls_request_encode(&m, w, v);
}

static int build_describe_acls_topic(struct kafka_writer *w, int16_t v, const struct names *n)
{
    return describe_acls(w, v, n, KIND_TOPIC);
}

static int build_describe_acls_group(struct kafka_writer *w, int16_t v, const struct names *n)
{
    return describe_acls(w, v, n, KIND_GROUP);
}

static int build_describe_acls_txn(struct kafka_writer *w, int16_t v, const struct names *n)
{
    return describe_acls(w, v, n, KIND_TXN);
}

/* Every ACL (an ANY filter). */
static int build_describe_all_acls(struct kafka_writer *w, int16_t v, const struct names *n)
{
    (void)n;
    struct describe_acls_request m;
    describe_acls_request_init(&m);
    m.resource_type_filter = 1; /* ANY */
    m.resource_name_filter = (struct kafka_str){NULL, -1};
    m.pattern_type_filter = 1;
    m.operation = 1;
    m.permission_type = 1;
    return describe_acls_request_encode(&m, w, v);
}

static int build_create_acls(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct create_acls_request_acl_creation acl;
    create_acls_request_acl_creation_init(&acl);
    acl.resource_name = str(acl_resource(n, KIND_TOPIC, &acl.resource_type));
    acl.resource_pattern_type = 3; /* LITERAL */
    acl.principal = str("User:ANONYMOUS");
    acl.host = str("*");
    acl.operation = 3;       /* READ */
    acl.permission_type = 3; /* ALLOW */
    struct create_acls_request m;
    create_acls_request_init(&m);
    m.creations = &acl;
    m.creations_count = 1;
    return create_acls_request_encode(&m, w, v);
}

static int build_delete_acls(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct delete_acls_request_delete_acls_filter filter;
    delete_acls_request_delete_acls_filter_init(&filter);
    filter.resource_name_filter = str(acl_resource(n, KIND_TOPIC, &filter.resource_type_filter));
    filter.pattern_type_filter = 1;
    filter.operation = 1;
    filter.permission_type = 1;
    struct delete_acls_request m;
    delete_acls_request_init(&m);
    m.filters = &filter;
    m.filters_count = 1;
    return delete_acls_request_encode(&m, w, v);
}

static int build_describe_configs(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct describe_configs_request_describe_configs_resource res;
    describe_configs_request_describe_configs_resource_init(&res);
    res.resource_type = 2;
    res.resource_name = str(n->topic);
    struct describe_configs_request m;
    describe_configs_request_init(&m);
    m.resources = &res;
    m.resources_count = 1;
    return describe_configs_request_encode(&m, w, v);
}

static int build_alter_configs(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct alter_configs_request_alterable_config config;
    alter_configs_request_alterable_config_init(&config);
    config.name = str("retention.ms");
    config.value = str("3600000");
    struct alter_configs_request_alter_configs_resource res;
    alter_configs_request_alter_configs_resource_init(&res);
    res.resource_type = 2;
    res.resource_name = str(n->topic);
    res.configs = &config;
    res.configs_count = 1;
    struct alter_configs_request m;
    alter_configs_request_init(&m);
    m.resources = &res;
    m.resources_count = 1;
    return alter_configs_request_encode(&m, w, v);
}

static int build_incremental_alter_configs(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct incremental_alter_configs_request_alterable_config config;
    incremental_alter_configs_request_alterable_config_init(&config);
    config.name = str("retention.ms");
    config.config_operation = 0; /* SET */
    config.value = str("3600000");
    struct incremental_alter_configs_request_alter_configs_resource res;
    incremental_alter_configs_request_alter_configs_resource_init(&res);
    res.resource_type = 2;
    res.resource_name = str(n->topic);
    res.configs = &config;
    res.configs_count = 1;
    struct incremental_alter_configs_request m;
    incremental_alter_configs_request_init(&m);
    m.resources = &res;
    m.resources_count = 1;
    return incremental_alter_configs_request_encode(&m, w, v);
}

static int build_describe_log_dirs(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct describe_log_dirs_request_describable_log_dir_topic topic;
    describe_log_dirs_request_describable_log_dir_topic_init(&topic);
    topic.topic = str(n->topic);
    topic.partitions = partition0;
    topic.partitions_count = 1;
    struct describe_log_dirs_request m;
    describe_log_dirs_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    return describe_log_dirs_request_encode(&m, w, v);
}

/* DescribeLogDirs of every topic (topics null). */
static int build_describe_all_log_dirs(struct kafka_writer *w, int16_t v, const struct names *n)
{
    (void)n;
    struct describe_log_dirs_request m;
    describe_log_dirs_request_init(&m);
    m.topics = NULL;
    m.topics_count = -1;
    return describe_log_dirs_request_encode(&m, w, v);
}

static int build_create_partitions(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct create_partitions_request_create_partitions_topic topic;
    create_partitions_request_create_partitions_topic_init(&topic);
    topic.name = str(n->topic);
    topic.count = 2;
    topic.assignments_count = -1;
    struct create_partitions_request m;
    create_partitions_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    m.timeout_ms = 10000;
    return create_partitions_request_encode(&m, w, v);
}

static int build_delete_groups(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct kafka_str group = str(n->group);
    struct delete_groups_request m;
    delete_groups_request_init(&m);
    m.groups_names = &group;
    m.groups_names_count = 1;
    return delete_groups_request_encode(&m, w, v);
}

static int build_elect_leaders(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct elect_leaders_request_topic_partitions topic;
    elect_leaders_request_topic_partitions_init(&topic);
    topic.topic = str(n->topic);
    topic.partitions = partition0;
    topic.partitions_count = 1;
    struct elect_leaders_request m;
    elect_leaders_request_init(&m);
    m.election_type = 0;
    m.topic_partitions = &topic;
    m.topic_partitions_count = 1;
    m.timeout_ms = 10000;
    return elect_leaders_request_encode(&m, w, v);
}

static int build_alter_partition_reassignments(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct alter_partition_reassignments_request_reassignable_partition part;
    alter_partition_reassignments_request_reassignable_partition_init(&part);
    part.partition_index = 0;
    part.replicas = NULL; /* a cancel */
    part.replicas_count = -1;
    struct alter_partition_reassignments_request_reassignable_topic topic;
    alter_partition_reassignments_request_reassignable_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct alter_partition_reassignments_request m;
    alter_partition_reassignments_request_init(&m);
    m.timeout_ms = 10000;
    m.topics = &topic;
    m.topics_count = 1;
    return alter_partition_reassignments_request_encode(&m, w, v);
}

static int build_list_partition_reassignments(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct list_partition_reassignments_request_list_partition_reassignments_topics topic;
    list_partition_reassignments_request_list_partition_reassignments_topics_init(&topic);
    topic.name = str(n->topic);
    topic.partition_indexes = partition0;
    topic.partition_indexes_count = 1;
    struct list_partition_reassignments_request m;
    list_partition_reassignments_request_init(&m);
    m.timeout_ms = 10000;
    m.topics = &topic;
    m.topics_count = 1;
    return list_partition_reassignments_request_encode(&m, w, v);
}

static int build_offset_delete(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct offset_delete_request_offset_delete_request_partition part;
    offset_delete_request_offset_delete_request_partition_init(&part);
    part.partition_index = 0;
    struct offset_delete_request_offset_delete_request_topic topic;
    offset_delete_request_offset_delete_request_topic_init(&topic);
    topic.name = str(n->topic);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct offset_delete_request m;
    offset_delete_request_init(&m);
    m.group_id = str(n->group);
    m.topics = &topic;
    m.topics_count = 1;
    return offset_delete_request_encode(&m, w, v);
}

static int build_describe_producers(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct describe_producers_request_topic_request topic;
    describe_producers_request_topic_request_init(&topic);
    topic.name = str(n->topic);
    topic.partition_indexes = partition0;
    topic.partition_indexes_count = 1;
    struct describe_producers_request m;
    describe_producers_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    return describe_producers_request_encode(&m, w, v);
}

static int build_describe_transactions(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct kafka_str id = str(n->txn);
    struct describe_transactions_request m;
    describe_transactions_request_init(&m);
    m.transactional_ids = &id;
    m.transactional_ids_count = 1;
    return describe_transactions_request_encode(&m, w, v);
}

static int build_list_transactions(struct kafka_writer *w, int16_t v, const struct names *n)
{
    (void)n;
    struct list_transactions_request m;
    list_transactions_request_init(&m);
    return list_transactions_request_encode(&m, w, v);
}

/* DescribeTopicPartitions of one named topic. */
static int build_describe_topic_partitions(struct kafka_writer *w, int16_t v, const struct names *n)
{
    struct describe_topic_partitions_request_topic_request topic;
    describe_topic_partitions_request_topic_request_init(&topic);
    topic.name = str(n->topic);
    struct describe_topic_partitions_request m;
    describe_topic_partitions_request_init(&m);
    m.topics = &topic;
    m.topics_count = 1;
    return describe_topic_partitions_request_encode(&m, w, v);
}

/* DescribeTopicPartitions of every topic (an empty list). */
static int build_describe_topic_partitions_all(struct kafka_writer *w, int16_t v, const struct names *n)
{
    (void)n;
    struct describe_topic_partitions_request m;
    describe_topic_partitions_request_init(&m);
    m.topics_count = 0;
    return describe_topic_partitions_request_encode(&m, w, v);
}

const struct tenant_probe tenant_probes[] = {
    {0, 8, KIND_TOPIC, build_produce, THROTTLE_LAST, 0, KIND_LISTING},
    {1, 12, KIND_TOPIC, build_fetch, 0, 0, KIND_LISTING},
    {1, 13, KIND_TOPIC_ID, build_fetch, 0, 0, KIND_LISTING},
    {2, 7, KIND_TOPIC, build_list_offsets, 0, 0, KIND_LISTING},
    {3, 12, KIND_TOPIC, build_metadata, 0, 0, KIND_LISTING},
    {3, 12, KIND_TOPIC_ID, build_metadata, 0, PROBE_OWN_LISTED, KIND_TOPIC},
    {3, 12, KIND_LISTING, build_metadata_all, 0, PROBE_OWN_LISTED, KIND_TOPIC},
    {8, 8, KIND_GROUP, build_offset_commit, 0, 0, KIND_LISTING},
    {8, 8, KIND_TOPIC, build_offset_commit, 0, 0, KIND_LISTING},
    {9, 7, KIND_GROUP, build_offset_fetch, 0, 0, KIND_LISTING},
    {9, 7, KIND_TOPIC, build_offset_fetch, 0, 0, KIND_LISTING},
    /* Every committed offset of the tenant's group, which also holds one
     * for the other tenant's topic (committed before the ACLs). */
    {9, 7, KIND_LISTING, build_offset_fetch_all, 0, PROBE_OWN_LISTED, KIND_TOPIC},
    {9, 9, KIND_LISTING, build_offset_fetch_group_all, 0, PROBE_OWN_LISTED, KIND_TOPIC},
    {10, 3, KIND_GROUP, build_find_group, 0, 0, KIND_LISTING},
    {10, 3, KIND_TXN, build_find_txn, 0, 0, KIND_LISTING},
    {11, 7, KIND_GROUP, build_join_group, 0, 0, KIND_LISTING},
    {12, 4, KIND_GROUP, build_heartbeat, 0, 0, KIND_LISTING},
    {13, 4, KIND_GROUP, build_leave_group, 0, 0, KIND_LISTING},
    {14, 5, KIND_GROUP, build_sync_group, 0, 0, KIND_LISTING},
    {15, 5, KIND_GROUP, build_describe_groups, 0, 0, KIND_LISTING},
    {16, 4, KIND_LISTING, build_list_groups, 0, PROBE_OWN_LISTED, KIND_GROUP},
    {19, 7, KIND_TOPIC, build_create_topics, 0, 0, KIND_LISTING},
    {21, 2, KIND_TOPIC, build_delete_records, 0, 0, KIND_LISTING},
    {22, 4, KIND_TXN, build_init_producer_id, 0, 0, KIND_LISTING},
    {23, 4, KIND_TOPIC, build_offset_for_leader_epoch, 0, 0, KIND_LISTING},
    {24, 3, KIND_TXN, build_add_partitions_to_txn, 0, 0, KIND_LISTING},
    {24, 3, KIND_TOPIC, build_add_partitions_to_txn, 0, 0, KIND_LISTING},
    {25, 3, KIND_TXN, build_add_offsets_to_txn, 0, 0, KIND_LISTING},
    {25, 3, KIND_GROUP, build_add_offsets_to_txn, 0, 0, KIND_LISTING},
    {26, 3, KIND_TXN, build_end_txn, 0, 0, KIND_LISTING},
    {27, 1, KIND_TOPIC, build_write_txn_markers, THROTTLE_NONE, PROBE_CLUSTER_GATED, KIND_LISTING},
    {28, 3, KIND_TXN, build_txn_offset_commit, 0, 0, KIND_LISTING},
    {28, 3, KIND_GROUP, build_txn_offset_commit, 0, 0, KIND_LISTING},
    {28, 3, KIND_TOPIC, build_txn_offset_commit, 0, 0, KIND_LISTING},
    {29, 2, KIND_TOPIC, build_describe_acls_topic, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {29, 2, KIND_GROUP, build_describe_acls_group, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {29, 2, KIND_TXN, build_describe_acls_txn, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {29, 2, KIND_LISTING, build_describe_all_acls, 0, 0, KIND_LISTING},
    {30, 2, KIND_TOPIC, build_create_acls, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {31, 2, KIND_TOPIC, build_delete_acls, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {32, 4, KIND_TOPIC, build_describe_configs, 0, 0, KIND_LISTING},
    {33, 2, KIND_TOPIC, build_alter_configs, 0, 0, KIND_LISTING},
    {35, 2, KIND_TOPIC, build_describe_log_dirs, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    /* DescribeLogDirs needs DESCRIBE on the cluster, which the tenant lacks:
     * the listing names no topic, its own included. */
    {35, 2, KIND_LISTING, build_describe_all_log_dirs, 0, 0, KIND_LISTING},
    {37, 2, KIND_TOPIC, build_create_partitions, 0, 0, KIND_LISTING},
    {42, 2, KIND_GROUP, build_delete_groups, 0, 0, KIND_LISTING},
    {43, 2, KIND_TOPIC, build_elect_leaders, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {44, 1, KIND_TOPIC, build_incremental_alter_configs, 0, 0, KIND_LISTING},
    {45, 0, KIND_TOPIC, build_alter_partition_reassignments, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {46, 0, KIND_TOPIC, build_list_partition_reassignments, 0, PROBE_CLUSTER_GATED, KIND_LISTING},
    {47, 0, KIND_GROUP, build_offset_delete, 2, 0, KIND_LISTING},
    {47, 0, KIND_TOPIC, build_offset_delete, 2, 0, KIND_LISTING},
    {61, 0, KIND_TOPIC, build_describe_producers, 0, 0, KIND_LISTING},
    {65, 0, KIND_TXN, build_describe_transactions, 0, 0, KIND_LISTING},
    {75, 0, KIND_TOPIC, build_describe_topic_partitions, 0, 0, KIND_LISTING},
    {75, 0, KIND_LISTING, build_describe_topic_partitions_all, 0, PROBE_OWN_LISTED, KIND_TOPIC},
    {66, 1, KIND_LISTING, build_list_transactions, 0, PROBE_OWN_LISTED, KIND_TXN},
    /* Last: were it to leak, it would delete the other tenant's topic. */
    {20, 6, KIND_TOPIC_ID, build_delete_topics, 0, 0, KIND_LISTING},
    {20, 6, KIND_TOPIC, build_delete_topics, 0, 0, KIND_LISTING},
};

const size_t tenant_probe_count = sizeof tenant_probes / sizeof tenant_probes[0];
