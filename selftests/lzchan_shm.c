// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shared-memory fallback against a buggy or hostile peer (host only):
 * what the OS lets a party with write access to the channel file do to
 * the others, and what the library makes of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

/* A scratch LZCHAN_SHM_DIR for the test, on the shm backend. */
static void shm_dir(struct __test_metadata *_metadata, char *dir, size_t len)
{
	snprintf(dir, len, "/dev/shm/lzchan-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(dir));
	setenv("LZCHAN_SHM_DIR", dir, 1);
	setenv("LZCHAN_BACKEND", "shm", 1);
}

/*
 * A channel is reserved in full when it is made: one that does not fit in
 * its file system is refused there (ENOSPC), and one that fits never
 * faults later for want of pages.
 */
TEST(channel_that_does_not_fit_is_refused_at_creation)
{
	char dir[] = "/tmp/lzchan-tmpfs.XXXXXX", buf[4096];
	struct lzchan *rx, *tx, *rx2;
	struct lzchan_opts o;
	int i, r, sent = 0;

	setenv("LZCHAN_BACKEND", "shm", 1);
	if (unshare(CLONE_NEWNS) < 0)
		SKIP(return, "no mount namespace (%s)", strerror(errno));
	ASSERT_EQ(0, mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL));
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, mount("lzchan", dir, "tmpfs", 0, "size=4m")) TH_LOG("%s", strerror(errno));
	setenv("LZCHAN_SHM_DIR", dir, 1);

	/* 2 lanes of 4 MiB: twice the file system. */
	o = lz_opts(4096, 1024, 2);
	EXPECT_EQ(-ENOSPC, lzchan_open(&rx, "big", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	EXPECT_EQ(0, lz_dir_entries(dir)) TH_LOG("a refused channel left its file");
	/* 2 MiB fits; a second one no longer does. */
	o = lz_opts(4096, 256, 2);
	ASSERT_EQ(0, lzchan_open(&rx, "fits", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	EXPECT_EQ(-ENOSPC, lzchan_open(&rx2, "second", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	/* Every slot of the first, written and read. */
	ASSERT_EQ(0, lzchan_open(&tx, "fits", LZCHAN_SENDER, NULL));
	memset(buf, 'x', sizeof(buf));
	while ((r = lzchan_send(tx, buf, 4096 - 8)) == 0)
		sent++;
	EXPECT_EQ(-EAGAIN, r);
	EXPECT_EQ(256, sent);
	for (i = 0; i < sent; i++)
		ASSERT_EQ(4096 - 8, lzchan_recv(rx, buf, sizeof(buf), NULL));
	lzchan_close(tx);
	lzchan_close(rx);
	EXPECT_EQ(0, lzchan_unlink("fits"));
	umount(dir);
	rmdir(dir);
}

static void path_of(char *path, size_t len, const char *dir, const char *name)
{
	snprintf(path, len, "%s/lzchan.%s", dir, name);
}

/*
 * A peer that cuts the channel file short kills nobody: every party that
 * touches the lost memory gets -EIO from then on (never a silent
 * success), whether it was sending, receiving, or parked waiting.
 */
TEST(truncated_channel_kills_nobody)
{
	char dir[64], path[128], buf[64], b;
	struct lzchan *rx, *tx;
	struct lzchan_opts o = lz_opts(64, 64, 4);
	int go[2], ready[2], i, st;
	pid_t sender, waiter;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "cut");
	ASSERT_EQ(0, lzchan_open(&rx, "cut", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, "cut", LZCHAN_SENDER, NULL));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, lzchan_send(tx, "m", 1));
	ASSERT_EQ(1, lzchan_recv(rx, buf, sizeof(buf), NULL));
	lzchan_close(rx);	/* another process's receiver takes over */
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));

	/* The receiver, parked when the file is cut. */
	waiter = fork();
	ASSERT_LE(0, waiter);
	if (!waiter) {
		struct lzchan *r2;
		int r;

		if (lzchan_open(&r2, "cut", LZCHAN_RECEIVER, NULL) || write(ready[1], "r", 1) != 1)
			_exit(20);
		do
			r = lzchan_recv_wait(r2, buf, sizeof(buf), NULL, 30LL * 1000000000);
		while (r > 0);
		lzchan_close(r2);
		_exit(r == -EIO ? 0 : 21);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	/* A sender in another process, which sends again after the cut. */
	sender = fork();
	ASSERT_LE(0, sender);
	if (!sender) {
		struct lzchan *c;

		if (lzchan_open(&c, "cut", LZCHAN_SENDER, NULL) || lzchan_send(c, "s", 1) ||
		    write(ready[1], "s", 1) != 1)
			_exit(10);
		if (read(go[0], &b, 1) != 1)
			_exit(11);
		i = lzchan_send(c, "s", 1);
		lzchan_close(c);
		_exit(i == -EIO ? 0 : 12);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	usleep(100000);		/* the receiver parks */
	ASSERT_EQ(0, truncate(path, 0));
	ASSERT_EQ(1, write(go[1], "g", 1));

	EXPECT_EQ(-EIO, lzchan_send(tx, "m", 1));
	EXPECT_EQ(-EIO, lzchan_send(tx, "m", 1));
	lzchan_close(tx);
	ASSERT_EQ(sender, waitpid(sender, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st)) TH_LOG("sender: status %#x", st);
	ASSERT_EQ(waiter, waitpid(waiter, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st)) TH_LOG("parked receiver: status %#x", st);
	/* A new open of the cut file says what it is. */
	EXPECT_EQ(-EPROTO, lzchan_open(&tx, "cut", LZCHAN_SENDER, NULL));
	lzchan_unlink("cut");
	rmdir(dir);
}

/* Map the channel file open at @fd up to its lanes, writable, as a peer
 * with write access can: the library's file header (eight 32-bit words,
 * then the layout, into *@l), then the control areas.  MAP_FAILED on
 * error; *@len is the length to unmap. */
static char *ctl_map(int fd, struct lzchan_layout *l, size_t *len)
{
	if (pread(fd, l, sizeof(*l), 32) != (ssize_t)sizeof(*l))
		return MAP_FAILED;
	*len = sysconf(_SC_PAGESIZE) + l->lanes_off;
	return mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

/* The receiver's published head of @lane, where anyone may forge it on
 * shm: in a mapping of the channel file at @path made by hand (*@map,
 * *@len: to unmap). */
static volatile uint32_t *head_of(struct __test_metadata *_metadata, const char *path,
				  uint32_t lane, char **map, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	struct lzchan_layout l;
	int fd = open(path, O_RDWR);

	ASSERT_LE(0, fd);
	*map = ctl_map(fd, &l, len);
	close(fd);
	ASSERT_NE(MAP_FAILED, *map);
	return (volatile uint32_t *)(*map + page + l.rx_off + l.rx_lanes +
				     lane * sizeof(struct lzchan_shm_rx_lane));
}

/*
 * A head forged "ahead" of the sender's tail (anyone with write access
 * can store it on shm) buys no room beyond the ring: the sender never
 * overwrites more than a ring's worth of unread messages of its own.
 */
TEST(forged_head_gives_no_extra_room)
{
	struct lzchan_opts o = lz_opts(64, 64, 1);
	char dir[64], path[128], buf[16];
	struct lzchan_geom g;
	struct lzchan *rx, *tx;
	volatile uint32_t *head;
	int k, r = 0;
	size_t len;
	char *map;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "forgehead");
	ASSERT_EQ(0, lzchan_open(&rx, "forgehead", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, "forgehead", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_geometry(tx, &g));
	head = head_of(_metadata, path, g.lane, &map, &len);
	/* Fill the ring (the sender's view of the head refreshes then),
	 * forge the head far ahead and also halfway round 2^32. */
	for (k = 0; k < 65 && !r; k++)
		r = lzchan_send(tx, "12345678", 8);
	ASSERT_EQ(-EAGAIN, r) TH_LOG("the ring took %d", k);
	*head = 64 + 1000;
	EXPECT_EQ(-EAGAIN, lzchan_send(tx, "12345678", 8));
	for (k = 0, r = 0; k < 2000 && !r; k++)
		r = lzchan_send(tx, "12345678", 8);
	EXPECT_EQ(1, k) TH_LOG("%d sends over unread messages", k - 1);
	*head = 64 + 0x80000000U;
	for (k = 0, r = 0; k < 2000 && !r; k++)
		r = lzchan_send(tx, "12345678", 8);
	EXPECT_EQ(1, k) TH_LOG("%d sends over unread messages", k - 1);
	/* Put it back: the receiver's own view never moved, it reads all 64. */
	*head = 0;
	for (k = 0; lzchan_recv(rx, buf, sizeof(buf), NULL) == 8; k++)
		;
	EXPECT_EQ(64, k);
	munmap(map, len);
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink("forgehead");
	rmdir(dir);
}

/*
 * A head forged a little ahead of the sender's tail, but behind the end of
 * a message of several slots, gives no room either (it once did, to the
 * library's room check, unlike the inline gate): and a reservation it let
 * through could then not be committed for a shorter message (-EAGAIN,
 * the reservation left open, every later call -EBUSY: the lane hung).
 * Whatever the head says, a reservation either is refused or commits.
 */
TEST(forged_head_cannot_strand_a_reservation)
{
	struct lzchan_opts o = lz_opts(64, 16, 1);
	char dir[64], path[128], big[600];
	struct lzchan_geom g;
	struct lzchan *rx, *tx;
	volatile uint32_t *head;
	uint32_t ahead;
	size_t len;
	char *map;
	void *p;
	int r;

	memset(big, 'b', sizeof(big));
	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "strand");
	ASSERT_EQ(0, lzchan_open(&rx, "strand", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, "strand", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_geometry(tx, &g));
	head = head_of(_metadata, path, g.lane, &map, &len);
	/* A full ring, tail 16 (the sender's view of the head refreshes as
	 * it fills).  Then heads 7 down to 1 ahead of it, inside the 8 slots
	 * a 500-byte message takes: each is loaded, as the cached one leaves
	 * no room. */
	for (r = 0; r < 16; r++)
		ASSERT_EQ(0, lzchan_send(tx, "x", 1));
	ASSERT_EQ(-EAGAIN, lzchan_send(tx, "x", 1));
	for (ahead = 7; ahead >= 1; ahead--) {
		*head = 16 + ahead;
		r = lzchan_reserve(tx, 500, &p);
		EXPECT_EQ(-EAGAIN, r) TH_LOG("head %u ahead gave room", ahead);
		if (r == 0) {
			/* And were one granted, it must commit. */
			memset(p, 'r', 500);
			EXPECT_EQ(0, lzchan_commit(tx, 100)) TH_LOG("head %u ahead", ahead);
			EXPECT_NE(-EBUSY, lzchan_send(tx, "y", 1))
				TH_LOG("a reservation was stranded");
			break;
		}
		EXPECT_EQ(-EAGAIN, lzchan_send(tx, big, 500)) TH_LOG("head %u ahead", ahead);
	}
	munmap(map, len);
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink("strand");
	rmdir(dir);
}

/*
 * A lane's mapping runs on past its last slot (it is rounded up to pages),
 * and its sender may write there.  A batch receive that runs up to the
 * ring's end must wrap, never read a "slot" past it: here the hostile
 * sender forges one that looks ready, right after its last real message.
 */
TEST(batch_never_reads_past_the_ring)
{
	struct lzchan_opts o = lz_opts(64, 64, 1);
	struct lzchan_slot_hdr *past;
	struct lzchan_msg m[16];
	struct lzchan *rx, *tx;
	char dir[64], buf[16];
	void *p;
	int k;

	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(0, lzchan_open(&rx, "pastend", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, "pastend", LZCHAN_SENDER, NULL));
	/* Positions 0..59 sent and read; 60..62 sent; 63, the last slot, by
	 * reservation, which shows where the ring ends. */
	for (k = 0; k < 60; k++) {
		ASSERT_EQ(0, lzchan_send(tx, &k, sizeof(k)));
		ASSERT_EQ((int)sizeof(k), lzchan_recv(rx, buf, sizeof(buf), NULL));
	}
	for (; k < 63; k++)
		ASSERT_EQ(0, lzchan_send(tx, &k, sizeof(k)));
	ASSERT_EQ(0, lzchan_reserve(tx, sizeof(k), &p));
	memcpy(p, &k, sizeof(k));
	ASSERT_EQ(0, lzchan_commit(tx, sizeof(k)));
	past = (struct lzchan_slot_hdr *)((char *)p - sizeof(*past) + 64);
	past->len = 4;
	__atomic_store_n(&past->seq, 64 + 1, __ATOMIC_RELEASE);

	ASSERT_EQ(4, lzchan_recv_batch(rx, m, 16));
	for (k = 0; k < 4; k++)
		EXPECT_EQ(60 + k, *(const int *)m[k].data);
	lzchan_release(rx, &m[3]);
	EXPECT_EQ(-EAGAIN, lzchan_recv_batch(rx, m, 16)) TH_LOG("a slot past the ring was read");
	/* And the ring goes on from its start. */
	k = 64;
	ASSERT_EQ(0, lzchan_send(tx, &k, sizeof(k)));
	ASSERT_EQ(1, lzchan_recv_batch(rx, m, 16));
	EXPECT_EQ(64, *(const int *)m[0].data);
	lzchan_release(rx, &m[0]);
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink("pastend");
	rmdir(dir);
}

/* A receiver that touches the channel after the cut gets -EIO. */
TEST(truncated_channel_receiver)
{
	char dir[64], path[128], buf[64];
	struct lzchan_opts o = lz_opts(64, 64, 2);
	struct lzchan *rx, *tx;
	struct lzchan_msg m;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "cutrx");
	ASSERT_EQ(0, lzchan_open(&rx, "cutrx", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, "cutrx", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "a", 1));
	ASSERT_EQ(0, lzchan_send(tx, "b", 1));
	ASSERT_EQ(0, lzchan_send(tx, "c", 1));
	ASSERT_EQ(1, lzchan_recv(rx, buf, sizeof(buf), NULL));
	/* A view of "b", with the inline receives' span still holding "c"
	 * (the handle's span, lzchan.h). */
	ASSERT_EQ(0, lzchan_peek(rx, &m));
	ASSERT_LT(0, ((const struct __lzchan_fast *)rx)->span);
	/* Cut to one page: the header survives, the lanes do not. */
	ASSERT_EQ(0, truncate(path, sysconf(_SC_PAGESIZE)));
	/* Reading the view meets the cut: the library's SIGBUS handler maps
	 * zeros over the channel and empties that span (so an inline receive
	 * whose copy met it says -EIO), with no library call in between. */
	EXPECT_EQ(0, *(const volatile char *)m.data);
	EXPECT_EQ(0, ((const struct __lzchan_fast *)rx)->span);
	EXPECT_EQ(-EIO, lzchan_recv(rx, buf, sizeof(buf), NULL));
	/* Every later call says so too, never "nothing there". */
	EXPECT_EQ(-EIO, lzchan_recv(rx, buf, sizeof(buf), NULL));
	EXPECT_EQ(-EIO, lzchan_peek(rx, &m));
	EXPECT_EQ(-EIO, lzchan_recv_wait(rx, buf, sizeof(buf), NULL, 1000000));
	EXPECT_EQ(-EIO, lzchan_send(tx, "c", 1));
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink("cutrx");
	rmdir(dir);
}

enum cut_way { CUT_SEND, CUT_COMMIT, CUT_BATCH, CUT_BIG_SEND, CUT_BIG_RECV };

/* Message k of a cut test: its number, then a pattern (never zeros). */
static void cut_fill(char *m, size_t len, uint32_t k)
{
	memset(m, 'a' + k % 26, len);
	memcpy(m, &k, sizeof(k));
}

/*
 * A channel whose file loses its last two pages (the end of its one lane)
 * while in use, sent to and received from in @way.  Returns how many
 * sends succeeded; *@got is how many messages came out whole before the
 * receiver's error, which must be -EIO (and the sender's too).
 */
static int cut_run(struct __test_metadata *_metadata, const char *dir, enum cut_way way,
		   bool tx_first, int *got)
{
	size_t len = way >= CUT_BIG_SEND ? 1500 : 8;
	struct lzchan_opts o = lz_opts(64, 256, 1);
	char path[128], m[1500], r[1500];
	struct iovec iov[256];
	struct lzchan *rx, *tx;
	int sent = 0, ret = 0, k;
	struct stat st;
	void *p;

	path_of(path, sizeof(path), dir, "midcut");
	if (tx_first) {
		/* The receiver never moves this lane's attn (it finds the
		 * lane attached and polls it), so the sender's last look saw
		 * attn 0 -- what the zeroed replacement says too: only the
		 * handler's poison of attn_seen tells the inline send. */
		ASSERT_EQ(1, lzchan_create("midcut", &o, 0));
		ASSERT_EQ(0, lzchan_open(&tx, "midcut", LZCHAN_SENDER, NULL));
		ASSERT_EQ(0, lzchan_open(&rx, "midcut", LZCHAN_RECEIVER, NULL));
	} else {
		ASSERT_EQ(0, lzchan_open(&rx, "midcut", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
		ASSERT_EQ(0, lzchan_open(&tx, "midcut", LZCHAN_SENDER, NULL));
	}
	ASSERT_EQ(0, stat(path, &st));
	if (way == CUT_BIG_RECV) {	/* written before the cut, read after */
		for (k = 0; k < 10; k++) {
			cut_fill(m, len, k);
			ASSERT_EQ(0, lzchan_send(tx, m, len));
		}
		sent = 10;
	}
	if (way == CUT_BATCH) {
		/* One send first: the sender then knows the receiver's attn,
		 * so the batch's own run (not one send at a time) meets the
		 * cut, in the middle of the run. */
		cut_fill(m, len, 0);
		ASSERT_EQ(0, lzchan_send(tx, m, len));
		sent = 1;
	}
	ASSERT_EQ(0, truncate(path, st.st_size - 2 * sysconf(_SC_PAGESIZE)));
	switch (way) {
	case CUT_SEND:
	case CUT_BIG_SEND:
		for (; sent < 256; sent++) {
			cut_fill(m, len, sent);
			ret = lzchan_send(tx, m, len);
			if (ret)
				break;
		}
		break;
	case CUT_COMMIT:
		for (; sent < 256; sent++) {
			ret = lzchan_reserve(tx, len, &p);
			if (ret)
				break;
			cut_fill(p, len, sent);	/* may be what meets the cut */
			ret = lzchan_commit(tx, len);
			if (ret)
				break;
		}
		break;
	case CUT_BATCH:
		for (k = 0; k < 255; k++) {
			iov[k].iov_base = malloc(len);
			iov[k].iov_len = len;
			cut_fill(iov[k].iov_base, len, k + 1);
		}
		ret = lzchan_send_batch(tx, iov, 255);
		/* Those before the cut (half the ring) went out. */
		ASSERT_LT(0, ret);
		EXPECT_GT(255, ret);
		sent += ret;
		ret = lzchan_send_batch(tx, iov, 1);
		for (k = 0; k < 255; k++)
			free(iov[k].iov_base);
		break;
	case CUT_BIG_RECV:
		ret = lzchan_send(tx, m, len);
		break;
	}
	EXPECT_EQ(-EIO, ret) TH_LOG("sender, after %d sends", sent);
	/* Its close still tells the receiver (through the part of the file
	 * that is left), which may not have been woken for the last sends. */
	lzchan_close(tx);
	for (*got = 0;; ++*got) {
		ret = lzchan_recv(rx, r, sizeof(r), NULL);
		if (ret < 0)
			break;
		cut_fill(m, len, *got);
		ASSERT_EQ((int)len, ret);
		EXPECT_EQ(0, memcmp(m, r, len)) TH_LOG("message %d came out changed", *got);
	}
	/* The cut met (-EIO), or the end of what was sent (-EPIPE): never
	 * "nothing yet" for messages that will not come. */
	EXPECT_TRUE(ret == -EIO || ret == -EPIPE)
		TH_LOG("receiver: %d after %d messages", ret, *got);
	lzchan_close(rx);
	EXPECT_EQ(0, lzchan_unlink("midcut"));
	return sent;
}

/*
 * A cut in the middle of a lane: the send, commit or batch entry whose
 * message met it says -EIO (not 0 for a message that reached nobody), and
 * a receive whose copy met it says -EIO (not the zeros it read).  Every
 * message reported sent is received whole, once, and the sender's close
 * still reaches the receiver.
 */
TEST(cut_mid_lane_is_never_a_silent_success)
{
	static const char *const ways[] = { "send", "commit", "batch", "big send", "big recv" };
	char dir[64];
	int w, sent, got, tx_first;

	shm_dir(_metadata, dir, sizeof(dir));
	for (tx_first = 0; tx_first < 2; tx_first++) {
		for (w = CUT_SEND; w <= CUT_BIG_RECV; w++) {
			sent = cut_run(_metadata, dir, w, tx_first, &got);
			if (w == CUT_BIG_RECV)
				sent = 7;	/* of 10, the 8th crosses the cut */
			EXPECT_EQ(sent, got) TH_LOG("%s%s: %d sent, %d received", ways[w],
						    tx_first ? " (sender first)" : "", sent, got);
		}
	}
	rmdir(dir);
}

/*
 * The inline receive's copy meets a cut: it must say -EIO, not hand out
 * what it copied.  A cut cannot be met by the copy of a real lane
 * deterministically (a slot never straddles a page, so the copy reads the
 * page its seq was read from: only a truncation in between, a race of a
 * few instructions, gets there), so the header's take runs on a lane made
 * by hand: the slot's header at the end of one page, its payload on the
 * next, which is PROT_NONE; the SIGSEGV that the copy meets plays the
 * library's SIGBUS handler -- it zeroes the handle's span, as that
 * handler does for a receiver -- and lets the copy go on.
 */
static struct __lzchan_fast *cut_fake;
static char *cut_page;
static long cut_psize;

static void cut_fake_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if ((char *)si->si_addr < cut_page || (char *)si->si_addr >= cut_page + cut_psize)
		abort();
	cut_fake->span = 0;
	cut_fake->cut = 1;
	if (mprotect(cut_page, cut_psize, PROT_READ))
		abort();
}

/* A receiver handle and its one lane, made by hand: 64-byte slots at
 * @slots, the lane's peek and head at @peek, its slot the first, a span
 * of 5 there (as if scanned). */
static void cut_fake_rx(struct __lzchan_fast *f, struct __lzchan_rxlane *rl, char *slots,
			uint32_t peek)
{
	memset(f, 0, sizeof(*f));
	memset(rl, 0, sizeof(*rl));
	f->role = LZCHAN_RECEIVER;
	f->slot_size = 64;
	f->slot_shift = 6;
	f->rx_max = 56;
	f->rx_payload = 56;
	f->span = 5;
	f->span_at = slots;
	f->cur = rl;
	rl->peek = rl->head = peek;
	rl->slots = slots;
}

TEST(inline_recv_copy_meets_a_cut)
{
	struct __lzchan_fast f;
	struct __lzchan_rxlane rl;
	struct lzchan_slot_hdr *h;
	struct sigaction sa, old;
	struct lzchan_msg m;
	char *two, buf[64];
	uint32_t lane = 99;
	int fault;

	cut_psize = sysconf(_SC_PAGESIZE);
	two = mmap(NULL, 2 * cut_psize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, two);
	cut_page = two + cut_psize;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = cut_fake_handler;
	sa.sa_flags = SA_SIGINFO;
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, &old));
	for (fault = 0; fault < 2; fault++) {
		/* One slot: its header the last 8 bytes of the first page. */
		cut_fake_rx(&f, &rl, cut_page - sizeof(*h), 7);
		f.cur_lane = 3;
		h = (struct lzchan_slot_hdr *)(cut_page - sizeof(*h));
		ASSERT_EQ(0, mprotect(cut_page, cut_psize, PROT_READ | PROT_WRITE));
		memcpy(cut_page, "forty bytes of a message, which arrived", 40);
		h->len = 40;
		h->seq = 8;		/* position 7, ready */
		if (fault)
			ASSERT_EQ(0, mprotect(cut_page, cut_psize, PROT_NONE));
		cut_fake = &f;
		memset(buf, 0, sizeof(buf));
		lane = 99;
		if (!fault) {
			EXPECT_EQ(40, lzchan_recv((struct lzchan *)&f, buf, sizeof(buf), &lane));
			EXPECT_EQ(0, memcmp(buf, "forty bytes", 11));
			EXPECT_EQ(3, lane);
			EXPECT_EQ(8, rl.peek);
			EXPECT_EQ(8, rl.head);
			EXPECT_EQ(4, f.span);
			continue;
		}
		EXPECT_EQ(-EIO, lzchan_recv((struct lzchan *)&f, buf, sizeof(buf), &lane))
			TH_LOG("a copy that met a cut was handed out");
		EXPECT_EQ(99, lane);
		EXPECT_EQ(7, rl.peek);	/* not taken */
		EXPECT_EQ(7, rl.head);
		EXPECT_EQ(0, f.span);	/* the span stays empty */
	}
	/* The inline peek, whose load of len met the cut (the header
	 * straddling the two pages here): -EIO, not a view of what the
	 * replacement holds. */
	cut_fake_rx(&f, &rl, cut_page - sizeof(h->seq), 7);
	h = (struct lzchan_slot_hdr *)rl.slots;
	ASSERT_EQ(0, mprotect(cut_page, cut_psize, PROT_READ | PROT_WRITE));
	h->len = 40;
	h->seq = 8;
	ASSERT_EQ(0, mprotect(cut_page, cut_psize, PROT_NONE));
	cut_fake = &f;
	EXPECT_EQ(-EIO, lzchan_peek((struct lzchan *)&f, &m)) TH_LOG("a view of a cut lane");
	EXPECT_EQ(7, rl.peek);
	EXPECT_EQ(0, f.span);
	/* The inline batch: a ring of two slots, the first on the first page,
	 * the second on the faulting one; both ready.  Whole, it hands out
	 * both views; when the look at the second meets the cut, -EIO (not
	 * the first view, nor a view of the replacement). */
	for (fault = 0; fault < 2; fault++) {
		struct lzchan_msg mm[4];

		cut_fake_rx(&f, &rl, cut_page - 64, 8);
		f.slot_count = 2;
		f.mask = 1;
		f.span = 2;	/* the scan stops at the ring's end */
		f.cur_lane = 3;
		rl.gen = 6;
		ASSERT_EQ(0, mprotect(cut_page, cut_psize, PROT_READ | PROT_WRITE));
		h = (struct lzchan_slot_hdr *)rl.slots;
		h->len = 10;
		h->seq = 9;
		h = (struct lzchan_slot_hdr *)cut_page;
		h->len = 20;
		h->seq = 10;
		if (fault)
			ASSERT_EQ(0, mprotect(cut_page, cut_psize, PROT_NONE));
		cut_fake = &f;
		if (!fault) {
			ASSERT_EQ(2, lzchan_recv_batch((struct lzchan *)&f, mm, 4));
			EXPECT_EQ(10, mm[0].len);
			EXPECT_EQ(20, mm[1].len);
			EXPECT_EQ(3, mm[1].lane);
			EXPECT_EQ(10, mm[1].__end);
			EXPECT_EQ(6, mm[1].__gen);
			EXPECT_EQ(cut_page + 8, (const char *)mm[1].data);
			EXPECT_EQ(10, rl.peek);
			EXPECT_EQ(8, rl.head);	/* until the release */
			EXPECT_EQ(0, f.span);
			continue;
		}
		EXPECT_EQ(-EIO, lzchan_recv_batch((struct lzchan *)&f, mm, 4))
			TH_LOG("views of a cut lane");
		EXPECT_EQ(8, rl.peek);
		EXPECT_EQ(0, f.span);
	}
	sigaction(SIGSEGV, &old, NULL);
	munmap(two, 2 * cut_psize);
}

/* Milliseconds on the monotonic clock. */
static uint64_t hw_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A length forged after the ready test: a sender (anyone with write
 * access, on shm) rewrites the len of a message the receiver's span
 * already holds, after its seq was found ready.  The receive reads len
 * once and bounds it (design.rst, "The receive", invariant 3): -EBADMSG,
 * never a copy or a view past the slot -- for the copy, the view and the
 * batch alike.  ASan (host/asan/lzchan_shm) watches the bytes.
 */
TEST(length_forged_after_the_ready_test)
{
	struct lzchan_opts o = lz_opts(64, 64, 1);
	long page = sysconf(_SC_PAGESIZE);
	char dir[64], path[128], name[32], buf[64];
	struct lzchan_layout l;
	struct lzchan_msg m[4];
	struct lzchan *rx, *tx;
	struct lzchan_geom g;
	struct stat st;
	int mode, fd, r;
	char *map;

	shm_dir(_metadata, dir, sizeof(dir));
	for (mode = 0; mode < 3; mode++) {
		volatile struct lzchan_slot_hdr *h;

		snprintf(name, sizeof(name), "forgelen%d", mode);
		path_of(path, sizeof(path), dir, name);
		ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
		ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
		ASSERT_EQ(0, lzchan_geometry(tx, &g));
		ASSERT_EQ(0, lzchan_send(tx, "a", 1));
		ASSERT_EQ(0, lzchan_send(tx, "b", 1));
		ASSERT_EQ(0, lzchan_send(tx, "c", 1));
		/* "a" taken: the span holds "b" and "c", found ready. */
		if (mode == 0)
			r = lzchan_recv(rx, buf, sizeof(buf), NULL) - 1;
		else if (mode == 1)
			r = lzchan_peek(rx, &m[0]);
		else
			r = lzchan_recv_batch(rx, m, 1) - 1;
		ASSERT_EQ(0, r) TH_LOG("mode %d: the first message", mode);
		ASSERT_LE(1U, ((const struct __lzchan_fast *)rx)->span);
		/* The slot of "b", position 1, in a mapping of the file. */
		fd = open(path, O_RDWR);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, fstat(fd, &st));
		ASSERT_EQ((ssize_t)sizeof(l), pread(fd, &l, sizeof(l), 32));
		map = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		ASSERT_NE(MAP_FAILED, map);
		h = (volatile struct lzchan_slot_hdr *)(map + page + l.lanes_off +
							(size_t)g.lane * l.lane_stride +
							l.lane_slots + 1 * 64);
		ASSERT_EQ(2U, h->seq);
		h->len = 0x7fff0000U;
		memset(buf, 0, sizeof(buf));
		if (mode == 0)
			r = lzchan_recv(rx, buf, sizeof(buf), NULL);
		else if (mode == 1)
			r = lzchan_peek(rx, &m[1]);
		else
			r = lzchan_recv_batch(rx, m + 1, 3);
		EXPECT_EQ(-EBADMSG, r) TH_LOG("mode %d", mode);
		EXPECT_EQ(0, buf[0]) TH_LOG("mode %d: something was copied", mode);
		munmap(map, st.st_size);
		lzchan_close(tx);
		lzchan_close(rx);
		lzchan_unlink(name);
	}
	rmdir(dir);
}

/*
 * A receiver restarted after a crash drains what is left (api.rst: a
 * closed lane is drained, then its -EPIPE comes once).  Four producer
 * processes send at a 20 us pace; the receiver is SIGKILLed while they
 * do and a new one opens at once; the producers finish (or stop on
 * -EPIPE) and close.  One second later every lane holds nothing the new
 * receiver has not taken (head == tail), and every lane's end came.
 * Twenty runs (an issue's report: pending messages left in 7 of 8).
 */
#define RS_PRODUCERS	4
#define RS_MSGS		400

static int rs_producer(const char *name)
{
	struct lzchan *tx;
	uint32_t k;
	int r;

	if (lzchan_open_wait(&tx, name, LZCHAN_SENDER, NULL, 2000000000LL))
		return 100;
	for (k = 0; k < RS_MSGS; k++) {
		r = lzchan_send_wait(tx, &k, sizeof(k), 1000000000LL);
		if (r == -EPIPE)
			break;		/* the first receiver's death was seen */
		if (r)
			return 101;
		usleep(20);
	}
	lzchan_close(tx);
	return 0;
}

TEST(restarted_receiver_drains_every_lane)
{
	struct lzchan_opts o = lz_opts(64, 4096, RS_PRODUCERS);
	struct lzchan_lane_stat ls[RS_PRODUCERS];
	pid_t prod[RS_PRODUCERS], first;
	char dir[64], name[32], buf[16];
	int run, k, r, st, ends, ready[2];
	struct lzchan *rx;
	uint64_t t0;

	shm_dir(_metadata, dir, sizeof(dir));
	for (run = 0; run < 20; run++) {
		snprintf(name, sizeof(name), "restart%d", run);
		ASSERT_EQ(0, pipe(ready));
		first = fork();
		ASSERT_LE(0, first);
		if (!first) {
			struct lzchan *r1;

			close(ready[0]);
			if (lzchan_open(&r1, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o) ||
			    write(ready[1], "r", 1) != 1)
				_exit(1);
			for (;;)
				lzchan_recv_wait(r1, buf, sizeof(buf), NULL, -1);
		}
		close(ready[1]);
		ASSERT_EQ(1, read(ready[0], buf, 1));
		close(ready[0]);
		for (k = 0; k < RS_PRODUCERS; k++) {
			prod[k] = fork();
			ASSERT_LE(0, prod[k]);
			if (!prod[k])
				_exit(rs_producer(name));
		}
		usleep(2000 + 500 * run);	/* kill it at a different point each run */
		kill(first, SIGKILL);
		ASSERT_EQ(first, waitpid(first, NULL, 0));
		ASSERT_EQ(0, lzchan_open_wait(&rx, name, LZCHAN_RECEIVER, NULL, 2000000000LL));
		for (k = 0; k < RS_PRODUCERS; k++) {
			ASSERT_EQ(prod[k], waitpid(prod[k], &st, 0));
			EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
				TH_LOG("run %d: producer %d: status %#x", run, k, st);
		}
		/* Every producer has closed: drain for a second. */
		ends = 0;
		t0 = hw_ms();
		while (hw_ms() - t0 < 1000) {
			r = lzchan_recv_wait(rx, buf, sizeof(buf), NULL, 10000000LL);
			if (r == -EPIPE)
				ends++;
			else if (r != (int)sizeof(uint32_t))
				ASSERT_EQ(-ETIMEDOUT, r) TH_LOG("run %d", run);
		}
		EXPECT_EQ(RS_PRODUCERS, lzchan_stat_lanes(name, ls, RS_PRODUCERS));
		for (k = 0; k < RS_PRODUCERS; k++) {
			EXPECT_EQ(ls[k].tail, ls[k].head)
				TH_LOG("run %d: lane %d: %u pending", run, k, ls[k].tail - ls[k].head);
		}
		EXPECT_EQ(RS_PRODUCERS, ends) TH_LOG("run %d: %d ends", run, ends);
		lzchan_close(rx);
		lzchan_unlink(name);
	}
	rmdir(dir);
}

/*
 * A sender whose mapping was lost to a cut still wakes a parked receiver
 * at its close (it used to look for "parked" in the private memory that
 * replaced its mapping, found 0, and woke nobody: the receiver learnt of
 * the close only at its next timed look).  The receiver's side is played
 * by hand: its rx area says parked, and the wake counter must move.
 */
TEST(lost_sender_close_still_wakes)
{
	struct lzchan_opts o = lz_opts(64, 256, 1);
	long page = sysconf(_SC_PAGESIZE);
	char dir[64], path[128], buf[16];
	struct lzchan_layout l;
	struct lzchan_shm_rx *rxa;
	struct lzchan *rx, *tx;
	volatile uint32_t *wake;
	uint32_t before;
	struct stat st;
	size_t len;
	int fd, i, r = 0;
	char *map;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "lostwake");
	ASSERT_EQ(0, lzchan_open(&rx, "lostwake", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, "lostwake", LZCHAN_SENDER, NULL));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &st));
	map = ctl_map(fd, &l, &len);
	close(fd);
	ASSERT_NE(MAP_FAILED, map);
	rxa = (struct lzchan_shm_rx *)(map + page + l.rx_off);
	wake = (volatile uint32_t *)(map + page + l.bell_off + l.bell_size - LZCHAN_BELL_WAKE_BACK);

	ASSERT_EQ(0, truncate(path, st.st_size - 2 * page));
	for (i = 0; i < 256 && !r; i++)
		r = lzchan_send(tx, "12345678", 8);
	ASSERT_EQ(-EIO, r);
	rxa->parked = 1;		/* odd: asleep, on the futex */
	before = *wake;
	lzchan_close(tx);
	EXPECT_NE(before, *wake) TH_LOG("the lost sender's close woke nobody");
	rxa->parked = 0;
	while ((r = lzchan_recv(rx, buf, sizeof(buf), NULL)) > 0)
		;
	EXPECT_TRUE(r == -EIO || r == -EPIPE) TH_LOG("receiver: %d", r);
	lzchan_close(rx);
	munmap(map, len);
	EXPECT_EQ(0, lzchan_unlink("lostwake"));
	rmdir(dir);
}

/*
 * The control words of a channel file, mapped as a hostile peer would:
 * the library's header page, then the channel areas as LZCHAN_IOC_INFO
 * lays them out (info area first: struct lzchan_shm_hdr, then one struct
 * lzchan_shm_lane per lane).
 */
struct forger {
	void *map;
	size_t len;
	struct lzchan_shm_hdr *hdr;
	struct lzchan_shm_lane *lanes;
};

static void forger_map(struct __test_metadata *_metadata, struct forger *f, const char *path)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDWR);

	ASSERT_LE(0, fd);
	f->len = 2 * page;
	f->map = mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT_NE(MAP_FAILED, f->map);
	f->hdr = (struct lzchan_shm_hdr *)((char *)f->map + page);
	ASSERT_EQ(LZCHAN_SHM_MAGIC, f->hdr->magic);
	f->lanes = (struct lzchan_shm_lane *)(f->hdr + 1);
}

/*
 * Defect 4: one overwritten status word made a live sender's lane end
 * (-EPIPE, and its later messages never read) and a live receiver look
 * gone to its senders.  "Gone" is now believed only when the party's lock
 * agrees; the real close and death still end things.
 */
TEST(overwritten_status_is_checked_against_the_lock)
{
	struct lzchan_opts o = lz_opts(64, 256, 2);
	char dir[64], path[128], buf[64];
	uint64_t st, rx_st;
	struct lzchan *rx, *tx;
	struct forger f;
	uint32_t lane;
	int i, r;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "forged");
	ASSERT_EQ(0, lzchan_open(&rx, "forged", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, "forged", LZCHAN_SENDER, NULL));
	forger_map(_metadata, &f, path);
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, lzchan_send(tx, &i, sizeof(i)));
	for (i = 0; i < 10; i++)
		ASSERT_EQ((int)sizeof(i), lzchan_recv(rx, buf, sizeof(buf), NULL));

	/* The sender's lane says CLOSED; it is alive. */
	st = f.lanes[0].status;
	f.lanes[0].status = LZCHAN_STATUS(LZCHAN_STATUS_GEN(st), LZCHAN_LANE_CLOSED);
	for (; i < 100; i++) {
		ASSERT_EQ((int)sizeof(i), lzchan_recv(rx, buf, sizeof(buf), NULL));
		EXPECT_EQ(0, memcmp(buf, &i, sizeof(i)));
	}
	for (r = 0; r < 1000; r++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), NULL)) TH_LOG("at %d", r);
	EXPECT_EQ(-ETIMEDOUT, lzchan_recv_wait(rx, buf, sizeof(buf), NULL, 20000000));
	for (; i < 150; i++)
		ASSERT_EQ(0, lzchan_send(tx, &i, sizeof(i)));
	for (i = 100; i < 150; i++) {
		ASSERT_EQ((int)sizeof(i), lzchan_recv(rx, buf, sizeof(buf), NULL)) TH_LOG("message %d", i);
		EXPECT_EQ(0, memcmp(buf, &i, sizeof(i)));
	}

	/* The receiver says GONE; it is alive. */
	rx_st = f.hdr->rx_status;
	f.hdr->rx_status = LZCHAN_STATUS(LZCHAN_STATUS_GEN(rx_st), LZCHAN_RX_GONE);
	for (i = 0; i < 300; i++) {
		r = lzchan_send(tx, &i, sizeof(i));
		ASSERT_EQ(0, r) TH_LOG("send %d", i);
		ASSERT_EQ((int)sizeof(i), lzchan_recv(rx, buf, sizeof(buf), NULL));
		EXPECT_EQ(0, memcmp(buf, &i, sizeof(i)));
	}
	/* Nor does the sender call it ended, clean or not. */
	EXPECT_EQ(0, lzchan_end_cause(tx, LZCHAN_LANE_NONE));
	f.hdr->rx_status = rx_st;

	/* The real close still ends the lane, at once, lane 0: even just
	 * after a poll that found the lock held (which the receiver does not
	 * look at again for a while, unless a departure is counted). */
	EXPECT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), NULL));
	EXPECT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), NULL));
	ASSERT_EQ(0, lzchan_send(tx, "e", 1));
	lzchan_close(tx);
	EXPECT_EQ(1, lzchan_recv(rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(-EPIPE, lzchan_recv(rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(0, lane);
	/* And the real departure of the receiver ends sending. */
	ASSERT_EQ(0, lzchan_open(&tx, "forged", LZCHAN_SENDER, NULL));
	lzchan_close(rx);
	EXPECT_EQ(-EPIPE, lzchan_send(tx, "x", 1));
	EXPECT_EQ(LZCHAN_END_CLOSED, lzchan_end_cause(tx, LZCHAN_LANE_NONE));
	lzchan_close(tx);
	munmap(f.map, f.len);
	lzchan_unlink("forged");
	rmdir(dir);
}

/* The slot header of the message whose payload is @text, in the file
 * mapped at @map (found by its payload, not by layout arithmetic). */
static struct lzchan_slot_hdr *slot_of(void *map, size_t len, const char *text)
{
	size_t n = strlen(text), off;

	for (off = 64; off + n <= len; off += 64)
		if (!memcmp((char *)map + off + sizeof(struct lzchan_slot_hdr), text, n))
			return (struct lzchan_slot_hdr *)((char *)map + off);
	return NULL;
}

/*
 * Defect 5: one overwritten sequence word stalled a lane for ever, with
 * no error, and a closed lane's messages behind it went missing with a
 * clean end of stream.  A lane whose sender says it wrote more than is
 * there is reported (-EBADMSG): within a bounded time while its sender is
 * there, at once when it has gone; then the lane ends (-EPIPE) and serves
 * the next sender.
 */
TEST(stalled_lane_is_reported)
{
	struct lzchan_opts o = lz_opts(64, 64, 1);
	char dir[64], path[128], buf[64], text[16];
	struct lzchan_slot_hdr *h;
	struct lzchan *rx, *tx;
	int i, r, round, fd;
	uint32_t lane;
	struct stat st;
	void *map;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "stall");
	ASSERT_EQ(0, lzchan_open(&rx, "stall", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &st));
	map = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT_NE(MAP_FAILED, map);

	/* Round 0: the sender stays; round 1: it has closed. */
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, lzchan_open(&tx, "stall", LZCHAN_SENDER, NULL));
		for (i = 0; i < 10; i++) {
			snprintf(text, sizeof(text), "r%d-msg-%03d", round, i);
			ASSERT_EQ(0, lzchan_send(tx, text, strlen(text) + 1));
		}
		for (i = 0; i < 3; i++)
			ASSERT_LT(0, lzchan_recv(rx, buf, sizeof(buf), NULL));
		snprintf(text, sizeof(text), "r%d-msg-003", round);
		h = slot_of(map, st.st_size, text);
		ASSERT_NE(NULL, h);
		h->seq = 0xdeadbeef;		/* the 4th message is not "ready" */
		if (round == 1)
			lzchan_close(tx);
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 3000000000LL);
		EXPECT_EQ(-EBADMSG, r) TH_LOG("round %d", round);
		EXPECT_EQ(0, lane);
		if (round == 0) {
			/* Its sender is told too: the room it would wait for
			 * never comes (it used to get -EAGAIN for ever). */
			for (i = 0; i < 200; i++) {
				r = lzchan_send(tx, "more", 5);
				if (r)
					break;
			}
			EXPECT_EQ(-EBADMSG, r) TH_LOG("the sender of the abandoned lane");
			EXPECT_EQ(-EBADMSG, lzchan_flush(tx, 0));
			lzchan_close(tx);
		}
		/* Then the lane's end, and it takes a new sender. */
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 3000000000LL);
		EXPECT_EQ(-EPIPE, r) TH_LOG("round %d: after the report", round);
	}
	ASSERT_EQ(0, lzchan_open(&tx, "stall", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "again", 6));
	EXPECT_EQ(6, lzchan_recv_wait(rx, buf, sizeof(buf), NULL, 3000000000LL));
	lzchan_close(tx);
	lzchan_close(rx);
	munmap(map, st.st_size);
	lzchan_unlink("stall");
	rmdir(dir);
}

/*
 * Defect 3: on a lane of 4 GiB or more the largest message was computed in
 * 32 bits (wrapping), and messages of 2 GiB or more were accepted at send
 * time although their length's top bit is the pad flag (the receiver
 * called them garbage) and lzchan_recv() returns an int.  The limit is now
 * exact, LZCHAN_MSG_MAX at most, and refused at send time.  An 8 GiB lane
 * is made on a disk file system, where reserving it costs no memory.
 */
TEST(limits_of_huge_lanes_are_exact)
{
	struct lzchan_opts o = lz_opts(65536, 131072, 1);
	char dir[] = "/var/tmp/lzchan-huge.XXXXXX";
	static char msg[1 << 20], got[1 << 20];
	struct lzchan *rx, *tx;
	struct lzchan_geom g;
	struct statvfs fs;
	int r;

	setenv("LZCHAN_BACKEND", "shm", 1);
	ASSERT_NE(NULL, mkdtemp(dir));
	if (statvfs(dir, &fs) || (uint64_t)fs.f_bavail * fs.f_frsize < (10ULL << 30)) {
		rmdir(dir);
		SKIP(return, "less than 10 GiB free in /var/tmp for an 8 GiB lane");
	}
	setenv("LZCHAN_SHM_DIR", dir, 1);
	r = lzchan_open(&rx, "huge", LZCHAN_RECEIVER | LZCHAN_CREATE, &o);
	if (r == -EOPNOTSUPP || r == -ENOSPC) {
		rmdir(dir);
		SKIP(return, "cannot reserve an 8 GiB lane here (%s)", strerror(-r));
	}
	ASSERT_EQ(0, r);
	ASSERT_EQ(0, lzchan_open(&tx, "huge", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_geometry(tx, &g));
	EXPECT_EQ(LZCHAN_MSG_MAX, g.max_msg);
	EXPECT_EQ(0x7fffffffU, LZCHAN_MSG_MAX);
	/* Refused before a byte is read (msg is far shorter). */
	EXPECT_EQ(-EMSGSIZE, lzchan_send(tx, msg, (size_t)LZCHAN_MSG_MAX + 1));
	EXPECT_EQ(-EMSGSIZE, lzchan_send(tx, msg, 3ULL << 30));
	memset(msg, 'h', sizeof(msg));
	ASSERT_EQ(0, lzchan_send(tx, msg, sizeof(msg)));
	EXPECT_EQ((int)sizeof(msg), lzchan_recv(rx, got, sizeof(got), NULL));
	EXPECT_EQ(0, memcmp(msg, got, sizeof(msg)));
	lzchan_close(tx);
	lzchan_close(rx);
	EXPECT_EQ(0, lzchan_unlink("huge"));
	rmdir(dir);
}

/* The library's own computation (liblzchan internal; the tests link the
 * static library or its sources). */
uint32_t __lzchan_max_msg(uint32_t slot_size, uint32_t slot_count);

/*
 * Defect 3 without the disk space: the largest message of every geometry
 * the options allow, from the smallest lane to lanes of 2^32 bytes and far
 * more, is (slots - 1) * slot size - 8 computed in 64 bits, capped at
 * LZCHAN_MSG_MAX; and a channel's geometry reports the same.
 */
TEST(max_msg_is_exact_for_every_geometry)
{
	struct lzchan_opts o = lz_opts(64, 256, 1);
	struct lzchan *rx;
	struct lzchan_geom g;
	uint32_t ss, sc;
	char dir[64];

	for (ss = 64; ss <= (1U << 16); ss <<= 1) {
		for (sc = 2; sc && sc <= (1U << 24); sc <<= 1) {
			uint64_t want = (uint64_t)(sc - 1) * ss - 8;

			if (want > LZCHAN_MSG_MAX)
				want = LZCHAN_MSG_MAX;
			ASSERT_EQ(want, __lzchan_max_msg(ss, sc))
				TH_LOG("slot_size %u, slot_count %u", ss, sc);
		}
	}
	/* Just under, at and over 2^31 bytes of room. */
	EXPECT_EQ(0x7fff0000U - 8, __lzchan_max_msg(1U << 16, 1U << 15));
	EXPECT_EQ(LZCHAN_MSG_MAX, __lzchan_max_msg(1U << 16, 1U << 16));
	EXPECT_EQ(LZCHAN_MSG_MAX, __lzchan_max_msg(1U << 16, 1U << 24));

	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(0, lzchan_open(&rx, "maxmsg", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_geometry(rx, &g));
	EXPECT_EQ(255U * 64 - 8, g.max_msg);
	lzchan_close(rx);
	lzchan_unlink("maxmsg");
	rmdir(dir);
}

/* ---- a hostile writer against honest senders and a receiver ---- */

#define HW_SENDERS	3
#define HW_MAGIC	0x68774d31U

struct hw_msg {			/* an honest message; body follows */
	uint32_t magic, sender, seq, len;
	uint64_t sum;
};

static uint64_t hw_sum(const struct hw_msg *m, const unsigned char *body)
{
	uint64_t h = 1469598103934665603ULL ^ m->sender ^ ((uint64_t)m->seq << 20) ^
		     ((uint64_t)m->len << 44);
	uint32_t i;

	for (i = 0; i < m->len; i++)
		h = (h ^ body[i]) * 1099511628211ULL;
	return h;
}

static uint64_t hw_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* An honest sender: numbered, checksummed messages of 0..199 body bytes
 * (some take several slots) for @ms milliseconds; writes its lane, then
 * how many it sent, to @fd. */
static void hw_sender(const char *name, uint32_t id, int ms, int fd)
{
	unsigned char buf[sizeof(struct hw_msg) + 200];
	struct hw_msg *m = (struct hw_msg *)buf;
	uint64_t end, rnd = 0x9e3779b97f4a7c15ULL * (id + 1);
	struct lzchan_geom g;
	struct lzchan *tx;
	uint32_t seq = 0, i;
	int r;

	if (lzchan_open(&tx, name, LZCHAN_SENDER, NULL) || lzchan_geometry(tx, &g))
		_exit(1);
	if (write(fd, &g.lane, sizeof(g.lane)) != sizeof(g.lane))
		_exit(2);
	end = hw_ms() + ms;
	while (hw_ms() < end) {
		m->magic = HW_MAGIC;
		m->sender = id;
		m->seq = seq;
		m->len = hw_rand(&rnd) % 200;
		for (i = 0; i < m->len; i++)
			buf[sizeof(*m) + i] = (unsigned char)hw_rand(&rnd);
		m->sum = hw_sum(m, buf + sizeof(*m));
		r = lzchan_send_wait(tx, buf, sizeof(*m) + m->len, 500000000);
		if (r)
			break;		/* its lane was abandoned, or worse */
		seq++;
	}
	/* Did the receiver take everything?  Where a hostile writer has
	 * erased the traces in the file, only the sender can tell. */
	r = lzchan_flush(tx, 1000000000);
	lzchan_close(tx);
	if (write(fd, &seq, sizeof(seq)) != sizeof(seq) || write(fd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	_exit(0);
}

/* The hostile writer: random bytes anywhere in the file, and forgeries of
 * each control word, for @ms milliseconds. */
static void hw_scribbler(const char *path, int ms, uint64_t seed)
{
	long page = sysconf(_SC_PAGESIZE);
	struct lzchan_shm_hdr *hdr;
	struct lzchan_shm_rx *rxa;
	struct lzchan_layout l;
	unsigned char *p;
	uint32_t k;
	struct timespec nap = { .tv_nsec = 20000 };
	uint64_t end, r;
	struct stat st;
	int fd = open(path, O_RDWR);

	if (fd < 0 || fstat(fd, &st))
		_exit(1);
	p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		_exit(2);
	hdr = (struct lzchan_shm_hdr *)(p + page);
	/* The library's file header: eight 32-bit words, then the layout. */
	memcpy(&l, p + 32, sizeof(l));
	if (l.rx_off + l.rx_size > (uint64_t)st.st_size ||
	    l.lanes_off + (uint64_t)HW_SENDERS * l.lane_stride > (uint64_t)st.st_size)
		_exit(3);
	rxa = (struct lzchan_shm_rx *)(p + page + l.rx_off);
	end = hw_ms() + ms;
	while (hw_ms() < end) {
		struct lzchan_shm_rx_lane *rxl;
		struct lzchan_shm_tx *tx;

		r = hw_rand(&seed);
		k = (uint32_t)(hw_rand(&seed) % HW_SENDERS);
		rxl = (struct lzchan_shm_rx_lane *)((char *)rxa + l.rx_lanes) + k;
		tx = (struct lzchan_shm_tx *)(p + page + l.lanes_off + k * l.lane_stride);
		switch (r % 14) {
		case 0: case 1: case 2:		/* any byte, any word */
			p[hw_rand(&seed) % st.st_size] = (unsigned char)hw_rand(&seed);
			break;
		case 3: {			/* an aligned 32-bit word past the header page */
			size_t off = page + (hw_rand(&seed) % (st.st_size - page)) / 4 * 4;

			*(volatile uint32_t *)(p + off) = (uint32_t)hw_rand(&seed);
			break;
		}
		case 4:				/* the receiver "gone" */
			hdr->rx_status = LZCHAN_STATUS(LZCHAN_STATUS_GEN(hdr->rx_status),
						       LZCHAN_RX_GONE);
			break;
		case 5: {			/* a lane "closed", or another generation */
			struct lzchan_shm_lane *l = (struct lzchan_shm_lane *)(hdr + 1) +
						    hw_rand(&seed) % HW_SENDERS;

			l->status = r & 64 ? LZCHAN_STATUS(LZCHAN_STATUS_GEN(l->status),
							   LZCHAN_LANE_CLOSED) :
					     LZCHAN_STATUS(hw_rand(&seed), LZCHAN_LANE_ATTACHED);
			break;
		}
		case 6:
			hdr->departures++;
			break;
		case 7:				/* a page's worth of garbage */
			memset(p + page + (hw_rand(&seed) % (st.st_size - page)) / 64 * 64,
			       (int)(r >> 8), 64);
			break;
		/* Each remaining control word, forged on purpose. */
		case 8:				/* a lane's head: ahead, behind, anywhere */
			rxl->head += (uint32_t)(r >> 8) % 3 == 0 ? 1 :
				     (uint32_t)(r >> 8) % 3 == 1 ? -1U : (uint32_t)hw_rand(&seed);
			break;
		case 9:				/* a lane's tail */
			tx->tail += r & 256 ? (uint32_t)hw_rand(&seed) % 512 : -1U;
			break;
		case 10:			/* "the receiver closed cleanly" */
			hdr->rx_bye = r & 256 ? LZCHAN_STATUS_GEN(hdr->rx_status) :
					       (uint32_t)hw_rand(&seed);
			break;
		case 11:			/* "the receiver gave this lane up" */
			rxl->broken = r & 256 ? rxl->broken + 1 : (uint32_t)hw_rand(&seed);
			break;
		case 12:			/* "parked", "armed", "sleepy" */
			rxa->parked = (uint32_t)hw_rand(&seed);
			rxa->armed = (uint32_t)(r >> 8) & 1;
			rxl->sleepy = (uint32_t)hw_rand(&seed) | 1;
			break;
		case 13:			/* "its close was drained" */
			rxl->close_ack = r & 256 ? rxl->close_ack + 1 : (uint32_t)hw_rand(&seed);
			break;
		}
		nanosleep(&nap, NULL);
	}
	_exit(0);
}

/*
 * A third party with write access scribbles over a live channel (random
 * bytes anywhere, forged statuses, positions and sequence words) while
 * honest senders in other processes send numbered, checksummed messages.
 * Nobody crashes or hangs, and for each sender every message is delivered
 * once, in order, or its loss shows on that lane: an error there
 * (-EBADMSG) or, for what it sent last, an error from lzchan_flush() in
 * the sender (a writer that outlives the sender can erase every trace in
 * the file, so only the sender can know), or a delivered message that
 * fails its checksum (the forgery the shm backend cannot tell from a
 * message) -- never a gap without one, never a duplicate.
 */
TEST(hostile_writer_loses_nothing_silently)
{
	struct lzchan_opts o = lz_opts(64, 256, HW_SENDERS + 1);
	uint32_t lane_of[HW_SENDERS], sent[HW_SENDERS], lane, id;
	int64_t next[HW_SENDERS], damaged_since[HW_SENDERS];
	int fds[HW_SENDERS][2], ended[HW_SENDERS], st, k, r, alive;
	unsigned char buf[512];
	char dir[64], path[128];
	uint64_t t0, reaped_at = 0, forged = 0, bad = 0, good = 0, errs = 0;
	pid_t kids[HW_SENDERS + 1];
	struct lzchan *rx;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "hostile");
	ASSERT_EQ(0, lzchan_open(&rx, "hostile", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	for (k = 0; k < HW_SENDERS; k++) {
		ASSERT_EQ(0, pipe(fds[k]));
		kids[k] = fork();
		ASSERT_LE(0, kids[k]);
		if (!kids[k])
			hw_sender("hostile", k, 4000, fds[k][1]);
		close(fds[k][1]);
		ASSERT_EQ((ssize_t)sizeof(lane_of[k]), read(fds[k][0], &lane_of[k], sizeof(lane_of[k])));
		next[k] = 0;
		damaged_since[k] = 0;
		ended[k] = 0;
	}
	kids[HW_SENDERS] = fork();
	ASSERT_LE(0, kids[HW_SENDERS]);
	if (!kids[HW_SENDERS])
		hw_scribbler(path, 3000, 0x1234567 ^ (uint64_t)getpid());

	t0 = hw_ms();
	alive = HW_SENDERS + 1;
	for (;;) {
		uint64_t now = hw_ms();

		ASSERT_LT(now - t0, 30000) TH_LOG("hung: %d processes left", alive);
		while (alive && waitpid(-1, &st, WNOHANG) > 0) {
			EXPECT_TRUE(WIFEXITED(st)) TH_LOG("a child died: status %#x", st);
			if (!--alive)
				reaped_at = now;
		}
		if (!alive && now - reaped_at > 2000)
			break;		/* everyone gone, everything drained */
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 100000000);
		if (r == -ETIMEDOUT || r == -EAGAIN)
			continue;
		for (id = 0; id < HW_SENDERS && lane_of[id] != lane; id++)
			;
		if (r < 0) {
			ASSERT_TRUE(r == -EBADMSG || r == -EPIPE || r == -EMSGSIZE)
				TH_LOG("receiver error %d", r);
			if (r == -EMSGSIZE) {		/* a forged length: take it */
				struct lzchan_msg m;

				ASSERT_EQ(0, lzchan_peek_lane(rx, lane, &m));
				lzchan_release(rx, &m);
				r = -EBADMSG;
			}
			if (r == -EBADMSG)
				errs++;
			if (id < HW_SENDERS && r == -EBADMSG)
				damaged_since[id] = 1;	/* reported on its lane */
			if (id < HW_SENDERS && r == -EPIPE)
				ended[id]++;
			continue;
		}
		{
			struct hw_msg m;

			if ((size_t)r < sizeof(m)) {
				forged++;
				if (id < HW_SENDERS)
					damaged_since[id] = 1;
				continue;
			}
			memcpy(&m, buf, sizeof(m));
			if (m.magic != HW_MAGIC || m.sender >= HW_SENDERS ||
			    m.len != (uint32_t)r - sizeof(m) || m.sum != hw_sum(&m, buf + sizeof(m))) {
				forged++;	/* damaged in place: visible as such */
				if (id < HW_SENDERS)
					damaged_since[id] = 1;
				continue;
			}
			ASSERT_EQ(lane_of[m.sender], lane) TH_LOG("sender %u's message on lane %u",
								  m.sender, lane);
			/* Never twice, never out of order; a gap only after a
			 * loss that showed on this lane. */
			ASSERT_GE((int64_t)m.seq, next[m.sender])
				TH_LOG("sender %u: message %u again (expected %lld)", m.sender,
				       m.seq, (long long)next[m.sender]);
			if ((int64_t)m.seq > next[m.sender]) {
				EXPECT_TRUE(damaged_since[m.sender])
					TH_LOG("sender %u: messages %lld..%u lost silently", m.sender,
					       (long long)next[m.sender], m.seq - 1);
				bad++;
			}
			next[m.sender] = (int64_t)m.seq + 1;
			damaged_since[m.sender] = 0;
			good++;
		}
	}
	for (k = 0; k < HW_SENDERS; k++) {
		int flushed;

		ASSERT_EQ((ssize_t)sizeof(sent[k]), read(fds[k][0], &sent[k], sizeof(sent[k])));
		ASSERT_EQ((ssize_t)sizeof(flushed), read(fds[k][0], &flushed, sizeof(flushed)));
		close(fds[k][0]);
		if (flushed)
			damaged_since[k] = 1;	/* its loss was reported to the sender */
		/* What it sent last either came, or its loss showed. */
		if ((int64_t)sent[k] > next[k] && !damaged_since[k] && getenv("HW_DEBUG")) {
			TH_LOG("sender %d: flush said %d", k, flushed);
			struct lzchan_lane_stat ls[HW_SENDERS + 1];
			int q, nl = lzchan_stat_lanes("hostile", ls, HW_SENDERS + 1);

			for (q = 0; q < nl; q++)
				TH_LOG("lane %d: state %u gen %u tail %u head %u msgs %llu", q,
				       ls[q].state, ls[q].gen, ls[q].tail, ls[q].head,
				       (unsigned long long)ls[q].msgs);
			TH_LOG("sender %d on lane %u, ended %d", k, lane_of[k], ended[k]);
		}
		if ((int64_t)sent[k] > next[k])
			EXPECT_TRUE(damaged_since[k])
				TH_LOG("sender %d: sent %u, the last %lld never came, no error",
				       k, sent[k], (long long)(sent[k] - next[k]));
		EXPECT_LE(1, ended[k]) TH_LOG("sender %d: no end of stream", k);
	}
	TH_LOG("%llu delivered, %llu damaged in place, %llu -EBADMSG, %llu gaps after a "
	       "reported loss", (unsigned long long)good, (unsigned long long)forged,
	       (unsigned long long)errs, (unsigned long long)bad);
	lzchan_close(rx);
	lzchan_unlink("hostile");
	rmdir(dir);
}

/*
 * Whatever else sits at a channel's name is not a channel: -EPROTO at once
 * (no waiting for a creator: channels are published whole).  Creating
 * over such a file of the caller's replaces it; over anything else, or
 * another user's file, it is -EPROTO too -- never "already exists".
 */
TEST(not_a_channel)
{
	static const char *const kinds[] = { "empty", "garbage", "fifo", "symlink", "dir" };
	struct lzchan_opts o = lz_opts(64, 64, 2);
	char dir[64], path[128], junk[8192];
	struct lzchan *ch, *tx;
	unsigned int k;
	int fd, r;

	shm_dir(_metadata, dir, sizeof(dir));
	memset(junk, 0x5a, sizeof(junk));
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		const char *n = kinds[k];
		int creatable = k < 2;	/* regular files of ours */

		path_of(path, sizeof(path), dir, n);
		switch (k) {
		case 0:
		case 1:
			fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
			ASSERT_LE(0, fd);
			if (k == 1)
				ASSERT_EQ((ssize_t)sizeof(junk), write(fd, junk, sizeof(junk)));
			close(fd);
			break;
		case 2:
			ASSERT_EQ(0, mkfifo(path, 0600));
			break;
		case 3:
			ASSERT_EQ(0, symlink("/etc/passwd", path));
			break;
		case 4:
			ASSERT_EQ(0, mkdir(path, 0700));
			break;
		}
		r = lzchan_open(&ch, n, LZCHAN_SENDER, NULL);
		EXPECT_EQ(-EPROTO, r) TH_LOG("%s: open as sender gave %d", n, r);
		r = lzchan_open(&ch, n, LZCHAN_RECEIVER, NULL);
		EXPECT_EQ(-EPROTO, r) TH_LOG("%s: open as receiver gave %d", n, r);
		r = lzchan_create(n, &o, LZCHAN_EXCL);
		EXPECT_EQ(-EEXIST, r) TH_LOG("%s: exclusive create gave %d", n, r);
		if (!creatable) {
			r = lzchan_create(n, &o, 0);
			EXPECT_EQ(-EPROTO, r) TH_LOG("%s: create gave %d", n, r);
			r = lzchan_open(&ch, n, LZCHAN_RECEIVER | LZCHAN_CREATE, &o);
			EXPECT_EQ(-EPROTO, r) TH_LOG("%s: open-create gave %d", n, r);
			if (k == 4)
				rmdir(path);
			else
				unlink(path);
			continue;
		}
		/* Ours: made into a channel, which then works. */
		if (k == 0) {
			EXPECT_EQ(1, lzchan_create(n, &o, 0));
		}
		ASSERT_EQ(0, lzchan_open(&ch, n, LZCHAN_RECEIVER | LZCHAN_CREATE, &o))
			TH_LOG("%s", n);
		ASSERT_EQ(0, lzchan_open(&tx, n, LZCHAN_SENDER, NULL));
		ASSERT_EQ(0, lzchan_send(tx, "ok", 2));
		EXPECT_EQ(2, lzchan_recv(ch, junk, sizeof(junk), NULL));
		lzchan_close(tx);
		lzchan_close(ch);
		EXPECT_EQ(0, lzchan_unlink(n));
	}
	EXPECT_EQ(0, lz_dir_entries(dir));
	rmdir(dir);
}

/*
 * An event loop (receive until -EAGAIN, then lzchan_arm()) on a channel
 * whose one polled lane is quiet: a lane given up as garbage whose sender
 * then leaves owes its end, and arming finds that out -- the next receive
 * must say so, not keep giving the inline "empty" verdicts it was granted
 * before (it took 59 receive/arm rounds when they were not taken back).
 */
TEST(owed_end_ends_inline_empty_verdicts)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	struct lzchan *rx, *ta, *tb;
	char dir[64], path[128], buf[64];
	struct stat st;
	uint32_t lane;
	int fd, k, r, a = -1;
	char *map;
	size_t off;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "owed");
	ASSERT_EQ(0, lzchan_open(&rx, "owed", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&ta, "owed", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_open(&tb, "owed", LZCHAN_SENDER, NULL));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &st));
	map = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	close(fd);
	ASSERT_EQ(0, lzchan_send(ta, "a", 1));
	ASSERT_EQ(0, lzchan_send(tb, "garbage-here", 13));
	/* A hostile writer makes lane 1's message garbage. */
	for (off = 64; off + 64 <= (size_t)st.st_size; off += 64)
		if (!memcmp(map + off + 8, "garbage-here", 13))
			break;
	ASSERT_GT((size_t)st.st_size, off + 64);
	((struct lzchan_slot_hdr *)(map + off))->len = 0x40000000;
	for (k = 0; k < 10 && (r = lzchan_recv(rx, buf, sizeof(buf), &lane)) != -EAGAIN; k++)
		EXPECT_TRUE(r == 1 || r == -EBADMSG) TH_LOG("receive %d: %d", k, r);
	for (k = 0; k < 5; k++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), &lane));
	lzchan_close(tb);
	for (k = 0; k < 100; k++) {
		r = lzchan_recv(rx, buf, sizeof(buf), &lane);
		if (r != -EAGAIN)
			break;
		a = lzchan_arm(rx);
		if (!a)
			break;
	}
	EXPECT_EQ(-EPIPE, r) TH_LOG("after %d rounds (arm said %d)", k, a);
	EXPECT_EQ(1, lane);
	EXPECT_GE(1, k) TH_LOG("the end took %d receive/arm rounds", k);
	munmap(map, st.st_size);
	lzchan_close(ta);
	lzchan_close(rx);
	lzchan_unlink("owed");
	rmdir(dir);
}

/*
 * A channel file of another version of the layout (1: before attn, the
 * one word senders load on every send, which its parties do not keep) is
 * refused with -EPROTO by both roles, and left alone; the same file with
 * this version works.
 */
TEST(other_layout_version_is_refused)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	struct lzchan *ch, *tx;
	char dir[64], path[128], buf[8];
	uint32_t mine, other;
	unsigned int k;
	int fd;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "v");
	ASSERT_EQ(1, lzchan_create("v", &o, 0));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	/* The file header's second word is its layout version. */
	ASSERT_EQ(4, pread(fd, &mine, 4, 4));
	for (k = 0; k < 3; k++) {
		other = k == 0 ? 1 : k == 1 ? 0 : mine + 1;
		ASSERT_EQ(4, pwrite(fd, &other, 4, 4));
		EXPECT_EQ(-EPROTO, lzchan_open(&ch, "v", LZCHAN_RECEIVER, NULL))
			TH_LOG("version %u", other);
		EXPECT_EQ(-EPROTO, lzchan_open(&tx, "v", LZCHAN_SENDER, NULL))
			TH_LOG("version %u", other);
		/* Not ours to replace: an exclusive create still says it
		 * exists, a plain one that it is not a channel of ours. */
		EXPECT_EQ(-EEXIST, lzchan_create("v", &o, LZCHAN_EXCL));
	}
	ASSERT_EQ(4, pwrite(fd, &mine, 4, 4));
	close(fd);
	ASSERT_EQ(0, lzchan_open(&ch, "v", LZCHAN_RECEIVER, NULL));
	ASSERT_EQ(0, lzchan_open(&tx, "v", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "ok", 2));
	EXPECT_EQ(2, lzchan_recv(ch, buf, sizeof(buf), NULL));
	lzchan_close(tx);
	lzchan_close(ch);
	EXPECT_EQ(0, lzchan_unlink("v"));
	rmdir(dir);
}

/*
 * A receiver killed while the ring is full: a sender that retries slowly
 * learns at its next retry, not after hundreds (the receiver's lock is
 * looked at by time, at most every millisecond, not every 256 retries).
 */
TEST(dead_receiver_seen_at_the_next_retry)
{
	struct lzchan_opts o = lz_opts(64, 16, 1);
	int ready[2], i, r;
	struct lzchan *tx;
	char dir[64], b;
	pid_t pid;

	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(1, lzchan_create("dead", &o, LZCHAN_EXCL));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct lzchan *rx;

		if (lzchan_open(&rx, "dead", LZCHAN_RECEIVER, NULL) || write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ(0, lzchan_open(&tx, "dead", LZCHAN_SENDER, NULL));
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, lzchan_send(tx, "x", 1));
	EXPECT_EQ(-EAGAIN, lzchan_send(tx, "x", 1));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	/* The next retry, once the look is due. */
	usleep(2000);
	r = lzchan_send(tx, "x", 1);
	EXPECT_EQ(-EPIPE, r);
	lzchan_close(tx);
	lzchan_unlink("dead");
	rmdir(dir);
}

/*
 * The library's fcntl(), interposed (it is linked in statically): while
 * getlk_hook is set, its next look at a lock (F_OFD_GETLK) first lets
 * the receiver child getlk_child read everything and close.  That places
 * a clean close exactly between what a sender loaded (the receiver's
 * status and head) and its look at the receiver's lock.
 */
static int getlk_go = -1;
static pid_t getlk_child;
static int getlk_hook;

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);	/* every command the library uses takes one */
	va_end(ap);
	if (cmd == F_OFD_GETLK && getlk_hook) {
		getlk_hook = 0;
		if (write(getlk_go, "g", 1) == 1)
			waitpid(getlk_child, NULL, 0);
	}
	return syscall(SYS_fcntl, fd, cmd, arg);
}

/*
 * A receiver that takes every message and closes while the sender's flush
 * is between its loads and its look at the receiver's lock (found free):
 * everything was taken, so the flush returns 0, not -EPIPE.  (The tool's
 * "lzchan send" reported the receiver as gone after it had taken it all:
 * a CI failure of lzchan_tool.sh's "a waiting receiver gets what a later
 * sender sends".)
 */
TEST(flush_meets_a_receiver_that_took_everything_and_left)
{
	struct lzchan_opts o = lz_opts(64, 16, 1);
	int go[2], ready[2], i;
	struct lzchan *tx;
	char dir[64], b;
	pid_t pid;

	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(1, lzchan_create("took", &o, LZCHAN_EXCL));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct lzchan *rx;
		char buf[64];

		if (lzchan_open(&rx, "took", LZCHAN_RECEIVER, NULL) ||
		    write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(1);
		for (i = 0; i < 3; i++)
			if (lzchan_recv_wait(rx, buf, sizeof(buf), NULL, -1) != 1)
				_exit(2);
		lzchan_close(rx);
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ(0, lzchan_open(&tx, "took", LZCHAN_SENDER, NULL));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, lzchan_send(tx, "x", 1));
	getlk_go = go[1];
	getlk_child = pid;
	getlk_hook = 1;
	EXPECT_EQ(0, lzchan_flush(tx, -1));
	EXPECT_EQ(0, getlk_hook) TH_LOG("the flush never looked at the receiver's lock");
	getlk_hook = 0;
	/* The child was reaped in the hook; a flush that never looked
	 * leaves it waiting for its go. */
	if (waitpid(pid, NULL, WNOHANG) == pid)
		TH_LOG("the receiver was reaped here, not in the hook");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	EXPECT_EQ(-EPIPE, lzchan_send(tx, "x", 1)) TH_LOG("its clean close is an end all the same");
	lzchan_close(tx);
	lzchan_unlink("took");
	rmdir(dir);
}

/*
 * A receiver that gave a sender's lane up (broken: -EBADMSG on the
 * sender's full ring) and then died: the sender learns that it died
 * (-EPIPE), at the next look at the receiver's lock, not -EBADMSG for
 * ever (the look came after the receiver's word and was never reached).
 * And one that also wrote "no receiver yet" (NONE) over its status, which
 * anyone may on shm: the sender, having seen it, does not believe that
 * (the lock was looked at only for ATTACHED, so it waited for ever).  And
 * one that wrote NONE before the sender opened, so that the sender never
 * saw a receiver's status: the give-up itself says a receiver was there
 * (-EBADMSG for ever otherwise; test hostile_receiver's rare failure).
 */
static void gave_up_and_died(struct __test_metadata *_metadata, int forge_none)
{
	struct lzchan_opts o = lz_opts(64, 16, 1);
	int go[2], ready[2], i, r = 0;
	struct lzchan *tx;
	char dir[64], b;
	pid_t pid;

	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(1, lzchan_create("gaveup", &o, LZCHAN_EXCL));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct __lzchan_fast *f;
		struct lzchan *rx;
		char buf[64];

		if (lzchan_open(&rx, "gaveup", LZCHAN_RECEIVER, NULL))
			_exit(1);
		f = (struct __lzchan_fast *)rx;
		/* 2: NONE before the sender opens, so that it never sees a
		 * receiver's status at all (only the give-up says one was
		 * there). */
		if (forge_none == 2)
			__atomic_store_n(&f->hdr->rx_status, LZCHAN_STATUS(0, LZCHAN_RX_NONE),
					 __ATOMIC_RELEASE);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(1);
		/* The sender's first message makes its lane known. */
		while (lzchan_recv(rx, buf, sizeof(buf), NULL) != 1)
			;
		/* Its sender's generation, as the lane's status says. */
		__atomic_store_n(&f->lanes[0].rxl->broken,
				 LZCHAN_STATUS_GEN(__atomic_load_n(&f->lanes[0].info->status,
								   __ATOMIC_ACQUIRE)),
				 __ATOMIC_RELEASE);
		if (forge_none)
			__atomic_store_n(&f->hdr->rx_status, LZCHAN_STATUS(0, LZCHAN_RX_NONE),
					 __ATOMIC_RELEASE);
		if (write(ready[1], "b", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ(0, lzchan_open(&tx, "gaveup", LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "x", 1));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(ready[0], &b, 1));
	for (i = 0; i < 16 && r == 0; i++)
		r = lzchan_send(tx, "x", 1);
	EXPECT_EQ(-EBADMSG, lzchan_send(tx, "x", 1)) TH_LOG("the give-up was not seen");
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	/* The next retry once the look is due (it is at most every ms). */
	usleep(2000);
	EXPECT_EQ(-EPIPE, lzchan_send(tx, "x", 1)) TH_LOG("forged NONE: %d", forge_none);
	usleep(2000);
	EXPECT_EQ(-EPIPE, lzchan_flush(tx, 0)) TH_LOG("forged NONE: %d", forge_none);
	lzchan_close(tx);
	lzchan_unlink("gaveup");
	rmdir(dir);
}

TEST(receiver_that_gave_up_and_died_is_gone)
{
	gave_up_and_died(_metadata, 0);
	gave_up_and_died(_metadata, 1);
	gave_up_and_died(_metadata, 2);
}

/*
 * A receiver takes its lock before it says ATTACHED; one that died in
 * between leaves the status NONE ("no receiver yet") and a free lock.  A
 * sender that never saw a receiver must go on waiting for the next one
 * (-EAGAIN on a full lane, -ENOTCONN from flush), whether the lock is
 * held or was let go by a death -- not -EPIPE: the held lock alone proves
 * no receiver was ever there.  The next receiver then gets every message.
 * The lock is the library's layout (byte 1 << 40 of the file, LOCK_BASE).
 */
TEST(receiver_that_died_before_attaching_is_waited_for)
{
	struct lzchan_opts o = lz_opts(64, 8, 1);
	char dir[64], path[128], buf[16], b;
	struct lzchan *tx, *rx;
	int ready[2], i, r = 0;
	pid_t pid;

	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(1, lzchan_create("early", &o, LZCHAN_EXCL));
	ASSERT_EQ(0, lzchan_open(&tx, "early", LZCHAN_SENDER, NULL));
	for (i = 0; i < 8 && !r; i++)
		r = lzchan_send(tx, "e", 1);
	ASSERT_EQ(0, r);
	snprintf(path, sizeof(path), "%s/lzchan.early", dir);
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct flock fl = {
			.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 1LL << 40, .l_len = 1,
		};
		int fd = open(path, O_RDWR | O_CLOEXEC);

		/* The receiver's lock, and nothing else of an attach. */
		if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0 || write(ready[1], "l", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-EAGAIN, lzchan_send(tx, "e", 1)) TH_LOG("lock held, round %d", i);
		EXPECT_EQ(-ENOTCONN, lzchan_flush(tx, 0)) TH_LOG("lock held, round %d", i);
		usleep(2000);	/* past the look's interval (1 ms) */
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-EAGAIN, lzchan_send(tx, "e", 1)) TH_LOG("lock let go, round %d", i);
		EXPECT_EQ(-ENOTCONN, lzchan_flush(tx, 0)) TH_LOG("lock let go, round %d", i);
		usleep(2000);
	}
	ASSERT_EQ(0, lzchan_open(&rx, "early", LZCHAN_RECEIVER, NULL));
	for (i = 0; lzchan_recv(rx, buf, sizeof(buf), NULL) == 1; i++)
		;
	EXPECT_EQ(8, i);
	EXPECT_EQ(0, lzchan_send(tx, "e", 1));
	lzchan_close(rx);
	lzchan_close(tx);
	lzchan_unlink("early");
	rmdir(dir);
}

/*
 * An event loop (lzchan_arm(), then poll() on the event fd with no bound
 * of its own) hears of a sender that dies without ever having connected
 * to the doorbell socket: one that attached before the receiver did and
 * has not sent since (a sender connects at its first wake owed).  Its
 * death shows only in its lock, which nothing looked at while the loop
 * slept: the loop waited for ever.
 */
TEST(armed_receiver_hears_an_unconnected_sender_die)
{
	struct lzchan_opts o = lz_opts(64, 8, 2);
	int ready[2], i, r, round, hog[4096], nhog = 0;
	char dir[64], buf[16], b;
	struct pollfd pf;
	struct lzchan *rx, *tx;
	uint32_t lane = 99;
	pid_t pid;

	shm_dir(_metadata, dir, sizeof(dir));
	/* Round 1 with the close watch (inotify); round 2 without, every
	 * inotify instance of ours taken: the armed receiver then looks at
	 * the locks now and then. */
	for (round = 0; round < 2; round++) {
		if (round)
			while (nhog < 4096 && (hog[nhog] = inotify_init1(IN_CLOEXEC)) >= 0)
				nhog++;
		ASSERT_EQ(1, lzchan_create("unconn", &o, LZCHAN_EXCL));
		ASSERT_EQ(0, pipe(ready));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			if (lzchan_open(&tx, "unconn", LZCHAN_SENDER, NULL) ||
			    write(ready[1], "s", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		ASSERT_EQ(1, read(ready[0], &b, 1));
		close(ready[0]);
		close(ready[1]);
		ASSERT_EQ(0, lzchan_open(&rx, "unconn", LZCHAN_RECEIVER, NULL));
		pf.fd = lzchan_event_fd(rx);
		ASSERT_LE(0, pf.fd);
		pf.events = POLLIN;
		/* Armed, with nothing pending; then the sender dies. */
		do {
			ASSERT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), &lane));
			r = lzchan_arm(rx);
		} while (r == -EAGAIN);
		ASSERT_EQ(0, r);
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
		/* The loop: sleep on the fd (5 s: far past any look the
		 * library owes), receive until "empty", arm, and again,
		 * until the end. */
		ASSERT_EQ(1, poll(&pf, 1, 5000)) TH_LOG("round %d: the fd never fired", round);
		for (i = 0, r = -EAGAIN; i < 100 && r == -EAGAIN; i++) {
			r = lzchan_recv(rx, buf, sizeof(buf), &lane);
			if (r != -EAGAIN)
				break;
			r = lzchan_arm(rx);
			if (r == -EAGAIN)
				continue;
			ASSERT_EQ(0, r);
			ASSERT_EQ(1, poll(&pf, 1, 5000)) TH_LOG("round %d, %d: the fd never fired",
								round, i);
			r = -EAGAIN;
		}
		EXPECT_EQ(-EPIPE, r) TH_LOG("round %d", round);
		EXPECT_EQ(0, lane);
		EXPECT_EQ(LZCHAN_END_LOST, lzchan_end_cause(rx, 0));
		lzchan_close(rx);
		lzchan_unlink("unconn");
	}
	while (nhog)
		close(hog[--nhog]);
	rmdir(dir);
}

/* CPU seconds this thread has used. */
static double thread_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Lower this process's descriptor limit to what it has open now. */
static void no_more_fds(void)
{
	struct rlimit rl = { .rlim_max = 4096 };
	int fd = dup(0);

	close(fd);
	rl.rlim_cur = fd;
	setrlimit(RLIMIT_NOFILE, &rl);
}

/*
 * lzchan_recv_wait() on shm sleeps on its event fd (the doorbell socket
 * and an inotify watch), and nothing else wakes it: so everything that
 * must end its sleep has to reach that fd, and nothing may leave it
 * readable for ever (a review found each of these broken):
 *  0. a sender that cannot connect (no descriptor left) rings through
 *     the file's times (IN_ATTRIB): its message ends the wait;
 *  1. a receiver with no descriptor left refuses a sender's connection
 *     instead of leaving the listening socket readable (it spun);
 *  2. a sender that shuts its connection down (recv() 0, no hang-up) is
 *     dropped, not read for ever (it spun);
 *  3. the file cut short (truncate) under a receiver that waits for ever
 *     wakes it (IN_MODIFY), with -EIO.
 */
TEST(parked_shm_receiver_hears_everything_and_never_spins)
{
	struct lzchan_opts o = lz_opts(64, 8, 2);
	int ready[2], go[2], round, r, st;
	char dir[64], path[128], buf[16], b;
	struct lzchan *rx;
	uint32_t lane;
	double cpu;
	pid_t pid;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "spin");
	for (round = 0; round < 4; round++) {
		ASSERT_EQ(1, lzchan_create("spin", &o, LZCHAN_EXCL));
		ASSERT_EQ(0, pipe(ready));
		ASSERT_EQ(0, pipe(go));
		if (round == 3) {
			/* Waits for ever, as a program would; a hang is a
			 * failure, not a stuck suite. */
			pid = fork();
			ASSERT_LE(0, pid);
			if (!pid) {
				alarm(30);
				if (lzchan_open(&rx, "spin", LZCHAN_RECEIVER, NULL) ||
				    write(ready[1], "r", 1) != 1)
					_exit(2);
				r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, -1);
				_exit(r == -EIO ? 0 : 3);
			}
			ASSERT_EQ(1, read(ready[0], &b, 1));
			usleep(300000);		/* parked by then */
			ASSERT_EQ(0, truncate(path, 0));
			ASSERT_EQ(pid, waitpid(pid, &st, 0));
			EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
				TH_LOG("round 3: a cut under a parked receiver: status %#x", st);
			goto next;
		}
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct lzchan *tx;
			int fd;

			if (round != 0 && read(go[0], &b, 1) != 1)
				_exit(2);	/* rounds 1, 2: after the receiver */
			if (lzchan_open(&tx, "spin", LZCHAN_SENDER, NULL) ||
			    write(ready[1], "s", 1) != 1)
				_exit(2);
			if (round == 2) {
				/* Its connection to the receiver: shut down. */
				for (fd = 3; fd < 64; fd++) {
					int type = 0;
					socklen_t tl = sizeof(type);

					if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
					    type == SOCK_SEQPACKET)
						shutdown(fd, SHUT_WR);
				}
			}
			if (round == 0) {
				if (read(go[0], &b, 1) != 1)
					_exit(2);
				usleep(300000);	/* the receiver parks meanwhile */
				no_more_fds();
				if (lzchan_send(tx, "late", 5))
					_exit(3);
			}
			pause();
			_exit(0);
		}
		if (round == 0)
			ASSERT_EQ(1, read(ready[0], &b, 1));	/* attached first */
		ASSERT_EQ(0, lzchan_open(&rx, "spin", LZCHAN_RECEIVER, NULL));
		if (round == 1)
			no_more_fds();
		ASSERT_EQ(1, write(go[1], "g", 1));
		if (round)
			ASSERT_EQ(1, read(ready[0], &b, 1));
		cpu = thread_cpu_s();
		if (round == 0) {
			/* For ever, as a program waits; a signal after 8 s
			 * (-EINTR) stands for "never" (the 10 s look would
			 * find the message). */
			struct sigaction sa = { .sa_handler = on_alarm };

			sigaction(SIGALRM, &sa, NULL);
			alarm(8);
			r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, -1);
			alarm(0);
		} else {
			r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 1500000000LL);
		}
		cpu = thread_cpu_s() - cpu;
		if (round == 0) {
			EXPECT_EQ(5, r) TH_LOG("round 0: the unconnected sender's message never woke us");
		} else {
			EXPECT_EQ(-ETIMEDOUT, r);
			/* Asleep, not spinning: well under the 1.5 s. */
			EXPECT_GT(0.5, cpu) TH_LOG("round %d: %.2f s of CPU in a 1.5 s wait", round, cpu);
		}
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
		lzchan_close(rx);
		if (round == 1) {
			struct rlimit rl = { .rlim_cur = 1024, .rlim_max = 4096 };

			setrlimit(RLIMIT_NOFILE, &rl);
		}
next:
		close(ready[0]);
		close(ready[1]);
		close(go[0]);
		close(go[1]);
		lzchan_unlink("spin");
	}
	rmdir(dir);
}

/*
 * A stranger who takes the name of a channel's doorbell socket first (its
 * name is predictable, the directory sticky) must get nothing: senders
 * check that whoever listens there may open the channel as its receiver
 * before they pass it their channel file, and the receiver goes without
 * a socket (no event fd) rather than talk through the stranger's.  And a
 * hello carrying extra descriptors leaks none into the receiver.
 */
#define SQ_OWNER	61006
#define SQ_STRANGER	61005

TEST(doorbell_socket_squatter_gets_nothing)
{
	char dir[64], path[128], sock[100], b;
	int c2p[2], p2c[2], s2p[2], st;
	struct stat cs;
	pid_t owner, stranger;

	if (geteuid() != 0)
		SKIP(return, "needs root to act as two other users");
	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(0, chmod(dir, 01777));
	path_of(path, sizeof(path), dir, "sq");
	ASSERT_EQ(0, pipe(c2p));
	ASSERT_EQ(0, pipe(p2c));
	ASSERT_EQ(0, pipe(s2p));

	owner = fork();
	ASSERT_LE(0, owner);
	if (!owner) {
		struct lzchan_opts o = lz_opts(64, 64, 2);
		struct lzchan *rx, *tx;

		if (setgid(SQ_OWNER) || setuid(SQ_OWNER))
			_exit(1);
		o.mode = 0600;
		if (lzchan_create("sq", &o, LZCHAN_EXCL) != 1 || write(c2p[1], "c", 1) != 1 ||
		    read(p2c[0], &b, 1) != 1)
			_exit(2);
		if (lzchan_open(&rx, "sq", LZCHAN_RECEIVER, NULL) ||
		    lzchan_open(&tx, "sq", LZCHAN_SENDER, NULL))
			_exit(3);
		if (lzchan_peer(tx, LZCHAN_LANE_NONE, NULL, NULL, NULL) != -ENOTCONN)
			_exit(4);	/* it believed the stranger */
		if (lzchan_event_fd(rx) != -EOPNOTSUPP)
			_exit(5);
		if (lzchan_send(tx, "x", 1) || lzchan_recv(rx, &b, 1, NULL) != 1)
			_exit(6);	/* the channel itself works */
		lzchan_close(tx);
		lzchan_close(rx);
		lzchan_unlink("sq");
		_exit(0);
	}
	ASSERT_EQ(1, read(c2p[0], &b, 1));
	ASSERT_EQ(0, stat(path, &cs));
	snprintf(sock, sizeof(sock), "%s/.lzchan-%llx-%llx.sock", dir,
		 (unsigned long long)cs.st_dev, (unsigned long long)cs.st_ino);

	stranger = fork();
	ASSERT_LE(0, stranger);
	if (!stranger) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		union {
			char buf[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} u;
		char data[64], got = 'N';
		int l, c, k;

		if (setgid(SQ_STRANGER) || setuid(SQ_STRANGER))
			_exit(1);
		if (open(path, O_RDWR) >= 0)
			_exit(2);	/* the set-up is wrong: it may open the channel */
		memcpy(a.sun_path, sock, sizeof(sock));
		l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || chmod(sock, 0777) ||
		    listen(l, 8) || write(s2p[1], "s", 1) != 1)
			_exit(3);
		for (k = 0; k < 2; k++) {
			struct pollfd pf = { .fd = l, .events = POLLIN };
			struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
			struct msghdr mh = {
				.msg_iov = &iov, .msg_iovlen = 1,
				.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
			};

			if (poll(&pf, 1, 3000) != 1)
				break;
			c = accept(l, NULL, NULL);
			pf.fd = c;
			if (c >= 0 && poll(&pf, 1, 500) == 1 && recvmsg(c, &mh, 0) > 0 &&
			    CMSG_FIRSTHDR(&mh))
				got = 'F';	/* a channel file came */
			if (c >= 0)
				close(c);
		}
		_exit(got == 'N' ? 0 : 9);
	}
	ASSERT_EQ(1, read(s2p[0], &b, 1));
	ASSERT_EQ(1, write(p2c[1], "g", 1));
	ASSERT_EQ(owner, waitpid(owner, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st)) TH_LOG("owner: status %#x", st);
	ASSERT_EQ(stranger, waitpid(stranger, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
		TH_LOG("stranger: status %#x (9: it was sent a channel file)", st);
	unlink(sock);
	rmdir(dir);
}

/* The address of the doorbell socket of the channel file at @path. */
static void sock_addr(struct __test_metadata *_metadata, struct sockaddr_un *a,
		      const char *dir, const char *path)
{
	struct stat cs;

	ASSERT_EQ(0, stat(path, &cs));
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "%s/.lzchan-%llx-%llx.sock", dir,
		 (unsigned long long)cs.st_dev, (unsigned long long)cs.st_ino);
}

/* After the socket was abused: the channel @name still works; then
 * everything goes. */
static void still_works_then_close(struct __test_metadata *_metadata, struct lzchan *rx,
				   const char *name, const char *dir)
{
	struct lzchan *tx;
	char b;

	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "h", 1));
	EXPECT_EQ(1, lzchan_recv(rx, &b, 1, NULL));
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(name);
	rmdir(dir);
}

/* Anyone may connect to the receiver's socket: a hello with several
 * descriptors, or none, is refused and none of them stays open. */
TEST(bad_hellos_leak_nothing)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	char dir[64], path[128], b;
	struct sockaddr_un a;
	struct lzchan *rx;
	int i, before, after, c, fds[3];

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "hello");
	ASSERT_EQ(0, lzchan_open(&rx, "hello", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	sock_addr(_metadata, &a, dir, path);
	before = lz_dir_entries("/proc/self/fd");
	for (i = 0; i < 20; i++) {
		union {
			char buf[CMSG_SPACE(3 * sizeof(int))];
			struct cmsghdr align;
		} u;
		uint32_t hello[2] = { 0x6c7a6862U, 0 };
		struct iovec iov = { .iov_base = hello, .iov_len = sizeof(hello) };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
		};
		struct cmsghdr *cm;

		memset(u.buf, 0, sizeof(u.buf));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
		fds[0] = fds[1] = fds[2] = open(path, O_RDONLY);
		ASSERT_LE(0, fds[0]);
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
		c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		ASSERT_EQ(0, connect(c, (struct sockaddr *)&a, sizeof(a)));
		ASSERT_EQ((ssize_t)sizeof(hello), sendmsg(c, &mh, 0));
		close(fds[0]);
		close(c);
	}
	/* The receiver takes them in on its next look, and drops them. */
	EXPECT_EQ(-EAGAIN, lzchan_recv(rx, &b, 1, NULL));
	EXPECT_EQ(0, lzchan_arm(rx));
	after = lz_dir_entries("/proc/self/fd");
	EXPECT_EQ(before, after) TH_LOG("%d descriptors stayed in the receiver", after - before);
	still_works_then_close(_metadata, rx, "hello", dir);
}

/*
 * Connections that never say hello hold one of the receiver's few places
 * for them only for a while (about a second): a stranger cannot keep them
 * for ever, and the receiver keeps taking honest senders.
 */
TEST(silent_strangers_are_dropped)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	struct sockaddr_un a;
	struct pollfd pf[16];
	char dir[64], path[128], b;
	struct lzchan *rx;
	int i, hung = 0, round;

	shm_dir(_metadata, dir, sizeof(dir));
	path_of(path, sizeof(path), dir, "silent");
	ASSERT_EQ(0, lzchan_open(&rx, "silent", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	sock_addr(_metadata, &a, dir, path);
	for (i = 0; i < 16; i++) {
		pf[i].fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		pf[i].events = POLLIN;
		ASSERT_EQ(0, connect(pf[i].fd, (struct sockaddr *)&a, sizeof(a)));
	}
	EXPECT_EQ(0, lzchan_arm(rx));		/* takes them in, waiting for hellos */
	usleep(1200000);
	/* The receiver's next looks drop them. */
	for (round = 0; round < 2; round++) {
		EXPECT_EQ(-EAGAIN, lzchan_recv(rx, &b, 1, NULL));
		EXPECT_EQ(0, lzchan_arm(rx));
	}
	EXPECT_LE(1, poll(pf, 16, 5000));
	for (i = 0; i < 16; i++) {
		if (recv(pf[i].fd, &b, 1, MSG_DONTWAIT) == 0)
			hung++;
		close(pf[i].fd);
	}
	EXPECT_EQ(16, hung) TH_LOG("%d of 16 silent connections were kept", 16 - hung);
	still_works_then_close(_metadata, rx, "silent", dir);
}

/* Only faults in channel memory are caught: any other SIGBUS still kills. */
TEST(other_sigbus_still_kills)
{
	char dir[64], path[128];
	struct lzchan_opts o = lz_opts(64, 64, 1);
	struct lzchan *rx;
	pid_t pid;
	int st;

	shm_dir(_metadata, dir, sizeof(dir));
	ASSERT_EQ(0, lzchan_open(&rx, "other", LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	snprintf(path, sizeof(path), "%s/not-a-channel", dir);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open(path, O_RDWR | O_CREAT, 0600);
		volatile char *p;

		if (fd < 0 || ftruncate(fd, 4096))
			_exit(1);
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 0))
			_exit(2);
		p[0] = 1;
		_exit(3);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS) TH_LOG("status %#x", st);
	/* Nor is a SIGBUS sent with kill() (it has no fault address). */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		kill(getpid(), SIGBUS);
		_exit(3);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS) TH_LOG("kill: status %#x", st);
	unlink(path);
	lzchan_close(rx);
	lzchan_unlink("other");
	rmdir(dir);
}

TEST_HARNESS_MAIN
