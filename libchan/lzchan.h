/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * liblzchan: shared-memory message channels between processes.
 *
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure; errno itself is never the error channel.  Setup and anything that
 * makes a system call is a library call; the per-message paths (added with
 * the ring) are static inline in this header.
 *
 * Threads: a channel handle belongs to one thread at a time.  Many threads
 * sending to one receiver each open their own sender handle (their own
 * lane); there is no lock inside the library to share one handle.
 */
#ifndef LZCHAN_H
#define LZCHAN_H

#include <linux/lzchan.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LZCHAN_VERSION_MAJOR	0
#define LZCHAN_VERSION_MINOR	1

/* Version of the library actually linked (may differ from the header's). */
int lzchan_version_major(void);
int lzchan_version_minor(void);

/*
 * Ask the loaded kernel module what it supports.
 * Returns 0 and fills @out, or -ENOENT when /dev/lzchan does not exist (the
 * module is not loaded), -EACCES when the caller may not open it, or the
 * module's error.
 */
int lzchan_dev_features(struct lzchan_features *out);

#ifdef __cplusplus
}
#endif

#endif /* LZCHAN_H */
