/* State shared by the transaction log's files (open/write and load). */
#ifndef CAIRN_TXN_TXN_LOG_INTERNAL_H
#define CAIRN_TXN_TXN_LOG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txn/txn_log.h"

struct partition_log;

/* Immutable after txn_log_open returns; the partition logs it references
 * are themselves thread-safe. */
struct txn_log {
    int32_t partition_count;
    struct partition_log **partitions; /* NULL when not held here or unopenable */
    bool *replicated_here;
    size_t load_buffer_size;
};

#endif
