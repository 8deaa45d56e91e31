/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * lzchan: shared-memory message channels between unrelated processes.
 *
 * Userspace ABI of /dev/lzchan.  Shared by the kernel module and libchan;
 * a client written without libchan needs only this header.
 *
 * Conventions (the io_uring/iommufd way):
 *  - every ioctl argument struct starts with __u32 size: the size of the
 *    struct as the caller knows it.  The kernel accepts any size from the
 *    first published version of the struct upwards; bytes it does not know
 *    must be zero (else -E2BIG), and it writes back at most @size bytes.
 *  - all fields have explicit widths; reserved fields and unknown flag bits
 *    must be zero (else -EINVAL).
 *  - ioctl numbers carry no size (_IO), so a struct can grow without
 *    changing its command number.  Unknown commands fail with -ENOTTY.
 */
#ifndef _UAPI_LINUX_LZCHAN_H
#define _UAPI_LINUX_LZCHAN_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define LZCHAN_DEVICE_PATH	"/dev/lzchan"

/* Bumped only for incompatible changes; features grow through bits. */
#define LZCHAN_ABI_VERSION	1

#define LZCHAN_IOC_MAGIC	0xC1

/*
 * LZCHAN_IOC_FEATURES: what the loaded module supports.
 *
 * in:  size, flags (must be 0), reserved (must be 0)
 * out: abi_version, features (LZCHAN_FEAT_* bits), page_size
 */
struct lzchan_features {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 page_size;
	__u64 features;
	__u64 reserved[4];
};

/* No feature bits are defined in ABI version 1 yet. */
#define LZCHAN_FEAT_ALL		0ULL

#define LZCHAN_IOC_FEATURES	_IO(LZCHAN_IOC_MAGIC, 0x00)

#endif /* _UAPI_LINUX_LZCHAN_H */
