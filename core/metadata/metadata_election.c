/* Leader election on broker fencing and unfencing (see metadata_election.h). */
#include "metadata/metadata_election.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"

static bool contains(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

bool metadata_elect_partition(const struct metadata_partition *p, int32_t remove_id, metadata_broker_live_fn is_live,
                              void *live_ctx, bool unclean, struct metadata_partition_change *out, int32_t *isr_buf)
{
    /* The target ISR: without the removed broker, unless it is the last
     * member (Kafka keeps it so the partition waits for that replica). */
    int32_t n = 0;
    for (int32_t i = 0; i < p->isr_count; i++)
        if (p->isr[i] != remove_id)
            isr_buf[n++] = p->isr[i];
    if (n == 0 && p->isr_count > 0) {
        memcpy(isr_buf, p->isr, (size_t)p->isr_count * sizeof(*isr_buf));
        n = p->isr_count;
    }
    int32_t leader = -1;
    if (p->leader >= 0 && p->leader != remove_id && contains(isr_buf, n, p->leader) && is_live(live_ctx, p->leader)) {
        leader = p->leader; /* still a valid leader: keep it */
    } else {
        for (int32_t i = 0; i < p->replica_count && leader < 0; i++) {
            int32_t r = p->replicas[i];
            if (r != remove_id && contains(isr_buf, n, r) && is_live(live_ctx, r))
                leader = r;
        }
        if (leader < 0 && unclean) {
            /* Unclean: a live replica outside the ISR, which may lack
             * acknowledged records; it becomes the ISR alone. */
            for (int32_t i = 0; i < p->replica_count && leader < 0; i++) {
                int32_t r = p->replicas[i];
                if (r != remove_id && is_live(live_ctx, r))
                    leader = r;
            }
            if (leader >= 0) {
                isr_buf[0] = leader;
                n = 1;
            }
        }
    }
    bool isr_changed = n != p->isr_count || memcmp(isr_buf, p->isr, (size_t)n * sizeof(*isr_buf)) != 0;
    if (leader == p->leader && !isr_changed)
        return false;
    *out = (struct metadata_partition_change){
        .partition_index = p->partition_index,
        .leader = leader == p->leader ? -2 : leader,
        .isr = isr_changed ? isr_buf : NULL,
        .isr_count = isr_changed ? n : 0,
    };
    return true;
}

static bool config_true(const char *v)
{
    return v && strcasecmp(v, "true") == 0;
}

/* The value a dynamic broker config resource gives key, or NULL. */
static const char *broker_config(const struct metadata_image *img, const char *resource, const char *key)
{
    const struct metadata_broker_config *first = NULL;
    int32_t n = metadata_image_broker_configs(img, resource, &first);
    for (int32_t i = 0; i < n; i++)
        if (strcmp(first[i].name, key) == 0)
            return first[i].value;
    return NULL;
}

bool metadata_unclean_election_enabled(const struct metadata_image *img, const struct metadata_topic *t,
                                       const struct metadata_unclean_source *src)
{
    const char *v = t ? metadata_topic_config(t, METADATA_UNCLEAN_ELECTION_KEY) : NULL;
    char node[16];
    snprintf(node, sizeof node, "%d", (int)src->controller_id);
    if (!v)
        v = broker_config(img, node, METADATA_UNCLEAN_ELECTION_KEY);
    if (!v)
        v = broker_config(img, "", METADATA_UNCLEAN_ELECTION_KEY);
    return v ? config_true(v) : src->static_default;
}

/* Liveness after the change: the image's, with one broker's replaced. */
struct liveness {
    const struct metadata_image *img;
    int32_t node_id;
    bool fenced;
};

static bool live_after(void *ctx, int32_t node_id)
{
    const struct liveness *l = ctx;
    if (node_id == l->node_id)
        return !l->fenced;
    const struct metadata_broker *br = metadata_image_broker(l->img, node_id);
    return br && !br->fenced;
}

int32_t metadata_election_for_broker(const struct metadata_image *img, int32_t node_id, bool fenced,
                                     const struct metadata_unclean_source *unclean_src,
                                     struct metadata_record_list *records)
{
    struct liveness live = {img, node_id, fenced};
    int32_t written = 0;
    int32_t *buf = NULL;
    int32_t cap = 0;
    for (int32_t ti = 0; ti < img->topic_count; ti++) {
        const struct metadata_topic *t = img->topics[ti];
        bool unclean = metadata_unclean_election_enabled(img, t, unclean_src);
        for (int32_t pi = 0; pi < t->partition_count; pi++) {
            const struct metadata_partition *p = &t->partitions[pi];
            if (!p->present)
                continue;
            /* Fencing touches partitions the broker is in the ISR of or
             * leads; unfencing, only partitions without a leader. */
            if (fenced ? !(p->leader == node_id || contains(p->isr, p->isr_count, node_id)) : p->leader >= 0)
                continue;
            int32_t need = p->replica_count + p->isr_count + 1;
            if (need > cap) {
                int32_t *grown = realloc(buf, (size_t)need * sizeof(*buf));
                if (!grown) {
                    free(buf);
                    return -1;
                }
                buf = grown;
                cap = need;
            }
            struct metadata_partition_change c;
            if (!metadata_elect_partition(p, fenced ? node_id : -1, live_after, &live, unclean, &c, buf))
                continue;
            metadata_record_write_partition_change(&records->w, &t->topic_id, &c);
            if (metadata_record_list_mark(records) != 0) {
                free(buf);
                return -1;
            }
            written++;
        }
    }
    free(buf);
    return records->w.failed ? -1 : written;
}
