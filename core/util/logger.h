/* Process-wide logging to stderr, one line per event, thread-safe.
 * Lines look like: 2026-11-29T10:22:44.123Z INFO [net] message */
#ifndef CAIRN_UTIL_LOGGER_H
#define CAIRN_UTIL_LOGGER_H

enum logger_level { LOGGER_DEBUG = 0, LOGGER_INFO = 1, LOGGER_WARN = 2, LOGGER_ERROR = 3 };

/* Set the lowest level printed (default LOGGER_INFO; CAIRN_LOG_LEVEL=debug in the environment lowers it). */
void logger_set_level(enum logger_level level);
enum logger_level logger_get_level(void);

void logger_write(enum logger_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define logger_debug(component, ...) logger_write(LOGGER_DEBUG, component, __VA_ARGS__)
#define logger_info(component, ...) logger_write(LOGGER_INFO, component, __VA_ARGS__)
#define logger_warn(component, ...) logger_write(LOGGER_WARN, component, __VA_ARGS__)
#define logger_error(component, ...) logger_write(LOGGER_ERROR, component, __VA_ARGS__)

#endif
