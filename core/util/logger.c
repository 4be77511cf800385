#include "util/logger.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static atomic_int current_level = -1;

static int level_from_env(void)
{
    const char *env = getenv("CAIRN_LOG_LEVEL");
    if (!env)
        return LOGGER_INFO;
    if (!strcasecmp(env, "debug"))
        return LOGGER_DEBUG;
    if (!strcasecmp(env, "warn"))
        return LOGGER_WARN;
    if (!strcasecmp(env, "error"))
        return LOGGER_ERROR;
    return LOGGER_INFO;
}

void logger_set_level(enum logger_level level)
{
    atomic_store(&current_level, (int)level);
}

enum logger_level logger_get_level(void)
{
    int level = atomic_load(&current_level);
    if (level < 0) {
        level = level_from_env();
        atomic_store(&current_level, level);
    }
    return (enum logger_level)level;
}

void logger_write(enum logger_level level, const char *component, const char *fmt, ...)
{
    if ((int)level < (int)logger_get_level())
        return;
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s [%s] ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[level],
                     component);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = strnlen(line, sizeof line - 2);
    line[len] = '\n';
    /* One fwrite per line keeps lines from different threads whole. */
    fwrite(line, 1, len + 1, stderr);
}
