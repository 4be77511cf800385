/* Kafka's ssl.principal.mapping.rules:
 *
 *   rules := rule { ("," | blank) rule }
 *   rule  := "DEFAULT" | "RULE:" pattern "/" replacement "/" [ "L" | "U" ]
 *
 * '\' escapes a '/' (or any character) in the pattern and replacement. A
 * rule applies when its pattern matches the whole name; the result is the
 * replacement with $1..$9 standing for the pattern's groups, then lower-
 * or upper-cased. Patterns are POSIX extended regular expressions, where
 * Kafka's are Java ones: a lazy quantifier (*?, +?) is taken as the greedy
 * one, and \d as [0-9]. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtls_internal.h"

#define MTLS_MAX_GROUPS 10

/* Reads up to the next unescaped '/' from *p into out (escapes kept for
 * the pattern, resolved for the replacement). -1 if none. */
static int read_part(const char **p, char *out, size_t outlen, bool keep_escapes)
{
    size_t n = 0;
    const char *s = *p;
    while (*s && *s != '/') {
        if (*s == '\\' && s[1]) {
            if (keep_escapes && s[1] != '/') {
                if (n + 1 < outlen)
                    out[n++] = '\\';
            }
            s++;
        }
        if (n + 1 < outlen)
            out[n++] = *s;
        s++;
    }
    out[n] = '\0';
    if (*s != '/')
        return -1;
    *p = s + 1;
    return 0;
}

/* Java regex -> POSIX ERE for the common cases, anchored. */
static void to_posix(const char *java, char *out, size_t outlen)
{
    size_t n = 0;
    if (java[0] != '^' && n + 1 < outlen)
        out[n++] = '^';
    for (const char *s = java; *s && n + 6 < outlen; s++) {
        if (*s == '\\' && s[1] == 'd') {
            memcpy(out + n, "[0-9]", 5);
            n += 5;
            s++;
            continue;
        }
        if (*s == '\\' && s[1]) {
            out[n++] = *s++;
            out[n++] = *s;
            continue;
        }
        if (*s == '?' && s > java && (s[-1] == '*' || s[-1] == '+' || s[-1] == '?' || s[-1] == '}') &&
            !(s - 1 > java && s[-2] == '\\'))
            continue; /* lazy quantifier: taken as greedy */
        out[n++] = *s;
    }
    size_t len = n;
    if ((len == 0 || out[len - 1] != '$' || (len > 1 && out[len - 2] == '\\')) && n + 1 < outlen)
        out[n++] = '$';
    out[n] = '\0';
}

static int add_rule(struct mtls_rules *rules, const struct mtls_rule *rule)
{
    struct mtls_rule *grown = realloc(rules->items, (rules->count + 1) * sizeof *grown);
    if (!grown)
        return -1;
    rules->items = grown;
    rules->items[rules->count++] = *rule;
    return 0;
}

int mtls_rules_parse(const char *text, struct mtls_rules *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *p = text ? text : "";
    for (;;) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        struct mtls_rule rule = {0};
        if (strncmp(p, "DEFAULT", 7) == 0) {
            rule.is_default = true;
            p += 7;
        } else if (strncmp(p, "RULE:", 5) == 0) {
            p += 5;
            char pattern[1024], posix[1200], replacement[512];
            if (read_part(&p, pattern, sizeof pattern, true) != 0 ||
                read_part(&p, replacement, sizeof replacement, false) != 0) {
                snprintf(err, errlen, "rule '%.60s' needs RULE:pattern/replacement/", start);
                mtls_rules_free(out);
                return -1;
            }
            if (*p == 'L' || *p == 'U')
                rule.case_fold = *p++;
            to_posix(pattern, posix, sizeof posix);
            int rc = regcomp(&rule.pattern, posix, REG_EXTENDED);
            if (rc != 0) {
                char why[128];
                regerror(rc, &rule.pattern, why, sizeof why);
                snprintf(err, errlen, "rule '%.60s': bad pattern: %s", start, why);
                mtls_rules_free(out);
                return -1;
            }
            rule.replacement = strdup(replacement);
            if (!rule.replacement) {
                regfree(&rule.pattern);
                snprintf(err, errlen, "out of memory");
                mtls_rules_free(out);
                return -1;
            }
        } else {
            snprintf(err, errlen, "'%.60s' is neither DEFAULT nor RULE:pattern/replacement/[LU]", start);
            mtls_rules_free(out);
            return -1;
        }
        if (*p && *p != ',' && !isspace((unsigned char)*p)) {
            snprintf(err, errlen, "unexpected '%.20s' after rule '%.60s'", p, start);
            if (!rule.is_default) {
                regfree(&rule.pattern);
                free(rule.replacement);
            }
            mtls_rules_free(out);
            return -1;
        }
        if (add_rule(out, &rule) != 0) {
            if (!rule.is_default) {
                regfree(&rule.pattern);
                free(rule.replacement);
            }
            snprintf(err, errlen, "out of memory");
            mtls_rules_free(out);
            return -1;
        }
    }
    if (out->count == 0) {
        snprintf(err, errlen, "no rules (use DEFAULT for the name unchanged)");
        return -1;
    }
    return 0;
}

void mtls_rules_free(struct mtls_rules *rules)
{
    for (size_t i = 0; i < rules->count; i++) {
        if (rules->items[i].is_default)
            continue;
        regfree(&rules->items[i].pattern);
        free(rules->items[i].replacement);
    }
    free(rules->items);
    memset(rules, 0, sizeof *rules);
}

/* Writes the replacement with $N expanded. -1 if it does not fit. */
static int expand(const char *name, const regmatch_t *groups, const char *replacement, char *out, size_t outlen)
{
    size_t n = 0;
    for (const char *r = replacement; *r; r++) {
        const char *piece = r;
        size_t len = 1;
        if (*r == '$' && isdigit((unsigned char)r[1])) {
            const regmatch_t *g = &groups[r[1] - '0'];
            r++;
            if (g->rm_so < 0)
                continue;
            piece = name + g->rm_so;
            len = (size_t)(g->rm_eo - g->rm_so);
        }
        if (n + len >= outlen)
            return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

int mtls_rules_apply(const struct mtls_rules *rules, const char *name, char *out, size_t outlen)
{
    for (size_t i = 0; i < rules->count; i++) {
        const struct mtls_rule *rule = &rules->items[i];
        if (rule->is_default) {
            if (strlen(name) >= outlen)
                return -1;
            snprintf(out, outlen, "%s", name);
            return out[0] ? 0 : -1;
        }
        regmatch_t groups[MTLS_MAX_GROUPS];
        if (regexec(&rule->pattern, name, MTLS_MAX_GROUPS, groups, 0) != 0)
            continue;
        if (expand(name, groups, rule->replacement, out, outlen) != 0)
            return -1;
        for (char *c = out; *c && rule->case_fold; c++)
            *c = (char)(rule->case_fold == 'L' ? tolower((unsigned char)*c) : toupper((unsigned char)*c));
        return out[0] ? 0 : -1;
    }
    return -1;
}
