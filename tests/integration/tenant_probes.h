/* The requests of the every-API tenant walk (test_tenant_walk.c): one
 * builder per probed API, written with the generated codecs, and the table
 * of probes. A probe names one kind of tenant-owned name; the builder takes
 * the names to put in the request and encodes its body at a version.
 *
 * Thread-safety: immutable tables and pure functions. */
#ifndef CAIRN_TESTS_TENANT_PROBES_H
#define CAIRN_TESTS_TENANT_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/wire.h"

/* What a probe varies: a topic, a group, a transactional id or a topic id
 * (the request then names no topic); a listing names nothing and must not
 * list another tenant's names. */
enum name_kind { KIND_TOPIC, KIND_GROUP, KIND_TXN, KIND_TOPIC_ID, KIND_LISTING };

/* The names one request is built from. */
struct names {
    const char *topic, *group, *txn; /* topic NULL: by topic_id */
    struct kafka_uuid topic_id;
};

/* Where the throttle time sits in an answer's body, when not at a byte offset. */
enum { THROTTLE_NONE = -1, THROTTLE_LAST = -2 };

enum {
    /* Listing: the tenant's own name of the kind in `listed` must show, or
     * the probe proves nothing; by topic id: the own topic's id names it. */
    PROBE_OWN_LISTED = 1,
    /* The API needs a cluster permission the tenant lacks, so its own name
     * gets the same refusal as the others; every other probe must answer
     * its own name differently (the request reached the authorized path). */
    PROBE_CLUSTER_GATED = 2,
};

typedef int (*build_fn)(struct kafka_writer *w, int16_t version, const struct names *n);

/* One probe: an API at one version, the kind of name it varies, how to
 * build it and where its answer holds the throttle time. An API may have
 * several probes, one per kind of name it carries. */
struct tenant_probe {
    int16_t api_key;
    int16_t version;
    enum name_kind kind;
    build_fn build;
    int throttle_at;       /* byte offset in the body, or THROTTLE_* */
    unsigned flags;        /* PROBE_* */
    enum name_kind listed; /* PROBE_OWN_LISTED: which own name shows; else KIND_LISTING */
};

extern const struct tenant_probe tenant_probes[];
extern const size_t tenant_probe_count;

#endif
