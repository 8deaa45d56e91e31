/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lzchan-bench: what every experiment shares -- options, pinning, timing,
 * hardware counters, workers (threads or processes), tables and output.
 *
 * An experiment is a function `int lzb_cmd_<name>(int argc, char **argv)`
 * listed in lzb_main.c.  It parses its own options with getopt_long(),
 * passing the common ones (LZB_COMMON_OPTS) to lzb_common_opt(), measures,
 * fills struct lzb_table and hands each table to lzb_emit().  lzb_main()
 * prints the machine facts first (human) or wraps everything in one object
 * (JSON) or comment lines plus rows (CSV).
 */
#ifndef LZB_H
#define LZB_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <lzchan.h>

/* ---------- options every experiment takes ---------- */

enum lzb_format { LZB_HUMAN, LZB_CSV, LZB_JSON };

struct lzb_global {
	enum lzb_format format;
	bool quick;		/* --quick: tiny sizes, checks the harness only */
	int progress;		/* -1 auto (stderr is a tty), 0 off, 1 on */
	int *cpus;		/* --cpus LIST, else every CPU we may run on */
	int ncpus;
	bool cpus_given;
	int ncpus_online;
	bool oversubscribed;	/* more spinning workers than CPUs */
	const char *backend;	/* libchan backend actually used, once known */
};
extern struct lzb_global lzb;

#define LZB_OPT_CSV	0x1001
#define LZB_OPT_JSON	0x1002
#define LZB_OPT_CPUS	0x1003
#define LZB_OPT_QUICK	0x1004
#define LZB_OPT_PROG	0x1005
#define LZB_OPT_NOPROG	0x1006
#define LZB_COMMON_OPTS							\
	{ "csv", no_argument, NULL, LZB_OPT_CSV },			\
	{ "json", no_argument, NULL, LZB_OPT_JSON },			\
	{ "cpus", required_argument, NULL, LZB_OPT_CPUS },		\
	{ "quick", no_argument, NULL, LZB_OPT_QUICK },			\
	{ "progress", no_argument, NULL, LZB_OPT_PROG },		\
	{ "no-progress", no_argument, NULL, LZB_OPT_NOPROG },		\
	{ "help", no_argument, NULL, 'h' }
#define LZB_COMMON_HELP							\
	"  --cpus LIST     CPUs to use, e.g. 0-3,8 (default: all allowed)\n" \
	"  --csv, --json   machine-readable output (default: tables)\n"	\
	"  --quick         tiny sizes: checks the harness, not the machine\n" \
	"  --[no-]progress progress on stderr (default: when it is a tty)\n"

/* Handle a common option: 1 handled, 0 not ours; exits on a bad value. */
int lzb_common_opt(int c, const char *arg);
/* Exit 2 with "lzchan-bench CMD: MSG" and a pointer to --help. */
void __attribute__((noreturn, format(printf, 2, 3)))
lzb_usage_error(const char *cmd, const char *fmt, ...);
/* Exit 1 with "lzchan-bench: MSG". */
void __attribute__((noreturn, format(printf, 1, 2))) lzb_die(const char *fmt, ...);
/* This program with @args under callgrind, collecting in @toggles: the
 * instructions counted, or -1 (why in @err).  Both NULL-terminated. */
long long lzb_callgrind(const char *const *toggles, const char *const *args, char *err,
			size_t errlen);
/* Parse a count with an optional k/m/g (x1000) or K/M/G/KiB/MiB (x1024). */
bool lzb_parse_size(const char *s, uint64_t *out);
/* Parse "0,64,4K" (sizes as lzb_parse_size, each <= limit): fills up to
 * max entries, returns the count or -1. */
int lzb_parse_sizes(const char *s, uint32_t *out, int max, uint64_t limit);
/* Parse "0-3,8": fills up to max entries, returns the count or -1. */
int lzb_parse_list(const char *s, int *out, int max);

/* CPU to pin worker @i of a run to: --cpus in order, wrapping around. */
int lzb_cpu(int i);
/* Pin the calling thread: 0 or -errno. */
int lzb_pin(int cpu);
/* Declare how many busy-waiting workers run at once (sets oversubscribed). */
void lzb_workers(int spinning);

/* ---------- time ---------- */

static inline uint64_t lzb_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

static inline void lzb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* A busy-wait step: pause, and when workers outnumber CPUs, yield every
 * 16 steps (the same for every implementation measured). */
static inline void lzb_spin(unsigned int *n)
{
	lzb_cpu_relax();
	if (lzb.oversubscribed && (++*n & 15) == 0) {
		extern int sched_yield(void);
		sched_yield();
	}
}

uint64_t lzb_now_ns(void);		/* CLOCK_MONOTONIC */
double lzb_tsc_ghz(void);		/* TSC ticks per ns, calibrated once */
void lzb_sleep_ns(uint64_t ns);

/* CPU features, detected with CPUID at run time. */
bool lzb_have_cldemote(void);
bool lzb_have_movdir64b(void);

static inline void lzb_cldemote(const void *p)
{
#if defined(__x86_64__)
	/* CLDEMOTE (0f 1c /0): a hint; a NOP where unsupported, but callers
	 * check lzb_have_cldemote() so tables never claim what did not run. */
	__asm__ __volatile__(".byte 0x0f, 0x1c, 0x07" :: "D"(p) : "memory");
#else
	(void)p;
#endif
}

/* ---------- hardware counters (PAPI) ---------- */

/* true when data-cache-miss counting works here; else *why says why. */
bool lzb_counters_available(const char **why);

/* One worker's counter session: call start/stop in the measuring thread
 * (or process).  misses is -1 when counters are not available. */
struct lzb_ctr {
	int eventset;
	long long misses;
};
void lzb_ctr_start(struct lzb_ctr *c);
void lzb_ctr_stop(struct lzb_ctr *c);

/* ---------- workers: threads or processes ---------- */

/* Memory every worker sees, threads or forked processes (MAP_SHARED). */
void *lzb_shared_alloc(size_t size);
void lzb_shared_free(void *p, size_t size);
/* NUMA node of the page at @p, or -1 when unknown. */
int lzb_mem_node(const void *p);

struct lzb_barrier {
	uint32_t count;		/* arrivals in the current round */
	uint32_t round;
	uint32_t n;
};
void lzb_barrier_init(struct lzb_barrier *b, uint32_t n);	/* in shared memory */
void lzb_barrier_wait(struct lzb_barrier *b);
/* The same for a worker that is not measured: sleeps instead of spinning,
 * so it takes no CPU from the ones that are. */
void lzb_barrier_wait_idle(struct lzb_barrier *b);

/*
 * Run fn(i, arg) for i in [0, n): as threads (procs false) or forked
 * processes (procs true; arg must then point into lzb_shared_alloc()
 * memory for results to come back).  Returns 0, or -1 when a worker
 * failed (fn returned nonzero, or a process died); the reason is printed.
 */
int lzb_run(int n, bool procs, int (*fn)(int i, void *arg), void *arg);

/* ---------- libchan helpers ---------- */

/* A fresh channel name, unique to this run: "lzb.<pid>.<seq>.<tag>". */
void lzb_chan_name(char *buf, size_t len, const char *tag);
/* Create and open the receiving end; dies with a clear error on failure.
 * Records the backend in lzb.backend. */
struct lzchan *lzb_chan_rx(const char *name, uint32_t slot_size,
			   uint32_t slot_count, uint32_t senders);
/* Open a sending end; dies on failure. */
struct lzchan *lzb_chan_tx(const char *name);

/* ---------- tables and output ---------- */

#define LZB_MAX_COLS	40
#define LZB_MAX_ROWS	256
#define LZB_MAX_NOTES	8

enum lzb_cell_kind { LZB_EMPTY, LZB_NUM, LZB_STR, LZB_NA };

struct lzb_cell {
	enum lzb_cell_kind kind;
	double num;
	char str[48];
};

struct lzb_col {
	char name[40];
	char unit[16];
	int prec;		/* digits after the point in human output */
};

struct lzb_table {
	char id[32];		/* machine name, e.g. "ring" */
	char title[120];
	int ncols, nrows;
	struct lzb_col cols[LZB_MAX_COLS];
	struct lzb_cell cells[LZB_MAX_ROWS][LZB_MAX_COLS];
	int nnotes;
	char notes[LZB_MAX_NOTES][200];
};

struct lzb_table *lzb_table_new(const char *id, const char *title);
void lzb_table_col(struct lzb_table *t, const char *name, const char *unit, int prec);
void lzb_table_row(struct lzb_table *t);		/* start a row */
void lzb_cell_num(struct lzb_table *t, double v);	/* next cell */
void lzb_cell_str(struct lzb_table *t, const char *s);
void lzb_cell_na(struct lzb_table *t);			/* "n/a" / null */
void __attribute__((format(printf, 2, 3)))
lzb_table_note(struct lzb_table *t, const char *fmt, ...);
/* Value of column @col in row @row (NaN if not a number). */
double lzb_table_get(const struct lzb_table *t, int row, const char *col);
/* Print (human: now; CSV/JSON: collected, printed by lzb_finish()). */
void lzb_emit(struct lzb_table *t);

/* Machine facts: set by experiments (e.g. "ring_node"), printed once. */
void lzb_fact(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lzb_facts_collect(void);	/* CPU, kernel, TSC, counters */
/* After option parsing: record the experiment, print the facts (human). */
void lzb_begin(const char *cmd);
void lzb_facts_print_human(void);
void lzb_finish(void);

/* Progress line on stderr (when enabled); NULL fmt ends the line. */
void lzb_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---------- experiments ---------- */

int lzb_cmd_c2c(int argc, char **argv);
int lzb_cmd_ring(int argc, char **argv);
int lzb_cmd_lat(int argc, char **argv);
int lzb_cmd_msgrate(int argc, char **argv);
int lzb_cmd_threads(int argc, char **argv);
int lzb_cmd_wakeup(int argc, char **argv);
int lzb_cmd_alt(int argc, char **argv);
int lzb_cmd_ipm(int argc, char **argv);
int lzb_cmd_pubsub(int argc, char **argv);
int lzb_cmd_headline(int argc, char **argv);
int lzb_cmd_plot(int argc, char **argv);
int lzb_cmd_remote(int argc, char **argv);

/* lzb_iox.c: iceoryx classic beside pubsub (when built with it). */
const char *lzb_iox_start(void);
void lzb_iox_stop(void);
unsigned int lzb_iox_max_subs(void);
int lzb_iox_inner(unsigned int nsubs, uint64_t n, size_t len, double *ns_per_msg);
const char *lzb_iox_version(void);

/* Building blocks the headline reuses (each returns its figure, NaN on
 * failure with the reason printed). */
double lzb_c2c_pair_ns(int cpu_a, int cpu_b, uint64_t rounds);	/* half RTT */
/* Ring rate in M msgs/s, best of @trials; impl as in `ring --impl`. */
double lzb_ring_mps(const char *impl, int senders, bool procs, uint64_t msgs, int trials);
/* libchan ping-pong half round trip (ns) between CPUs lzb_cpu(0) and (1). */
double lzb_lat_pingpong_ns(uint32_t size, uint64_t iters, bool procs, int idle);
/* The same between two of the article's lazy rings (4 to 56 bytes). */
double lzb_lat_lazy_pingpong_ns(uint32_t size, uint64_t iters, bool procs);
/* Ping-pong half round trip (ns) over "pipe", "unix" (AF_UNIX stream). */
double lzb_alt_pingpong_ns(const char *kind, uint32_t size, uint64_t iters);

#endif /* LZB_H */
