/* Kafka's rules for a topic name, in one place for every layer that takes a
 * name from outside: the request handlers, the metadata controller and the
 * log manager. Lives in util (not protocol or metadata) because it needs
 * nothing but bytes and every layer already depends on util; callers map a
 * refusal onto their own error value (INVALID_TOPIC_EXCEPTION at the Kafka
 * edge). Stateless; safe from any thread. */
#ifndef CAIRN_UTIL_TOPIC_NAME_H
#define CAIRN_UTIL_TOPIC_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define TOPIC_NAME_MAX_LEN 249

/* True when the len bytes at name (no NUL needed) are a legal topic name:
 * 1 to TOPIC_NAME_MAX_LEN characters of [a-zA-Z0-9._-], not "." or "..".
 * When not, and err is not NULL, err receives Kafka's own message for the
 * first rule broken. */
bool topic_name_valid(const char *name, size_t len, char *err, size_t errlen);

#endif
