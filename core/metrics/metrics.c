/* The metrics registry: an append-only list under one lock. */
#include "metrics/metrics.h"

#include <ctype.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Name, labels and help are fixed at registration; value is atomic. */
struct metrics_metric {
    struct metrics_metric *next;
    enum metrics_kind kind;
    char *name;
    char *labels;
    char *help;
    atomic_int_fast64_t value;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metrics_metric *registry_head, *registry_tail;

int metrics_name_valid(const char *name)
{
    if (!name || !name[0] || isdigit((unsigned char)name[0]))
        return 0;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != ':')
            return 0;
    return 1;
}

static int same_text(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

struct metrics_metric *metrics_register(enum metrics_kind kind, const char *name, const char *labels, const char *help)
{
    if (!metrics_name_valid(name))
        return NULL;
    if (labels && (strchr(labels, '\n') || strchr(labels, '}')))
        return NULL;
    pthread_mutex_lock(&registry_lock);
    for (struct metrics_metric *m = registry_head; m; m = m->next) {
        if (strcmp(m->name, name) != 0)
            continue;
        if (m->kind != kind) {
            pthread_mutex_unlock(&registry_lock);
            return NULL;
        }
        if (same_text(m->labels, labels)) {
            pthread_mutex_unlock(&registry_lock);
            return m;
        }
    }
    struct metrics_metric *m = calloc(1, sizeof *m);
    if (m) {
        m->kind = kind;
        m->name = strdup(name);
        m->labels = labels && labels[0] ? strdup(labels) : NULL;
        m->help = strdup(help ? help : "");
        if (!m->name || !m->help || (labels && labels[0] && !m->labels)) {
            free(m->name);
            free(m->labels);
            free(m->help);
            free(m);
            m = NULL;
        }
    }
    if (m) {
        /* Help text goes on one line. */
        for (char *p = m->help; *p; p++)
            if (*p == '\n' || *p == '\\')
                *p = ' ';
        atomic_init(&m->value, 0);
        if (registry_tail)
            registry_tail->next = m;
        else
            registry_head = m;
        registry_tail = m;
    }
    pthread_mutex_unlock(&registry_lock);
    return m;
}

void metrics_add(struct metrics_metric *metric, int64_t delta)
{
    if (metric)
        atomic_fetch_add_explicit(&metric->value, delta, memory_order_relaxed);
}

void metrics_set(struct metrics_metric *metric, int64_t value)
{
    if (metric)
        atomic_store_explicit(&metric->value, value, memory_order_relaxed);
}

int64_t metrics_value(const struct metrics_metric *metric)
{
    return metric ? atomic_load_explicit(&((struct metrics_metric *)metric)->value, memory_order_relaxed) : 0;
}

enum metrics_kind metrics_kind_of(const struct metrics_metric *metric)
{
    return metric->kind;
}

int metrics_render(char **out, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return -1;
    pthread_mutex_lock(&registry_lock);
    for (struct metrics_metric *m = registry_head; m; m = m->next) {
        /* HELP and TYPE once per family: at its first member. */
        bool first = true;
        for (struct metrics_metric *p = registry_head; p != m; p = p->next)
            if (strcmp(p->name, m->name) == 0) {
                first = false;
                break;
            }
        if (!first)
            continue;
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
                m->kind == METRICS_COUNTER ? "counter" : "gauge");
        /* Prometheus wants a family's samples together. */
        for (struct metrics_metric *p = m; p; p = p->next) {
            if (strcmp(p->name, m->name) != 0)
                continue;
            if (p->labels)
                fprintf(f, "%s{%s} %lld\n", p->name, p->labels, (long long)metrics_value(p));
            else
                fprintf(f, "%s %lld\n", p->name, (long long)metrics_value(p));
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (fclose(f) != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = size;
    return 0;
}

void metrics_registry_clear(void)
{
    pthread_mutex_lock(&registry_lock);
    struct metrics_metric *m = registry_head;
    registry_head = registry_tail = NULL;
    pthread_mutex_unlock(&registry_lock);
    while (m) {
        struct metrics_metric *next = m->next;
        free(m->name);
        free(m->labels);
        free(m->help);
        free(m);
        m = next;
    }
}
