/* The stages around the handler: request metrics, quota and throttling.
 * Private to the handlers module; called from dispatch.c on io threads. */
#ifndef CAIRN_HANDLERS_PIPELINE_H
#define CAIRN_HANDLERS_PIPELINE_H

#include "handlers/handlers.h"

/* Counts one request of ctx's API and its bytes in. */
void pipeline_count_request(struct request_context *ctx);
/* Counts response bytes out. */
void pipeline_count_response(size_t bytes);

/* True when some quota plugin wants usage reports. */
bool pipeline_quota_active(const struct request_context *ctx);
/* Reports the request's usage to the quota plugins; response_bytes is the
 * encoded response size (0 when none). Returns the throttle in ms. */
int32_t pipeline_quota_record(struct request_context *ctx, size_t response_bytes);
/* Writes throttle_ms into the response's throttle_time_ms when its API
 * version carries the field. True when it did. */
bool pipeline_set_throttle(struct request_context *ctx, int32_t throttle_ms);

#endif
