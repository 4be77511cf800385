/* tenant-limits entries and checks.
 *
 *   entries := tenant { ";" tenant }
 *   tenant  := "principal=" principal [ "*" ] "," "prefix=" topic-prefix ":" [ cap { "," cap } ]
 *   cap     := cap-name "=" integer
 *
 * The principal part ends at the entry's last ':' (principals contain
 * one). A principal ending in '*' covers every principal starting with what
 * precedes it. */
#include "tenant_rules.h"

#include "entry_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cap_names[TENANT_CAP_COUNT] = {
    [TENANT_CAP_PARTITIONS_PER_TOPIC] = "max.partitions.per.topic", [TENANT_CAP_PARTITIONS] = "max.partitions",
    [TENANT_CAP_REPLICATION_FACTOR] = "max.replication.factor",     [TENANT_CAP_RETENTION_MS] = "max.retention.ms",
    [TENANT_CAP_RETENTION_BYTES] = "max.retention.bytes",
};

const char *tenant_cap_name(enum tenant_cap cap)
{
    return cap < TENANT_CAP_COUNT ? cap_names[cap] : "unknown";
}

static bool parse_count(const char *text, int64_t *out)
{
    if (!text[0] || strspn(text, "0123456789") != strlen(text))
        return false;
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno != 0)
        return false;
    *out = v;
    return true;
}

static int parse_who(char *text, struct tenant_rule *rule, char *why, size_t whylen)
{
    char *save = NULL;
    for (char *part = strtok_r(text, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        char *key, *value;
        if (!entry_split_pair(part, &key, &value)) {
            snprintf(why, whylen, "'%s' is not principal=<principal> or prefix=<topic prefix>", entry_trim(part));
            return CAIRN_INVALID;
        }
        char **slot = strcmp(key, "principal") == 0 ? &rule->principal
                      : strcmp(key, "prefix") == 0  ? &rule->topic_prefix
                                                    : NULL;
        if (!slot) {
            snprintf(why, whylen, "unknown part '%s' (expected principal or prefix)", key);
            return CAIRN_INVALID;
        }
        if (*slot) {
            snprintf(why, whylen, "%s given twice", key);
            return CAIRN_INVALID;
        }
        size_t len = strlen(value);
        if (slot == &rule->principal) {
            if (value[len - 1] == '*') {
                rule->principal_prefix = true;
                value[--len] = '\0';
            }
            if (!strchr(value, ':')) {
                snprintf(why, whylen, "principal '%s' is not <type>:<name> (e.g. User:alice)", value);
                return CAIRN_INVALID;
            }
        }
        if (!(*slot = strdup(value))) {
            snprintf(why, whylen, "out of memory");
            return CAIRN_ERROR;
        }
    }
    if (!rule->principal || !rule->topic_prefix) {
        snprintf(why, whylen, "a tenant needs both principal= and prefix=");
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

static int parse_caps(char *text, struct tenant_rule *rule, char *why, size_t whylen)
{
    char *save = NULL;
    for (char *item = strtok_r(text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *key, *value;
        if (!entry_split_pair(item, &key, &value)) {
            snprintf(why, whylen, "cap '%s' is not <cap>=<integer>", entry_trim(item));
            return CAIRN_INVALID;
        }
        int cap = -1;
        for (int c = 0; c < TENANT_CAP_COUNT; c++)
            if (strcmp(key, cap_names[c]) == 0)
                cap = c;
        if (cap < 0) {
            snprintf(why, whylen,
                     "unknown cap '%s' (expected max.partitions.per.topic, max.partitions, max.replication.factor, "
                     "max.retention.ms or max.retention.bytes)",
                     key);
            return CAIRN_INVALID;
        }
        if (rule->has_cap[cap]) {
            snprintf(why, whylen, "%s given twice", key);
            return CAIRN_INVALID;
        }
        if (!parse_count(value, &rule->cap[cap])) {
            snprintf(why, whylen, "%s value '%s' is not a non-negative integer", key, value);
            return CAIRN_INVALID;
        }
        rule->has_cap[cap] = true;
    }
    return CAIRN_OK;
}

void tenant_rules_free(struct tenant_rules *rules)
{
    for (size_t i = 0; i < rules->count; i++) {
        free(rules->items[i].principal);
        free(rules->items[i].topic_prefix);
    }
    free(rules->items);
    rules->items = NULL;
    rules->count = 0;
}

int tenant_rules_parse(const char *text, struct tenant_rules *out, char *err, size_t errlen)
{
    out->items = NULL;
    out->count = 0;
    char *copy = strdup(text ? text : "");
    size_t cap = 1;
    for (const char *p = copy ? copy : ""; *p; p++)
        cap += *p == ';';
    out->items = copy ? calloc(cap, sizeof *out->items) : NULL;
    if (!out->items) {
        free(copy);
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    int rc = CAIRN_OK;
    char *save = NULL;
    for (char *entry = strtok_r(copy, ";", &save); entry && rc == CAIRN_OK; entry = strtok_r(NULL, ";", &save)) {
        entry = entry_trim(entry);
        if (!entry[0])
            continue;
        char shown[160];
        snprintf(shown, sizeof shown, "%s", entry);
        char why[320] = "";
        struct tenant_rule *rule = &out->items[out->count++];
        char *colon = strrchr(entry, ':');
        if (!colon || colon == entry) {
            snprintf(why, sizeof why, "missing ':' between the tenant and its caps");
            rc = CAIRN_INVALID;
        } else {
            *colon = '\0';
            /* "principal=User:alice,prefix=a.:" ends at the caps' colon;
             * a principal's own colon comes earlier. */
            rc = parse_who(entry, rule, why, sizeof why);
            if (rc == CAIRN_OK)
                rc = parse_caps(colon + 1, rule, why, sizeof why);
        }
        if (rc != CAIRN_OK)
            snprintf(err, errlen, "tenant entry %zu ('%s'): %s", out->count, shown, why);
    }
    free(copy);
    if (rc != CAIRN_OK)
        tenant_rules_free(out);
    return rc;
}

const struct tenant_rule *tenant_rules_match(const struct tenant_rules *rules, const char *principal)
{
    for (size_t i = 0; principal && i < rules->count; i++) {
        const struct tenant_rule *r = &rules->items[i];
        if (r->principal_prefix ? strncmp(principal, r->principal, strlen(r->principal)) == 0
                                : strcmp(principal, r->principal) == 0)
            return &rules->items[i];
    }
    return NULL;
}

static int refuse(const struct tenant_rule *rule, const char *principal, char *message, size_t len, enum tenant_cap cap,
                  int64_t asked, const char *what)
{
    snprintf(message, len, "%s %lld exceeds %s=%lld of the tenant owning '%s' (%s)", what, (long long)asked,
             cap_names[cap], (long long)rule->cap[cap], rule->topic_prefix, principal);
    return CAIRN_INVALID;
}

/* A value over the cap; -1 (unlimited) is over every cap. */
static bool over(const struct tenant_rule *rule, enum tenant_cap cap, int64_t value)
{
    return rule->has_cap[cap] && (value < 0 || value > rule->cap[cap]);
}

static int check_configs(const struct tenant_rule *rule, const char *principal,
                         const struct cairn_policy_request *change, char *message, size_t len)
{
    for (size_t i = 0; i < change->config_count; i++) {
        const struct cairn_policy_config *c = change->configs[i];
        if (!c || !c->name || !c->value)
            continue;
        enum tenant_cap cap;
        if (strcmp(c->name, "retention.ms") == 0)
            cap = TENANT_CAP_RETENTION_MS;
        else if (strcmp(c->name, "retention.bytes") == 0)
            cap = TENANT_CAP_RETENTION_BYTES;
        else
            continue;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(c->value, &end, 10);
        if (errno != 0 || end == c->value || *end != '\0')
            continue; /* not a number: the broker's config check refuses it */
        if (over(rule, cap, v))
            return refuse(rule, principal, message, len, cap, v, c->name);
    }
    return CAIRN_OK;
}

int tenant_rule_check(const struct tenant_rule *rule, const char *principal, const struct cairn_policy_request *change,
                      char *message, size_t message_len)
{
    const char *topic = change->topic ? change->topic : "";
    if (strncmp(topic, rule->topic_prefix, strlen(rule->topic_prefix)) != 0) {
        snprintf(message, message_len, "topic '%s' is outside the prefix '%s' of the tenant of %s", topic,
                 rule->topic_prefix, principal);
        return CAIRN_INVALID;
    }
    if (change->kind == CAIRN_POLICY_ALTER_CONFIGS)
        return check_configs(rule, principal, change, message, message_len);
    if (change->kind != CAIRN_POLICY_CREATE_TOPIC && change->kind != CAIRN_POLICY_CREATE_PARTITIONS)
        return CAIRN_OK; /* a kind from a later minor: not ours to judge */
    if (over(rule, TENANT_CAP_PARTITIONS_PER_TOPIC, change->partitions))
        return refuse(rule, principal, message, message_len, TENANT_CAP_PARTITIONS_PER_TOPIC, change->partitions,
                      "partition count");
    int64_t replication = change->replication_factor;
    for (size_t i = 0; i < change->assignment_count; i++)
        if (change->assignments[i] && change->assignments[i]->broker_count > replication)
            replication = change->assignments[i]->broker_count;
    if (over(rule, TENANT_CAP_REPLICATION_FACTOR, replication))
        return refuse(rule, principal, message, message_len, TENANT_CAP_REPLICATION_FACTOR, replication,
                      "replication factor");
    if (rule->has_cap[TENANT_CAP_PARTITIONS] && change->count_topics) {
        int64_t partitions = 0;
        change->count_topics(change, rule->topic_prefix, NULL, &partitions);
        int64_t added = change->partitions - change->current_partitions;
        if (added > 0 && partitions + added > rule->cap[TENANT_CAP_PARTITIONS])
            return refuse(rule, principal, message, message_len, TENANT_CAP_PARTITIONS, partitions + added,
                          "tenant partition total");
    }
    return change->kind == CAIRN_POLICY_CREATE_TOPIC ? check_configs(rule, principal, change, message, message_len)
                                                     : CAIRN_OK;
}
