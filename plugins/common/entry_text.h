/* Parsing helpers shared by the plugins whose config is a list of
 * "key=value" entries (quota's `entries`, tenant-limits' `entries`).
 * Compiled into each plugin that uses them; no state.
 *
 * Thread-safety: pure functions on caller-owned buffers. */
#ifndef CAIRN_PLUGINS_ENTRY_TEXT_H
#define CAIRN_PLUGINS_ENTRY_TEXT_H

#include <stdbool.h>

/* Trims blanks at both ends in place; returns the first kept character. */
char *entry_trim(char *s);

/* Splits "key=value" in place at the first '=' and trims both sides;
 * false without '=' or with an empty side. */
bool entry_split_pair(char *pair, char **key, char **value);

#endif
