/* What the two sides of forwarding share: forwarding.c (the broker, which
 * wraps requests in Envelopes) and forwarding_controller.c (the
 * controller, which runs them). */
#ifndef CAIRN_SERVER_FORWARDING_INTERNAL_H
#define CAIRN_SERVER_FORWARDING_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/wire.h"

/* The principal of a broker's own requests (internal and auto-created
 * topics): decided by the broker, so the controller runs them without the
 * policies and the authorizer, as a combined node does. No client's
 * request is forwarded with it (see broker_forwarding_dispatch), and only
 * a sender with CLUSTER_ACTION may send Envelopes. */
#define FORWARDING_OWN_PRINCIPAL_TYPE "CairnBroker"

/* A frame's big-endian int16 (its API key at 0, its version at 2). */
static inline int16_t forwarding_be16(const uint8_t *p)
{
    return (int16_t)((uint16_t)p[0] << 8 | p[1]);
}

/* Kafka's principal serde (DefaultPrincipalData, version-prefixed):
 * int16 version 0, compact type, compact name, token flag, no tags. */
void forwarding_write_principal(struct kafka_writer *w, const char *type, const char *name);
/* 0 with both NUL-terminated in type and name, or -1 (unreadable, too
 * long, or a NUL inside). */
int forwarding_read_principal(struct kafka_bytes b, char *type, size_t type_len, char *name, size_t name_len);

#endif
