/* The replica manager driven by real metadata images (built with the
 * image builder, and published by a real metadata store): it hosts the
 * partitions that name this broker only, deletes their logs with their
 * topic, applies topic configs, records roles, and tells leadership
 * listeners of new partitions and leader-epoch changes only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "log/partition_log.h"
#include "metadata/metadata_builder.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "replica/replica_manager.h"

#define SELF 1

struct call {
    char topic[32];
    int32_t partition;
    bool became_leader;
    int32_t leader_epoch;
};

struct fixture {
    char dir[64];
    struct broker_config *config;
    struct log_manager *logs;
    struct replica_manager *rm;
    const struct metadata_image *image; /* the last applied */
    struct call calls[32];
    size_t call_count;
};

static void on_leadership(void *ctx, const char *topic, int32_t partition, bool became_leader, int32_t leader_epoch)
{
    struct fixture *f = ctx;
    /* The log exists whenever a listener hears of a partition. */
    struct partition_log *log = log_manager_get(f->logs, topic, partition);
    assert_non_null(log);
    partition_log_close(log);
    if (f->call_count < 32) {
        struct call *c = &f->calls[f->call_count];
        snprintf(c->topic, sizeof c->topic, "%s", topic);
        c->partition = partition;
        c->became_leader = became_leader;
        c->leader_epoch = leader_epoch;
    }
    f->call_count++;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/cairn-replica-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    char err[256];
    if (config_build(NULL, NULL, 0, &f->config, err, sizeof err) != 0)
        return -1;
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    struct log_config defaults;
    replica_log_config(f->config, NULL, &defaults);
    const char *dirs[] = {f->dir};
    if (log_manager_open(dirs, 1, &defaults, &mcfg, &f->logs, err, sizeof err) != 0)
        return -1;
    struct replica_manager_options opts = {.logs = f->logs, .config = f->config, .node_id = SELF};
    if (replica_manager_create(&opts, &f->rm) != 0)
        return -1;
    if (replica_manager_add_leadership_listener(f->rm, on_leadership, f) <= 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    replica_manager_destroy(f->rm);
    log_manager_close(f->logs, true);
    if (f->image)
        metadata_image_release(f->image);
    config_free(f->config);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static const struct kafka_uuid TOPIC_A = {{0xa1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}};
static const struct kafka_uuid TOPIC_B = {{0xb2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}};

static void set_partition(struct metadata_builder *b, const struct kafka_uuid *id, int32_t index, int32_t leader,
                          const int32_t *replicas, int32_t count)
{
    struct metadata_partition p = {
        .present = true,
        .partition_index = index,
        .leader = leader,
        .leader_epoch = 0,
        .partition_epoch = 0,
        .replicas = (int32_t *)replicas,
        .replica_count = count,
        .isr = (int32_t *)replicas,
        .isr_count = count,
    };
    char err[128];
    assert_int_equal(metadata_builder_set_partition(b, id, &p, err, sizeof err), 0);
}

/* Apply next (taking it over) after the image applied last. */
static void apply(struct fixture *f, struct metadata_image *next)
{
    assert_non_null(next);
    f->call_count = 0;
    replica_manager_on_metadata(f->rm, f->image, next);
    if (f->image)
        metadata_image_release(f->image);
    f->image = next;
}

/* Topic a: a-0 led here alone, a-1 followed here (led by 2), a-2 on 2 and
 * 3 only. Topic b: b-0 led here. */
static struct metadata_image *two_topics(void)
{
    struct metadata_builder *b = metadata_builder_new(NULL);
    char err[128];
    assert_int_equal(metadata_builder_add_topic(b, "a", 1, &TOPIC_A, err, sizeof err), 0);
    assert_int_equal(metadata_builder_add_topic(b, "b", 1, &TOPIC_B, err, sizeof err), 0);
    set_partition(b, &TOPIC_A, 0, SELF, (int32_t[]){SELF}, 1);
    set_partition(b, &TOPIC_A, 1, 2, (int32_t[]){2, SELF}, 2);
    set_partition(b, &TOPIC_A, 2, 2, (int32_t[]){2, 3}, 2);
    set_partition(b, &TOPIC_B, 0, SELF, (int32_t[]){SELF}, 1);
    return metadata_builder_finish(b, 1);
}

static const struct call *find_call(const struct fixture *f, const char *topic, int32_t partition)
{
    const struct call *found = NULL;
    for (size_t i = 0; i < f->call_count && i < 32; i++)
        if (strcmp(f->calls[i].topic, topic) == 0 && f->calls[i].partition == partition) {
            assert_null(found); /* once per change */
            found = &f->calls[i];
        }
    return found;
}

static bool has_log(struct fixture *f, const char *topic, int32_t partition)
{
    struct partition_log *log = log_manager_get(f->logs, topic, partition);
    if (log)
        partition_log_close(log);
    return log != NULL;
}

static void test_hosts_only_partitions_naming_this_broker(void **state)
{
    struct fixture *f = *state;
    apply(f, two_topics());
    assert_true(has_log(f, "a", 0));
    assert_true(has_log(f, "a", 1));
    assert_false(has_log(f, "a", 2));
    assert_true(has_log(f, "b", 0));
    assert_int_equal(replica_manager_hosted_count(f->rm), 3);
    assert_int_equal(replica_manager_leader_count(f->rm), 2);

    struct replica_partition_info info;
    struct partition_log *log = NULL;
    assert_true(replica_manager_lookup(f->rm, "a", 0, &info, &log));
    assert_int_equal(info.role, REPLICA_ROLE_LEADER);
    assert_int_equal(info.leader_id, SELF);
    assert_int_equal(info.isr_count, 1);
    /* Alone in the ISR: the high watermark follows appends. */
    assert_true(partition_log_high_watermark_tracks_end(log));
    partition_log_close(log);

    assert_true(replica_manager_lookup(f->rm, "a", 1, &info, &log));
    assert_int_equal(info.role, REPLICA_ROLE_FOLLOWER);
    assert_int_equal(info.leader_id, 2);
    assert_int_equal(info.replica_count, 2);
    assert_int_equal(info.replicas[0], 2);
    assert_int_equal(info.replicas[1], SELF);
    assert_false(partition_log_high_watermark_tracks_end(log));
    partition_log_close(log);
    assert_false(replica_manager_lookup(f->rm, "a", 2, &info, NULL));

    /* Listeners heard of the hosted partitions, once each, and nothing of a-2. */
    assert_int_equal(f->call_count, 3);
    const struct call *c = find_call(f, "a", 0);
    assert_non_null(c);
    assert_true(c->became_leader);
    assert_int_equal(c->leader_epoch, 0);
    c = find_call(f, "a", 1);
    assert_non_null(c);
    assert_false(c->became_leader);
    assert_non_null(find_call(f, "b", 0));
    assert_null(find_call(f, "a", 2));
}

static void test_leader_epoch_change_and_configs(void **state)
{
    struct fixture *f = *state;
    apply(f, two_topics());
    struct metadata_builder *b = metadata_builder_new(f->image);
    char err[128];
    /* This broker takes over a-1; a-2 changes leader elsewhere. */
    struct metadata_partition_change to_self = {
        .partition_index = 1, .leader = SELF, .isr = (int32_t[]){SELF}, .isr_count = 1};
    struct metadata_partition_change to_three = {.partition_index = 2, .leader = 3};
    assert_int_equal(metadata_builder_change_partition(b, &TOPIC_A, &to_self, err, sizeof err), 0);
    assert_int_equal(metadata_builder_change_partition(b, &TOPIC_A, &to_three, err, sizeof err), 0);
    assert_int_equal(metadata_builder_set_config(b, METADATA_CONFIG_RESOURCE_TOPIC, "a", 1, "retention.ms", 12,
                                                 "123456", 6, err, sizeof err),
                     0);
    apply(f, metadata_builder_finish(b, 2));

    assert_int_equal(f->call_count, 1);
    const struct call *c = find_call(f, "a", 1);
    assert_non_null(c);
    assert_true(c->became_leader);
    assert_int_equal(c->leader_epoch, 1);
    assert_false(has_log(f, "a", 2));

    struct replica_partition_info info;
    struct partition_log *log = NULL;
    assert_true(replica_manager_lookup(f->rm, "a", 1, &info, &log));
    assert_int_equal(info.role, REPLICA_ROLE_LEADER);
    assert_int_equal(info.leader_epoch, 1);
    assert_int_equal(info.partition_epoch, 1);
    assert_int_equal(replica_manager_leader_count(f->rm), 3);
    /* The new epoch starts at the log end; the ISR is this broker alone now. */
    assert_int_equal(partition_log_latest_epoch(log), 1);
    assert_true(partition_log_high_watermark_tracks_end(log));
    struct log_config cfg;
    partition_log_get_config(log, &cfg);
    assert_int_equal(cfg.retention_ms, 123456);
    partition_log_close(log);
    /* Every hosted partition of the topic got the config, b's did not. */
    assert_true(replica_manager_lookup(f->rm, "a", 0, NULL, &log));
    partition_log_get_config(log, &cfg);
    assert_int_equal(cfg.retention_ms, 123456);
    partition_log_close(log);
    assert_true(replica_manager_lookup(f->rm, "b", 0, NULL, &log));
    partition_log_get_config(log, &cfg);
    assert_int_not_equal(cfg.retention_ms, 123456);
    partition_log_close(log);

    /* A config change alone tells listeners nothing. */
    b = metadata_builder_new(f->image);
    assert_int_equal(metadata_builder_set_config(b, METADATA_CONFIG_RESOURCE_TOPIC, "a", 1, "retention.ms", 12,
                                                 "654321", 6, err, sizeof err),
                     0);
    apply(f, metadata_builder_finish(b, 3));
    assert_int_equal(f->call_count, 0);
}

static void test_topic_deletion_removes_logs(void **state)
{
    struct fixture *f = *state;
    apply(f, two_topics());
    struct metadata_builder *b = metadata_builder_new(f->image);
    char err[128];
    assert_int_equal(metadata_builder_remove_topic(b, &TOPIC_A, err, sizeof err), 0);
    apply(f, metadata_builder_finish(b, 2));
    assert_false(has_log(f, "a", 0));
    assert_false(has_log(f, "a", 1));
    assert_true(has_log(f, "b", 0));
    assert_int_equal(replica_manager_hosted_count(f->rm), 1);
    assert_int_equal(replica_manager_leader_count(f->rm), 1);
    assert_false(replica_manager_lookup(f->rm, "a", 0, NULL, NULL));
    /* Listeners heard both hosted partitions go, nothing of a-2. */
    assert_int_equal(f->call_count, 2);
    assert_false(find_call(f, "a", 0)->became_leader);
    assert_false(find_call(f, "a", 1)->became_leader);
    assert_null(find_call(f, "a", 2));
    char path[128];
    snprintf(path, sizeof path, "%s/a-0", f->dir);
    assert_int_not_equal(access(path, F_OK), 0);
}

static void test_reassignment_away_unhosts(void **state)
{
    struct fixture *f = *state;
    apply(f, two_topics());
    struct metadata_builder *b = metadata_builder_new(f->image);
    char err[128];
    struct metadata_partition_change away = {
        .partition_index = 1, .replicas = (int32_t[]){2, 3}, .replica_count = 2, .isr = (int32_t[]){2}, .isr_count = 1};
    assert_int_equal(metadata_builder_change_partition(b, &TOPIC_A, &away, err, sizeof err), 0);
    apply(f, metadata_builder_finish(b, 2));
    assert_false(has_log(f, "a", 1));
    assert_false(replica_manager_lookup(f->rm, "a", 1, NULL, NULL));
    assert_int_equal(f->call_count, 1);
    assert_false(find_call(f, "a", 1)->became_leader);
}

static void append_records(struct partition_log *log, int count)
{
    struct record_batch_builder bb;
    record_batch_builder_init(&bb, 1000);
    for (int i = 0; i < count; i++)
        record_batch_builder_add(&bb, 1000 + i, "k", 1, "v", 1, NULL, 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&bb, &batch, &len), 0);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    free(batch);
}

static void test_high_watermark_by_role(void **state)
{
    struct fixture *f = *state;
    apply(f, two_topics());
    struct partition_log *leader = NULL, *follower = NULL;
    assert_true(replica_manager_lookup(f->rm, "a", 0, NULL, &leader));
    assert_true(replica_manager_lookup(f->rm, "a", 1, NULL, &follower));
    append_records(leader, 4);
    assert_int_equal(partition_log_high_watermark(leader), 4);
    /* A follower's high watermark waits for the leader's word. */
    append_records(follower, 4);
    assert_int_equal(partition_log_high_watermark(follower), 0);
    assert_int_equal(replica_manager_update_high_watermark(f->rm, "a", 1, 3), 3);
    assert_int_equal(partition_log_high_watermark(follower), 3);
    assert_int_equal(replica_manager_update_high_watermark(f->rm, "a", 2, 3), -1);
    partition_log_close(leader);
    partition_log_close(follower);
}

static void test_unregistered_listener_is_not_called(void **state)
{
    struct fixture *f = *state;
    int extra = replica_manager_add_leadership_listener(f->rm, on_leadership, f);
    assert_true(extra > 0);
    apply(f, two_topics());
    assert_int_equal(f->call_count, 6); /* both listeners */
    replica_manager_remove_leadership_listener(f->rm, extra);
    struct metadata_builder *b = metadata_builder_new(f->image);
    char err[128];
    assert_int_equal(metadata_builder_remove_topic(b, &TOPIC_B, err, sizeof err), 0);
    apply(f, metadata_builder_finish(b, 2));
    assert_int_equal(f->call_count, 1);
}

/* A listener added once partitions are hosted (the coordinator runtime
 * starts after the metadata) hears of them at once. */
static void test_late_listener_hears_hosted_partitions(void **state)
{
    struct fixture *f = *state;
    apply(f, two_topics());
    f->call_count = 0;
    int late = replica_manager_add_leadership_listener(f->rm, on_leadership, f);
    assert_true(late > 0);
    assert_int_equal(f->call_count, 3);
    assert_true(find_call(f, "a", 0)->became_leader);
    assert_false(find_call(f, "a", 1)->became_leader);
    assert_true(find_call(f, "b", 0)->became_leader);
    assert_null(find_call(f, "a", 2));
}

/* The broker's wiring: a real store publishes, the manager follows. */
static void test_follows_a_metadata_store(void **state)
{
    struct fixture *f = *state;
    char meta_dir[96];
    snprintf(meta_dir, sizeof meta_dir, "%s/meta", f->dir);
    struct metadata_endpoint endpoint = {"PLAINTEXT", "localhost", 9092, 0};
    struct metadata_store_options opts = {
        .dir = meta_dir,
        .node_id = SELF,
        .cluster_id = "q1Sh-9_ISia_zwGINzRvyQ",
        .endpoints = &endpoint,
        .endpoint_count = 1,
        .default_num_partitions = 2,
        .default_replication_factor = 1,
    };
    struct metadata_store *store;
    char err[256] = "";
    assert_int_equal(mkdir(meta_dir, 0755), 0);
    if (metadata_store_open(&opts, &store, err, sizeof err) != 0)
        fail_msg("open failed: %s", err);
    const struct metadata_image *img = metadata_image_acquire(store);
    replica_manager_on_metadata(f->rm, NULL, img);
    metadata_image_release(img);
    int sub = metadata_store_subscribe(store, replica_manager_on_metadata, f->rm);
    assert_true(sub > 0);

    f->call_count = 0;
    assert_int_equal(metadata_create_topic(store, "orders", -1, -1, NULL, 0, NULL, 0, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_true(has_log(f, "orders", 0));
    assert_true(has_log(f, "orders", 1));
    assert_int_equal(f->call_count, 2);
    assert_true(find_call(f, "orders", 0)->became_leader);
    assert_true(find_call(f, "orders", 1)->became_leader);

    struct metadata_config_kv kv = {"retention.ms", "777"};
    assert_int_equal(metadata_alter_topic_configs(store, "orders", &kv, 1, false, err, sizeof err), KAFKA_ERR_NONE);
    struct partition_log *log = NULL;
    assert_true(replica_manager_lookup(f->rm, "orders", 0, NULL, &log));
    struct log_config cfg;
    partition_log_get_config(log, &cfg);
    assert_int_equal(cfg.retention_ms, 777);
    partition_log_close(log);

    f->call_count = 0;
    assert_int_equal(metadata_delete_topic(store, "orders", NULL, err, sizeof err), KAFKA_ERR_NONE);
    assert_false(has_log(f, "orders", 0));
    assert_false(has_log(f, "orders", 1));
    assert_int_equal(f->call_count, 2);
    metadata_store_unsubscribe(store, sub);
    metadata_store_close(store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hosts_only_partitions_naming_this_broker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leader_epoch_change_and_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_deletion_removes_logs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reassignment_away_unhosts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_high_watermark_by_role, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unregistered_listener_is_not_called, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_listener_hears_hosted_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follows_a_metadata_store, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
