/* ACL bindings in the metadata store: Kafka's validation of bindings and
 * filters, filter matching (ANY, MATCH, null strings), creation that keeps
 * identical bindings once, deletion by id, and bindings that survive a
 * reopen (log replay). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

enum { ANY = 1, MATCH = 2, LITERAL = 3, PREFIXED = 4, TOPIC = 2, GROUP = 3, READ = 3, WRITE = 4, DENY = 2, ALLOW = 3 };

static struct metadata_acl acl(int8_t type, const char *name, int8_t pattern, const char *principal, int8_t op,
                               int8_t perm)
{
    return (struct metadata_acl){.resource_type = type,
                                 .resource_name = (char *)name,
                                 .pattern_type = pattern,
                                 .principal = (char *)principal,
                                 .host = (char *)"*",
                                 .operation = op,
                                 .permission_type = perm};
}

static void test_validation(void **state)
{
    (void)state;
    char err[256];
    struct metadata_acl ok = acl(TOPIC, "t", LITERAL, "User:a", READ, ALLOW);
    assert_int_equal(metadata_acl_validate(&ok, err, sizeof err), KAFKA_ERR_NONE);
    struct metadata_acl bad[] = {
        acl(ANY, "t", LITERAL, "User:a", READ, ALLOW),  acl(9, "t", LITERAL, "User:a", READ, ALLOW),
        acl(TOPIC, "t", MATCH, "User:a", READ, ALLOW),  acl(TOPIC, "t", ANY, "User:a", READ, ALLOW),
        acl(TOPIC, "t", LITERAL, "User:a", ANY, ALLOW), acl(TOPIC, "t", LITERAL, "User:a", 0, ALLOW),
        acl(TOPIC, "t", LITERAL, "User:a", READ, ANY),  acl(TOPIC, "", LITERAL, "User:a", READ, ALLOW),
        acl(TOPIC, "t", LITERAL, "alice", READ, ALLOW),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(metadata_acl_validate(&bad[i], err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    struct metadata_acl_filter f = {ANY, NULL, ANY, NULL, NULL, ANY, ANY};
    assert_int_equal(metadata_acl_filter_validate(&f, err, sizeof err), KAFKA_ERR_NONE);
    f.pattern_type = 0;
    assert_int_equal(metadata_acl_filter_validate(&f, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
    f.pattern_type = ANY;
    f.operation = 0;
    assert_int_equal(metadata_acl_filter_validate(&f, err, sizeof err), KAFKA_ERR_INVALID_REQUEST);
}

static void test_filter_matching(void **state)
{
    (void)state;
    struct metadata_acl lit = acl(TOPIC, "orders", LITERAL, "User:a", READ, ALLOW);
    struct metadata_acl star = acl(TOPIC, "*", LITERAL, "User:a", READ, ALLOW);
    struct metadata_acl pre = acl(TOPIC, "ord", PREFIXED, "User:b", WRITE, DENY);
    struct metadata_acl_filter all = {ANY, NULL, ANY, NULL, NULL, ANY, ANY};
    assert_true(metadata_acl_filter_matches(&all, &lit) && metadata_acl_filter_matches(&all, &pre));
    struct metadata_acl_filter match = {TOPIC, "orders", MATCH, NULL, NULL, ANY, ANY};
    assert_true(metadata_acl_filter_matches(&match, &lit));
    assert_true(metadata_acl_filter_matches(&match, &star));
    assert_true(metadata_acl_filter_matches(&match, &pre));
    match.resource_name = "other";
    assert_false(metadata_acl_filter_matches(&match, &pre));
    assert_true(metadata_acl_filter_matches(&match, &star));
    /* LITERAL and ANY patterns compare names exactly. */
    struct metadata_acl_filter exact = {TOPIC, "orders", ANY, NULL, NULL, ANY, ANY};
    assert_true(metadata_acl_filter_matches(&exact, &lit));
    assert_false(metadata_acl_filter_matches(&exact, &star));
    assert_false(metadata_acl_filter_matches(&exact, &pre));
    struct metadata_acl_filter by_entry = {ANY, NULL, ANY, "User:b", "*", WRITE, DENY};
    assert_true(metadata_acl_filter_matches(&by_entry, &pre));
    assert_false(metadata_acl_filter_matches(&by_entry, &lit));
    struct metadata_acl_filter group = {GROUP, NULL, ANY, NULL, NULL, ANY, ANY};
    assert_false(metadata_acl_filter_matches(&group, &lit));
}

static int32_t count_matching(struct metadata_store *store, const struct metadata_acl_filter *f, struct kafka_uuid *ids)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    int32_t n = 0;
    for (int32_t i = 0; i < img->acl_count; i++)
        if (metadata_acl_filter_matches(f, &img->acls[i])) {
            if (ids)
                ids[n] = img->acls[i].id;
            n++;
        }
    metadata_image_release(img);
    return n;
}

static void test_create_delete_reopen(void **state)
{
    (void)state;
    struct fixture *f = fixture_new("/tmp/cairn-acls-XXXXXX");
    assert_non_null(f);
    open_store(f);
    char err[256] = "";
    struct metadata_acl batch[] = {
        acl(TOPIC, "a", LITERAL, "User:a", READ, ALLOW), acl(TOPIC, "b", PREFIXED, "User:a", WRITE, ALLOW),
        acl(TOPIC, "a", LITERAL, "User:a", READ, ALLOW), /* the same binding: kept once */
    };
    assert_int_equal(metadata_create_acls(f->store, batch, 3, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_create_acls(f->store, batch, 1, err, sizeof err), KAFKA_ERR_NONE);
    struct metadata_acl_filter all = {ANY, NULL, ANY, NULL, NULL, ANY, ANY};
    assert_int_equal(count_matching(f->store, &all, NULL), 2);

    metadata_store_close(f->store);
    open_store(f);
    assert_int_equal(count_matching(f->store, &all, NULL), 2);
    struct kafka_uuid ids[4];
    struct metadata_acl_filter prefixed = {ANY, NULL, PREFIXED, NULL, NULL, ANY, ANY};
    assert_int_equal(count_matching(f->store, &prefixed, ids), 1);
    ids[1] = ids[0]; /* named twice: removed once */
    assert_int_equal(metadata_delete_acls(f->store, ids, 2, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_delete_acls(f->store, ids, 1, err, sizeof err), KAFKA_ERR_NONE); /* gone: no-op */
    assert_int_equal(count_matching(f->store, &all, NULL), 1);
    metadata_store_close(f->store);
    open_store(f);
    assert_int_equal(count_matching(f->store, &all, NULL), 1);
    assert_int_equal(fixture_free(f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_filter_matching),
        cmocka_unit_test(test_create_delete_reopen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
