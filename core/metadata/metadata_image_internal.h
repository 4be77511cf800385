/* Helpers shared by the image and the builder; not part of the public API. */
#ifndef CAIRN_METADATA_METADATA_IMAGE_INTERNAL_H
#define CAIRN_METADATA_METADATA_IMAGE_INTERNAL_H
#include "metadata/metadata_builder.h"
#include "metadata/metadata_image.h"

/* The image a builder is changing (for builder code kept in other files). */
struct metadata_image *metadata_builder_image_mut(struct metadata_builder *b);

uint32_t metadata_hash_name(const char *name, size_t len);
uint32_t metadata_hash_id(const struct kafka_uuid *id);
void metadata_partition_clear(struct metadata_partition *p);
void metadata_topic_free(struct metadata_topic *t);
void metadata_topic_release(struct metadata_topic *t);
void metadata_broker_clear(struct metadata_broker *br);
void metadata_image_free(struct metadata_image *img);
/* (Re)builds the name and id hash tables; -1 on allocation failure. */
int metadata_image_index(struct metadata_image *img);

/* ACL list of an image (metadata_acl.c): deep copy for a builder, free,
 * structural equality. */
int metadata_acls_copy(struct metadata_image *dst, const struct metadata_image *src);
void metadata_acls_free(struct metadata_image *img);
bool metadata_acls_equal(const struct metadata_image *a, const struct metadata_image *b);

/* SCRAM credentials of an image (metadata_scram.c), likewise. */
int metadata_scrams_copy(struct metadata_image *dst, const struct metadata_image *src);
void metadata_scrams_free(struct metadata_image *img);
bool metadata_scrams_equal(const struct metadata_image *a, const struct metadata_image *b);

/* Client quotas of an image (metadata_quota.c), likewise. */
int metadata_quotas_copy(struct metadata_image *dst, const struct metadata_image *src);
void metadata_quotas_free(struct metadata_image *img);
bool metadata_quotas_equal(const struct metadata_image *a, const struct metadata_image *b);

#endif
