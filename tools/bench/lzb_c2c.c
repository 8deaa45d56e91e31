// SPDX-License-Identifier: GPL-2.0-only
/*
 * c2c: the physical limit everything else is compared with (Intel article,
 * "Core to Core Latency" and "Core-to-Core Bandwidth"):
 *   - a flag bounced between two pinned threads, for every pair of CPUs
 *     given: half a round trip, in TSC ticks and ns;
 *   - one core writes 32 KiB, the other reads it after a flag: reader's
 *     ticks and GB/s, with and without CLDEMOTE on the writer.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lzb.h"

struct c2c_pp {
	_Alignas(64) uint64_t flag;
	_Alignas(64) int cpu[2];
	uint64_t rounds;
	uint64_t ticks;
	int err;
	struct lzb_barrier start;
};

static void *c2c_pp_remote(void *p)
{
	struct c2c_pp *s = p;
	unsigned int spins = 0;
	uint64_t i;

	if (lzb_pin(s->cpu[1]))
		s->err = errno;
	lzb_barrier_wait(&s->start);
	for (i = 1; i <= s->rounds; i += 2) {
		/* Pairs with the main thread's release store of i. */
		while (__atomic_load_n(&s->flag, __ATOMIC_ACQUIRE) != i)
			lzb_spin(&spins);
		/* Pairs with the main thread's acquire load of i + 1. */
		__atomic_store_n(&s->flag, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

double lzb_c2c_pair_ns(int a, int b, uint64_t rounds)
{
	struct c2c_pp *s = aligned_alloc(64, sizeof(*s));
	unsigned int spins = 0;
	pthread_t t;
	uint64_t i, t0;
	double ns;

	if (!s)
		lzb_die("out of memory");
	memset(s, 0, sizeof(*s));
	s->cpu[0] = a;
	s->cpu[1] = b;
	s->rounds = rounds & ~1ULL;
	lzb_barrier_init(&s->start, 2);
	if (pthread_create(&t, NULL, c2c_pp_remote, s))
		lzb_die("pthread_create failed");
	if (lzb_pin(a))
		s->err = errno;
	lzb_barrier_wait(&s->start);
	t0 = lzb_rdtsc();
	for (i = 1; i <= s->rounds; i += 2) {
		/* Pairs with the remote's acquire load of i. */
		__atomic_store_n(&s->flag, i, __ATOMIC_RELEASE);
		/* Pairs with the remote's release store of i + 1. */
		while (__atomic_load_n(&s->flag, __ATOMIC_ACQUIRE) != i + 1)
			lzb_spin(&spins);
	}
	s->ticks = lzb_rdtsc() - t0;
	pthread_join(t, NULL);
	if (s->err)
		lzb_die("pinning to CPU %d or %d: %s", a, b, strerror(s->err));
	/* rounds handoffs, each half a round trip. */
	ns = (double)s->ticks / lzb_tsc_ghz() / (double)s->rounds;
	free(s);
	return ns;
}

/* ---------- bandwidth: write 32 KiB here, read it there ---------- */

struct c2c_bw {
	_Alignas(64) uint64_t go;	/* writer -> reader: round n ready */
	_Alignas(64) uint64_t done;	/* reader -> writer: round n read */
	_Alignas(64) int cpu[2];
	size_t bytes;
	unsigned int reps;
	bool demote;
	uint64_t ticks, sum;
	char *buf;
	struct lzb_barrier start;
};

static void *c2c_bw_reader(void *p)
{
	struct c2c_bw *s = p;
	unsigned int r, spins = 0;
	uint64_t total = 0, sum = 0;
	size_t i;

	lzb_pin(s->cpu[1]);
	lzb_barrier_wait(&s->start);
	for (r = 1; r <= s->reps; r++) {
		uint64_t t0;

		/* Pairs with the writer's release store of go. */
		while (__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) != r)
			lzb_spin(&spins);
		t0 = lzb_rdtsc();
		for (i = 0; i < s->bytes; i += 64)
			sum += *(volatile uint64_t *)(s->buf + i);
		total += lzb_rdtsc() - t0;
		/* Pairs with the writer's acquire load of done. */
		__atomic_store_n(&s->done, r, __ATOMIC_RELEASE);
	}
	s->ticks = total;
	s->sum = sum;
	return NULL;
}

static double c2c_bw_run(int a, int b, size_t bytes, unsigned int reps, bool demote,
			 double *ticks)
{
	struct c2c_bw *s = aligned_alloc(64, sizeof(*s));
	unsigned int r, spins = 0;
	pthread_t t;
	size_t i;

	if (!s)
		lzb_die("out of memory");
	memset(s, 0, sizeof(*s));
	s->cpu[0] = a;
	s->cpu[1] = b;
	s->bytes = bytes;
	s->reps = reps;
	s->demote = demote;
	s->buf = aligned_alloc(64, bytes);
	if (!s->buf)
		lzb_die("out of memory");
	memset(s->buf, 0, bytes);
	lzb_barrier_init(&s->start, 2);
	if (pthread_create(&t, NULL, c2c_bw_reader, s))
		lzb_die("pthread_create failed");
	lzb_pin(a);
	lzb_barrier_wait(&s->start);
	for (r = 1; r <= reps; r++) {
		for (i = 0; i < bytes; i += 8)
			*(volatile uint64_t *)(s->buf + i) = r + i;
		if (demote)
			for (i = 0; i < bytes; i += 64)
				lzb_cldemote(s->buf + i);
		/* Pairs with the reader's acquire load of go. */
		__atomic_store_n(&s->go, r, __ATOMIC_RELEASE);
		/* Pairs with the reader's release store of done. */
		while (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE) != r)
			lzb_spin(&spins);
	}
	pthread_join(t, NULL);
	*ticks = (double)s->ticks / reps;
	free(s->buf);
	free(s);
	/* bytes per ns = GB/s */
	return (double)bytes / (*ticks / lzb_tsc_ghz());
}

static void c2c_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench c2c [OPTIONS]\n"
		"\n"
		"Flag ping-pong between every pair of the CPUs given (a matrix of half\n"
		"round trips), and the bandwidth of one core reading what another just\n"
		"wrote, with and without CLDEMOTE.\n"
		"\n"
		"  -r, --rounds N   handoffs per pair (default 200000)\n"
		"  -b, --bytes B    bandwidth buffer (default 32K)\n"
		"  -R, --reps N     bandwidth repetitions (default 2000)\n"
		LZB_COMMON_HELP);
}

int lzb_cmd_c2c(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "reps", required_argument, NULL, 'R' },
		LZB_COMMON_OPTS, { 0 }
	};
	uint64_t rounds = 200000, bytes = 32768, reps = 2000;
	struct lzb_table *m, *pairs, *bw;
	int c, i, j, n;
	double *ns;
	char col[16];

	while ((c = getopt_long(argc, argv, "r:b:R:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 'r':
			if (!lzb_parse_size(optarg, &rounds) || rounds < 2)
				lzb_usage_error("c2c", "--rounds wants a count >= 2, not '%s'", optarg);
			break;
		case 'b':
			if (!lzb_parse_size(optarg, &bytes) || bytes < 64 || bytes > (1U << 30))
				lzb_usage_error("c2c", "--bytes wants 64..1G, not '%s'", optarg);
			bytes &= ~63ULL;
			break;
		case 'R':
			if (!lzb_parse_size(optarg, &reps) || !reps || reps > 1000000000)
				lzb_usage_error("c2c", "--reps wants a positive count, not '%s'", optarg);
			break;
		case 'h':
			c2c_help(stdout);
			return 0;
		default:
			lzb_usage_error("c2c", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("c2c", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick) {
		rounds = rounds > 2000 ? 2000 : rounds;
		reps = reps > 20 ? 20 : reps;
	}
	lzb_begin("c2c");
	lzb_workers(2);
	n = lzb.ncpus;
	if (n < 2)
		lzb_die("c2c needs two CPUs (--cpus lists %d)", n);
	if (n > LZB_MAX_COLS - 1)
		lzb_die("c2c: at most %d CPUs in one matrix", LZB_MAX_COLS - 1);

	ns = calloc((size_t)n * n, sizeof(*ns));
	if (!ns)
		lzb_die("out of memory");
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			lzb_progress("c2c: CPU %d <-> CPU %d", lzb.cpus[i], lzb.cpus[j]);
			ns[i * n + j] = ns[j * n + i] =
				lzb_c2c_pair_ns(lzb.cpus[i], lzb.cpus[j], rounds);
		}

	m = lzb_table_new("c2c_matrix", "Core-to-core flag ping-pong, half round trip (ns), by CPU pair");
	lzb_table_col(m, "cpu", "", 0);
	for (j = 0; j < n; j++) {
		snprintf(col, sizeof(col), "%d", lzb.cpus[j]);
		lzb_table_col(m, col, "", 1);
	}
	pairs = lzb_table_new("c2c_pairs", "Core-to-core flag ping-pong, half round trip, per pair");
	lzb_table_col(pairs, "cpu_a", "", 0);
	lzb_table_col(pairs, "cpu_b", "", 0);
	lzb_table_col(pairs, "half_rtt", "ticks", 1);
	lzb_table_col(pairs, "half_rtt", "ns", 1);
	for (i = 0; i < n; i++) {
		lzb_table_row(m);
		lzb_cell_num(m, lzb.cpus[i]);
		for (j = 0; j < n; j++) {
			if (i == j) {
				lzb_cell_str(m, "-");
				continue;
			}
			lzb_cell_num(m, ns[i * n + j]);
			if (j > i) {
				lzb_table_row(pairs);
				lzb_cell_num(pairs, lzb.cpus[i]);
				lzb_cell_num(pairs, lzb.cpus[j]);
				lzb_cell_num(pairs, ns[i * n + j] * lzb_tsc_ghz());
				lzb_cell_num(pairs, ns[i * n + j]);
			}
		}
	}
	lzb_table_note(m, "%llu handoffs per pair; TSC at %.3f GHz", (unsigned long long)rounds,
		       lzb_tsc_ghz());
	lzb_emit(m);
	if (lzb.format != LZB_HUMAN)
		lzb_emit(pairs);
	else
		free(pairs);

	bw = lzb_table_new("c2c_bw", "Core-to-core bandwidth: one core writes, the other reads");
	lzb_table_col(bw, "writer", "", 0);
	lzb_table_col(bw, "reader", "", 0);
	lzb_table_col(bw, "bytes", "", 0);
	lzb_table_col(bw, "cldemote", "", 0);
	lzb_table_col(bw, "read", "ticks", 0);
	lzb_table_col(bw, "read", "ns", 0);
	lzb_table_col(bw, "bandwidth", "GB/s", 2);
	for (i = 0; i < 2; i++) {
		double ticks, gbs;

		lzb_table_row(bw);
		lzb_cell_num(bw, lzb.cpus[0]);
		lzb_cell_num(bw, lzb.cpus[1]);
		lzb_cell_num(bw, (double)bytes);
		lzb_cell_str(bw, i ? "yes" : "no");
		if (i && !lzb_have_cldemote()) {
			lzb_cell_na(bw);
			lzb_cell_na(bw);
			lzb_cell_na(bw);
			lzb_table_note(bw, "this CPU has no CLDEMOTE (CPUID.7.0:ECX[25])");
			continue;
		}
		lzb_progress("c2c: bandwidth%s", i ? " with CLDEMOTE" : "");
		gbs = c2c_bw_run(lzb.cpus[0], lzb.cpus[1], bytes, (unsigned int)reps, i, &ticks);
		lzb_cell_num(bw, ticks);
		lzb_cell_num(bw, ticks / lzb_tsc_ghz());
		lzb_cell_num(bw, gbs);
	}
	lzb_table_note(bw, "mean of %llu rounds; the reader's time from the flag to the last line",
		       (unsigned long long)reps);
	lzb_emit(bw);
	free(ns);
	return 0;
}
