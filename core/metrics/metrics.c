/* The metrics registry: an append-only list under one lock. */
#include "metrics/metrics.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A histogram's buckets: counts[i] holds the observations at most
 * bounds[i] and above bounds[i - 1] (not cumulative: one atomic add per
 * observation), counts[bound_count] the rest. The sum is a double's bits,
 * added to by compare-and-swap. */
struct metrics_histogram {
    double bounds[METRICS_HISTOGRAM_MAX_BUCKETS];
    size_t bound_count;
    atomic_int_fast64_t counts[METRICS_HISTOGRAM_MAX_BUCKETS + 1];
    _Atomic uint64_t sum_bits;
};

/* Name, labels and help are fixed at registration; value is atomic. */
struct metrics_metric {
    struct metrics_metric *next;
    enum metrics_kind kind;
    char *name;
    char *labels;
    char *help;
    atomic_int_fast64_t value;
    struct metrics_histogram *histogram; /* METRICS_HISTOGRAM only */
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

static bool same_bounds(const struct metrics_histogram *h, const double *bounds, size_t bound_count)
{
    if (!h || h->bound_count != bound_count)
        return false;
    for (size_t i = 0; i < bound_count; i++)
        if (h->bounds[i] != bounds[i])
            return false;
    return true;
}

static void metric_free(struct metrics_metric *m)
{
    free(m->name);
    free(m->labels);
    free(m->help);
    free(m->histogram);
    free(m);
}

/* A new metric (not yet linked); NULL when out of memory. */
static struct metrics_metric *metric_new(enum metrics_kind kind, const char *name, const char *labels, const char *help,
                                         const double *bounds, size_t bound_count)
{
    struct metrics_metric *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->kind = kind;
    m->name = strdup(name);
    m->labels = labels && labels[0] ? strdup(labels) : NULL;
    m->help = strdup(help ? help : "");
    if (kind == METRICS_HISTOGRAM) {
        m->histogram = calloc(1, sizeof *m->histogram);
        if (m->histogram) {
            memcpy(m->histogram->bounds, bounds, bound_count * sizeof *bounds);
            m->histogram->bound_count = bound_count;
            for (size_t i = 0; i <= bound_count; i++)
                atomic_init(&m->histogram->counts[i], 0);
            double zero = 0;
            uint64_t bits;
            memcpy(&bits, &zero, sizeof bits);
            atomic_init(&m->histogram->sum_bits, bits);
        }
    }
    if (!m->name || !m->help || (labels && labels[0] && !m->labels) || (kind == METRICS_HISTOGRAM && !m->histogram)) {
        metric_free(m);
        return NULL;
    }
    /* Help text goes on one line. */
    for (char *p = m->help; *p; p++)
        if (*p == '\n' || *p == '\\')
            *p = ' ';
    atomic_init(&m->value, 0);
    return m;
}

static struct metrics_metric *register_metric(enum metrics_kind kind, const char *name, const char *labels,
                                              const char *help, const double *bounds, size_t bound_count)
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
            bool usable = kind != METRICS_HISTOGRAM || same_bounds(m->histogram, bounds, bound_count);
            pthread_mutex_unlock(&registry_lock);
            return usable ? m : NULL;
        }
    }
    struct metrics_metric *m = metric_new(kind, name, labels, help, bounds, bound_count);
    if (m) {
        if (registry_tail)
            registry_tail->next = m;
        else
            registry_head = m;
        registry_tail = m;
    }
    pthread_mutex_unlock(&registry_lock);
    return m;
}

struct metrics_metric *metrics_register(enum metrics_kind kind, const char *name, const char *labels, const char *help)
{
    if (kind != METRICS_COUNTER && kind != METRICS_GAUGE)
        return NULL;
    return register_metric(kind, name, labels, help, NULL, 0);
}

struct metrics_metric *metrics_register_histogram(const char *name, const char *labels, const char *help,
                                                  const double *bounds, size_t bound_count)
{
    if (!bounds || bound_count == 0 || bound_count > METRICS_HISTOGRAM_MAX_BUCKETS)
        return NULL;
    for (size_t i = 0; i < bound_count; i++)
        if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
            return NULL;
    return register_metric(METRICS_HISTOGRAM, name, labels, help, bounds, bound_count);
}

void metrics_observe(struct metrics_metric *metric, double value)
{
    if (!metric || metric->kind != METRICS_HISTOGRAM || isnan(value))
        return;
    struct metrics_histogram *h = metric->histogram;
    size_t i = 0;
    while (i < h->bound_count && value > h->bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    uint64_t old_bits = atomic_load_explicit(&h->sum_bits, memory_order_relaxed), new_bits;
    do {
        double sum;
        memcpy(&sum, &old_bits, sizeof sum);
        sum += value;
        memcpy(&new_bits, &sum, sizeof new_bits);
    } while (!atomic_compare_exchange_weak_explicit(&h->sum_bits, &old_bits, new_bits, memory_order_relaxed,
                                                    memory_order_relaxed));
}

void metrics_add(struct metrics_metric *metric, int64_t delta)
{
    if (metric && metric->kind != METRICS_HISTOGRAM)
        atomic_fetch_add_explicit(&metric->value, delta, memory_order_relaxed);
}

void metrics_set(struct metrics_metric *metric, int64_t value)
{
    if (metric && metric->kind != METRICS_HISTOGRAM)
        atomic_store_explicit(&metric->value, value, memory_order_relaxed);
}

static int64_t histogram_count(const struct metrics_histogram *h)
{
    int64_t n = 0;
    for (size_t i = 0; i <= h->bound_count; i++)
        n += atomic_load_explicit(&((struct metrics_histogram *)h)->counts[i], memory_order_relaxed);
    return n;
}

int64_t metrics_value(const struct metrics_metric *metric)
{
    if (!metric)
        return 0;
    if (metric->kind == METRICS_HISTOGRAM)
        return histogram_count(metric->histogram);
    return atomic_load_explicit(&((struct metrics_metric *)metric)->value, memory_order_relaxed);
}

static const char *kind_name(enum metrics_kind kind)
{
    switch (kind) {
    case METRICS_COUNTER:
        return "counter";
    case METRICS_GAUGE:
        return "gauge";
    case METRICS_HISTOGRAM:
        return "histogram";
    }
    return "untyped";
}

/* A histogram's series: cumulative buckets, +Inf, sum and count. The
 * count is the buckets' total read once, so +Inf and _count agree. */
static void render_histogram(FILE *f, const struct metrics_metric *m)
{
    struct metrics_histogram *h = m->histogram;
    const char *labels = m->labels ? m->labels : "";
    const char *comma = m->labels ? "," : "";
    int64_t cumulative = 0;
    for (size_t i = 0; i <= h->bound_count; i++) {
        cumulative += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        if (i < h->bound_count)
            fprintf(f, "%s_bucket{%s%sle=\"%g\"} %lld\n", m->name, labels, comma, h->bounds[i], (long long)cumulative);
        else
            fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %lld\n", m->name, labels, comma, (long long)cumulative);
    }
    uint64_t bits = atomic_load_explicit(&h->sum_bits, memory_order_relaxed);
    double sum;
    memcpy(&sum, &bits, sizeof sum);
    const char *open = m->labels ? "{" : "", *close = m->labels ? "}" : "";
    fprintf(f, "%s_sum%s%s%s %.9g\n", m->name, open, labels, close, sum);
    fprintf(f, "%s_count%s%s%s %lld\n", m->name, open, labels, close, (long long)cumulative);
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
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, kind_name(m->kind));
        /* Prometheus wants a family's samples together. */
        for (struct metrics_metric *p = m; p; p = p->next) {
            if (strcmp(p->name, m->name) != 0)
                continue;
            if (p->kind == METRICS_HISTOGRAM)
                render_histogram(f, p);
            else if (p->labels)
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
        metric_free(m);
        m = next;
    }
}
