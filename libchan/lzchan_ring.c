// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The lanes: one sender writes, the receiver reads (see the slot format in
 * the UAPI header and Documentation/libchan/design.rst for the argument).
 *
 * Sender: a message of n slots goes at the tail if it fits before the
 * ring's end, else a pad fills up to the end first.  Payload and len are
 * written, then seq with release order.  The receiver's position (head) is
 * read only when the cached copy says the ring is full (lazy flow control).
 *
 * The one subtlety: payload runs contiguously over slots, so a slot's first
 * word may be payload from the previous lap.  When the receiver's next
 * position lands on such a slot, that word could by chance equal the seq it
 * waits for.  The sender remembers which slots hold payload in their first
 * word (cont bits); when the slot after a message is one, it first stores a
 * seq there that is never "ready" for that position, before publishing.
 *
 * Receiver: a message is ready when its first slot's seq (acquire) equals
 * its position + 1.  len is read once and bounds-checked; anything else
 * marks the lane broken (-EBADMSG), and once its sender has gone the lane
 * is acknowledged like an ended one (-EPIPE), so it can take a new sender.
 * The head is published (release) every publish_every slots and whenever
 * the receiver goes idle.
 *
 * Floor 3: send and receive, above the shm file, the doorbell socket, the
 * guard and the bell and wake (lzchan_wake.c), below opening (the floors:
 * Documentation/libchan/design.rst, "The library's floors").
 */
#include <errno.h>
#include <time.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "lzchan_internal.h"

#define SLEEPY_MIN_ACTIVE	4	/* never put the last few lanes to sleep */
#define SLEEPY_AFTER		4096	/* empty polls before a lane sleeps */
#define STATUS_SCAN_EVERY	4096	/* empty receive-anys between scans */
#define DEPARTED_EVERY		1024	/* general looks between departure sweeps */

static inline uint32_t __lz_slots_for(const struct lzchan *ch, uint32_t len)
{
	return (len + sizeof(struct lzchan_slot_hdr) + ch->f.slot_size - 1) >> ch->f.slot_shift;
}

static inline bool __lz_cont_test(const struct lzchan *ch, uint32_t pos)
{
	uint32_t i = pos & ch->f.mask;

	return ch->cont[i >> 3] & (1U << (i & 7));
}

/* Mark whether the slot at @pos holds payload in its first word.  cont_any
 * says whether any slot does (a count of set bits keeps it exact), so the
 * inline path comes back once a long message's slots have all been
 * written over. */
static inline void __lz_cont_set(struct lzchan *ch, uint32_t pos, bool v)
{
	uint32_t i = pos & ch->f.mask;
	uint8_t bit = (uint8_t)(1U << (i & 7));

	if (v && !(ch->cont[i >> 3] & bit)) {
		ch->cont[i >> 3] |= bit;
		ch->cont_count++;
		ch->f.cont_any = true;
	} else if (!v && (ch->cont[i >> 3] & bit)) {
		ch->cont[i >> 3] &= (uint8_t)~bit;
		if (!--ch->cont_count)
			ch->f.cont_any = false;
	}
}

/* The longest payload lzchan_fast.h's inline paths move: one slot's, at most
 * LZCHAN_INLINE_MAX (their copy is unrolled for that). */
static inline uint32_t __lz_inline_max(const struct lzchan *ch)
{
	uint32_t m = ch->f.slot_size - (uint32_t)sizeof(struct lzchan_slot_hdr);

	return m < LZCHAN_INLINE_MAX ? m : LZCHAN_INLINE_MAX;
}

/* The longest payload the library's own sends take through the gate:
 * any one slot's (it copies with memcpy()), but none where the inline
 * send may take none (tx_max 0: a receiver, or a sender that fences every
 * send). */
static inline size_t __lz_gate_max(const struct lzchan *ch)
{
	return ch->f.tx_max ? ch->f.slot_size - sizeof(struct lzchan_slot_hdr) : 0;
}

void __lzchan_scrub_lane(char *slots, uint32_t slot_count, uint32_t slot_size)
{
	uint32_t s;

	/* seq = s is "not ready" for every position p = s + k * slot_count
	 * (ready means seq == p + 1, and p + 1 differs from s modulo the
	 * power-of-two slot_count, hence modulo 2^32). */
	for (s = 0; s < slot_count; s++) {
		struct lzchan_slot_hdr *h = (void *)(slots + (size_t)s * slot_size);

		/* Relaxed: the release store of the lane status that follows
		 * (module or __lzchan_shm_claim()) publishes the scrub. */
		__lz_store(&h->len, 0);
		__lz_store(&h->seq, s);
	}
}

/* ==================== sender ==================== */

void __lzchan_tx_init(struct lzchan *ch)
{
	/* A new sender continues where the receiver stands on this lane (0
	 * for a fresh lane; exact for a reused one: it was drained).  Pairs
	 * with the receiver's release store of head. */
	ch->f.tail = __lz_load_acq(&ch->f.my_rxl->head);
	ch->f.cached_head = ch->f.tail;
	ch->stat_tail = ch->f.tail;
	__lz_store(&ch->f.tx->tail, ch->f.tail);
	/* Relaxed: statistics only we write (zeroed with a reused lane). */
	ch->f.stat_msgs = __lz_load(&ch->f.tx->msgs);
	ch->f.stat_bytes = __lz_load(&ch->f.tx->bytes);
	/* The inline send: one-slot payloads of up to LZCHAN_INLINE_MAX,
	 * unless every send must fence (then the library sends all). */
	ch->f.tx_max = ch->f.fence_each_send ? 0 : __lz_inline_max(ch);
	__lzchan_tx_gate(ch);
}

/*
 * The room the inline gate vouches for: how many one-slot positions may be
 * filled without the library, by the cached head, or 0 while the library
 * must act (a reservation of its own, a message ever spanned slots, a
 * sender that fences every send, attn not looked at yet).
 */
static uint32_t __lz_tx_gate_room(const struct lzchan *ch)
{
	/* cached_head comes from the receiver's line: a head "ahead" of our
	 * tail (a hostile or broken receiver, or on shm anyone) gives no
	 * room here, as it gives none in __lz_tx_room(), rather than room
	 * beyond the ring (or a value with bit 31, the reservation mark). */
	uint32_t used = ch->f.tail - ch->f.cached_head;

	/* attn_known: the inline send compares attn with what we last saw
	 * (attn_seen), so it may go only once we have looked. */
	return !ch->f.tx_max || ch->f.reserved || ch->f.cont_any || !ch->attn_known ||
	       used > ch->f.slot_count ? 0 : ch->f.slot_count - used;
}

/* __lzchan_tx_after() tests a position against it with a mask. */
_Static_assert((LZCHAN_STAT_EVERY & (LZCHAN_STAT_EVERY - 1)) == 0,
	       "LZCHAN_STAT_EVERY is a power of two");

static inline uint32_t __lz_tx_gate_cap(const struct lzchan *ch, uint32_t room)
{
	/* Positions sent since the counts were last stored (stat_tail):
	 * inline sends, uncounted.  The gate lets the inline send take them
	 * up to LZCHAN_STAT_EVERY - 1, and no further: the next send is the
	 * library's, which stores the counts with its message (every path
	 * that moves stat_tail stores them), so they lag the sends by less
	 * than LZCHAN_STAT_EVERY, whatever calls the library refused. */
	uint32_t since = ch->f.tail - ch->stat_tail;
	uint32_t to_stat = since < LZCHAN_STAT_EVERY - 1 ? LZCHAN_STAT_EVERY - 1 - since : 0;

	return room < to_stat ? room : to_stat;
}

/*
 * The inline send's gate.  tx_room is how many positions the inline path
 * may fill before the library looks again: the room above, and no further
 * than LZCHAN_STAT_EVERY - 1 positions past the last count, where the
 * library's send publishes the counts the inline send leaves to it (msgs,
 * bytes) with its own message (__lz_tx_gate_cap()).  Called
 * whenever tail, cached_head, reserved or cont_any change in the library,
 * so the inline path never sees a stale room larger than the truth; the
 * inline path itself only takes from it.
 */
void __lzchan_tx_gate(struct lzchan *ch)
{
	ch->f.tx_room = __lz_tx_gate_cap(ch, __lz_tx_gate_room(ch));
}

/* Count the messages the inline path sent since the last count: one per
 * position (it sends one-slot messages only).  Before the library moves
 * the tail itself. */
static inline void __lz_tx_count(struct lzchan *ch)
{
	ch->f.stat_msgs += (uint32_t)(ch->f.tail - ch->stat_tail);
	ch->stat_tail = ch->f.tail;
}

/* Time between two looks at a shm receiver's lock from a full ring: the
 * look is a system call, and a sender spinning on a full ring must not turn
 * every retry into one (that slows the very receiver it waits for); by time,
 * so that a sender retrying slowly learns at its next retry. */
#define FULL_LIVENESS_NS	1000000ULL

/*
 * shm: how long a status word that says a party left, while that party's
 * lock is held, is disbelieved without looking at the lock again.  The
 * module writes statuses only itself; on shm anyone with write access can,
 * so "gone" is believed only once the lock agrees (a closing party frees
 * its lock right after storing it).  The look is a system call: bounded
 * so that a forged word slows its victims, never stops them.
 */
#define STATUS_HELD_NS		100000ULL

/* rx_status says GONE: is the receiver really gone? */
static bool __lz_tx_rx_gone(struct lzchan *ch)
{
	uint64_t now;

	if (ch->backend != LZCHAN_BACKEND_SHM)
		return true;
	now = __lzchan_now_ns();
	if (ch->gone_held_ns && now - ch->gone_held_ns < STATUS_HELD_NS)
		return false;
	if (__lzchan_shm_rx_alive(ch) == 1) {
		ch->gone_held_ns = now;	/* overwritten, or its close is under way */
		return false;
	}
	return true;
}

/* Lane @i's status says CLOSED for its sender: is that sender really
 * gone?  (See STATUS_HELD_NS.)  @fresh: look at the lock whatever an
 * earlier look said -- before parking, where a stale "held" would sleep
 * through the closing sender's wake (it unlocked, saw us awake, and woke
 * nobody). */
static bool __lz_rx_sender_gone(struct lzchan *ch, uint32_t i, bool fresh)
{
	struct __lzchan_rxwatch *w = &ch->watch[i];
	uint64_t now, d;

	if (ch->backend != LZCHAN_BACKEND_SHM)
		return true;
	/* A departure counted since the lock was found held may be this
	 * sender's (a closing one counts itself, then unlocks): look again
	 * at once, so that a real close over a forged CLOSED is its end at
	 * once.  Pairs with the release of departures in lzchan_close() and
	 * __lzchan_shm_claim(); loaded before the lock, so a count that
	 * predates an unlock we miss is not taken as "seen". */
	d = __lz_load_acq(&ch->f.hdr->departures);
	now = __lzchan_now_ns();
	if (!fresh && w->closed_held_ns && d == w->held_departures &&
	    now - w->closed_held_ns < STATUS_HELD_NS)
		return false;
	if (__lzchan_shm_lane_alive(ch, i) == 1) {
		w->closed_held_ns = now;	/* overwritten, or closing */
		w->held_departures = d;
		return false;
	}
	w->closed_held_ns = 0;
	return true;
}

/*
 * A stalled lane: nothing is ready at the receiver's position @pos, but
 * the sender says (tx->tail) it wrote past it.  One overwritten seq word
 * (or any garbage over the lane) leaves a slot that is never ready; the
 * lane would stop there for ever while the sender blocks on a full ring,
 * and once the sender left, its end would look clean with its last
 * messages lost.  An honest sender stores tail after each message's (and
 * pad's) seq, so it claims more than is there no longer than a store takes
 * to be seen.  Such a lane is reported (-EBADMSG) and abandoned like one
 * holding garbage: at once for a sender that has gone (its last stores are
 * visible), after STALL_NS at the same position for one still there.
 *
 * Only a tail ahead of us counts (by any amount: more than a ring means the
 * sender overwrote what we had not read, given room by a forged head).
 * A tail *behind* the receiver is what a lane looks
 * like between a reuse and its new sender's first store of tail (the
 * module zeroes it; that sender may be slow to get there), and the one way
 * to put the receiver ahead -- a forged pad -- is refused by its length
 * (__lz_rx_look()).
 */
#define STALL_NS		10000000ULL

static bool __lz_rx_claims_more(struct lzchan *ch, const struct __lzchan_rxlane *rl,
				uint32_t pos)
{
	const struct lzchan_shm_tx *tx = (const void *)(rl->slots - ch->layout.lane_slots);
	/* Relaxed: only compared; a gone sender's is ordered by the acquire
	 * of its CLOSED status, a live one's is given STALL_NS to agree. */
	uint32_t tail = __lz_load(&tx->tail);

	/* shm: ahead by any amount; by more than a ring, the sender overwrote
	 * what we had not read (a forged head gave it the room).  dev: only
	 * we write our head, so at most a ring -- and the module zeroes a
	 * reused lane's tail, which from a position past 2^31 would look
	 * ahead in the signed sense. */
	if (ch->backend == LZCHAN_BACKEND_DEV)
		return (uint32_t)(tail - pos - 1) < ch->f.slot_count;
	return (int32_t)(tail - pos) > 0;
}

static bool __lz_rx_stalled(struct lzchan *ch, uint32_t i, uint32_t pos)
{
	struct __lzchan_rxwatch *w = &ch->watch[i];
	uint64_t now;

	if (!__lz_rx_claims_more(ch, &ch->f.lanes[i], pos)) {
		w->stall_ns = 0;
		return false;
	}
	now = __lzchan_now_ns();
	if (!w->stall_ns || w->stall_pos != pos) {
		w->stall_ns = now;
		w->stall_pos = pos;
	}
	/* Keep polling it (no sleepy lane) until the verdict. */
	ch->f.lanes[i].idle = 0;
	return now - w->stall_ns >= STALL_NS;
}

/* When a look owes a stalled lane its verdict (__lz_rx_stalled()): the
 * earliest such time after @now, or UINT64_MAX.  A parked receiver sleeps
 * no longer (lzchan_recv_wait()); a watch left from long ago is past, and
 * never shortens a sleep. */
uint64_t __lzchan_rx_verdict_due(const struct lzchan *ch, uint64_t now)
{
	uint64_t due = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < ch->f.max_senders; i++) {
		uint64_t at = ch->watch[i].stall_ns + STALL_NS;

		if (ch->watch[i].stall_ns && at > now && at < due)
			due = at;
	}
	return due;
}

/* Make the lane's counts exact (the inline send leaves them to the
 * library, which its gate calls at least every LZCHAN_STAT_EVERY positions).
 * Relaxed: statistics, nobody orders on them. */
void __lzchan_tx_stats(struct lzchan *ch)
{
	if (!ch || ch->f.role != LZCHAN_SENDER || !ch->f.tx)
		return;
	__lz_tx_count(ch);
	__lz_store(&ch->f.tx->msgs, ch->f.stat_msgs);
	__lz_store(&ch->f.tx->bytes, ch->f.stat_bytes);
}

/*
 * shm: has the receiver died?  A receiver that dies leaves its status
 * (ATTACHED) behind, and the status word is anyone's to write anyway:
 * only its lock tells, looked at every FULL_LIVENESS_NS at most (*@look:
 * when last).  A status of NONE -- no receiver yet, and messages wait
 * for the first -- is believed only until this sender has seen another
 * status (at open, in the library's send, here) or its lane given up
 * (__lz_tx_given_up(): only a receiver does that); after that NONE is a
 * lie, and the lock decides as for ATTACHED (test hostile_receiver).  The
 * lock held alone proves nothing: a receiver holds it before it says
 * ATTACHED, and one that died in between leaves NONE, truly.  A verdict
 * of "dead" stands while the status reads what it read then (a new
 * receiver writes a new one).  GONE is __lz_tx_rx_gone()'s.
 */
static bool __lz_tx_rx_dead(struct lzchan *ch, uint64_t st, uint64_t *look)
{
	uint32_t state = LZCHAN_STATUS_STATE(st);
	uint64_t now;

	if (ch->backend != LZCHAN_BACKEND_SHM)
		return false;
	if (state != LZCHAN_RX_NONE)
		ch->rx_seen = true;
	if (state == LZCHAN_RX_GONE || !ch->rx_seen)
		return false;
	if (ch->rx_dead && st == ch->rx_dead_st)
		return true;
	now = __lzchan_now_ns();
	if (now - *look < FULL_LIVENESS_NS)
		return false;
	*look = now;
	ch->rx_dead = __lzchan_shm_rx_alive(ch) == 0;
	ch->rx_dead_st = st;
	return ch->rx_dead;
}

/*
 * Has the receiver given our lane up (__lz_rx_broke())?  Then the room we
 * wait for will never come; and only a receiver gives a lane up, so this
 * sender has seen one whatever the status says -- a NONE forged before it
 * opened included, which left __lz_tx_rx_dead() believing "no receiver
 * yet" and the sender at -EBADMSG for ever once that receiver died (test
 * receiver_that_gave_up_and_died_is_gone).  Relaxed: only compared; a
 * stale 0 costs one more retry.
 */
static bool __lz_tx_given_up(struct lzchan *ch)
{
	if (__lz_load(&ch->f.my_rxl->broken) != ch->lane_gen)
		return false;
	ch->rx_seen = true;
	return true;
}

static int __lz_tx_full(struct lzchan *ch)
{
	/* Pairs with the release store of rx_status (module or receiver). */
	uint64_t st = __lz_load_acq(&ch->f.hdr->rx_status);
	bool given_up = __lz_tx_given_up(ch);

	/* A sender waiting on a full lane shows its exact counts. */
	__lzchan_tx_stats(ch);
	if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_GONE && __lz_tx_rx_gone(ch))
		return -EPIPE;
	/* shm: the receiver's lock, when the ring is found full -- before
	 * the give-up, which the receiver wrote: one that gave the lane up
	 * and then died is gone, and says so (test hostile_receiver). */
	if (__lz_tx_rx_dead(ch, st, &ch->last_rx_look_ns))
		return -EPIPE;
	return given_up ? -EBADMSG : -EAGAIN;
}

/* Positions up to @end (exclusive) are ours to write by @head: the head
 * is not ahead of our tail -- a receiver's head is never ahead of what was
 * sent; one that says so (hostile, broken, or on shm anyone) gives no
 * room, as in __lz_tx_gate_room() -- and @end is within a ring of it. */
static inline bool __lz_tx_room_by(const struct lzchan *ch, uint32_t end, uint32_t head)
{
	return (uint32_t)(ch->f.tail - head) <= ch->f.slot_count &&
	       (uint32_t)(end - head) <= ch->f.slot_count;
}

/* Is there room to publish up to position @next (exclusive), plus the
 * marker slot if the slot at @next holds stale payload? */
static int __lz_tx_room(struct lzchan *ch, uint32_t next, bool *marker)
{
	*marker = __lz_cont_test(ch, next);
	if (__lz_tx_room_by(ch, next + *marker, ch->f.cached_head))
		return 0;
	/* Pairs with the receiver's release store of head in
	 * __lz_rx_publish(): it has finished reading what it released. */
	ch->f.cached_head = __lz_load_acq(&ch->f.my_rxl->head);
	__lzchan_tx_gate(ch);
	if (__lz_tx_room_by(ch, next + *marker, ch->f.cached_head))
		return 0;
	return __lz_tx_full(ch);
}

/* Store the "not ready" marker in the slot at @next (see the top). */
static inline void __lz_tx_marker(struct lzchan *ch, uint32_t next)
{
	/* Relaxed: the release store of the message's seq that follows orders
	 * it before the message becomes visible.  next != next + 1. */
	__lz_store(&__lzchan_slot(ch, ch->f.slots, next)->seq, next);
	__lz_cont_set(ch, next, false);
}

/* Fill the rest of the ring with a pad so the next message starts at 0. */
static int __lz_tx_pad(struct lzchan *ch)
{
	uint32_t idx = ch->f.tail & ch->f.mask, pad = ch->f.slot_count - idx;
	struct lzchan_slot_hdr *h = __lzchan_slot(ch, ch->f.slots, ch->f.tail);
	bool marker;
	int ret;

	ret = __lz_tx_room(ch, ch->f.tail + pad, &marker);
	if (ret)
		return ret;
	__lz_tx_count(ch);
	__lz_cont_set(ch, ch->f.tail, false);
	if (marker)
		__lz_tx_marker(ch, ch->f.tail + pad);
	/* The marker published with the pad. */
	__lzchan_publish(h, ch->f.tail, LZCHAN_SLOT_PAD | (pad * ch->f.slot_size - sizeof(*h)));
	ch->f.tail += pad;
	ch->stat_tail = ch->f.tail;	/* a pad is no message */
	__lzchan_tx_gate(ch);
	/* Relaxed, as in __lz_tx_publish(): the receiver checks that it
	 * is not left behind us (__lz_rx_claims_more()). */
	__lz_store(&ch->f.tx->tail, ch->f.tail);
	/* The counts, as they now stand (see __lz_tx_gate_cap()). */
	__lz_store(&ch->f.tx->msgs, ch->f.stat_msgs);
	__lz_store(&ch->f.tx->bytes, ch->f.stat_bytes);
	return 0;
}

/* Make room for @n slots at the tail (padding first if needed). */
static int __lz_tx_prepare(struct lzchan *ch, uint32_t n, bool *marker)
{
	int ret;

	if ((ch->f.tail & ch->f.mask) + n > ch->f.slot_count) {
		ret = __lz_tx_pad(ch);
		if (ret)
			return ret;
	}
	return __lz_tx_room(ch, ch->f.tail + n, marker);
}

/* Publish the message written at the tail. */
static void __lz_tx_publish(struct lzchan *ch, uint32_t len, bool marker)
{
	uint32_t start = ch->f.tail, n = __lz_slots_for(ch, len), k;
	struct lzchan_slot_hdr *h = __lzchan_slot(ch, ch->f.slots, start);

	__lz_tx_count(ch);
	__lz_cont_set(ch, start, false);
	for (k = 1; k < n; k++)
		__lz_cont_set(ch, start + k, true);
	if (marker)
		__lz_tx_marker(ch, start + n);
	/* Payload, len and the marker are visible before the message is. */
	__lzchan_publish(h, start, len);
	ch->f.tail = start + n;
	ch->stat_tail = ch->f.tail;
	__lzchan_tx_gate(ch);
	/* Statistics for the module and tools; relaxed, nobody orders on them. */
	__lz_store(&ch->f.tx->tail, ch->f.tail);
	__lz_store(&ch->f.tx->msgs, ++ch->f.stat_msgs);
	__lz_store(&ch->f.tx->bytes, ch->f.stat_bytes += len);
}

/*
 * After publishing, attn moved (or we never looked): ring the bell if the
 * receiver stopped polling our lane, wake it if it parks.  The receiver
 * pays for the store->load ordering (with membarrier() in
 * __lzchan_heavy_barrier(), after it stores attn); we need only keep the
 * compiler from hoisting the load of attn above the publishing store.
 */
static void __lz_tx_attn(struct lzchan *ch)
{
	uint32_t attn, sleepy, parked, state;
	bool owed = false;

	/* Pairs with the release store of attn (receiver: __lz_rx_attn(),
	 * after sleepy and the copy of parked; module:
	 * lzchan_chan_attn_all(), after rx_status): what was stored before
	 * it is loaded after it. */
	attn = __lz_load_acq(&ch->f.my_rxl->attn);
	/* Relaxed: ordered after attn by its acquire (the receiver stored
	 * sleepy before its release store of attn). */
	sleepy = __lz_load(&ch->f.my_rxl->sleepy);
	if ((sleepy & 1) && sleepy != ch->f.rung_sleepy) {
		/* Ring: toggle our bit (the receiver cannot write the bell,
		 * so it compares against its copy).  Once per episode. */
		__lzchan_ring(ch);
		ch->f.rung_sleepy = sleepy;
	}
	/* dev: our lane's copy of the park word (a sender maps no rx
	 * header); a receiver that parked without moving our attn (our lane
	 * was sleepy) was woken by the module's ring above.  shm: the word
	 * itself, which the file shows every party.  Relaxed: ordered after
	 * attn by its acquire; against a ring above, the receiver's heavy
	 * barrier between its store of parked and its look at the bell
	 * orders the pair (it sees our bit, or we see it parked). */
	parked = __lz_load(ch->backend == LZCHAN_BACKEND_DEV ? &ch->f.my_rxl->parked :
			   &ch->f.rx->parked);
	if ((parked & 1) && parked != ch->f.woken_parked) {
		__lzchan_wake(ch, parked);
		owed = ch->f.woken_parked != parked;	/* not reached: again */
	}
	/* A receiver gone keeps attn unseen: every send asks the library,
	 * which says -EPIPE (or, once a next receiver attached, goes on).
	 * Acquire: pairs with the release store of rx_status.  A receiver
	 * seen here is seen (__lz_tx_rx_dead()): the sends through the gate
	 * load no status, and a receiver's arrival moves attn. */
	state = LZCHAN_STATUS_STATE(__lz_load_acq(&ch->f.hdr->rx_status));
	if (state != LZCHAN_RX_NONE)
		ch->rx_seen = true;
	if (owed || state == LZCHAN_RX_GONE)
		return;
	/* Relaxed: the SIGBUS handler may store it too (lzchan_guard.c);
	 * after a cut rx_status reads GONE and we never get here. */
	__atomic_store_n(&ch->f.attn_seen, attn, __ATOMIC_RELAXED);
	if (!ch->attn_known) {
		/* The inline send may go now (see __lzchan_tx_gate()). */
		ch->attn_known = true;
		__lzchan_tx_gate(ch);
	}
}

static inline void __lz_tx_notify(struct lzchan *ch)
{
	/* Pairs with __lzchan_heavy_barrier() after the receiver stores
	 * attn: either it sees our message, or we see its store. */
	if (__lzchan_unlikely(ch->f.fence_each_send))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* Relaxed: only compared; __lz_tx_attn() loads it again, acquire.
	 * attn_seen relaxed: the SIGBUS handler may store it (on this
	 * thread, during an access above). */
	if (__lzchan_unlikely(__lz_load(&ch->f.my_rxl->attn) != __atomic_load_n(&ch->f.attn_seen, __ATOMIC_RELAXED) ||
			      !ch->attn_known))
		__lz_tx_attn(ch);
}

/* lzchan_fast.h's inline publish found a cut, or attn moved (after its
 * compiler barrier), or (a header of earlier 0.3, whose gate did not stop
 * for them) statistics due: sort them out.  Returns what the send
 * returns: 0, or the handle's lost_err (-EIO: shm, the file cut short;
 * -EPIPE: dev, our endpoint revoked). */
int __lzchan_tx_after(struct lzchan *ch)
{
	if (!ch || ch->f.role != LZCHAN_SENDER)
		return 0;
	if (!(ch->f.tail & (LZCHAN_STAT_EVERY - 1)))
		__lzchan_tx_stats(ch);
	if (__lzchan_cut(&ch->f) && __lzchan_guard_lost(ch->guard))
		return ch->lost_err;
	/* Relaxed: only compared (after the inline publish's compiler
	 * barrier); __lz_tx_attn() loads it again, acquire.  attn_seen
	 * relaxed: the SIGBUS handler may store it. */
	if (__lz_load(&ch->f.my_rxl->attn) != __atomic_load_n(&ch->f.attn_seen, __ATOMIC_RELAXED))
		__lz_tx_attn(ch);
	return 0;
}

/* The handle's lost_err if its mapping was lost -- -EIO on shm (the file
 * cut short under us), -EPIPE on dev (our endpoint revoked: a departed
 * peer's error) -- else 0: asked after __lzchan_cut() saw the handler's
 * mark. */
int __lzchan_lost(struct lzchan *ch)
{
	return ch && __lzchan_guard_lost(ch->guard) ? ch->lost_err : 0;
}

/* After touching channel memory: did that access meet a cut?  The
 * handle's lost_err then, whatever @ret the call would have returned. */
static inline int __lz_touched(struct lzchan *ch, int ret)
{
	int lost = __lzchan_cut(&ch->f) ? __lzchan_lost(ch) : 0;

	return lost ? lost : ret;
}

static int __lz_tx_check(struct lzchan *ch, size_t len)
{
	uint64_t st;

	if (!ch || ch->f.role != LZCHAN_SENDER)
		return -EBADF;
	if (ch->f.reserved)
		return -EBUSY;
	if (len > ch->max_msg)
		return -EMSGSIZE;
	/* Pairs with the release store of rx_status: a departed receiver
	 * ends sending at once, not when the ring fills. */
	st = __lz_load_acq(&ch->f.hdr->rx_status);
	if (LZCHAN_STATUS_STATE(st) != LZCHAN_RX_NONE)
		ch->rx_seen = true;	/* see __lz_tx_rx_dead() */
	if (__lzchan_unlikely(LZCHAN_STATUS_STATE(st) == LZCHAN_RX_GONE)) {
		/* The mapping lost (shm: the file cut short under us; dev:
		 * our endpoint revoked) says "gone" too. */
		if (__lzchan_guard_lost(ch->guard))
			return ch->lost_err;
		if (__lz_tx_rx_gone(ch))
			return -EPIPE;
	}
	return 0;
}

static int __lz_send_one(struct lzchan *ch, const void *buf, size_t len)
{
	bool marker;
	int ret;

	ret = __lz_tx_prepare(ch, __lz_slots_for(ch, len), &marker);
	if (ret)
		return ret;
	if (len)	/* buf may be NULL for an empty message */
		memcpy(__lzchan_slot(ch, ch->f.slots, ch->f.tail) + 1, buf, len);
	__lz_tx_publish(ch, len, marker);
	return 0;
}

/*
 * The library's send of one message: the inline send's own code
 * (__lzchan_fast_room_rxl(), __lzchan_fast_put(); memcpy() for a one-slot
 * payload longer than the inline copy's) when the gate, computed again
 * here, lets it, else
 * the general path (__lz_tx_prepare()), which takes everything: a message
 * of several slots, a wrap, a stale payload word, a ring full by the
 * cached head, the counts' stop, a sender that fences every send.
 */
static int __lz_send(struct lzchan *ch, const void *buf, size_t len)
{
	int ret;

	/* The gate's test without taking from it on a refusal (the inline
	 * commit reads a gate below 0 as its reservation's mark). */
	__lzchan_tx_gate(ch);
	if (__lzchan_fast_room_rxl(&ch->f, len, __lz_gate_max(ch), ch->f.my_rxl)) {
		const struct lzchan_shm_rx_lane *rxl = ch->f.my_rxl;
		struct lzchan_slot_hdr *h;

		ch->f.tx_room--;
		if (len <= LZCHAN_INLINE_MAX)
			return __lzchan_fast_put(ch, buf, len, rxl);
		/* Longer than the inline copy takes: one slot still. */
		h = __lzchan_slot(ch, ch->f.slots, ch->f.tail);
		memcpy(h + 1, buf, len);
		return __lzchan_fast_publish_rxl(ch, &ch->f, h, ch->f.tail, (uint32_t)len, rxl);
	}
	ret = __lz_tx_check(ch, len);
	if (ret)
		return ret;
	ret = __lz_send_one(ch, buf, len);
	if (ret)
		return __lz_touched(ch, ret);
	__lz_tx_notify(ch);
	return __lz_touched(ch, 0);
}

int lzchan_send(struct lzchan *ch, const void *buf, size_t len)
{
	/* The inline send takes a position from the gate as it tests it,
	 * and comes here when the test fails: __lz_send() computes it
	 * again; a receiver's handle keeps it 0 (its tx_max lets an empty
	 * message test it). */
	if (__lzchan_unlikely(!ch || ch->f.role != LZCHAN_SENDER)) {
		if (!ch)
			return -EBADF;
		/* The inline gate took a position from 0 (an empty message
		 * passes its length test): shut it again, or the inline
		 * commit would read a reservation's mark. */
		ch->f.tx_room = 0;
		return ch->ps ? __lzchan_ps_send(ch, buf, len) : -EBADF;
	}
	return __lz_send(ch, buf, len);
}

/*
 * Wait until the receiver has taken every message sent on @ch: its
 * published head reaches our tail (a receiver publishes it exactly when it
 * catches up, and before it parks).
 */
int lzchan_flush(struct lzchan *ch, int64_t timeout_ns)
{
	uint64_t start = __lzchan_now_ns(), now = start, deadline, look = 0;
	unsigned int tries = 0;
	bool given_up;

	if (!ch || ch->f.role != LZCHAN_SENDER)
		return ch && ch->ps ? __lzchan_ps_flush(ch, timeout_ns) : -EBADF;
	if (!__lzchan_guard_lost(ch->guard))
		__lzchan_tx_stats(ch);
	deadline = timeout_ns < 0 ? UINT64_MAX : start + (uint64_t)timeout_ns;
	for (;;) {
		/* Pairs with the release store of rx_status. */
		uint64_t st = __lz_load_acq(&ch->f.hdr->rx_status);

		if (__lzchan_guard_lost(ch->guard))
			return ch->lost_err;
		/* Pairs with the receiver's release store of head: it has
		 * read what it released. */
		if (__lz_load_acq(&ch->f.my_rxl->head) == ch->f.tail)
			return 0;
		given_up = __lz_tx_given_up(ch);
		/* shm: a receiver that died (its lock; first, as in
		 * __lz_tx_full(), and before NONE, which it may make a lie).
		 * Its status and head were loaded before its lock was looked
		 * at: one that took everything and closed in between is not
		 * an end.  Acquire: pairs with the release store of head in
		 * its close, which precedes its unlock. */
		if (__lz_tx_rx_dead(ch, st, &look))
			return __lz_load_acq(&ch->f.my_rxl->head) == ch->f.tail ? 0 : -EPIPE;
		if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_NONE && !ch->rx_seen)
			return -ENOTCONN;	/* they wait for the first receiver */
		if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_GONE && __lz_tx_rx_gone(ch))
			return -EPIPE;
		/* Our lane was given up: what is left will never be read. */
		if (given_up)
			return -EBADMSG;
		if (now >= deadline)
			return -ETIMEDOUT;
		if (__lzchan_woken(ch))
			return -EINTR;
		if (++tries < 64) {
			sched_yield();
		} else {
			/* 20 us, growing to 1 ms: a receiver that takes long
			 * is not polled hard. */
			struct timespec ts = { .tv_nsec = tries < 1000 ? 20000 : 1000000 };

			if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
				return -EINTR;
		}
		now = __lzchan_now_ns();
	}
}

/*
 * The batch's common case: up to @n one-slot messages from @msgs into the
 * room the inline gate vouches for (tx_room: no reservation, no message
 * ever spanned slots, free by the cached head), each published as
 * __lzchan_fast_publish_rxl() does, with the tail, the counts and the stall
 * check's tail word stored once for the run.  Stops at a message too long
 * for one slot or one whose copy met a cut (*cut set; the ones before it
 * went out).  Returns how many were sent.
 */
static unsigned int __lz_send_run(struct lzchan *ch, const struct iovec *msgs, unsigned int n,
				  bool *cut)
{
	uint32_t tail = ch->f.tail, room = ch->f.tx_room, max = ch->f.tx_max, k;
	const uint32_t *cutw = &ch->f.cut;	/* as __lzchan_cut() reads it */
	size_t step = ch->f.slot_size;
	const struct iovec *v, *end;
	struct lzchan_shm_tx *tx = ch->f.tx;
	uint64_t bytes = 0, msgs_now;
	uint32_t seq;
	char *s;

	/* The gate's room, or (when it is shut, or short of the batch) the
	 * room it summarises without its stop at the next count: the run
	 * stores the counts itself.  (Never more than that room: the gate
	 * is that room or less, and shut by an inline reservation.) */
	if ((int32_t)room <= 0 || room < n)
		room = __lz_tx_gate_room(ch);
	if (!room)
		return 0;
	/* Pairs with the release store of rx_status, as in __lz_tx_check(). */
	if (LZCHAN_STATUS_STATE(__lz_load_acq(&ch->f.hdr->rx_status)) == LZCHAN_RX_GONE)
		return 0;
	if (n > room)
		n = room;
	/* Up to the ring's end, so that the slot steps by its size (the
	 * caller goes on past it), with the geometry in registers: the
	 * copies' stores may alias the handle. */
	k = ch->f.slot_count - (tail & ch->f.mask);
	if (n > k)
		n = k;
	/* The slots walked by their payload's address (the header is just
	 * before it), and seq counted along (tail + 1 for the first): the
	 * loop keeps nothing else. */
	s = (char *)(__lzchan_slot(ch, ch->f.slots, tail) + 1);
	for (v = msgs, end = msgs + n, seq = tail + 1; v < end; v++, s += step, seq++) {
		size_t len = v->iov_len;
		struct lzchan_slot_hdr *h = (struct lzchan_slot_hdr *)s - 1;

		if (len > max)
			break;
		__lzchan_copy(s, v->iov_base, len);
		__lzchan_publish(h, seq - 1, (uint32_t)len);
		bytes += len;
	}
	k = (uint32_t)(v - msgs);
	/* Did an access above meet a cut (shm: the SIGBUS handler, on this
	 * thread, marked the handle's word during it; the signal fence
	 * keeps the load after them)?  Then the mapping is private zeros
	 * from that access on: the messages written before it are gone
	 * from our view (their seq reads 0), the one that met it and those
	 * after were written into the zeros (their seq reads what we
	 * stored).  The first of those is where the run ended; an unsent
	 * one is never counted sent (a seq of 0, every 2^32 positions,
	 * counts as unsent). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__lzchan_unlikely(__atomic_load_n(cutw, __ATOMIC_RELAXED) != 0)) {
		uint32_t j;

		*cut = true;
		s = (char *)__lzchan_slot(ch, ch->f.slots, tail);
		for (j = 0, bytes = 0; j < k; j++, s += step) {
			/* Relaxed: our own store, or the zeros of the
			 * replacement. */
			if (__lz_load(&((struct lzchan_slot_hdr *)s)->seq) != 0 ||
			    tail + j + 1 == 0)
				break;
			bytes += msgs[j].iov_len;
		}
		k = j;
	}
	if (!k)
		return 0;
	tail += k;
	/* The counts: the inline sends' since the last count (one message
	 * a position, as __lz_tx_count() counts them) and the run's. */
	msgs_now = ch->f.stat_msgs + (uint32_t)(tail - ch->stat_tail);
	bytes += ch->f.stat_bytes;
	ch->f.tail = tail;
	ch->stat_tail = tail;
	/* Relaxed atomic: plain stores, which gcc would otherwise pair up
	 * through a vector register (more instructions, not fewer). */
	__atomic_store_n(&ch->f.stat_msgs, msgs_now, __ATOMIC_RELAXED);
	__atomic_store_n(&ch->f.stat_bytes, bytes, __ATOMIC_RELAXED);
	/* Relaxed, as in __lzchan_fast_publish_rxl(). */
	__lz_store(&tx->tail, tail);
	__lz_store(&tx->msgs, msgs_now);
	__lz_store(&tx->bytes, bytes);
	/* The gate, kept: k positions taken, and the counts just stored
	 * (__lz_tx_gate_cap() with none since them). */
	room -= k;
	ch->f.tx_room = room < LZCHAN_STAT_EVERY - 1 ? room : LZCHAN_STAT_EVERY - 1;
	return k;
}

/* The batch past its first run (which sent @i of @n; *@cut: the run met a
 * cut): runs and single sends in turn. */
static __attribute__((noinline)) int __lz_send_batch_more(struct lzchan *ch,
							   const struct iovec *msgs,
							   unsigned int n, unsigned int i,
							   bool cut)
{
	int ret = 0;

	while (!cut && i < n) {
		/* One the general way (a long message, a full view of the
		 * lane, the ring's end: which refreshes the gate for the next
		 * run)... */
		ret = __lz_send(ch, msgs[i].iov_base, msgs[i].iov_len);
		if (ret)	/* lost_err: this one met a cut, those before went out */
			break;
		i++;
		/* ...then as many as the gate allows in one run. */
		i += __lz_send_run(ch, msgs + i, n - i, &cut);
	}
	if (cut)
		ret = ch->lost_err;
	ret = __lz_touched(ch, ret);
	if (i)
		__lz_tx_notify(ch);
	return i ? (int)i : ret;
}

int lzchan_send_batch(struct lzchan *ch, const struct iovec *msgs, unsigned int n)
{
	unsigned int i;
	bool cut = false;

	if (ch && ch->ps) {
		int r = 0;

		/* One message after the other, as far as they go. */
		for (i = 0; i < n && !(r = __lzchan_ps_send(ch, msgs[i].iov_base,
							     msgs[i].iov_len)); i++)
			;
		return i ? (int)i : r;
	}
	if (!ch || ch->f.role != LZCHAN_SENDER)
		return -EBADF;
	/* The common case: one run sends them all (no cut met: it would
	 * have stopped short). */
	i = __lz_send_run(ch, msgs, n, &cut);
	if (__lzchan_likely(i == n && i)) {
		__lz_tx_notify(ch);
		return (int)n;
	}
	return __lz_send_batch_more(ch, msgs, n, i, cut);
}

int lzchan_reserve(struct lzchan *ch, size_t len, void **buf)
{
	bool marker;
	int ret;

	/* Through the gate, computed again, as lzchan_send() does. */
	if (__lzchan_likely(ch && ch->f.role == LZCHAN_SENDER && buf)) {
		__lzchan_tx_gate(ch);
		if (__lzchan_fast_room_rxl(&ch->f, len, __lz_gate_max(ch), ch->f.my_rxl)) {
			__lzchan_fast_reserve(&ch->f, len, buf);
			return 0;
		}
	}
	if (ch && ch->ps) {
		ch->f.tx_room = 0;	/* as in lzchan_send() */
		return __lzchan_ps_reserve(ch, len, buf);
	}
	ret = __lz_tx_check(ch, len);

	if (ret)
		return ret;
	if (!buf)
		return -EINVAL;
	ret = __lz_tx_prepare(ch, __lz_slots_for(ch, len), &marker);
	if (ret)
		return __lz_touched(ch, ret);
	ch->f.reserved = true;
	ch->f.resv_len = len;
	__lzchan_tx_gate(ch);
	*buf = __lzchan_slot(ch, ch->f.slots, ch->f.tail) + 1;
	return 0;
}

int lzchan_commit(struct lzchan *ch, size_t len)
{
	uint32_t k;
	bool marker;

	if (!ch || ch->f.role != LZCHAN_SENDER) {
		if (!ch || !ch->ps)
			return -EBADF;
		ch->f.tx_room = 0;	/* as in lzchan_send() */
		return __lzchan_ps_commit(ch, len);
	}
	if (!ch->f.reserved || len > ch->f.resv_len)
		return -EINVAL;
	/* One made through the gate (bit 31 of tx_room: no library call
	 * since shut it) is committed through it; any other the general
	 * way. */
	if (__lzchan_fast_resv(&ch->f, len))
		return __lzchan_fast_commit(ch, len);
	/* The reserved slots this message does not use may hold payload
	 * where their headers go: the caller may have written all it
	 * reserved (a word there could read as the next message's seq).
	 * Marked as holding payload, so a marker follows the message and
	 * later messages ending before them place theirs (test
	 * commit_less_than_reserved_sends_no_phantom). */
	for (k = __lz_slots_for(ch, len); k < __lz_slots_for(ch, ch->f.resv_len); k++)
		__lz_cont_set(ch, ch->f.tail + k, true);
	/* The reservation's room is ours: no new look at the head (which the
	 * receiver may have moved anywhere since, hostile or broken; a
	 * commit cannot fail for room).  Only the marker depends on where
	 * this message ends, and it fits: at most as far as the reserved
	 * message's end and its own marker, checked at reserve. */
	marker = __lz_cont_test(ch, ch->f.tail + __lz_slots_for(ch, len));
	ch->f.reserved = false;
	__lz_tx_publish(ch, len, marker);
	__lz_tx_notify(ch);
	return __lz_touched(ch, 0);
}

/* ==================== receiver ==================== */

static inline void __lz_rx_publish(struct lzchan *ch, struct __lzchan_rxlane *rl, bool force)
{
	if (rl->head == rl->published ||
	    (!force && rl->head - rl->published < ch->f.publish_every))
		return;
	/* Pairs with the sender's acquire load of head in __lz_tx_room():
	 * our reads of the released slots are done before it reuses them. */
	__lz_store_rel(&rl->rxl->head, rl->head);
	rl->published = rl->head;
}

void __lzchan_rx_publish_all(struct lzchan *ch)
{
	uint32_t i;

	for (i = 0; i < ch->f.max_senders; i++)
		__lz_rx_publish(ch, &ch->f.lanes[i], true);
}

/*
 * Lane @rxl's sender must look closer: we just stored its sleepy, or
 * rx->parked, or rx_status (GONE).  The lane's copy of parked goes first
 * (the sender reads that, not rx->parked: ABI 4).  Release: pairs with the
 * acquire load of attn in __lz_tx_attn(), which then sees those stores.
 * Only the receiver (and the module, once it is gone) writes attn: the
 * relaxed load is our own last store.
 */
static inline void __lz_rx_attn(struct lzchan *ch, struct lzchan_shm_rx_lane *rxl)
{
	/* Relaxed: published by the release store of attn below. */
	__lz_store(&rxl->parked, ch->parked);
	__lz_store_rel(&rxl->attn, __lz_load(&rxl->attn) + 1);
}

/* About to park: every polled lane's sender must look at its copy of
 * parked (the others' attn moved when they went sleepy; a sender that
 * since rang their bell is found by the look at the bell before we sleep,
 * or wakes us in the ring: __lzchan_ring()). */
void __lzchan_rx_attn_active(struct lzchan *ch)
{
	uint32_t k;

	for (k = 0; k < ch->f.nactive; k++)
		__lz_rx_attn(ch, ch->f.lanes[ch->f.active[k]].rxl);
}

/* Awake again: the polled lanes' copies of parked say so (relaxed, no
 * attn).  Their senders saw the park through attn; one that reads the
 * copy only now owes no wake -- we poll its lane from here on, and a next
 * park moves attn again -- where the park's odd copy would have made it
 * wake us for nothing, and our next park return at once. */
void __lzchan_rx_unpark_copies(struct lzchan *ch)
{
	uint32_t k;

	for (k = 0; k < ch->f.nactive; k++)
		/* Relaxed: read after attn's acquire (__lz_tx_attn()); either
		 * value is right to read now. */
		__lz_store(&ch->f.lanes[ch->f.active[k]].rxl->parked, ch->parked);
}

/* Gone (shm; the module does it on the dev backend): every sender. */
void __lzchan_rx_attn_all(struct lzchan *ch)
{
	uint32_t i;

	for (i = 0; i < ch->f.max_senders; i++)
		__lz_rx_attn(ch, ch->f.lanes[i].rxl);
}

/* Take back the inline "empty" verdicts granted and not yet given (see
 * __lz_turn_grant()): something their conditions do not see changed (a
 * lane became active, an end became owed, the receiver armed).  Only the
 * ones given are the library's quick verdicts, counted at the next
 * settle. */
void __lzchan_rx_quiet_revoke(struct lzchan *ch)
{
	ch->grant_quiet -= ch->f.quiet;
	ch->f.quiet = 0;
}

/*
 * A lane we are about to acknowledge (close_ack) goes unpolled from now
 * on: mark it sleepy first.  The next sender it is given to attaches after
 * the module (or a shm claimer) saw close_ack with acquire, so its first
 * send sees "sleepy" and rings the bell; marked only later (by
 * __lz_active_del()), a single message sent in between waited for a scan.
 */
static void __lz_rx_sleepy_before_ack(struct lzchan *ch, struct __lzchan_rxlane *rl)
{
	if (rl->sleepy & 1)
		return;
	rl->sleepy++;
	/* Relaxed: published by the release stores of attn and close_ack. */
	__lz_store(&rl->rxl->sleepy, rl->sleepy);
	__lz_rx_attn(ch, rl->rxl);
}

static void __lz_active_add(struct lzchan *ch, uint32_t i)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[i];

	if (rl->state == __LZ_RL_ACTIVE)
		return;
	if (rl->state == __LZ_RL_DONE) {
		/* Its sender's end was delivered.  Pairs with the release store
		 * of the lane status (module, or a shm claimer): only a new
		 * sender makes the lane worth polling, and its messages must
		 * carry its generation -- else the old end would be owed again
		 * when the new generation is noticed. */
		uint64_t st = __lz_load_acq(&rl->info->status);

		if (LZCHAN_STATUS_GEN(st) == rl->gen)
			return;
		rl->gen = LZCHAN_STATUS_GEN(st);
	}
	rl->state = __LZ_RL_ACTIVE;
	rl->idle = 0;
	ch->activations++;	/* a park under way must look again */
	__lzchan_rx_quiet_revoke(ch);	/* cur is no longer the only lane */
	if (rl->sleepy & 1) {
		rl->sleepy++;
		/* Relaxed: a hint for the sender; messages are found by seq.
		 * Published by the release store of attn. */
		__lz_store(&rl->rxl->sleepy, rl->sleepy);
		__lz_rx_attn(ch, rl->rxl);
	}
	ch->f.active[ch->f.nactive++] = i;
}

static void __lz_active_del(struct lzchan *ch, uint32_t k, uint32_t state)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[ch->f.active[k]];

	rl->state = state;
	if (!(rl->sleepy & 1)) {
		rl->sleepy++;
		/* Relaxed here (published by the release store of attn);
		 * __lzchan_heavy_barrier() follows before we rely on senders
		 * having seen attn (see __lz_rx_sleep()). */
		__lz_store(&rl->rxl->sleepy, rl->sleepy);
		__lz_rx_attn(ch, rl->rxl);
	}
	ch->f.active[k] = ch->f.active[--ch->f.nactive];
	if (ch->f.rr >= ch->f.nactive)
		ch->f.rr = 0;
	if (ch->f.cur == rl) {
		/* No span of a lane we stopped polling (an ended or broken
		 * one must not be read again). */
		ch->f.cur = &ch->no_turn;
		ch->f.cur_lane = LZCHAN_LANE_NONE;
		ch->f.span = 0;
	}
}

/* Does lane @rl need polling: a message ready, or a status change? */
static bool __lz_rx_lane_pending(struct lzchan *ch, struct __lzchan_rxlane *rl)
{
	/* Pairs with the release stores of seq and of the lane status. */
	uint64_t st = __lz_load_acq(&rl->info->status);

	/* Views of the lane still out: its end waits for their release,
	 * which only this receiver makes (__lz_rx_empty()), so an end is not
	 * pending until then -- else a receiver holding a view of a closed
	 * lane would never park, and spin. */
	bool viewed = rl->peek != rl->head;

	if (rl->state == __LZ_RL_BROKEN)
		return false;
	if (LZCHAN_STATUS_GEN(st) != rl->gen) {
		/* An end of stream is owed to the user: pending.  Else a new
		 * sender arrived with nothing owed: just follow it. */
		if (rl->gen && rl->state != __LZ_RL_DONE)
			return !viewed;
		rl->gen = LZCHAN_STATUS_GEN(st);
		if (rl->state == __LZ_RL_DONE)
			rl->state = __LZ_RL_IDLE;
	}
	if (LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_CLOSED && rl->state != __LZ_RL_DONE &&
	    !viewed && __lz_rx_sender_gone(ch, (uint32_t)(rl - ch->f.lanes), true))
		return true;
	return __lzchan_lane_ready(&ch->f, rl);
}

void __lzchan_rx_init_lanes(struct lzchan *ch)
{
	uint32_t i;

	ch->sleepy_after = SLEEPY_AFTER;
	ch->f.rx_max = __lz_inline_max(ch);
	/* The inline peek's and release's bounds (0 in a sender's handle). */
	ch->f.rx_payload = ch->f.slot_size - sizeof(struct lzchan_slot_hdr);
	ch->f.rx_lanes = ch->f.max_senders;
	/* Continue the park episodes of earlier receivers (awake: even), so
	 * no sender takes a new episode for one it already woke. */
	/* Relaxed: only we write parked; senders read it (dev: their lane's
	 * copy) after publishing (see __lz_tx_notify()), and we are not
	 * parked yet. */
	ch->parked = (__lz_load(&ch->f.rx->parked) + 1) & ~1U;
	/* An earlier receiver may have left armed (it closed or died while
	 * waiting on its event fd): we park on the futex until we arm.
	 * Relaxed: published by the release store of parked. */
	__lz_store(&ch->f.rx->armed, 0);
	__lz_store_rel(&ch->f.rx->parked, ch->parked);
	/* Before the lane statuses: a departure after this load moves the
	 * count again.  Pairs with the release of departures by the module
	 * or a shm sender (see __lz_rx_bell()). */
	ch->departures_seen = __lz_load_acq(&ch->f.hdr->departures);
	for (i = 0; i < ch->f.max_senders; i++) {
		struct __lzchan_rxlane *rl = &ch->f.lanes[i];
		/* Pairs with the release store of the lane status (module or
		 * shm sender): what it says about the lane is visible. */
		uint64_t st = __lz_load_acq(&rl->info->status);

		/* Continue where the last receiver published (0 at first).
		 * Relaxed: words only receivers write, and we are the one. */
		rl->head = rl->peek = rl->published = __lz_load(&rl->rxl->head);
		rl->sleepy = __lz_load(&rl->rxl->sleepy);
		rl->gen = LZCHAN_STATUS_GEN(st);
		rl->state = __LZ_RL_IDLE;
		if (LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_FREE ||
		    (LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_CLOSED &&
		     __lz_load(&rl->rxl->close_ack) == rl->gen)) {
			/* Nothing to read: sleepy until its bell rings. */
			if (!(rl->sleepy & 1)) {
				rl->sleepy++;
				/* Relaxed: published by the release of attn. */
				__lz_store(&rl->rxl->sleepy, rl->sleepy);
				__lz_rx_attn(ch, rl->rxl);
			}
			if (LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_CLOSED)
				rl->state = __LZ_RL_DONE;
		} else {
			__lz_active_add(ch, i);
		}
	}
	/* Relaxed: the bell is a hint, compared against later (see
	 * __lz_rx_bell()); the barrier below covers rings before this. */
	for (i = 0; i < ch->bell_words; i++)
		ch->bell_seen[i] = __lz_load(&ch->bell[i]);
	/* Senders that published before seeing "sleepy" are found here. */
	__lzchan_heavy_barrier(ch);
	for (i = 0; i < ch->f.max_senders; i++)
		if (ch->f.lanes[i].state != __LZ_RL_ACTIVE &&
		    __lz_rx_lane_pending(ch, &ch->f.lanes[i]))
			__lz_active_add(ch, i);
}

/*
 * The message at *pos, skipping a pad: 1 (filled *m), 0 (none yet), or
 * -EBADMSG (the lane holds garbage).  *pos moves past a skipped pad.
 */
static int __lz_rx_look(struct lzchan *ch, const struct __lzchan_rxlane *rl,
			uint32_t *pos, struct lzchan_msg *m)
{
	const struct lzchan_slot_hdr *h;
	uint32_t raw, idx, n;
	int pads;

	for (pads = 0; ; pads++) {
		h = __lzchan_slot(ch, rl->slots, *pos);
		if (!__lzchan_ready(h, *pos))
			return 0;
		raw = __lz_load(&h->len);	/* after seq's acquire; once: the sender may change it */
		idx = *pos & ch->f.mask;
		if (raw & LZCHAN_SLOT_PAD) {
			/* A pad runs to the ring's end, and says so in its
			 * length (__lz_tx_pad()): a forged one would make us
			 * skip what the sender wrote.  At slot 0 it would
			 * cover the whole ring, and two never follow. */
			if (!idx || pads ||
			    (raw & LZCHAN_SLOT_LEN_MASK) != (uint64_t)(ch->f.slot_count - idx) *
							      ch->f.slot_size -
							      sizeof(struct lzchan_slot_hdr))
				return -EBADMSG;
			/* shm: a pad is taken only once its sender's tail has
			 * passed it.  A stale pad from the last lap under a
			 * forged seq (anyone may write the file) is exact in
			 * length too, and skipping it would pass over what
			 * the sender writes next; an honest sender stores its
			 * tail right after the pad's seq (__lz_tx_pad()).
			 * Relaxed: a tail not seen yet only means "not yet". */
			if (ch->backend == LZCHAN_BACKEND_SHM &&
			    (int32_t)(__lz_load(&((const struct lzchan_shm_tx *)
						   (rl->slots - ch->layout.lane_slots))->tail) -
				      (*pos + ch->f.slot_count - idx)) < 0)
				return 0;
			*pos += ch->f.slot_count - idx;
			continue;
		}
		if (raw > ch->max_msg)
			return -EBADMSG;
		n = __lz_slots_for(ch, raw);
		if (idx + n > ch->f.slot_count)
			return -EBADMSG;
		m->data = h + 1;
		m->len = raw;
		m->__end = *pos + n;
		return 1;
	}
}

/* An end of stream is being reported for lane @i's sender of @gen: how
 * did it leave (lzchan_end_cause())? */
static void __lz_rx_ended(struct lzchan *ch, uint32_t i, uint32_t gen)
{
	const struct lzchan_shm_lane *info = ch->f.lanes[i].info;

	/* Relaxed: stored before the CLOSED status (or the new generation's)
	 * that our caller loaded with acquire. */
	if (!ch->bye_known)
		ch->watch[i].end_cause = LZCHAN_END_UNKNOWN;
	else
		ch->watch[i].end_cause = __lz_load(&info->bye) == gen ? LZCHAN_END_CLOSED :
									LZCHAN_END_LOST;
}

/*
 * A pad the peek skipped while views were outstanding stays behind the
 * head when they are released: nothing releases it (no view covers it),
 * the head never reaches the peek, and the sender, whose next message
 * needs the ring from its start, waits for ever.  Once the head is at
 * the pad -- the views before it released -- take it: it runs to the
 * ring's end (__lz_rx_look() checked it when it skipped it), which the
 * peek has passed.  Pairs with the sender's release store of the pad's
 * seq; a sender that rewrote the slot since only makes us keep it.
 */
static void __lz_rx_pad_behind(struct lzchan *ch, struct __lzchan_rxlane *rl)
{
	const struct lzchan_slot_hdr *h;
	uint32_t idx = rl->head & ch->f.mask, end = rl->head + (ch->f.slot_count - idx);

	if (rl->head == rl->peek || !idx || end - rl->head > rl->peek - rl->head)
		return;
	h = __lzchan_slot(ch, rl->slots, rl->head);
	if (__lzchan_ready(h, rl->head) && (__lz_load(&h->len) & LZCHAN_SLOT_PAD))
		rl->head = end;
}

/* Lane @i has nothing ready at peek: report a status change if any. */
static int __lz_rx_empty(struct lzchan *ch, uint32_t i, struct lzchan_msg *m)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[i];
	uint32_t pos = rl->peek;
	uint64_t st;
	int r;

	__lz_rx_pad_behind(ch, rl);
	if (rl->peek != rl->head) {
		/* Views outstanding: no verdict yet; what was released is
		 * published when due. */
		__lz_rx_publish(ch, rl, false);
		return -EAGAIN;
	}
	/* Caught up: let the sender see all the room (lazy flow control
	 * publishes only every publish_every slots while busy). */
	__lz_rx_publish(ch, rl, true);
	/* Pairs with the release store of the status (module, or a shm
	 * sender's close/claim): a CLOSED we see comes after every message. */
	st = __lz_load_acq(&rl->info->status);
	if (LZCHAN_STATUS_GEN(st) != rl->gen) {
		/* A new sender took the lane; the old one's end comes first. */
		bool owed = rl->gen && rl->state != __LZ_RL_DONE;

		if (owed)
			__lz_rx_ended(ch, i, rl->gen);
		rl->gen = LZCHAN_STATUS_GEN(st);
		if (rl->state == __LZ_RL_DONE)
			rl->state = __LZ_RL_IDLE;
		if (owed) {
			m->lane = i;
			return -EPIPE;
		}
	}
	if (rl->state == __LZ_RL_DONE)
		return -EAGAIN;
	if (LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_CLOSED)
		return __lz_rx_stalled(ch, i, pos) ? -EBADMSG : -EAGAIN;
	/* shm: a CLOSED its sender's lock denies is not an end (yet). */
	if (!__lz_rx_sender_gone(ch, i, false)) {
		ch->departed = true;	/* look again (__lz_rx_departed()) */
		return -EAGAIN;
	}

	/* Closed: one more look now that its last stores are visible. */
	r = __lz_rx_look(ch, rl, &pos, m);
	if (r)
		return r > 0 ? 1 : r;
	/* It says it stands elsewhere: not a clean end. */
	if (__lz_rx_claims_more(ch, rl, pos))
		return -EBADMSG;
	rl->peek = rl->head = pos;
	rl->state = __LZ_RL_DONE;
	__lz_rx_publish(ch, rl, true);
	__lz_rx_sleepy_before_ack(ch, rl);
	/* Pairs with the module's smp_load_acquire(&close_ack) (or a shm
	 * claimer's): the lane is drained before it may be given away. */
	__lz_store_rel(&rl->rxl->close_ack, rl->gen);
	__lz_rx_ended(ch, i, rl->gen);
	m->lane = i;
	return -EPIPE;
}

/*
 * Broken lanes.  A lane that held garbage is abandoned: -EBADMSG, and
 * nothing its sender writes is delivered any more.  But the lane must not
 * stay burnt: the module (and a shm claimer) gives a closed lane to a new
 * sender only once we acknowledge it (close_ack), so once the sender has
 * gone we acknowledge it as an ended one and report its end (-EPIPE).  A
 * hostile sender wastes its own lane, never the channel.
 *
 * "Gone": the status says CLOSED for the generation we know (its last
 * reference went: nothing writes the lane any more), with no view of its
 * earlier messages outstanding (a new sender's scrub would change what
 * the caller still reads); or a newer generation holds the lane -- with
 * no receiver attached, the module also reuses a lane when no message is
 * ready at the published head (we may have attached during its scrub).
 */
static bool __lz_rx_broken_over(struct lzchan *ch, uint32_t i)
{
	const struct __lzchan_rxlane *rl = &ch->f.lanes[i];
	/* Pairs with the release store of the lane status (module, a shm
	 * sender's close or claim, a receiver's liveness CAS). */
	uint64_t st = __lz_load_acq(&rl->info->status);

	if (LZCHAN_STATUS_GEN(st) != rl->gen)
		return true;
	/* shm: a CLOSED its sender's lock denies is not its end (a forged
	 * word must not end a live sender's lane for ever). */
	return LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_CLOSED && rl->peek == rl->head &&
	       __lz_rx_sender_gone(ch, i, false);
}

/*
 * The generation a view of lane @rl carries: its sender's.  A lane first
 * read straight from its slots (lzchan_peek_lane() on a lane the library
 * has not polled before) does not know it yet (0, see __lz_rx_empty()):
 * learn it from the lane status, whose sender is the one that wrote what
 * is there -- another could have the lane only after an end of stream
 * the receiver was told of.  A view carrying 0 would never be released
 * (lzchan_release() ignores views of another generation), and the lane
 * would fill up behind it.  Pairs with the release store of the status.
 */
static inline uint32_t __lz_rx_view_gen(struct __lzchan_rxlane *rl)
{
	if (__lzchan_unlikely(!rl->gen))
		rl->gen = LZCHAN_STATUS_GEN(__lz_load_acq(&rl->info->status));
	return rl->gen;
}

/* Lane @i was just found holding garbage (-EBADMSG is being reported). */
static void __lz_rx_broke(struct lzchan *ch, uint32_t i)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[i];

	rl->state = __LZ_RL_BROKEN;
	/* A lane first seen through the bell does not know its sender's
	 * generation yet (0: none known, see __lz_rx_empty()); the sender
	 * there now is the one to blame.  Pairs with the release store of
	 * the lane status, as in __lz_rx_broken_over(). */
	if (!rl->gen)
		rl->gen = LZCHAN_STATUS_GEN(__lz_load_acq(&rl->info->status));
	/* Our head stops here: with no views outstanding nothing moves it
	 * until the acknowledgement, so a new sender that gets the lane
	 * without one starts where we resume (__lz_rx_broken()). */
	__lz_rx_publish(ch, rl, true);
	/* Tell its sender, which would otherwise wait on a full ring for
	 * ever (__lz_tx_full(), lzchan_flush()).  Relaxed: advisory, read
	 * only to turn a wait into -EBADMSG; the generation keeps it from a
	 * later sender of the lane. */
	__lz_store(&rl->rxl->broken, rl->gen);
	/* Its sender may be gone already: the end is owed at once. */
	if (__lz_rx_broken_over(ch, i)) {
		ch->broken_over = true;
		ch->quiet_left = 0;
		__lzchan_rx_quiet_revoke(ch);
	}
}

/* Broken lane @i: -EBADMSG while its sender is there; once it has gone,
 * its end (-EPIPE, once) and the acknowledgement that frees the lane. */
static int __lz_rx_broken(struct lzchan *ch, uint32_t i, struct lzchan_msg *m)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[i];
	/* Pairs with the release store of the lane status (module, a shm
	 * sender's close or claim, a receiver's liveness CAS): CLOSED means
	 * its sender's last reference went. */
	uint64_t st = __lz_load_acq(&rl->info->status);

	m->lane = i;
	if (LZCHAN_STATUS_GEN(st) != rl->gen) {
		/* A new sender took the lane without our acknowledgement (it
		 * was reused while no receiver was attached); it started at
		 * the published head, and so do we (views of the old sender's
		 * messages lapse with its generation).  The old sender's end
		 * comes first. */
		__lz_rx_ended(ch, i, rl->gen);
		rl->gen = LZCHAN_STATUS_GEN(st);
		rl->head = rl->peek = rl->published;
		rl->state = __LZ_RL_IDLE;
		return -EPIPE;
	}
	if (LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_CLOSED || rl->peek != rl->head ||
	    !__lz_rx_sender_gone(ch, i, false))
		return -EBADMSG;
	rl->state = __LZ_RL_DONE;
	__lz_rx_publish(ch, rl, true);
	__lz_rx_sleepy_before_ack(ch, rl);
	/* Pairs with the module's smp_load_acquire(&close_ack) (or a shm
	 * claimer's acquire load): we are done with the lane, and our head
	 * is published, before it may be scrubbed and given away. */
	__lz_store_rel(&rl->rxl->close_ack, rl->gen);
	__lz_rx_ended(ch, i, rl->gen);
	return -EPIPE;
}

/* The end of the first broken lane whose sender has gone, or -EAGAIN
 * (then none is owed any more). */
static int __lz_rx_broken_any(struct lzchan *ch, struct lzchan_msg *m)
{
	uint32_t i;

	for (i = 0; i < ch->f.max_senders; i++)
		if (ch->f.lanes[i].state == __LZ_RL_BROKEN &&
		    __lz_rx_broken(ch, i, m) == -EPIPE)
			return -EPIPE;
	ch->broken_over = false;
	return -EAGAIN;
}

/* Poll lane @i at its peek position (see __lz_rx_lane()). */
static int __lz_rx_lane_look(struct lzchan *ch, uint32_t i, struct lzchan_msg *m)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[i];
	uint32_t pos = rl->peek;
	int r;

	if (rl->state == __LZ_RL_BROKEN)
		return __lz_rx_broken(ch, i, m);
	if (rl->state == __LZ_RL_DONE) {
		/* Its sender's end was delivered: nothing it left in the lane
		 * (garbage, if it broke) is read, only a new sender's messages.
		 * Pairs with the release store of the lane status (module, or
		 * a shm claimer) that follows the lane's scrub. */
		uint64_t st = __lz_load_acq(&rl->info->status);

		if (LZCHAN_STATUS_GEN(st) == rl->gen)
			return -EAGAIN;
		rl->gen = LZCHAN_STATUS_GEN(st);
		rl->state = __LZ_RL_IDLE;
	}
	r = __lz_rx_look(ch, rl, &pos, m);
	if (!r) {
		if (pos != rl->peek) {		/* skipped a pad */
			if (rl->peek == rl->head)
				rl->head = pos;
			rl->peek = pos;
		}
		r = __lz_rx_empty(ch, i, m);
		if (r != 1 && r != -EBADMSG)
			return r;
	}
	m->lane = i;
	if (r < 0) {
		__lz_rx_broke(ch, i);
		return -EBADMSG;
	}
	rl->idle = 0;
	rl->peek = m->__end;
	m->__gen = __lz_rx_view_gen(rl);
	return 0;
}

/* Lane @i ended or broke: it is no longer polled -- by the general path
 * or by any fast path, which serve only active lanes. */
static void __lz_active_drop(struct lzchan *ch, uint32_t i)
{
	uint32_t j;

	for (j = 0; j < ch->f.nactive; j++)
		if (ch->f.active[j] == i) {
			__lz_active_del(ch, j, ch->f.lanes[i].state);
			return;
		}
}

/* Poll lane @i at its peek position. */
static int __lz_rx_lane(struct lzchan *ch, uint32_t i, struct lzchan_msg *m)
{
	int r = __lz_rx_lane_look(ch, i, m);

	if ((r == -EPIPE || r == -EBADMSG) && ch->f.lanes[i].state != __LZ_RL_ACTIVE)
		__lz_active_drop(ch, i);
	return r;
}

/* Stop polling quiet lanes; rescue any that got a message meanwhile. */
static void __lz_rx_sleep(struct lzchan *ch)
{
	uint32_t k, slept[64], n = 0;

	for (k = 0; k < ch->f.nactive && n < 64 && ch->f.nactive > SLEEPY_MIN_ACTIVE; ) {
		struct __lzchan_rxlane *rl = &ch->f.lanes[ch->f.active[k]];

		if (rl->idle >= ch->sleepy_after && rl->peek == rl->head) {
			slept[n++] = ch->f.active[k];
			__lz_active_del(ch, k, __LZ_RL_SLEEPY);
		} else {
			k++;
		}
	}
	if (!n)
		return;
	__lz_rx_publish(ch, &ch->f.lanes[slept[0]], true);
	/* Pairs with the compiler barrier in __lz_tx_notify() and in the
	 * inline __lzchan_fast_publish(), before their load of attn (which
	 * __lz_active_del() moved): a sender that
	 * published before this point is seen below; one that publishes after
	 * it sees "sleepy" and rings the bell. */
	__lzchan_heavy_barrier(ch);
	for (k = 0; k < n; k++)
		if (__lz_rx_lane_pending(ch, &ch->f.lanes[slept[k]]))
			__lz_active_add(ch, slept[k]);
}

/* Lanes whose bit in the bell changed, and senders that left. */
#define SOCK_SERVICE_NS		1000000ULL

/* Departures and the bell words (see __lz_rx_bell()). */
static void __lz_rx_bell_words(struct lzchan *ch)
{
	/* Pairs with the release of departures (module: lzchan_chan_release_
	 * file(); shm: lzchan_close(), __lzchan_shm_claim()), which follows
	 * the CLOSED status: __lz_rx_departed() sees the statuses. */
	uint64_t d = __lz_load_acq(&ch->f.hdr->departures);
	uint32_t w;

	if (__lzchan_unlikely(d != ch->departures_seen)) {
		ch->departures_seen = d;
		ch->departed = true;
	}
	for (w = 0; w < ch->bell_words; w++) {
		/* Pairs with the sender's fetch_xor in __lz_tx_attn():
		 * acquire, so that the lane status a woken lane is checked
		 * against in __lz_active_add() is no older than the ring (a
		 * DONE lane with a new sender must see the new generation). */
		uint64_t b = __lz_load_acq(&ch->bell[w]), diff = b ^ ch->bell_seen[w];

		if (__lzchan_likely(!diff))
			continue;
		ch->bell_seen[w] = b;
		while (diff) {
			uint32_t i = w * 64 + __builtin_ctzll(diff);

			diff &= diff - 1;
			if (i < ch->f.max_senders && ch->f.lanes[i].state != __LZ_RL_BROKEN)
				__lz_active_add(ch, i);
		}
	}
}

static void __lz_rx_bell(struct lzchan *ch)
{
	/* shm: a sender's hello carries its channel file, which holds its
	 * lane's lock while the message waits in our socket: take hellos
	 * in promptly (every SOCK_SERVICE_NS at most), or a sender that
	 * died after saying hello would look alive (lzchan_sock.c).  (The
	 * liveness looks it serves run on the general look, too.)  Never
	 * while parked: a wake byte that arrives after we announced it is
	 * the sleep's, and the arm's last look must not drain it (the
	 * sender spends one wake per park; the arm drained before
	 * announcing, as the futex word is sampled before R2). */
	if (ch->lsock >= 0 && !(ch->parked & 1)) {
		uint64_t now = __lzchan_now_ns();

		if (now - ch->sock_serviced_ns >= SOCK_SERVICE_NS) {
			ch->sock_serviced_ns = now;
			__lzchan_sock_service(ch);
		}
	}
	__lz_rx_bell_words(ch);
}

/* shm: the owners' locks are looked at (a system call per attached lane)
 * at most this often, however often the lanes are scanned, and at most
 * LIVENESS_LANES of them each time, round robin: a receiver with a
 * thousand senders spends no more on it than one with a few. */
#define LIVENESS_EVERY_NS	10000000ULL
#define LIVENESS_LANES		32

/* Slow path: look at every lane not being polled (new senders that have
 * not sent, departures of quiet senders).  shm: also the owners' locks. */
static void __lz_rx_scan(struct lzchan *ch)
{
	uint32_t i, looked = 0;
	bool locks = false;

	if (ch->backend == LZCHAN_BACKEND_SHM) {
		uint64_t now = __lzchan_now_ns();

		if (now - ch->last_liveness_ns >= LIVENESS_EVERY_NS) {
			ch->last_liveness_ns = now;
			locks = true;
		}
	}
	for (i = 0; locks && i < ch->f.max_senders; i++) {
		uint32_t lane = ch->liveness_next++;

		if (ch->liveness_next >= ch->f.max_senders)
			ch->liveness_next = 0;
		if (__lzchan_shm_lane_look(ch, lane) && ++looked >= LIVENESS_LANES)
			break;
	}
	for (i = 0; i < ch->f.max_senders; i++) {
		struct __lzchan_rxlane *rl = &ch->f.lanes[i];

		if (rl->state == __LZ_RL_BROKEN) {
			/* Never polled again; its end is owed once its sender
			 * has gone (the dev backend's eventfd fires then, a
			 * shm sender's death shows in its lock, above). */
			if (__lz_rx_broken_over(ch, i)) {
				ch->broken_over = true;
				ch->quiet_left = 0;
				__lzchan_rx_quiet_revoke(ch);
			}
		} else if (rl->state != __LZ_RL_ACTIVE && __lz_rx_lane_pending(ch, rl)) {
			__lz_active_add(ch, i);
		}
	}
}

/*
 * Senders left (the departure count moved, or a liveness look found a dead
 * one): report their lanes' ends now, even while busy lanes keep every
 * look from running dry -- else the end of a quiet lane (one we may have
 * stopped polling) would wait for an idle moment, and its lane, which
 * only our acknowledgement frees, would refuse new senders until then.
 * Until no end is owed, each general look reports the ends of closed lanes
 * that are drained; their last messages are served in turn, like any.
 */
static int __lz_rx_departed(struct lzchan *ch, struct lzchan_msg *m)
{
	bool owed = false;
	uint32_t i;
	int r;

	for (i = 0; i < ch->f.max_senders; i++) {
		struct __lzchan_rxlane *rl = &ch->f.lanes[i];
		/* Pairs with the release store of the lane status (module, a
		 * shm sender's close or claim, our liveness CAS). */
		uint64_t st = __lz_load_acq(&rl->info->status);

		if (rl->state == __LZ_RL_BROKEN) {
			if (__lz_rx_broken_over(ch, i)) {
				if (__lz_rx_broken(ch, i, m) == -EPIPE)
					return -EPIPE;
			} else if (LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_CLOSED) {
				owed = true;	/* once its views are released */
			}
			continue;
		}
		if (rl->state == __LZ_RL_DONE) {
			/* Its end was delivered; a new sender that took the
			 * lane since is followed (its generation taken), and
			 * owes its own end if it left again. */
			if (LZCHAN_STATUS_GEN(st) == rl->gen)
				continue;
			__lz_active_add(ch, i);
			if (LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_CLOSED)
				continue;
		} else if (LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_CLOSED &&
			   (!rl->gen || LZCHAN_STATUS_GEN(st) == rl->gen)) {
			continue;
		}
		owed = true;
		__lz_active_add(ch, i);
		/* Only its end here, once it is drained: its last messages
		 * (and views) are served in their turn, like any lane's. */
		if (rl->peek != rl->head ||
		    __lzchan_lane_ready(&ch->f, rl))
			continue;
		r = __lz_rx_lane(ch, i, m);
		if (r != -EAGAIN)
			return r;
	}
	ch->departed = owed;
	return -EAGAIN;
}

bool __lzchan_rx_pending(struct lzchan *ch)
{
	uint32_t k;

	__lz_rx_bell(ch);
	__lz_rx_scan(ch);
	if (ch->broken_over)
		return true;
	for (k = 0; k < ch->f.nactive; k++)
		if (__lz_rx_lane_pending(ch, &ch->f.lanes[ch->f.active[k]]))
			return true;
	return false;
}

static int __lz_rx_check(struct lzchan *ch)
{
	if (!ch || ch->f.role != LZCHAN_RECEIVER)
		return -EBADF;
	if (__lzchan_unlikely(__lzchan_guard_lost(ch->guard)))
		return ch->lost_err;	/* shm: the file was cut short under us
					 * (-EIO); dev: our endpoint revoked
					 * (-EPIPE) */
	if (__lzchan_unlikely(ch->f.armed))
		__lzchan_rx_disarm(ch, true);	/* the receiver is polling again */
	return 0;
}

/* Disarm (after lzchan_arm()): unpark, and drain the event fd if @drain
 * (else the next lzchan_arm() does). */
void __lzchan_rx_disarm(struct lzchan *ch, bool drain)
{
	uint64_t cnt;

	ch->f.armed = false;
	if (ch->backend == LZCHAN_BACKEND_SHM)
		/* Relaxed: published by the release store of parked. */
		__lz_store(&ch->f.rx->armed, 0);
	ch->parked++;
	/* Release: see __lz_set_parked(). */
	__lz_store_rel(&ch->f.rx->parked, ch->parked);
	__lzchan_rx_unpark_copies(ch);
	if (!drain)
		return;
	if (ch->backend == LZCHAN_BACKEND_SHM)
		__lzchan_sock_service(ch);	/* drain the wake bytes */
	else if (ch->evfd >= 0 && read(ch->evfd, &cnt, sizeof(cnt)) < 0)
		(void)0;	/* EAGAIN: nothing to drain */
}


/*
 * The turn (Documentation/libchan/design.rst, "The receive"): receive-any
 * serves the active lanes round robin, each for a turn of at most
 * TURN_SLOTS messages.  At a turn's start, and whenever its span runs out
 * (lzchan_fast.h), the library grants the lane a span -- the rest of its turn,
 * up to the ring's end and the head's next publication -- which the
 * inline receives take from; every library call first settles what they
 * took.  Everything else -- an empty channel, a message of several slots,
 * a pad, garbage, an end -- is the general look's (__lz_rx_any()), which
 * also runs every TURNS_PER_LOOK turns while lanes deliver, and whenever
 * departures or a broken lane's end are owed.  A ready lane's first
 * message is thus taken after at most (nactive - 1) * TURN_SLOTS messages
 * of the others.
 */
#define TURN_SLOTS		64
#define TURNS_PER_LOOK		16

/* The next active lane's turn. */
static inline void __lz_turn_pass(struct lzchan *ch)
{
	ch->f.turn_taken = 0;
	if (++ch->f.rr >= ch->f.nactive)
		ch->f.rr = 0;
}

/* A message of lane active[@at] taken by the library (the general look, a
 * span): its turn, counted. */
static void __lz_turn_count(struct lzchan *ch, uint32_t at, uint32_t n)
{
	if (at != ch->f.rr) {
		ch->f.rr = at;
		ch->f.turn_taken = 0;
	}
	ch->f.turn_taken += n;
	if (ch->f.turn_taken >= TURN_SLOTS) {
		__lz_turn_pass(ch);
		if (++ch->turns >= TURNS_PER_LOOK)
			ch->look_due = true;
	}
}

/* Every receiving call of the library starts here: the span's takings
 * (by how far cur's peek moved) counted to the turn, the lane's head
 * published if due, and no span until __lz_turn_grant(). */
static void __lz_turn_settle(struct lzchan *ch)
{
	struct __lzchan_rxlane *rl = ch->f.cur;
	uint32_t used, empties = ch->grant_quiet - ch->f.quiet;

	/* The inline "empty" verdicts were the library's quick ones, given
	 * on its behalf (__lz_rx_quiet()): spent from the same allowance (quiet_left), and
	 * counted as polls. */
	ch->f.quiet = 0;
	ch->grant_quiet = 0;
	if (empties) {
		ch->quiet_left = empties < ch->quiet_left ? ch->quiet_left - empties : 0;
		ch->quiet_spent += empties;
	}
	ch->f.span = 0;
	if (rl == &ch->no_turn)
		return;
	ch->f.cur = &ch->no_turn;
	ch->f.cur_lane = LZCHAN_LANE_NONE;
	/* Lazy publication, when due, of what the span took and of views
	 * the inline release gave back (it only moves the head): their
	 * reads of the slots are done (see __lz_rx_publish()). */
	__lz_rx_publish(ch, rl, false);
	used = rl->peek - ch->turn_peek;
	if (!used)
		return;
	rl->idle = 0;
	if (ch->f.rr < ch->f.nactive && &ch->f.lanes[ch->f.active[ch->f.rr]] == rl)
		__lz_turn_count(ch, ch->f.rr, used);
}

/* Is a message ready at @rl's peek? */
static inline bool __lz_turn_ready(const struct lzchan *ch, const struct __lzchan_rxlane *rl)
{
	/* The take loads it again. */
	return __lzchan_lane_ready(&ch->f, rl);
}

/* Grant the span of the lane whose turn it is -- or, if nothing is ready
 * there, of the next active lane with a message ready, whose turn it then
 * is; if none has, of the lane whose turn it is still (a ping-pong's next
 * message is then taken inline).  false: no span (the general look has work:
 * armed, a cut, a departure or a broken lane's end owed, its periodic
 * run due; or no lane is polled). */
static bool __lz_turn_grant(struct lzchan *ch)
{
	struct __lzchan_rxlane *rl;
	uint32_t k, n, due, i, start;

	ch->f.span = 0;
	ch->f.cur = &ch->no_turn;
	ch->f.cur_lane = LZCHAN_LANE_NONE;
	if (ch->f.armed || !ch->f.nactive || ch->look_due || ch->f.cut ||
	    ch->f.role != LZCHAN_RECEIVER || ch->broken_over)
		return false;
	/* The departures count and the bell, once a turn: a lane that
	 * woke is polled from now on; an end owed goes to the general look. */
	__lz_rx_bell_words(ch);
	if (ch->departed)
		return false;
	if (ch->f.turn_taken >= TURN_SLOTS)
		__lz_turn_pass(ch);
	if (ch->f.rr >= ch->f.nactive)
		ch->f.rr = 0;
	for (k = 0, start = ch->f.rr; k < ch->f.nactive; k++) {
		if (__lz_turn_ready(ch, &ch->f.lanes[ch->f.active[ch->f.rr]]))
			break;
		__lz_turn_pass(ch);
	}
	if (k == ch->f.nactive)
		ch->f.rr = start;	/* nothing ready: its turn still */
	i = ch->f.active[ch->f.rr];
	rl = &ch->f.lanes[i];
	/* No further than the ring's end (the span walks by address) and
	 * the head's next publication (lazy: every publish_every slots, at
	 * a settle), or the sender would wait for room the span holds. */
	/* (A lane alone has the rest of the ring: nobody waits for its
	 * turn to end.) */
	n = ch->f.nactive > 1 ? TURN_SLOTS - ch->f.turn_taken : UINT32_MAX;
	due = rl->head - rl->published;
	due = due < ch->f.publish_every ? ch->f.publish_every - due : 1;
	if (n > due)
		n = due;
	due = ch->f.slot_count - (rl->peek & ch->f.mask);
	if (n > due)
		n = due;
	(void)__lz_rx_view_gen(rl);	/* the views' generation */
	/* The loads above may have met a cut (the handler zeroes span,
	 * which is still 0 here, so only the cut word tells): no span over
	 * the replacement.  The signal fence keeps this load after them. */
	if (__lzchan_cut(&ch->f))
		return false;
	ch->f.cur = rl;
	ch->f.cur_lane = i;
	ch->f.span_at = (const char *)__lzchan_slot(ch, rl->slots, rl->peek);
	ch->turn_peek = rl->peek;
	ch->f.span = n;
	/* Quick "empty" verdicts inline too, while the library's own would
	 * be given (its last look found nothing; see __lz_rx_quiet()) and
	 * cur is the only lane to look at.  Like the library's, they
	 * publish a caught-up head. */
	if (ch->quiet_left && ch->f.nactive == 1 && ch->bell_words == 1) {
		ch->f.bell = ch->bell;
		ch->f.bell_seen = ch->bell_seen[0];
		ch->f.quiet = ch->grant_quiet = ch->quiet_left;
	}
	return true;
}

/* Quick empty verdicts between two general looks (status changes of idle
 * lanes, shm liveness scans and lane sleeping ride on the general look).  A
 * general look costs about 500 instructions: at 64 it was 8 of an empty
 * poll's 43; at 256, 2 of 37, and what it looks after waits a few
 * microseconds of spinning at most (lanes sleep after SLEEPY_AFTER). */
#define QUIET_POLLS		256

/*
 * A receiver spinning on an empty channel: has anything changed since the
 * last general look found nothing?  A message at an active lane's peek, a
 * lane status or a bell word that moved all say yes (and the general look
 * runs); else the verdict is "empty" at the cost of a few loads of lines
 * that stay in our cache until a sender writes them.  Messages taken in
 * between do not end the run of verdicts: a lane caught up publishes its head here,
 * as the general look would.
 */
static inline bool __lz_rx_quiet(struct lzchan *ch)
{
	uint32_t k, w;

	/* A handle whose mapping was cut says so on every call: not here. */
	if (!ch->quiet_left || __lzchan_cut(&ch->f))
		return false;
	ch->quiet_left--;
	for (k = 0; k < ch->f.nactive; k++) {
		struct __lzchan_rxlane *rl = &ch->f.lanes[ch->f.active[k]];

		/* The general look loads it again. */
		if (__lzchan_lane_ready(&ch->f, rl))
			return false;
		/* Relaxed: only compared; the general look loads it with acquire. */
		if (__lz_load(&rl->info->status) != rl->seen_status)
			return false;
		/* Caught up: let the sender see all the room, as the full
		 * look's __lz_rx_empty() does; views outstanding: what was
		 * released, when due. */
		__lz_rx_publish(ch, rl, rl->peek == rl->head);
	}
	for (w = 0; w < ch->bell_words; w++)
		/* Relaxed: a hint, as in __lz_rx_bell(). */
		if (__lz_load(&ch->bell[w]) != ch->bell_seen[w])
			return false;
	ch->quiet_spent++;
	return true;
}

/* A general look found nothing: remember what "nothing" looked like.  Not
 * while a polled lane says CLOSED (shm: a word its sender's lock denied,
 * see __lz_rx_sender_gone()): that sender's real close would change no
 * status, so the quick verdicts would not see it; every poll then looks
 * in full (where the departure count and the lock tell). */
static void __lz_rx_quiet_arm(struct lzchan *ch)
{
	uint32_t k;

	for (k = 0; k < ch->f.nactive; k++) {
		struct __lzchan_rxlane *rl = &ch->f.lanes[ch->f.active[k]];

		/* Relaxed: compared against in __lz_rx_quiet() only. */
		rl->seen_status = __lz_load(&rl->info->status);
		if (LZCHAN_STATUS_STATE(rl->seen_status) == LZCHAN_LANE_CLOSED)
			return;
	}
	ch->quiet_left = QUIET_POLLS;
}

/* The next message from any lane, round robin. */
static int __lz_rx_any(struct lzchan *ch, struct lzchan_msg *m)
{
	uint32_t k, n, i, at, polls;
	int r;

	if (!ch->look_due && __lz_rx_quiet(ch))
		return -EAGAIN;
	ch->look_due = false;
	ch->turns = 0;
	/* Empty polls this look stands for (lanes sleep after so many). */
	polls = 1 + ch->quiet_spent;
	ch->quiet_spent = 0;
	ch->quiet_left = 0;
	/* The bell (and the shm socket) is looked at right here. */
	__lz_rx_bell(ch);
	/* Now and then whether or not the count moved: a module without
	 * LZCHAN_FEAT_DEPARTURES leaves it at 0. */
	if (__lzchan_unlikely(++ch->looks >= DEPARTED_EVERY)) {
		ch->looks = 0;
		ch->departed = true;
	}
	if (__lzchan_unlikely(ch->departed)) {
		r = __lz_rx_departed(ch, m);
		if (r != -EAGAIN) {
			/* An end: more may be owed, the next call looks
			 * again (ends are few; messages are not served here). */
			ch->look_due = true;
			return r;
		}
	}
	n = ch->f.nactive;
	at = ch->f.rr;
	for (k = 0; k < n && ch->f.nactive; k++, at++) {
		if (at >= ch->f.nactive)
			at = 0;

		i = ch->f.active[at];
		r = __lz_rx_lane(ch, i, m);
		if (r == -EAGAIN) {
			ch->f.lanes[i].idle += polls;
			continue;
		}
		if (r == 0)
			__lz_turn_count(ch, at, 1);
		return r;
	}
	if (ch->f.nactive > SLEEPY_MIN_ACTIVE)
		__lz_rx_sleep(ch);
	/* Every STATUS_SCAN_EVERY empty polls, quick verdicts included. */
	ch->scans += polls;
	if (ch->scans >= STATUS_SCAN_EVERY) {
		ch->scans = 0;
		__lz_rx_scan(ch);
	}
	if (__lzchan_unlikely(ch->broken_over)) {
		r = __lz_rx_broken_any(ch, m);
		if (r != -EAGAIN)
			return r;
	}
	__lz_rx_quiet_arm(ch);
	return -EAGAIN;
}

static int __lz_peek(struct lzchan *ch, struct lzchan_msg *m)
{
	int ret = __lz_rx_check(ch);

	if (ret)
		return ret;
	/* The look itself may be what meets a cut (a call that took no
	 * fast path checked the guard before touching anything): -EIO,
	 * not what the zeros said. */
	return __lz_touched(ch, __lz_rx_any(ch, m));
}

static int __lz_peek_lane(struct lzchan *ch, uint32_t lane, struct lzchan_msg *m)
{
	int ret = __lz_rx_check(ch);

	if (ret)
		return ret;
	if (lane >= ch->f.max_senders)
		return -EINVAL;
	ret = __lz_rx_lane(ch, lane, m);
	if (ret == -EAGAIN && ch->backend == LZCHAN_BACKEND_SHM &&
	    ++ch->f.lanes[lane].idle % STATUS_SCAN_EVERY == 0)
		__lzchan_shm_lane_look(ch, lane);
	return __lz_touched(ch, ret);	/* as in lzchan_peek() */
}

void lzchan_release(struct lzchan *ch, const struct lzchan_msg *m)
{
	struct __lzchan_rxlane *rl;

	if (ch && ch->ps) {
		__lzchan_ps_release(ch, m);
		return;
	}
	if (!ch || ch->f.role != LZCHAN_RECEIVER || !m || m->lane >= ch->f.max_senders)
		return;
	rl = &ch->f.lanes[m->lane];
	/* Only a view of this lane's current sender, not past the peek. */
	if (m->__gen != rl->gen || m->__end - rl->head > rl->peek - rl->head)
		return;
	rl->head = m->__end;
	__lz_rx_publish(ch, rl, false);
}

static int __lz_copy_out(struct lzchan *ch, struct lzchan_msg *m, void *buf,
			 size_t cap)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[m->lane];
	int ret;

	if (m->len > cap) {
		/* Leave it in place: the peek steps back to its first slot,
		 * not to the head (views outstanding before it stay handed
		 * out; they would be delivered twice). */
		rl->peek = m->__end - __lz_slots_for(ch, m->len);
		return -EMSGSIZE;
	}
	memcpy(buf, m->data, m->len);
	ret = __lz_touched(ch, 0);	/* the copy met a cut: not the zeros */
	if (ret)
		return ret;
	lzchan_release(ch, m);
	return m->len;
}

/* The general look's message, copied out. */
static int __lz_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane)
{
	struct lzchan_msg m;
	int ret;

	m.lane = LZCHAN_LANE_NONE;
	ret = __lz_peek(ch, &m);
	if (lane && (ret == 0 || ret == -EPIPE || ret == -EBADMSG))
		*lane = m.lane;
	if (ret)
		return ret;
	return __lz_copy_out(ch, &m, buf, cap);
}

static int __lz_recv_lane(struct lzchan *ch, uint32_t lane, void *buf, size_t cap)
{
	struct lzchan_msg m;
	int ret = __lz_peek_lane(ch, lane, &m);

	if (ret)
		return ret;
	return __lz_copy_out(ch, &m, buf, cap);
}

/* A receiver polling an empty channel: the quick verdict first (it
 * looks at every polled lane's next slot, the lanes' statuses and the
 * bell), before the turn is settled and granted again. */
static inline bool __lz_rx_idle(struct lzchan *ch)
{
	return !ch->f.armed && !ch->look_due && !ch->departed && __lz_rx_quiet(ch);
}

/*
 * Every receiving call of the library: the turn settled first
 * (__lz_turn_settle()); a receive-any then gives the quick "empty"
 * verdict if nothing moved, else takes from a new span -- what the
 * inline receives called for when theirs ran out -- and otherwise looks
 * in full; a span is granted for the calls after (with inline "empty"
 * verdicts where they may be given).
 */
/*
 * Called with a span left (__lz_span_left()): the inline code refused
 * what is ready there (a length it does not take: straight to the full
 * look, __LZCHAN_TAKE_SLOW), or the program was built without it
 * (LZCHAN_NO_INLINE) and all its calls come here first, to the inline
 * code's own take and quick verdict.
 */
static inline bool __lz_span_left(const struct lzchan *ch)
{
	return ch->f.span != 0;
}

/*
 * What a receiving call wants: a copy into @buf (n == 0), or up to @n views
 * into @m.  The span's take and the general look for each.
 */
struct __lz_want {
	void *buf;
	size_t cap;
	uint32_t *lane;
	struct lzchan_msg *m;
	unsigned int n;
};

/* From the span: a copy's length or a count of views, -EIO, or a refusal
 * (__LZCHAN_TAKE_NONE, __LZCHAN_TAKE_SLOW). */
static inline __attribute__((always_inline)) int
__lz_want_take(struct lzchan *ch, const struct __lz_want *w)
{
	if (w->n == 1)
		return __lzchan_span_view(&ch->f, w->m);
	return w->n ? __lzchan_span_views(&ch->f, w->m, w->n)
		    : __lzchan_span_take(&ch->f, w->buf, w->cap, w->lane);
}

static inline bool __lz_want_taken(const struct __lz_want *w, int ret)
{
	return w->n ? ret > 0 : ret >= 0;
}

/* The general look, then the grant; views: one from the look, and more of
 * the same lane from its new span.  A verdict after the first view
 * (garbage, an end) is not reached here: the next call reaches and reports
 * it, and a cut met here is the next call's -EIO (the first view was taken
 * before). */
static inline __attribute__((always_inline)) int
__lz_want_look(struct lzchan *ch, const struct __lz_want *w)
{
	int ret;

	if (!w->n) {
		ret = __lz_recv(ch, w->buf, w->cap, w->lane);
		__lz_turn_grant(ch);
		return ret;
	}
	ret = __lz_peek(ch, w->m);
	if (ret) {
		__lz_turn_grant(ch);
		return ret;
	}
	if (__lz_turn_grant(ch) && w->n > 1 && ch->f.cur_lane == w->m[0].lane) {
		ret = __lzchan_span_views(&ch->f, w->m + 1, w->n - 1);
		if (ret > 0)
			return 1 + ret;
	}
	return 1;
}

/*
 * Every library receive-any (lzchan_recv(), lzchan_peek(),
 * lzchan_recv_batch(), and the inline calls' way in): the span left from
 * the last grant first (a multi-slot message there goes straight to the
 * general look); else settle, and unless the receiver is idle, grant and
 * take from the new span; the general look for anything the span does not
 * take; the grant last.  lzchan_fast.h's invariants 2-4.  Inlined into
 * each caller, where what @w wants is a constant.
 */
static inline __attribute__((always_inline)) int
__lz_rx_call(struct lzchan *ch, const struct __lz_want *w)
{
	int ret = -EAGAIN;

	if (__lz_span_left(ch)) {
		ret = __lz_want_take(ch, w);
		/* -EIO: the span's take met a cut (on dev, a revocation), said
		 * as the inline take says it -- this path reads only the
		 * handle's prefix, as the inline one; the next call says the
		 * handle's own error (__lz_rx_check()). */
		if (__lz_want_taken(w, ret) || ret == -EIO)
			return ret;
		if (ret == __LZCHAN_TAKE_NONE && __lzchan_span_empty(&ch->f))
			return -EAGAIN;
	}
	__lz_turn_settle(ch);
	if (ret != __LZCHAN_TAKE_SLOW) {
		if (__lz_rx_idle(ch)) {
			__lz_turn_grant(ch);
			return -EAGAIN;
		}
		if (__lz_turn_grant(ch)) {
			ret = __lz_want_take(ch, w);
			if (__lz_want_taken(w, ret) || ret == -EIO)
				return ret;	/* -EIO: as above */
			__lz_turn_settle(ch);	/* not a one-slot message: look */
		}
	}
	return __lz_want_look(ch, w);
}

int lzchan_peek(struct lzchan *ch, struct lzchan_msg *m)
{
	const struct __lz_want w = { .m = m, .n = 1 };
	int ret;

	if (!ch || ch->f.role != LZCHAN_RECEIVER) {
		if (!ch || !ch->ps)
			return -EBADF;
		return m ? __lzchan_ps_peek(ch, m) : -EINVAL;
	}
	if (!m)
		return -EINVAL;		/* nowhere to put the view */
	ret = __lz_rx_call(ch, &w);
	return ret > 0 ? 0 : ret;
}

int lzchan_peek_lane(struct lzchan *ch, uint32_t lane, struct lzchan_msg *m)
{
	int ret;

	if (!ch || ch->f.role != LZCHAN_RECEIVER) {
		if (!ch || !ch->ps)
			return -EBADF;
		return !m || lane ? -EINVAL : __lzchan_ps_peek(ch, m);
	}
	if (!m)
		return -EINVAL;
	__lz_turn_settle(ch);
	ret = __lz_peek_lane(ch, lane, m);
	__lz_turn_grant(ch);
	return ret;
}

int lzchan_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane)
{
	const struct __lz_want w = { .buf = buf, .cap = cap, .lane = lane };

	if (!ch || ch->f.role != LZCHAN_RECEIVER)
		return ch && ch->ps ? __lzchan_ps_recv(ch, buf, cap, lane) : -EBADF;
	return __lz_rx_call(ch, &w);
}

int lzchan_recv_lane(struct lzchan *ch, uint32_t lane, void *buf, size_t cap)
{
	int ret;

	if (!ch || ch->f.role != LZCHAN_RECEIVER) {
		if (!ch || !ch->ps)
			return -EBADF;
		return lane ? -EINVAL : __lzchan_ps_recv(ch, buf, cap, NULL);
	}
	__lz_turn_settle(ch);
	ret = __lz_recv_lane(ch, lane, buf, cap);
	__lz_turn_grant(ch);
	return ret;
}

int lzchan_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n)
{
	const struct __lz_want w = { .m = m, .n = n };

	if (!n)
		return -EINVAL;
	if (!ch || ch->f.role != LZCHAN_RECEIVER) {
		if (!ch || !ch->ps)
			return -EBADF;
		return m ? __lzchan_ps_recv_batch(ch, m, n) : -EINVAL;
	}
	if (!m)
		return -EINVAL;		/* nowhere to put the views */
	return __lz_rx_call(ch, &w);
}

/* The out-of-line entry points behind lzchan_fast.h's inline calls (the inline
 * code handles one-slot messages and calls these for everything else). */
int __lzchan_slow_send(struct lzchan *ch, const void *buf, size_t len)
	__attribute__((alias("lzchan_send")));
int __lzchan_slow_reserve(struct lzchan *ch, size_t len, void **buf)
	__attribute__((alias("lzchan_reserve")));
int __lzchan_slow_commit(struct lzchan *ch, size_t len)
	__attribute__((alias("lzchan_commit")));
int __lzchan_slow_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane)
	__attribute__((alias("lzchan_recv")));
int __lzchan_slow_peek(struct lzchan *ch, struct lzchan_msg *m)
	__attribute__((alias("lzchan_peek")));
void __lzchan_slow_release(struct lzchan *ch, const struct lzchan_msg *m)
	__attribute__((alias("lzchan_release")));
int __lzchan_slow_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n)
	__attribute__((alias("lzchan_recv_batch")));

int lzchan_end_cause(struct lzchan *ch, uint32_t lane)
{
	uint64_t st;

	if (!ch)
		return -EBADF;
	if (ch->ps)
		return __lzchan_ps_end_cause(ch, lane);
	if (ch->f.role == LZCHAN_RECEIVER) {
		if (lane >= ch->f.max_senders)
			return -EINVAL;
		return ch->watch[lane].end_cause;
	}
	if (lane != LZCHAN_LANE_NONE)
		return -EINVAL;
	/* Pairs with the release store of rx_status (module, or the
	 * receiver's close after its rx_bye). */
	st = __lz_load_acq(&ch->f.hdr->rx_status);
	if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_NONE)
		return 0;
	if (LZCHAN_STATUS_STATE(st) != LZCHAN_RX_GONE) {
		/* shm: a receiver that died leaves ATTACHED behind. */
		if (ch->backend == LZCHAN_BACKEND_SHM && __lzchan_shm_rx_alive(ch) == 0)
			return LZCHAN_END_LOST;
		return 0;
	}
	/* shm: GONE while the receiver's lock is held was overwritten, or
	 * its close is under way: not ended yet. */
	if (ch->backend == LZCHAN_BACKEND_SHM && __lzchan_shm_rx_alive(ch) == 1)
		return 0;
	if (!ch->bye_known)
		return LZCHAN_END_UNKNOWN;
	/* Relaxed: ordered by the acquire of GONE above. */
	return __lz_load(&ch->f.hdr->rx_bye) == LZCHAN_STATUS_GEN(st) ? LZCHAN_END_CLOSED :
									 LZCHAN_END_LOST;
}

int lzchan_lost(struct lzchan *ch, uint64_t *lost)
{
	return ch && ch->ps ? __lzchan_ps_lost(ch, lost) : -EBADF;
}

int lzchan_release_check(struct lzchan *ch, const struct lzchan_msg *m)
{
	return ch && ch->ps ? __lzchan_ps_release_check(ch, m) : -EBADF;
}
