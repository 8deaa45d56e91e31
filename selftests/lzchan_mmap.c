// SPDX-License-Identifier: GPL-2.0-only
/*
 * Mapping a channel: the layout, per-role protections (forbidden writes
 * fault, forbidden mprotect upgrades fail), bounds, lifetime after close,
 * and NUMA placement as the module reports it (LZCHAN_IOC_PLACEMENT).
 */
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include <sys/personality.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

FIXTURE(chan) {
	char name[LZCHAN_NAME_SIZE];
	int rx, tx;		/* receiver; sender on lane 0 */
	struct lzchan_layout l;
};

FIXTURE_SETUP(chan)
{
	struct lzchan_info in;

	self->rx = self->tx = -1;
	if (access(LZCHAN_DEVICE_PATH, F_OK))
		return;		/* the test body skips (LZ_NEED_DEV) */
	lz_setname(self->name, lz_name("mmap"));
	ASSERT_EQ(0, lz_create(self->name, LZ_GEOM_DEFAULT));
	self->rx = lz_open(self->name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, self->rx);
	self->tx = lz_open(self->name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, self->tx);
	ASSERT_EQ(0, lz_info(self->rx, &in));
	self->l = in.layout;
}

FIXTURE_TEARDOWN(chan)
{
	if (self->rx >= 0)
		close(self->rx);
	if (self->tx >= 0)
		close(self->tx);
	if (self->name[0])
		lz_unlink(self->name);
}

TEST_F(chan, layout)
{
	const struct lzchan_layout *l = &self->l;
	struct lzchan_info in;
	long ps = page_size();

	LZ_NEED_DEV();
	EXPECT_EQ(0, l->info_off);
	EXPECT_EQ(l->info_off + l->info_size, l->rx_off);
	EXPECT_EQ(l->rx_off + l->rx_size, l->bell_off);
	EXPECT_EQ(l->bell_off + l->bell_size, l->lanes_off);
	EXPECT_EQ(0, l->bell_size % ps);
	EXPECT_EQ(0, l->lane_stride % ps);
	EXPECT_LE(l->lane_slots + 64 * 64, l->lane_size);
	EXPECT_EQ(sizeof(struct lzchan_shm_hdr), l->info_lanes);
	/* rx (ABI 4): a header page, then one page per lane. */
	EXPECT_EQ(ps, l->rx_lanes);
	EXPECT_EQ(ps, l->rx_lane_stride);
	EXPECT_EQ(ps * (1 + 4), l->rx_size);
	EXPECT_EQ(0, l->rx_off % ps);
	EXPECT_GE(ps, sizeof(struct lzchan_shm_rx));
	EXPECT_GE(ps, sizeof(struct lzchan_shm_rx_lane));
	EXPECT_EQ(0, l->reserved[0]);
	EXPECT_EQ(0, l->reserved[1]);
	EXPECT_EQ(sizeof(struct lzchan_shm_tx), l->lane_slots);
	EXPECT_EQ(0, l->lane_slots % LZCHAN_CTRL_STRIDE);
	/* Both roles see the same layout. */
	ASSERT_EQ(0, lz_info(self->tx, &in));
	EXPECT_EQ(0, memcmp(l, &in.layout, sizeof(*l)));
}

TEST_F(chan, shared_header)
{
	struct lzchan_shm_hdr *h;
	struct lzchan_shm_lane *lane0;

	LZ_NEED_DEV();
	h = lz_map(self->tx, self->l.info_off, self->l.info_size, PROT_READ);
	ASSERT_NE(NULL, h);
	EXPECT_EQ(LZCHAN_SHM_MAGIC, h->magic);
	EXPECT_EQ(LZCHAN_ABI_VERSION, h->abi_version);
	EXPECT_EQ(64, h->slot_size);
	EXPECT_EQ(64, h->slot_count);
	EXPECT_EQ(4, h->max_senders);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_RX_ATTACHED), h->rx_status);
	lane0 = (void *)((char *)h + self->l.info_lanes);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_ATTACHED), lane0[0].status);
	EXPECT_EQ(LZCHAN_STATUS(0, LZCHAN_LANE_FREE), lane0[1].status);

	/* The receiver goes: senders see it in the header. */
	close(self->rx);
	self->rx = -1;
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_RX_GONE), h->rx_status);
	self->rx = lz_open(self->name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, self->rx);
	EXPECT_EQ(LZCHAN_STATUS(2, LZCHAN_RX_ATTACHED), h->rx_status);
	munmap(h, self->l.info_size);
}

/* Which areas each role may map, and how. */
TEST_F(chan, role_protections)
{
	const struct lzchan_layout *l = &self->l;
	void *p;

	LZ_NEED_DEV();
	/* info: read-only to both. */
	EXPECT_EQ(NULL, lz_map(self->rx, l->info_off, l->info_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(self->tx, l->info_off, l->info_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);

	/* rx: the receiver writes it all; a sender maps only its own
	 * lane's page, read-only (sender_maps_only_its_own_rx_page). */
	p = lz_map(self->rx, l->rx_off, l->rx_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	munmap(p, l->rx_size);
	EXPECT_EQ(NULL, lz_map(self->tx, l->rx_off, l->rx_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(self->tx, l->rx_off, l->rx_size, PROT_READ));
	EXPECT_EQ(EACCES, errno);

	/* bell: only the kernel writes it (LZCHAN_IOC_RING); only the
	 * receiver reads it. */
	EXPECT_EQ(NULL, lz_map(self->rx, l->bell_off, l->bell_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	p = lz_map(self->rx, l->bell_off, l->bell_size, PROT_READ);
	ASSERT_NE(NULL, p);
	munmap(p, l->bell_size);
	EXPECT_EQ(NULL, lz_map(self->tx, l->bell_off, l->bell_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(self->tx, l->bell_off, l->bell_size, PROT_READ));
	EXPECT_EQ(EACCES, errno);

	/* lanes: the receiver reads all; a sender writes its own only. */
	EXPECT_EQ(NULL, lz_map(self->rx, l->lanes_off, l->lane_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	p = lz_map(self->rx, l->lanes_off + 3 * l->lane_stride, l->lane_size, PROT_READ);
	ASSERT_NE(NULL, p);
	munmap(p, l->lane_size);
	p = lz_map(self->tx, l->lanes_off, l->lane_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	munmap(p, l->lane_size);
	EXPECT_EQ(NULL, lz_map(self->tx, l->lanes_off + l->lane_stride, l->lane_size, PROT_READ));
	EXPECT_EQ(EACCES, errno);

	/* Never executable, never private. */
	EXPECT_EQ(NULL, lz_map(self->rx, l->info_off, l->info_size, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, l->info_size, PROT_READ, MAP_PRIVATE,
				   self->rx, l->info_off));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(chan, bounds)
{
	const struct lzchan_layout *l = &self->l;
	__u64 end = l->lanes_off + 4 * l->lane_stride;
	long ps = page_size();
	int fd;

	LZ_NEED_DEV();
	/* Straddling two areas, past the end, past a lane, huge. */
	EXPECT_EQ(NULL, lz_map(self->rx, l->info_off, l->info_size + ps, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, lz_map(self->rx, end, ps, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, lz_map(self->rx, l->lanes_off, l->lane_size + ps, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, lz_map(self->rx, (__u64)1 << 46, ps, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	/* A part of an area is fine. */
	ASSERT_NE(NULL, lz_map(self->rx, l->lanes_off + ps, ps, PROT_READ));

	/* An unbound fd has nothing to map. */
	fd = lz_dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(NULL, lz_map(fd, 0, ps, PROT_READ));
	EXPECT_EQ(EBADFD, errno);
	close(fd);
}

static void *fault_target;

static void store_target(void *arg)
{
	lz_store_u32(fault_target);
}

TEST_F(chan, forbidden_writes_fault)
{
	const struct lzchan_layout *l = &self->l;
	void *info, *rx_ro, *lane_ro, *bell_ro;
	long ps = page_size();

	LZ_NEED_DEV();
	info = lz_map(self->tx, l->info_off, l->info_size, PROT_READ);
	/* The sender's own rx page (lane 0). */
	rx_ro = lz_map(self->tx, l->rx_off + l->rx_lanes, ps, PROT_READ);
	lane_ro = lz_map(self->rx, l->lanes_off, l->lane_size, PROT_READ);
	bell_ro = lz_map(self->rx, l->bell_off, l->bell_size, PROT_READ);
	ASSERT_NE(NULL, info);
	ASSERT_NE(NULL, rx_ro);
	ASSERT_NE(NULL, lane_ro);
	ASSERT_NE(NULL, bell_ro);

	fault_target = info;
	EXPECT_EQ(SIGSEGV, lz_child_signal(store_target, NULL));
	fault_target = rx_ro;		/* a sender writing the receiver's line */
	EXPECT_EQ(SIGSEGV, lz_child_signal(store_target, NULL));
	fault_target = (char *)lane_ro + l->lane_slots;	/* receiver into slots */
	EXPECT_EQ(SIGSEGV, lz_child_signal(store_target, NULL));
	fault_target = bell_ro;
	EXPECT_EQ(SIGSEGV, lz_child_signal(store_target, NULL));

	/* mprotect cannot upgrade any of them, nor make them executable. */
	EXPECT_EQ(-1, mprotect(info, l->info_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(rx_ro, ps, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(lane_ro, l->lane_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(bell_ro, l->bell_size, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(bell_ro, l->bell_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	/* Growing a mapping is refused too. */
	EXPECT_EQ(MAP_FAILED, mremap(info, l->info_size, l->info_size * 2, MREMAP_MAYMOVE));
}

/*
 * The bell is the kernel's: LZCHAN_IOC_RING toggles the caller's lane bit
 * and nothing else, so a co-sender can neither ring nor undo another
 * lane's; only a sender's fd rings.
 */
TEST_F(chan, ring_toggles_only_the_callers_bit)
{
	const struct lzchan_layout *l = &self->l;
	uint64_t before[2], *bell;
	uint32_t lane = ~0U;
	int tx2, i;

	LZ_NEED_DEV();
	bell = lz_map(self->rx, l->bell_off, l->bell_size, PROT_READ);
	ASSERT_NE(NULL, bell);
	tx2 = lz_open(self->name, LZCHAN_OPEN_SENDER, &lane);
	ASSERT_LE(0, tx2);
	ASSERT_GT(64U, lane);		/* LZ_GEOM_DEFAULT: both in word 0 */
	ASSERT_NE(0U, lane);		/* self->tx holds lane 0 */
	for (i = 0; i < 2; i++)
		before[i] = bell[i];
	ASSERT_EQ(0, lz_ioctl(tx2, LZCHAN_IOC_RING, NULL));
	EXPECT_EQ(before[0] ^ (1ULL << lane), bell[0]);
	EXPECT_EQ(before[1], bell[1]);
	ASSERT_EQ(0, lz_ioctl(self->tx, LZCHAN_IOC_RING, NULL));
	EXPECT_EQ(before[0] ^ (1ULL << lane) ^ 1ULL, bell[0]);
	/* Twice: back where it was (the receiver compares with its copy). */
	ASSERT_EQ(0, lz_ioctl(tx2, LZCHAN_IOC_RING, NULL));
	ASSERT_EQ(0, lz_ioctl(self->tx, LZCHAN_IOC_RING, NULL));
	EXPECT_EQ(before[0], bell[0]);
	EXPECT_EQ(-EPERM, lz_ioctl(self->rx, LZCHAN_IOC_RING, NULL));
	EXPECT_EQ(before[0], bell[0]);
	close(tx2);
	munmap(bell, l->bell_size);
}

/*
 * A sender maps of the rx area only its own lane's page, read-only, and
 * reads there what the receiver writes for it.  The rx header, the other
 * lanes' pages, the whole area and the bell are the receiver's: EACCES.
 */
TEST_F(chan, sender_maps_only_its_own_rx_page)
{
	const struct lzchan_layout *l = &self->l;
	volatile struct lzchan_shm_rx_lane *own0, *own1;
	__u64 page0, page1;
	__u32 lane = ~0U, k;
	long ps = page_size();
	char *rxa;
	void *p;
	int tx2;

	LZ_NEED_DEV();
	tx2 = lz_open(self->name, LZCHAN_OPEN_SENDER, &lane);
	ASSERT_LE(0, tx2);
	ASSERT_EQ(1, lane);		/* self->tx holds lane 0 */
	page0 = l->rx_off + l->rx_lanes;
	page1 = page0 + l->rx_lane_stride;

	/* The receiver writes each lane's words. */
	rxa = lz_map(self->rx, l->rx_off, l->rx_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, rxa);
	for (k = 0; k < 4; k++) {
		struct lzchan_shm_rx_lane *w =
			(void *)(rxa + l->rx_lanes + k * l->rx_lane_stride);

		w->head = 100 + k;
		w->attn = 200 + k;
		w->parked = 300 + k;
	}

	/* Each sender reads its own lane's, on its own page. */
	own0 = lz_map(self->tx, page0, ps, PROT_READ);
	ASSERT_NE(NULL, own0) TH_LOG("mmap: %s", strerror(errno));
	own1 = lz_map(tx2, page1, ps, PROT_READ);
	ASSERT_NE(NULL, own1) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_EQ(100, own0->head);
	EXPECT_EQ(200, own0->attn);
	EXPECT_EQ(300, own0->parked);
	EXPECT_EQ(101, own1->head);
	EXPECT_EQ(201, own1->attn);
	EXPECT_EQ(301, own1->parked);
	/* Later stores show too: it is the receiver's page. */
	((struct lzchan_shm_rx_lane *)(rxa + l->rx_lanes))->attn = 7;
	EXPECT_EQ(7, own0->attn);

	/* Read-only: no writable mapping, no upgrade, a store faults. */
	EXPECT_EQ(NULL, lz_map(self->tx, page0, ps, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect((void *)own0, ps, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	fault_target = (void *)own0;
	EXPECT_EQ(SIGSEGV, lz_child_signal(store_target, NULL));

	/* The rx header. */
	EXPECT_EQ(NULL, lz_map(self->tx, l->rx_off, ps, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(tx2, l->rx_off, ps, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	/* Every other lane's page, attached or not. */
	for (k = 1; k < 4; k++) {
		EXPECT_EQ(NULL, lz_map(self->tx, page0 + k * l->rx_lane_stride, ps, PROT_READ))
			TH_LOG("lane %u's rx page", k);
		EXPECT_EQ(EACCES, errno);
	}
	EXPECT_EQ(NULL, lz_map(tx2, page0, ps, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	/* The whole area, or its own page with a neighbour. */
	EXPECT_EQ(NULL, lz_map(self->tx, l->rx_off, l->rx_size, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(self->tx, page0, 2 * ps, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(tx2, page0, 2 * ps, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(self->tx, l->rx_off, 2 * ps, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	/* The bell. */
	EXPECT_EQ(NULL, lz_map(self->tx, l->bell_off, l->bell_size, PROT_READ));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, lz_map(tx2, l->bell_off, ps, PROT_READ));
	EXPECT_EQ(EACCES, errno);

	/* The receiver maps any page of it. */
	p = lz_map(self->rx, page1, ps, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	munmap(p, ps);
	p = lz_map(self->rx, l->rx_off, ps, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	munmap(p, ps);

	munmap((void *)own0, ps);
	munmap((void *)own1, ps);
	munmap(rxa, l->rx_size);
	close(tx2);
}

/* Is @efd readable now?  1 or 0 (no waiting). */
static int readable_now(int efd)
{
	struct pollfd p = { .fd = efd, .events = POLLIN };

	return poll(&p, 1, 0);
}

/*
 * LZCHAN_IOC_RING wakes a parked receiver: after the bit, the kernel
 * reads the rx header's park word and, if odd, signals the receiver's
 * eventfd.  The lane pages' copies of the park word do not count.  RING
 * answers 0 either way: the park state is not the sender's to learn.
 */
TEST_F(chan, ring_wakes_a_parked_receiver)
{
	const struct lzchan_layout *l = &self->l;
	struct lzchan_set_eventfd se = { .size = sizeof(se) };
	volatile struct lzchan_shm_rx *hdr;
	volatile struct lzchan_shm_rx_lane *rxl0;
	volatile uint64_t *bell;
	struct lzchan_info in;
	uint64_t b0, v;
	char *rxa;
	int efd;

	LZ_NEED_DEV();
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	se.fd = efd;
	ASSERT_EQ(0, lz_ioctl(self->rx, LZCHAN_IOC_SET_EVENTFD, &se));
	rxa = lz_map(self->rx, l->rx_off, l->rx_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, rxa);
	bell = lz_map(self->rx, l->bell_off, l->bell_size, PROT_READ);
	ASSERT_NE(NULL, bell);
	hdr = (void *)rxa;
	rxl0 = (void *)(rxa + l->rx_lanes);
	b0 = bell[0];

	/* Not parked: the bit only. */
	EXPECT_EQ(0, hdr->parked);
	EXPECT_EQ(0, ioctl(self->tx, LZCHAN_IOC_RING));
	EXPECT_EQ(b0 ^ 1, bell[0]);
	EXPECT_EQ(0, readable_now(efd));
	/* The lane's copy odd, the header even: still not parked. */
	rxl0->parked = 1;
	EXPECT_EQ(0, ioctl(self->tx, LZCHAN_IOC_RING));
	EXPECT_EQ(b0, bell[0]);
	EXPECT_EQ(0, readable_now(efd));

	/* Parked: the bit, then the eventfd. */
	hdr->parked = 1;
	EXPECT_EQ(0, ioctl(self->tx, LZCHAN_IOC_RING));
	EXPECT_EQ(b0 ^ 1, bell[0]);
	EXPECT_EQ(1, readable_now(efd));
	EXPECT_EQ(sizeof(v), read(efd, &v, sizeof(v)));
	EXPECT_EQ(1, v);
	EXPECT_EQ(0, readable_now(efd));
	/* Each ring while parked signals again. */
	EXPECT_EQ(0, ioctl(self->tx, LZCHAN_IOC_RING));
	EXPECT_EQ(b0, bell[0]);
	EXPECT_EQ(1, readable_now(efd));
	EXPECT_EQ(sizeof(v), read(efd, &v, sizeof(v)));

	/* Unparked (even again): the bit only. */
	hdr->parked = 2;
	EXPECT_EQ(0, ioctl(self->tx, LZCHAN_IOC_RING));
	EXPECT_EQ(b0 ^ 1, bell[0]);
	EXPECT_EQ(0, readable_now(efd));

	/* Parked with no eventfd: the bit, nothing signalled. */
	hdr->parked = 3;
	se.fd = -1;
	ASSERT_EQ(0, lz_ioctl(self->rx, LZCHAN_IOC_SET_EVENTFD, &se));
	EXPECT_EQ(0, ioctl(self->tx, LZCHAN_IOC_RING));
	EXPECT_EQ(b0, bell[0]);
	EXPECT_EQ(0, readable_now(efd));

	/* Two signals, counted as wakeups. */
	ASSERT_EQ(0, lz_info(self->rx, &in));
	EXPECT_EQ(2, in.stat.wakeups);

	close(efd);
	munmap((void *)bell, l->bell_size);
	munmap(rxa, l->rx_size);
}

/* What one role writes, the other sees: it is one memory. */
TEST_F(chan, writes_are_shared)
{
	const struct lzchan_layout *l = &self->l;
	volatile __u32 *tx_slot, *rx_slot;
	volatile struct lzchan_shm_rx_lane *rx_line, *tx_view;

	LZ_NEED_DEV();
	tx_slot = lz_map(self->tx, l->lanes_off, l->lane_size, PROT_READ | PROT_WRITE);
	rx_slot = lz_map(self->rx, l->lanes_off, l->lane_size, PROT_READ);
	rx_line = lz_map(self->rx, l->rx_off + l->rx_lanes, page_size(), PROT_READ | PROT_WRITE);
	tx_view = lz_map(self->tx, l->rx_off + l->rx_lanes, page_size(), PROT_READ);
	ASSERT_NE(NULL, tx_slot);
	ASSERT_NE(NULL, rx_slot);
	ASSERT_NE(NULL, rx_line);
	ASSERT_NE(NULL, tx_view);
	tx_slot[l->lane_slots / 4] = 0xabcdef01;
	EXPECT_EQ(0xabcdef01, rx_slot[l->lane_slots / 4]);
	/* Lane 0's rx words: the receiver writes, its sender reads. */
	rx_line->head = 5;
	rx_line->parked = 1;
	EXPECT_EQ(5, tx_view->head);
	EXPECT_EQ(1, tx_view->parked);
}

/* The mapping outlives the fd and keeps the lane attached. */
TEST_F(chan, mapping_survives_close)
{
	const struct lzchan_layout *l = &self->l;
	struct lzchan_shm_lane *lanes;
	volatile __u32 *slot;
	void *info;
	long ch;

	LZ_NEED_DEV();
	info = lz_map(self->rx, l->info_off, l->info_size, PROT_READ);
	ASSERT_NE(NULL, info);
	lanes = (void *)((char *)info + l->info_lanes);
	slot = lz_map(self->tx, l->lanes_off, l->lane_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, slot);
	close(self->tx);
	self->tx = -1;
	ASSERT_EQ(0, lz_unlink(self->name));
	self->name[0] = 0;
	ch = lz_read_long(LZ_SYSFS "channels");

	slot[0] = 42;
	EXPECT_EQ(42, slot[0]);
	EXPECT_EQ(LZCHAN_LANE_ATTACHED, LZCHAN_STATUS_STATE(lanes[0].status));
	munmap((void *)slot, l->lane_size);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_CLOSED), lanes[0].status);

	/* The receiver's fd closed too: only the mapping holds the channel. */
	close(self->rx);
	self->rx = -1;
	EXPECT_EQ(ch, lz_read_long(LZ_SYSFS "channels"));
	EXPECT_EQ(LZCHAN_SHM_MAGIC, ((struct lzchan_shm_hdr *)info)->magic);
	munmap(info, l->info_size);
	EXPECT_EQ(ch - 1, lz_read_long(LZ_SYSFS "channels"));
}

/* A read-only fd may map what the role may read. */
TEST_F(chan, map_shared_from_readonly_fd)
{
	struct lzchan_open o = { .size = sizeof(o), .flags = LZCHAN_OPEN_SENDER, .abi_version = LZCHAN_ABI_VERSION };
	void *p;
	int fd;

	LZ_NEED_DEV();
	fd = open(LZCHAN_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	lz_setname(o.name, self->name);
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	p = lz_map(fd, self->l.info_off, self->l.info_size, PROT_READ);
	ASSERT_NE(NULL, p) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_EQ(LZCHAN_SHM_MAGIC, ((struct lzchan_shm_hdr *)p)->magic);
	munmap(p, self->l.info_size);
	close(fd);
}

/* No get_user_pages() on channel memory: a pin could outlive the lane. */
TEST_F(chan, no_page_pinning)
{
	char buf[64];
	void *p;
	int fd;

	LZ_NEED_DEV();
	p = lz_map(self->tx, self->l.lanes_off, self->l.lane_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	((volatile char *)p)[0] = 1;
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, pread(fd, buf, sizeof(buf), (off_t)(uintptr_t)p));
	close(fd);
	munmap(p, self->l.lane_size);
}

/*
 * READ_IMPLIES_EXEC adds PROT_EXEC to every PROT_READ mapping of the
 * process: the module drops it (channel memory is never executable)
 * rather than refusing every mapping.  Without that personality an
 * explicit PROT_EXEC is still refused.
 */
static int maps_perms(void *p, char perms[5])
{
	unsigned long start, end, want = (unsigned long)p;
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3 &&
			start == want;
	fclose(f);
	return found;
}

TEST_F(chan, read_implies_exec_personality)
{
	int status;
	pid_t pid;

	LZ_NEED_DEV();
	EXPECT_EQ(NULL, lz_map(self->rx, self->l.info_off, self->l.info_size,
			       PROT_READ | PROT_EXEC));
	EXPECT_EQ(EPERM, errno);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char perms[5] = "";
		void *p;

		if (personality(PER_LINUX | READ_IMPLIES_EXEC) < 0)
			_exit(1);
		p = lz_map(self->rx, self->l.info_off, self->l.info_size, PROT_READ);
		if (!p)
			_exit(2);
		if (!maps_perms(p, perms))
			_exit(3);
		_exit(strcmp(perms, "r--s") ? 4 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---- NUMA placement ---- */

static int nr_nodes(void)
{
	char path[64];
	int n = 0;

	for (;;) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

static int lz_placement(int fd, __u64 off, __u32 count, __s32 *nodes)
{
	struct lzchan_placement pl = {
		.size = sizeof(pl), .offset = off, .count = count,
		.nodes = (uintptr_t)nodes,
	};
	int r = lz_ioctl(fd, LZCHAN_IOC_PLACEMENT, &pl);

	return r ? r : (int)pl.count;
}

/* Every page of the channel is on @node, as the module reports it. */
static int all_on_node(int fd, int node, struct __test_metadata *_metadata)
{
	struct lzchan_info in;
	__u64 npages, i;
	__s32 *nodes;
	int bad = 0;

	if (lz_info(fd, &in))
		return -1;
	npages = in.stat.bytes / page_size();
	nodes = calloc(npages, sizeof(*nodes));
	if (!nodes || lz_placement(fd, 0, npages, nodes) != (int)npages) {
		free(nodes);
		return -1;
	}
	for (i = 0; i < npages; i++)
		if (nodes[i] != node) {
			TH_LOG("page %llu on node %d", (unsigned long long)i, nodes[i]);
			bad++;
		}
	free(nodes);
	return bad;
}

/*
 * LZCHAN_IOC_PLACEMENT: pages from an offset, clipped at the channel's
 * end; bad offsets and flags refused.  move_pages(2) cannot see channel
 * pages (raw page frames): placement is read only from the module.
 */
TEST_F(chan, placement_ioctl)
{
	long ps = page_size();
	struct lzchan_placement pl = { .size = sizeof(pl) };
	struct lzchan_info in;
	__u64 npages;
	int unbound;
	__s32 nodes[8] = { -7, -7, -7, -7, -7, -7, -7, -7 };
	void *pages[1];
	int status[1] = { 12345 };
	char *p;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_info(self->rx, &in));
	npages = in.stat.bytes / ps;
	EXPECT_EQ(1, lz_placement(self->rx, 0, 1, nodes));
	EXPECT_LE(0, nodes[0]);
	EXPECT_EQ(-7, nodes[1]);
	/* Clipped at the end: two pages asked, one left. */
	EXPECT_EQ(1, lz_placement(self->tx, (npages - 1) * ps, 2, nodes));
	EXPECT_EQ(0, lz_placement(self->rx, 0, 0, nodes));
	EXPECT_EQ(-EINVAL, lz_placement(self->rx, npages * ps, 1, nodes));
	EXPECT_EQ(-EINVAL, lz_placement(self->rx, 1, 1, nodes));
	EXPECT_EQ(-EFAULT, lz_placement(self->rx, 0, 1, (__s32 *)8));
	pl.flags = 1;
	pl.count = 1;
	pl.nodes = (uintptr_t)nodes;
	EXPECT_EQ(-EINVAL, lz_ioctl(self->rx, LZCHAN_IOC_PLACEMENT, &pl));
	pl.flags = 0;
	pl.reserved0 = 1;
	EXPECT_EQ(-EINVAL, lz_ioctl(self->rx, LZCHAN_IOC_PLACEMENT, &pl));
	unbound = lz_dev();
	ASSERT_LE(0, unbound);
	EXPECT_EQ(-EBADFD, lz_placement(unbound, 0, 1, nodes));
	close(unbound);

	/* The mm has no page to report behind a channel mapping. */
	p = lz_map(self->rx, self->l.info_off, self->l.info_size, PROT_READ);
	ASSERT_NE(NULL, p);
	(void)*(volatile char *)p;
	pages[0] = p;
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, 1UL, pages, NULL, status, 0));
	EXPECT_GT(0, status[0]);
	munmap(p, self->l.info_size);
}

TEST(placement_on_node1)
{
	const char *name = lz_name("node1");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	long before;
	int rx;

	LZ_NEED_DEV();
	if (nr_nodes() < 2)
		SKIP(return, "needs two NUMA nodes");
	before = lz_node_pages(1);
	g.node = 1;
	g.flags = LZCHAN_CREATE_NODE_STRICT;
	g.slot_count = 1024;
	ASSERT_EQ(0, lz_create(name, g));
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx);
	EXPECT_EQ(0, all_on_node(rx, 1, _metadata));
	EXPECT_LT(before, lz_node_pages(1));
	close(rx);
	EXPECT_EQ(0, lz_unlink(name));
	EXPECT_EQ(before, lz_node_pages(1));
}

/* LZCHAN_NODE_LOCAL: the node of the CPU that creates. */
TEST(placement_local_node)
{
	const char *name = lz_name("local");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_info in;
	cpu_set_t set, old;
	int rx, cpu, node;

	LZ_NEED_DEV();
	if (nr_nodes() < 2)
		SKIP(return, "needs two NUMA nodes");
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(old), &old));
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	ASSERT_EQ(0, getcpu((unsigned int *)&cpu, (unsigned int *)&node));
	ASSERT_EQ(1, cpu);
	ASSERT_EQ(0, lz_create(name, g));
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(old), &old));
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx);
	ASSERT_EQ(0, lz_info(rx, &in));
	EXPECT_EQ(node, in.stat.numa_node);
	EXPECT_EQ(0, all_on_node(rx, node, _metadata));
	close(rx);
	EXPECT_EQ(0, lz_unlink(name));
}

static long node_free_bytes(int node)
{
	char path[96], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Node %*d MemFree: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/*
 * A channel larger than node 1's free memory: strict placement fails with
 * ENOMEM (and no OOM kill), preferred placement spills to the other node.
 */
TEST(placement_strict_vs_preferred)
{
	const char *name = lz_name("big");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	long free1, old_max, old_user, n0, n1;
	__u64 want;

	LZ_NEED_DEV();
	if (nr_nodes() < 2)
		SKIP(return, "needs two NUMA nodes");
	free1 = node_free_bytes(1);
	ASSERT_LT(0, free1);
	if (free1 > (1L << 31) || node_free_bytes(0) < free1 / 2)
		SKIP(return, "node sizes unsuited (node 1 free %ld)", free1);
	want = free1 + (64L << 20);
	old_max = lz_read_long(LZ_PARAMS "max_channel_bytes");
	old_user = lz_read_long(LZ_PARAMS "max_user_bytes");
	ASSERT_EQ(0, lz_write_long(LZ_PARAMS "max_channel_bytes", 1L << 32));
	ASSERT_EQ(0, lz_write_long(LZ_PARAMS "max_user_bytes", 1L << 33));

	g.slot_size = 65536;
	g.slot_count = 1024;	/* 64 MiB lanes */
	g.max_senders = want / (64L << 20) + 1;
	g.node = 1;
	g.flags = LZCHAN_CREATE_NODE_STRICT;
	EXPECT_EQ(-ENOMEM, lz_create(name, g));
	n0 = lz_node_pages(0);
	n1 = lz_node_pages(1);
	g.flags = 0;
	EXPECT_EQ(0, lz_create(name, g));
	EXPECT_LT(n0, lz_node_pages(0));
	EXPECT_LT(n1, lz_node_pages(1));
	EXPECT_EQ(0, lz_unlink(name));
	EXPECT_EQ(n0, lz_node_pages(0));
	EXPECT_EQ(n1, lz_node_pages(1));

	lz_write_long(LZ_PARAMS "max_channel_bytes", old_max);
	lz_write_long(LZ_PARAMS "max_user_bytes", old_user);
}

TEST_HARNESS_MAIN
