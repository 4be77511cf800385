/* Sampled rates (Kafka's Rate over a SampledStat) and the table of usage
 * buckets they live in. */
#include "quota_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define QUOTA_INITIAL_BUCKETS 256
#define QUOTA_FIRST_SWEEP 1024
/* Kafka drops quota sensors after an hour without traffic. */
#define QUOTA_IDLE_EXPIRY_MS (3600 * 1000)

int quota_rate_init(struct quota_rate *rate, const struct quota_window_config *config)
{
    rate->samples = calloc((size_t)config->samples, sizeof(*rate->samples));
    rate->used = 0;
    rate->current = 0;
    return rate->samples ? CAIRN_OK : CAIRN_ERROR;
}

void quota_rate_free(struct quota_rate *rate)
{
    free(rate->samples);
    rate->samples = NULL;
}

void quota_rate_record(struct quota_rate *rate, const struct quota_window_config *config, double value, int64_t now_ms)
{
    if (rate->used == 0) {
        rate->samples[0] = (struct quota_sample){.start_ms = now_ms, .value = 0};
        rate->used = 1;
        rate->current = 0;
    }
    struct quota_sample *sample = &rate->samples[rate->current];
    if (now_ms - sample->start_ms >= config->window_ms) {
        rate->current = (rate->current + 1) % config->samples;
        if (rate->current >= rate->used)
            rate->used++;
        sample = &rate->samples[rate->current];
        *sample = (struct quota_sample){.start_ms = now_ms, .value = 0};
    }
    sample->value += value;
}

/* Samples older than the whole window count for nothing. */
static void quota_rate_purge(struct quota_rate *rate, const struct quota_window_config *config, int64_t now_ms)
{
    int64_t expire_age = (int64_t)config->samples * config->window_ms;
    for (int32_t i = 0; i < rate->used; i++) {
        if (now_ms - rate->samples[i].start_ms >= expire_age)
            rate->samples[i] = (struct quota_sample){.start_ms = now_ms, .value = 0};
    }
}

int64_t quota_rate_window_ms(struct quota_rate *rate, const struct quota_window_config *config, int64_t now_ms)
{
    quota_rate_purge(rate, config, now_ms);
    int64_t oldest = now_ms;
    for (int32_t i = 0; i < rate->used; i++) {
        if (rate->samples[i].start_ms < oldest)
            oldest = rate->samples[i].start_ms;
    }
    int64_t elapsed = now_ms - oldest;
    int64_t full_windows = elapsed / config->window_ms;
    int64_t min_full_windows = config->samples - 1;
    /* A young rate is measured over most of the window, so one burst does
     * not read as a huge rate. */
    if (full_windows < min_full_windows)
        elapsed += (min_full_windows - full_windows) * config->window_ms;
    return elapsed;
}

double quota_rate_measure(struct quota_rate *rate, const struct quota_window_config *config, int64_t now_ms)
{
    int64_t window_ms = quota_rate_window_ms(rate, config, now_ms);
    double total = 0;
    for (int32_t i = 0; i < rate->used; i++)
        total += rate->samples[i].value;
    return window_ms > 0 ? total / ((double)window_ms / 1000.0) : 0;
}

int32_t quota_throttle_ms(double rate, double limit, int64_t window_ms, const struct quota_window_config *config)
{
    if (!(limit > 0) || !(rate > limit))
        return 0;
    double max_ms = (double)config->samples * (double)config->window_ms;
    double throttle = (rate - limit) / limit * (double)window_ms;
    if (!(throttle < max_ms))
        throttle = max_ms;
    if (throttle > INT32_MAX)
        throttle = INT32_MAX;
    return (int32_t)llround(throttle);
}

/* One usage bucket. Fields other than rate, bucket, last_record_ms and
 * lock are immutable; those are guarded by lock. */
struct quota_sensor {
    struct quota_sensor *next;
    uint64_t hash;
    enum quota_type type;
    char *user_tag;
    char *client_tag;
    pthread_mutex_t lock;
    int64_t last_record_ms;
    struct quota_rate rate;
    struct quota_token_bucket bucket;
};

static uint64_t quota_hash(enum quota_type type, const char *user, const char *client)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)type;
    for (const unsigned char *p = (const unsigned char *)user; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull; /* separates "ab","c" from "a","bc" */
    for (const unsigned char *p = (const unsigned char *)client; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

int quota_throttle_algorithm_parse(const char *text, enum quota_throttle_algorithm *out)
{
    if (strcmp(text, "token-bucket") == 0)
        *out = QUOTA_THROTTLE_TOKEN_BUCKET;
    else if (strcmp(text, "sampled-rate") == 0)
        *out = QUOTA_THROTTLE_SAMPLED_RATE;
    else
        return CAIRN_INVALID;
    return CAIRN_OK;
}

int quota_sensor_table_init(struct quota_sensor_table *table, const struct quota_window_config *window,
                            enum quota_throttle_algorithm algorithm)
{
    memset(table, 0, sizeof(*table));
    table->buckets = calloc(QUOTA_INITIAL_BUCKETS, sizeof(*table->buckets));
    if (!table->buckets)
        return CAIRN_ERROR;
    table->bucket_count = QUOTA_INITIAL_BUCKETS;
    table->sweep_at = QUOTA_FIRST_SWEEP;
    table->idle_expiry_ms = QUOTA_IDLE_EXPIRY_MS;
    table->window = *window;
    table->algorithm = algorithm;
    pthread_rwlock_init(&table->lock, NULL);
    return CAIRN_OK;
}

static void quota_sensor_free(struct quota_sensor *sensor)
{
    free(sensor->user_tag);
    free(sensor->client_tag);
    quota_rate_free(&sensor->rate);
    pthread_mutex_destroy(&sensor->lock);
    free(sensor);
}

void quota_sensor_table_free(struct quota_sensor_table *table)
{
    for (size_t b = 0; b < table->bucket_count; b++) {
        struct quota_sensor *sensor = table->buckets ? table->buckets[b] : NULL;
        while (sensor) {
            struct quota_sensor *next = sensor->next;
            quota_sensor_free(sensor);
            sensor = next;
        }
    }
    free(table->buckets);
    table->buckets = NULL;
    pthread_rwlock_destroy(&table->lock);
}

static struct quota_sensor *quota_sensor_find(struct quota_sensor_table *table, uint64_t hash, enum quota_type type,
                                              const char *user, const char *client)
{
    for (struct quota_sensor *s = table->buckets[hash & (table->bucket_count - 1)]; s; s = s->next) {
        if (s->hash == hash && s->type == type && strcmp(s->user_tag, user) == 0 && strcmp(s->client_tag, client) == 0)
            return s;
    }
    return NULL;
}

/* Write lock held. Drops sensors idle longer than the expiry. */
static void quota_sensor_sweep(struct quota_sensor_table *table, int64_t now_ms)
{
    for (size_t b = 0; b < table->bucket_count; b++) {
        struct quota_sensor **link = &table->buckets[b];
        while (*link) {
            struct quota_sensor *sensor = *link;
            pthread_mutex_lock(&sensor->lock);
            bool idle = now_ms - sensor->last_record_ms > table->idle_expiry_ms;
            pthread_mutex_unlock(&sensor->lock);
            if (idle) {
                *link = sensor->next;
                quota_sensor_free(sensor);
                table->count--;
            } else {
                link = &sensor->next;
            }
        }
    }
    table->sweep_at = table->count * 2 > QUOTA_FIRST_SWEEP ? table->count * 2 : QUOTA_FIRST_SWEEP;
}

/* Write lock held. Doubling keeps chains short; failure to grow is harmless. */
static void quota_sensor_grow(struct quota_sensor_table *table)
{
    size_t new_count = table->bucket_count * 2;
    struct quota_sensor **buckets = calloc(new_count, sizeof(*buckets));
    if (!buckets)
        return;
    for (size_t b = 0; b < table->bucket_count; b++) {
        struct quota_sensor *sensor = table->buckets[b];
        while (sensor) {
            struct quota_sensor *next = sensor->next;
            size_t slot = sensor->hash & (new_count - 1);
            sensor->next = buckets[slot];
            buckets[slot] = sensor;
            sensor = next;
        }
    }
    free(table->buckets);
    table->buckets = buckets;
    table->bucket_count = new_count;
}

/* Write lock held. NULL when out of memory. */
static struct quota_sensor *quota_sensor_insert(struct quota_sensor_table *table, uint64_t hash, enum quota_type type,
                                                const char *user, const char *client, int64_t now_ms)
{
    if (table->count >= table->sweep_at)
        quota_sensor_sweep(table, now_ms);
    if (table->count >= table->bucket_count)
        quota_sensor_grow(table);
    struct quota_sensor *sensor = calloc(1, sizeof(*sensor));
    if (!sensor)
        return NULL;
    sensor->hash = hash;
    sensor->type = type;
    sensor->user_tag = strdup(user);
    sensor->client_tag = strdup(client);
    sensor->last_record_ms = now_ms;
    if (!sensor->user_tag || !sensor->client_tag || quota_rate_init(&sensor->rate, &table->window) != CAIRN_OK) {
        free(sensor->user_tag);
        free(sensor->client_tag);
        quota_rate_free(&sensor->rate);
        free(sensor);
        return NULL;
    }
    pthread_mutex_init(&sensor->lock, NULL);
    size_t slot = hash & (table->bucket_count - 1);
    sensor->next = table->buckets[slot];
    table->buckets[slot] = sensor;
    table->count++;
    return sensor;
}

static int32_t quota_sensor_update(struct quota_sensor_table *table, struct quota_sensor *sensor, double value,
                                   double limit, int64_t now_ms, bool strict)
{
    pthread_mutex_lock(&sensor->lock);
    sensor->last_record_ms = now_ms;
    if (strict) {
        double before = quota_rate_measure(&sensor->rate, &table->window, now_ms);
        int64_t window_ms = quota_rate_window_ms(&sensor->rate, &table->window, now_ms);
        int32_t throttle = quota_throttle_ms(before, limit, window_ms, &table->window);
        if (throttle == 0)
            quota_rate_record(&sensor->rate, &table->window, value, now_ms);
        pthread_mutex_unlock(&sensor->lock);
        return throttle;
    }
    if (table->algorithm == QUOTA_THROTTLE_TOKEN_BUCKET) {
        int32_t throttle = quota_bucket_record(&sensor->bucket, &table->window, value, limit, now_ms);
        pthread_mutex_unlock(&sensor->lock);
        return throttle;
    }
    quota_rate_record(&sensor->rate, &table->window, value, now_ms);
    double rate = quota_rate_measure(&sensor->rate, &table->window, now_ms);
    int64_t window_ms = quota_rate_window_ms(&sensor->rate, &table->window, now_ms);
    pthread_mutex_unlock(&sensor->lock);
    return quota_throttle_ms(rate, limit, window_ms, &table->window);
}

int32_t quota_sensor_record(struct quota_sensor_table *table, enum quota_type type, const struct quota_match *match,
                            double value, int64_t now_ms, bool strict)
{
    const char *user = match->user_tag ? match->user_tag : "";
    const char *client = match->client_tag ? match->client_tag : "";
    uint64_t hash = quota_hash(type, user, client);

    pthread_rwlock_rdlock(&table->lock);
    struct quota_sensor *sensor = quota_sensor_find(table, hash, type, user, client);
    if (sensor) {
        int32_t throttle = quota_sensor_update(table, sensor, value, match->limit, now_ms, strict);
        pthread_rwlock_unlock(&table->lock);
        return throttle;
    }
    pthread_rwlock_unlock(&table->lock);

    pthread_rwlock_wrlock(&table->lock);
    sensor = quota_sensor_find(table, hash, type, user, client);
    if (!sensor)
        sensor = quota_sensor_insert(table, hash, type, user, client, now_ms);
    int32_t throttle = sensor ? quota_sensor_update(table, sensor, value, match->limit, now_ms, strict) : 0;
    pthread_rwlock_unlock(&table->lock);
    return throttle;
}

size_t quota_sensor_count(struct quota_sensor_table *table)
{
    pthread_rwlock_rdlock(&table->lock);
    size_t count = table->count;
    pthread_rwlock_unlock(&table->lock);
    return count;
}
