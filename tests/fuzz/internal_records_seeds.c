/* Writes the seed corpus of fuzz_internal_records into a directory: a
 * metadata replay (feature level, topic, partitions, configs, a partition
 * change, producer ids, topic removal) and __consumer_offsets key/value
 * pairs (offset commits and a group with a member), all from Cairn's own
 * encoders, so a short run starts from records that apply. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_log_codec.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_records.h"

/* The corpus file being built: selector byte, then length-prefixed items. */
struct seed {
    uint8_t buf[1 << 16];
    size_t len;
    int failed;
};

static void seed_item(struct seed *s, struct kafka_writer *w)
{
    if (w->failed || kafka_writer_flatten(w) != 0 || w->len > 0xffff || s->len + 2 + w->len > sizeof s->buf) {
        s->failed = 1;
    } else {
        s->buf[s->len++] = (uint8_t)(w->len >> 8);
        s->buf[s->len++] = (uint8_t)w->len;
        memcpy(s->buf + s->len, w->buf, w->len);
        s->len += w->len;
    }
    kafka_writer_free(w);
    kafka_writer_init(w, 256);
}

static int seed_write(const char *dir, const char *name, const struct seed *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || s->failed || fwrite(s->buf, 1, s->len, f) != s->len) {
        fprintf(stderr, "%s: cannot write the seed\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}

static void metadata_seed(struct seed *s)
{
    struct kafka_writer w;
    kafka_writer_init(&w, 256);
    s->buf[s->len++] = 0;
    struct kafka_uuid id = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
    metadata_record_write_feature_level(&w, "metadata.version", METADATA_VERSION_LEVEL);
    seed_item(s, &w);
    metadata_record_write_topic(&w, "events", &id);
    seed_item(s, &w);
    int32_t replicas[] = {1};
    for (int32_t p = 0; p < 2; p++) {
        struct metadata_partition part = {.present = true,
                                          .partition_index = p,
                                          .leader = 1,
                                          .replicas = replicas,
                                          .replica_count = 1,
                                          .isr = replicas,
                                          .isr_count = 1};
        metadata_record_write_partition(&w, &id, &part);
        seed_item(s, &w);
    }
    metadata_record_write_config(&w, 2, "events", "cleanup.policy", "compact");
    seed_item(s, &w);
    metadata_record_write_config(&w, 2, "events", "retention.ms", NULL);
    seed_item(s, &w);
    metadata_record_write_producer_ids(&w, 1, 5, 1000);
    seed_item(s, &w);
    metadata_record_write_unfence_broker(&w, 1, 5);
    seed_item(s, &w);
    metadata_record_write_remove_topic(&w, &id);
    seed_item(s, &w);
    kafka_writer_free(&w);
}

static void offsets_seed(struct seed *s)
{
    struct kafka_writer w;
    kafka_writer_init(&w, 256);
    s->buf[s->len++] = 1;
    for (int32_t p = 0; p < 2; p++) {
        group_log_encode_offset_key(&w, "group-a", "events", p);
        seed_item(s, &w);
        struct group_offset_record rec = {.topic = "events",
                                          .partition = p,
                                          .offset = 42 + p,
                                          .leader_epoch = 3,
                                          .metadata = "m",
                                          .metadata_len = 1,
                                          .commit_timestamp = 1700000000000,
                                          .expire_timestamp = -1};
        group_log_encode_offset_value(&w, &rec);
        seed_item(s, &w);
    }
    group_log_encode_group_key(&w, "group-a");
    seed_item(s, &w);
    static const uint8_t subscription[] = {0, 1, 0, 0, 0, 1, 0, 6, 'e', 'v', 'e', 'n', 't', 's'};
    struct group_member_record member = {.member_id = "member-1",
                                         .client_id = "client",
                                         .client_host = "/127.0.0.1",
                                         .rebalance_timeout_ms = 30000,
                                         .session_timeout_ms = 10000,
                                         .subscription = subscription,
                                         .subscription_len = sizeof subscription,
                                         .assignment = subscription,
                                         .assignment_len = sizeof subscription};
    struct group_snapshot_record group = {.group_id = "group-a",
                                          .protocol_type = "consumer",
                                          .generation = 4,
                                          .protocol = "range",
                                          .leader = "member-1",
                                          .current_state_timestamp = 1700000000000,
                                          .members = &member,
                                          .member_count = 1};
    group_log_encode_group_value(&w, &group);
    seed_item(s, &w);
    kafka_writer_free(&w);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: internal_records_seeds DIR\n");
        return 2;
    }
    static struct seed metadata, offsets;
    metadata_seed(&metadata);
    offsets_seed(&offsets);
    int rc = seed_write(argv[1], "metadata-replay", &metadata);
    rc |= seed_write(argv[1], "offsets-replay", &offsets);
    return rc == 0 ? 0 : 1;
}
