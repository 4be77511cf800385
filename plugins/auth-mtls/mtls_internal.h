/* auth-mtls: the principal of a TLS client from its certificate, through
 * Kafka's ssl.principal.mapping.rules. */
#ifndef CAIRN_PLUGIN_AUTH_MTLS_INTERNAL_H
#define CAIRN_PLUGIN_AUTH_MTLS_INTERNAL_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

/* One RULE:pattern/replacement/[LU], or DEFAULT (the name unchanged). */
struct mtls_rule {
    bool is_default;
    regex_t pattern; /* anchored: the whole name must match */
    char *replacement;
    char case_fold; /* 0, 'L' or 'U' */
};

/* Immutable after mtls_rules_parse; read concurrently by io threads. */
struct mtls_rules {
    struct mtls_rule *items;
    size_t count;
};

/* Parses Kafka's rule list. 0, or -1 with err naming the bad rule. */
int mtls_rules_parse(const char *text, struct mtls_rules *out, char *err, size_t errlen);
void mtls_rules_free(struct mtls_rules *rules);

/* The first rule matching name writes its result to out: 0; -1 when no
 * rule matches, the result is empty or does not fit. */
int mtls_rules_apply(const struct mtls_rules *rules, const char *name, char *out, size_t outlen);

#endif
