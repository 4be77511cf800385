/* Everything needed to decode and encode Kafka messages: wire primitives,
 * error codes, the generated message structs and codecs, and the API and
 * metadata-record tables. */
#ifndef CAIRN_PROTOCOL_MESSAGES_H
#define CAIRN_PROTOCOL_MESSAGES_H

#include "protocol/wire.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/api_table.h"

#endif
