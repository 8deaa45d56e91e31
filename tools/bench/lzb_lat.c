// SPDX-License-Identifier: GPL-2.0-only
/*
 * lat: latency, after the Open MPI "sm latency" RFC and OSU latency.
 *   size   ping-pong half round trip by message size, between two
 *          processes and between two threads, next to the raw core-to-core
 *          flag bounce measured on the same two CPUs in the same run;
 *   idle   the same 64-byte ping-pong with K idle senders attached to the
 *          receiving channel (the RFC's point: latency stays flat as
 *          peers are added);
 *   ring   an exchange ring ("sendrecv") among P processes: each step every
 *          process sends to its right neighbour and receives from its left.
 * Receivers busy-poll (lzchan_recv); the wakeup experiment covers parking.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lzb.h"

#define LAT_SLOT	64

struct lat_run {
	char name[2][64];	/* channel each side receives on */
	uint32_t size, slots, lanes;
	uint64_t iters, warmup;
	uint64_t ticks;
	int idle;		/* idle senders to attach to side 1's channel */
	struct lzb_barrier created, idle_ready, start, done;
	char why[160];
	int err;
};

static int lat_recv_one(struct lzchan *ch, void *buf, size_t cap, uint32_t want)
{
	unsigned int spins = 0;
	int r;

	while ((r = lzchan_recv(ch, buf, cap, NULL)) == -EAGAIN)
		lzb_spin(&spins);
	if (r < 0)
		return r;
	return (uint32_t)r == want ? 0 : -EBADMSG;
}

static int lat_send_one(struct lzchan *ch, const void *buf, size_t len)
{
	unsigned int spins = 0;
	int r;

	while ((r = lzchan_send(ch, buf, len)) == -EAGAIN)
		lzb_spin(&spins);
	return r;
}

/* Side 0 pings, side 1 pongs; worker 2 (when idle > 0) holds the idle senders. */
static int lat_worker(int i, void *arg)
{
	struct lat_run *run = arg;
	struct lzchan *rx = NULL, *tx = NULL, **idle = NULL;
	uint64_t n, t0 = 0;
	uint32_t *buf;
	int r = 0, k;

	if (i == 2) {
		/* The idle senders: attached, never sending. */
		lzb_barrier_wait(&run->created);
		idle = calloc(run->idle, sizeof(*idle));
		if (!idle)
			lzb_die("out of memory");
		for (k = 0; k < run->idle; k++)
			if ((r = lzchan_open(&idle[k], run->name[1], LZCHAN_SENDER, NULL))) {
				snprintf(run->why, sizeof(run->why), "idle sender %d: %s", k, strerror(-r));
				run->err = 1;
				break;
			}
		lzb_barrier_wait(&run->idle_ready);
		/* Asleep while the others measure: no CPU taken from them. */
		lzb_barrier_wait_idle(&run->done);
		while (k-- > 0)
			lzchan_close(idle[k]);
		free(idle);
		return r ? 1 : 0;
	}
	if (lzb_pin(lzb_cpu(i)))
		lzb_die("pinning to CPU %d: %s", lzb_cpu(i), strerror(errno));
	buf = aligned_alloc(64, run->size + 64);
	if (!buf)
		lzb_die("out of memory");
	memset(buf, 0, run->size + 64);
	rx = lzb_chan_rx(run->name[i], LAT_SLOT, run->slots, i ? run->lanes : 1);
	lzb_barrier_wait(&run->created);
	tx = lzb_chan_tx(run->name[!i]);
	if (run->idle)
		lzb_barrier_wait(&run->idle_ready);
	lzb_barrier_wait(&run->start);
	for (n = 0; n < run->warmup + run->iters; n++) {
		if (n == run->warmup)
			t0 = lzb_rdtsc();
		if (run->size >= 4)
			buf[0] = (uint32_t)n;
		if (i == 0) {
			r = lat_send_one(tx, buf, run->size);
			if (!r)
				r = lat_recv_one(rx, buf, run->size + 64, run->size);
		} else {
			r = lat_recv_one(rx, buf, run->size + 64, run->size);
			if (!r)
				r = lat_send_one(tx, buf, run->size);
		}
		if (r)
			break;
		if (run->size >= 4 && buf[0] != (uint32_t)n) {
			r = -EBADMSG;
			break;
		}
	}
	if (i == 0)
		run->ticks = lzb_rdtsc() - t0;
	if (r) {
		snprintf(run->why, sizeof(run->why), "side %d, round %llu: %s", i,
			 (unsigned long long)n, strerror(-r));
		run->err = 1;
	}
	/* Both done before either leaves: a departing receiver would make
	 * the other's last send fail with EPIPE. */
	lzb_barrier_wait(&run->done);
	lzchan_close(tx);
	lzchan_unlink(run->name[i]);
	lzchan_close(rx);
	free(buf);
	return r ? 1 : 0;
}

/* Half round trip in ns, or NaN (reason printed). */
double lzb_lat_pingpong_ns(uint32_t size, uint64_t iters, bool procs, int idle)
{
	struct lat_run *run = lzb_shared_alloc(sizeof(*run));
	int nworkers = idle ? 3 : 2;
	double ns = NAN;

	memset(run, 0, sizeof(*run));
	lzb_chan_name(run->name[0], sizeof(run->name[0]), "ping");
	lzb_chan_name(run->name[1], sizeof(run->name[1]), "pong");
	run->size = size;
	/* Room for four of the largest message in one lane. */
	run->slots = 64;
	while ((uint64_t)run->slots * LAT_SLOT < 4ULL * (size + sizeof(struct lzchan_slot_hdr) + LAT_SLOT))
		run->slots <<= 1;
	run->lanes = (uint32_t)idle + 1;
	run->idle = idle;
	run->iters = iters;
	run->warmup = iters / 10 + 100;
	lzb_barrier_init(&run->created, (uint32_t)nworkers);
	lzb_barrier_init(&run->idle_ready, (uint32_t)nworkers);
	lzb_barrier_init(&run->start, 2);
	lzb_barrier_init(&run->done, (uint32_t)nworkers);
	lzb_workers(2);
	if (lzb_run(nworkers, procs, lat_worker, run) || run->err)
		fprintf(stderr, "lzchan-bench lat: %u B ping-pong failed: %s\n", size,
			run->why[0] ? run->why : "a worker failed");
	else
		ns = (double)run->ticks / lzb_tsc_ghz() / (2.0 * (double)iters);
	lzb_shared_free(run, sizeof(*run));
	return ns;
}

/* ---------- the same ping-pong over the article's lazy ring ---------- */

/*
 * The baseline for the ping-pong: two of the article's lazy rings (the
 * sequence word in the slot, the consumer's position published every
 * half ring) between the same two CPUs, carrying the same message the
 * same way -- copied in and out with the header's __lzchan_copy(), its
 * length in the slot -- in rings of the same 64 slots of 64 bytes.  No
 * wakeup, no statistics, no bounds against a hostile peer: what a ring
 * with nothing but the article's protocol costs a round trip here.
 */
#define LAT_LAZY_SLOTS	64

struct lat_lazy_slot {
	uint32_t seq;		/* position + 1 once written */
	uint32_t len;
	char data[LAT_SLOT - 8];
};

struct lat_lazy_ring {
	_Alignas(64) uint32_t rp;	/* the consumer's published position */
	_Alignas(64) struct lat_lazy_slot slots[LAT_LAZY_SLOTS];
};

struct lat_lazy_run {
	struct lat_lazy_ring ring[2];	/* ring[i]: what side i receives */
	uint32_t size;
	uint64_t iters, warmup, ticks;
	struct lzb_barrier start;
	int err;
};

/* Both spin loops give up once the other side has (@err): a failed side
 * stops sending and receiving, and would leave this one spinning. */
static int lat_lazy_send(struct lat_lazy_ring *r, uint32_t *wp, uint32_t *cached_rp,
			 const void *buf, uint32_t len, const int *err)
{
	struct lat_lazy_slot *s = &r->slots[*wp & (LAT_LAZY_SLOTS - 1)];
	unsigned int spins = 0;

	while (*wp - *cached_rp >= LAT_LAZY_SLOTS) {
		/* Pairs with the consumer's release store of rp. */
		*cached_rp = __atomic_load_n(&r->rp, __ATOMIC_ACQUIRE);
		if (*wp - *cached_rp < LAT_LAZY_SLOTS)
			break;
		/* Relaxed: a flag only, nothing is read after it. */
		if (__atomic_load_n(err, __ATOMIC_RELAXED))
			return -ECANCELED;
		lzb_spin(&spins);
	}
	__lzchan_copy(s->data, buf, len);
	s->len = len;
	/* Pairs with the consumer's acquire load of seq. */
	__atomic_store_n(&s->seq, ++*wp, __ATOMIC_RELEASE);
	return 0;
}

static int lat_lazy_recv(struct lat_lazy_ring *r, uint32_t *crp, void *buf, uint32_t cap,
			 const int *err)
{
	const struct lat_lazy_slot *s = &r->slots[*crp & (LAT_LAZY_SLOTS - 1)];
	unsigned int spins = 0;
	uint32_t len;

	/* Pairs with the producer's release store of seq. */
	while (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != *crp + 1) {
		/* Relaxed: a flag only, as in lat_lazy_send(). */
		if (__atomic_load_n(err, __ATOMIC_RELAXED))
			return -ECANCELED;
		lzb_spin(&spins);
	}
	len = s->len;
	if (len > cap || len > sizeof(s->data))
		return -EMSGSIZE;
	__lzchan_copy(buf, s->data, len);
	/* Every half ring.  Pairs with the producer's acquire load of rp. */
	if (!(++*crp & (LAT_LAZY_SLOTS / 2 - 1)))
		__atomic_store_n(&r->rp, *crp, __ATOMIC_RELEASE);
	return (int)len;
}

static int lat_lazy_worker(int i, void *arg)
{
	struct lat_lazy_run *run = arg;
	struct lat_lazy_ring *in = &run->ring[i], *out = &run->ring[!i];
	uint32_t wp = 0, cached_rp = 0, crp = 0;
	uint32_t buf[LAT_SLOT / 4] = { 0 };
	uint64_t n, t0 = 0;
	int r = 0;

	if (lzb_pin(lzb_cpu(i)))
		lzb_die("pinning to CPU %d: %s", lzb_cpu(i), strerror(errno));
	lzb_barrier_wait(&run->start);
	for (n = 0; n < run->warmup + run->iters; n++) {
		if (n == run->warmup)
			t0 = lzb_rdtsc();
		buf[0] = (uint32_t)n;
		if (i == 0) {
			r = lat_lazy_send(out, &wp, &cached_rp, buf, run->size, &run->err);
			if (!r)
				r = lat_lazy_recv(in, &crp, buf, sizeof(buf), &run->err);
		} else {
			r = lat_lazy_recv(in, &crp, buf, sizeof(buf), &run->err);
			if (r >= 0 && lat_lazy_send(out, &wp, &cached_rp, buf, run->size, &run->err))
				r = -ECANCELED;
		}
		if (r != (int)run->size || buf[0] != (uint32_t)n) {
			/* Relaxed: read by the other side's spin loops only. */
			__atomic_store_n(&run->err, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	if (i == 0)
		run->ticks = lzb_rdtsc() - t0;
	return run->err;
}

/* Half round trip in ns over the lazy ring (@size: 4 to 56 bytes), or NaN. */
double lzb_lat_lazy_pingpong_ns(uint32_t size, uint64_t iters, bool procs)
{
	struct lat_lazy_run *run = lzb_shared_alloc(sizeof(*run));
	double ns = NAN;

	memset(run, 0, sizeof(*run));
	run->size = size;
	run->iters = iters;
	run->warmup = iters / 10 + 100;
	lzb_barrier_init(&run->start, 2);
	lzb_workers(2);
	if (size < 4 || size > sizeof(run->ring[0].slots[0].data) ||
	    lzb_run(2, procs, lat_lazy_worker, run) || run->err)
		fprintf(stderr, "lzchan-bench: lazy-ring %u B ping-pong failed\n", size);
	else
		ns = (double)run->ticks / lzb_tsc_ghz() / (2.0 * (double)iters);
	lzb_shared_free(run, sizeof(*run));
	return ns;
}

/* ---------- exchange ring among P processes ---------- */

struct xring_run {
	uint32_t procs;
	uint64_t steps;
	char names[64][64];
	struct lzb_barrier created, start, done;
	uint64_t ticks;
	int err;
	char why[160];
};

static int xring_worker(int i, void *arg)
{
	struct xring_run *run = arg;
	uint32_t p = run->procs, right = ((uint32_t)i + 1) % p;
	uint32_t left = ((uint32_t)i + p - 1) % p;
	struct lzchan *rx, *tx;
	uint64_t s, t0;
	uint32_t buf[16] = { 0 }, in[16];
	int r = 0;

	if (lzb_pin(lzb_cpu(i)))
		lzb_die("pinning to CPU %d: %s", lzb_cpu(i), strerror(errno));
	rx = lzb_chan_rx(run->names[i], LAT_SLOT, 256, 1);
	lzb_barrier_wait(&run->created);
	tx = lzb_chan_tx(run->names[right]);
	lzb_barrier_wait(&run->start);
	t0 = lzb_rdtsc();
	for (s = 0; s < run->steps; s++) {
		buf[0] = (uint32_t)s;
		buf[1] = (uint32_t)i;
		r = lat_send_one(tx, buf, 56);
		if (!r)
			r = lat_recv_one(rx, in, sizeof(in), 56);
		if (!r && (in[0] != (uint32_t)s || in[1] != left))
			r = -EBADMSG;
		if (r)
			break;
	}
	if (i == 0)
		run->ticks = lzb_rdtsc() - t0;
	if (r) {
		snprintf(run->why, sizeof(run->why), "process %d, step %llu: %s", i,
			 (unsigned long long)s, strerror(-r));
		run->err = 1;
	}
	lzb_barrier_wait(&run->done);
	lzchan_close(tx);
	lzchan_unlink(run->names[i]);
	lzchan_close(rx);
	return r ? 1 : 0;
}

static double lat_xring(uint32_t procs, uint64_t steps)
{
	struct xring_run *run = lzb_shared_alloc(sizeof(*run));
	double ns = NAN;
	uint32_t i;

	memset(run, 0, sizeof(*run));
	run->procs = procs;
	run->steps = steps;
	for (i = 0; i < procs; i++)
		lzb_chan_name(run->names[i], sizeof(run->names[i]), "xring");
	lzb_barrier_init(&run->created, procs);
	lzb_barrier_init(&run->start, procs);
	lzb_barrier_init(&run->done, procs);
	lzb_workers((int)procs);
	if (lzb_run((int)procs, true, xring_worker, run) || run->err)
		fprintf(stderr, "lzchan-bench lat: exchange ring of %u failed: %s\n", procs,
			run->why[0] ? run->why : "a worker failed");
	else
		ns = (double)run->ticks / lzb_tsc_ghz() / (double)steps;
	lzb_shared_free(run, sizeof(*run));
	return ns;
}

static void lat_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench lat [OPTIONS]\n"
		"\n"
		"Ping-pong half round trip by size (processes and threads) next to the\n"
		"core-to-core flag bounce on the same CPUs; the same with K idle senders\n"
		"attached; an exchange ring among P processes.  Uses the first two CPUs\n"
		"of --cpus (and more for the exchange ring).\n"
		"\n"
		"  -s, --sizes LIST   message sizes in bytes (default 0,8,64,256,1K,4K,16K,64K)\n"
		"  -k, --idle LIST    idle senders K (default 0,1,16,256,1024)\n"
		"  -p, --procs LIST   exchange ring sizes P (default 2,4,8)\n"
		"  -i, --iters N      round trips per point (default 100k; fewer for big sizes)\n"
		"  -w, --what LIST    size,idle,ring (default all)\n"
		LZB_COMMON_HELP);
}

int lzb_cmd_lat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "idle", required_argument, NULL, 'k' },
		{ "procs", required_argument, NULL, 'p' },
		{ "iters", required_argument, NULL, 'i' },
		{ "what", required_argument, NULL, 'w' },
		LZB_COMMON_OPTS, { 0 }
	};
	uint32_t sizes[32] = { 0, 8, 64, 256, 1024, 4096, 16384, 65536 };
	int nsizes = 8, idle[32] = { 0, 1, 16, 256, 1024 }, nidle = 5;
	int procs[16] = { 2, 4, 8 }, nprocs = 3, c, i, fails = 0;
	bool do_size = true, do_idle = true, do_ring = true;
	uint64_t iters = 100000;
	struct lzb_table *t;
	double c2c, base;
	struct rlimit rl;

	while ((c = getopt_long(argc, argv, "s:k:p:i:w:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 's':
			nsizes = lzb_parse_sizes(optarg, sizes, 32, 1U << 24);
			if (nsizes < 0)
				lzb_usage_error("lat", "--sizes wants sizes up to 16M like 0,64,4K, not '%s'", optarg);
			break;
		case 'k':
			nidle = lzb_parse_list(optarg, idle, 32);
			if (nidle < 0)
				lzb_usage_error("lat", "--idle wants a list like 0,16,1024, not '%s'", optarg);
			for (i = 0; i < nidle; i++)
				if (idle[i] > LZCHAN_SENDERS_MAX - 1)
					lzb_usage_error("lat", "--idle: at most %d", LZCHAN_SENDERS_MAX - 1);
			break;
		case 'p':
			nprocs = lzb_parse_list(optarg, procs, 16);
			if (nprocs < 0)
				lzb_usage_error("lat", "--procs wants a list like 2,4,8, not '%s'", optarg);
			for (i = 0; i < nprocs; i++)
				if (procs[i] < 2 || procs[i] > 64)
					lzb_usage_error("lat", "--procs: 2..64 each");
			break;
		case 'i':
			if (!lzb_parse_size(optarg, &iters) || !iters || iters > (1ULL << 36))
				lzb_usage_error("lat", "--iters wants a positive count, not '%s'", optarg);
			break;
		case 'w':
			do_size = strstr(optarg, "size");
			do_idle = strstr(optarg, "idle");
			do_ring = strstr(optarg, "ring");
			if (!do_size && !do_idle && !do_ring)
				lzb_usage_error("lat", "--what lists size, idle or ring, not '%s'", optarg);
			break;
		case 'h':
			lat_help(stdout);
			return 0;
		default:
			lzb_usage_error("lat", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("lat", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick)
		iters = iters > 500 ? 500 : iters;
	lzb_begin("lat");
	/* Idle senders each hold descriptors: make room up to the hard limit. */
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	lzb_progress("lat: core-to-core baseline");
	c2c = lzb_c2c_pair_ns(lzb_cpu(0), lzb_cpu(1), lzb.quick ? 2000 : 400000);
	if (do_size) {
		t = lzb_table_new("lat_size", "Ping-pong half round trip by message size (OSU-style)");
		lzb_table_col(t, "size", "B", 0);
		lzb_table_col(t, "procs", "ns", 0);
		lzb_table_col(t, "threads", "ns", 0);
		lzb_table_col(t, "procs/threads", "", 2);
		lzb_table_col(t, "procs/c2c", "", 2);
		for (i = 0; i < nsizes; i++) {
			uint64_t it = iters;
			double p, th;

			if (sizes[i] > 4096)
				it = it * 4096 / sizes[i] > 200 ? it * 4096 / sizes[i] : 200;
			lzb_progress("lat: %u B", sizes[i]);
			p = lzb_lat_pingpong_ns(sizes[i], it, true, 0);
			th = lzb_lat_pingpong_ns(sizes[i], it, false, 0);
			fails += isnan(p) || isnan(th);
			lzb_table_row(t);
			lzb_cell_num(t, sizes[i]);
			lzb_cell_num(t, p);
			lzb_cell_num(t, th);
			lzb_cell_num(t, p / th);
			lzb_cell_num(t, p / c2c);
		}
		lzb_table_note(t, "core-to-core flag bounce on CPUs %d,%d in this run: %.1f ns",
			       lzb_cpu(0), lzb_cpu(1), c2c);
		lzb_table_note(t, "receivers busy-poll lzchan_recv(); %llu round trips per point up to 4 KiB",
			       (unsigned long long)iters);
		lzb_emit(t);
	}
	if (do_idle) {
		t = lzb_table_new("lat_idle", "64-byte ping-pong with K idle senders attached to the receiver");
		lzb_table_col(t, "idle senders", "", 0);
		lzb_table_col(t, "half rtt", "ns", 0);
		lzb_table_col(t, "vs K=0", "", 2);
		base = NAN;
		for (i = 0; i < nidle; i++) {
			double ns;

			lzb_progress("lat: %d idle senders", idle[i]);
			ns = lzb_lat_pingpong_ns(56, iters, true, idle[i]);
			fails += isnan(ns);
			if (idle[i] == 0 || isnan(base))
				base = idle[i] == 0 ? ns : base;
			lzb_table_row(t);
			lzb_cell_num(t, idle[i]);
			lzb_cell_num(t, ns);
			lzb_cell_num(t, ns / base);
		}
		lzb_table_note(t, "processes; 56 B payload = one 64-byte slot; the idle senders live in a third process");
		lzb_emit(t);
	}
	if (do_ring) {
		t = lzb_table_new("lat_xring", "Exchange ring (sendrecv) among P processes, 64-byte messages");
		lzb_table_col(t, "processes", "", 0);
		lzb_table_col(t, "per step", "ns", 0);
		for (i = 0; i < nprocs; i++) {
			double ns;

			lzb_progress("lat: exchange ring of %d", procs[i]);
			ns = lat_xring((uint32_t)procs[i], iters / 4 + 100);
			fails += isnan(ns);
			lzb_table_row(t);
			lzb_cell_num(t, procs[i]);
			lzb_cell_num(t, ns);
		}
		if (lzb.ncpus < procs[nprocs - 1])
			lzb_table_note(t, "only %d CPUs: beyond that, processes share CPUs and the ring waits on the scheduler",
				       lzb.ncpus);
		lzb_emit(t);
	}
	return fails ? 1 : 0;
}
