// SPDX-License-Identifier: GPL-2.0-only
/*
 * Mapping a channel.  Each area of the layout (see struct lzchan_layout) is
 * mapped on its own, MAP_SHARED, with the protections of the caller's role.
 * An area a role may only read is mapped with VM_MAYWRITE cleared, so
 * mprotect() cannot upgrade it (as binder does); nothing is executable.
 *
 * Pages are inserted on fault from the channel's page array as raw page
 * frames (VM_PFNMAP, vmf_insert_pfn()): the page tables hold special
 * entries that take no page reference, and no get_user_pages() path --
 * the lockless GUP-fast one (vmsplice, O_DIRECT, AIO) included -- hands
 * out a page behind a special entry.  So channel memory is reachable only
 * through a live mapping of this file, never through a pin that outlives
 * it: a departed sender cannot keep writing into, or reading from, a lane
 * that a new sender (perhaps another uid) took over; a departed receiver
 * cannot keep reading a freed channel's pages.
 *
 * The mapping holds the file (vm_file), the file holds the channel, so the
 * pages live as long as any mapping does, fd closed or not; munmap() and
 * exit zap the entries before the file's last reference goes.  An
 * endpoint's file (lzchan_ep.c) has an inode of its own, so its mappings
 * are exactly that inode's: revocation zaps them all, and the fault
 * handler inserts nothing once it is revoked.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/personality.h>
#include <linux/sched.h>

#include "lzchan_compat.h"
#include "lzchan_internal.h"

static vm_fault_t lzchan_vm_fault(struct vm_fault *vmf)
{
	struct lzchan_file *f = vmf->vma->vm_file->private_data;
	struct lzchan_chan *chan = lzchan_file_chan(f);
	vm_fault_t ret;

	/* mmap() checked the range and VM_DONTEXPAND keeps it; be safe. */
	if (WARN_ON_ONCE(!chan || vmf->pgoff >= chan->npages))
		return VM_FAULT_SIGBUS;
	/*
	 * A revoked endpoint's mappings were torn down and stay empty: the
	 * revocation sets revoked, then takes and drops map_sem for writing,
	 * then unmaps (lzchan_ep_revoke_one()): a page inserted here before
	 * is unmapped, and none is after.
	 */
	down_read(&f->map_sem);
	if (READ_ONCE(f->revoked))	/* WRITE_ONCE before the revoker's map_sem */
		ret = VM_FAULT_SIGBUS;
	else	/* No reference taken: the mapping's file holds the channel. */
		ret = vmf_insert_pfn(vmf->vma, vmf->address,
				     page_to_pfn(chan->pages[vmf->pgoff]));
	up_read(&f->map_sem);
	return ret;
}

static const struct vm_operations_struct lzchan_vm_ops = {
	.fault = lzchan_vm_fault,
};

/* Is [off, off + len) inside [start, start + size)? */
static bool lzchan_range_in(u64 off, u64 len, u64 start, u64 size)
{
	return off >= start && len <= size && off - start <= size - len;
}

int lzchan_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct lzchan_file *f = file->private_data;
	struct lzchan_chan *chan = lzchan_file_chan(f);
	const struct lzchan_layout *l;
	u64 off, len, lane;
	bool rx = f->role == LZCHAN_OPEN_RECEIVER;
	bool writable;

	if (!chan)
		return -EBADFD;
	/* Only a hint (the fault handler is the gate): no lock. */
	if (READ_ONCE(f->revoked))
		return -EKEYREVOKED;
	/* VM_MAYSHARE: a MAP_SHARED mapping of an O_RDONLY fd lacks VM_SHARED. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	/*
	 * Never executable.  A process with the READ_IMPLIES_EXEC personality
	 * gets PROT_EXEC added to every PROT_READ mapping without asking: drop
	 * it for that process instead of refusing every mapping it makes.
	 */
	if (vma->vm_flags & VM_EXEC) {
		if (!(current->personality & READ_IMPLIES_EXEC))
			return -EPERM;
		vm_flags_clear(vma, VM_EXEC);
	}

	/* Before the shift: an offset whose byte value wraps u64 is refused. */
	if (vma->vm_pgoff > (U64_MAX >> PAGE_SHIFT))
		return -EINVAL;
	l = &chan->layout;
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	len = vma->vm_end - vma->vm_start;

	if (chan->pubsub) {
		int ret = lzchan_ps_mmap_area(f, chan, off, len, &writable);

		if (ret)
			return ret;
	} else if (lzchan_range_in(off, len, l->info_off, l->info_size)) {
		writable = false;
	} else if (lzchan_range_in(off, len, l->rx_off, l->rx_size)) {
		/* A sender maps only the page of its own lane's rx words: the
		 * header and the other lanes' pages are the receiver's. */
		if (!rx && (off != l->rx_off + l->rx_lanes + (u64)f->lane * l->rx_lane_stride ||
			    len != PAGE_SIZE))
			return -EACCES;
		writable = rx;
	} else if (lzchan_range_in(off, len, l->bell_off, l->bell_size)) {
		/* The kernel rings it (LZCHAN_IOC_RING); only the receiver
		 * reads it. */
		if (!rx)
			return -EACCES;
		writable = false;
	} else if (off >= l->lanes_off) {
		lane = div64_u64(off - l->lanes_off, l->lane_stride);
		if (lane >= chan->max_senders ||
		    !lzchan_range_in(off, len, l->lanes_off + lane * l->lane_stride,
				     l->lane_size))
			return -EINVAL;
		if (!rx && lane != f->lane)
			return -EACCES;		/* another sender's lane */
		writable = !rx;
	} else {
		return -EINVAL;			/* straddles two areas */
	}

	if (!writable) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	vm_flags_clear(vma, VM_MAYEXEC);
	/*
	 * VM_PFNMAP: special entries, so no get_user_pages() of any kind
	 * (see the top of this file).  VM_IO makes the slow GUP path and
	 * /proc/pid/mem refuse the range early; NUMA balancing and
	 * migration skip it, so pages stay where they were placed.  Never a
	 * COW mapping (VM_MAYSHARE was required above), as vmf_insert_pfn()
	 * needs for VM_PFNMAP.
	 */
	vm_flags_set(vma, VM_DONTEXPAND | VM_IO | VM_PFNMAP);
	vma->vm_ops = &lzchan_vm_ops;
	return 0;
}
