/* Controller side of the client quota APIs: Kafka's checks of entities,
 * keys, values and describe filters (ClientQuotaControlManager,
 * ClientQuotasImage.describe), and the batch of ClientQuotaRecords an
 * AlterClientQuotas request writes. */
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_quota.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"

/* Writes Kafka's message into err (which may be NULL) and yields the code. */
#define fail(code, err, errlen, ...) (snprintf((err), (err) ? (errlen) : 0, __VA_ARGS__), (int16_t)(code))

static bool is_address(const char *text)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, text, buf) == 1 || inet_pton(AF_INET6, text, buf) == 1;
}

int16_t metadata_quota_entity_add(struct metadata_quota_entity *e, const char *type, size_t type_len, const char *name,
                                  char *err, size_t errlen)
{
    int t = metadata_quota_type_of(type, type_len);
    if (t < 0)
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Unhandled client quota entity type: %.*s",
                    (int)(type_len > 64 ? 64 : type_len), type ? type : "");
    if (e->part[t] != METADATA_QUOTA_ABSENT)
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen,
                    "Invalid empty client quota entity, duplicate entity entry %s", metadata_quota_type_name(t));
    if (name && name[0] == '\0')
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Empty %s not supported", metadata_quota_type_name(t));
    if (name && t == METADATA_QUOTA_IP && !is_address(name))
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Unable to resolve address %.64s", name);
    e->part[t] = name ? METADATA_QUOTA_NAMED : METADATA_QUOTA_DEFAULT;
    e->name[t] = name;
    return KAFKA_ERR_NONE;
}

int16_t metadata_quota_entity_check(const struct metadata_quota_entity *e, char *err, size_t errlen)
{
    bool user = e->part[METADATA_QUOTA_USER] != METADATA_QUOTA_ABSENT;
    bool client = e->part[METADATA_QUOTA_CLIENT_ID] != METADATA_QUOTA_ABSENT;
    bool ip = e->part[METADATA_QUOTA_IP] != METADATA_QUOTA_ABSENT;
    if (!user && !client && !ip)
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Invalid empty client quota entity");
    if (ip && (user || client))
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen,
                    "Invalid quota entity combination, A user or client-id entity may not be combined with an IP "
                    "entity");
    return KAFKA_ERR_NONE;
}

/* Quota keys and whether their values are integers (Kafka's LONG and INT
 * keys) or any positive number (DOUBLE). */
static const struct {
    const char *key;
    bool ip;
    bool integral;
} quota_keys[] = {
    {"producer_byte_rate", false, true},      {"consumer_byte_rate", false, true},
    {"request_percentage", false, false},     {"controller_mutation_rate", false, false},
    {"connection_creation_rate", true, true},
};

int16_t metadata_quota_check_op(const struct metadata_quota_entity *e, const struct metadata_quota_op *op, char *err,
                                size_t errlen)
{
    bool ip = e->part[METADATA_QUOTA_IP] != METADATA_QUOTA_ABSENT;
    int found = -1;
    for (size_t i = 0; op->key && i < sizeof quota_keys / sizeof quota_keys[0]; i++)
        if (quota_keys[i].ip == ip && strcmp(quota_keys[i].key, op->key) == 0)
            found = (int)i;
    if (found < 0)
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Invalid configuration key %.64s", op->key ? op->key : "");
    if (op->remove)
        return KAFKA_ERR_NONE;
    if (!isfinite(op->value) || op->value <= 0.0)
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Quota %s must be greater than 0", op->key);
    if (quota_keys[found].integral) {
        double limit = ip ? 2147483647.0 : 9223372036854775807.0;
        if (op->value > limit)
            return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Proposed value for %s is too large for a %s.", op->key,
                        ip ? "INT" : "LONG");
        if (fabs(op->value - round(op->value)) > 1e-6)
            return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Integer value for %s must be an integer", op->key);
    }
    return KAFKA_ERR_NONE;
}

/* Writes the records of one checked entry: only values that change. */
static void write_entry(struct metadata_record_list *records, const struct metadata_image *img,
                        const struct metadata_quota_alteration *a)
{
    for (int32_t j = 0; j < a->op_count; j++) {
        const struct metadata_quota_op *op = &a->ops[j];
        /* A key given twice: the last operation wins, as in Kafka's map. */
        bool later = false;
        for (int32_t k = j + 1; k < a->op_count; k++)
            later |= strcmp(a->ops[k].key, op->key) == 0;
        if (later)
            continue;
        int32_t at = metadata_image_quota_find(img, &a->entity, op->key);
        if (op->remove ? at < 0 : (at >= 0 && img->quotas[at].value == op->value))
            continue;
        metadata_record_write_quota(&records->w, &a->entity, op->key, op->value, op->remove);
        metadata_record_list_mark(records);
    }
}

int16_t metadata_alter_client_quotas(struct metadata_store *store, struct metadata_quota_alteration *alts,
                                     int32_t count, bool validate_only, char *err, size_t errlen)
{
    for (int32_t i = 0; i < count; i++) {
        struct metadata_quota_alteration *a = &alts[i];
        if (a->error_code == KAFKA_ERR_NONE)
            a->error_code = metadata_quota_entity_check(&a->entity, a->error, sizeof a->error);
        for (int32_t j = 0; a->error_code == KAFKA_ERR_NONE && j < a->op_count; j++)
            a->error_code = metadata_quota_check_op(&a->entity, &a->ops[j], a->error, sizeof a->error);
    }
    if (validate_only)
        return KAFKA_ERR_NONE;
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    struct metadata_record_list records;
    int16_t rc = KAFKA_ERR_NONE;
    if (metadata_record_list_init(&records) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    } else {
        for (int32_t i = 0; i < count; i++)
            if (alts[i].error_code == KAFKA_ERR_NONE)
                write_entry(&records, img, &alts[i]);
        if (records.count > 0)
            rc = metadata_store_commit_locked(store, &records, err, errlen);
        metadata_record_list_free(&records);
    }
    metadata_controller_unlock(store);
    for (int32_t i = 0; rc != KAFKA_ERR_NONE && i < count; i++) {
        if (alts[i].error_code != KAFKA_ERR_NONE)
            continue;
        alts[i].error_code = rc;
        snprintf(alts[i].error, sizeof alts[i].error, "%s", err);
    }
    return rc;
}

/* ---- DescribeClientQuotas ---- */

enum { MATCH_EXACT = 0, MATCH_DEFAULT = 1, MATCH_SPECIFIED = 2 };

void metadata_quota_filter_init(struct metadata_quota_filter *f, bool strict)
{
    memset(f, 0, sizeof(*f));
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++)
        f->match[t] = -1;
    f->strict = strict;
}

int16_t metadata_quota_filter_add(struct metadata_quota_filter *f, const char *type, size_t type_len, int8_t match_type,
                                  const char *match, char *err, size_t errlen)
{
    int shown = (int)(type_len > 64 ? 64 : type_len);
    if (type_len == 0)
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen, "Invalid empty entity type.");
    int t = metadata_quota_type_of(type, type_len);
    if (t >= 0 && f->match[t] >= 0)
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen,
                    "Entity type %s cannot appear more than once in the filter.", metadata_quota_type_name(t));
    if (t < 0)
        return fail(KAFKA_ERR_UNSUPPORTED_VERSION, err, errlen, "Unsupported entity type %.*s", shown, type);
    switch (match_type) {
    case MATCH_EXACT:
        if (!match)
            return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen,
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.");
        break;
    case MATCH_DEFAULT:
    case MATCH_SPECIFIED:
        if (match)
            return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen,
                        "Request specified %s, but also specified a match string.",
                        match_type == MATCH_DEFAULT ? "MATCH_TYPE_DEFAULT" : "MATCH_TYPE_SPECIFIED");
        break;
    default:
        return fail(KAFKA_ERR_UNSUPPORTED_VERSION, err, errlen, "Unknown match type %d", (int)match_type);
    }
    f->match[t] = match_type;
    f->name[t] = match;
    return KAFKA_ERR_NONE;
}

int16_t metadata_quota_filter_check(const struct metadata_quota_filter *f, char *err, size_t errlen)
{
    if (f->match[METADATA_QUOTA_IP] >= 0 &&
        (f->match[METADATA_QUOTA_USER] >= 0 || f->match[METADATA_QUOTA_CLIENT_ID] >= 0))
        return fail(KAFKA_ERR_INVALID_REQUEST, err, errlen,
                    "Invalid entity filter component combination. IP filter component should not be used with user "
                    "or clientId filter component.");
    return KAFKA_ERR_NONE;
}

bool metadata_quota_filter_matches(const struct metadata_quota_filter *f, const struct metadata_quota_entity *e)
{
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++) {
        int8_t part = e->part[t];
        switch (f->match[t]) {
        case -1:
            if (f->strict && part != METADATA_QUOTA_ABSENT)
                return false;
            break;
        case MATCH_EXACT:
            if (part != METADATA_QUOTA_NAMED || strcmp(e->name[t], f->name[t]) != 0)
                return false;
            break;
        case MATCH_DEFAULT:
            if (part != METADATA_QUOTA_DEFAULT)
                return false;
            break;
        default:
            if (part == METADATA_QUOTA_ABSENT)
                return false;
            break;
        }
    }
    return true;
}
