// SPDX-License-Identifier: GPL-2.0-only
/*
 * Channel memory cannot be pinned (issue 11, item 1).  A reference to a
 * page of channel memory taken by get_user_pages() -- vmsplice(), O_DIRECT
 * and AIO, io_uring's registered buffers, process_vm_readv/writev -- would
 * outlive the mapping it came from: a departed sender could read what the
 * next sender of its lane (with other credentials) writes there, or write
 * into it a message the receiver then takes for the new sender's.  Every
 * such attempt must fail (EFAULT), or be harmless: the takeover tests play
 * the attack through and check what the pipe and the receiver see.
 *
 * The O_DIRECT tests need a block device to read from; the VM rig attaches
 * a throttled one (qemu's I/O limits) and names it in LZCHAN_SLOW_DISK, its
 * limit in operations per second in LZCHAN_SLOW_DISK_IOPS.  Without it they
 * SKIP.
 */
#include <grp.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

#define UID_A	4301	/* the departing sender */
#define UID_B	4302	/* the sender who takes its lane over */

#define SLOT_SIZE	64
#define SLOT_COUNT	64	/* a lane of two pages: the line, 62 slots; 2 slots */

/* The slow disk: where the forged lane page lies, where the reads that
 * keep the throttled queue busy go (below it: never merged with it). */
#define DISK_FORGE_OFF	(7UL << 20)
#define DISK_PRIME_STEP	(64UL << 10)
#define DISK_PRIME_MAX	64
/* How long the pinned read is to wait behind them. */
#define SLOW_SECONDS	3

#define FORGED	"forged by the departed sender"

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Fault every page in, writably where @rw, changing nothing: GUP-fast,
 * the path that ignores VM_IO, only finds pages already mapped. */
static void touch(void *p, size_t len, int rw)
{
	volatile char *c = p;
	size_t off;

	for (off = 0; off < len; off += page_size()) {
		char v = c[off];

		if (rw)
			c[off] = v;
	}
}

/* Drain a non-blocking pipe; the bytes read, at most @cap. */
static ssize_t drain(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
		got += n;
	return got;
}

static int drop_to(uid_t uid)
{
	gid_t gid = uid;

	return setgroups(0, NULL) || setresgid(gid, gid, gid) ||
	       setresuid(uid, uid, uid) ? -1 : 0;
}

static const char *slow_disk(void)
{
	const char *d = getenv("LZCHAN_SLOW_DISK");

	return d && *d ? d : NULL;
}

/* Reads that fill the slow disk's queue for about SLOW_SECONDS. */
static int prime_count(void)
{
	const char *e = getenv("LZCHAN_SLOW_DISK_IOPS");
	long iops = e ? strtol(e, NULL, 0) : 0;

	if (iops <= 0)
		iops = 10;
	return iops * SLOW_SECONDS > DISK_PRIME_MAX ? DISK_PRIME_MAX : iops * SLOW_SECONDS;
}

/* ---- AIO and io_uring, by raw system call (no libaio, no liburing) ---- */

static long sys_io_setup(unsigned int nr, aio_context_t *ctx)
{
	return syscall(__NR_io_setup, nr, ctx);
}

static long sys_io_destroy(aio_context_t ctx)
{
	return syscall(__NR_io_destroy, ctx);
}

static long sys_io_submit(aio_context_t ctx, long nr, struct iocb **iocbs)
{
	return syscall(__NR_io_submit, ctx, nr, iocbs);
}

static long sys_io_getevents(aio_context_t ctx, long min, long nr,
			     struct io_event *ev, struct timespec *ts)
{
	return syscall(__NR_io_getevents, ctx, min, nr, ev, ts);
}

static void iocb_rw(struct iocb *cb, int cmd, int fd, void *buf, size_t len,
		    off_t off, __u64 data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = cmd;
	cb->aio_fildes = fd;
	cb->aio_buf = (__u64)(uintptr_t)buf;
	cb->aio_nbytes = len;
	cb->aio_offset = off;
	cb->aio_data = data;
}

/*
 * One AIO request, waited for: its result (bytes, or -errno as the
 * completion or io_submit() reported it).
 */
static long aio_one(aio_context_t ctx, int cmd, int fd, void *buf, size_t len, off_t off)
{
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;

	iocb_rw(&cb, cmd, fd, buf, len, off, 1);
	if (sys_io_submit(ctx, 1, cbs) != 1)
		return -errno;
	if (sys_io_getevents(ctx, 1, 1, &ev, NULL) != 1)
		return -errno;
	return ev.res;
}

static int uring_setup(void)
{
	struct io_uring_params p;
	int fd;

	memset(&p, 0, sizeof(p));
	fd = syscall(__NR_io_uring_setup, 4, &p);
	return fd < 0 ? -errno : fd;
}

static int uring_register(int fd, unsigned int op, void *arg, unsigned int nr)
{
	return syscall(__NR_io_uring_register, fd, op, arg, nr) < 0 ? -errno : 0;
}

/* ---- the channel ---- */

FIXTURE(chan) {
	char name[LZCHAN_NAME_SIZE];
	int rx;
	struct lzchan_layout l;
	struct lzchan_shm_lane *lanes;	/* the receiver's view of the info area */
	void *info;
};

/* One lane, so that a new sender necessarily gets the old one's; anyone
 * may open it (the takeover switches uids). */
FIXTURE_SETUP(chan)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_info in;

	self->rx = -1;
	if (access(LZCHAN_DEVICE_PATH, F_OK))
		return;		/* the test body skips (LZ_NEED_DEV) */
	g.slot_size = SLOT_SIZE;
	g.slot_count = SLOT_COUNT;
	g.max_senders = 1;
	g.mode = 0666;
	lz_setname(self->name, lz_name("pin"));
	ASSERT_EQ(0, lz_create(self->name, g));
	self->rx = lz_open(self->name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, self->rx);
	ASSERT_EQ(0, lz_info(self->rx, &in));
	self->l = in.layout;
	ASSERT_EQ(2 * page_size(), self->l.lane_size);
	self->info = lz_map(self->rx, self->l.info_off, self->l.info_size, PROT_READ);
	ASSERT_NE(NULL, self->info);
	self->lanes = (void *)((char *)self->info + self->l.info_lanes);
}

FIXTURE_TEARDOWN(chan)
{
	if (self->info)
		munmap(self->info, self->l.info_size);
	if (self->rx >= 0)
		close(self->rx);
	if (self->name[0])
		lz_unlink(self->name);
}

struct area {
	const char *what;
	int fd;
	__u64 off, size;
	int prot;
};

/* Every area each role may map, with the protection it may map it with. */
static int areas(const struct lzchan_layout *l, int rx, int tx, struct area *a)
{
	int n = 0;

	a[n++] = (struct area){ "receiver: info", rx, l->info_off, l->info_size, PROT_READ };
	a[n++] = (struct area){ "receiver: rx", rx, l->rx_off, l->rx_size, PROT_READ | PROT_WRITE };
	a[n++] = (struct area){ "receiver: bell", rx, l->bell_off, l->bell_size, PROT_READ };
	a[n++] = (struct area){ "receiver: lane 0", rx, l->lanes_off, l->lane_size, PROT_READ };
	a[n++] = (struct area){ "sender: info", tx, l->info_off, l->info_size, PROT_READ };
	/* One lane: the sender's rx page is lane 0's; it maps no bell. */
	a[n++] = (struct area){ "sender: own rx page", tx, l->rx_off + l->rx_lanes,
				(__u64)page_size(), PROT_READ };
	a[n++] = (struct area){ "sender: own lane", tx, l->lanes_off, l->lane_size, PROT_READ | PROT_WRITE };
	return n;
}

/* vmsplice() takes references to the pages it puts in the pipe. */
TEST_F(chan, vmsplice_refused)
{
	struct area a[8];
	struct iovec iov;
	char *anon, buf[64];
	int p[2], tx, i, n, e;
	long ps = page_size();

	LZ_NEED_DEV();
	tx = lz_open(self->name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);
	ASSERT_EQ(0, pipe2(p, O_NONBLOCK | O_CLOEXEC));

	/* Ordinary memory splices: the refusals below are channel memory's. */
	anon = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	strcpy(anon, "ordinary");
	iov = (struct iovec){ anon, ps };
	ASSERT_EQ(ps, vmsplice(p[1], &iov, 1, 0));
	ASSERT_EQ(sizeof(buf), drain(p[0], buf, sizeof(buf)));
	EXPECT_STREQ("ordinary", buf);
	while (drain(p[0], buf, sizeof(buf)) > 0)
		;

	n = areas(&self->l, self->rx, tx, a);
	for (i = 0; i < n; i++) {
		char *m = lz_map(a[i].fd, a[i].off, a[i].size, a[i].prot);
		ssize_t r;

		ASSERT_NE(NULL, m) TH_LOG("%s: mmap: %s", a[i].what, strerror(errno));
		touch(m, a[i].size, a[i].prot & PROT_WRITE);
		iov = (struct iovec){ m, ps };
		r = vmsplice(p[1], &iov, 1, 0);
		e = r < 0 ? errno : 0;
		EXPECT_EQ(-1, r) TH_LOG("%s: vmsplice put %zd bytes of channel memory in a pipe",
					a[i].what, r);
		EXPECT_EQ(EFAULT, e) TH_LOG("%s: %s", a[i].what, strerror(e));
		/* Nothing of it is in the pipe. */
		EXPECT_EQ(0, drain(p[0], buf, sizeof(buf))) TH_LOG("%s", a[i].what);
		munmap(m, a[i].size);
	}
	munmap(anon, ps);
	close(p[0]);
	close(p[1]);
	close(tx);
}

/* ---- the takeover ---- */

/* What sender A reports: first after it left, then once its AIO is done. */
struct a_report {
	int step;		/* the step that failed, 0 if none */
	int err;		/* its errno */
	long vmsplice;		/* vmsplice()'s result, or -errno */
	long submit;		/* io_submit() of the lane read: 1, or -errno */
	long aio_res;		/* the lane read's completion: bytes or -errno */
	double aio_done;	/* when A saw that completion (CLOCK_MONOTONIC) */
};

struct takeover {
	const char *name;
	const struct lzchan_layout *l;
	const char *disk;	/* NULL: no O_DIRECT part */
	int splice_w;		/* the pipe's write end, for A */
	int report_w;		/* A's reports to the parent */
};

static void a_say(int fd, const struct a_report *r)
{
	if (write(fd, r, sizeof(*r)) != sizeof(*r))
		_exit(3);
}

/*
 * Sender A: attach, map the lane, try to keep its first page (a vmsplice()
 * into the parent's pipe; an O_DIRECT read into it from the slow disk,
 * queued behind enough reads to land seconds later), then leave: unmap,
 * close, report.  Then wait for the read and report how it ended.
 */
static void sender_a(const struct takeover *t)
{
	struct a_report r = { .vmsplice = -ENOSYS, .submit = -ENOSYS, .aio_res = -ENOSYS };
	struct iocb prime[DISK_PRIME_MAX], target, *cbs[DISK_PRIME_MAX];
	struct io_event ev[DISK_PRIME_MAX + 1];
	aio_context_t ctx = 0;
	int fd, disk = -1, nprime = 0, i, pending = 0;
	long ps = page_size();
	struct iovec iov;
	cpu_set_t cpu;
	char *lane;
	void *buf = NULL;
	__u32 lane_no;

#define A_FAIL(s) do { r.step = (s); r.err = errno; a_say(t->report_w, &r); _exit(1); } while (0)
	/* One CPU: the reads go down one queue, in the order submitted. */
	CPU_ZERO(&cpu);
	CPU_SET(0, &cpu);
	sched_setaffinity(0, sizeof(cpu), &cpu);
	fd = lz_open(t->name, LZCHAN_OPEN_SENDER, &lane_no);
	if (fd < 0 || lane_no != 0)
		A_FAIL(1);
	lane = lz_map(fd, t->l->lanes_off, t->l->lane_size, PROT_READ | PROT_WRITE);
	if (!lane)
		A_FAIL(2);
	touch(lane, t->l->lane_size, 1);
	if (t->disk) {
		disk = open(t->disk, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (disk < 0 || posix_memalign(&buf, ps, ps) || sys_io_setup(128, &ctx))
			A_FAIL(3);
		nprime = prime_count();
	}
	/* The rest as an ordinary user. */
	if (drop_to(UID_A))
		A_FAIL(4);

	if (t->disk) {
		for (i = 0; i < nprime; i++) {
			iocb_rw(&prime[i], IOCB_CMD_PREAD, disk, buf, ps,
				(i + 1) * DISK_PRIME_STEP, i + 1);
			cbs[i] = &prime[i];
		}
		/* Its own call: the lane read queues behind all of these. */
		if (sys_io_submit(ctx, nprime, cbs) != nprime)
			A_FAIL(5);
		pending = nprime;
		iocb_rw(&target, IOCB_CMD_PREAD, disk, lane, ps, DISK_FORGE_OFF, 0);
		cbs[0] = &target;
		r.submit = sys_io_submit(ctx, 1, cbs) == 1 ? 1 : -errno;
		if (r.submit == 1)
			pending++;
	}
	iov = (struct iovec){ lane, ps };
	r.vmsplice = vmsplice(t->splice_w, &iov, 1, 0);
	if (r.vmsplice < 0)
		r.vmsplice = -errno;
	close(t->splice_w);

	/* Leave: the lane closes with the last reference to this file. */
	if (munmap(lane, t->l->lane_size))
		A_FAIL(6);
	close(fd);
	a_say(t->report_w, &r);

	while (pending > 0) {
		long n = sys_io_getevents(ctx, 1, pending, ev, NULL);

		if (n <= 0)
			A_FAIL(7);
		for (i = 0; i < n; i++) {
			if (ev[i].data == 0) {
				r.aio_res = ev[i].res;
				r.aio_done = now();
			}
		}
		pending -= n;
	}
	a_say(t->report_w, &r);
	_exit(0);
#undef A_FAIL
}

/*
 * Sender B, another user: attach (to the lane A left: the only one), find
 * it scrubbed, send @n messages, report on @rep_w, then stay until the
 * parent writes a byte to @go_r.
 */
static void sender_b(const struct takeover *t, const char *secret, int n, int rep_w, int go_r)
{
	char *lane, c = 0;
	__u32 lane_no, p, i;
	int fd;

	if (drop_to(UID_B))
		_exit(10);
	fd = lz_open(t->name, LZCHAN_OPEN_SENDER, &lane_no);
	if (fd < 0)
		_exit(fd == -EUSERS ? 11 : 12);
	if (lane_no != 0)
		_exit(13);
	lane = lz_map(fd, t->l->lanes_off, t->l->lane_size, PROT_READ | PROT_WRITE);
	if (!lane)
		_exit(14);
	/* Scrubbed: no byte of the old sender's (its slots say "not ready"). */
	for (i = 0; i < t->l->lane_slots; i++)
		if (lane[i])
			_exit(15);
	for (p = 0; p < SLOT_COUNT; p++) {
		struct lzchan_slot_hdr *h = (void *)(lane + t->l->lane_slots + p * SLOT_SIZE);

		if (h->seq == p + 1 || h->len)
			_exit(16);
	}
	/* The raw protocol: payload and length, then seq with release. */
	for (p = 0; p < (__u32)n; p++) {
		struct lzchan_slot_hdr *h = (void *)(lane + t->l->lane_slots + p * SLOT_SIZE);
		struct lzchan_shm_tx *tx = (void *)lane;
		size_t len = strlen(secret);

		memcpy(h + 1, secret, len);
		h->len = len;
		__atomic_store_n(&h->seq, p + 1, __ATOMIC_RELEASE);
		tx->msgs++;
		tx->bytes += len;
		__atomic_store_n(&tx->tail, p + 1, __ATOMIC_RELEASE);
	}
	if (write(rep_w, &c, 1) != 1)
		_exit(17);
	if (read(go_r, &c, 1) < 0)
		_exit(18);
	_exit(0);
}

/*
 * The receiver reads lane 0 from position 0 with the raw protocol: every
 * ready message must be @secret, and there must be exactly @n.
 */
static int receive_all(struct __test_metadata *_metadata, int rx,
		       const struct lzchan_layout *l, const char *secret, int n)
{
	const char *lane = lz_map(rx, l->lanes_off, l->lane_size, PROT_READ);
	__u32 p;
	int bad = 0;

	if (!lane) {
		TH_LOG("receiver: mmap of lane 0: %s", strerror(errno));
		return -1;
	}
	for (p = 0; p < SLOT_COUNT; p++) {
		const struct lzchan_slot_hdr *h = (const void *)(lane + l->lane_slots + p * SLOT_SIZE);
		__u32 len;

		if (__atomic_load_n(&h->seq, __ATOMIC_ACQUIRE) != p + 1)
			break;
		len = h->len & LZCHAN_SLOT_LEN_MASK;
		if (p >= (__u32)n || len != strlen(secret) ||
		    memcmp(h + 1, secret, len)) {
			if (bad < 4)
				TH_LOG("receiver: message %u on lane 0 is not the sender's: %.*s",
				       p, (int)(len < SLOT_SIZE - 8 ? len : SLOT_SIZE - 8),
				       (const char *)(h + 1));
			bad++;
		}
	}
	if (p < (__u32)n) {
		TH_LOG("receiver: %u of the sender's %d messages on lane 0", p, n);
		bad++;
	}
	munmap((void *)lane, l->lane_size);
	return bad;
}

/* The lane page as A's slow read would write it: a run of ready messages. */
static int write_forgery(const char *disk)
{
	long ps = page_size();
	void *buf;
	__u32 p;
	int fd, ret = -1;

	if (posix_memalign(&buf, ps, ps))
		return -1;
	memset(buf, 0, ps);
	for (p = 0; (sizeof(struct lzchan_shm_tx) + (p + 1) * SLOT_SIZE) <= (size_t)ps; p++) {
		struct lzchan_slot_hdr *h = (void *)((char *)buf + sizeof(struct lzchan_shm_tx) +
						     p * SLOT_SIZE);

		h->seq = p + 1;
		h->len = strlen(FORGED);
		memcpy(h + 1, FORGED, strlen(FORGED));
	}
	fd = open(disk, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd >= 0 && pwrite(fd, buf, ps, DISK_FORGE_OFF) == ps)
		ret = 0;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static void takeover(struct __test_metadata *_metadata, FIXTURE_DATA(chan) *self,
		     const char *disk)
{
	struct takeover t = { .name = self->name, .l = &self->l, .disk = disk };
	struct lzchan_peer peer = { .size = sizeof(peer), .lane = 0 };
	struct a_report r;
	struct lzchan_shm_rx_lane *rxl;
	char secret[48], piped[2 * 4096], c = 'x', *rxa;
	int sp[2], rep[2], brep[2], bgo[2], st = 0, n = 2;
	double b_sent;
	pid_t a, b;
	ssize_t got;

	snprintf(secret, sizeof(secret), "secret of uid %d: %ld", UID_B,
		 (long)getpid() * 7919 + (long)time(NULL));
	if (disk)
		ASSERT_EQ(0, write_forgery(disk)) TH_LOG("writing %s: %s", disk, strerror(errno));
	ASSERT_EQ(0, pipe2(sp, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(rep, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(brep, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(bgo, O_CLOEXEC));
	t.splice_w = sp[1];
	t.report_w = rep[1];

	a = fork();
	ASSERT_LE(0, a);
	if (a == 0) {
		close(sp[0]);
		close(rep[0]);
		sender_a(&t);
	}
	close(sp[1]);
	close(rep[1]);
	ASSERT_EQ(0, fcntl(sp[0], F_SETFL, O_NONBLOCK));

	/* A has left. */
	ASSERT_EQ(sizeof(r), read(rep[0], &r, sizeof(r)));
	ASSERT_EQ(0, r.step) TH_LOG("sender A failed at step %d: %s", r.step, strerror(r.err));
	TH_LOG("departing sender: vmsplice %ld, O_DIRECT read submitted %ld",
	       r.vmsplice, r.submit);
	ASSERT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_CLOSED), self->lanes[0].status);

	/* The receiver is done with A's lane (A sent nothing) and says so,
	 * as libchan does: an attached receiver's acknowledgement is what
	 * lets the lane go to another sender. */
	rxa = lz_map(self->rx, self->l.rx_off, self->l.rx_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, rxa);
	rxl = (struct lzchan_shm_rx_lane *)(rxa + self->l.rx_lanes);
	/* Pairs with the module's smp_load_acquire(&close_ack). */
	__atomic_store_n(&rxl->close_ack, 1, __ATOMIC_RELEASE);
	munmap(rxa, self->l.rx_size);

	/* B takes the lane over and sends. */
	b = fork();
	ASSERT_LE(0, b);
	if (b == 0) {
		close(brep[0]);
		close(bgo[1]);
		sender_b(&t, secret, n, brep[1], bgo[0]);
	}
	close(brep[1]);
	close(bgo[0]);
	if (read(brep[0], &c, 1) != 1) {
		waitpid(b, &st, 0);
		kill(a, SIGKILL);
		waitpid(a, NULL, 0);
		ASSERT_TRUE(0) TH_LOG("sender B failed: status %#x (11: EUSERS, 15/16: lane not scrubbed)",
				      st);
	}
	b_sent = now();
	/* The kernel names B as the lane's sender. */
	ASSERT_EQ(0, lz_ioctl(self->rx, LZCHAN_IOC_PEER, &peer));
	EXPECT_EQ(UID_B, peer.uid);
	EXPECT_EQ(2, peer.gen);

	/* A's pipe: nothing of B's. */
	got = drain(sp[0], piped, sizeof(piped));
	EXPECT_EQ(NULL, memmem(piped, got, secret, strlen(secret)))
		TH_LOG("the departed sender's pipe holds the new sender's message (%zd bytes spliced)",
		       got);
	if (r.vmsplice >= 0)
		TH_LOG("vmsplice of the lane put %ld bytes in the pipe (it should fail: EFAULT)",
		       r.vmsplice);
	else
		EXPECT_EQ(-EFAULT, r.vmsplice);

	/* A's read has ended (A waited for it); the receiver sees only B's. */
	ASSERT_EQ(sizeof(r), read(rep[0], &r, sizeof(r)));
	ASSERT_EQ(0, r.step) TH_LOG("sender A failed at step %d: %s", r.step, strerror(r.err));
	if (disk) {
		if (r.aio_res > 0)
			TH_LOG("the O_DIRECT read into the departed lane: %ld bytes, %.2f s after the takeover",
			       r.aio_res, r.aio_done - b_sent);
		else
			TH_LOG("the O_DIRECT read into the departed lane: %s",
			       strerror(-(r.submit == 1 ? r.aio_res : r.submit)));
		/* Refused at submission, or in its completion. */
		EXPECT_TRUE(r.submit == -EFAULT || r.aio_res == -EFAULT || r.aio_res > 0)
			TH_LOG("submit %ld, result %ld", r.submit, r.aio_res);
		/* A read that pinned the page must land after B sent, or this
		 * test proves nothing: the slow disk was not slow enough. */
		if (r.aio_res > 0)
			EXPECT_LT(b_sent, r.aio_done);
	}
	EXPECT_EQ(0, receive_all(_metadata, self->rx, &self->l, secret, n));

	ASSERT_EQ(1, write(bgo[1], &c, 1));
	ASSERT_EQ(b, waitpid(b, &st, 0));
	EXPECT_EQ(0, st);
	ASSERT_EQ(a, waitpid(a, &st, 0));
	EXPECT_EQ(0, st);
	close(bgo[1]);
	close(brep[0]);
	close(rep[0]);
	close(sp[0]);
}

/*
 * A sender splices its lane's first page into a pipe and leaves; a sender
 * of another uid takes the lane over and sends: the pipe must not hold the
 * new sender's message.
 */
TEST_F(chan, takeover_vmsplice)
{
	LZ_NEED_DEV();
	takeover(_metadata, self, NULL);
}

/*
 * The same, and the departing sender also queues an O_DIRECT AIO read
 * into its lane from the slow disk, to land seconds after the takeover
 * with a page of ready-looking messages: the receiver must see exactly
 * the new sender's messages.
 */
TEST_F(chan, takeover_slow_odirect)
{
	LZ_NEED_DEV();
	if (!slow_disk())
		SKIP(return, "no slow disk (LZCHAN_SLOW_DISK: the VM rig's)");
	takeover(_metadata, self, slow_disk());
}

/* io_uring's registered buffers are long-term pins. */
TEST_F(chan, io_uring_register_refused)
{
	struct area a[8];
	struct iovec iov;
	long ps = page_size();
	char *anon;
	int ring, tx, i, n, r;

	LZ_NEED_DEV();
	ring = uring_setup();
	if (ring == -ENOSYS || ring == -EPERM)
		SKIP(return, "io_uring unavailable (%s)", strerror(-ring));
	ASSERT_LE(0, ring) TH_LOG("io_uring_setup: %s", strerror(-ring));
	tx = lz_open(self->name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);

	/* Ordinary memory registers. */
	anon = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	iov = (struct iovec){ anon, ps };
	ASSERT_EQ(0, uring_register(ring, IORING_REGISTER_BUFFERS, &iov, 1));
	ASSERT_EQ(0, uring_register(ring, IORING_UNREGISTER_BUFFERS, NULL, 0));

	/* Registered buffers are written to: the writable areas. */
	n = areas(&self->l, self->rx, tx, a);
	for (i = 0; i < n; i++) {
		char *m;

		if (!(a[i].prot & PROT_WRITE))
			continue;
		m = lz_map(a[i].fd, a[i].off, a[i].size, a[i].prot);
		ASSERT_NE(NULL, m) TH_LOG("%s: mmap: %s", a[i].what, strerror(errno));
		touch(m, a[i].size, 1);
		iov = (struct iovec){ m, a[i].size };
		r = uring_register(ring, IORING_REGISTER_BUFFERS, &iov, 1);
		EXPECT_NE(0, r) TH_LOG("%s: registered as an io_uring buffer", a[i].what);
		if (!r)
			uring_register(ring, IORING_UNREGISTER_BUFFERS, NULL, 0);
		else
			EXPECT_TRUE(r == -EFAULT || r == -EOPNOTSUPP)
				TH_LOG("%s: %s", a[i].what, strerror(-r));
		munmap(m, a[i].size);
	}
	munmap(anon, ps);
	close(tx);
	close(ring);
}

/*
 * Another process's lane mapping is out of reach of process_vm_readv()
 * and process_vm_writev(), which pin the remote pages.
 */
struct remote {
	__u64 lane, anon;
};

#define REMOTE_MARK	"lane marker"

static void remote_child(const char *name, const struct lzchan_layout *l, int rep_w, int go_r)
{
	struct remote r;
	char *lane, *anon, c;
	int fd;

	fd = lz_open(name, LZCHAN_OPEN_SENDER, NULL);
	if (fd < 0)
		_exit(1);
	lane = lz_map(fd, l->lanes_off, l->lane_size, PROT_READ | PROT_WRITE);
	anon = mmap(NULL, page_size(), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!lane || anon == MAP_FAILED)
		_exit(2);
	/* In the tx line's padding: not a message. */
	strcpy(lane + offsetof(struct lzchan_shm_tx, pad1), REMOTE_MARK);
	strcpy(anon, "anon marker");
	r.lane = (uintptr_t)lane;
	r.anon = (uintptr_t)anon;
	if (write(rep_w, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	if (read(go_r, &c, 1) != 1)
		_exit(4);
	/* Untouched by the parent's writev. */
	if (strcmp(lane + offsetof(struct lzchan_shm_tx, pad1), REMOTE_MARK))
		_exit(5);
	_exit(0);
}

TEST_F(chan, process_vm_refused)
{
	char buf[32] = "", junk[32] = "from the other process";
	struct iovec local, remote;
	struct remote r;
	int rep[2], go[2], st, e;
	ssize_t n;
	pid_t pid;

	LZ_NEED_DEV();
	ASSERT_EQ(0, pipe2(rep, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(rep[0]);
		close(go[1]);
		remote_child(self->name, &self->l, rep[1], go[0]);
	}
	close(rep[1]);
	close(go[0]);
	ASSERT_EQ(sizeof(r), read(rep[0], &r, sizeof(r)));

	/* The child's ordinary memory is readable: the syscall works here. */
	local = (struct iovec){ buf, sizeof(buf) };
	remote = (struct iovec){ (void *)(uintptr_t)r.anon, sizeof(buf) };
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0 && errno == ENOSYS) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		SKIP(return, "process_vm_readv unavailable (CROSS_MEMORY_ATTACH)");
	}
	ASSERT_EQ(sizeof(buf), n) TH_LOG("process_vm_readv of ordinary memory: %s",
					 strerror(errno));
	EXPECT_STREQ("anon marker", buf);

	memset(buf, 0, sizeof(buf));
	remote = (struct iovec){ (void *)(uintptr_t)(r.lane + offsetof(struct lzchan_shm_tx, pad1)),
				 sizeof(buf) };
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	e = n < 0 ? errno : 0;
	EXPECT_EQ(-1, n) TH_LOG("process_vm_readv read %zd bytes of another process's lane", n);
	EXPECT_EQ(EFAULT, e) TH_LOG("%s", strerror(e));
	EXPECT_EQ(NULL, memmem(buf, sizeof(buf), REMOTE_MARK, strlen(REMOTE_MARK)));

	local = (struct iovec){ junk, sizeof(junk) };
	n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
	e = n < 0 ? errno : 0;
	EXPECT_EQ(-1, n) TH_LOG("process_vm_writev wrote %zd bytes into another process's lane", n);
	EXPECT_EQ(EFAULT, e) TH_LOG("%s", strerror(e));

	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(0, st) TH_LOG("child: status %#x (5: its lane was written)", st);
	close(rep[0]);
	close(go[1]);
}

/*
 * O_DIRECT, synchronous and by AIO, reads into and writes from the pages
 * it is given.  Into or out of a lane it must fail: EFAULT.
 */
TEST_F(chan, odirect_refused)
{
	struct iocb cb, *cbs[1] = { &cb };
	aio_context_t ctx = 0;
	long ps = page_size(), res;
	struct io_event ev;
	int disk, tx, e;
	char *lane;
	void *buf;

	LZ_NEED_DEV();
	if (!slow_disk())
		SKIP(return, "no slow disk (LZCHAN_SLOW_DISK: the VM rig's)");
	disk = open(slow_disk(), O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, disk) TH_LOG("%s: %s", slow_disk(), strerror(errno));
	if (sys_io_setup(8, &ctx) && errno == ENOSYS)
		SKIP(return, "no AIO (io_setup: ENOSYS)");
	ASSERT_NE(0, ctx) TH_LOG("io_setup: %s", strerror(errno));
	ASSERT_EQ(0, posix_memalign(&buf, ps, ps));
	tx = lz_open(self->name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);
	lane = lz_map(tx, self->l.lanes_off, self->l.lane_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, lane);
	touch(lane, self->l.lane_size, 1);

	/* Ordinary memory: both ways, both kinds. */
	memset(buf, 0x5a, ps);
	ASSERT_EQ(ps, pwrite(disk, buf, ps, 0)) TH_LOG("O_DIRECT pwrite: %s", strerror(errno));
	ASSERT_EQ(ps, pread(disk, buf, ps, 0));
	ASSERT_EQ(ps, aio_one(ctx, IOCB_CMD_PREAD, disk, buf, ps, 0));
	ASSERT_EQ(ps, aio_one(ctx, IOCB_CMD_PWRITE, disk, buf, ps, 0));

	/* The lane. */
	res = pread(disk, lane, ps, 0);
	e = res < 0 ? errno : 0;
	EXPECT_EQ(-1, res) TH_LOG("O_DIRECT pread into the lane: %ld", res);
	EXPECT_EQ(EFAULT, e) TH_LOG("%s", strerror(e));
	res = pwrite(disk, lane + ps, ps, 0);
	e = res < 0 ? errno : 0;
	EXPECT_EQ(-1, res) TH_LOG("O_DIRECT pwrite from the lane: %ld", res);
	EXPECT_EQ(EFAULT, e) TH_LOG("%s", strerror(e));
	res = aio_one(ctx, IOCB_CMD_PREAD, disk, lane, ps, 0);
	EXPECT_EQ(-EFAULT, res) TH_LOG("AIO O_DIRECT read into the lane: %ld", res);
	res = aio_one(ctx, IOCB_CMD_PWRITE, disk, lane + ps, ps, 0);
	EXPECT_EQ(-EFAULT, res) TH_LOG("AIO O_DIRECT write from the lane: %ld", res);
	/* The lane still reads as the module left it: nothing came in. */
	EXPECT_EQ(0, lane[0]);

	/* Nothing left in flight. */
	iocb_rw(&cb, IOCB_CMD_PREAD, disk, buf, ps, 0, 9);
	ASSERT_EQ(1, sys_io_submit(ctx, 1, cbs));
	ASSERT_EQ(1, sys_io_getevents(ctx, 1, 1, &ev, NULL));
	EXPECT_EQ(9, ev.data);
	munmap(lane, self->l.lane_size);
	close(tx);
	sys_io_destroy(ctx);
	free(buf);
	close(disk);
}

TEST_HARNESS_MAIN
