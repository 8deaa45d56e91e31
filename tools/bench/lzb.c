// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan-bench: the shared machinery (see lzb.h).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <numaif.h>
#include <papi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "lzb.h"

struct lzb_global lzb = { .progress = -1 };

/* ---------- errors and options ---------- */

void lzb_die(const char *fmt, ...)
{
	va_list ap;

	lzb_progress(NULL);
	fputs("lzchan-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void lzb_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "lzchan-bench %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try 'lzchan-bench %s --help')\n", cmd);
	exit(2);
}

bool lzb_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return false;
	if (!strcmp(end, "k"))
		mul = 1000;
	else if (!strcmp(end, "m"))
		mul = 1000000;
	else if (!strcmp(end, "g"))
		mul = 1000000000;
	else if (!strcmp(end, "K") || !strcmp(end, "KiB"))
		mul = 1024;
	else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
		mul = 1024 * 1024;
	else if (!strcmp(end, "G") || !strcmp(end, "GiB"))
		mul = 1024ULL * 1024 * 1024;
	else if (*end)
		return false;
	if (v > UINT64_MAX / mul)
		return false;
	*out = v * mul;
	return true;
}

int lzb_parse_sizes(const char *s, uint32_t *out, int max, uint64_t limit)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int n = 0;
	uint64_t v;

	if (!dup)
		lzb_die("out of memory");
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n >= max || !lzb_parse_size(tok, &v) || v > limit) {
			free(dup);
			return -1;
		}
		out[n++] = (uint32_t)v;
	}
	free(dup);
	return n ? n : -1;
}

int lzb_parse_list(const char *s, int *out, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		long a, b;

		if (!isdigit((unsigned char)*s))
			return -1;
		a = strtol(s, &end, 10);
		b = a;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -1;
			b = strtol(end + 1, &end, 10);
		}
		if (b < a || b > 65535)
			return -1;
		for (; a <= b; a++) {
			if (n >= max)
				return -1;
			out[n++] = (int)a;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return n ? n : -1;
}

static void lzb_default_cpus(void)
{
	cpu_set_t set;
	int i;

	lzb.ncpus_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (lzb.cpus_given)
		return;
	free(lzb.cpus);
	lzb.cpus = calloc(CPU_SETSIZE, sizeof(int));
	if (!lzb.cpus)
		lzb_die("out of memory");
	lzb.ncpus = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			lzb.cpus[lzb.ncpus++] = i;
	if (!lzb.ncpus)
		lzb.cpus[lzb.ncpus++] = 0;
}

int lzb_common_opt(int c, const char *arg)
{
	switch (c) {
	case LZB_OPT_CSV:
		lzb.format = LZB_CSV;
		return 1;
	case LZB_OPT_JSON:
		lzb.format = LZB_JSON;
		return 1;
	case LZB_OPT_QUICK:
		lzb.quick = true;
		return 1;
	case LZB_OPT_PROG:
		lzb.progress = 1;
		return 1;
	case LZB_OPT_NOPROG:
		lzb.progress = 0;
		return 1;
	case LZB_OPT_CPUS: {
		int *cpus = calloc(CPU_SETSIZE, sizeof(int)), n, i;
		cpu_set_t set;

		if (!cpus)
			lzb_die("out of memory");
		n = lzb_parse_list(arg, cpus, CPU_SETSIZE);
		if (n < 0)
			lzb_usage_error("--cpus", "'%s' is not a CPU list like 0-3,8", arg);
		if (sched_getaffinity(0, sizeof(set), &set) == 0)
			for (i = 0; i < n; i++)
				if (cpus[i] >= CPU_SETSIZE || !CPU_ISSET(cpus[i], &set))
					lzb_usage_error("--cpus", "CPU %d is not one this process may run on", cpus[i]);
		free(lzb.cpus);
		lzb.cpus = cpus;
		lzb.ncpus = n;
		lzb.cpus_given = true;
		return 1;
	}
	}
	return 0;
}

int lzb_cpu(int i)
{
	if (!lzb.ncpus)
		lzb_default_cpus();
	return lzb.cpus[i % lzb.ncpus];
}

int lzb_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* 0 = this thread (sched_setaffinity on a tid). */
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return 0;
}

void lzb_workers(int spinning)
{
	if (!lzb.ncpus)
		lzb_default_cpus();
	lzb.oversubscribed = spinning > lzb.ncpus;
}

/* ---------- time ---------- */

uint64_t lzb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void lzb_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ULL, .tv_nsec = ns % 1000000000ULL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double lzb_tsc_ghz(void)
{
	static double ghz;
	uint64_t t0, c0, t1, c1;

	if (ghz > 0)
		return ghz;
	/* 20 ms against CLOCK_MONOTONIC, twice, keep the larger span's
	 * ratio: good to a fraction of a percent, which is all we print. */
	t0 = lzb_now_ns();
	c0 = lzb_rdtsc();
	lzb_sleep_ns(20000000);
	t1 = lzb_now_ns();
	c1 = lzb_rdtsc();
	if (t1 > t0 && c1 > c0)
		ghz = (double)(c1 - c0) / (double)(t1 - t0);
	if (!(ghz > 0))
		ghz = 1.0;
	return ghz;
}

#if defined(__x86_64__) || defined(__i386__)
static bool lzb_cpuid7(unsigned int reg, unsigned int bit)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return ((reg == 2 ? c : reg == 1 ? b : d) >> bit) & 1;
}
bool lzb_have_cldemote(void) { return lzb_cpuid7(2, 25); }
bool lzb_have_movdir64b(void) { return lzb_cpuid7(2, 28); }
#else
bool lzb_have_cldemote(void) { return false; }
bool lzb_have_movdir64b(void) { return false; }
#endif

/* ---------- counters ---------- */

static int papi_state;		/* 0 untried, 1 usable, -1 not */
static char papi_why[160];
static pthread_mutex_t papi_lock = PTHREAD_MUTEX_INITIALIZER;

bool lzb_counters_available(const char **why)
{
	pthread_mutex_lock(&papi_lock);
	if (!papi_state) {
		int r = PAPI_library_init(PAPI_VER_CURRENT), ncnt;

		papi_state = -1;
		if (r != PAPI_VER_CURRENT) {
			snprintf(papi_why, sizeof(papi_why), "PAPI_library_init: %s",
				 r > 0 ? "version mismatch" : PAPI_strerror(r));
		} else if ((ncnt = PAPI_num_hwctrs()) <= 0) {
			snprintf(papi_why, sizeof(papi_why),
				 "no hardware performance counters here (PAPI_num_hwctrs() = %d; "
				 "virtual machines often expose none)", ncnt);
		} else if (PAPI_thread_init(pthread_self) != PAPI_OK) {
			snprintf(papi_why, sizeof(papi_why), "PAPI_thread_init failed");
		} else if (PAPI_query_event(PAPI_L1_DCM) != PAPI_OK) {
			snprintf(papi_why, sizeof(papi_why),
				 "PAPI_L1_DCM (data cache misses) is not countable on this CPU");
		} else {
			papi_state = 1;
		}
	}
	pthread_mutex_unlock(&papi_lock);
	if (why)
		*why = papi_state > 0 ? NULL : papi_why;
	return papi_state > 0;
}

void lzb_ctr_start(struct lzb_ctr *c)
{
	c->eventset = PAPI_NULL;
	c->misses = -1;
	if (!lzb_counters_available(NULL))
		return;
	/* After fork() the child's PAPI must be set up afresh. */
	if (PAPI_create_eventset(&c->eventset) != PAPI_OK ||
	    PAPI_add_event(c->eventset, PAPI_L1_DCM) != PAPI_OK ||
	    PAPI_start(c->eventset) != PAPI_OK)
		c->eventset = PAPI_NULL;
}

void lzb_ctr_stop(struct lzb_ctr *c)
{
	long long v = 0;

	if (c->eventset == PAPI_NULL)
		return;
	if (PAPI_stop(c->eventset, &v) == PAPI_OK)
		c->misses = v;
	PAPI_cleanup_eventset(c->eventset);
	PAPI_destroy_eventset(&c->eventset);
}

/* ---------- workers ---------- */

void *lzb_shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		lzb_die("mmap of %zu shared bytes: %s", size, strerror(errno));
	return p;
}

void lzb_shared_free(void *p, size_t size)
{
	munmap(p, size);
}

int lzb_mem_node(const void *p)
{
	int node = -1;

	/* Touch-free query of the page's node (it must be faulted in). */
	if (get_mempolicy(&node, NULL, 0, (void *)p, MPOL_F_NODE | MPOL_F_ADDR))
		return -1;
	return node;
}

void lzb_barrier_init(struct lzb_barrier *b, uint32_t n)
{
	b->count = 0;
	b->round = 0;
	b->n = n;
}

void lzb_barrier_wait(struct lzb_barrier *b)
{
	/* Pairs with the release store of round by the last arrival. */
	uint32_t round = __atomic_load_n(&b->round, __ATOMIC_ACQUIRE);
	unsigned int spins = 0;

	/* The last to arrive resets count, then opens the round (release:
	 * the reset is seen before anyone can arrive for the next round). */
	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->round, round + 1, __ATOMIC_RELEASE);
		return;
	}
	/* Pairs with the release store of round above. */
	while (__atomic_load_n(&b->round, __ATOMIC_ACQUIRE) == round) {
		lzb_cpu_relax();
		if ((++spins & 1023) == 0)
			sched_yield();
	}
}

void lzb_barrier_wait_idle(struct lzb_barrier *b)
{
	/* Pairs with the release store of round by the last arrival. */
	uint32_t round = __atomic_load_n(&b->round, __ATOMIC_ACQUIRE);

	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->round, round + 1, __ATOMIC_RELEASE);
		return;
	}
	/* Pairs with the release store of round above. */
	while (__atomic_load_n(&b->round, __ATOMIC_ACQUIRE) == round)
		lzb_sleep_ns(1000000);
}

struct lzb_thread_arg {
	int (*fn)(int, void *);
	void *arg;
	int i, ret;
};

static void *lzb_thread_main(void *p)
{
	struct lzb_thread_arg *a = p;

	a->ret = a->fn(a->i, a->arg);
	return NULL;
}

int lzb_run(int n, bool procs, int (*fn)(int i, void *arg), void *arg)
{
	int i, bad = 0;

	if (!procs) {
		pthread_t *t = calloc(n, sizeof(*t));
		struct lzb_thread_arg *a = calloc(n, sizeof(*a));

		if (!t || !a)
			lzb_die("out of memory");
		for (i = 0; i < n; i++) {
			a[i] = (struct lzb_thread_arg){ fn, arg, i, 0 };
			if (pthread_create(&t[i], NULL, lzb_thread_main, &a[i]))
				lzb_die("pthread_create: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			pthread_join(t[i], NULL);
			if (a[i].ret) {
				fprintf(stderr, "lzchan-bench: worker %d failed (%d)\n", i, a[i].ret);
				bad = 1;
			}
		}
		free(t);
		free(a);
		return bad ? -1 : 0;
	}

	pid_t *pid = calloc(n, sizeof(*pid));

	if (!pid)
		lzb_die("out of memory");
	fflush(NULL);
	for (i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			lzb_die("fork: %s", strerror(errno));
		if (!pid[i]) {
			/* Die with the parent rather than spin forever. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(fn(i, arg) ? 1 : 0);
		}
	}
	/* Reap in any order; once one fails, the others would wait for it at
	 * a barrier forever: kill them, so a failed run fails, never hangs. */
	for (int left = n; left > 0; ) {
		int st = 0;
		pid_t p = waitpid(-1, &st, 0);

		if (p < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < n && pid[i] != p; i++)
			;
		if (i == n)
			continue;	/* not one of ours */
		pid[i] = 0;
		left--;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			if (!bad || !WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
				fprintf(stderr, "lzchan-bench: worker process %d %s\n", i,
					WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "failed");
			if (!bad)
				for (int j = 0; j < n; j++)
					if (pid[j] > 0)
						kill(pid[j], SIGKILL);
			bad = 1;
		}
	}
	free(pid);
	return bad ? -1 : 0;
}

/* ---------- libchan helpers ---------- */

void lzb_chan_name(char *buf, size_t len, const char *tag)
{
	static unsigned int seq;

	snprintf(buf, len, "lzb.%d.%u.%s", (int)getpid(), __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED), tag);
}

struct lzchan *lzb_chan_rx(const char *name, uint32_t slot_size, uint32_t slot_count,
			   uint32_t senders)
{
	struct lzchan_opts o;
	struct lzchan *ch;
	int r;

	lzchan_opts_init(&o);
	o.slot_size = slot_size;
	o.slot_count = slot_count;
	o.max_senders = senders;
	o.spin_ns = 1000000000;		/* benchmarks measure the spinning path */
	r = lzchan_open(&ch, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
	if (r)
		lzb_die("creating channel %s (%u x %u B, %u lanes): %s (%s)", name, slot_count,
			slot_size, senders, strerror(-r), strerrorname_np(-r) ? strerrorname_np(-r) : "?");
	/* Receivers of a benchmark unlink at once: nothing is left behind. */
	lzb.backend = lzchan_backend_name(ch);
	return ch;
}

struct lzchan *lzb_chan_tx(const char *name)
{
	struct lzchan *ch;
	int r = lzchan_open(&ch, name, LZCHAN_SENDER, NULL);

	if (r)
		lzb_die("opening channel %s to send: %s (%s)", name, strerror(-r),
			strerrorname_np(-r) ? strerrorname_np(-r) : "?");
	return ch;
}

/* ---------- tables ---------- */

#define LZB_MAX_TABLES	64
static struct lzb_table *tables[LZB_MAX_TABLES];
static int ntables;

struct lzb_table *lzb_table_new(const char *id, const char *title)
{
	struct lzb_table *t = calloc(1, sizeof(*t));

	if (!t)
		lzb_die("out of memory");
	snprintf(t->id, sizeof(t->id), "%s", id);
	snprintf(t->title, sizeof(t->title), "%s", title);
	return t;
}

void lzb_table_col(struct lzb_table *t, const char *name, const char *unit, int prec)
{
	if (t->ncols >= LZB_MAX_COLS)
		lzb_die("table %s: too many columns", t->id);
	snprintf(t->cols[t->ncols].name, sizeof(t->cols[0].name), "%s", name);
	snprintf(t->cols[t->ncols].unit, sizeof(t->cols[0].unit), "%s", unit ? unit : "");
	t->cols[t->ncols].prec = prec;
	t->ncols++;
}

void lzb_table_row(struct lzb_table *t)
{
	if (t->nrows >= LZB_MAX_ROWS)
		lzb_die("table %s: too many rows", t->id);
	t->nrows++;
}

static struct lzb_cell *lzb_next_cell(struct lzb_table *t)
{
	int c;

	if (!t->nrows)
		lzb_table_row(t);
	for (c = 0; c < t->ncols; c++)
		if (t->cells[t->nrows - 1][c].kind == LZB_EMPTY)
			return &t->cells[t->nrows - 1][c];
	lzb_die("table %s: more cells than columns", t->id);
}

void lzb_cell_num(struct lzb_table *t, double v)
{
	struct lzb_cell *c = lzb_next_cell(t);

	c->kind = isfinite(v) ? LZB_NUM : LZB_NA;
	c->num = v;
}

void lzb_cell_str(struct lzb_table *t, const char *s)
{
	struct lzb_cell *c = lzb_next_cell(t);

	c->kind = LZB_STR;
	snprintf(c->str, sizeof(c->str), "%s", s);
}

void lzb_cell_na(struct lzb_table *t)
{
	lzb_next_cell(t)->kind = LZB_NA;
}

void lzb_table_note(struct lzb_table *t, const char *fmt, ...)
{
	va_list ap;

	if (t->nnotes >= LZB_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(t->notes[t->nnotes++], sizeof(t->notes[0]), fmt, ap);
	va_end(ap);
}

double lzb_table_get(const struct lzb_table *t, int row, const char *col)
{
	int c;

	if (row < 0 || row >= t->nrows)
		return NAN;
	for (c = 0; c < t->ncols; c++)
		if (!strcmp(t->cols[c].name, col))
			return t->cells[row][c].kind == LZB_NUM ? t->cells[row][c].num : NAN;
	return NAN;
}

static void lzb_cell_text(const struct lzb_table *t, int r, int c, char *buf, size_t len)
{
	const struct lzb_cell *x = &t->cells[r][c];

	switch (x->kind) {
	case LZB_NUM:
		snprintf(buf, len, "%.*f", t->cols[c].prec, x->num);
		break;
	case LZB_STR:
		snprintf(buf, len, "%s", x->str);
		break;
	case LZB_NA:
		snprintf(buf, len, "n/a");
		break;
	default:
		buf[0] = 0;
	}
}

static void lzb_print_human(const struct lzb_table *t)
{
	int w[LZB_MAX_COLS], r, c;
	char buf[96];

	lzb_progress(NULL);
	printf("\n%s\n", t->title);
	for (c = 0; c < t->ncols; c++) {
		int hw;

		snprintf(buf, sizeof(buf), "%s%s%s%s", t->cols[c].name,
			 t->cols[c].unit[0] ? " (" : "", t->cols[c].unit,
			 t->cols[c].unit[0] ? ")" : "");
		hw = (int)strlen(buf);
		w[c] = hw;
		for (r = 0; r < t->nrows; r++) {
			lzb_cell_text(t, r, c, buf, sizeof(buf));
			if ((int)strlen(buf) > w[c])
				w[c] = (int)strlen(buf);
		}
	}
	for (c = 0; c < t->ncols; c++) {
		snprintf(buf, sizeof(buf), "%s%s%s%s", t->cols[c].name,
			 t->cols[c].unit[0] ? " (" : "", t->cols[c].unit,
			 t->cols[c].unit[0] ? ")" : "");
		printf("%s%*s", c ? " | " : "", c ? w[c] : -w[c], buf);
	}
	putchar('\n');
	for (c = 0; c < t->ncols; c++)
		printf("%s%.*s", c ? "-|-" : "", w[c],
		       "----------------------------------------------------------------"
		       "----------------------------------------------------------------");
	putchar('\n');
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			lzb_cell_text(t, r, c, buf, sizeof(buf));
			printf("%s%*s", c ? " | " : "", c ? w[c] : -w[c], buf);
		}
		putchar('\n');
	}
	for (r = 0; r < t->nnotes; r++)
		printf("  note: %s\n", t->notes[r]);
	fflush(stdout);
}

void lzb_emit(struct lzb_table *t)
{
	if (lzb.format == LZB_HUMAN) {
		lzb_print_human(t);
		free(t);
		return;
	}
	if (ntables >= LZB_MAX_TABLES)
		lzb_die("too many tables");
	tables[ntables++] = t;
}

/* ---------- facts ---------- */

#define LZB_MAX_FACTS	32
static char fact_key[LZB_MAX_FACTS][32];
static char fact_val[LZB_MAX_FACTS][160];
static int nfacts;

void lzb_fact(const char *key, const char *fmt, ...)
{
	va_list ap;
	int i;

	for (i = 0; i < nfacts; i++)
		if (!strcmp(fact_key[i], key))
			break;
	if (i == nfacts) {
		if (nfacts >= LZB_MAX_FACTS)
			return;
		nfacts++;
	}
	snprintf(fact_key[i], sizeof(fact_key[i]), "%s", key);
	va_start(ap, fmt);
	vsnprintf(fact_val[i], sizeof(fact_val[i]), fmt, ap);
	va_end(ap);
}

static void lzb_collect_facts(void)
{
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256], model[160] = "unknown", used[256] = "";
	const char *why;
	int i, off = 0;

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10)) {
				char *p = strchr(line, ':');

				if (p) {
					p += 1 + (p[1] == ' ');
					p[strcspn(p, "\n")] = 0;
					snprintf(model, sizeof(model), "%s", p);
				}
				break;
			}
		fclose(f);
	}
	lzb_default_cpus();
	for (i = 0; i < lzb.ncpus && off < (int)sizeof(used) - 8; i++)
		off += snprintf(used + off, sizeof(used) - off, "%s%d", i ? "," : "", lzb.cpus[i]);
	uname(&u);
	lzb_fact("cpu", "%s", model);
	lzb_fact("cpus_online", "%d", lzb.ncpus_online);
	lzb_fact("cpus_used", "%s", used);
	lzb_fact("kernel", "%s %s", u.sysname, u.release);
	lzb_fact("tsc_ghz", "%.3f", lzb_tsc_ghz());
	lzb_fact("cldemote", "%s", lzb_have_cldemote() ? "yes" : "no");
	lzb_fact("counters", "%s", lzb_counters_available(&why) ? "PAPI_L1_DCM" : why);
}

void lzb_facts_print_human(void)
{
	int i;

	printf("lzchan-bench %d.%d\n", lzchan_version_major(), lzchan_version_minor());
	for (i = 0; i < nfacts; i++)
		printf("  %-12s %s\n", fact_key[i], fact_val[i]);
	if (!lzb_counters_available(NULL))
		printf("  cache misses are printed as n/a: %s\n", fact_val[nfacts - 1]);
	fflush(stdout);
}

static void lzb_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void lzb_csv_str(const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

void lzb_finish(void)
{
	int i, r, c;
	char buf[96];

	lzb_progress(NULL);
	if (lzb.format == LZB_HUMAN) {
		/* The one fact known only once a channel was opened. */
		if (lzb.backend)
			printf("\nlibchan backend: %s\n", lzb.backend);
		return;
	}
	if (lzb.backend)
		lzb_fact("backend", "%s", lzb.backend);
	if (lzb.format == LZB_CSV) {
		for (i = 0; i < nfacts; i++) {
			printf("# %s: ", fact_key[i]);
			puts(fact_val[i]);
		}
		for (i = 0; i < ntables; i++) {
			const struct lzb_table *t = tables[i];

			printf("# table %s: %s\n", t->id, t->title);
			for (r = 0; r < t->nnotes; r++)
				printf("# note: %s\n", t->notes[r]);
			printf("table");
			for (c = 0; c < t->ncols; c++) {
				putchar(',');
				snprintf(buf, sizeof(buf), "%s%s%s", t->cols[c].name,
					 t->cols[c].unit[0] ? "_" : "", t->cols[c].unit);
				for (char *p = buf; *p; p++)
					if (*p == ' ' || *p == '/')
						*p = '_';
				lzb_csv_str(buf);
			}
			putchar('\n');
			for (r = 0; r < t->nrows; r++) {
				fputs(t->id, stdout);
				for (c = 0; c < t->ncols; c++) {
					putchar(',');
					if (t->cells[r][c].kind == LZB_STR)
						lzb_csv_str(t->cells[r][c].str);
					else if (t->cells[r][c].kind == LZB_NUM)
						printf("%.6g", t->cells[r][c].num);
					else if (t->cells[r][c].kind == LZB_NA)
						printf("n/a");
				}
				putchar('\n');
			}
		}
		fflush(stdout);
		return;
	}
	printf("{\"facts\":{");
	for (i = 0; i < nfacts; i++) {
		printf("%s", i ? "," : "");
		lzb_json_str(fact_key[i]);
		putchar(':');
		lzb_json_str(fact_val[i]);
	}
	printf("},\"tables\":[");
	for (i = 0; i < ntables; i++) {
		const struct lzb_table *t = tables[i];

		printf("%s{\"id\":", i ? "," : "");
		lzb_json_str(t->id);
		printf(",\"title\":");
		lzb_json_str(t->title);
		printf(",\"columns\":[");
		for (c = 0; c < t->ncols; c++) {
			printf("%s{\"name\":", c ? "," : "");
			lzb_json_str(t->cols[c].name);
			printf(",\"unit\":");
			lzb_json_str(t->cols[c].unit);
			putchar('}');
		}
		printf("],\"rows\":[");
		for (r = 0; r < t->nrows; r++) {
			printf("%s[", r ? "," : "");
			for (c = 0; c < t->ncols; c++) {
				const struct lzb_cell *x = &t->cells[r][c];

				printf("%s", c ? "," : "");
				if (x->kind == LZB_NUM)
					printf("%.6g", x->num);
				else if (x->kind == LZB_STR)
					lzb_json_str(x->str);
				else
					printf("null");
			}
			putchar(']');
		}
		printf("],\"notes\":[");
		for (r = 0; r < t->nnotes; r++) {
			printf("%s", r ? "," : "");
			lzb_json_str(t->notes[r]);
		}
		printf("]}");
	}
	printf("]}\n");
	fflush(stdout);
}

void lzb_facts_collect(void)
{
	lzb_collect_facts();
}

void lzb_begin(const char *cmd)
{
	lzb_fact("experiment", "%s%s", cmd, lzb.quick ? " (--quick: harness check, not a measurement)" : "");
	lzb_collect_facts();
	if (lzb.format == LZB_HUMAN)
		lzb_facts_print_human();
}

/* ---------- progress ---------- */

static bool progress_open;

void lzb_progress(const char *fmt, ...)
{
	va_list ap;

	if (lzb.progress < 0)
		lzb.progress = isatty(2);
	if (!lzb.progress)
		return;
	if (!fmt) {
		if (progress_open)
			fputs("\r\033[K", stderr);
		progress_open = false;
		return;
	}
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	progress_open = true;
	fflush(stderr);
}

/*
 * Run this program with @args (a subcommand and its arguments) under
 * valgrind's callgrind, collecting only inside the functions @toggles
 * names (and what they call): the instructions counted, or -1 (why in
 * @err).  The same count every run, on any machine.
 */
long long lzb_callgrind(const char *const *toggles, const char *const *args, char *err,
			size_t errlen)
{
	char out[64], line[256], self[4096], file[96], toggle[8][96];
	const char *argv[32];
	long long total = -1;
	int status, fd, n = 0, k;
	ssize_t len;
	pid_t pid;
	FILE *f;

	snprintf(out, sizeof(out), "/tmp/lzb-cg.%d.out", getpid());
	snprintf(file, sizeof(file), "--callgrind-out-file=%s", out);
	/* Ourselves, by path: valgrind's own /proc/self/exe is valgrind. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0 || (size_t)len >= sizeof(self) - 1)
		lzb_die("cannot find this program (/proc/self/exe)");
	self[len] = 0;
	argv[n++] = "valgrind";
	argv[n++] = "--tool=callgrind";
	argv[n++] = file;
	for (k = 0; toggles[k] && k < 8; k++) {
		snprintf(toggle[k], sizeof(toggle[k]), "--toggle-collect=%s", toggles[k]);
		argv[n++] = toggle[k];
	}
	argv[n++] = self;
	for (k = 0; args[k] && n < 31; k++)
		argv[n++] = args[k];
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		lzb_die("fork: %s", strerror(errno));
	if (!pid) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp("valgrind", (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, WIFEXITED(status) && WEXITSTATUS(status) == 127 ?
			 "valgrind is not installed (apt-get install valgrind)" :
			 "the run under valgrind failed (status %#x)", status);
		unlink(out);
		return -1;
	}
	f = fopen(out, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "totals:", 7) || (total < 0 && !strncmp(line, "summary:", 8)))
			total = strtoll(line + (line[0] == 't' ? 7 : 8), NULL, 10);
	if (f)
		fclose(f);
	unlink(out);
	if (total < 0)
		snprintf(err, errlen, "no total in callgrind's output");
	return total;
}
