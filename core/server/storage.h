/* The storage commands of kafka-storage.sh, as cairnd subcommands:
 *   cairnd random-uuid
 *   cairnd format --config <file> --cluster-id <id> [--ignore-formatted]
 *                 [--override key=value]...
 * and the check that a node of a controller quorum starts only on
 * formatted storage. Called from the main thread. */
#ifndef CAIRN_SERVER_STORAGE_H
#define CAIRN_SERVER_STORAGE_H

#include <stddef.h>

#include "config/config.h"

/* Runs the subcommand argv[1] names. Returns its exit status, or -1 when
 * argv[1] is no storage command (then argv is untouched). */
int storage_command(int argc, char **argv);

/* The dirs that hold a meta.properties: every log.dirs entry and
 * metadata.log.dir. Returns how many (at most cap). */
size_t storage_dirs(const struct broker_config *cfg, const char **out, size_t cap);

/* With controller.quorum.voters set, every storage dir must have been
 * formatted: -1 with a one-line err naming the dir and the command. */
int storage_require_formatted(const struct broker_config *cfg, char *err, size_t errlen);

#endif
