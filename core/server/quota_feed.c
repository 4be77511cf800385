/* Metadata image -> quota host service. Quotas are few (one per entity
 * and key), so every change hands over the whole set rather than a diff. */
#include "server/quota_feed.h"

#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_quota.h"
#include "metadata/metadata_store.h"
#include "plugin/plugin_host.h"

/* Owned by the broker; fields are written by start and read afterwards. */
struct quota_feed {
    struct metadata_store *store;
    struct plugin_host *plugins;
    int subscription;
};

static const char *part_name(const struct metadata_quota_entity *e, int type, int32_t *part)
{
    *part = e->part[type];
    return e->part[type] == METADATA_QUOTA_NAMED ? e->name[type] : NULL;
}

/* Calls deliver with the image's quotas in the ABI's shape. */
static void with_quotas(const struct metadata_image *img,
                        void (*deliver)(void *arg, const struct cairn_client_quota *const *quotas, size_t count),
                        void *arg)
{
    size_t n = img->quota_count > 0 ? (size_t)img->quota_count : 0;
    struct cairn_client_quota *items = calloc(n + 1, sizeof(*items));
    const struct cairn_client_quota **ptrs = calloc(n + 1, sizeof(*ptrs));
    if (items && ptrs) {
        for (size_t i = 0; i < n; i++) {
            const struct metadata_quota *q = &img->quotas[i];
            struct cairn_client_quota *c = &items[i];
            c->struct_size = sizeof(*c);
            c->user = part_name(&q->entity, METADATA_QUOTA_USER, &c->user_part);
            c->client_id = part_name(&q->entity, METADATA_QUOTA_CLIENT_ID, &c->client_id_part);
            c->ip = part_name(&q->entity, METADATA_QUOTA_IP, &c->ip_part);
            c->key = q->key;
            c->value = q->value;
            ptrs[i] = c;
        }
        deliver(arg, ptrs, n);
    }
    free(items);
    free(ptrs);
}

static void to_listener(void *arg, const struct cairn_client_quota *const *quotas, size_t count)
{
    const struct cairn_quota_listener *listener = arg;
    listener->on_quotas(listener->arg, quotas, count);
}

static void to_host(void *arg, const struct cairn_client_quota *const *quotas, size_t count)
{
    plugin_host_publish_quotas(arg, quotas, count);
}

static void snapshot(void *ctx, const struct cairn_quota_listener *listener)
{
    struct quota_feed *feed = ctx;
    const struct metadata_image *img = metadata_image_acquire(feed->store);
    with_quotas(img, to_listener, (void *)listener);
    metadata_image_release(img);
}

static bool same_quotas(const struct metadata_image *a, const struct metadata_image *b)
{
    if (a->quota_count != b->quota_count)
        return false;
    for (int32_t i = 0; i < a->quota_count; i++) {
        const struct metadata_quota *x = &a->quotas[i], *y = &b->quotas[i];
        if (metadata_quota_entity_cmp(&x->entity, &y->entity) != 0 || strcmp(x->key, y->key) != 0 ||
            x->value != y->value)
            return false;
    }
    return true;
}

static void on_image(void *ctx, const struct metadata_image *old_image, const struct metadata_image *new_image)
{
    struct quota_feed *feed = ctx;
    if (old_image && same_quotas(old_image, new_image))
        return;
    with_quotas(new_image, to_host, feed->plugins);
}

int quota_feed_start(struct metadata_store *store, struct plugin_host *plugins, struct quota_feed **out)
{
    *out = NULL;
    if (!plugin_host_wants_quotas(plugins))
        return 0;
    struct quota_feed *feed = calloc(1, sizeof(*feed));
    if (!feed)
        return -1;
    feed->store = store;
    feed->plugins = plugins;
    /* Subscribed first: a change landing during the first delivery is
     * delivered again after it, whole. */
    feed->subscription = metadata_store_subscribe(store, on_image, feed);
    if (feed->subscription < 0) {
        free(feed);
        return -1;
    }
    plugin_host_attach_quotas(plugins, snapshot, feed);
    *out = feed;
    return 0;
}

void quota_feed_stop(struct quota_feed *feed)
{
    if (!feed)
        return;
    metadata_store_unsubscribe(feed->store, feed->subscription);
    plugin_host_detach_quotas(feed->plugins);
    free(feed);
}
