// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Publish/subscribe channels: one publisher writes each message once into
 * one ring; each subscriber reads it there at its own position.
 *
 * Floor 2, below send and receive's public calls, which hand a pub/sub
 * handle here, and above the file and the clock (the floors:
 * Documentation/libchan/design.rst, "The library's floors").  The
 * protocol and its memory-ordering argument: the same page,
 * "Publish/subscribe".
 *
 * The shm backend's file: the header page, then the areas of struct
 * lzchan_ps_layout.  The publisher holds the lock byte LOCK_BASE, the
 * subscriber of place i byte LOCK_BASE + 1 + i; the kernel drops them
 * when their holder dies.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "lzchan_internal.h"

/* How often (at most) an empty subscriber looks at the publisher's lock,
 * and how long a parked one sleeps blind on shm (a publisher that dies
 * wakes nobody). */
#define PS_LIVENESS_NS		1000000ULL
#define PS_BLIND_SLEEP_NS	50000000ULL
#define PS_DEGRADED_SLEEP_NS	1000000ULL
/* An armed shm event fd's timer: once a second, or, after the channel
 * file was closed by a writer (perhaps the publisher, dying), just past
 * the liveness look's pace this many times. */
#define PS_EVENT_SWEEP_S	1
#define PS_CLOSE_LOOKS		20

struct __lzchan_ps {
	/* the areas, as mapped */
	struct lzchan_ps_hdr *hdr;
	struct lzchan_ps_pub *pub;
	struct lzchan_ps_wake *wake;
	char *subs;
	char *places;			/* each place's status and detached:
					 * the module's places area (dev
					 * back-pressure publisher), or the
					 * words on the subscribers' pages (shm) */
	char *ring;
	uint64_t sub_stride, place_stride;
	uint32_t slot_size, slot_shift, slot_count, mask, max_msg, max_subs, policy;
	uint64_t stall_ns;
	uint32_t gen;			/* our generation (publisher, subscriber) */
	bool dev;			/* the module's: it keeps statuses,
					 * sleepers and the ends, and wakes
					 * through eventfds (ioctls below) */
	int fd;				/* the handle's fd */
	int evfd;			/* dev subscriber: our eventfd */
	/* shm subscriber's event fd (lzchan_event_fd()), made at first
	 * ask: an epoll set of an inotify watch on the channel file (the
	 * publisher's wakes touch its times; its death closes it), an
	 * eventfd of our own (lzchan_wake()) and a one-shot timer (a
	 * publisher that dies shows in its lock, looked at on the timer) */
	int ep, ino, kick, tfd;
	unsigned int close_looks;	/* quick looks left after a close */

	/* publisher */
	uint64_t tail;			/* next position to write */
	uint64_t room_end;		/* back-pressure: positions below are ours */
	uint64_t gate;			/* the send takes positions below this
					 * without a look: room_end with
					 * back-pressure, all with overwrite, none
					 * while a reservation is open (and for a
					 * subscriber, whose send refuses) */
	uint32_t sleepers_seen;		/* wake->sleepers at our last wake */
	bool fence_each;		/* no asymmetric barrier: fence each publish */
	bool waiting;			/* back-pressure: refused since the last
					 * room found (the stall clocks run) */
	uint32_t scan_seq;		/* pub->scan_seq as we last stored it */
	uint32_t *seen_gen;		/* ... and the generation they were of */
	bool reserved;
	uint32_t resv_len;
	uint64_t *seen_pos;		/* back-pressure: each place's position ... */
	uint64_t *seen_ns;		/* ... and since when it reads so */

	/* subscriber */
	uint32_t place;			/* our place, i */
	struct lzchan_ps_sub *me;
	uint64_t pos;			/* first position not released */
	uint64_t peek;			/* next position to hand out (>= pos) */
	uint64_t published;		/* pos as last stored in me->pos */
	uint32_t publish_every;
	uint64_t lost;			/* lost since lzchan_lost() last said */
	uint64_t lost_total;
	uint64_t pub_st;		/* the publisher's status whose end we
					 * reported (0: none reported) */
	int end_cause;
	uint64_t pub_look_ns;		/* shm: last look at the publisher's lock */
	uint32_t wake_seen;		/* wake->wake sampled before parking */
};

static inline struct lzchan_ps_slot *__ps_slot(const struct __lzchan_ps *ps, uint64_t pos)
{
	return (struct lzchan_ps_slot *)(ps->ring + ((size_t)(pos & ps->mask) << ps->slot_shift));
}

static inline struct lzchan_ps_sub *__ps_sub(const struct __lzchan_ps *ps, uint32_t i)
{
	return (struct lzchan_ps_sub *)(ps->subs + (size_t)i * ps->sub_stride);
}

/* Place @i's words as a back-pressure publisher reads them (who counts). */
static inline struct lzchan_ps_place *__ps_place(const struct __lzchan_ps *ps, uint32_t i)
{
	return (struct lzchan_ps_place *)(ps->places + (size_t)i * ps->place_stride);
}

/* On shm the words are a subscriber page's own: the same two, as far apart. */
_Static_assert(offsetof(struct lzchan_ps_sub, detached) - offsetof(struct lzchan_ps_sub, status) ==
		       offsetof(struct lzchan_ps_place, detached),
	       "a place's words as on a subscriber's page");

/* ---- geometry and layout ---- */

int __lzchan_ps_geom_check(uint32_t slot_size, uint32_t slot_count, uint32_t max_subs,
			   uint32_t policy)
{
	int ret = __lzchan_geom_check(slot_size, slot_count, 1);

	if (ret)
		return ret;
	if (!max_subs || max_subs > LZCHAN_SUBSCRIBERS_MAX)
		return -EINVAL;
	if (policy != LZCHAN_PS_OVERWRITE && policy != LZCHAN_PS_BACKPRESSURE)
		return -EINVAL;
	return 0;
}

uint32_t __lzchan_ps_max_msg(uint32_t slot_size)
{
	return slot_size - sizeof(struct lzchan_ps_slot);
}

void __lzchan_ps_layout(struct lzchan_ps_layout *l, uint32_t slot_size, uint32_t slot_count,
			uint32_t max_subs, uint64_t page)
{
#define PG(x) (((x) + page - 1) / page * page)
	memset(l, 0, sizeof(*l));
	l->info_off = 0;
	l->info_size = PG(sizeof(struct lzchan_ps_hdr));
	l->pub_off = l->info_off + l->info_size;
	l->pub_size = PG(sizeof(struct lzchan_ps_pub));
	l->wake_off = l->pub_off + l->pub_size;
	l->wake_size = PG(sizeof(struct lzchan_ps_wake));
	l->subs_off = l->wake_off + l->wake_size;
	l->sub_stride = sizeof(struct lzchan_ps_sub);
	l->subs_size = PG((uint64_t)max_subs * l->sub_stride);
	l->ring_off = l->subs_off + l->subs_size;
	l->ring_size = PG((uint64_t)slot_count * slot_size);
#undef PG
}

uint64_t __lzchan_ps_file_size(const struct lzchan_ps_layout *l, uint64_t page)
{
	return page + l->ring_off + l->ring_size;
}

/* The send's gate, from what it summarises. */
static void __ps_gate(struct __lzchan_ps *ps)
{
	ps->gate = ps->reserved ? 0 : ps->policy == LZCHAN_PS_OVERWRITE ? UINT64_MAX :
		   ps->room_end;
}

/* ---- attaching ---- */

/* Look at the lock of place @i (1 held, 0 free, -errno). */
static int __ps_place_alive(struct lzchan *ch, uint32_t i)
{
	return __lzchan_locked(ch->fd, LOCK_BASE + 1 + i);
}

static int __ps_pub_alive(struct lzchan *ch)
{
	return __lzchan_locked(ch->fd, LOCK_BASE);
}

/* The first position a subscriber joining now reads: the newest message
 * and up to @history before it still in the ring (one slot short of a
 * ring: the next publish overwrites the oldest). */
static uint64_t __ps_join_at(const struct __lzchan_ps *ps, uint32_t history)
{
	/* Pairs with the publisher's release store of tail. */
	uint64_t t = __lz_load_acq(&ps->pub->tail);
	uint64_t h = history < ps->slot_count - 1 ? history : ps->slot_count - 1;

	return t > h ? t - h : 0;
}

/*
 * Back-pressure: the slowest position of the attached subscribers other
 * than place @skip (~0: none skipped), or @none if there is none.  Seq_cst
 * loads: a joiner's store of its position and status and this scan are
 * ordered one way or the other (see __ps_claim()).
 */
static uint64_t __ps_slowest(const struct __lzchan_ps *ps, uint32_t skip, uint64_t none)
{
	uint64_t min = none;
	uint32_t i;

	for (i = 0; i < ps->max_subs; i++) {
		const struct lzchan_ps_place *w = __ps_place(ps, i);
		uint64_t st, p;

		if (i == skip)
			continue;
		st = __atomic_load_n(&w->status, __ATOMIC_SEQ_CST);
		if (LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_ATTACHED ||
		    __lz_load(&w->detached) == LZCHAN_STATUS_GEN(st))
			continue;
		p = __atomic_load_n(&__ps_sub(ps, i)->pos, __ATOMIC_SEQ_CST);
		if (p < min)
			min = p;
	}
	return min;
}

/*
 * Back-pressure: the earliest position a joiner may start at, looked at
 * after its seq_cst stores of position and status.  The publisher may
 * write up to the room of its last finished scan (room_floor plus a ring)
 * and, during a scan in progress that may miss us, up to that scan's
 * least position plus a ring, which is at most its tail then (scan_at).
 * A scan whose odd scan_seq store comes after our load of it loads our
 * place after our stores, and sees us.  So: no scan in progress and the
 * same count after -- start no earlier than the floor; one in progress --
 * no earlier than its tail; a scan finished meanwhile -- no earlier than
 * the tail now, at least any scan's tail.  Seq_cst loads: after our
 * stores in the single order; pairs with the publisher's seq_cst stores
 * of scan_seq (__ps_room()), which also publish scan_at and room_floor.
 */
static uint64_t __ps_join_floor(const struct __lzchan_ps *ps)
{
	uint32_t seq = __atomic_load_n(&ps->pub->scan_seq, __ATOMIC_SEQ_CST);
	uint64_t v;

	if (seq & 1)
		return __atomic_load_n(&ps->pub->scan_at, __ATOMIC_SEQ_CST);
	v = __atomic_load_n(&ps->pub->room_floor, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ps->pub->scan_seq, __ATOMIC_SEQ_CST) == seq)
		return v;
	return __lz_load_acq(&ps->pub->tail);	/* pairs with its release */
}

/* The publisher's state from what its predecessors left. */
static void __ps_pub_start(struct __lzchan_ps *ps)
{
	/* Relaxed: the previous publisher's last store, published by
	 * its release of GONE (or lost with it: then what it left). */
	ps->tail = __lz_load(&ps->pub->tail);
	/* One that died between a message's seq and its tail: that
	 * message is out (a subscriber may have taken it); writing
	 * its position again would hide the new one from it, and
	 * give a reader mid-copy the same seq back (ABA). */
	if (__lz_load_acq(&__ps_slot(ps, ps->tail)->seq) == ps->tail + 1)
		ps->tail++;
	ps->room_end = ps->tail;	/* back-pressure: look first */
	__ps_gate(ps);
	/* Our scans count on from the file's (even: one that died
	 * mid-scan left it odd).  Relaxed load: ours to write now;
	 * the seq_cst store pairs with a joiner's loads of it
	 * (__ps_join_floor()): no scan in progress. */
	ps->scan_seq = (__lz_load(&ps->pub->scan_seq) + 1) & ~1U;
	__atomic_store_n(&ps->pub->scan_seq, ps->scan_seq, __ATOMIC_SEQ_CST);
	/* Subscribers parked before we came are woken by our first
	 * publish.  Relaxed: only compared (__ps_end()). */
	ps->sleepers_seen = __lz_load(&ps->wake->sleepers) - 1;
}

/*
 * A subscriber's start in its place (ps->me, generation ps->gen): our
 * position, then (shm, @status) our status, seq_cst both, so that a scan
 * that begins after our look at the floor below sees us.  The module
 * stored ATTACHED itself, with a position at the tail then, which is no
 * lower than any we store here but the history's (the design page).
 */
static void __ps_sub_start(struct __lzchan_ps *ps, uint32_t history, bool status)
{
	struct lzchan_ps_sub *s = ps->me;
	uint64_t st, at;

	at = __ps_join_at(ps, history);
	__atomic_store_n(&s->pos, at, __ATOMIC_SEQ_CST);
	__lz_store(&s->lost, 0);
	if (status)
		__atomic_store_n(&s->status, LZCHAN_STATUS(ps->gen, LZCHAN_LANE_ATTACHED),
				 __ATOMIC_SEQ_CST);
	if (ps->policy == LZCHAN_PS_BACKPRESSURE) {
		uint64_t floor = __ps_join_floor(ps), t;

		/* The floor bounds what is written from now on; what was
		 * written before (under rooms that never counted us, while
		 * our position was on its way: a fault on a new page, a
		 * preemption) lies below the tail now.  The oldest position
		 * still intact is a ring short of it (the publisher may be
		 * writing at the tail).  Seq_cst: after the floor's loads;
		 * pairs with the publisher's release store of tail. */
		t = __atomic_load_n(&ps->pub->tail, __ATOMIC_SEQ_CST);
		if (t >= ps->slot_count && t - (ps->slot_count - 1) > floor)
			floor = t - (ps->slot_count - 1);
		if (floor > at) {
			at = floor;
			__atomic_store_n(&s->pos, at, __ATOMIC_SEQ_CST);
		}
	}
	ps->pos = ps->peek = ps->published = at;
	/* A publisher that had left before we came, and whose
	 * messages we do not start among, ended no stream of ours:
	 * wait for the next one.  Pairs with its release of GONE. */
	st = __lz_load_acq(&ps->hdr->pub_status);
	if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_GONE &&
	    at >= __lz_load_acq(&ps->pub->tail))
		ps->pub_st = st;
}

static uint32_t __ps_next_place;

static int __ps_claim(struct lzchan *ch, struct __lzchan_ps *ps, uint32_t history)
{
	uint32_t i, k;

	if (ch->f.role == LZCHAN_PUBLISHER) {
		uint64_t st;

		if (__lzchan_lock(ch->fd, LOCK_BASE))
			return -EBUSY;
		ch->claimed = true;
		/* Relaxed: we hold the publisher's lock, nobody else writes
		 * it (on shm anyone may: then anything may follow). */
		st = __lz_load(&ps->hdr->pub_status);
		ps->gen = LZCHAN_STATUS_GEN(st) + 1;
		__ps_pub_start(ps);
		/* Pairs with the subscribers' acquire loads of pub_status. */
		__lz_store_rel(&ps->hdr->pub_status, LZCHAN_STATUS(ps->gen, LZCHAN_RX_ATTACHED));
		return 0;
	}
	/* From where this process last found a place (a hint: a process
	 * that subscribes many times does not try every taken place again
	 * each time; relaxed, any value is a fine start). */
	for (k = 0; k < ps->max_subs; k++) {
		struct lzchan_ps_sub *s;
		uint64_t st;

		i = (__lz_load(&__ps_next_place) + k) % ps->max_subs;
		if (__lzchan_lock(ch->fd, LOCK_BASE + 1 + i))
			continue;
		__lz_store(&__ps_next_place, i + 1);
		ch->claimed = true;
		s = __ps_sub(ps, i);
		ps->place = i;
		ps->me = s;
		/* Relaxed: the place's lock is ours. */
		st = __lz_load(&s->status);
		ps->gen = LZCHAN_STATUS_GEN(st) + 1;
		__ps_sub_start(ps, history, true);
		return 0;
	}
	return -EUSERS;
}

/* The handle's pub/sub state for this geometry (checked by the caller). */
static int __ps_new(struct lzchan *ch, uint32_t slot_size, uint32_t slot_count,
		    uint32_t max_subs, uint32_t policy, uint32_t stall_ms)
{
	struct __lzchan_ps *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return -ENOMEM;
	ch->ps = ps;
	ps->fd = ch->fd;
	ps->evfd = ps->ep = ps->ino = ps->kick = ps->tfd = -1;
	if (ch->f.role == LZCHAN_PUBLISHER) {
		ps->seen_pos = calloc(max_subs, sizeof(*ps->seen_pos));
		ps->seen_ns = calloc(max_subs, sizeof(*ps->seen_ns));
		ps->seen_gen = calloc(max_subs, sizeof(*ps->seen_gen));
		if (!ps->seen_pos || !ps->seen_ns || !ps->seen_gen)
			return -ENOMEM;
	}
	ps->slot_size = slot_size;
	ps->slot_shift = __builtin_ctz(slot_size);
	ps->slot_count = slot_count;
	ps->mask = slot_count - 1;
	ps->max_msg = __lzchan_ps_max_msg(slot_size);
	ps->max_subs = max_subs;
	ps->policy = policy;
	ps->stall_ns = (uint64_t)stall_ms * 1000000ULL;
	/* Back-pressure: every position, so that a publisher waiting on a
	 * slow subscriber sees it move (and never takes it for stalled);
	 * a store to a line of its own, which the publisher reads only
	 * when its room runs out.  Overwrite: a quarter ring (statistics). */
	ps->publish_every = policy == LZCHAN_PS_BACKPRESSURE ? 1 :
			    slot_count / 4 ? slot_count / 4 : 1;
	/* What lzchan_geometry() reports, and the handle prefix the inline
	 * calls read: no gate (tx_max, tx_room 0) and no span, so that
	 * every inline call comes to the library, which comes here. */
	ch->f.slot_size = slot_size;
	ch->f.slot_shift = __builtin_ctz(slot_size);
	ch->f.slot_count = slot_count;
	ch->f.mask = ps->mask;
	ch->f.max_senders = 1;
	ch->max_msg = ps->max_msg;
	if (ch->f.role == LZCHAN_PUBLISHER)
		ps->fence_each = !__lzchan_register_sender_barrier();
	else
		ch->have_membarrier = __lzchan_query_barrier();
	return 0;
}

/* Point @ps at the areas of layout @l mapped at @base. */
static void __ps_point(struct __lzchan_ps *ps, char *base, const struct lzchan_ps_layout *l)
{
	ps->hdr = (struct lzchan_ps_hdr *)(base + l->info_off);
	ps->pub = (struct lzchan_ps_pub *)(base + l->pub_off);
	ps->wake = (struct lzchan_ps_wake *)(base + l->wake_off);
	ps->subs = base + l->subs_off;
	ps->sub_stride = l->sub_stride;
	ps->places = ps->subs + offsetof(struct lzchan_ps_sub, status);
	ps->place_stride = l->sub_stride;
	ps->ring = base + l->ring_off;
}

/*
 * @ch was opened on a pub/sub file whose header @hdr the caller read and
 * which is @size bytes long: check the header against what its geometry
 * says, map the file, take a place.  Trust nothing in the file.
 */
int __lzchan_ps_attach(struct lzchan *ch, const struct __lzchan_shm_file *hdr, uint64_t size,
		       uint32_t history)
{
	uint64_t page = sysconf(_SC_PAGESIZE);
	struct lzchan_ps_layout want;
	int ret;

	if (hdr->version != SHM_PS_FILE_VERSION || hdr->page_size != page ||
	    __lzchan_ps_geom_check(hdr->slot_size, hdr->slot_count, hdr->max_subscribers,
				   hdr->policy))
		return -EPROTO;
	__lzchan_ps_layout(&want, hdr->slot_size, hdr->slot_count, hdr->max_subscribers, page);
	if (memcmp(&want, &hdr->ps, sizeof(want)))
		return -EPROTO;
	ch->map_len = __lzchan_ps_file_size(&want, page);
	if (size < ch->map_len)
		return -EPROTO;
	ret = __ps_new(ch, hdr->slot_size, hdr->slot_count, hdr->max_subscribers, hdr->policy,
		       hdr->stall_ms);
	if (ret)
		return ret;
	ch->numa_node = hdr->numa_node;
	ch->map_base = mmap(NULL, ch->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, ch->fd, 0);
	if (ch->map_base == MAP_FAILED) {
		ch->map_base = NULL;
		return -errno;
	}
	/* A peer that cuts the file short costs us the channel (-EIO), not
	 * the process: our accesses then read zeros, and the calls ask the
	 * guard before believing them. */
	ret = __lzchan_guard_handle(ch, SIZE_MAX);
	if (ret)
		return ret;
	__ps_point(ch->ps, (char *)ch->map_base + page, &want);
	return __ps_claim(ch, ch->ps, history);
}

/*
 * dev: @ch is bound to a pub/sub channel as its publisher or as the
 * subscriber of place ch->lane (generation ch->lane_gen), which @in
 * describes: map each area with our role's protections (the module
 * refuses any other), at its offset in one guarded range (a revoked
 * endpoint's calls then fail, not the process: lzchan_guard.c), and
 * start.  The module keeps the statuses.
 */
int __lzchan_ps_attach_dev(struct lzchan *ch, const struct lzchan_info *in, uint32_t history)
{
	const struct lzchan_ps_layout *l = &in->ps_layout;
	bool pub = ch->f.role == LZCHAN_PUBLISHER;
	uint64_t page = sysconf(_SC_PAGESIZE);
	struct lzchan_set_eventfd e = { .size = sizeof(e) };
	struct __lzchan_ps *ps;
	char *info, *puba, *wake, *ring, *subs = NULL, *places = NULL;
	bool bp_pub = pub && in->policy == LZCHAN_PS_BACKPRESSURE;
	int ret;

	if (__lzchan_ps_geom_check(in->stat.slot_size, in->stat.slot_count, in->max_subscribers,
				   in->policy) ||
	    l->info_size < sizeof(struct lzchan_ps_hdr) || l->pub_size < sizeof(struct lzchan_ps_pub) ||
	    l->wake_size < sizeof(struct lzchan_ps_wake) || l->sub_stride < page ||
	    l->subs_size / l->sub_stride < in->max_subscribers ||
	    l->ring_size < (uint64_t)in->stat.slot_count * in->stat.slot_size ||
	    (bp_pub && l->places_size / sizeof(struct lzchan_ps_place) < in->max_subscribers) ||
	    (!pub && ch->lane >= in->max_subscribers))
		return -EPROTO;
	ret = __ps_new(ch, in->stat.slot_size, in->stat.slot_count, in->max_subscribers,
		       in->policy, in->stall_ms);
	if (ret)
		return ret;
	ps = ch->ps;
	ps->dev = true;
	/* No struct lzchan_shm_hdr here: the calls ask the guard. */
	ret = __lzchan_dev_reserve(ch, in->stat.bytes, SIZE_MAX);
	if (ret)
		return ret;
	info = __lzchan_dev_map(ch, l->info_off, l->info_size, PROT_READ);
	puba = __lzchan_dev_map(ch, l->pub_off, l->pub_size,
				pub ? PROT_READ | PROT_WRITE : PROT_READ);
	wake = __lzchan_dev_map(ch, l->wake_off, l->wake_size, PROT_READ);
	ring = __lzchan_dev_map(ch, l->ring_off, l->ring_size,
				pub ? PROT_READ | PROT_WRITE : PROT_READ);
	if (!info || !puba || !wake || !ring)
		return -errno;
	/* The places: a back-pressure publisher reads them all, and the
	 * module's words on who counts; a subscriber maps its own page (and
	 * can map no other, nor the module's words). */
	if (bp_pub) {
		subs = __lzchan_dev_map(ch, l->subs_off, l->subs_size, PROT_READ);
		places = __lzchan_dev_map(ch, l->places_off, l->places_size, PROT_READ);
		if (!subs || !places)
			return -errno;
	} else if (!pub) {
		subs = __lzchan_dev_map(ch, l->subs_off + (uint64_t)ch->lane * l->sub_stride,
					l->sub_stride, PROT_READ | PROT_WRITE);
		if (!subs)
			return -errno;
	}
	ps->hdr = (struct lzchan_ps_hdr *)info;
	ps->pub = (struct lzchan_ps_pub *)puba;
	ps->wake = (struct lzchan_ps_wake *)wake;
	ps->ring = ring;
	ps->sub_stride = l->sub_stride;
	ps->places = places;
	ps->place_stride = sizeof(struct lzchan_ps_place);
	ch->claimed = true;
	if (pub) {
		ps->subs = subs;	/* NULL with overwrite */
		/* Pairs with the module's release store of ATTACHED. */
		ps->gen = LZCHAN_STATUS_GEN(__lz_load_acq(&ps->hdr->pub_status));
		__ps_pub_start(ps);
		return 0;
	}
	ps->place = ch->lane;
	ps->me = (struct lzchan_ps_sub *)subs;
	ps->gen = ch->lane_gen;
	/* Our eventfd, which the publisher's wakes and its departure
	 * signal (the module, LZCHAN_IOC_WAKE). */
	ps->evfd = ch->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ch->evfd < 0)
		return -errno;
	e.fd = ch->evfd;
	if (ioctl(ch->fd, LZCHAN_IOC_SET_EVENTFD, &e) < 0)
		return __lzchan_dev_err(errno);
	__ps_sub_start(ps, history, false);
	return 0;
}

/* ---- publishing ---- */

/* Wake every parked subscriber: change the word they wait on, then wake
 * them all.  Seq_cst: pairs with the subscriber's acquire sample of the
 * word before it announces itself (__lzchan_ps_recv_wait()). */
static void __ps_wake_all(struct __lzchan_ps *ps, bool touch)
{
	if (ps->dev) {
		/* The module signals each parked subscriber's eventfd. */
		(void)ioctl(ps->fd, LZCHAN_IOC_WAKE);
		return;
	}
	__atomic_fetch_add(&ps->wake->wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &ps->wake->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	/* Subscribers waiting on an event fd: one touch of the file's
	 * times reaches every one (their inotify, IN_ATTRIB).  A subscriber
	 * counts itself in watchers before its arm's seq_cst increment of
	 * sleepers, which our load of sleepers saw (why we wake): the
	 * acquire fence makes that load synchronise with it, so the count
	 * below is seen.  Relaxed: only tested. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (touch && __lz_load(&ps->wake->watchers))
		(void)futimens(ps->fd, NULL);
}

/*
 * Back-pressure: is there room for position @p?  The slowest attached
 * subscriber's published position plus a ring, looked at again only when
 * the room we had runs out.  A subscriber whose position has not moved for
 * stall_ns while we wait on it is detached (it learns so at its next
 * call, -ECONNRESET); one whose lock is free has died, and its place is
 * closed.  Either way the others go on.
 */
static bool __ps_room(struct lzchan *ch, struct __lzchan_ps *ps, uint64_t p, bool force)
{
	uint64_t now = 0, min = ps->tail;	/* nobody attached: a ring of room */
	uint32_t i;

	if (p < ps->room_end && !force)
		return true;
	/* A new wait: the stall clocks start now, not at an earlier wait
	 * (a publisher that comes back late has not waited meanwhile). */
	if (!ps->waiting) {
		memset(ps->seen_ns, 0, ps->max_subs * sizeof(*ps->seen_ns));
		ps->waiting = true;
	}
	/* A scan in progress, its tail, then the loads (seq_cst, all): a
	 * joiner this scan misses starts no earlier (__ps_join_floor()). */
	__atomic_store_n(&ps->pub->scan_at, ps->tail, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ps->pub->scan_seq, ++ps->scan_seq, __ATOMIC_SEQ_CST);
	for (i = 0; i < ps->max_subs; i++) {
		struct lzchan_ps_place *w = __ps_place(ps, i);
		uint64_t st, pos;

		/* Seq_cst: see __ps_claim().  Acquire in effect: pairs with
		 * the subscriber's release store of pos, after its reads of
		 * the slots below it.  Who counts from the place's words
		 * (the module's own, dev), the position from its page. */
		st = __atomic_load_n(&w->status, __ATOMIC_SEQ_CST);
		if (LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_ATTACHED ||
		    __lz_load(&w->detached) == LZCHAN_STATUS_GEN(st))
			continue;
		pos = __atomic_load_n(&__ps_sub(ps, i)->pos, __ATOMIC_SEQ_CST);
		if (pos + ps->slot_count > p) {
			if (pos < min)
				min = pos;	/* not in the way: the room it leaves */
			continue;
		}
		/* In the way.  Has it moved since we last looked? */
		if (!now)
			now = __lzchan_now_ns();
		/* Its clock restarts when it moves on (forward only: a
		 * position that swings back and forth, which only a forger
		 * stores, is standing still), and for a new subscriber in
		 * the place. */
		if (pos > ps->seen_pos[i] || !ps->seen_ns[i] ||
		    ps->seen_gen[i] != LZCHAN_STATUS_GEN(st)) {
			ps->seen_pos[i] = pos;
			ps->seen_ns[i] = now;
			ps->seen_gen[i] = LZCHAN_STATUS_GEN(st);
		}
		/* Dead (its lock free, looked at once it stood still for
		 * a while): its place closes, as the module's release()
		 * would close it. */
		if (!ps->dev && now - ps->seen_ns[i] >= PS_LIVENESS_NS &&
		    __ps_place_alive(ch, i) == 0) {
			if (__atomic_compare_exchange_n(&w->status, &st,
					LZCHAN_STATUS(LZCHAN_STATUS_GEN(st), LZCHAN_LANE_CLOSED),
					false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				continue;
		}
		if (ps->policy == LZCHAN_PS_BACKPRESSURE && ps->stall_ns &&
		    now - ps->seen_ns[i] >= ps->stall_ns) {
			if (ps->dev) {
				/* The module's word (our mapping is read-only);
				 * ESRCH: that subscriber has gone meanwhile. */
				struct lzchan_ps_detach d = {
					.size = sizeof(d), .place = i,
					.gen = LZCHAN_STATUS_GEN(st),
				};

				(void)ioctl(ps->fd, LZCHAN_IOC_PS_DETACH, &d);
			} else {
				/* Relaxed: the subscriber's acquire load of its
				 * status orders nothing on it; it compares. */
				__lz_store(&w->detached, LZCHAN_STATUS_GEN(st));
			}
			ps->seen_ns[i] = 0;
			continue;
		}
		if (pos < min)
			min = pos;
	}
	/* One pass: the slowest position of those still attached.  Its
	 * floor, then the scan over (seq_cst: see __ps_join_floor()). */
	__atomic_store_n(&ps->pub->room_floor, min, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ps->pub->scan_seq, ++ps->scan_seq, __ATOMIC_SEQ_CST);
	ps->room_end = min + ps->slot_count;
	__ps_gate(ps);
	if (p >= ps->room_end)
		return false;
	ps->waiting = false;
	return true;
}

static int __ps_tx_check(struct lzchan *ch, struct __lzchan_ps *ps, size_t len)
{
	if (ch->f.role != LZCHAN_PUBLISHER)
		return -EBADF;
	if (ps->reserved)
		return -EBUSY;
	if (len > ps->max_msg)
		return -EMSGSIZE;
	/* The mapping cut (shm) or revoked (dev): the SIGBUS handler
	 * marked the handle. */
	if (__lzchan_cut(&ch->f))
		return ch->lost_err;
	if (ps->policy == LZCHAN_PS_BACKPRESSURE && ps->tail >= ps->room_end &&
	    !__ps_room(ch, ps, ps->tail, false))
		return -EAGAIN;
	return 0;
}

/* Mark the slot of the tail as being written: a reader of the message it
 * held sees its seq change.  The release fence orders this store before
 * the payload's (a store-store barrier): a reader that read any byte we
 * write next, and then (acquire fence) seq, sees WRITING or later. */
static inline __attribute__((always_inline)) struct lzchan_ps_slot *
__ps_begin(struct __lzchan_ps *ps, uint64_t tail)
{
	struct lzchan_ps_slot *s = __ps_slot(ps, tail);

	__lz_store(&s->seq, LZCHAN_PS_WRITING | (tail + 1));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return s;
}

/* Publish the message written in @s at the tail: len, then seq = tail + 1
 * with release (pairs with the reader's acquire load of seq: the payload
 * and len are visible once it reads ready), then the tail with release
 * (pairs with the acquire loads of tail: a reader that sees it sees the
 * seqs below).  Then one load: has a subscriber parked since our last
 * wake?  (Dekker with the parking subscriber's heavy barrier; see the
 * design page.) */
static inline __attribute__((always_inline)) int
__ps_end(struct lzchan *ch, struct __lzchan_ps *ps, struct lzchan_ps_slot *s, uint64_t tail,
	 uint32_t len)
{
	uint64_t next = tail + 1;
	uint32_t sl;

	__lz_store(&s->len, len);
	__lz_store_rel(&s->seq, next);
	__lz_store_rel(&ps->pub->tail, next);
	ps->tail = next;
	/* Store->load: our stores above before the load of sleepers below.
	 * A full fence where the subscribers' heavy barrier (membarrier)
	 * cannot stand in for it; else the compiler's only, and the parking
	 * subscriber's barrier pairs with it (the design page). */
	if (__lzchan_unlikely(ps->fence_each))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* Relaxed: only compared; the barrier above (or the subscriber's
	 * heavy one) orders it after our stores. */
	sl = __lz_load(&ps->wake->sleepers);
	if (__lzchan_unlikely(sl != ps->sleepers_seen)) {
		ps->sleepers_seen = sl;
		__ps_wake_all(ps, true);
	}
	/* A cut (or a revocation) met by any access above: the message
	 * reached nobody. */
	return __lzchan_cut(&ch->f) ? ch->lost_err : 0;
}

/* One message written at the tail and published. */
static inline __attribute__((always_inline)) int
__ps_put(struct lzchan *ch, struct __lzchan_ps *ps, const void *buf, size_t len)
{
	uint64_t tail = ps->tail;	/* loaded once: the copy may alias */
	struct lzchan_ps_slot *s = __ps_begin(ps, tail);

	if (len <= LZCHAN_INLINE_MAX)
		__lzchan_copy(s + 1, buf, len);	/* as the channels' inline send */
	else
		memcpy(s + 1, buf, len);
	return __ps_end(ch, ps, s, tail, (uint32_t)len);
}

static __attribute__((noinline)) int __ps_send_slow(struct lzchan *ch, struct __lzchan_ps *ps,
						    const void *buf, size_t len)
{
	int ret = __ps_tx_check(ch, ps, len);

	return ret ? ret : __ps_put(ch, ps, buf, len);
}

/* The gate (a position below it, a length that fits, no cut), else the
 * checks one by one. */
int __lzchan_ps_send(struct lzchan *ch, const void *buf, size_t len)
{
	struct __lzchan_ps *ps = ch->ps;

	if (__lzchan_unlikely(len > ps->max_msg || ps->tail >= ps->gate || __lzchan_cut(&ch->f)))
		return __ps_send_slow(ch, ps, buf, len);
	return __ps_put(ch, ps, buf, len);
}

int __lzchan_ps_reserve(struct lzchan *ch, size_t len, void **buf)
{
	struct __lzchan_ps *ps = ch->ps;
	int ret = __ps_tx_check(ch, ps, len);

	if (ret)
		return ret;
	if (!buf)
		return -EINVAL;
	*buf = __ps_begin(ps, ps->tail) + 1;
	ps->reserved = true;
	ps->resv_len = (uint32_t)len;
	__ps_gate(ps);
	return 0;
}

int __lzchan_ps_commit(struct lzchan *ch, size_t len)
{
	struct __lzchan_ps *ps = ch->ps;

	if (ch->f.role != LZCHAN_PUBLISHER)
		return -EBADF;
	if (!ps->reserved || len > ps->resv_len)
		return -EINVAL;
	ps->reserved = false;
	__ps_gate(ps);
	return __ps_end(ch, ps, __ps_slot(ps, ps->tail), ps->tail, (uint32_t)len);
}

/* Wait until every attached subscriber has published a position at our
 * tail (a subscriber publishes it whole when it catches up). */
/* dev, overwrite (the places are not ours to map): the slowest attached
 * subscriber's position as the module describes it, or our tail. */
static int __ps_slowest_dev(struct __lzchan_ps *ps, uint64_t *slowest)
{
	struct lzchan_ps_sub_stat st[64];
	struct lzchan_ps_subs q = { .size = sizeof(q), .entry_size = sizeof(st[0]) };
	uint32_t i;

	*slowest = ps->tail;
	for (q.start = 0; q.start < ps->max_subs; q.start += q.count) {
		q.count = 64;
		q.entries = (uintptr_t)st;
		if (ioctl(ps->fd, LZCHAN_IOC_PS_SUBS, &q) < 0)
			return __lzchan_dev_err(errno);
		if (!q.count)
			break;
		for (i = 0; i < q.count; i++)
			if (st[i].state == LZCHAN_LANE_ATTACHED &&
			    !(st[i].flags & LZCHAN_PS_SUB_DETACHED) && st[i].pos < *slowest)
				*slowest = st[i].pos;
	}
	return 0;
}

int __lzchan_ps_flush(struct lzchan *ch, int64_t timeout_ns)
{
	struct __lzchan_ps *ps = ch->ps;
	uint64_t start = __lzchan_now_ns(), now = start, slowest;
	int r;

	if (ch->f.role != LZCHAN_PUBLISHER)
		return -EBADF;
	for (;;) {
		/* dev overwrite asks the module each time (its lock per
		 * place): a slower pace there. */
		struct timespec ts = { .tv_nsec = ps->subs ? 20000 : 1000000 };

		if (__lzchan_guard_lost(ch->guard))
			return ch->lost_err;
		r = ps->subs ? 0 : __ps_slowest_dev(ps, &slowest);
		if (r)
			return r;
		if (ps->subs)
			slowest = __ps_slowest(ps, UINT32_MAX, ps->tail);
		if (slowest >= ps->tail) {
			ps->waiting = false;
			return 0;
		}
		/* The dead are let go (and, with back-pressure, the
		 * stalled), as a full ring lets them go: every place
		 * behind the tail counts as in the way.  (dev overwrite:
		 * the module lets the dead go; nobody is detached.) */
		if (ps->subs)
			(void)__ps_room(ch, ps, ps->tail + ps->slot_count - 1, true);
		if (timeout_ns >= 0 && now - start >= (uint64_t)timeout_ns)
			return -ETIMEDOUT;
		if (__lzchan_woken(ch))
			return -EINTR;
		if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
			return -EINTR;
		now = __lzchan_now_ns();
	}
}

/* ---- subscribing ---- */

/* Publish our position: when @whole, or when publish_every positions
 * went by since the last.  Release: pairs with the publisher's loads of
 * pos (back-pressure): our reads of the slots below it are done. */
static void __ps_publish_pos(struct __lzchan_ps *ps, bool whole)
{
	if (ps->pos != ps->published && (whole || ps->pos - ps->published >= ps->publish_every)) {
		__lz_store_rel(&ps->me->pos, ps->pos);
		ps->published = ps->pos;
	}
}

/* We were lapped at position @q, whose slot says position @at was written
 * there (the publisher is at least that far): go on from the oldest
 * message still there and count what went by, for lzchan_lost() to say
 * and -EOVERFLOW to announce.  Never backwards, whatever the words say. */
static int __ps_lapped(struct __lzchan_ps *ps, uint64_t q, uint64_t at)
{
	/* Pairs with the publisher's release store of tail. */
	uint64_t t = __lz_load_acq(&ps->pub->tail), next = q + 1, lost;

	/* The tail is believed no further than the slot's evidence allows
	 * (the publisher is less than a ring past what it wrote there). */
	if (t > at + ps->slot_count)
		t = at + ps->slot_count;
	if (t >= ps->slot_count && t - ps->slot_count > next)
		next = t - ps->slot_count;
	if (at >= ps->slot_count && at - ps->slot_count + 1 > next)
		next = at - ps->slot_count + 1;
	/* Views still held, [pos, q), were overwritten before q was (the
	 * publisher writes in order): lost too, and released (their
	 * lzchan_release_check() says -ESTALE, counted here). */
	lost = next - ps->pos;
	ps->lost += lost;
	ps->lost_total += lost;
	ps->pos = ps->peek = next;
	/* Relaxed: statistics. */
	__lz_store(&ps->me->lost, ps->lost_total);
	__ps_publish_pos(ps, true);
	return -EOVERFLOW;
}

/* How the publisher whose end is reported left. */
static int __ps_cause(struct lzchan *ch, struct __lzchan_ps *ps, uint64_t st)
{
	if (LZCHAN_STATUS_STATE(st) != LZCHAN_RX_GONE)
		return LZCHAN_END_LOST;		/* died: its lock was free */
	(void)ch;
	/* Relaxed: ordered by the acquire of GONE. */
	return __lz_load(&ps->hdr->pub_bye) == LZCHAN_STATUS_GEN(st) ? LZCHAN_END_CLOSED :
									 LZCHAN_END_LOST;
}

/*
 * Nothing ready at our position @q (slot seq @seq read first): the
 * publisher has not written it yet -- then -EAGAIN, or -EPIPE once when a
 * publisher that published nothing more has gone -- or the words lie: a
 * tail past @q with nothing at @q (a forgery on shm, or a publisher that
 * died mid-write whose successor moved on) is a loss, as a lap is.
 */
static int __ps_empty(struct lzchan *ch, struct __lzchan_ps *ps, uint64_t q)
{
	struct lzchan_ps_slot *s = __ps_slot(ps, q);
	uint64_t st, t, seq, now;

	if (__lzchan_guard_lost(ch->guard))
		return ch->lost_err;
	/* Pairs with the publisher's release store of pub_status (its
	 * close), which follows its last tail. */
	st = __lz_load_acq(&ps->hdr->pub_status);
	/* Pairs with the release store of tail: the seqs below are
	 * visible. */
	t = __lz_load_acq(&ps->pub->tail);
	seq = __lz_load_acq(&s->seq);
	if (seq == q + 1)
		return 1;			/* it came meanwhile: look again */
	if ((seq & ~LZCHAN_PS_WRITING) > q + 1)
		return __ps_lapped(ps, q, (seq & ~LZCHAN_PS_WRITING) - 1);
	/* Far ahead of every message there is: only a forgery (shm) put us
	 * there (a lap never goes past the slot's own position).  Back to
	 * the publisher's tail. */
	if (q > t + ps->slot_count) {
		ps->pos = ps->peek = ps->published = t;
		__lz_store_rel(&ps->me->pos, t);	/* as __ps_publish_pos() */
		return -EAGAIN;
	}
	__ps_publish_pos(ps, ps->peek == ps->pos);
	if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_NONE || st == ps->pub_st)
		return -EAGAIN;
	if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_ATTACHED) {
		/* The module says GONE when the publisher's file goes. */
		if (ps->dev)
			return -EAGAIN;
		/* shm: a publisher that died leaves ATTACHED; its lock tells. */
		now = __lzchan_now_ns();
		if (now - ps->pub_look_ns < PS_LIVENESS_NS)
			return -EAGAIN;
		ps->pub_look_ns = now;
		if (__ps_pub_alive(ch) != 0)
			return -EAGAIN;
		/* It died.  Anything it published after our loads?
		 * Acquire: pairs with its release store of tail. */
		if (__lz_load_acq(&ps->pub->tail) > q)
			return 1;
	} else if (!ps->dev && __ps_pub_alive(ch) == 1) {
		return -EAGAIN;		/* GONE, lock held: its close is under way, or a lie */
	}
	ps->pub_st = st;
	ps->end_cause = __ps_cause(ch, ps, st);
	return -EPIPE;
}

/* The message at our peek, in place: 1 (and @*slot, @*len), or what
 * __ps_empty() says, or -EBADMSG for a length over the slot (the slot is
 * skipped). */
static int __ps_look(struct lzchan *ch, struct __lzchan_ps *ps,
		     const struct lzchan_ps_slot **slot, uint32_t *len)
{
	for (;;) {
		uint64_t q = ps->peek;
		const struct lzchan_ps_slot *s = __ps_slot(ps, q);
		int r;

		/* Acquire: pairs with the publisher's release store of seq. */
		if (__lz_load_acq(&s->seq) == q + 1) {
			/* Relaxed, read once, bounded; and the seq read again
			 * (after an acquire fence) so that it is this
			 * message's length, not a later one's. */
			uint32_t l = __lz_load(&s->len);

			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__lz_load(&s->seq) != q + 1)
				continue;		/* overwritten: classify */
			if (l > ps->max_msg) {
				ps->peek = q + 1;
				if (ps->pos == q)
					ps->pos = q + 1;
				return -EBADMSG;
			}
			*slot = s;
			*len = l;
			return 1;
		}
		r = __ps_empty(ch, ps, q);
		if (r != 1)
			return r;
	}
}

/* Was the message at position @q still there after we read it?  Acquire
 * fence: our reads of its bytes come before the load of seq, so a write
 * of the publisher's we read any of shows as a changed seq (it stored
 * WRITING before them, with a release fence). */
static bool __ps_intact(const struct lzchan_ps_slot *s, uint64_t q)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __lz_load(&s->seq) == q + 1;
}

static int __ps_rx_check(struct lzchan *ch, struct __lzchan_ps *ps)
{
	if (ch->f.role != LZCHAN_SUBSCRIBER)
		return -EBADF;
	/* Relaxed: the publisher's store of detached is only compared (a
	 * stale "not detached" costs one more call). */
	if (__lz_load(&ps->me->detached) == ps->gen)
		return -ECONNRESET;
	return 0;
}

int __lzchan_ps_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane)
{
	struct __lzchan_ps *ps = ch->ps;
	const struct lzchan_ps_slot *s;
	uint32_t len;
	int r = __ps_rx_check(ch, ps);

	if (r)
		return r;
	for (;;) {
		uint64_t q = ps->peek;

		r = __ps_look(ch, ps, &s, &len);
		if (r != 1)
			return r;
		if (len > cap)
			return -EMSGSIZE;
		memcpy(buf, s + 1, len);
		if (!__ps_intact(s, q)) {
			r = __ps_empty(ch, ps, q);	/* the lap, counted */
			if (r != 1)
				return r;
			continue;
		}
		if (__lzchan_cut(&ch->f))
			return ch->lost_err;
		/* Taken and released, with every view before it. */
		ps->pos = ps->peek = q + 1;
		__ps_publish_pos(ps, false);
		if (lane)
			*lane = 0;
		return (int)len;
	}
}

static void __ps_fill(struct lzchan_msg *m, const struct lzchan_ps_slot *s, uint32_t len,
		      uint64_t end)
{
	m->data = s + 1;
	m->len = len;
	m->lane = 0;
	m->__end = (uint32_t)end;
	m->__gen = (uint32_t)(end >> 32);
}

int __lzchan_ps_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n)
{
	struct __lzchan_ps *ps = ch->ps;
	const struct lzchan_ps_slot *s;
	unsigned int k;
	uint32_t len;
	int r = __ps_rx_check(ch, ps);

	if (r)
		return r;
	for (k = 0; k < n; k++) {
		/* After the first view, only what is ready: anything else
		 * (an end, a lap, a forged length) is the next call's to
		 * report, not swallowed behind a count of views. */
		if (k) {
			const struct lzchan_ps_slot *h = __ps_slot(ps, ps->peek);

			/* Acquire: pairs with the release store of seq. */
			if (__lz_load_acq(&h->seq) != ps->peek + 1)
				break;
			len = __lz_load(&h->len);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__lz_load(&h->seq) != ps->peek + 1 || len > ps->max_msg)
				break;
			s = h;
		} else {
			r = __ps_look(ch, ps, &s, &len);
			if (r != 1)
				return r;
		}
		__ps_fill(&m[k], s, len, ps->peek + 1);
		ps->peek++;
	}
	return (int)k;
}

int __lzchan_ps_peek(struct lzchan *ch, struct lzchan_msg *m)
{
	int r = __lzchan_ps_recv_batch(ch, m, 1);

	return r > 0 ? 0 : r;
}

/* The position a view of ours ends at, if it is one still held: between
 * our first unreleased position and the next to hand out. */
static bool __ps_view_end(const struct __lzchan_ps *ps, const struct lzchan_msg *m,
			  uint64_t *end)
{
	*end = (uint64_t)m->__gen << 32 | m->__end;
	return m->lane == 0 && *end > ps->pos && *end <= ps->peek;
}

int __lzchan_ps_release_check(struct lzchan *ch, const struct lzchan_msg *m)
{
	struct __lzchan_ps *ps = ch->ps;
	uint64_t end, p, stale = 0;

	if (ch->f.role != LZCHAN_SUBSCRIBER)
		return -EBADF;
	if (!m)
		return -EINVAL;
	if (!__ps_view_end(ps, m, &end))
		return -ESTALE;		/* released already, or lost to a lap */
	/* Every view it releases, [pos, end): the publisher overwrites in
	 * order, so the stale ones are those before the first intact one,
	 * and the oldest intact means all are. */
	for (p = ps->pos; p < end && !__ps_intact(__ps_slot(ps, p), p); p++)
		stale++;
	if (__lzchan_cut(&ch->f))
		stale = end - ps->pos;	/* read from the replacement's zeros */
	ps->pos = end;
	__ps_publish_pos(ps, ps->pos == ps->peek);
	if (!stale)
		return 0;
	/* Overwritten while held: what was read of them is not to be
	 * trusted, and they count as lost. */
	ps->lost += stale;
	ps->lost_total += stale;
	__lz_store(&ps->me->lost, ps->lost_total);	/* relaxed: statistics */
	return -ESTALE;
}

void __lzchan_ps_release(struct lzchan *ch, const struct lzchan_msg *m)
{
	struct __lzchan_ps *ps = ch->ps;
	uint64_t end;

	if (ch->f.role != LZCHAN_SUBSCRIBER || !m || !__ps_view_end(ps, m, &end))
		return;
	ps->pos = end;
	__ps_publish_pos(ps, ps->pos == ps->peek);
}

int __lzchan_ps_lost(struct lzchan *ch, uint64_t *lost)
{
	struct __lzchan_ps *ps = ch->ps;

	if (ch->f.role != LZCHAN_SUBSCRIBER)
		return -EBADF;
	if (!lost)
		return -EINVAL;
	*lost = ps->lost;
	ps->lost = 0;
	return 0;
}

int __lzchan_ps_end_cause(struct lzchan *ch, uint32_t lane)
{
	if (lane != 0 && lane != LZCHAN_LANE_NONE)
		return -EINVAL;
	if (ch->f.role != LZCHAN_SUBSCRIBER)
		return -EBADF;
	return ch->ps->end_cause;
}

/* dev: sleep on our eventfd for at most @ns (UINT64_MAX: no limit), then
 * empty it: what it counted is why we look again. */
static int __ps_sleep_dev(struct __lzchan_ps *ps, uint64_t ns)
{
	struct pollfd p = { .fd = ps->evfd, .events = POLLIN };
	uint64_t v;
	int ms = ns >= (uint64_t)INT_MAX * 1000000ULL ? INT_MAX : (int)((ns + 999999) / 1000000);

	if (poll(&p, 1, ms) < 0)
		return -errno;
	(void)!read(ps->evfd, &v, sizeof(v));
	return 0;
}

/*
 * Wait for a message.  Parking: sample the futex word, announce ourselves
 * (sleepers, seq_cst), publish our position whole, and issue the heavy
 * barrier; then look once more, and sleep only if nothing came.  A
 * publisher that published after our barrier sees sleepers moved and wakes
 * us; one that published before it is seen by our look (the design page).
 * On shm a sleep is never longer than PS_BLIND_SLEEP_NS: a publisher that
 * dies wakes nobody.
 */
int __lzchan_ps_recv_wait(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane,
			  int64_t timeout_ns)
{
	struct __lzchan_ps *ps = ch->ps;
	uint64_t now = __lzchan_now_ns(), deadline, spin_end;
	int r;

	deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;
	spin_end = now + ch->spin_ns;
	for (;;) {
		struct timespec ts;
		uint64_t ns;
		int degraded;

		r = __lzchan_ps_recv(ch, buf, cap, lane);
		if (r != -EAGAIN)
			return r;
		if (__lzchan_woken(ch))
			return -EINTR;
		now = __lzchan_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (now < spin_end) {
			__lz_cpu_relax();
			continue;
		}
		if (ps->dev) {
			/* The module marks us parked and bumps sleepers,
			 * fully ordered (pairs as below). */
			if (ioctl(ps->fd, LZCHAN_IOC_PS_PARK) < 0)
				return __lzchan_dev_err(errno);
		} else {
			/* Acquire: pairs with the publisher's seq_cst
			 * increment in __ps_wake_all(). */
			ps->wake_seen = __lz_load_acq(&ps->wake->wake);
			/* Pairs with the publisher's load of sleepers after
			 * its publish (__ps_end()). */
			__atomic_fetch_add(&ps->wake->sleepers, 1, __ATOMIC_SEQ_CST);
		}
		__ps_publish_pos(ps, ps->peek == ps->pos);
		degraded = __lzchan_heavy_barrier(ch);
		r = __lzchan_ps_recv(ch, buf, cap, lane);
		if (r != -EAGAIN)
			return r;
		ns = deadline - now;
		if (ps->dev) {
			/* The module signals us for a wake, a detach and the
			 * publisher's departure: no blind sleep. */
			r = __ps_sleep_dev(ps, degraded && ns > PS_DEGRADED_SLEEP_NS ?
						  PS_DEGRADED_SLEEP_NS : ns);
			if (r == -EINTR && __lzchan_woken(ch))
				return -EINTR;
			if (r && r != -EINTR)
				return r;	/* our eventfd is broken: no spin */
			spin_end = 0;
			continue;
		}
		if (ns > (degraded ? PS_DEGRADED_SLEEP_NS : PS_BLIND_SLEEP_NS))
			ns = degraded ? PS_DEGRADED_SLEEP_NS : PS_BLIND_SLEEP_NS;
		ts.tv_sec = ns / 1000000000ULL;
		ts.tv_nsec = ns % 1000000000ULL;
		if (syscall(SYS_futex, &ps->wake->wake, FUTEX_WAIT, ps->wake_seen, &ts,
			    NULL, 0) < 0 && errno == EINTR && __lzchan_woken(ch))
			return -EINTR;
		spin_end = 0;
	}
}

/* Make a subscriber blocked in lzchan_recv_wait() look (lzchan_wake()). */
void __lzchan_ps_kick(struct lzchan *ch)
{
	uint64_t one = 1;
	int kick;

	if (ch->f.role != LZCHAN_SUBSCRIBER)
		return;
	if (ch->ps->dev) {
		(void)!write(ch->ps->evfd, &one, sizeof(one));	/* our own eventfd */
		return;
	}
	/* Acquire: pairs with the release store that publishes it, once
	 * the event fd is whole (__ps_event_setup()). */
	kick = __atomic_load_n(&ch->ps->kick, __ATOMIC_ACQUIRE);
	if (kick >= 0)
		(void)!write(kick, &one, sizeof(one));	/* our event fd */
	__ps_wake_all(ch->ps, false);	/* a waiter of ours in recv_wait */
}

/* ---- the event fd (lzchan_event_fd(), lzchan_arm()) ---- */

/* shm: make our event fd (see struct __lzchan_ps).  The publisher's wake
 * touches the file's times only while watchers counts someone: we count
 * ourselves before our first arm. */
static int __ps_event_setup(struct __lzchan_ps *ps)
{
	struct epoll_event e = { .events = EPOLLIN };
	int ep, ino, kick, tfd, r;
	char path[64];

	ep = epoll_create1(EPOLL_CLOEXEC);
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ep < 0 || ino < 0 || kick < 0 || tfd < 0)
		goto fail;
	/* Our own open file, by its /proc name: the channel's name may
	 * have been unlinked or replaced since we opened it. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ps->fd);
	if (inotify_add_watch(ino, path, IN_ATTRIB | IN_CLOSE_WRITE | IN_MODIFY) < 0)
		goto fail;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, ino, &e) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, kick, &e) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &e) < 0)
		goto fail;
	/* Relaxed: published to the publisher by our arm's seq_cst
	 * increment of sleepers, which its wake synchronises with. */
	__atomic_fetch_add(&ps->wake->watchers, 1, __ATOMIC_RELAXED);
	ps->ep = ep;
	ps->ino = ino;
	ps->tfd = tfd;
	/* Release: lzchan_wake() from another thread loads it (acquire)
	 * and writes it only once it is whole. */
	__atomic_store_n(&ps->kick, kick, __ATOMIC_RELEASE);
	return 0;
fail:
	r = -errno;
	if (ep >= 0)
		close(ep);
	if (ino >= 0)
		close(ino);
	if (kick >= 0)
		close(kick);
	if (tfd >= 0)
		close(tfd);
	return r;
}

int __lzchan_ps_event_fd(struct lzchan *ch)
{
	struct __lzchan_ps *ps = ch->ps;
	int r;

	if (ch->f.role != LZCHAN_SUBSCRIBER)
		return -EBADF;
	if (ps->dev)
		return ps->evfd;	/* the module signals it */
	if (ps->ep < 0) {
		r = __ps_event_setup(ps);
		if (r)
			return r;
	}
	return ps->ep;
}

/* Empty what made our event fd readable. */
static void __ps_event_drain(struct __lzchan_ps *ps)
{
	char buf[4096] __attribute__((aligned(8)));
	uint64_t v;

	if (ps->dev) {
		(void)!read(ps->evfd, &v, sizeof(v));
		return;
	}
	/* Two reads at most: a peer touching the file without end makes
	 * us look often, never spin here. */
	for (int round = 0; round < 2; round++) {
		ssize_t n = read(ps->ino, buf, sizeof(buf)), o;

		if (n <= 0)
			break;
		/* The kernel's records, whole (each a header and its name). */
		for (o = 0; o + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const void *)(buf + o);

			if (ev->mask & IN_CLOSE_WRITE)
				ps->close_looks = PS_CLOSE_LOOKS;
			o += sizeof(*ev) + ev->len;
		}
	}
	(void)!read(ps->kick, &v, sizeof(v));
	(void)!read(ps->tfd, &v, sizeof(v));
}

/* Would our next call say something (a message, a lap, a detach, an
 * end)?  Looks only: what it finds is the next call's to report. */
static bool __ps_pending(struct lzchan *ch, struct __lzchan_ps *ps)
{
	uint64_t q = ps->peek, seq, st;

	if (__lzchan_guard_lost(ch->guard) || __lzchan_cut(&ch->f))
		return true;
	/* Relaxed: only compared (as __ps_rx_check()). */
	if (__lz_load(&ps->me->detached) == ps->gen)
		return true;
	/* A lzchan_wake() not yet seen (the arm drained its byte): taken
	 * here, and answered as a wakeup, once. */
	if (__lzchan_woken(ch))
		return true;
	/* Acquire: pairs with the publisher's release store of seq.
	 * Ready, or written past us (a lap); a write of our position in
	 * progress is not yet, and its publish sees us parked. */
	seq = __lz_load_acq(&__ps_slot(ps, q)->seq);
	if (seq == q + 1 || (seq & ~LZCHAN_PS_WRITING) > q + 1)
		return true;
	/* Pairs with the release store of GONE: an end not yet told. */
	st = __lz_load_acq(&ps->hdr->pub_status);
	return LZCHAN_STATUS_STATE(st) == LZCHAN_RX_GONE && st != ps->pub_st;
}

/*
 * Arm: as lzchan_recv_wait() parks (the module's PS_PARK, or our count
 * in sleepers), publish our position whole, the heavy barrier, then look
 * once more: -EAGAIN if there is something to receive.  A publish after
 * our barrier sees sleepers moved and wakes: the module signals our
 * eventfd, on shm the file's times move.  Without membarrier the
 * publisher may miss us: -ENOSYS, as a channel's arm.
 */
int __lzchan_ps_arm(struct lzchan *ch)
{
	struct __lzchan_ps *ps = ch->ps;
	struct itimerspec blind = { .it_value.tv_sec = PS_EVENT_SWEEP_S };
	int r;

	if (ch->f.role != LZCHAN_SUBSCRIBER)
		return -EBADF;
	if (!ps->dev && ps->ep < 0) {
		r = __ps_event_setup(ps);
		if (r)
			return r;
	}
	__ps_event_drain(ps);
	if (ps->dev) {
		/* Fully ordered in the module (pairs as in recv_wait). */
		if (ioctl(ps->fd, LZCHAN_IOC_PS_PARK) < 0)
			return __lzchan_dev_err(errno);
	} else {
		/* Pairs with the publisher's load of sleepers after its
		 * publish (__ps_end()). */
		__atomic_fetch_add(&ps->wake->sleepers, 1, __ATOMIC_SEQ_CST);
	}
	__ps_publish_pos(ps, ps->peek == ps->pos);
	if (__lzchan_heavy_barrier(ch))
		return -ENOSYS;
	if (__ps_pending(ch, ps))
		return -EAGAIN;
	/* shm: a publisher that dies wakes nobody but by its file's close,
	 * which comes just before its lock frees: after a close, look
	 * again every millisecond a few times, else once a second (the
	 * next receive looks at its lock). */
	if (ps->dev)
		return 0;
	if (ps->close_looks) {
		ps->close_looks--;
		blind.it_value.tv_sec = 0;
		blind.it_value.tv_nsec = PS_LIVENESS_NS + 100000;
	}
	if (timerfd_settime(ps->tfd, 0, &blind, NULL) < 0)
		return -errno;
	return 0;
}

/* ---- describing (lzchan_stat(), lzchan_stat_subscribers()) ---- */

static int __ps_pread(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t r = pread(fd, buf, len, (off_t)off);

	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EPROTO;	/* cut short: no channel */
}

/*
 * Describe the pub/sub file @fd (header @h, @size bytes) without mapping
 * it: read, so that a file cut short is a short read, not SIGBUS.  @ss:
 * up to @n subscriber places too.  Returns max_subscribers, or -EPROTO (not
 * a valid pub/sub file), -errno.
 */
int __lzchan_ps_describe(int fd, const struct __lzchan_shm_file *h, uint64_t size,
			 struct lzchan_chan_stat *out, struct lzchan_sub_stat *ss, unsigned int n)
{
	uint64_t page = sysconf(_SC_PAGESIZE);
	struct lzchan_ps_layout want;
	struct lzchan_ps_hdr hdr;
	struct lzchan_ps_pub pub;
	struct lzchan_ps_wake wake;
	uint32_t i;
	int ret;

	if (h->version != SHM_PS_FILE_VERSION || h->page_size != page ||
	    __lzchan_ps_geom_check(h->slot_size, h->slot_count, h->max_subscribers, h->policy))
		return -EPROTO;
	__lzchan_ps_layout(&want, h->slot_size, h->slot_count, h->max_subscribers, page);
	if (memcmp(&want, &h->ps, sizeof(want)) || size < __lzchan_ps_file_size(&want, page))
		return -EPROTO;
	ret = __ps_pread(fd, &hdr, sizeof(hdr), page + want.info_off);
	if (!ret)
		ret = __ps_pread(fd, &pub, sizeof(pub), page + want.pub_off);
	if (!ret)
		ret = __ps_pread(fd, &wake, sizeof(wake), page + want.wake_off);
	if (ret)
		return ret;
	out->slot_size = h->slot_size;
	out->slot_count = h->slot_count;
	out->max_senders = 1;
	out->numa_node = h->numa_node;
	out->flags |= LZCHAN_STAT_PUBSUB;
	out->messages = pub.tail;
	out->sender_attaches = LZCHAN_STATUS_GEN(hdr.pub_status);
	out->wake_requests = out->wakeups = wake.wake;
	ret = __lzchan_locked(fd, LOCK_BASE);
	if (ret < 0)
		return ret;
	out->senders = ret;
	for (i = 0; i < h->max_subscribers; i++) {
		struct lzchan_ps_sub sub;
		int alive;

		alive = __lzchan_locked(fd, LOCK_BASE + 1 + i);
		if (alive < 0)
			return alive;
		out->receiver += alive;
		if (!ss || i >= n)
			continue;
		ret = __ps_pread(fd, &sub, sizeof(sub), page + want.subs_off +
				 (uint64_t)i * want.sub_stride);
		if (ret)
			return ret;
		memset(&ss[i], 0, sizeof(ss[i]));
		ss[i].state = LZCHAN_STATUS_STATE(sub.status);
		ss[i].gen = LZCHAN_STATUS_GEN(sub.status);
		ss[i].alive = alive;
		ss[i].detached = ss[i].gen && sub.detached == ss[i].gen;
		ss[i].pos = sub.pos;
		ss[i].lag = pub.tail > sub.pos ? pub.tail - sub.pos : 0;
		ss[i].lost = sub.lost;
	}
	return (int)h->max_subscribers;
}

/* ---- closing ---- */

void __lzchan_ps_close(struct lzchan *ch, bool clean)
{
	struct __lzchan_ps *ps = ch->ps;

	if (!ps)
		return;
	if (ps->dev) {
		/* The module ends the publisher's streams (and records a
		 * clean close: LZCHAN_IOC_BYE) and closes a place when our
		 * file goes; a subscriber's last position is its lag's. */
		if (ch->f.role == LZCHAN_SUBSCRIBER && ps->me)
			__ps_publish_pos(ps, true);
	} else if (ch->claimed && ps->hdr && !__lzchan_guard_lost(ch->guard)) {
		if (ch->f.role == LZCHAN_PUBLISHER) {
			if (clean)
				__lz_store(&ps->hdr->pub_bye, ps->gen);	/* published by GONE */
			/* Pairs with the subscribers' acquire loads of
			 * pub_status: our last tail is seen before GONE. */
			__lz_store_rel(&ps->hdr->pub_status,
				       LZCHAN_STATUS(ps->gen, LZCHAN_RX_GONE));
			/* Subscribers believe GONE only once our lock is
			 * free: free it, then wake every parked one. */
			__lzchan_unlock(ch->fd, LOCK_BASE);
			__ps_wake_all(ps, true);
		} else {
			__ps_publish_pos(ps, true);
			/* Release: our reads are done before the place is
			 * seen closed (back-pressure stops waiting on us). */
			__lz_store_rel(&ps->me->status,
				       LZCHAN_STATUS(ps->gen, LZCHAN_LANE_CLOSED));
			__lzchan_unlock(ch->fd, LOCK_BASE + 1 + ps->place);
		}
	}
	if (ps->ep >= 0) {
		/* Relaxed: a count the publisher only tests. */
		if (!__lzchan_guard_lost(ch->guard))
			__atomic_fetch_sub(&ps->wake->watchers, 1, __ATOMIC_RELAXED);
		close(ps->ep);
		close(ps->ino);
		close(ps->kick);
		close(ps->tfd);
	}
	free(ps->seen_pos);
	free(ps->seen_ns);
	free(ps->seen_gen);
	free(ps);
	ch->ps = NULL;
}
