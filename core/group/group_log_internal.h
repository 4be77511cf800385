/* State shared by the group log's files (open/store and load). */
#ifndef CAIRN_GROUP_GROUP_LOG_INTERNAL_H
#define CAIRN_GROUP_GROUP_LOG_INTERNAL_H

#include <stddef.h>

#include "group/group_log.h"

struct internal_topic;

/* Immutable after group_log_open returns, so any thread may read it. */
struct group_log {
    struct internal_topic *topic;
    size_t load_buffer_size;
    int64_t commit_timeout_ms; /* offsets.commit.timeout.ms */
};

#endif
