/* The two-tenant broker of the tenant-isolation tests: User:ANONYMOUS (the
 * PLAINTEXT listener) is given ALL on the prefix "team-a." of topics,
 * groups and transactional ids through the acl-authorizer plugin, and
 * nothing else. Another tenant's topic, records, group and transactional id
 * (TENANT_OTHER_*) are made before the authorizer is loaded, as are the
 * tenant's own (TENANT_OWN_*), an offset of the tenant's group for the
 * other tenant's topic and an ACL of User:team-b on the prefix "team-b.". Include <cmocka.h> (with its prerequisites)
 * before this header.
 *
 * Thread-safety: used from the test thread only. */
#ifndef CAIRN_TESTS_TENANT_FIXTURE_H
#define CAIRN_TESTS_TENANT_FIXTURE_H

#include <stdint.h>

#include "harness.h"
#include "rk_helpers.h"

#define TENANT_OTHER_TOPIC "team-b.orders"
#define TENANT_OTHER_GROUP "team-b.group"
#define TENANT_OTHER_TXN "team-b.tx"
#define TENANT_OWN_TOPIC "team-a.orders"
#define TENANT_OWN_GROUP "team-a.group"
#define TENANT_OWN_TXN "team-a.tx"

/* The topic ids of TENANT_OTHER_TOPIC and TENANT_OWN_TOPIC. */
struct tenant_topic_ids {
    uint8_t other[16], own[16];
};

/* Starts b, makes both tenants' names, creates the ACLs and restarts b with
 * the acl-authorizer loaded. ids (NULL: not wanted) receives the topic ids. */
void tenant_fixture_start(struct test_broker *b, struct tenant_topic_ids *ids);

/* A librdkafka consumer in `group` (auto commit off), or a producer when
 * group is NULL. */
rd_kafka_t *tenant_client(struct test_broker *b, const char *group);

/* True when the bytes of needle occur in data (an answer that names it). */
bool tenant_bytes_hold(const uint8_t *data, size_t len, const char *needle);

#endif
