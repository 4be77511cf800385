/* Parsing helpers of "key=value" config entries (see entry_text.h). */
#include "entry_text.h"

#include <ctype.h>
#include <string.h>

char *entry_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

bool entry_split_pair(char *pair, char **key, char **value)
{
    char *eq = strchr(pair, '=');
    if (!eq)
        return false;
    *eq = '\0';
    *key = entry_trim(pair);
    *value = entry_trim(eq + 1);
    return (*key)[0] != '\0' && (*value)[0] != '\0';
}
