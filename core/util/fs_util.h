/* File-system steps that must be durable or tolerant of half-done work:
 * making a directory tree, syncing a directory entry, replacing a small file
 * atomically. Stateless; safe from any thread.
 *
 * Each returns 0 or a positive errno value. err (may be NULL) receives a
 * message naming the path that failed, for a log line or a startup error. */
#ifndef CAIRN_UTIL_FS_UTIL_H
#define CAIRN_UTIL_FS_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* Creates path and every missing parent (mode 0755). An existing directory is
 * fine; an existing non-directory anywhere on the path is ENOTDIR. */
int fs_mkdir_p(const char *path, char *err, size_t errlen);

/* fsyncs directory dir, so entries created, renamed or removed in it survive
 * a crash. */
int fs_fsync_dir(const char *dir);

/* fs_fsync_dir on the directory that holds path. */
int fs_fsync_parent_dir(const char *path);

/* Replaces path with len bytes of data so a reader (or a restart) sees the
 * old content or the new, never a mix: writes path.tmp in the same
 * directory, renames it over path. With durable, fsyncs the file before the
 * rename and the directory after it. A failure before the rename removes
 * the temp file and leaves path untouched; a failed directory sync after it
 * leaves the new content in place, perhaps not yet durable. */
int fs_replace_file(const char *path, const void *data, size_t len, bool durable, char *err, size_t errlen);

#endif
