/* The request bodies of the broker fuzz seeds: one filled request per
 * (api, version, variant), with the values the harness knows (its topics,
 * group, transactional id, placeholders for ids the broker hands out).
 * broker_request_seeds.c encodes them and writes the corpus.
 *
 * Thread-safety: single-threaded; a seed and what it fills belong to its caller. */
#ifndef CAIRN_TESTS_FUZZ_BROKER_REQUEST_FILL_H
#define CAIRN_TESTS_FUZZ_BROKER_REQUEST_FILL_H

#include <stdint.h>

#include "protocol/messages.h"

/* Seed-building state of one (api, version): the arena owns every array. */
struct seed {
    struct kafka_arena *arena;
    int16_t version;
};

/* Produce: kind 0 a plain batch with headers, 1 a transactional batch of
 * the last initialised producer, 2-5 librdkafka's compressed batches,
 * 6 acks=0, 7 an idempotent batch of the last initialised producer. */
enum { PRODUCE_TRANSACTIONAL = 1, PRODUCE_ACKS_0 = 6, PRODUCE_IDEMPOTENT = 7, PRODUCE_KINDS = 8 };

/* Fills msg for (api_key, version); variant picks among several seeds of
 * one API. Returns how many variants the API has. Arrays live in s->arena;
 * a Produce batch built here goes to *owned, which the caller frees. */
int fill_request(struct seed *s, int16_t api_key, void *msg, int variant, uint8_t **owned);

#endif
