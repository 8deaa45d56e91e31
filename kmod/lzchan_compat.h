/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one place where kernel API differences between the kernels lzchan
 * supports (6.1 .. current) are papered over.  Code elsewhere uses the
 * newest API; this header supplies it on older kernels.
 */
#ifndef _LZCHAN_COMPAT_H
#define _LZCHAN_COMPAT_H

#include <linux/version.h>

#ifndef offsetofend
#define offsetofend(TYPE, MEMBER) \
	(offsetof(TYPE, MEMBER) + sizeof_field(TYPE, MEMBER))
#endif

#endif /* _LZCHAN_COMPAT_H */
