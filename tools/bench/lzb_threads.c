// SPDX-License-Identifier: GPL-2.0-only
/*
 * threads: the UCX paper's comparison of multithreaded senders.
 *
 * T sender threads send to one receiver thread, either
 *   lanes     each thread on its own sender handle, hence its own lane
 *             (what libchan asks of threaded users: no lock anywhere);
 *   mutex     all threads on ONE sender handle (one lane) behind a
 *             pthread mutex, the "one endpoint, serialised" design;
 *   spinlock  the same behind a pthread spinlock.
 * Message rate as T grows, measured by the receiver from the moment every
 * thread is ready to the last message.
 *
 * Every message carries its thread and a per-thread counter; the receiver
 * checks that each thread's messages arrive exactly once and in order (the
 * lock keeps one thread's sends in order even on a shared lane), so a
 * --quick run fails on a lost, duplicated or corrupted message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lzb.h"

#define THR_MAX		64

enum thr_mode { THR_LANES, THR_MUTEX, THR_SPIN, THR_MODES };
static const char *const thr_mode_names[THR_MODES] = { "lanes", "mutex", "spinlock" };

struct thr_run {
	enum thr_mode mode;
	int threads;
	uint64_t per_thread;
	uint32_t size;		/* payload bytes, >= 8 */
	char name[64];
	struct lzb_barrier created, start;
	struct lzchan *shared_tx;	/* mutex/spinlock modes */
	struct lzchan *rx;		/* closed after every thread is done */
	int abort;			/* the receiver gave up: senders stop */
	pthread_mutex_t mutex;
	pthread_spinlock_t spin;
	uint64_t rx_ns, rx_msgs;
	uint64_t contended;		/* lock attempts that found it taken */
	char why[160];
};

static int thr_send_one(struct thr_run *run, struct lzchan *ch, const void *buf,
			uint64_t *busy)
{
	unsigned int spins = 0;
	int r;

	for (;;) {
		switch (run->mode) {
		case THR_MUTEX:
			if (pthread_mutex_trylock(&run->mutex)) {
				(*busy)++;
				pthread_mutex_lock(&run->mutex);
			}
			r = lzchan_send(ch, buf, run->size);
			pthread_mutex_unlock(&run->mutex);
			break;
		case THR_SPIN:
			if (pthread_spin_trylock(&run->spin)) {
				(*busy)++;
				pthread_spin_lock(&run->spin);
			}
			r = lzchan_send(ch, buf, run->size);
			pthread_spin_unlock(&run->spin);
			break;
		default:
			r = lzchan_send(ch, buf, run->size);
			break;
		}
		if (r != -EAGAIN)
			return r;
		if (__atomic_load_n(&run->abort, __ATOMIC_RELAXED))
			return -ECANCELED;
		/* Ring full: wait outside the lock so the others may try. */
		lzb_spin(&spins);
	}
}

static int thr_sender(struct thr_run *run, int i)
{
	uint64_t buf[THR_MAX * 2] = { 0 }, n, busy = 0;
	unsigned char *b = (unsigned char *)buf;
	struct lzchan *ch;
	int r = 0;

	lzb_barrier_wait(&run->created);
	ch = run->mode == THR_LANES ? lzb_chan_tx(run->name) : run->shared_tx;
	lzb_barrier_wait(&run->start);
	for (n = 0; n < run->per_thread; n++) {
		buf[0] = ((uint64_t)i << 48) | n;
		b[run->size - 1] = (unsigned char)(n ^ (uint64_t)i);
		r = thr_send_one(run, ch, buf, &busy);
		if (r)
			break;
	}
	__atomic_fetch_add(&run->contended, busy, __ATOMIC_RELAXED);
	if (r && r != -ECANCELED)
		fprintf(stderr, "lzchan-bench threads: sender %d: %s\n", i, strerror(-r));
	if (run->mode == THR_LANES)
		lzchan_close(ch);
	/* Cancelled: the receiver failed, and says why. */
	return r && r != -ECANCELED ? 1 : 0;
}

static int thr_receiver(struct thr_run *run)
{
	uint64_t expect[THR_MAX + 1] = { 0 }, buf[THR_MAX * 2], total, got = 0, t0;
	unsigned char *b = (unsigned char *)buf;
	unsigned int spins = 0;
	struct lzchan *ch;
	uint32_t lane;
	int r, ret = 0;

	total = (uint64_t)run->threads * run->per_thread;
	ch = run->rx = lzb_chan_rx(run->name, run->size + 8 <= 64 ? 64 : 128, 1024,
			 run->mode == THR_LANES ? (uint32_t)run->threads : 1);
	if (run->mode != THR_LANES)
		run->shared_tx = lzb_chan_tx(run->name);
	lzb_barrier_wait(&run->created);
	lzb_barrier_wait(&run->start);
	t0 = lzb_now_ns();
	while (got < total) {
		uint64_t tid, seq;

		r = lzchan_recv(ch, buf, sizeof(buf), &lane);
		if (r == -EAGAIN || r == -EPIPE) {	/* EPIPE: a lane finished */
			lzb_spin(&spins);
			continue;
		}
		if (r != (int)run->size) {
			snprintf(run->why, sizeof(run->why), "receive returned %d (%s), expected %u bytes",
				 r, r < 0 ? strerror(-r) : "wrong length", run->size);
			ret = 1;
			break;
		}
		tid = buf[0] >> 48;
		seq = buf[0] & ((1ULL << 48) - 1);
		if (tid < 1 || tid > (uint64_t)run->threads || seq != expect[tid] ||
		    b[run->size - 1] != (unsigned char)(seq ^ tid)) {
			snprintf(run->why, sizeof(run->why),
				 "message %llu of thread %llu where %llu was due (or corrupted)",
				 (unsigned long long)seq, (unsigned long long)tid,
				 tid >= 1 && tid <= (uint64_t)run->threads ?
				 (unsigned long long)expect[tid] : 0ULL);
			ret = 1;
			break;
		}
		expect[tid]++;
		got++;
	}
	run->rx_ns = lzb_now_ns() - t0;
	run->rx_msgs = got;
	/* Senders stop (nobody drains any more); the handles are closed
	 * once every thread is done (thr_measure). */
	if (ret)
		__atomic_store_n(&run->abort, 1, __ATOMIC_RELAXED);
	lzchan_unlink(run->name);
	return ret;
}

static int thr_worker(int i, void *arg)
{
	struct thr_run *run = arg;

	if (lzb_pin(lzb_cpu(i)))
		lzb_die("pinning thread %d to CPU %d: %s", i, lzb_cpu(i), strerror(errno));
	return i ? thr_sender(run, i) : thr_receiver(run);
}

/* One measurement; returns msgs/s, or -1 on failure. */
static double thr_measure(enum thr_mode mode, int threads, uint64_t per_thread, uint32_t size,
			  double *contended)
{
	struct thr_run *run = calloc(1, sizeof(*run));
	double rate = -1;
	int ret;

	if (!run)
		lzb_die("out of memory");
	run->mode = mode;
	run->threads = threads;
	run->per_thread = per_thread;
	run->size = size;
	lzb_chan_name(run->name, sizeof(run->name), "thr");
	lzb_barrier_init(&run->created, (uint32_t)threads + 1);
	lzb_barrier_init(&run->start, (uint32_t)threads + 1);
	pthread_mutex_init(&run->mutex, NULL);
	pthread_spin_init(&run->spin, PTHREAD_PROCESS_PRIVATE);
	lzb_workers(threads + 1);
	ret = lzb_run(threads + 1, false, thr_worker, run);
	if (run->shared_tx)
		lzchan_close(run->shared_tx);
	if (run->rx)
		lzchan_close(run->rx);
	if (!ret && run->rx_msgs != (uint64_t)threads * per_thread) {
		snprintf(run->why, sizeof(run->why), "received %llu of %llu messages",
			 (unsigned long long)run->rx_msgs, (unsigned long long)threads * per_thread);
		ret = -1;
	}
	if (ret)
		fprintf(stderr, "lzchan-bench threads: %s, %d thread%s: %s\n", thr_mode_names[mode],
			threads, threads > 1 ? "s" : "", run->why[0] ? run->why : "a worker failed");
	else
		rate = (double)run->rx_msgs / ((double)run->rx_ns / 1e9);
	*contended = (double)run->contended / ((double)threads * (double)per_thread);
	pthread_mutex_destroy(&run->mutex);
	pthread_spin_destroy(&run->spin);
	free(run);
	return rate;
}

static void thr_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench threads [OPTIONS]\n"
		"\n"
		"The UCX paper's question on libchan: T threads each sending on its own\n"
		"lane (own sender handle) versus T threads sharing ONE sender handle\n"
		"behind a pthread mutex (and a spinlock), one receiver thread.  Prints\n"
		"the message rate for each T and its ratio to the lane-per-thread rate.\n"
		"The receiver runs on the first CPU of --cpus, thread i on the (i+1)-th,\n"
		"wrapping around.\n"
		"\n"
		"  -t, --threads LIST  sender thread counts (default 1,2,4,8,16; max %d)\n"
		"  -s, --size B        payload bytes, 8..120 (default 56: one 64-byte slot)\n"
		"  -m, --msgs N        messages per thread (default 200k; --quick 2000)\n"
		"  -M, --modes LIST    lanes,mutex,spinlock (default all)\n"
		"%s", THR_MAX, LZB_COMMON_HELP);
}

int lzb_cmd_threads(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "msgs", required_argument, NULL, 'm' },
		{ "modes", required_argument, NULL, 'M' },
		LZB_COMMON_OPTS, { 0 }
	};
	int threads[THR_MAX] = { 1, 2, 4, 8, 16 }, nthreads = 5, c, i, m, fails = 0;
	uint64_t size = 56, per_thread = 200000;
	bool mode_on[THR_MODES] = { true, true, true }, msgs_given = false;
	struct lzb_table *t;

	while ((c = getopt_long(argc, argv, "t:s:m:M:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 't':
			nthreads = lzb_parse_list(optarg, threads, THR_MAX);
			if (nthreads < 0)
				lzb_usage_error("threads", "--threads wants a list like 1,2,4, not '%s'", optarg);
			for (i = 0; i < nthreads; i++)
				if (threads[i] < 1 || threads[i] > THR_MAX)
					lzb_usage_error("threads", "--threads: 1..%d each", THR_MAX);
			break;
		case 's':
			if (!lzb_parse_size(optarg, &size) || size < 8 || size > 120)
				lzb_usage_error("threads", "--size wants 8..120 bytes (the receiver checks a thread id and counter in each), not '%s'", optarg);
			break;
		case 'm':
			if (!lzb_parse_size(optarg, &per_thread) || !per_thread || per_thread >= (1ULL << 48))
				lzb_usage_error("threads", "--msgs wants a positive count, not '%s'", optarg);
			msgs_given = true;
			break;
		case 'M': {
			char *s = strdup(optarg), *tok, *save = NULL;

			for (m = 0; m < THR_MODES; m++)
				mode_on[m] = false;
			for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				for (m = 0; m < THR_MODES; m++)
					if (!strcmp(tok, thr_mode_names[m]))
						break;
				if (m == THR_MODES)
					lzb_usage_error("threads", "--modes: unknown mode '%s' (lanes, mutex, spinlock)", tok);
				mode_on[m] = true;
			}
			free(s);
			break;
		}
		case 'h':
			thr_help(stdout);
			return 0;
		default:
			lzb_usage_error("threads", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("threads", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick && !msgs_given)
		per_thread = 2000;
	lzb_begin("threads");

	t = lzb_table_new("threads", "T sender threads -> 1 receiver: a lane each vs one lane behind a lock");
	lzb_table_col(t, "threads", "", 0);
	lzb_table_col(t, "mode", "", 0);
	lzb_table_col(t, "msgs/s", "M", 2);
	lzb_table_col(t, "ns/msg", "", 1);
	lzb_table_col(t, "vs lanes", "x", 2);
	lzb_table_col(t, "lock busy", "%", 1);
	for (i = 0; i < nthreads; i++) {
		double lanes_rate = -1;

		for (m = 0; m < THR_MODES; m++) {
			double rate, busy;

			if (!mode_on[m])
				continue;
			lzb_progress("threads: %s, %d thread%s", thr_mode_names[m], threads[i],
				     threads[i] > 1 ? "s" : "");
			rate = thr_measure(m, threads[i], per_thread, (uint32_t)size, &busy);
			if (rate < 0) {
				fails++;
				continue;
			}
			if (m == THR_LANES)
				lanes_rate = rate;
			lzb_table_row(t);
			lzb_cell_num(t, threads[i]);
			lzb_cell_str(t, thr_mode_names[m]);
			lzb_cell_num(t, rate / 1e6);
			lzb_cell_num(t, 1e9 / rate);
			if (lanes_rate > 0)
				lzb_cell_num(t, rate / lanes_rate);
			else
				lzb_cell_na(t);
			if (m == THR_LANES)
				lzb_cell_na(t);
			else
				lzb_cell_num(t, busy * 100);
		}
	}
	lzb_table_note(t, "%llu messages of %llu B per thread; receiver on CPU %d; rate as the receiver saw it",
		       (unsigned long long)per_thread, (unsigned long long)size, lzb_cpu(0));
	lzb_table_note(t, "vs lanes: rate / the lane-per-thread rate at the same T; lock busy: sends that found the lock taken");
	if (lzb.oversubscribed || (nthreads && threads[nthreads - 1] + 1 > lzb.ncpus))
		lzb_table_note(t, "only %d CPUs: threads beyond that share CPUs (spinners yield); a lock holder can be preempted",
			       lzb.ncpus);
	lzb_emit(t);
	return fails ? 1 : 0;
}
