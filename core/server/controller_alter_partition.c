#include "server/controller_alter_partition.h"

#include <string.h>

#include "metadata/metadata_alter_partition.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

#define LOG "controller"

/* Each partition of in as a change; NULL on allocation failure. */
static struct metadata_isr_change *changes_of(const struct alter_partition_request *in, int16_t version, int32_t *count,
                                              struct kafka_arena *arena)
{
    int32_t n = 0;
    for (int32_t t = 0; t < in->topics_count; t++)
        n += in->topics[t].partitions_count > 0 ? in->topics[t].partitions_count : 0;
    *count = n;
    struct metadata_isr_change *all = kafka_arena_alloc(arena, (size_t)(n > 0 ? n : 1) * sizeof(*all));
    if (!all)
        return NULL;
    int32_t k = 0;
    for (int32_t t = 0; t < in->topics_count; t++) {
        const struct alter_partition_request_topic_data *td = &in->topics[t];
        for (int32_t i = 0; i < td->partitions_count; i++) {
            const struct alter_partition_request_partition_data *pd = &td->partitions[i];
            /* Versions 0-2 name the ISR without broker epochs: -1, unchecked. */
            int32_t isr_n = version >= 3 ? pd->new_isr_with_epochs_count : pd->new_isr_count;
            if (isr_n < 0)
                isr_n = 0;
            struct metadata_isr_member *isr = kafka_arena_alloc(arena, (size_t)(isr_n > 0 ? isr_n : 1) * sizeof(*isr));
            if (!isr)
                return NULL;
            for (int32_t j = 0; j < isr_n; j++)
                isr[j] = version >= 3 ? (struct metadata_isr_member){pd->new_isr_with_epochs[j].broker_id,
                                                                     pd->new_isr_with_epochs[j].broker_epoch}
                                      : (struct metadata_isr_member){pd->new_isr[j], -1};
            all[k++] = (struct metadata_isr_change){
                .topic_name = td->topic_name.data,
                .topic_name_len = td->topic_name.len > 0 ? (size_t)td->topic_name.len : 0,
                .topic_id = td->topic_id,
                .partition_index = pd->partition_index,
                .leader_epoch = pd->leader_epoch,
                .partition_epoch = pd->partition_epoch,
                .leader_recovery_state = pd->leader_recovery_state,
                .isr = isr,
                .isr_count = isr_n,
            };
        }
    }
    return all;
}

void controller_alter_partition(struct metadata_store *store, const struct alter_partition_request *in, int16_t version,
                                struct alter_partition_response *out, struct kafka_arena *arena)
{
    int32_t n = 0;
    struct metadata_isr_change *changes = changes_of(in, version, &n, arena);
    struct alter_partition_response_topic_data *topics = kafka_arena_alloc(
        arena, (size_t)(in->topics_count > 0 ? in->topics_count : 1) * sizeof(*topics));
    if (!changes || !topics) {
        out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        return;
    }
    char err[256] = "";
    out->error_code = metadata_alter_partition(store, in->broker_id, in->broker_epoch, version, changes, n, err,
                                               sizeof err);
    if (out->error_code != KAFKA_ERR_NONE) {
        if (out->error_code != KAFKA_ERR_NOT_CONTROLLER)
            logger_info(LOG, "AlterPartition from broker %d: %s (error %d)", (int)in->broker_id, err,
                        (int)out->error_code);
        return; /* a request-level error answers with no topics */
    }
    int32_t k = 0;
    for (int32_t t = 0; t < in->topics_count; t++) {
        const struct alter_partition_request_topic_data *td = &in->topics[t];
        struct alter_partition_response_topic_data *rt = &topics[t];
        alter_partition_response_topic_data_init(rt);
        rt->topic_name = td->topic_name;
        rt->topic_id = td->topic_id;
        int32_t pn = td->partitions_count > 0 ? td->partitions_count : 0;
        rt->partitions = kafka_arena_alloc(arena, (size_t)(pn > 0 ? pn : 1) * sizeof(*rt->partitions));
        if (!rt->partitions) {
            out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            return;
        }
        rt->partitions_count = pn;
        for (int32_t i = 0; i < pn; i++) {
            const struct metadata_isr_change *c = &changes[k++];
            struct alter_partition_response_partition_data *rp = &rt->partitions[i];
            alter_partition_response_partition_data_init(rp);
            rp->partition_index = c->partition_index;
            rp->error_code = c->error_code;
            if (c->error_code != KAFKA_ERR_NONE)
                continue;
            rp->leader_id = c->leader;
            rp->leader_epoch = c->new_leader_epoch;
            rp->partition_epoch = c->new_partition_epoch;
            rp->leader_recovery_state = 0;
            rp->isr = kafka_arena_alloc(arena, (size_t)(c->isr_count > 0 ? c->isr_count : 1) * sizeof(*rp->isr));
            if (!rp->isr) {
                out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
                return;
            }
            for (int32_t j = 0; j < c->isr_count; j++)
                rp->isr[j] = c->isr[j].broker_id;
            rp->isr_count = c->isr_count;
        }
    }
    out->topics = topics;
    out->topics_count = in->topics_count;
}
