// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bad input: throw at least 100,000 random operations at /dev/lzchan --
 * ioctl commands, argument structs (random bytes and near-valid ones),
 * pointers into unmapped memory, mmap offsets/lengths/protections, writes
 * of garbage into the shared memory the kernel reads back, mprotect, and
 * closes in random order -- then check that everything is returned: no
 * channel and no page left over.  The VM rig checks the kernel log.
 *
 * LZCHAN_FUZZ_SEED and LZCHAN_FUZZ_OPS override the seed (printed) and the
 * number of operations; LZCHAN_FUZZ_SECONDS (default 150) bounds the time
 * they may take, so that a slow machine (the debug kernel under software
 * emulation, with other work beside it) ends the loop and still checks
 * that everything came back, where the harness's timeout would kill the
 * test and leave its channels behind for the suites after it.  The count
 * done is printed.
 */
#include <stdint.h>
#include <sys/eventfd.h>
#include <time.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

#define NFDS	24
#define NMAPS	48
#define NNAMES	6

static uint64_t rng;

static uint64_t rnd(void)
{
	return lz_xorshift(&rng);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

struct fuzz {
	int fds[NFDS];
	struct { void *p; size_t len; } maps[NMAPS];
	char names[NNAMES][LZCHAN_NAME_SIZE];
	int efd;
	char *buf;		/* 2 pages: readable, then PROT_NONE */
	long ps;
	unsigned long ops, ioctls, mmaps, closes;
};

static void fill_random(void *p, size_t n)
{
	unsigned char *c = p;

	while (n--)
		*c++ = rnd();
}

/* A struct that gets past the size check, with a few fields perturbed. */
static void *plausible(struct fuzz *f, unsigned int nr, size_t *len)
{
	static union {
		struct lzchan_features ft;
		struct lzchan_create c;
		struct lzchan_open o;
		struct lzchan_unlink u;
		struct lzchan_info i;
		struct lzchan_list l;
		struct lzchan_set_eventfd e;
		struct lzchan_peer p;
		char raw[512];
	} u;
	static struct lzchan_chan_stat entries[8];
	const char *name = f->names[below(NNAMES)];

	memset(&u, 0, sizeof(u));
	switch (nr) {
	case 1:
		u.c.size = sizeof(u.c);
		lz_setname(u.c.name, name);
		u.c.slot_size = 64 << below(4);
		u.c.slot_count = 2 << below(8);
		u.c.max_senders = 1 + below(6);
		u.c.numa_node = (int)below(4) - 1;
		u.c.mode = 0600 | below(0200);
		u.c.flags = below(4);
		break;
	case 2:
		u.o.size = sizeof(u.o);
		lz_setname(u.o.name, name);
		u.o.flags = 1 + below(2);
		/* Mostly the right ABI (to reach the channel), sometimes not. */
		u.o.abi_version = below(8) ? LZCHAN_ABI_VERSION : below(4);
		break;
	case 3:
		u.u.size = sizeof(u.u);
		lz_setname(u.u.name, name);
		break;
	case 5:
		u.l.size = sizeof(u.l);
		u.l.entry_size = sizeof(entries[0]) - 8 * below(3);
		u.l.count = below(10);
		u.l.start = below(3);
		u.l.entries = below(4) ? (uint64_t)(unsigned long)entries :
			      (uint64_t)(unsigned long)(f->buf + f->ps - 100);
		break;
	case 6:
		u.e.size = sizeof(u.e);
		u.e.fd = below(2) ? f->efd : (int)below(40) - 2;
		break;
	case 8:
		u.p.size = sizeof(u.p);
		u.p.lane = below(4) ? below(8) : LZCHAN_LANE_NONE;
		break;
	default:
		u.ft.size = sizeof(u.i);
		break;
	}
	/* Now and then: a wrong size, a stray flag, a reserved bit. */
	switch (below(8)) {
	case 0:
		*(uint32_t *)u.raw = below(600);
		break;
	case 1:
		((uint32_t *)u.raw)[1] |= 1U << below(32);
		break;
	case 2:
		u.raw[8 + below(200)] ^= 1 << below(8);
		break;
	}
	*len = sizeof(u);
	return &u;
}

static void op_ioctl(struct fuzz *f)
{
	int fd = f->fds[below(NFDS)];
	unsigned long cmd;
	unsigned int nr = below(12);
	void *arg;
	size_t len;
	char *tail;

	switch (below(4)) {
	case 0:
		cmd = _IO(LZCHAN_IOC_MAGIC, nr);
		break;
	case 1:
		cmd = _IOC(below(4), LZCHAN_IOC_MAGIC, nr, below(1 << 14));
		break;
	case 2:
		cmd = _IOC(below(4), LZCHAN_IOC_MAGIC + below(2), below(256),
			   below(1 << 14));
		break;
	default:
		cmd = _IO(LZCHAN_IOC_MAGIC, nr);
		break;
	}

	switch (below(8)) {
	case 0:
		arg = NULL;
		break;
	case 1:
		arg = (void *)(uintptr_t)below(1 << 16);
		break;
	case 2:
		arg = (void *)(uintptr_t)(0xffff888000000000ULL + below(1 << 20));
		break;
	case 3:		/* runs into the PROT_NONE page */
		arg = plausible(f, _IOC_NR(cmd), &len);
		tail = f->buf + f->ps - (4 + below(64));
		memcpy(tail, arg, f->buf + f->ps - tail);
		arg = tail;
		break;
	case 4:
		fill_random(f->buf, 512);
		arg = f->buf;
		break;
	default:
		arg = plausible(f, _IOC_NR(cmd), &len);
		break;
	}
	ioctl(fd, cmd, arg);
	f->ioctls++;
}

static void op_mmap(struct fuzz *f)
{
	int fd = f->fds[below(NFDS)], slot = below(NMAPS);
	struct lzchan_info in;
	uint64_t off;
	size_t len;
	int prot, flags;
	void *p;

	if (f->maps[slot].p)
		munmap(f->maps[slot].p, f->maps[slot].len);
	f->maps[slot].p = NULL;

	off = below(64) * f->ps;
	len = (1 + below(8)) * f->ps;
	if (fd >= 0 && !lz_info(fd, &in) && below(4)) {
		const __u64 *areas = &in.layout.info_off;	/* off/size pairs */
		unsigned int a = below(5);

		if (a == 4) {		/* a lane's rx page */
			off = in.layout.rx_off + in.layout.rx_lanes +
			      below(6) * in.layout.rx_lane_stride;
			len = f->ps;
		} else {
			off = areas[2 * a] + below(2) * f->ps;
			len = areas[2 * a + 1];
		}
		if (a == 3)		/* a lane: lanes_off + k * stride */
			off = in.layout.lanes_off + below(6) * in.layout.lane_stride;
		if (!below(4))
			len += f->ps * (below(3) - 1);
		if (!len)
			len = f->ps;
	}
	prot = (int)below(8);
	flags = below(6) ? MAP_SHARED : MAP_PRIVATE;
	p = mmap(NULL, len, prot, flags, fd, off);
	f->mmaps++;
	if (p == MAP_FAILED)
		return;
	f->maps[slot].p = p;
	f->maps[slot].len = len;
	if (prot & PROT_READ)
		(void)*(volatile char *)p;
	if ((prot & PROT_WRITE) && flags == MAP_SHARED)
		fill_random(p, len < 4096 ? len : 4096);	/* garbage the kernel may read */
}

static void op_close(struct fuzz *f)
{
	int slot = below(NFDS);

	if (f->fds[slot] >= 0)
		close(f->fds[slot]);
	f->fds[slot] = below(5) ? lz_dev() : -1;
	f->closes++;
}

static void op_misc(struct fuzz *f)
{
	int slot = below(NMAPS), fd = f->fds[below(NFDS)];
	char b[16];

	switch (below(4)) {
	case 0:
		if (f->maps[slot].p)
			mprotect(f->maps[slot].p, f->maps[slot].len, below(8));
		break;
	case 1:
		if (f->maps[slot].p) {
			munmap(f->maps[slot].p, f->maps[slot].len);
			f->maps[slot].p = NULL;
		}
		break;
	case 2:
		if (read(fd, b, sizeof(b)) >= 0 || write(fd, b, sizeof(b)) >= 0)
			break;
		break;
	default:
		lseek(fd, below(1 << 20), SEEK_SET);
		break;
	}
}

/* Unlink every channel named in this namespace that the fuzzer made (its
 * bit flips can mutate names beyond the pool); returns how many. */
static int unlink_leftovers(struct __test_metadata *_metadata, char (*keep)[LZCHAN_NAME_SIZE],
			    int nkeep)
{
	static struct lzchan_chan_stat e[256];
	struct lzchan_list l = { .size = sizeof(l), .entry_size = sizeof(e[0]),
				 .count = 256, .entries = (__u64)(unsigned long)e };
	int fd = lz_dev(), n = 0, k;
	__u32 i;

	if (fd < 0 || lz_ioctl(fd, LZCHAN_IOC_LIST, &l))
		return -1;
	for (i = 0; i < l.count; i++) {
		for (k = 0; k < nkeep; k++)
			if (!strcmp(keep[k], e[i].name))
				break;
		if (k < nkeep)
			continue;
		TH_LOG("fuzzer-made channel '%s' left: unlinking", e[i].name);
		if (!lz_unlink(e[i].name))
			n++;
	}
	close(fd);
	return n;
}

static int list_names(char (*out)[LZCHAN_NAME_SIZE], int max)
{
	static struct lzchan_chan_stat e[256];
	struct lzchan_list l = { .size = sizeof(l), .entry_size = sizeof(e[0]),
				 .count = 256, .entries = (__u64)(unsigned long)e };
	int fd = lz_dev(), n;

	if (fd < 0 || lz_ioctl(fd, LZCHAN_IOC_LIST, &l))
		return -1;
	close(fd);
	for (n = 0; n < (int)l.count && n < max; n++)
		memcpy(out[n], e[n].name, LZCHAN_NAME_SIZE);
	return n;
}

TEST(bad_input_loop)
{
	static char before[256][LZCHAN_NAME_SIZE];
	struct fuzz f;
	long ch0, pg0, old_bytes, old_chans;
	int nbefore;
	unsigned long ops = 120000, i;
	struct timespec t0, t;
	long secs = 150;
	const char *env;
	int n;

	LZ_NEED_DEV();
	memset(&f, 0, sizeof(f));
	env = getenv("LZCHAN_FUZZ_SEED");
	rng = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u + getpid();
	if (!rng)
		rng = 1;
	ksft_print_msg("LZCHAN_FUZZ_SEED=%llu\n", (unsigned long long)rng);
	env = getenv("LZCHAN_FUZZ_OPS");
	if (env)
		ops = strtoul(env, NULL, 0);
	env = getenv("LZCHAN_FUZZ_SECONDS");
	if (env)
		secs = strtol(env, NULL, 0);

	f.ps = sysconf(_SC_PAGESIZE);
	f.buf = mmap(NULL, 2 * f.ps, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, f.buf);
	ASSERT_EQ(0, mprotect(f.buf + f.ps, f.ps, PROT_NONE));
	f.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, f.efd);
	for (n = 0; n < NNAMES; n++)
		lz_setname(f.names[n], lz_name("fz"));
	for (n = 0; n < NFDS; n++)
		f.fds[n] = lz_dev();

	nbefore = list_names(before, 256);
	ASSERT_LE(0, nbefore);
	ch0 = lz_read_long(LZ_SYSFS "channels");
	pg0 = lz_read_long(LZ_SYSFS "pages");
	old_bytes = lz_read_long(LZ_PARAMS "max_channel_bytes");
	old_chans = lz_read_long(LZ_PARAMS "max_channels");
	ASSERT_EQ(0, lz_write_long(LZ_PARAMS "max_channel_bytes", 1L << 20));
	ASSERT_EQ(0, lz_write_long(LZ_PARAMS "max_channels", ch0 + 32));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < ops; i++) {
		if (!(i & 1023)) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec >= secs) {
				ksft_print_msg("stopped after %ld s, at %lu of %lu operations\n",
					       secs, i, ops);
				break;
			}
		}
		switch (below(10)) {
		case 0 ... 5:
			op_ioctl(&f);
			break;
		case 6 ... 7:
			op_mmap(&f);
			break;
		case 8:
			op_close(&f);
			break;
		default:
			op_misc(&f);
			break;
		}
	}
	ksft_print_msg("%lu operations: %lu ioctls, %lu mmaps, %lu closes\n",
		       i, f.ioctls, f.mmaps, f.closes);

	/* Put everything back, in random order too. */
	for (n = 0; n < NMAPS; n++)
		if (f.maps[n].p)
			munmap(f.maps[n].p, f.maps[n].len);
	while (1) {
		int left = 0;

		for (n = 0; n < NFDS; n++)
			left += f.fds[n] >= 0;
		if (!left)
			break;
		n = below(NFDS);
		if (f.fds[n] >= 0) {
			close(f.fds[n]);
			f.fds[n] = -1;
		}
	}
	for (n = 0; n < NNAMES; n++) {
		int ret = lz_unlink(f.names[n]);

		EXPECT_TRUE(ret == 0 || ret == -ENOENT);
	}
	EXPECT_LE(0, unlink_leftovers(_metadata, before, nbefore));
	lz_write_long(LZ_PARAMS "max_channel_bytes", old_bytes);
	lz_write_long(LZ_PARAMS "max_channels", old_chans);
	close(f.efd);

	EXPECT_EQ(ch0, lz_read_long(LZ_SYSFS "channels"));
	EXPECT_EQ(pg0, lz_read_long(LZ_SYSFS "pages"));
	if (ch0 == 0)
		EXPECT_EQ(0, lz_read_long(LZ_SYSFS "pages"));
}

TEST_HARNESS_MAIN
