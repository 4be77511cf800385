/* Metadata store: bootstrap, controller operations and their errors,
 * replay after reopen, recovery from a corrupt tail, unknown records,
 * listeners, and start-up time with 1,000 topics. */
#include <dirent.h>
#include <fcntl.h>
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

#include "metadata/metadata_log.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

static int validate_numeric_retention(void *ctx, const char *key, const char *value, char *err, size_t errlen)
{
    (void)ctx;
    if (strcmp(key, "retention.ms") == 0) {
        char *end;
        strtoll(value, &end, 10);
        if (*value == '\0' || *end != '\0') {
            snprintf(err, errlen, "Invalid value %s for configuration retention.ms", value);
            return -1;
        }
        return 0;
    }
    if (strcmp(key, "cleanup.policy") == 0 || strcmp(key, "segment.bytes") == 0)
        return 0;
    snprintf(err, errlen, "Unknown topic config name: %s", key);
    return -1;
}

static void reopen_store(struct fixture *f)
{
    metadata_store_close(f->store);
    f->store = NULL;
    open_store(f);
}

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-metadata-XXXXXX");
    if (!f)
        return -1;
    f->opts.default_num_partitions = 3;
    f->opts.default_replication_factor = 1;
    f->opts.validate_topic_config = validate_numeric_retention;
    open_store(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    return fixture_free(*state);
}

static void test_bootstrap_registers_this_broker(void **state)
{
    struct fixture *f = *state;
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_int_equal(img->metadata_version, METADATA_VERSION_LEVEL);
    assert_string_equal(img->cluster_id, "q1Sh-9_ISia_zwGINzRvyQ");
    assert_int_equal(img->controller_id, 1);
    const struct metadata_broker *br = metadata_image_broker(img, 1);
    assert_non_null(br);
    assert_false(br->fenced);
    assert_int_equal(br->endpoint_count, 1);
    assert_string_equal(br->endpoints[0].host, "localhost");
    assert_int_equal(br->endpoints[0].port, 9092);
    int64_t epoch = br->epoch;
    int64_t last = img->last_offset;
    struct kafka_uuid incarnation = br->incarnation_id;
    metadata_image_release(img);

    /* Same endpoints: nothing new is written. */
    reopen_store(f);
    img = metadata_image_acquire(f->store);
    assert_int_equal(img->last_offset, last);
    assert_int_equal(metadata_image_broker(img, 1)->epoch, epoch);
    metadata_image_release(img);

    /* Changed endpoint: a new registration with a fresh incarnation, unfenced. */
    f->endpoints[0].port = 19092;
    reopen_store(f);
    img = metadata_image_acquire(f->store);
    br = metadata_image_broker(img, 1);
    assert_int_equal(br->endpoints[0].port, 19092);
    assert_true(br->epoch > epoch);
    assert_false(br->fenced);
    assert_memory_not_equal(&br->incarnation_id, &incarnation, sizeof(incarnation));
    assert_true(img->last_offset > last);
    metadata_image_release(img);
}

/* What the controller does for another broker's BrokerRegistration and
 * heartbeats: registered fenced, unfenced, fenced, at its epoch only. */
static void test_register_and_fence_another_broker(void **state)
{
    struct fixture *f = *state;
    struct metadata_endpoint ep = {"PLAINTEXT", "host-2", 9093, 0};
    char err[256] = "";
    int64_t epoch = -1;
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, "rack-b", NULL, true, &epoch, err, sizeof err),
                     KAFKA_ERR_NONE);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_broker *br = metadata_image_broker(img, 2);
    assert_non_null(br);
    assert_true(br->fenced);
    assert_int_equal(br->epoch, epoch);
    assert_string_equal(br->rack, "rack-b");
    assert_int_equal(metadata_image_live_broker_count(img), 1);
    int64_t last = img->last_offset;
    metadata_image_release(img);

    /* The same registration again writes nothing and keeps the epoch. */
    int64_t again = -1;
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, "rack-b", NULL, true, &again, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_int_equal(again, epoch);
    img = metadata_image_acquire(f->store);
    assert_int_equal(img->last_offset, last);
    metadata_image_release(img);

    assert_int_equal(metadata_set_broker_fenced(f->store, 2, epoch + 1, false, err, sizeof err),
                     KAFKA_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(metadata_set_broker_fenced(f->store, 3, -1, false, err, sizeof err), KAFKA_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(metadata_set_broker_fenced(f->store, 2, epoch, false, err, sizeof err), KAFKA_ERR_NONE);
    img = metadata_image_acquire(f->store);
    assert_false(metadata_image_broker(img, 2)->fenced);
    assert_int_equal(metadata_image_live_broker_count(img), 2);
    metadata_image_release(img);

    /* Fenced (a lapsed session), and the state survives a replay. */
    assert_int_equal(metadata_set_broker_fenced(f->store, 2, epoch, true, err, sizeof err), KAFKA_ERR_NONE);
    reopen_store(f);
    img = metadata_image_acquire(f->store);
    assert_true(metadata_image_broker(img, 2)->fenced);
    assert_false(metadata_image_broker(img, 1)->fenced);
    metadata_image_release(img);
    assert_true(metadata_store_is_controller(f->store));
}

/* A restarted broker is a new incarnation: a new RegisterBrokerRecord, a
 * new epoch and fenced again once the previous one's session has lapsed
 * (even before the controller fenced it), while a retry of the same
 * incarnation keeps its epoch. */
static void test_new_incarnation_registers_again(void **state)
{
    struct fixture *f = *state;
    struct metadata_endpoint ep = {"PLAINTEXT", "host-2", 9093, 0};
    char err[256] = "";
    struct metadata_incarnation first = {{{1, 2, 3}}, -1, true}, second = {{{4, 5, 6}}, -1, false};
    int64_t epoch = -1, again = -1, next = -1;
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &first, true, &epoch, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_int_equal(metadata_set_broker_fenced(f->store, 2, epoch, false, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &first, true, &again, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_int_equal(again, epoch);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_false(metadata_image_broker(img, 2)->fenced);
    metadata_image_release(img);

    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &second, true, &next, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_true(next > epoch);
    img = metadata_image_acquire(f->store);
    const struct metadata_broker *br = metadata_image_broker(img, 2);
    assert_true(br->fenced);
    assert_int_equal(br->epoch, next);
    assert_memory_equal(&br->incarnation_id, &second.id, sizeof second.id);
    metadata_image_release(img);
    /* The previous incarnation's epoch is stale now. */
    assert_int_equal(metadata_set_broker_fenced(f->store, 2, epoch, false, err, sizeof err),
                     KAFKA_ERR_UNKNOWN_MEMBER_ID);
}

static void expect_registered(struct fixture *f, int64_t epoch, const struct kafka_uuid *id, bool fenced)
{
    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_broker *br = metadata_image_broker(img, 2);
    assert_non_null(br);
    assert_int_equal(br->epoch, epoch);
    assert_memory_equal(&br->incarnation_id, id, sizeof *id);
    assert_int_equal(br->fenced, fenced);
    metadata_image_release(img);
}

/* Kafka's controller rule: a new incarnation is refused
 * (DUPLICATE_BROKER_REGISTRATION) while the registered one is unfenced
 * with a valid session, unless it names the registered epoch as its
 * PreviousBrokerEpoch (a clean shutdown); once the registered one is
 * fenced (its session lapsed), it is accepted. */
static void test_new_incarnation_refused_while_session_valid(void **state)
{
    struct fixture *f = *state;
    struct metadata_endpoint ep = {"PLAINTEXT", "host-2", 9093, 0};
    char err[256] = "";
    struct metadata_incarnation first = {{{1}}, -1, true}, second = {{{2}}, -1, true}, third = {{{3}}, -1, true};
    int64_t epoch = -1, got = 7;
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &first, false, &epoch, err, sizeof err),
                     KAFKA_ERR_NONE);
    expect_registered(f, epoch, &first.id, false);

    /* Refused, without a record: the registered one keeps its epoch,
     * its incarnation and its place. */
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &second, true, &got, err, sizeof err),
                     KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION);
    assert_int_equal(got, -1);
    assert_non_null(strstr(err, "session"));
    second.previous_epoch = epoch - 1; /* not the registered epoch */
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &second, true, &got, err, sizeof err),
                     KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION);
    expect_registered(f, epoch, &first.id, false);

    /* The registered epoch as PreviousBrokerEpoch: accepted at once. */
    second.previous_epoch = epoch;
    int64_t second_epoch = -1;
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &second, true, &second_epoch, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_true(second_epoch > epoch);
    expect_registered(f, second_epoch, &second.id, true);
    assert_int_equal(metadata_set_broker_fenced(f->store, 2, second_epoch, false, err, sizeof err), KAFKA_ERR_NONE);

    /* Refused while the second runs; accepted once the controller has
     * fenced it for its lapsed session. */
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &third, true, &got, err, sizeof err),
                     KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION);
    expect_registered(f, second_epoch, &second.id, false);
    assert_int_equal(metadata_set_broker_fenced(f->store, 2, second_epoch, true, err, sizeof err), KAFKA_ERR_NONE);
    int64_t third_epoch = -1;
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &third, true, &third_epoch, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_true(third_epoch > second_epoch);
    expect_registered(f, third_epoch, &third.id, true);
}

static void expect_create_error(struct fixture *f, const char *name, int32_t partitions, int16_t rf,
                                const struct metadata_config_kv *configs, int32_t config_count, int16_t expected)
{
    char err[256] = "";
    struct kafka_uuid id;
    int16_t rc = metadata_create_topic(f->store, name, partitions, rf, NULL, 0, configs, config_count, false, &id, err,
                                       sizeof(err));
    if (rc != expected)
        fail_msg("create '%s': got %d (%s), expected %d", name, rc, err, expected);
    if (expected != KAFKA_ERR_NONE)
        assert_true(err[0] != '\0');
}

static void test_create_topic_errors(void **state)
{
    struct fixture *f = *state;
    char long_name[251];
    memset(long_name, 'a', 250);
    long_name[250] = '\0';
    expect_create_error(f, "", 1, 1, NULL, 0, KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    expect_create_error(f, ".", 1, 1, NULL, 0, KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    expect_create_error(f, "..", 1, 1, NULL, 0, KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    expect_create_error(f, long_name, 1, 1, NULL, 0, KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    long_name[249] = '\0'; /* 249 characters is the limit, still legal */
    expect_create_error(f, long_name, 1, 1, NULL, 0, KAFKA_ERR_NONE);
    expect_create_error(f, "has space", 1, 1, NULL, 0, KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    expect_create_error(f, "slash/name", 1, 1, NULL, 0, KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    /* Its partition 0 would be the metadata log's own directory. */
    expect_create_error(f, LOG_MANAGER_METADATA_TOPIC, 1, 1, NULL, 0, KAFKA_ERR_INVALID_REQUEST);
    expect_create_error(f, "ok.Name_1-x", 1, 1, NULL, 0, KAFKA_ERR_NONE);
    expect_create_error(f, "ok.Name_1-x", 1, 1, NULL, 0, KAFKA_ERR_TOPIC_ALREADY_EXISTS);
    expect_create_error(f, "ok_Name.1-x", 1, 1, NULL, 0, KAFKA_ERR_INVALID_TOPIC_EXCEPTION); /* collides */
    expect_create_error(f, "zero-parts", 0, 1, NULL, 0, KAFKA_ERR_INVALID_PARTITIONS);
    expect_create_error(f, "neg-parts", -5, 1, NULL, 0, KAFKA_ERR_INVALID_PARTITIONS);
    expect_create_error(f, "zero-rf", 1, 0, NULL, 0, KAFKA_ERR_INVALID_REPLICATION_FACTOR);
    expect_create_error(f, "rf-too-big", 1, 3, NULL, 0, KAFKA_ERR_INVALID_REPLICATION_FACTOR);
    struct metadata_config_kv bad_value[] = {{"retention.ms", "soon"}};
    expect_create_error(f, "bad-config", 1, 1, bad_value, 1, KAFKA_ERR_INVALID_CONFIG);
    struct metadata_config_kv bad_key[] = {{"no.such.key", "1"}};
    expect_create_error(f, "bad-key", 1, 1, bad_key, 1, KAFKA_ERR_INVALID_CONFIG);
    struct metadata_config_kv null_value[] = {{"retention.ms", NULL}};
    expect_create_error(f, "null-config", 1, 1, null_value, 1, KAFKA_ERR_INVALID_CONFIG);

    char err[256];
    int32_t unknown_broker[] = {7};
    struct metadata_replica_assignment bad_assign[] = {{0, unknown_broker, 1}};
    assert_int_equal(
        metadata_create_topic(f->store, "manual", -1, -1, bad_assign, 1, NULL, 0, false, NULL, err, sizeof(err)),
        KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    int32_t twice[] = {1, 1};
    struct metadata_replica_assignment dup_assign[] = {{0, twice, 2}};
    assert_int_equal(
        metadata_create_topic(f->store, "manual", -1, -1, dup_assign, 1, NULL, 0, false, NULL, err, sizeof(err)),
        KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    int32_t one[] = {1};
    struct metadata_replica_assignment gap_assign[] = {{0, one, 1}, {2, one, 1}};
    assert_int_equal(
        metadata_create_topic(f->store, "manual", -1, -1, gap_assign, 2, NULL, 0, false, NULL, err, sizeof(err)),
        KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    struct metadata_replica_assignment good_assign[] = {{0, one, 1}, {1, one, 1}};
    assert_int_equal(
        metadata_create_topic(f->store, "manual", 2, -1, good_assign, 2, NULL, 0, false, NULL, err, sizeof(err)),
        KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(
        metadata_create_topic(f->store, "manual", -1, -1, good_assign, 2, NULL, 0, false, NULL, err, sizeof(err)),
        KAFKA_ERR_NONE);

    /* None of the failures left a trace; validate_only creates nothing. */
    struct kafka_uuid id;
    assert_int_equal(metadata_create_topic(f->store, "dry-run", 4, 1, NULL, 0, NULL, 0, true, &id, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_int_equal(img->topic_count, 3);
    assert_null(metadata_image_topic_by_name(img, "dry-run", 7));
    assert_int_equal(metadata_image_topic_by_name(img, "manual", 6)->partition_count, 2);
    metadata_image_release(img);
}

static void test_topic_lifecycle_and_replay(void **state)
{
    struct fixture *f = *state;
    char err[256];
    struct kafka_uuid orders_id, audit_id;
    struct metadata_config_kv cfg[] = {{"retention.ms", "60000"}, {"cleanup.policy", "compact"}};
    assert_int_equal(
        metadata_create_topic(f->store, "orders", -1, -1, NULL, 0, cfg, 2, false, &orders_id, err, sizeof(err)),
        KAFKA_ERR_NONE);
    assert_int_equal(
        metadata_create_topic(f->store, "audit", 1, 1, NULL, 0, NULL, 0, false, &audit_id, err, sizeof(err)),
        KAFKA_ERR_NONE);
    assert_int_equal(
        metadata_create_topic(f->store, "__consumer_offsets", 2, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err)),
        KAFKA_ERR_NONE);

    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_topic *orders = metadata_image_topic_by_name(img, "orders", 6);
    assert_non_null(orders);
    assert_memory_equal(&orders->topic_id, &orders_id, 16);
    assert_int_equal(orders->partition_count, 3); /* num.partitions default */
    for (int32_t p = 0; p < 3; p++) {
        const struct metadata_partition *part = metadata_topic_partition(orders, p);
        assert_non_null(part);
        assert_int_equal(part->leader, 1);
        assert_int_equal(part->leader_epoch, 0);
        assert_int_equal(part->replica_count, 1);
        assert_int_equal(part->isr_count, 1);
    }
    assert_string_equal(metadata_topic_config(orders, "retention.ms"), "60000");
    assert_true(metadata_image_topic_by_name(img, "__consumer_offsets", 18)->is_internal);
    /* Iteration is sorted by name. */
    assert_string_equal(img->topics[0]->name, "__consumer_offsets");
    assert_string_equal(img->topics[1]->name, "audit");
    assert_string_equal(img->topics[2]->name, "orders");
    metadata_image_release(img);

    assert_int_equal(metadata_create_partitions(f->store, "orders", 3, NULL, 0, false, err, sizeof(err)),
                     KAFKA_ERR_INVALID_PARTITIONS);
    assert_int_equal(metadata_create_partitions(f->store, "orders", 2, NULL, 0, false, err, sizeof(err)),
                     KAFKA_ERR_INVALID_PARTITIONS);
    assert_int_equal(metadata_create_partitions(f->store, "nope", 5, NULL, 0, false, err, sizeof(err)),
                     KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(metadata_create_partitions(f->store, "orders", 5, NULL, 0, true, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    assert_int_equal(metadata_create_partitions(f->store, "orders", 5, NULL, 0, false, err, sizeof(err)),
                     KAFKA_ERR_NONE);

    struct metadata_config_kv alter[] = {{"retention.ms", "120000"}, {"cleanup.policy", NULL}};
    assert_int_equal(metadata_alter_topic_configs(f->store, "orders", alter, 2, false, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    struct metadata_config_kv bad[] = {{"retention.ms", "x"}};
    assert_int_equal(metadata_alter_topic_configs(f->store, "orders", bad, 1, false, err, sizeof(err)),
                     KAFKA_ERR_INVALID_CONFIG);
    assert_int_equal(metadata_alter_topic_configs(f->store, "nope", alter, 1, false, err, sizeof(err)),
                     KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);

    assert_int_equal(metadata_delete_topic(f->store, "nope", NULL, err, sizeof(err)),
                     KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    struct kafka_uuid missing = {{9, 9, 9}};
    assert_int_equal(metadata_delete_topic(f->store, NULL, &missing, err, sizeof(err)), KAFKA_ERR_UNKNOWN_TOPIC_ID);
    assert_int_equal(metadata_delete_topic(f->store, NULL, &audit_id, err, sizeof(err)), KAFKA_ERR_NONE);

    img = metadata_image_acquire(f->store);
    orders = metadata_image_topic_by_name(img, "orders", 6);
    assert_int_equal(orders->partition_count, 5);
    assert_non_null(metadata_topic_partition(orders, 4));
    assert_string_equal(metadata_topic_config(orders, "retention.ms"), "120000");
    assert_null(metadata_topic_config(orders, "cleanup.policy"));
    assert_null(metadata_image_topic_by_name(img, "audit", 5));
    assert_null(metadata_image_topic_by_id(img, &audit_id));
    /* A deleted name can be created again, with a new id. */
    struct kafka_uuid again;
    assert_int_equal(metadata_create_topic(f->store, "audit", 1, 1, NULL, 0, NULL, 0, false, &again, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    assert_memory_not_equal(&again, &audit_id, 16);

    /* Replay rebuilds exactly the published image. */
    const struct metadata_image *before = metadata_image_acquire(f->store);
    reopen_store(f);
    const struct metadata_image *after = metadata_image_acquire(f->store);
    assert_true(metadata_image_equal(before, after));
    assert_int_equal(before->last_offset, after->last_offset);
    assert_false(metadata_image_equal(img, after)); /* and the check can tell images apart */
    metadata_image_release(img);
    metadata_image_release(before);
    metadata_image_release(after);
}

/* The path of the (single) metadata segment. */
static void segment_path(struct fixture *f, char *out, size_t outlen)
{
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/%s", f->dir, METADATA_LOG_TOPIC_DIR);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    out[0] = '\0';
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 4 && strcmp(e->d_name + n - 4, ".log") == 0)
            snprintf(out, outlen, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    assert_true(out[0] != '\0');
}

static void test_corrupt_tail_is_truncated(void **state)
{
    struct fixture *f = *state;
    char err[256];
    assert_int_equal(metadata_create_topic(f->store, "kept", 2, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    char path[512];
    segment_path(f, path, sizeof(path));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    off_t good_size = st.st_size;
    assert_int_equal(metadata_create_topic(f->store, "lost", 2, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    const struct metadata_image *kept_state = metadata_image_acquire(f->store);
    metadata_store_close(f->store);
    f->store = NULL;

    /* Flip a byte inside the last batch's records: its CRC no longer matches. */
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > good_size + 70);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    assert_int_equal(pread(fd, &byte, 1, good_size + 65), 1);
    byte ^= 0xff;
    assert_int_equal(pwrite(fd, &byte, 1, good_size + 65), 1);
    /* And some torn garbage after it. */
    uint8_t junk[37];
    memset(junk, 0xab, sizeof(junk));
    assert_int_equal(pwrite(fd, junk, sizeof(junk), st.st_size), (ssize_t)sizeof(junk));
    close(fd);

    open_store(f);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_non_null(metadata_image_topic_by_name(img, "kept", 4));
    assert_null(metadata_image_topic_by_name(img, "lost", 4));
    assert_non_null(metadata_image_broker(img, 1));
    metadata_image_release(img);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, good_size);

    /* The store keeps working after recovery. */
    assert_int_equal(metadata_create_topic(f->store, "lost", 2, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    metadata_image_release(kept_state);
}

static void test_unknown_record_type_is_skipped(void **state)
{
    struct fixture *f = *state;
    metadata_store_close(f->store);
    f->store = NULL;

    char err[256];
    struct metadata_log *log;
    assert_int_equal(metadata_log_open(f->dir, &log, err, sizeof(err)), 0);
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 128), 0);
    uint8_t body[] = {0x42, 0x42, 0x42};
    metadata_record_write_raw(&w, 250, 3, body, sizeof(body));
    size_t unknown_len = w.len;
    struct kafka_uuid id = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
    metadata_record_write_topic(&w, "after-unknown", &id);
    struct metadata_log_entry entries[2] = {{w.buf, unknown_len}, {w.buf + unknown_len, w.len - unknown_len}};
    int64_t base;
    assert_int_equal(metadata_log_append(log, entries, 2, 1, &base, err, sizeof(err)), 0);
    kafka_writer_free(&w);
    metadata_log_close(log);

    open_store(f);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, "after-unknown", 13);
    assert_non_null(t);
    assert_memory_equal(&t->topic_id, &id, 16);
    metadata_image_release(img);
}

struct listener_log {
    int calls;
    int created, deleted, changed;
};

static void on_publish(void *ctx, const struct metadata_image *old_image, const struct metadata_image *new_image)
{
    struct listener_log *l = ctx;
    struct metadata_delta d;
    assert_int_equal(metadata_delta_compute(old_image, new_image, &d), 0);
    l->calls++;
    l->created += d.created_count;
    l->deleted += d.deleted_count;
    l->changed += d.changed_count;
    metadata_delta_free(&d);
}

static void test_listeners_see_deltas(void **state)
{
    struct fixture *f = *state;
    char err[256];
    struct listener_log l = {0};
    int id = metadata_store_subscribe(f->store, on_publish, &l);
    assert_true(id > 0);
    assert_int_equal(metadata_create_topic(f->store, "a", 1, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err)), 0);
    assert_int_equal(metadata_create_topic(f->store, "b", 1, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err)), 0);
    assert_int_equal(metadata_create_topic(f->store, "a", 1, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err)),
                     KAFKA_ERR_TOPIC_ALREADY_EXISTS);
    assert_int_equal(metadata_create_partitions(f->store, "a", 4, NULL, 0, false, err, sizeof(err)), 0);
    assert_int_equal(metadata_delete_topic(f->store, "b", NULL, err, sizeof(err)), 0);
    assert_int_equal(l.calls, 4);
    assert_int_equal(l.created, 2);
    assert_int_equal(l.changed, 1);
    assert_int_equal(l.deleted, 1);
    metadata_store_unsubscribe(f->store, id);
    assert_int_equal(metadata_delete_topic(f->store, "a", NULL, err, sizeof(err)), 0);
    assert_int_equal(l.calls, 4);
}

static void test_thousand_topics_startup(void **state)
{
    struct fixture *f = *state;
    char err[256];
    char name[32];
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "topic-%04d", i);
        int16_t rc = metadata_create_topic(f->store, name, 1, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err));
        if (rc != KAFKA_ERR_NONE)
            fail_msg("create %s: %d %s", name, rc, err);
    }
    int64_t t1 = clock_mono_ns();
    const struct metadata_image *before = metadata_image_acquire(f->store);
    metadata_store_close(f->store);
    f->store = NULL;
    int64_t t2 = clock_mono_ns();
    open_store(f);
    int64_t t3 = clock_mono_ns();
    const struct metadata_image *after = metadata_image_acquire(f->store);
    assert_int_equal(after->topic_count, 1000);
    assert_true(metadata_image_equal(before, after));
    assert_non_null(metadata_image_topic_by_name(after, "topic-0999", 10));
    printf("# 1000 topics x 1 partition: create %.1f ms (%.2f ms each, fsync included), reopen %.1f ms\n",
           (double)(t1 - t0) / 1e6, (double)(t1 - t0) / 1e9, (double)(t3 - t2) / 1e6);
    assert_true(t3 - t2 < 1000000000LL);
    metadata_image_release(before);
    metadata_image_release(after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bootstrap_registers_this_broker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_and_fence_another_broker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_incarnation_registers_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_incarnation_refused_while_session_valid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_lifecycle_and_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_tail_is_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_record_type_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listeners_see_deltas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thousand_topics_startup, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
