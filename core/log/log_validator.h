/* The checks Kafka's LogValidator makes on the records of a batch a client
 * (or a coordinator) appends, beyond the framing record_batch_validate
 * already checked: a compressed batch is opened, with a bound, and its
 * records walked as an uncompressed one's are; CreateTime timestamps are
 * held to message.timestamp.before.max.ms / after.max.ms.
 *
 * Thread-safety: no state; works on the caller's buffers. */
#ifndef CAIRN_LOG_LOG_VALIDATOR_H
#define CAIRN_LOG_LOG_VALIDATOR_H
#include <stddef.h>
#include <stdint.h>

#include "log/log_config.h"
#include "protocol/record_batch.h"

/* Fewest bytes one record takes (length, attributes, timestamp delta,
 * offset delta, key and value lengths, header count: one byte each). */
#define LOG_VALIDATOR_MIN_RECORD_BYTES 7

/* Most bytes the records of a compressed batch declaring record_count
 * records may open to: no record larger than a whole batch may be, and
 * never more than log_decompressed_limit. */
size_t log_validator_decompress_bound(const struct log_config *cfg, int32_t record_count);

/* Check the records of batch (len = its total size, h its header, already
 * through record_batch_validate) as of now_ms. Returns KAFKA_ERR_NONE or:
 *  - CORRUPT_MESSAGE: a compressed payload that does not decompress within
 *    its bound;
 *  - INVALID_RECORD: a record count no batch of this size can hold, records
 *    that overrun, offset deltas not 0,1,2..., a count mismatch;
 *  - INVALID_TIMESTAMP: a CreateTime timestamp outside the topic's window,
 *    or a producer-set LogAppendTime;
 * with a message in err and, when the fault is one record's, its index in
 * the batch in *record_index (else -1). */
int16_t log_validate_records(const struct log_config *cfg, const uint8_t *batch, size_t len,
                             const struct record_batch_header *h, int64_t now_ms, int32_t *record_index, char *err,
                             size_t errlen);

#endif
