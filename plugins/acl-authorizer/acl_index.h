/* The ACL authorizer's index of bindings and Kafka's decision rules.
 *
 * Bindings are grouped by resource pattern (type, LITERAL or PREFIXED,
 * name) in one hash table. A decision on (type, name) looks up the LITERAL
 * name, the LITERAL "*" and each PREFIXED pattern the name starts with:
 * prefixes are probed only at lengths some prefix of that type has, the
 * hash of each is extended byte by byte, and a bit filter that stays in
 * cache turns most probes away before the table is touched.
 *
 * Thread-safety: none inside; the plugin guards an index with a rwlock
 * (decisions read, changes write). */
#ifndef CAIRN_ACL_INDEX_H
#define CAIRN_ACL_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn/authz.h"

struct acl_index;

struct acl_index *acl_index_new(void);
void acl_index_free(struct acl_index *idx);

/* Adds a binding; one already held under the same id is left alone.
 * Returns 0, or -1 on allocation failure or a binding no decision could
 * use (an unknown resource type or pattern). */
int acl_index_add(struct acl_index *idx, const struct cairn_acl_binding *b);
/* Removes the binding with b's id from b's resource; absent is fine. */
void acl_index_remove(struct acl_index *idx, const struct cairn_acl_binding *b);
/* Drops every binding. */
void acl_index_clear(struct acl_index *idx);
size_t acl_index_count(const struct acl_index *idx);

/* Kafka's decision for principal ("User:alice") from host doing operation
 * on the LITERAL resource (type, name): a matching DENY wins; else an
 * ALLOW of the operation, of ALL, or one that implies it (READ, WRITE,
 * DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS);
 * with no binding on the resource at all, allow_if_none. */
bool acl_index_allows(const struct acl_index *idx, const char *principal, const char *host, int32_t operation,
                      int32_t resource_type, const char *name, bool allow_if_none);

#endif
