// SPDX-License-Identifier: GPL-2.0-only
/*
 * A hostile peer: while the receiver polls, another process writes random
 * bytes, and forged headers that look ready (right seq, wrong len, pads in
 * the wrong place), over everything a sender may write: its lane and the
 * bell.  The receiver must return valid messages or errors -- never crash,
 * never read outside the ring (this test also runs under AddressSanitizer
 * and UndefinedBehaviorSanitizer).  And the other way round: a hostile
 * receiver against a sender (hostile_receiver).  LZCHAN_HOSTILE_ROUNDS
 * scales both (the second runs one round per 50 of the first's).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

static uint32_t rng = 0x12345678;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* The module's fd of the hostile sender: it rings its own lane's bell
 * bit (LZCHAN_IOC_RING), the one bell write it has. */
static int hostile_fd = -1;

/*
 * Map what a sender of @name may write, the way a client without libchan
 * would: its lane (the module's bell is read-only to everyone: *bell is
 * NULL, and the sender rings through hostile_fd).  Returns the lane base
 * (tx line), or NULL.
 */
static char *hostile_map(const char *name, struct lzchan_layout *l, uint64_t **bell,
			 uint32_t *lane, volatile uint32_t **head)
{
	struct lzchan_open o = { .size = sizeof(o), .flags = LZCHAN_OPEN_SENDER, .abi_version = LZCHAN_ABI_VERSION };
	struct lzchan_info in = { .size = sizeof(in) };
	char *p;
	int fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		strcpy(o.name, name);
		if (ioctl(fd, LZCHAN_IOC_OPEN, &o) || ioctl(fd, LZCHAN_IOC_INFO, &in))
			return NULL;
		*l = in.layout;
		*lane = o.lane;
		*bell = NULL;
		hostile_fd = fd;
		/* Our lane's rx page, all a sender may map of the rx area. */
		p = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd,
			 l->rx_off + l->rx_lanes + (uint64_t)o.lane * l->rx_lane_stride);
		if (p == MAP_FAILED)
			return NULL;
		/* The receiver's published head for our lane: where to forge. */
		*head = (volatile uint32_t *)p;
		p = mmap(NULL, l->lane_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 l->lanes_off + o.lane * l->lane_stride);
		return p == MAP_FAILED ? NULL : p;
	}
	return NULL;
}

/* shm: a sender through the library, then the whole file, by hand. */
static char *hostile_map_shm(const char *name, struct lzchan_layout *l, uint64_t **bell,
			     uint32_t lane, uint32_t slot_count, uint32_t slot_size,
			     uint32_t senders, volatile uint32_t **head)
{
	char path[128];
	long page = sysconf(_SC_PAGESIZE);
	uint64_t lanesz = ((128 + (uint64_t)slot_count * slot_size) + page - 1) / page * page;
	uint64_t info = ((128 + (uint64_t)senders * 64) + page - 1) / page * page;
	uint64_t rx = ((128 + (uint64_t)senders * 128) + page - 1) / page * page;
	uint64_t total = page + info + rx + page + lanesz * senders;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/lzchan.%s", name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	l->lane_slots = 128;
	l->lane_size = lanesz;
	*bell = (uint64_t *)(p + page + info + rx);
	*head = (volatile uint32_t *)(p + page + info + 128 + lane * 128);
	return p + page + info + rx + page + lane * lanesz;
}

static void scribble(char *lane, const struct lzchan_layout *l, uint64_t *bell,
		     uint32_t slot_count, uint32_t slot_size, volatile uint32_t *head)
{
	for (;;) {
		uint32_t what = rnd() % 8, s = rnd() % slot_count;
		struct lzchan_slot_hdr *h = (void *)(lane + l->lane_slots + (size_t)s * slot_size);
		uint32_t pos = head ? *head : rnd();

		switch (what) {
		case 0:		/* random bytes anywhere in the lane */
			lane[rnd() % l->lane_size] = rnd();
			break;
		case 1:		/* a "ready" header at the receiver's head, bad len */
			h = (void *)(lane + l->lane_slots + (size_t)(pos % slot_count) * slot_size);
			h->len = rnd() % 4 ? rnd() : slot_count * slot_size;
			__atomic_store_n(&h->seq, pos + 1, __ATOMIC_RELEASE);
			break;
		case 2:		/* a pad where none can be */
			h = (void *)(lane + l->lane_slots + (size_t)(pos % slot_count) * slot_size);
			h->len = LZCHAN_SLOT_PAD | rnd();
			__atomic_store_n(&h->seq, pos + 1, __ATOMIC_RELEASE);
			break;
		case 3:		/* a plausible message of random size */
			h = (void *)(lane + l->lane_slots + (size_t)(pos % slot_count) * slot_size);
			h->len = rnd() % (slot_count * slot_size);
			__atomic_store_n(&h->seq, pos + 1, __ATOMIC_RELEASE);
			break;
		case 4:		/* the bell (dev: our own bit, by the module) */
			if (bell)
				bell[0] ^= (uint64_t)rnd() << 32 | rnd();
			else if (hostile_fd >= 0)
				(void)ioctl(hostile_fd, LZCHAN_IOC_RING);
			break;
		case 5:		/* the statistics line */
			memset(lane, rnd(), 128);
			break;
		default:	/* random seq/len words */
			h->seq = rnd();
			h->len = rnd();
			break;
		}
	}
}

TEST(hostile_sender)
{
	const char *e = getenv("LZCHAN_HOSTILE_ROUNDS");
	unsigned int rounds = e ? strtoul(e, NULL, 0) : 1000, r;
	unsigned long valid = 0, errors = 0;
	static char buf[1 << 20];

	for (r = 0; r < rounds; r++) {
		uint32_t sizes[] = { 64, 128, 256 }, counts[] = { 2, 8, 64, 256 };
		uint32_t S = sizes[rnd() % 3], N = counts[rnd() % 4], lane = 0, i;
		struct lzchan_opts o;
		struct lzchan_geom g;
		struct lzchan *rx, *tx = NULL;
		struct lzchan_layout l;
		struct lzchan_msg m[8];
		uint64_t *bell = NULL;
		volatile uint32_t *head = NULL;
		char name[64], *map, c;
		int status, ret, ready[2];
		pid_t pid;

		snprintf(name, sizeof(name), "hostile.%d.%u", getpid(), r);
		lzchan_opts_init(&o);
		o.slot_size = S;
		o.slot_count = N;
		o.max_senders = 2;
		ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
		ASSERT_EQ(0, lzchan_geometry(rx, &g));

		ASSERT_EQ(0, pipe(ready));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			/* Never outlive the receiver (a crash there must not leave
			 * us scribbling, holding the test's output open). */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(4);
			rng ^= getpid();
			if (g.backend == LZCHAN_BACKEND_DEV) {
				map = hostile_map(name, &l, &bell, &lane, &head);
			} else {
				if (lzchan_open(&tx, name, LZCHAN_SENDER, NULL))
					_exit(2);
				lzchan_geometry(tx, &g);
				map = hostile_map_shm(name, &l, &bell, g.lane, N, S, 2, &head);
			}
			if (!map || write(ready[1], "r", 1) != 1)
				_exit(3);
			scribble(map, &l, bell, N, S, head);
		}
		close(ready[1]);
		ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("the scribbler could not map the lane");
		close(ready[0]);
		for (i = 0; i < 2000; i++) {
			uint32_t ln;

			switch (i % 4) {
			case 0:
				ret = lzchan_recv(rx, buf, rnd() % 2 ? sizeof(buf) : 16, &ln);
				break;
			case 1:
				ret = lzchan_recv_lane(rx, rnd() % 2, buf, sizeof(buf));
				break;
			case 2:
				ret = lzchan_peek(rx, &m[0]);
				if (!ret) {
					/* A view must lie inside what we may read. */
					ASSERT_GE(g.max_msg, m[0].len);
					memcpy(buf, m[0].data, m[0].len);
					lzchan_release(rx, &m[0]);
				}
				break;
			default:
				ret = lzchan_recv_batch(rx, m, 8);
				if (ret > 0) {
					int k;

					for (k = 0; k < ret; k++) {
						ASSERT_GE(g.max_msg, m[k].len);
						memcpy(buf, m[k].data, m[k].len);
					}
					lzchan_release(rx, &m[ret - 1]);
					ret = 0;
				}
				break;
			}
			if (ret >= 0) {
				ASSERT_GE(g.max_msg, (uint32_t)ret);
				valid++;
			} else {
				ASSERT_TRUE(ret == -EAGAIN || ret == -EBADMSG || ret == -EPIPE ||
					    ret == -EMSGSIZE || ret == -EINVAL) TH_LOG("ret %d", ret);
				errors += ret != -EAGAIN;
			}
		}
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("scribbler exited %d", WEXITSTATUS(status));
		lzchan_close(rx);
		lzchan_unlink(name);
	}
	TH_LOG("%u rounds: %lu messages or views, %lu errors, no crash", rounds, valid, errors);
}

/* ---- lanes a hostile sender burns ---- */

/*
 * A sender that attaches like any other, leaves a "ready" slot with a
 * length no message can have at the receiver's head (seq = position + 1,
 * len = max_msg + 1), and later closes.  dev: raw ioctls and mmap, as a
 * client without libchan would; shm: the library's sender for the lane
 * (its lock) and the file mapped by hand.
 */
struct burner {
	int fd;			/* dev: the bound file */
	struct lzchan *tx;	/* shm: holds the lane */
	void *map[2];
	size_t len[2];
	uint32_t lane;
	uint32_t S, N;		/* slot size and count */
	char *slots;		/* the lane's slots, writable */
	volatile uint32_t *rxl;	/* the receiver's published head for it */
};

/* Attach to a lane of @name and map what its sender may write. */
static int burner_attach(struct burner *b, const char *name, uint32_t backend)
{
	uint32_t S, N, senders;
	char *slots;
	volatile uint32_t *rxl;

	memset(b, 0, sizeof(*b));
	b->fd = -1;
	if (backend == LZCHAN_BACKEND_DEV) {
		struct lzchan_info in;
		int fd = lz_open(name, LZCHAN_OPEN_SENDER, &b->lane);

		if (fd < 0)
			return fd;
		b->fd = fd;
		if (lz_info(fd, &in))
			return -EPROTO;
		S = in.stat.slot_size;
		N = in.stat.slot_count;
		b->len[0] = in.layout.lane_size;
		b->map[0] = lz_map(fd, in.layout.lanes_off + b->lane * in.layout.lane_stride,
				   b->len[0], PROT_READ | PROT_WRITE);
		/* Our lane's rx page, all a sender may map of the rx area. */
		b->len[1] = sysconf(_SC_PAGESIZE);
		b->map[1] = lz_map(fd, in.layout.rx_off + in.layout.rx_lanes +
				   (uint64_t)b->lane * in.layout.rx_lane_stride, b->len[1], PROT_READ);
		if (!b->map[0] || !b->map[1])
			return -errno;
		slots = (char *)b->map[0] + in.layout.lane_slots;
		rxl = (volatile uint32_t *)b->map[1];
	} else {
		long page = sysconf(_SC_PAGESIZE);
		uint64_t info, rx, bell, lane;
		const char *dir = getenv("LZCHAN_SHM_DIR");
		struct lzchan_geom g;
		char path[256];
		struct stat st;
		int fd, r;

		r = lzchan_open(&b->tx, name, LZCHAN_SENDER, NULL);
		if (r)
			return r;
		lzchan_geometry(b->tx, &g);
		b->lane = g.lane;
		S = g.slot_size;
		N = g.slot_count;
		senders = g.max_senders;
		snprintf(path, sizeof(path), "%s/lzchan.%s", dir && *dir ? dir : "/dev/shm", name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st))
			return -errno;
		b->len[0] = st.st_size;
		b->map[0] = mmap(NULL, b->len[0], PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (b->map[0] == MAP_FAILED) {
			b->map[0] = NULL;
			return -errno;
		}
		/* The library's file: a header page, then the module's layout
		 * (lzchan_file.c, __lzchan_shm_layout()). */
#define PG(x) (((x) + page - 1) / page * page)
		info = PG(sizeof(struct lzchan_shm_hdr) + (uint64_t)senders * 64);
		rx = page + (uint64_t)senders * page;	/* a page a lane's rx words */
		bell = PG((senders + 63) / 64 * 8);
		lane = PG(sizeof(struct lzchan_shm_tx) + (uint64_t)N * S);
#undef PG
		if ((uint64_t)st.st_size < page + info + rx + bell + lane * senders)
			return -EPROTO;
		slots = (char *)b->map[0] + page + info + rx + bell + lane * b->lane +
			sizeof(struct lzchan_shm_tx);
		rxl = (volatile uint32_t *)((char *)b->map[0] + page + info + page +
					    (uint64_t)b->lane * page);
	}
	b->S = S;
	b->N = N;
	b->slots = slots;
	b->rxl = rxl;
	return 0;
}

/* The slot header of position @pos in the burner's lane. */
static struct lzchan_slot_hdr *burner_slot(const struct burner *b, uint32_t pos)
{
	return (struct lzchan_slot_hdr *)(b->slots + (size_t)(pos & (b->N - 1)) * b->S);
}

/* Say where the burner stands, as an honest sender does after each
 * message (the receiver holds a sender to it: lzchan_ring.c). */
static void burner_tail(const struct burner *b, uint32_t pos)
{
	struct lzchan_shm_tx *tx = (struct lzchan_shm_tx *)(b->slots - sizeof(struct lzchan_shm_tx));

	__atomic_store_n(&tx->tail, pos, __ATOMIC_RELAXED);
}

/* Attach, and leave garbage (a length no message can have) at the head. */
static int burner_open(struct burner *b, const char *name, uint32_t backend)
{
	struct lzchan_slot_hdr *h;
	uint32_t max_msg, head;
	int r = burner_attach(b, name, backend);

	if (r)
		return r;
	/* libchan's max_msg: one slot stays free for the "not ready" marker. */
	max_msg = (b->N - 1) * b->S - sizeof(*h);
	head = __atomic_load_n(b->rxl, __ATOMIC_ACQUIRE);
	h = burner_slot(b, head);
	__atomic_store_n(&h->len, max_msg + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->seq, head + 1, __ATOMIC_RELEASE);
	return 0;
}

static void burner_close(struct burner *b)
{
	int k;

	for (k = 0; k < 2; k++)
		if (b->map[k])
			munmap(b->map[k], b->len[k]);
	if (b->fd >= 0)
		close(b->fd);
	lzchan_close(b->tx);
	memset(b, 0, sizeof(*b));
	b->fd = -1;
}

/*
 * The receiver's next verdict other than "nothing": a message length,
 * -EBADMSG or -EPIPE (and *lane).  Waits in lzchan_recv_wait(), so the
 * parking path is what finds status changes; NO_EVENT when none came in
 * 30 s (a bound against hanging, far above what the slowest rig kernel
 * needs: nothing here waits for time to pass).
 */
#define NO_EVENT	INT32_MAX
static int next_event(struct lzchan *rx, uint32_t *lane, void *buf, size_t cap)
{
	int k, r;

	for (k = 0; k < 300; k++) {
		r = lzchan_recv_wait(rx, buf, cap, lane, 100000000);
		if (r != -ETIMEDOUT && r != -EAGAIN)
			return r;
	}
	return NO_EVENT;
}

/*
 * Every lane in @mask (burnt, its sender gone or going) must give
 * -EBADMSG, then its end (-EPIPE) exactly once; nothing else may come.
 * Returns the lanes whose end came.
 */
static uint32_t await_ends(struct __test_metadata *_metadata, struct lzchan *rx,
			   uint32_t mask, uint32_t bad_seen)
{
	uint32_t ended = 0, lane;
	char buf[64];
	int r;

	while (ended != mask) {
		lane = UINT32_MAX;
		r = next_event(rx, &lane, buf, sizeof(buf));
		if (r == NO_EVENT) {
			TH_LOG("lanes 0x%x: -EBADMSG seen 0x%x, end seen 0x%x; no more",
			       mask, bad_seen, ended);
			break;
		}
		ASSERT_GT(32, lane) TH_LOG("verdict %d without a lane", r);
		ASSERT_TRUE(mask & (1U << lane)) TH_LOG("verdict %d from lane %u", r, lane);
		if (r == -EBADMSG) {
			EXPECT_FALSE(ended & (1U << lane)) TH_LOG("lane %u: -EBADMSG after its end", lane);
			bad_seen |= 1U << lane;
		} else if (r == -EPIPE) {
			EXPECT_TRUE(bad_seen & (1U << lane)) TH_LOG("lane %u: end before -EBADMSG", lane);
			EXPECT_FALSE(ended & (1U << lane)) TH_LOG("lane %u: end twice", lane);
			ended |= 1U << lane;
		} else {
			ASSERT_EQ(-EBADMSG, r) TH_LOG("lane %u", lane);
		}
	}
	return ended;
}

struct honest_msg {
	uint32_t sender, n;
	char pad[92];		/* every other message spans two 64-byte slots */
};

/*
 * @senders honest senders must attach (one per lane: every lane), and
 * each one's @count messages arrive exactly once, in order.  Then they
 * leave and each lane's end comes once.
 */
static void honest_senders(struct __test_metadata *_metadata, const char *name,
			   struct lzchan *rx, uint32_t senders, uint32_t count)
{
	struct lzchan *tx[32], *extra;
	uint32_t lane_of[32], next[32] = { 0 }, lanes = 0, i, n, got = 0, lane;
	struct honest_msg msg;
	char buf[256];
	int r;

	for (i = 0; i < senders; i++) {
		struct lzchan_geom g;

		r = lzchan_open(&tx[i], name, LZCHAN_SENDER, NULL);
		ASSERT_EQ(0, r) TH_LOG("honest sender %u of %u: %s", i, senders, strerror(-r));
		ASSERT_EQ(0, lzchan_geometry(tx[i], &g));
		ASSERT_FALSE(lanes & (1U << g.lane));
		lanes |= 1U << g.lane;
		lane_of[i] = g.lane;
	}
	ASSERT_EQ(-EUSERS, lzchan_open(&extra, name, LZCHAN_SENDER, NULL));
	for (n = 0; n < count; n++)
		for (i = 0; i < senders; i++) {
			memset(&msg, 'a' + i, sizeof(msg));
			msg.sender = i;
			msg.n = n;
			ASSERT_EQ(0, lzchan_send(tx[i], &msg, n % 2 ? sizeof(msg) : 8));
		}
	while (got < senders * count) {
		r = next_event(rx, &lane, buf, sizeof(buf));
		ASSERT_TRUE(r == 8 || r == sizeof(msg)) TH_LOG("got %d after %u messages", r, got);
		memcpy(&msg, buf, 8);
		ASSERT_GT(senders, msg.sender);
		EXPECT_EQ(lane_of[msg.sender], lane);
		ASSERT_EQ(next[msg.sender], msg.n) TH_LOG("sender %u", msg.sender);
		EXPECT_EQ(msg.n % 2 ? sizeof(msg) : 8, (size_t)r);
		next[msg.sender]++;
		got++;
	}
	EXPECT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), &lane));
	for (i = 0; i < senders; i++)
		lzchan_close(tx[i]);
	for (i = 0; i < senders; i++) {
		r = next_event(rx, &lane, buf, sizeof(buf));
		ASSERT_EQ(-EPIPE, r);
		ASSERT_TRUE(lanes & (1U << lane));
		lanes &= ~(1U << lane);
	}
}

#define BURN_LANES	4

/*
 * A hostile sender may waste its own lane, never the channel: burn every
 * lane (garbage at the head, then close), some while the receiver watches
 * and some before it looks; the receiver reports -EBADMSG, then the end,
 * and every lane takes an honest sender again.
 */
TEST(burnt_lanes_come_back)
{
	struct lzchan_opts o;
	struct lzchan_geom g;
	struct burner b[BURN_LANES];
	const char *name = lz_name("burn");
	struct lzchan *rx;
	uint32_t lane, i;
	char buf[64];
	int round, r;

	o = lz_opts(64, 128, BURN_LANES);
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	ASSERT_EQ(0, lzchan_geometry(rx, &g));
	for (round = 0; round < 2; round++) {
		/* Lanes 0 and 1: garbage seen while their senders are still
		 * there; nothing more until they leave. */
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, burner_open(&b[i], name, g.backend));
			ASSERT_EQ(i, b[i].lane);
			lane = UINT32_MAX;
			EXPECT_EQ(-EBADMSG, next_event(rx, &lane, buf, sizeof(buf)));
			EXPECT_EQ(i, lane);
		}
		r = lzchan_recv(rx, buf, sizeof(buf), &lane);
		EXPECT_EQ(-EAGAIN, r) TH_LOG("lane %u", lane);
		/* Lanes 2 and 3: their senders are gone before we look. */
		for (i = 2; i < BURN_LANES; i++) {
			ASSERT_EQ(0, burner_open(&b[i], name, g.backend));
			ASSERT_EQ(i, b[i].lane);
			burner_close(&b[i]);
		}
		EXPECT_EQ(0xc, await_ends(_metadata, rx, 0xc, 0));
		/* Lanes 0 and 1 end when their senders leave. */
		for (i = 0; i < 2; i++)
			burner_close(&b[i]);
		EXPECT_EQ(3, await_ends(_metadata, rx, 3, 3));
		honest_senders(_metadata, name, rx, BURN_LANES, 40);
	}
	lzchan_close(rx);
	lzchan_unlink(name);
}

/*
 * Lanes burnt while no receiver was there, or whose -EBADMSG a receiver
 * saw before leaving: the next receiver gives them up the same way.
 */
TEST(burnt_lanes_new_receiver)
{
	struct lzchan_opts o;
	struct lzchan_geom g;
	struct burner b;
	const char *name = lz_name("burnrx");
	struct lzchan *rx;
	uint32_t lane, i;
	char buf[64];

	o = lz_opts(64, 128, BURN_LANES);
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	ASSERT_EQ(0, lzchan_geometry(rx, &g));
	/* Lane 0: the first receiver sees the garbage, then leaves while
	 * the sender is still there. */
	ASSERT_EQ(0, burner_open(&b, name, g.backend));
	lane = UINT32_MAX;
	EXPECT_EQ(-EBADMSG, next_event(rx, &lane, buf, sizeof(buf)));
	EXPECT_EQ(0, lane);
	lzchan_close(rx);
	burner_close(&b);
	/* Lanes 1..3: burnt with no receiver attached. */
	for (i = 1; i < BURN_LANES; i++) {
		ASSERT_EQ(0, burner_open(&b, name, g.backend));
		ASSERT_EQ(i, b.lane);
		burner_close(&b);
	}
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(0xf, await_ends(_metadata, rx, 0xf, 0));
	honest_senders(_metadata, name, rx, BURN_LANES, 40);
	lzchan_close(rx);
	lzchan_unlink(name);
}

/*
 * A receiver publishes its position lazily, so it may stand ahead of the
 * head it published.  A hostile sender sends a few messages, and once they
 * are read makes the slot at the published head look empty, then leaves.
 * Were its lane given to the next sender at once ("nothing ready at the
 * published head"), that sender would start at the published head while
 * the receiver goes on from its own position: the new sender's first
 * messages skipped, a later one read as the old sender's.  The next
 * sender's messages must all arrive, in order, after the old one's end.
 */
#define TRICK_SENT	5
TEST(hostile_close_cannot_skip_the_next_sender)
{
	struct lzchan_opts o;
	struct lzchan_geom g;
	struct burner b;
	const char *name = lz_name("skip");
	struct lzchan *rx, *tx;
	uint32_t lane, h0, k, ends = 0;
	char buf[64];
	int r, n;

	lzchan_opts_init(&o);
	o.slot_size = 64;
	o.slot_count = 64;
	o.max_senders = 1;
	o.publish_every = 32;
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	ASSERT_EQ(0, lzchan_geometry(rx, &g));
	ASSERT_EQ(0, burner_attach(&b, name, g.backend));
	h0 = __atomic_load_n(b.rxl, __ATOMIC_ACQUIRE);
	for (k = 0; k < TRICK_SENT; k++) {
		struct lzchan_slot_hdr *h = burner_slot(&b, h0 + k);

		memcpy(h + 1, "hostile", 8);
		__atomic_store_n(&h->len, 8, __ATOMIC_RELAXED);
		__atomic_store_n(&h->seq, h0 + k + 1, __ATOMIC_RELEASE);
	}
	burner_tail(&b, h0 + TRICK_SENT);	/* an honest count: the trick is elsewhere */
	/* Read them, and no further: an empty look would publish.  (Waiting:
	 * a lane that was free is found by a look at every lane.) */
	for (k = 0; k < TRICK_SENT; k++) {
		r = next_event(rx, &lane, buf, sizeof(buf));
		ASSERT_EQ(8, r) TH_LOG("hostile message %u", k);
		ASSERT_EQ(0, memcmp(buf, "hostile", 8));
	}
	ASSERT_EQ(h0, __atomic_load_n(b.rxl, __ATOMIC_ACQUIRE))
		TH_LOG("the receiver published early: the trick cannot be set up");
	/* The trick: the slot at the published head says "not ready". */
	__atomic_store_n(&burner_slot(&b, h0)->seq, h0, __ATOMIC_RELEASE);
	burner_close(&b);

	/* The next sender gets the lane once the receiver is done with it
	 * (it reports the old sender's end when it looks). */
	while ((r = lzchan_open(&tx, name, LZCHAN_SENDER, NULL)) == -EUSERS) {
		ASSERT_EQ(0, ends) TH_LOG("the lane stayed taken after its end");
		r = next_event(rx, &lane, buf, sizeof(buf));
		ASSERT_EQ(-EPIPE, r) TH_LOG("lane %u", lane);
		ends++;
	}
	ASSERT_EQ(0, r) TH_LOG("%s", strerror(-r));
	for (n = 0; n < 10; n++)
		ASSERT_EQ(0, lzchan_send(tx, &n, sizeof(n)));
	for (n = 0; n < 10; ) {
		int got;

		r = next_event(rx, &lane, buf, sizeof(buf));
		if (r == -EPIPE) {
			ASSERT_EQ(0, n) TH_LOG("an end among the new sender's messages");
			ASSERT_EQ(0, ends) TH_LOG("the old sender's end twice");
			ends++;
			continue;
		}
		ASSERT_EQ((int)sizeof(n), r) TH_LOG("after %d messages", n);
		memcpy(&got, buf, sizeof(got));
		ASSERT_EQ(n, got) TH_LOG("the new sender's messages before %d were skipped", got);
		EXPECT_EQ(0, lane);
		n++;
	}
	EXPECT_EQ(1, ends);
	EXPECT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), &lane));
	if (g.backend == LZCHAN_BACKEND_DEV) {
		int32_t pid;
		uint32_t uid, gid;

		/* The lane is attributed to the new sender. */
		ASSERT_EQ(0, lzchan_peer(rx, 0, &pid, &uid, &gid));
		EXPECT_EQ(getpid(), pid);
	}
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(name);
}

/* ---- a hostile receiver ---- */

/*
 * The receiver's side of the sharing: every word a sender reads from the
 * receiver -- its published heads, the attention word the inline send
 * compares on every send, sleepy, parked, armed, close_ack, broken -- is
 * written by the receiver, which may be hostile or broken.  A receiver
 * that receives now and then and otherwise writes random values over its
 * whole rx area (the words that matter most often) must not crash the
 * sender, hang it (every call that may wait is given a timeout), or get
 * an answer from it outside what each call documents; and once it dies,
 * the sender must learn that the receiver is gone, whatever it left
 * there.  Both backends: the library's receiver, its rx area written
 * through the handle's own (writable) mapping.
 */
static void hostile_rx_scribble(struct lzchan *rx, int give_up)
{
	struct __lzchan_fast *f = (struct __lzchan_fast *)rx;
	uint32_t nl = f->max_senders;
	struct lzchan_geom g;
	char buf[4096];
	int shm;

	lzchan_geometry(rx, &g);
	shm = g.backend == LZCHAN_BACKEND_SHM;

	for (;;) {
		uint32_t i = rnd() % nl, v = rnd();
		struct lzchan_shm_rx_lane *rxl = f->lanes[i].rxl;
		/* The lane's sender's generation, as its status says. */
		uint32_t gen = LZCHAN_STATUS_GEN(__atomic_load_n(&f->lanes[i].info->status,
								 __ATOMIC_ACQUIRE));
		uint32_t *w;

		switch (rnd() % 16) {
		case 10:	/* receive for real, as often as it scribbles */
		case 11:
		case 12:
		case 13:
		case 14:
		case 15:
			lzchan_recv(rx, buf, sizeof(buf), NULL);
			continue;
		case 2:		/* a head near (behind or ahead of) where we
				 * are, or anywhere */
			w = &rxl->head;
			v = rnd() % 4 ? f->lanes[i].peek + (int32_t)(rnd() % 64) - 32 : v;
			break;
		case 3:
			w = &rxl->attn;
			v = rnd() % 2 ? rxl->attn + 1 : v;
			break;
		case 4:
			w = &rxl->sleepy;
			v = rnd() % 3 ? v % 2 : v;
			break;
		case 5:		/* the park word, or the lane's copy of it
				 * (what its sender reads: ABI 4) */
			w = rnd() % 2 ? &f->rx->parked : &rxl->parked;
			v = rnd() % 3 ? v % 2 : v;
			break;
		case 6:
			w = &f->rx->armed;
			break;
		case 7:		/* "this lane's sender is broken" (in half the
				 * rounds: it sticks), or garbage */
			w = &rxl->broken;
			v = give_up && rnd() % 2 ? gen : v;
			break;
		case 8:
			w = &rxl->close_ack;
			v = rnd() % 2 ? gen : v;
			break;
		case 9:		/* anywhere in the receiver's rx line */
			w = (uint32_t *)f->rx + rnd() % (sizeof(*f->rx) / 4);
			break;
		case 1:		/* shm, where the header is anyone's to write:
				 * the receiver's status (gen, state) */
			if (!shm)
				continue;
			w = (uint32_t *)&f->hdr->rx_status + rnd() % 2;
			v = rnd() % 4 ? rnd() % 4 : v;
			break;
		default:	/* 0: anywhere in a lane's rx line */
			w = (uint32_t *)rxl + rnd() % (sizeof(*rxl) / 4);
			break;
		}
		__atomic_store_n(w, v, __ATOMIC_RELEASE);
	}
}

/* Every answer a sending call may give here (none of them -EIO: nothing
 * is cut): a count or 0, or the errors its manual page lists -- a flush
 * also -ENOTCONN ("no receiver yet", as a forged status may say on shm). */
static int hostile_rx_answer_ok(int r, int flush)
{
	return r >= 0 || r == -EAGAIN || r == -EPIPE || r == -EBADMSG || r == -ETIMEDOUT ||
	       (flush && r == -ENOTCONN);
}

TEST(hostile_receiver)
{
	const char *e = getenv("LZCHAN_HOSTILE_ROUNDS");
	unsigned int rounds = e ? strtoul(e, NULL, 0) / 50 + 1 : 20, r;
	unsigned long sent = 0, refused[5] = { 0 };
	static char buf[1 << 16];

	memset(buf, 'h', sizeof(buf));
	for (r = 0; r < rounds; r++) {
		uint32_t sizes[] = { 64, 128, 256 }, counts[] = { 2, 8, 64 };
		uint32_t S = sizes[rnd() % 3], N = counts[rnd() % 3], i;
		struct lzchan_opts o;
		struct lzchan_geom g;
		struct lzchan *tx;
		char name[64], c;
		int status, ret, ready[2], k;
		pid_t pid;

		snprintf(name, sizeof(name), "hostile-rx.%d.%u", getpid(), r);
		lzchan_opts_init(&o);
		o.slot_size = S;
		o.slot_count = N;
		o.max_senders = 2;
		ASSERT_EQ(0, pipe(ready));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			struct lzchan *rx;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(4);
			rng ^= getpid();
			if (lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o))
				_exit(2);
			if (write(ready[1], "r", 1) != 1)
				_exit(3);
			hostile_rx_scribble(rx, r % 2);
		}
		close(ready[1]);
		ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("the receiver could not open");
		close(ready[0]);
		ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
		ASSERT_EQ(0, lzchan_geometry(tx, &g));
		for (i = 0; i < 400; i++) {
			size_t len = rnd() % 4 ? rnd() % (S - 8 + 1) : rnd() % (g.max_msg + 1);
			struct iovec v[4];
			void *p;

			switch (i % 6) {
			case 0:
				ret = lzchan_send(tx, buf, len);
				break;
			case 1:
				for (k = 0; k < 4; k++) {
					v[k].iov_base = buf;
					v[k].iov_len = rnd() % (S - 8 + 1);
				}
				ret = lzchan_send_batch(tx, v, 4);
				ASSERT_GE(4, ret);
				break;
			case 2:
				ret = lzchan_reserve(tx, len, &p);
				if (!ret) {
					memset(p, 'r', len);
					ret = lzchan_commit(tx, len / 2);
					ASSERT_NE(-EINVAL, ret) TH_LOG("a reservation lost");
				}
				break;
			case 3:
				ret = lzchan_send_wait(tx, buf, len, 200000);
				break;
			case 4:
				ret = lzchan_flush(tx, 200000);
				break;
			default:
				ret = lzchan_send(tx, buf, 1);
				break;
			}
			ASSERT_TRUE(hostile_rx_answer_ok(ret, i % 6 == 4)) TH_LOG("call %u: %d", i % 6, ret);
			if (ret >= 0)
				sent++;
			else
				refused[ret == -EAGAIN ? 0 : ret == -EBADMSG ? 1 :
					ret == -ETIMEDOUT ? 2 : ret == -EPIPE ? 3 : 4]++;
		}
		/* The receiver dies: the sender learns it, whatever was left in
		 * the rx area -- a lane given up included (-EBADMSG until the
		 * next look at the receiver's lock, at most a millisecond
		 * later on shm).  A bounded number of retries, 2 ms apart: a
		 * hang bound, not a speed test. */
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("receiver exited %d", WEXITSTATUS(status));
		for (i = 0; i < 1000; i++) {
			ret = lzchan_send_wait(tx, buf, 1, 10000000);
			ASSERT_TRUE(hostile_rx_answer_ok(ret, 0)) TH_LOG("after the death: %d", ret);
			if (ret == -EPIPE)
				break;
			usleep(2000);
		}
		EXPECT_EQ(-EPIPE, ret) TH_LOG("the sender never learnt the receiver died");
		lzchan_close(tx);
		lzchan_unlink(name);
	}
	TH_LOG("%u rounds: %lu calls succeeded; refused: %lu -EAGAIN, %lu -EBADMSG, "
	       "%lu -ETIMEDOUT, %lu -EPIPE, %lu -ENOTCONN; no crash", rounds, sent, refused[0],
	       refused[1], refused[2], refused[3], refused[4]);
}

TEST_HARNESS_MAIN
