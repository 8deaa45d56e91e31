/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one place where kernel API differences between the kernels lzchan
 * supports (6.1 .. current) are papered over.  Code elsewhere uses the
 * newest API; this header supplies it on older kernels.
 *
 * The VM rig builds and tests the module on 6.1, 6.12 and 7.3 (Debian's
 * trixie-backports); 7.3 needed nothing beyond what 6.12 needs.
 */
#ifndef _LZCHAN_COMPAT_H
#define _LZCHAN_COMPAT_H

#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/version.h>

#ifndef CONFIG_POSIX_MQUEUE
#error "lzchan scopes names by IPC namespace through its mqueue mount: CONFIG_POSIX_MQUEUE is required"
#endif

/* 6.3 made vma->vm_flags read-only behind vm_flags_set()/_clear(). */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* 6.8 dropped eventfd_signal()'s count argument. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 8, 0)
#define lzchan_eventfd_signal(ctx)	eventfd_signal((ctx), 1)
#else
#define lzchan_eventfd_signal(ctx)	eventfd_signal(ctx)
#endif

#endif /* _LZCHAN_COMPAT_H */
