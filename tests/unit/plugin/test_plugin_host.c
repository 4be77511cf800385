/* The plugin host in-process: value parsing, loading the test plugins,
 * config binding, and the authorize/quota/audit hooks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "metrics/metrics.h"
#include "plugin/plugin_internal.h"

static void test_parse_size(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(plugin_parse_size("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(plugin_parse_size("1234", &v), 0);
    assert_int_equal(v, 1234);
    assert_int_equal(plugin_parse_size("64KiB", &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(plugin_parse_size("2K", &v), 0);
    assert_int_equal(v, 2000);
    assert_int_equal(plugin_parse_size("3M", &v), 0);
    assert_int_equal(v, 3000000);
    assert_int_equal(plugin_parse_size("3MiB", &v), 0);
    assert_int_equal(v, 3u * 1024 * 1024);
    assert_int_equal(plugin_parse_size("1G", &v), 0);
    assert_int_equal(v, 1000000000u);
    assert_int_equal(plugin_parse_size("2GiB", &v), 0);
    assert_int_equal(v, 2ull * 1024 * 1024 * 1024);
    assert_int_not_equal(plugin_parse_size("", &v), 0);
    assert_int_not_equal(plugin_parse_size("-1", &v), 0);
    assert_int_not_equal(plugin_parse_size("12QB", &v), 0);
    assert_int_not_equal(plugin_parse_size("1 KiB", &v), 0);
    assert_int_not_equal(plugin_parse_size("KiB", &v), 0);
    assert_int_not_equal(plugin_parse_size("99999999999999999999", &v), 0);
    assert_int_not_equal(plugin_parse_size("18446744073709551615GiB", &v), 0);

    int64_t i = 0;
    assert_int_equal(plugin_parse_int("-42", &i), 0);
    assert_int_equal(i, -42);
    assert_int_not_equal(plugin_parse_int("42x", &i), 0);
    assert_int_not_equal(plugin_parse_int("", &i), 0);
    bool b = false;
    assert_int_equal(plugin_parse_bool("TRUE", &b), 0);
    assert_true(b);
    assert_int_not_equal(plugin_parse_bool("yes", &b), 0);
}

static struct broker_config *make_config(const char *const *kv)
{
    const char *keys[16], *values[16];
    char copies[16][512];
    size_t n = 0;
    for (; kv[n] && n < 16; n++) {
        snprintf(copies[n], sizeof copies[n], "%s", kv[n]);
        char *eq = strchr(copies[n], '=');
        assert_non_null(eq);
        *eq = '\0';
        keys[n] = copies[n];
        values[n] = eq + 1;
    }
    struct broker_config *cfg = NULL;
    char err[512];
    assert_int_equal(config_build(keys, values, n, &cfg, err, sizeof err), 0);
    return cfg;
}

static int start(const char *const *kv, struct plugin_host **host, char *err, size_t errlen)
{
    struct broker_config *cfg = make_config(kv);
    int rc = plugin_host_start(cfg, 7, "test-cluster", host, err, errlen);
    config_free(cfg);
    return rc;
}

static void test_no_plugins(void **state)
{
    (void)state;
    const char *kv[] = {NULL};
    struct plugin_host *host = (struct plugin_host *)1;
    char err[256] = "";
    assert_int_equal(start(kv, &host, err, sizeof err), 0);
    assert_null(host);
    /* Hooks on no host: everything allowed, no throttle. */
    struct cairn_authz_action action = {
        sizeof action, CAIRN_OP_WRITE, CAIRN_RESOURCE_TOPIC, "t", CAIRN_PATTERN_LITERAL, 1, true, true};
    const struct cairn_authz_action *list[] = {&action};
    uint8_t result = CAIRN_AUTHZ_DENIED;
    plugin_host_authorize(NULL, NULL, list, 1, &result);
    assert_int_equal(result, CAIRN_AUTHZ_ALLOWED);
    assert_int_equal(plugin_host_quota_record(NULL, NULL, CAIRN_QUOTA_PRODUCE, 1.0, 0), 0);
}

static void test_authorize_quota_audit(void **state)
{
    (void)state;
    char audit_path[] = "/tmp/cairn-unit-audit-XXXXXX";
    int fd = mkstemp(audit_path);
    assert_true(fd >= 0);
    close(fd);
    char audit_kv[128];
    snprintf(audit_kv, sizeof audit_kv, "plugin.test_authz.audit.file=%s", audit_path);
    const char *kv[] = {"plugin.path=/nonexistent:" TEST_PLUGIN_DIR,
                        "plugins=test_authz",
                        "plugin.test_authz.deny.topics=secret, other",
                        "plugin.test_authz.throttle.ms=250",
                        audit_kv,
                        NULL};
    struct plugin_host *host = NULL;
    char err[512] = "";
    assert_int_equal(start(kv, &host, err, sizeof err), 0);
    assert_non_null(host);
    assert_int_equal(host->authorizer_count, 1);
    assert_int_equal(host->quota_count, 1);
    assert_int_equal(host->audit_count, 1);

    struct cairn_principal who = {sizeof who, "User", "alice"};
    struct cairn_request_info info = {.struct_size = sizeof info, .principal = &who, .client_id = "c"};
    struct cairn_authz_action a1 = {
        sizeof a1, CAIRN_OP_WRITE, CAIRN_RESOURCE_TOPIC, "secret", CAIRN_PATTERN_LITERAL, 1, true, true};
    struct cairn_authz_action a2 = {sizeof a2, CAIRN_OP_WRITE, CAIRN_RESOURCE_TOPIC, "public", CAIRN_PATTERN_LITERAL, 1,
                                    false,     false};
    struct cairn_authz_action a3 = {sizeof a3, CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, "other", CAIRN_PATTERN_LITERAL, 1,
                                    true,      false};
    const struct cairn_authz_action *list[] = {&a1, &a2, &a3};
    uint8_t results[3];
    plugin_host_authorize(host, &info, list, 3, results);
    assert_int_equal(results[0], CAIRN_AUTHZ_DENIED);
    assert_int_equal(results[1], CAIRN_AUTHZ_ALLOWED);
    assert_int_equal(results[2], CAIRN_AUTHZ_DENIED);

    assert_int_equal(plugin_host_quota_record(host, &info, CAIRN_QUOTA_PRODUCE, 100.0, 0), 250);
    assert_int_equal(plugin_host_quota_record(host, &info, CAIRN_QUOTA_REQUEST, 100.0, 0), 0);

    /* init's submit_blocking job ran on a host thread. */
    bool ran = false;
    for (int i = 0; i < 500 && !ran; i++) {
        char *page = NULL;
        size_t len = 0;
        assert_int_equal(metrics_render(&page, &len), 0);
        ran = strstr(page, "cairn_plugin_test_authz_blocking_runs 1\n") != NULL;
        free(page);
        if (!ran)
            usleep(10000);
    }
    assert_true(ran);

    plugin_host_audit_admin(host, &info, "CreateTopics", CAIRN_RESOURCE_TOPIC, "t1", 0, "{\"partitions\":3}");
    plugin_host_audit_authentication(host, &info, "PLAIN", false, "bad password");
    plugin_host_stop(host);

    FILE *f = fopen(audit_path, "r");
    assert_non_null(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(audit_path);
    /* Only a1 asked to be logged when denied; a3 only when allowed. */
    assert_non_null(strstr(text, "AUTHORIZATION op=- res=secret allowed=0 principal=User:alice"));
    assert_null(strstr(text, "res=public"));
    assert_null(strstr(text, "res=other"));
    assert_non_null(
        strstr(text, "ADMIN op=CreateTopics res=t1 allowed=1 principal=User:alice error=0 details={\"partitions\":3}"));
    assert_non_null(strstr(text, "AUTHENTICATION op=- res=- allowed=0"));

    /* Plugin metrics are exported under cairn_plugin_<name>_. */
    char *page = NULL;
    size_t len = 0;
    assert_int_equal(metrics_render(&page, &len), 0);
    assert_non_null(strstr(page, "cairn_plugin_test_authz_denials_total 2\n"));
    free(page);
}

static void test_errors(void **state)
{
    (void)state;
    struct plugin_host *host = NULL;
    char err[1024];
    const char *missing[] = {"plugin.path=/a:/b", "plugins=absent", NULL};
    assert_int_not_equal(start(missing, &host, err, sizeof err), 0);
    assert_string_equal(err, "plugin 'absent': absent.so not found (searched: /a/absent.so, /b/absent.so)");
    const char *bad_name[] = {"plugins=../evil", NULL};
    assert_int_not_equal(start(bad_name, &host, err, sizeof err), 0);
    assert_non_null(strstr(err, "invalid name"));
    const char *twice[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz,test_authz", NULL};
    assert_int_not_equal(start(twice, &host, err, sizeof err), 0);
    assert_non_null(strstr(err, "listed twice"));
    const char *unknown[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz", "plugin.test_authz.nope=1", NULL};
    assert_int_not_equal(start(unknown, &host, err, sizeof err), 0);
    assert_non_null(strstr(err, "unknown config key plugin.test_authz.nope"));
    const char *bad_int[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz", "plugin.test_authz.throttle.ms=soon",
                             NULL};
    assert_int_not_equal(start(bad_int, &host, err, sizeof err), 0);
    assert_non_null(strstr(err, "invalid value 'soon' for plugin.test_authz.throttle.ms: expected an integer"));
    assert_null(host);
}

static void test_print_docs(void **state)
{
    (void)state;
    const char *kv[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz,test_required", NULL};
    struct broker_config *cfg = make_config(kv);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    char err[512] = "";
    /* test_required lacks its required key: docs need no valid config. */
    assert_int_equal(plugin_host_print_docs(cfg, out, err, sizeof err), 0);
    fclose(out);
    assert_non_null(strstr(text, "## test_authz 1.0"));
    assert_non_null(strstr(text, "| `plugin.test_authz.buffer.size` | size | 64KiB | Exercises the size parser. |"));
    assert_non_null(strstr(text, "| `plugin.test_required.endpoint` | string | (required) |"));
    free(text);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_no_plugins),
        cmocka_unit_test(test_authorize_quota_audit),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_print_docs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
