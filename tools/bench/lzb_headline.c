// SPDX-License-Identifier: GPL-2.0-only
/*
 * headline: the short summary `make run` prints -- the physical limit,
 * libchan against the article's rings, libchan's ping-pong against the
 * limit, and a pipe and a Unix socket for contrast.  Every ratio is taken
 * within this run; each figure is the best of interleaved trials.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lzb.h"

/* A baseline measured beside every trial: its best and its worst. */
struct hl_base {
	double best, worst;
};

static void hl_base_add(struct hl_base *b, double x, bool higher_is_better)
{
	if (isnan(x))
		return;
	if (isnan(b->best) || (higher_is_better ? x > b->best : x < b->best))
		b->best = x;
	if (isnan(b->worst) || (higher_is_better ? x < b->worst : x > b->worst))
		b->worst = x;
}

/* Worst over best beyond this: the baseline moved with the machine's load
 * during the run, and a ratio against it says nothing. */
#define HL_SPREAD_MAX 1.5

/* Can a ratio against @b be believed?  If not, why into @why. */
static bool hl_base_trusted(const struct hl_base *b, const char *name, char *why, size_t len)
{
	double spread = b->best > b->worst ? b->best / b->worst : b->worst / b->best;

	if (isnan(b->best))
		return false;
	if (spread > HL_SPREAD_MAX) {
		snprintf(why, len, "%s varied %.2fx between trials (more than %.1fx): the machine "
			 "was busy", name, spread, HL_SPREAD_MAX);
		return false;
	}
	return true;
}

static void hl_row(struct lzb_table *t, const char *what, double value, const char *unit,
		   const char *base_name, double base, const char *target, double bound,
		   bool at_least, bool trusted)
{
	double ratio = value / base;

	lzb_table_row(t);
	lzb_cell_str(t, what);
	lzb_cell_num(t, value);
	lzb_cell_str(t, unit);
	lzb_cell_str(t, base_name);
	lzb_cell_num(t, base);
	lzb_cell_num(t, ratio);
	if (!target) {
		lzb_cell_str(t, "");
		lzb_cell_str(t, "");
		return;
	}
	lzb_cell_str(t, target);
	if (isnan(ratio))
		lzb_cell_na(t);
	else if (!trusted)
		lzb_cell_str(t, "untrusted");
	else
		lzb_cell_str(t, (at_least ? ratio >= bound : ratio <= bound) ? "met" : "missed");
}

static void hl_help(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bench headline [OPTIONS]\n"
		"\n"
		"The summary in under a minute: core-to-core limit, libchan vs the\n"
		"article's lazy and classic rings (1 sender, 64-byte messages),\n"
		"libchan ping-pong vs the limit and vs the lazy ring's, processes vs\n"
		"threads, and a pipe and a Unix socket for contrast.  Uses the first two CPUs of --cpus.\n"
		"\n"
		"  -t, --trials N   interleaved trials, best kept (default 5)\n"
		LZB_COMMON_HELP);
}

int lzb_cmd_headline(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trials", required_argument, NULL, 't' },
		LZB_COMMON_OPTS, { 0 }
	};
	static const char *const impls[] = { "classic", "lazy", "libchan", "libchan-batch" };
	double rate[4] = { NAN, NAN, NAN, NAN }, pp_p = NAN, pp_t = NAN, pp_lazy = NAN;
	struct hl_base bounce = { NAN, NAN }, lazy = { NAN, NAN }, classic = { NAN, NAN };
	double pipe, unx, c2c;
	bool bounce_ok, lazy_ok, classic_ok;
	char why_bounce[160] = "", why_lazy[160] = "", why_classic[160] = "";
	uint64_t trials = 5, msgs = 2000000, iters = 100000;
	struct lzb_table *t;
	uint64_t k;
	int c, i;

	while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 't':
			if (!lzb_parse_size(optarg, &trials) || !trials || trials > 100)
				lzb_usage_error("headline", "--trials wants 1..100, not '%s'", optarg);
			break;
		case 'h':
			hl_help(stdout);
			return 0;
		default:
			lzb_usage_error("headline", "bad option");
		}
	}
	if (optind < argc)
		lzb_usage_error("headline", "unexpected argument '%s'", argv[optind]);
	if (lzb.quick) {
		trials = 1;
		msgs = 5000;
		iters = 500;
	}
	lzb_begin("headline");

	/* Every baseline is measured in every trial, beside what is compared
	 * with it: the best of each is kept, and a baseline whose trials
	 * disagree by more than HL_SPREAD_MAX marks its ratios untrusted. */
	for (k = 0; k < trials; k++) {
		double x;

		lzb_progress("headline: core-to-core, trial %llu/%llu", (unsigned long long)k + 1,
			     (unsigned long long)trials);
		hl_base_add(&bounce, lzb_c2c_pair_ns(lzb_cpu(0), lzb_cpu(1),
						     lzb.quick ? 2000 : 200000), false);
		for (i = 0; i < 4; i++) {
			lzb_progress("headline: %s ring, trial %llu/%llu", impls[i],
				     (unsigned long long)k + 1, (unsigned long long)trials);
			x = lzb_ring_mps(impls[i], 1, true, msgs, 1);
			if (i == 0)
				hl_base_add(&classic, x, true);
			if (i == 1)
				hl_base_add(&lazy, x, true);
			if (!isnan(x) && (isnan(rate[i]) || x > rate[i]))
				rate[i] = x;
		}
		lzb_progress("headline: ping-pong, trial %llu/%llu", (unsigned long long)k + 1,
			     (unsigned long long)trials);
		x = lzb_lat_pingpong_ns(56, iters, true, 0);
		if (isnan(pp_p) || x < pp_p)
			pp_p = x;
		x = lzb_lat_pingpong_ns(56, iters, false, 0);
		if (isnan(pp_t) || x < pp_t)
			pp_t = x;
		x = lzb_lat_lazy_pingpong_ns(56, iters, true);
		if (isnan(pp_lazy) || x < pp_lazy)
			pp_lazy = x;
	}
	c2c = bounce.best;
	bounce_ok = hl_base_trusted(&bounce, "the flag bounce", why_bounce, sizeof(why_bounce));
	lazy_ok = hl_base_trusted(&lazy, "the lazy ring", why_lazy, sizeof(why_lazy));
	classic_ok = hl_base_trusted(&classic, "the classic ring", why_classic, sizeof(why_classic));
	/* A half round trip cannot beat the one-way bounce of a flag (a
	 * message is at least that line's transfer): a bounce slower than
	 * the ping-pong was measured while something else ran. */
	if (bounce_ok && !isnan(pp_p) && pp_p < 0.8 * c2c) {
		snprintf(why_bounce, sizeof(why_bounce), "the flag bounce (%.0f ns) came out slower "
			 "than a ping-pong over it (%.0f ns): the machine was busy", c2c, pp_p);
		bounce_ok = false;
	}
	lzb_progress("headline: pipe and Unix socket");
	pipe = lzb_alt_pingpong_ns("pipe", 56, iters / 5 + 100);
	unx = lzb_alt_pingpong_ns("unix", 56, iters / 5 + 100);

	t = lzb_table_new("headline", "lzchan headline: 64-byte messages between two processes on two CPUs");
	lzb_table_col(t, "measure", "", 0);
	lzb_table_col(t, "value", "", 1);
	lzb_table_col(t, "unit", "", 0);
	lzb_table_col(t, "baseline", "", 0);
	lzb_table_col(t, "baseline value", "", 1);
	lzb_table_col(t, "ratio", "", 2);
	lzb_table_col(t, "target", "", 0);
	lzb_table_col(t, "verdict", "", 0);
	hl_row(t, "core-to-core flag bounce", c2c, "ns", "-", NAN, NULL, 0, false, true);
	hl_row(t, "libchan stream 1->1", rate[2], "M msgs/s", "lazy ring", rate[1], ">= 1.0", 1.0, true,
	       lazy_ok);
	hl_row(t, "libchan stream 1->1", rate[2], "M msgs/s", "classic ring", rate[0], ">= 4.0", 4.0,
	       true, classic_ok);
	hl_row(t, "libchan batch send", rate[3], "M msgs/s", "lazy ring", rate[1], ">= 1.3", 1.3, true,
	       lazy_ok);
	hl_row(t, "libchan ping-pong", pp_p, "ns", "c2c bounce", c2c, "<= 1.2", 1.2, false, bounce_ok);
	hl_row(t, "lazy ring ping-pong", pp_lazy, "ns", "c2c bounce", c2c, NULL, 0, false, true);
	hl_row(t, "libchan ping-pong", pp_p, "ns", "lazy ring", pp_lazy, NULL, 0, false, true);
	hl_row(t, "libchan ping-pong, processes", pp_p, "ns", "threads", pp_t, "<= 1.1", 1.1, false,
	       true);
	hl_row(t, "pipe ping-pong", pipe, "ns", "libchan", pp_p, ">= 10", 10, true, true);
	hl_row(t, "AF_UNIX ping-pong", unx, "ns", "libchan", pp_p, ">= 10", 10, true, true);
	lzb_table_note(t, "best of %llu interleaved trials, each baseline measured in every trial; rings carry %llu messages, ping-pongs %llu round trips",
		       (unsigned long long)trials, (unsigned long long)msgs, (unsigned long long)iters);
	if (trials < 2)
		lzb_table_note(t, "one trial: no spread to judge the baselines by (run with --trials 3 or more)");
	if (why_bounce[0])
		lzb_table_note(t, "untrusted: %s", why_bounce);
	if (why_lazy[0])
		lzb_table_note(t, "untrusted: %s", why_lazy);
	if (why_classic[0])
		lzb_table_note(t, "untrusted: %s", why_classic);
	lzb_table_note(t, "ping-pongs: 56-byte messages, half round trip; the lazy ring's is the article's ring (64 slots, sequence word in the slot, the same copy), between processes, as a baseline with no target");
	lzb_table_note(t, "targets: the project's (Documentation/performance.rst); the full tables: lzchan-bench ring|lat|wakeup|alt");
	lzb_emit(t);
	return isnan(c2c) || isnan(rate[0]) || isnan(rate[1]) || isnan(rate[2]) || isnan(rate[3]) ||
	       isnan(pp_p) || isnan(pp_t) || isnan(pp_lazy) || isnan(pipe) || isnan(unx);
}
