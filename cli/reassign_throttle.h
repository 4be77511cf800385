/* cairn reassign's replication throttle (KIP-73), as
 * kafka-reassign-partitions.sh --throttle and --verify set and clear it. */
#ifndef CAIRN_CLI_REASSIGN_THROTTLE_H
#define CAIRN_CLI_REASSIGN_THROTTLE_H
#include <stdint.h>

#include "cli.h"

/* Before a move of topic's partitions[i] onto targets[i] (target_counts[i]
 * ids each): leader.replication.throttled.rate and
 * follower.replication.throttled.rate set to rate on every broker holding
 * or receiving one of them, and the topic's
 * leader.replication.throttled.replicas naming the current replicas,
 * follower.replication.throttled.replicas the new ones. Returns 0 or an
 * exit code (message printed). */
int reassign_throttle_set(struct cli_conn *c, const char *topic, const int32_t *partitions, const int32_t *targets,
                          int32_t target_stride, const int32_t *target_counts, int32_t n, int64_t rate);
/* Once no partition moves: both rates deleted on every broker, and both
 * *.replicas keys deleted on topic. Returns 0 or an exit code. */
int reassign_throttle_clear(struct cli_conn *c, const char *topic);

#endif
