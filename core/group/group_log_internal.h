/* State shared by the group log's files (open/store and load). */
#ifndef CAIRN_GROUP_GROUP_LOG_INTERNAL_H
#define CAIRN_GROUP_GROUP_LOG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group_log.h"

struct partition_log;

/* Immutable after group_log_open returns, so any thread may read it; the
 * partition logs it references are themselves thread-safe. */
struct group_log {
    int32_t partition_count;
    /* One reference per partition this broker holds a replica of; NULL when
     * not replicated here or its log could not be opened. */
    struct partition_log **partitions;
    bool *replicated_here;
    size_t load_buffer_size;
};

#endif
