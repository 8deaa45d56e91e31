// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan: the /dev/lzchan misc device.
 *
 * The module hands out shared-memory channel regions and routes wakeups; it
 * is never on the per-message path.  This file holds the device and the
 * ioctl dispatcher; each ioctl argument is copied in through
 * copy_struct_from_user() so that structs can grow (see the UAPI header).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include <linux/lzchan.h>

#include "lzchan_compat.h"

/* Large enough for the biggest ioctl argument struct the module knows. */
union lzchan_ioctl_buf {
	struct lzchan_features features;
};

struct lzchan_ioctl_op {
	int (*execute)(struct file *file, void *arg);
	size_t size;		/* the struct as this module knows it */
	size_t min_size;	/* the first published version of the struct */
};

static int lzchan_features_get(struct file *file, void *arg)
{
	struct lzchan_features *f = arg;

	if (f->flags || memchr_inv(f->reserved, 0, sizeof(f->reserved)))
		return -EINVAL;

	f->abi_version = LZCHAN_ABI_VERSION;
	f->page_size = PAGE_SIZE;
	f->features = LZCHAN_FEAT_ALL;
	return 0;
}

#define LZCHAN_IOCTL_OP(_nr, _fn, _struct, _last)			\
	[_IOC_NR(_nr)] = {						\
		.execute = _fn,						\
		.size = sizeof(_struct),				\
		.min_size = offsetofend(_struct, _last),		\
	}

static const struct lzchan_ioctl_op lzchan_ioctl_ops[] = {
	LZCHAN_IOCTL_OP(LZCHAN_IOC_FEATURES, lzchan_features_get,
			struct lzchan_features, reserved),
};

static long lzchan_ioctl(struct file *file, unsigned int cmd,
			 unsigned long uarg)
{
	void __user *argp = (void __user *)uarg;
	const struct lzchan_ioctl_op *op;
	union lzchan_ioctl_buf buf;
	unsigned int nr;
	u32 usize;
	int ret;

	/* Commands carry no size or direction: anything else is not ours. */
	if (_IOC_TYPE(cmd) != LZCHAN_IOC_MAGIC || _IOC_DIR(cmd) != _IOC_NONE ||
	    _IOC_SIZE(cmd) != 0)
		return -ENOTTY;
	nr = _IOC_NR(cmd);
	if (nr >= ARRAY_SIZE(lzchan_ioctl_ops) || !lzchan_ioctl_ops[nr].execute)
		return -ENOTTY;
	op = &lzchan_ioctl_ops[nr];

	if (get_user(usize, (u32 __user *)argp))
		return -EFAULT;
	if (usize < op->min_size)
		return -EINVAL;
	/* Zero-fills past usize; -E2BIG if the caller set bytes we lack. */
	ret = copy_struct_from_user(&buf, op->size, argp, usize);
	if (ret)
		return ret;

	ret = op->execute(file, &buf);
	if (ret)
		return ret;

	if (copy_to_user(argp, &buf, min_t(size_t, usize, op->size)))
		return -EFAULT;
	return 0;
}

static const struct file_operations lzchan_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = lzchan_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice lzchan_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "lzchan",
	.fops = &lzchan_fops,
	/* udev (see packaging) hands the node to a group; 0600 until then. */
	.mode = 0600,
};

static int __init lzchan_init(void)
{
	int ret;

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
	misc_deregister(&lzchan_misc);
}

module_init(lzchan_init);
module_exit(lzchan_exit);

MODULE_DESCRIPTION("Shared-memory message channels between processes");
MODULE_AUTHOR("The lzchan developers");
MODULE_LICENSE("GPL");
