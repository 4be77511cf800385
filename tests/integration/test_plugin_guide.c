/* docs/plugin-guide.md as a reader uses it:
 * - every ```properties block of the guide is started as cairnd's config,
 *   as written except for machine-specific values: plugin.path points at
 *   the installed plugins and the SDK examples built from the installed
 *   SDK, paths under /var/log/ into the test's directory, the metrics
 *   listener on a free port, syslog_audit's socket into the test's
 *   directory; an audit file it names must then receive events, and
 *   `cairnd --config <file> --print-plugin-docs` (the command the guide
 *   gives) must list every configured plugin;
 * - `cmake --install` into a temporary prefix installs cairnd with the
 *   shipped plugins under <libdir>/cairn/plugins, and the installed cairnd
 *   loads one with no plugin.path, from a copy of the prefix at another
 *   place (so neither the build tree nor the configured prefix can be where
 *   it found it).
 * The guide's SDK build commands (pkg-config, find_package) are run by
 * test_sdk.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "rk_helpers.h"

#define MAX_LINES 64

static char work[256];

static void run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("command failed (%d): %s", rc, cmd);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf)
        return NULL;
    buf[got] = '\0';
    if (len)
        *len = got;
    return buf;
}

/* The installed prefix, made once by test_install_has_plugins and used by
 * the guide's examples (plugin.path points at its plugins). */
static char prefix[512];

static void install_prefix(void)
{
    if (prefix[0])
        return;
    snprintf(prefix, sizeof prefix, "%s/prefix", work);
    run("'%s' --install '%s' --prefix '%s' >/dev/null", CMAKE_COMMAND_PATH, CAIRN_BINARY_DIR, prefix);
    /* The SDK examples the guide configures, built from the installed SDK. */
    const char *examples[] = {"hello_audit", "prefix_authorizer", "syslog_audit"};
    run("mkdir -p '%s/examples'", work);
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
        run("cp -r '%s/share/cairn/sdk-examples/%s' '%s/ex-%s' && cd '%s/ex-%s' && "
            "PKG_CONFIG_PATH='%s/lib/pkgconfig:%s/lib/x86_64-linux-gnu/pkgconfig' CC='%s' make -s >/dev/null && "
            "cp %s.so '%s/examples/'",
            prefix, examples[i], work, examples[i], work, examples[i], prefix, prefix, C_COMPILER_PATH, examples[i],
            work);
}

/* <prefix>/<libdir>/cairn/plugins, whichever libdir GNUInstallDirs chose. */
static void installed_plugin_dir(const char *root, char *out, size_t outlen)
{
    const char *libdirs[] = {"lib", "lib64", "lib/x86_64-linux-gnu"};
    for (size_t i = 0; i < sizeof libdirs / sizeof libdirs[0]; i++) {
        snprintf(out, outlen, "%s/%s/cairn/plugins/audit.so", root, libdirs[i]);
        if (access(out, R_OK) == 0) {
            snprintf(out, outlen, "%s/%s/cairn/plugins", root, libdirs[i]);
            return;
        }
    }
    fail_msg("no audit.so under %s/<libdir>/cairn/plugins", root);
}

/* One line of a guide example, with the machine-specific value replaced. */
static char *substitute(const char *line, const char *plugin_dir, int metrics_port)
{
    char out[1024];
    const char *eq = strchr(line, '=');
    if (!eq)
        fail_msg("guide example line without '=': %s", line);
    int key_len = (int)(eq - line);
    const char *value = eq + 1;
    if (strncmp(line, "plugin.path=", 12) == 0)
        snprintf(out, sizeof out, "plugin.path=%s:%s/examples", plugin_dir, work);
    else if (strncmp(value, "/var/log/", 9) == 0)
        snprintf(out, sizeof out, "%.*s=%s/%s", key_len, line, work, strrchr(value, '/') + 1);
    else if (strncmp(line, "metrics.http.listener=", 22) == 0)
        snprintf(out, sizeof out, "metrics.http.listener=127.0.0.1:%d", metrics_port);
    else
        snprintf(out, sizeof out, "%s", line);
    return strdup(out);
}

/* Starts every ```properties block of the guide; returns how many ran. */
static int run_properties_blocks(const char *guide, const char *plugin_dir)
{
    int blocks = 0;
    const char *p = guide;
    while ((p = strstr(p, "```properties\n")) != NULL) {
        p += strlen("```properties\n");
        const char *end = strstr(p, "```");
        assert_non_null(end);
        char *lines[MAX_LINES + 1] = {0};
        int n = 0;
        int metrics_port = harness_free_port();
        char cfg_path[512];
        snprintf(cfg_path, sizeof cfg_path, "%s/guide-%d.properties", work, blocks);
        FILE *cfg = fopen(cfg_path, "w");
        assert_non_null(cfg);
        for (const char *l = p; l < end && n < MAX_LINES;) {
            const char *nl = memchr(l, '\n', (size_t)(end - l));
            size_t len = nl ? (size_t)(nl - l) : (size_t)(end - l);
            if (len > 0 && l[0] != '#') {
                char raw[1024];
                snprintf(raw, sizeof raw, "%.*s", (int)len, l);
                lines[n] = substitute(raw, plugin_dir, metrics_port);
                fprintf(cfg, "%s\n", lines[n]);
                n++;
            }
            l += len + 1;
        }
        /* Where this machine keeps things the example leaves to defaults:
         * the plugins (installed and built examples), the syslog socket. */
        int original = n;
        bool has_path = false;
        for (int i = 0; i < n; i++)
            has_path |= strncmp(lines[i], "plugin.path=", 12) == 0;
        if (!has_path && n < MAX_LINES)
            lines[n++] = substitute("plugin.path=", plugin_dir, metrics_port);
        char sock[600];
        snprintf(sock, sizeof sock, "plugin.syslog_audit.socket.path=%s/syslog.sock", work);
        if (strstr(p, "syslog_audit") && strstr(p, "syslog_audit") < end && n < MAX_LINES)
            lines[n++] = strdup(sock);
        for (int i = original; i < n; i++)
            fprintf(cfg, "%s\n", lines[i]);
        fclose(cfg);
        /* The guide's command lists every configured plugin's keys. */
        char docs[600];
        snprintf(docs, sizeof docs, "%s/guide-%d.docs", work, blocks);
        run("'%s' --config '%s' --print-plugin-docs > '%s'", broker_binary(), cfg_path, docs);
        char *listed = slurp(docs, NULL);
        assert_non_null(listed);
        for (int i = 0; i < n; i++) {
            if (strncmp(lines[i], "plugins=", 8) != 0)
                continue;
            char names[256];
            snprintf(names, sizeof names, "%s", lines[i] + 8);
            for (char *save = NULL, *name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
                char heading[300];
                snprintf(heading, sizeof heading, "## %s ", name);
                if (!strstr(listed, heading))
                    fail_msg("--print-plugin-docs for guide example %d does not list %s", blocks, name);
            }
        }
        free(listed);

        struct test_broker b;
        memset(&b, 0, sizeof b);
        broker_start(&b, (const char *const *)lines);
        char topic[64];
        snprintf(topic, sizeof topic, "guide-%d", blocks);
        for (int i = 0; i < n; i++) {
            /* A file the example names must receive the audit events. */
            const char *path = strstr(lines[i], ".file.path=");
            if (!path)
                continue;
            rk_create_topic(broker_bootstrap(&b), topic, 1, NULL);
            char *events = NULL;
            for (int tries = 0; tries < 100; tries++) {
                free(events);
                events = slurp(path + strlen(".file.path="), NULL);
                if (events && strstr(events, topic))
                    break;
                usleep(50 * 1000);
            }
            if (!events || !strstr(events, topic))
                fail_msg("the audit file of guide example %d does not name %s", blocks, topic);
            free(events);
        }
        broker_mark_passed(&b);
        broker_cleanup(&b);
        for (int i = 0; i < n; i++)
            free(lines[i]);
        blocks++;
        p = end + 3;
    }
    return blocks;
}

static void test_install_has_plugins(void **state)
{
    (void)state;
    install_prefix();
    char dir[700];
    installed_plugin_dir(prefix, dir, sizeof dir);
    const char *shipped[] = {"audit", "quota", "auth-sasl", "acl-authorizer", "auth-mtls", "tenant-limits"};
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++)
        run("test -f '%s/%s.so'", dir, shipped[i]);

    /* Moved elsewhere, the installed cairnd finds its plugins beside it. */
    char moved[512];
    snprintf(moved, sizeof moved, "%s/moved", work);
    run("cp -a '%s' '%s'", prefix, moved);
    char cairnd[600], events[600], data[600];
    snprintf(cairnd, sizeof cairnd, "%s/bin/cairnd", moved);
    snprintf(events, sizeof events, "%s/installed-audit.log", work);
    snprintf(data, sizeof data, "%s/installed-data", work);
    int port = harness_free_port();
    run("'%s' --override plugins=audit --override 'plugin.audit.file.path=%s' --override 'log.dirs=%s' "
        "--override 'listeners=PLAINTEXT://127.0.0.1:%d' > '%s/installed.out' 2>&1 & echo $! > '%s/installed.pid'",
        cairnd, events, data, port, work, work);
    bool listening = false;
    char out_path[600];
    snprintf(out_path, sizeof out_path, "%s/installed.out", work);
    for (int i = 0; i < 200 && !listening; i++) {
        char *out = slurp(out_path, NULL);
        listening = out && strstr(out, "listening on");
        if (out && strstr(out, "start-up failed"))
            fail_msg("installed cairnd did not start:\n%s", out);
        free(out);
        usleep(50 * 1000);
    }
    run("kill $(cat '%s/installed.pid')", work);
    char *out = slurp(out_path, NULL);
    if (!listening || !strstr(out, "plugin"))
        fail_msg("installed cairnd output:\n%s", out ? out : "(none)");
    /* The plugin it loaded is the moved copy's. */
    char from[600];
    snprintf(from, sizeof from, "from %s/", moved);
    if (!strstr(out, from))
        fail_msg("installed cairnd did not load audit from under %s:\n%s", moved, out);
    free(out);
}

static void test_guide_examples_run(void **state)
{
    (void)state;
    install_prefix();
    char dir[700];
    installed_plugin_dir(prefix, dir, sizeof dir);
    char *guide = slurp(CAIRN_SOURCE_DIR "/docs/plugin-guide.md", NULL);
    assert_non_null(guide);
    assert_true(run_properties_blocks(guide, dir) >= 1);
    /* Section 1 counts the installed headers right. */
    char count_line[128];
    int headers = 0;
    for (const char *h = strstr(guide, "| `"); h && h < strstr(guide, "## 2."); h = strstr(h + 1, "| `"))
        if (strstr(h, ".h`") && strstr(h, ".h`") < strchr(h, '\n'))
            headers++;
    char ls[700];
    snprintf(ls, sizeof ls, "test \"$(ls '%s/include/cairn' | wc -l)\" = %d", prefix, headers);
    run("%s", ls);
    const char *words[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
    assert_true(headers < 11);
    snprintf(count_line, sizeof count_line, "the %s headers in", words[headers]);
    if (!strstr(guide, count_line))
        fail_msg("section 1 does not say '%s'", count_line);
    free(guide);
}

static int setup(void **state)
{
    (void)state;
    snprintf(work, sizeof work, "/tmp/cairn-guide-XXXXXX");
    return mkdtemp(work) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install_has_plugins),
        cmocka_unit_test(test_guide_examples_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
