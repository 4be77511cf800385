/* The ACL authorizer's matching rules (plugins/acl-authorizer/acl_index.c):
 * literal, prefixed and wildcard resources, User:* and host matching, ALL
 * and the implied operations, DENY over ALLOW, the no-ACL default, and
 * changes by id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "acl_index.h"

static int next_id;

static struct cairn_acl_binding make(int32_t type, const char *name, int32_t pattern, const char *principal,
                                     const char *host, int32_t op, int32_t perm)
{
    struct cairn_acl_binding b = {sizeof b, {0}, type, name, pattern, principal, host, op, perm};
    next_id++;
    memcpy(b.id, &next_id, sizeof next_id);
    return b;
}

static void add(struct acl_index *idx, int32_t type, const char *name, int32_t pattern, const char *principal,
                const char *host, int32_t op, int32_t perm)
{
    struct cairn_acl_binding b = make(type, name, pattern, principal, host, op, perm);
    assert_int_equal(acl_index_add(idx, &b), 0);
}

static bool topic(struct acl_index *idx, const char *principal, int32_t op, const char *name)
{
    return acl_index_allows(idx, principal, "10.0.0.1", op, CAIRN_RESOURCE_TOPIC, name, false);
}

static void test_literal_prefixed_wildcard(void **state)
{
    (void)state;
    struct acl_index *idx = acl_index_new();
    add(idx, CAIRN_RESOURCE_TOPIC, "orders", CAIRN_PATTERN_LITERAL, "User:alice", "*", CAIRN_OP_READ,
        CAIRN_PERMISSION_ALLOW);
    add(idx, CAIRN_RESOURCE_TOPIC, "team-a.", CAIRN_PATTERN_PREFIXED, "User:bob", "*", CAIRN_OP_WRITE,
        CAIRN_PERMISSION_ALLOW);
    add(idx, CAIRN_RESOURCE_TOPIC, "*", CAIRN_PATTERN_LITERAL, "User:carol", "*", CAIRN_OP_READ,
        CAIRN_PERMISSION_ALLOW);
    assert_true(topic(idx, "User:alice", CAIRN_OP_READ, "orders"));
    assert_false(topic(idx, "User:alice", CAIRN_OP_READ, "orders2"));
    assert_false(topic(idx, "User:alice", CAIRN_OP_WRITE, "orders"));
    assert_true(topic(idx, "User:bob", CAIRN_OP_WRITE, "team-a.x"));
    assert_true(topic(idx, "User:bob", CAIRN_OP_WRITE, "team-a."));
    assert_false(topic(idx, "User:bob", CAIRN_OP_WRITE, "team-a"));
    assert_false(topic(idx, "User:bob", CAIRN_OP_WRITE, "team-b.x"));
    /* The literal "*" covers every topic, and only topics. */
    assert_true(topic(idx, "User:carol", CAIRN_OP_READ, "anything"));
    assert_false(acl_index_allows(idx, "User:carol", "h", CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, "anything", false));
    /* A PREFIXED "*" is a prefix like any other, not the wildcard. */
    add(idx, CAIRN_RESOURCE_GROUP, "*", CAIRN_PATTERN_PREFIXED, "User:dave", "*", CAIRN_OP_READ,
        CAIRN_PERMISSION_ALLOW);
    assert_false(acl_index_allows(idx, "User:dave", "h", CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, "g", false));
    assert_true(acl_index_allows(idx, "User:dave", "h", CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, "*g", false));
    acl_index_free(idx);
}

static void test_principal_and_host(void **state)
{
    (void)state;
    struct acl_index *idx = acl_index_new();
    add(idx, CAIRN_RESOURCE_TOPIC, "t", CAIRN_PATTERN_LITERAL, "User:*", "10.0.0.1", CAIRN_OP_READ,
        CAIRN_PERMISSION_ALLOW);
    assert_true(topic(idx, "User:anyone", CAIRN_OP_READ, "t"));
    assert_false(acl_index_allows(idx, "User:anyone", "10.0.0.2", CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, "t", false));
    /* Kafka's wildcard principal User:* matches principals of any type. */
    assert_true(topic(idx, "Group:ops", CAIRN_OP_READ, "t"));
    /* A named principal matches only itself. */
    add(idx, CAIRN_RESOURCE_TOPIC, "n", CAIRN_PATTERN_LITERAL, "User:alice", "*", CAIRN_OP_READ,
        CAIRN_PERMISSION_ALLOW);
    assert_false(topic(idx, "User:alice2", CAIRN_OP_READ, "n"));
    assert_false(topic(idx, "Group:alice", CAIRN_OP_READ, "n"));
    acl_index_free(idx);
}

static void test_operations(void **state)
{
    (void)state;
    struct acl_index *idx = acl_index_new();
    add(idx, CAIRN_RESOURCE_TOPIC, "r", CAIRN_PATTERN_LITERAL, "User:u", "*", CAIRN_OP_READ, CAIRN_PERMISSION_ALLOW);
    add(idx, CAIRN_RESOURCE_TOPIC, "ac", CAIRN_PATTERN_LITERAL, "User:u", "*", CAIRN_OP_ALTER_CONFIGS,
        CAIRN_PERMISSION_ALLOW);
    add(idx, CAIRN_RESOURCE_TOPIC, "all", CAIRN_PATTERN_LITERAL, "User:u", "*", CAIRN_OP_ALL, CAIRN_PERMISSION_ALLOW);
    add(idx, CAIRN_RESOURCE_TOPIC, "c", CAIRN_PATTERN_LITERAL, "User:u", "*", CAIRN_OP_CREATE, CAIRN_PERMISSION_ALLOW);
    assert_true(topic(idx, "User:u", CAIRN_OP_DESCRIBE, "r"));          /* READ implies DESCRIBE */
    assert_false(topic(idx, "User:u", CAIRN_OP_DESCRIBE_CONFIGS, "r")); /* but not DESCRIBE_CONFIGS */
    assert_true(topic(idx, "User:u", CAIRN_OP_DESCRIBE_CONFIGS, "ac"));
    assert_false(topic(idx, "User:u", CAIRN_OP_DESCRIBE, "ac"));
    assert_false(topic(idx, "User:u", CAIRN_OP_DESCRIBE, "c")); /* CREATE implies nothing */
    assert_true(topic(idx, "User:u", CAIRN_OP_DELETE, "all"));
    assert_true(topic(idx, "User:u", CAIRN_OP_IDEMPOTENT_WRITE, "all"));
    acl_index_free(idx);
}

static void test_deny_wins(void **state)
{
    (void)state;
    struct acl_index *idx = acl_index_new();
    add(idx, CAIRN_RESOURCE_TOPIC, "*", CAIRN_PATTERN_LITERAL, "User:u", "*", CAIRN_OP_ALL, CAIRN_PERMISSION_ALLOW);
    add(idx, CAIRN_RESOURCE_TOPIC, "secret", CAIRN_PATTERN_PREFIXED, "User:*", "*", CAIRN_OP_READ,
        CAIRN_PERMISSION_DENY);
    add(idx, CAIRN_RESOURCE_TOPIC, "locked", CAIRN_PATTERN_LITERAL, "User:u", "*", CAIRN_OP_ALL, CAIRN_PERMISSION_DENY);
    assert_true(topic(idx, "User:u", CAIRN_OP_READ, "open"));
    assert_false(topic(idx, "User:u", CAIRN_OP_READ, "secret-1"));
    /* A DENY of READ implies no DENY of DESCRIBE. */
    assert_true(topic(idx, "User:u", CAIRN_OP_DESCRIBE, "secret-1"));
    assert_false(topic(idx, "User:u", CAIRN_OP_DESCRIBE, "locked"));
    acl_index_free(idx);
}

static void test_no_acl_default(void **state)
{
    (void)state;
    struct acl_index *idx = acl_index_new();
    assert_false(acl_index_allows(idx, "User:u", "h", CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, "t", false));
    assert_true(acl_index_allows(idx, "User:u", "h", CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, "t", true));
    /* Any binding on the resource, whoever it names, turns the default off. */
    add(idx, CAIRN_RESOURCE_TOPIC, "t", CAIRN_PATTERN_LITERAL, "User:other", "*", CAIRN_OP_READ,
        CAIRN_PERMISSION_ALLOW);
    assert_false(acl_index_allows(idx, "User:u", "h", CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, "t", true));
    assert_true(acl_index_allows(idx, "User:u", "h", CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, "t2", true));
    acl_index_free(idx);
}

static void test_changes_by_id(void **state)
{
    (void)state;
    struct acl_index *idx = acl_index_new();
    struct cairn_acl_binding b = make(CAIRN_RESOURCE_TRANSACTIONAL_ID, "tx-", CAIRN_PATTERN_PREFIXED, "User:u", "*",
                                      CAIRN_OP_WRITE, CAIRN_PERMISSION_ALLOW);
    assert_int_equal(acl_index_add(idx, &b), 0);
    assert_int_equal(acl_index_add(idx, &b), 0); /* idempotent */
    assert_int_equal(acl_index_count(idx), 1);
    assert_true(acl_index_allows(idx, "User:u", "h", CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID, "tx-1", false));
    acl_index_remove(idx, &b);
    acl_index_remove(idx, &b);
    assert_int_equal(acl_index_count(idx), 0);
    assert_false(acl_index_allows(idx, "User:u", "h", CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID, "tx-1", false));
    /* Many prefixes: the table grows and every one is still found. */
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "p%d.", i);
        add(idx, CAIRN_RESOURCE_TOPIC, name, CAIRN_PATTERN_PREFIXED, "User:u", "*", CAIRN_OP_READ,
            CAIRN_PERMISSION_ALLOW);
    }
    for (int i = 0; i < 5000; i += 7) {
        snprintf(name, sizeof name, "p%d.topic", i);
        assert_true(topic(idx, "User:u", CAIRN_OP_READ, name));
    }
    assert_false(topic(idx, "User:u", CAIRN_OP_READ, "p5000.topic"));
    acl_index_clear(idx);
    assert_false(topic(idx, "User:u", CAIRN_OP_READ, "p1.topic"));
    acl_index_free(idx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_prefixed_wildcard),
        cmocka_unit_test(test_principal_and_host),
        cmocka_unit_test(test_operations),
        cmocka_unit_test(test_deny_wins),
        cmocka_unit_test(test_no_acl_default),
        cmocka_unit_test(test_changes_by_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
