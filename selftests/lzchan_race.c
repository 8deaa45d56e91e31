// SPDX-License-Identifier: GPL-2.0-only
/*
 * Races: several processes, each with several threads, hammer a handful of
 * channel names for a bounded time -- create (with and without EXCL), open
 * as receiver and as sender, close, unlink, map every area of the layout
 * and unmap it, INFO/LIST/PEER/SET_EVENTFD/WAKE, libchan's open/send/recv/
 * close, fork (the child inherits fds and mappings, works a little, then
 * exits cleanly, _exit()s with everything open, or is SIGKILLed), whole
 * processes exiting or SIGKILLed with everything open and mapped, and IPC
 * namespaces dying with channels in them.  Threads of one process also
 * share fd numbers and mappings: one thread dup2()s over or closes an fd
 * while others ioctl() and mmap() it, and munmaps a mapping while others
 * read it; and in "storms" all threads of a process gather and enter the
 * same call on the same file at one instant.  The point is to give a
 * debug kernel (KASAN, lockdep, kmemleak) every interleaving of setup and
 * teardown we can; the VM rig checks its log.
 *
 * What this test asserts itself: every call returns one of the outcomes
 * the UAPI header and the module allow for it in the state it can be in
 * (an unexpected errno is a failure, reported with the call and errno);
 * what INFO, PEER and LIST say agrees with what this thread knows; what
 * the kernel publishes in a mapped info area matches the binding that
 * mapping holds; a file binds once however many threads OPEN it at the
 * same time; every process stops by itself soon after the deadline; and
 * once all are gone and the names unlinked, the module's channel and page
 * counters are back where they started.
 *
 * LZCHAN_RACE_SEED (printed), LZCHAN_RACE_SECONDS (default 5, at most 120)
 * and LZCHAN_RACE_PROCS (default 4, at most 32) tune it.  The interleaving
 * is the scheduler's, so a seed replays the choices, not the run.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>

#include <lzchan.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

#define NNAMES		4	/* names every process fights over */
#define NTHREADS	3	/* threads per worker process */
#define NPRIV		6	/* fds a thread owns */
#define NPMAP		12	/* mappings a thread owns */
#define NSLOTS		4	/* fd numbers the threads of a process share */
#define SLOT_FD0	900	/* ... far above what open() hands out here */
#define NHOT		8	/* mappings the threads of a process share */
#define NLOG		32	/* failures kept for the report */
#define DEF_SECONDS	5
#define MAX_SECONDS	120
#define DEF_PROCS	4
#define MAX_PROCS	32
#define MARGIN_S	30	/* past the deadline, stragglers are killed */
/*
 * The harness kills a test that runs past this.  A run is the duration
 * (at most MAX_SECONDS), at most MARGIN_S of stragglers, and set-up and
 * clean-up; doubling the first two leaves room for a slow emulated kernel.
 */
#define RACE_TIMEOUT	(2 * (MAX_SECONDS + MARGIN_S))

#define MAX_CHAN_BYTES	(64L << 10)	/* max_channel_bytes during the run */
/*
 * max_channels: this many over the start.  Unlinked channels that fds or
 * mappings still hold count too, and there are many of those.
 */
#define EXTRA_CHANS	(12 * NNAMES)
#define EXTRA_USER	(20 * MAX_CHAN_BYTES)	/* max_user_bytes over the start */

#define NSEC		1000000000ULL
#define MSEC		1000000ULL

/* ---- state shared by every process of the run ---- */

enum {
	ST_CREATE, ST_CREATED, ST_EEXIST, ST_ENOSPC, ST_EFBIG, ST_EDQUOT,
	ST_OPEN, ST_OPENED, ST_EBUSY, ST_EUSERS, ST_ENOENT, ST_UNLINKED,
	ST_CLOSE, ST_IOCTL, ST_MMAP, ST_MAPPED, ST_MUNMAP, ST_TOUCH,
	ST_SEGV, ST_SLOT_DUP, ST_SLOT_USE, ST_EBADF, ST_FORK, ST_CHILD_KILL,
	ST_NEWNS, ST_ABRUPT, ST_LIB_OPEN, ST_LIB_SENT, ST_LIB_RECV, ST_LIST,
	ST_STORM, ST_STORM_FULL, ST_STORM_EISCONN, ST_NR
};

static const char *const st_names[ST_NR] = {
	"create", "created", "EEXIST", "ENOSPC", "EFBIG", "EDQUOT",
	"open", "opened", "EBUSY", "EUSERS", "ENOENT", "unlinked",
	"close", "ioctl", "mmap", "mapped", "munmap", "touch",
	"SEGV-caught", "slot-dup2", "slot-use", "EBADF", "fork", "child-killed",
	"newns", "abrupt-exit", "lib-open", "lib-sent", "lib-recv", "list",
	"storm-joins", "storm-full", "storm-EISCONN",
};

struct race_fail {
	char op[32];
	char why[64];
	bool is_val;		/* val is a value, not a call's result */
	long val;
	int pid;
};

struct race_shared {
	uint64_t deadline;		/* CLOCK_MONOTONIC, ns */
	uint64_t seed;
	char names[NNAMES][LZCHAN_NAME_SIZE];
	char prefix[LZCHAN_NAME_SIZE];
	unsigned long fails;
	struct race_fail log[NLOG];
	unsigned long st[ST_NR];
};

static struct race_shared *sh;
static long page;

/* ---- per process ---- */

static int proc_efd = -1;		/* an eventfd for SET_EVENTFD */
static bool in_child;			/* a forked child of a worker thread */
/*
 * Mappings the threads of a process share: address | pages (an address
 * is page-aligned and a channel is at most MAX_CHAN_BYTES, so both fit
 * in one word, swapped atomically).  Whoever swaps a mapping out owns
 * it and unmaps it; others may be reading it at that moment.
 */
static uint64_t hot[NHOT];

/* ---- per thread ---- */

static __thread uint64_t rs;		/* xorshift64* state */
static __thread sigjmp_buf fault_env;
static __thread volatile sig_atomic_t fault_armed;

struct priv_fd {
	int fd;				/* -1: free */
	uint32_t role;			/* 0: unbound */
	uint32_t lane, gen;		/* receiver: gen is the rx generation */
	uint32_t ms, ss, sc;
	int name;
	pid_t opener;
	struct lzchan_layout lay;
};

struct priv_map {
	char *p;			/* NULL: free */
	size_t len;
	bool w;
	bool info;			/* the whole info area: check it */
	uint32_t role, lane, gen, ms, ss, sc, info_lanes;
};

struct tstate {
	struct priv_fd fds[NPRIV];
	struct priv_map maps[NPMAP];
	struct lzchan *lrx, *ltx;
	uint32_t sent;
	char buf[4096];
};

static uint64_t rnd(void)
{
	return lz_xorshift(&rs);
}

static uint32_t below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static void seed_thread(uint64_t a, uint64_t b)
{
	rs = sh->seed ^ (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xBF58476D1CE4E5B9ULL);
	if (!rs)
		rs = 1;
	rnd();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC + ts.tv_nsec;
}

static void stat_inc(int i)
{
	__atomic_fetch_add(&sh->st[i], 1, __ATOMIC_RELAXED);
}

/* No stdio: this also runs in children forked from threads. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < size && src[i]; i++)
		dst[i] = src[i];
	dst[i] = 0;
}

static void log_fail(const char *op, bool is_val, long val, const char *why)
{
	unsigned long n = __atomic_fetch_add(&sh->fails, 1, __ATOMIC_RELAXED);

	if (n < NLOG) {
		copy_str(sh->log[n].op, sizeof(sh->log[n].op), op);
		copy_str(sh->log[n].why, sizeof(sh->log[n].why), why);
		sh->log[n].is_val = is_val;
		sh->log[n].val = val;
		sh->log[n].pid = getpid();
	}
}

/* Record a failure for the parent to report: a call returned @ret (0, a
 * count, or -errno) ... */
static void fail(const char *op, int ret, const char *why)
{
	log_fail(op, false, ret, why);
}

/* ... or what it reported was wrong: @val is the offending value. */
static void failv(const char *op, long val, const char *why)
{
	log_fail(op, true, val, why);
}

/* Is -@ret one of the errnos in the 0-ended list @ok?  Counts the common
 * ones; anything else is a failure of @op. */
static bool outcome(const char *op, int ret, const int *ok)
{
	if (ret >= 0)
		return true;
	switch (-ret) {
	case EEXIST:	stat_inc(ST_EEXIST); break;
	case ENOSPC:	stat_inc(ST_ENOSPC); break;
	case EFBIG:	stat_inc(ST_EFBIG); break;
	case EDQUOT:	stat_inc(ST_EDQUOT); break;
	case EBUSY:	stat_inc(ST_EBUSY); break;
	case EUSERS:	stat_inc(ST_EUSERS); break;
	case ENOENT:	stat_inc(ST_ENOENT); break;
	case EBADF:	stat_inc(ST_EBADF); break;
	}
	for (; *ok; ok++)
		if (-ret == *ok)
			return true;
	fail(op, ret, "unexpected errno");
	return false;
}

#define ERRS(...)	((const int []){ __VA_ARGS__, 0 })

/* ---- faults ---- */

/*
 * A thread reading a mapping that another thread may unmap at any moment
 * arms this first: SIGSEGV then ends the read instead of the process.  An
 * unarmed fault, or a SIGBUS (the module's fault handler never returns
 * one for a mapping mmap() accepted), is not ours to swallow.
 */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	if (fault_armed) {
		fault_armed = 0;
		siglongjmp(fault_env, sig);
	}
	/* Fault again on return, now fatal: the parent sees the signal. */
	signal(sig, SIG_DFL);
}

/* Read (or write @v to) *@p; 0, or the signal that stopped it. */
static int touch(volatile char *p, bool write, char v)
{
	int sig = sigsetjmp(fault_env, 1);

	if (sig)
		return sig;
	fault_armed = 1;
	if (write)
		*p = v;
	else
		(void)*p;
	fault_armed = 0;
	return 0;
}

/* ---- channel geometry ---- */

static uint64_t page_align(uint64_t x)
{
	return (x + page - 1) / page * page;
}

/*
 * The bytes of a channel of this geometry, laid out as the UAPI header
 * describes (control structs, then page-aligned areas), so that whether a
 * create may fail with EFBIG is known exactly.
 */
static uint64_t chan_bytes(uint32_t ss, uint32_t sc, uint32_t ms)
{
	uint64_t info = page_align(sizeof(struct lzchan_shm_hdr) +
				   (uint64_t)ms * sizeof(struct lzchan_shm_lane));
	uint64_t rx = page + (uint64_t)ms * page;	/* a header page, a page a lane */
	uint64_t bell = page_align((ms + 63) / 64 * 8);
	uint64_t lane = page_align(sizeof(struct lzchan_shm_tx) + (uint64_t)sc * ss);

	return info + rx + bell + lane * ms;
}

static bool is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

/* ---- raw calls ---- */

/* CREATE one of the names on @fd (any fd; a slot fd may be closed). */
static void do_create(int fd, int n, bool slot)
{
	static const uint32_t sizes[] = { 64, 128, 256, 4096 };
	struct lzchan_create c = { .size = sizeof(c) };
	uint64_t bytes;
	bool excl = !below(3);
	int r;

	c.flags = excl ? LZCHAN_CREATE_EXCL : 0;
	lz_setname(c.name, sh->names[n]);
	c.slot_size = sizes[below(4)];
	c.slot_count = 2U << below(6);
	c.max_senders = 1 + below(4);
	c.numa_node = LZCHAN_NODE_LOCAL;
	c.mode = 0600 | below(0100);
	c.created = 7;
	bytes = chan_bytes(c.slot_size, c.slot_count, c.max_senders);

	stat_inc(ST_CREATE);
	r = lz_ioctl(fd, LZCHAN_IOC_CREATE, &c);
	if (!r) {
		if (c.created > 1)
			failv("create", c.created, "created is neither 0 nor 1");
		else if (c.created && bytes > MAX_CHAN_BYTES)
			failv("create", bytes, "made one over max_channel_bytes");
		else if (!c.created && excl)
			fail("create EXCL", 0, "succeeded on an existing name");
		if (c.created == 1)
			stat_inc(ST_CREATED);
		return;
	}
	/* The module looks the name up first, then the limits in order. */
	if (r == -EEXIST && !excl)
		fail("create", r, "EEXIST without EXCL");
	else if (r == -EFBIG && bytes <= MAX_CHAN_BYTES)
		fail("create", r, "EFBIG within max_channel_bytes");
	else if (slot)
		outcome("create (shared fd)", r, ERRS(EEXIST, ENOSPC, EFBIG, EDQUOT, EBADF));
	else
		outcome("create", r, ERRS(EEXIST, ENOSPC, EFBIG, EDQUOT));
}

static void do_unlink(int n)
{
	int r = lz_unlink(sh->names[n]);

	if (!r)
		stat_inc(ST_UNLINKED);
	outcome("unlink", r, ERRS(ENOENT));
}

/* Our channels as LIST describes them must make sense. */
static void do_list(void)
{
	struct lzchan_chan_stat e[8];
	struct lzchan_list l = {
		.size = sizeof(l), .entry_size = sizeof(e[0]), .count = 8,
		.start = below(3), .entries = (uint64_t)(uintptr_t)e,
	};
	size_t plen = strlen(sh->prefix);
	int fd = lz_dev(), r;
	uint32_t i, want;

	if (fd < 0) {
		fail("open /dev/lzchan", fd, "for LIST");
		return;
	}
	stat_inc(ST_LIST);
	r = lz_ioctl(fd, LZCHAN_IOC_LIST, &l);
	close(fd);
	if (!outcome("list", r, ERRS(0)) || r)
		return;
	want = l.start < l.total ? l.total - l.start : 0;
	if (l.count != (want < 8 ? want : 8)) {
		failv("list", l.count, "count is not min(room, total - start)");
		return;
	}
	for (i = 0; i < l.count; i++) {
		if (strncmp(e[i].name, sh->prefix, plen))
			continue;
		if (!is_pow2(e[i].slot_size) || !is_pow2(e[i].slot_count) ||
		    e[i].max_senders < 1 || e[i].max_senders > 4)
			failv("list", e[i].slot_size, "geometry we never asked for");
		else if (e[i].bytes != chan_bytes(e[i].slot_size, e[i].slot_count,
						  e[i].max_senders))
			failv("list", e[i].bytes, "bytes do not match the geometry");
		if (e[i].senders > e[i].max_senders || e[i].receiver > 1)
			failv("list", e[i].senders, "more peers than the channel has room for");
	}
}

/* fdinfo of a shared fd: gone (ENOENT) or an lzchan file's. */
static void do_fdinfo(int fd)
{
	char path[64], buf[1024];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0) {
		outcome("fdinfo open", -errno, ERRS(ENOENT));
		return;
	}
	n = read(f, buf, sizeof(buf) - 1);
	if (n < 0)		/* closed between open and read */
		outcome("fdinfo read", -errno, ERRS(ENOENT));
	close(f);
	if (n > 0) {
		buf[n] = 0;
		if (!strstr(buf, "lzchan-role:\t"))
			failv("fdinfo", n, "no lzchan-role line");
	}
}

/* ---- mappings the threads of a process share ---- */

static void hot_free(uint64_t v)
{
	size_t len = (v & (page - 1)) * page;

	if (munmap((void *)(uintptr_t)(v & ~(uint64_t)(page - 1)), len))
		fail("munmap (shared)", -errno, "");
	stat_inc(ST_MUNMAP);
}

static void hot_publish(char *p, size_t len)
{
	uint64_t v = (uintptr_t)p | (len / page), old;

	old = __atomic_exchange_n(&hot[below(NHOT)], v, __ATOMIC_ACQ_REL);
	if (old)
		hot_free(old);
}

static void hot_unmap(void)
{
	uint64_t old = __atomic_exchange_n(&hot[below(NHOT)], 0, __ATOMIC_ACQ_REL);

	if (old)
		hot_free(old);
}

/*
 * Read the pages of a mapping another thread may be unmapping right now,
 * over and over for a little while: the longer we are in it, the likelier
 * the munmap() lands in the middle.
 */
static void hot_touch(void)
{
	uint64_t v = __atomic_load_n(&hot[below(NHOT)], __ATOMIC_ACQUIRE);
	char *p = (char *)(uintptr_t)(v & ~(uint64_t)(page - 1));
	uint64_t i, n = v & (page - 1), end = now_ns() + 500000;
	int sig = 0;

	if (!v)
		return;
	stat_inc(ST_TOUCH);
	for (i = 0; !sig && (i % 64 || now_ns() < end); i++)
		sig = touch(p + (i % n) * page + below(page), false, 0);
	if (sig == SIGSEGV)
		stat_inc(ST_SEGV);	/* unmapped under us: fine */
	else if (sig)
		failv("read (shared mapping)", sig, "signal other than SIGSEGV");
}

/* ---- fds the threads of a process share ---- */

static int slot_fd(void)
{
	return SLOT_FD0 + below(NSLOTS);
}

/* A fresh fd, maybe bound, dup2()ed over shared fd number @sfd. */
static void slot_install(int sfd)
{
	struct lzchan_open o = { .size = sizeof(o), .abi_version = LZCHAN_ABI_VERSION };
	int fd = lz_dev(), r;

	if (fd < 0) {
		fail("open /dev/lzchan", fd, "for a shared fd");
		return;
	}
	if (below(4)) {
		o.flags = below(3) ? LZCHAN_OPEN_SENDER : LZCHAN_OPEN_RECEIVER;
		lz_setname(o.name, sh->names[below(NNAMES)]);
		stat_inc(ST_OPEN);
		r = lz_ioctl(fd, LZCHAN_IOC_OPEN, &o);
		if (!r)
			stat_inc(ST_OPENED);
		else if (o.flags == LZCHAN_OPEN_SENDER)
			outcome("open sender", r, ERRS(ENOENT, EUSERS));
		else
			outcome("open receiver", r, ERRS(ENOENT, EBUSY));
	}
	stat_inc(ST_SLOT_DUP);
	/* EBUSY: dup2() met an fd open() had reserved; not ours to see. */
	if (dup2(fd, sfd) < 0)
		outcome("dup2", -errno, ERRS(EBUSY));
	close(fd);
}

/* Map an area of whatever a shared fd is bound to at that moment. */
static void slot_mmap(int sfd)
{
	struct lzchan_info in;
	const struct lzchan_layout *l = &in.layout;
	uint64_t off, len;
	int prot = PROT_READ | (below(2) ? PROT_WRITE : 0), r;
	char *p;

	r = lz_info(sfd, &in);
	if (!outcome("info (shared fd)", r, ERRS(EBADFD, EBADF)) || r)
		return;
	switch (below(5)) {
	case 0:
		off = l->info_off, len = l->info_size;
		break;
	case 1:
		off = l->rx_off, len = l->rx_size;
		break;
	case 2:
		off = l->bell_off, len = l->bell_size;
		break;
	case 3:		/* one lane's rx page */
		off = l->rx_off + l->rx_lanes + below(in.stat.max_senders) * l->rx_lane_stride;
		len = page;
		break;
	default:
		off = l->lanes_off + below(in.stat.max_senders) * l->lane_stride;
		len = l->lane_size;
		break;
	}
	stat_inc(ST_MMAP);
	p = mmap(NULL, len, prot, MAP_SHARED, sfd, off);
	if (p == MAP_FAILED) {
		/* The fd may have been closed or replaced by another channel,
		 * role or geometry since INFO. */
		outcome("mmap (shared fd)", -errno, ERRS(EBADF, EBADFD, EINVAL, EACCES));
		return;
	}
	stat_inc(ST_MAPPED);
	if (touch(p + below(len / page) * page, false, 0))
		fail("read (fresh mapping)", 0, "faulted");
	if (below(3))
		hot_publish(p, len);
	else if (munmap(p, len))
		fail("munmap", -errno, "");
}

/* Whatever shared fd @sfd holds now: unbound, either role, or nothing. */
static void slot_use(int sfd)
{
	int r;

	stat_inc(ST_SLOT_USE);
	switch (below(10)) {
	case 0: {
		struct lzchan_info in;

		r = lz_info(sfd, &in);
		outcome("info (shared fd)", r, ERRS(EBADFD, EBADF));
		if (!r && in.role != LZCHAN_OPEN_RECEIVER && in.role != LZCHAN_OPEN_SENDER)
			failv("info (shared fd)", in.role, "bound fd with no role");
		break;
	}
	case 1: {
		struct lzchan_peer p = { .size = sizeof(p) };

		p.lane = below(5) ? below(4) : LZCHAN_LANE_NONE;
		r = lz_ioctl(sfd, LZCHAN_IOC_PEER, &p);
		outcome("peer (shared fd)", r, ERRS(EBADFD, EBADF, EINVAL, EPERM, ENOTCONN));
		break;
	}
	case 2:
		r = ioctl(sfd, LZCHAN_IOC_WAKE) < 0 ? -errno : 0;
		outcome("wake (shared fd)", r, ERRS(EBADFD, EBADF, EPERM, EPIPE));
		break;
	case 3: {
		struct lzchan_set_eventfd e = { .size = sizeof(e) };

		e.fd = below(2) ? proc_efd : -1;
		r = lz_ioctl(sfd, LZCHAN_IOC_SET_EVENTFD, &e);
		outcome("set_eventfd (shared fd)", r, ERRS(EBADFD, EBADF, EPERM));
		break;
	}
	case 4: {
		struct lzchan_open o = { .size = sizeof(o), .abi_version = LZCHAN_ABI_VERSION };

		o.flags = below(2) ? LZCHAN_OPEN_SENDER : LZCHAN_OPEN_RECEIVER;
		lz_setname(o.name, sh->names[below(NNAMES)]);
		stat_inc(ST_OPEN);
		r = lz_ioctl(sfd, LZCHAN_IOC_OPEN, &o);
		if (!r)
			stat_inc(ST_OPENED);
		outcome("open (shared fd)", r, ERRS(ENOENT, EISCONN, EBUSY, EUSERS, EBADF));
		break;
	}
	case 5:
		do_create(sfd, below(NNAMES), true);
		break;
	case 6:
	case 7:
		slot_mmap(sfd);
		break;
	case 8:
		do_fdinfo(sfd);
		break;
	default:
		stat_inc(ST_CLOSE);
		r = close(sfd) ? -errno : 0;
		outcome("close (shared fd)", r, ERRS(EBADF));
		break;
	}
}

/* ---- storms: every thread of a process on one fd at once ---- */

/*
 * Left alone, threads rarely meet inside the same call on the same file.
 * Now and then one thread puts a fresh file at STORM_FD and calls the
 * others; each joins between two operations, they wait for each other a
 * moment, and then all go at it together: either all OPEN that one file
 * (a file binds once: whoever succeeds must find its own binding in
 * INFO), or a free-for-all of close, dup2, mmap and ioctls on the fd.
 */
#define STORM_FD	(SLOT_FD0 + NSLOTS)	/* to STORM_FD + STORM_FILES - 1 */
#define STORM_FILES	4		/* rounds: a fresh file each */
#define STORM_WAIT	(10 * MSEC)	/* for the others to arrive */
#define STORM_ROUND	(2 * MSEC)	/* from one round to the next */
#define STORM_GAP	(250 * MSEC)	/* from one storm to the next */

enum { STORM_BIND, STORM_CHAOS };

/* Per process.  seq is stored last (release) and loaded first (acquire):
 * whoever sees a new seq sees that storm's go, kind and name. */
static struct {
	uint64_t start;		/* claimed with a CAS by the caller */
	uint64_t go;		/* the first round's instant */
	uint32_t seq;
	uint32_t kind, name, arrived;
} storm;

static __thread uint32_t storm_seen;

/*
 * One round of a bind storm: @fd is our own reference to the round's
 * file (the next storm may replace the fd number, never the file under
 * us), set up before the start so that the OPEN goes out at the instant.
 * True if it bound the file.
 */
static bool storm_bind(int fd, struct lzchan_open *o)
{
	int r;

	stat_inc(ST_OPEN);
	r = lz_ioctl(fd, LZCHAN_IOC_OPEN, o);
	if (r == -EISCONN)
		stat_inc(ST_STORM_EISCONN);
	outcome("open (one file, all threads)", r, ERRS(ENOENT, EISCONN, EBUSY, EUSERS));
	if (!r)
		stat_inc(ST_OPENED);
	return !r;
}

/* After every round: a file binds once, so the binding is still ours. */
static void storm_check(int fd, const struct lzchan_open *o)
{
	struct lzchan_info in;
	int r = lz_info(fd, &in);

	if (r)
		fail("info (one file, all threads)", r, "after our OPEN");
	else if (in.role != o->flags || in.lane != o->lane)
		failv("open (one file, all threads)", in.lane,
		      "bound twice: INFO shows another OPEN's lane");
}

static void storm_join(void)
{
	uint32_t seq = __atomic_load_n(&storm.seq, __ATOMIC_ACQUIRE);
	uint64_t go = __atomic_load_n(&storm.go, __ATOMIC_RELAXED);
	uint32_t name = __atomic_load_n(&storm.name, __ATOMIC_RELAXED);
	bool bind = __atomic_load_n(&storm.kind, __ATOMIC_RELAXED) == STORM_BIND;
	bool bound[STORM_FILES] = { 0 };
	struct lzchan_open o[STORM_FILES];
	int fds[STORM_FILES], k;

	storm_seen = seq;
	if (now_ns() >= go)
		return;			/* missed it */
	stat_inc(ST_STORM);
	for (k = 0; bind && k < STORM_FILES; k++) {
		fds[k] = dup(STORM_FD + k);
		if (fds[k] < 0)
			outcome("dup (storm fd)", -errno, ERRS(EBADF));
		memset(&o[k], 0, sizeof(o[k]));
		o[k].size = sizeof(o[k]);
		o[k].abi_version = LZCHAN_ABI_VERSION;
		o[k].flags = below(3) ? LZCHAN_OPEN_SENDER : LZCHAN_OPEN_RECEIVER;
		lz_setname(o[k].name, sh->names[name]);
	}
	__atomic_fetch_add(&storm.arrived, 1, __ATOMIC_RELAXED);
	for (k = 0; k < STORM_FILES; k++) {
		/*
		 * Spin, not yield, to one instant: threads that are on a CPU
		 * then leave together, and go through the same call side by
		 * side.
		 */
		while (now_ns() < go + k * STORM_ROUND)
			__asm__ __volatile__("" ::: "memory");
		if (!k && __atomic_load_n(&storm.arrived, __ATOMIC_RELAXED) >= NTHREADS)
			stat_inc(ST_STORM_FULL);
		if (bind) {
			if (fds[k] >= 0)
				bound[k] = storm_bind(fds[k], &o[k]);
		} else if (below(4)) {
			slot_use(STORM_FD);
		} else {
			slot_install(STORM_FD);
		}
	}
	if (!bind)
		return;
	/* Give the last round's other OPENs time to land, then look. */
	while (now_ns() < go + (STORM_FILES + 1) * STORM_ROUND)
		sched_yield();
	for (k = 0; k < STORM_FILES; k++) {
		if (fds[k] < 0)
			continue;
		if (bound[k])
			storm_check(fds[k], &o[k]);
		close(fds[k]);
	}
}

static void storm_start(void)
{
	uint64_t t = now_ns(), old = __atomic_load_n(&storm.start, __ATOMIC_RELAXED);
	int fd, k;

	if (t < old + STORM_GAP ||
	    !__atomic_compare_exchange_n(&storm.start, &old, t, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	/* Two in three storms bind: the sharper check. */
	__atomic_store_n(&storm.kind, below(3) ? STORM_BIND : STORM_CHAOS, __ATOMIC_RELAXED);
	__atomic_store_n(&storm.name, below(NNAMES), __ATOMIC_RELAXED);
	__atomic_store_n(&storm.arrived, 0, __ATOMIC_RELAXED);
	for (k = 0; k < STORM_FILES; k++) {
		fd = lz_dev();
		if (fd < 0) {
			fail("open /dev/lzchan", fd, "for a storm");
			return;
		}
		/* The name had better exist for the OPENs to meet. */
		if (!k)
			do_create(fd, __atomic_load_n(&storm.name, __ATOMIC_RELAXED), false);
		if (dup2(fd, STORM_FD + k) < 0)
			outcome("dup2", -errno, ERRS(EBUSY));
		close(fd);
	}
	/* From now: setting up takes a while on a debug kernel. */
	__atomic_store_n(&storm.go, now_ns() + STORM_WAIT, __ATOMIC_RELAXED);
	__atomic_fetch_add(&storm.seq, 1, __ATOMIC_RELEASE);
	storm_join();
}

/* ---- fds and mappings a thread owns: exact expectations ---- */

static void priv_close(struct priv_fd *e)
{
	stat_inc(ST_CLOSE);
	if (close(e->fd))
		fail("close", -errno, "own fd");
	e->fd = -1;
	e->role = 0;
}

/* OPEN an unbound fd we own, and check what the kernel says of it. */
static void priv_bind(struct priv_fd *e)
{
	struct lzchan_open o = { .size = sizeof(o), .abi_version = LZCHAN_ABI_VERSION };
	struct lzchan_info in;
	int r, n = below(NNAMES);

	o.flags = below(3) ? LZCHAN_OPEN_SENDER : LZCHAN_OPEN_RECEIVER;
	lz_setname(o.name, sh->names[n]);
	stat_inc(ST_OPEN);
	r = lz_ioctl(e->fd, LZCHAN_IOC_OPEN, &o);
	if (r) {
		if (o.flags == LZCHAN_OPEN_SENDER)
			outcome("open sender", r, ERRS(ENOENT, EUSERS));
		else
			outcome("open receiver", r, ERRS(ENOENT, EBUSY));
		return;
	}
	stat_inc(ST_OPENED);
	r = lz_info(e->fd, &in);
	if (r) {
		fail("info after open", r, "bound fd");
		return;
	}
	if (in.role != o.flags || in.lane != o.lane) {
		failv("info after open", in.lane, "role or lane differs from OPEN's");
		return;
	}
	if (o.flags == LZCHAN_OPEN_SENDER ? o.lane >= in.stat.max_senders :
					  o.lane != LZCHAN_LANE_NONE) {
		failv("open", o.lane, "lane out of range");
		return;
	}
	if (in.stat.bytes != in.layout.lanes_off + in.layout.lane_stride * in.stat.max_senders ||
	    in.stat.bytes != chan_bytes(in.stat.slot_size, in.stat.slot_count,
					in.stat.max_senders)) {
		failv("info after open", in.stat.bytes, "layout does not add up");
		return;
	}
	e->role = o.flags;
	e->lane = o.lane;
	e->gen = o.lane_gen;
	e->ms = in.stat.max_senders;
	e->ss = in.stat.slot_size;
	e->sc = in.stat.slot_count;
	e->lay = in.layout;
	e->name = n;
	e->opener = getpid();
	if (e->role == LZCHAN_OPEN_RECEIVER) {
		struct lzchan_peer p = { .size = sizeof(p), .lane = LZCHAN_LANE_NONE };

		/* Ourselves: attached for as long as this file lives. */
		r = lz_ioctl(e->fd, LZCHAN_IOC_PEER, &p);
		if (r)
			fail("peer (receiver, itself)", r, "");
		else if (p.pid != getpid())
			failv("peer (receiver, itself)", p.pid, "not us");
		e->gen = p.gen;
	}
}

static void priv_open(struct tstate *t)
{
	struct priv_fd *e = &t->fds[below(NPRIV)];
	int fd;

	if (e->fd >= 0)
		priv_close(e);
	fd = lz_dev();
	if (fd < 0) {
		fail("open /dev/lzchan", fd, "");
		return;
	}
	e->fd = fd;
	e->role = 0;
	if (below(2))
		do_create(fd, below(NNAMES), false);
	/* Some stay unbound, for the EBADFD paths. */
	if (below(6))
		priv_bind(e);
}

static struct priv_fd *priv_pick(struct tstate *t)
{
	struct priv_fd *e = &t->fds[below(NPRIV)];

	return e->fd >= 0 ? e : NULL;
}

static void priv_ioctl(struct tstate *t)
{
	struct priv_fd *e = priv_pick(t);
	bool rx, bound;
	int r;

	if (!e)
		return;
	rx = e->role == LZCHAN_OPEN_RECEIVER;
	bound = e->role != 0;
	stat_inc(ST_IOCTL);
	switch (below(7)) {
	case 0: {
		struct lzchan_info in;

		r = lz_info(e->fd, &in);
		if (!bound) {
			if (r != -EBADFD)
				fail("info (unbound)", r, "not EBADFD");
			break;
		}
		if (r) {
			fail("info", r, "bound fd");
			break;
		}
		if (in.role != e->role || in.lane != (rx ? LZCHAN_LANE_NONE : e->lane) ||
		    in.stat.max_senders != e->ms || in.stat.slot_size != e->ss ||
		    in.stat.slot_count != e->sc || memcmp(&in.layout, &e->lay, sizeof(e->lay)))
			failv("info", in.role, "the channel changed under a bound fd");
		if (in.stat.name[0] && strcmp(in.stat.name, sh->names[e->name]))
			fail("info", 0, "name is neither ours nor empty");
		/* A sender sees no activity (LZCHAN_STAT_HIDDEN); the
		 * receiver sees itself. */
		if (rx ? in.stat.receiver != 1 || (in.stat.flags & LZCHAN_STAT_HIDDEN) :
			 !(in.stat.flags & LZCHAN_STAT_HIDDEN) || in.stat.senders ||
			 in.stat.receiver || in.stat.rx_parked)
			failv("info", in.stat.senders, rx ? "our own attachment not counted" :
							    "activity shown to a sender");
		if (in.stat.senders > in.stat.max_senders)
			failv("info", in.stat.senders, "more senders than lanes");
		break;
	}
	case 1: {
		struct lzchan_peer p = { .size = sizeof(p) };

		p.lane = below(4) ? below(5) : LZCHAN_LANE_NONE;
		r = lz_ioctl(e->fd, LZCHAN_IOC_PEER, &p);
		if (!bound) {
			if (r != -EBADFD)
				fail("peer (unbound)", r, "not EBADFD");
		} else if (p.lane != LZCHAN_LANE_NONE && p.lane >= e->ms) {
			if (r != -EINVAL)
				fail("peer (lane out of range)", r, "not EINVAL");
		} else if (!rx && p.lane != LZCHAN_LANE_NONE && p.lane != e->lane) {
			if (r != -EPERM)
				fail("peer (another sender's lane)", r, "not EPERM");
		} else if (rx ? p.lane == LZCHAN_LANE_NONE : p.lane == e->lane) {
			/* Ourselves, as the kernel saw us at OPEN. */
			if (r)
				fail("peer (itself)", r, "");
			else if (p.pid != e->opener || p.gen != e->gen)
				failv("peer (itself)", p.pid, "not the opener or its generation");
		} else {
			outcome("peer", r, ERRS(ENOTCONN));
			if (!r && p.pid <= 0)
				failv("peer", p.pid, "attached peer without a pid");
		}
		break;
	}
	case 2:
		/* WAKE, or RING: the bit, a wake if the receiver parked,
		 * and 0 either way. */
		if (below(2)) {
			r = ioctl(e->fd, LZCHAN_IOC_WAKE);
			r = r < 0 ? -errno : r;
			if (!bound ? r != -EBADFD : rx ? r != -EPERM : (r != 0 && r != 1 && r != -EPIPE))
				fail(rx ? "wake (receiver)" : "wake", r, "unexpected result");
			break;
		}
		r = ioctl(e->fd, LZCHAN_IOC_RING);
		r = r < 0 ? -errno : r;
		if (!bound ? r != -EBADFD : rx ? r != -EPERM : r != 0)
			fail(rx ? "ring (receiver)" : "ring", r, "unexpected result");
		break;
	case 3: {
		struct lzchan_set_eventfd s = { .size = sizeof(s) };
		int want = !bound ? -EBADFD : !rx ? -EPERM : 0;

		switch (below(3)) {
		case 0:
			s.fd = -1;
			break;
		case 1:
			s.fd = e->fd;		/* not an eventfd */
			if (!want)
				want = -EINVAL;
			break;
		default:
			s.fd = proc_efd;
			break;
		}
		r = lz_ioctl(e->fd, LZCHAN_IOC_SET_EVENTFD, &s);
		if (r != want)
			fail("set_eventfd", r, "unexpected result");
		break;
	}
	case 4:
		if (!bound) {
			priv_bind(e);
		} else {
			struct lzchan_open o = { .size = sizeof(o), .flags = LZCHAN_OPEN_SENDER, .abi_version = LZCHAN_ABI_VERSION };

			lz_setname(o.name, sh->names[below(NNAMES)]);
			r = lz_ioctl(e->fd, LZCHAN_IOC_OPEN, &o);
			if (r != -EISCONN)
				fail("open (bound fd)", r, "not EISCONN");
		}
		break;
	case 5:
		do_create(e->fd, below(NNAMES), false);
		break;
	default: {
		struct lzchan_features f = { .size = sizeof(f) };

		r = lz_ioctl(e->fd, LZCHAN_IOC_FEATURES, &f);
		if (r || f.abi_version != LZCHAN_ABI_VERSION)
			fail("features", r, "");
		break;
	}
	}
}

/* The info area a mapping shows must match the binding it holds. */
static void check_info(const struct priv_map *m)
{
	const struct lzchan_shm_hdr *h = (const void *)m->p;
	const struct lzchan_shm_lane *ln = (const void *)(m->p + m->info_lanes);
	uint64_t st;

	if (h->magic != LZCHAN_SHM_MAGIC || h->abi_version != LZCHAN_ABI_VERSION ||
	    h->slot_size != m->ss || h->slot_count != m->sc || h->max_senders != m->ms) {
		failv("info area", h->magic, "header does not match INFO");
		return;
	}
	/* The mapping holds the file, the file holds the attachment. */
	if (m->role == LZCHAN_OPEN_SENDER)
		st = __atomic_load_n(&ln[m->lane].status, __ATOMIC_ACQUIRE);
	else
		st = __atomic_load_n(&h->rx_status, __ATOMIC_ACQUIRE);
	if (st != LZCHAN_STATUS(m->gen, m->role == LZCHAN_OPEN_SENDER ?
				LZCHAN_LANE_ATTACHED : LZCHAN_RX_ATTACHED))
		failv("info area", st,
		     "status of a mapped attachment is not ATTACHED, this generation");
}

static void priv_touch(struct priv_map *m)
{
	size_t off = below(m->len / 8) * 8;
	bool w = m->w && !below(4);
	int sig;

	stat_inc(ST_TOUCH);
	/* Ours alone: no one else unmaps it, so it must not fault. */
	sig = touch(m->p + off, w, (char)rnd());
	if (sig) {
		failv("access (own mapping)", sig, "faulted");
		return;
	}
	if (m->info)
		check_info(m);
	/* Garbage where this role may write: the module and libchan must
	 * take it (see lzchan_hostile). */
	if (w)
		__atomic_store_n((uint64_t *)(m->p + off), rnd(), __ATOMIC_RELAXED);
}

static void priv_munmap(struct priv_map *m)
{
	stat_inc(ST_MUNMAP);
	if (munmap(m->p, m->len))
		fail("munmap", -errno, "own mapping");
	m->p = NULL;
}

/*
 * Map an area of a bound fd we own.  We know its role and layout, so
 * each outcome is exact: what the role may not map or write fails with
 * EACCES; MAP_PRIVATE and a range over an area's end with EINVAL.
 */
static void priv_mmap(struct tstate *t)
{
	struct priv_fd *e = priv_pick(t);
	struct priv_map *m = &t->maps[below(NPMAP)];
	const struct lzchan_layout *l;
	int prot = PROT_READ | (below(2) ? PROT_WRITE : 0), flags = MAP_SHARED;
	int kind = below(5), want = 0, bad = below(10);
	bool rx, may_w, whole = true;
	uint64_t off, len;
	uint32_t lane = 0;
	char *p;

	if (!e)
		return;
	if (!e->role) {
		stat_inc(ST_MMAP);
		p = mmap(NULL, page, PROT_READ, MAP_SHARED, e->fd, 0);
		if (p != MAP_FAILED || errno != EBADFD)
			fail("mmap (unbound)", p == MAP_FAILED ? -errno : 0, "not EBADFD");
		if (p != MAP_FAILED)
			munmap(p, page);
		return;
	}
	l = &e->lay;
	rx = e->role == LZCHAN_OPEN_RECEIVER;
	switch (kind) {
	case 0:
		off = l->info_off, len = l->info_size, may_w = false;
		break;
	case 1:
		off = l->rx_off, len = l->rx_size, may_w = rx;
		if (!rx)
			want = -EACCES;		/* the receiver's */
		break;
	case 2:
		off = l->bell_off, len = l->bell_size, may_w = false;	/* the kernel's (LZCHAN_IOC_RING) */
		if (!rx)
			want = -EACCES;		/* the receiver reads it */
		break;
	case 3:
		/* One lane's rx page: a sender maps its own only. */
		lane = below(2) ? e->lane % e->ms : below(e->ms);
		off = l->rx_off + l->rx_lanes + (uint64_t)lane * l->rx_lane_stride;
		len = page, may_w = rx;
		if (!rx && lane != e->lane)
			want = -EACCES;		/* another lane's */
		break;
	default:
		lane = below(e->ms);
		off = l->lanes_off + lane * l->lane_stride, len = l->lane_size;
		may_w = !rx;
		if (!rx && lane != e->lane)
			want = -EACCES;		/* another sender's lane */
		break;
	}
	if (want == 0 && (prot & PROT_WRITE) && !may_w)
		want = -EACCES;
	if (bad == 0) {
		flags = MAP_PRIVATE;
		want = -EINVAL;
	} else if (bad == 1 && kind == 3) {
		/* Two pages: a sender's one page only; the last lane's runs
		 * over the area's end. */
		len += page;
		if (lane == e->ms - 1)
			want = -EINVAL;
		else if (!rx)
			want = -EACCES;
	} else if (bad == 1) {
		len += page;			/* over the area's end */
		want = -EINVAL;
	} else if (bad == 2 && len > (uint64_t)page) {
		off += below(len / page) * page;	/* one page inside: fine */
		len = page;
		whole = false;
		/* A sender's own rx page is the one page of rx it maps. */
		if (kind == 1 && !rx)
			want = off == l->rx_off + l->rx_lanes +
				      (uint64_t)e->lane * l->rx_lane_stride &&
			       !(prot & PROT_WRITE) ? 0 : -EACCES;
	}

	if (m->p)
		priv_munmap(m);
	stat_inc(ST_MMAP);
	p = mmap(NULL, len, prot, flags, e->fd, off);
	if (p == MAP_FAILED) {
		if (-errno != want)
			fail(rx ? "mmap (receiver)" : "mmap (sender)", -errno, "unexpected errno");
		return;
	}
	if (want) {
		fail(rx ? "mmap (receiver)" : "mmap (sender)", want, "succeeded, wanted this");
		munmap(p, len);
		return;
	}
	stat_inc(ST_MAPPED);
	/* A read-only area stays read-only: no mprotect() upgrade. */
	if (!(prot & PROT_WRITE)) {
		int r = mprotect(p, len, PROT_READ | PROT_WRITE) ? -errno : 0;

		if (r != (may_w ? 0 : -EACCES))
			fail("mprotect", r, may_w ? "writable area" : "read-only area");
		if (!r)
			prot |= PROT_WRITE;
	}
	*m = (struct priv_map){
		.p = p, .len = len, .w = prot & PROT_WRITE,
		.info = kind == 0 && whole, .role = e->role, .lane = e->lane,
		.gen = e->gen, .ms = e->ms, .ss = e->ss, .sc = e->sc,
		.info_lanes = l->info_lanes,
	};
	priv_touch(m);
	/* Some go to the other threads, to be read while one unmaps them. */
	if (!below(4)) {
		hot_publish(m->p, m->len);
		m->p = NULL;
	}
}

/* ---- libchan against the same names ---- */

static void lib_op(struct tstate *t)
{
	const char *name = sh->names[below(NNAMES)];
	struct lzchan_opts o;
	unsigned int flags;
	uint32_t lane;
	int r, i;

	lzchan_opts_init(&o);
	o.slot_count = 8U << below(3);
	o.max_senders = 1 + below(4);
	o.spin_ns = 0;
	switch (below(10)) {
	case 0:
	case 1: {
		bool tx = below(2);
		struct lzchan **chp = tx ? &t->ltx : &t->lrx;

		if (*chp) {
			lzchan_close(*chp);
			*chp = NULL;
			break;
		}
		flags = tx ? LZCHAN_SENDER : LZCHAN_RECEIVER;
		if (below(2))
			flags |= LZCHAN_CREATE | (below(4) ? 0 : LZCHAN_EXCL);
		r = lzchan_open(chp, name, flags, &o);
		if (r) {
			*chp = NULL;
			if (r == -EEXIST && !(flags & LZCHAN_EXCL))
				fail("lzchan_open", r, "EEXIST without EXCL");
			else if (tx)
				outcome("lzchan_open sender", r, ERRS(ENOENT, EUSERS, EEXIST,
								     ENOSPC, EDQUOT));
			else
				outcome("lzchan_open receiver", r, ERRS(ENOENT, EBUSY, EEXIST,
								       ENOSPC, EDQUOT));
			break;
		}
		stat_inc(ST_LIB_OPEN);
		if (!tx) {
			int32_t pid;

			r = lzchan_peer(t->lrx, LZCHAN_LANE_NONE, &pid, NULL, NULL);
			if (r)
				fail("lzchan_peer (itself)", r, "");
			else if (pid != getpid())
				failv("lzchan_peer (itself)", pid, "not us");
		}
		break;
	}
	case 2:
	case 3:
	case 4:
		if (!t->ltx)
			break;
		for (i = 0; i < 8; i++) {
			uint32_t msg[12] = { t->sent, (uint32_t)getpid() };
			size_t len = 8 + below(41);

			if (below(4))
				r = lzchan_send(t->ltx, msg, len);
			else
				r = lzchan_send_wait(t->ltx, msg, len, MSEC);
			if (!r) {
				t->sent++;
				stat_inc(ST_LIB_SENT);
			} else if (!outcome("lzchan_send", r, ERRS(EAGAIN, EPIPE, ETIMEDOUT))) {
				break;
			}
		}
		break;
	case 5:
	case 6:
	case 7:
		if (!t->lrx)
			break;
		for (i = 0; i < 16; i++) {
			if (below(4))
				r = lzchan_recv(t->lrx, t->buf, sizeof(t->buf), &lane);
			else
				r = lzchan_recv_wait(t->lrx, t->buf, sizeof(t->buf), &lane, MSEC);
			if (r >= 0)
				stat_inc(ST_LIB_RECV);
			/* EBADMSG: raw senders here write garbage into lanes. */
			else if (!outcome("lzchan_recv", r, ERRS(EAGAIN, EPIPE, EMSGSIZE,
								 EBADMSG, ETIMEDOUT)) ||
				 r == -EAGAIN || r == -ETIMEDOUT)
				break;
		}
		break;
	case 8:
		r = lzchan_unlink(name);
		if (!r)
			stat_inc(ST_UNLINKED);
		outcome("lzchan_unlink", r, ERRS(ENOENT));
		break;
	default:
		flags = below(3) ? 0 : LZCHAN_EXCL;
		r = lzchan_create(name, &o, flags);
		if (r == 1)
			stat_inc(ST_CREATED);
		if (r == -EEXIST && !flags)
			fail("lzchan_create", r, "EEXIST without EXCL");
		else if (r == 0 && flags)
			fail("lzchan_create", r, "EXCL succeeded on an existing name");
		else
			outcome("lzchan_create", r, ERRS(EEXIST, ENOSPC, EDQUOT));
		break;
	}
}

/* ---- one operation ---- */

static void fork_op(struct tstate *t);

static void one_op(struct tstate *t)
{
	uint32_t x = below(100);

	if (!in_child && __atomic_load_n(&storm.seq, __ATOMIC_ACQUIRE) != storm_seen) {
		storm_join();
		return;
	}

	if (x < 10) {
		priv_open(t);
	} else if (x < 15) {
		struct priv_fd *e = priv_pick(t);

		if (e)
			priv_close(e);
	} else if (x < 25) {
		priv_ioctl(t);
	} else if (x < 35) {
		priv_mmap(t);
	} else if (x < 41) {
		struct priv_map *m = &t->maps[below(NPMAP)];

		if (m->p)
			priv_touch(m);
	} else if (x < 44) {
		struct priv_map *m = &t->maps[below(NPMAP)];

		if (m->p)
			priv_munmap(m);
	} else if (x < 48) {
		do_unlink(below(NNAMES));
	} else if (x < 54) {
		slot_install(slot_fd());
	} else if (x < 65) {
		slot_use(slot_fd());
	} else if (x < 71) {
		hot_touch();
	} else if (x < 74) {
		hot_unmap();
	} else if (x < 76) {
		do_list();
	} else if (x < 88) {
		if (!in_child)
			lib_op(t);
	} else if (x < 90) {
		if (!in_child)
			fork_op(t);
	} else if (x < 91) {
		if (!in_child)
			storm_start();
	} else if (x < 92) {
		int fd = lz_dev();

		if (fd < 0) {
			fail("open /dev/lzchan", fd, "for CREATE");
			return;
		}
		do_create(fd, below(NNAMES), false);
		close(fd);
	} else {
		/* Sometimes a thread takes its whole process down mid-run,
		 * siblings in the middle of whatever they do. */
		if (!in_child && !below(400)) {
			stat_inc(ST_ABRUPT);
			_exit(0);
		}
	}
}

/* Close and unmap everything a thread owns (half the time it does not). */
static void thread_cleanup(struct tstate *t)
{
	int i;

	for (i = 0; i < NPMAP; i++)
		if (t->maps[i].p)
			priv_munmap(&t->maps[i]);
	for (i = 0; i < NPRIV; i++)
		if (t->fds[i].fd >= 0)
			priv_close(&t->fds[i]);
	if (t->lrx)
		lzchan_close(t->lrx);
	if (t->ltx)
		lzchan_close(t->ltx);
	t->lrx = t->ltx = NULL;
}

/* ---- children forked by worker threads ---- */

/* In a fresh IPC namespace of its own: a channel that dies with it. */
static void child_newns(struct tstate *t)
{
	struct priv_fd *e = &t->fds[0];
	int i;

	if (unshare(CLONE_NEWIPC)) {
		/* Without CAP_SYS_ADMIN there is no namespace to make. */
		outcome("unshare(CLONE_NEWIPC)", -errno, ERRS(EPERM));
		return;
	}
	stat_inc(ST_NEWNS);
	for (i = 0; i < 3; i++) {
		if (e[i].fd >= 0)
			priv_close(&e[i]);
		e[i].fd = lz_dev();
		if (e[i].fd < 0) {
			fail("open /dev/lzchan", e[i].fd, "in a new IPC namespace");
			return;
		}
		do_create(e[i].fd, below(NNAMES), false);
		priv_bind(&e[i]);
	}
	for (i = 0; i < 4; i++)
		priv_mmap(t);
	if (below(2))
		do_unlink(below(NNAMES));
}

enum { CHILD_CLEAN, CHILD_ABRUPT, CHILD_KILLED, CHILD_NEWNS, CHILD_NR };

static void __attribute__((noreturn)) child_main(struct tstate *t, int mode)
{
	uint64_t end = now_ns() + (mode == CHILD_KILLED ? 2 * NSEC : 200 * MSEC);
	int i, n = 4 + below(20);

	in_child = true;
	seed_thread(getpid(), rnd());
	/* Inherited: the handles belong to the parent's thread. */
	t->lrx = t->ltx = NULL;
	/*
	 * An inherited fd is the parent's open file: binding it here would
	 * bind it there too, behind the back of a thread that expects it
	 * unbound.  Bound ones stay (a binding never changes).
	 */
	for (i = 0; i < NPRIV; i++)
		if (t->fds[i].fd >= 0 && !t->fds[i].role)
			priv_close(&t->fds[i]);
	if (end > sh->deadline)
		end = sh->deadline;
	if (mode == CHILD_NEWNS)
		child_newns(t);
	/* The killed kind works until the parent's SIGKILL, or its own end
	 * if the parent died first. */
	for (i = 0; (mode == CHILD_KILLED || i < n) && now_ns() < end; i++)
		one_op(t);
	if (mode == CHILD_CLEAN) {
		thread_cleanup(t);
		for (i = 0; i < NHOT; i++)
			if (hot[i])
				hot_free(hot[i]);
		for (i = 0; i < NSLOTS + STORM_FILES; i++)
			close(SLOT_FD0 + i);
	}
	_exit(0);
}

static void fork_op(struct tstate *t)
{
	int mode = below(CHILD_NR), status;
	pid_t pid;

	stat_inc(ST_FORK);
	pid = fork();
	if (pid < 0) {
		outcome("fork", -errno, ERRS(EAGAIN, ENOMEM));
		return;
	}
	if (pid == 0)
		child_main(t, mode);
	if (mode == CHILD_KILLED) {
		usleep(below(20000));
		kill(pid, SIGKILL);
		stat_inc(ST_CHILD_KILL);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fail("waitpid (child)", -errno, "");
			return;
		}
	}
	if (WIFEXITED(status) ? WEXITSTATUS(status) != 0 :
	    !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && mode == CHILD_KILLED))
		failv("child", status, "exited badly (wait status)");
}

/* ---- worker processes ---- */

static int worker_idx;
static unsigned int worker_gen;

static void *thread_main(void *arg)
{
	struct tstate *t = calloc(1, sizeof(*t));
	int i;

	if (!t) {
		fail("calloc", -ENOMEM, "thread state");
		return NULL;
	}
	seed_thread(worker_idx * 1000003ULL + worker_gen, (uintptr_t)arg);
	for (i = 0; i < NPRIV; i++)
		t->fds[i].fd = -1;
	while (now_ns() < sh->deadline)
		one_op(t);
	/* Half the threads leave everything open and mapped for exit. */
	if (below(2))
		thread_cleanup(t);
	return NULL;
}

static void __attribute__((noreturn)) worker_main(int idx, unsigned int gen, pid_t parent)
{
	struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO };
	pthread_t th[NTHREADS];
	int i, n = 0;

	/* If the test itself dies, so do we. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	worker_idx = idx;
	worker_gen = gen;
	seed_thread(idx * 1000003ULL + gen, 0xffff);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	proc_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (proc_efd < 0)
		fail("eventfd", -errno, "");
	for (i = 1; i < NTHREADS; i++) {
		if (pthread_create(&th[n], NULL, thread_main, (void *)(uintptr_t)i))
			fail("pthread_create", 0, "");
		else
			n++;
	}
	thread_main((void *)0);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	/* Half the workers go with mappings and shared fds still there. */
	if (below(2)) {
		for (i = 0; i < NHOT; i++)
			if (hot[i])
				hot_free(hot[i]);
		for (i = 0; i < NSLOTS + STORM_FILES; i++)
			close(SLOT_FD0 + i);
	}
	if (below(2))
		exit(0);
	_exit(0);
}

/* ---- the parent ---- */

struct worker {
	pid_t pid;
	bool killed;		/* SIGKILLed by us on purpose */
};

static long env_long(const char *name, long def, long min, long max)
{
	const char *e = getenv(name);
	long v = e && *e ? strtol(e, NULL, 0) : def;

	return v < min ? min : v > max ? max : v;
}

static pid_t spawn_worker(int idx, unsigned int gen)
{
	pid_t parent = getpid(), pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
		worker_main(idx, gen, parent);
	return pid;
}

/* SIGKILL every process whose parent we are (orphans come to us). */
static int kill_our_children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[300], buf[512], *p;
		int fd, ppid;
		ssize_t len;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		/* pid (comm) state ppid ...; comm may hold anything */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == getpid()) {
			kill(atoi(de->d_name), SIGKILL);
			n++;
		}
	}
	closedir(d);
	return n;
}

struct reaped {
	unsigned int workers, orphans, bad;
	uint64_t last;		/* when the last one went */
};

static void reap(struct worker *w, int nw, pid_t pid, int status, struct reaped *rp)
{
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	int i;

	for (i = 0; i < nw && w[i].pid != pid; i++)
		;
	if (i < nw) {
		ok |= WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && w[i].killed;
		w[i].pid = 0;
		rp->workers++;
	} else {
		/* A child whose worker died first: it ends by itself, or
		 * was SIGKILLed by that worker just before. */
		ok |= WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		rp->orphans++;
	}
	if (!ok) {
		rp->bad++;
		failv(i < nw ? "worker" : "orphaned child", status, "exited badly (wait status)");
	}
	rp->last = now_ns();
}

FIXTURE(race) {
	long old_bytes, old_chans, old_user;
	bool saved;
};

FIXTURE_SETUP(race)
{
	self->saved = false;
}

FIXTURE_TEARDOWN(race)
{
	if (!self->saved)
		return;
	lz_write_long(LZ_PARAMS "max_channel_bytes", self->old_bytes);
	lz_write_long(LZ_PARAMS "max_channels", self->old_chans);
	lz_write_long(LZ_PARAMS "max_user_bytes", self->old_user);
}

TEST_F_TIMEOUT(race, hammer, RACE_TIMEOUT)
{
	struct worker w[MAX_PROCS] = { 0 };
	struct reaped rp = { 0 };
	unsigned int respawns = 0, kills = 0, stragglers = 0, gen = 1;
	long secs, procs, ch0, pg0, ch1, pg1;
	uint64_t start, next_kill, t, limit;
	const char *env;
	int i, status;
	pid_t pid;

	LZ_NEED_DEV();
	page = sysconf(_SC_PAGESIZE);
	secs = env_long("LZCHAN_RACE_SECONDS", DEF_SECONDS, 1, MAX_SECONDS);
	procs = env_long("LZCHAN_RACE_PROCS", DEF_PROCS, 1, MAX_PROCS);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	env = getenv("LZCHAN_RACE_SEED");
	sh->seed = env && *env ? strtoull(env, NULL, 0) :
		   (uint64_t)time(NULL) * 2654435761u + getpid();
	ksft_print_msg("LZCHAN_RACE_SEED=%llu LZCHAN_RACE_SECONDS=%ld LZCHAN_RACE_PROCS=%ld\n",
		       (unsigned long long)sh->seed, secs, procs);
	seed_thread(0, 0);
	/* "race.<pid>.": nobody else's channels are ever touched. */
	snprintf(sh->prefix, sizeof(sh->prefix), "race.%d.", getpid());
	for (i = 0; i < NNAMES; i++)
		lz_setname(sh->names[i], lz_name("race"));
	/* libchan must never fall back to /dev/shm files here. */
	setenv("LZCHAN_BACKEND", "dev", 1);

	ch0 = lz_read_long(LZ_SYSFS "channels");
	pg0 = lz_read_long(LZ_SYSFS "pages");
	ASSERT_LE(0, ch0);
	ASSERT_LE(0, pg0);
	self->old_bytes = lz_read_long(LZ_PARAMS "max_channel_bytes");
	self->old_chans = lz_read_long(LZ_PARAMS "max_channels");
	self->old_user = lz_read_long(LZ_PARAMS "max_user_bytes");
	ASSERT_LT(0, self->old_bytes);
	ASSERT_LT(0, self->old_chans);
	ASSERT_LT(0, self->old_user);
	self->saved = true;
	/*
	 * Low limits, so that the refusals (ENOSPC, EFBIG, EDQUOT) race
	 * with everything else too.  Unlinked channels still open count
	 * against max_channels; the pages already held, against ours.
	 */
	ASSERT_EQ(0, lz_write_long(LZ_PARAMS "max_channel_bytes", MAX_CHAN_BYTES));
	ASSERT_EQ(0, lz_write_long(LZ_PARAMS "max_channels", ch0 + EXTRA_CHANS));
	ASSERT_EQ(0, lz_write_long(LZ_PARAMS "max_user_bytes", pg0 * page + EXTRA_USER));
	/* Children orphaned by a dying worker come to us to be reaped. */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));

	/* From here on no ASSERT until every process is gone. */
	start = now_ns();
	sh->deadline = start + secs * NSEC;
	for (i = 0; i < procs; i++) {
		w[i].pid = spawn_worker(i, gen++);
		if (w[i].pid < 0) {
			fail("fork (worker)", -errno, "");
			w[i].pid = 0;
		}
	}

	/*
	 * While the run lasts: reap, replace workers that died (their own
	 * _exit() or our SIGKILL), and now and then SIGKILL one, threads
	 * and all, in the middle of whatever it is doing.
	 */
	next_kill = start + (200 + below(800)) * MSEC;
	while ((t = now_ns()) < sh->deadline) {
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			reap(w, procs, pid, status, &rp);
		for (i = 0; i < procs; i++) {
			if (w[i].pid || sh->deadline - t < 300 * MSEC)
				continue;
			w[i].killed = false;
			w[i].pid = spawn_worker(i, gen++);
			if (w[i].pid < 0)
				w[i].pid = 0;
			else
				respawns++;
		}
		if (t >= next_kill && sh->deadline - t > 500 * MSEC) {
			i = below(procs);
			if (w[i].pid && !w[i].killed) {
				w[i].killed = true;
				kill(w[i].pid, SIGKILL);
				kills++;
			}
			next_kill = t + (200 + below(800)) * MSEC;
		}
		usleep(10000);
	}

	/* Every process must stop by itself soon after the deadline. */
	limit = sh->deadline + MARGIN_S * NSEC;
	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid > 0) {
			reap(w, procs, pid, status, &rp);
			continue;
		}
		if (pid < 0)
			break;		/* ECHILD: nobody left */
		if (now_ns() > limit) {
			/* Whoever is left is a straggler: kill, and fail. */
			for (i = 0; i < procs; i++) {
				if (w[i].pid) {
					w[i].killed = true;
					kill(w[i].pid, SIGKILL);
				}
			}
			stragglers = kill_our_children();
			if (!stragglers)
				stragglers = 1;
			/* Their children come to us as they die: again. */
			while ((pid = waitpid(-1, &status, WNOHANG)) >= 0) {
				if (pid > 0) {
					reap(w, procs, pid, status, &rp);
					continue;
				}
				kill_our_children();
				usleep(10000);
			}
			break;
		}
		usleep(10000);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0);

	for (i = 0; i < NNAMES; i++) {
		int r = lz_unlink(sh->names[i]);

		EXPECT_TRUE(r == 0 || r == -ENOENT) TH_LOG("unlink %s: %d", sh->names[i], r);
		EXPECT_EQ(0, lz_list_has(sh->names[i]));
	}
	ch1 = lz_read_long(LZ_SYSFS "channels");
	pg1 = lz_read_long(LZ_SYSFS "pages");

	ksft_print_msg("%.1f s: %u workers (%u respawned, %u SIGKILLed), %u orphans reaped, "
		       "last exit %.2f s after the deadline\n",
		       (now_ns() - start) / 1e9, rp.workers, respawns, kills, rp.orphans,
		       rp.last > sh->deadline ? (rp.last - sh->deadline) / 1e9 : 0.0);
	{
		char line[1024];
		int len = 0;

		for (i = 0; i < ST_NR; i++) {
			len += snprintf(line + len, sizeof(line) - len, " %s=%lu",
					st_names[i], sh->st[i]);
			if (len > 90 || i == ST_NR - 1) {
				ksft_print_msg("%s\n", line);
				len = 0;
			}
		}
	}
	for (i = 0; i < (int)sh->fails && i < NLOG; i++) {
		struct race_fail *f = &sh->log[i];

		if (f->is_val)
			TH_LOG("pid %d: %s: value %ld (%#lx): %s", f->pid, f->op,
			       f->val, f->val, f->why);
		else
			TH_LOG("pid %d: %s: returned %ld%s%s: %s", f->pid, f->op, f->val,
			       f->val < 0 ? ", " : "", f->val < 0 ? strerror(-f->val) : "",
			       f->why);
	}

	EXPECT_EQ(0, stragglers) TH_LOG("processes still running %d s after the deadline",
					MARGIN_S);
	EXPECT_EQ(0, rp.bad);
	EXPECT_EQ(0, sh->fails) TH_LOG("seed %llu", (unsigned long long)sh->seed);
	/* Not a vacuous run: the calls did get through (a run shorter than
	 * the default on a slow kernel may do too little to tell). */
	if (secs >= DEF_SECONDS) {
		EXPECT_LT(0, sh->st[ST_CREATED]);
		EXPECT_LT(0, sh->st[ST_OPENED]);
		EXPECT_LT(0, sh->st[ST_MAPPED]);
		EXPECT_LT(0, sh->st[ST_LIB_OPEN]);
		EXPECT_LT(0, sh->st[ST_FORK]);
	}
	/* Everything closed, unmapped, exited and unlinked: all returned. */
	EXPECT_EQ(ch0, ch1);
	EXPECT_EQ(pg0, pg1);
}

TEST_HARNESS_MAIN
