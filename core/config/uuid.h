/* Kafka-style UUIDs: 16 random bytes written as 22 characters of unpadded
 * base64url (cluster.id, directory.id, topic ids). Thread-safe. */
#ifndef CAIRN_CONFIG_UUID_H
#define CAIRN_CONFIG_UUID_H
#include <stdbool.h>
#include <stdint.h>

#define UUID_BASE64URL_LEN 22

/* Random version-4 UUID that is never all zero and whose text form does not
 * start with '-' (it would read as a command-line option). Returns 0, or -1
 * when the kernel's random source fails. */
int uuid_random(uint8_t out[16]);

/* Writes 22 characters and a NUL. */
void uuid_to_base64url(const uint8_t uuid[16], char out[UUID_BASE64URL_LEN + 1]);

/* Accepts exactly 22 base64url characters whose unused trailing bits are
 * zero. Returns 0, or -1 for anything else. */
int uuid_from_base64url(const char *text, uint8_t out[16]);

bool uuid_is_zero(const uint8_t uuid[16]);

#endif
