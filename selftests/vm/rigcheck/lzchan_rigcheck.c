// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan_rigcheck: proves that the VM rig's debug kernel reports what it is
 * there to report.  Built and loaded only by the rig on its debug kernel
 * (scripts/vm-run.sh), after lzchan itself has been tested and unloaded;
 * never installed, never part of lzchan.ko.
 *
 * Writing a word to /sys/kernel/debug/lzchan_rigcheck/trigger commits one
 * deliberate bug of a kind lzchan could have:
 *
 *   kasan         read one byte past a kmalloc()ed object  -> KASAN
 *   double_free   free an object twice                     -> KASAN
 *   kfence        read the guard page of a KFENCE object   -> KFENCE
 *   lockdep       take two mutexes in both orders          -> lockdep
 *   atomic_sleep  GFP_KERNEL allocation under a spinlock   -> DEBUG_ATOMIC_SLEEP
 *   ubsan         shift an int by more than its width      -> UBSAN
 *   list          list_del() the same entry twice          -> DEBUG_LIST
 *   odebug        free an object with an armed timer       -> DEBUG_OBJECTS
 *   leak          drop the only pointer to an allocation   -> kmemleak
 *
 * None of them corrupts anything: the out-of-bounds reads stay inside a
 * redzone or a guard page, KASAN keeps the freed-twice object from the
 * allocator, the locks are taken one after the other (an inversion lockdep
 * predicts, not a deadlock), the allocation under the spinlock succeeds
 * from the slab without sleeping, DEBUG_LIST refuses the second deletion
 * and DEBUG_OBJECTS deactivates the timer before the free.  The
 * rig frames each trigger with markers in the kernel log, requires the
 * expected report inside the frame and treats any report outside a frame
 * as a failure, as before.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kfence.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timer.h>
#include <linux/uaccess.h>

static struct dentry *rigcheck_dir;

/*
 * Sizes and shift counts live in variables the compiler cannot see
 * through, so that the bugs happen at run time instead of being refused
 * (or silently folded) at build time.
 */
static volatile size_t rigcheck_size = 24;
static volatile int rigcheck_shift = 40;

/*
 * An ordinary slab object: one KFENCE did not take (KFENCE samples an
 * allocation now and then, and KASAN does not redzone those), so that
 * KASAN's report is certain.
 */
static char *rigcheck_alloc_slab(size_t n)
{
	char *p, *kept[8];
	int i, nkept = 0;

	for (i = 0; i < 64; i++) {
		p = kmalloc(n, GFP_KERNEL);
		if (!p || !is_kfence_address(p))
			break;
		if (nkept < (int)ARRAY_SIZE(kept))
			kept[nkept++] = p;	/* do not get the same one back */
		else
			kfree(p);
	}
	while (nkept)
		kfree(kept[--nkept]);
	return p && !is_kfence_address(p) ? p : NULL;
}

static noinline int rigcheck_kasan(void)
{
	size_t n = rigcheck_size;
	char *p = rigcheck_alloc_slab(n);
	char c;

	if (!p)
		return -ENOMEM;
	c = READ_ONCE(p[n]);		/* one past the end: KASAN's redzone */
	kfree(p);
	return c == 0x7f ? 1 : 0;	/* uses c; either way the report is out */
}

static noinline int rigcheck_double_free(void)
{
	char *p = rigcheck_alloc_slab(rigcheck_size);

	if (!p)
		return -ENOMEM;
	kfree(p);
	kfree(p);			/* KASAN: double-free (invalid-free) */
	return 0;
}

/*
 * KFENCE hands out an object every sample interval (100 ms); wait up to
 * ten seconds for one, then read the guard page beside it: before the
 * object when KFENCE placed it at the start of its page, after otherwise.
 */
static noinline int rigcheck_kfence(void)
{
	unsigned long end = jiffies + 10 * HZ;
	char *p = NULL, *guard;
	char c;

	while (time_before(jiffies, end)) {
		p = kmalloc(rigcheck_size, GFP_KERNEL);
		if (!p || is_kfence_address(p))
			break;
		kfree(p);
		p = NULL;
		msleep(5);
	}
	if (!p)
		return -EAGAIN;
	if (offset_in_page(p) == 0)
		guard = p - 1;
	else
		guard = (char *)PAGE_ALIGN((unsigned long)p + rigcheck_size);
	c = READ_ONCE(*guard);		/* KFENCE: out-of-bounds read */
	kfree(p);
	return c == 0x7f ? 1 : 0;
}

static DEFINE_MUTEX(rigcheck_a);
static DEFINE_MUTEX(rigcheck_b);

static noinline int rigcheck_lockdep(void)
{
	mutex_lock(&rigcheck_a);
	mutex_lock(&rigcheck_b);
	mutex_unlock(&rigcheck_b);
	mutex_unlock(&rigcheck_a);
	/* The other order: lockdep predicts the AB-BA deadlock here. */
	mutex_lock(&rigcheck_b);
	mutex_lock(&rigcheck_a);
	mutex_unlock(&rigcheck_a);
	mutex_unlock(&rigcheck_b);
	return 0;
}

static DEFINE_SPINLOCK(rigcheck_lock);

static noinline int rigcheck_atomic_sleep(void)
{
	void *p;

	spin_lock(&rigcheck_lock);
	p = kmalloc(rigcheck_size, GFP_KERNEL);	/* may sleep: not here */
	spin_unlock(&rigcheck_lock);
	kfree(p);
	return 0;
}

static noinline int rigcheck_ubsan(void)
{
	int one = 1;

	return (one << rigcheck_shift) == 0;	/* 40 >= 32 bits */
}

static noinline void *rigcheck_leak_alloc(void)
{
	char *p = kmalloc(128, GFP_KERNEL);

	/* No pointer-looking content, so nothing in it references anything. */
	if (p)
		memset(p, 0x5a, 128);
	return p;
}

/*
 * A stale copy of the pointer on this task's kernel stack would count as a
 * reference: exited tasks' stacks are cached and scanned too.  Overwrite
 * the stack below the caller's frame, where the allocation's frames were.
 */
static noinline void rigcheck_scrub_stack(void)
{
	char buf[1024];

	memzero_explicit(buf, sizeof(buf));
}

/*
 * Eight objects, each forgotten at once: a stale copy of one pointer
 * (a register saved somewhere the scan looks) hides that one from a scan
 * -- seen twice in CI with a single object, nothing reported after five
 * pairs of scans -- but not all eight.  The rig wants at least one.
 */
#define RIGCHECK_LEAKS	8

static noinline int rigcheck_leak(void)
{
	int i, leaked = 0;

	for (i = 0; i < RIGCHECK_LEAKS; i++)
		leaked += rigcheck_leak_alloc() != NULL;
	rigcheck_scrub_stack();
	if (!leaked)
		return -ENOMEM;
	pr_info("leaked %d 128-byte objects on purpose\n", leaked);
	return 0;
}

static noinline int rigcheck_list(void)
{
	LIST_HEAD(head);
	struct list_head entry;

	list_add(&entry, &head);
	list_del(&entry);
	list_del(&entry);		/* DEBUG_LIST: ->next is LIST_POISON1 */
	return 0;
}

struct rigcheck_timed {
	struct timer_list timer;
};

static void rigcheck_timer_fn(struct timer_list *t)
{
}

static noinline int rigcheck_odebug(void)
{
	struct rigcheck_timed *o = kmalloc(sizeof(*o), GFP_KERNEL);

	if (!o)
		return -ENOMEM;
	timer_setup(&o->timer, rigcheck_timer_fn, 0);
	mod_timer(&o->timer, jiffies + 3600 * HZ);
	kfree(o);			/* DEBUG_OBJECTS: free active object */
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} rigcheck_triggers[] = {
	{ "kasan", rigcheck_kasan },
	{ "double_free", rigcheck_double_free },
	{ "kfence", rigcheck_kfence },
	{ "list", rigcheck_list },
	{ "odebug", rigcheck_odebug },
	{ "lockdep", rigcheck_lockdep },
	{ "atomic_sleep", rigcheck_atomic_sleep },
	{ "ubsan", rigcheck_ubsan },
	{ "leak", rigcheck_leak },
};

static ssize_t rigcheck_trigger_write(struct file *file, const char __user *ubuf,
				      size_t len, loff_t *ppos)
{
	char word[32];
	size_t i;
	int ret;

	if (len == 0 || len >= sizeof(word))
		return -EINVAL;
	if (copy_from_user(word, ubuf, len))
		return -EFAULT;
	word[len] = '\0';
	strim(word);
	for (i = 0; i < ARRAY_SIZE(rigcheck_triggers); i++) {
		if (strcmp(word, rigcheck_triggers[i].name))
			continue;
		pr_info("trigger %s\n", word);
		ret = rigcheck_triggers[i].fn();
		return ret < 0 ? ret : len;
	}
	return -EINVAL;
}

static const struct file_operations rigcheck_trigger_fops = {
	.owner	= THIS_MODULE,
	.write	= rigcheck_trigger_write,
	.llseek	= noop_llseek,
};

static int __init rigcheck_init(void)
{
	rigcheck_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("trigger", 0200, rigcheck_dir, NULL, &rigcheck_trigger_fops);
	return 0;
}

static void __exit rigcheck_exit(void)
{
	debugfs_remove_recursive(rigcheck_dir);
}

module_init(rigcheck_init);
module_exit(rigcheck_exit);
MODULE_DESCRIPTION("lzchan VM rig: deliberate bugs the debug kernel must report");
MODULE_LICENSE("GPL");
