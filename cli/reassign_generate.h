/* cairn reassign generate: a balanced proposed assignment of whole topics
 * over a list of brokers, as kafka-reassign-partitions.sh --generate, with
 * the current assignment printed for rollback. */
#ifndef CAIRN_CLI_REASSIGN_GENERATE_H
#define CAIRN_CLI_REASSIGN_GENERATE_H
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define REASSIGN_PLAN_MAX_REPLICAS 64

/* One partition: its current replicas in, the proposal out. */
struct reassign_plan_partition {
    const char *topic;
    int32_t partition;
    int32_t current[REASSIGN_PLAN_MAX_REPLICAS];
    int32_t current_count;
    int32_t proposed[REASSIGN_PLAN_MAX_REPLICAS];
    int32_t proposed_count;
};

/* Fills each partition's proposal over brokers (distinct ids), keeping its
 * replication factor: a replica stays where it is while its broker carries
 * no more than its share (total replicas / brokers, rounded up), the rest
 * go to the least loaded brokers (round robin among equals), and the first
 * replica (the preferred leader) is the current one while its broker leads
 * no more than its share, else the chosen broker leading fewest. Returns 0,
 * or -1 with err filled when a partition has more replicas than brokers. */
int reassign_plan(struct reassign_plan_partition *parts, int32_t n, const int32_t *brokers, int32_t broker_count,
                  char *err, size_t errlen);

/* `cairn reassign generate --topics A,B --broker-list 1,2,3`: reads the
 * topics' assignment (Metadata) and prints it and the proposal as
 * {"version":1,"partitions":[{"topic","partition","replicas"}]} (with
 * --format json one object {"current", "proposed"}), then, in text, the
 * `cairn reassign start` commands that apply it. Returns the exit code;
 * c NULL only checks the arguments (-1 when they are good). */
int reassign_generate(struct cli_conn *c, const char *topics, const char *brokers, bool json);

#endif
