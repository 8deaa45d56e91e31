/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * liblzchan's fast path, inline: included by <lzchan.h>, never on its own.
 *
 * lzchan_send(), lzchan_reserve()/lzchan_commit(), lzchan_recv(),
 * lzchan_peek(), lzchan_release() and lzchan_recv_batch() are defined here
 * for the common case -- a message of one slot -- and call the library for
 * everything else.  They read and write the start of every handle, struct
 * __lzchan_fast, which is private to liblzchan but part of its ABI: build
 * and run against the same library version; do not touch it.  Define
 * LZCHAN_NO_INLINE before including <lzchan.h> to call the library for
 * everything.
 *
 * The receive's invariants, numbered as in Documentation/libchan/design.rst
 * ("The receive: turns and spans"), which has the ordering argument:
 *
 *  1. Turns: the active lanes are served round robin, a lane's turn at
 *     most TURN_SLOTS (64) messages, counted by the library (turn_taken)
 *     from its spans and its general look.
 *  2. The span is what the inline receives may take without the library:
 *     while span > 0, cur is the lane whose turn it is, span_at the slot
 *     of cur's peek, and span at most the rest of the turn, the slots to
 *     the ring's end and those until the head's next publication.  Only
 *     the inline receives and the library between a settle and a grant
 *     move cur's peek.
 *  3. Ready is the one test: the slot's seq (acquire) equals its position
 *     + 1; len is then read once and bounded (rx_max for a copy,
 *     rx_payload for a view).  A take says __LZCHAN_TAKE_NONE (nothing
 *     ready) or __LZCHAN_TAKE_SLOW (the library's) when it refuses.
 *  4. Settle, then grant: each receiving library call first counts what
 *     the span gave (by how far cur's peek moved since the grant), then
 *     grants again; with nothing granted cur is the handle's own no_turn
 *     lane, which no view matches (cur is never NULL).
 *  5. The general look (__lz_rx_any() in the library) is the receive
 *     that takes everything: pads, longer messages, ends, broken lanes,
 *     lanes that woke.  It runs every TURNS_PER_LOOK turns and for every
 *     message the span does not take.  The bell (one bit per lane, which
 *     a sender toggles when its lane is asleep: the receiver stopped
 *     polling it) and the departures count are read at each grant.
 *  6. A cut (shm; on dev, a revocation of the handle's endpoint): the
 *     SIGBUS handler zeroes span; every take counts the span down after
 *     its accesses, so one that met the cut returns -EIO (the library's
 *     calls say the handle's own error: -EPIPE on dev).
 *  7. Quick "empty" verdicts (quiet) are the only other thing the span
 *     carries: given inline only while the library's own would be.
 *  8. Head publication is lazy: when due at every settle, quick verdict
 *     and general look; whole when the receiver caught up.  The inline
 *     release only moves the head.
 *
 * Send: the gate is the one test before a send without the library:
 * tx_max (the longest one-slot payload), tx_room (positions it may fill:
 * the room by the cached head, 0 while the library must act) and attn as
 * the library last saw it (attn_seen).  Through it, one slot is written
 * and published with one release store, and attn compared once after;
 * the library's own send runs this same code behind the gate it computes
 * again (__lzchan_fast_room_rxl(), __lzchan_fast_put()); everything else goes
 * the library's general way.
 */
#ifndef LZCHAN_FAST_H
#define LZCHAN_FAST_H

#ifndef LZCHAN_H
#error "include <lzchan.h>, not <lzchan_fast.h>"
#endif

/* ---- the handle prefix ----
 * A layout change bumps the soname (it did, to liblzchan.so.1, when the
 * send's gates came in; within the unreleased 0.3 series fields were
 * added -- attn_seen, cut, the span -- so build and run against the same
 * 0.3 library). */
#define __lzchan_likely(x)	(__builtin_expect(!!(x), 1) != 0)
#define __lzchan_unlikely(x)	(__builtin_expect(!!(x), 0) != 0)

struct __lzchan_rxlane {		/* the receiver's view of one lane */
	uint32_t head;		/* first position not released */
	uint32_t peek;		/* next position to hand out (>= head) */
	uint32_t published;	/* last head stored in rxl->head */
	uint32_t gen;		/* sender generation being read */
	uint32_t state;		/* private state */
	uint32_t idle;		/* empty polls in a row */
	uint32_t sleepy;	/* our copy of rxl->sleepy */
	uint32_t dead;		/* shm: the owner's lock was found free */
	uint64_t seen_status;	/* info->status at the last empty verdict */
	const char *slots;
	struct lzchan_shm_rx_lane *rxl;
	const struct lzchan_shm_lane *info;
};

struct __lzchan_fast {			/* the start of every struct lzchan */
	uint32_t role;			/* LZCHAN_RECEIVER or LZCHAN_SENDER */
	uint32_t slot_size, slot_shift, slot_count, mask, max_senders;
	uint32_t publish_every;
	/* sender */
	uint32_t tail;			/* next position to write */
	uint32_t cached_head;		/* receiver's head as last read */
	uint32_t resv_len;
	uint8_t reserved;		/* between lzchan_reserve and commit */
	uint8_t cont_any;		/* a slot holds payload in its first word
					 * (a message spanned slots, and not all of
					 * them were written over since) */
	uint8_t fence_each_send;	/* no asymmetric barrier available */
	uint8_t armed;			/* receiver: event fd armed */
	uint32_t rung_sleepy;		/* sleepy episode we already rang */
	uint32_t woken_parked;		/* park episode we already woke */
	uint32_t attn_seen;		/* my_rxl->attn as the library last
					 * acted on it (see __lzchan_tx_after) */
	/* The inline send's gate, kept by the library whenever what it
	 * summarises changes: tx_max is the longest payload it takes (0: a
	 * receiver, or a sender that must fence every send); tx_room the
	 * positions it may fill before the library looks again (0 while
	 * anything else needs the library: a reservation of the library's,
	 * a message that spanned slots, a full view of the lane; never past
	 * LZCHAN_STAT_EVERY - 1 positions since the counts were stored),
	 * bit 31 set while an inline reservation is open.  The inline send takes its position
	 * as it tests it, so after a refused test it reads one less (below
	 * 0 from 0) until the library, which it then calls, computes it
	 * again. */
	uint32_t tx_max, tx_room;
	const int *lost;		/* the guard's word, as cut (read by code
					 * built with earlier 0.3 headers) */
	struct lzchan_slot_hdr *resv_slot;	/* an inline reservation's slot */
	char *slots;
	struct lzchan_shm_hdr *hdr;
	struct lzchan_shm_tx *tx;
	struct lzchan_shm_rx_lane *my_rxl;	/* our lane's rx line (read-only) */
	struct lzchan_shm_rx *rx;
	uint64_t stat_msgs, stat_bytes;	/* what tx->msgs/bytes say, kept here */
	/* receiver: the turn (Documentation/libchan/design.rst, "The
	 * receive").  span: how many messages the inline receives may
	 * still take from cur without the library (the rest of its turn,
	 * to the ring's end and the head's next publication); 0 for a
	 * sender, while armed, with no active lane; zeroed by the
	 * library's SIGBUS handler on a cut (shm).  span_at: cur's peek's
	 * slot; the span never runs past the ring's end, so the next is
	 * slot_size on. */
	uint32_t span;
	uint32_t rx_max;		/* longest payload the inline receive copies */
	const char *span_at;
	/* "empty" verdicts the inline receive may give when nothing is
	 * ready at span_at, on the library's behalf: its last look found
	 * nothing, cur is the one lane it polls, and the bell's one word
	 * (bell) and cur's status still read as then (bell_seen,
	 * cur->seen_status).  0 otherwise. */
	uint32_t quiet;
	const uint64_t *bell;
	uint64_t bell_seen;
	struct __lzchan_rxlane *cur;	/* the lane whose turn it is (a
					 * dummy that matches no view when none
					 * is: never NULL in a receiver) ... */
	uint32_t cur_lane;		/* ... and its index (LZCHAN_LANE_NONE) */
	uint32_t nactive, rr, turn_taken;	/* turn_taken: messages of lane
					 * active[rr]'s turn so far */
	uint32_t *active;		/* lanes polled by receive-any */
	struct __lzchan_rxlane *lanes;
	/* both: nonzero once the mapping was cut (shm), stored by the
	 * library's SIGBUS handler; what __lzchan_cut() reads (a word of
	 * the handle's own: one load, where *lost is two) */
	uint32_t cut;
	/* receiver (0 for a sender): its lanes (max_senders), for the
	 * inline release's one bound test; the slot's payload
	 * (slot_size - 8), for the inline peek's */
	uint32_t rx_lanes, rx_payload;
};

/* Copy a small message (n <= LZCHAN_INLINE_MAX) without a call: two
 * overlapping moves of a fixed size, reading and writing only [0, n). */
#define LZCHAN_INLINE_MAX	64
static inline void __lzchan_copy(void *dst, const void *src, size_t n)
{
	char *d = (char *)dst;
	const char *s = (const char *)src;

	if (n >= 32) {
		/* As four moves of 16, so that the last two address from
		 * the end (base + n - 32, - 16) with no arithmetic first. */
		__builtin_memcpy(d, s, 16);
		__builtin_memcpy(d + 16, s + 16, 16);
		__builtin_memcpy(d + n - 32, s + n - 32, 16);
		__builtin_memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 16) {
		__builtin_memcpy(d, s, 16);
		__builtin_memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 8) {
		__builtin_memcpy(d, s, 8);
		__builtin_memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		__builtin_memcpy(d, s, 4);
		__builtin_memcpy(d + n - 4, s + n - 4, 4);
	} else if (n) {
		d[0] = s[0];
		d[n - 1] = s[n - 1];
		if (n == 3)
			d[1] = s[1];
	}
}

/*
 * shm: a peer may cut the channel file short under us.  The library's
 * SIGBUS handler then maps private zeroed memory over the channel and
 * writes this rx_status into it, so the library's send paths, which read
 * it, report the loss (-EIO) instead of a success that reached nobody
 * (and never take the replacement's attn for the receiver's).  A peer
 * forging the value costs only a call: __lzchan_lost() asks the
 * handler's own record.
 */
#define __LZCHAN_STATUS_LOST	LZCHAN_STATUS(0xffffffffU, LZCHAN_RX_GONE)
/* ... and stores this in a sender handle's attn_seen: the replacement's
 * attn reads 0, so the inline send, which compares them, turns to the
 * library (-EIO) right after the access that met the cut. */
#define LZCHAN_ATTN_POISON	0xffffffffU
static inline int __lzchan_cut(const struct __lzchan_fast *f)
{
	/* The handler also marks the handle's own cut word (nobody else
	 * writes it).  Relaxed: stored by the handler on this thread,
	 * during an access before this one in program order; the signal
	 * fence keeps the compiler from hoisting the load above that
	 * access. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return __lzchan_unlikely(__atomic_load_n(&f->cut, __ATOMIC_RELAXED) != 0);
}

/* Inline sends count the lane's bytes; the library counts the messages
 * and publishes both (tx->msgs, tx->bytes): with the send after
 * LZCHAN_STAT_EVERY - 1 inline ones, where the inline gate stops and the
 * library sends (so a lane's published counts lag its sends by less than
 * this), and exact on every other path, when the lane is full, at
 * lzchan_flush() and at close.  (A power of two.) */
#define LZCHAN_STAT_EVERY	256

/* The receiver's (read-only) view of a slot. */
static inline const struct lzchan_slot_hdr *__lzchan_fslot_ro(const struct __lzchan_fast *f,
							      const char *slots, uint32_t pos)
{
	return (const struct lzchan_slot_hdr *)(slots +
						((size_t)(pos & f->mask) << f->slot_shift));
}

/* Ready, the one test (invariant 3): slot @h holds the message of
 * position @pos when its seq is @pos + 1.  Acquire: pairs with the
 * sender's release store of seq, after which the payload and len it wrote
 * are visible.  Every receive path asks it (lzchan_ring.c too). */
static inline int __lzchan_ready(const struct lzchan_slot_hdr *h, uint32_t pos)
{
	return __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE) == pos + 1;
}

/* Publish, the one store that makes a message ready: its len (relaxed:
 * published by what follows), then seq = @pos + 1 with release, pairing
 * with the receiver's acquire in __lzchan_ready(): all the sender wrote
 * before (payload, len, a "not ready" marker after it) is visible once
 * the message is.  Every send path publishes with it. */
static inline void __lzchan_publish(struct lzchan_slot_hdr *h, uint32_t pos, uint32_t len)
{
	__atomic_store_n(&h->len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&h->seq, pos + 1, __ATOMIC_RELEASE);
}

/* ... at lane @rl's peek. */
static inline int __lzchan_lane_ready(const struct __lzchan_fast *f,
				      const struct __lzchan_rxlane *rl)
{
	return __lzchan_ready(__lzchan_fslot_ro(f, rl->slots, rl->peek), rl->peek);
}

/*
 * The receive's one fast mechanism, the span: how many messages the lane
 * whose turn it is (cur) may still give before the library looks again
 * -- the rest of its turn, no further than the ring's end and its head's
 * next publication -- and where the next one is (span_at, cur's peek's
 * slot).  The inline receives take from it, and so does the library
 * itself; the library's next call accounts for what was taken by how far
 * cur's peek moved.  A message is ready when its seq (acquire) is its
 * position + 1; its len is then read once and bounded (a pad, a longer
 * message and garbage are all over the bound, and go to the library).
 */
#define __LZCHAN_TAKE_NONE	(-EAGAIN)	/* nothing ready at span_at */
#define __LZCHAN_TAKE_SLOW	(-ENOTRECOVERABLE) /* the library's to look at */

/* Was the span's count, counted down after the accesses, zeroed by the
 * SIGBUS handler during one of them (shm: the mapping was cut)?  Then it
 * borrows (it was at least @k and never above 2^31 when we came): -EIO,
 * never the replacement's zeros.  The fence keeps the count after the
 * accesses. */
static inline int __lzchan_span_spend(struct __lzchan_fast *f, uint32_t k)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	f->span -= k;
	if (__lzchan_unlikely((int32_t)f->span < 0)) {
		f->span = 0;
		return -EIO;
	}
	return 0;
}

/* One message copied into @buf: its length, -EIO, __LZCHAN_TAKE_NONE
 * (nothing ready at span_at), or __LZCHAN_TAKE_SLOW (no span, or a length
 * the inline copy does not take). */
static inline int __lzchan_span_take(struct __lzchan_fast *f, void *buf, size_t cap,
				     uint32_t *lane)
{
	const struct lzchan_slot_hdr *h = (const struct lzchan_slot_hdr *)f->span_at;
	struct __lzchan_rxlane *rl = f->cur;
	uint32_t len, peek = rl->peek;

	if (__lzchan_unlikely(!f->span))
		return __LZCHAN_TAKE_SLOW;
	if (!__lzchan_ready(h, peek))
		return __LZCHAN_TAKE_NONE;
	/* Relaxed, read once (published by that seq): the sender may
	 * change it, so only this copy is checked and used. */
	len = __atomic_load_n(&h->len, __ATOMIC_RELAXED);
	/* rx_max is at most LZCHAN_INLINE_MAX: a buffer at least that long
	 * (a constant, as a caller's array's size usually is) needs no test
	 * of its own. */
	if (__lzchan_unlikely(len > f->rx_max || (cap < LZCHAN_INLINE_MAX && len > cap)))
		return __LZCHAN_TAKE_SLOW;
	if (len > LZCHAN_INLINE_MAX)	/* rx_max never is */
		__builtin_unreachable();
	__lzchan_copy(buf, h + 1, len);
	if (__lzchan_span_spend(f, 1))
		return -EIO;
	f->span_at = (const char *)h + f->slot_size;
	/* Taken and released: views still outstanding before it go too, as
	 * lzchan_release() of this message would.  Relaxed atomic: a plain
	 * store, which the compiler would otherwise merge with the one
	 * after it through a vector register. */
	__atomic_store_n(&rl->peek, peek + 1, __ATOMIC_RELAXED);
	rl->head = peek + 1;
	if (lane)
		*lane = f->cur_lane;
	return (int)len;
}

/*
 * Nothing is ready at the span: may the inline receive say "empty"
 * without the library?  Only while it may (quiet, above), and the lane's
 * status and the bell are as its look saw them (a sender that left, a
 * cut mapping whose status reads 0, a lane nobody polls that got a
 * message: each ends it).  Other news waits at most quiet polls, as the
 * library's own quick verdicts let it.  Like those, a receiver that has
 * caught up publishes its head, so the sender sees all the room, and one
 * holding views publishes what it gave back when that is due (the inline
 * release only moves the head).
 */
static inline int __lzchan_span_empty(struct __lzchan_fast *f)
{
	struct __lzchan_rxlane *rl = f->cur;

	/* Called after a take found nothing ready (so a span there). */
	if (__lzchan_likely(f->quiet) &&
	    /* Relaxed: only compared; the library loads them with acquire. */
	    __atomic_load_n(&rl->info->status, __ATOMIC_RELAXED) == rl->seen_status &&
	    __atomic_load_n(f->bell, __ATOMIC_RELAXED) == f->bell_seen) {
		f->quiet--;
		/* Caught up, or views given back since the last one, due
		 * for publication. */
		if (rl->head != rl->published &&
		    (rl->peek == rl->head || rl->head - rl->published >= f->publish_every)) {
			/* Pairs with the sender's acquire load of head: our
			 * reads of the released slots are done. */
			__atomic_store_n(&rl->rxl->head, rl->head, __ATOMIC_RELEASE);
			rl->published = rl->head;
		}
		return 1;
	}
	return 0;
}

/* Fill view @v of the message at @h, position @end - 1 (field by field:
 * stores the compiler would otherwise assemble in a vector register
 * first; relaxed atomic: plain stores). */
static inline void __lzchan_span_fill(struct lzchan_msg *v, const struct lzchan_slot_hdr *h,
				      uint32_t len, uint32_t lane, uint32_t end, uint32_t gen)
{
	v->data = h + 1;
	__atomic_store_n(&v->len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&v->lane, lane, __ATOMIC_RELAXED);
	__atomic_store_n(&v->__end, end, __ATOMIC_RELAXED);
	__atomic_store_n(&v->__gen, gen, __ATOMIC_RELAXED);
}

/* One view from the span (lzchan_peek()): 1, -EIO, or a refusal, as
 * __lzchan_span_views() with n = 1, without its loop. */
static inline int __lzchan_span_view(struct __lzchan_fast *f, struct lzchan_msg *m)
{
	const struct lzchan_slot_hdr *h = (const struct lzchan_slot_hdr *)f->span_at;
	struct __lzchan_rxlane *rl = f->cur;
	uint32_t len, peek = rl->peek;

	if (__lzchan_unlikely(!f->span))
		return __LZCHAN_TAKE_SLOW;
	if (!__lzchan_ready(h, peek))
		return __LZCHAN_TAKE_NONE;
	/* Relaxed, read once (published by that seq), and bounded before
	 * the view is given out. */
	len = __atomic_load_n(&h->len, __ATOMIC_RELAXED);
	if (__lzchan_unlikely(len > f->rx_payload))
		return __LZCHAN_TAKE_SLOW;
	__lzchan_span_fill(m, h, len, f->cur_lane, peek + 1, rl->gen);
	if (__lzchan_span_spend(f, 1))
		return -EIO;
	f->span_at = (const char *)h + f->slot_size;
	rl->peek = peek + 1;
	return 1;
}

/* Up to @n views from the span: how many, -EIO, or, none taken,
 * __LZCHAN_TAKE_NONE (nothing ready) or __LZCHAN_TAKE_SLOW (no span, or
 * a length over the slot's payload).  Each checked as
 * __lzchan_span_take() checks its one. */
static inline int __lzchan_span_views(struct __lzchan_fast *f, struct lzchan_msg *m,
				      unsigned int n)
{
	const char *s = f->span_at;
	struct __lzchan_rxlane *rl = f->cur;
	uint32_t k, peek = rl->peek, most = f->span < n ? f->span : n;
	uint32_t step = f->slot_size, lane = f->cur_lane, gen = rl->gen, max = f->rx_payload;

	int none = __LZCHAN_TAKE_SLOW;

	for (k = 0; k < most; k++, s += step) {
		const struct lzchan_slot_hdr *h = (const struct lzchan_slot_hdr *)s;
		uint32_t len;

		if (!__lzchan_ready(h, peek + k)) {
			none = __LZCHAN_TAKE_NONE;
			break;
		}
		len = __atomic_load_n(&h->len, __ATOMIC_RELAXED);
		if (__lzchan_unlikely(len > max))
			break;
		__lzchan_span_fill(&m[k], h, len, lane, peek + k + 1, gen);
	}
	if (__lzchan_unlikely(!k))
		return none;
	if (__lzchan_span_spend(f, k))
		return -EIO;
	f->span_at = s;
	rl->peek = peek + k;
	return (int)k;
}

/* The library's entry points behind the inline functions: not for direct
 * use.  __lzchan_slow_*() take what the inline code does not (multi-slot
 * messages, gates, wakes, ends); the inline code relies on the handle
 * fields this library keeps (rx_lanes, rx_payload, the send's gate). */
int __lzchan_lost(struct lzchan *ch);
void __lzchan_tx_stats(struct lzchan *ch);
int __lzchan_tx_after(struct lzchan *ch);
int __lzchan_slow_send(struct lzchan *ch, const void *buf, size_t len);
int __lzchan_slow_reserve(struct lzchan *ch, size_t len, void **buf);
int __lzchan_slow_commit(struct lzchan *ch, size_t len);
int __lzchan_slow_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane);
int __lzchan_slow_peek(struct lzchan *ch, struct lzchan_msg *m);
void __lzchan_slow_release(struct lzchan *ch, const struct lzchan_msg *m);
int __lzchan_slow_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n);


/* ---- the one fast send, shared by the inline calls and the library ----
 * A message of one slot through the gate (struct __lzchan_fast: tx_max,
 * tx_room, attn_seen), published with one release store.  The library's
 * own lzchan_send(), lzchan_reserve() and lzchan_commit() compute the gate
 * again and then run this same code; everything the gate refuses goes
 * the general way. */

static inline struct lzchan_slot_hdr *__lzchan_fslot(const struct __lzchan_fast *f,
						     char *slots, uint32_t pos)
{
	return (struct lzchan_slot_hdr *)(slots + ((size_t)(pos & f->mask) << f->slot_shift));
}

/* The gate without taking the position: a payload of at most @max (the
 * inline calls: tx_max; the library, which copies with memcpy(): any one
 * slot's, or 0 where tx_max is), a position it may fill, and nothing new
 * on the receiver's side (attn as the library last saw it: a receiver
 * gone changes it, and the library then keeps it unseen). */
static inline int __lzchan_fast_room_rxl(const struct __lzchan_fast *f, size_t len, size_t max,
					 const struct lzchan_shm_rx_lane *rxl)
{
	return __lzchan_likely(len <= max && (int32_t)f->tx_room > 0 &&
			       /* Relaxed: a change sends us to the library,
				* whose acquire load pairs with the release
				* store of attn (receiver, or the module).
				* attn_seen: relaxed, the SIGBUS handler may
				* store it (LZCHAN_ATTN_POISON). */
			       __atomic_load_n(&rxl->attn, __ATOMIC_RELAXED) ==
			       __atomic_load_n(&f->attn_seen, __ATOMIC_RELAXED));
}

static inline int __lzchan_fast_room(const struct __lzchan_fast *f, size_t len)
{
	return __lzchan_fast_room_rxl(f, len, f->tx_max, f->my_rxl);
}


/* Publish the one-slot message of @len bytes written in slot @h at
 * position @tail (the sender's tail, passed in so that nothing is
 * reloaded after the caller's copy into the slot); the caller took the
 * position from tx_room.  Returns what the send
 * returns: 0, or -EIO when an access met a cut. */
static inline int __lzchan_fast_publish_rxl(struct lzchan *ch, struct __lzchan_fast *f,
					    struct lzchan_slot_hdr *h, uint32_t tail, uint32_t len,
					    const struct lzchan_shm_rx_lane *rxl)
{
	uint32_t next = tail + 1, attn;

	__lzchan_publish(h, tail, len);
	f->tail = next;
	f->stat_bytes += len;
	/* Relaxed: the receiver only compares tail (a stall check, which
	 * gives a live sender time to agree); nobody orders on it. */
	__atomic_store_n(&f->tx->tail, next, __ATOMIC_RELAXED);
	/* Keeps the loads below after the stores above, and after a SIGBUS
	 * handler that ran during them (see LZCHAN_ATTN_POISON). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* One test for two rare cases, sorted out by the library: the one
	 * word of the receiver's we load, attn, moved; and the slot or the
	 * lane's line met a cut (the handler poisoned attn_seen, and attn
	 * reads 0).  (The counts are not a case: the gate stops before
	 * LZCHAN_STAT_EVERY positions go uncounted, and the library makes
	 * that send.)
	 * attn pairs with the receiver's heavy barrier after it stores
	 * attn: it sees our message, or we see its store (a sender that
	 * must fence each send never comes here: tx_max is 0).  Relaxed:
	 * that barrier orders them; attn_seen as in __lzchan_fast_room(). */
	attn = __atomic_load_n(&rxl->attn, __ATOMIC_RELAXED);
	/* attn_seen after attn, and after a handler that ran during it. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__lzchan_unlikely(attn != __atomic_load_n(&f->attn_seen, __ATOMIC_RELAXED)))
		return __lzchan_tx_after(ch);
	return 0;
}

static inline int __lzchan_fast_publish(struct lzchan *ch, struct __lzchan_fast *f,
					struct lzchan_slot_hdr *h, uint32_t tail, uint32_t len)
{
	return __lzchan_fast_publish_rxl(ch, f, h, tail, len, f->my_rxl);
}

/* The send's gate, with the position taken from tx_room as it is tested
 * (a shut gate, 0 or bit 31, goes below 0; the library computes it again
 * whenever it is called, so a position taken by a send that then went to
 * the library is not lost).  @rxl is f->my_rxl, loaded once by the
 * caller: the copy's stores may alias the handle. */
static inline int __lzchan_fast_gate(struct __lzchan_fast *f, size_t len,
				     const struct lzchan_shm_rx_lane *rxl)
{
	return __lzchan_likely(len <= f->tx_max && (int32_t)--f->tx_room >= 0 &&
			       /* As in __lzchan_fast_room_rxl(). */
			       __atomic_load_n(&rxl->attn, __ATOMIC_RELAXED) ==
			       __atomic_load_n(&f->attn_seen, __ATOMIC_RELAXED));
}

/* The message the gate let through, written at the tail and published:
 * what the send returns (0, or -EIO when an access met a cut).  (Gate and
 * body apart, so that a caller falling back to the library after the gate
 * keeps no stack frame for the body's rare call.) */
static inline int __lzchan_fast_put(struct lzchan *ch, const void *buf, size_t len,
				    const struct lzchan_shm_rx_lane *rxl)
{
	struct __lzchan_fast *f = (struct __lzchan_fast *)ch;
	uint32_t tail = f->tail;
	struct lzchan_slot_hdr *h = __lzchan_fslot(f, f->slots, tail);

	/* tx_max never exceeds it (the library keeps it so). */
	if (len > LZCHAN_INLINE_MAX)
		__builtin_unreachable();
	__lzchan_copy(h + 1, buf, len);
	return __lzchan_fast_publish_rxl(ch, f, h, tail, (uint32_t)len, rxl);
}

/* A reservation of one slot where __lzchan_fast_room() says so.  Bit 31
 * of tx_room marks it open: no send through the gate until the commit (a
 * library call meanwhile shuts the gate, and the commit then goes the
 * general way, which takes any reservation). */
static inline void __lzchan_fast_reserve(struct __lzchan_fast *f, size_t len, void **buf)
{
	struct lzchan_slot_hdr *h = __lzchan_fslot(f, f->slots, f->tail);

	f->reserved = 1;
	f->resv_len = (uint32_t)len;
	f->resv_slot = h;		/* for the commit, after the caller's copy */
	f->tx_room |= 0x80000000U;	/* no inline send until the commit */
	*buf = h + 1;
}

/* Is a reservation __lzchan_fast_reserve() made open (bit 31), and @len
 * no more than it reserved?  Then __lzchan_fast_commit() commits it. */
static inline int __lzchan_fast_resv(const struct __lzchan_fast *f, size_t len)
{
	return __lzchan_likely((int32_t)f->tx_room < 0 && len <= f->resv_len);
}

static inline int __lzchan_fast_commit(struct lzchan *ch, size_t len)
{
	struct __lzchan_fast *f = (struct __lzchan_fast *)ch;

	f->reserved = 0;
	/* The mark cleared, and the reserved position taken. */
	f->tx_room = (f->tx_room & 0x7fffffffU) - 1;
	return __lzchan_fast_publish(ch, f, f->resv_slot, f->tail, (uint32_t)len);
}

#if !defined(__LZCHAN_LIBRARY) && !defined(LZCHAN_NO_INLINE)
/* ---- the fast path, inline (see struct __lzchan_fast above) ----
 * Each is the library function's own fast path; the memory-ordering
 * argument and the pairings are in Documentation/libchan/design.rst. */

static inline int lzchan_send(struct lzchan *ch, const void *buf, size_t len)
{
	if (__lzchan_likely(ch != 0)) {
		const struct lzchan_shm_rx_lane *rxl = ((struct __lzchan_fast *)ch)->my_rxl;

		if (__lzchan_fast_gate((struct __lzchan_fast *)ch, len, rxl))
			return __lzchan_fast_put(ch, buf, len, rxl);
	}
	return __lzchan_slow_send(ch, buf, len);
}

static inline int lzchan_reserve(struct lzchan *ch, size_t len, void **buf)
{
	if (__lzchan_likely(ch && buf) && __lzchan_fast_room((struct __lzchan_fast *)ch, len)) {
		__lzchan_fast_reserve((struct __lzchan_fast *)ch, len, buf);
		return 0;
	}
	return __lzchan_slow_reserve(ch, len, buf);
}

static inline int lzchan_commit(struct lzchan *ch, size_t len)
{
	if (__lzchan_likely(ch != 0) && __lzchan_fast_resv((struct __lzchan_fast *)ch, len))
		return __lzchan_fast_commit(ch, len);
	return __lzchan_slow_commit(ch, len);
}

/* The inline receives take from the span (see __lzchan_span_take());
 * the library does everything else. */
static inline int lzchan_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane)
{
	if (__lzchan_likely(ch != 0)) {
		int r = __lzchan_span_take((struct __lzchan_fast *)ch, buf, cap, lane);

		if (__lzchan_likely(r >= 0) || r == -EIO)
			return r;
		if (r == __LZCHAN_TAKE_NONE && __lzchan_span_empty((struct __lzchan_fast *)ch))
			return -EAGAIN;
	}
	return __lzchan_slow_recv(ch, buf, cap, lane);
}

static inline int lzchan_peek(struct lzchan *ch, struct lzchan_msg *m)
{
	if (__lzchan_likely(ch && m)) {
		int r = __lzchan_span_view((struct __lzchan_fast *)ch, m);

		if (__lzchan_likely(r > 0))
			return 0;
		if (r == -EIO)
			return r;
		if (r == __LZCHAN_TAKE_NONE && __lzchan_span_empty((struct __lzchan_fast *)ch))
			return -EAGAIN;
	}
	return __lzchan_slow_peek(ch, m);
}

static inline int lzchan_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n)
{
	if (__lzchan_likely(ch && m && n)) {
		int r = __lzchan_span_views((struct __lzchan_fast *)ch, m, n);

		if (__lzchan_likely(r > 0) || r == -EIO)
			return r;
		if (r == __LZCHAN_TAKE_NONE && __lzchan_span_empty((struct __lzchan_fast *)ch))
			return -EAGAIN;
	}
	return __lzchan_slow_recv_batch(ch, m, n);
}

/* A view of the lane whose turn it is; the library for any other (and
 * for anything odd: no handle, no view).  cur is never NULL: a handle
 * whose turn is nobody's (a sender's too) points it at a lane of its own
 * that no view can release anything of.  The head is published, when
 * due, by the next receiving call: the library's settle, or a quick
 * "empty" (__lzchan_span_empty()). */
static inline void lzchan_release(struct lzchan *ch, const struct lzchan_msg *m)
{
	struct __lzchan_fast *f = (struct __lzchan_fast *)ch;
	struct __lzchan_rxlane *rl;

	if (__lzchan_unlikely(!ch || !m || m->lane != f->cur_lane)) {
		__lzchan_slow_release(ch, m);
		return;
	}
	rl = f->cur;
	/* Only a view of this lane's current sender, not past the peek. */
	if (m->__gen != rl->gen || m->__end - rl->head > rl->peek - rl->head)
		return;
	rl->head = m->__end;
}
#endif /* inline fast path */

#endif /* LZCHAN_FAST_H */
