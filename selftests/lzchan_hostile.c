// SPDX-License-Identifier: GPL-2.0-only
/*
 * A hostile peer: while the receiver polls, another process writes random
 * bytes, and forged headers that look ready (right seq, wrong len, pads in
 * the wrong place), over everything a sender may write: its lane and the
 * bell.  The receiver must return valid messages or errors -- never crash,
 * never read outside the ring (this test also runs under AddressSanitizer
 * and UndefinedBehaviorSanitizer).  LZCHAN_HOSTILE_ROUNDS scales it.
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
#include <sys/wait.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"

static uint32_t rng = 0x12345678;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/*
 * Map what a sender of @name may write, the way a client without libchan
 * would: the lane and the bell.  Returns the lane base (tx line), or NULL.
 */
static char *hostile_map(const char *name, struct lzchan_layout *l, uint64_t **bell,
			 uint32_t *lane, volatile uint32_t **head)
{
	struct lzchan_open o = { .size = sizeof(o), .flags = LZCHAN_OPEN_SENDER };
	struct lzchan_info in = { .size = sizeof(in) };
	char *p;
	int fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		strcpy(o.name, name);
		if (ioctl(fd, LZCHAN_IOC_OPEN, &o) || ioctl(fd, LZCHAN_IOC_INFO, &in))
			return NULL;
		*l = in.layout;
		*lane = o.lane;
		*bell = mmap(NULL, l->bell_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, l->bell_off);
		p = mmap(NULL, l->rx_size, PROT_READ, MAP_SHARED, fd, l->rx_off);
		if (p == MAP_FAILED)
			return NULL;
		/* The receiver's published head for our lane: where to forge. */
		*head = (volatile uint32_t *)(p + l->rx_lanes + o.lane * LZCHAN_CTRL_STRIDE);
		p = mmap(NULL, l->lane_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 l->lanes_off + o.lane * l->lane_stride);
		return p == MAP_FAILED || *bell == MAP_FAILED ? NULL : p;
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
		case 4:		/* the bell */
			if (bell)
				bell[0] ^= (uint64_t)rnd() << 32 | rnd();
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

TEST_HARNESS_MAIN
