// SPDX-License-Identifier: GPL-2.0-only
/*
 * Peers: a killed sender is reported to the receiver and wakes it; eventfd
 * wakeups with and without a parked receiver; the receiver's departure;
 * peer credentials; closed lanes that still hold messages.
 */
#include <poll.h>
#include <stddef.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

struct chan {
	char name[LZCHAN_NAME_SIZE];
	int rx;
	struct lzchan_layout l;
	struct lzchan_shm_lane *lanes;	/* receiver's view of the info area */
	void *info;
};

static int chan_setup(struct chan *c, struct lz_geom g)
{
	struct lzchan_info in;

	lz_setname(c->name, lz_name("peer"));
	if (lz_create(c->name, g))
		return -1;
	c->rx = lz_open(c->name, LZCHAN_OPEN_RECEIVER, NULL);
	if (c->rx < 0 || lz_info(c->rx, &in))
		return -1;
	c->l = in.layout;
	c->info = lz_map(c->rx, c->l.info_off, c->l.info_size, PROT_READ);
	if (!c->info)
		return -1;
	c->lanes = (void *)((char *)c->info + c->l.info_lanes);
	return 0;
}

static void chan_teardown(struct chan *c)
{
	munmap(c->info, c->l.info_size);
	close(c->rx);
	lz_unlink(c->name);
}

static int set_eventfd(int rx, int efd)
{
	struct lzchan_set_eventfd e = { .size = sizeof(e), .fd = efd };

	return lz_ioctl(rx, LZCHAN_IOC_SET_EVENTFD, &e);
}

static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static struct lzchan_chan_stat stat_of(int fd)
{
	struct lzchan_info in;

	if (lz_info(fd, &in))
		memset(&in.stat, 0xff, sizeof(in.stat));
	return in.stat;
}

#define STAT(fd, field) (stat_of(fd).field)

TEST(sender_killed_wakes_receiver)
{
	struct chan c;
	int efd, ready[2], status;
	__u64 cnt;
	pid_t pid;
	char b;

	LZ_NEED_DEV();
	ASSERT_EQ(0, chan_setup(&c, LZ_GEOM_DEFAULT));
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, set_eventfd(c.rx, efd));
	ASSERT_EQ(0, pipe(ready));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int tx;

		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive a failure */
		tx = lz_open(c.name, LZCHAN_OPEN_SENDER, NULL);
		if (write(ready[1], tx >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ('y', b);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_ATTACHED), c.lanes[0].status);
	EXPECT_FALSE(readable(efd, 0));

	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(readable(efd, 5000));
	ASSERT_EQ(sizeof(cnt), read(efd, &cnt, sizeof(cnt)));
	EXPECT_EQ(1, cnt);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_CLOSED), c.lanes[0].status);
	EXPECT_EQ(1, STAT(c.rx, peer_deaths));
	EXPECT_EQ(0, STAT(c.rx, senders));
	close(efd);
	chan_teardown(&c);
}

TEST(wake_without_and_with_eventfd)
{
	struct chan c;
	int efd, tx, unbound;
	__u64 cnt;

	LZ_NEED_DEV();
	ASSERT_EQ(0, chan_setup(&c, LZ_GEOM_DEFAULT));
	tx = lz_open(c.name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);

	/* Nothing registered: a wake request does nothing, successfully. */
	EXPECT_EQ(0, ioctl(tx, LZCHAN_IOC_WAKE));
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, set_eventfd(c.rx, efd));
	EXPECT_EQ(1, ioctl(tx, LZCHAN_IOC_WAKE));
	EXPECT_EQ(1, ioctl(tx, LZCHAN_IOC_WAKE));
	ASSERT_EQ(sizeof(cnt), read(efd, &cnt, sizeof(cnt)));
	EXPECT_EQ(2, cnt);
	EXPECT_EQ(3, STAT(c.rx, wake_requests));
	EXPECT_EQ(2, STAT(c.rx, wakeups));

	/* Removed again: nothing is signalled. */
	ASSERT_EQ(0, set_eventfd(c.rx, -1));
	EXPECT_EQ(0, ioctl(tx, LZCHAN_IOC_WAKE));
	EXPECT_FALSE(readable(efd, 0));

	/* Roles and bad fds. */
	EXPECT_EQ(-EPERM, set_eventfd(tx, efd));
	EXPECT_EQ(-1, ioctl(c.rx, LZCHAN_IOC_WAKE));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-EBADF, set_eventfd(c.rx, 9999));
	EXPECT_EQ(-EINVAL, set_eventfd(c.rx, tx));	/* not an eventfd */
	unbound = lz_dev();
	ASSERT_LE(0, unbound);
	EXPECT_EQ(-EBADFD, set_eventfd(unbound, efd));
	EXPECT_EQ(-1, ioctl(unbound, LZCHAN_IOC_WAKE));
	EXPECT_EQ(EBADFD, errno);
	close(unbound);
	close(efd);
	close(tx);
	chan_teardown(&c);
}

/*
 * The receiver announces "parked" in its rx header and, for each lane it
 * polls, in that lane's copy before moving its attn; it sleeps on its
 * eventfd.  A sender that reads the copy on its own rx page asks the
 * kernel to wake it.
 */
TEST(parked_receiver_is_woken)
{
	struct chan c;
	volatile struct lzchan_shm_rx_lane *tx_view;
	__u32 lane = ~0U;
	int tx, status, i;
	pid_t pid;

	LZ_NEED_DEV();
	ASSERT_EQ(0, chan_setup(&c, LZ_GEOM_DEFAULT));
	tx = lz_open(c.name, LZCHAN_OPEN_SENDER, &lane);
	ASSERT_LE(0, tx);
	ASSERT_EQ(0, lane);
	tx_view = lz_map(tx, c.l.rx_off + c.l.rx_lanes, sysconf(_SC_PAGESIZE), PROT_READ);
	ASSERT_NE(NULL, tx_view);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		volatile struct lzchan_shm_rx *rx;
		volatile struct lzchan_shm_rx_lane *rxl;
		int efd = eventfd(0, EFD_CLOEXEC);
		__u64 cnt;

		rx = lz_map(c.rx, c.l.rx_off, c.l.rx_size, PROT_READ | PROT_WRITE);
		if (!rx || efd < 0 || set_eventfd(c.rx, efd))
			_exit(2);
		rxl = (void *)((char *)rx + c.l.rx_lanes);
		alarm(20);
		rx->parked = 1;
		rxl->parked = 1;
		__atomic_store_n(&rxl->attn, rxl->attn + 1, __ATOMIC_RELEASE);
		if (read(efd, &cnt, sizeof(cnt)) != sizeof(cnt))	/* blocks */
			_exit(3);
		rx->parked = 2;
		rxl->parked = 2;
		__atomic_store_n(&rxl->attn, rxl->attn + 1, __ATOMIC_RELEASE);
		_exit(0);
	}
	for (i = 0; i < 2000 && !__atomic_load_n(&tx_view->attn, __ATOMIC_ACQUIRE); i++)
		usleep(5000);
	ASSERT_EQ(1, tx_view->parked);
	usleep(20000);		/* let it block in read() */
	EXPECT_EQ(1, ioctl(tx, LZCHAN_IOC_WAKE));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(2, tx_view->parked);
	close(tx);
	chan_teardown(&c);
}

TEST(receiver_gone)
{
	struct chan c;
	struct lzchan_shm_hdr *h;
	int tx, rx2;

	LZ_NEED_DEV();
	ASSERT_EQ(0, chan_setup(&c, LZ_GEOM_DEFAULT));
	tx = lz_open(c.name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);
	h = lz_map(tx, c.l.info_off, c.l.info_size, PROT_READ);
	ASSERT_NE(NULL, h);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_RX_ATTACHED), h->rx_status);
	/* Its mapping holds the receiver as much as its fd does. */
	close(c.rx);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_RX_ATTACHED), h->rx_status);
	munmap(c.info, c.l.info_size);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_RX_GONE), h->rx_status);
	EXPECT_EQ(-1, ioctl(tx, LZCHAN_IOC_WAKE));
	EXPECT_EQ(EPIPE, errno);

	/* A new receiver attaches; the generation tells them apart. */
	rx2 = lz_open(c.name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx2);
	EXPECT_EQ(LZCHAN_STATUS(2, LZCHAN_RX_ATTACHED), h->rx_status);
	EXPECT_EQ(0, ioctl(tx, LZCHAN_IOC_WAKE));
	munmap(h, c.l.info_size);
	close(tx);
	close(rx2);
	lz_unlink(c.name);
}

static int peer(int fd, __u32 lane, struct lzchan_peer *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->lane = lane;
	return lz_ioctl(fd, LZCHAN_IOC_PEER, p);
}

TEST(peer_credentials)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_peer p;
	struct chan c;
	int tx, ready[2], done[2], status;
	pid_t pid;
	char b;

	LZ_NEED_DEV();
	g.mode = 0666;
	ASSERT_EQ(0, chan_setup(&c, g));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(done));

	/* A sender with other credentials, known to the kernel only. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setresgid(2345, 2345, 2345) || setresuid(1234, 1234, 1234))
			_exit(1);
		tx = lz_open(c.name, LZCHAN_OPEN_SENDER, NULL);
		if (write(ready[1], tx >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		if (read(done[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ('y', b);
	ASSERT_EQ(0, peer(c.rx, 0, &p));
	EXPECT_EQ(pid, p.pid);
	EXPECT_EQ(1234, p.uid);
	EXPECT_EQ(2345, p.gid);
	EXPECT_EQ(1, p.gen);

	ASSERT_EQ(0, peer(c.rx, LZCHAN_LANE_NONE, &p));
	EXPECT_EQ(getpid(), p.pid);
	EXPECT_EQ(getuid(), p.uid);
	EXPECT_EQ(-ENOTCONN, peer(c.rx, 1, &p));
	EXPECT_EQ(-EINVAL, peer(c.rx, 4, &p));

	/* A sender may ask about itself and the receiver only. */
	tx = lz_open(c.name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);
	EXPECT_EQ(0, peer(tx, 1, &p));
	EXPECT_EQ(getpid(), p.pid);
	EXPECT_EQ(0, peer(tx, LZCHAN_LANE_NONE, &p));
	EXPECT_EQ(-EPERM, peer(tx, 0, &p));

	ASSERT_EQ(1, write(done[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(-ENOTCONN, peer(c.rx, 0, &p));
	close(tx);
	chan_teardown(&c);
}

/*
 * A closed lane whose sender left a message the receiver has not taken is
 * not handed to a new sender (whose credentials would then cover the old
 * message) until the receiver acknowledges the close; then it is scrubbed.
 */
TEST(closed_lane_with_messages)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct chan c;
	volatile struct lzchan_slot_hdr *slot, *rx_slot;
	volatile struct lzchan_shm_rx_lane *rxl;
	char *lane, *rxarea;
	__u32 l = ~0U;
	int tx;

	LZ_NEED_DEV();
	g.max_senders = 1;
	ASSERT_EQ(0, chan_setup(&c, g));
	tx = lz_open(c.name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);
	lane = lz_map(tx, c.l.lanes_off, c.l.lane_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, lane);
	/* Publish position 0, and forge position 5 ahead of time. */
	slot = (void *)(lane + c.l.lane_slots);
	memset((char *)slot + 8, 'S', 56);	/* the old sender's payload */
	slot->len = 4;
	slot->seq = 1;
	((volatile struct lzchan_slot_hdr *)(lane + c.l.lane_slots + 5 * 64))->seq = 6;
	munmap(lane, c.l.lane_size);
	close(tx);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_CLOSED), c.lanes[0].status);

	EXPECT_EQ(-EUSERS, lz_open(c.name, LZCHAN_OPEN_SENDER, NULL));

	/* The receiver drains position 0 and acknowledges generation 1. */
	rxarea = lz_map(c.rx, c.l.rx_off, c.l.rx_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, rxarea);
	rxl = (void *)(rxarea + c.l.rx_lanes);
	rxl->head = 1;
	rxl->close_ack = 1;
	tx = lz_open(c.name, LZCHAN_OPEN_SENDER, &l);
	ASSERT_LE(0, tx);
	EXPECT_EQ(0, l);
	EXPECT_EQ(LZCHAN_STATUS(2, LZCHAN_LANE_ATTACHED), c.lanes[0].status);

	/* Nothing the old sender left reads as ready any more. */
	lane = lz_map(c.rx, c.l.lanes_off, c.l.lane_size, PROT_READ);
	ASSERT_NE(NULL, lane);
	for (l = 0; l < 64; l++) {
		rx_slot = (void *)(lane + c.l.lane_slots + l * 64);
		EXPECT_NE(l + 1, rx_slot->seq);
		EXPECT_NE(l + 65, rx_slot->seq);
	}
	/* ... and none of its payload reaches the new sender. */
	EXPECT_EQ(0, lane[c.l.lane_slots + 8]);
	EXPECT_EQ(0, lane[c.l.lane_slots + 63]);
	munmap(lane, c.l.lane_size);
	munmap(rxarea, c.l.rx_size);
	close(tx);
	chan_teardown(&c);
}

TEST_HARNESS_MAIN
