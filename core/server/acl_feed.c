/* Metadata image -> ACL host service. Both images keep their bindings
 * sorted by id, so a change is one merge walk over the two lists. */
#include "server/acl_feed.h"

#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_store.h"
#include "plugin/plugin_host.h"

/* Owned by the broker; fields are written by start and read afterwards. */
struct acl_feed {
    struct metadata_store *store;
    struct plugin_host *plugins;
    int subscription;
};

static void to_binding(const struct metadata_acl *a, struct cairn_acl_binding *b)
{
    b->struct_size = sizeof(*b);
    memcpy(b->id, a->id.bytes, sizeof(b->id));
    b->resource_type = a->resource_type;
    b->resource_name = a->resource_name ? a->resource_name : "";
    b->pattern_type = a->pattern_type;
    b->principal = a->principal ? a->principal : "";
    b->host = a->host ? a->host : "*";
    b->operation = a->operation;
    b->permission_type = a->permission_type;
}

/* A list of bindings handed across: the structs and the pointer array. */
struct binding_list {
    struct cairn_acl_binding *items;
    const struct cairn_acl_binding **ptrs;
    size_t count;
};

static int list_init(struct binding_list *l, size_t cap)
{
    l->count = 0;
    l->items = malloc((cap + 1) * sizeof(*l->items));
    l->ptrs = malloc((cap + 1) * sizeof(*l->ptrs));
    return l->items && l->ptrs ? 0 : -1;
}

static void list_add(struct binding_list *l, const struct metadata_acl *a)
{
    to_binding(a, &l->items[l->count]);
    l->ptrs[l->count] = &l->items[l->count];
    l->count++;
}

static void list_free(struct binding_list *l)
{
    free(l->items);
    free(l->ptrs);
}

static void snapshot(void *ctx, const struct cairn_acl_listener *listener)
{
    struct acl_feed *feed = ctx;
    const struct metadata_image *img = metadata_image_acquire(feed->store);
    struct binding_list all;
    if (list_init(&all, (size_t)img->acl_count) == 0) {
        for (int32_t i = 0; i < img->acl_count; i++)
            list_add(&all, &img->acls[i]);
        listener->on_acls(listener->arg, true, all.ptrs, all.count, NULL, 0);
    }
    list_free(&all);
    metadata_image_release(img);
}

static void on_image(void *ctx, const struct metadata_image *old_image, const struct metadata_image *new_image)
{
    struct acl_feed *feed = ctx;
    if (old_image && old_image->acl_count == 0 && new_image->acl_count == 0)
        return;
    int32_t old_count = old_image ? old_image->acl_count : 0;
    struct binding_list added, removed;
    if (list_init(&added, (size_t)new_image->acl_count) != 0 || list_init(&removed, (size_t)old_count) != 0) {
        list_free(&added);
        list_free(&removed);
        return;
    }
    int32_t i = 0, j = 0;
    while (i < old_count || j < new_image->acl_count) {
        int cmp;
        if (i == old_count)
            cmp = 1;
        else if (j == new_image->acl_count)
            cmp = -1;
        else
            cmp = memcmp(old_image->acls[i].id.bytes, new_image->acls[j].id.bytes, 16);
        if (cmp < 0)
            list_add(&removed, &old_image->acls[i++]);
        else if (cmp > 0)
            list_add(&added, &new_image->acls[j++]);
        else
            i++, j++; /* bindings never change under their id */
    }
    if (added.count > 0 || removed.count > 0)
        plugin_host_publish_acls(feed->plugins, added.ptrs, added.count, removed.ptrs, removed.count);
    list_free(&added);
    list_free(&removed);
}

int acl_feed_start(struct metadata_store *store, struct plugin_host *plugins, struct acl_feed **out)
{
    *out = NULL;
    if (!plugin_host_wants_acls(plugins))
        return 0;
    struct acl_feed *feed = calloc(1, sizeof(*feed));
    if (!feed)
        return -1;
    feed->store = store;
    feed->plugins = plugins;
    /* Subscribed first: a change landing during the snapshot arrives after
     * it, and listeners take changes as idempotent. */
    feed->subscription = metadata_store_subscribe(store, on_image, feed);
    if (feed->subscription < 0) {
        free(feed);
        return -1;
    }
    plugin_host_attach_acls(plugins, snapshot, feed);
    *out = feed;
    return 0;
}

void acl_feed_stop(struct acl_feed *feed)
{
    if (!feed)
        return;
    metadata_store_unsubscribe(feed->store, feed->subscription);
    plugin_host_detach_acls(feed->plugins);
    free(feed);
}
