/* Topic config changes the config tests share: AlterConfigs through
 * librdkafka's admin client, IncrementalAlterConfigs v0 as a raw request
 * (librdkafka 2.0.2 has no call for it). Test thread only. */
#ifndef CAIRN_TESTS_TOPIC_CONFIGS_H
#define CAIRN_TESTS_TOPIC_CONFIGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

/* One config change for AlterConfigs: value NULL leaves the key out. */
struct alter_kv {
    const char *name;
    const char *value;
};

/* Runs AlterConfigs on one topic; returns the resource's error and fills errstr. */
rd_kafka_resp_err_t alter_topic_configs(rd_kafka_t *rk, const char *topic, const struct alter_kv *kvs, int n,
                                        bool validate_only, char *errstr, size_t errlen);

/* AlterConfigs of a topic (librdkafka 2.0 has no incremental one)
 * through rk's broker: key=value, the other configs back to defaults;
 * waits up to 30 s for the answer. */
rd_kafka_resp_err_t rk_set_topic_config(rd_kafka_t *rk, const char *topic, const char *key, const char *value);

/* One IncrementalAlterConfigs v0 change (op: 0 SET, 1 DELETE, 2 APPEND,
 * 3 SUBTRACT) of one topic key at the broker on port; returns the
 * resource's error, msg its message. */
int16_t incremental_alter(int port, const char *topic, const char *name, int8_t op, const char *value, char *msg,
                          size_t msglen);

#endif
