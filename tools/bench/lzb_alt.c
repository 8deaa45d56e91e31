// SPDX-License-Identifier: GPL-2.0-only
/*
 * alt: what a user would pick instead of libchan, measured the same way.
 *
 * Two processes pinned to two CPUs, for each message size:
 *   ping-pong  one message bounced: half a round trip;
 *   one-way    side 0 sends --msgs messages, side 1 receives them: msgs/s
 *              and GB/s as the receiver saw it;
 * over libchan (one channel each way), a pipe (one each way), an AF_UNIX
 * socketpair (SOCK_STREAM and SOCK_SEQPACKET) and POSIX message queues
 * (one each way).  The kernel transports block in their system calls as
 * users use them; libchan's receiver spins (spin_ns 1 s), its normal fast
 * path.  Each row has its ratio to libchan at the same size.
 *
 * Every message carries its number (and a check byte) and the receiver
 * checks it, so a --quick run fails on a lost, duplicated or corrupted
 * message.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <mqueue.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lzb.h"

#define ALT_MAX_SIZES	32
#define ALT_MAX_SIZE	(1U << 20)
#define ALT_TIMEOUT_NS	10000000000LL

enum alt_kind { ALT_LIBCHAN, ALT_PIPE, ALT_STREAM, ALT_SEQPACKET, ALT_MQ, ALT_KINDS };
static const char *const alt_names[ALT_KINDS] = {
	"libchan", "pipe", "unix-stream", "unix-seqpacket", "mqueue"
};

struct alt_run {
	enum alt_kind kind;
	uint32_t size;		/* message size as asked */
	uint32_t wire;		/* bytes actually sent (>= 1 on byte streams) */
	uint64_t rounds, warmup, msgs;
	uint32_t slot_count;
	char name[2][64];	/* libchan: channel side i receives on */
	int fd[2][2];		/* pipe: fd[i] carries messages to side i */
	int sv[2];		/* socketpair */
	mqd_t mq[2];		/* mq[i]: queue side i receives from */
	uint32_t mq_msgsize;
	struct lzb_barrier created, start, rate;
	/* results */
	uint64_t pp_ticks, rate_ns;
	char backend[48];
	char why[160];
};

static char alt_backend[48];

static void alt_fill(unsigned char *b, uint32_t len, uint64_t seq)
{
	if (len >= 8)
		memcpy(b, &seq, 8);
	if (len)
		b[len - 1] = (unsigned char)(seq * 7 + len);
}

static bool alt_check(const unsigned char *b, uint32_t len, uint64_t seq)
{
	uint64_t v;

	if (len >= 8) {
		memcpy(&v, b, 8);
		if (v != seq)
			return false;
	}
	return !len || b[len - 1] == (unsigned char)(seq * 7 + len);
}

static int alt_write_all(int fd, const unsigned char *b, size_t len)
{
	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int alt_read_all(int fd, unsigned char *b, size_t len)
{
	while (len) {
		ssize_t n = read(fd, b, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EPIPE;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

struct alt_side {
	struct alt_run *run;
	int side;
	struct lzchan *rx, *tx;
	unsigned char *buf;
	size_t cap;
};

static int alt_send(struct alt_side *s, uint64_t seq)
{
	struct alt_run *run = s->run;
	unsigned int spins = 0;
	ssize_t n;
	int r;

	alt_fill(s->buf, run->wire, seq);
	switch (run->kind) {
	case ALT_LIBCHAN:
		while ((r = lzchan_send(s->tx, s->buf, run->wire)) == -EAGAIN)
			lzb_spin(&spins);
		return r;
	case ALT_PIPE:
		return alt_write_all(run->fd[!s->side][1], s->buf, run->wire);
	case ALT_STREAM:
		return alt_write_all(run->sv[s->side], s->buf, run->wire);
	case ALT_SEQPACKET:
		do
			n = send(run->sv[s->side], s->buf, run->wire, 0);
		while (n < 0 && errno == EINTR);
		return n < 0 ? -errno : n == (ssize_t)run->wire ? 0 : -EPROTO;
	case ALT_MQ:
		while ((r = mq_send(run->mq[!s->side], (const char *)s->buf, run->wire, 0)) &&
		       errno == EINTR)
			;
		return r ? -errno : 0;
	default:
		return -EINVAL;
	}
}

static int alt_recv(struct alt_side *s, uint64_t seq)
{
	struct alt_run *run = s->run;
	uint32_t lane;
	ssize_t n = -1;
	int r;

	switch (run->kind) {
	case ALT_LIBCHAN:
		n = lzchan_recv_wait(s->rx, s->buf, s->cap, &lane, ALT_TIMEOUT_NS);
		if (n < 0)
			return (int)n;
		break;
	case ALT_PIPE:
		r = alt_read_all(run->fd[s->side][0], s->buf, run->wire);
		if (r)
			return r;
		n = run->wire;
		break;
	case ALT_STREAM:
		r = alt_read_all(run->sv[s->side], s->buf, run->wire);
		if (r)
			return r;
		n = run->wire;
		break;
	case ALT_SEQPACKET:
		do
			n = recv(run->sv[s->side], s->buf, s->cap, 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		break;
	case ALT_MQ:
		do
			n = mq_receive(run->mq[s->side], (char *)s->buf, s->cap, NULL);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		break;
	default:
		return -EINVAL;
	}
	if (n != (ssize_t)run->wire || !alt_check(s->buf, run->wire, seq))
		return -EPROTO;
	return 0;
}

static int alt_worker(int side, void *arg)
{
	struct alt_run *run = arg;
	struct alt_side s = { .run = run, .side = side };
	uint64_t k, t0 = 0, total = run->warmup + run->rounds;
	const char *what = "ping-pong";
	int r = 0;

	if (lzb_pin(lzb_cpu(side)))
		lzb_die("pinning side %d to CPU %d: %s", side, lzb_cpu(side), strerror(errno));
	s.cap = (run->mq_msgsize > run->wire ? run->mq_msgsize : run->wire) + 64;
	s.buf = aligned_alloc(64, (s.cap + 63) & ~(size_t)63);
	if (!s.buf)
		lzb_die("out of memory");
	memset(s.buf, 0, s.cap);
	if (run->kind == ALT_LIBCHAN) {
		struct lzchan_geom g;

		s.rx = lzb_chan_rx(run->name[side], 64, run->slot_count, 1);
		snprintf(run->backend, sizeof(run->backend), "%s", lzchan_backend_name(s.rx));
		if (lzchan_geometry(s.rx, &g) == 0 && g.max_msg < run->wire)
			lzb_die("channel of %u x 64 B carries at most %u B, not %u", run->slot_count,
				g.max_msg, run->wire);
	}
	lzb_barrier_wait(&run->created);
	if (s.rx)
		s.tx = lzb_chan_tx(run->name[!side]);
	lzb_barrier_wait(&run->start);
	if (s.rx)
		lzchan_unlink(run->name[side]);

	/* Ping-pong: side 0 sends k, side 1 echoes it. */
	for (k = 0; k < total && !r; k++) {
		if (side == 0) {
			if (k == run->warmup)
				t0 = lzb_rdtsc();
			r = alt_send(&s, k);
			if (!r)
				r = alt_recv(&s, k);
		} else {
			r = alt_recv(&s, k);
			if (!r)
				r = alt_send(&s, k);
		}
	}
	if (side == 0 && !r)
		run->pp_ticks = lzb_rdtsc() - t0;

	/* One way: side 0 streams, side 1 times the arrivals. */
	if (!r) {
		what = "one-way";
		lzb_barrier_wait(&run->rate);
		t0 = lzb_now_ns();
		for (k = 0; k < run->msgs && !r; k++)
			r = side == 0 ? alt_send(&s, k) : alt_recv(&s, k);
		if (side == 1 && !r)
			run->rate_ns = lzb_now_ns() - t0;
	}
	if (r)
		snprintf(run->why, sizeof(run->why), "%s, side %d, message %llu: %s", what, side,
			 (unsigned long long)(k ? k - 1 : 0),
			 r == -EPROTO ? "wrong message (lost, duplicated or corrupted)" :
			 r == -ETIMEDOUT ? "nothing came within 10 s" : strerror(-r));
	if (s.tx)
		lzchan_close(s.tx);
	if (s.rx)
		lzchan_close(s.rx);
	free(s.buf);
	return r ? 1 : 0;
}

static long alt_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Set up the transport in the parent (children inherit it); 0, or -errno
 * with a reason to print. */
static int alt_setup(struct alt_run *run, char *why, size_t wlen)
{
	int i;

	switch (run->kind) {
	case ALT_LIBCHAN:
		lzb_chan_name(run->name[0], sizeof(run->name[0]), "alt0");
		lzb_chan_name(run->name[1], sizeof(run->name[1]), "alt1");
		/* Room for four messages of this size, and at least 1024 slots. */
		run->slot_count = 1024;
		while ((uint64_t)(run->slot_count - 1) * 64 - 8 < 4ULL * (run->wire + 8))
			run->slot_count <<= 1;
		return 0;
	case ALT_PIPE:
		for (i = 0; i < 2; i++)
			if (pipe2(run->fd[i], O_CLOEXEC)) {
				snprintf(why, wlen, "pipe: %s", strerror(errno));
				return -errno;
			}
		return 0;
	case ALT_STREAM:
	case ALT_SEQPACKET:
		if (socketpair(AF_UNIX, (run->kind == ALT_STREAM ? SOCK_STREAM : SOCK_SEQPACKET) |
			       SOCK_CLOEXEC, 0, run->sv)) {
			snprintf(why, wlen, "socketpair: %s", strerror(errno));
			return -errno;
		}
		return 0;
	case ALT_MQ: {
		long maxmsg = alt_read_long("/proc/sys/fs/mqueue/msg_max");
		struct mq_attr a = { .mq_maxmsg = maxmsg > 0 && maxmsg < 10 ? maxmsg : 10,
				     .mq_msgsize = run->wire ? run->wire : 1 };
		char name[64];

		run->mq_msgsize = (uint32_t)a.mq_msgsize;
		for (i = 0; i < 2; i++) {
			snprintf(name, sizeof(name), "/lzb.%d.mq%d", (int)getpid(), i);
			run->mq[i] = mq_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &a);
			if (run->mq[i] == (mqd_t)-1) {
				int e = errno;

				snprintf(why, wlen, "mq_open: %s (%s)", strerror(e),
					 strerrorname_np(e) ? strerrorname_np(e) : "?");
				if (i)
					mq_close(run->mq[0]);
				return -e;
			}
			mq_unlink(name);
		}
		return 0;
	}
	default:
		return -EINVAL;
	}
}

static void alt_teardown(struct alt_run *run)
{
	int i;

	switch (run->kind) {
	case ALT_PIPE:
		for (i = 0; i < 2; i++) {
			close(run->fd[i][0]);
			close(run->fd[i][1]);
		}
		break;
	case ALT_STREAM:
	case ALT_SEQPACKET:
		close(run->sv[0]);
		close(run->sv[1]);
		break;
	case ALT_MQ:
		mq_close(run->mq[0]);
		mq_close(run->mq[1]);
		break;
	default:
		break;
	}
	if (run->backend[0]) {
		snprintf(alt_backend, sizeof(alt_backend), "%s", run->backend);
		lzb.backend = alt_backend;
	}
}

static void alt_help(FILE *to)
{
	int i;

	fprintf(to,
		"usage: lzchan-bench alt [OPTIONS]\n"
		"\n"
		"What users pick instead, next to libchan, by message size: ping-pong\n"
		"half round trip and one-way rate between two processes pinned to the\n"
		"first two CPUs of --cpus, with each row's ratio to libchan.  Transports:\n"
		"  ");
	for (i = 0; i < ALT_KINDS; i++)
		fprintf(to, "%s%s", i ? ", " : "", alt_names[i]);
	fprintf(to,
		"\n"
		"\n"
		"  -s, --sizes LIST    message sizes (default 0,64,1K,4K,16K,64K; max 1M)\n"
		"  -r, --rounds N      ping-pong round trips per size (default 20k; --quick 200)\n"
		"  -m, --msgs N        one-way messages per size (default 200k, at most 1 GiB\n"
		"                      per size; --quick 500)\n"
		"  -t, --transports L  which, comma-separated (default all; libchan is always run)\n"
		"%s", LZB_COMMON_HELP);
}

int lzb_cmd_alt(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "msgs", required_argument, NULL, 'm' },
		{ "transports", required_argument, NULL, 't' },
		LZB_COMMON_OPTS, { 0 }
	};
	uint32_t sizes[ALT_MAX_SIZES] = { 0, 64, 1024, 4096, 16384, 65536 };
	uint64_t rounds = 20000, msgs = 200000;
	bool rounds_given = false, msgs_given = false, on[ALT_KINDS];
	bool stream_note = false, mq_skipped = false;
	int nsizes = 6, c, i, k, fails = 0;
	long mq_max = alt_read_long("/proc/sys/fs/mqueue/msgsize_max");
	char mq_why[160] = "";
	struct lzb_table *t;

	for (k = 0; k < ALT_KINDS; k++)
		on[k] = true;
	while ((c = getopt_long(argc, argv, "s:r:m:t:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 's':
			nsizes = lzb_parse_sizes(optarg, sizes, ALT_MAX_SIZES, ALT_MAX_SIZE);
			if (nsizes < 0)
				lzb_usage_error("alt", "--sizes wants up to %d sizes like 0,64,4K (each at most 1M), not '%s'",
						ALT_MAX_SIZES, optarg);
			break;
		case 'r':
			if (!lzb_parse_size(optarg, &rounds) || !rounds || rounds > 100000000)
				lzb_usage_error("alt", "--rounds wants 1..100m, not '%s'", optarg);
			rounds_given = true;
			break;
		case 'm':
			if (!lzb_parse_size(optarg, &msgs) || !msgs || msgs > (1ULL << 40))
				lzb_usage_error("alt", "--msgs wants a positive count, not '%s'", optarg);
			msgs_given = true;
			break;
		case 't': {
			char *s = strdup(optarg), *tok, *save = NULL;

			for (k = 1; k < ALT_KINDS; k++)
				on[k] = false;
			for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				for (k = 0; k < ALT_KINDS; k++)
					if (!strcmp(tok, alt_names[k]))
						break;
				if (k == ALT_KINDS)
					lzb_usage_error("alt", "--transports: unknown '%s'", tok);
				on[k] = true;
			}
			free(s);
			break;
		}
		case 'h':
			alt_help(stdout);
			return 0;
		default:
			lzb_usage_error("alt", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("alt", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick) {
		if (!rounds_given)
			rounds = 200;
		if (!msgs_given)
			msgs = 500;
	}
	lzb_begin("alt");
	lzb_workers(2);

	t = lzb_table_new("alt", "What users pick instead: two processes, by message size");
	lzb_table_col(t, "transport", "", 0);
	lzb_table_col(t, "size", "B", 0);
	lzb_table_col(t, "half RTT", "ns", 0);
	lzb_table_col(t, "latency vs libchan", "x", 1);
	lzb_table_col(t, "msgs/s", "M", 3);
	lzb_table_col(t, "GB/s", "", 3);
	lzb_table_col(t, "libchan rate is", "x", 1);
	for (i = 0; i < nsizes; i++) {
		double lc_lat = NAN, lc_rate = NAN;

		for (k = 0; k < ALT_KINDS; k++) {
			size_t len = sizeof(struct alt_run);
			struct alt_run *run;
			double lat, rate;
			uint64_t n = msgs;

			if (!on[k])
				continue;
			if (k == ALT_MQ && mq_max > 0 && sizes[i] > (uint64_t)mq_max) {
				mq_skipped = true;
				continue;
			}
			if (sizes[i] && n > (1ULL << 30) / sizes[i])
				n = (1ULL << 30) / sizes[i];
			if (n < 100 && msgs >= 100)
				n = 100;
			run = lzb_shared_alloc(len);
			memset(run, 0, len);
			run->kind = k;
			run->size = sizes[i];
			run->wire = sizes[i];
			if (!sizes[i] && (k == ALT_PIPE || k == ALT_STREAM || k == ALT_SEQPACKET)) {
				/* A byte stream cannot carry an empty message; a
				 * zero-length SEQPACKET read looks like end of file. */
				run->wire = 1;
				stream_note = true;
			}
			run->rounds = rounds;
			run->warmup = rounds / 10 < 1000 ? rounds / 10 : 1000;
			run->msgs = n;
			lzb_barrier_init(&run->created, 2);
			lzb_barrier_init(&run->start, 2);
			lzb_barrier_init(&run->rate, 2);
			if (alt_setup(run, run->why, sizeof(run->why))) {
				if (k == ALT_MQ) {
					snprintf(mq_why, sizeof(mq_why), "%s", run->why);
				} else {
					fprintf(stderr, "lzchan-bench alt: %s: %s\n", alt_names[k], run->why);
					fails++;
				}
				lzb_shared_free(run, len);
				continue;
			}
			lzb_progress("alt: %s, %u B", alt_names[k], sizes[i]);
			if (lzb_run(2, true, alt_worker, run)) {
				fprintf(stderr, "lzchan-bench alt: %s, %u B: %s\n", alt_names[k], sizes[i],
					run->why[0] ? run->why : "a side failed");
				fails++;
				alt_teardown(run);
				lzb_shared_free(run, len);
				continue;
			}
			lat = (double)run->pp_ticks / lzb_tsc_ghz() / 2 / (double)rounds;
			rate = (double)n / ((double)run->rate_ns / 1e9);
			if (k == ALT_LIBCHAN) {
				lc_lat = lat;
				lc_rate = rate;
			}
			lzb_table_row(t);
			lzb_cell_str(t, alt_names[k]);
			lzb_cell_num(t, sizes[i]);
			lzb_cell_num(t, lat);
			lzb_cell_num(t, lat / lc_lat);
			lzb_cell_num(t, rate / 1e6);
			lzb_cell_num(t, rate * sizes[i] / 1e9);
			lzb_cell_num(t, lc_rate / rate);
			alt_teardown(run);
			lzb_shared_free(run, len);
		}
	}
	lzb_table_note(t, "%llu round trips per size; one way: up to %llu messages per size (at most 1 GiB); sides on CPUs %d and %d",
		       (unsigned long long)rounds, (unsigned long long)msgs, lzb_cpu(0), lzb_cpu(1));
	lzb_table_note(t, "pipe, sockets, mqueue block in their system calls; libchan's receiver spins (lzchan_recv_wait, spin_ns 1 s)");
	lzb_table_note(t, "latency vs libchan: this half RTT / libchan's; libchan rate is: libchan's msgs/s / this row's");
	if (stream_note)
		lzb_table_note(t, "0 B on pipe and unix sockets is sent as 1 B: a byte stream cannot carry an empty message");
	if (mq_skipped)
		lzb_table_note(t, "mqueue skipped above %ld B: /proc/sys/fs/mqueue/msgsize_max", mq_max);
	if (mq_why[0])
		lzb_table_note(t, "mqueue skipped: %s", mq_why);
	if (lzb.ncpus < 2)
		lzb_table_note(t, "one CPU: both sides share it (libchan spins; expect it to suffer)");
	lzb_emit(t);
	return fails ? 1 : 0;
}

double lzb_alt_pingpong_ns(const char *kind, uint32_t size, uint64_t iters)
{
	enum alt_kind k = !strcmp(kind, "pipe") ? ALT_PIPE :
			  !strcmp(kind, "unix") ? ALT_STREAM : ALT_KINDS;
	size_t len = sizeof(struct alt_run);
	struct alt_run *run;
	double ns = NAN;

	if (k == ALT_KINDS || !size)
		return NAN;
	run = lzb_shared_alloc(len);
	memset(run, 0, len);
	run->kind = k;
	run->size = run->wire = size;
	run->rounds = iters;
	run->warmup = iters / 10 < 1000 ? iters / 10 : 1000;
	run->msgs = 1;
	lzb_barrier_init(&run->created, 2);
	lzb_barrier_init(&run->start, 2);
	lzb_barrier_init(&run->rate, 2);
	if (alt_setup(run, run->why, sizeof(run->why))) {
		fprintf(stderr, "lzchan-bench: %s: %s\n", alt_names[k], run->why);
	} else {
		if (lzb_run(2, true, alt_worker, run))
			fprintf(stderr, "lzchan-bench: %s ping-pong: %s\n", alt_names[k],
				run->why[0] ? run->why : "a side failed");
		else
			ns = (double)run->pp_ticks / lzb_tsc_ghz() / 2 / (double)iters;
		alt_teardown(run);
	}
	lzb_shared_free(run, len);
	return ns;
}
