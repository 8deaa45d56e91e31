// SPDX-License-Identifier: GPL-2.0-only
/*
 * liblzchan, call by call: every API call and its errors.  Runs on the
 * host (shm backend) and in the VM rig (dev backend, LZCHAN_EXPECT_DEV=1).
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

/* A receiver (creating the channel) and one sender. */
struct pair {
	const char *name;
	struct lzchan *rx, *tx;
};

static int pair_open(struct pair *p, const char *prefix, struct lzchan_opts o)
{
	int r;

	p->name = lz_name(prefix);
	r = lzchan_open(&p->rx, p->name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
	if (r)
		return r;
	return lzchan_open(&p->tx, p->name, LZCHAN_SENDER, NULL);
}

static void pair_close(struct pair *p)
{
	lzchan_close(p->tx);
	lzchan_close(p->rx);
	lzchan_unlink(p->name);
}

/*
 * Send from the thread that also receives.  A message that does not fit
 * before the ring's end goes after a pad; when the receiver has not passed
 * the pad yet the send says -EAGAIN, and receiving (nothing) lets the
 * receiver pass it.
 */
static int send_here(struct pair *p, const void *buf, size_t len)
{
	char scratch[8];
	int r = lzchan_send(p->tx, buf, len);

	if (r != -EAGAIN)
		return r;
	r = lzchan_recv(p->rx, scratch, sizeof(scratch), NULL);
	if (r != -EAGAIN)
		return r < 0 ? r : -EPROTO;
	return lzchan_send(p->tx, buf, len);
}

TEST(version)
{
	EXPECT_EQ(LZCHAN_VERSION_MAJOR, lzchan_version_major());
	EXPECT_EQ(LZCHAN_VERSION_MINOR, lzchan_version_minor());
}

TEST(backend_selection)
{
	struct pair p;
	struct lzchan_geom g;
	struct lzchan_opts o = lz_opts(64, 64, 2);

	ASSERT_EQ(0, pair_open(&p, "be", o));
	ASSERT_EQ(0, lzchan_geometry(p.rx, &g));
	if (lz_expect_dev() || access(LZCHAN_DEVICE_PATH, F_OK) == 0) {
		EXPECT_EQ(LZCHAN_BACKEND_DEV, g.backend);
	} else {
		EXPECT_EQ(LZCHAN_BACKEND_SHM, g.backend);
	}
	EXPECT_NE(NULL, strstr(lzchan_backend_name(p.rx),
			       g.backend == LZCHAN_BACKEND_DEV ? "dev" : "shm"));
	pair_close(&p);
}

TEST(dev_features)
{
	struct lzchan_features f = { 0 };
	int ret = lzchan_dev_features(&f);

	if (!lz_expect_dev() && access(LZCHAN_DEVICE_PATH, F_OK) < 0) {
		EXPECT_EQ(-ENOENT, ret);
		return;
	}
	ASSERT_EQ(0, ret);
	EXPECT_EQ(LZCHAN_ABI_VERSION, f.abi_version);
}

TEST(open_errors)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *n = lz_name("oe");
	struct lzchan *rx, *a, *b, *c;

	EXPECT_EQ(-EINVAL, lzchan_open(&rx, n, 0, NULL));
	EXPECT_EQ(-EINVAL, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_SENDER, NULL));
	EXPECT_EQ(-EINVAL, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_EXCL, NULL));
	EXPECT_EQ(-EINVAL, lzchan_open(&rx, n, LZCHAN_RECEIVER | (1U << 9), NULL));
	EXPECT_EQ(-EINVAL, lzchan_open(NULL, n, LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(-EINVAL, lzchan_open(&rx, "a/b", LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(-EINVAL, lzchan_open(&rx, "", LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(-ENOENT, lzchan_open(&rx, n, LZCHAN_RECEIVER, NULL));
	o.slot_count = 100;
	EXPECT_EQ(-EINVAL, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	o.slot_count = 64;

	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	EXPECT_EQ(-EEXIST, lzchan_open(&a, n, LZCHAN_SENDER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	EXPECT_EQ(-EBUSY, lzchan_open(&a, n, LZCHAN_RECEIVER, NULL));
	ASSERT_EQ(0, lzchan_open(&a, n, LZCHAN_SENDER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&b, n, LZCHAN_SENDER, NULL));
	EXPECT_EQ(-EUSERS, lzchan_open(&c, n, LZCHAN_SENDER, NULL));
	lzchan_close(a);
	lzchan_close(b);
	lzchan_close(rx);
	EXPECT_EQ(0, lzchan_unlink(n));
	EXPECT_EQ(-ENOENT, lzchan_unlink(n));
}

TEST(geometry)
{
	struct lzchan_geom g;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "geo", lz_opts(128, 32, 3)));
	ASSERT_EQ(0, lzchan_geometry(p.tx, &g));
	EXPECT_EQ(128, g.slot_size);
	EXPECT_EQ(32, g.slot_count);
	EXPECT_EQ(3, g.max_senders);
	EXPECT_EQ(31 * 128 - 8, g.max_msg);
	EXPECT_EQ(0, g.lane);
	ASSERT_EQ(0, lzchan_geometry(p.rx, &g));
	EXPECT_EQ(LZCHAN_LANE_NONE, g.lane);
	EXPECT_EQ(-EINVAL, lzchan_geometry(NULL, &g));
	pair_close(&p);
}

TEST(send_recv)
{
	char buf[64];
	uint32_t lane = 99;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "sr", lz_opts(64, 64, 2)));
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	ASSERT_EQ(0, lzchan_send(p.tx, "hello", 5));
	ASSERT_EQ(5, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(0, memcmp(buf, "hello", 5));
	EXPECT_EQ(0, lane);
	/* Zero-length messages exist. */
	ASSERT_EQ(0, lzchan_send(p.tx, NULL, 0));
	EXPECT_EQ(0, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	/* Roles. */
	EXPECT_EQ(-EBADF, lzchan_send(p.rx, "x", 1));
	EXPECT_EQ(-EBADF, lzchan_recv(p.tx, buf, sizeof(buf), &lane));
	EXPECT_EQ(-EBADF, lzchan_send(NULL, "x", 1));
	pair_close(&p);
}

/* Every length, on 64-byte slots (inline up to 56) and 128-byte ones
 * (inline up to LZCHAN_INLINE_MAX, 64): what arrives is what was sent,
 * and nothing past it in the receive buffer is written. */
TEST(every_size)
{
	static char out[64 * 128], in[64 * 128 + 1];
	static const uint32_t slot_sizes[] = { 64, 128 };
	struct lzchan_geom g;
	struct pair p;
	uint32_t len, i, k;

	for (k = 0; k < 2; k++) {
		ASSERT_EQ(0, pair_open(&p, "size", lz_opts(slot_sizes[k], 64, 1)));
		ASSERT_EQ(0, lzchan_geometry(p.tx, &g));
		for (len = 0; len <= g.max_msg; len++) {
			for (i = 0; i < len; i++)
				out[i] = (char)(len * 7 + i);
			memset(in, 0xa5, len + 1);
			ASSERT_EQ(0, send_here(&p, out, len)) TH_LOG("len %u", len);
			ASSERT_EQ((int)len, lzchan_recv(p.rx, in, sizeof(in) - 1, NULL));
			ASSERT_EQ(0, memcmp(in, out, len)) TH_LOG("len %u", len);
			ASSERT_EQ((char)0xa5, in[len]) TH_LOG("len %u: written past", len);
			/* Finding the ring empty publishes the receiver's
			 * position: then the largest message always fits. */
			ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, in, sizeof(in), NULL));
		}
		EXPECT_EQ(-EMSGSIZE, lzchan_send(p.tx, out, g.max_msg + 1));
		pair_close(&p);
	}
}

TEST(full_ring_and_recv_too_small)
{
	char buf[256];
	uint32_t lane, n = 0;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "full", lz_opts(64, 16, 1)));
	while (lzchan_send(p.tx, buf, 40) == 0)
		n++;
	/* 16 slots, one kept for the marker at most: 15 or 16 fit. */
	EXPECT_LE(15, n);
	EXPECT_GE(16, n);
	EXPECT_EQ(-EAGAIN, lzchan_send(p.tx, buf, 40));
	EXPECT_EQ(-EMSGSIZE, lzchan_recv(p.rx, buf, 10, &lane));
	EXPECT_EQ(0, lane);
	EXPECT_EQ(40, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	while (lzchan_recv(p.rx, buf, sizeof(buf), &lane) == 40)
		n--;
	EXPECT_EQ(1, n);
	/* Room again once the receiver went idle (it publishes then). */
	EXPECT_EQ(0, lzchan_send(p.tx, buf, 40));
	pair_close(&p);
}

/*
 * Many laps of mixed sizes, single-slot to nearly the ring, with payloads
 * that imitate, at every slot boundary, the seq the receiver will expect
 * when it lands on that slot a lap later.  A ring without the "not ready"
 * marker takes such payload for a message and fails here.
 */
TEST(wraparound_adversarial_payload)
{
#define S 64
#define N 32
	static uint32_t out[N * S / 4], in[N * S / 4];
	uint32_t pos = 0, len, n, i, k, seed = 12345;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "wrap", lz_opts(S, N, 1)));
	for (k = 0; k < 20000; k++) {
		seed = seed * 1103515245 + 12345;
		len = (seed >> 8) % ((N - 1) * S - 8 + 1);
		if (k % 3)
			len %= 3 * S;
		n = (len + 8 + S - 1) / S;
		if ((pos % N) + n > N)
			pos += N - pos % N;		/* the sender pads */
		/* Word 0 of each continuation slot: the seq of that slot's
		 * position one lap on. */
		for (i = 0; i < len / 4; i++)
			out[i] = k ^ i;
		for (i = 1; i < n; i++) {
			uint32_t off = i * S - 8;	/* payload offset of slot i */

			if (off + 4 <= len)
				out[off / 4] = pos + i + N + 1;
		}
		ASSERT_EQ(0, send_here(&p, out, len)) TH_LOG("k %u len %u", k, len);
		ASSERT_EQ((int)len, lzchan_recv(p.rx, in, sizeof(in), NULL)) TH_LOG("k %u len %u", k, len);
		ASSERT_EQ(0, memcmp(in, out, len)) TH_LOG("k %u", k);
		pos += n;
		/* Nothing may look ready after the message. */
		ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, in, sizeof(in), NULL)) TH_LOG("k %u", k);
	}
	pair_close(&p);
#undef S
#undef N
}

/*
 * After a message that spans slots, the sender's inline path stands aside
 * (a slot's first word holds payload, which a one-slot message there
 * would have to mark) -- until every such slot has been written over,
 * then it comes back.  Looked at through the inline gate (struct
 * __lzchan_fast, private but in the header); what arrives is checked
 * throughout, with a payload word that forges the next lap's sequence.
 */
TEST(inline_send_comes_back_after_a_long_message)
{
	const struct __lzchan_fast *f;
	uint32_t out[64], in[64], k;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "back", lz_opts(64, 32, 1)));
	f = (const struct __lzchan_fast *)p.tx;
	if (!f->tx_max)
		SKIP(goto out, "this sender fences every send (no membarrier): never inline");
	/* A new sender's first send is the library's: it has not looked at
	 * the receiver's attn word yet.  Then the inline gate opens. */
	EXPECT_EQ(0, (int32_t)f->tx_room);
	ASSERT_EQ(0, lzchan_send(p.tx, "first", 5));
	ASSERT_EQ(5, lzchan_recv(p.rx, in, sizeof(in), NULL));
	EXPECT_LT(0, (int32_t)f->tx_room);
	/* Three slots; the first word of slot 2's payload area says "ready"
	 * for position 2 one lap on. */
	memset(out, 0x5a, sizeof(out));
	out[(2 * 64 - 8) / 4] = 3 + 32 + 1;
	ASSERT_EQ(0, lzchan_send(p.tx, out, 3 * 64 - 8));
	ASSERT_EQ(3 * 64 - 8, lzchan_recv(p.rx, in, sizeof(in), NULL));
	EXPECT_EQ(0, memcmp(in, out, 3 * 64 - 8));
	EXPECT_EQ(0, (int32_t)f->tx_room) TH_LOG("inline send over a slot with payload in word 0");
	for (k = 0; k < 40; k++) {
		out[0] = k;
		ASSERT_EQ(0, lzchan_send(p.tx, out, 8));
		ASSERT_EQ(8, lzchan_recv(p.rx, in, sizeof(in), NULL)) TH_LOG("k %u", k);
		ASSERT_EQ(k, in[0]);
		ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, in, sizeof(in), NULL)) TH_LOG("k %u", k);
	}
	EXPECT_LT(0, (int32_t)f->tx_room) TH_LOG("the inline send never came back");
out:
	pair_close(&p);
}

/*
 * A receiver polling an empty channel gets its "empty" verdicts inline
 * (no library call) while nothing has moved; news still comes at the next
 * poll: its own lane's end of stream, and a message on a lane it does not
 * poll (its bell rings).  And once it has caught up, the sender sees all
 * the room (the head is published by the inline verdict too).
 */
TEST(quiet_receiver_hears_news)
{
	const struct __lzchan_fast *f;
	struct lzchan *tx2;
	uint32_t lane;
	char buf[64];
	struct pair p;
	int k, r;

	ASSERT_EQ(0, pair_open(&p, "quiet", lz_opts(64, 8, 2)));
	f = (const struct __lzchan_fast *)p.rx;
	/* Lane 0 carries one message, then the receiver spins on nothing:
	 * after the first full look, verdicts come inline. */
	ASSERT_EQ(0, lzchan_send(p.tx, "a", 1));
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	for (k = 0; k < 10; k++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_LT(0, f->quiet) TH_LOG("no inline verdicts granted");
	/* A full ring, drained: the sender can fill it again at once. */
	for (k = 0; k < 8; k++)
		ASSERT_EQ(0, lzchan_send(p.tx, "b", 1)) TH_LOG("send %d", k);
	for (k = 0; k < 8; k++)
		ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL)) TH_LOG("recv %d", k);
	ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	for (k = 0; k < 8; k++)
		ASSERT_EQ(0, lzchan_send(p.tx, "c", 1)) TH_LOG("send %d after the drain", k);
	for (k = 0; k < 8; k++)
		ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	for (k = 0; k < 10; k++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* A second sender's first message (its lane is not polled yet). */
	ASSERT_EQ(0, lzchan_open(&tx2, p.name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx2, "d", 1));
	for (k = 0; (r = lzchan_recv(p.rx, buf, sizeof(buf), &lane)) == -EAGAIN && k < 1000; k++)
		;
	ASSERT_EQ(1, r);
	EXPECT_EQ(1, lane);
	EXPECT_EQ(0, k) TH_LOG("the second lane's message took %d polls", k);
	lzchan_close(tx2);
	ASSERT_EQ(-EPIPE, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(1, lane);
	for (k = 0; k < 10; k++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* Lane 0's sender leaves during a spell: its end at the next poll. */
	lzchan_close(p.tx);
	p.tx = NULL;
	EXPECT_EQ(-EPIPE, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(0, lane);
	pair_close(&p);
}

TEST(batch_send_and_recv)
{
	struct iovec iov[100];
	struct lzchan_msg m[64];
	uint32_t vals[100], i, got, round;
	struct pair p;
	int r;

	ASSERT_EQ(0, pair_open(&p, "batch", lz_opts(64, 256, 1)));
	/* Five rounds through 256 slots: batches run across the ring's end. */
	for (round = 0; round < 5; round++) {
		for (i = 0; i < 100; i++) {
			vals[i] = round * 1000 + i * 3;
			iov[i].iov_base = &vals[i];
			iov[i].iov_len = 4;
		}
		ASSERT_EQ(100, lzchan_send_batch(p.tx, iov, 100));
		for (got = 0; got < 100; got += r) {
			r = lzchan_recv_batch(p.rx, m, 64);
			ASSERT_LT(0, r);
			ASSERT_GE(100 - got, (uint32_t)r);
			for (i = 0; i < (uint32_t)r; i++) {
				EXPECT_EQ(4, m[i].len);
				EXPECT_EQ(round * 1000 + (got + i) * 3, *(const uint32_t *)m[i].data);
			}
			lzchan_release(p.rx, &m[r - 1]);
		}
	}
	EXPECT_EQ(-EAGAIN, lzchan_recv_batch(p.rx, m, 64));
	EXPECT_EQ(-EINVAL, lzchan_recv_batch(p.rx, m, 0));
	/* No view to fill: an error, not a crash (with a message waiting). */
	ASSERT_EQ(0, lzchan_send(p.tx, "n", 1));
	EXPECT_EQ(-EINVAL, lzchan_recv_batch(p.rx, NULL, 4));
	EXPECT_EQ(-EINVAL, lzchan_peek(p.rx, NULL));
	EXPECT_EQ(-EINVAL, lzchan_peek_lane(p.rx, 0, NULL));
	pair_close(&p);
}

/*
 * One-slot messages longer than the inline copy (LZCHAN_INLINE_MAX) in
 * 256-byte slots: every length from 57 to the slot's payload, sent and
 * reserved, through the library's gate (memcpy) or the general way, and
 * each received whole, in order, with a full ring in between.  (Built
 * with LZCHAN_NO_INLINE too: selftests/noinline.)
 */
TEST(long_one_slot_messages)
{
	char out[256], in[256];
	struct pair p;
	uint32_t len, seq = 0, got = 0;
	void *w;
	int r;

	ASSERT_EQ(0, pair_open(&p, "l1s", lz_opts(256, 64, 1)));
	for (len = 57; len <= 248; len++) {
		memset(out, (int)(len & 0x7f), len);
		memcpy(out, &seq, sizeof(seq));
		if (len & 1) {
			r = lzchan_send(p.tx, out, len);
		} else {
			r = lzchan_reserve(p.tx, len, &w);
			if (!r) {
				memcpy(w, out, len);
				r = lzchan_commit(p.tx, len);
			}
		}
		if (r == -EAGAIN) {	/* full: drain, then again */
			while ((r = lzchan_recv(p.rx, in, sizeof(in), NULL)) > 0) {
				uint32_t s;

				memcpy(&s, in, sizeof(s));
				ASSERT_EQ(got, s);
				ASSERT_EQ((char)((57 + got) & 0x7f), in[r - 1]);
				ASSERT_EQ(57 + got, (uint32_t)r);
				got++;
			}
			len--;
			continue;
		}
		ASSERT_EQ(0, r) TH_LOG("len %u", len);
		seq++;
	}
	while ((r = lzchan_recv(p.rx, in, sizeof(in), NULL)) > 0) {
		uint32_t s;

		memcpy(&s, in, sizeof(s));
		ASSERT_EQ(got, s);
		ASSERT_EQ(57 + got, (uint32_t)r);
		ASSERT_EQ((char)((57 + got) & 0x7f), in[r - 1]);
		got++;
	}
	EXPECT_EQ(-EAGAIN, r);
	EXPECT_EQ(seq, got);
	EXPECT_EQ(248 - 57 + 1, got);
	pair_close(&p);
}

TEST(reserve_commit)
{
	char buf[128];
	void *w;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "zc", lz_opts(64, 64, 1)));
	EXPECT_EQ(-EINVAL, lzchan_commit(p.tx, 1));
	ASSERT_EQ(0, lzchan_reserve(p.tx, 100, &w));
	memset(w, 'z', 100);
	EXPECT_EQ(-EBUSY, lzchan_reserve(p.tx, 10, &w));
	EXPECT_EQ(-EBUSY, lzchan_send(p.tx, "x", 1));
	EXPECT_EQ(-EINVAL, lzchan_commit(p.tx, 101));
	ASSERT_EQ(0, lzchan_commit(p.tx, 60));
	ASSERT_EQ(60, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ('z', buf[59]);
	EXPECT_EQ(-EBADF, lzchan_reserve(p.rx, 1, &w));
	/* A receiver's handle lets an empty message through the inline
	 * send's length test (its tx_max is 0): the gate it then takes a
	 * position from is set back, and no commit follows it. */
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(-EBADF, lzchan_send(p.rx, "", 0));
		EXPECT_EQ(-EBADF, lzchan_commit(p.rx, 0));
	}
	pair_close(&p);
}

/*
 * A reservation may be written in full and committed shorter.  The slots
 * it does not use then hold the caller's bytes where their headers go: a
 * word there that reads as the next position's seq must not become a
 * message nobody sent (it once did, and the sender's real next message,
 * written over it later, was then never received).
 */
TEST(commit_less_than_reserved_sends_no_phantom)
{
	char buf[256];
	uint32_t word[2];
	struct pair p;
	void *w;
	int k;

	ASSERT_EQ(0, pair_open(&p, "phantom", lz_opts(64, 64, 1)));
	for (k = 0; k < 2; k++) {
		uint32_t pos = k * 3;	/* the tail: a round takes 1 + 2 slots */

		/* 150 bytes: three slots at pos; the second slot's header is
		 * at offset 56 of the buffer. */
		ASSERT_EQ(0, lzchan_reserve(p.tx, 150, &w));
		memset(w, 'p', 150);
		word[0] = pos + 2;	/* "ready" for position pos + 1 */
		word[1] = 4;
		memcpy((char *)w + 56, word, sizeof(word));
		ASSERT_EQ(0, lzchan_commit(p.tx, 10));
		ASSERT_EQ(10, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
		EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL))
			TH_LOG("a message nobody sent");
		/* The next one, of several slots, over those slots. */
		memset(buf, 'n', 100);
		ASSERT_EQ(0, lzchan_send(p.tx, buf, 100));
		memset(buf, 0, sizeof(buf));
		ASSERT_EQ(100, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
		EXPECT_EQ('n', buf[99]);
		EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	}
	pair_close(&p);
}

/*
 * An inline reservation (one slot) stays the only thing in flight however
 * many sends try meanwhile: the inline send takes a position from its gate
 * as it tests it, which an open reservation keeps below 0, and the library
 * each refused send reaches computes the gate again (were it not, the
 * refusals would count the reservation's mark away and a send would slip
 * in, over the reserved slot).
 */
TEST(sends_wait_for_an_inline_reservation)
{
	char buf[64], *w;
	struct pair p;
	int i, n, v;

	ASSERT_EQ(0, pair_open(&p, "zci", lz_opts(64, 64, 1)));
	/* The inline gate opens once the library has looked, and looks
	 * again after the receiver moved attn (its first receive does). */
	ASSERT_EQ(0, lzchan_send(p.tx, "first", 5));
	ASSERT_EQ(5, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	ASSERT_EQ(0, lzchan_send(p.tx, "second", 6));
	ASSERT_EQ(0, lzchan_reserve(p.tx, 20, (void **)&w));
	/* The inline reservation's mark (lzchan.h), unless every send must
	 * fence here (no membarrier: the library reserves, and this is not
	 * the case tested). */
	if (!((const struct __lzchan_fast *)p.tx)->tx_max) {
		lzchan_commit(p.tx, 20);
		pair_close(&p);
		SKIP(return, "no inline send here (no membarrier)");
	}
	ASSERT_GT(0, (int32_t)((const struct __lzchan_fast *)p.tx)->tx_room);
	memset(w, 'r', 20);
	for (i = 0; i < 300; i++) {
		ASSERT_EQ(-EBUSY, lzchan_send(p.tx, "x", 1)) TH_LOG("send %d", i);
		if (i % 7 == 0)
			ASSERT_EQ(-EBUSY, lzchan_reserve(p.tx, 8, (void **)&w));
	}
	ASSERT_EQ(0, lzchan_commit(p.tx, 20));
	ASSERT_EQ(6, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	ASSERT_EQ(20, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ('r', buf[0]);
	EXPECT_EQ('r', buf[19]);
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* And the whole ring is there after it. */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, lzchan_send(p.tx, "y", 1)) TH_LOG("send %d", i);
	EXPECT_EQ(-EAGAIN, lzchan_send(p.tx, "y", 1));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* Inline reservations fill the ring and no more: each commit takes
	 * its position from the gate (one that did not would reserve over
	 * messages not read yet). */
	for (i = 0; i < 200; i++) {
		if (lzchan_reserve(p.tx, 8, (void **)&w))
			break;
		memcpy(w, &i, sizeof(i));
		memset(w + sizeof(i), 'c', 8 - sizeof(i));
		ASSERT_EQ(0, lzchan_commit(p.tx, 8));
	}
	EXPECT_GE(64, i);
	EXPECT_LT(0, i);
	for (n = i, i = 0; i < n; i++) {
		ASSERT_EQ(8, lzchan_recv(p.rx, buf, sizeof(buf), NULL)) TH_LOG("%d of %d", i, n);
		memcpy(&v, buf, sizeof(v));
		ASSERT_EQ(i, v);
	}
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	pair_close(&p);
}

TEST(peek_release)
{
	struct lzchan_msg a, b;
	char buf[16], big[248];
	uint32_t left;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "peek", lz_opts(64, 64, 1)));
	ASSERT_EQ(0, lzchan_send(p.tx, "one", 3));
	ASSERT_EQ(0, lzchan_send(p.tx, "two", 3));
	ASSERT_EQ(0, lzchan_peek(p.rx, &a));
	ASSERT_EQ(0, lzchan_peek(p.rx, &b));
	EXPECT_EQ(0, memcmp(a.data, "one", 3));
	EXPECT_EQ(0, memcmp(b.data, "two", 3));
	EXPECT_EQ(-EAGAIN, lzchan_peek(p.rx, &b));
	/* Releasing the second releases both. */
	lzchan_release(p.rx, &b);
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* A stale view is ignored. */
	lzchan_release(p.rx, &a);
	ASSERT_EQ(0, lzchan_send(p.tx, "three", 5));
	EXPECT_EQ(5, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* So are a view handed to a sender's handle (which has no lanes: the
	 * inline release's bound is 0 there), no handle, no view, and a view
	 * of a lane out of range; the receiver's next view is intact. */
	ASSERT_EQ(0, lzchan_send(p.tx, "four", 4));
	ASSERT_EQ(0, lzchan_peek(p.rx, &a));
	b = a;
	lzchan_release(p.tx, &a);
	lzchan_release(NULL, &a);
	lzchan_release(p.rx, NULL);
	b.lane = 64;
	lzchan_release(p.rx, &b);
	b.lane = UINT32_MAX;
	lzchan_release(p.rx, &b);
	EXPECT_EQ(-EAGAIN, lzchan_peek(p.rx, &b));
	EXPECT_EQ(0, memcmp(a.data, "four", 4));
	lzchan_release(p.rx, &a);
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	pair_close(&p);

	/* A one-slot message longer than the inline copy's limit, on big
	 * slots: peeked whole. */
	memset(big, 'q', sizeof(big));
	big[247] = 'z';
	ASSERT_EQ(0, pair_open(&p, "peekbig", lz_opts(256, 16, 1)));
	ASSERT_EQ(0, lzchan_send(p.tx, big, sizeof(big)));
	ASSERT_EQ(0, lzchan_send(p.tx, big, 100));
	ASSERT_EQ(0, lzchan_peek(p.rx, &a));
	EXPECT_EQ(248, a.len);
	EXPECT_EQ('z', ((const char *)a.data)[247]);
	/* The second through the inline peek (the first granted it). */
	left = ((const struct __lzchan_fast *)p.rx)->span;
	ASSERT_LT(0, left);
	ASSERT_EQ(0, lzchan_peek(p.rx, &b));
	EXPECT_EQ(left - 1, ((const struct __lzchan_fast *)p.rx)->span);
	EXPECT_EQ(100, b.len);
	lzchan_release(p.rx, &b);
	EXPECT_EQ(-EAGAIN, lzchan_peek(p.rx, &b));
	pair_close(&p);
}

/*
 * A zero-copy receiver that holds views, gives most of them back and
 * polls on (a worker releasing when it is done) frees their room for the
 * sender: the inline release only moves the head, and the polls publish
 * it when due.  (A review found the sender refused for ever once the
 * ring had filled: nothing published a head short of the peek.)
 */
TEST(views_given_back_while_polling_free_room)
{
	struct lzchan_msg m[80], extra;
	int style, got, r, k;
	struct pair p;

	for (style = 0; style < 2; style++) {
		ASSERT_EQ(0, pair_open(&p, "giveback", lz_opts(64, 64, 1)));
		for (k = 0; !(r = lzchan_send(p.tx, "v", 1)); k++)
			;
		ASSERT_EQ(-EAGAIN, r);
		ASSERT_EQ(64, k);
		/* Every message as a view: batches, or one at a time. */
		for (got = 0, k = 0; k < 200 && got < 64; k++) {
			r = style ? lzchan_peek(p.rx, &m[got]) : lzchan_recv_batch(p.rx, m + got, 16);
			if (r == -EAGAIN)
				continue;
			ASSERT_LE(0, r);
			got += style ? 1 : r;
		}
		ASSERT_EQ(64, got);
		for (k = 0; k < 10; k++)
			ASSERT_EQ(-EAGAIN, style ? lzchan_peek(p.rx, &extra) :
					   lzchan_recv_batch(p.rx, &extra, 1));
		/* All but the newest given back; the worker keeps polling. */
		lzchan_release(p.rx, &m[62]);
		for (k = 0; k < 100; k++)
			ASSERT_EQ(-EAGAIN, style ? lzchan_peek(p.rx, &extra) :
					   lzchan_recv_batch(p.rx, &extra, 1));
		EXPECT_EQ(0, lzchan_send(p.tx, "w", 1)) TH_LOG("style %d: no room after "
							       "63 views were given back", style);
		pair_close(&p);
	}
}

/*
 * A receiver whose span ran out on an empty poll -- as a ping-pong on a
 * small lane runs it out once a quarter ring -- goes to the library, which
 * grants again and may then give the quick "empty" itself.  News still
 * ends the spell there: a sender that left has its end at once, not
 * another "empty".  The span is run out by hand.
 */
TEST(run_out_gate_on_an_empty_poll_still_sees_an_end)
{
	struct __lzchan_fast *f;
	struct pair p;
	char buf[64];
	int i;

	ASSERT_EQ(0, pair_open(&p, "runout", lz_opts(64, 64, 1)));
	ASSERT_EQ(0, lzchan_send(p.tx, "a", 1));
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* The library's look finds nothing; quick verdicts from here on. */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	f = (struct __lzchan_fast *)p.rx;
	ASSERT_LT(0, f->quiet);
	ASSERT_EQ(0, f->cur_lane);
	f->span = 0;
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_LT(0, f->span) TH_LOG("the span was not granted again");
	f->span = 0;
	lzchan_close(p.tx);
	EXPECT_EQ(-EPIPE, lzchan_recv(p.rx, buf, sizeof(buf), NULL)) TH_LOG("the end waited");
	lzchan_close(p.rx);
	lzchan_unlink(p.name);
}

/*
 * ... and the quick verdicts given there count into the spell like any
 * other: a receiver that polls only with its gate run out still looks in
 * full within QUIET_POLLS (256) polls, and so hears of a sender that
 * attached and left without sending (its lane is not polled; only the
 * full look's count of departures tells).  Bounded at 4096 polls, a hang
 * bound: uncounted, the spell never ends.
 */
TEST(run_out_polls_still_end_the_spell)
{
	struct lzchan *tx2;
	struct __lzchan_fast *f;
	struct pair p;
	uint32_t lane = 99;
	char buf[64];
	int i, r = 0;

	ASSERT_EQ(0, pair_open(&p, "runspell", lz_opts(64, 64, 2)));
	ASSERT_EQ(0, lzchan_send(p.tx, "a", 1));
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	ASSERT_EQ(0, lzchan_open(&tx2, p.name, LZCHAN_SENDER, NULL));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	lzchan_close(tx2);
	f = (struct __lzchan_fast *)p.rx;
	for (i = 0; i < 4096; i++) {
		f->span = 0;
		r = lzchan_recv(p.rx, buf, sizeof(buf), &lane);
		if (r != -EAGAIN)
			break;
	}
	EXPECT_EQ(-EPIPE, r) TH_LOG("after %d polls", i);
	EXPECT_EQ(1, lane);
	pair_close(&p);
}

/* A receive while views of the lane are outstanding takes the message
 * after them and releases them with it, inline as in the library: no
 * message twice, none skipped, and all the room back for the sender. */
TEST(recv_releases_outstanding_views)
{
	struct lzchan_msg a;
	char buf[16];
	struct pair p;
	int i;

	ASSERT_EQ(0, pair_open(&p, "views", lz_opts(64, 64, 1)));
	ASSERT_EQ(0, lzchan_send(p.tx, "one", 3));
	ASSERT_EQ(0, lzchan_send(p.tx, "two", 3));
	ASSERT_EQ(0, lzchan_send(p.tx, "six", 3));
	ASSERT_EQ(0, lzchan_peek(p.rx, &a));
	EXPECT_EQ(0, memcmp(a.data, "one", 3));
	/* Too long for the buffer: it stays, and so does the view before it. */
	ASSERT_EQ(-EMSGSIZE, lzchan_recv(p.rx, buf, 2, NULL));
	ASSERT_EQ(3, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ(0, memcmp(buf, "two", 3));
	/* The view went with it: releasing it now changes nothing. */
	lzchan_release(p.rx, &a);
	ASSERT_EQ(3, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ(0, memcmp(buf, "six", 3));
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	/* Caught up: the whole ring is the sender's again. */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, lzchan_send(p.tx, &i, sizeof(i)));
	EXPECT_EQ(-EAGAIN, lzchan_send(p.tx, &i, sizeof(i)));
	for (i = 0; i < 64; i++) {
		int v = -1;

		ASSERT_EQ((int)sizeof(v), lzchan_recv(p.rx, &v, sizeof(v), NULL));
		ASSERT_EQ(i, v);
	}
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	pair_close(&p);
}

TEST(directed_and_any)
{
	struct lzchan *rx, *t0, *t1;
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *n = lz_name("dir");
	char buf[16];
	uint32_t lane;

	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&t0, n, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_open(&t1, n, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(t0, "a", 1));
	ASSERT_EQ(0, lzchan_send(t1, "b", 1));
	/* Directed: lane 1 only. */
	ASSERT_EQ(1, lzchan_recv_lane(rx, 1, buf, sizeof(buf)));
	EXPECT_EQ('b', buf[0]);
	EXPECT_EQ(-EAGAIN, lzchan_recv_lane(rx, 1, buf, sizeof(buf)));
	EXPECT_EQ(-EINVAL, lzchan_recv_lane(rx, 2, buf, sizeof(buf)));
	ASSERT_EQ(1, lzchan_recv(rx, buf, sizeof(buf), &lane));
	EXPECT_EQ('a', buf[0]);
	EXPECT_EQ(0, lane);
	lzchan_close(t0);
	lzchan_close(t1);
	lzchan_close(rx);
	lzchan_unlink(n);
}

TEST(end_of_stream_and_lane_reuse)
{
	struct lzchan_msg m;
	struct lzchan *tx2;
	char buf[16];
	uint32_t lane = 9;
	struct pair p;
	int i;

	ASSERT_EQ(0, pair_open(&p, "eos", lz_opts(64, 64, 1)));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, lzchan_send(p.tx, &i, sizeof(i)));
	lzchan_close(p.tx);
	p.tx = NULL;
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(4, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
		EXPECT_EQ(i, *(int *)buf);
	}
	EXPECT_EQ(-EPIPE, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(0, lane);
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), &lane));

	/* The drained lane takes a new sender; its messages are its own (a
	 * view of one can be released), and its end comes exactly once --
	 * the first sender's end is not owed again. */
	ASSERT_EQ(0, lzchan_open(&tx2, p.name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx2, "new", 3));
	ASSERT_EQ(0, lzchan_send(tx2, "two", 3));
	ASSERT_EQ(0, lzchan_peek(p.rx, &m));
	ASSERT_EQ(3, m.len);
	EXPECT_EQ(0, memcmp(m.data, "new", 3));
	lzchan_release(p.rx, &m);
	ASSERT_EQ(3, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(0, memcmp(buf, "two", 3));
	lzchan_close(tx2);
	EXPECT_EQ(-EPIPE, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	pair_close(&p);
}

/* A lane found holding garbage stays abandoned: whatever its sender
 * writes there afterwards is never delivered, by any receive path; its
 * end comes when the sender leaves, and the lane takes a new one. */
TEST(broken_lane_stays_broken)
{
	struct lzchan_slot_hdr *h;
	struct lzchan_geom g;
	char buf[256];
	uint32_t lane = 9, r2 = 9;
	struct pair p;
	void *slot;
	int i, r;

	ASSERT_EQ(0, pair_open(&p, "brk", lz_opts(64, 16, 2)));
	ASSERT_EQ(0, lzchan_send(p.tx, "hello", 5));
	ASSERT_EQ(5, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	/* A hostile sender: a "ready" slot (position 1) with a length no
	 * message can have. */
	ASSERT_EQ(0, lzchan_reserve(p.tx, 8, &slot));
	h = (struct lzchan_slot_hdr *)slot - 1;
	__atomic_store_n(&h->len, 0x7fffffffU, __ATOMIC_RELAXED);
	__atomic_store_n(&h->seq, 2, __ATOMIC_RELEASE);
	EXPECT_EQ(-EBADMSG, lzchan_recv_lane(p.rx, lane, buf, sizeof(buf)));
	/* It then makes the slot look like a fine message. */
	__atomic_store_n(&h->len, 6U, __ATOMIC_RELAXED);
	memcpy(slot, "evil!", 6);
	for (i = 0; i < 4; i++) {
		struct lzchan_msg m;

		r = lzchan_recv(p.rx, buf, sizeof(buf), NULL);
		EXPECT_TRUE(r == -EAGAIN || r == -EBADMSG) TH_LOG("recv gave %d", r);
		r = lzchan_peek(p.rx, &m);
		EXPECT_TRUE(r == -EAGAIN || r == -EBADMSG) TH_LOG("peek gave %d", r);
		EXPECT_EQ(-EBADMSG, lzchan_recv_lane(p.rx, lane, buf, sizeof(buf)));
	}
	/* Once its sender has gone the lane ends (once) and is given up,
	 * so a new sender gets it: a sender burns only its own turn. */
	lzchan_close(p.tx);
	EXPECT_EQ(-EPIPE, lzchan_recv_lane(p.rx, lane, buf, sizeof(buf)));
	EXPECT_EQ(-EAGAIN, lzchan_recv_lane(p.rx, lane, buf, sizeof(buf)));
	ASSERT_EQ(0, lzchan_open(&p.tx, p.name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_geometry(p.tx, &g));
	EXPECT_EQ(lane, g.lane);
	ASSERT_EQ(0, lzchan_send(p.tx, "again", 5));
	EXPECT_EQ(5, lzchan_recv(p.rx, buf, sizeof(buf), &r2));
	EXPECT_EQ(lane, r2);
	EXPECT_EQ(0, memcmp(buf, "again", 5));
	pair_close(&p);
}

/*
 * A receiver that never runs dry still frees the lanes of senders that
 * left while quiet (lanes it had stopped polling), closed or killed, so
 * that new senders get them: it learns of departures from the channel's
 * departure count, not only from its idle scans.
 */
#define DEP_LANES	16

struct departures {
	struct pair p;
	struct lzchan *extra[DEP_LANES];
	int ended[DEP_LANES], nended, nextra;
	bool counted;		/* the departure count is kept */
};

/*
 * Keep lane 0 busy (a backlog on every receive) until @ends more lanes
 * have ended and @opens more senders got in, trying to open new ones
 * every 64 receives.  Returns the receives it took, or -1.
 */
static int busy_until(struct __test_metadata *_metadata, struct departures *d,
		      int ends, int opens)
{
	int want_ends = d->nended + ends, want_opens = d->nextra + opens, i, r;
	uint32_t lane;
	char buf[16];

	for (i = 0; i < 400000 && (d->nended < want_ends || d->nextra < want_opens); i++) {
		if (lzchan_send(d->p.tx, "a", 1))
			return -1;
		/* Ends come between lane 0's messages, each exactly once. */
		while ((r = lzchan_recv(d->p.rx, buf, sizeof(buf), &lane)) == -EPIPE) {
			EXPECT_TRUE(lane > 0 && lane < DEP_LANES) TH_LOG("lane %u", lane);
			if (lane == 0 || lane >= DEP_LANES || d->ended[lane]++)
				return -1;
			d->nended++;
		}
		EXPECT_EQ(1, r) TH_LOG("receive %d: %d", i, r);
		EXPECT_EQ(0, lane);
		if (r != 1 || lane || buf[0] != 'a')
			return -1;
		while (i % 64 == 63 && d->nextra < want_opens) {
			r = lzchan_open(&d->extra[d->nextra], d->p.name, LZCHAN_SENDER, NULL);
			EXPECT_TRUE(!r || r == -EUSERS) TH_LOG("open gave %d", r);
			if (r)
				break;
			d->nextra++;
		}
	}
	EXPECT_EQ(want_ends, d->nended) TH_LOG("ends after %d busy receives", i);
	EXPECT_EQ(want_opens, d->nextra) TH_LOG("new senders after %d busy receives", i);
	/* Announced departures are served at the next look at the bell
	 * (every 128 receives); without the count (an older module) a sweep
	 * every 1024 looks finds them. */
	if (d->counted)
		EXPECT_GT(1024, i) TH_LOG("the ends and new senders took %d busy receives", i);
	return i;
}

TEST(busy_receiver_frees_departed_lanes)
{
	struct lzchan *tx[DEP_LANES];
	struct lzchan_features f = { 0 };
	struct departures d = { 0 };
	struct lzchan_geom g;
	int ready[2], i;
	char buf[16];
	pid_t pid;

	ASSERT_EQ(0, pair_open(&d.p, "depart", lz_opts(64, 64, DEP_LANES)));
	ASSERT_EQ(0, lzchan_geometry(d.p.rx, &g));
	d.counted = g.backend == LZCHAN_BACKEND_SHM ||
		    (!lzchan_dev_features(&f) && (f.features & LZCHAN_FEAT_DEPARTURES));
	/* One lane's sender is another process, killed below (forked first:
	 * it must not share our senders' files, which keep their lanes). */
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct lzchan *c;

		if (lzchan_open(&c, d.p.name, LZCHAN_SENDER, NULL))
			_exit(1);
		if (write(ready[1], "k", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], buf, 1));
	close(ready[0]);
	for (i = 1; i < DEP_LANES - 1; i++)
		ASSERT_EQ(0, lzchan_open(&tx[i], d.p.name, LZCHAN_SENDER, NULL));
	/* Every lane is taken: another sender is refused. */
	ASSERT_EQ(-EUSERS, lzchan_open(&d.extra[0], d.p.name, LZCHAN_SENDER, NULL));
	/* Idle long enough for all but a few lanes to go to sleep. */
	for (i = 0; i < 40000; i++)
		ASSERT_EQ(-EAGAIN, lzchan_recv(d.p.rx, buf, sizeof(buf), NULL));
	/* From now on lane 0 always has a backlog. */
	for (i = 0; i < 32; i++)
		ASSERT_EQ(0, lzchan_send(d.p.tx, "a", 1));

	/* Closed senders. */
	for (i = 1; i < DEP_LANES - 1; i++)
		lzchan_close(tx[i]);
	TH_LOG("closed: %d busy receives",
	       busy_until(_metadata, &d, DEP_LANES - 2, DEP_LANES - 2));
	/* A killed one (shm: the next sender to try finds its lock free). */
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	TH_LOG("killed: %d busy receives", busy_until(_metadata, &d, 1, 1));
	EXPECT_EQ(-EUSERS, lzchan_open(&tx[0], d.p.name, LZCHAN_SENDER, NULL));
	/* A second sender on a lane whose first end was delivered, quiet
	 * too (a review found it overlooked). */
	ASSERT_EQ(0, lzchan_geometry(d.extra[--d.nextra], &g));
	d.ended[g.lane] = 0;
	lzchan_close(d.extra[d.nextra]);
	TH_LOG("reused lane: %d busy receives", busy_until(_metadata, &d, 1, 1));

	for (i = 0; i < d.nextra; i++)
		lzchan_close(d.extra[i]);
	pair_close(&d.p);
}

/* The turn: at most this many messages from one lane while another has
 * one ready (the library's TURN_SLOTS). */
#define LZ_TURN		64

/* Receive-any serves a lane holding a longer message in its turn, not
 * only when the one-slot messages of the other lanes run out. */
TEST(long_message_lane_gets_its_turn)
{
	char big[200], buf[256];
	struct lzchan *tx2;
	uint32_t lane;
	struct pair p;
	int i, r, at = -1;

	ASSERT_EQ(0, pair_open(&p, "fair", lz_opts(64, 256, 2)));
	ASSERT_EQ(0, lzchan_open(&tx2, p.name, LZCHAN_SENDER, NULL));
	for (i = 0; i < 200; i++)
		ASSERT_EQ(0, lzchan_send(p.tx, &i, sizeof(i)));
	memset(big, 'b', sizeof(big));
	ASSERT_EQ(0, lzchan_send(tx2, big, sizeof(big)));
	for (i = 0; i < 201; i++) {
		r = lzchan_recv(p.rx, buf, sizeof(buf), &lane);
		ASSERT_LT(0, r) TH_LOG("message %d: %d", i, r);
		if (r == (int)sizeof(big)) {
			at = i;
			break;
		}
	}
	/* The fairness bound (design.rst, "The receive"): a ready lane's
	 * first message comes after at most (lanes - 1) * LZ_TURN of the
	 * others'. */
	EXPECT_LE(0, at);
	EXPECT_GE(LZ_TURN, at) TH_LOG("the 200-byte message came %dth", at);
	lzchan_close(tx2);
	pair_close(&p);
}

/*
 * Receive-any over busy lanes: each message is reported with the lane it
 * came from, each lane's messages in order, turns of LZ_TURN from one
 * lane while others wait (after the first turn, which has its own), and
 * every lane served once the receiver has looked at the bells and gone
 * round.  The turns are where a span runs out and the library scans the
 * next lane (and takes its first message itself).
 */
/*
 * Batches share too: with two busy lanes, lzchan_recv_batch() of 48 at a
 * time gives each lane its turn of a burst (16), whichever of the inline
 * code and the library serves the call (the library once served its
 * lane the whole 48, the grant the other lane 16: 3 to 1).
 */
TEST(busy_lanes_share_batches)
{
	enum { PER = 400, TAKE = 400, BATCH = 48 };
	struct lzchan *tx2;
	struct lzchan_msg m[BATCH];
	uint32_t lane, got[2] = { 0, 0 }, want;
	int i, r, total = 0;
	char buf[8];
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "bshare", lz_opts(64, 512, 2)));
	ASSERT_EQ(0, lzchan_open(&tx2, p.name, LZCHAN_SENDER, NULL));
	/* Both lanes busy (polled) first. */
	ASSERT_EQ(0, lzchan_send(p.tx, "a", 1));
	ASSERT_EQ(0, lzchan_send(tx2, "b", 1));
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	for (i = 0; i < PER; i++) {
		ASSERT_EQ(0, lzchan_send(p.tx, "a", 1));
		ASSERT_EQ(0, lzchan_send(tx2, "b", 1));
	}
	while (total < TAKE) {
		want = TAKE - total < BATCH ? (uint32_t)(TAKE - total) : BATCH;
		r = lzchan_recv_batch(p.rx, m, want);
		ASSERT_LT(0, r);
		ASSERT_GT(2, m[0].lane);
		got[m[0].lane] += (uint32_t)r;
		total += r;
		lzchan_release(p.rx, &m[r - 1]);
	}
	EXPECT_GE(32, got[0] > got[1] ? got[0] - got[1] : got[1] - got[0])
		TH_LOG("lane 0 got %u, lane 1 %u", got[0], got[1]);
	lzchan_close(tx2);
	pair_close(&p);
}

/*
 * The fairness bound holds for every receive style: three lanes full,
 * a turn under way on one of them, then a message on a fourth lane; it
 * comes after at most (lanes - 1) * LZ_TURN of the others' from then on,
 * whether the receiver copies
 * (lzchan_recv()), takes views one at a time (lzchan_peek()) or batches
 * of 48 (lzchan_recv_batch()).
 */
TEST(fairness_bound_for_every_receive)
{
	enum { NTX = 4, FULL = 300 };
	struct lzchan *tx[NTX];
	struct lzchan_msg m[48];
	uint32_t v, lane;
	int style, i, k, r, before;
	struct pair p;

	for (style = 0; style < 3; style++) {
		ASSERT_EQ(0, pair_open(&p, "fairall", lz_opts(64, 1024, NTX)));
		tx[0] = p.tx;
		for (i = 1; i < NTX; i++)
			ASSERT_EQ(0, lzchan_open(&tx[i], p.name, LZCHAN_SENDER, NULL));
		/* Every lane polled: each carries one message first. */
		for (i = 0; i < NTX; i++)
			ASSERT_EQ(0, lzchan_send(tx[i], &i, sizeof(i)));
		for (i = 0; i < NTX; i++)
			ASSERT_EQ(4, lzchan_recv(p.rx, &v, sizeof(v), &lane));
		for (i = 0; i < NTX - 1; i++)
			for (k = 0; k < FULL; k++)
				ASSERT_EQ(0, lzchan_send(tx[i], &i, sizeof(i)));
		/* A turn under way on one of the full lanes, then the fourth
		 * lane's message: counted from here. */
		for (k = 0; k < 5; k++)
			ASSERT_EQ(4, lzchan_recv(p.rx, &v, sizeof(v), &lane));
		i = NTX - 1;
		ASSERT_EQ(0, lzchan_send(tx[i], &i, sizeof(i)));
		before = -1;
		for (k = 0; k < NTX * FULL && before < 0; ) {
			if (style == 0) {
				r = lzchan_recv(p.rx, &v, sizeof(v), &lane);
				ASSERT_EQ(4, r) TH_LOG("style %d, message %d", style, k);
				if (v == NTX - 1)
					before = k;
				k++;
				continue;
			}
			r = style == 1 ? lzchan_peek(p.rx, m) : lzchan_recv_batch(p.rx, m, 48);
			ASSERT_LT(0, style == 1 ? r + 1 : r) TH_LOG("style %d, message %d: %d",
								    style, k, r);
			if (style == 1)
				r = 1;
			for (i = 0; i < r; i++, k++)
				if (*(const uint32_t *)m[i].data == NTX - 1 && before < 0)
					before = k;
			lzchan_release(p.rx, &m[r - 1]);
		}
		EXPECT_LE(0, before) TH_LOG("style %d: never came", style);
		EXPECT_GE((NTX - 1) * LZ_TURN, before)
			TH_LOG("style %d: after %d of the others'", style, before);
		for (i = 1; i < NTX; i++)
			lzchan_close(tx[i]);
		pair_close(&p);
	}
}

TEST(busy_lanes_take_turns)
{
	enum { NTX = 4, PER = 300 };
	struct lzchan *tx[NTX];
	uint32_t lane, lane_of[NTX], next[NTX] = { 0 }, prev = UINT32_MAX;
	int i, r, run = 0, longest = 0, first_seen[NTX];
	bool turned = false;
	struct pair p;
	uint32_t m[2];

	ASSERT_EQ(0, pair_open(&p, "turns", lz_opts(64, 512, NTX)));
	tx[0] = p.tx;
	for (i = 1; i < NTX; i++)
		ASSERT_EQ(0, lzchan_open(&tx[i], p.name, LZCHAN_SENDER, NULL));
	for (i = 0; i < NTX; i++) {
		lane_of[i] = UINT32_MAX;
		first_seen[i] = -1;
	}
	/* The last sender's lane first, alone: it joins the busy set
	 * before the others, so a lane's place in the turn order is not
	 * its number. */
	m[0] = NTX - 1;
	m[1] = 0;
	ASSERT_EQ(0, lzchan_send(tx[NTX - 1], m, sizeof(m)));
	ASSERT_EQ((int)sizeof(m), lzchan_recv(p.rx, m, sizeof(m), &lane));
	lane_of[NTX - 1] = lane;
	next[NTX - 1] = 1;
	for (i = 0; i < NTX * PER; i++) {
		m[0] = (uint32_t)(i % NTX);
		m[1] = (uint32_t)(i / NTX) + (m[0] == NTX - 1);
		if (m[1] < PER)
			ASSERT_EQ(0, lzchan_send(tx[m[0]], m, sizeof(m)));
	}
	for (i = 0; i < NTX * PER - 1; i++) {
		r = lzchan_recv(p.rx, m, sizeof(m), &lane);
		ASSERT_EQ((int)sizeof(m), r) TH_LOG("message %d: %d", i, r);
		ASSERT_GT(NTX, (int)m[0]);
		if (lane_of[m[0]] == UINT32_MAX)
			lane_of[m[0]] = lane;
		ASSERT_EQ(lane_of[m[0]], lane) TH_LOG("message %u of sender %u reported on lane %u",
						      m[1], m[0], lane);
		ASSERT_EQ(next[m[0]], m[1]) TH_LOG("sender %u: %u where %u was due", m[0], m[1],
						   next[m[0]]);
		next[m[0]] = m[1] + 1;
		if (first_seen[m[0]] < 0)
			first_seen[m[0]] = i;
		if (lane != prev && prev != UINT32_MAX)
			turned = true;
		run = lane == prev ? run + 1 : 1;
		prev = lane;
		/* After the first turn, while every lane still has messages
		 * waiting. */
		if (turned && i < NTX * (PER - 20) && run > longest)
			longest = run;
	}
	EXPECT_EQ(LZ_TURN, longest) TH_LOG("%d in a row from one lane at most", longest);
	for (i = 0; i < NTX; i++) {
		EXPECT_EQ(PER, (int)next[i]);
		/* Lanes that turn busy wait for the receiver's next look at
		 * the bells (at every span, so within a turn), then their
		 * turn. */
		EXPECT_GE(LZ_TURN + NTX * (LZ_TURN + 1), first_seen[i])
			TH_LOG("sender %d first served %dth", i, first_seen[i]);
	}
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, m, sizeof(m), &lane));
	for (i = 1; i < NTX; i++)
		lzchan_close(tx[i]);
	pair_close(&p);
}

/*
 * Both of @p's lanes busy, one message each received (so that turns
 * alternate, 16 from one, 16 from the other), with a second sender
 * opened; *t1 sends on the lane served first (*lane1), *t2 on the other.
 * 0, or what failed.
 */
static int two_busy_lanes(struct pair *p, struct lzchan **tx2, struct lzchan **t1,
			  struct lzchan **t2, uint32_t *lane1, uint32_t *lane2)
{
	uint32_t v, first;
	int r;

	r = lzchan_open(tx2, p->name, LZCHAN_SENDER, NULL);
	if (r)
		return r;
	v = 1;
	if ((r = lzchan_send(p->tx, &v, sizeof(v))) || (v = 2, r = lzchan_send(*tx2, &v, sizeof(v))))
		return r;
	if (lzchan_recv(p->rx, &first, sizeof(first), lane1) != (int)sizeof(first) ||
	    lzchan_recv(p->rx, &v, sizeof(v), lane2) != (int)sizeof(v) || *lane1 == *lane2)
		return -EPROTO;
	*t1 = first == 1 ? p->tx : *tx2;
	*t2 = first == 1 ? *tx2 : p->tx;
	return 0;
}

/*
 * At a turn the library takes the next lane's first message the inline
 * receive's way (lzchan_recv() in the library, its gate run out); what
 * that take does not handle goes the general way: here a message longer
 * than the caller's buffer, which must come back -EMSGSIZE and then,
 * with room, whole and from its own lane.
 */
TEST(turn_leaves_what_it_cannot_take)
{
	enum { SMALL = 100, BEFORE = 15 };
	struct lzchan *tx2, *t1, *t2;
	uint32_t lane, lane1, lane2, v;
	char buf[64], big[40];
	int i, r, got1 = 0, got2 = 0, emsgsize = 0;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "turnbig", lz_opts(64, 256, 2)));
	ASSERT_EQ(0, two_busy_lanes(&p, &tx2, &t1, &t2, &lane1, &lane2));
	for (v = 0; v < SMALL; v++)
		ASSERT_EQ(0, lzchan_send(t1, &v, sizeof(v)));
	/* The other lane: what is left of its first turn (the burst less
	 * the message above), then the long one, which thus opens that
	 * lane's next turn: the take's to leave. */
	for (v = 0; v < BEFORE; v++)
		ASSERT_EQ(0, lzchan_send(t2, &v, sizeof(v)));
	memset(big, 'B', sizeof(big));
	ASSERT_EQ(0, lzchan_send(t2, big, sizeof(big)));
	for (v = BEFORE; v < SMALL; v++)
		ASSERT_EQ(0, lzchan_send(t2, &v, sizeof(v)));
	/* Every receive with room for 8 bytes: the 40-byte message must stop
	 * one of them, whichever path reaches it, and come whole after. */
	for (i = 0; got1 + got2 < 2 * SMALL + 1 && i < 4 * SMALL; i++) {
		r = lzchan_recv(p.rx, buf, 8, &lane);
		if (r == -EMSGSIZE) {
			emsgsize++;
			r = lzchan_recv(p.rx, buf, sizeof(buf), &lane);
			ASSERT_EQ((int)sizeof(big), r);
			ASSERT_EQ(0, memcmp(buf, big, sizeof(big)));
			ASSERT_EQ(lane2, lane);
			ASSERT_EQ(BEFORE, got2) TH_LOG("the long message came after %d of its lane's",
						       got2);
			got2++;
			continue;
		}
		ASSERT_EQ((int)sizeof(v), r) TH_LOG("receive %d: %d", i, r);
		memcpy(&v, buf, sizeof(v));
		if (lane == lane1) {
			ASSERT_EQ((uint32_t)got1, v);
			got1++;
		} else {
			ASSERT_EQ(lane2, lane);
			ASSERT_EQ((uint32_t)(got2 > BEFORE ? got2 - 1 : got2), v);
			got2++;
		}
	}
	EXPECT_EQ(1, emsgsize);
	EXPECT_EQ(SMALL, got1);
	EXPECT_EQ(SMALL + 1, got2);
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), &lane));
	lzchan_close(tx2);
	pair_close(&p);
}

/*
 * The take at a turn releases the lane's earlier views, as the inline
 * receive does: a view held on the next lane (lzchan_peek_lane()) when
 * the turn takes the message after it goes with that message, so once
 * the receiver has caught up the sender has its whole ring again.
 */
TEST(turn_releases_outstanding_views)
{
	struct lzchan *tx2, *t1, *t2;
	uint32_t lane, lane1, lane2, v;
	struct lzchan_msg view;
	char buf[16];
	int i, r, got2 = 0;
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "turnview", lz_opts(64, 64, 2)));
	ASSERT_EQ(0, two_busy_lanes(&p, &tx2, &t1, &t2, &lane1, &lane2));
	for (v = 0; v < 40; v++)
		ASSERT_EQ(0, lzchan_send(t1, &v, sizeof(v)));
	/* The rest of lane 2's first turn, then the one to view and the
	 * one its next turn opens with. */
	for (v = 0; v < 17; v++)
		ASSERT_EQ(0, lzchan_send(t2, &v, sizeof(v)));
	for (i = 0; got2 < 15 && i < 100; i++) {
		ASSERT_EQ((int)sizeof(v), lzchan_recv(p.rx, buf, sizeof(buf), &lane));
		if (lane == lane2)
			got2++;
	}
	ASSERT_EQ(15, got2);
	ASSERT_EQ(0, lzchan_peek_lane(p.rx, lane2, &view));
	memcpy(&v, view.data, sizeof(v));
	ASSERT_EQ(15u, v);
	/* Everything else, the view left outstanding. */
	for (i = 0; i < 100; i++) {
		r = lzchan_recv(p.rx, buf, sizeof(buf), &lane);
		if (r == -EAGAIN)
			break;
		ASSERT_EQ((int)sizeof(v), r);
		memcpy(&v, buf, sizeof(v));
		if (lane == lane2)
			ASSERT_EQ(16u, v);
	}
	ASSERT_EQ(-EAGAIN, r);
	/* Caught up: lane 2's whole ring is its sender's again. */
	for (v = 0; v < 64; v++)
		ASSERT_EQ(0, lzchan_send(t2, &v, sizeof(v))) TH_LOG("send %u", v);
	EXPECT_EQ(-EAGAIN, lzchan_send(t2, &v, sizeof(v)));
	lzchan_close(tx2);
	pair_close(&p);
}

/*
 * A receiver that leaves ends sending at once, the inline send included
 * (it learns through attn, which the receiver's going moves); a next
 * receiver gets what was queued, and sending, inline too, comes back.
 */
TEST(receiver_gone)
{
	const struct __lzchan_fast *f;
	struct lzchan *rx2;
	char buf[8];
	struct pair p;
	int k;

	ASSERT_EQ(0, pair_open(&p, "rxg", lz_opts(64, 64, 1)));
	f = (const struct __lzchan_fast *)p.tx;
	for (k = 0; k < 3; k++)
		ASSERT_EQ(0, lzchan_send(p.tx, "x", 1));
	if (f->tx_max)	/* else it fences every send: never inline */
		EXPECT_LT(0, (int32_t)f->tx_room) TH_LOG("the inline send is not open");
	lzchan_close(p.rx);
	p.rx = NULL;
	EXPECT_EQ(-EPIPE, lzchan_send(p.tx, "x", 1));
	EXPECT_EQ(-EPIPE, lzchan_send(p.tx, "x", 1));
	EXPECT_EQ(-EPIPE, lzchan_send_wait(p.tx, "x", 1, 1000000));
	ASSERT_EQ(0, lzchan_open(&rx2, p.name, LZCHAN_RECEIVER, NULL));
	p.rx = rx2;
	for (k = 0; k < 3; k++) {
		ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL)) TH_LOG("queued %d", k);
		EXPECT_EQ('x', buf[0]);
	}
	ASSERT_EQ(0, lzchan_send(p.tx, "y", 1));
	ASSERT_EQ(0, lzchan_send(p.tx, "z", 1));
	if (f->tx_max)
		EXPECT_LT(0, (int32_t)f->tx_room) TH_LOG("the inline send did not come back");
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ('y', buf[0]);
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ('z', buf[0]);
	EXPECT_EQ(-EAGAIN, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	pair_close(&p);
}

TEST(recv_wait_timeout_and_wakeup)
{
	struct lzchan_opts o = lz_opts(64, 64, 1);
	char buf[16];
	struct pair p;
	int status;
	pid_t pid;

	o.spin_ns = 1000;
	ASSERT_EQ(0, pair_open(&p, "wait", o));
	EXPECT_EQ(-ETIMEDOUT, lzchan_recv_wait(p.rx, buf, sizeof(buf), NULL, 2000000));
	EXPECT_EQ(-ETIMEDOUT, lzchan_recv_wait(p.rx, buf, sizeof(buf), NULL, 0));

	/* Another process sends while we are parked. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		usleep(100000);
		_exit(lzchan_send(p.tx, "late", 4) ? 1 : 0);
	}
	EXPECT_EQ(4, lzchan_recv_wait(p.rx, buf, sizeof(buf), NULL, 10000000000LL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	pair_close(&p);
}

/*
 * One message on a lane the receiver does not poll (sleepy: no sender
 * was there when it opened) wakes the receiver parked in
 * lzchan_recv_wait().  The sender rings its bell and the ring wakes the
 * receiver (the module: LZCHAN_IOC_RING; shm: the sender's look at the
 * park word after its ring).  The sender stays attached, so no departure
 * wakes it instead.  The module counts the wake; shm may count it or not
 * (a new sender's hello can wake the receiver first), so only the
 * message is checked there.
 */
TEST(sleepy_lane_wakes_a_parked_receiver)
{
	struct lzchan_opts o = lz_opts(64, 8, 2);
	const char *name = lz_name("sleepy");
	struct lzchan_chan_stat st;
	struct lzchan_geom g;
	struct lzchan *rx;
	uint64_t wakeups;
	uint32_t lane = 99;
	int done[2], status, r;
	char buf[16] = "", b;
	pid_t pid;

	o.spin_ns = 0;
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	ASSERT_EQ(0, lzchan_geometry(rx, &g));
	ASSERT_EQ(0, lzchan_stat(name, &st, NULL));
	wakeups = st.wakeups;
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct lzchan *tx;
		int i;

		close(done[1]);
		if (lzchan_open(&tx, name, LZCHAN_SENDER, NULL))
			_exit(1);
		/* Send only once the receiver is parked (60 s bound). */
		for (i = 0; i < 60000; i++) {
			if (lzchan_stat(name, &st, NULL))
				_exit(2);
			if (st.rx_parked & 1)
				break;
			usleep(1000);
		}
		if (!(st.rx_parked & 1))
			_exit(3);
		if (lzchan_send(tx, "x", 1))
			_exit(4);
		/* Attached until the receiver has it. */
		if (read(done[0], &b, 1) != 1)
			_exit(5);
		lzchan_close(tx);
		_exit(0);
	}
	close(done[0]);
	r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 60000000000LL);
	EXPECT_EQ(1, r);
	EXPECT_EQ('x', buf[0]);
	EXPECT_EQ(0, lane);
	ASSERT_EQ(0, lzchan_stat(name, &st, NULL));
	if (g.backend == LZCHAN_BACKEND_DEV)
		EXPECT_LT(wakeups, st.wakeups) TH_LOG("the message came, but no wake");
	EXPECT_EQ(1, write(done[1], "d", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(done[1]);
	lzchan_close(rx);
	lzchan_unlink(name);
}

/*
 * A parked receiver sleeps until a message, a sender's departure or its
 * own deadline, and nothing else: it does not wake now and then to look
 * for dead senders (on shm it slept 50 ms at a time: 30 wakeups in
 * 1.5 s), and a sender that dies while it sleeps still ends its wait at
 * once -- one that attached before the receiver and never sent, so never
 * connected to the shm doorbell socket.  Round 2 on shm: every inotify
 * instance taken, the death still heard (by a look every 100 ms).
 */
TEST(parked_receiver_wakes_only_for_news)
{
	struct lzchan_opts o = lz_opts(64, 8, 2);
	const char *name = lz_name("idle");
	int ready[2], go[2], round, r, hog[4096], nhog = 0;
	struct rusage ru0, ru1;
	struct lzchan *rx;
	uint32_t lane = 99;
	char buf[16], b;
	pid_t pid;
	long woke;

	for (round = 0; round < 2; round++) {
		if (round)
			while (nhog < 4096 && (hog[nhog] = inotify_init1(IN_CLOEXEC)) >= 0)
				nhog++;
		ASSERT_EQ(1, lzchan_create(name, &o, LZCHAN_EXCL));
		ASSERT_EQ(0, pipe(ready));
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct lzchan *tx;

			/* Attached before the receiver; never sends. */
			if (lzchan_open(&tx, name, LZCHAN_SENDER, NULL) ||
			    write(ready[1], "s", 1) != 1 || read(go[0], &b, 1) != 1)
				_exit(1);
			usleep(200000);	/* the receiver parks meanwhile */
			raise(SIGKILL);
			_exit(1);
		}
		ASSERT_EQ(1, read(ready[0], &b, 1));
		ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER, NULL));
		if (!round) {
			/* Idle for 1.5 s: a sleep is a voluntary switch. */
			ASSERT_EQ(0, getrusage(RUSAGE_THREAD, &ru0));
			EXPECT_EQ(-ETIMEDOUT, lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 1500000000LL));
			ASSERT_EQ(0, getrusage(RUSAGE_THREAD, &ru1));
			woke = ru1.ru_nvcsw - ru0.ru_nvcsw;
			EXPECT_GE(4, woke) TH_LOG("an idle receiver woke %ld times in 1.5 s", woke);
		}
		/* The sender dies while we sleep: its end comes, long before
		 * the deadline (5 s) and the 10 s look. */
		ASSERT_EQ(1, write(go[1], "g", 1));
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 5000000000LL);
		EXPECT_EQ(-EPIPE, r) TH_LOG("round %d: the death did not end the wait", round);
		EXPECT_EQ(0, lane);
		EXPECT_EQ(LZCHAN_END_LOST, lzchan_end_cause(rx, 0));
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
		close(ready[0]);
		close(ready[1]);
		close(go[0]);
		close(go[1]);
		lzchan_close(rx);
		lzchan_unlink(name);
	}
	while (nhog)
		close(hog[--nhog]);
}

/*
 * A receiver that holds a view of a lane whose sender then closed: the
 * lane's end waits for the view's release, which only the receiver can
 * make, so a wait in between sleeps (it spun at 100% CPU: the park saw the
 * end as pending, the receive refused it while the view was out); after
 * the release the end comes.
 */
TEST(held_view_of_a_closed_lane_parks_until_released)
{
	struct lzchan_opts o = lz_opts(64, 8, 2);
	struct lzchan_msg m;
	struct rusage a, b;
	char buf[16];
	struct pair p;
	uint32_t lane = 99;
	double cpu;

	ASSERT_EQ(0, pair_open(&p, "heldview", o));
	ASSERT_EQ(0, lzchan_send(p.tx, "x", 1));
	ASSERT_EQ(0, lzchan_peek(p.rx, &m));
	lzchan_close(p.tx);
	p.tx = NULL;
	ASSERT_EQ(0, getrusage(RUSAGE_THREAD, &a));
	EXPECT_EQ(-ETIMEDOUT, lzchan_recv_wait(p.rx, buf, sizeof(buf), &lane, 1500000000LL));
	ASSERT_EQ(0, getrusage(RUSAGE_THREAD, &b));
	cpu = (b.ru_utime.tv_sec - a.ru_utime.tv_sec) + (b.ru_stime.tv_sec - a.ru_stime.tv_sec) +
	      ((b.ru_utime.tv_usec - a.ru_utime.tv_usec) + (b.ru_stime.tv_usec - a.ru_stime.tv_usec)) / 1e6;
	EXPECT_GT(0.5, cpu) TH_LOG("%.2f s of CPU in a 1.5 s wait", cpu);
	lzchan_release(p.rx, &m);
	EXPECT_EQ(-EPIPE, lzchan_recv_wait(p.rx, buf, sizeof(buf), &lane, 5000000000LL));
	EXPECT_EQ(0, lane);
	pair_close(&p);
}

struct blocked {
	struct lzchan *ch;
	int64_t timeout_ns;
	int ret;
	int done;
};

static void *block_in_recv_wait(void *arg)
{
	struct blocked *b = arg;
	char buf[16];

	b->ret = lzchan_recv_wait(b->ch, buf, sizeof(buf), NULL, b->timeout_ns);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);	/* pairs with the main thread's acquire */
	return NULL;
}

static void *block_in_send_wait(void *arg)
{
	struct blocked *b = arg;

	b->ret = lzchan_send_wait(b->ch, "z", 1, b->timeout_ns);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);	/* pairs with the main thread's acquire */
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * A blocking call can be interrupted: lzchan_wake() from another thread
 * (or before the call) makes it return -EINTR, and so does a signal
 * handler that runs while it is parked -- even with SA_RESTART, as poll()
 * does.  Messages already there come first.
 */
TEST(blocking_calls_interrupted)
{
	struct lzchan_opts o = lz_opts(64, 16, 1);
	struct blocked b;
	struct sigaction sa;
	char buf[16];
	struct pair p;
	pthread_t t;
	int i;

	ASSERT_EQ(0, pair_open(&p, "intr", o));
	EXPECT_EQ(-EBADF, lzchan_wake(NULL));
	/* Asked before: the next wait returns at once, after any message. */
	ASSERT_EQ(0, lzchan_wake(p.rx));
	ASSERT_EQ(0, lzchan_send(p.tx, "a", 1));
	EXPECT_EQ(1, lzchan_recv_wait(p.rx, buf, sizeof(buf), NULL, 10000000000LL));
	EXPECT_EQ(-EINTR, lzchan_recv_wait(p.rx, buf, sizeof(buf), NULL, 10000000000LL));
	EXPECT_EQ(-ETIMEDOUT, lzchan_recv_wait(p.rx, buf, sizeof(buf), NULL, 1000000));

	/* From another thread, while parked. */
	b = (struct blocked){ .ch = p.rx, .timeout_ns = 10000000000LL };
	ASSERT_EQ(0, pthread_create(&t, NULL, block_in_recv_wait, &b));
	usleep(100000);
	EXPECT_EQ(0, __atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, lzchan_wake(p.rx));
	pthread_join(t, NULL);
	EXPECT_EQ(-EINTR, b.ret);

	/* A signal, handled with SA_RESTART.  One that lands while the call
	 * is between sleeps is not seen (lzchan_wake() from the handler is
	 * the sure way), so signal until it returns. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	b = (struct blocked){ .ch = p.rx, .timeout_ns = 5000000000LL };
	ASSERT_EQ(0, pthread_create(&t, NULL, block_in_recv_wait, &b));
	usleep(50000);
	for (i = 0; i < 200 && !__atomic_load_n(&b.done, __ATOMIC_ACQUIRE); i++) {
		pthread_kill(t, SIGUSR1);
		usleep(20000);
	}
	pthread_join(t, NULL);
	EXPECT_EQ(-EINTR, b.ret) TH_LOG("after %d signals", i);

	/* A sender waiting for room. */
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, lzchan_send(p.tx, "f", 1));
	b = (struct blocked){ .ch = p.tx, .timeout_ns = 10000000000LL };
	ASSERT_EQ(0, pthread_create(&t, NULL, block_in_send_wait, &b));
	usleep(100000);
	EXPECT_EQ(0, __atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, lzchan_wake(p.tx));
	pthread_join(t, NULL);
	EXPECT_EQ(-EINTR, b.ret);
	signal(SIGUSR1, SIG_DFL);
	pair_close(&p);
}

/* A child opens @name as its receiver (with @flags) and waits to be
 * killed: its pid once it is attached, or -1. */
static pid_t receiver_child(const char *name, unsigned int flags, const struct lzchan_opts *o,
			    int ready[2])
{
	struct lzchan *x;
	pid_t pid = fork();
	char b;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (lzchan_open(&x, name, LZCHAN_RECEIVER | flags, o) ||
		    write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	return read(ready[0], &b, 1) == 1 ? pid : -1;
}

/* A child makes temporary channel @name as its receiver and is killed;
 * 0 once it is dead. */
static int temp_receiver_killed(const char *name, const struct lzchan_opts *o, int ready[2])
{
	pid_t pid = receiver_child(name, LZCHAN_CREATE | LZCHAN_TEMP, o, ready);
	int st;

	if (pid < 0)
		return -ECHILD;
	kill(pid, SIGKILL);
	return waitpid(pid, &st, 0) == pid ? 0 : -ECHILD;
}

/*
 * lzchan_flush(): a sender learns whether a receiver took what it sent --
 * none yet (-ENOTCONN), not yet (-ETIMEDOUT), all (0), or the receiver
 * died first (-EPIPE, on shm too, where nothing marks it gone).
 */
TEST(flush_tells_what_the_receiver_took)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *name = lz_name("flush");
	int ready[2], st, i;
	struct lzchan *rx, *tx;
	char buf[16];
	pid_t pid;

	ASSERT_EQ(1, lzchan_create(name, &o, LZCHAN_EXCL));
	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	EXPECT_EQ(-EBADF, lzchan_flush(NULL, 0));
	EXPECT_EQ(0, lzchan_flush(tx, 0));		/* nothing sent */
	ASSERT_EQ(0, lzchan_send(tx, "a", 1));
	EXPECT_EQ(-ENOTCONN, lzchan_flush(tx, 0));
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(-EBADF, lzchan_flush(rx, 0));
	EXPECT_EQ(-ETIMEDOUT, lzchan_flush(tx, 1000000));
	ASSERT_EQ(0, lzchan_wake(tx));
	EXPECT_EQ(-EINTR, lzchan_flush(tx, -1));
	EXPECT_EQ(1, lzchan_recv(rx, buf, sizeof(buf), NULL));
	EXPECT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), NULL));	/* caught up */
	EXPECT_EQ(0, lzchan_flush(tx, 1000000000));
	lzchan_close(rx);

	/* A receiver killed (not closed) with messages it never took. */
	ASSERT_EQ(0, pipe(ready));
	pid = receiver_child(name, 0, NULL, ready);
	ASSERT_LT(0, pid);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, lzchan_send(tx, "b", 1));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(-EPIPE, lzchan_flush(tx, 5000000000LL));
	lzchan_close(tx);
	lzchan_unlink(name);
}

/*
 * Before any receiver has attached, a full lane is just full: messages
 * wait for the first receiver (-EAGAIN, and the flush -ENOTCONN), however
 * long the sender retries -- the shared-memory sender's look at the
 * receiver's lock (due every millisecond on a full lane) finds nobody, and
 * that is not a receiver that died while it has never seen one.
 */
TEST(full_lane_before_any_receiver_waits)
{
	struct lzchan_opts o = lz_opts(64, 8, 1);
	const char *name = lz_name("first");
	struct lzchan *tx, *rx;
	char buf[16];
	int i, r = 0;

	ASSERT_EQ(1, lzchan_create(name, &o, LZCHAN_EXCL));
	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	for (i = 0; i < 8 && !r; i++)
		r = lzchan_send(tx, "w", 1);
	ASSERT_EQ(0, r);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-EAGAIN, lzchan_send(tx, "w", 1));
		EXPECT_EQ(-ENOTCONN, lzchan_flush(tx, 0));
		usleep(2000);
	}
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER, NULL));
	for (i = 0; lzchan_recv(rx, buf, sizeof(buf), NULL) == 1; i++)
		;
	EXPECT_EQ(8, i);
	lzchan_close(rx);
	lzchan_close(tx);
	lzchan_unlink(name);
}

/*
 * The event fd, on both backends: armed, it becomes readable when a sender
 * (here in another process) sends; receiving disarms; -EAGAIN from arm
 * when something is waiting.
 */
/*
 * Waiting for the other side, bounded: for a channel to exist
 * (lzchan_open_wait) and, as a sender, for a receiver to attach
 * (lzchan_wait_receiver) -- no caller loops on -ENOENT.
 */
TEST(wait_for_channel_and_receiver)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *name = lz_name("later");
	struct lzchan *tx, *rx;
	int ready[2], st;
	pid_t pid;
	char b;

	EXPECT_EQ(-ETIMEDOUT, lzchan_open_wait(&tx, name, LZCHAN_SENDER, NULL, 5000000));
	EXPECT_EQ(-EINVAL, lzchan_open_wait(&tx, "a/b", LZCHAN_SENDER, NULL, 5000000));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct lzchan *r2;

		/* Made 100 ms later; its receiver attaches 100 ms after. */
		usleep(100000);
		if (lzchan_create(name, &o, LZCHAN_EXCL) != 1)
			_exit(1);
		usleep(100000);
		if (lzchan_open(&r2, name, LZCHAN_RECEIVER, NULL) || write(ready[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	ASSERT_EQ(0, lzchan_open_wait(&tx, name, LZCHAN_SENDER, NULL, 10000000000LL));
	EXPECT_EQ(-EBADF, lzchan_wait_receiver(NULL, 0));
	ASSERT_EQ(0, lzchan_wait_receiver(tx, 10000000000LL));
	ASSERT_EQ(1, read(ready[0], &b, 1));
	EXPECT_EQ(0, lzchan_wait_receiver(tx, 0));
	/* It dies: the wait is for a live one. */
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(-ETIMEDOUT, lzchan_wait_receiver(tx, 20000000));
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(0, lzchan_wait_receiver(tx, 0));
	EXPECT_EQ(-EBADF, lzchan_wait_receiver(rx, 0));
	lzchan_close(rx);
	ASSERT_EQ(0, lzchan_wake(tx));
	EXPECT_EQ(-EINTR, lzchan_wait_receiver(tx, -1));
	lzchan_close(tx);
	lzchan_unlink(name);
}

/*
 * A clean close and a crash both end a stream with -EPIPE;
 * lzchan_end_cause() tells them apart, for senders and for the receiver.
 */
/*
 * A receiver that reads one lane at a time (lzchan_peek_lane()) and sleeps
 * on its event fd, as an event loop does: a sender killed wakes it, and the
 * next look reports its end.  (On shm a death shows only in the sender's
 * lock; the hang-up of its connection woke the loop once, and the library
 * dropped it without looking at the lock: the loop slept on.)
 */
TEST(per_lane_receiver_sees_a_killed_sender)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *name = lz_name("lanedeath");
	struct lzchan_msg m;
	struct lzchan *rx;
	int ready[2], st, k, r = 0, slept = 0;
	pid_t pid;
	char b;

	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct lzchan *t;

		if (lzchan_open(&t, name, LZCHAN_SENDER, NULL) || lzchan_send(t, "m", 1) ||
		    write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ(0, lzchan_peek_lane(rx, 0, &m));
	EXPECT_EQ(1, m.len);
	lzchan_release(rx, &m);
	/* Armed (which looks at the senders' locks, at most every 10 ms)
	 * just before the death: the next arm's look is then not due. */
	for (k = 0; k < 100 && lzchan_arm(rx) == -EAGAIN; k++)
		EXPECT_EQ(-EAGAIN, lzchan_peek_lane(rx, 0, &m));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	/* An event loop: poll the lane, arm, sleep until the fd fires (10 s
	 * stands for "for ever": nothing else will wake it). */
	for (k = 0; k < 50; k++) {
		struct pollfd pf = { .fd = lzchan_event_fd(rx), .events = POLLIN };

		r = lzchan_peek_lane(rx, 0, &m);
		if (r != -EAGAIN)
			break;
		if (lzchan_arm(rx) == 0 && poll(&pf, 1, 10000) == 0)
			slept++;
	}
	EXPECT_EQ(-EPIPE, r) TH_LOG("no end after %d polls of the lane", k);
	EXPECT_EQ(0, slept) TH_LOG("the fd did not fire for the death");
	r = lzchan_end_cause(rx, 0);
	if (r != LZCHAN_END_UNKNOWN)
		EXPECT_EQ(LZCHAN_END_LOST, r);
	close(ready[0]);
	close(ready[1]);
	lzchan_close(rx);
	lzchan_unlink(name);
}

/*
 * Views held across an arm, released later in order (as a forwarding
 * receiver does once the far end acknowledges): the release gives the
 * sender its room back.  A lane read first with lzchan_peek_lane() did
 * not know its sender's generation, its views carried 0, and every
 * release was ignored: the sender waited on a full lane for ever.
 */
TEST(views_of_a_fresh_lane_held_across_an_arm_are_released)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *name = lz_name("heldviews");
	struct lzchan_msg v[64], extra;
	struct lzchan *rx, *tx;
	int n = 0, k, armed = 0;

	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	while (n < 64 && lzchan_send(tx, "12345678", 8) == 0)
		n++;
	ASSERT_LT(8, n);
	ASSERT_EQ(-EAGAIN, lzchan_send(tx, "x", 1));
	for (k = 0; k < n; k++)
		ASSERT_EQ(0, lzchan_peek_lane(rx, 0, &v[k]));
	ASSERT_EQ(-EAGAIN, lzchan_peek_lane(rx, 0, &extra));
	/* The event loop goes to sleep with the views held (where the
	 * backend has an event fd), then the acknowledgements come. */
	for (k = 0; k < 100 && !armed; k++)
		armed = lzchan_arm(rx) == 0;
	for (k = 0; k < n; k++)
		lzchan_release(rx, &v[k]);
	EXPECT_EQ(0, lzchan_send(tx, "after", 5)) TH_LOG("no room after %d releases (armed %d)", n, armed);
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(name);
}

/*
 * A pad the receiver skips while a view is held: once the view is
 * released, the next look gives the sender the whole ring, pad and all.
 * The pad stayed behind the head (no view covers it): a sender whose
 * next message needed the ring from its start waited for ever.
 */
TEST(pad_skipped_under_a_held_view_is_released)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *name = lz_name("padview");
	static char big[64 * 64];
	struct lzchan_msg v, w;
	struct lzchan_geom g;
	struct lzchan *rx, *tx;
	int k, r = -EAGAIN;

	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_geometry(rx, &g));
	ASSERT_GE(sizeof(big), g.max_msg);
	/* One slot, then the largest message: the ring's end is near. */
	ASSERT_EQ(0, lzchan_send(tx, big, 1));
	ASSERT_EQ(0, lzchan_peek_lane(rx, 0, &v));
	lzchan_release(rx, &v);
	ASSERT_EQ(0, lzchan_send(tx, big, g.max_msg));
	ASSERT_EQ(0, lzchan_peek_lane(rx, 0, &v));
	lzchan_release(rx, &v);
	/* A small one, its view held ... */
	ASSERT_EQ(0, lzchan_send(tx, big, 100));
	ASSERT_EQ(0, lzchan_peek_lane(rx, 0, &v));
	/* ... while the sender pads to the ring's end for the next largest
	 * one and waits for the room, and the receiver looks (skipping the
	 * pad) ... */
	EXPECT_EQ(-EAGAIN, lzchan_send(tx, big, g.max_msg));
	EXPECT_EQ(-EAGAIN, lzchan_peek_lane(rx, 0, &w));
	/* ... then releases the view and looks again: all the room. */
	lzchan_release(rx, &v);
	for (k = 0; k < 4 && r == -EAGAIN; k++) {
		EXPECT_EQ(-EAGAIN, lzchan_peek_lane(rx, 0, &w));
		r = lzchan_send(tx, big, g.max_msg);
	}
	EXPECT_EQ(0, r) TH_LOG("the largest message found no room after the release");
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(name);
}

TEST(clean_close_or_crash)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *name = lz_name("cause");
	int ready[2], st, r, k, want;
	struct lzchan *rx, *tx;
	uint32_t lane;
	char buf[16], b;
	pid_t pid;

	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	EXPECT_EQ(0, lzchan_end_cause(rx, 0));
	EXPECT_EQ(-EINVAL, lzchan_end_cause(rx, 2));
	EXPECT_EQ(-EBADF, lzchan_end_cause(NULL, 0));
	ASSERT_EQ(0, pipe(ready));
	for (k = 0; k < 3; k++) {	/* 0: closes; 1: killed; 2: closes as lost */
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct lzchan *t2;

			if (lzchan_open(&t2, name, LZCHAN_SENDER, NULL) || lzchan_send(t2, "m", 1))
				_exit(1);
			if (k == 0) {
				lzchan_close(t2);
				_exit(0);
			}
			if (k == 2) {
				lzchan_close_lost(t2);
				_exit(0);
			}
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			pause();
			_exit(0);
		}
		if (k == 1) {
			ASSERT_EQ(1, read(ready[0], &b, 1));
			kill(pid, SIGKILL);
		}
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_EQ(1, lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 5000000000LL));
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 5000000000LL);
		ASSERT_EQ(-EPIPE, r);
		want = k ? LZCHAN_END_LOST : LZCHAN_END_CLOSED;
		r = lzchan_end_cause(rx, lane);
		if (r == LZCHAN_END_UNKNOWN) {
			EXPECT_FALSE(lz_expect_dev()) TH_LOG("the module does not record closes");
			continue;
		}
		EXPECT_EQ(want, r) TH_LOG("sender %s", k == 1 ? "killed" :
					  k ? "closed as lost" : "closed");
	}

	/* The receiver, seen by a sender: closed, then killed. */
	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	EXPECT_EQ(-EINVAL, lzchan_end_cause(tx, 0));
	EXPECT_EQ(0, lzchan_end_cause(tx, LZCHAN_LANE_NONE));
	lzchan_close(rx);
	EXPECT_EQ(-EPIPE, lzchan_send(tx, "x", 1));
	r = lzchan_end_cause(tx, LZCHAN_LANE_NONE);
	EXPECT_TRUE(r == LZCHAN_END_CLOSED || (r == LZCHAN_END_UNKNOWN && !lz_expect_dev()))
		TH_LOG("receiver closed: %d", r);
	/* A receiver that closes as lost (a bridge whose far receiver died). */
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(0, lzchan_end_cause(tx, LZCHAN_LANE_NONE));
	lzchan_close_lost(rx);
	EXPECT_EQ(-EPIPE, lzchan_send(tx, "x", 1));
	r = lzchan_end_cause(tx, LZCHAN_LANE_NONE);
	EXPECT_TRUE(r == LZCHAN_END_LOST || (r == LZCHAN_END_UNKNOWN && !lz_expect_dev()))
		TH_LOG("receiver closed as lost: %d", r);
	pid = receiver_child(name, 0, NULL, ready);
	ASSERT_LT(0, pid);
	EXPECT_EQ(0, lzchan_end_cause(tx, LZCHAN_LANE_NONE));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	r = lzchan_end_cause(tx, LZCHAN_LANE_NONE);
	EXPECT_TRUE(r == LZCHAN_END_LOST || (r == LZCHAN_END_UNKNOWN && !lz_expect_dev()))
		TH_LOG("receiver killed: %d", r);
	lzchan_close(tx);
	lzchan_unlink(name);
}

/*
 * A temporary channel (LZCHAN_TEMP) goes with its receiver: its name is
 * removed when the receiver closes, and when it dies -- at once with the
 * module; on shm by whoever next opens it, or by the next temporary
 * channel its owner makes.  Handles already open keep working.
 */
TEST(temporary_channel_goes_with_its_receiver)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	const char *name = lz_name("temp"), *dead = lz_name("tdead"), *next = lz_name("tnext");
	struct lzchan_chan_stat st;
	struct lzchan *rx, *tx, *x;
	int ready[2], r;
	char buf[8];
	pid_t pid;

	EXPECT_EQ(-EINVAL, lzchan_open(&x, name, LZCHAN_SENDER | LZCHAN_CREATE | LZCHAN_TEMP, &o));
	EXPECT_EQ(-EINVAL, lzchan_open(&x, name, LZCHAN_RECEIVER | LZCHAN_TEMP, &o));
	r = lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_TEMP, &o);
	if (r == -EOPNOTSUPP) {
		EXPECT_FALSE(lz_expect_dev());
		SKIP(return, "the module has no temporary channels");
	}
	ASSERT_EQ(0, r);
	EXPECT_EQ(-EEXIST, lzchan_open(&x, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_TEMP, &o));
	ASSERT_EQ(0, lzchan_stat(name, &st, NULL));
	EXPECT_TRUE(st.create_flags & LZCHAN_CREATE_TEMP);
	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "q", 1));
	EXPECT_EQ(1, lzchan_recv(rx, buf, sizeof(buf), NULL));
	lzchan_close(rx);
	EXPECT_EQ(-ENOENT, lzchan_stat(name, &st, NULL)) TH_LOG("the name outlived its receiver");
	EXPECT_EQ(-EPIPE, lzchan_send(tx, "q", 1));
	lzchan_close(tx);

	/* Its receiver killed. */
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, temp_receiver_killed(dead, &o, ready));
	/* The next temporary channel of ours sweeps it away (shm); the
	 * module has removed it already. */
	ASSERT_EQ(0, lzchan_open(&rx, next, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_TEMP, &o));
	EXPECT_EQ(-ENOENT, lzchan_stat(dead, &st, NULL)) TH_LOG("a dead receiver's channel stayed");
	EXPECT_EQ(-ENOENT, lzchan_open(&x, dead, LZCHAN_SENDER, NULL));

	/* Killed again, and found by a sender that opens it. */
	ASSERT_EQ(0, temp_receiver_killed(dead, &o, ready));
	EXPECT_EQ(-ENOENT, lzchan_open(&x, dead, LZCHAN_SENDER, NULL));
	EXPECT_EQ(-ENOENT, lzchan_stat(dead, &st, NULL));

	/* Killed while a sender holds it (a server's reply channel to a
	 * client that dies): the name goes with that sender's handle at
	 * the latest (shm), with the receiver (the module). */
	pid = receiver_child(dead, LZCHAN_CREATE | LZCHAN_TEMP, &o, ready);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, lzchan_open(&x, dead, LZCHAN_SENDER, NULL));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &r, 0));
	lzchan_close(x);
	EXPECT_EQ(-ENOENT, lzchan_stat(dead, &st, NULL)) TH_LOG("outlived its sender's close");
	lzchan_close(rx);
	EXPECT_EQ(-ENOENT, lzchan_stat(next, &st, NULL));
}

/*
 * A second receiver is refused (-EBUSY) without a trace on the live one:
 * its failed open must not say GONE, "closed cleanly" or take the
 * socket.  And handles come and go without leaking descriptors, with the
 * receiver armed (senders then ring it through its socket on shm).
 */
TEST(refused_receiver_and_handles_leave_no_trace)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	struct lzchan *rx2, *t;
	struct pair p;
	char buf[8];
	int i, before;

	ASSERT_EQ(0, pair_open(&p, "trace", o));
	EXPECT_EQ(-EBUSY, lzchan_open(&rx2, p.name, LZCHAN_RECEIVER, NULL));
	EXPECT_EQ(0, lzchan_wait_receiver(p.tx, 0));
	EXPECT_EQ(0, lzchan_end_cause(p.tx, LZCHAN_LANE_NONE));
	EXPECT_EQ(0, lzchan_send(p.tx, "a", 1));
	EXPECT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	EXPECT_LE(0, lzchan_event_fd(p.rx));
	EXPECT_EQ(0, lzchan_peer(p.rx, 0, NULL, NULL, NULL));

	before = lz_dir_entries("/proc/self/fd");
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, lzchan_open(&t, p.name, LZCHAN_SENDER, NULL));
		ASSERT_EQ(0, lzchan_arm(p.rx));
		ASSERT_EQ(0, lzchan_send(t, "b", 1));	/* rings the armed receiver */
		lzchan_close(t);
		ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
		while (lzchan_recv(p.rx, buf, sizeof(buf), NULL) != -EAGAIN)
			;	/* its end */
	}
	EXPECT_EQ(before, lz_dir_entries("/proc/self/fd")) TH_LOG("descriptors leaked over 50 senders");
	pair_close(&p);
}

/* The event fd's contract, with @extra descriptors opened first: the
 * library's own descriptors then fall on other numbers (the shm backend
 * once told its connections from pending ones by a bit of the number, and
 * an odd one left the fd readable for ever). */
static void event_fd_run(struct __test_metadata *_metadata, int extra)
{
	struct pollfd pf;
	char buf[16];
	struct pair p;
	int fd, st, round, held[4], k;
	pid_t pid;

	for (k = 0; k < extra; k++)
		ASSERT_LE(0, held[k] = open("/dev/null", O_RDONLY | O_CLOEXEC));
	ASSERT_EQ(0, pair_open(&p, "evfd", lz_opts(64, 64, 2)));
	EXPECT_EQ(-EBADF, lzchan_event_fd(p.tx));
	EXPECT_EQ(-EBADF, lzchan_arm(p.tx));
	fd = lzchan_event_fd(p.rx);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, lzchan_send(p.tx, "x", 1));
	EXPECT_EQ(-EAGAIN, lzchan_arm(p.rx));		/* something is waiting */
	ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	pf = (struct pollfd){ .fd = fd, .events = POLLIN };
	for (round = 0; round < 3; round++) {
		ASSERT_EQ(0, lzchan_arm(p.rx));
		EXPECT_EQ(0, poll(&pf, 1, 0)) TH_LOG("round %d: readable before a send", round);
		if (round < 2) {
			ASSERT_EQ(0, lzchan_send(p.tx, "y", 1));	/* sees parked: wakes */
		} else {
			/* A sender in another process, opened after the arm. */
			pid = fork();
			ASSERT_LE(0, pid);
			if (!pid) {
				struct lzchan *t2;

				if (lzchan_open(&t2, p.name, LZCHAN_SENDER, NULL) ||
				    lzchan_send(t2, "y", 1))
					_exit(1);
				lzchan_close(t2);
				_exit(0);
			}
			ASSERT_EQ(pid, waitpid(pid, &st, 0));
			ASSERT_EQ(0, st);
		}
		EXPECT_EQ(1, poll(&pf, 1, 5000)) TH_LOG("round %d: not woken", round);
		ASSERT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
		EXPECT_EQ('y', buf[0]);
	}
	/* Drained by the receive: quiet again once armed -- after the looks
	 * at the senders' locks that shm owes a sender's close (the fd fires
	 * for them, a wakeup for nothing, a few times at most). */
	for (k = 0; k < 4; k++) {
		while (lzchan_recv(p.rx, buf, sizeof(buf), NULL) != -EAGAIN)
			;
		ASSERT_EQ(0, lzchan_arm(p.rx));
		if (!poll(&pf, 1, 50))
			break;
	}
	EXPECT_GT(4, k) TH_LOG("the armed fd stays readable");
	/* lzchan_wake() makes it readable too, on either backend: an event
	 * loop sees it as a wake, and the blocking call it stands for says
	 * -EINTR; armed again, the fd is quiet. */
	ASSERT_EQ(0, lzchan_wake(p.rx));
	EXPECT_EQ(1, poll(&pf, 1, 5000)) TH_LOG("lzchan_wake() did not reach the event fd");
	EXPECT_EQ(-EINTR, lzchan_recv_wait(p.rx, buf, sizeof(buf), NULL, 1000000000));
	ASSERT_EQ(0, lzchan_arm(p.rx));
	EXPECT_EQ(0, poll(&pf, 1, 50));
	pair_close(&p);
	for (k = 0; k < extra; k++)
		close(held[k]);
}

TEST(event_fd)
{
	int extra;

	for (extra = 0; extra < 4; extra++)
		event_fd_run(_metadata, extra);
}

TEST(two_channels_one_process)
{
	struct pair a, b;
	char buf[8];

	ASSERT_EQ(0, pair_open(&a, "twoa", lz_opts(64, 64, 1)));
	ASSERT_EQ(0, pair_open(&b, "twob", lz_opts(128, 16, 1)));
	ASSERT_EQ(0, lzchan_send(a.tx, "A", 1));
	ASSERT_EQ(0, lzchan_send(b.tx, "B", 1));
	ASSERT_EQ(1, lzchan_recv(b.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ('B', buf[0]);
	ASSERT_EQ(1, lzchan_recv(a.rx, buf, sizeof(buf), NULL));
	EXPECT_EQ('A', buf[0]);
	pair_close(&a);
	pair_close(&b);
}

TEST(unlink_keeps_handles)
{
	struct lzchan *x;
	char buf[8];
	struct pair p;

	ASSERT_EQ(0, pair_open(&p, "unl", lz_opts(64, 64, 2)));
	ASSERT_EQ(0, lzchan_unlink(p.name));
	EXPECT_EQ(-ENOENT, lzchan_open(&x, p.name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(p.tx, "k", 1));
	EXPECT_EQ(1, lzchan_recv(p.rx, buf, sizeof(buf), NULL));
	pair_close(&p);
}

/*
 * Who is on a lane, as the kernel saw it (both backends: the module, or
 * the shm doorbell socket's SO_PEERCRED), for a sender in another process
 * with other credentials.
 */
TEST(peer)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	int32_t pid;
	uint32_t uid, gid;
	int ready[2], go[2], st;
	struct pair p;
	pid_t kid;
	char b;

	o.mode = 0666;		/* for the other user below */
	ASSERT_EQ(0, pair_open(&p, "peer", o));
	ASSERT_EQ(0, lzchan_peer(p.rx, 0, &pid, &uid, &gid));
	EXPECT_EQ(getpid(), pid);
	EXPECT_EQ(geteuid(), uid);
	EXPECT_EQ(getegid(), gid);
	EXPECT_EQ(-ENOTCONN, lzchan_peer(p.rx, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, lzchan_peer(p.rx, 2, NULL, NULL, NULL));
	/* A sender asks about the receiver, and not about another lane. */
	ASSERT_EQ(0, lzchan_peer(p.tx, LZCHAN_LANE_NONE, &pid, NULL, NULL));
	EXPECT_EQ(getpid(), pid);
	EXPECT_EQ(-EPERM, lzchan_peer(p.tx, 1, NULL, NULL, NULL));

	/* Another process, as another user when we may. */
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		struct lzchan *t2;

		if (geteuid() == 0 && (setgid(61003) || setuid(61003)))
			_exit(1);
		if (lzchan_open(&t2, p.name, LZCHAN_SENDER, NULL) || write(ready[1], "r", 1) != 1 ||
		    read(go[0], &b, 1) != 1)
			_exit(2);
		lzchan_close(t2);
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ(0, lzchan_peer(p.rx, 1, &pid, &uid, &gid));
	EXPECT_EQ(kid, pid);
	if (geteuid() == 0) {
		EXPECT_EQ(61003, uid);
		EXPECT_EQ(61003, gid);
	}
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_EQ(0, st);
	EXPECT_EQ(-ENOTCONN, lzchan_peer(p.rx, 1, NULL, NULL, NULL));
	pair_close(&p);
}

/*
 * lzchan_peer_origin(): a record believed only from the lane's holder (its
 * uid, pid and start time, as the kernel and /proc say) for its channel
 * and lane, read once, every field checked.
 */
static void origin_write(const char *dir, const char *name, uint32_t lane, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%u", dir, name, lane);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path))
		abort();
}

/* Process @pid's start time (field 22 of /proc/PID/stat). */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	FILE *f;
	size_t n;
	int k;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		abort();
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	for (k = 2; p && k < 21; k++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &t) != 1)
		abort();
	return t;
}

TEST(peer_origin)
{
	char dir[] = "/tmp/lzchan-origin.XXXXXX", line[400], path[PATH_MAX], other[PATH_MAX];
	struct lzchan_origin o = { .size = sizeof(o) };
	/* Each with %d (pid), %llu (start), %s (channel) in that order. */
	static const char *const bad[] = {
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=9",
		"lzchan-origin 2 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host= uid=7 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=h01234567890123456789"
		"01234567890123456789012345678901234567890123 uid=7 rpid=9\n",	/* 64 long */
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=-1\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=9 x\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=9\nmore\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7\n",
		"lzchan-origin  1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=+7 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=-1 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=4294967303 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=00 host=hA uid=7 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0\thost=hA uid=7 rpid=9\n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=9 \n",
		"lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 host=hA uid=7 rpid=9\n\n",
	};
	unsigned long long me = proc_start(getpid());
	struct pair p;
	unsigned int k;
	int32_t wpid;
	pid_t kid;
	int st;

	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, setenv("LZCHAN_ORIGIN_DIR", dir, 1));
	ASSERT_EQ(0, pair_open(&p, "orig", lz_opts(64, 64, 2)));
	ASSERT_EQ(0, lzchan_send(p.tx, "x", 1));
	/* A local sender claims nothing; nobody on lane 1. */
	EXPECT_EQ(-ENOENT, lzchan_peer_origin(p.rx, 0, &o));
	EXPECT_EQ(-ENOTCONN, lzchan_peer_origin(p.rx, 1, &o));
	EXPECT_EQ(-EINVAL, lzchan_peer_origin(p.rx, 2, &o));
	EXPECT_EQ(-EBADF, lzchan_peer_origin(p.tx, 0, &o));
	EXPECT_EQ(-EINVAL, lzchan_peer_origin(p.rx, 0, NULL));
	o.size = 8;
	EXPECT_EQ(-EINVAL, lzchan_peer_origin(p.rx, 0, &o));
	o.size = sizeof(o);

	/* Ours (we hold lane 0): believed. */
	snprintf(line, sizeof(line), "lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 "
		 "host=hostA.lan uid=1000 rpid=4242\n", getpid(), me, p.name);
	origin_write(dir, p.name, 0, line);
	ASSERT_EQ(0, lzchan_peer_origin(p.rx, 0, &o));
	EXPECT_STREQ("hostA.lan", o.host);
	EXPECT_EQ(1000, o.uid);
	EXPECT_EQ(4242, o.pid);
	EXPECT_EQ(sizeof(o), o.size);
	/* Without a handle: the record as written, and who wrote it. */
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	ASSERT_EQ(0, lzchan_stat_origin(p.name, 0, &o, &wpid));
	EXPECT_STREQ("hostA.lan", o.host);
	EXPECT_EQ(getpid(), wpid);
	EXPECT_EQ(-ENOENT, lzchan_stat_origin(p.name, 1, &o, &wpid));
	EXPECT_EQ(-EINVAL, lzchan_stat_origin("a/b", 0, &o, &wpid));

	/* The same, under another lane's or channel's name: not that one's. */
	snprintf(other, sizeof(other), "%s/%s.0", dir, p.name);
	snprintf(path, sizeof(path), "%s/%s.1", dir, p.name);
	ASSERT_EQ(0, rename(other, path));
	EXPECT_EQ(-ENOENT, lzchan_stat_origin(p.name, 1, &o, &wpid));
	ASSERT_EQ(0, unlink(path));
	/* A record with our pid but another start time (the pid's earlier
	 * owner's), and one of a process that is gone: stale. */
	snprintf(line, sizeof(line), "lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 "
		 "host=hostA uid=7 rpid=9\n", getpid(), me + 1, p.name);
	origin_write(dir, p.name, 0, line);
	EXPECT_EQ(-ENOENT, lzchan_peer_origin(p.rx, 0, &o));
	EXPECT_EQ(-ENOENT, lzchan_stat_origin(p.name, 0, &o, &wpid));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid)
		_exit(0);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	snprintf(line, sizeof(line), "lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 "
		 "host=hostA uid=7 rpid=9\n", kid, me, p.name);
	origin_write(dir, p.name, 0, line);
	EXPECT_EQ(-ENOENT, lzchan_peer_origin(p.rx, 0, &o));
	EXPECT_EQ(-ENOENT, lzchan_stat_origin(p.name, 0, &o, &wpid));

	/* Malformed: refused whole. */
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		snprintf(line, sizeof(line), bad[k], getpid(), me, p.name);
		origin_write(dir, p.name, 0, line);
		EXPECT_EQ(-EPROTO, lzchan_peer_origin(p.rx, 0, &o)) TH_LOG("record %u", k);
		EXPECT_EQ(-EPROTO, lzchan_stat_origin(p.name, 0, &o, &wpid)) TH_LOG("record %u", k);
	}

	/* Not the holder's uid, a second link, or not a plain file: nothing
	 * claimed. */
	snprintf(line, sizeof(line), "lzchan-origin 1 pid=%d start=%llu channel=%s lane=0 "
		 "host=hostA uid=7 rpid=9\n", getpid(), me, p.name);
	origin_write(dir, p.name, 0, line);
	snprintf(path, sizeof(path), "%s/%s.0", dir, p.name);
	ASSERT_EQ(0, lzchan_peer_origin(p.rx, 0, &o));
	snprintf(other, sizeof(other), "%s/link", dir);
	ASSERT_EQ(0, link(path, other));
	EXPECT_EQ(-ENOENT, lzchan_peer_origin(p.rx, 0, &o));
	ASSERT_EQ(0, unlink(other));
	if (geteuid() == 0) {
		ASSERT_EQ(0, chown(path, 61004, 61004));
		EXPECT_EQ(-ENOENT, lzchan_peer_origin(p.rx, 0, &o));
		ASSERT_EQ(0, chown(path, 0, 0));
	}
	ASSERT_EQ(0, rename(path, other));
	ASSERT_EQ(0, symlink(other, path));
	EXPECT_EQ(-ENOENT, lzchan_peer_origin(p.rx, 0, &o));
	EXPECT_EQ(-ENOENT, lzchan_stat_origin(p.name, 0, &o, &wpid));
	pair_close(&p);
	unsetenv("LZCHAN_ORIGIN_DIR");
	snprintf(line, sizeof(line), "rm -rf %s", dir);
	EXPECT_EQ(0, system(line));
}

/* ---- name squatting: another user creates the name first ---- */

#define SQUATTER_UID	61001
#define OPENER_UID	61002

struct squat {
	char open_name[LZCHAN_NAME_SIZE];	/* the squatter's, mode 0666 */
	char closed_name[LZCHAN_NAME_SIZE];	/* the squatter's, mode 0600 */
	char own_name[LZCHAN_NAME_SIZE];	/* the opener's own */
	int r[16];
	uint32_t created[4];
};

/* Run @fn(@s) in a child as @uid (gid the same, no other groups). */
static int as_user(uid_t uid, void (*fn)(struct squat *), struct squat *s)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(2);
		fn(s);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void squatter(struct squat *s)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);

	o.mode = 0666;
	s->r[0] = lzchan_create(s->open_name, &o, LZCHAN_EXCL);
	o.mode = 0600;
	s->r[1] = lzchan_create(s->closed_name, &o, LZCHAN_EXCL);
}

/* lzchan_open()'s result, the handle closed again if there is one. */
static int try_open(const char *name, unsigned int flags, const struct lzchan_opts *o)
{
	struct lzchan *ch;
	int r = lzchan_open(&ch, name, flags, o);

	if (!r)
		lzchan_close(ch);
	return r;
}

static void opener(struct squat *s)
{
	struct lzchan_opts o = lz_opts(64, 64, 2);
	struct lzchan *ch, *tx;
	struct lzchan_geom g;

	/* Reusing a name safely: OWNED refuses the squatter's channel in
	 * every role, whether or not we may open it. */
	s->r[2] = try_open(s->open_name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_OWNED, &o);
	s->r[3] = try_open(s->open_name, LZCHAN_SENDER | LZCHAN_CREATE | LZCHAN_OWNED, &o);
	s->r[4] = try_open(s->open_name, LZCHAN_RECEIVER | LZCHAN_OWNED, NULL);
	s->r[5] = try_open(s->closed_name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_OWNED, &o);
	s->r[6] = try_open(s->closed_name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o);
	/* Creating safely: EXCL. */
	s->r[7] = try_open(s->open_name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
	/* Without either, the squatter's channel opens, and says so. */
	s->r[8] = lzchan_open(&ch, s->open_name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o);
	if (!s->r[8]) {
		lzchan_geometry(ch, &g);
		s->created[0] = g.created;
		lzchan_close(ch);
	}
	/* Our own channel: created once, then ours to reopen. */
	s->r[9] = lzchan_open(&ch, s->own_name,
			      LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL | LZCHAN_OWNED, &o);
	if (!s->r[9]) {
		lzchan_geometry(ch, &g);
		s->created[1] = g.created;
		s->r[10] = lzchan_open(&tx, s->own_name, LZCHAN_SENDER | LZCHAN_CREATE | LZCHAN_OWNED, &o);
		if (!s->r[10]) {
			lzchan_geometry(tx, &g);
			s->created[2] = g.created;
			s->r[11] = lzchan_send(tx, "mine", 4);
			lzchan_close(tx);
		}
		lzchan_close(ch);
	}
	/* The squatter's name is not ours to remove; ours is. */
	s->r[12] = lzchan_unlink(s->open_name);
	s->r[13] = lzchan_unlink(s->own_name);
}

TEST(owned_refuses_a_squatted_name)
{
	struct squat *s;

	if (geteuid())
		SKIP(return, "needs root to act as two other users");
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, s);
	memset(s, 0x5a, sizeof(*s));
	strcpy(s->open_name, lz_name("squat"));
	strcpy(s->closed_name, lz_name("squat"));
	strcpy(s->own_name, lz_name("owned"));

	ASSERT_EQ(0, as_user(SQUATTER_UID, squatter, s));
	ASSERT_EQ(1, s->r[0]);
	ASSERT_EQ(1, s->r[1]);
	ASSERT_EQ(0, as_user(OPENER_UID, opener, s));
	EXPECT_EQ(-EPERM, s->r[2]);
	EXPECT_EQ(-EPERM, s->r[3]);
	EXPECT_EQ(-EPERM, s->r[4]);
	EXPECT_EQ(-EPERM, s->r[5]);	/* not -EACCES: it is not ours */
	EXPECT_EQ(-EACCES, s->r[6]);
	EXPECT_EQ(-EEXIST, s->r[7]);
	EXPECT_EQ(0, s->r[8]);
	EXPECT_EQ(0, s->created[0]);
	EXPECT_EQ(0, s->r[9]);
	EXPECT_EQ(1, s->created[1]);
	EXPECT_EQ(0, s->r[10]);
	EXPECT_EQ(0, s->created[2]);
	EXPECT_EQ(0, s->r[11]);
	EXPECT_EQ(-EPERM, s->r[12]);
	EXPECT_EQ(0, s->r[13]);

	EXPECT_EQ(0, lzchan_unlink(s->open_name));
	EXPECT_EQ(0, lzchan_unlink(s->closed_name));
	munmap(s, sizeof(*s));
}

/* ---- endpoints (the module's; here what every backend must refuse) ---- */

/* The message lzchan_grant_send() sends (lzchan_endpoint.c), rebuilt
 * here byte for byte so that each field can be broken on its own. */
struct ep_msg {
	char magic[8];
	uint32_t version;
	uint32_t role;
	char name[LZCHAN_NAME_SIZE];
};

static void ep_msg_init(struct ep_msg *m)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->magic, "LZCHANEP", 8);
	m->version = 1;
	m->role = LZCHAN_OPEN_SENDER;
	strcpy(m->name, "epchan");
}

/* Send @len bytes of @buf with @nfds descriptors (SCM_RIGHTS) on @sock. */
static ssize_t ep_send(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(&ctl, 0, sizeof(ctl));
	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

/* The two lowest descriptor numbers free now: where the next two
 * descriptors received will land. */
static void ep_next_fds(int *a, int *b)
{
	*a = dup(0);
	*b = dup(0);
	close(*a);
	close(*b);
}

static bool ep_fd_closed(int fd)
{
	return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

/* Is nobody left holding the read end of pipe @p, after we closed ours?
 * (A write then fails with EPIPE.) */
static bool ep_pipe_unread(int p[2])
{
	bool gone;

	close(p[0]);
	gone = write(p[1], "x", 1) < 0 && errno == EPIPE;
	close(p[1]);
	return gone;
}

/* From here on this process dies at its first ioctl(): what a malformed
 * message brought is refused before anything is asked of it. */
static int ep_forbid_ioctl(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0 ? -errno : 0;
}

/*
 * shm's nearest thing to an endpoint: the channel file itself, granted
 * and passed over a socket; a child builds a sender from it (no name)
 * and its messages arrive.  No role is carried and nothing can be
 * revoked there: both are said as such.
 */
TEST(endpoint_on_shm_is_the_channel_file)
{
	const char *n = lz_name("epg");
	struct lzchan *rx = NULL, *ch = NULL;
	uint64_t id = 7;
	int sv[2], r, fd, i, st;
	uint32_t lane;
	char buf[32];
	pid_t pid;

	signal(SIGPIPE, SIG_IGN);
	EXPECT_EQ(-EINVAL, lzchan_grant(n, 0, 0, &id));
	EXPECT_EQ(-EINVAL, lzchan_grant(n, LZCHAN_SENDER | LZCHAN_RECEIVER, 0, &id));
	EXPECT_EQ(-EINVAL, lzchan_grant(n, LZCHAN_SENDER, 1U << 5, &id));
	EXPECT_EQ(-EINVAL, lzchan_grant("a/b", LZCHAN_SENDER, 0, &id));
	EXPECT_EQ(-EINVAL, lzchan_stat_peers(n, NULL, 1));
	if (lz_expect_dev() || access(LZCHAN_DEVICE_PATH, F_OK) == 0) {
		/* The module: no such channel (or a module without endpoints). */
		r = lzchan_grant(n, LZCHAN_SENDER, 0, &id);
		EXPECT_TRUE(r == -ENOENT || r == -EOPNOTSUPP);
		return;
	}
	EXPECT_EQ(-ENOENT, lzchan_grant(n, LZCHAN_SENDER, 0, &id));
	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_CREATE, NULL));
	/* A channel's file for a pub/sub role: the other kind. */
	EXPECT_EQ(-EPROTOTYPE, lzchan_grant(n, LZCHAN_SUBSCRIBER, 0, &id));
	fd = lzchan_grant(n, LZCHAN_SENDER, 0, &id);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, id);			/* nothing to revoke by */
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD));
	close(fd);
	EXPECT_EQ(-EOPNOTSUPP, lzchan_revoke(n, 0));
	EXPECT_EQ(-EOPNOTSUPP, lzchan_revoke(n, 1));
	EXPECT_EQ(-EOPNOTSUPP, lzchan_stat_peers(n, NULL, 0));

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		fd = lzchan_endpoint_recv(sv[1], 20000);
		if (fd < 0)
			_exit(10);
		/* The file carries no role: the holder names it. */
		if (lzchan_open_fd(&ch, dup(fd), 0, NULL) != -EINVAL)
			_exit(11);
		if (lzchan_open_fd(&ch, fd, LZCHAN_SENDER, NULL))
			_exit(12);
		for (i = 0; i < 100; i++) {
			snprintf(buf, sizeof(buf), "m%d", i);
			if (lzchan_send_wait(ch, buf, strlen(buf) + 1, 20000000000LL))
				_exit(13);
		}
		lzchan_close(ch);
		_exit(0);
	}
	close(sv[1]);
	EXPECT_EQ(0, lzchan_grant_send(sv[0], n, LZCHAN_SENDER, &id));
	for (i = 0; i < 100; i++) {
		char want[32];

		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 20000000000LL);
		ASSERT_LT(0, r) TH_LOG("message %d: %d", i, r);
		snprintf(want, sizeof(want), "m%d", i);
		EXPECT_STREQ(want, buf);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("child status 0x%x", st);
	close(sv[0]);
	lzchan_close(rx);
	EXPECT_EQ(0, lzchan_unlink(n));
}

/*
 * shm: a handle's role is a lock of its open file description, so two
 * handles made from one granted file (a dup, a copy passed on or kept)
 * must each get a description of their own: otherwise the second takes
 * the first's lane for a dead one's, the first's sends go nowhere, and
 * two receivers attach.
 */
TEST(endpoint_on_shm_each_handle_its_own)
{
	const char *n = lz_name("epd");
	struct lzchan *rx = NULL, *rx2 = NULL, *a = NULL, *b = NULL;
	int fd, fd2, r, seen[2] = { 0, 0 }, i;
	uint32_t lane, la = LZCHAN_LANE_NONE;
	char buf[16];

	if (lz_expect_dev() || access(LZCHAN_DEVICE_PATH, F_OK) == 0)
		SKIP(return, "the module's endpoints are tested in lzchan_endpoint");
	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_CREATE, NULL));
	fd = lzchan_grant(n, LZCHAN_SENDER, 0, NULL);
	ASSERT_LE(0, fd);
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, lzchan_open_fd(&a, fd, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_open_fd(&b, fd2, LZCHAN_SENDER, NULL));
	EXPECT_EQ(0, lzchan_send(a, "a1", 3));
	EXPECT_EQ(0, lzchan_send(b, "b1", 3));
	EXPECT_EQ(0, lzchan_send(a, "a2", 3));
	for (i = 0; i < 3; i++) {
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 5000000000LL);
		ASSERT_EQ(3, r) TH_LOG("message %d: %d", i, r);
		if (buf[0] == 'a') {
			EXPECT_TRUE(la == LZCHAN_LANE_NONE || la == lane);
			la = lane;
		}
		seen[buf[0] == 'b'] += 1;
	}
	EXPECT_EQ(2, seen[0]);
	EXPECT_EQ(1, seen[1]);
	/* Nothing more: neither lane ended under the other. */
	EXPECT_EQ(-EAGAIN, lzchan_recv(rx, buf, sizeof(buf), &lane));
	lzchan_close(a);
	lzchan_close(b);

	/* One receiver, however the file is copied. */
	fd = lzchan_grant(n, LZCHAN_RECEIVER, 0, NULL);
	ASSERT_LE(0, fd);
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EBUSY, lzchan_open_fd(&rx2, fd, LZCHAN_RECEIVER, NULL));
	lzchan_close(rx);
	ASSERT_EQ(0, lzchan_open_fd(&rx2, fd2, LZCHAN_RECEIVER, NULL));
	lzchan_close(rx2);
	EXPECT_EQ(0, lzchan_unlink(n));
}

TEST(endpoint_open_fd_refuses_what_is_not_one)
{
	struct lzchan *ch = NULL;
	int p[2];

	EXPECT_EQ(-EBADF, lzchan_open_fd(&ch, -1, 0, NULL));
	/* A pipe: not an lzchan descriptor at all; closed all the same. */
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-ENOTTY, lzchan_open_fd(&ch, p[0], 0, NULL));
	EXPECT_TRUE(ep_fd_closed(p[0]));
	EXPECT_EQ(-ENOTTY, lzchan_open_fd(&ch, p[1], LZCHAN_SENDER, NULL));
	EXPECT_TRUE(ep_fd_closed(p[1]));
	EXPECT_EQ(NULL, ch);
	/* Bad arguments: refused, and the descriptor still closed. */
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-EINVAL, lzchan_open_fd(&ch, p[0], LZCHAN_SENDER | LZCHAN_CREATE, NULL));
	EXPECT_TRUE(ep_fd_closed(p[0]));
	EXPECT_EQ(-EINVAL, lzchan_open_fd(NULL, p[1], 0, NULL));
	EXPECT_TRUE(ep_fd_closed(p[1]));
}

TEST(endpoint_recv_refuses_anything_but_one_endpoint)
{
	struct ep_msg m;
	int sv[2], p[2], q[2], two[2], a, b;
	char longer[sizeof(m) + 1];

	signal(SIGPIPE, SIG_IGN);
	ep_msg_init(&m);

	/* A valid message whose descriptor is no lzchan endpoint (asked,
	 * LZCHAN_IOC_FEATURES, and refused). */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ((ssize_t)sizeof(m), ep_send(sv[0], &m, sizeof(m), &p[0], 1));
	ep_next_fds(&a, &b);
	EXPECT_EQ(-EPROTO, lzchan_endpoint_recv(sv[1], 1000));
	EXPECT_TRUE(ep_fd_closed(a));
	EXPECT_TRUE(ep_pipe_unread(p));
	close(sv[0]);
	close(sv[1]);

	/* Everything below is refused before its descriptor is asked. */
	ASSERT_EQ(0, ep_forbid_ioctl());

	/* Short: half a message, with a descriptor (closed). */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe(p));
	ep_msg_init(&m);
	ASSERT_EQ(40, ep_send(sv[0], &m, 40, &p[0], 1));
	ep_next_fds(&a, &b);
	EXPECT_EQ(-EPROTO, lzchan_endpoint_recv(sv[1], 1000));
	EXPECT_TRUE(ep_fd_closed(a));
	EXPECT_TRUE(ep_pipe_unread(p));
	close(sv[0]);
	close(sv[1]);

	/* Longer than the message. */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe(p));
	memset(longer, 0, sizeof(longer));
	memcpy(longer, &m, sizeof(m));
	ASSERT_EQ((ssize_t)sizeof(longer), ep_send(sv[0], longer, sizeof(longer), &p[0], 1));
	EXPECT_EQ(-EPROTO, lzchan_endpoint_recv(sv[1], 1000));
	EXPECT_TRUE(ep_pipe_unread(p));
	close(sv[0]);
	close(sv[1]);

	/* Wrong magic, wrong version, no role, a name without its NUL. */
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
		ASSERT_EQ(0, pipe(p));
		ep_msg_init(&m);
		if (i == 0)
			m.magic[7] = 'X';
		else if (i == 1)
			m.version = 2;
		else if (i == 2)
			m.role = 0;
		else
			memset(m.name, 'a', sizeof(m.name));
		ASSERT_EQ((ssize_t)sizeof(m), ep_send(sv[0], &m, sizeof(m), &p[0], 1));
		ep_next_fds(&a, &b);
		EXPECT_EQ(-EPROTO, lzchan_endpoint_recv(sv[1], 1000));
		EXPECT_TRUE(ep_fd_closed(a));
		EXPECT_TRUE(ep_pipe_unread(p));
		close(sv[0]);
		close(sv[1]);
	}

	/* No descriptor. */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ep_msg_init(&m);
	ASSERT_EQ((ssize_t)sizeof(m), ep_send(sv[0], &m, sizeof(m), NULL, 0));
	EXPECT_EQ(-EPROTO, lzchan_endpoint_recv(sv[1], 1000));
	close(sv[0]);
	close(sv[1]);

	/* Two descriptors: both closed. */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, pipe(q));
	two[0] = p[0];
	two[1] = q[0];
	ASSERT_EQ((ssize_t)sizeof(m), ep_send(sv[0], &m, sizeof(m), two, 2));
	ep_next_fds(&a, &b);
	EXPECT_EQ(-EPROTO, lzchan_endpoint_recv(sv[1], 1000));
	EXPECT_TRUE(ep_fd_closed(a));
	EXPECT_TRUE(ep_fd_closed(b));
	EXPECT_TRUE(ep_pipe_unread(p));
	EXPECT_TRUE(ep_pipe_unread(q));
	close(sv[0]);
	close(sv[1]);

	/* Nothing comes: the timeout.  The peer leaves: end of file. */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	EXPECT_EQ(-ETIMEDOUT, lzchan_endpoint_recv(sv[1], 50));
	EXPECT_EQ(-ETIMEDOUT, lzchan_endpoint_recv(sv[1], 0));
	close(sv[0]);
	EXPECT_EQ(-ECONNRESET, lzchan_endpoint_recv(sv[1], 1000));
	close(sv[1]);
	EXPECT_EQ(-EBADF, lzchan_endpoint_recv(-1, 0));
}

TEST_HARNESS_MAIN
