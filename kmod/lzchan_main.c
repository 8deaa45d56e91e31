// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan: the /dev/lzchan misc device.
 *
 * The module hands out shared-memory channel regions and routes wakeups; it
 * is never on the per-message path.  This file holds the device, its
 * file_operations, the ioctl dispatcher, the module parameters and the
 * module-wide counters in sysfs (/sys/class/misc/lzchan/).
 *
 * Every ioctl argument is copied in with copy_struct_from_user() so that
 * structs can grow (see the UAPI header).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/nospec.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "lzchan_compat.h"
#include "lzchan_internal.h"

/*
 * Limits.  max_channels is the machine's last resort; the tenant limits
 * (per IPC namespace; per user, counted in the user namespace that owns
 * the IPC namespace and again as each owner above the creator's user
 * namespace) keep one container or user from exhausting it for the
 * others.  See lzchan_charge_levels().
 */
unsigned int lzchan_max_channels = 4096;
module_param_named(max_channels, lzchan_max_channels, uint, 0644);
MODULE_PARM_DESC(max_channels, "Channels that may exist at once, all tenants together (default 4096)");

unsigned int lzchan_max_ns_channels = 1024;
module_param_named(max_ns_channels, lzchan_max_ns_channels, uint, 0644);
MODULE_PARM_DESC(max_ns_channels, "Channels per IPC namespace (default 1024)");

unsigned long lzchan_max_ns_bytes = 4UL << 30;
module_param_named(max_ns_bytes, lzchan_max_ns_bytes, ulong, 0644);
MODULE_PARM_DESC(max_ns_bytes, "Channel memory per IPC namespace, in bytes (default 4 GiB)");

unsigned int lzchan_max_user_channels = 256;
module_param_named(max_user_channels, lzchan_max_user_channels, uint, 0644);
MODULE_PARM_DESC(max_user_channels, "Channels one user may create (default 256)");

unsigned long lzchan_max_channel_bytes = 256UL << 20;
module_param_named(max_channel_bytes, lzchan_max_channel_bytes, ulong, 0644);
MODULE_PARM_DESC(max_channel_bytes, "Largest channel, in bytes (default 256 MiB)");

unsigned long lzchan_max_user_bytes = 1UL << 30;
module_param_named(max_user_bytes, lzchan_max_user_bytes, ulong, 0644);
MODULE_PARM_DESC(max_user_bytes, "Channel memory one user may create, in bytes (default 1 GiB)");

/* Pages held by channels, per NUMA node. */
static atomic_long_t lzchan_node_pages[MAX_NUMNODES];

void lzchan_pages_account(int nid, long delta)
{
	atomic_long_add(delta, &lzchan_node_pages[nid]);
}

static long lzchan_pages_total(void)
{
	long sum = 0;
	int nid;

	for_each_node(nid)
		sum += atomic_long_read(&lzchan_node_pages[nid]);
	return sum;
}

/* ---- ioctls ---- */

union lzchan_ioctl_buf {
	struct lzchan_features features;
	struct lzchan_create create;
	struct lzchan_open open;
	struct lzchan_unlink unlink;
	struct lzchan_info info;
	struct lzchan_list list;
	struct lzchan_set_eventfd set_eventfd;
	struct lzchan_peer peer;
	struct lzchan_placement placement;
	struct lzchan_usage usage;
	struct lzchan_ps_detach ps_detach;
	struct lzchan_ps_subs ps_subs;
	struct lzchan_revoke revoke;
	struct lzchan_lanes lanes;
};

struct lzchan_ioctl_op {
	int (*execute)(struct lzchan_file *f, void *arg);
	size_t size;		/* the struct as this module knows it; 0: no arg */
	size_t min_size;	/* the first published version of the struct */
};

static int lzchan_ioc_features(struct lzchan_file *f, void *arg)
{
	struct lzchan_features *ft = arg;

	if (ft->flags || memchr_inv(ft->reserved, 0, sizeof(ft->reserved)))
		return -EINVAL;
	ft->abi_version = LZCHAN_ABI_VERSION;
	ft->page_size = PAGE_SIZE;
	ft->features = LZCHAN_FEAT_ALL;
	return 0;
}

static int lzchan_ioc_create(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_create(f, arg);
}

static int lzchan_ioc_open(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_open(f, arg);
}

static int lzchan_ioc_unlink(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_unlink(arg);
}

static int lzchan_ioc_info(struct lzchan_file *f, void *arg)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	struct lzchan_info *in = arg;

	if (!chan)
		return -EBADFD;
	if (in->flags)
		return -EINVAL;
	/* Everything else is output: clear whatever the caller passed. */
	memset(in, 0, sizeof(*in));
	in->size = sizeof(*in);
	in->role = f->role;
	in->lane = f->lane;
	lzchan_file_stat(f, chan, &in->stat);
	in->layout = chan->layout;	/* zeros for a pub/sub channel */
	if (chan->pubsub) {
		in->ps_layout = chan->ps_layout;
		in->max_subscribers = chan->max_senders;
		in->policy = chan->policy;
		in->stall_ms = chan->stall_ms;
	}
	return 0;
}

static int lzchan_ioc_list(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_list(arg);
}

static int lzchan_ioc_set_eventfd(struct lzchan_file *f, void *arg)
{
	struct lzchan_set_eventfd *e = arg;

	if (e->flags || e->reserved0 || memchr_inv(e->reserved, 0, sizeof(e->reserved)))
		return -EINVAL;
	if (e->fd < -1)
		return -EBADF;
	return lzchan_chan_set_eventfd(f, e->fd);
}

static int lzchan_ioc_wake(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_wake(f);
}

static int lzchan_ioc_bye(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_bye(f);
}

static int lzchan_ioc_ring(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_ring(f);
}

static int lzchan_ioc_ps_park(struct lzchan_file *f, void *arg)
{
	return lzchan_ps_park(f);
}

static int lzchan_ioc_ps_detach(struct lzchan_file *f, void *arg)
{
	return lzchan_ps_detach(f, arg);
}

static int lzchan_ioc_ps_subs(struct lzchan_file *f, void *arg)
{
	return lzchan_ps_subs(f, arg);
}

static int lzchan_ioc_revoke(struct lzchan_file *f, void *arg)
{
	return lzchan_ep_revoke(f, arg);
}

static int lzchan_ioc_lanes(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_lanes(f, arg);
}

static int lzchan_ioc_peer(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_peer(f, arg);
}

static int lzchan_ioc_placement(struct lzchan_file *f, void *arg)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	struct lzchan_placement *pl = arg;
	s32 __user *nodes = u64_to_user_ptr(pl->nodes);
	unsigned long first, n, i;

	if (!chan)
		return -EBADFD;
	if (pl->flags || pl->reserved0 || memchr_inv(pl->reserved, 0, sizeof(pl->reserved)))
		return -EINVAL;
	if (!PAGE_ALIGNED(pl->offset) || pl->offset >= (u64)chan->npages << PAGE_SHIFT)
		return -EINVAL;
	first = pl->offset >> PAGE_SHIFT;
	n = min_t(unsigned long, pl->count, chan->npages - first);
	/* The page array is fixed for the channel's life: no lock. */
	for (i = 0; i < n; i++) {
		if (put_user(page_to_nid(chan->pages[first + i]), nodes + i))
			return -EFAULT;
		if (!(i & 1023))
			cond_resched();
	}
	pl->count = n;
	return 0;
}

static int lzchan_ioc_usage(struct lzchan_file *f, void *arg)
{
	return lzchan_chan_usage(arg);
}

#define LZCHAN_IOCTL_OP(_nr, _fn, _struct, _last)			\
	[_IOC_NR(_nr)] = {						\
		.execute = _fn,						\
		.size = sizeof(_struct),				\
		.min_size = offsetofend(_struct, _last),		\
	}

static const struct lzchan_ioctl_op lzchan_ioctl_ops[] = {
	LZCHAN_IOCTL_OP(LZCHAN_IOC_FEATURES, lzchan_ioc_features,
			struct lzchan_features, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_CREATE, lzchan_ioc_create,
			struct lzchan_create, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_OPEN, lzchan_ioc_open,
			struct lzchan_open, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_UNLINK, lzchan_ioc_unlink,
			struct lzchan_unlink, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_INFO, lzchan_ioc_info,
			struct lzchan_info, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_LIST, lzchan_ioc_list,
			struct lzchan_list, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_SET_EVENTFD, lzchan_ioc_set_eventfd,
			struct lzchan_set_eventfd, reserved),
	[_IOC_NR(LZCHAN_IOC_WAKE)] = { .execute = lzchan_ioc_wake },
	LZCHAN_IOCTL_OP(LZCHAN_IOC_PEER, lzchan_ioc_peer,
			struct lzchan_peer, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_PLACEMENT, lzchan_ioc_placement,
			struct lzchan_placement, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_USAGE, lzchan_ioc_usage,
			struct lzchan_usage, reserved),
	[_IOC_NR(LZCHAN_IOC_BYE)] = { .execute = lzchan_ioc_bye },
	[_IOC_NR(LZCHAN_IOC_RING)] = { .execute = lzchan_ioc_ring },
	[_IOC_NR(LZCHAN_IOC_PS_PARK)] = { .execute = lzchan_ioc_ps_park },
	LZCHAN_IOCTL_OP(LZCHAN_IOC_PS_DETACH, lzchan_ioc_ps_detach,
			struct lzchan_ps_detach, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_PS_SUBS, lzchan_ioc_ps_subs,
			struct lzchan_ps_subs, reserved),
	/* GRANT makes a file: lzchan_ep_grant() copies its own argument. */
	[_IOC_NR(LZCHAN_IOC_GRANT)] = { .execute = NULL },
	LZCHAN_IOCTL_OP(LZCHAN_IOC_REVOKE, lzchan_ioc_revoke,
			struct lzchan_revoke, reserved),
	LZCHAN_IOCTL_OP(LZCHAN_IOC_LANES, lzchan_ioc_lanes,
			struct lzchan_lanes, reserved),
};

/*
 * What an endpoint's file answers: its own binding's commands.  Whatever
 * names or makes a channel, or lists other parties, is refused (EPERM):
 * its holder has exactly what was granted.  OPEN is checked further in
 * lzchan_ep_attach() (no name, the granted role), PS_SUBS in
 * lzchan_ps_subs() (a publisher's, of its own channel: its flush scans
 * the places).
 */
static bool lzchan_ep_may(unsigned int nr)
{
	switch (nr) {
	case _IOC_NR(LZCHAN_IOC_FEATURES):
	case _IOC_NR(LZCHAN_IOC_OPEN):
	case _IOC_NR(LZCHAN_IOC_INFO):
	case _IOC_NR(LZCHAN_IOC_SET_EVENTFD):
	case _IOC_NR(LZCHAN_IOC_WAKE):
	case _IOC_NR(LZCHAN_IOC_PEER):
	case _IOC_NR(LZCHAN_IOC_PLACEMENT):
	case _IOC_NR(LZCHAN_IOC_BYE):
	case _IOC_NR(LZCHAN_IOC_RING):
	case _IOC_NR(LZCHAN_IOC_PS_PARK):
	case _IOC_NR(LZCHAN_IOC_PS_DETACH):
	case _IOC_NR(LZCHAN_IOC_PS_SUBS):	/* a publisher's own: lzchan_ps_subs() */
		return true;
	default:
		return false;
	}
}

static long lzchan_ioctl(struct file *file, unsigned int cmd,
			 unsigned long uarg)
{
	struct lzchan_file *f = file->private_data;
	void __user *argp = (void __user *)uarg;
	const struct lzchan_ioctl_op *op;
	union lzchan_ioctl_buf *buf;
	unsigned int nr;
	u32 usize;
	int ret;

	/* Commands carry no size or direction: anything else is not ours. */
	if (_IOC_TYPE(cmd) != LZCHAN_IOC_MAGIC || _IOC_DIR(cmd) != _IOC_NONE ||
	    _IOC_SIZE(cmd) != 0)
		return -ENOTTY;
	nr = _IOC_NR(cmd);
	if (nr >= ARRAY_SIZE(lzchan_ioctl_ops))
		return -ENOTTY;
	nr = array_index_nospec(nr, ARRAY_SIZE(lzchan_ioctl_ops));
	op = &lzchan_ioctl_ops[nr];
	if (lzchan_file_is_ep(f)) {
		/* Unlocked: a command racing the revocation finds it under
		 * the lock it takes, where that matters (lzchan_ep.c). */
		if (READ_ONCE(f->revoked) && nr != _IOC_NR(LZCHAN_IOC_FEATURES))
			return -EKEYREVOKED;
		if (!lzchan_ep_may(nr))
			return -EPERM;
	}
	if (nr == _IOC_NR(LZCHAN_IOC_GRANT))
		return lzchan_ep_grant(f, argp);
	if (!op->execute)
		return -ENOTTY;

	if (!op->size)
		return op->execute(f, NULL);

	if (get_user(usize, (u32 __user *)argp))
		return -EFAULT;
	if (usize < op->min_size)
		return -EINVAL;
	/* Bound the zero-check of a "newer" caller's tail, as openat2 does. */
	if (usize > PAGE_SIZE)
		return -E2BIG;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	/* Zero-fills past usize; -E2BIG if the caller set bytes we lack. */
	ret = copy_struct_from_user(buf, op->size, argp, usize);
	if (ret)
		goto out;
	ret = op->execute(f, buf);
	if (ret < 0)
		goto out;
	if (copy_to_user(argp, buf, min_t(size_t, usize, op->size)))
		ret = -EFAULT;
out:
	kfree(buf);
	return ret;
}

/* ---- file operations ---- */

/* A new file's state (an open of /dev/lzchan, or an endpoint's). */
void lzchan_file_init(struct lzchan_file *f)
{
	mutex_init(&f->lock);
	init_rwsem(&f->map_sem);
	INIT_LIST_HEAD(&f->ep_node);
	f->lane = LZCHAN_LANE_NONE;
}

static int lzchan_open(struct inode *inode, struct file *file)
{
	struct lzchan_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	lzchan_file_init(f);
	file->private_data = f;
	return 0;
}

/* Runs when the fd and every mapping of it are gone. */
static int lzchan_release(struct inode *inode, struct file *file)
{
	struct lzchan_file *f = file->private_data;
	bool ep = lzchan_file_is_ep(f);

	lzchan_chan_release_file(f);
	kfree(f);
	if (ep)
		lzchan_ep_unpin();
	return 0;
}

static void lzchan_show_fdinfo(struct seq_file *m, struct file *file)
{
	lzchan_chan_show_fdinfo(m, file->private_data);
}

/* Also an endpoint's (lzchan_ep.c). */
const struct file_operations lzchan_fops = {
	.owner = THIS_MODULE,
	.open = lzchan_open,
	.release = lzchan_release,
	.unlocked_ioctl = lzchan_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = lzchan_mmap,
	.show_fdinfo = lzchan_show_fdinfo,
	.llseek = noop_llseek,
};

/* ---- sysfs: /sys/class/misc/lzchan/{channels,pages,node_pages} ---- */

static ssize_t channels_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%u\n", lzchan_chan_count());
}
static DEVICE_ATTR_RO(channels);

static ssize_t pages_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%ld\n", lzchan_pages_total());
}
static DEVICE_ATTR_RO(pages);

/* One line per online node: "<node> <pages>". */
static ssize_t node_pages_show(struct device *dev, struct device_attribute *attr,
			       char *buf)
{
	int nid, len = 0;

	for_each_online_node(nid)
		len += sysfs_emit_at(buf, len, "%d %ld\n", nid,
				     atomic_long_read(&lzchan_node_pages[nid]));
	return len;
}
static DEVICE_ATTR_RO(node_pages);

/* Use per tenant: "ns <ipc ns inum> <owning user ns inum> <channels>
 * <bytes>" per IPC namespace, then "user <user ns inum> <uid there>
 * <channels> <bytes>" per user and level (see lzchan_charge_levels()). */
static ssize_t tenants_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return lzchan_chan_tenants_show(buf);
}
static DEVICE_ATTR_RO(tenants);

static struct attribute *lzchan_attrs[] = {
	&dev_attr_channels.attr,
	&dev_attr_tenants.attr,
	&dev_attr_pages.attr,
	&dev_attr_node_pages.attr,
	NULL,
};
ATTRIBUTE_GROUPS(lzchan);

static struct miscdevice lzchan_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "lzchan",
	.fops = &lzchan_fops,
	.groups = lzchan_groups,
	/* udev (see packaging) hands the node to a group; 0600 until then. */
	.mode = 0600,
};

static int __init lzchan_init(void)
{
	int ret;

	/* The same layout for 32- and 64-bit callers (compat_ptr_ioctl). */
	BUILD_BUG_ON(sizeof(struct lzchan_chan_stat) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_chan_stat, bytes) % 8);
	BUILD_BUG_ON(sizeof(struct lzchan_info) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_info, layout) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_create, reserved) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_open, reserved) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_peer, reserved) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_placement, nodes) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_usage, max_channel_bytes) % 8);
	BUILD_BUG_ON(sizeof(struct lzchan_usage) % 8);
	/* A place's words never straddle a page (lzchan_ps_place()). */
	BUILD_BUG_ON(PAGE_SIZE % sizeof(struct lzchan_ps_place));

	BUILD_BUG_ON(offsetof(struct lzchan_grant, id) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_revoke, id) % 8);
	BUILD_BUG_ON(offsetof(struct lzchan_lanes, entries) % 8);
	BUILD_BUG_ON(sizeof(struct lzchan_lane_peer) % 8);

	ret = misc_register(&lzchan_misc);
	if (ret) {
		pr_err("cannot register /dev/lzchan: %d\n", ret);
		return ret;
	}
	pr_info("ABI %u ready\n", LZCHAN_ABI_VERSION);
	return 0;
}

static void __exit lzchan_exit(void)
{
	long pages;

	misc_deregister(&lzchan_misc);
	/* No file is open (each holds the module), so only names remain. */
	lzchan_chan_unlink_all();
	lzchan_ns_exit();
	pages = lzchan_pages_total();
	if (pages)
		pr_err("%ld page(s) still held at unload\n", pages);
}

module_init(lzchan_init);
module_exit(lzchan_exit);

MODULE_DESCRIPTION("Shared-memory message channels between processes");
MODULE_AUTHOR("The lzchan developers");
MODULE_LICENSE("GPL");
