/* Quota entries: the `entries` config syntax and Kafka's precedence rules.
 *
 *   entries := entry { ";" entry }
 *   entry   := entity ":" limit { "," limit }
 *   entity  := part [ "," part ]        part  := ("user" | "client-id") "=" name
 *   limit   := ("producer_byte_rate" | "consumer_byte_rate" | "request_percentage") "=" number
 *
 * A name is <default> or any text without ',', ';' or '='. The entity ends
 * at the entry's last ':' so names may contain colons. */
#include "quota_internal.h"

#include "entry_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const quota_type_names[QUOTA_TYPE_COUNT] = {
    [QUOTA_PRODUCER_BYTE_RATE] = "producer_byte_rate",
    [QUOTA_CONSUMER_BYTE_RATE] = "consumer_byte_rate",
    [QUOTA_REQUEST_PERCENTAGE] = "request_percentage",
    [QUOTA_CONTROLLER_MUTATION_RATE] = "controller_mutation_rate",
};

const char *quota_type_name(enum quota_type type)
{
    return type < QUOTA_TYPE_COUNT ? quota_type_names[type] : "unknown";
}

static void quota_entry_free(struct quota_entry *entry)
{
    free(entry->entity.user);
    free(entry->entity.client_id);
    memset(entry, 0, sizeof(*entry));
}

void quota_entries_free(struct quota_entries *entries)
{
    for (size_t i = 0; i < entries->count; i++)
        quota_entry_free(&entries->items[i]);
    free(entries->items);
    entries->items = NULL;
    entries->count = 0;
}

/* Splits "key=value" in place; false without '=', with an empty side or
 * with a second '=' (names hold none). */
static bool quota_split_pair(char *pair, char **key, char **value)
{
    return entry_split_pair(pair, key, value) && strchr(*value, '=') == NULL;
}

static int quota_parse_entity(char *text, struct quota_entity *entity, char *why, size_t whylen)
{
    int parts = 0;
    char *save = NULL;
    for (char *part = strtok_r(text, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        char *key, *value;
        if (!quota_split_pair(part, &key, &value)) {
            snprintf(why, whylen, "entity part '%s' is not user=<name> or client-id=<name>", entry_trim(part));
            return CAIRN_INVALID;
        }
        enum quota_part *slot;
        char **name;
        if (strcmp(key, "user") == 0) {
            slot = &entity->user_part;
            name = &entity->user;
        } else if (strcmp(key, "client-id") == 0) {
            slot = &entity->client_part;
            name = &entity->client_id;
        } else {
            snprintf(why, whylen, "unknown entity type '%s' (expected user or client-id)", key);
            return CAIRN_INVALID;
        }
        if (*slot != QUOTA_PART_ABSENT) {
            snprintf(why, whylen, "%s given twice", key);
            return CAIRN_INVALID;
        }
        if (strcmp(value, QUOTA_DEFAULT_NAME) == 0) {
            *slot = QUOTA_PART_DEFAULT;
        } else {
            *slot = QUOTA_PART_NAMED;
            *name = strdup(value);
            if (!*name) {
                snprintf(why, whylen, "out of memory");
                return CAIRN_ERROR;
            }
        }
        parts++;
    }
    if (parts == 0) {
        snprintf(why, whylen, "no entity before ':'");
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

static int quota_parse_limits(char *text, struct quota_entry *entry, char *why, size_t whylen)
{
    int limits = 0;
    char *save = NULL;
    for (char *item = strtok_r(text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *key, *value;
        if (!quota_split_pair(item, &key, &value)) {
            snprintf(why, whylen, "quota '%s' is not <quota>=<number>", entry_trim(item));
            return CAIRN_INVALID;
        }
        int type = -1;
        for (int t = 0; t < QUOTA_TYPE_COUNT; t++) {
            if (strcmp(key, quota_type_names[t]) == 0)
                type = t;
        }
        if (type < 0) {
            snprintf(why, whylen,
                     "unknown quota '%s' (expected producer_byte_rate, consumer_byte_rate, request_percentage or "
                     "controller_mutation_rate)",
                     key);
            return CAIRN_INVALID;
        }
        if (entry->has_limit[type]) {
            snprintf(why, whylen, "%s given twice", key);
            return CAIRN_INVALID;
        }
        errno = 0;
        char *end = NULL;
        double limit = strtod(value, &end);
        bool fractional = type == QUOTA_REQUEST_PERCENTAGE || type == QUOTA_CONTROLLER_MUTATION_RATE;
        bool integral = fractional || strspn(value, "0123456789") == strlen(value);
        if (errno != 0 || end == value || *end != '\0' || !isfinite(limit) || limit <= 0 || !integral) {
            snprintf(why, whylen, "%s value '%s' is not a positive %s", key, value, fractional ? "number" : "integer");
            return CAIRN_INVALID;
        }
        entry->has_limit[type] = true;
        entry->limit[type] = limit;
        limits++;
    }
    if (limits == 0) {
        snprintf(why, whylen, "no quota after ':'");
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

static bool quota_same_name(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool quota_same_entity(const struct quota_entity *a, const struct quota_entity *b)
{
    return a->user_part == b->user_part && a->client_part == b->client_part && quota_same_name(a->user, b->user) &&
           quota_same_name(a->client_id, b->client_id);
}

/* Parses one entry; text is modified. */
static int quota_parse_entry(char *text, struct quota_entry *entry, char *why, size_t whylen)
{
    char *colon = strrchr(text, ':');
    if (!colon) {
        snprintf(why, whylen, "missing ':' between entity and quotas");
        return CAIRN_INVALID;
    }
    *colon = '\0';
    int rc = quota_parse_entity(text, &entry->entity, why, whylen);
    if (rc == CAIRN_OK)
        rc = quota_parse_limits(colon + 1, entry, why, whylen);
    return rc;
}

int quota_entries_parse(const char *text, struct quota_entries *out, char *err, size_t errlen)
{
    out->items = NULL;
    out->count = 0;
    char *copy = strdup(text ? text : "");
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    size_t cap = 1;
    for (const char *p = copy; *p; p++)
        cap += *p == ';';
    out->items = calloc(cap, sizeof(*out->items));
    if (!out->items) {
        free(copy);
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    int rc = CAIRN_OK;
    size_t number = 0;
    char *cursor = copy;
    while (cursor && rc == CAIRN_OK) {
        char *next = strchr(cursor, ';');
        if (next)
            *next++ = '\0';
        char *entry_text = entry_trim(cursor);
        cursor = next;
        if (entry_text[0] == '\0')
            continue;
        number++;
        char shown[160];
        snprintf(shown, sizeof(shown), "%s", entry_text);
        char why[256] = "";
        struct quota_entry *entry = &out->items[out->count];
        rc = quota_parse_entry(entry_text, entry, why, sizeof(why));
        for (size_t i = 0; rc == CAIRN_OK && i < out->count; i++) {
            if (quota_same_entity(&out->items[i].entity, &entry->entity)) {
                snprintf(why, sizeof(why), "the same entity as entry %zu", i + 1);
                rc = CAIRN_INVALID;
            }
        }
        if (rc != CAIRN_OK) {
            snprintf(err, errlen, "quota entry %zu '%s': %s", number, shown, why);
            quota_entry_free(entry);
        } else {
            out->count++;
        }
    }
    free(copy);
    if (rc != CAIRN_OK)
        quota_entries_free(out);
    return rc;
}

/* The eight entity shapes in Kafka's order, most specific first. */
static const struct {
    enum quota_part user;
    enum quota_part client;
} quota_precedence[8] = {
    {QUOTA_PART_NAMED, QUOTA_PART_NAMED},     {QUOTA_PART_NAMED, QUOTA_PART_DEFAULT},
    {QUOTA_PART_NAMED, QUOTA_PART_ABSENT},    {QUOTA_PART_DEFAULT, QUOTA_PART_NAMED},
    {QUOTA_PART_DEFAULT, QUOTA_PART_DEFAULT}, {QUOTA_PART_DEFAULT, QUOTA_PART_ABSENT},
    {QUOTA_PART_ABSENT, QUOTA_PART_NAMED},    {QUOTA_PART_ABSENT, QUOTA_PART_DEFAULT},
};

static bool quota_part_matches(enum quota_part part, const char *configured, const char *actual)
{
    return part != QUOTA_PART_NAMED || strcmp(configured, actual) == 0;
}

bool quota_entries_match(const struct quota_entries *entries, const char *user, const char *client_id,
                         enum quota_type type, struct quota_match *match)
{
    memset(match, 0, sizeof(*match));
    if (type >= QUOTA_TYPE_COUNT)
        return false;
    for (int level = 0; level < 8; level++) {
        for (size_t i = 0; i < entries->count; i++) {
            const struct quota_entry *entry = &entries->items[i];
            const struct quota_entity *entity = &entry->entity;
            if (!entry->has_limit[type] || entity->user_part != quota_precedence[level].user ||
                entity->client_part != quota_precedence[level].client ||
                !quota_part_matches(entity->user_part, entity->user, user) ||
                !quota_part_matches(entity->client_part, entity->client_id, client_id))
                continue;
            match->entry = entry;
            match->limit = entry->limit[type];
            match->precedence = level + 1;
            match->user_tag = entity->user_part != QUOTA_PART_ABSENT ? user : "";
            match->client_tag = entity->client_part != QUOTA_PART_ABSENT ? client_id : "";
            return true;
        }
    }
    return false;
}
