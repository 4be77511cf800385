/* Shared by raft_codec.c and raft_codec_fetch.c. */
#ifndef CAIRN_RAFT_RAFT_CODEC_INTERNAL_H
#define CAIRN_RAFT_RAFT_CODEC_INTERNAL_H

#include "raft/raft_codec.h"

struct kafka_str raft_codec_cluster_str(const char *cluster_id, bool nullable);
bool raft_codec_cluster_ok(struct kafka_str got, const char *cluster_id);
bool raft_codec_topic_ok(struct kafka_str topic, int32_t n_partitions, int32_t partition);
/* Both fill err and return -1. */
int raft_codec_fail(char *err, size_t errlen, const char *what, const char *why);
int raft_codec_top_error(char *err, size_t errlen, const char *what, int16_t code);

int raft_codec_write_fetch_request(struct kafka_writer *w, int16_t version, const char *cluster_id,
                                   const struct raft_msg *m);
int raft_codec_read_fetch_request(int16_t version, struct kafka_reader *r, const char *cluster_id, struct raft_msg *out,
                                  struct kafka_arena *arena, char *err, size_t errlen);
/* m NULL: an answer carrying only top_error; leader NULL: no NodeEndpoints. */
int raft_codec_write_fetch_response(struct kafka_writer *w, int16_t version, int16_t top_error,
                                    const struct raft_msg *m, const struct raft_codec_endpoint *leader);
/* out's src, dst and correlation_id are already set; fetch_offset is the
 * request's, where the records must start. */
int raft_codec_read_fetch_response(const void *response, int64_t fetch_offset, struct raft_msg *out, char *err,
                                   size_t errlen);

#endif
