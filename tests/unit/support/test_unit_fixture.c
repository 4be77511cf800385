/* The shared fixture itself: the dir it makes and removes, the topic config
 * check its metadata store applies, and what survives a reopen. */
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

#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "protocol/generated/errors.h"
#include "support/unit_fixture.h"

static bool path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_file(const char *path)
{
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
}

static bool topic_exists(struct unit_fixture *f, const char *name)
{
    const struct metadata_image *img = metadata_image_acquire(f->metadata);
    bool found = img && metadata_image_topic_by_name(img, name, strlen(name)) != NULL;
    if (img)
        metadata_image_release(img);
    return found;
}

static void test_destroy_removes_nested_dirs_but_not_link_targets(void **state)
{
    (void)state;
    struct unit_fixture f;
    assert_int_equal(unit_fixture_init(&f, "cairn-unit-fixture"), 0);
    char dir[sizeof f.dir];
    snprintf(dir, sizeof dir, "%s", f.dir);
    assert_true(path_exists(dir));
    assert_false(unit_fixture_is_open(&f));

    /* Outside the fixture: must survive through a link inside it. */
    char outside[] = "/tmp/cairn-unit-fixture-outside-XXXXXX";
    assert_non_null(mkdtemp(outside));
    char kept[128];
    snprintf(kept, sizeof kept, "%s/kept", outside);
    write_file(kept);

    char path[256];
    snprintf(path, sizeof path, "%s/a", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/a/b", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/a/b/file", dir);
    write_file(path);
    snprintf(path, sizeof path, "%s/a/link", dir);
    assert_int_equal(symlink(outside, path), 0);

    assert_int_equal(unit_fixture_destroy(&f), 0);
    assert_false(path_exists(dir));
    assert_true(path_exists(kept));
    assert_int_equal(unlink(kept), 0);
    assert_int_equal(rmdir(outside), 0);
    /* A second destroy has nothing left to do. */
    assert_int_equal(unit_fixture_destroy(&f), 0);
}

static void test_store_checks_topic_configs(void **state)
{
    (void)state;
    struct unit_fixture f;
    assert_int_equal(unit_fixture_init(&f, "cairn-unit-fixture"), 0);
    unit_fixture_open(&f);
    assert_true(unit_fixture_is_open(&f));
    char err[256] = "";
    const struct metadata_config_kv bad = {"cleanup.policy", "sometimes"};
    assert_int_not_equal(metadata_create_topic(f.metadata, "t", 1, 1, NULL, 0, &bad, 1, false, NULL, err, sizeof err),
                         KAFKA_ERR_NONE);
    assert_false(topic_exists(&f, "t"));
    const struct metadata_config_kv good = {"cleanup.policy", "compact"};
    assert_int_equal(metadata_create_topic(f.metadata, "t", 1, 1, NULL, 0, &good, 1, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_true(topic_exists(&f, "t"));
    assert_int_equal(unit_fixture_destroy(&f), 0);
    assert_false(unit_fixture_is_open(&f));
}

static void test_reopen_keeps_topics_and_logs(void **state)
{
    (void)state;
    struct unit_fixture f;
    assert_int_equal(unit_fixture_init(&f, "cairn-unit-fixture"), 0);
    unit_fixture_open(&f);
    char err[256] = "";
    assert_int_equal(metadata_create_topic(f.metadata, "t", 1, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    struct partition_log *log = NULL;
    assert_int_equal(log_manager_create(f.logs, "t", 0, NULL, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    partition_log_close(log);
    char log_path[192];
    snprintf(log_path, sizeof log_path, "%s/t-0", f.dir);
    assert_true(path_exists(log_path));

    unit_fixture_reopen(&f);
    assert_true(topic_exists(&f, "t"));
    assert_int_equal(log_manager_partition_count(f.logs), 1);
    log = log_manager_get(f.logs, "t", 0);
    assert_non_null(log);
    partition_log_close(log);
    assert_int_equal(unit_fixture_destroy(&f), 0);
}

static void test_logs_in_another_dir(void **state)
{
    (void)state;
    struct unit_fixture f;
    assert_int_equal(unit_fixture_init(&f, "cairn-unit-fixture"), 0);
    char other[160];
    snprintf(other, sizeof other, "%s/other", f.dir);
    unit_fixture_open_logs_in(&f, other);
    char err[256] = "";
    struct partition_log *log = NULL;
    assert_int_equal(log_manager_create(f.logs, "t", 0, NULL, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    partition_log_close(log);
    char path[192];
    snprintf(path, sizeof path, "%s/t-0", other);
    assert_true(path_exists(path));
    snprintf(path, sizeof path, "%s/t-0", f.dir);
    assert_false(path_exists(path));
    assert_int_equal(unit_fixture_destroy(&f), 0);
}

/* What a test's own fixture looks like: the shared part first. */
struct outer_fixture {
    struct unit_fixture stores;
    int extra;
};

static void test_setup_and_teardown_for_cmocka(void **state)
{
    (void)state;
    void *fixture = NULL;
    assert_int_equal(unit_fixture_setup(&fixture, sizeof(struct outer_fixture), "cairn-unit-fixture"), 0);
    struct outer_fixture *outer = fixture;
    assert_non_null(outer);
    assert_int_equal(outer->extra, 0);
    char dir[sizeof outer->stores.dir];
    snprintf(dir, sizeof dir, "%s", outer->stores.dir);
    assert_true(path_exists(dir));
    unit_fixture_open(&outer->stores);
    assert_true(unit_fixture_is_open(&outer->stores));
    assert_int_equal(unit_fixture_teardown(outer), 0);
    assert_false(path_exists(dir));
    /* A size too small to hold the shared part is refused. */
    fixture = NULL;
    assert_int_equal(unit_fixture_setup(&fixture, sizeof(struct unit_fixture) - 1, "cairn-unit-fixture"), -1);
    assert_null(fixture);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_destroy_removes_nested_dirs_but_not_link_targets),
        cmocka_unit_test(test_store_checks_topic_configs),
        cmocka_unit_test(test_reopen_keeps_topics_and_logs),
        cmocka_unit_test(test_logs_in_another_dir),
        cmocka_unit_test(test_setup_and_teardown_for_cmocka),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
