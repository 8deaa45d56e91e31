// SPDX-License-Identifier: GPL-2.0-only
/*
 * wakeup: what it costs to wake a parked receiver, and what a parked
 * receiver costs while nothing comes.
 *
 * Latency: two processes bounce one message, each blocked while it waits:
 *   libchan-parked  each has a receiving channel opened with spin_ns 0, so
 *                   lzchan_recv_wait() parks at once;
 *   eventfd         two eventfds, blocking read()/write();
 *   futex           one shared word, FUTEX_WAIT/FUTEX_WAKE;
 *   libchan-spin    for contrast: the same bounce with a receiver that
 *                   spins (never parks) -- the cost parking adds.
 * Each send comes a fixed delay after the previous wake, so the waiter is
 * parked by then; the figure is one wake, from the sender's call to the
 * waiter running (CLOCK_MONOTONIC, one clock for every process).
 * Idle: a child blocked in lzchan_recv_wait() with the default spin, next
 * to one blocked in read() on an eventfd, for --idle-secs; the CPU time
 * each used (CLOCK_PROCESS_CPUTIME_ID), as ms per second.
 *
 * Every bounce carries its round number and each side checks it, and the
 * idle receivers check the one message that ends their wait, so a --quick
 * run fails on a lost, duplicated or corrupted message (or a lost wakeup:
 * a wait gives up after WK_TIMEOUT_NS).
 */
#include <errno.h>
#include <linux/futex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lzb.h"

#define WK_TIMEOUT_NS	10000000000LL	/* a lost wakeup fails, never hangs */
#define WK_IDLE_MAGIC	0x1d1e1d1e5709ULL

enum wk_method { WK_LIBCHAN_PARKED, WK_EVENTFD, WK_FUTEX, WK_LIBCHAN_SPIN, WK_PUBSUB_PARKED,
		 WK_METHODS };
static const char *const wk_names[WK_METHODS] = {
	"libchan-parked", "eventfd", "futex", "libchan-spin", "pubsub-parked"
};

struct wk_run {
	enum wk_method method;
	uint64_t rounds, warmup, delay_ns;
	_Alignas(64) uint64_t stamp[2];	/* eventfd, futex: send time for side i */
	char name[2][64];
	int efd[2];
	_Alignas(64) uint32_t word;	/* futex */
	_Alignas(64) struct lzb_barrier created;
	struct lzb_barrier start;
	/* results (side 0) */
	double mean_ns, p50_ns, p99_ns;
	double slept;		/* voluntary context switches per wait */
	/* idle */
	uint64_t idle_ns;
	uint64_t cpu_ns[2], wall_ns[2];	/* libchan, eventfd */
	uint64_t steady_ns[2], steady_wall_ns;	/* the same, from 1 s on */
	pid_t pid[2];
	char backend[48];
	char why[160];
};

static char wk_backend[48];

static struct lzchan *wk_chan_rx(struct wk_run *run, const char *name, int64_t spin_ns)
{
	struct lzchan_opts o;
	struct lzchan *ch;
	int r;

	lzchan_opts_init(&o);
	if (spin_ns >= 0)
		o.spin_ns = (uint32_t)spin_ns;
	o.max_senders = 1;
	r = lzchan_open(&ch, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
	if (r)
		lzb_die("creating channel %s: %s (%s)", name, strerror(-r),
			strerrorname_np(-r) ? strerrorname_np(-r) : "?");
	snprintf(run->backend, sizeof(run->backend), "%s", lzchan_backend_name(ch));
	return ch;
}

/* pubsub-parked: side @side publishes on a pub/sub channel of its own
 * (@name, made here) ... */
static struct lzchan *wk_ps_pub(struct wk_run *run, const char *name)
{
	struct lzchan_ps_opts o;
	struct lzchan *ch;
	int r;

	lzchan_ps_opts_init(&o);
	o.slot_size = 64;
	o.slot_count = 64;
	o.max_subscribers = 1;
	r = lzchan_ps_create(name, &o, LZCHAN_EXCL);
	if (r >= 0)
		r = lzchan_open(&ch, name, LZCHAN_PUBLISHER, NULL);
	if (r)
		lzb_die("creating pub/sub channel %s: %s (%s)", name, strerror(-r),
			strerrorname_np(-r) ? strerrorname_np(-r) : "?");
	snprintf(run->backend, sizeof(run->backend), "%s", lzchan_backend_name(ch));
	return ch;
}

/* ... and subscribes to the other's, with spin_ns 0: each wait parks. */
static struct lzchan *wk_ps_sub(const char *name)
{
	struct lzchan_opts o;
	struct lzchan *ch;
	int r;

	lzchan_opts_init(&o);
	o.spin_ns = 0;
	r = lzchan_open(&ch, name, LZCHAN_SUBSCRIBER, &o);
	if (r)
		lzb_die("subscribing to %s: %s", name, strerror(-r));
	return ch;
}

static long wk_futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* Wait until *w == want, blocked in FUTEX_WAIT while it holds @cur. */
static int wk_futex_wait_for(uint32_t *w, uint32_t cur, uint32_t want)
{
	struct timespec ts = { .tv_sec = WK_TIMEOUT_NS / 1000000000LL };
	uint32_t v;

	/* Pairs with the other side's release store before its FUTEX_WAKE. */
	while ((v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) != want) {
		if (v != cur)
			return -EPROTO;
		if (wk_futex(w, FUTEX_WAIT, cur, &ts) && errno == ETIMEDOUT)
			return -ETIMEDOUT;
	}
	return 0;
}

static int wk_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void wk_delay(uint64_t ns)
{
	uint64_t end = lzb_now_ns() + ns;

	while (lzb_now_ns() < end)
		lzb_cpu_relax();
}

/*
 * One side of the bounce.  Before each send the sender busy-waits
 * run->delay_ns, so the other side is surely parked, then stamps the
 * message (CLOCK_MONOTONIC, the same clock in every process) and sends;
 * the waiter stamps its return from the wait: one wake, measured one way.
 * Side 0 keeps the samples.
 */
static int wk_pingpong(struct wk_run *run, int side)
{
	uint64_t total = run->warmup + run->rounds, k, msg[2], *lat = NULL, sum = 0, now = 0;
	struct lzchan *rx = NULL, *tx = NULL;
	struct rusage ru0, ru1;
	uint32_t lane;
	int r = 0, turn;

	if (side == 0) {
		lat = calloc(run->rounds ? run->rounds : 1, sizeof(*lat));
		if (!lat)
			lzb_die("out of memory");
	}
	if (run->method == WK_LIBCHAN_PARKED || run->method == WK_LIBCHAN_SPIN)
		rx = wk_chan_rx(run, run->name[side],
				run->method == WK_LIBCHAN_PARKED ? 0 : 1000000000);
	if (run->method == WK_PUBSUB_PARKED)
		tx = wk_ps_pub(run, run->name[side]);
	lzb_barrier_wait(&run->created);
	if (rx)
		tx = lzb_chan_tx(run->name[!side]);
	if (run->method == WK_PUBSUB_PARKED)
		rx = wk_ps_sub(run->name[!side]);	/* before the first publish */
	lzb_barrier_wait(&run->start);
	getrusage(RUSAGE_SELF, &ru0);
	/* Both are open: the names may go (nothing is left behind). */
	if (rx)
		lzchan_unlink(run->name[run->method == WK_PUBSUB_PARKED ? !side : side]);
	for (k = 0; k < total && !r; k++) {
		/* turn 0: side 0 sends, side 1 waits; turn 1: the reply. */
		for (turn = 0; turn < 2 && !r; turn++) {
			bool sending = turn == side;

			if (sending) {
				wk_delay(run->delay_ns);
				msg[0] = k;
				msg[1] = lzb_now_ns();
				/* Pairs with the waiter's read after its wait. */
				__atomic_store_n(&run->stamp[!side], msg[1], __ATOMIC_RELEASE);
			}
			switch (run->method) {
			case WK_LIBCHAN_PARKED:
			case WK_LIBCHAN_SPIN:
			case WK_PUBSUB_PARKED:
				if (sending) {
					r = lzchan_send(tx, msg, sizeof(msg));
					break;
				}
				msg[0] = ~0ULL;
				r = lzchan_recv_wait(rx, msg, sizeof(msg), &lane, WK_TIMEOUT_NS);
				now = lzb_now_ns();
				if (r == (int)sizeof(msg) && msg[0] == k)
					r = 0;
				else if (r >= 0)
					r = -EPROTO;
				break;
			case WK_EVENTFD:
				msg[0] = 1;
				if (sending) {
					if (write(run->efd[!side], msg, 8) != 8)
						r = -errno;
					break;
				}
				if (read(run->efd[side], msg, 8) != 8)
					r = -errno;
				now = lzb_now_ns();
				msg[1] = __atomic_load_n(&run->stamp[side], __ATOMIC_ACQUIRE);
				if (!r && msg[0] != 1)	/* one post per read, never more */
					r = -EPROTO;
				break;
			case WK_FUTEX: {
				uint32_t v = (uint32_t)(2 * k + turn);

				if (sending) {
					/* Pairs with the waiter's acquire load. */
					__atomic_store_n(&run->word, v + 1, __ATOMIC_RELEASE);
					wk_futex(&run->word, FUTEX_WAKE, 1, NULL);
					break;
				}
				r = wk_futex_wait_for(&run->word, v, v + 1);
				now = lzb_now_ns();
				msg[1] = __atomic_load_n(&run->stamp[side], __ATOMIC_ACQUIRE);
				break;
			}
			default:
				break;
			}
			if (!r && !sending && side == 0 && k >= run->warmup) {
				lat[k - run->warmup] = now > msg[1] ? now - msg[1] : 0;
				sum += lat[k - run->warmup];
			}
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	if (side == 0)
		run->slept = (double)(ru1.ru_nvcsw - ru0.ru_nvcsw) / (double)total;
	if (r)
		snprintf(run->why, sizeof(run->why), "side %d, round %llu: %s", side,
			 (unsigned long long)k - 1,
			 r == -EPROTO ? "wrong message (lost, duplicated or corrupted)" :
			 r == -ETIMEDOUT ? "no wakeup within 10 s" : strerror(-r));
	if (side == 0 && !r && run->rounds) {
		qsort(lat, run->rounds, sizeof(*lat), wk_cmp);
		run->mean_ns = (double)sum / (double)run->rounds;
		run->p50_ns = (double)lat[run->rounds / 2];
		run->p99_ns = (double)lat[run->rounds * 99 / 100];
	}
	free(lat);
	if (tx)
		lzchan_close(tx);
	if (rx)
		lzchan_close(rx);
	return r ? 1 : 0;
}

static int wk_pp_worker(int i, void *arg)
{
	if (lzb_pin(lzb_cpu(i)))
		lzb_die("pinning side %d to CPU %d: %s", i, lzb_cpu(i), strerror(errno));
	return wk_pingpong(arg, i);
}

static uint64_t wk_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Another process's CPU time so far (0 if it cannot be read). */
static uint64_t wk_pid_cpu_ns(pid_t pid)
{
	struct timespec ts;
	clockid_t id;

	if (clock_getcpuclockid(pid, &id) || clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Idle: 0 parks in libchan, 2 blocks on an eventfd, 1 wakes both. */
static int wk_idle_worker(int i, void *arg)
{
	struct wk_run *run = arg;
	struct lzchan *ch = NULL;
	uint64_t c0, w0, msg = 0;
	uint32_t lane;
	int r = 0;

	if (lzb_pin(lzb_cpu(i == 2 ? 1 : i)))
		lzb_die("pinning idle worker %d: %s", i, strerror(errno));
	if (i == 0)
		ch = wk_chan_rx(run, run->name[0], -1);		/* default spin */
	if (i != 1)
		run->pid[i / 2] = getpid();
	lzb_barrier_wait(&run->created);
	if (i == 1) {
		struct lzchan *tx = lzb_chan_tx(run->name[0]);
		uint64_t at[2] = { 0, 0 }, w1 = 0;
		int k;

		lzchan_unlink(run->name[0]);
		lzb_barrier_wait(&run->start);
		/* The steady state: each receiver's CPU clock, read from
		 * here, from 1 s on (past the spin and the parking). */
		lzb_sleep_ns(run->idle_ns < 2000000000ULL ? run->idle_ns / 2 : 1000000000ULL);
		for (k = 0; k < 2; k++)
			at[k] = wk_pid_cpu_ns(run->pid[k]);
		w1 = lzb_now_ns();
		lzb_sleep_ns(run->idle_ns < 2000000000ULL ? run->idle_ns / 2 : run->idle_ns - 1000000000ULL);
		for (k = 0; k < 2; k++)
			run->steady_ns[k] = wk_pid_cpu_ns(run->pid[k]) - at[k];
		run->steady_wall_ns = lzb_now_ns() - w1;
		msg = WK_IDLE_MAGIC;
		r = lzchan_send(tx, &msg, sizeof(msg));
		if (!r && write(run->efd[0], &msg, 8) != 8)
			r = -errno;
		if (r)
			snprintf(run->why, sizeof(run->why), "waking the idle receivers: %s", strerror(-r));
		lzchan_close(tx);
		return r ? 1 : 0;
	}
	lzb_barrier_wait(&run->start);
	c0 = wk_cpu_ns();
	w0 = lzb_now_ns();
	if (i == 0) {
		r = lzchan_recv_wait(ch, &msg, sizeof(msg), &lane,
				     (int64_t)run->idle_ns + WK_TIMEOUT_NS * 3);
		r = r == (int)sizeof(msg) ? 0 : r < 0 ? r : -EPROTO;
	} else if (read(run->efd[0], &msg, 8) != 8) {
		r = -errno;
	}
	run->cpu_ns[i / 2] = wk_cpu_ns() - c0;
	run->wall_ns[i / 2] = lzb_now_ns() - w0;
	if (!r && msg != WK_IDLE_MAGIC)
		r = -EPROTO;
	if (r)
		snprintf(run->why, sizeof(run->why), "idle %s receiver: %s", i ? "eventfd" : "libchan",
			 r == -EPROTO ? "wrong message" : r == -ETIMEDOUT ? "never woken" : strerror(-r));
	if (ch)
		lzchan_close(ch);
	return r ? 1 : 0;
}

static struct wk_run *wk_new(void)
{
	struct wk_run *run = lzb_shared_alloc(sizeof(*run));

	memset(run, 0, sizeof(*run));
	lzb_chan_name(run->name[0], sizeof(run->name[0]), "wk0");
	lzb_chan_name(run->name[1], sizeof(run->name[1]), "wk1");
	run->efd[0] = eventfd(0, EFD_CLOEXEC);
	run->efd[1] = eventfd(0, EFD_CLOEXEC);
	if (run->efd[0] < 0 || run->efd[1] < 0)
		lzb_die("eventfd: %s", strerror(errno));
	return run;
}

static void wk_free(struct wk_run *run)
{
	if (run->backend[0]) {
		snprintf(wk_backend, sizeof(wk_backend), "%s", run->backend);
		lzb.backend = wk_backend;
	}
	close(run->efd[0]);
	close(run->efd[1]);
	lzb_shared_free(run, sizeof(*run));
}

static void wk_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench wakeup [OPTIONS]\n"
		"\n"
		"Latency to wake a parked receiver: two processes bounce a message, each\n"
		"blocked while it waits -- libchan receivers that park at once (spin_ns 0)\n"
		"next to an eventfd and a futex ping-pong, and a spinning libchan bounce\n"
		"for contrast.  Each send comes --delay-us after the previous wake, so the\n"
		"waiter is parked; the latency of one wake (send call to the waiter\n"
		"running, CLOCK_MONOTONIC) as mean, median and 99th percentile, and how\n"
		"many waits really slept.  Then the CPU time of a receiver parked in\n"
		"lzchan_recv_wait() (default spin) over --idle-secs, next to one blocked\n"
		"on an eventfd.  The two sides run on the first two CPUs of --cpus.\n"
		"\n"
		"  -r, --rounds N      round trips per method (default 5000; --quick 200)\n"
		"  -d, --delay-us U    sender waits this long before each send (default 100)\n"
		"  -I, --idle-secs S   idle period (default 10; --quick 1; 0 skips it)\n"
		"%s", LZB_COMMON_HELP);
}

int lzb_cmd_wakeup(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "idle-secs", required_argument, NULL, 'I' },
		{ "delay-us", required_argument, NULL, 'd' },
		LZB_COMMON_OPTS, { 0 }
	};
	uint64_t rounds = 5000, idle = 10, delay_us = 100;
	bool rounds_given = false, idle_given = false;
	double evfd_ns = NAN, evfd_p50 = NAN, parked_p50 = NAN;
	struct lzb_table *t;
	int c, m, fails = 0;

	while ((c = getopt_long(argc, argv, "r:I:d:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 'r':
			if (!lzb_parse_size(optarg, &rounds) || !rounds || rounds > 100000000)
				lzb_usage_error("wakeup", "--rounds wants 1..100m, not '%s'", optarg);
			rounds_given = true;
			break;
		case 'I':
			if (!lzb_parse_size(optarg, &idle) || idle > 3600)
				lzb_usage_error("wakeup", "--idle-secs wants 0..3600 seconds, not '%s'", optarg);
			idle_given = true;
			break;
		case 'd':
			if (!lzb_parse_size(optarg, &delay_us) || delay_us > 1000000)
				lzb_usage_error("wakeup", "--delay-us wants 0..1000000, not '%s'", optarg);
			break;
		case 'h':
			wk_help(stdout);
			return 0;
		default:
			lzb_usage_error("wakeup", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("wakeup", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick && !rounds_given)
		rounds = 200;
	if (lzb.quick && !idle_given)
		idle = 1;
	lzb_begin("wakeup");
	/* Blocked sides do not spin; the libchan-spin row spins on two CPUs. */
	lzb_workers(2);

	t = lzb_table_new("wakeup", "Waking a blocked receiver: send call to the receiver running, between two processes");
	lzb_table_col(t, "method", "", 0);
	lzb_table_col(t, "mean", "ns", 0);
	lzb_table_col(t, "median", "ns", 0);
	lzb_table_col(t, "p99", "ns", 0);
	lzb_table_col(t, "mean vs eventfd", "x", 2);
	lzb_table_col(t, "median vs eventfd", "x", 2);
	lzb_table_col(t, "median vs libchan-parked", "x", 2);
	lzb_table_col(t, "waits that slept", "%", 0);
	/* eventfd first: the others' ratio needs it. */
	static const enum wk_method order[WK_METHODS] = {
		WK_EVENTFD, WK_FUTEX, WK_LIBCHAN_PARKED, WK_PUBSUB_PARKED, WK_LIBCHAN_SPIN
	};
	for (m = 0; m < WK_METHODS; m++) {
		struct wk_run *run = wk_new();

		run->method = order[m];
		run->rounds = rounds;
		run->warmup = rounds / 10 < 1000 ? rounds / 10 : 1000;
		run->delay_ns = delay_us * 1000;
		lzb_barrier_init(&run->created, 2);
		lzb_barrier_init(&run->start, 2);
		lzb_progress("wakeup: %s, %llu round trips", wk_names[order[m]],
			     (unsigned long long)rounds);
		if (lzb_run(2, true, wk_pp_worker, run)) {
			fprintf(stderr, "lzchan-bench wakeup: %s: %s\n", wk_names[order[m]],
				run->why[0] ? run->why : "a side failed");
			fails++;
			wk_free(run);
			continue;
		}
		if (order[m] == WK_EVENTFD) {
			evfd_ns = run->mean_ns;
			evfd_p50 = run->p50_ns;
		}
		if (order[m] == WK_LIBCHAN_PARKED)
			parked_p50 = run->p50_ns;
		lzb_table_row(t);
		lzb_cell_str(t, wk_names[order[m]]);
		lzb_cell_num(t, run->mean_ns);
		lzb_cell_num(t, run->p50_ns);
		lzb_cell_num(t, run->p99_ns);
		lzb_cell_num(t, run->mean_ns / evfd_ns);
		lzb_cell_num(t, run->p50_ns / evfd_p50);
		lzb_cell_num(t, run->p50_ns / parked_p50);
		lzb_cell_num(t, run->slept > 1 ? 100 : run->slept * 100);
		wk_free(run);
	}
	lzb_table_note(t, "%llu wakes each (after %llu warm-up), each send %llu us after the previous wake so the waiter is parked; "
		       "sides on CPUs %d and %d",
		       (unsigned long long)rounds,
		       (unsigned long long)(rounds / 10 < 1000 ? rounds / 10 : 1000),
		       (unsigned long long)delay_us, lzb_cpu(0), lzb_cpu(1));
	lzb_table_note(t, "latency: CLOCK_MONOTONIC just before the send/write/FUTEX_WAKE to the waiter's return; "
		       "ratios: this row / the eventfd row");
	lzb_table_note(t, "libchan-parked: spin_ns 0, so each lzchan_recv_wait() parks as soon as it finds nothing; "
		       "parking (a membarrier) is done during the delay, so its cost is not in the figure");
	lzb_table_note(t, "waits that slept: voluntary context switches of the timing side per wait (getrusage); "
		       "a message that lands while the waiter is still parking is received without sleeping");
	lzb_table_note(t, "pubsub-parked: the same bounce over two pub/sub channels (each side publishes on its own "
		       "and subscribes, spin_ns 0, to the other's): a parked subscriber's wake, against libchan-parked");
	lzb_table_note(t, "libchan-spin: receivers spin instead of parking -- not a wakeup, the contrast");
	if (lzb.ncpus < 2)
		lzb_table_note(t, "one CPU: both sides share it");
	lzb_emit(t);

	if (idle) {
		struct wk_run *run = wk_new();
		struct lzchan_opts o;
		const char *be;

		run->idle_ns = idle * 1000000000ULL;
		lzb_barrier_init(&run->created, 3);
		lzb_barrier_init(&run->start, 3);
		lzb_progress("wakeup: two receivers idle for %llu s", (unsigned long long)idle);
		t = lzb_table_new("idle", "CPU time of a blocked receiver while nothing comes");
		lzb_table_col(t, "receiver", "", 0);
		lzb_table_col(t, "idle", "s", 2);
		lzb_table_col(t, "CPU", "ms", 2);
		lzb_table_col(t, "CPU per s", "ms/s", 4);
		lzb_table_col(t, "x eventfd", "x", 1);
		lzb_table_col(t, "CPU per s after the first s", "ms/s", 4);
		if (lzb_run(3, true, wk_idle_worker, run)) {
			fprintf(stderr, "lzchan-bench wakeup: idle: %s\n", run->why[0] ? run->why : "a worker failed");
			fails++;
		} else {
			double per_s[2];

			for (m = 1; m >= 0; m--) {	/* eventfd first: the ratio needs it */
				double s = (double)run->wall_ns[m] / 1e9, ms = (double)run->cpu_ns[m] / 1e6;

				per_s[m] = ms / s;
			}
			for (m = 0; m < 2; m++) {
				double s = (double)run->wall_ns[m] / 1e9, ms = (double)run->cpu_ns[m] / 1e6;

				lzb_table_row(t);
				lzb_cell_str(t, m ? "eventfd read()" : "lzchan_recv_wait()");
				lzb_cell_num(t, s);
				lzb_cell_num(t, ms);
				lzb_cell_num(t, per_s[m]);
				lzb_cell_num(t, per_s[1] > 0 ? per_s[m] / per_s[1] : NAN);
				lzb_cell_num(t, run->steady_wall_ns ?
					     (double)run->steady_ns[m] / 1e6 / ((double)run->steady_wall_ns / 1e9) : NAN);
			}
		}
		be = run->backend[0] ? run->backend : "?";
		lzchan_opts_init(&o);
		lzb_table_note(t, "CLOCK_PROCESS_CPUTIME_ID of each blocked process (libchan: default spin_ns %u us, backend %s)",
			       o.spin_ns / 1000, be);
		lzb_table_note(t, "libchan spins %u us once, then parks; a sleep wakes for a message, a departure, "
			       "the deadline, or after 10 s for one look at the lanes (libchan/lzchan_wait.c)",
			       o.spin_ns / 1000);
		lzb_table_note(t, "after the first s: each receiver's CPU clock read by the waking process "
			       "(clock_getcpuclockid) 1 s into the wait and just before its wake");
		wk_free(run);
		lzb_emit(t);
	}
	return fails ? 1 : 0;
}
