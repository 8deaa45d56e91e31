// SPDX-License-Identifier: GPL-2.0-only
/*
 * Endpoints: one role on one channel, as a file descriptor.
 *
 * LZCHAN_IOC_GRANT makes a file that carries a role (sender, receiver,
 * publisher or subscriber) on a channel, for a process that may open the
 * channel in that role to hand to another -- over SCM_RIGHTS, or across
 * exec -- that has no /dev/lzchan and no share of the IPC namespace.  The
 * holder attaches it once (LZCHAN_IOC_OPEN with no name, lzchan_chan.c),
 * and is recorded on its lane then as any opener is.
 *
 * Each endpoint is a file of its own inode on a small internal file
 * system (as secretmem's files are), with lzchan_fops: an endpoint's
 * mappings are then exactly its inode's, which revocation tears down with
 * unmap_mapping_range() without touching anyone else's.  The fault handler
 * (lzchan_mmap.c) tests revoked and inserts its page under map_sem, read;
 * revocation sets revoked, then takes and drops map_sem for writing, then
 * unmaps: a fault either inserted its page before (and the unmap removes
 * it) or sees revoked and refuses.
 *
 * Locks: chan->lock, then map_sem and i_mmap_rwsem (in the unmap), then
 * chan->evlock.  None of these is taken under mmap_lock except map_sem
 * (the fault handler), which nests inside nothing of ours.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/eventfd.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>

#include "lzchan_compat.h"
#include "lzchan_internal.h"

#define LZCHAN_EP_MAGIC		0x6c7a6570	/* "lzep" */

/*
 * The file system is mounted while endpoints exist: each pins it
 * (simple_pin_fs(), in GRANT) and unpins it at its release().  Never
 * registered, so nobody else can mount it.  Its superblock holds the
 * module (.owner) until kill_sb has run, which the last endpoint's final
 * mntput() in __fput() reaches after our release() and its own module
 * reference (fops_put()) are over: so the module cannot go while any of
 * it is still in use.
 */
static struct vfsmount *lzchan_ep_mnt;
static int lzchan_ep_mnt_count;

static int lzchan_ep_init_fs_context(struct fs_context *fc)
{
	if (!init_pseudo(fc, LZCHAN_EP_MAGIC))
		return -ENOMEM;
	/* Channel memory is never executable (lzchan_mmap()); nor is any
	 * of this, nor a device. */
	fc->s_iflags |= SB_I_NOEXEC | SB_I_NODEV;
	return 0;
}

static struct file_system_type lzchan_ep_fs = {
	.name = "lzchan_endpoint",
	.owner = THIS_MODULE,
	.init_fs_context = lzchan_ep_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* An endpoint's file is gone (lzchan_release()): its pin goes. */
void lzchan_ep_unpin(void)
{
	simple_release_fs(&lzchan_ep_mnt, &lzchan_ep_mnt_count);
}

/* An endpoint's file for @role on @chan (whose reference it takes over). */
static struct file *lzchan_ep_file(struct lzchan_chan *chan, u32 role)
{
	struct lzchan_file *f;
	struct inode *inode;
	struct file *file;
	int ret;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return ERR_PTR(-ENOMEM);
	lzchan_file_init(f);
	/* The file's f_op holds the module (put by __fput()), as an open of
	 * the device's node does through the misc device. */
	if (!try_module_get(THIS_MODULE)) {
		file = ERR_PTR(-ENOENT);
		goto out_free;
	}
	ret = simple_pin_fs(&lzchan_ep_fs, &lzchan_ep_mnt, &lzchan_ep_mnt_count);
	if (ret) {
		file = ERR_PTR(ret);
		goto out_module;
	}
	inode = alloc_anon_inode(lzchan_ep_mnt->mnt_sb);
	if (IS_ERR(inode)) {
		file = ERR_CAST(inode);
		goto out_unpin;
	}
	file = alloc_file_pseudo(inode, lzchan_ep_mnt, "lzchan-endpoint", O_RDWR,
				 &lzchan_fops);
	if (IS_ERR(file))
		goto out_iput;
	/* From here fput() undoes it all: release() unpins, __fput() puts
	 * the module. */
	f->ep_chan = chan;
	f->ep_role = role;
	f->ep_granter = current_euid();
	f->ep_mapping = inode->i_mapping;
	file->private_data = f;
	return file;

out_iput:
	iput(inode);
out_unpin:
	lzchan_ep_unpin();
out_module:
	module_put(THIS_MODULE);
out_free:
	kfree(f);
	return file;
}

/* LZCHAN_IOC_GRANT: copies its own argument, since the fd it makes is
 * installed only once the caller has been told its number. */
int lzchan_ep_grant(struct lzchan_file *f, void __user *argp)
{
	struct lzchan_grant g;
	struct lzchan_chan *chan;
	struct lzchan_file *nf;
	struct file *file;
	u32 usize;
	int fd, ret;

	if (get_user(usize, (u32 __user *)argp))
		return -EFAULT;
	if (usize < offsetofend(struct lzchan_grant, reserved))
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(&g, sizeof(g), argp, usize);
	if (ret)
		return ret;
	if ((g.flags & ~LZCHAN_GRANT_FLAGS) || g.fd || g.id ||
	    memchr_inv(g.reserved, 0, sizeof(g.reserved)) || !lzchan_role_valid(g.role))
		return -EINVAL;

	chan = lzchan_chan_get_for(f, g.name, -EBADFD);
	if (IS_ERR(chan))
		return PTR_ERR(chan);
	/* One kind's role for the other kind: said as OPEN says it. */
	if (chan->pubsub != lzchan_role_ps(g.role)) {
		ret = -EPROTOTYPE;
		goto out_put;
	}
	/* A temporary channel's receiver is the file that made it. */
	if (g.role == LZCHAN_OPEN_RECEIVER && (chan->create_flags & LZCHAN_CREATE_TEMP)) {
		ret = -EINVAL;
		goto out_put;
	}
	/* Whoever grants a role must be allowed it (as OPEN asks). */
	ret = lzchan_chan_permission(chan, g.role == LZCHAN_OPEN_RECEIVER ||
					   g.role == LZCHAN_OPEN_SUBSCRIBER ? 4 : 2, true);
	if (ret)
		goto out_put;

	fd = get_unused_fd_flags(O_RDWR | ((g.flags & LZCHAN_GRANT_CLOEXEC) ? O_CLOEXEC : 0));
	if (fd < 0) {
		ret = fd;
		goto out_put;
	}
	file = lzchan_ep_file(chan, g.role);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out_put_fd;
	}
	/* From here the file holds the channel: fput() undoes the rest. */
	nf = file->private_data;
	mutex_lock(&chan->lock);
	nf->ep_id = ++chan->ep_last_id;
	list_add_tail(&nf->ep_node, &chan->endpoints);
	mutex_unlock(&chan->lock);

	g.fd = fd;
	g.id = nf->ep_id;
	if (copy_to_user(argp, &g, min_t(size_t, usize, sizeof(g)))) {
		put_unused_fd(fd);
		fput(file);
		return -EFAULT;
	}
	fd_install(fd, file);
	return 0;

out_put_fd:
	put_unused_fd(fd);
out_put:
	lzchan_chan_put(chan);
	return ret;
}

/* An endpoint that never attached goes: off its channel's list, and its
 * reference with it (lzchan_chan_release_file()). */
void lzchan_ep_forget(struct lzchan_file *f)
{
	struct lzchan_chan *chan = f->ep_chan;

	mutex_lock(&chan->lock);
	list_del(&f->ep_node);
	mutex_unlock(&chan->lock);
	lzchan_chan_put(chan);
}

/*
 * Revoke endpoint @f of @chan, under chan->lock (which keeps @f's memory
 * and inode: its release() unlists it under that lock first).  In this
 * order: no command that takes a lock reaches the binding any more
 * (revoked, under chan->lock and evlock); no fault inserts a page (under
 * map_sem); every page already inserted goes (the unmap); only then does
 * the attachment end, so that nobody can touch a lane or place that a
 * next sender or subscriber may take from that moment.
 */
static void lzchan_ep_revoke_one(struct lzchan_chan *chan, struct lzchan_file *f,
				 struct eventfd_ctx **ev)
{
	lockdep_assert_held(&chan->lock);
	spin_lock(&chan->evlock);
	/* Read unlocked at the ioctl's entry and in mmap() (hints), under
	 * map_sem by the fault handler (below). */
	WRITE_ONCE(f->revoked, true);
	/* A holder asleep on its eventfd wakes, and meets the revocation at
	 * its next look: the eventfd goes with the attachment below. */
	if (f->chan && f->role == LZCHAN_OPEN_RECEIVER && chan->evctx)
		lzchan_eventfd_signal(chan->evctx);
	if (f->chan && f->role == LZCHAN_OPEN_SUBSCRIBER && chan->lanes[f->lane].evctx)
		lzchan_eventfd_signal(chan->lanes[f->lane].evctx);
	spin_unlock(&chan->evlock);
	/* A fault inside map_sem's read side tests revoked and inserts its
	 * page as one step: waiting for the write side here means every
	 * fault that read revoked false has inserted its page (which the
	 * unmap below removes), and every later one reads it true (the
	 * store above comes before our release of map_sem). */
	down_write(&f->map_sem);
	up_write(&f->map_sem);
	unmap_mapping_range(f->ep_mapping, 0, 0, 1);
	/* Bound (under chan->lock, lzchan_ep_attach()): a departure. */
	if (f->chan)
		lzchan_chan_detach_locked(f, chan, false, ev);
}

int lzchan_ep_revoke(struct lzchan_file *f, struct lzchan_revoke *r)
{
	struct lzchan_chan *chan;
	struct lzchan_file *ep;
	kuid_t euid = current_euid();
	bool all = r->flags & LZCHAN_REVOKE_ALL, admin, found = false, refused = false;
	u32 count = 0;
	int ret = 0;

	if ((r->flags & ~LZCHAN_REVOKE_ALL) || r->count || r->reserved0 ||
	    memchr_inv(r->reserved, 0, sizeof(r->reserved)))
		return -EINVAL;
	if (all ? r->id != 0 : r->id == 0)
		return -EINVAL;
	chan = lzchan_chan_get_for(f, r->name, -EBADFD);
	if (IS_ERR(chan))
		return PTR_ERR(chan);
	/* As removing it: the owner, the creator, CAP_SYS_ADMIN over its
	 * IPC namespace; and each granter for what it granted. */
	admin = uid_eq(euid, chan->uid) || uid_eq(euid, chan->cuid) ||
		ns_capable_noaudit(chan->ns->user_ns, CAP_SYS_ADMIN);

	mutex_lock(&chan->lock);
	list_for_each_entry(ep, &chan->endpoints, ep_node) {
		struct eventfd_ctx *ev = NULL;

		if (!all && ep->ep_id != r->id)
			continue;
		found = true;
		if (!admin && !uid_eq(euid, ep->ep_granter)) {
			refused = true;
			continue;
		}
		if (ep->revoked)
			continue;
		lzchan_ep_revoke_one(chan, ep, &ev);
		/* The lock is a mutex: putting an eventfd here is fine. */
		if (ev)
			eventfd_ctx_put(ev);
		count++;
	}
	mutex_unlock(&chan->lock);
	lzchan_chan_put(chan);

	if (!all && !found)
		ret = -ENOENT;
	else if (!all && refused)
		ret = -EPERM;
	else if (all && refused && !count)
		ret = -EPERM;
	r->count = count;
	return ret;
}
