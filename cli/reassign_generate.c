/* cairn reassign generate (see reassign_generate.h). */
#include "reassign_generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define GENERATE_MAX_TOPICS 64
#define GENERATE_MAX_BROKERS 256

static int32_t index_of(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return i;
    return -1;
}

int reassign_plan(struct reassign_plan_partition *parts, int32_t n, const int32_t *brokers, int32_t broker_count,
                  char *err, size_t errlen)
{
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (parts[i].current_count > broker_count) {
            snprintf(err, errlen, "%s-%d has %d replicas, more than the %d brokers given", parts[i].topic,
                     (int)parts[i].partition, (int)parts[i].current_count, (int)broker_count);
            return -1;
        }
        total += parts[i].current_count;
    }
    if (broker_count <= 0)
        return n == 0 ? 0 : -1;
    int32_t *rload = calloc((size_t)broker_count, sizeof(*rload));
    int32_t *lload = calloc((size_t)broker_count, sizeof(*lload));
    bool *led = calloc((size_t)n + 1, sizeof(*led));
    if (!rload || !lload || !led) {
        free(rload);
        free(lload);
        free(led);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Each broker's share, rounded up: of the replicas, of the leaders. */
    int64_t rcap = (total + broker_count - 1) / broker_count;
    int64_t lcap = ((int64_t)n + broker_count - 1) / broker_count;
    /* First every partition keeps what it may, so a move elsewhere does
     * not take the room a later partition's current replica needs. */
    for (int32_t i = 0; i < n; i++) {
        struct reassign_plan_partition *p = &parts[i];
        p->proposed_count = 0;
        for (int32_t k = 0; k < p->current_count; k++) {
            int32_t at = index_of(brokers, broker_count, p->current[k]);
            if (at >= 0 && rload[at] < rcap && index_of(p->proposed, p->proposed_count, p->current[k]) < 0) {
                p->proposed[p->proposed_count++] = p->current[k];
                rload[at]++;
            }
        }
    }
    for (int32_t i = 0; i < n; i++) {
        struct reassign_plan_partition *p = &parts[i];
        while (p->proposed_count < p->current_count) {
            int32_t best = -1;
            for (int32_t k = 0; k < broker_count; k++) {
                int32_t at = (i + k) % broker_count; /* round robin among equals */
                if (index_of(p->proposed, p->proposed_count, brokers[at]) < 0 && (best < 0 || rload[at] < rload[best]))
                    best = at;
            }
            p->proposed[p->proposed_count++] = brokers[best];
            rload[best]++;
        }
    }
    /* Leaders likewise: the current ones first, then the least leading. */
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t i = 0; i < n; i++) {
            struct reassign_plan_partition *p = &parts[i];
            if (p->proposed_count == 0 || (pass == 1 && led[i]))
                continue;
            int32_t lead = p->current_count > 0 ? index_of(p->proposed, p->proposed_count, p->current[0]) : -1;
            if (pass == 0 && (lead < 0 || lload[index_of(brokers, broker_count, p->proposed[lead])] >= lcap))
                continue;
            if (pass == 1) {
                lead = 0;
                for (int32_t k = 1; k < p->proposed_count; k++)
                    if (lload[index_of(brokers, broker_count, p->proposed[k])] <
                        lload[index_of(brokers, broker_count, p->proposed[lead])])
                        lead = k;
            }
            int32_t leader = p->proposed[lead];
            memmove(&p->proposed[1], &p->proposed[0], (size_t)lead * sizeof(*p->proposed));
            p->proposed[0] = leader;
            lload[index_of(brokers, broker_count, leader)]++;
            led[i] = true;
        }
    }
    free(led);
    free(rload);
    free(lload);
    return 0;
}

static json_t *plan_json(const struct reassign_plan_partition *parts, int32_t n, bool proposed)
{
    json_t *arr = json_array();
    for (int32_t i = 0; i < n; i++) {
        const int32_t *ids = proposed ? parts[i].proposed : parts[i].current;
        int32_t count = proposed ? parts[i].proposed_count : parts[i].current_count;
        json_t *reps = json_array();
        for (int32_t k = 0; k < count; k++)
            json_array_append_new(reps, json_integer(ids[k]));
        json_array_append_new(arr, json_pack("{s:s, s:i, s:o}", "topic", parts[i].topic, "partition",
                                             (int)parts[i].partition, "replicas", reps));
    }
    return json_pack("{s:i, s:o}", "version", 1, "partitions", arr);
}

static void print_compact(json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("%s\n", text ? text : "null");
    free(text);
    json_decref(v);
}

/* One `cairn reassign start` line a topic, its partitions in order. */
static void print_commands(const struct reassign_plan_partition *parts, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(parts[i].topic, parts[i - 1].topic) != 0)
            printf("%scairn reassign start --topic %s", i ? "\n" : "", parts[i].topic);
        printf(" --partition %d --replicas ", (int)parts[i].partition);
        for (int32_t k = 0; k < parts[i].proposed_count; k++)
            printf("%s%d", k ? "," : "", (int)parts[i].proposed[k]);
    }
    if (n > 0)
        printf("\n");
}

/* "a,b" into names (pointers into buf); returns the count or -1. */
static int split_list(char *buf, char **names, int max)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max || !*tok)
            return -1;
        names[n++] = tok;
    }
    return n > 0 ? n : -1;
}

static void free_parts(struct reassign_plan_partition *parts, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (i == 0 || parts[i].topic != parts[i - 1].topic)
            free((char *)parts[i].topic);
    free(parts);
}

/* Collects the asked topics' partitions from a Metadata answer, topics in
 * the order asked and partitions by index; returns the count, or -1 with
 * the failure printed (*rc set). */
static int32_t collect(const struct metadata_response *m, char *const *names, int nt,
                       struct reassign_plan_partition **out, int *rc)
{
    int32_t n = 0;
    for (int32_t i = 0; i < m->topics_count; i++) {
        if (m->topics[i].error_code != KAFKA_ERR_NONE) {
            *rc = cli_kafka_fail(m->topics[i].error_code, (struct kafka_str){NULL, -1}, "cannot read the topic",
                                 cli_str(m->topics[i].name));
            return -1;
        }
        n += m->topics[i].partitions_count;
    }
    struct reassign_plan_partition *parts = calloc((size_t)n + 1, sizeof(*parts));
    if (!parts) {
        *rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
        return -1;
    }
    int32_t k = 0;
    for (int asked = 0; asked < nt; asked++) {
        const struct metadata_response_metadata_response_topic *t = NULL;
        for (int32_t i = 0; i < m->topics_count && !t; i++)
            if (strcmp(cli_str(m->topics[i].name), names[asked]) == 0)
                t = &m->topics[i];
        char *copy = t ? strdup(names[asked]) : NULL;
        if (!copy) {
            *rc = t ? cli_fail(CLI_EXIT_UNREACHABLE, "out of memory")
                    : cli_kafka_fail(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, (struct kafka_str){NULL, -1},
                                     "cannot read the topic", names[asked]);
            free_parts(parts, k);
            return -1;
        }
        int32_t first = k;
        for (int32_t want = 0; want < t->partitions_count && k < n; want++) {
            for (int32_t j = 0; j < t->partitions_count; j++) {
                const struct metadata_response_metadata_response_partition *mp = &t->partitions[j];
                if (mp->partition_index != want)
                    continue;
                struct reassign_plan_partition *p = &parts[k++];
                p->topic = copy;
                p->partition = want;
                p->current_count = mp->replica_nodes_count < REASSIGN_PLAN_MAX_REPLICAS ? mp->replica_nodes_count
                                                                                        : REASSIGN_PLAN_MAX_REPLICAS;
                memcpy(p->current, mp->replica_nodes, (size_t)p->current_count * sizeof(*p->current));
                break;
            }
        }
        if (k == first)
            free(copy); /* no partition holds it */
    }
    *out = parts;
    return k;
}

int reassign_generate(struct cli_conn *c, const char *topics, const char *brokers, bool json)
{
    char tbuf[4096], bbuf[2048];
    char *names[GENERATE_MAX_TOPICS], *ids_text[GENERATE_MAX_BROKERS];
    int32_t ids[GENERATE_MAX_BROKERS];
    snprintf(tbuf, sizeof tbuf, "%s", topics);
    snprintf(bbuf, sizeof bbuf, "%s", brokers);
    int nt = split_list(tbuf, names, GENERATE_MAX_TOPICS);
    int nb = split_list(bbuf, ids_text, GENERATE_MAX_BROKERS);
    if (nt < 0)
        return cli_fail(CLI_EXIT_USAGE, "--topics wants topic names like a,b, got '%s'", topics);
    if (nb < 0)
        return cli_fail(CLI_EXIT_USAGE, "--broker-list wants broker ids like 1,2,3, got '%s'", brokers);
    for (int i = 0; i < nb; i++) {
        long long v;
        if (cli_parse_int(ids_text[i], 0, INT32_MAX, &v) != 0)
            return cli_fail(CLI_EXIT_USAGE, "--broker-list wants broker ids like 1,2,3, got '%s'", brokers);
        if (index_of(ids, i, (int32_t)v) >= 0)
            return cli_fail(CLI_EXIT_USAGE, "--broker-list names broker %lld twice", v);
        ids[i] = (int32_t)v;
    }
    if (!c)
        return -1; /* the arguments are good */
    struct cli_reply r;
    int rc = cli_metadata(c, (const char *const *)names, nt, &r);
    if (rc)
        return rc;
    struct reassign_plan_partition *parts = NULL;
    int32_t n = collect(r.response, names, nt, &parts, &rc);
    cli_reply_free(&r);
    if (n < 0)
        return rc;
    char err[256];
    if (reassign_plan(parts, n, ids, nb, err, sizeof err) != 0) {
        free_parts(parts, n);
        return cli_fail(CLI_EXIT_USAGE, "%s", err);
    }
    if (json) {
        rc = cli_json_print(
            json_pack("{s:o, s:o}", "current", plan_json(parts, n, false), "proposed", plan_json(parts, n, true)));
    } else {
        printf("Current partition replica assignment (to roll back)\n");
        print_compact(plan_json(parts, n, false));
        printf("\nProposed partition reassignment configuration\n");
        print_compact(plan_json(parts, n, true));
        printf("\nTo apply it:\n");
        print_commands(parts, n);
    }
    free_parts(parts, n);
    return rc;
}
