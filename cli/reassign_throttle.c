/* The throttle configs of a reassignment: dynamic broker configs on the
 * brokers involved and topic configs naming the moving replicas, set
 * before the move and deleted by verify once it is done. */
#include "reassign_throttle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4
#define THROTTLE_MAX_BROKERS 256

/* One config change: value NULL deletes the key. */
struct throttle_change {
    const char *name;
    const char *value;
};

struct alter_one {
    int8_t type;
    const char *resource;
    const struct throttle_change *changes;
    int n;
};

static int build_alter_one(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    (void)version;
    const struct alter_one *o = ctx;
    struct incremental_alter_configs_request *m = req;
    m->resources = kafka_arena_alloc(a, sizeof(*m->resources));
    if (!m->resources)
        return -1;
    struct incremental_alter_configs_request_alter_configs_resource *res = &m->resources[0];
    incremental_alter_configs_request_alter_configs_resource_init(res);
    res->resource_type = o->type;
    res->resource_name = kafka_str_from_cstr(o->resource);
    res->configs = kafka_arena_alloc(a, sizeof(*res->configs) * (size_t)o->n);
    if (!res->configs)
        return -1;
    for (int i = 0; i < o->n; i++) {
        incremental_alter_configs_request_alterable_config_init(&res->configs[i]);
        res->configs[i].config_operation = o->changes[i].value ? 0 : 1; /* SET, DELETE */
        res->configs[i].name = kafka_str_from_cstr(o->changes[i].name);
        res->configs[i].value = o->changes[i].value ? kafka_str_from_cstr(o->changes[i].value)
                                                    : (struct kafka_str){NULL, -1};
    }
    res->configs_count = o->n;
    m->resources_count = 1;
    return 0;
}

/* A broker's own configs go to that broker, a topic's to the controller
 * (forwarded as needed), as cairn config and cairn topic alter-config send them. */
static int alter_one(struct cli_conn *c, int32_t node, const struct alter_one *o, const char *what)
{
    struct cli_reply r;
    int rc = node == c->controller_id
                 ? cli_call_controller(c, KAFKA_API_KEY_INCREMENTAL_ALTER_CONFIGS, build_alter_one, (void *)o,
                                       cli_alter_configs_moved, &r)
                 : cli_call(c, node, KAFKA_API_KEY_INCREMENTAL_ALTER_CONFIGS, build_alter_one, (void *)o, &r);
    if (rc)
        return rc;
    const struct incremental_alter_configs_response *m = r.response;
    for (int32_t i = 0; i < m->responses_count && rc == 0; i++)
        if (m->responses[i].error_code != KAFKA_ERR_NONE)
            rc = cli_kafka_fail(m->responses[i].error_code, m->responses[i].error_message, what, NULL);
    cli_reply_free(&r);
    return rc;
}

static int alter_broker(struct cli_conn *c, int32_t id, const struct throttle_change *ch, int n)
{
    char name[16], what[64];
    snprintf(name, sizeof name, "%d", (int)id);
    snprintf(what, sizeof what, "cannot alter the throttle of broker %d", (int)id);
    struct alter_one o = {RESOURCE_BROKER, name, ch, n};
    return alter_one(c, id, &o, what);
}

static int alter_topic(struct cli_conn *c, const char *topic, const struct throttle_change *ch, int n)
{
    char what[320];
    snprintf(what, sizeof what, "cannot alter the throttled replicas of topic '%s'", topic);
    struct alter_one o = {RESOURCE_TOPIC, topic, ch, n};
    return alter_one(c, c->controller_id, &o, what);
}

static bool has_id(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Appends "p:b" to list (comma-separated); -1 when it does not fit. */
static int add_pair(char *list, size_t cap, int32_t partition, int32_t broker)
{
    size_t used = strlen(list);
    int w = snprintf(list + used, cap - used, "%s%d:%d", used ? "," : "", (int)partition, (int)broker);
    return w < 0 || (size_t)w >= cap - used ? -1 : 0;
}

static const struct metadata_response_metadata_response_partition *find_partition(const struct metadata_response *m,
                                                                                  const char *topic, int32_t partition)
{
    for (int32_t t = 0; t < m->topics_count; t++) {
        const struct metadata_response_metadata_response_topic *mt = &m->topics[t];
        if (mt->name.len < 0 || strlen(topic) != (size_t)mt->name.len || memcmp(mt->name.data, topic, strlen(topic)))
            continue;
        for (int32_t p = 0; p < mt->partitions_count; p++)
            if (mt->partitions[p].partition_index == partition)
                return &mt->partitions[p];
    }
    return NULL;
}

int reassign_throttle_set(struct cli_conn *c, const char *topic, const int32_t *partitions, const int32_t *targets,
                          int32_t target_stride, const int32_t *target_counts, int32_t n, int64_t rate)
{
    struct cli_reply r;
    const char *topics[] = {topic};
    int rc = cli_metadata(c, topics, 1, &r);
    if (rc)
        return rc;
    size_t cap = (size_t)n * 64 * 24 + 1;
    char *leaders = calloc(1, cap), *followers = calloc(1, cap);
    int32_t brokers[THROTTLE_MAX_BROKERS];
    int32_t nb = 0;
    for (int32_t i = 0; rc == 0 && leaders && followers && i < n; i++) {
        const struct metadata_response_metadata_response_partition *p = find_partition(r.response, topic,
                                                                                       partitions[i]);
        if (!p) {
            rc = cli_fail(CLI_EXIT_KAFKA, "UNKNOWN_TOPIC_OR_PARTITION: %s-%d is not known", topic, (int)partitions[i]);
            break;
        }
        const int32_t *target = targets + (size_t)i * (size_t)target_stride;
        /* As kafka-reassign-partitions: the current replicas may lead the
         * copy, the ones added follow it. */
        for (int32_t k = 0; rc == 0 && k < p->replica_nodes_count; k++)
            if (add_pair(leaders, cap, partitions[i], p->replica_nodes[k]) != 0)
                rc = cli_fail(CLI_EXIT_USAGE, "too many replicas to throttle");
        for (int32_t k = 0; rc == 0 && k < target_counts[i]; k++)
            if (!has_id(p->replica_nodes, p->replica_nodes_count, target[k]) &&
                add_pair(followers, cap, partitions[i], target[k]) != 0)
                rc = cli_fail(CLI_EXIT_USAGE, "too many replicas to throttle");
        for (int32_t k = 0; k < p->replica_nodes_count + target_counts[i]; k++) {
            int32_t id = k < p->replica_nodes_count ? p->replica_nodes[k] : target[k - p->replica_nodes_count];
            if (!has_id(brokers, nb, id) && nb < THROTTLE_MAX_BROKERS)
                brokers[nb++] = id;
        }
    }
    cli_reply_free(&r);
    if (!leaders || !followers)
        rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    char value[32];
    snprintf(value, sizeof value, "%lld", (long long)rate);
    const struct throttle_change rates[] = {{"leader.replication.throttled.rate", value},
                                            {"follower.replication.throttled.rate", value}};
    for (int32_t i = 0; rc == 0 && i < nb; i++)
        rc = alter_broker(c, brokers[i], rates, 2);
    if (rc == 0) {
        struct throttle_change replicas[] = {{"leader.replication.throttled.replicas", leaders},
                                             {"follower.replication.throttled.replicas", followers}};
        rc = alter_topic(c, topic, replicas, followers[0] ? 2 : 1);
    }
    if (rc == 0) {
        char ids[THROTTLE_MAX_BROKERS * 12];
        fprintf(stderr, "throttle: %lld bytes/s on brokers %s; leader replicas %s, follower replicas %s\n",
                (long long)rate, cli_int_list(brokers, nb, ids, sizeof ids), leaders, followers[0] ? followers : "-");
    }
    free(leaders);
    free(followers);
    return rc;
}

int reassign_throttle_clear(struct cli_conn *c, const char *topic)
{
    /* Every broker, as kafka-reassign-partitions --verify clears them. */
    const struct throttle_change rates[] = {{"leader.replication.throttled.rate", NULL},
                                            {"follower.replication.throttled.rate", NULL}};
    int rc = 0;
    for (int32_t i = 0; rc == 0 && c->meta && i < c->meta->brokers_count; i++)
        rc = alter_broker(c, c->meta->brokers[i].node_id, rates, 2);
    const struct throttle_change replicas[] = {{"leader.replication.throttled.replicas", NULL},
                                               {"follower.replication.throttled.replicas", NULL}};
    if (rc == 0)
        rc = alter_topic(c, topic, replicas, 2);
    return rc;
}
