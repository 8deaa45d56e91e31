// SPDX-License-Identifier: GPL-2.0-only
/*
 * Channels: creation and memory, names, attachment of receiver and senders,
 * wakeups, peer credentials, listing.
 *
 * Everything here is setup or teardown; the per-message path never enters
 * the kernel.  Values read back from shared memory (rx head, close_ack,
 * slot seq, tx msgs) are untrusted: they only ever decide things about the
 * channel that the writer could have spoiled anyway, never an index or size
 * the kernel uses.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/eventfd.h>
#include <linux/gfp.h>
#include <linux/hashtable.h>
#include <linux/highmem.h>
#include <linux/ipc_namespace.h>
#include <linux/jhash.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/nospec.h>
#include <linux/nsproxy.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>
#include <linux/vmalloc.h>

#include "lzchan_compat.h"
#include "lzchan_internal.h"

/* Linked channels by (namespace, name); under lzchan_lock. */
static DEFINE_HASHTABLE(lzchan_names, 8);
/* Channels in existence, linked or not; under lzchan_lock. */
static unsigned int lzchan_nr_channels;

/*
 * Per-user use, under lzchan_lock.  A channel is charged first to its
 * creator as a user of the channel's IPC namespace (in the host's IPC
 * namespace: as a host user, a user of the initial user namespace), then,
 * as the kernel's ucounts do, to the owner of each user namespace from
 * the creator's up to the initial one (lzchan_charge_levels()).  So the
 * uids of a container are each limited there, all of a user namespace's
 * together are limited as the host user who made it, and two containers
 * running the same host uid without user namespaces (Docker's default,
 * root) have an allowance each, not one between them.
 */
struct lzchan_user {
	struct list_head node;
	struct lzchan_ns *ns;			/* a user of this IPC namespace
						 * (the first level outside the
						 * host's), or NULL; alive: the
						 * user's channels hold it */
	struct user_namespace *user_ns;		/* else a user of this user
						 * namespace; alive: a charged
						 * channel's lzchan_ns or cred_ns
						 * holds it or a child of it */
	kuid_t uid;
	u32 channels;
	u64 bytes;
};
static LIST_HEAD(lzchan_users);

static u32 lzchan_name_hash(const struct lzchan_ns *ns, const char *name)
{
	return jhash(name, strlen(name), hash_ptr(ns->mq_mnt, 32));
}

int lzchan_name_check(const char *name)
{
	size_t len = strnlen(name, LZCHAN_NAME_SIZE), i;

	if (len == LZCHAN_NAME_SIZE)
		return -ENAMETOOLONG;
	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (name[i] < '!' || name[i] > '~' || name[i] == '/')
			return -EINVAL;
	return 0;
}

/* The caller's namespace's channel of that name, or NULL. */
static struct lzchan_chan *lzchan_chan_lookup(const char *name)
{
	struct lzchan_chan *chan;

	lockdep_assert_held(&lzchan_lock);
	hash_for_each_possible(lzchan_names, chan, hnode,
			       jhash(name, strlen(name),
				     hash_ptr(lzchan_ns_current_key(), 32))) {
		if (lzchan_ns_is_current(chan->ns) && !strcmp(chan->name, name))
			return chan;
	}
	return NULL;
}

/* ---- per-tenant limits ---- */

static struct lzchan_user *lzchan_user_find(struct lzchan_ns *ns,
					    struct user_namespace *user_ns, kuid_t uid)
{
	struct lzchan_user *u;

	list_for_each_entry(u, &lzchan_users, node)
		if (u->ns == ns && u->user_ns == user_ns && uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/*
 * The users one charge goes to (see lzchan_charge_levels()): the first
 * level, then one per owner above the creator's user namespace, which may
 * be 33 deep (create_user_ns() refuses a parent whose level is above 32).
 */
#define LZCHAN_USER_LEVELS	(1 + 33)

struct lzchan_charge {
	struct lzchan_ns *ns[LZCHAN_USER_LEVELS];
	struct user_namespace *uns[LZCHAN_USER_LEVELS];
	kuid_t uid[LZCHAN_USER_LEVELS];
	unsigned int n;			/* levels */
};

/* The first level's key: @uid as a user of IPC namespace @ns, or, in the
 * host's, as a host user (where the owner chains of containers end). */
static void lzchan_charge_first(struct lzchan_ns *ns, struct lzchan_ns **kns,
				struct user_namespace **kuns)
{
	*kns = lzchan_ns_initial(ns) ? NULL : ns;
	*kuns = lzchan_ns_initial(ns) ? ns->user_ns : NULL;
}

/*
 * A channel in IPC namespace @ns, made by @uid whose credentials live in
 * user namespace @cred_ns, is charged to: @uid as a user of @ns (the host
 * user @uid in the host's IPC namespace); then the owner of @cred_ns in
 * its parent, and so on up to the host, as the kernel's own per-user
 * counts (ucounts) are.  The chain follows the creator's user namespaces,
 * not the IPC namespace's: a tenant admitted to another's IPC namespace (a
 * shared pod, --ipc=container:) spends its own owner's allowance there,
 * never the host's owner's.  Each key is charged once.
 */
static void lzchan_charge_levels(struct lzchan_charge *c, struct lzchan_ns *ns,
				 struct user_namespace *cred_ns, kuid_t uid)
{
	unsigned int k;

	c->n = 0;
	lzchan_charge_first(ns, &c->ns[0], &c->uns[0]);
	c->uid[c->n++] = uid;
	while (cred_ns != &init_user_ns) {
		uid = cred_ns->owner;
		cred_ns = cred_ns->parent;
		for (k = 0; k < c->n; k++)
			if (!c->ns[k] && c->uns[k] == cred_ns && uid_eq(c->uid[k], uid))
				break;
		if (k < c->n)
			continue;
		if (WARN_ON_ONCE(c->n == LZCHAN_USER_LEVELS))
			break;
		c->ns[c->n] = NULL;
		c->uns[c->n] = cred_ns;
		c->uid[c->n++] = uid;
	}
}

/* Undo the lookups of a charge that failed: drop the users it made. */
static void lzchan_charge_drop_new(struct lzchan_user **users, unsigned int found)
{
	while (found) {
		struct lzchan_user *u = users[--found];

		if (!u->channels) {	/* made for this charge */
			list_del(&u->node);
			kfree(u);
		}
	}
}

/*
 * Charge a channel of @bytes, created by @uid with credentials in @cred_ns,
 * to namespace @ns and its users; nothing is charged on failure.
 * CAP_SYS_RESOURCE in the initial user namespace (the host's
 * administrator) is exempt from the tenant limits, never from
 * max_channels.
 */
static int lzchan_tenant_charge(struct lzchan_ns *ns, struct user_namespace *cred_ns,
				kuid_t uid, u64 bytes)
{
	bool exempt = ns_capable_noaudit(&init_user_ns, CAP_SYS_RESOURCE);
	struct lzchan_user *users[LZCHAN_USER_LEVELS], *u;
	struct lzchan_charge c;
	unsigned int i, found = 0;

	lockdep_assert_held(&lzchan_lock);
	if (!exempt && ns->channels >= READ_ONCE(lzchan_max_ns_channels))
		return -ENOSPC;
	if (!exempt && ns->bytes + bytes > READ_ONCE(lzchan_max_ns_bytes))
		return -EDQUOT;
	lzchan_charge_levels(&c, ns, cred_ns, uid);
	for (i = 0; i < c.n; i++) {
		int ret = 0;

		u = lzchan_user_find(c.ns[i], c.uns[i], c.uid[i]);
		if (!u) {
			u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
			if (!u) {
				ret = -ENOMEM;
			} else {
				u->ns = c.ns[i];
				u->user_ns = c.uns[i];
				u->uid = c.uid[i];
				list_add(&u->node, &lzchan_users);
			}
		}
		if (u)
			users[found++] = u;
		if (!ret && !exempt &&
		    u->channels >= READ_ONCE(lzchan_max_user_channels))
			ret = -ENOSPC;
		if (!ret && !exempt &&
		    u->bytes + bytes > READ_ONCE(lzchan_max_user_bytes))
			ret = -EDQUOT;
		if (ret) {
			lzchan_charge_drop_new(users, found);
			return ret;
		}
	}
	for (i = 0; i < found; i++) {
		users[i]->channels++;
		users[i]->bytes += bytes;
	}
	ns->channels++;
	ns->bytes += bytes;
	return 0;
}

static void lzchan_tenant_uncharge(struct lzchan_ns *ns, struct user_namespace *cred_ns,
				   kuid_t uid, u64 bytes)
{
	struct lzchan_charge c;
	struct lzchan_user *u;
	unsigned int i;

	lockdep_assert_held(&lzchan_lock);
	if (!WARN_ON_ONCE(!ns->channels || ns->bytes < bytes)) {
		ns->channels--;
		ns->bytes -= bytes;
	}
	lzchan_charge_levels(&c, ns, cred_ns, uid);
	for (i = 0; i < c.n; i++) {
		u = lzchan_user_find(c.ns[i], c.uns[i], c.uid[i]);
		if (WARN_ON_ONCE(!u || !u->channels || u->bytes < bytes))
			continue;
		u->channels--;
		u->bytes -= bytes;
		if (!u->channels) {
			list_del(&u->node);
			kfree(u);
		}
	}
}

/* The caller's use and limits (LZCHAN_IOC_USAGE). */
int lzchan_chan_usage(struct lzchan_usage *us)
{
	struct lzchan_user *u;
	struct lzchan_ns *ns;

	if (us->flags || memchr_inv(us->reserved, 0, sizeof(us->reserved)))
		return -EINVAL;
	/* Everything else is output: clear whatever the caller passed. */
	*us = (struct lzchan_usage){ .size = us->size };
	mutex_lock(&lzchan_lock);
	lzchan_ns_reap();
	us->channels = lzchan_nr_channels;
	us->max_channels = READ_ONCE(lzchan_max_channels);
	us->max_channel_bytes = READ_ONCE(lzchan_max_channel_bytes);
	us->max_ns_channels = READ_ONCE(lzchan_max_ns_channels);
	us->max_ns_bytes = READ_ONCE(lzchan_max_ns_bytes);
	us->max_user_channels = READ_ONCE(lzchan_max_user_channels);
	us->max_user_bytes = READ_ONCE(lzchan_max_user_bytes);
	ns = lzchan_ns_find(lzchan_ns_current_key());
	if (ns) {
		us->ns_channels = ns->channels;
		us->ns_bytes = ns->bytes;
	}
	/* Where the caller's next channel would be charged first: as a
	 * user of its IPC namespace (lzchan_charge_first()). */
	if (ns) {
		struct lzchan_ns *kns;
		struct user_namespace *kuns;

		lzchan_charge_first(ns, &kns, &kuns);
		u = lzchan_user_find(kns, kuns, current_euid());
		if (u) {
			us->user_channels = u->channels;
			us->user_bytes = u->bytes;
		}
	}
	if (ns_capable_noaudit(&init_user_ns, CAP_SYS_RESOURCE))
		us->flags_out |= LZCHAN_USAGE_EXEMPT;
	lzchan_unlock();
	return 0;
}

/*
 * Append one whole line to a sysfs page, keeping room for the "...\n" that
 * says the list was cut short (any user can make many tenants); false,
 * and nothing appended, once the page is full.
 */
bool lzchan_emit_line(char *buf, ssize_t *len, const char *fmt, ...)
{
	char line[96];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vscnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (*len + n > PAGE_SIZE - sizeof("...\n"))
		return false;
	memcpy(buf + *len, line, n);
	*len += n;
	return true;
}

/* /sys/class/misc/lzchan/tenants: one line per namespace, then per user. */
ssize_t lzchan_chan_tenants_show(char *buf)
{
	struct lzchan_user *u;
	ssize_t len = 0;
	bool room;

	mutex_lock(&lzchan_lock);
	room = lzchan_ns_tenants_show(buf, &len);
	list_for_each_entry(u, &lzchan_users, node) {
		if (!room)
			break;
		if (u->ns)	/* a user of an IPC namespace: its uid there */
			room = lzchan_emit_line(buf, &len, "ipcuser %u %u %u %llu\n",
						u->ns->ipc_inum,
						from_kuid_munged(u->ns->user_ns, u->uid),
						u->channels, u->bytes);
		else
			room = lzchan_emit_line(buf, &len, "user %u %u %u %llu\n",
						u->user_ns->ns.inum,
						from_kuid_munged(u->user_ns, u->uid),
						u->channels, u->bytes);
	}
	lzchan_unlock();
	if (!room)
		len += sysfs_emit_at(buf, len, "...\n");
	return len;
}

/* ---- shared memory accessors (kernel views) ---- */

static struct lzchan_shm_hdr *lzchan_shm_hdr(struct lzchan_chan *chan)
{
	return chan->kinfo;
}

static struct lzchan_shm_lane *lzchan_shm_lane(struct lzchan_chan *chan, u32 i)
{
	return chan->kinfo + chan->layout.info_lanes +
	       (size_t)i * sizeof(struct lzchan_shm_lane);
}

static struct lzchan_shm_rx *lzchan_shm_rx(struct lzchan_chan *chan)
{
	return chan->krx;
}

static struct lzchan_shm_rx_lane *lzchan_shm_rx_lane(struct lzchan_chan *chan, u32 i)
{
	return chan->krx + chan->layout.rx_lanes + (size_t)i * chan->layout.rx_lane_stride;
}

/* Kernel address of byte @off of lane @i's area (never crosses a page for
 * the 8-byte-aligned words we touch). */
static void *lzchan_lane_ptr(struct lzchan_chan *chan, u32 i, u64 off)
{
	u64 pos = chan->layout.lanes_off + i * chan->layout.lane_stride + off;

	return page_address(chan->pages[pos >> PAGE_SHIFT]) + offset_in_page(pos);
}

static struct lzchan_slot_hdr *lzchan_slot(struct lzchan_chan *chan, u32 i, u32 pos)
{
	return lzchan_lane_ptr(chan, i, chan->layout.lane_slots +
			       (u64)(pos & (chan->slot_count - 1)) * chan->slot_size);
}

/* ---- creation and destruction ---- */

static int lzchan_layout_init(struct lzchan_chan *chan, u64 *bytes)
{
	struct lzchan_layout *l = &chan->layout;
	u64 info, rx, bell, lane;

	l->info_lanes = sizeof(struct lzchan_shm_hdr);
	/* Each lane's rx words on a page of their own, which only that
	 * lane's sender may map (lzchan_mmap()); the header on the first. */
	l->rx_lanes = PAGE_SIZE;
	l->rx_lane_stride = PAGE_SIZE;
	l->lane_slots = sizeof(struct lzchan_shm_tx);

	/* Bounded by the geometry limits: no term can overflow 64 bits. */
	info = PAGE_ALIGN(l->info_lanes +
			  (u64)chan->max_senders * sizeof(struct lzchan_shm_lane));
	rx = l->rx_lanes + (u64)chan->max_senders * l->rx_lane_stride;
	bell = PAGE_ALIGN(DIV_ROUND_UP(chan->max_senders, 64) * sizeof(u64));
	lane = PAGE_ALIGN(l->lane_slots + (u64)chan->slot_count * chan->slot_size);

	l->info_off = 0;
	l->info_size = info;
	l->rx_off = info;
	l->rx_size = rx;
	l->bell_off = info + rx;
	l->bell_size = bell;
	l->lanes_off = info + rx + bell;
	l->lane_stride = lane;
	l->lane_size = lane;
	*bytes = l->lanes_off + lane * chan->max_senders;
	return 0;
}

static void lzchan_chan_free_pages(struct lzchan_chan *chan)
{
	unsigned long i;

	if (chan->kbell)
		vunmap(chan->kbell);
	if (chan->krx)
		vunmap(chan->krx);
	if (chan->kinfo)
		vunmap(chan->kinfo);
	if (!chan->pages)
		return;
	for (i = 0; i < chan->npages && chan->pages[i]; i++) {
		lzchan_pages_account(page_to_nid(chan->pages[i]), -1);
		__free_page(chan->pages[i]);
		if (!(i & 1023))
			cond_resched();
	}
	kvfree(chan->pages);
}

static int lzchan_chan_alloc_pages(struct lzchan_chan *chan, u64 bytes)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_RETRY_MAYFAIL |
		    __GFP_NOWARN;
	unsigned long i, info_pages, rx_pages, bell_pages;
	struct lzchan_shm_hdr *hdr;

	if (chan->create_flags & LZCHAN_CREATE_NODE_STRICT)
		gfp |= __GFP_THISNODE;

	chan->npages = bytes >> PAGE_SHIFT;
	chan->pages = kvcalloc(chan->npages, sizeof(*chan->pages),
			       GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!chan->pages)
		return -ENOMEM;
	for (i = 0; i < chan->npages; i++) {
		struct page *page = alloc_pages_node(chan->node, gfp, 0);

		if (!page)
			return -ENOMEM;
		chan->pages[i] = page;
		lzchan_pages_account(page_to_nid(page), 1);
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}

	if (chan->pubsub) {
		lzchan_ps_pages_init(chan);
		return 0;
	}
	info_pages = chan->layout.info_size >> PAGE_SHIFT;
	rx_pages = chan->layout.rx_size >> PAGE_SHIFT;
	bell_pages = chan->layout.bell_size >> PAGE_SHIFT;
	chan->kinfo = vmap(chan->pages, info_pages, VM_MAP, PAGE_KERNEL);
	chan->krx = vmap(chan->pages + info_pages, rx_pages, VM_MAP, PAGE_KERNEL);
	chan->kbell = vmap(chan->pages + info_pages + rx_pages, bell_pages, VM_MAP,
			   PAGE_KERNEL);
	if (!chan->kinfo || !chan->krx || !chan->kbell)
		return -ENOMEM;

	hdr = lzchan_shm_hdr(chan);
	hdr->magic = LZCHAN_SHM_MAGIC;
	hdr->abi_version = LZCHAN_ABI_VERSION;
	hdr->slot_size = chan->slot_size;
	hdr->slot_count = chan->slot_count;
	hdr->max_senders = chan->max_senders;
	/* rx_status and every lane status start zeroed: LZCHAN_RX_NONE and
	 * LZCHAN_LANE_FREE, generation 0. */
	return 0;
}

/*
 * Channels whose last reference went while lzchan_lock was held: their
 * accounting is undone at once, their memory (up to max_channel_bytes of
 * pages) is freed by lzchan_unlock() after the lock is dropped, so that no
 * other tenant waits on the global lock for it.
 */
static LIST_HEAD(lzchan_graveyard);

/* The last reference is gone; called with lzchan_lock held. */
static void __lzchan_chan_free(struct lzchan_chan *chan)
{
	lockdep_assert_held(&lzchan_lock);
	lzchan_tenant_uncharge(chan->ns, chan->cred_ns, chan->cuid,
			       (u64)chan->npages << PAGE_SHIFT);
	lzchan_ns_put(chan->ns);
	chan->ns = NULL;
	put_user_ns(chan->cred_ns);	/* frees from a work item, not here */
	chan->cred_ns = NULL;
	lzchan_nr_channels--;
	list_add_tail(&chan->dead, &lzchan_graveyard);
}

static void lzchan_chan_free_mem(struct lzchan_chan *chan)
{
	lzchan_chan_free_pages(chan);
	kfree(chan->lanes);
	kfree(chan);
}

/* Drop lzchan_lock, then free what died under it (see above). */
void lzchan_unlock(void)
{
	struct lzchan_chan *chan, *next;
	LIST_HEAD(dead);

	list_splice_init(&lzchan_graveyard, &dead);
	mutex_unlock(&lzchan_lock);
	list_for_each_entry_safe(chan, next, &dead, dead)
		lzchan_chan_free_mem(chan);
}

static void lzchan_chan_put_locked(struct lzchan_chan *chan)
{
	if (refcount_dec_and_test(&chan->ref.refcount))
		__lzchan_chan_free(chan);
}

void lzchan_chan_put(struct lzchan_chan *chan)
{
	if (refcount_dec_and_mutex_lock(&chan->ref.refcount, &lzchan_lock)) {
		__lzchan_chan_free(chan);
		lzchan_unlock();
	}
}

static int lzchan_create_check(const struct lzchan_create *c)
{
	int ret;

	if (c->flags & ~LZCHAN_CREATE_FLAGS)
		return -EINVAL;
	if (memchr_inv(c->reserved, 0, sizeof(c->reserved)))
		return -EINVAL;
	if (c->flags & LZCHAN_CREATE_PUBSUB) {
		/* A temporary channel goes with its receiver: none here. */
		if (c->flags & LZCHAN_CREATE_TEMP)
			return -EINVAL;
		if (c->policy != LZCHAN_PS_OVERWRITE && c->policy != LZCHAN_PS_BACKPRESSURE)
			return -EINVAL;
		if (c->policy == LZCHAN_PS_OVERWRITE && c->stall_ms)
			return -EINVAL;
	} else if (c->policy || c->stall_ms) {
		return -EINVAL;
	}
	ret = lzchan_name_check(c->name);
	if (ret)
		return ret;
	if (c->slot_size < LZCHAN_SLOT_SIZE_MIN ||
	    c->slot_size > LZCHAN_SLOT_SIZE_MAX ||
	    !is_power_of_2(c->slot_size))
		return -EINVAL;
	if (c->slot_count < LZCHAN_SLOT_COUNT_MIN ||
	    c->slot_count > LZCHAN_SLOT_COUNT_MAX ||
	    !is_power_of_2(c->slot_count))
		return -EINVAL;
	/* max_subscribers for a pub/sub channel (the same field) */
	if (!c->max_senders ||
	    c->max_senders > ((c->flags & LZCHAN_CREATE_PUBSUB) ? LZCHAN_SUBSCRIBERS_MAX :
								    LZCHAN_SENDERS_MAX))
		return -EINVAL;
	if (c->mode & ~0777U)
		return -EINVAL;
	if (c->numa_node != LZCHAN_NODE_LOCAL &&
	    (c->numa_node < 0 || c->numa_node >= nr_node_ids ||
	     !node_online(c->numa_node)))
		return -EINVAL;
	return 0;
}

/* lzchan_chan_create() with f->lock held for a temporary channel. */
static int __lzchan_chan_create(struct lzchan_file *f, struct lzchan_create *c)
{
	struct lzchan_chan *chan, *old;
	u64 bytes;
	int ret;

	chan = kzalloc(sizeof(*chan), GFP_KERNEL_ACCOUNT);
	if (!chan)
		return -ENOMEM;
	kref_init(&chan->ref);		/* the name's reference */
	mutex_init(&chan->lock);
	spin_lock_init(&chan->evlock);
	INIT_LIST_HEAD(&chan->endpoints);
	strscpy(chan->name, c->name, sizeof(chan->name));
	chan->slot_size = c->slot_size;
	chan->slot_count = c->slot_count;
	chan->max_senders = c->max_senders;
	chan->create_flags = c->flags;
	chan->node = c->numa_node == LZCHAN_NODE_LOCAL ? numa_node_id() : c->numa_node;
	chan->uid = chan->cuid = current_euid();
	chan->gid = chan->cgid = current_egid();
	chan->mode = c->mode;
	chan->pubsub = c->flags & LZCHAN_CREATE_PUBSUB;
	chan->policy = c->policy;
	chan->stall_ms = c->stall_ms;
	if (chan->pubsub)
		lzchan_ps_layout_init(chan, &bytes);
	else
		lzchan_layout_init(chan, &bytes);

	if ((c->flags & LZCHAN_CREATE_NODE_STRICT) &&
	    !node_state(chan->node, N_MEMORY)) {
		kfree(chan);
		return -ENOMEM;
	}
	chan->lanes = kcalloc(chan->max_senders, sizeof(*chan->lanes),
			      GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!chan->lanes) {
		kfree(chan);
		return -ENOMEM;
	}

	/* Under the lock: the name, the limits, and a reservation of both. */
	mutex_lock(&lzchan_lock);
	lzchan_ns_reap();
	old = lzchan_chan_lookup(c->name);
	if (old) {
		ret = (c->flags & LZCHAN_CREATE_EXCL) ? -EEXIST : 0;
		c->created = 0;
		goto out_unlock_free;
	}
	ret = -ENOSPC;
	if (lzchan_nr_channels >= READ_ONCE(lzchan_max_channels))
		goto out_unlock_free;
	ret = -EFBIG;
	if (bytes > READ_ONCE(lzchan_max_channel_bytes))
		goto out_unlock_free;
	ret = -ENOMEM;
	chan->ns = lzchan_ns_current_get();
	if (!chan->ns)
		goto out_unlock_free;
	chan->cred_ns = get_user_ns(current_user_ns());
	ret = lzchan_tenant_charge(chan->ns, chan->cred_ns, chan->cuid, bytes);
	if (ret)
		goto out_put_ns;
	lzchan_nr_channels++;
	lzchan_unlock();

	/* The allocation (possibly long: reclaim) holds no lock. */
	ret = lzchan_chan_alloc_pages(chan, bytes);

	mutex_lock(&lzchan_lock);
	if (ret)
		goto out_unreserve;
	/* Someone may have taken the name meanwhile. */
	old = lzchan_chan_lookup(c->name);
	if (old) {
		ret = (c->flags & LZCHAN_CREATE_EXCL) ? -EEXIST : 0;
		c->created = 0;
		goto out_unreserve;
	}
	WRITE_ONCE(chan->linked, true);	/* read unlocked in lzchan_chan_stat() */
	hash_add(lzchan_names, &chan->hnode, lzchan_name_hash(chan->ns, chan->name));
	if (c->flags & LZCHAN_CREATE_TEMP) {
		kref_get(&chan->ref);	/* the creating file's reference */
		f->temp = chan;
	}
	lzchan_unlock();
	c->created = 1;
	return 0;

out_unreserve:
	lzchan_nr_channels--;
	lzchan_tenant_uncharge(chan->ns, chan->cred_ns, chan->cuid, bytes);
out_put_ns:
	put_user_ns(chan->cred_ns);
	lzchan_ns_put(chan->ns);
out_unlock_free:
	lzchan_unlock();
	lzchan_chan_free_pages(chan);
	kfree(chan->lanes);
	kfree(chan);
	return ret;
}

int lzchan_chan_create(struct lzchan_file *f, struct lzchan_create *c)
{
	bool temp = c->flags & LZCHAN_CREATE_TEMP;
	int ret;

	ret = lzchan_create_check(c);
	if (ret)
		return ret;
	/* A temporary channel is made by the file that will receive on it:
	 * until that file opens it, the name goes with the file (see
	 * lzchan_chan_release_file()).  One at a time, on an unbound file. */
	if (temp) {
		mutex_lock(&f->lock);
		ret = f->chan ? -EISCONN : f->temp ? -EBUSY : 0;
		if (ret) {
			mutex_unlock(&f->lock);
			return ret;
		}
	}
	ret = __lzchan_chan_create(f, c);
	if (temp)
		mutex_unlock(&f->lock);
	return ret;
}

/* ---- names ---- */

/* The channel named @name in the caller's IPC namespace, with a reference
 * (lzchan_chan_put()), or NULL. */
struct lzchan_chan *lzchan_chan_get_by_name(const char *name)
{
	struct lzchan_chan *chan;

	mutex_lock(&lzchan_lock);
	lzchan_ns_reap();
	chan = lzchan_chan_lookup(name);
	if (chan)
		kref_get(&chan->ref);
	lzchan_unlock();
	return chan;
}

/*
 * The channel a command names: @name on an unbound @f, or, with @name
 * empty, the one @f is bound to (@unbound_err if it is not).  With a
 * reference (lzchan_chan_put()), or an ERR_PTR: EISCONN (a name on a
 * bound fd), the name's errors, ENOENT.
 */
struct lzchan_chan *lzchan_chan_get_for(struct lzchan_file *f, const char *name,
					int unbound_err)
{
	struct lzchan_chan *bound = lzchan_file_chan(f), *chan;
	int ret;

	if (!name[0]) {
		if (!bound)
			return ERR_PTR(unbound_err);
		kref_get(&bound->ref);
		return bound;
	}
	if (bound)
		return ERR_PTR(-EISCONN);
	ret = lzchan_name_check(name);
	if (ret)
		return ERR_PTR(ret);
	chan = lzchan_chan_get_by_name(name);
	return chan ? chan : ERR_PTR(-ENOENT);
}

static void lzchan_chan_unlink_locked(struct lzchan_chan *chan)
{
	hash_del(&chan->hnode);
	WRITE_ONCE(chan->linked, false);	/* read unlocked in lzchan_chan_stat() */
	lzchan_chan_put_locked(chan);	/* the name's reference */
}

int lzchan_chan_unlink(struct lzchan_unlink *u)
{
	struct lzchan_chan *chan;
	kuid_t euid = current_euid();
	int ret;

	if (u->flags || memchr_inv(u->reserved, 0, sizeof(u->reserved)))
		return -EINVAL;
	ret = lzchan_name_check(u->name);
	if (ret)
		return ret;

	mutex_lock(&lzchan_lock);
	lzchan_ns_reap();
	chan = lzchan_chan_lookup(u->name);
	if (!chan) {
		ret = -ENOENT;
	} else if (!uid_eq(euid, chan->uid) && !uid_eq(euid, chan->cuid) &&
		   !ns_capable(chan->ns->user_ns, CAP_SYS_ADMIN)) {
		/* As SysV IPC_RMID: owner, creator or CAP_SYS_ADMIN in the
		 * namespace's user namespace.  CAP_IPC_OWNER only overrides
		 * the mode bits (lzchan_chan_permission()), never removal. */
		ret = -EPERM;
	} else {
		lzchan_chan_unlink_locked(chan);
		ret = 0;
	}
	lzchan_unlock();
	return ret;
}

void lzchan_chan_unlink_ns(struct lzchan_ns *ns)
{
	struct lzchan_chan *chan;
	struct hlist_node *tmp;
	int bkt;

	lockdep_assert_held(&lzchan_lock);
	hash_for_each_safe(lzchan_names, bkt, tmp, chan, hnode)
		if (chan->ns == ns)
			lzchan_chan_unlink_locked(chan);
}

void lzchan_chan_unlink_all(void)
{
	struct lzchan_chan *chan;
	struct hlist_node *tmp;
	unsigned int n = 0;
	int bkt;

	mutex_lock(&lzchan_lock);
	hash_for_each_safe(lzchan_names, bkt, tmp, chan, hnode) {
		lzchan_chan_unlink_locked(chan);
		n++;
	}
	WARN_ON(lzchan_nr_channels);
	WARN_ON(!list_empty(&lzchan_users));
	lzchan_unlock();
	if (n)
		pr_info("removed %u named channel(s) at unload\n", n);
}

unsigned int lzchan_chan_count(void)
{
	/* Unlocked snapshot for sysfs; writers hold lzchan_lock. */
	return READ_ONCE(lzchan_nr_channels);
}

/* ---- attachment ---- */

/* SysV-style check: owner, then group, then other; CAP_IPC_OWNER in the
 * user namespace owning the IPC namespace overrides.  @may: 4 r, 2 w.
 * @audit: false for a look (LIST) that is no attempt to get access. */
int lzchan_chan_permission(struct lzchan_chan *chan, unsigned int may, bool audit)
{
	kuid_t euid = current_euid();
	unsigned int granted = chan->mode;

	if (uid_eq(euid, chan->cuid) || uid_eq(euid, chan->uid))
		granted >>= 6;
	else if (in_group_p(chan->cgid) || in_group_p(chan->gid))
		granted >>= 3;
	if (!(may & ~granted & 0007))
		return 0;
	if (audit ? ns_capable(chan->ns->user_ns, CAP_IPC_OWNER) :
		    ns_capable_noaudit(chan->ns->user_ns, CAP_IPC_OWNER))
		return 0;
	return -EACCES;
}

void lzchan_shm_set_status_word(__u64 *word, u32 gen, u32 state)
{
	/* Pairs with the acquire load of the status word in libchan: a
	 * reader that sees the new state also sees what the kernel wrote
	 * before it (a lane scrub, an earlier generation's teardown). */
	smp_store_release(word, LZCHAN_STATUS(gen, state));
}

/*
 * The receiver went (rx_status says GONE, stored just before): tell every
 * lane's sender to look closer at its next send, through the one word it
 * loads on every send (ABI 2).  Under chan->lock, before a next receiver
 * can attach; the receiver's own stores to the rx area are over (its last
 * reference went).  The old value is whatever the receiver left: attn only
 * has to change.
 */
static void lzchan_chan_attn_all(struct lzchan_chan *chan)
{
	u32 i;

	for (i = 0; i < chan->max_senders; i++) {
		__u32 *attn = &lzchan_shm_rx_lane(chan, i)->attn;

		/* Pairs with libchan's acquire load of attn before it loads
		 * rx_status (__lz_tx_attn()): a sender that sees the change
		 * sees GONE, stored (release) before it. */
		smp_store_release(attn, READ_ONCE(*attn) + 1);
	}
}

/*
 * A closed lane may get a new sender once nothing of the old one can reach
 * the receiver: the receiver acknowledged the close, or -- with no
 * receiver attached -- no message is ready at the published head, where
 * the next receiver will start.  The lane is then scrubbed so that nothing
 * the old sender left ahead of the head can pass as the new sender's.
 *
 * Not the second rule while a receiver is attached: its own position may
 * be ahead of the head it published (it publishes lazily), and a hostile
 * sender can make the slot at the published head look empty before it
 * closes.  The new sender would start at the published head and the
 * receiver would go on from its own: the new sender's first messages
 * skipped, a later one read as the old sender's.  An attached receiver
 * acknowledges every ended or broken lane once its sender has gone.
 */
static bool lzchan_lane_reusable(struct lzchan_chan *chan, u32 i)
{
	struct lzchan_shm_rx_lane *rxl = lzchan_shm_rx_lane(chan, i);
	u32 head;

	lockdep_assert_held(&chan->lock);
	/* Receiver-written words; pairs with the receiver's release store of
	 * close_ack after it drained the lane. */
	if (smp_load_acquire(&rxl->close_ack) == chan->lanes[i].gen)
		return true;
	/* rx_attached changes under chan->lock, which we hold: a receiver
	 * that attaches later starts at the published head (below). */
	if (chan->rx_attached)
		return false;
	/* The old sender is gone (its file was released), so the slot no
	 * longer changes; head (receiver-written, lazily published) only
	 * grows, and a stale one errs towards "not reusable".  head is masked
	 * by lzchan_slot(): any value stays inside the lane. */
	head = READ_ONCE(rxl->head);
	return READ_ONCE(lzchan_slot(chan, i, head)->seq) != head + 1;
}

/*
 * Scrub lane @i for a new sender.  A receiver may attach meanwhile (the
 * lane was reusable with none attached) and look at the slot at its head,
 * so no seq may ever read "ready" on the way: first every slot's seq
 * becomes its index s (never ready), then everything else in the lane is
 * zeroed around the seq words.  (Zeroing whole pages first would make
 * seq 0 for a moment: ready at position 0xffffffff.)
 */
static void lzchan_lane_scrub(struct lzchan_chan *chan, u32 i)
{
	u64 base = chan->layout.lanes_off + i * chan->layout.lane_stride;
	u64 first = base >> PAGE_SHIFT, slots = chan->layout.lane_slots;
	u64 p, npages = chan->layout.lane_size >> PAGE_SHIFT;
	u64 size = chan->slot_size, end = slots + (u64)chan->slot_count * size;
	u32 s;

	/* seq = s is "not ready" for every position p = s + k * slot_count,
	 * which expects p + 1: slot_count is a power of two, so p + 1 and s
	 * differ modulo slot_count, hence modulo 2^32.  Published by the
	 * release store of the lane status that follows in
	 * lzchan_attach_sender() (lzchan_shm_set_status). */
	for (s = 0; s < chan->slot_count; s++) {
		WRITE_ONCE(lzchan_slot(chan, i, s)->seq, s);
		if (!(s & 1023))
			cond_resched();
	}

	/* Nothing of the old sender -- payload, lengths, statistics --
	 * reaches the new one, who may have other credentials. */
	for (p = 0; p < npages; p++) {
		char *kaddr = page_address(chan->pages[first + p]);
		u64 pos = p << PAGE_SHIFT, stop = pos + PAGE_SIZE;

		while (pos < stop) {
			/* The next seq word at or after pos (lane offsets). */
			u64 seq = pos <= slots ? slots :
				  slots + DIV_ROUND_UP(pos - slots, size) * size;
			u64 to = seq < end ? min(seq, stop) : stop;

			memset(kaddr + (pos & ~PAGE_MASK), 0, to - pos);
			pos = to == seq ? to + sizeof(__u32) : to;
		}
		cond_resched();
	}
}

/*
 * Takes a lane for the caller.  A closed lane is scrubbed (up to
 * max_channel_bytes / max_senders of memory) with chan->lock dropped: the
 * lane is held as LZCHAN_LANE_SCRUBBING meanwhile, which nobody else takes
 * or reports, so other attaches, PEER and release do not wait for it.
 */
static int lzchan_attach_sender(struct lzchan_chan *chan, u32 *lane, u32 *gen)
{
	struct lzchan_lane *l;
	u32 i;

	lockdep_assert_held(&chan->lock);
	for (i = 0; i < chan->max_senders; i++) {
		l = &chan->lanes[i];
		if (l->state == LZCHAN_LANE_FREE)
			break;
		if (l->state == LZCHAN_LANE_CLOSED && lzchan_lane_reusable(chan, i)) {
			l->state = LZCHAN_LANE_SCRUBBING;
			mutex_unlock(&chan->lock);
			lzchan_lane_scrub(chan, i);
			mutex_lock(&chan->lock);
			break;
		}
	}
	if (i == chan->max_senders)
		return -EUSERS;

	l->gen++;
	l->state = LZCHAN_LANE_ATTACHED;
	l->endpoint = 0;		/* an endpoint's attach says otherwise */
	l->pid = get_pid(task_tgid(current));
	l->euid = current_euid();
	l->egid = current_egid();
	WRITE_ONCE(chan->senders, chan->senders + 1);	/* read unlocked in lzchan_chan_stat() */
	atomic64_inc(&chan->sender_attaches);
	lzchan_shm_set_status_word(&lzchan_shm_lane(chan, i)->status, l->gen, l->state);
	*lane = i;
	*gen = l->gen;
	return 0;
}

static int lzchan_attach_receiver(struct lzchan_chan *chan)
{
	lockdep_assert_held(&chan->lock);
	if (chan->rx_attached)
		return -EBUSY;
	/* A temporary channel's name went with its receiver (under both
	 * locks, lzchan_chan_release_file()): an opener that found the name
	 * before must not become a receiver nobody can reach.  Written under
	 * chan->lock too for a temporary channel. */
	if ((chan->create_flags & LZCHAN_CREATE_TEMP) && !READ_ONCE(chan->linked))
		return -ENOENT;
	WRITE_ONCE(chan->rx_attached, true);	/* read unlocked in lzchan_chan_wake() */
	chan->rx_gen++;
	chan->rx_pid = get_pid(task_tgid(current));
	chan->rx_euid = current_euid();
	chan->rx_egid = current_egid();
	lzchan_shm_set_status_word(&lzchan_shm_hdr(chan)->rx_status, chan->rx_gen,
			      LZCHAN_RX_ATTACHED);
	return 0;
}

int lzchan_chan_open(struct lzchan_file *f, struct lzchan_open *o)
{
	struct lzchan_chan *chan;
	u32 lane = LZCHAN_LANE_NONE, gen = 0;
	int ret;

	if (lzchan_file_is_ep(f))
		return lzchan_ep_attach(f, o);
	if (!lzchan_role_valid(o->flags))
		return -EINVAL;
	if (o->pad || memchr_inv(o->reserved, 0, sizeof(o->reserved)))
		return -EINVAL;
	/* The caller must keep this ABI's shared-memory rules (attn): a
	 * party that does not would leave the others' wakeups to chance. */
	if (o->abi_version != LZCHAN_ABI_VERSION)
		return -EPROTO;
	ret = lzchan_name_check(o->name);
	if (ret)
		return ret;

	mutex_lock(&f->lock);
	if (f->chan) {
		ret = -EISCONN;
		goto out_unlock_file;
	}

	mutex_lock(&lzchan_lock);
	lzchan_ns_reap();
	chan = lzchan_chan_lookup(o->name);
	if (!chan) {
		lzchan_unlock();
		ret = -ENOENT;
		goto out_unlock_file;
	}
	/* One kind opened as the other: a precise refusal, before any
	 * permission is asked. */
	if (chan->pubsub != lzchan_role_ps(o->flags)) {
		lzchan_unlock();
		ret = -EPROTOTYPE;
		goto out_unlock_file;
	}
	ret = lzchan_chan_permission(chan, o->flags == LZCHAN_OPEN_RECEIVER ||
					   o->flags == LZCHAN_OPEN_SUBSCRIBER ? 4 : 2, true);
	if (ret) {
		lzchan_unlock();
		goto out_unlock_file;
	}
	kref_get(&chan->ref);		/* the file's reference */
	lzchan_unlock();

	mutex_lock(&chan->lock);
	if (chan->pubsub)
		ret = lzchan_ps_attach(chan, o->flags, &lane, &gen);
	else if (o->flags == LZCHAN_OPEN_RECEIVER)
		ret = lzchan_attach_receiver(chan);
	else
		ret = lzchan_attach_sender(chan, &lane, &gen);
	mutex_unlock(&chan->lock);
	if (ret) {
		lzchan_chan_put(chan);
		goto out_unlock_file;
	}

	f->role = o->flags;
	f->lane = lane;
	/* Pairs with smp_load_acquire() in lzchan_file_chan(). */
	smp_store_release(&f->chan, chan);
	o->lane = lane;
	o->lane_gen = gen;
	/* The temporary channel we made now goes with us as its receiver. */
	if (f->temp == chan && f->role == LZCHAN_OPEN_RECEIVER) {
		f->temp = NULL;
		lzchan_chan_put(chan);	/* the creating file's reference */
	}
out_unlock_file:
	mutex_unlock(&f->lock);
	return ret;
}

/*
 * LZCHAN_IOC_OPEN on an endpoint: attach it in its granted role, once.
 * No permission is asked (the grant was the permission) and no name is
 * looked up: the endpoint holds its channel.  The caller is recorded on
 * the lane as for any open, with the endpoint's id.
 */
int lzchan_ep_attach(struct lzchan_file *f, struct lzchan_open *o)
{
	struct lzchan_chan *chan = f->ep_chan;
	u32 lane = LZCHAN_LANE_NONE, gen = 0, role = o->flags ? o->flags : f->ep_role;
	struct eventfd_ctx *ev = NULL;
	int ret;

	if (o->flags && !lzchan_role_valid(o->flags))
		return -EINVAL;
	if (o->pad || memchr_inv(o->reserved, 0, sizeof(o->reserved)))
		return -EINVAL;
	if (o->abi_version != LZCHAN_ABI_VERSION)
		return -EPROTO;
	/* Nothing but what was granted: no name, no other role. */
	if (memchr_inv(o->name, 0, sizeof(o->name)) || role != f->ep_role)
		return -EPERM;

	mutex_lock(&f->lock);
	if (f->chan) {
		ret = -EISCONN;
		goto out_unlock_file;
	}
	mutex_lock(&chan->lock);
	if (f->revoked) {
		ret = -EKEYREVOKED;
		goto out_unlock_chan;
	}
	if (chan->pubsub)
		ret = lzchan_ps_attach(chan, role, &lane, &gen);
	else if (role == LZCHAN_OPEN_RECEIVER)
		ret = lzchan_attach_receiver(chan);
	else
		ret = lzchan_attach_sender(chan, &lane, &gen);
	if (ret)
		goto out_unlock_chan;
	if (lane != LZCHAN_LANE_NONE)
		chan->lanes[lane].endpoint = f->ep_id;
	f->role = role;
	f->lane = lane;
	/*
	 * A sender's attach drops chan->lock while it scrubs a lane: a
	 * revocation may have come meanwhile, seen no binding and left.
	 * Then this attachment ends at once, as a departure.
	 */
	if (f->revoked) {
		lzchan_chan_detach_locked(f, chan, false, &ev);
		ret = -EKEYREVOKED;
		goto out_unlock_chan;
	}
	/* The endpoint's reference becomes the binding's.  Under
	 * chan->lock: a revocation sees the binding or refuses it (above).
	 * Pairs with smp_load_acquire() in lzchan_file_chan(). */
	smp_store_release(&f->chan, chan);
	o->lane = lane;
	o->lane_gen = gen;
out_unlock_chan:
	mutex_unlock(&chan->lock);
out_unlock_file:
	mutex_unlock(&f->lock);
	if (ev)
		eventfd_ctx_put(ev);
	return ret;
}

static void lzchan_chan_signal(struct lzchan_chan *chan)
{
	spin_lock(&chan->evlock);
	if (chan->evctx) {
		lzchan_eventfd_signal(chan->evctx);
		atomic64_inc(&chan->wakeups);
	}
	spin_unlock(&chan->evlock);
}

/* The file's last reference (fd and mappings) is gone. */
/* The file that created temporary channel @chan goes without having
 * opened it as its receiver: unless a receiver is there (its release
 * does it), the name goes now, or nobody would ever remove it. */
static void lzchan_chan_temp_drop(struct lzchan_chan *chan)
{
	mutex_lock(&lzchan_lock);
	mutex_lock(&chan->lock);
	if (chan->linked && !chan->rx_attached)
		lzchan_chan_unlink_locked(chan);
	mutex_unlock(&chan->lock);
	lzchan_unlock();
	lzchan_chan_put(chan);		/* the creating file's reference */
}

/*
 * End @f's attachment to @chan as a departure (@bye: a clean one): its
 * file's last reference went, or it was revoked (lzchan_ep.c).  Under
 * chan->lock; an eventfd to put after it is left in @ev.
 */
void lzchan_chan_detach_locked(struct lzchan_file *f, struct lzchan_chan *chan, bool bye,
			       struct eventfd_ctx **ev)
{
	lockdep_assert_held(&chan->lock);
	if (chan->pubsub) {
		lzchan_ps_release(f, chan, bye, ev);
	} else if (f->role == LZCHAN_OPEN_RECEIVER) {
		WRITE_ONCE(chan->rx_attached, false);	/* read unlocked in lzchan_chan_wake() */
		put_pid(chan->rx_pid);
		chan->rx_pid = NULL;
		/* Published by the release store of the status below. */
		if (bye)
			WRITE_ONCE(lzchan_shm_hdr(chan)->rx_bye, chan->rx_gen);
		lzchan_shm_set_status_word(&lzchan_shm_hdr(chan)->rx_status,
				      chan->rx_gen, LZCHAN_RX_GONE);
		lzchan_chan_attn_all(chan);
		spin_lock(&chan->evlock);
		*ev = chan->evctx;
		chan->evctx = NULL;
		spin_unlock(&chan->evlock);
	} else {
		struct lzchan_shm_hdr *hdr = lzchan_shm_hdr(chan);
		struct lzchan_lane *l = &chan->lanes[f->lane];

		l->state = LZCHAN_LANE_CLOSED;
		put_pid(l->pid);
		l->pid = NULL;
		WRITE_ONCE(chan->senders, chan->senders - 1);	/* read unlocked in lzchan_chan_stat() */
		/* Published by the release store of the status below. */
		if (bye)
			WRITE_ONCE(lzchan_shm_lane(chan, f->lane)->bye, l->gen);
		lzchan_shm_set_status_word(&lzchan_shm_lane(chan, f->lane)->status,
				      l->gen, l->state);
		/* Only we write it (the info page is read-only to users), under
		 * chan->lock.  Pairs with libchan's acquire load of departures
		 * (__lz_rx_bell()): a receiver that sees the count move sees
		 * the CLOSED status stored above. */
		smp_store_release(&hdr->departures, READ_ONCE(hdr->departures) + 1);
		/* A parked receiver must learn of the departure. */
		lzchan_chan_signal(chan);
	}
	if (!bye)
		atomic64_inc(&chan->peer_deaths);	/* left without LZCHAN_IOC_BYE */
}

/* The file's last reference (fd and mappings) is gone. */
void lzchan_chan_release_file(struct lzchan_file *f)
{
	struct lzchan_chan *chan = f->chan;
	struct eventfd_ctx *ev = NULL;
	bool temp_rx, bye;

	/* Our ioctls are over: nothing else reads or writes f->temp. */
	if (f->temp)
		lzchan_chan_temp_drop(f->temp);
	if (!chan) {
		if (lzchan_file_is_ep(f))
			lzchan_ep_forget(f);	/* never attached */
		return;
	}
	/* Written by lzchan_chan_bye() on this file, whose ioctls are over. */
	bye = READ_ONCE(f->bye);
	/* A temporary channel's name goes with its receiver, under both
	 * locks (lzchan_lock first): a receiver attaching meanwhile finds it
	 * unlinked (lzchan_attach_receiver()) rather than losing its name
	 * after attaching.  (Never an endpoint's: GRANT refuses that role.) */
	temp_rx = f->role == LZCHAN_OPEN_RECEIVER && (chan->create_flags & LZCHAN_CREATE_TEMP);
	if (temp_rx)
		mutex_lock(&lzchan_lock);
	mutex_lock(&chan->lock);
	if (lzchan_file_is_ep(f))
		list_del(&f->ep_node);
	/* A revoked endpoint departed when it was revoked. */
	if (!f->revoked)
		lzchan_chan_detach_locked(f, chan, bye, &ev);
	/* Our file's reference keeps the channel until the put below. */
	if (temp_rx && chan->linked)
		lzchan_chan_unlink_locked(chan);
	mutex_unlock(&chan->lock);
	if (temp_rx)
		lzchan_unlock();
	if (ev)
		eventfd_ctx_put(ev);
	lzchan_chan_put(chan);
}

/* The binding's owner is closing it cleanly (LZCHAN_IOC_BYE). */
int lzchan_chan_bye(struct lzchan_file *f)
{
	if (!lzchan_file_chan(f))
		return -EBADFD;
	/* Read by lzchan_chan_release_file() once the file's last
	 * reference, hence this ioctl, is gone. */
	WRITE_ONCE(f->bye, true);
	return 0;
}

/* ---- wakeups ---- */

int lzchan_chan_set_eventfd(struct lzchan_file *f, int fd)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	struct eventfd_ctx *ev = NULL, *old;
	bool revoked;

	if (!chan)
		return -EBADFD;
	if (f->role != LZCHAN_OPEN_RECEIVER && f->role != LZCHAN_OPEN_SUBSCRIBER)
		return -EPERM;
	if (fd != -1) {
		ev = eventfd_ctx_fdget(fd);
		if (IS_ERR(ev))
			return PTR_ERR(ev);
	}
	if (chan->pubsub)
		return lzchan_ps_set_eventfd(f, chan, ev);
	spin_lock(&chan->evlock);
	/* A revoked receiver's eventfd must not outlive its departure (the
	 * revocation cleared it under this lock, after setting revoked). */
	revoked = f->revoked;
	if (revoked) {
		old = ev;
	} else {
		old = chan->evctx;
		chan->evctx = ev;
	}
	spin_unlock(&chan->evlock);
	if (old)
		eventfd_ctx_put(old);
	return revoked ? -EKEYREVOKED : 0;
}

/* Signal the receiver's eventfd, if it has one: 1 if it did, else 0. */
static int lzchan_chan_signal_rx(struct lzchan_chan *chan)
{
	int ret = 0;

	atomic64_inc(&chan->wake_requests);
	spin_lock(&chan->evlock);
	if (chan->evctx) {
		lzchan_eventfd_signal(chan->evctx);
		atomic64_inc(&chan->wakeups);
		ret = 1;
	}
	spin_unlock(&chan->evlock);
	return ret;
}

int lzchan_chan_wake(struct lzchan_file *f)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	int ret = 0;

	if (!chan)
		return -EBADFD;
	if (chan->pubsub)
		return lzchan_ps_wake(f, chan);
	if (f->role != LZCHAN_OPEN_SENDER)
		return -EPERM;
	ret = lzchan_chan_signal_rx(chan);
	if (!ret && !READ_ONCE(chan->rx_attached))	/* WRITE_ONCE under chan->lock */
		ret = -EPIPE;
	return ret;
}

/*
 * Ring the bell for the caller's lane: the receiver stopped polling it
 * (its sleepy word is odd) and finds it again by the bit that moved.  The
 * bell is mapped read-only to the receiver alone, so a co-sender can
 * neither ring nor undo another lane's bit; a sender that rings its own
 * twice only delays its own lane.  A receiver parked by now is woken
 * here: the sender does not read the rx header (its lane's copy of the
 * park word moves only for the lanes the receiver polls).
 */
int lzchan_chan_ring(struct lzchan_file *f)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	int ret = 0;
	u32 lane;

	if (!chan)
		return -EBADFD;
	if (f->role != LZCHAN_OPEN_SENDER)
		return -EPERM;
	lane = f->lane;		/* < max_senders: set at the bind, never changed */
	/* A revoked endpoint's lane may be another sender's by now, whose
	 * ring this one would undo: revoked is tested under evlock, where the
	 * revocation sets it before the lane can go (lzchan_ep.c). */
	if (lzchan_file_is_ep(f))
		spin_lock(&chan->evlock);
	if (lzchan_file_is_ep(f) && f->revoked) {
		ret = -EKEYREVOKED;
	} else {
		/* Fully ordered: the caller's stores of its messages (before
		 * the system call, in program order) are seen before the bit.
		 * Pairs with libchan's acquire load of the bell word
		 * (__lz_rx_bell_words()) before it loads the lane's slots. */
		atomic64_fetch_xor(BIT_ULL(lane % 64), (atomic64_t *)&chan->kbell[lane / 64]);
	}
	if (lzchan_file_is_ep(f))
		spin_unlock(&chan->evlock);
	if (ret)
		return ret;
	/*
	 * After the bit (the fully ordered xor above): pairs with the
	 * receiver's store of parked, then its heavy barrier, then its load
	 * of the bell before it sleeps (libchan's __lz_prepare_park()): it
	 * sees our bit, or we see it parked.  The answer is 0 either way:
	 * whether it was parked is not the sender's to learn.
	 */
	if (READ_ONCE(lzchan_shm_rx(chan)->parked) & 1)
		lzchan_chan_signal_rx(chan);
	return 0;
}

/* ---- peers ---- */

int lzchan_chan_peer(struct lzchan_file *f, struct lzchan_peer *p)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	struct user_namespace *uns = current_user_ns();
	int ret = 0;

	if (!chan)
		return -EBADFD;
	if (p->flags || p->reserved0 || memchr_inv(p->reserved, 0, sizeof(p->reserved)))
		return -EINVAL;
	if (p->lane != LZCHAN_LANE_NONE && p->lane >= chan->max_senders)
		return -EINVAL;
	/* A sender (subscriber) may ask about its own lane (place) and the
	 * receiver (publisher); the receiver (publisher) about any. */
	if ((f->role == LZCHAN_OPEN_SENDER || f->role == LZCHAN_OPEN_SUBSCRIBER) &&
	    p->lane != LZCHAN_LANE_NONE && p->lane != f->lane)
		return -EPERM;

	mutex_lock(&chan->lock);
	if (f->revoked) {
		ret = -EKEYREVOKED;	/* its lane may be another's by now */
	} else if (p->lane == LZCHAN_LANE_NONE) {
		if (!chan->rx_attached) {
			ret = -ENOTCONN;
		} else {
			p->gen = chan->rx_gen;
			p->pid = pid_vnr(chan->rx_pid);
			p->uid = from_kuid_munged(uns, chan->rx_euid);
			p->gid = from_kgid_munged(uns, chan->rx_egid);
		}
	} else {
		struct lzchan_lane *l =
			&chan->lanes[array_index_nospec(p->lane, chan->max_senders)];

		if (l->state != LZCHAN_LANE_ATTACHED) {
			ret = -ENOTCONN;
		} else {
			p->gen = l->gen;
			p->pid = pid_vnr(l->pid);
			p->uid = from_kuid_munged(uns, l->euid);
			p->gid = from_kgid_munged(uns, l->egid);
		}
	}
	mutex_unlock(&chan->lock);
	return ret;
}

/*
 * LZCHAN_IOC_LANES: who is on each lane, for whoever may read the channel
 * (read permission, asked even of a bound fd: a sender sees only its own
 * lane with PEER).  The rows are taken under chan->lock into a buffer and
 * copied out with no lock held.
 */
int lzchan_chan_lanes(struct lzchan_file *f, struct lzchan_lanes *s)
{
	struct user_namespace *uns = current_user_ns();
	struct lzchan_chan *chan;
	struct lzchan_lane_peer *rows = NULL;
	u32 i, n = 0;
	int ret;

	if (s->flags || memchr_inv(s->reserved, 0, sizeof(s->reserved)))
		return -EINVAL;
	/* As LIST bounds its entries: a page each at most. */
	if (s->entry_size < offsetofend(struct lzchan_lane_peer, msgs) ||
	    s->entry_size > PAGE_SIZE)
		return -EINVAL;
	/* EINVAL: neither a name nor a binding. */
	chan = lzchan_chan_get_for(f, s->name, -EINVAL);
	if (IS_ERR(chan))
		return PTR_ERR(chan);
	ret = chan->pubsub ? -EPROTOTYPE : lzchan_chan_permission(chan, 4, true);
	if (ret)
		goto out_put;
	if (s->start < chan->max_senders)
		n = min(s->count, chan->max_senders - s->start);
	if (n) {
		size_t span;

		if (check_mul_overflow((size_t)n, (size_t)s->entry_size, &span) ||
		    !access_ok(u64_to_user_ptr(s->entries), span)) {
			ret = -EFAULT;
			goto out_put;
		}
		rows = kvcalloc(n, sizeof(*rows), GFP_KERNEL);
		if (!rows) {
			ret = -ENOMEM;
			goto out_put;
		}
	}
	mutex_lock(&chan->lock);
	for (i = 0; i < n; i++) {
		/* < max_senders (n above), also under speculation */
		u32 lane = array_index_nospec(s->start + i, chan->max_senders);
		struct lzchan_lane *l = &chan->lanes[lane];
		struct lzchan_lane_peer *r = &rows[i];

		/* A lane being scrubbed is still its closed sender's. */
		r->state = l->state == LZCHAN_LANE_SCRUBBING ? LZCHAN_LANE_CLOSED : l->state;
		r->gen = l->gen;
		if (l->state == LZCHAN_LANE_ATTACHED) {
			r->pid = pid_vnr(l->pid);
			r->uid = from_kuid_munged(uns, l->euid);
			r->gid = from_kgid_munged(uns, l->egid);
			r->endpoint = l->endpoint;
		}
		/* Sender-written, statistics only. */
		r->msgs = READ_ONCE(((struct lzchan_shm_tx *)lzchan_lane_ptr(chan, lane, 0))->msgs);
	}
	s->total = chan->max_senders;
	mutex_unlock(&chan->lock);

	for (i = 0; i < n; i++) {
		void __user *dst = u64_to_user_ptr(s->entries) + (size_t)i * s->entry_size;
		size_t len = min_t(size_t, s->entry_size, sizeof(*rows));

		if (copy_to_user(dst, &rows[i], len) ||
		    (s->entry_size > len && clear_user(dst + len, s->entry_size - len))) {
			ret = -EFAULT;
			break;
		}
		if (!(i & 255))
			cond_resched();
	}
	if (!ret)
		s->count = n;
	kvfree(rows);
out_put:
	lzchan_chan_put(chan);
	return ret;
}

/* ---- description ---- */

void lzchan_chan_stat(struct lzchan_chan *chan, struct lzchan_chan_stat *st)
{
	struct user_namespace *uns = current_user_ns();
	u64 msgs = 0;
	u32 i;

	memset(st, 0, sizeof(*st));
	if (READ_ONCE(chan->linked))	/* WRITE_ONCE under lzchan_lock */
		strscpy(st->name, chan->name, sizeof(st->name));
	st->uid = from_kuid_munged(uns, chan->uid);
	st->gid = from_kgid_munged(uns, chan->gid);
	st->cuid = from_kuid_munged(uns, chan->cuid);
	st->cgid = from_kgid_munged(uns, chan->cgid);
	st->mode = chan->mode;
	st->slot_size = chan->slot_size;
	st->slot_count = chan->slot_count;
	st->max_senders = chan->max_senders;
	st->numa_node = chan->node;
	st->create_flags = chan->create_flags;
	st->bytes = (u64)chan->npages << PAGE_SHIFT;
	st->sender_attaches = atomic64_read(&chan->sender_attaches);
	st->peer_deaths = atomic64_read(&chan->peer_deaths);
	st->wake_requests = atomic64_read(&chan->wake_requests);
	st->wakeups = atomic64_read(&chan->wakeups);
	if (chan->pubsub) {
		lzchan_ps_stat(chan, st);	/* the activity, as its kind has it */
		return;
	}
	/* Receiver-written, statistics only. */
	st->rx_parked = READ_ONCE(lzchan_shm_rx(chan)->parked);

	/* Snapshots; written under chan->lock, which LIST does not take. */
	st->senders = READ_ONCE(chan->senders);
	st->receiver = READ_ONCE(chan->rx_attached);

	/* Sender-written, statistics only. */
	for (i = 0; i < chan->max_senders; i++) {
		struct lzchan_shm_tx *tx = lzchan_lane_ptr(chan, i, 0);

		msgs += READ_ONCE(tx->msgs);
	}
	st->messages = msgs;
}

static void lzchan_stat_hide(struct lzchan_chan_stat *st)
{
	st->senders = 0;
	st->receiver = 0;
	st->rx_parked = 0;
	st->sender_attaches = 0;
	st->peer_deaths = 0;
	st->wake_requests = 0;
	st->wakeups = 0;
	st->messages = 0;
	st->flags |= LZCHAN_STAT_HIDDEN;
}

/*
 * The channel as a bound file sees it (LZCHAN_IOC_INFO, fdinfo).  A
 * channel's sender sees no activity (LZCHAN_STAT_HIDDEN, as LIST shows a
 * channel to a caller who may not read it): the receiver's park state now
 * (in the rx header) and the other lanes' traffic are not a sender's --
 * above all a sender endpoint's -- to read.
 */
void lzchan_file_stat(struct lzchan_file *f, struct lzchan_chan *chan,
		      struct lzchan_chan_stat *st)
{
	lzchan_chan_stat(chan, st);
	if (!chan->pubsub && f->role == LZCHAN_OPEN_SENDER)
		lzchan_stat_hide(st);
}

int lzchan_chan_list(struct lzchan_list *l)
{
	const size_t min_entry = offsetofend(struct lzchan_chan_stat, messages);
	struct lzchan_chan_stat *buf = NULL;
	struct lzchan_chan **chans = NULL;
	struct lzchan_chan *chan;
	u32 total = 0, n = 0, i;
	size_t span;
	int bkt, ret = 0;

	if (l->flags || memchr_inv(l->reserved, 0, sizeof(l->reserved)))
		return -EINVAL;
	if (l->count && (l->entry_size < min_entry || l->entry_size > PAGE_SIZE))
		return -EINVAL;
	if (check_mul_overflow((size_t)l->count, (size_t)l->entry_size, &span) ||
	    !access_ok(u64_to_user_ptr(l->entries), span))
		return -EFAULT;

	mutex_lock(&lzchan_lock);
	lzchan_ns_reap();
	hash_for_each(lzchan_names, bkt, chan, hnode)
		if (lzchan_ns_is_current(chan->ns))
			total++;
	if (l->start < total)
		n = min(l->count, total - l->start);
	if (n) {
		chans = kvcalloc(n, sizeof(*chans), GFP_KERNEL);
		if (!chans) {
			lzchan_unlock();
			return -ENOMEM;
		}
		i = 0;
		hash_for_each(lzchan_names, bkt, chan, hnode) {
			if (!lzchan_ns_is_current(chan->ns))
				continue;
			if (i >= l->start && i - l->start < n) {
				kref_get(&chan->ref);
				chans[i - l->start] = chan;
			}
			i++;
		}
	}
	lzchan_unlock();

	if (n) {
		buf = kvcalloc(n, sizeof(*buf), GFP_KERNEL);
		if (!buf)
			ret = -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (!ret && !lzchan_chan_permission(chans[i], 4, false)) {
			lzchan_chan_stat(chans[i], &buf[i]);
		} else if (!ret) {
			/* Who talks how much, and whether the receiver
			 * sleeps, is for those who may read it. */
			lzchan_chan_stat(chans[i], &buf[i]);
			lzchan_stat_hide(&buf[i]);
		}
		lzchan_chan_put(chans[i]);
	}
	kvfree(chans);

	/* Copy out with no lock held. */
	for (i = 0; i < n && !ret; i++) {
		void __user *dst = u64_to_user_ptr(l->entries) + (size_t)i * l->entry_size;
		size_t len = min_t(size_t, l->entry_size, sizeof(*buf));

		if (copy_to_user(dst, &buf[i], len) ||
		    (l->entry_size > len && clear_user(dst + len, l->entry_size - len)))
			ret = -EFAULT;
	}
	kvfree(buf);
	if (ret)
		return ret;
	l->count = n;
	l->total = total;
	return 0;
}

static const char *lzchan_role_name(u32 role)
{
	return role == LZCHAN_OPEN_RECEIVER ? "receiver" :
	       role == LZCHAN_OPEN_SENDER ? "sender" :
	       role == LZCHAN_OPEN_PUBLISHER ? "publisher" : "subscriber";
}

void lzchan_chan_show_fdinfo(struct seq_file *m, struct lzchan_file *f)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	struct lzchan_chan_stat st;

	if (lzchan_file_is_ep(f)) {
		bool revoked = READ_ONCE(f->revoked);	/* WRITE_ONCE under chan->lock */

		seq_printf(m, "lzchan-endpoint:\t%llu %s%s\n", f->ep_id,
			   lzchan_role_name(f->ep_role), revoked ? " revoked" : "");
		if (revoked)
			return;		/* its lane may be another's by now */
	}
	if (!chan) {
		seq_puts(m, "lzchan-role:\tunbound\n");
		return;
	}
	lzchan_file_stat(f, chan, &st);
	seq_printf(m, "lzchan-channel:\t%s\n", st.name[0] ? st.name : "(unlinked)");
	seq_printf(m, "lzchan-role:\t%s\n", lzchan_role_name(f->role));
	if (f->role == LZCHAN_OPEN_SENDER)
		seq_printf(m, "lzchan-lane:\t%u\n", f->lane);
	if (f->role == LZCHAN_OPEN_SUBSCRIBER)
		seq_printf(m, "lzchan-place:\t%u\n", f->lane);
	if (chan->pubsub)
		seq_printf(m, "lzchan-geometry:\t%u x %u, %u subscribers max, %s\n",
			   st.slot_count, st.slot_size, chan->max_senders,
			   chan->policy == LZCHAN_PS_BACKPRESSURE ? "back-pressure" : "overwrite");
	else
		seq_printf(m, "lzchan-geometry:\t%u x %u, %u senders max\n",
			   st.slot_count, st.slot_size, st.max_senders);
	seq_printf(m, "lzchan-node:\t%d%s\n", st.numa_node,
		   (st.create_flags & LZCHAN_CREATE_NODE_STRICT) ? " strict" : "");
	seq_printf(m, "lzchan-bytes:\t%llu\n", st.bytes);
	if (st.flags & LZCHAN_STAT_HIDDEN) {
		seq_puts(m, "lzchan-activity:\thidden\n");	/* a channel's sender */
		return;
	}
	seq_printf(m, "lzchan-senders:\t%u\n", st.senders);
	seq_printf(m, "lzchan-receiver:\t%u%s\n", st.receiver,
		   st.rx_parked ? " parked" : "");
	seq_printf(m, "lzchan-messages:\t%llu\n", st.messages);
	seq_printf(m, "lzchan-sender-attaches:\t%llu\n", st.sender_attaches);
	seq_printf(m, "lzchan-peer-deaths:\t%llu\n", st.peer_deaths);
	seq_printf(m, "lzchan-wake-requests:\t%llu\n", st.wake_requests);
	seq_printf(m, "lzchan-wakeups:\t%llu\n", st.wakeups);
}
