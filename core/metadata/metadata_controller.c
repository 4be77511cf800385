/* Controller operations of the single-voter controller: topic creation and
 * deletion, partition growth, topic config changes. Validation follows
 * Kafka's rules and error codes; each accepted request becomes one batch. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config/uuid.h"
#include "log/log_manager.h"
#include "metadata/metadata_placement.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"
#include "util/topic_name.h"

/* A bound on one request, so a hostile count cannot drive a huge batch. */
#define MAX_PARTITIONS_PER_REQUEST 100000

static int16_t error_out(int16_t code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int16_t error_out(int16_t code, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

int16_t metadata_validate_topic_name(const char *name, char *err, size_t errlen)
{
    return topic_name_valid(name, name ? strlen(name) : 0, err, errlen) ? KAFKA_ERR_NONE
                                                                        : KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
}

/* '.' and '_' collide in metric names, so Kafka refuses names equal up to them. */
static const struct metadata_topic *colliding_topic(const struct metadata_image *img, const char *name)
{
    if (!strpbrk(name, "._"))
        return NULL;
    size_t len = strlen(name);
    for (int32_t i = 0; i < img->topic_count; i++) {
        const char *other = img->topics[i]->name;
        if (strlen(other) != len || strcmp(other, name) == 0)
            continue;
        size_t j = 0;
        for (; j < len; j++) {
            char a = name[j] == '.' ? '_' : name[j];
            char b = other[j] == '.' ? '_' : other[j];
            if (a != b)
                break;
        }
        if (j == len)
            return img->topics[i];
    }
    return NULL;
}

static uint32_t random_u32(void)
{
    uint32_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
        v = 0;
    return v;
}

/* Live (unfenced) broker ids in ascending order; returns count, -1 on OOM. */
static int32_t live_brokers(const struct metadata_image *img, int32_t **out)
{
    *out = malloc((size_t)(img->broker_count > 0 ? img->broker_count : 1) * sizeof(**out));
    if (!*out)
        return -1;
    int32_t n = 0;
    for (int32_t i = 0; i < img->broker_count; i++)
        if (!img->brokers[i].fenced)
            (*out)[n++] = img->brokers[i].node_id;
    return n;
}

/* Checks manual assignments and copies them to out (count * rf ids). */
static int16_t check_assignments(const struct metadata_image *img, const struct metadata_replica_assignment *a,
                                 int32_t count, int32_t first_partition, int16_t expected_rf, int16_t *rf_out,
                                 int32_t **out, char *err, size_t errlen)
{
    *out = NULL;
    int32_t rf = a[0].broker_count;
    if (rf <= 0 || rf > INT16_MAX)
        return error_out(KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, err, errlen,
                         "The manual partition assignment includes an empty replica list");
    if (expected_rf > 0 && rf != expected_rf)
        return error_out(KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, err, errlen,
                         "The manual partition assignment includes a partition with %d replica(s), but this is "
                         "inconsistent with previous partitions, which have %d replica(s)",
                         (int)rf, (int)expected_rf);
    int32_t *ids = malloc((size_t)count * (size_t)rf * sizeof(*ids));
    if (!ids)
        return error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    for (int32_t i = 0; i < count; i++) {
        if (a[i].partition_index != first_partition + i) {
            free(ids);
            return error_out(KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, err, errlen,
                             "Partitions must be assigned in order with consecutive indices starting at %d",
                             (int)first_partition);
        }
        if (a[i].broker_count != rf || !a[i].broker_ids) {
            free(ids);
            return error_out(KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, err, errlen,
                             "All partitions in the manual partition assignment must have the same number of "
                             "replicas");
        }
        for (int32_t j = 0; j < rf; j++) {
            int32_t id = a[i].broker_ids[j];
            const struct metadata_broker *br = metadata_image_broker(img, id);
            if (!br || br->fenced) {
                free(ids);
                return error_out(KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, err, errlen,
                                 "The manual partition assignment includes broker %d, but no such broker is "
                                 "registered and unfenced",
                                 (int)id);
            }
            for (int32_t k = 0; k < j; k++) {
                if (a[i].broker_ids[k] == id) {
                    free(ids);
                    return error_out(KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, err, errlen,
                                     "The manual partition assignment includes the broker %d more than once", (int)id);
                }
            }
            ids[(size_t)i * (size_t)rf + (size_t)j] = id;
        }
    }
    *rf_out = (int16_t)rf;
    *out = ids;
    return KAFKA_ERR_NONE;
}

/* Replica lists for count new partitions, manual or placed. */
static int16_t plan_replicas(const struct metadata_image *img, const struct metadata_replica_assignment *a,
                             int32_t assignment_count, int32_t first_partition, int32_t count, int16_t rf,
                             int16_t *rf_out, int32_t **out, char *err, size_t errlen)
{
    if (a)
        return check_assignments(img, a, assignment_count, first_partition, -1, rf_out, out, err, errlen);
    int32_t *brokers = NULL;
    int32_t live = live_brokers(img, &brokers);
    if (live < 0)
        return error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    if (rf > live) {
        free(brokers);
        return error_out(KAFKA_ERR_INVALID_REPLICATION_FACTOR, err, errlen,
                         "Unable to replicate the partition %d time(s): The target replication factor of %d "
                         "cannot be reached because only %d broker(s) are registered.",
                         (int)rf, (int)rf, (int)live);
    }
    int32_t *ids = malloc((size_t)count * (size_t)rf * sizeof(*ids));
    if (!ids) {
        free(brokers);
        return error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    }
    const char **racks = malloc((size_t)(live > 0 ? live : 1) * sizeof(*racks));
    if (!racks) {
        free(brokers);
        free(ids);
        return error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    }
    for (int32_t i = 0; i < live; i++)
        racks[i] = metadata_image_broker(img, brokers[i])->rack;
    int rc = metadata_place_replicas(brokers, racks, live, first_partition, count, rf, random_u32(), random_u32(), ids);
    free(racks);
    free(brokers);
    if (rc != 0) {
        free(ids);
        return error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    }
    *rf_out = rf;
    *out = ids;
    return KAFKA_ERR_NONE;
}

/* PartitionRecords for new partitions: leader = first live replica, ISR = live replicas. */
static int write_new_partitions(const struct metadata_image *img, struct metadata_record_list *records,
                                const struct kafka_uuid *topic_id, int32_t first_partition, int32_t count, int16_t rf,
                                const int32_t *replica_ids)
{
    int32_t *isr = malloc((size_t)rf * sizeof(*isr));
    if (!isr)
        return -1;
    for (int32_t i = 0; i < count; i++) {
        const int32_t *replicas = &replica_ids[(size_t)i * (size_t)rf];
        int32_t isr_count = 0;
        for (int32_t j = 0; j < rf; j++) {
            const struct metadata_broker *br = metadata_image_broker(img, replicas[j]);
            if (br && !br->fenced)
                isr[isr_count++] = replicas[j];
        }
        struct metadata_partition p = {
            .partition_index = first_partition + i,
            .leader = isr_count > 0 ? isr[0] : -1,
            .leader_epoch = 0,
            .partition_epoch = 0,
            .replicas = (int32_t *)replicas,
            .replica_count = rf,
            .isr = isr,
            .isr_count = isr_count,
        };
        metadata_record_write_partition(&records->w, topic_id, &p);
        metadata_record_list_mark(records);
    }
    free(isr);
    return 0;
}

static int16_t check_configs(struct metadata_store *store, const struct metadata_config_kv *configs, int32_t count,
                             bool allow_delete, char *err, size_t errlen)
{
    for (int32_t i = 0; i < count; i++) {
        const char *key = configs[i].key;
        if (!key || key[0] == '\0')
            return error_out(KAFKA_ERR_INVALID_CONFIG, err, errlen, "Config name must not be empty");
        if (!configs[i].value) {
            if (allow_delete)
                continue;
            return error_out(KAFKA_ERR_INVALID_CONFIG, err, errlen, "Null value not supported for topic configs: %s",
                             key);
        }
        char why[256] = "";
        if (store->validate_topic_config &&
            store->validate_topic_config(store->validate_ctx, key, configs[i].value, why, sizeof(why)) != 0)
            return error_out(KAFKA_ERR_INVALID_CONFIG, err, errlen, "%s", why[0] ? why : "Invalid config");
    }
    return KAFKA_ERR_NONE;
}

/* Validates a topic creation against the current image and, unless
 * validate_only, encodes its batch into records (initialized by the caller)
 * and its id into *id. Caller holds write_lock. */
static int16_t prepare_create_topic_locked(struct metadata_store *store, const char *name, int32_t num_partitions,
                                           int16_t replication_factor,
                                           const struct metadata_replica_assignment *assignments,
                                           int32_t assignment_count, const struct metadata_config_kv *configs,
                                           int32_t config_count, bool validate_only,
                                           struct metadata_record_list *records, struct kafka_uuid *id_out, char *err,
                                           size_t errlen)
{
    int16_t rc = metadata_validate_topic_name(name, err, errlen);
    if (rc != KAFKA_ERR_NONE)
        return rc;
    if (strcmp(name, LOG_MANAGER_METADATA_TOPIC) == 0)
        return error_out(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Creation of internal topic %s is prohibited.", name);
    if (assignments && assignment_count > 0) {
        if (num_partitions != -1 || replication_factor != -1)
            return error_out(KAFKA_ERR_INVALID_REQUEST, err, errlen,
                             "Both numPartitions or replicationFactor and replicasAssignments were set. Both "
                             "cannot be used at the same time.");
        if (assignment_count > MAX_PARTITIONS_PER_REQUEST)
            return error_out(KAFKA_ERR_INVALID_PARTITIONS, err, errlen, "Too many partitions in one request");
    } else {
        assignments = NULL;
        if (num_partitions == -1)
            num_partitions = store->default_num_partitions;
        if (replication_factor == -1)
            replication_factor = store->default_replication_factor;
        if (num_partitions <= 0)
            return error_out(KAFKA_ERR_INVALID_PARTITIONS, err, errlen,
                             "Number of partitions was set to an invalid non-positive value.");
        if (num_partitions > MAX_PARTITIONS_PER_REQUEST)
            return error_out(KAFKA_ERR_INVALID_PARTITIONS, err, errlen,
                             "Number of partitions %d is above the limit of %d per request", (int)num_partitions,
                             MAX_PARTITIONS_PER_REQUEST);
        if (replication_factor <= 0)
            return error_out(KAFKA_ERR_INVALID_REPLICATION_FACTOR, err, errlen,
                             "Replication factor must be larger than 0, or -1 to use the default value.");
    }
    if (config_count < 0 || (config_count > 0 && !configs))
        return error_out(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Invalid config list");

    const struct metadata_image *img = metadata_store_current_locked(store);
    const struct metadata_topic *clash;
    int32_t *replica_ids = NULL;
    int16_t rf = replication_factor;
    int32_t count = assignments ? assignment_count : num_partitions;
    if (metadata_image_topic_by_name(img, name, strlen(name))) {
        rc = error_out(KAFKA_ERR_TOPIC_ALREADY_EXISTS, err, errlen, "Topic '%s' already exists.", name);
        goto out;
    }
    if ((clash = colliding_topic(img, name))) {
        rc = error_out(KAFKA_ERR_INVALID_TOPIC_EXCEPTION, err, errlen, "Topic '%s' collides with existing topic: %s",
                       name, clash->name);
        goto out;
    }
    rc = plan_replicas(img, assignments, assignment_count, 0, count, replication_factor, &rf, &replica_ids, err,
                       errlen);
    if (rc != KAFKA_ERR_NONE)
        goto out;
    rc = check_configs(store, configs, config_count, false, err, errlen);
    if (rc != KAFKA_ERR_NONE || validate_only)
        goto out;

    struct kafka_uuid id;
    do {
        if (uuid_random(id.bytes) != 0) {
            rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "no randomness for a topic id");
            goto out;
        }
    } while (metadata_image_topic_by_id(img, &id));
    metadata_record_write_topic(&records->w, name, &id);
    metadata_record_list_mark(records);
    for (int32_t i = 0; i < config_count; i++) {
        metadata_record_write_config(&records->w, METADATA_CONFIG_RESOURCE_TOPIC, name, configs[i].key,
                                     configs[i].value);
        metadata_record_list_mark(records);
    }
    if (write_new_partitions(img, records, &id, 0, count, rf, replica_ids) != 0)
        rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    else
        *id_out = id;
out:
    free(replica_ids);
    return rc;
}

int16_t metadata_controller_prepare_create_topic(struct metadata_store *store, const char *name, int32_t num_partitions,
                                                 int16_t replication_factor, struct metadata_record_list *records,
                                                 char *err, size_t errlen)
{
    struct kafka_uuid id;
    metadata_controller_lock(store);
    int16_t rc = prepare_create_topic_locked(store, name, num_partitions, replication_factor, NULL, 0, NULL, 0, false,
                                             records, &id, err, errlen);
    metadata_controller_unlock(store);
    return rc;
}

int16_t metadata_controller_submit(struct metadata_store *store, struct metadata_record_list *records, char *err,
                                   size_t errlen)
{
    metadata_controller_lock(store);
    int16_t rc = metadata_store_commit_locked(store, records, err, errlen);
    metadata_controller_unlock(store);
    return rc;
}

int16_t metadata_create_topic(struct metadata_store *store, const char *name, int32_t num_partitions,
                              int16_t replication_factor, const struct metadata_replica_assignment *assignments,
                              int32_t assignment_count, const struct metadata_config_kv *configs, int32_t config_count,
                              bool validate_only, struct kafka_uuid *topic_id_out, char *err, size_t errlen)
{
    return metadata_create_topic_within(store, name, num_partitions, replication_factor, assignments, assignment_count,
                                        configs, config_count, validate_only, METADATA_WAIT_APPLIED, topic_id_out, err,
                                        errlen);
}

int16_t metadata_create_topic_within(struct metadata_store *store, const char *name, int32_t num_partitions,
                                     int16_t replication_factor, const struct metadata_replica_assignment *assignments,
                                     int32_t assignment_count, const struct metadata_config_kv *configs,
                                     int32_t config_count, bool validate_only, int32_t timeout_ms,
                                     struct kafka_uuid *topic_id_out, char *err, size_t errlen)
{
    if (topic_id_out)
        memset(topic_id_out, 0, sizeof(*topic_id_out));
    if (store->create_topic && !assignments && !validate_only && !metadata_store_is_controller(store))
        return store->create_topic(store->create_topic_ctx, name, num_partitions, replication_factor, configs,
                                   config_count, err, errlen);
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0)
        return error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    struct kafka_uuid id;
    metadata_controller_lock(store);
    int16_t rc;
    /* Validated against the image the commit checks: one taken before this
     * node led (or had applied its log) may lack a topic another broker
     * created through the previous leader, and its TopicRecord would be
     * refused as an internal error rather than TOPIC_ALREADY_EXISTS. */
    (void)metadata_store_sync_locked(store);
    for (int attempt = 0;; attempt++) {
        rc = prepare_create_topic_locked(store, name, num_partitions, replication_factor, assignments, assignment_count,
                                         configs, config_count, validate_only, &records, &id, err, errlen);
        if (rc != KAFKA_ERR_NONE || validate_only)
            break;
        /* Became leader, or applied more of the log, while preparing. */
        if (attempt < 3 && metadata_store_sync_locked(store)) {
            metadata_record_list_free(&records);
            if (metadata_record_list_init(&records) != 0) {
                rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
                break;
            }
            continue;
        }
        rc = metadata_store_commit_within_locked(store, &records, timeout_ms, err, errlen);
        break;
    }
    metadata_controller_unlock(store);
    metadata_record_list_free(&records);
    if (rc == KAFKA_ERR_NONE && !validate_only && topic_id_out)
        *topic_id_out = id;
    return rc;
}

int16_t metadata_delete_topic(struct metadata_store *store, const char *name, const struct kafka_uuid *topic_id,
                              char *err, size_t errlen)
{
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    const struct metadata_topic *t;
    int16_t rc;
    if (name)
        t = metadata_image_topic_by_name(img, name, strlen(name));
    else
        t = topic_id ? metadata_image_topic_by_id(img, topic_id) : NULL;
    if (!t) {
        rc = name ? error_out(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, err, errlen,
                              "This server does not host this topic-partition.")
                  : error_out(KAFKA_ERR_UNKNOWN_TOPIC_ID, err, errlen, "This server does not host this topic ID.");
        goto out;
    }
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0) {
        rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
        goto out;
    }
    metadata_record_write_remove_topic(&records.w, &t->topic_id);
    metadata_record_list_mark(&records);
    rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_record_list_free(&records);
out:
    metadata_controller_unlock(store);
    return rc;
}

int16_t metadata_create_partitions(struct metadata_store *store, const char *name, int32_t new_total,
                                   const struct metadata_replica_assignment *assignments, int32_t assignment_count,
                                   bool validate_only, char *err, size_t errlen)
{
    return metadata_create_partitions_within(store, name, new_total, assignments, assignment_count, validate_only,
                                             METADATA_WAIT_APPLIED, err, errlen);
}

int16_t metadata_create_partitions_within(struct metadata_store *store, const char *name, int32_t new_total,
                                          const struct metadata_replica_assignment *assignments,
                                          int32_t assignment_count, bool validate_only, int32_t timeout_ms, char *err,
                                          size_t errlen)
{
    if (!name)
        return error_out(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Missing topic name");
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, name, strlen(name));
    int32_t *replica_ids = NULL;
    int16_t rc;
    if (!t) {
        rc = error_out(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, err, errlen, "This server does not host this topic.");
        goto out;
    }
    int32_t current = t->partition_count;
    if (new_total < current) {
        rc = error_out(KAFKA_ERR_INVALID_PARTITIONS, err, errlen,
                       "The topic %s currently has %d partition(s); %d would not be an increase.", name, (int)current,
                       (int)new_total);
        goto out;
    }
    if (new_total == current) {
        rc = error_out(KAFKA_ERR_INVALID_PARTITIONS, err, errlen, "Topic already has %d partition(s).", (int)current);
        goto out;
    }
    int32_t added = new_total - current;
    if (added > MAX_PARTITIONS_PER_REQUEST) {
        rc = error_out(KAFKA_ERR_INVALID_PARTITIONS, err, errlen, "Too many partitions in one request");
        goto out;
    }
    const struct metadata_partition *p0 = metadata_topic_partition(t, 0);
    int16_t rf = p0 && p0->replica_count > 0 ? (int16_t)p0->replica_count : 1;
    if (assignments && assignment_count != added) {
        rc = error_out(KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, err, errlen,
                       "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
                       (int)added, (int)assignment_count);
        goto out;
    }
    if (assignments)
        rc = check_assignments(img, assignments, assignment_count, current, rf, &rf, &replica_ids, err, errlen);
    else
        rc = plan_replicas(img, NULL, 0, current, added, rf, &rf, &replica_ids, err, errlen);
    if (rc != KAFKA_ERR_NONE || validate_only)
        goto out;
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0) {
        rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
        goto out;
    }
    if (write_new_partitions(img, &records, &t->topic_id, current, added, rf, replica_ids) != 0)
        rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
    else
        rc = metadata_store_commit_within_locked(store, &records, timeout_ms, err, errlen);
    metadata_record_list_free(&records);
out:
    metadata_controller_unlock(store);
    free(replica_ids);
    return rc;
}

int16_t metadata_alter_topic_configs(struct metadata_store *store, const char *name,
                                     const struct metadata_config_kv *configs, int32_t config_count, bool validate_only,
                                     char *err, size_t errlen)
{
    if (!name || config_count < 0 || (config_count > 0 && !configs))
        return error_out(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Missing topic name or configs");
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    int16_t rc;
    if (!metadata_image_topic_by_name(img, name, strlen(name))) {
        rc = error_out(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, err, errlen, "Topic %s does not exist.", name);
        goto out;
    }
    rc = check_configs(store, configs, config_count, true, err, errlen);
    if (rc != KAFKA_ERR_NONE || validate_only || config_count == 0)
        goto out;
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0) {
        rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < config_count; i++) {
        metadata_record_write_config(&records.w, METADATA_CONFIG_RESOURCE_TOPIC, name, configs[i].key,
                                     configs[i].value);
        metadata_record_list_mark(&records);
    }
    rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_record_list_free(&records);
out:
    metadata_controller_unlock(store);
    return rc;
}

int16_t metadata_allocate_producer_ids(struct metadata_store *store, int32_t broker_id, int64_t *first, char *err,
                                       size_t errlen)
{
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    int16_t rc;
    int64_t start = img->next_producer_id;
    if (start < 0 || start > INT64_MAX - METADATA_PRODUCER_ID_BLOCK_SIZE) {
        rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "producer ids are exhausted");
        goto out;
    }
    const struct metadata_broker *broker = metadata_image_broker(img, broker_id);
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0) {
        rc = error_out(KAFKA_ERR_UNKNOWN_SERVER_ERROR, err, errlen, "out of memory");
        goto out;
    }
    metadata_record_write_producer_ids(&records.w, broker_id, broker ? broker->epoch : -1,
                                       start + METADATA_PRODUCER_ID_BLOCK_SIZE);
    metadata_record_list_mark(&records);
    rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_record_list_free(&records);
    if (rc == KAFKA_ERR_NONE)
        *first = start;
out:
    metadata_controller_unlock(store);
    return rc;
}

void metadata_store_set_producer_id_allocator(struct metadata_store *store, metadata_producer_id_allocator fn,
                                              void *ctx)
{
    store->allocate_ids = fn;
    store->allocate_ids_ctx = ctx;
}

void metadata_store_set_topic_creator(struct metadata_store *store, metadata_topic_creator fn, void *ctx)
{
    store->create_topic = fn;
    store->create_topic_ctx = ctx;
}

void metadata_store_set_own_topic_creator(struct metadata_store *store, metadata_topic_creator fn, void *ctx)
{
    store->create_own_topic = fn;
    store->create_own_topic_ctx = ctx;
}

int16_t metadata_create_own_topic(struct metadata_store *store, const char *name, int32_t num_partitions,
                                  int16_t replication_factor, const struct metadata_config_kv *configs,
                                  int32_t config_count, char *err, size_t errlen)
{
    if (!store->create_topic && store->create_own_topic && !metadata_store_is_controller(store))
        return store->create_own_topic(store->create_own_topic_ctx, name, num_partitions, replication_factor, configs,
                                       config_count, err, errlen);
    return metadata_create_topic(store, name, num_partitions, replication_factor, NULL, 0, configs, config_count, false,
                                 NULL, err, errlen);
}

int16_t metadata_next_producer_id(struct metadata_store *store, int64_t *id, char *err, size_t errlen)
{
    metadata_controller_lock(store);
    int16_t rc = KAFKA_ERR_NONE;
    if (store->producer_id_next >= store->producer_id_end) {
        /* The block allocation takes the same (non-recursive) lock. Should two
         * threads both allocate, the later block is dropped: ids stay unique. */
        metadata_controller_unlock(store);
        int64_t first = 0;
        rc = store->allocate_ids ? store->allocate_ids(store->allocate_ids_ctx, &first, err, errlen)
                                 : metadata_allocate_producer_ids(store, store->node_id, &first, err, errlen);
        metadata_controller_lock(store);
        if (rc == KAFKA_ERR_NONE && store->producer_id_next >= store->producer_id_end) {
            store->producer_id_next = first;
            store->producer_id_end = first + METADATA_PRODUCER_ID_BLOCK_SIZE;
        }
    }
    if (rc == KAFKA_ERR_NONE)
        *id = store->producer_id_next++;
    metadata_controller_unlock(store);
    return rc;
}
