/* Kafka's topic name rules (see topic_name.h); the messages are the ones
 * Kafka's Topic.validate gives, which clients show to users. */
#include "util/topic_name.h"

#include <stdio.h>
#include <string.h>

static bool legal_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

bool topic_name_valid(const char *name, size_t len, char *err, size_t errlen)
{
    const char *why = NULL;
    if (!name || len == 0)
        why = "Topic name is illegal, it can't be empty";
    else if ((len == 1 && name[0] == '.') || (len == 2 && memcmp(name, "..", 2) == 0))
        why = "Topic name cannot be \".\" or \"..\"";
    if (why) {
        if (err && errlen)
            snprintf(err, errlen, "%s", why);
        return false;
    }
    if (len > TOPIC_NAME_MAX_LEN) {
        if (err && errlen)
            snprintf(err, errlen, "Topic name is illegal, it can't be longer than %d characters", TOPIC_NAME_MAX_LEN);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (legal_char(name[i]))
            continue;
        if (err && errlen)
            snprintf(err, errlen,
                     "Topic name \"%.*s\" is illegal, it contains a character other than ASCII "
                     "alphanumerics, '.', '_' and '-'",
                     (int)len, name);
        return false;
    }
    return true;
}
