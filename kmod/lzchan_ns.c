// SPDX-License-Identifier: GPL-2.0-only
/*
 * IPC namespace scoping of channel names.
 *
 * Names live in the caller's IPC namespace, like SysV and POSIX IPC.  A
 * module cannot hold an IPC namespace reference on every kernel we support
 * (put_ipc_ns() is not exported to modules in 6.1), so we hold the
 * namespace's mqueue mount instead.  Every IPC namespace has exactly one
 * (ns->mq_mnt, made when the namespace is made), a mount we hold can never
 * be reused for another namespace, and when the namespace dies the kernel
 * clears that mount's superblock s_fs_info (mq_clear_sbinfo(), called from
 * put_ipc_ns() under mq_lock).  Hence:
 *
 *   identity:  ns->mq_mnt pointer equality, exact while we hold the mount;
 *   death:     mq_mnt->mnt_sb->s_fs_info == NULL.
 *
 * The reaper unlinks the channels of dead namespaces (as SysV IPC objects
 * die with theirs).  It runs under lzchan_lock before every name operation
 * and from a periodic work item while a namespace other than the initial
 * one (which never dies) has channels: a machine without containers using
 * lzchan never wakes it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/ipc_namespace.h>
#include <linux/mount.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <linux/workqueue.h>

#include "lzchan_compat.h"
#include "lzchan_internal.h"

DEFINE_MUTEX(lzchan_lock);
static LIST_HEAD(lzchan_namespaces);

#define LZCHAN_REAP_INTERVAL	(5 * HZ)

static void lzchan_ns_reap_work(struct work_struct *work);
static DECLARE_DELAYED_WORK(lzchan_reaper, lzchan_ns_reap_work);

/* What identifies the caller's IPC namespace (see above). */
const void *lzchan_ns_current_key(void)
{
	return current->nsproxy->ipc_ns->mq_mnt;
}

bool lzchan_ns_is_current(const struct lzchan_ns *ns)
{
	return ns->mq_mnt == lzchan_ns_current_key();
}

/*
 * Can this namespace die?  The initial IPC namespace never does: channels
 * there need no reaper.  (A module cannot be told when an IPC namespace
 * dies -- no notifier exists -- hence the periodic look while channels of
 * other namespaces exist; every name operation reaps first as well.)
 */
static bool lzchan_ns_mortal(const struct lzchan_ns *ns)
{
	return !lzchan_ns_initial(ns);
}

/* Is this the host's (the initial) IPC namespace? */
bool lzchan_ns_initial(const struct lzchan_ns *ns)
{
	return ns->mq_mnt == init_task.nsproxy->ipc_ns->mq_mnt;
}

/* The entry of the namespace @key identifies (see above), or NULL. */
struct lzchan_ns *lzchan_ns_find(const void *key)
{
	struct lzchan_ns *ns;

	lockdep_assert_held(&lzchan_lock);
	list_for_each_entry(ns, &lzchan_namespaces, node)
		if (ns->mq_mnt == key)
			return ns;
	return NULL;
}

/* Find or make the caller's namespace entry and take a reference. */
struct lzchan_ns *lzchan_ns_current_get(void)
{
	struct ipc_namespace *ipc = current->nsproxy->ipc_ns;
	struct lzchan_ns *ns;

	lockdep_assert_held(&lzchan_lock);
	ns = lzchan_ns_find(ipc->mq_mnt);
	if (ns) {
		kref_get(&ns->ref);
		return ns;
	}

	ns = kzalloc(sizeof(*ns), GFP_KERNEL_ACCOUNT);
	if (!ns)
		return NULL;
	ns->mq_mnt = mntget(ipc->mq_mnt);
	ns->user_ns = get_user_ns(ipc->user_ns);
	ns->ipc_inum = ipc->ns.inum;
	kref_init(&ns->ref);
	list_add(&ns->node, &lzchan_namespaces);
	if (lzchan_ns_mortal(ns))
		lzchan_ns_reaper_start();
	return ns;
}

static void lzchan_ns_free(struct kref *ref)
{
	struct lzchan_ns *ns = container_of(ref, struct lzchan_ns, ref);

	list_del(&ns->node);
	mntput(ns->mq_mnt);
	put_user_ns(ns->user_ns);
	kfree(ns);
}

void lzchan_ns_put(struct lzchan_ns *ns)
{
	lockdep_assert_held(&lzchan_lock);
	kref_put(&ns->ref, lzchan_ns_free);
}

static bool lzchan_ns_dead(const struct lzchan_ns *ns)
{
	/* Cleared once, by mq_clear_sbinfo() when the namespace dies. */
	return !READ_ONCE(ns->mq_mnt->mnt_sb->s_fs_info);
}

/* "ns <ipc inum> <owning user ns inum> <channels> <bytes>" lines at
 * buf + *len; false if the page filled up (see lzchan_emit_line()). */
bool lzchan_ns_tenants_show(char *buf, ssize_t *len)
{
	struct lzchan_ns *ns;

	lockdep_assert_held(&lzchan_lock);
	list_for_each_entry(ns, &lzchan_namespaces, node)
		if (!lzchan_emit_line(buf, len, "ns %u %u %u %llu\n", ns->ipc_inum,
				      ns->user_ns->ns.inum, ns->channels, ns->bytes))
			return false;
	return true;
}

void lzchan_ns_reap(void)
{
	struct lzchan_ns *ns, *next;

	lockdep_assert_held(&lzchan_lock);
	list_for_each_entry_safe(ns, next, &lzchan_namespaces, node) {
		if (!lzchan_ns_dead(ns))
			continue;
		/* Hold ns: unlinking may drop the channels' references. */
		kref_get(&ns->ref);
		lzchan_chan_unlink_ns(ns);
		lzchan_ns_put(ns);
	}
}

static bool lzchan_ns_any_mortal(void)
{
	struct lzchan_ns *ns;

	lockdep_assert_held(&lzchan_lock);
	list_for_each_entry(ns, &lzchan_namespaces, node)
		if (lzchan_ns_mortal(ns))
			return true;
	return false;
}

static void lzchan_ns_reap_work(struct work_struct *work)
{
	bool again;

	mutex_lock(&lzchan_lock);
	lzchan_ns_reap();
	again = lzchan_ns_any_mortal();
	lzchan_unlock();
	if (again)
		schedule_delayed_work(&lzchan_reaper, LZCHAN_REAP_INTERVAL);
}

void lzchan_ns_reaper_start(void)
{
	/* No-op if already queued; the work re-arms itself while needed. */
	schedule_delayed_work(&lzchan_reaper, LZCHAN_REAP_INTERVAL);
}

void lzchan_ns_exit(void)
{
	cancel_delayed_work_sync(&lzchan_reaper);
	WARN_ON(!list_empty(&lzchan_namespaces));
}
