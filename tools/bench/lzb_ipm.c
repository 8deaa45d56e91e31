// SPDX-License-Identifier: GPL-2.0-only
/*
 * ipm: instructions per message, counted (not timed) with valgrind's
 * callgrind, so the figure is the same on every run and every machine
 * with the same compiler.
 *
 * One process, one lane of 1024 slots of 64 bytes, 56-byte messages whose
 * length the compiler cannot know (it comes from the command line), in
 * rounds of "send 256, receive 256" (one row: 8 lanes, 32 each).  Each
 * path measured is one call of a
 * noinline wrapper per message (per batch for the batch calls);
 * callgrind collects only inside it (--toggle-collect), and the figure is
 * the difference of two run lengths divided by the difference of their
 * message counts, so set-up and warm-up cancel out.  The wrapper's own
 * call and return (a few instructions) are included, the same for every
 * row.  Every copy in a wrapper is the header's inline copy
 * (__lzchan_copy(), what lzchan_send() itself uses).  The article's lazy
 * ring is counted by the same harness: the same wrapper shape, the same
 * message and copy, its sequence word inside the slot and its consumer
 * position published every half ring.
 *
 * `lzchan-bench ipm` drives valgrind; `lzchan-bench ipm --inner PATH N`
 * is what runs under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lzb.h"

#define IPM_SLOTS	1024
#define IPM_ROUND	256
#define IPM_BATCH	16

static const char *const ipm_paths[] = {
	"send", "recv", "reserve+commit", "peek+release", "send_batch", "recv_batch",
	"lazy-send", "lazy-recv", "recv, empty", "lazy-recv, empty", "recv_batch, views",
	"recv, 8 lanes", "ping-pong hop", "lazy ping-pong hop", "lazy-fair, 8 rings",
	"peek+release, 8 lanes", "recv_batch views, 8 lanes",
};
/* The wrapper callgrind collects in, per path. */
static const char *const ipm_fns[] = {
	"lzb_ipm_send", "lzb_ipm_recv", "lzb_ipm_reserve_commit", "lzb_ipm_peek_release",
	"lzb_ipm_send_batch", "lzb_ipm_recv_batch", "lzb_ipm_lazy_send", "lzb_ipm_lazy_recv",
	"lzb_ipm_recv", "lzb_ipm_lazy_recv", "lzb_ipm_recv_batch_views",
	"lzb_ipm_recv", "lzb_ipm_hop", "lzb_ipm_lazy_hop", "lzb_ipm_lazy_fair",
	"lzb_ipm_peek_view", "lzb_ipm_recv_batch_views",
};
/* Each row's baseline (the path it is a ratio of; -1: none) and the
 * issue's target for that ratio (0: none). */
static const int ipm_base[] = { 6, 7, 6, 7, 6, 7, -1, -1, 9, -1, 7, 14, 13, -1, -1, 11, 14 };
static const double ipm_goal[] = { 1.6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0, 0, 0, 1.0, 0.75 };
/* The empty rows count one poll of an empty lane each (a receiver spinning
 * for its next message, as in a ping-pong) in place of a message. */
#define IPM_EMPTY	8
#define IPM_LAZY_EMPTY	9
/* The batch receive as the table counted it: the call and the
 * release of the batch, the messages read in place (not copied). */
#define IPM_BATCH_VIEWS	10
/* The receive with IPM_LANES lanes, each holding its share of the round
 * (the N-senders ring's receiver: its cost per message, lane turns
 * included). */
#define IPM_MANY	11
#define IPM_LANES	8
/* One hop of a ping-pong as one side sees it, counted per hop: a send, a
 * receive and two polls of an empty lane (the wait for the reply), on a
 * lane of IPM_HOP_SLOTS slots -- the ping-pong's (lzchan-bench lat), where
 * the receiver's head falls due for publication every 16 messages -- and
 * the same calls on the lazy ring. */
#define IPM_HOP		12
#define IPM_LAZY_HOP	13
#define IPM_HOP_SLOTS	64
/* The 8->1 stream of the ring benchmark (lzchan-bench ring), each way:
 * the lazy ring with the receiver work of its lazy-fair row (IPM_LANES
 * rings, one message per ring visited, copied out); libchan's views one
 * at a time (read in place, released); its batches of views. */
#define IPM_LAZY_MANY	14
#define IPM_MANY_ZC	15
#define IPM_MANY_VIEWS	16
#define IPM_NPATHS	((int)(sizeof(ipm_paths) / sizeof(ipm_paths[0])))

/* ---------- the lazy ring, as the article describes it ---------- */

struct ipm_lazy {
	_Alignas(64) uint32_t rp;	/* the consumer's published position */
	_Alignas(64) uint32_t wp;	/* producer-local */
	uint32_t cached_rp;
	_Alignas(64) uint32_t crp;	/* consumer-local */
	_Alignas(64) char slots[IPM_SLOTS][64];
};

/* Each slot: the sequence word (position + 1 once written), the length,
 * the payload. */
struct ipm_lazy_slot {
	uint32_t seq;
	uint32_t len;
	char data[56];
};

static inline __attribute__((always_inline)) int ipm_lazy_send(struct ipm_lazy *r,
							      const void *buf, size_t len)
{
	struct ipm_lazy_slot *s = (void *)r->slots[r->wp & (IPM_SLOTS - 1)];

	if (len > sizeof(s->data))
		return -EMSGSIZE;
	if (r->wp - r->cached_rp >= IPM_SLOTS) {
		/* Pairs with the consumer's release store of rp. */
		r->cached_rp = __atomic_load_n(&r->rp, __ATOMIC_ACQUIRE);
		if (r->wp - r->cached_rp >= IPM_SLOTS)
			return -EAGAIN;
	}
	__lzchan_copy(s->data, buf, len);
	s->len = (uint32_t)len;
	/* Pairs with the consumer's acquire load of seq. */
	__atomic_store_n(&s->seq, ++r->wp, __ATOMIC_RELEASE);
	return 0;
}

static inline __attribute__((always_inline)) int ipm_lazy_recv(struct ipm_lazy *r, void *buf,
							      size_t cap)
{
	const struct ipm_lazy_slot *s = (const void *)r->slots[r->crp & (IPM_SLOTS - 1)];
	uint32_t len;

	/* Pairs with the producer's release store of seq. */
	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != r->crp + 1)
		return -EAGAIN;
	len = s->len;
	if (len > cap || len > sizeof(s->data))
		return -EMSGSIZE;
	__lzchan_copy(buf, s->data, len);
	/* Every half ring.  Pairs with the producer's acquire load of rp. */
	if (!(++r->crp & (IPM_SLOTS / 2 - 1)))
		__atomic_store_n(&r->rp, r->crp, __ATOMIC_RELEASE);
	return (int)len;
}

__attribute__((noinline, used)) int lzb_ipm_lazy_send(struct ipm_lazy *r, const void *buf,
						       size_t len)
{
	return ipm_lazy_send(r, buf, len);
}

__attribute__((noinline, used)) int lzb_ipm_lazy_recv(struct ipm_lazy *r, void *buf, size_t cap)
{
	return ipm_lazy_recv(r, buf, cap);
}

/* ---------- libchan, through the public header's fast paths ---------- */

__attribute__((noinline, used)) int lzb_ipm_send(struct lzchan *tx, const void *buf, size_t len)
{
	return lzchan_send(tx, buf, len);
}

__attribute__((noinline, used)) int lzb_ipm_recv(struct lzchan *rx, void *buf, size_t cap)
{
	return lzchan_recv(rx, buf, cap, NULL);
}

__attribute__((noinline, used)) int lzb_ipm_reserve_commit(struct lzchan *tx, const void *buf,
							    size_t len)
{
	void *p;
	int r = lzchan_reserve(tx, len, &p);

	if (r)
		return r;
	__lzchan_copy(p, buf, len);
	return lzchan_commit(tx, len);
}

__attribute__((noinline, used)) int lzb_ipm_peek_release(struct lzchan *rx, void *buf, size_t cap)
{
	struct lzchan_msg m;
	int r = lzchan_peek(rx, &m);

	if (r)
		return r;
	if (m.len > cap)
		return -EMSGSIZE;
	__lzchan_copy(buf, m.data, m.len);
	lzchan_release(rx, &m);
	return (int)m.len;
}

__attribute__((noinline, used)) int lzb_ipm_send_batch(struct lzchan *tx, const struct iovec *v,
							unsigned int n)
{
	return lzchan_send_batch(tx, v, n);
}

__attribute__((noinline, used)) int lzb_ipm_recv_batch(struct lzchan *rx, char (*bufs)[64],
							unsigned int n)
{
	struct lzchan_msg m[IPM_BATCH];
	int r = lzchan_recv_batch(rx, m, n), k;

	/* Each one copied out; then, as lzchan_recv_batch(3) says, the last
	 * view released (which releases the batch). */
	for (k = 0; k < r; k++)
		__lzchan_copy(bufs[k], m[k].data, m[k].len);
	if (r > 0)
		lzchan_release(rx, &m[r - 1]);
	return r;
}

__attribute__((noinline, used)) int lzb_ipm_recv_batch_views(struct lzchan *rx,
								struct lzchan_msg *m, unsigned int n)
{
	int r = lzchan_recv_batch(rx, m, n);

	if (r > 0)
		lzchan_release(rx, &m[r - 1]);
	return r;
}

/* lazy-fair's receiver: ring *@at, then the next (one visit each). */
__attribute__((noinline, used)) int lzb_ipm_lazy_fair(struct ipm_lazy *rings, uint32_t *at,
						       void *buf, size_t cap)
{
	int r = ipm_lazy_recv(&rings[*at], buf, cap);

	if (++*at == IPM_LANES)
		*at = 0;
	return r;
}

/* A view, its first word read in place, released. */
__attribute__((noinline, used)) int lzb_ipm_peek_view(struct lzchan *rx, uint32_t *word)
{
	struct lzchan_msg m;
	int r = lzchan_peek(rx, &m);

	if (r)
		return r;
	*word = *(const uint32_t *)m.data;
	lzchan_release(rx, &m);
	return (int)m.len;
}

__attribute__((noinline, used)) int lzb_ipm_hop(struct lzchan *tx, struct lzchan *rx,
						 const void *buf, void *out, size_t len)
{
	if (lzchan_send(tx, buf, len) || lzchan_recv(rx, out, 64, NULL) != (int)len ||
	    lzchan_recv(rx, out, 64, NULL) != -EAGAIN || lzchan_recv(rx, out, 64, NULL) != -EAGAIN)
		return -1;
	return 0;
}

__attribute__((noinline, used)) int lzb_ipm_lazy_hop(struct ipm_lazy *r, const void *buf,
						      void *out, size_t len)
{
	if (ipm_lazy_send(r, buf, len) || ipm_lazy_recv(r, out, 64) != (int)len ||
	    ipm_lazy_recv(r, out, 64) != -EAGAIN || ipm_lazy_recv(r, out, 64) != -EAGAIN)
		return -1;
	return 0;
}

/* Plain (not collected) counterparts that keep the other side going. */
static void ipm_fill(struct lzchan *tx, const char *buf, size_t len, int n)
{
	while (n--)
		if (lzchan_send(tx, buf, len))
			lzb_die("ipm: a send failed");
}

static void ipm_drain(struct lzchan *rx, char *buf, int n)
{
	while (n--)
		if (lzchan_recv(rx, buf, 64, NULL) < 0)
			lzb_die("ipm: a receive failed");
}

/* Run @path for @n messages (a multiple of IPM_ROUND). */
static int ipm_inner(int path, uint64_t n, size_t len)
{
	char msg[64], out[IPM_BATCH][64], name[64];
	struct iovec v[IPM_BATCH];
	struct lzchan *rx = NULL, *tx = NULL, *txs[IPM_LANES] = { NULL };
	struct ipm_lazy *lazy = NULL;
	uint32_t at = 0, word = 0;
	uint64_t done;
	int k, j;

	memset(msg, 'm', sizeof(msg));
	for (k = 0; k < IPM_BATCH; k++)
		v[k] = (struct iovec){ .iov_base = msg, .iov_len = len };
	if (path == 6 || path == 7 || path == IPM_LAZY_EMPTY || path == IPM_LAZY_HOP ||
	    path == IPM_LAZY_MANY) {
		lazy = aligned_alloc(64, IPM_LANES * sizeof(*lazy));
		if (!lazy)
			lzb_die("out of memory");
		memset(lazy, 0, IPM_LANES * sizeof(*lazy));
	} else {
		bool many = path == IPM_MANY || path == IPM_MANY_ZC || path == IPM_MANY_VIEWS;

		lzb_chan_name(name, sizeof(name), "ipm");
		rx = lzb_chan_rx(name, 64, path == IPM_HOP ? IPM_HOP_SLOTS : IPM_SLOTS,
				 many ? IPM_LANES : 1);
		tx = lzb_chan_tx(name);
		/* One message through first: a lane is polled once it has
		 * carried something (before that, its bell wakes it). */
		ipm_fill(tx, msg, len, 1);
		ipm_drain(rx, out[0], 1);
		if (many) {
			txs[0] = tx;
			for (k = 1; k < IPM_LANES; k++) {
				txs[k] = lzb_chan_tx(name);
				ipm_fill(txs[k], msg, len, 1);
				ipm_drain(rx, out[0], 1);
			}
		}
	}
	for (done = 0; done < n; done += IPM_ROUND) {
		switch (path) {
		case 0:
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_send(tx, msg, len))
					lzb_die("ipm: send failed");
			ipm_drain(rx, out[0], IPM_ROUND);
			break;
		case 1:
			ipm_fill(tx, msg, len, IPM_ROUND);
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_recv(rx, out[0], sizeof(out[0])) != (int)len)
					lzb_die("ipm: recv failed");
			break;
		case 2:
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_reserve_commit(tx, msg, len))
					lzb_die("ipm: reserve/commit failed");
			ipm_drain(rx, out[0], IPM_ROUND);
			break;
		case 3:
			ipm_fill(tx, msg, len, IPM_ROUND);
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_peek_release(rx, out[0], sizeof(out[0])) != (int)len)
					lzb_die("ipm: peek/release failed");
			break;
		case 4:
			for (k = 0; k < IPM_ROUND; k += IPM_BATCH)
				if (lzb_ipm_send_batch(tx, v, IPM_BATCH) != IPM_BATCH)
					lzb_die("ipm: send_batch fell short");
			ipm_drain(rx, out[0], IPM_ROUND);
			break;
		case 5:
			ipm_fill(tx, msg, len, IPM_ROUND);
			for (k = 0; k < IPM_ROUND; k += j)
				if ((j = lzb_ipm_recv_batch(rx, out, IPM_BATCH)) <= 0)
					lzb_die("ipm: recv_batch failed");
			break;
		case 6:
		case 7:
			/* Both sides run; the toggle picks which is counted. */
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_lazy_send(lazy, msg, len))
					lzb_die("ipm: lazy send failed");
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_lazy_recv(lazy, out[0], sizeof(out[0])) != (int)len)
					lzb_die("ipm: lazy recv failed");
			break;
		case IPM_BATCH_VIEWS:
			ipm_fill(tx, msg, len, IPM_ROUND);
			for (k = 0; k < IPM_ROUND; k += j) {
				struct lzchan_msg m[IPM_BATCH];

				if ((j = lzb_ipm_recv_batch_views(rx, m, IPM_BATCH)) <= 0)
					lzb_die("ipm: recv_batch failed");
				/* Read in place: the first byte of each, uncounted. */
				out[0][0] = ((const char *)m[j - 1].data)[0];
			}
			break;
		case IPM_MANY:
			for (j = 0; j < IPM_LANES; j++)
				ipm_fill(txs[j], msg, len, IPM_ROUND / IPM_LANES);
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_recv(rx, out[0], sizeof(out[0])) != (int)len)
					lzb_die("ipm: recv from %d lanes failed", IPM_LANES);
			break;
		case IPM_MANY_ZC:
			for (j = 0; j < IPM_LANES; j++)
				ipm_fill(txs[j], msg, len, IPM_ROUND / IPM_LANES);
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_peek_view(rx, &word) != (int)len)
					lzb_die("ipm: peek from %d lanes failed", IPM_LANES);
			break;
		case IPM_MANY_VIEWS:
			for (j = 0; j < IPM_LANES; j++)
				ipm_fill(txs[j], msg, len, IPM_ROUND / IPM_LANES);
			for (k = 0; k < IPM_ROUND; k += j) {
				struct lzchan_msg m[IPM_BATCH];

				if ((j = lzb_ipm_recv_batch_views(rx, m, IPM_BATCH)) <= 0)
					lzb_die("ipm: recv_batch from %d lanes failed", IPM_LANES);
				out[0][0] = ((const char *)m[j - 1].data)[0];
			}
			break;
		case IPM_LAZY_MANY:
			for (j = 0; j < IPM_LANES; j++)
				for (k = 0; k < IPM_ROUND / IPM_LANES; k++)
					if (ipm_lazy_send(&lazy[j], msg, len))
						lzb_die("ipm: lazy send failed");
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_lazy_fair(lazy, &at, out[0], sizeof(out[0])) != (int)len)
					lzb_die("ipm: lazy-fair recv failed");
			break;
		case IPM_EMPTY:
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_recv(rx, out[0], sizeof(out[0])) != -EAGAIN)
					lzb_die("ipm: a receive on an empty lane did not say -EAGAIN");
			break;
		case IPM_LAZY_EMPTY:
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_lazy_recv(lazy, out[0], sizeof(out[0])) != -EAGAIN)
					lzb_die("ipm: lazy recv on an empty ring did not say -EAGAIN");
			break;
		case IPM_HOP:
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_hop(tx, rx, msg, out[0], len))
					lzb_die("ipm: a ping-pong hop failed");
			break;
		case IPM_LAZY_HOP:
			for (k = 0; k < IPM_ROUND; k++)
				if (lzb_ipm_lazy_hop(lazy, msg, out[0], len))
					lzb_die("ipm: a lazy ping-pong hop failed");
			break;
		}
	}
	for (k = 1; k < IPM_LANES; k++)
		if (txs[k])
			lzchan_close(txs[k]);
	if (rx) {
		lzchan_close(tx);
		lzchan_close(rx);
		lzchan_unlink(name);
	}
	free(lazy);
	return 0;
}

/* Run path @path for @n messages under callgrind: the instructions it
 * collected, or -1 (why in @err). */
static long long ipm_count(int path, uint64_t n, size_t len, char *err, size_t errlen)
{
	char arg_n[32], arg_len[16], arg_path[8];
	const char *const toggles[] = { ipm_fns[path], NULL };
	const char *const args[] = { "ipm", "--inner", arg_path, arg_n, arg_len, NULL };

	snprintf(arg_n, sizeof(arg_n), "%llu", (unsigned long long)n);
	snprintf(arg_len, sizeof(arg_len), "%zu", len);
	snprintf(arg_path, sizeof(arg_path), "%d", path);
	return lzb_callgrind(toggles, args, err, errlen);
}

static void ipm_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench ipm [--messages N] [--len BYTES] [OPTIONS]\n"
		"\n"
		"Instructions per message on libchan's paths and the article's lazy\n"
		"ring, counted by valgrind's callgrind (the same count every run):\n"
		"one lane of 1024 x 64-byte slots, rounds of send 256 / receive 256,\n"
		"the difference of runs of N and 2N messages.\n"
		"  --messages N    messages in the shorter run (default 51200)\n"
		"  --len BYTES     message length, 1..56 (default 56)\n"
		LZB_COMMON_HELP);
}

int lzb_cmd_ipm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "messages", required_argument, NULL, 'n' },
		{ "len", required_argument, NULL, 'l' },
		{ "inner", no_argument, NULL, 'I' },
		LZB_COMMON_OPTS, { 0 }
	};
	uint64_t n = 51200, len = 56;
	bool inner = false;
	struct lzb_table *t;
	char err[160] = "";
	int c, p;

	while ((c = getopt_long(argc, argv, "n:l:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 'n':
			if (!lzb_parse_size(optarg, &n) || n < IPM_ROUND || n > (1ULL << 30))
				lzb_usage_error("ipm", "--messages wants %d..1G, not '%s'", IPM_ROUND,
						optarg);
			break;
		case 'l':
			if (!lzb_parse_size(optarg, &len) || !len || len > 56)
				lzb_usage_error("ipm", "--len wants 1..56, not '%s'", optarg);
			break;
		case 'I':
			inner = true;
			break;
		case 'h':
			ipm_help(stdout);
			return 0;
		default:
			lzb_usage_error("ipm", "bad option");
		}
	}
	if (inner) {
		if (argc - optind != 3)
			lzb_usage_error("ipm", "--inner wants PATH N LEN");
		return ipm_inner(atoi(argv[optind]), strtoull(argv[optind + 1], NULL, 10),
				 strtoull(argv[optind + 2], NULL, 10));
	}
	if (optind < argc)
		lzb_usage_error("ipm", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick)
		n = IPM_ROUND * 4;
	n = n / IPM_ROUND * IPM_ROUND;
	lzb_begin("ipm");
	{
		struct lzchan *probe;
		char name[64];

		/* The backend the runs will use (lzb.backend, for the note). */
		lzb_chan_name(name, sizeof(name), "ipm");
		probe = lzb_chan_rx(name, 64, IPM_SLOTS, 1);
		lzchan_close(probe);
		lzchan_unlink(name);
	}

	t = lzb_table_new("ipm", "Instructions per message (callgrind; the same count every run)");
	lzb_table_col(t, "path", "", 0);
	lzb_table_col(t, "instructions", "per msg", 1);
	lzb_table_col(t, "baseline", "", 0);
	lzb_table_col(t, "x baseline", "", 2);
	lzb_table_col(t, "target", "x baseline", 2);
	{
		double v[IPM_NPATHS];
		long long a, b;

		for (p = 0; p < IPM_NPATHS; p++) {
			lzb_progress("ipm: %s", ipm_paths[p]);
			a = ipm_count(p, n, len, err, sizeof(err));
			b = a < 0 ? -1 : ipm_count(p, 2 * n, len, err, sizeof(err));
			v[p] = a < 0 || b < 0 ? -1 : (double)(b - a) / (double)n;
		}
		lzb_progress(NULL);
		for (p = 0; p < IPM_NPATHS; p++) {
			int q = ipm_base[p];

			lzb_table_row(t);
			lzb_cell_str(t, ipm_paths[p]);
			if (v[p] < 0)
				lzb_cell_na(t);
			else
				lzb_cell_num(t, v[p]);
			if (q < 0) {
				lzb_cell_na(t);
				lzb_cell_na(t);
			} else {
				lzb_cell_str(t, ipm_paths[q]);
				if (v[p] > 0 && v[q] > 0)
					lzb_cell_num(t, v[p] / v[q]);
				else
					lzb_cell_na(t);
			}
			if (ipm_goal[p] > 0)
				lzb_cell_num(t, ipm_goal[p]);
			else
				lzb_cell_na(t);
		}
		if (err[0])
			lzb_table_note(t, "n/a: %s", err);
	}
	lzb_table_note(t, "%llu and %llu messages of %llu bytes; one lane, %d x 64-byte slots; "
		       "backend %s", (unsigned long long)n, (unsigned long long)(2 * n),
		       (unsigned long long)len, IPM_SLOTS, lzb.backend ? lzb.backend : "?");
	lzb_table_note(t, "batch rows: per message, batches of %d, one release per batch; "
		       "recv_batch copies each message out (the copy is counted), 'recv_batch, "
		       "views' reads them in place", IPM_BATCH);
	lzb_table_note(t, "empty rows: per poll of an empty lane (what a receiver spins on "
		       "between messages, as in a ping-pong)");
	lzb_table_note(t, "'%d lanes' rows: %d senders, %d messages on each per round, "
		       "received from any lane (turns between busy lanes included): copies, "
		       "views read in place, batches of views; 'lazy-fair, %d rings' is the "
		       "ring benchmark's lazy-fair receiver on the same stream (one message "
		       "per ring visited, copied out)", IPM_LANES, IPM_LANES,
		       IPM_ROUND / IPM_LANES, IPM_LANES);
	lzb_table_note(t, "targets (x baseline, lower is better): send within 1.6x the lazy "
		       "ring's; from %d lanes, copies within lazy-fair's, views within copies, "
		       "batches of views within 0.75x lazy-fair's", IPM_LANES);
	lzb_table_note(t, "hop rows: per hop of a ping-pong as one side sees it -- a send, a "
		       "receive, two polls of the empty lane -- on a lane of %d slots (the "
		       "ping-pong's); the lazy ring's on its own", IPM_HOP_SLOTS);
	lzb_emit(t);
	return 0;
}
