/* State shared by the transaction log's files (open/write and load). */
#ifndef CAIRN_TXN_TXN_LOG_INTERNAL_H
#define CAIRN_TXN_TXN_LOG_INTERNAL_H

#include <stddef.h>

#include "txn/txn_log.h"

struct internal_topic;

/* Immutable after txn_log_open returns, so any thread may read it. */
struct txn_log {
    struct internal_topic *topic;
    size_t load_buffer_size;
};

#endif
