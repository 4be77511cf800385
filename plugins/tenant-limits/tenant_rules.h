/* tenant-limits: the `entries` syntax and the caps it declares, checked
 * against one topic change. No host calls here, so the unit test compiles
 * it in. Read-only after tenant_rules_parse; safe from any thread. */
#ifndef CAIRN_TENANT_RULES_H
#define CAIRN_TENANT_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn/policy.h"

enum tenant_cap {
    TENANT_CAP_PARTITIONS_PER_TOPIC,
    TENANT_CAP_PARTITIONS,
    TENANT_CAP_REPLICATION_FACTOR,
    TENANT_CAP_RETENTION_MS,
    TENANT_CAP_RETENTION_BYTES,
    TENANT_CAP_COUNT,
};

/* One tenant: the principals it covers and the topic prefix it owns. */
struct tenant_rule {
    char *principal;       /* "User:alice", or the part before '*' when is_prefix */
    bool principal_prefix; /* declared as User:team-a-* */
    char *topic_prefix;
    bool has_cap[TENANT_CAP_COUNT];
    int64_t cap[TENANT_CAP_COUNT];
};

struct tenant_rules {
    struct tenant_rule *items;
    size_t count;
};

const char *tenant_cap_name(enum tenant_cap cap);

/* Parses the entries text (see README.md). CAIRN_OK, or CAIRN_INVALID /
 * CAIRN_ERROR with the offending entry named in err. */
int tenant_rules_parse(const char *text, struct tenant_rules *out, char *err, size_t errlen);
void tenant_rules_free(struct tenant_rules *rules);

/* The first tenant whose principal matches "type:name", or NULL. */
const struct tenant_rule *tenant_rules_match(const struct tenant_rules *rules, const char *principal);

/* Checks one change by the tenant; CAIRN_OK, or CAIRN_INVALID with a
 * message naming the cap. */
int tenant_rule_check(const struct tenant_rule *rule, const char *principal, const struct cairn_policy_request *change,
                      char *message, size_t message_len);

#endif
