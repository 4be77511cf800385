/* Writes the seed corpus of fuzz_broker_requests into a directory: one
 * request for every API the broker serves at every served version, encoded
 * with the generated codecs. The APIs that matter most carry plausible
 * values (the harness's topics, group and transactional id, partition 0,
 * real v2 record batches in Produce; broker_request_fill.c fills them); the
 * rest are default-initialised, which still decodes and reaches the handler.
 * Produce seeds come with and without the fix-the-CRC flag. Layout:
 * broker_fuzz_input.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_fuzz_input.h"
#include "broker_request_fill.h"
#include "protocol/messages.h"

/* Appends one request of a seed (prefix and body) to out; a filled request
 * the version cannot carry is a bug in this file, reported as -1. */
static int append_request(struct kafka_writer *out, const struct kafka_api_desc *desc, int16_t version, int variant,
                          uint8_t flags, int *variants)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct seed s = {.arena = &arena, .version = version};
    void *msg = kafka_arena_alloc(&arena, desc->request_size_of);
    if (!msg)
        return -1;
    desc->request_init(msg);
    uint8_t *owned = NULL;
    *variants = fill_request(&s, desc->api_key, msg, variant, &owned);
    const uint8_t prefix[BROKER_FUZZ_PREFIX_LEN] = {(uint8_t)desc->api_key, (uint8_t)version, flags};
    kafka_write_raw(out, prefix, sizeof prefix);
    int rc = desc->request_encode(msg, out, version);
    if (rc != 0 || out->failed)
        fprintf(stderr, "broker_request_seeds: %s v%d variant %d does not encode\n", desc->name, version, variant);
    free(owned);
    kafka_arena_free(&arena);
    return rc == 0 && !out->failed ? 0 : -1;
}

static int write_file(const char *dir, const char *name, const struct kafka_writer *w)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return -1;
    }
    int ok = fwrite(w->buf, 1, w->len, f) == w->len;
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "%s: write failed\n", path);
        return -1;
    }
    return 0;
}

/* One request per file: every served (api, version, variant), and each
 * Produce once more with the fix-the-CRC flag. */
static int write_single(const char *dir, const struct kafka_api_desc *desc, int16_t version, int variant, int *variants)
{
    int rc = 0;
    for (uint8_t flags = 0; flags <= (desc->api_key == 0 ? 1 : 0) && rc == 0; flags++) {
        struct kafka_writer w;
        if (kafka_writer_init(&w, 256) != 0)
            return -1;
        rc = append_request(&w, desc, version, variant, flags, variants);
        char name[128];
        snprintf(name, sizeof name, "%s-v%d-%d-%u", desc->name, version, variant, flags);
        if (rc == 0)
            rc = write_file(dir, name, &w);
        kafka_writer_free(&w);
    }
    return rc;
}

/* Flows of several requests in one input, the order real clients use (and
 * a few out of order); placeholders carry ids from answer to request. */
struct flow_step {
    int16_t api_key, version;
    int variant;
    uint8_t flags;
};

struct flow {
    const char *name;
    struct flow_step steps[BROKER_FUZZ_MAX_REQUESTS];
    int count;
};

static const struct flow flows[] = {
    {"flow-txn-commit",
     {{22, 2, 0, 0},
      {24, 3, 0, 0},
      {0, 8, PRODUCE_TRANSACTIONAL, 1},
      {25, 3, 0, 0},
      {28, 3, 0, 0},
      {26, 3, 0, 0},
      {1, 11, 1, 0}},
     7},
    {"flow-txn-abort",
     {{22, 4, 0, 0},
      {24, 5, 0, 0},
      {0, 9, PRODUCE_TRANSACTIONAL, 1},
      {26, 4, 1, 0},
      {1, 12, 1, 0},
      {61, 0, 0, 0},
      {65, 0, 0, 0}},
     7},
    {"flow-txn-out-of-order",
     {{22, 3, 0, 0},
      {26, 3, 0, 0},
      {0, 8, PRODUCE_TRANSACTIONAL, 1},
      {28, 3, 0, 0},
      {24, 3, 0, 0},
      {26, 3, 1, 0},
      {27, 1, 0, 0}},
     7},
    {"flow-idempotent",
     {{22, 4, 1, 0}, {0, 9, PRODUCE_IDEMPOTENT, 1}, {0, 9, PRODUCE_IDEMPOTENT, 1}, {2, 7, 0, 0}, {61, 0, 0, 0}},
     5},
    {"flow-group",
     {{10, 4, 0, 0},
      {11, 5, 0, 0},
      {11, 5, 1, 0},
      {14, 5, 0, 0},
      {12, 4, 0, 0},
      {8, 8, 1, 0},
      {9, 8, 0, 0},
      {13, 4, 0, 0}},
     8},
    {"flow-group-old",
     {{11, 2, 0, 0},
      {14, 2, 0, 0},
      {12, 2, 0, 0},
      {8, 5, 1, 0},
      {15, 4, 0, 0},
      {13, 2, 0, 0},
      {47, 0, 0, 0},
      {42, 2, 0, 0}},
     8},
    {"flow-topic-admin",
     {{19, 7, 0, 0}, {37, 3, 0, 0}, {33, 2, 0, 0}, {32, 4, 0, 0}, {21, 2, 0, 0}, {35, 4, 0, 0}, {20, 6, 0, 0}},
     7},
};

static int write_flow(const char *dir, const struct flow *flow)
{
    struct kafka_writer w;
    if (kafka_writer_init(&w, 1024) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < flow->count && rc == 0; i++) {
        const struct flow_step *step = &flow->steps[i];
        const struct kafka_api_desc *desc = kafka_api_lookup(step->api_key);
        const struct api_handler_entry *entry = handlers_find(step->api_key);
        if (!desc || !entry || step->version < entry->min_version || step->version > entry->max_version) {
            fprintf(stderr, "broker_request_seeds: %s: api %d v%d is not served\n", flow->name, step->api_key,
                    step->version);
            rc = -1;
            break;
        }
        if (i > 0)
            kafka_write_raw(&w, BROKER_FUZZ_SEPARATOR, BROKER_FUZZ_SEPARATOR_LEN);
        int variants;
        rc = append_request(&w, desc, step->version, step->variant, step->flags, &variants);
    }
    if (rc == 0)
        rc = write_file(dir, flow->name, &w);
    kafka_writer_free(&w);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: broker_request_seeds DIR\n");
        return 2;
    }
    int count = 0;
    const struct api_handler_entry *table = handlers_table(&count);
    int failures = 0, written = 0;
    for (int i = 0; i < count; i++) {
        const struct kafka_api_desc *desc = kafka_api_lookup(table[i].api_key);
        if (!desc)
            continue;
        for (int16_t v = table[i].min_version; v <= table[i].max_version; v++) {
            int variants = 1;
            for (int variant = 0; variant < variants; variant++) {
                if (write_single(argv[1], desc, v, variant, &variants) != 0)
                    failures++;
                else
                    written++;
            }
        }
    }
    for (size_t i = 0; i < sizeof flows / sizeof flows[0]; i++) {
        if (write_flow(argv[1], &flows[i]) != 0)
            failures++;
        else
            written++;
    }
    fprintf(stderr, "broker_request_seeds: %d seeds written, %d failed\n", written, failures);
    return failures ? 1 : 0;
}
