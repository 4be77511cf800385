/* The SDK as a plugin author gets it: install it into a temporary prefix,
 * build sdk/examples/hello_audit with pkg-config (its Makefile) and with
 * CMake (find_package(CairnPlugin)), load each build into cairnd, create a
 * topic and find the ADMIN event in the plugin's output file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rk_helpers.h"

static char work[256];

static void run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0) fail_msg("command failed (%d): %s", rc, cmd);
}

static int setup(void **state)
{
    (void)state;
    snprintf(work, sizeof work, "/tmp/cairn-sdk-XXXXXX");
    if (!mkdtemp(work)) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return strdup("");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

/* Loads <plugin_dir>/hello_audit.so, creates `topic`, checks the event file. */
static void load_and_check(const char *plugin_dir, const char *topic)
{
    char events[400], path_kv[400], file_kv[500];
    snprintf(events, sizeof events, "%s/events-%s.log", work, topic);
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", plugin_dir);
    snprintf(file_kv, sizeof file_kv, "plugin.hello_audit.file=%s", events);
    const char *ov[] = {path_kv, "plugins=hello_audit", file_kv, NULL};
    struct test_broker b;
    memset(&b, 0, sizeof b);
    broker_start(&b, ov);
    rk_create_topic(broker_bootstrap(&b), topic, 2, NULL);
    broker_stop(&b);
    char *text = slurp(events);
    char want[300];
    snprintf(want, sizeof want, "ADMIN principal=User:ANONYMOUS operation=CreateTopics resource=%s success=true error=0",
             topic);
    if (!strstr(text, want)) fprintf(stderr, "event file %s:\n%s\n", events, text);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "\"partitions\":2"));
    free(text);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_sdk_install_and_build(void **state)
{
    (void)state;
    char prefix[400];
    snprintf(prefix, sizeof prefix, "%s/prefix", work);
    run("'%s' --install '%s' --component sdk --prefix '%s' >/dev/null", CMAKE_COMMAND_PATH, CAIRN_BINARY_DIR, prefix);
    char header[500];
    snprintf(header, sizeof header, "%s/include/cairn/plugin.h", prefix);
    assert_int_equal(access(header, R_OK), 0);

    /* pkg-config: the example's own Makefile, in a copy of its folder. */
    run("cp -r '%s/sdk/examples/hello_audit' '%s/pc'", CAIRN_SOURCE_DIR, work);
    run("cd '%s/pc' && PKG_CONFIG_PATH='%s/lib/pkgconfig:%s/lib/x86_64-linux-gnu/pkgconfig' CC='%s' make -s "
        ">/dev/null",
        work, prefix, prefix, C_COMPILER_PATH);
    char so[500];
    snprintf(so, sizeof so, "%s/pc/hello_audit.so", work);
    assert_int_equal(access(so, R_OK), 0);
    /* Hidden visibility: the entry point is the only exported function. */
    run("test \"$(nm -D --defined-only '%s' | awk '$2 == \"T\"' | wc -l)\" = 1", so);

    /* CMake: find_package(CairnPlugin) and cairn_add_plugin. */
    run("cp -r '%s/sdk/examples/hello_audit' '%s/cm'", CAIRN_SOURCE_DIR, work);
    run("cd '%s/cm' && '%s' -S . -B build -DCMAKE_PREFIX_PATH='%s' -DCMAKE_C_COMPILER='%s' >/dev/null && '%s' "
        "--build build >/dev/null",
        work, CMAKE_COMMAND_PATH, prefix, C_COMPILER_PATH, CMAKE_COMMAND_PATH);
    snprintf(so, sizeof so, "%s/cm/build/hello_audit.so", work);
    assert_int_equal(access(so, R_OK), 0);

    char dir[500];
    snprintf(dir, sizeof dir, "%s/pc", work);
    load_and_check(dir, "sdk-pkgconfig");
    snprintf(dir, sizeof dir, "%s/cm/build", work);
    load_and_check(dir, "sdk-cmake");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sdk_install_and_build),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
