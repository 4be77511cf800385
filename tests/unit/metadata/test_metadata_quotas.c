/* Client quotas in the metadata store: Kafka's checks of entities, keys and
 * values; AlterClientQuotas writing only changes (validate_only writing
 * nothing); DescribeClientQuotas filters (exact, default, specified,
 * strict); quotas surviving a log replay and a snapshot load. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "metadata/metadata_quota.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-mdquota-XXXXXX");
    if (!f)
        return -1;
    f->opts.snapshot_bytes = -1;
    open_store(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    return fixture_free(*state);
}

/* An entity from "type=name" pairs; a name "<default>" is the default. */
static int16_t entity(struct metadata_quota_entity *e, const char *a, const char *b, char *err, size_t errlen)
{
    memset(e, 0, sizeof(*e));
    const char *pairs[2] = {a, b};
    static char names[2][64];
    for (int i = 0; i < 2 && pairs[i]; i++) {
        const char *eq = strchr(pairs[i], '=');
        snprintf(names[i], sizeof names[i], "%s", eq + 1);
        const char *name = strcmp(names[i], "<default>") == 0 ? NULL : names[i];
        int16_t rc = metadata_quota_entity_add(e, pairs[i], (size_t)(eq - pairs[i]), name, err, errlen);
        if (rc != KAFKA_ERR_NONE)
            return rc;
    }
    return metadata_quota_entity_check(e, err, errlen);
}

static void test_entity_and_value_checks(void **state)
{
    (void)state;
    char err[256];
    struct metadata_quota_entity e;
    assert_int_equal(entity(&e, "user=alice", "client-id=app", err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(entity(&e, "user=<default>", NULL, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(entity(&e, "ip=10.0.0.1", NULL, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(entity(&e, "ip=::1", NULL, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(entity(&e, "group=x", NULL, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_string_equal(err, "Unhandled client quota entity type: group");
    assert_int_equal(entity(&e, "user=a", "user=b", err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(entity(&e, "user=", NULL, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_string_equal(err, "Empty user not supported");
    assert_int_equal(entity(&e, "ip=not-an-address", NULL, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(entity(&e, "user=a", "ip=10.0.0.1", err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_non_null(strstr(err, "may not be combined with an IP"));
    assert_int_equal(entity(&e, NULL, NULL, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);

    assert_int_equal(entity(&e, "client-id=app", NULL, err, sizeof err), KAFKA_ERR_NONE);
    struct metadata_quota_op ok[] = {{"producer_byte_rate", 1024, false},
                                     {"consumer_byte_rate", 1e6, false},
                                     {"request_percentage", 12.5, false},
                                     {"controller_mutation_rate", 0.5, false},
                                     {"no_such_key", 0, true}};
    for (int i = 0; i < 4; i++)
        assert_int_equal(metadata_quota_check_op(&e, &ok[i], err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_quota_check_op(&e, &ok[4], err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_string_equal(err, "Invalid configuration key no_such_key");
    struct metadata_quota_op bad[] = {{"producer_byte_rate", -5, false},
                                      {"producer_byte_rate", 0, false},
                                      {"producer_byte_rate", 10.5, false},
                                      {"connection_creation_rate", 5, false},
                                      {"request_percentage", -1, false}};
    for (int i = 0; i < 5; i++)
        assert_int_equal(metadata_quota_check_op(&e, &bad[i], err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(metadata_quota_check_op(&e, &bad[0], err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_string_equal(err, "Quota producer_byte_rate must be greater than 0");

    /* ip entities take connection_creation_rate only. */
    assert_int_equal(entity(&e, "ip=<default>", NULL, err, sizeof err), KAFKA_ERR_NONE);
    struct metadata_quota_op conn = {"connection_creation_rate", 10, false};
    assert_int_equal(metadata_quota_check_op(&e, &conn, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_quota_check_op(&e, &ok[0], err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
}

static void alter(struct fixture *f, const char *a, const char *b, const struct metadata_quota_op *ops, int32_t n,
                  bool validate_only, int16_t want)
{
    char err[256] = "";
    struct metadata_quota_alteration alt;
    memset(&alt, 0, sizeof alt);
    assert_int_equal(entity(&alt.entity, a, b, err, sizeof err), KAFKA_ERR_NONE);
    alt.ops = ops;
    alt.op_count = n;
    assert_int_equal(metadata_alter_client_quotas(f->store, &alt, 1, validate_only, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(alt.error_code, want);
}

/* The value of (entity, key) in the current image, or -1. */
static double value_of(struct fixture *f, const char *a, const char *b, const char *key)
{
    char err[256];
    struct metadata_quota_entity e;
    assert_int_equal(entity(&e, a, b, err, sizeof err), KAFKA_ERR_NONE);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    int32_t at = metadata_image_quota_find(img, &e, key);
    double v = at >= 0 ? img->quotas[at].value : -1;
    metadata_image_release(img);
    return v;
}

static void test_alter_writes_changes_only(void **state)
{
    struct fixture *f = *state;
    struct metadata_quota_op set[] = {{"producer_byte_rate", 1000, false}, {"request_percentage", 50, false}};
    alter(f, "user=alice", "client-id=app", set, 2, true, KAFKA_ERR_NONE);
    assert_true(value_of(f, "user=alice", "client-id=app", "producer_byte_rate") < 0);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    int64_t before = img->last_offset;
    metadata_image_release(img);

    alter(f, "user=alice", "client-id=app", set, 2, false, KAFKA_ERR_NONE);
    assert_true(value_of(f, "user=alice", "client-id=app", "producer_byte_rate") == 1000);
    assert_true(value_of(f, "user=alice", "client-id=app", "request_percentage") == 50);
    img = metadata_image_acquire(f->store);
    assert_int_equal(img->last_offset, before + 2);
    before = img->last_offset;
    metadata_image_release(img);

    /* The same values again, and a removal of an unset key: nothing written. */
    struct metadata_quota_op same[] = {{"producer_byte_rate", 1000, false}, {"consumer_byte_rate", 0, true}};
    alter(f, "user=alice", "client-id=app", same, 2, false, KAFKA_ERR_NONE);
    img = metadata_image_acquire(f->store);
    assert_int_equal(img->last_offset, before);
    metadata_image_release(img);

    /* A bad op fails the whole entry. */
    struct metadata_quota_op mixed[] = {{"producer_byte_rate", 5, false}, {"bogus", 1, false}};
    alter(f, "user=alice", "client-id=app", mixed, 2, false, KAFKA_ERR_INVALID_REQUEST);
    assert_true(value_of(f, "user=alice", "client-id=app", "producer_byte_rate") == 1000);

    struct metadata_quota_op del[] = {{"producer_byte_rate", 0, true}, {"request_percentage", 0, true}};
    alter(f, "user=alice", "client-id=app", del, 2, false, KAFKA_ERR_NONE);
    img = metadata_image_acquire(f->store);
    assert_int_equal(img->quota_count, 0);
    metadata_image_release(img);
}

static bool filter_matches(const char *a, const char *b, int8_t ta, int8_t tb, const char *ma, const char *mb,
                           bool strict, const char *ea, const char *eb)
{
    char err[256];
    struct metadata_quota_filter f;
    metadata_quota_filter_init(&f, strict);
    if (a)
        assert_int_equal(metadata_quota_filter_add(&f, a, strlen(a), ta, ma, err, sizeof err), KAFKA_ERR_NONE);
    if (b)
        assert_int_equal(metadata_quota_filter_add(&f, b, strlen(b), tb, mb, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_quota_filter_check(&f, err, sizeof err), KAFKA_ERR_NONE);
    struct metadata_quota_entity e;
    assert_int_equal(entity(&e, ea, eb, err, sizeof err), KAFKA_ERR_NONE);
    return metadata_quota_filter_matches(&f, &e);
}

static void test_describe_filters(void **state)
{
    (void)state;
    enum { EXACT = 0, DEFAULT = 1, SPECIFIED = 2 };
    /* exact */
    assert_true(filter_matches("user", NULL, EXACT, 0, "alice", NULL, false, "user=alice", NULL));
    assert_true(filter_matches("user", NULL, EXACT, 0, "alice", NULL, false, "user=alice", "client-id=x"));
    assert_false(filter_matches("user", NULL, EXACT, 0, "alice", NULL, true, "user=alice", "client-id=x"));
    assert_false(filter_matches("user", NULL, EXACT, 0, "alice", NULL, false, "user=bob", NULL));
    assert_false(filter_matches("user", NULL, EXACT, 0, "alice", NULL, false, "user=<default>", NULL));
    /* default */
    assert_true(filter_matches("user", NULL, DEFAULT, 0, NULL, NULL, false, "user=<default>", NULL));
    assert_false(filter_matches("user", NULL, DEFAULT, 0, NULL, NULL, false, "user=alice", NULL));
    /* specified: any part of that type, the default included */
    assert_true(filter_matches("client-id", NULL, SPECIFIED, 0, NULL, NULL, false, "client-id=x", NULL));
    assert_true(filter_matches("client-id", NULL, SPECIFIED, 0, NULL, NULL, false, "client-id=<default>", NULL));
    assert_false(filter_matches("client-id", NULL, SPECIFIED, 0, NULL, NULL, false, "user=alice", NULL));
    /* two components, strict */
    assert_true(
        filter_matches("user", "client-id", EXACT, SPECIFIED, "alice", NULL, true, "user=alice", "client-id=x"));
    assert_false(filter_matches("user", "client-id", EXACT, SPECIFIED, "alice", NULL, true, "user=alice", NULL));
    /* no components: everything, or with strict nothing */
    assert_true(filter_matches(NULL, NULL, 0, 0, NULL, NULL, false, "ip=10.0.0.1", NULL));
    assert_false(filter_matches(NULL, NULL, 0, 0, NULL, NULL, true, "ip=10.0.0.1", NULL));

    char err[256];
    struct metadata_quota_filter f;
    metadata_quota_filter_init(&f, false);
    assert_int_equal(metadata_quota_filter_add(&f, "user", 4, EXACT, NULL, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(metadata_quota_filter_add(&f, "user", 4, DEFAULT, "x", err, sizeof err),
                     KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(metadata_quota_filter_add(&f, "user", 4, 7, NULL, err, sizeof err), KAFKA_ERR_UNSUPPORTED_VERSION);
    assert_int_equal(metadata_quota_filter_add(&f, "topic", 5, DEFAULT, NULL, err, sizeof err),
                     KAFKA_ERR_UNSUPPORTED_VERSION);
    assert_int_equal(metadata_quota_filter_add(&f, "", 0, DEFAULT, NULL, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(metadata_quota_filter_add(&f, "user", 4, DEFAULT, NULL, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_quota_filter_add(&f, "user", 4, DEFAULT, NULL, err, sizeof err),
                     KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(metadata_quota_filter_add(&f, "ip", 2, SPECIFIED, NULL, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_quota_filter_check(&f, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
}

static void test_quotas_survive_replay_and_snapshot(void **state)
{
    struct fixture *f = *state;
    metadata_store_close(f->store);
    f->opts.snapshot_bytes = 1; /* a snapshot after every commit */
    open_store(f);
    struct metadata_quota_op p[] = {{"producer_byte_rate", 2048, false}};
    struct metadata_quota_op c[] = {{"connection_creation_rate", 7, false}};
    alter(f, "user=<default>", "client-id=app", p, 1, false, KAFKA_ERR_NONE);
    alter(f, "client-id=<default>", NULL, p, 1, false, KAFKA_ERR_NONE);
    alter(f, "ip=10.1.2.3", NULL, c, 1, false, KAFKA_ERR_NONE);
    const struct metadata_image *live = metadata_image_acquire(f->store);
    assert_int_equal(live->quota_count, 3);

    close_store(f);
    f->opts.snapshot_bytes = -1;
    open_store(f);
    struct metadata_load_stats stats;
    metadata_store_load_stats(f->store, &stats);
    assert_int_equal(stats.snapshot_end_offset, live->last_offset + 1);
    const struct metadata_image *loaded = metadata_image_acquire(f->store);
    assert_true(metadata_image_equal(live, loaded));
    assert_true(value_of(f, "ip=10.1.2.3", NULL, "connection_creation_rate") == 7);
    assert_true(value_of(f, "user=<default>", "client-id=app", "producer_byte_rate") == 2048);
    metadata_image_release(loaded);
    metadata_image_release(live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entity_and_value_checks),
        cmocka_unit_test(test_describe_filters),
        cmocka_unit_test_setup_teardown(test_alter_writes_changes_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quotas_survive_replay_and_snapshot, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
