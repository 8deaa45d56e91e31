// SPDX-License-Identifier: GPL-2.0-only
/*
 * pubsub: what a publish costs the publisher as subscribers are added,
 * counted (not timed) with valgrind's callgrind, so the figure is the
 * same on every run.
 *
 * One process: a pub/sub channel of 1024 slots of 256 bytes with S
 * attached subscribers, in rounds of "publish 256" -- then, with
 * back-pressure, every subscriber receives the 256 (not counted: callgrind
 * collects only inside the publisher's noinline wrapper, one call per
 * message).  With overwrite the subscribers stay attached and idle: the
 * publisher never looks at them, which is what the row shows.  The figure
 * is the difference of two run lengths divided by the difference of their
 * message counts, so set-up cancels out.  The baseline, in the same run: a
 * channel sender's lzchan_send() of the same message, the receiver taking
 * each round.
 *
 * `lzchan-bench pubsub` drives valgrind; `lzchan-bench pubsub --inner
 * KIND SUBS N LEN` is what runs under it.  The shm backend always: the
 * user-space path is the same on both (the module's places cost the
 * publisher nothing per message), and this machine loads no module.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lzb.h"

#define PS_SLOTS	1024
#define PS_SLOT_SIZE	256
#define PS_ROUND	256

enum { PS_CHANNEL, PS_OVERWRITE, PS_BACKPRESSURE, PS_ICEORYX };

static const unsigned int ps_subs[] = { 1, 16, 256, 1024 };
#define PS_NSUBS	((int)(sizeof(ps_subs) / sizeof(ps_subs[0])))

__attribute__((noinline, used)) int lzb_ps_publish(struct lzchan *pub, const void *buf,
						   size_t len)
{
	return lzchan_send(pub, buf, len);
}

__attribute__((noinline, used)) int lzb_ps_chan_send(struct lzchan *tx, const void *buf,
						     size_t len)
{
	return lzchan_send(tx, buf, len);
}

/* One run; with @ns_per_msg timed (the publishes only), else counted. */
static int ps_inner(int kind, unsigned int nsubs, uint64_t n, size_t len, double *ns_per_msg)
{
	struct lzchan **subs = calloc(nsubs ? nsubs : 1, sizeof(*subs));
	char name[64], msg[PS_SLOT_SIZE], out[PS_SLOT_SIZE];
	struct lzchan *pub, *rx = NULL;
	uint64_t done, spent = 0;
	unsigned int i, k;

	if (kind == PS_ICEORYX) {
		free(subs);
		return lzb_iox_inner(nsubs, n, len, ns_per_msg);
	}
	if (!subs)
		lzb_die("pubsub: out of memory");
	memset(msg, 'p', sizeof(msg));
	lzb_chan_name(name, sizeof(name), "ps");
	if (kind == PS_CHANNEL) {
		rx = lzb_chan_rx(name, PS_SLOT_SIZE, PS_SLOTS, 1);
		pub = lzb_chan_tx(name);
	} else {
		struct lzchan_ps_opts o;
		int r;

		lzchan_ps_opts_init(&o);
		o.slot_size = PS_SLOT_SIZE;
		o.slot_count = PS_SLOTS;
		o.max_subscribers = nsubs;
		o.policy = kind == PS_BACKPRESSURE ? LZCHAN_PS_BACKPRESSURE : LZCHAN_PS_OVERWRITE;
		o.stall_ms = 0;
		r = lzchan_ps_create(name, &o, LZCHAN_EXCL);
		if (r < 0)
			lzb_die("pubsub: lzchan_ps_create: %s", strerror(-r));
		r = lzchan_open(&pub, name, LZCHAN_PUBLISHER, NULL);
		if (r < 0)
			lzb_die("pubsub: open as publisher: %s", strerror(-r));
		for (i = 0; i < nsubs; i++) {
			r = lzchan_subscribe(&subs[i], name, 0, 0);
			if (r < 0)
				lzb_die("pubsub: subscriber %u: %s", i, strerror(-r));
		}
	}
	for (done = 0; done < n; done += PS_ROUND) {
		uint64_t t0 = ns_per_msg ? lzb_now_ns() : 0;

		for (k = 0; k < PS_ROUND; k++) {
			int r = kind == PS_CHANNEL ? lzb_ps_chan_send(pub, msg, len) :
						     lzb_ps_publish(pub, msg, len);

			if (r)
				lzb_die("pubsub: publish failed: %s", strerror(-r));
		}
		if (ns_per_msg)
			spent += lzb_now_ns() - t0;
		if (kind == PS_CHANNEL)
			for (k = 0; k < PS_ROUND; k++)
				if (lzchan_recv(rx, out, sizeof(out), NULL) != (int)len)
					lzb_die("pubsub: channel receive failed");
		if (kind == PS_BACKPRESSURE)
			for (i = 0; i < nsubs; i++)
				for (k = 0; k < PS_ROUND; k++)
					if (lzchan_recv(subs[i], out, sizeof(out), NULL) != (int)len)
						lzb_die("pubsub: subscriber %u lost a message", i);
	}
	if (ns_per_msg)
		*ns_per_msg = (double)spent / (double)n;
	for (i = 0; i < nsubs; i++)
		lzchan_close(subs[i]);
	lzchan_close(pub);
	if (rx)
		lzchan_close(rx);
	lzchan_unlink(name);
	free(subs);
	return 0;
}

static long long ps_count(int kind, unsigned int nsubs, uint64_t n, size_t len, char *err,
			  size_t errlen)
{
	char a_kind[8], a_subs[16], a_n[32], a_len[16];
	const char *const toggles[] = { kind == PS_CHANNEL ? "lzb_ps_chan_send" :
					kind == PS_ICEORYX ? "lzb_iox_publish" : "lzb_ps_publish",
					NULL };
	const char *const args[] = { "pubsub", "--inner", a_kind, a_subs, a_n, a_len, NULL };

	snprintf(a_kind, sizeof(a_kind), "%d", kind);
	snprintf(a_subs, sizeof(a_subs), "%u", nsubs);
	snprintf(a_n, sizeof(a_n), "%llu", (unsigned long long)n);
	snprintf(a_len, sizeof(a_len), "%zu", len);
	return lzb_callgrind(toggles, args, err, errlen);
}

static double ps_per_msg(int kind, unsigned int nsubs, uint64_t n, size_t len, char *err,
			 size_t errlen)
{
	long long a = ps_count(kind, nsubs, n, len, err, errlen);
	long long b = a < 0 ? -1 : ps_count(kind, nsubs, 2 * n, len, err, errlen);

	return a < 0 || b < 0 ? -1 : (double)(b - a) / (double)n;
}

/* A timed run in a child process (a fresh one: iceoryx's runtime is one
 * per process): ns per publish, or -1. */
static double ps_timed_once(int kind, unsigned int nsubs, uint64_t n, size_t len)
{
	double v = -1;
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(p[0]);
		ps_inner(kind, nsubs, n, len, &v);
		_exit(write(p[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &v, sizeof(v)) != sizeof(v))
		v = -1;
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		v = -1;
	return v;
}

static int ps_dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of five timed runs. */
static double ps_timed(int kind, unsigned int nsubs, uint64_t n, size_t len)
{
	double v[5];
	int k;

	for (k = 0; k < 5; k++) {
		v[k] = ps_timed_once(kind, nsubs, n, len);
		if (v[k] < 0)
			return -1;
	}
	qsort(v, 5, sizeof(v[0]), ps_dcmp);
	return v[2];
}

static void ps_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench pubsub [--messages N] [--len BYTES] [OPTIONS]\n"
		"\n"
		"The publisher's instructions per message with 1, 16, 256 and 1024\n"
		"subscribers attached, overwrite and back-pressure, against a channel\n"
		"sender's send in the same run; counted by valgrind's callgrind (the\n"
		"same count every run): 1024 x 256-byte slots, rounds of 256, the\n"
		"difference of runs of N and 2N messages.  Shm backend.\n"
		"  --messages N    messages in the shorter run (default 25600)\n"
		"  --len BYTES     message length, 1..240 (default 56)\n"
		LZB_COMMON_HELP);
}

/* A figure, or n/a where it could not be had (negative). */
static void ps_cell(struct lzb_table *t, double v)
{
	if (v < 0)
		lzb_cell_na(t);
	else
		lzb_cell_num(t, v);
}

/*
 * iceoryx classic in the same run: its publisher's instructions per
 * message (counted the same way) and, both timed, ns per publish against
 * lzchan's overwrite publisher, at each subscriber count it allows.
 */
static int ps_iceoryx(uint64_t n, size_t len, double base)
{
	double cnt[PS_NSUBS], one = -1, tl[PS_NSUBS], ti[PS_NSUBS];
	const char *why = lzb_iox_start();
	struct lzb_table *t;
	char err[160] = "";
	int s;

	for (s = 0; s < PS_NSUBS; s++) {
		bool fits = !why && ps_subs[s] <= lzb_iox_max_subs();

		lzb_progress("pubsub: iceoryx, %u subscribers", ps_subs[s]);
		cnt[s] = fits ? ps_per_msg(PS_ICEORYX, ps_subs[s], n, len, err, sizeof(err)) : -1;
		if (s == 0)
			one = cnt[0];
		ti[s] = fits ? ps_timed(PS_ICEORYX, ps_subs[s], n, len) : -1;
		tl[s] = ps_timed(PS_OVERWRITE, ps_subs[s], n, len);
	}
	lzb_iox_stop();
	lzb_progress(NULL);

	t = lzb_table_new("pubsub-iceoryx", "The publisher's cost against iceoryx classic's, "
			  "the same shape in the same run");
	lzb_table_col(t, "subscribers", "", 0);
	lzb_table_col(t, "iceoryx instructions", "per msg", 1);
	lzb_table_col(t, "x 1 subscriber", "", 2);
	lzb_table_col(t, "x lzchan channel send", "", 2);
	lzb_table_col(t, "iceoryx publish", "ns", 0);
	lzb_table_col(t, "lzchan publish", "ns", 0);
	lzb_table_col(t, "iceoryx / lzchan", "x", 1);
	for (s = 0; s < PS_NSUBS; s++) {
		lzb_table_row(t);
		lzb_cell_num(t, ps_subs[s]);
		ps_cell(t, cnt[s]);
		ps_cell(t, cnt[s] < 0 || one <= 0 ? -1 : cnt[s] / one);
		ps_cell(t, cnt[s] < 0 || base <= 0 ? -1 : cnt[s] / base);
		ps_cell(t, ti[s]);
		ps_cell(t, tl[s]);
		ps_cell(t, ti[s] < 0 || tl[s] <= 0 ? -1 : ti[s] / tl[s]);
	}
	if (why)
		lzb_table_note(t, "n/a: %s", why);
	else
		lzb_table_note(t, "%s, with iox-roudi started for the run; one process: a publisher and S "
			       "subscribers (queue 256), rounds of 256 that every subscriber takes "
			       "(iox_sub_take_chunk, release) between publishes; a publish is "
			       "iox_pub_loan_chunk, the copy, iox_pub_publish_chunk", lzb_iox_version());
	if (!why && lzb_iox_max_subs() < ps_subs[PS_NSUBS - 1])
		lzb_table_note(t, "iceoryx: at most %u subscribers per publisher "
			       "(IOX_MAX_SUBSCRIBERS_PER_PUBLISHER, fixed when it is built)",
			       lzb_iox_max_subs());
	if (err[0])
		lzb_table_note(t, "n/a: %s", err);
	lzb_table_note(t, "timed: ns per publish call, the publishes only, median of 5 runs of %llu "
		       "messages each; lzchan: the overwrite publisher with S idle subscribers "
		       "(shm backend)", (unsigned long long)n);
	lzb_emit(t);
	return 0;
}

int lzb_cmd_pubsub(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "messages", required_argument, NULL, 'n' },
		{ "len", required_argument, NULL, 'l' },
		{ "inner", no_argument, NULL, 'I' },
		LZB_COMMON_OPTS, { 0 }
	};
	static const char *const kinds[] = { "channel send", "overwrite", "back-pressure" };
	uint64_t n = 25600, len = 56;
	bool inner = false;
	struct lzb_table *t;
	char err[160] = "";
	double base, v[3][PS_NSUBS];
	int c, kind, s;

	/* The shm backend, for the channel baseline too (the same memory,
	 * the same library). */
	setenv("LZCHAN_BACKEND", "shm", 1);
	while ((c = getopt_long(argc, argv, "n:l:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 'n':
			if (!lzb_parse_size(optarg, &n) || n < PS_ROUND || n > (1ULL << 30))
				lzb_usage_error("pubsub", "--messages wants %d..1G, not '%s'",
						PS_ROUND, optarg);
			break;
		case 'l':
			if (!lzb_parse_size(optarg, &len) || !len || len > PS_SLOT_SIZE - 16)
				lzb_usage_error("pubsub", "--len wants 1..%d, not '%s'",
						PS_SLOT_SIZE - 16, optarg);
			break;
		case 'I':
			inner = true;
			break;
		case 'h':
			ps_help(stdout);
			return 0;
		default:
			lzb_usage_error("pubsub", "bad option");
		}
	}
	if (inner) {
		if (argc - optind != 4)
			lzb_usage_error("pubsub", "--inner wants KIND SUBS N LEN");
		return ps_inner(atoi(argv[optind]), (unsigned int)atoi(argv[optind + 1]),
				strtoull(argv[optind + 2], NULL, 10),
				strtoull(argv[optind + 3], NULL, 10), NULL);
	}
	if (optind < argc)
		lzb_usage_error("pubsub", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick)
		n = PS_ROUND * 2;
	n = n / PS_ROUND * PS_ROUND;
	lzb_begin("pubsub");

	lzb_progress("pubsub: channel send");
	base = ps_per_msg(PS_CHANNEL, 0, n, len, err, sizeof(err));
	for (kind = PS_OVERWRITE; kind <= PS_BACKPRESSURE; kind++)
		for (s = 0; s < PS_NSUBS; s++) {
			lzb_progress("pubsub: %s, %u subscribers", kinds[kind], ps_subs[s]);
			v[kind][s] = ps_per_msg(kind, ps_subs[s], n, len, err, sizeof(err));
		}
	lzb_progress(NULL);

	t = lzb_table_new("pubsub", "Publisher instructions per message (callgrind; the same "
			  "count every run)");
	lzb_table_col(t, "policy", "", 0);
	lzb_table_col(t, "subscribers", "", 0);
	lzb_table_col(t, "instructions", "per msg", 1);
	lzb_table_col(t, "x 1 subscriber", "", 3);
	lzb_table_col(t, "x channel send", "", 2);
	lzb_table_row(t);
	lzb_cell_str(t, kinds[PS_CHANNEL]);
	lzb_cell_num(t, 1);
	ps_cell(t, base);
	lzb_cell_na(t);
	lzb_cell_na(t);
	for (kind = PS_OVERWRITE; kind <= PS_BACKPRESSURE; kind++)
		for (s = 0; s < PS_NSUBS; s++) {
			double x = v[kind][s], one = v[kind][0];

			lzb_table_row(t);
			lzb_cell_str(t, kinds[kind]);
			lzb_cell_num(t, ps_subs[s]);
			ps_cell(t, x);
			ps_cell(t, x < 0 || one <= 0 ? -1 : x / one);
			ps_cell(t, x < 0 || base <= 0 ? -1 : x / base);
		}
	if (err[0])
		lzb_table_note(t, "n/a: %s", err);
	lzb_table_note(t, "%llu and %llu messages of %llu bytes; %d x %d-byte slots; shm backend",
		       (unsigned long long)n, (unsigned long long)(2 * n),
		       (unsigned long long)len, PS_SLOTS, PS_SLOT_SIZE);
	lzb_table_note(t, "overwrite: the subscribers stay attached and idle (the publisher "
		       "never looks at them); back-pressure: each receives every round, and "
		       "the publisher scans their positions when its room runs out");
	lzb_table_note(t, "target: the same count within 5%% from 1 to 1024 subscribers "
		       "('x 1 subscriber' at most 1.05)");
	lzb_emit(t);
	return ps_iceoryx(n, len, base);
}
