/* fs_util: directory trees, directory sync and atomic replace, including the
 * failures a misconfigured path produces (a component that is a file, a
 * target that is a directory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/test_file.h"
#include "util/fs_util.h"

struct fixture {
    char dir[64];
    char path[512];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/cairn-fs-test-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

static const char *at(struct fixture *f, const char *rel)
{
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, rel);
    return f->path;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void write_file(const char *path, const char *text)
{
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

static void test_mkdir_p_creates_the_tree_and_accepts_existing(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    assert_int_equal(fs_mkdir_p(at(f, "a/b//c/"), err, sizeof err), 0);
    assert_true(is_dir(at(f, "a/b/c")));
    assert_int_equal(fs_mkdir_p(at(f, "a/b/c"), err, sizeof err), 0);
    assert_int_equal(fs_mkdir_p(f->dir, NULL, 0), 0);
    assert_string_equal(err, "");
}

static void test_mkdir_p_through_a_file_names_the_path(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    write_file(at(f, "plain"), "x");
    assert_int_equal(fs_mkdir_p(at(f, "plain/sub/deeper"), err, sizeof err), ENOTDIR);
    /* The message names the component that is no directory. */
    assert_non_null(strstr(err, "/plain'"));
    assert_false(is_dir(at(f, "plain/sub")));
    /* The last component itself being a file is no directory either. */
    err[0] = '\0';
    assert_int_equal(fs_mkdir_p(at(f, "plain"), err, sizeof err), ENOTDIR);
    assert_non_null(strstr(err, at(f, "plain")));
    assert_int_equal(fs_mkdir_p("", err, sizeof err), EINVAL);
}

static void test_fsync_dir(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fs_fsync_dir(f->dir), 0);
    assert_int_equal(fs_fsync_dir(at(f, "missing")), ENOENT);
    write_file(at(f, "plain"), "x");
    assert_int_equal(fs_fsync_dir(at(f, "plain")), ENOTDIR);
    assert_int_equal(fs_fsync_parent_dir(at(f, "plain")), 0);
    assert_int_equal(fs_fsync_parent_dir(at(f, "missing/file")), ENOENT);
    assert_int_equal(fs_fsync_parent_dir("relative-name"), 0);
}

static void test_replace_file_creates_and_replaces(void **state)
{
    struct fixture *f = *state;
    char target[512], tmp[600];
    snprintf(target, sizeof target, "%s", at(f, "state"));
    snprintf(tmp, sizeof tmp, "%s.tmp", target);
    for (int durable = 0; durable <= 1; durable++) {
        assert_int_equal(fs_replace_file(target, "first", 5, durable, NULL, 0), 0);
        char *text = test_read_file(target, NULL);
        assert_string_equal(text, "first");
        free(text);
        assert_int_equal(fs_replace_file(target, "2nd", 3, durable, NULL, 0), 0);
        text = test_read_file(target, NULL);
        assert_string_equal(text, "2nd");
        free(text);
        assert_int_equal(access(tmp, F_OK), -1);
    }
    assert_int_equal(fs_replace_file(target, "", 0, true, NULL, 0), 0);
    size_t len = 1;
    free(test_read_file(target, &len));
    assert_int_equal(len, 0);
}

static void test_replace_file_failures_leave_no_temp_file(void **state)
{
    struct fixture *f = *state;
    char err[512] = "";
    write_file(at(f, "plain"), "x");
    /* The temp file cannot be created: a path component is a file. */
    assert_int_equal(fs_replace_file(at(f, "plain/state"), "data", 4, true, err, sizeof err), ENOTDIR);
    assert_non_null(strstr(err, "plain/state.tmp"));
    /* The temp file is written but cannot replace a directory: it goes. */
    assert_int_equal(mkdir(at(f, "taken"), 0755), 0);
    err[0] = '\0';
    assert_int_equal(fs_replace_file(at(f, "taken"), "data", 4, true, err, sizeof err), EISDIR);
    assert_non_null(strstr(err, "taken"));
    assert_int_equal(access(at(f, "taken.tmp"), F_OK), -1);
    assert_true(is_dir(at(f, "taken")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mkdir_p_creates_the_tree_and_accepts_existing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mkdir_p_through_a_file_names_the_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_file_creates_and_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_file_failures_leave_no_temp_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
