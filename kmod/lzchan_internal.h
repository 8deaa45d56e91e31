/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lzchan internals shared by the module's files.
 *
 * Objects and their references:
 *
 *   lzchan_ns    one per IPC namespace that has named channels; identified
 *                by that namespace's mqueue mount, which we hold (see
 *                lzchan_ns.c).  Each channel holds a reference.
 *   lzchan_chan  a channel: its pages and its lanes.  References: one for
 *                the name while it is linked, one per bound file.  The
 *                pages go when the last reference goes.
 *   lzchan_file  an open /dev/lzchan; bound to one channel in one role by
 *                LZCHAN_IOC_OPEN.  A mapping holds the file (vm_file), so
 *                release() runs only after the fd and every mapping are gone.
 *
 * Locks, outermost first: lzchan_lock (names, namespaces, limits), then
 * chan->lock (attachments, eventfd), then -- revoking an endpoint only
 * (lzchan_ep.c) -- the endpoint's map_sem and the mm's i_mmap_rwsem and
 * page table locks (unmap_mapping_range()), then chan->evlock.  Neither
 * lzchan_lock nor chan->lock is taken in mmap() or the fault handler (which
 * takes only map_sem, under mmap_lock, and nothing of ours inside it), and
 * no user copy happens under either, so mmap_lock never nests inside
 * them.  Nothing long runs under either: a channel's pages are
 * freed after lzchan_lock is dropped (lzchan_unlock()), a lane is scrubbed
 * with chan->lock dropped, and LIST takes no channel's lock.
 */
#ifndef _LZCHAN_INTERNAL_H
#define _LZCHAN_INTERNAL_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>

#include <linux/lzchan.h>

struct address_space;
struct eventfd_ctx;
struct page;
struct pid;
struct seq_file;
struct user_namespace;
struct vfsmount;

struct lzchan_ns {
	struct list_head node;		/* in lzchan_namespaces */
	struct vfsmount *mq_mnt;	/* identity; held with mntget() */
	struct user_namespace *user_ns;	/* owner of the IPC namespace */
	unsigned int ipc_inum;		/* as in /proc/<pid>/ns/ipc */
	struct kref ref;		/* one per channel */
	u32 channels;			/* use, under lzchan_lock */
	u64 bytes;
};

/* A sender's lane; in a pub/sub channel, a subscriber's place. */
struct lzchan_lane {
	struct pid *pid;		/* sender at open; NULL when none */
	kuid_t euid;
	kgid_t egid;
	u32 gen;
	u32 state;			/* LZCHAN_LANE_*, or: */
	/* pub/sub: the subscriber's eventfd, and whether it is parked
	 * (LZCHAN_IOC_PS_PARK) until the next wake; under chan->evlock */
	bool parked;
	struct eventfd_ctx *evctx;
	u64 endpoint;			/* attached through endpoint this id
					 * (LZCHAN_IOC_GRANT); 0: by name */
};

/* A closed lane being scrubbed for a new sender, chan->lock dropped
 * (lzchan_attach_sender()); never published in shared memory. */
#define LZCHAN_LANE_SCRUBBING	0x100

struct lzchan_chan {
	struct kref ref;
	struct mutex lock;
	struct lzchan_ns *ns;
	struct user_namespace *cred_ns;	/* the creator's: whom it is charged to */
	struct hlist_node hnode;	/* in the name table while linked */
	struct list_head dead;		/* in lzchan_graveyard once unreferenced */
	bool linked;
	char name[LZCHAN_NAME_SIZE];

	/* creation parameters, fixed.  A pub/sub channel (pubsub): its
	 * subscriber places are lanes[0..max_senders), its publisher is
	 * recorded as the receiver is (rx_*), its memory is laid out as
	 * ps_layout says (layout is zeros) */
	u32 slot_size, slot_count, max_senders, create_flags;
	bool pubsub;
	u32 policy, stall_ms;
	struct lzchan_ps_layout ps_layout;
	int node;
	kuid_t uid, cuid;
	kgid_t gid, cgid;
	umode_t mode;

	/* memory: npages pages; info, rx and bell areas also mapped in the
	 * kernel */
	struct page **pages;
	unsigned long npages;
	struct lzchan_layout layout;
	void *kinfo;			/* vmap of the info area */
	void *krx;			/* vmap of the rx area */
	u64 *kbell;			/* vmap of the bell area */

	/* attachments, under lock */
	bool rx_attached;
	u32 rx_gen;
	struct pid *rx_pid;
	kuid_t rx_euid;
	kgid_t rx_egid;
	u32 senders;
	struct lzchan_lane *lanes;
	struct eventfd_ctx *evctx;	/* also read under evlock */
	spinlock_t evlock;
	u32 ps_parked;			/* pub/sub: places parked, under evlock */

	/* endpoints granted (lzchan_ep.c), under lock: their files, and
	 * the last id given (ids are never reused) */
	struct list_head endpoints;
	u64 ep_last_id;

	/* counters */
	atomic64_t sender_attaches, peer_deaths, wake_requests, wakeups;
};

struct lzchan_file {
	struct mutex lock;		/* serialises binding */
	struct lzchan_chan *chan;	/* set once by OPEN; see lzchan_file_chan() */
	u32 role;			/* LZCHAN_OPEN_* */
	u32 lane;
	bool bye;			/* LZCHAN_IOC_BYE: closing cleanly */
	struct lzchan_chan *temp;	/* a temporary channel this unbound file
					 * created and has not opened as its
					 * receiver (a reference), or NULL;
					 * under lock */

	/*
	 * An endpoint (LZCHAN_IOC_GRANT, lzchan_ep.c): a file of its own
	 * inode that carries role ep_role on channel ep_chan (a reference,
	 * which becomes the binding's once it attaches: chan == ep_chan).
	 * ep_node links it on ep_chan->endpoints, under ep_chan->lock.
	 * revoked is written under both ep_chan->lock and ep_chan->evlock
	 * (read under either); the revocation then takes and drops map_sem
	 * for writing, so a fault that reads it under map_sem's read side
	 * either finished inserting before or sees it (lzchan_ep.c).
	 */
	struct lzchan_chan *ep_chan;	/* NULL: an open of /dev/lzchan */
	u32 ep_role;
	kuid_t ep_granter;		/* euid of the process that granted it */
	u64 ep_id;
	struct list_head ep_node;
	struct address_space *ep_mapping;	/* its inode's: every mapping */
	bool revoked;
	struct rw_semaphore map_sem;	/* faults read, revocation writes */
};

/* Is @f an endpoint's file? */
static inline bool lzchan_file_is_ep(const struct lzchan_file *f)
{
	return f->ep_chan != NULL;	/* set before the file exists, never changed */
}

/* lzchan_main.c: module parameters and module-wide counters */
extern unsigned int lzchan_max_channels;
extern unsigned long lzchan_max_channel_bytes;
extern unsigned long lzchan_max_user_bytes;
extern unsigned int lzchan_max_user_channels;
extern unsigned int lzchan_max_ns_channels;
extern unsigned long lzchan_max_ns_bytes;
void lzchan_pages_account(int nid, long delta);

/* lzchan_ns.c */
extern struct mutex lzchan_lock;
void lzchan_unlock(void);	/* lzchan_chan.c: unlock, free the dead */
struct lzchan_ns *lzchan_ns_current_get(void);	/* under lzchan_lock */
struct lzchan_ns *lzchan_ns_find(const void *key);	/* under lzchan_lock */
bool lzchan_ns_tenants_show(char *buf, ssize_t *len);	/* under lzchan_lock */
void lzchan_ns_put(struct lzchan_ns *ns);	/* under lzchan_lock */
bool lzchan_ns_is_current(const struct lzchan_ns *ns);
bool lzchan_ns_initial(const struct lzchan_ns *ns);
const void *lzchan_ns_current_key(void);
void lzchan_ns_reap(void);			/* under lzchan_lock */
void lzchan_ns_reaper_start(void);
void lzchan_ns_exit(void);			/* module exit */

/* lzchan_chan.c */
int lzchan_chan_create(struct lzchan_file *f, struct lzchan_create *c);
int lzchan_chan_open(struct lzchan_file *f, struct lzchan_open *o);
int lzchan_chan_unlink(struct lzchan_unlink *u);
int lzchan_chan_list(struct lzchan_list *l);
void lzchan_chan_release_file(struct lzchan_file *f);
void lzchan_chan_stat(struct lzchan_chan *chan, struct lzchan_chan_stat *st);
void lzchan_file_stat(struct lzchan_file *f, struct lzchan_chan *chan,
		      struct lzchan_chan_stat *st);
int lzchan_chan_set_eventfd(struct lzchan_file *f, int fd);
int lzchan_chan_wake(struct lzchan_file *f);
int lzchan_chan_bye(struct lzchan_file *f);
int lzchan_chan_ring(struct lzchan_file *f);
int lzchan_chan_peer(struct lzchan_file *f, struct lzchan_peer *p);
int lzchan_chan_lanes(struct lzchan_file *f, struct lzchan_lanes *s);
int lzchan_ep_attach(struct lzchan_file *f, struct lzchan_open *o);
void lzchan_chan_detach_locked(struct lzchan_file *f, struct lzchan_chan *chan, bool bye,
			       struct eventfd_ctx **ev);
void lzchan_chan_show_fdinfo(struct seq_file *m, struct lzchan_file *f);
void lzchan_chan_unlink_ns(struct lzchan_ns *ns);	/* under lzchan_lock */
void lzchan_chan_unlink_all(void);			/* module exit */
unsigned int lzchan_chan_count(void);
int lzchan_name_check(const char *name);
int lzchan_chan_usage(struct lzchan_usage *us);
ssize_t lzchan_chan_tenants_show(char *buf);
__printf(3, 4) bool lzchan_emit_line(char *buf, ssize_t *len, const char *fmt, ...);

/* lzchan_chan.c, for lzchan_pubsub.c */
void lzchan_shm_set_status_word(__u64 *word, u32 gen, u32 state);
int lzchan_chan_permission(struct lzchan_chan *chan, unsigned int may, bool audit);
struct lzchan_chan *lzchan_chan_get_by_name(const char *name);
struct lzchan_chan *lzchan_chan_get_for(struct lzchan_file *f, const char *name,
					int unbound_err);
void lzchan_chan_put(struct lzchan_chan *chan);

/* lzchan_pubsub.c: publish/subscribe channels */
void lzchan_ps_layout_init(struct lzchan_chan *chan, u64 *bytes);
void lzchan_ps_pages_init(struct lzchan_chan *chan);
int lzchan_ps_attach(struct lzchan_chan *chan, u32 role, u32 *place, u32 *gen);
void lzchan_ps_release(struct lzchan_file *f, struct lzchan_chan *chan, bool bye,
		       struct eventfd_ctx **ev);
void lzchan_ps_stat(struct lzchan_chan *chan, struct lzchan_chan_stat *st);
int lzchan_ps_set_eventfd(struct lzchan_file *f, struct lzchan_chan *chan,
			  struct eventfd_ctx *ev);
int lzchan_ps_wake(struct lzchan_file *f, struct lzchan_chan *chan);
int lzchan_ps_park(struct lzchan_file *f);
int lzchan_ps_detach(struct lzchan_file *f, struct lzchan_ps_detach *d);
int lzchan_ps_subs(struct lzchan_file *f, struct lzchan_ps_subs *s);
int lzchan_ps_mmap_area(struct lzchan_file *f, struct lzchan_chan *chan, u64 off, u64 len,
			bool *writable);

/* Roles: the one of its kind (receiver, publisher), the many (senders,
 * subscribers). */
static inline bool lzchan_role_ps(u32 role)
{
	return role == LZCHAN_OPEN_PUBLISHER || role == LZCHAN_OPEN_SUBSCRIBER;
}

/* Exactly one LZCHAN_OPEN_* role? */
static inline bool lzchan_role_valid(u32 role)
{
	return role == LZCHAN_OPEN_RECEIVER || role == LZCHAN_OPEN_SENDER ||
	       lzchan_role_ps(role);
}

/* lzchan_ep.c: endpoints */
void lzchan_ep_unpin(void);
int lzchan_ep_grant(struct lzchan_file *f, void __user *argp);
int lzchan_ep_revoke(struct lzchan_file *f, struct lzchan_revoke *r);
void lzchan_ep_forget(struct lzchan_file *f);

/* lzchan_main.c */
extern const struct file_operations lzchan_fops;
void lzchan_file_init(struct lzchan_file *f);

/* lzchan_mmap.c */
int lzchan_mmap(struct file *file, struct vm_area_struct *vma);

/* The channel a file is bound to, or NULL. */
static inline struct lzchan_chan *lzchan_file_chan(struct lzchan_file *f)
{
	/* Pairs with smp_store_release() in lzchan_chan_open(): a non-NULL
	 * chan comes with role and lane already written. */
	return smp_load_acquire(&f->chan);
}

#endif /* _LZCHAN_INTERNAL_H */
