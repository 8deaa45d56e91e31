// SPDX-License-Identifier: GPL-2.0-only
/*
 * msgrate: Sandia's "real-world message rate" on libchan.
 *
 * -n processes (forked, pinned in --cpus order); each owns a receiving
 * channel with a lane per peer and a sender handle to each of its peers'
 * channels.  Peers, as on the page: npeers/2 "lower" ranks in ascending
 * order, then the "higher" ones, wrapping around (an odd -p gives the
 * extra peer to the higher side).  Before each iteration every process
 * invalidates its cache by writing a -c byte array, a[i] = a[i-1] + 1, then
 * touches its send buffer.  Patterns, as the page's kernels:
 *   single-direction  rank 2k sends -m messages to 2k+1 (no barrier);
 *   pair-based        for each peer in turn: send -m to it, receive -m from
 *                     its mirror (the rank as far the other way), no barrier;
 *   pre-posted        barrier, send -m to every peer, then receive them all;
 *   all-start         barrier, sends to every peer with receives drained as
 *                     they come, then the rest.
 * Message rate counts every message a process handles, sent or received
 * (as the page does), over its timed sections.
 *
 * libchan has no posted receives: a receiving channel takes messages into
 * its lanes whenever they come and the receiver drains them.  "Posting" is
 * therefore creating the channel (done once, before all patterns), and the
 * patterns differ in when the process drains: pre-posted only after all its
 * sends, the others as messages come.  Lanes hold -m messages, so no send
 * ever waits on a receiver that is itself sending.
 *
 * Every message carries its source and a per-source counter and the
 * receiver checks both (and a check byte), so a --quick run fails on a
 * lost, duplicated or corrupted message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lzb.h"

#define MR_MAX_PROCS	256
#define MR_MAX_PEERS	64
#define MR_TIMEOUT_NS	10000000000ULL

enum mr_pattern { MR_SINGLE, MR_PAIR, MR_PREPOST, MR_ALLSTART, MR_PATTERNS };
static const char *const mr_names[MR_PATTERNS] = {
	"single-direction", "pair-based", "pre-posted", "all-start"
};

struct mr_result {
	uint64_t msgs, ns;
	bool took_part;
};

struct mr_run {
	int nprocs, npeers;
	uint64_t iters, msgs, size, cache;
	uint32_t slot_count;
	struct lzb_barrier created, start, step;
	char names[MR_MAX_PROCS][48];
	struct mr_result res[MR_MAX_PROCS][MR_PATTERNS];
	uint64_t sink;
	int failed;
	char backend[48];
	char why[200];
};

struct mr_proc {
	struct mr_run *run;
	int rank;
	int offs[MR_MAX_PEERS];		/* peer i is rank + offs[i] (mod n) */
	struct lzchan *rx, *tx[MR_MAX_PEERS];
	uint64_t sent[MR_MAX_PEERS];	/* per destination (peer index) */
	uint64_t got[MR_MAX_PROCS];	/* per source rank, all patterns */
	uint64_t due[MR_MAX_PROCS];	/* what must have come by now */
	unsigned char *sbuf, *rbuf;
	uint32_t *cache;
	int err;
};

static int mr_peer(const struct mr_proc *p, int off)
{
	int n = p->run->nprocs;

	return ((p->rank + off) % n + n) % n;
}

static void mr_fail(struct mr_proc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mr_fail(struct mr_proc *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err)
		return;
	p->err = 1;
	/* The first failure is the cause; the others follow from it. */
	if (__atomic_exchange_n(&p->run->failed, 1, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(p->run->why, sizeof(p->run->why), fmt, ap);
	va_end(ap);
}

/* Take whatever has come; 0, or -1 after mr_fail(). */
static int mr_drain(struct mr_proc *p)
{
	struct mr_run *run = p->run;
	uint32_t lane, src, seq;
	int r;

	for (;;) {
		r = lzchan_recv(p->rx, p->rbuf, run->size + 64, &lane);
		if (r == -EAGAIN || r == -EPIPE)
			return 0;
		if (r != (int)run->size) {
			mr_fail(p, "rank %d: receive returned %d (%s), expected %llu bytes", p->rank, r,
				r < 0 ? strerror(-r) : "wrong length", (unsigned long long)run->size);
			return -1;
		}
		memcpy(&src, p->rbuf, 4);
		memcpy(&seq, p->rbuf + 4, 4);
		if (src >= (uint32_t)run->nprocs || seq != (uint32_t)p->got[src] ||
		    (run->size > 8 && p->rbuf[run->size - 1] != (unsigned char)(seq * 13 + src))) {
			mr_fail(p, "rank %d: message %u from rank %u is lost, duplicated or corrupted",
				p->rank, seq, src);
			return -1;
		}
		p->got[src]++;
	}
}

/* Wait until source @src (or every source, -1) has sent what is due. */
static uint64_t mr_got_total(const struct mr_proc *p)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < p->run->nprocs; i++)
		sum += p->got[i];
	return sum;
}

static int mr_wait_due(struct mr_proc *p, int src)
{
	uint64_t last = mr_got_total(p), since = lzb_now_ns(), now;
	unsigned int spins = 0, tries = 0;
	int i;

	for (;;) {
		bool done = true;

		if (mr_drain(p))
			return -1;
		/* A lost message fails the run, never hangs it. */
		if ((++tries & 1023) == 0) {
			now = lzb_now_ns();
			if (mr_got_total(p) != last) {
				last = mr_got_total(p);
				since = now;
			} else if (now - since > MR_TIMEOUT_NS) {
				for (i = 0; i < p->run->nprocs; i++)
					if (p->got[i] < p->due[i])
						break;
				mr_fail(p, "rank %d: nothing came for 10 s; %llu messages from rank %d missing (lost)",
					p->rank, i < p->run->nprocs ?
					(unsigned long long)(p->due[i] - p->got[i]) : 0ULL,
					i < p->run->nprocs ? i : -1);
				return -1;
			}
		}
		if (src >= 0) {
			done = p->got[src] >= p->due[src];
		} else {
			for (i = 0; i < p->run->nprocs && done; i++)
				done = p->got[i] >= p->due[i];
		}
		if (done)
			return 0;
		lzb_spin(&spins);
	}
}

/* Send one message to peer index @i; drains while its lane is full. */
static int mr_send(struct mr_proc *p, int i)
{
	struct mr_run *run = p->run;
	uint32_t src = (uint32_t)p->rank, seq = (uint32_t)p->sent[i];
	unsigned int spins = 0;
	int r;

	memcpy(p->sbuf, &src, 4);
	memcpy(p->sbuf + 4, &seq, 4);
	if (run->size > 8)	/* a check byte after the header */
		p->sbuf[run->size - 1] = (unsigned char)(seq * 13 + src);
	while ((r = lzchan_send(p->tx[i], p->sbuf, run->size)) == -EAGAIN) {
		if (mr_drain(p))
			return -1;
		lzb_spin(&spins);
	}
	if (r) {
		mr_fail(p, "rank %d: sending to rank %d: %s", p->rank, mr_peer(p, p->offs[i]),
			strerror(-r));
		return -1;
	}
	p->sent[i]++;
	return 0;
}

static int mr_send_n(struct mr_proc *p, int i, bool drain)
{
	uint64_t k;

	for (k = 0; k < p->run->msgs; k++) {
		if (mr_send(p, i))
			return -1;
		if (drain && mr_drain(p))
			return -1;
	}
	return 0;
}

static void mr_invalidate(struct mr_proc *p)
{
	struct mr_run *run = p->run;
	size_t n = run->cache / sizeof(uint32_t), i;

	for (i = 1; i < n; i++)
		p->cache[i] = p->cache[i - 1] + 1;
	/* The array escapes: the writes cannot be optimised away. */
	__atomic_store_n(&run->sink, p->cache[n - 1], __ATOMIC_RELAXED);
	/* Send buffers are touched just before the sends, as on the page. */
	memset(p->sbuf, (int)(p->cache[0] & 0xff), run->size);
}

static int mr_pattern(struct mr_proc *p, enum mr_pattern pat)
{
	struct mr_run *run = p->run;
	struct mr_result *res = &run->res[p->rank][pat];
	int n = run->nprocs, np = run->npeers, i, single_peer = -1;
	uint64_t it, t0;
	bool sender = false, part = true;

	if (pat == MR_SINGLE) {
		part = p->rank < n - n % 2;
		sender = !(p->rank & 1);
		for (i = 0; i < np; i++)
			if (p->offs[i] == (sender ? 1 : -1))
				single_peer = i;
		if (sender && single_peer < 0)
			part = false;	/* cannot happen: offset +1 is always a peer */
	}
	res->took_part = part;
	for (it = 0; it < run->iters; it++) {
		if (p->rank == 0)
			lzb_progress("msgrate: %s, iteration %llu of %llu", mr_names[pat],
				     (unsigned long long)it + 1, (unsigned long long)run->iters);
		mr_invalidate(p);
		if (pat == MR_PREPOST || pat == MR_ALLSTART)
			lzb_barrier_wait(&run->step);
		if (!part)
			continue;
		t0 = lzb_now_ns();
		switch (pat) {
		case MR_SINGLE:
			if (sender) {
				if (mr_send_n(p, single_peer, false))
					return -1;
			} else {
				int src = mr_peer(p, -1);

				p->due[src] += run->msgs;
				if (mr_wait_due(p, src))
					return -1;
			}
			res->msgs += run->msgs;
			break;
		case MR_PAIR:
			for (i = 0; i < np; i++) {
				int src = mr_peer(p, -p->offs[i]);

				if (mr_send_n(p, i, false))
					return -1;
				p->due[src] += run->msgs;
				if (mr_wait_due(p, src))
					return -1;
			}
			res->msgs += 2 * (uint64_t)np * run->msgs;
			break;
		case MR_PREPOST:
		case MR_ALLSTART:
			for (i = 0; i < np; i++) {
				p->due[mr_peer(p, -p->offs[i])] += run->msgs;
				if (mr_send_n(p, i, pat == MR_ALLSTART))
					return -1;
			}
			if (mr_wait_due(p, -1))
				return -1;
			res->msgs += 2 * (uint64_t)np * run->msgs;
			break;
		default:
			break;
		}
		res->ns += lzb_now_ns() - t0;
	}
	return 0;
}

static int mr_worker(int rank, void *arg)
{
	struct mr_run *run = arg;
	struct mr_proc *p = calloc(1, sizeof(*p));
	int i, lower, pat, ret = 0;

	if (!p)
		lzb_die("out of memory");
	p->run = run;
	p->rank = rank;
	if (lzb_pin(lzb_cpu(rank)))
		lzb_die("pinning rank %d to CPU %d: %s", rank, lzb_cpu(rank), strerror(errno));
	/* npeers/2 lower in ascending order, then the higher ones. */
	lower = run->npeers / 2;
	for (i = 0; i < lower; i++)
		p->offs[i] = -(lower - i);
	for (i = lower; i < run->npeers; i++)
		p->offs[i] = i - lower + 1;
	p->cache = calloc(run->cache / sizeof(uint32_t), sizeof(uint32_t));
	p->sbuf = aligned_alloc(64, (run->size + 127) & ~(uint64_t)63);
	p->rbuf = aligned_alloc(64, (run->size + 127) & ~(uint64_t)63);
	if (!p->cache || !p->sbuf || !p->rbuf)
		lzb_die("rank %d: out of memory for a %llu byte cache array", rank,
			(unsigned long long)run->cache);
	p->rx = lzb_chan_rx(run->names[rank], 64, run->slot_count, (uint32_t)run->npeers);
	if (rank == 0)
		snprintf(run->backend, sizeof(run->backend), "%s", lzchan_backend_name(p->rx));
	lzb_barrier_wait(&run->created);
	for (i = 0; i < run->npeers; i++)
		p->tx[i] = lzb_chan_tx(run->names[mr_peer(p, p->offs[i])]);
	lzb_barrier_wait(&run->start);
	lzchan_unlink(run->names[rank]);
	for (pat = 0; pat < MR_PATTERNS && !ret; pat++) {
		ret = mr_pattern(p, pat);
		/* Patterns do not overlap: all of one is received first. */
		if (!ret)
			lzb_barrier_wait(&run->start);
	}
	if (rank == 0)
		lzb_progress(NULL);
	for (i = 0; i < run->npeers; i++)
		lzchan_close(p->tx[i]);
	if (!ret) {
		/* Every sender is done: nothing more than was due may be there. */
		lzb_barrier_wait(&run->start);
		if (mr_drain(p))
			ret = -1;
		for (i = 0; i < run->nprocs && !ret; i++)
			if (p->got[i] != p->due[i])
				mr_fail(p, "rank %d: %llu messages from rank %d where %llu were sent to it",
					rank, (unsigned long long)p->got[i], i, (unsigned long long)p->due[i]);
	}
	lzchan_close(p->rx);
	if (p->err)
		ret = -1;
	free(p->cache);
	free(p->sbuf);
	free(p->rbuf);
	free(p);
	return ret ? 1 : 0;
}

static void mr_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench msgrate [OPTIONS]\n"
		"\n"
		"Sandia's real-world message rate on libchan: -n processes, each with its\n"
		"own receiving channel and a sender handle to each of -p peers (npeers/2\n"
		"lower ranks, then the higher ones, wrapping), the cache invalidated before\n"
		"each iteration; single-direction, pair-based, pre-posted and all-start\n"
		"patterns.  Reports messages per second (sent + received) per process and\n"
		"in total, per pattern.  Process i runs on the i-th CPU of --cpus.\n"
		"libchan has no posted receives: see the notes of a run.\n"
		"\n"
		"  -p N     number of peers (default 6, at most procs - 1)\n"
		"  -i N     iterations per pattern (default 100; --quick 3)\n"
		"  -m N     messages per peer per iteration (default 128; --quick 16)\n"
		"  -s B     bytes per message, 8 or more (default 8)\n"
		"  -c B     cache size to invalidate, bytes (default 16M; --quick 256K)\n"
		"  -n N     processes (default: the number of --cpus, at least 2)\n"
		"  -o       machine-readable output (the same as --csv)\n"
		"%s", LZB_COMMON_HELP);
}

int lzb_cmd_msgrate(int argc, char **argv)
{
	static const struct option opts[] = { LZB_COMMON_OPTS, { 0 } };
	uint64_t peers = 6, iters = 100, msgs = 128, size = 8, cache = 16 << 20, procs = 0;
	bool peers_given = false, iters_given = false, msgs_given = false, cache_given = false;
	struct mr_run *run;
	struct lzb_table *t;
	uint64_t need;
	int c, i, pat, ret;

	while ((c = getopt_long(argc, argv, "p:i:m:s:c:n:oh", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 'p':
			if (!lzb_parse_size(optarg, &peers) || !peers || peers > MR_MAX_PEERS)
				lzb_usage_error("msgrate", "-p wants 1..%d peers, not '%s'", MR_MAX_PEERS, optarg);
			peers_given = true;
			break;
		case 'i':
			if (!lzb_parse_size(optarg, &iters) || !iters || iters > 100000000)
				lzb_usage_error("msgrate", "-i wants 1..100m iterations, not '%s'", optarg);
			iters_given = true;
			break;
		case 'm':
			if (!lzb_parse_size(optarg, &msgs) || !msgs || msgs > (1U << 20))
				lzb_usage_error("msgrate", "-m wants 1..1M messages per peer, not '%s'", optarg);
			msgs_given = true;
			break;
		case 's':
			if (!lzb_parse_size(optarg, &size) || size < 8 || size > (1U << 20))
				lzb_usage_error("msgrate", "-s wants 8..1M bytes (each message carries its source and number), not '%s'", optarg);
			break;
		case 'c':
			if (!lzb_parse_size(optarg, &cache) || cache < 64 || cache > (1ULL << 32))
				lzb_usage_error("msgrate", "-c wants 64 B..4G, not '%s'", optarg);
			cache_given = true;
			break;
		case 'n':
			if (!lzb_parse_size(optarg, &procs) || procs < 2 || procs > MR_MAX_PROCS)
				lzb_usage_error("msgrate", "-n wants 2..%d processes, not '%s'", MR_MAX_PROCS, optarg);
			break;
		case 'o':
			lzb.format = LZB_CSV;
			break;
		case 'h':
			mr_help(stdout);
			return 0;
		default:
			lzb_usage_error("msgrate", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("msgrate", "unexpected argument '%s'", argv[optind]);
	if (!procs) {
		lzb_cpu(0);	/* fills the CPU list */
		procs = lzb.ncpus < 2 ? 2 : (uint64_t)lzb.ncpus;
		if (procs > MR_MAX_PROCS)
			procs = MR_MAX_PROCS;
	}
	if (peers > procs - 1) {
		if (peers_given)
			lzb_usage_error("msgrate", "-p %llu needs at least %llu processes (-n %llu)",
					(unsigned long long)peers, (unsigned long long)peers + 1,
					(unsigned long long)procs);
		peers = procs - 1;
	}
	if (lzb.quick) {
		if (!iters_given)
			iters = 3;
		if (!msgs_given)
			msgs = 16;
		if (!cache_given)
			cache = 256 << 10;
	}
	lzb_begin("msgrate");

	run = lzb_shared_alloc(sizeof(*run));
	memset(run, 0, sizeof(*run));
	run->nprocs = (int)procs;
	run->npeers = (int)peers;
	run->iters = iters;
	run->msgs = msgs;
	run->size = size;
	run->cache = cache & ~(uint64_t)3;
	/* A lane holds two iterations of -m messages (a fast peer may be one
	 * ahead) without its sender ever waiting. */
	need = 2 * msgs * ((size + 8 + 63) / 64) + 2;
	run->slot_count = 64;
	while (run->slot_count < need)
		run->slot_count <<= 1;
	for (i = 0; i < run->nprocs; i++)
		lzb_chan_name(run->names[i], sizeof(run->names[i]), "mr");
	lzb_barrier_init(&run->created, (uint32_t)procs);
	lzb_barrier_init(&run->start, (uint32_t)procs);
	lzb_barrier_init(&run->step, (uint32_t)procs);
	lzb_workers((int)procs);
	ret = lzb_run(run->nprocs, true, mr_worker, run);
	if (ret)
		fprintf(stderr, "lzchan-bench msgrate: %s\n", run->why[0] ? run->why : "a process failed");
	if (run->backend[0]) {
		static char be[48];

		snprintf(be, sizeof(be), "%s", run->backend);
		lzb.backend = be;
	}

	t = lzb_table_new("msgrate", "Real-world message rate (Sandia): messages sent + received per second");
	lzb_table_col(t, "pattern", "", 0);
	lzb_table_col(t, "procs", "", 0);
	lzb_table_col(t, "peers", "", 0);
	lzb_table_col(t, "per proc mean", "M msgs/s", 3);
	lzb_table_col(t, "per proc min", "M msgs/s", 3);
	lzb_table_col(t, "total", "M msgs/s", 3);
	for (pat = 0; pat < MR_PATTERNS && !ret; pat++) {
		double sum = 0, min = -1;
		int nres = 0;

		for (i = 0; i < run->nprocs; i++) {
			const struct mr_result *r = &run->res[i][pat];
			double rate;

			if (!r->took_part || !r->ns)
				continue;
			rate = (double)r->msgs / ((double)r->ns / 1e9);
			sum += rate;
			if (min < 0 || rate < min)
				min = rate;
			nres++;
		}
		lzb_table_row(t);
		lzb_cell_str(t, mr_names[pat]);
		lzb_cell_num(t, nres);
		lzb_cell_num(t, pat == MR_SINGLE ? 1 : run->npeers);
		if (nres) {
			lzb_cell_num(t, sum / nres / 1e6);
			lzb_cell_num(t, min / 1e6);
			lzb_cell_num(t, sum / 1e6);
		} else {
			lzb_cell_na(t);
			lzb_cell_na(t);
			lzb_cell_na(t);
		}
	}
	lzb_table_note(t, "-n %d -p %d -i %llu -m %llu -s %llu -c %llu; process i on the i-th CPU of --cpus",
		       run->nprocs, run->npeers, (unsigned long long)iters, (unsigned long long)msgs,
		       (unsigned long long)size, (unsigned long long)run->cache);
	lzb_table_note(t, "libchan has no posted receives: a channel takes messages whenever they come; "
		       "pre-posted = the channel exists and is drained only after the sends");
	lzb_table_note(t, "rates count sends and receives over each process's timed sections; "
		       "total = sum of the per-process rates");
	lzb_table_note(t, "single-direction and pair-based have no barrier (as on the page): "
		       "a process's time includes waiting out its peers' cache invalidation");
	if (run->npeers < 6 && !peers_given)
		lzb_table_note(t, "-p lowered from 6 to %d: only %d processes", run->npeers, run->nprocs);
	if (run->nprocs % 2)
		lzb_table_note(t, "single-direction: odd process count, rank %d sits it out", run->nprocs - 1);
	if (lzb.oversubscribed)
		lzb_table_note(t, "%d processes on %d CPUs: they share CPUs (spinners yield)", run->nprocs,
			       lzb.ncpus);
	lzb_shared_free(run, sizeof(*run));
	lzb_emit(t);
	return ret ? 1 : 0;
}
