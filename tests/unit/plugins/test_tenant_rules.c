/* tenant-limits' rules, compiled in: the entries syntax (and its errors,
 * naming the entry), principal matching (literal, prefix, first match
 * wins) and each cap's check against policy requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tenant_rules.h"

#define TEAM_A                                                                                                         \
    "principal=User:team-a-*,prefix=team-a.:max.partitions.per.topic=4,max.partitions=6,"                              \
    "max.replication.factor=2,max.retention.ms=86400000,max.retention.bytes=1048576"

static void test_parse_and_match(void **state)
{
    (void)state;
    struct tenant_rules rules;
    char err[512] = "";
    assert_int_equal(tenant_rules_parse(" " TEAM_A " ; principal=User:bob,prefix=bob.: ;principal=User:*,prefix=x:",
                                        &rules, err, sizeof err),
                     CAIRN_OK);
    assert_int_equal(rules.count, 3);
    const struct tenant_rule *a = &rules.items[0];
    assert_string_equal(a->principal, "User:team-a-");
    assert_true(a->principal_prefix);
    assert_string_equal(a->topic_prefix, "team-a.");
    assert_true(a->has_cap[TENANT_CAP_PARTITIONS] && a->cap[TENANT_CAP_PARTITIONS] == 6);
    assert_true(a->has_cap[TENANT_CAP_RETENTION_BYTES] && a->cap[TENANT_CAP_RETENTION_BYTES] == 1048576);
    const struct tenant_rule *bob = &rules.items[1];
    assert_false(bob->principal_prefix);
    for (int c = 0; c < TENANT_CAP_COUNT; c++)
        assert_false(bob->has_cap[c]);

    assert_ptr_equal(tenant_rules_match(&rules, "User:team-a-app"), a);
    assert_ptr_equal(tenant_rules_match(&rules, "User:bob"), bob);
    /* Literal: User:bobby is not bob; the catch-all third entry takes it. */
    assert_ptr_equal(tenant_rules_match(&rules, "User:bobby"), &rules.items[2]);
    assert_null(tenant_rules_match(&rules, "Group:x"));
    tenant_rules_free(&rules);

    assert_int_equal(tenant_rules_parse("", &rules, err, sizeof err), CAIRN_OK);
    assert_int_equal(rules.count, 0);
    assert_null(tenant_rules_match(&rules, "User:alice"));
    tenant_rules_free(&rules);
}

static void expect_error(const char *text, const char *want)
{
    struct tenant_rules rules;
    char err[512] = "";
    assert_int_equal(tenant_rules_parse(text, &rules, err, sizeof err), CAIRN_INVALID);
    if (!strstr(err, want))
        fail_msg("parsing '%s': wanted '%s' in '%s'", text, want, err);
    assert_int_equal(rules.count, 0);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("principal=User:a,prefix=a.", "is not <type>:<name>"); /* no caps colon: the principal's is taken */
    expect_error("prefix=a.:max.partitions=1", "needs both principal= and prefix=");
    expect_error("principal=alice,prefix=a.:", "is not <type>:<name>");
    expect_error("principal=User:a,prefix=a.,prefix=b.:", "prefix given twice");
    expect_error("principal=User:a,owner=a.:", "unknown part 'owner'");
    expect_error("principal=User:a,prefix=a.:max.topics=3", "unknown cap 'max.topics'");
    expect_error("principal=User:a,prefix=a.:max.partitions=-1", "not a non-negative integer");
    expect_error("principal=User:a,prefix=a.:max.partitions=1,max.partitions=2", "max.partitions given twice");
    /* The error names the entry. */
    expect_error("principal=User:a,prefix=a.:;principal=User:b,prefix=b.:max.partitions=x", "tenant entry 2");
}

/* count_topics for the tests: the tenant already has 3 partitions. */
static int three_partitions(const struct cairn_policy_request *self, const char *prefix, int64_t *topics,
                            int64_t *partitions)
{
    (void)self;
    assert_string_equal(prefix, "team-a.");
    if (topics)
        *topics = 1;
    *partitions = 3;
    return CAIRN_OK;
}

static int check(const struct tenant_rule *rule, int32_t kind, const char *topic, int32_t partitions, int32_t current,
                 int16_t replication, const char *config, const char *value, char *msg)
{
    struct cairn_policy_config c = {.struct_size = sizeof c, .name = config, .value = value};
    const struct cairn_policy_config *configs[] = {&c};
    struct cairn_policy_request r = {
        .struct_size = sizeof r,
        .kind = kind,
        .topic = topic,
        .partitions = partitions,
        .current_partitions = current,
        .replication_factor = replication,
        .configs = configs,
        .config_count = config ? 1 : 0,
        .count_topics = three_partitions,
    };
    msg[0] = '\0';
    return tenant_rule_check(rule, "User:team-a-app", &r, msg, 512);
}

static void test_caps(void **state)
{
    (void)state;
    struct tenant_rules rules;
    char err[512], msg[512];
    assert_int_equal(tenant_rules_parse(TEAM_A, &rules, err, sizeof err), CAIRN_OK);
    const struct tenant_rule *a = &rules.items[0];
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_TOPIC, "team-a.x", 3, 0, 2, NULL, NULL, msg), CAIRN_OK);
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_TOPIC, "team-a.x", 5, 0, 1, NULL, NULL, msg), CAIRN_INVALID);
    assert_non_null(strstr(msg, "partition count 5 exceeds max.partitions.per.topic=4"));
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_TOPIC, "team-a.x", 4, 0, 1, NULL, NULL, msg), CAIRN_INVALID);
    assert_non_null(strstr(msg, "tenant partition total 7 exceeds max.partitions=6"));
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_TOPIC, "team-a.x", 1, 0, 3, NULL, NULL, msg), CAIRN_INVALID);
    assert_non_null(strstr(msg, "max.replication.factor=2"));
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_TOPIC, "other", 1, 0, 1, NULL, NULL, msg), CAIRN_INVALID);
    assert_non_null(strstr(msg, "outside the prefix 'team-a.'"));
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_TOPIC, "team-a.x", 1, 0, 1, "retention.ms", "-1", msg),
                     CAIRN_INVALID);
    assert_non_null(strstr(msg, "max.retention.ms=86400000"));
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_TOPIC, "team-a.x", 1, 0, 1, "cleanup.policy", "compact", msg),
                     CAIRN_OK);
    /* CreatePartitions: per topic on the new total, the tenant total on what is added. */
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_PARTITIONS, "team-a.x", 5, 2, 1, NULL, NULL, msg), CAIRN_INVALID);
    /* 3 counted (this topic's 1 among them) + 3 added = 6; + 4 = 7. */
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_PARTITIONS, "team-a.x", 4, 1, 1, NULL, NULL, msg), CAIRN_OK);
    assert_int_equal(check(a, CAIRN_POLICY_CREATE_PARTITIONS, "team-a.y", 4, 0, 1, NULL, NULL, msg), CAIRN_INVALID);
    assert_non_null(strstr(msg, "tenant partition total 7 exceeds max.partitions=6"));
    /* AlterConfigs: retention values; a removed key (NULL) is not judged. */
    assert_int_equal(check(a, CAIRN_POLICY_ALTER_CONFIGS, "team-a.x", 4, 4, 1, "retention.bytes", "1048577", msg),
                     CAIRN_INVALID);
    assert_non_null(strstr(msg, "retention.bytes 1048577 exceeds max.retention.bytes=1048576"));
    assert_int_equal(check(a, CAIRN_POLICY_ALTER_CONFIGS, "team-a.x", 4, 4, 1, "retention.bytes", NULL, msg), CAIRN_OK);
    assert_int_equal(check(a, CAIRN_POLICY_ALTER_CONFIGS, "team-a.x", 4, 4, 1, "retention.ms", "3600000", msg),
                     CAIRN_OK);
    /* A kind from a later minor is not judged. */
    assert_int_equal(check(a, 99, "team-a.x", 100, 0, 9, NULL, NULL, msg), CAIRN_OK);
    tenant_rules_free(&rules);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_match),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
