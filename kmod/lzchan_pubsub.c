// SPDX-License-Identifier: GPL-2.0-only
/*
 * Publish/subscribe channels: one publisher, up to max_subscribers
 * subscribers, one ring that the publisher writes and every subscriber
 * maps read-only.  The module is never on the per-message path here
 * either: it lays the memory out, keeps who is attached where (the
 * publisher as a channel's receiver is kept, rx_*; each subscriber in a
 * place, lanes[]), counts parked subscribers and signals their eventfds.
 *
 * Layout (struct lzchan_ps_layout; every area page-aligned):
 *
 *   info   one page    struct lzchan_ps_hdr, the kernel's
 *   pub    one page    struct lzchan_ps_pub, the publisher's
 *   wake   one page    struct lzchan_ps_wake: sleepers, the kernel's
 *   places struct lzchan_ps_place per place: status and detached, the
 *          kernel's, mapped (read-only) by a back-pressure publisher only
 *   subs   a page per place: struct lzchan_ps_sub, pos and lost the
 *          subscriber's, a copy of its place's words the kernel's
 *   ring   slot_count slots of slot_size bytes, the publisher's
 *
 * A place's page is mapped only by its subscriber's fd (and, read-only,
 * by a back-pressure publisher's): subscribers never see each other.
 * Who counts, the publisher learns from the places area, which no
 * subscriber can write (a subscriber's own page can say anything).
 * The protocol and its memory-ordering argument are on the design page
 * (Documentation/libchan/design.rst, "Publish/subscribe").
 */
#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>

#include "lzchan_compat.h"
#include "lzchan_internal.h"

/* ---- the kernel's views of the areas ---- */

static void *lzchan_ps_at(struct lzchan_chan *chan, u64 off)
{
	/* Every structure we touch lies inside one page. */
	return page_address(chan->pages[off >> PAGE_SHIFT]) + offset_in_page(off);
}

static struct lzchan_ps_hdr *lzchan_ps_hdr(struct lzchan_chan *chan)
{
	return lzchan_ps_at(chan, chan->ps_layout.info_off);
}

static struct lzchan_ps_pub *lzchan_ps_pub(struct lzchan_chan *chan)
{
	return lzchan_ps_at(chan, chan->ps_layout.pub_off);
}

static struct lzchan_ps_wake *lzchan_ps_wake_area(struct lzchan_chan *chan)
{
	return lzchan_ps_at(chan, chan->ps_layout.wake_off);
}

static struct lzchan_ps_sub *lzchan_ps_sub(struct lzchan_chan *chan, u32 i)
{
	return lzchan_ps_at(chan, chan->ps_layout.subs_off + (u64)i * PAGE_SIZE);
}

/* 16 bytes each: a page holds a whole number of them. */
static struct lzchan_ps_place *lzchan_ps_place(struct lzchan_chan *chan, u32 i)
{
	return lzchan_ps_at(chan, chan->ps_layout.places_off +
				  (u64)i * sizeof(struct lzchan_ps_place));
}

/* Place @i's status, in the kernel's word and in its subscriber's copy.
 * Release: see lzchan_shm_set_status_word(). */
static void lzchan_ps_place_set(struct lzchan_chan *chan, u32 i, u32 gen, u32 state)
{
	lzchan_shm_set_status_word(&lzchan_ps_place(chan, i)->status, gen, state);
	lzchan_shm_set_status_word(&lzchan_ps_sub(chan, i)->status, gen, state);
}

/* ---- creation ---- */

void lzchan_ps_layout_init(struct lzchan_chan *chan, u64 *bytes)
{
	struct lzchan_ps_layout *l = &chan->ps_layout;

	/* Bounded by the geometry limits: no term overflows 64 bits. */
	l->info_off = 0;
	l->info_size = PAGE_SIZE;
	l->pub_off = PAGE_SIZE;
	l->pub_size = PAGE_SIZE;
	l->wake_off = 2 * PAGE_SIZE;
	l->wake_size = PAGE_SIZE;
	l->places_off = 3 * PAGE_SIZE;
	l->places_size = PAGE_ALIGN((u64)chan->max_senders * sizeof(struct lzchan_ps_place));
	l->subs_off = l->places_off + l->places_size;
	l->sub_stride = PAGE_SIZE;
	l->subs_size = (u64)chan->max_senders * PAGE_SIZE;
	l->ring_off = l->subs_off + l->subs_size;
	l->ring_size = PAGE_ALIGN((u64)chan->slot_count * chan->slot_size);
	*bytes = l->ring_off + l->ring_size;
}

/* The pages are zeroed: every status NONE/FREE of generation 0, no slot
 * ready (position p is ready at seq p + 1, never 0). */
void lzchan_ps_pages_init(struct lzchan_chan *chan)
{
	struct lzchan_ps_hdr *hdr = lzchan_ps_hdr(chan);

	hdr->magic = LZCHAN_PS_MAGIC;
	hdr->abi_version = LZCHAN_ABI_VERSION;
	hdr->slot_size = chan->slot_size;
	hdr->slot_count = chan->slot_count;
	hdr->max_subscribers = chan->max_senders;
	hdr->policy = chan->policy;
	hdr->stall_ms = chan->stall_ms;
}

/* ---- attaching and leaving ---- */

/*
 * Signal subscribers' eventfds: the parked ones (a wake), or every one
 * that has one (the publisher left).  Those signalled are parked no
 * more.  Returns how many were signalled.
 */
static u32 lzchan_ps_signal(struct lzchan_chan *chan, bool parked_only)
{
	u32 i, n = 0;

	spin_lock(&chan->evlock);
	for (i = 0; i < chan->max_senders; i++) {
		struct lzchan_lane *l = &chan->lanes[i];

		if (parked_only && !chan->ps_parked)
			break;			/* none left to wake */
		if (!l->evctx || (parked_only && !l->parked))
			continue;
		lzchan_eventfd_signal(l->evctx);
		n++;
		if (l->parked) {
			l->parked = false;
			/* read unlocked in lzchan_ps_stat() */
			WRITE_ONCE(chan->ps_parked, chan->ps_parked - 1);
		}
	}
	spin_unlock(&chan->evlock);
	atomic64_add(n, &chan->wakeups);
	return n;
}

static int lzchan_ps_attach_publisher(struct lzchan_chan *chan, u32 *gen)
{
	if (chan->rx_attached)
		return -EBUSY;
	WRITE_ONCE(chan->rx_attached, true);	/* read unlocked in lzchan_ps_stat() */
	chan->rx_gen++;
	chan->rx_pid = get_pid(task_tgid(current));
	chan->rx_euid = current_euid();
	chan->rx_egid = current_egid();
	atomic64_inc(&chan->sender_attaches);
	/* Release: pairs with the subscribers' acquire loads of pub_status. */
	lzchan_shm_set_status_word(&lzchan_ps_hdr(chan)->pub_status, chan->rx_gen,
				   LZCHAN_RX_ATTACHED);
	*gen = chan->rx_gen;
	return 0;
}

static int lzchan_ps_attach_subscriber(struct lzchan_chan *chan, u32 *place, u32 *gen)
{
	struct lzchan_ps_sub *sub;
	struct lzchan_lane *l;
	u32 i;

	for (i = 0; i < chan->max_senders; i++)
		if (chan->lanes[i].state != LZCHAN_LANE_ATTACHED)
			break;
	if (i == chan->max_senders)
		return -EUSERS;
	l = &chan->lanes[i];
	l->gen++;
	l->state = LZCHAN_LANE_ATTACHED;
	l->endpoint = 0;		/* an endpoint's attach says otherwise */
	l->pid = get_pid(task_tgid(current));
	l->euid = current_euid();
	l->egid = current_egid();
	WRITE_ONCE(chan->senders, chan->senders + 1);	/* read unlocked in lzchan_ps_stat() */

	/*
	 * The place as its new subscriber finds it: nothing of the last
	 * one's (another user's, perhaps), nothing lost, not detached, and
	 * a position at the publisher's tail, which the subscriber lowers
	 * for history or raises to the publisher's floor before it reads
	 * (libchan's join; the design page).  tail is publisher-written and
	 * may be anything: a lie costs the publisher's own room only.  Its
	 * file is gone (release() runs after every mapping went), or was
	 * revoked (its mappings torn down first, lzchan_ep_revoke_one()),
	 * so nobody writes the page meanwhile.
	 */
	sub = lzchan_ps_sub(chan, i);
	/* All of it: its copy of the status too (a zero, NONE). */
	memset(sub, 0, PAGE_SIZE);
	WRITE_ONCE(sub->pos, READ_ONCE(lzchan_ps_pub(chan)->tail));
	/* Not detached (the old generation's mark would not match the new
	 * one anyway). */
	WRITE_ONCE(lzchan_ps_place(chan, i)->detached, 0);
	/* Full barrier: the position before the status (a publisher's scan
	 * that sees ATTACHED sees this position or a later store; pairs with
	 * its seq_cst loads of status, then pos), and the status before
	 * whatever the subscriber loads next (its floor). */
	smp_mb();
	WRITE_ONCE(lzchan_ps_place(chan, i)->status, LZCHAN_STATUS(l->gen, LZCHAN_LANE_ATTACHED));
	WRITE_ONCE(sub->status, LZCHAN_STATUS(l->gen, LZCHAN_LANE_ATTACHED));	/* its copy */
	smp_mb();
	*place = i;
	*gen = l->gen;
	return 0;
}

/* LZCHAN_IOC_OPEN of a pub/sub channel, under chan->lock. */
int lzchan_ps_attach(struct lzchan_chan *chan, u32 role, u32 *place, u32 *gen)
{
	lockdep_assert_held(&chan->lock);
	if (role == LZCHAN_OPEN_PUBLISHER)
		return lzchan_ps_attach_publisher(chan, gen);
	return lzchan_ps_attach_subscriber(chan, place, gen);
}

/*
 * @f's last reference went, under chan->lock: its place closes at once
 * (a back-pressure publisher stops waiting for it), or, for the
 * publisher, every subscriber's stream ends -- CLOSED after LZCHAN_IOC_BYE,
 * else a death -- and every subscriber is signalled.  *@ev: an eventfd to
 * put once the lock is dropped.
 */
void lzchan_ps_release(struct lzchan_file *f, struct lzchan_chan *chan, bool bye,
		       struct eventfd_ctx **ev)
{
	lockdep_assert_held(&chan->lock);
	if (f->role == LZCHAN_OPEN_PUBLISHER) {
		struct lzchan_ps_hdr *hdr = lzchan_ps_hdr(chan);

		WRITE_ONCE(chan->rx_attached, false);	/* read unlocked in lzchan_ps_stat() */
		put_pid(chan->rx_pid);
		chan->rx_pid = NULL;
		/* Published by the release store of the status below. */
		if (bye)
			WRITE_ONCE(hdr->pub_bye, chan->rx_gen);
		/* Release: pairs with the subscribers' acquire loads of
		 * pub_status.  The publisher's stores (its last tail) came
		 * before its file's release, hence before this store. */
		lzchan_shm_set_status_word(&hdr->pub_status, chan->rx_gen, LZCHAN_RX_GONE);
		lzchan_ps_signal(chan, false);
	} else {
		struct lzchan_lane *l = &chan->lanes[f->lane];

		l->state = LZCHAN_LANE_CLOSED;
		put_pid(l->pid);
		l->pid = NULL;
		WRITE_ONCE(chan->senders, chan->senders - 1);	/* read unlocked in lzchan_ps_stat() */
		/* Release: pairs with the publisher's seq_cst load of the
		 * status in its scan; it stops counting this place. */
		lzchan_ps_place_set(chan, f->lane, l->gen, LZCHAN_LANE_CLOSED);
		spin_lock(&chan->evlock);
		*ev = l->evctx;
		l->evctx = NULL;
		if (l->parked) {
			l->parked = false;
			WRITE_ONCE(chan->ps_parked, chan->ps_parked - 1);
		}
		spin_unlock(&chan->evlock);
	}
}

/* ---- wakeups ---- */

/* LZCHAN_IOC_SET_EVENTFD on a subscriber's fd (@ev, or NULL to remove);
 * the caller's checks are done and @ev is ours to keep or put. */
int lzchan_ps_set_eventfd(struct lzchan_file *f, struct lzchan_chan *chan,
			  struct eventfd_ctx *ev)
{
	struct lzchan_lane *l = &chan->lanes[f->lane];
	struct eventfd_ctx *old;

	bool revoked;

	spin_lock(&chan->evlock);
	/* A revoked subscriber's place may be another's by now (the
	 * revocation set revoked under this lock, then closed the place). */
	revoked = f->revoked;
	if (revoked) {
		old = ev;
	} else {
		old = l->evctx;
		l->evctx = ev;
		if (!ev && l->parked) {
			l->parked = false;
			WRITE_ONCE(chan->ps_parked, chan->ps_parked - 1);
		}
	}
	spin_unlock(&chan->evlock);
	if (old)
		eventfd_ctx_put(old);
	return revoked ? -EKEYREVOKED : 0;
}

/* LZCHAN_IOC_WAKE on a pub/sub fd: the publisher wakes every parked
 * subscriber (it saw sleepers move). */
int lzchan_ps_wake(struct lzchan_file *f, struct lzchan_chan *chan)
{
	if (f->role != LZCHAN_OPEN_PUBLISHER)
		return -EPERM;
	atomic64_inc(&chan->wake_requests);
	return lzchan_ps_signal(chan, true);
}

/* LZCHAN_IOC_PS_PARK: the subscriber is about to sleep on its eventfd. */
int lzchan_ps_park(struct lzchan_file *f)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	struct lzchan_lane *l;
	int ret = 0;

	if (!chan)
		return -EBADFD;
	if (!chan->pubsub)
		return -EPROTOTYPE;
	if (f->role != LZCHAN_OPEN_SUBSCRIBER)
		return -EPERM;
	l = &chan->lanes[f->lane];
	spin_lock(&chan->evlock);
	if (f->revoked) {
		ret = -EKEYREVOKED;	/* the place may be another's (as above) */
	} else if (!l->evctx) {
		ret = -EINVAL;
	} else if (!l->parked) {
		l->parked = true;
		WRITE_ONCE(chan->ps_parked, chan->ps_parked + 1);
	}
	spin_unlock(&chan->evlock);
	if (ret)
		return ret;
	/*
	 * Fully ordered (a value-returning atomic): the caller's stores (its
	 * position) and our parked mark before it, and its next look at its
	 * slot after it.  Pairs with the publisher's store of tail, then its
	 * load of sleepers (with its own full fence, or the membarrier the
	 * caller issues next): a publish the caller's look misses sees the
	 * new count and wakes it (LZCHAN_IOC_WAKE, which takes evlock after
	 * our unlock, so it finds the mark).  Only the kernel writes the
	 * word: the wake area is mapped read-only to everyone.
	 */
	atomic_inc_return((atomic_t *)&lzchan_ps_wake_area(chan)->sleepers);
	return 0;
}

/* LZCHAN_IOC_PS_DETACH: a back-pressure publisher lets a stalled
 * subscriber go. */
int lzchan_ps_detach(struct lzchan_file *f, struct lzchan_ps_detach *d)
{
	struct lzchan_chan *chan = lzchan_file_chan(f);
	struct lzchan_lane *l;
	u32 place;
	int ret = 0;

	if (!chan)
		return -EBADFD;
	if (d->flags || memchr_inv(d->reserved, 0, sizeof(d->reserved)))
		return -EINVAL;
	if (!chan->pubsub)
		return -EPROTOTYPE;
	if (f->role != LZCHAN_OPEN_PUBLISHER || chan->policy != LZCHAN_PS_BACKPRESSURE)
		return -EPERM;
	if (d->place >= chan->max_senders)
		return -EINVAL;
	place = array_index_nospec(d->place, chan->max_senders);
	l = &chan->lanes[place];
	mutex_lock(&chan->lock);
	if (f->revoked) {
		ret = -EKEYREVOKED;	/* no longer the publisher */
	} else if (l->state != LZCHAN_LANE_ATTACHED || l->gen != d->gen) {
		ret = -ESRCH;
	} else {
		/* Relaxed: the publisher compares the kernel's word with the
		 * generation at its next scan, the subscriber its copy at
		 * its next call. */
		WRITE_ONCE(lzchan_ps_place(chan, place)->detached, d->gen);
		WRITE_ONCE(lzchan_ps_sub(chan, place)->detached, d->gen);
		spin_lock(&chan->evlock);
		if (l->evctx)
			lzchan_eventfd_signal(l->evctx);	/* a parked one learns now */
		spin_unlock(&chan->evlock);
	}
	mutex_unlock(&chan->lock);
	return ret;
}

/* ---- description ---- */

/* lzchan_chan_stat() of a pub/sub channel: the activity fields. */
void lzchan_ps_stat(struct lzchan_chan *chan, struct lzchan_chan_stat *st)
{
	st->flags |= LZCHAN_STAT_PUBSUB;
	st->max_senders = 1;
	/* Snapshots: written under chan->lock (evlock), not taken here. */
	st->senders = READ_ONCE(chan->rx_attached);
	st->receiver = READ_ONCE(chan->senders);
	st->rx_parked = READ_ONCE(chan->ps_parked);
	/* Publisher-written, statistics only. */
	st->messages = READ_ONCE(lzchan_ps_pub(chan)->tail);
}

static void lzchan_ps_sub_describe(struct lzchan_chan *chan, u32 i, u64 tail,
				   struct lzchan_ps_sub_stat *out)
{
	struct user_namespace *uns = current_user_ns();
	struct lzchan_ps_sub *sub = lzchan_ps_sub(chan, i);
	struct lzchan_lane *l = &chan->lanes[i];

	memset(out, 0, sizeof(*out));
	mutex_lock(&chan->lock);
	out->state = l->state;
	out->gen = l->gen;
	if (l->state == LZCHAN_LANE_ATTACHED) {
		out->pid = pid_vnr(l->pid);
		out->uid = from_kuid_munged(uns, l->euid);
		out->gid = from_kgid_munged(uns, l->egid);
		/* The kernel's word (not the subscriber's copy). */
		if (READ_ONCE(lzchan_ps_place(chan, i)->detached) == l->gen)
			out->flags |= LZCHAN_PS_SUB_DETACHED;
	}
	spin_lock(&chan->evlock);
	if (l->parked)
		out->flags |= LZCHAN_PS_SUB_PARKED;
	spin_unlock(&chan->evlock);
	mutex_unlock(&chan->lock);
	/* Subscriber-written, statistics only, any value. */
	out->pos = READ_ONCE(sub->pos);
	out->lost = READ_ONCE(sub->lost);
	out->lag = tail > out->pos ? tail - out->pos : 0;
}

/* LZCHAN_IOC_PS_SUBS */
int lzchan_ps_subs(struct lzchan_file *f, struct lzchan_ps_subs *s)
{
	struct lzchan_chan *bound = lzchan_file_chan(f), *chan;
	char __user *dst = u64_to_user_ptr(s->entries);
	struct lzchan_ps_sub_stat st;
	u32 i, n = 0;
	u64 tail;
	int ret;

	if (s->flags || memchr_inv(s->reserved, 0, sizeof(s->reserved)))
		return -EINVAL;
	/* As LIST bounds its entries: a page each at most, the whole span
	 * addressable. */
	if (s->entry_size < offsetofend(struct lzchan_ps_sub_stat, flags) ||
	    s->entry_size > PAGE_SIZE)
		return -EINVAL;
	/* An endpoint lists only as the publisher of its own channel (its
	 * flush scans the places), never by name: exactly what was granted. */
	if (lzchan_file_is_ep(f) && (s->name[0] || !bound || f->role != LZCHAN_OPEN_PUBLISHER))
		return -EPERM;
	/* EINVAL: neither a name nor a binding. */
	chan = lzchan_chan_get_for(f, s->name, -EINVAL);
	if (IS_ERR(chan))
		return PTR_ERR(chan);
	if (s->name[0])
		ret = chan->pubsub ? lzchan_chan_permission(chan, 4, true) : -EPROTOTYPE;
	else	/* The publisher may look (it waits on them); a subscriber
		 * does not see the others through its own fd. */
		ret = !chan->pubsub ? -EPROTOTYPE :
		      f->role != LZCHAN_OPEN_PUBLISHER ? -EPERM : 0;
	if (ret)
		goto out_put;
	/* Publisher-written, statistics only. */
	tail = READ_ONCE(lzchan_ps_pub(chan)->tail);
	if (s->start < chan->max_senders)
		n = min(s->count, chan->max_senders - s->start);
	/* n <= LZCHAN_SUBSCRIBERS_MAX, entry_size <= PAGE_SIZE: no overflow. */
	if (!access_ok(dst, (size_t)n * s->entry_size)) {
		ret = -EFAULT;
		goto out_put;
	}
	for (i = 0; i < n; i++) {
		size_t len = min_t(size_t, s->entry_size, sizeof(st));
		char __user *to = dst + (u64)i * s->entry_size;

		lzchan_ps_sub_describe(chan, array_index_nospec(s->start + i, chan->max_senders),
				       tail, &st);
		if (copy_to_user(to, &st, len) ||
		    (s->entry_size > len && clear_user(to + len, s->entry_size - len))) {
			ret = -EFAULT;
			goto out_put;
		}
		cond_resched();
	}
	s->count = n;
	s->total = chan->max_senders;
	s->tail = tail;
out_put:
	lzchan_chan_put(chan);
	return ret;
}

/* ---- mapping ---- */

/* Is [off, off + len) inside [start, start + size)? */
static bool lzchan_ps_in(u64 off, u64 len, u64 start, u64 size)
{
	return off >= start && len <= size && off - start <= size - len;
}

/*
 * May @f map [@off, @off + @len) of pub/sub channel @chan, and writable?
 * The publisher writes its line and the ring, and reads the places only
 * with back-pressure; a subscriber reads all but the places, and maps
 * only its own place's page, writable.
 */
int lzchan_ps_mmap_area(struct lzchan_file *f, struct lzchan_chan *chan, u64 off, u64 len,
			bool *writable)
{
	const struct lzchan_ps_layout *l = &chan->ps_layout;
	bool pub = f->role == LZCHAN_OPEN_PUBLISHER;

	if (lzchan_ps_in(off, len, l->info_off, l->info_size) ||
	    lzchan_ps_in(off, len, l->wake_off, l->wake_size)) {
		*writable = false;		/* the kernel's */
	} else if (lzchan_ps_in(off, len, l->pub_off, l->pub_size) ||
		   lzchan_ps_in(off, len, l->ring_off, l->ring_size)) {
		*writable = pub;
	} else if (lzchan_ps_in(off, len, l->places_off, l->places_size)) {
		/* Who counts: a back-pressure publisher's to read only. */
		if (!pub || chan->policy != LZCHAN_PS_BACKPRESSURE)
			return -EACCES;
		*writable = false;
	} else if (lzchan_ps_in(off, len, l->subs_off, l->subs_size)) {
		if (pub) {
			if (chan->policy != LZCHAN_PS_BACKPRESSURE)
				return -EACCES;	/* nothing it needs to know */
			*writable = false;
		} else {
			if (off != l->subs_off + (u64)f->lane * PAGE_SIZE || len != PAGE_SIZE)
				return -EACCES;	/* another subscriber's place */
			*writable = true;
		}
	} else {
		return -EINVAL;			/* outside, or across two areas */
	}
	return 0;
}
