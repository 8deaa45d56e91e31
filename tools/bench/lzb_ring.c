// SPDX-License-Identifier: GPL-2.0-only
/*
 * ring: N senders -> 1 receiver, the Intel article's tables.
 *
 * Baselines, written here after the article's description (each sender
 * owns one single-producer ring; the receiver polls the rings in turn):
 *   classic        shared write and read pointers, each read/written by
 *                  both sides on every message;
 *   lazy           the ready flag is a sequence number inside the message,
 *                  and the receiver publishes its read pointer only every
 *                  half ring (lazy flow control);
 *   lazy-cldemote  lazy, plus CLDEMOTE of each message after writing it;
 *   lazy-fair      lazy, with the receiver's work libchan's copy row does:
 *                  56 bytes copied out, the sender named in the payload
 *                  range-checked and its counter checked (the fair
 *                  baseline for libchan's receive).
 * libchan, one channel with a lane per sender:
 *   libchan        lzchan_send() / lzchan_recv() (a copy on each side);
 *   libchan-batch  lzchan_send_batch() of --batch messages / lzchan_recv_batch();
 *   libchan-zc     lzchan_reserve()+lzchan_commit() / lzchan_peek()+lzchan_release().
 *
 * A "64-byte message" is one cache line in the ring: 60 B of data and a
 * 4 B sequence in the baselines, 56 B of payload and libchan's 8 B slot
 * header in libchan (GB/s counts the 64 B line in both).
 *
 * Every receiver checks that each sender's messages arrive exactly once and
 * in order (a counter in the payload), so --quick doubles as a test.
 *
 * Instructions per message: each row's receive loop (ring_rx_rings(),
 * ring_rx_libchan()) counted by callgrind, in `ring --inner IMPL N M`:
 * N sender threads each fill their ring (or lane) with M messages before
 * the receiver starts, and close only after it drained them all, so the
 * count is the loop's work per message with every lane busy, no empty
 * polls and no ends -- the same on every run and every machine.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lzb.h"

#define RING_MAX_SENDERS	64

enum ring_impl {
	IMPL_CLASSIC, IMPL_LAZY, IMPL_LAZY_DEMOTE, IMPL_LAZY_FAIR,
	IMPL_LIBCHAN, IMPL_LIBCHAN_BATCH, IMPL_LIBCHAN_ZC, IMPL_COUNT
};
static const char *const impl_names[IMPL_COUNT] = {
	"classic", "lazy", "lazy-cldemote", "lazy-fair", "libchan", "libchan-batch", "libchan-zc"
};

/* A baseline ring's message: one line, the sequence in the last word. */
struct ring_msg {
	uint32_t data[15];
	uint32_t seq;
};

/* One baseline ring; its pointers each on a line of their own. */
struct ring {
	_Alignas(64) uint32_t shared_wp;	/* classic only */
	_Alignas(64) uint32_t shared_rp;
	_Alignas(64) uint32_t size;
	struct ring_msg *msgs;
};

struct ring_worker {
	_Alignas(64) uint64_t ticks;	/* sender: its sending time */
	long long misses;		/* -1: not counted */
	uint64_t sent;
	int err;
};

struct ring_run {
	enum ring_impl impl;
	int senders;
	uint64_t per_sender;
	uint32_t slots, size, batch;
	char name[64];
	struct lzb_barrier created, start, drained;
	bool prefill;			/* --inner: senders fill, then the receiver */
	struct ring *rings;		/* baselines: one per sender */
	/* results */
	uint64_t rx_ticks, rx_msgs;
	long long rx_misses;
	int rx_err;
	int node;
	char why[160];
	struct ring_worker w[RING_MAX_SENDERS];
};

/* ---------- baselines ---------- */

static void ring_init(struct ring *r, struct ring_msg *mem, uint32_t size)
{
	uint32_t i;

	r->shared_wp = r->shared_rp = 0;
	r->size = size;
	r->msgs = mem;
	/* seq of slot i starts one lap behind: never equal to a position yet. */
	for (i = 0; i < size; i++) {
		memset(&mem[i], 0, sizeof(mem[i]));
		mem[i].seq = i - size;
	}
}

static void ring_send_classic(struct ring *r, uint32_t wp, const struct ring_msg *m)
{
	struct ring_msg *slot = &r->msgs[wp & (r->size - 1)];
	unsigned int spins = 0;

	/* Pairs with the receiver's release store of shared_rp. */
	while (wp - __atomic_load_n(&r->shared_rp, __ATOMIC_ACQUIRE) >= r->size - 1)
		lzb_spin(&spins);
	memcpy(slot->data, m->data, sizeof(slot->data));
	slot->seq = wp;
	/* Pairs with the receiver's acquire load of shared_wp. */
	__atomic_store_n(&r->shared_wp, wp + 1, __ATOMIC_RELEASE);
}

static void ring_send_lazy(struct ring *r, uint32_t wp, const struct ring_msg *m, bool demote)
{
	struct ring_msg *slot = &r->msgs[wp & (r->size - 1)];
	unsigned int spins = 0;

	/* Pairs with the receiver's (lazy) release store of shared_rp. */
	while (wp - __atomic_load_n(&r->shared_rp, __ATOMIC_ACQUIRE) == r->size)
		lzb_spin(&spins);
	memcpy(slot->data, m->data, sizeof(slot->data));
	/* Pairs with the receiver's acquire load of seq. */
	__atomic_store_n(&slot->seq, wp, __ATOMIC_RELEASE);
	if (demote)
		lzb_cldemote(slot);
}

/* Poll ring @r at @rp: 1 and the message's counter in *val, or 0. */
static inline int ring_poll_classic(struct ring *r, uint32_t rp, uint32_t *val)
{
	const struct ring_msg *slot;

	/* Pairs with the sender's release store of shared_wp. */
	if (__atomic_load_n(&r->shared_wp, __ATOMIC_ACQUIRE) == rp)
		return 0;
	slot = &r->msgs[rp & (r->size - 1)];
	if (slot->seq != rp)
		return -1;
	*val = slot->data[0];
	/* Pairs with the sender's acquire load of shared_rp. */
	__atomic_store_n(&r->shared_rp, rp + 1, __ATOMIC_RELEASE);
	return 1;
}

static inline int ring_poll_lazy(struct ring *r, uint32_t rp, uint32_t *val)
{
	const struct ring_msg *slot = &r->msgs[rp & (r->size - 1)];

	/* Pairs with the sender's release store of seq. */
	if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != rp)
		return 0;
	*val = slot->data[0];
	rp++;
	/* Every half ring.  Pairs with the sender's acquire load. */
	if (!(rp & ((r->size - 1) >> 1)))
		__atomic_store_n(&r->shared_rp, rp, __ATOMIC_RELEASE);
	return 1;
}

/* lazy-fair: as ring_poll_lazy(), the message's 56 bytes copied to @out. */
static inline int ring_poll_lazy_copy(struct ring *r, uint32_t rp, uint32_t *out)
{
	const struct ring_msg *slot = &r->msgs[rp & (r->size - 1)];

	/* Pairs with the sender's release store of seq. */
	if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != rp)
		return 0;
	memcpy(out, slot->data, 56);
	rp++;
	/* Every half ring.  Pairs with the sender's acquire load. */
	if (!(rp & ((r->size - 1) >> 1)))
		__atomic_store_n(&r->shared_rp, rp, __ATOMIC_RELEASE);
	return 1;
}

/* ---------- workers ---------- */

static int ring_sender(struct ring_run *run, int i)
{
	struct ring_worker *w = &run->w[i - 1];
	uint32_t payload = run->size - sizeof(struct lzchan_slot_hdr);
	struct lzchan *ch = NULL;
	struct ring_msg m;
	struct lzb_ctr ctr;
	uint64_t n = 0, t0;
	unsigned int spins = 0;
	struct iovec *iov = NULL;
	char *bufs = NULL;
	int r = 0;

	memset(&m, 0, sizeof(m));
	m.data[1] = (uint32_t)i;
	lzb_barrier_wait(&run->created);
	if (run->impl >= IMPL_LIBCHAN) {
		ch = lzb_chan_tx(run->name);
		if (run->impl == IMPL_LIBCHAN_BATCH) {
			iov = calloc(run->batch, sizeof(*iov));
			bufs = aligned_alloc(64, (size_t)run->batch * 64 + 64);
			if (!iov || !bufs)
				lzb_die("out of memory");
			memset(bufs, 0, (size_t)run->batch * 64);
		}
	}
	if (!run->prefill)
		lzb_barrier_wait(&run->start);
	lzb_ctr_start(&ctr);
	t0 = lzb_rdtsc();
	switch (run->impl) {
	case IMPL_CLASSIC:
		for (n = 0; n < run->per_sender; n++) {
			m.data[0] = (uint32_t)n;
			ring_send_classic(&run->rings[i - 1], (uint32_t)n, &m);
		}
		break;
	case IMPL_LAZY:
	case IMPL_LAZY_DEMOTE:
	case IMPL_LAZY_FAIR:
		for (n = 0; n < run->per_sender; n++) {
			m.data[0] = (uint32_t)n;
			ring_send_lazy(&run->rings[i - 1], (uint32_t)n, &m,
				       run->impl == IMPL_LAZY_DEMOTE);
		}
		break;
	case IMPL_LIBCHAN:
		for (n = 0; n < run->per_sender; n++) {
			m.data[0] = (uint32_t)n;
			while ((r = lzchan_send(ch, &m, payload)) == -EAGAIN)
				lzb_spin(&spins);
			if (r)
				break;
		}
		break;
	case IMPL_LIBCHAN_BATCH:
		for (n = 0; n < run->per_sender; ) {
			uint32_t k, cnt = run->batch;

			if (cnt > run->per_sender - n)
				cnt = (uint32_t)(run->per_sender - n);
			for (k = 0; k < cnt; k++) {
				uint32_t *d = (uint32_t *)(bufs + (size_t)k * 64);

				d[0] = (uint32_t)(n + k);
				d[1] = (uint32_t)i;
				iov[k].iov_base = d;
				iov[k].iov_len = payload;
			}
			for (k = 0; k < cnt; ) {
				r = lzchan_send_batch(ch, iov + k, cnt - k);
				if (r == -EAGAIN) {
					lzb_spin(&spins);
					continue;
				}
				if (r < 0)
					break;
				k += (uint32_t)r;
				r = 0;
			}
			if (r)
				break;
			n += cnt;
		}
		break;
	case IMPL_LIBCHAN_ZC:
		for (n = 0; n < run->per_sender; n++) {
			uint32_t *d;

			while ((r = lzchan_reserve(ch, payload, (void **)&d)) == -EAGAIN)
				lzb_spin(&spins);
			if (r)
				break;
			d[0] = (uint32_t)n;
			d[1] = (uint32_t)i;
			r = lzchan_commit(ch, payload);
			if (r)
				break;
		}
		break;
	default:
		break;
	}
	w->ticks = lzb_rdtsc() - t0;
	lzb_ctr_stop(&ctr);
	w->misses = ctr.misses;
	w->sent = n;
	if (run->prefill) {
		/* Filled: the receiver drains, then we close (no ends in
		 * the count). */
		lzb_barrier_wait(&run->start);
		lzb_barrier_wait(&run->drained);
	}
	if (r) {
		w->err = -r;
		fprintf(stderr, "lzchan-bench: sender %d: %s\n", i, strerror(-r));
	}
	if (ch)
		lzchan_close(ch);
	free(iov);
	free(bufs);
	return r ? 1 : 0;
}

/* libchan's rows' check of a message: from a sender there is (1..@senders,
 * named in the payload), the next of that sender's. */
static inline bool ring_in_order(const uint32_t *d, uint32_t senders, uint64_t *expect)
{
	if (d[1] < 1 || d[1] > senders || d[0] != (uint32_t)expect[d[1]])
		return false;
	expect[d[1]]++;
	return true;
}

/* libchan receive loop; returns 0 or 1 (and says why in run->why).  Not
 * inlined: callgrind counts it by name (--inner). */
static __attribute__((noinline)) int ring_rx_libchan(struct ring_run *run, struct lzchan *ch, uint64_t total,
			   uint64_t *expect)
{
	uint32_t payload = run->size - sizeof(struct lzchan_slot_hdr);
	struct lzchan_msg mb[64];
	uint32_t buf[64], lane;
	uint64_t got = 0;
	unsigned int spins = 0;
	int r, k;
	/* Loaded once, here: stores into expect[] may alias run, so the
	 * compiler would load them again for every message. */
	const uint32_t senders = (uint32_t)run->senders;
	/* The first message in place, for the node its memory is on. */
	enum ring_impl impl = run->node == -2 ? IMPL_LIBCHAN_ZC : run->impl;
	const int batch = run->batch < 64 ? run->batch : 64;
	const uint32_t *d;

	/* One loop per row, no dispatch per message (as the baselines'). */
	if (impl == IMPL_LIBCHAN_ZC) {
		/* The first message in place, for the node its memory is on. */
		while ((r = lzchan_peek(ch, &mb[0])) == -EAGAIN || r == -EPIPE)
			lzb_spin(&spins);
		if (r || mb[0].len != payload)
			goto bad;
		run->node = lzb_mem_node(mb[0].data);
		/* The module maps raw page frames, which get_mempolicy()
		 * cannot look up: report the node it allocated from (it falls
		 * back to another only when that one is full). */
		if (run->node < 0) {
			struct lzchan_geom g;

			if (!lzchan_geometry(ch, &g) && g.backend == LZCHAN_BACKEND_DEV)
				run->node = g.numa_node;
		}
		d = mb[0].data;
		if (!ring_in_order(d, senders, expect))
			goto order;
		lzchan_release(ch, &mb[0]);
		got++;
		impl = run->impl;	/* then the row's own */
	}
	if (impl == IMPL_LIBCHAN) {
		while (got < total) {
			r = lzchan_recv(ch, buf, sizeof(buf), &lane);
			if (r == -EAGAIN || r == -EPIPE) {	/* EPIPE: a sender finished */
				lzb_spin(&spins);
				continue;
			}
			if (r != (int)payload)
				goto bad;
			d = buf;
			if (!ring_in_order(d, senders, expect))
				goto order;
			got++;
		}
	} else if (impl == IMPL_LIBCHAN_ZC) {
		while (got < total) {
			r = lzchan_peek(ch, &mb[0]);
			if (r == -EAGAIN || r == -EPIPE) {
				lzb_spin(&spins);
				continue;
			}
			if (r || mb[0].len != payload)
				goto bad;
			d = mb[0].data;
			if (!ring_in_order(d, senders, expect))
				goto order;
			lzchan_release(ch, &mb[0]);
			got++;
		}
	} else {	/* batch */
		while (got < total) {
			r = lzchan_recv_batch(ch, mb, (unsigned int)batch);
			if (r == -EAGAIN || r == -EPIPE) {
				lzb_spin(&spins);
				continue;
			}
			if (r < 0)
				goto bad;
			for (k = 0; k < r; k++) {
				d = mb[k].data;
				if (mb[k].len != payload)
					goto bad;
				if (!ring_in_order(d, senders, expect))
					goto order;
			}
			lzchan_release(ch, &mb[r - 1]);
			got += (uint64_t)r;
		}
	}
	run->rx_msgs = got;
	return 0;
bad:
	snprintf(run->why, sizeof(run->why), "receive returned %d (%s), expected %u bytes",
		 r, r < 0 ? strerror(-r) : "wrong length", payload);
	return 1;
order:
	snprintf(run->why, sizeof(run->why), "message out of order or from nowhere");
	return 1;
}

/* The baselines' receive loop (as ring_rx_libchan()); returns 0 or 1. */
static __attribute__((noinline)) int ring_rx_rings(struct ring_run *run, uint64_t total,
						   uint64_t *expect, uint32_t *rp)
{
	/* Loaded once, here (as in ring_rx_libchan()): stores into expect[]
	 * and rp[] may alias run. */
	const int senders = run->senders;
	struct ring *const rings = run->rings;
	unsigned int spins = 0;
	uint64_t got = 0;
	uint32_t val;
	int i = 0, r, ret = 0;

	if (run->impl == IMPL_LAZY_FAIR) {
		uint32_t buf[16];

		while (got < total) {
			if (ring_poll_lazy_copy(&rings[i], rp[i], buf)) {
				/* libchan's copy row's checks: the sender the
				 * payload names, its counter. */
				if (buf[1] < 1 || buf[1] > (uint32_t)senders ||
				    buf[0] != (uint32_t)expect[buf[1]]) {
					snprintf(run->why, sizeof(run->why),
						 "ring %d: message %u of sender %u out of order", i,
						 buf[0], buf[1]);
					ret = 1;
					break;
				}
				expect[buf[1]]++;
				rp[i]++;
				got++;
			} else {
				lzb_spin(&spins);
			}
			if (++i == senders)
				i = 0;
		}
		run->rx_msgs = got;
	} else {
		bool classic = run->impl == IMPL_CLASSIC;

		while (got < total) {
			struct ring *ring = &rings[i];

			r = classic ? ring_poll_classic(ring, rp[i], &val)
				    : ring_poll_lazy(ring, rp[i], &val);
			if (r > 0) {
				if (val != rp[i]) {
					snprintf(run->why, sizeof(run->why),
						 "ring %d: message %u where %u was due", i, val, rp[i]);
					ret = 1;
					break;
				}
				rp[i]++;
				got++;
			} else if (r < 0) {
				snprintf(run->why, sizeof(run->why), "ring %d: bad sequence", i);
				ret = 1;
				break;
			} else {
				lzb_spin(&spins);
			}
			if (++i == senders)
				i = 0;
		}
		run->rx_msgs = got;
	}
	return ret;
}

static int ring_receiver(struct ring_run *run)
{
	uint64_t total = (uint64_t)run->senders * run->per_sender, t0;
	uint64_t expect[RING_MAX_SENDERS + 1] = { 0 };
	uint32_t rp[RING_MAX_SENDERS] = { 0 };
	struct lzchan *ch = NULL;
	struct lzb_ctr ctr;
	int ret = 0;

	if (run->impl >= IMPL_LIBCHAN)
		ch = lzb_chan_rx(run->name, run->size, run->slots, (uint32_t)run->senders);
	lzb_barrier_wait(&run->created);
	lzb_barrier_wait(&run->start);
	lzb_ctr_start(&ctr);
	t0 = lzb_rdtsc();
	if (ch)
		ret = ring_rx_libchan(run, ch, total, expect);
	else
		ret = ring_rx_rings(run, total, expect, rp);
	run->rx_ticks = lzb_rdtsc() - t0;
	lzb_ctr_stop(&ctr);
	run->rx_misses = ctr.misses;
	if (ch) {
		lzchan_unlink(run->name);
		lzchan_close(ch);
	}
	if (run->prefill)
		lzb_barrier_wait(&run->drained);
	if (ret)
		run->rx_err = 1;
	return ret;
}

static int ring_worker_fn(int i, void *arg)
{
	struct ring_run *run = arg;

	if (lzb_pin(lzb_cpu(i)))
		lzb_die("pinning worker %d to CPU %d: %s", i, lzb_cpu(i), strerror(errno));
	return i ? ring_sender(run, i) : ring_receiver(run);
}

struct ring_result {
	double cycles, rx_misses, tx_misses, mps, gbs;	/* NaN: not counted */
	int node;
	bool ok;
};

/* One measurement.  Returns 0 or 1 (the reason printed). */
static int ring_measure(struct ring_result *res, enum ring_impl impl, int senders, bool procs,
			uint64_t per_sender, uint32_t slots, uint32_t size, uint32_t batch,
			bool prefill)
{
	size_t ring_bytes = (size_t)slots * sizeof(struct ring_msg);
	size_t len = sizeof(struct ring_run) + (size_t)senders * sizeof(struct ring) +
		     (size_t)senders * ring_bytes + 64;
	struct ring_run *run = lzb_shared_alloc(len);
	char *p = (char *)(run + 1);
	double ns, msgs, txm = 0;
	bool have_misses = true;
	int i, ret;

	run->impl = impl;
	run->senders = senders;
	run->per_sender = per_sender;
	run->slots = slots;
	run->size = size;
	run->batch = batch;
	run->node = -2;
	run->prefill = prefill;
	lzb_chan_name(run->name, sizeof(run->name), "ring");
	lzb_barrier_init(&run->created, (uint32_t)senders + 1);
	lzb_barrier_init(&run->start, (uint32_t)senders + 1);
	lzb_barrier_init(&run->drained, (uint32_t)senders + 1);
	if (impl < IMPL_LIBCHAN) {
		run->rings = (struct ring *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
		p = (char *)(run->rings + senders);
		p = (char *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
		for (i = 0; i < senders; i++)
			ring_init(&run->rings[i], (struct ring_msg *)(p + (size_t)i * ring_bytes), slots);
		run->node = lzb_mem_node(p);
	}
	lzb_workers(senders + 1);
	ret = lzb_run(senders + 1, procs, ring_worker_fn, run);
	if (!ret && run->rx_msgs != (uint64_t)senders * per_sender) {
		snprintf(run->why, sizeof(run->why), "received %llu of %llu messages",
			 (unsigned long long)run->rx_msgs,
			 (unsigned long long)senders * per_sender);
		ret = -1;
	}
	if (ret || run->rx_err) {
		fprintf(stderr, "lzchan-bench ring: %s, %d sender%s (%s): %s\n", impl_names[impl],
			senders, senders > 1 ? "s" : "", procs ? "processes" : "threads",
			run->why[0] ? run->why : "a worker failed");
		lzb_shared_free(run, len);
		return 1;
	}
	msgs = (double)run->rx_msgs;
	ns = (double)run->rx_ticks / lzb_tsc_ghz();
	for (i = 0; i < senders; i++) {
		if (run->w[i].misses < 0)
			have_misses = false;
		txm += (double)run->w[i].misses;
	}
	res->cycles = (double)run->rx_ticks / msgs;
	res->rx_misses = run->rx_misses >= 0 ? (double)run->rx_misses / msgs : NAN;
	res->tx_misses = have_misses ? txm / msgs : NAN;
	res->mps = msgs / ns * 1e3;
	res->gbs = msgs * size / ns;
	res->node = run->node;
	res->ok = true;
	lzb_shared_free(run, len);
	return 0;
}

static void ring_row(struct lzb_table *t, enum ring_impl impl, bool procs, int senders,
		     const struct ring_result *r, double instr)
{
	lzb_table_row(t);
	lzb_cell_str(t, impl_names[impl]);
	lzb_cell_str(t, procs ? "procs" : "threads");
	lzb_cell_num(t, senders);
	if (!r->ok) {
		lzb_cell_str(t, "failed");
		return;
	}
	lzb_cell_num(t, r->cycles);
	if (isnan(instr))
		lzb_cell_na(t);
	else
		lzb_cell_num(t, instr);
	lzb_cell_num(t, r->rx_misses);
	lzb_cell_num(t, r->tx_misses);
	lzb_cell_num(t, r->mps);
	lzb_cell_num(t, r->gbs);
	if (r->node >= 0)
		lzb_cell_num(t, r->node);
	else
		lzb_cell_na(t);
}

/* Messages per sender in a counted run: half a ring, so no sender waits. */
#define RING_COUNT_MSGS	500

/* `ring --inner IMPL SENDERS MSGS`: one prefilled run (threads) for
 * callgrind to count; exit status 0 if every message came in order. */
static int ring_inner(int argc, char **argv)
{
	struct ring_result r;
	uint64_t senders, msgs;
	int i;

	if (argc != 3)
		lzb_usage_error("ring", "--inner wants IMPL SENDERS MSGS");
	for (i = 0; i < IMPL_COUNT; i++)
		if (!strcmp(argv[0], impl_names[i]))
			break;
	if (i == IMPL_COUNT || !lzb_parse_size(argv[1], &senders) || !senders ||
	    senders > RING_MAX_SENDERS || !lzb_parse_size(argv[2], &msgs) || !msgs || msgs > 512)
		lzb_usage_error("ring", "--inner: IMPL SENDERS (1..%d) MSGS (1..512)", RING_MAX_SENDERS);
	memset(&r, 0, sizeof(r));
	return ring_measure(&r, i, (int)senders, false, msgs, 1024, 64, 16, true) ? 1 : 0;
}

/* Instructions per message of @impl's receive loop with @senders senders,
 * counted by callgrind; NAN (why in @err) if they cannot be. */
static double ring_count(enum ring_impl impl, int senders, char *err, size_t errlen)
{
	const char *const toggles[] = { "ring_rx_rings", "ring_rx_libchan", NULL };
	char arg_n[16], arg_m[16];
	const char *const args[] = { "ring", "--inner", impl_names[impl], arg_n, arg_m, NULL };
	long long ir;

	long long half;

	/* Two runs, of M/2 and M messages per sender: the difference is
	 * the loop's, without what a run costs once (the first calls, the
	 * hellos, the lazy binding of library symbols). */
	snprintf(arg_n, sizeof(arg_n), "%d", senders);
	snprintf(arg_m, sizeof(arg_m), "%d", RING_COUNT_MSGS / 2);
	half = lzb_callgrind(toggles, args, err, errlen);
	if (half < 0)
		return NAN;
	snprintf(arg_m, sizeof(arg_m), "%d", RING_COUNT_MSGS);
	ir = lzb_callgrind(toggles, args, err, errlen);
	if (ir < 0)
		return NAN;
	return (double)(ir - half) / ((double)senders * (RING_COUNT_MSGS - RING_COUNT_MSGS / 2));
}

static void ring_help(FILE *to)
{
	int i;

	fprintf(to,
		"usage: lzchan-bench ring [OPTIONS]\n"
		"\n"
		"N senders -> 1 receiver, the Intel article's table for each ring:\n"
		"TSC cycles per message (receiver), cache misses per message, million\n"
		"messages per second and GB/s.  The receiver runs on the first CPU of\n"
		"--cpus, sender i on the (i+1)-th, wrapping around.\n"
		"\n"
		"  -n, --senders LIST  sender counts (default 1,2,4,8,16)\n"
		"  -m, --msgs N        messages per sender (default 1m)\n"
		"  -s, --size B        bytes per message on the wire, a multiple of 64 (default 64)\n"
		"  -S, --slots N       slots per ring, a power of two (default 1024)\n"
		"  -B, --batch N       libchan-batch: messages per call (default 16)\n"
		"  -M, --mode M        threads, procs or both (default both)\n"
		"  -t, --trials N      interleaved trials, best kept (default 5)\n"
		"      --instr         count each receive loop's instructions per message\n"
		"                      with callgrind (the default, except with --quick)\n"
		"      --no-instr      do not\n"
		"  -i, --impl LIST     which rings, comma-separated (default all):\n"
		"                      ");
	for (i = 0; i < IMPL_COUNT; i++)
		fprintf(to, "%s%s", i ? "," : "", impl_names[i]);
	fprintf(to, "\n" LZB_COMMON_HELP);
}

int lzb_cmd_ring(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "senders", required_argument, NULL, 'n' },
		{ "msgs", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "slots", required_argument, NULL, 'S' },
		{ "batch", required_argument, NULL, 'B' },
		{ "mode", required_argument, NULL, 'M' },
		{ "impl", required_argument, NULL, 'i' },
		{ "trials", required_argument, NULL, 't' },
		{ "instr", no_argument, NULL, 'I' },
		{ "no-instr", no_argument, NULL, 'N' },
		{ "inner", no_argument, NULL, 'Z' },
		LZB_COMMON_OPTS, { 0 }
	};
	int instr = -1;		/* -1: the default */
	int senders[16] = { 1, 2, 4, 8, 16 }, nsenders = 5, c, i, j, m, fails = 0;
	uint64_t per_sender = 1000000, size = 64, slots = 1024, batch = 16, trials = 5;
	bool impl_on[IMPL_COUNT], modes[2] = { true, true };
	double ipms[16][IMPL_COUNT];
	char instr_why[160];
	struct lzb_table *t;
	const char *why;

	for (i = 0; i < IMPL_COUNT; i++)
		impl_on[i] = true;
	while ((c = getopt_long(argc, argv, "n:m:s:S:B:M:i:t:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 'n':
			nsenders = lzb_parse_list(optarg, senders, 16);
			if (nsenders < 0)
				lzb_usage_error("ring", "--senders wants a list like 1,2,4, not '%s'", optarg);
			for (i = 0; i < nsenders; i++)
				if (senders[i] < 1 || senders[i] > RING_MAX_SENDERS)
					lzb_usage_error("ring", "--senders: 1..%d each", RING_MAX_SENDERS);
			break;
		case 'm':
			if (!lzb_parse_size(optarg, &per_sender) || !per_sender || per_sender > (1ULL << 40))
				lzb_usage_error("ring", "--msgs wants a positive count, not '%s'", optarg);
			break;
		case 's':
			if (!lzb_parse_size(optarg, &size) || size != 64)
				lzb_usage_error("ring", "--size: the baseline rings carry 64-byte lines; only 64 is measured (lzchan-bench lat sweeps sizes)");
			break;
		case 'S':
			if (!lzb_parse_size(optarg, &slots) || slots < 4 || slots > (1U << 20) ||
			    (slots & (slots - 1)))
				lzb_usage_error("ring", "--slots wants a power of two 4..1M, not '%s'", optarg);
			break;
		case 'B':
			if (!lzb_parse_size(optarg, &batch) || !batch || batch > 64)
				lzb_usage_error("ring", "--batch wants 1..64, not '%s'", optarg);
			break;
		case 'M':
			modes[0] = !strcmp(optarg, "threads") || !strcmp(optarg, "both");
			modes[1] = !strcmp(optarg, "procs") || !strcmp(optarg, "both");
			if (!modes[0] && !modes[1])
				lzb_usage_error("ring", "--mode is threads, procs or both, not '%s'", optarg);
			break;
		case 'i': {
			char *s = strdup(optarg), *tok, *save = NULL;

			for (i = 0; i < IMPL_COUNT; i++)
				impl_on[i] = false;
			for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				for (i = 0; i < IMPL_COUNT; i++)
					if (!strcmp(tok, impl_names[i]))
						break;
				if (i == IMPL_COUNT)
					lzb_usage_error("ring", "--impl: unknown ring '%s'", tok);
				impl_on[i] = true;
			}
			free(s);
			break;
		}
		case 't':
			if (!lzb_parse_size(optarg, &trials) || !trials || trials > 1000)
				lzb_usage_error("ring", "--trials wants 1..1000, not '%s'", optarg);
			break;
		case 'I':
		case 'N':
			instr = c == 'I';
			break;
		case 'Z':
			return ring_inner(argc - optind, argv + optind);
		case 'h':
			ring_help(stdout);
			return 0;
		default:
			lzb_usage_error("ring", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("ring", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick) {
		per_sender = per_sender > 5000 ? 5000 : per_sender;
		trials = 1;
	}
	if (instr < 0)
		instr = !lzb.quick;
	lzb_begin("ring");
	if (instr) {
		memset(instr_why, 0, sizeof(instr_why));
		for (j = 0; j < nsenders; j++)
			for (i = 0; i < IMPL_COUNT; i++) {
				ipms[j][i] = NAN;
				if (!impl_on[i] || instr_why[0])
					continue;
				lzb_progress("ring: %s, %d sender%s, counting instructions", impl_names[i],
					     senders[j], senders[j] > 1 ? "s" : "");
				ipms[j][i] = ring_count(i, senders[j], instr_why, sizeof(instr_why));
			}
	} else {
		for (j = 0; j < nsenders; j++)
			for (i = 0; i < IMPL_COUNT; i++)
				ipms[j][i] = NAN;
	}

	t = lzb_table_new("ring", "Ring throughput, N senders -> 1 receiver, 64-byte messages");
	lzb_table_col(t, "ring", "", 0);
	lzb_table_col(t, "senders as", "", 0);
	lzb_table_col(t, "senders", "", 0);
	lzb_table_col(t, "TSC cycles/msg", "", 1);
	lzb_table_col(t, "rx instr/msg", "", 1);
	lzb_table_col(t, "rx misses/msg", "", 2);
	lzb_table_col(t, "tx misses/msg", "", 2);
	lzb_table_col(t, "msgs/s", "M", 1);
	lzb_table_col(t, "GB/s", "", 2);
	lzb_table_col(t, "node", "", 0);
	for (m = 0; m < 2; m++) {
		if (!modes[m])
			continue;
		for (j = 0; j < nsenders; j++) {
			struct ring_result best[IMPL_COUNT];
			uint64_t k;

			memset(best, 0, sizeof(best));
			/* Trials interleave the rings, and the best of each is
			 * kept: a neighbour's burst on a shared machine hits
			 * one trial, not one ring. */
			for (k = 0; k < trials; k++)
				for (i = 0; i < IMPL_COUNT; i++) {
					struct ring_result r;

					if (!impl_on[i] || (i == IMPL_LAZY_DEMOTE && !lzb_have_cldemote()))
						continue;
					lzb_progress("ring: %s, %d sender%s as %s, trial %llu/%llu",
						     impl_names[i], senders[j], senders[j] > 1 ? "s" : "",
						     m ? "processes" : "threads",
						     (unsigned long long)k + 1, (unsigned long long)trials);
					memset(&r, 0, sizeof(r));
					if (ring_measure(&r, i, senders[j], m, per_sender, (uint32_t)slots,
							 (uint32_t)size, (uint32_t)batch, false)) {
						fails++;
						best[i].node = -3;	/* failed once: failed */
						continue;
					}
					if (best[i].node != -3 && (!best[i].ok || r.cycles < best[i].cycles))
						best[i] = r;
				}
			for (i = 0; i < IMPL_COUNT; i++)
				if (impl_on[i] && !(i == IMPL_LAZY_DEMOTE && !lzb_have_cldemote()))
					ring_row(t, i, m, senders[j], &best[i], ipms[j][i]);
		}
	}
	lzb_table_note(t, "best of %llu interleaved trials of %llu messages per sender; %llu slots per ring; receiver on CPU %d",
		       (unsigned long long)trials, (unsigned long long)per_sender,
		       (unsigned long long)slots, lzb_cpu(0));
	if (instr && !instr_why[0])
		lzb_table_note(t, "rx instr/msg: the receive loop counted by callgrind (the same count every run), "
			       "runs of %d and %d messages per sender, their difference per message, every lane "
			       "filled before the receiver starts (lzchan-bench ring --inner IMPL SENDERS MSGS); "
			       "the same for threads and procs", RING_COUNT_MSGS / 2, RING_COUNT_MSGS);
	else if (instr)
		lzb_table_note(t, "rx instr/msg n/a: %s", instr_why);
	else
		lzb_table_note(t, "rx instr/msg n/a: not counted (--no-instr, or --quick without --instr)");
	if (!lzb_counters_available(&why))
		lzb_table_note(t, "misses n/a: %s", why);
	if (!lzb_have_cldemote())
		lzb_table_note(t, "lazy-cldemote skipped: no CLDEMOTE on this CPU");
	if (lzb.ncpus < 2 + 1 && (nsenders > 1 || senders[0] > 1))
		lzb_table_note(t, "only %d CPUs: senders share CPUs (oversubscribed; they yield while spinning)",
			       lzb.ncpus);
	lzb_emit(t);
	return fails ? 1 : 0;
}

double lzb_ring_mps(const char *impl, int senders, bool procs, uint64_t msgs, int trials)
{
	double best = NAN;
	int i, k;

	for (i = 0; i < IMPL_COUNT; i++)
		if (!strcmp(impl, impl_names[i]))
			break;
	if (i == IMPL_COUNT)
		return NAN;
	for (k = 0; k < trials; k++) {
		struct ring_result r;

		memset(&r, 0, sizeof(r));
		if (ring_measure(&r, i, senders, procs, msgs, 1024, 64, 16, false))
			return NAN;
		if (isnan(best) || r.mps > best)
			best = r.mps;
	}
	return best;
}
