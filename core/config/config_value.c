#include "config/config_registry.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void type_bounds(enum config_type type, int64_t *lo, int64_t *hi)
{
    switch (type) {
    case CONFIG_TYPE_SHORT:
        *lo = INT16_MIN;
        *hi = INT16_MAX;
        break;
    case CONFIG_TYPE_INT:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    default:
        *lo = INT64_MIN;
        *hi = INT64_MAX;
        break;
    }
}

static void effective_bounds(const struct config_key_def *def, int64_t *lo, int64_t *hi)
{
    type_bounds(def->type, lo, hi);
    if (def->validator == CONFIG_VALID_RANGE) {
        if (def->min > *lo)
            *lo = def->min;
        if (def->max < *hi)
            *hi = def->max;
    }
}

static void choices_for_display(const char *choices, char *buf, size_t buflen)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const char *p = choices; *p && used + 3 < buflen; p++) {
        if (*p == ',') {
            buf[used++] = ',';
            buf[used++] = ' ';
        } else {
            buf[used++] = *p;
        }
    }
    buf[used] = '\0';
}

void config_expected_form(const struct config_key_def *def, char *buf, size_t buflen)
{
    char choices[256];
    switch (def->type) {
    case CONFIG_TYPE_BOOLEAN:
        snprintf(buf, buflen, "true or false");
        return;
    case CONFIG_TYPE_SHORT:
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_LONG: {
        int64_t lo, hi;
        effective_bounds(def, &lo, &hi);
        snprintf(buf, buflen, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
        return;
    }
    case CONFIG_TYPE_DOUBLE:
        if (def->validator == CONFIG_VALID_DOUBLE_RANGE)
            snprintf(buf, buflen, "a number in [%g, %g]", def->dmin, def->dmax);
        else
            snprintf(buf, buflen, "a number");
        return;
    default:
        break;
    }
    if (def->validator == CONFIG_VALID_ONE_OF) {
        choices_for_display(def->choices, choices, sizeof choices);
        snprintf(buf, buflen, "one of: %s", choices);
    } else if (def->validator == CONFIG_VALID_LIST_OF) {
        choices_for_display(def->choices, choices, sizeof choices);
        snprintf(buf, buflen, "a comma-separated list of: %s", choices);
    } else if (def->type == CONFIG_TYPE_LIST) {
        snprintf(buf, buflen, "a comma-separated list");
    } else {
        snprintf(buf, buflen, "a string");
    }
}

static char *trimmed_copy(const char *s, size_t len)
{
    while (len > 0 && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    return strndup(s, len);
}

static bool parse_int64(const char *s, int64_t *out)
{
    if (*s == '\0')
        return false;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return false;
    *out = (int64_t)v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    if (*s == '\0')
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool choice_allowed(const struct config_key_def *def, const char *value)
{
    size_t vlen = strlen(value);
    const char *p = def->choices;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == vlen &&
            ((def->flags & CONFIG_FLAG_NOCASE) ? strncasecmp(p, value, n) == 0 : strncmp(p, value, n) == 0))
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

static int split_list(const char *text, struct config_parsed *out)
{
    const char *p = text;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char *item = trimmed_copy(p, n);
        if (!item)
            return -1;
        if (*item == '\0') {
            free(item);
        } else {
            char **grown = realloc(out->list, (out->list_len + 1) * sizeof *grown);
            if (!grown) {
                free(item);
                return -1;
            }
            out->list = grown;
            out->list[out->list_len++] = item;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

void config_parsed_free(struct config_parsed *parsed)
{
    if (!parsed)
        return;
    free(parsed->text);
    for (size_t i = 0; i < parsed->list_len; i++)
        free(parsed->list[i]);
    free(parsed->list);
    memset(parsed, 0, sizeof *parsed);
}

static int invalid(const struct config_key_def *def, const char *shown, char *err, size_t errlen)
{
    char form[320];
    config_expected_form(def, form, sizeof form);
    snprintf(err, errlen, "invalid value '%s' for '%s': expected %s", shown, def->name, form);
    return -1;
}

int config_value_parse(const struct config_key_def *def, const char *raw, struct config_parsed *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!raw) {
        out->is_null = true;
        return 0;
    }
    out->text = trimmed_copy(raw, strlen(raw));
    if (!out->text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Never echo a secret back in an error message. */
    const char *shown = def->type == CONFIG_TYPE_PASSWORD ? "[hidden]" : out->text;
    int64_t lo, hi;
    switch (def->type) {
    case CONFIG_TYPE_BOOLEAN:
        if (strcasecmp(out->text, "true") == 0)
            out->integer = 1;
        else if (strcasecmp(out->text, "false") == 0)
            out->integer = 0;
        else
            goto fail;
        break;
    case CONFIG_TYPE_SHORT:
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_LONG:
        effective_bounds(def, &lo, &hi);
        if (!parse_int64(out->text, &out->integer) || out->integer < lo || out->integer > hi)
            goto fail;
        break;
    case CONFIG_TYPE_DOUBLE:
        if (!parse_double(out->text, &out->number))
            goto fail;
        if (def->validator == CONFIG_VALID_DOUBLE_RANGE && (out->number < def->dmin || out->number > def->dmax))
            goto fail;
        break;
    case CONFIG_TYPE_LIST:
        if (split_list(out->text, out) < 0) {
            config_parsed_free(out);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (def->validator == CONFIG_VALID_LIST_OF) {
            if (out->list_len == 0)
                goto fail;
            for (size_t i = 0; i < out->list_len; i++)
                if (!choice_allowed(def, out->list[i]))
                    goto fail;
        }
        break;
    default:
        if (def->validator == CONFIG_VALID_ONE_OF && !choice_allowed(def, out->text))
            goto fail;
        /* Kafka keeps several list-valued keys as STRING (log.dirs, listeners). */
        if (def->type == CONFIG_TYPE_STRING && split_list(out->text, out) < 0) {
            config_parsed_free(out);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        break;
    }
    return 0;
fail:
    invalid(def, shown, err, errlen);
    config_parsed_free(out);
    return -1;
}

const char *config_type_name(enum config_type type)
{
    static const char *names[] = {"UNKNOWN", "BOOLEAN", "STRING", "INT",   "SHORT",
                                  "LONG",    "DOUBLE",  "LIST",   "CLASS", "PASSWORD"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "UNKNOWN";
}

const char *config_source_name(enum config_source source)
{
    static const char *names[] = {"UNKNOWN",
                                  "DYNAMIC_TOPIC_CONFIG",
                                  "DYNAMIC_BROKER_CONFIG",
                                  "DYNAMIC_DEFAULT_BROKER_CONFIG",
                                  "STATIC_BROKER_CONFIG",
                                  "DEFAULT_CONFIG"};
    return (unsigned)source < sizeof names / sizeof names[0] ? names[source] : "UNKNOWN";
}

const char *config_group_name(enum config_group group)
{
    static const char *names[] = {"Server", "Network",      "Log",     "Replication",
                                  "Groups", "Transactions", "Plugins", "Topic"};
    return (unsigned)group < sizeof names / sizeof names[0] ? names[group] : "Other";
}
