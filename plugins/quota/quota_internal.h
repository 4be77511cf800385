/* Quota plugin internals: the entity model (Kafka's client quotas), entry
 * parsing and precedence matching, and the sampled rate sensors. */
#ifndef CAIRN_QUOTA_INTERNAL_H
#define CAIRN_QUOTA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn/plugin.h"

#define QUOTA_DEFAULT_NAME "<default>"

enum quota_type {
    QUOTA_PRODUCER_BYTE_RATE = 0,
    QUOTA_CONSUMER_BYTE_RATE = 1,
    QUOTA_REQUEST_PERCENTAGE = 2,
    QUOTA_CONTROLLER_MUTATION_RATE = 3, /* partitions created or deleted per second (KIP-599) */
    QUOTA_TYPE_COUNT = 4,
};

/* How an entity names its user or client-id part. */
enum quota_part {
    QUOTA_PART_ABSENT = 0,
    QUOTA_PART_NAMED = 1,
    QUOTA_PART_DEFAULT = 2, /* <default>: applies to each name without its own entry */
};

/* An entity as in Kafka's /config/users/<user>/clients/<client-id>. */
struct quota_entity {
    enum quota_part user_part;
    char *user; /* set when user_part is NAMED */
    enum quota_part client_part;
    char *client_id; /* set when client_part is NAMED */
};

/* One entity and the quotas set on it. Part of a quota_entries; never
 * modified after parsing. */
struct quota_entry {
    struct quota_entity entity;
    bool has_limit[QUOTA_TYPE_COUNT];
    double limit[QUOTA_TYPE_COUNT];
};

/* Every configured entry. Immutable once parsed; replaced as a whole. */
struct quota_entries {
    struct quota_entry *items;
    size_t count;
};

/* Parses the `entries` syntax (see README.md). On error names the entry
 * and what is wrong with it. */
int quota_entries_parse(const char *text, struct quota_entries *out, char *err, size_t errlen);
void quota_entries_free(struct quota_entries *entries);
const char *quota_type_name(enum quota_type type);

/* The configured entries with the quotas set at run time laid over them:
 * for an entity and quota type, a run-time value replaces the configured
 * one (Kafka lets dynamic quotas override static config). ip entities and
 * keys this plugin does not enforce are skipped. CAIRN_ERROR when out of
 * memory; out is then empty. */
int quota_entries_merge(const struct quota_entries *configured, const struct cairn_client_quota *const *quotas,
                        size_t count, struct quota_entries *out);

/* The entry that governs (user, client_id) for one quota type. A value on
 * the caller's stack; its tags point at the caller's strings. */
struct quota_match {
    const struct quota_entry *entry;
    double limit;
    int precedence; /* 1 (user + client-id) ... 8 (<default> client-id) */
    /* The usage bucket, as Kafka's metric tags: the caller's own user or
     * client-id where the entity has that part, "" where it has not. */
    const char *user_tag;
    const char *client_tag;
};

/* False when no entry sets a limit of this type for the pair. */
bool quota_entries_match(const struct quota_entries *entries, const char *user, const char *client_id,
                         enum quota_type type, struct quota_match *match);

/* Sampling window settings (quota.window.num, quota.window.size.seconds).
 * Immutable after init. */
struct quota_window_config {
    int32_t samples;
    int64_t window_ms;
};

/* One sample of a rate: value recorded since start_ms. */
struct quota_sample {
    int64_t start_ms;
    double value;
};

/* A sampled rate over config.samples windows of config.window_ms, with
 * Kafka's Rate semantics. Not thread-safe: the owner locks around it. */
struct quota_rate {
    struct quota_sample *samples;
    int32_t used;    /* samples started so far, up to config.samples */
    int32_t current; /* index of the sample being filled */
};

int quota_rate_init(struct quota_rate *rate, const struct quota_window_config *config);
void quota_rate_free(struct quota_rate *rate);
void quota_rate_record(struct quota_rate *rate, const struct quota_window_config *config, double value, int64_t now_ms);
/* Per second over the measured window. */
double quota_rate_measure(struct quota_rate *rate, const struct quota_window_config *config, int64_t now_ms);
/* The window the rate is measured over: at least (samples - 1) windows. */
int64_t quota_rate_window_ms(struct quota_rate *rate, const struct quota_window_config *config, int64_t now_ms);
/* Kafka's throttle time: how long until rate falls back to limit,
 * (rate - limit) / limit * window, capped at samples * window_ms. */
int32_t quota_throttle_ms(double rate, double limit, int64_t window_ms, const struct quota_window_config *config);

/* How usage turns into a throttle time (the plugin's throttle.algorithm). */
enum quota_throttle_algorithm {
    /* A token bucket holding one window's worth of quota: bursts bounded. */
    QUOTA_THROTTLE_TOKEN_BUCKET = 0,
    /* Kafka's: the sampled rate above and (rate - limit) / limit * window. */
    QUOTA_THROTTLE_SAMPLED_RATE = 1,
};

/* Parses a throttle.algorithm value; CAIRN_INVALID for an unknown one. */
int quota_throttle_algorithm_parse(const char *text, enum quota_throttle_algorithm *out);

/* Credits limit per second up to one window's worth (window_ms of quota). */
struct quota_token_bucket {
    double tokens; /* may be negative: a debt the throttle repays */
    int64_t last_ms;
    bool started;
};

/* Takes value from the bucket and returns how long until its debt is
 * repaid (0 with none), capped as quota_throttle_ms. Not thread-safe. */
int32_t quota_bucket_record(struct quota_token_bucket *bucket, const struct quota_window_config *config, double value,
                            double limit, int64_t now_ms);

/* Usage buckets keyed by (type, user tag, client tag). Lookups share
 * lock (read); inserting and sweeping idle buckets take it for writing;
 * each bucket's rate has its own mutex. */
struct quota_sensor;
struct quota_sensor_table {
    pthread_rwlock_t lock;
    struct quota_sensor **buckets;
    size_t bucket_count; /* power of two */
    size_t count;
    size_t sweep_at; /* sweep idle sensors once count reaches this */
    int64_t idle_expiry_ms;
    struct quota_window_config window;
    enum quota_throttle_algorithm algorithm;
};

int quota_sensor_table_init(struct quota_sensor_table *table, const struct quota_window_config *window,
                            enum quota_throttle_algorithm algorithm);
void quota_sensor_table_free(struct quota_sensor_table *table);
/* Records value into the bucket of match and returns the throttle time,
 * by the table's algorithm. strict (KIP-599's controller mutations) always
 * uses the sampled rate, checked before recording: when it is already
 * over the limit nothing is recorded and the throttle time is returned,
 * else value is recorded and 0 returned. */
int32_t quota_sensor_record(struct quota_sensor_table *table, enum quota_type type, const struct quota_match *match,
                            double value, int64_t now_ms, bool strict);
size_t quota_sensor_count(struct quota_sensor_table *table);

#endif
