/* Client quotas in the metadata log (Kafka's ClientQuotaRecord): the
 * entity model (user, client-id, ip; a part may name one entity or be the
 * <default> of its type), the controller operation behind
 * AlterClientQuotas, and the filter behind DescribeClientQuotas.
 *
 * Thread-safety: quotas live in the immutable image like every other
 * record family; the controller call takes the store's write lock. */
#ifndef CAIRN_METADATA_METADATA_QUOTA_H
#define CAIRN_METADATA_METADATA_QUOTA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metadata/metadata_image.h"
#include "protocol/wire.h"

struct metadata_builder;
struct metadata_store;

/* Entity types, in the order an entity's parts are kept and compared. */
enum metadata_quota_type {
    METADATA_QUOTA_USER = 0,
    METADATA_QUOTA_CLIENT_ID = 1,
    METADATA_QUOTA_IP = 2,
    METADATA_QUOTA_TYPE_COUNT = 3,
};

enum metadata_quota_part {
    METADATA_QUOTA_ABSENT = 0,
    METADATA_QUOTA_NAMED = 1,
    METADATA_QUOTA_DEFAULT = 2, /* a null entity name on the wire */
};

/* Kafka's ClientQuotaEntity. Names are owned by whoever owns the entity
 * (the image for its quotas, the caller for a request's). */
struct metadata_quota_entity {
    int8_t part[METADATA_QUOTA_TYPE_COUNT];      /* enum metadata_quota_part */
    const char *name[METADATA_QUOTA_TYPE_COUNT]; /* set when NAMED */
};

/* One quota value of one entity. The image keeps them sorted by entity
 * (parts in type order, ABSENT < NAMED < DEFAULT, then names) and key, so
 * an entity's values are adjacent. */
struct metadata_quota {
    struct metadata_quota_entity entity;
    char *key;
    double value;
};

/* "user", "client-id", "ip". */
const char *metadata_quota_type_name(int type);
/* The entity type named by a wire string, or -1. */
int metadata_quota_type_of(const char *name, size_t len);
int metadata_quota_entity_cmp(const struct metadata_quota_entity *a, const struct metadata_quota_entity *b);

/* Adds one (type, name) pair of a request's entity; name NULL is the
 * default. INVALID_REQUEST with Kafka's message for an unknown or repeated
 * type, an empty name, or an ip that is not an address. */
int16_t metadata_quota_entity_add(struct metadata_quota_entity *e, const char *type, size_t type_len, const char *name,
                                  char *err, size_t errlen);
/* Kafka's check of a whole entity: not empty; user and/or client-id, or ip alone. */
int16_t metadata_quota_entity_check(const struct metadata_quota_entity *e, char *err, size_t errlen);

/* One operation of an AlterClientQuotas entry. */
struct metadata_quota_op {
    const char *key;
    double value;
    bool remove;
};

/* One AlterClientQuotas entry: an entity checked by the caller (error_code
 * NONE) and its operations; error_code and error (the message) are the result. */
struct metadata_quota_alteration {
    struct metadata_quota_entity entity;
    const struct metadata_quota_op *ops;
    int32_t op_count;
    int16_t error_code;
    char error[160];
};

/* Kafka's check of one (key, value) for an entity: the key must be a
 * quota of its kind (connection_creation_rate for ip entities;
 * producer_byte_rate, consumer_byte_rate, request_percentage and
 * controller_mutation_rate otherwise), the value positive, and integral
 * for the byte and connection rates. */
int16_t metadata_quota_check_op(const struct metadata_quota_entity *e, const struct metadata_quota_op *op, char *err,
                                size_t errlen);

/* Validates every entry still without an error and, unless validate_only,
 * writes one batch of ClientQuotaRecords for the entries that passed (only
 * values that change; a removal of an unset key writes nothing). Returns
 * NONE, or the error of the commit (also written into each entry). */
int16_t metadata_alter_client_quotas(struct metadata_store *store, struct metadata_quota_alteration *alts,
                                     int32_t count, bool validate_only, char *err, size_t errlen);

/* A DescribeClientQuotas filter. match[t] is -1 when type t is not named,
 * else Kafka's match type: 0 EXACT (name), 1 DEFAULT, 2 SPECIFIED (any
 * entity with a part of that type, default included). */
struct metadata_quota_filter {
    int8_t match[METADATA_QUOTA_TYPE_COUNT];
    const char *name[METADATA_QUOTA_TYPE_COUNT];
    bool strict; /* the entity has no other parts */
};

void metadata_quota_filter_init(struct metadata_quota_filter *f, bool strict);
/* One component. INVALID_REQUEST or UNSUPPORTED_VERSION with Kafka's message. */
int16_t metadata_quota_filter_add(struct metadata_quota_filter *f, const char *type, size_t type_len, int8_t match_type,
                                  const char *match, char *err, size_t errlen);
/* The whole filter: ip never with user or client-id. */
int16_t metadata_quota_filter_check(const struct metadata_quota_filter *f, char *err, size_t errlen);
bool metadata_quota_filter_matches(const struct metadata_quota_filter *f, const struct metadata_quota_entity *e);

/* ---- image, builder and records (used inside the metadata module) ---- */

int metadata_builder_put_quota(struct metadata_builder *b, const struct metadata_quota_entity *e, const char *key,
                               double value, char *err, size_t errlen);
/* Removing a value not set is not an error (a replay may repeat one). */
int metadata_builder_remove_quota(struct metadata_builder *b, const struct metadata_quota_entity *e, const char *key,
                                  char *err, size_t errlen);
/* Index of (e, key) in img->quotas, or -(insertion point) - 1. */
int32_t metadata_image_quota_find(const struct metadata_image *img, const struct metadata_quota_entity *e,
                                  const char *key);
void metadata_record_write_quota(struct kafka_writer *w, const struct metadata_quota_entity *e, const char *key,
                                 double value, bool remove);
struct client_quota_record;
/* Applies a decoded ClientQuotaRecord to the builder; 0, or -1 with err. */
int metadata_builder_apply_quota_record(struct metadata_builder *b, const struct client_quota_record *m, char *err,
                                        size_t errlen);

#endif
