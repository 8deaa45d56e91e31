// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stress: many sender processes into one receiver (exactly once, in order
 * per sender, checksums intact); a receiver that parks whenever idle, or
 * waits on its event fd, fed after random pauses (no message lost, no
 * wakeup lost -- a lost-wakeup detector, not a speed check); peers killed
 * mid-stream.
 *
 * Sizes scale with the environment: LZCHAN_STRESS_MSGS (per sender,
 * default 2,000,000), LZCHAN_WAKE_MSGS (default 200,000) and
 * LZCHAN_WAKE_SECS (each wakeup test stops sending after this many
 * seconds, default 20, whatever the count).  The VM rig, under software
 * emulation, sets them lower.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"

#define NSENDERS	8
#define TIMEOUT_NS	(60LL * 1000000000LL)

struct msg_hdr {
	uint32_t sender;
	uint32_t seq;
	uint32_t len;		/* whole message */
	uint32_t sum;		/* FNV-1a of the bytes after the header */
	uint64_t sent_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint32_t fnv(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/* A child must never outlive a failed test: it would hold the output open. */
static void die_with_parent(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(99);
}

static unsigned long env_count(const char *var, unsigned long dflt)
{
	const char *e = getenv(var);

	return e && *e ? strtoul(e, NULL, 0) : dflt;
}

static const char *chan_name(const char *prefix)
{
	static char buf[LZCHAN_NAME_SIZE];

	snprintf(buf, sizeof(buf), "%s.%d", prefix, getpid());
	return buf;
}

/* A message of @len bytes (>= header) from @sender, number @seq. */
static void fill(unsigned char *buf, uint32_t sender, uint32_t seq, uint32_t len)
{
	struct msg_hdr *h = (void *)buf;
	uint32_t i, x = sender * 2654435761u ^ seq;

	for (i = sizeof(*h); i < len; i++) {
		x = x * 1664525u + 1013904223u;
		buf[i] = x >> 24;
	}
	h->sender = sender;
	h->seq = seq;
	h->len = len;
	h->sum = fnv(buf + sizeof(*h), len - sizeof(*h));
	h->sent_ns = now_ns();
}

/* Mixed sizes: mostly one slot, some a few, now and then a big one. */
static uint32_t pick_len(uint32_t *rng, uint32_t max)
{
	uint32_t r;

	*rng = *rng * 1103515245u + 12345u;
	r = *rng >> 8;
	if (r % 64 == 0)
		return sizeof(struct msg_hdr) + r % (max - sizeof(struct msg_hdr) + 1);
	if (r % 4 == 0)
		return sizeof(struct msg_hdr) + r % 400;
	return sizeof(struct msg_hdr) + r % (56 - sizeof(struct msg_hdr) + 1);
}

static int sender_main(const char *name, uint32_t id, unsigned long count)
{
	static unsigned char buf[65536];
	struct lzchan_geom g;
	struct lzchan *tx;
	uint32_t rng = id + 1, len, max;
	unsigned long i;
	int r;

	r = lzchan_open(&tx, name, LZCHAN_SENDER, NULL);
	if (r)
		return 10;
	lzchan_geometry(tx, &g);
	max = g.max_msg < sizeof(buf) ? g.max_msg : sizeof(buf);
	if (max > 4096)
		max = 4096;
	for (i = 0; i < count; i++) {
		len = pick_len(&rng, max);
		fill(buf, id, i, len);
		r = lzchan_send_wait(tx, buf, len, TIMEOUT_NS);
		if (r)
			return 11;
	}
	lzchan_close(tx);
	return 0;
}

/* The receiver's books: per lane its sender, per sender its next seq. */
struct books {
	uint32_t next[NSENDERS], lane_of[NSENDERS];
	int32_t sender_on_lane[NSENDERS];
	unsigned long total;
};

/* Check one message of @r bytes at @p from @lane against the books. */
static void book(struct __test_metadata *_metadata, struct books *b, const unsigned char *p,
		 int r, uint32_t lane)
{
	const struct msg_hdr *h = (const void *)p;

	ASSERT_LE((int)sizeof(*h), r) TH_LOG("recv: %d after %lu", r, b->total);
	ASSERT_LT(lane, NSENDERS);
	ASSERT_EQ((uint32_t)r, h->len);
	ASSERT_LT(h->sender, NSENDERS);
	ASSERT_EQ(fnv(p + sizeof(*h), r - sizeof(*h)), h->sum) TH_LOG("torn message");
	/* A sender keeps its lane to the end: the lane tells who. */
	if (b->sender_on_lane[lane] < 0) {
		b->sender_on_lane[lane] = h->sender;
		ASSERT_EQ(~0U, b->lane_of[h->sender]);
		b->lane_of[h->sender] = lane;
	}
	ASSERT_EQ((int32_t)h->sender, b->sender_on_lane[lane]);
	ASSERT_EQ(b->next[h->sender], h->seq) TH_LOG("sender %u out of order", h->sender);
	b->next[h->sender]++;
	b->total++;
}

/*
 * Many senders, a mix of one-slot and multi-slot messages (pick_len()),
 * into one receiver that takes them by turns in each of the receive
 * styles -- copies (lzchan_recv_wait()), views one at a time
 * (lzchan_peek()/lzchan_release()) and batches of views
 * (lzchan_recv_batch()) -- switching every 1000 messages: exactly once,
 * in order per sender, intact.
 */
TEST(many_senders_exactly_once_in_order)
{
	static unsigned char buf[65536];
	unsigned long count = env_count("LZCHAN_STRESS_MSGS", 2000000);
	uint32_t ended = 0, lane;
	struct lzchan_msg m[16];
	struct books b;
	struct lzchan_opts o;
	struct lzchan *rx;
	const char *name = chan_name("stress");
	pid_t pids[NSENDERS];
	int i, r, k, status;

	memset(&b, 0, sizeof(b));
	lzchan_opts_init(&o);
	o.slot_size = 64;
	o.slot_count = 4096;
	o.max_senders = NSENDERS;
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	for (i = 0; i < NSENDERS; i++) {
		b.sender_on_lane[i] = -1;
		b.lane_of[i] = ~0U;
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			die_with_parent();
			_exit(sender_main(name, i, count));
		}
	}

	while (ended < NSENDERS) {
		int style = (int)(b.total / 1000 % 3);

		if (style == 1) {
			r = lzchan_peek(rx, &m[0]);
			if (!r) {
				book(_metadata, &b, m[0].data, (int)m[0].len, m[0].lane);
				lzchan_release(rx, &m[0]);
				continue;
			}
			lane = m[0].lane;
		} else if (style == 2) {
			r = lzchan_recv_batch(rx, m, 16);
			if (r > 0) {
				for (k = 0; k < r; k++) {
					ASSERT_EQ(m[0].lane, m[k].lane);
					book(_metadata, &b, m[k].data, (int)m[k].len, m[k].lane);
				}
				lzchan_release(rx, &m[r - 1]);
				continue;
			}
			lane = m[0].lane;
		} else {
			r = -EAGAIN;
		}
		/* Copies; and what the views found nothing for (they do not
		 * wait). */
		if (r == -EAGAIN)
			r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, TIMEOUT_NS);
		if (r == -EPIPE) {
			ASSERT_LT(lane, NSENDERS);
			ASSERT_LE(0, b.sender_on_lane[lane]) TH_LOG("end of a lane never used");
			EXPECT_EQ(count, b.next[b.sender_on_lane[lane]])
				TH_LOG("sender %d", b.sender_on_lane[lane]);
			/* A drained lane may take a later sender. */
			b.sender_on_lane[lane] = -1;
			ended++;
			continue;
		}
		book(_metadata, &b, buf, r, lane);
	}
	EXPECT_EQ(count * NSENDERS, b.total);
	for (i = 0; i < NSENDERS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("sender %d status 0x%x", i, status);
	}
	TH_LOG("%lu messages from %d processes, backend %s", b.total,
		       NSENDERS, lzchan_backend_name(rx));
	lzchan_close(rx);
	lzchan_unlink(name);
}

static void spin_until(uint64_t t)
{
	while (now_ns() < t)
		;
}

/*
 * The sender of the wakeup tests: after a random pause (0..200 us) each,
 * up to @count messages, for @secs seconds at most (a cross-CPU wake costs
 * tens of microseconds on some machines: the count alone could outlast the
 * harness).  *@done counts the sends that have returned (shared memory):
 * a message counted there is published and its wakeup, if owed, issued.
 */
static void wake_sender(const char *name, unsigned long count, unsigned long secs,
			unsigned long *done)
{
	uint64_t deadline = now_ns() + secs * 1000000000ULL;
	unsigned char buf[64];
	struct lzchan *tx;
	uint32_t rng = 7;
	unsigned long i;

	die_with_parent();
	if (lzchan_open(&tx, name, LZCHAN_SENDER, NULL))
		_exit(10);
	for (i = 0; i < count && now_ns() < deadline; i++) {
		rng = rng * 1103515245u + 12345u;
		spin_until(now_ns() + (rng >> 8) % 200001);
		fill(buf, 0, i, sizeof(buf));
		if (lzchan_send_wait(tx, buf, sizeof(buf), TIMEOUT_NS))
			_exit(11);
		/* Pairs with the receiver's acquire load. */
		__atomic_store_n(done, i + 1, __ATOMIC_RELEASE);
	}
	lzchan_close(tx);
	_exit(0);
}

static unsigned long *shared_counter(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * A receiver parked in lzchan_recv_wait() (spin_ns 0: it parks whenever
 * idle) gets every message, in order.  Its sleeps are bounded, so a lost
 * wakeup shows as lateness; the worst is logged, and a message later than
 * the bound's rescue would be (seconds) fails.
 */
TEST(parked_receiver_never_misses_a_wakeup)
{
	unsigned long count = env_count("LZCHAN_WAKE_MSGS", 200000), i, *done;
	unsigned long secs = env_count("LZCHAN_WAKE_SECS", 20);
	unsigned char buf[64];
	struct msg_hdr *h = (void *)buf;
	const char *name = chan_name("wake");
	uint64_t late, worst = 0, sum = 0;
	struct lzchan_opts o;
	struct lzchan *rx;
	int status, r;
	pid_t pid;

	ASSERT_NE(NULL, done = shared_counter());
	lzchan_opts_init(&o);
	o.spin_ns = 0;		/* park whenever idle */
	o.max_senders = 1;
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		wake_sender(name, count, secs, done);
	for (i = 0;; i++) {
		r = lzchan_recv_wait(rx, buf, sizeof(buf), NULL, TIMEOUT_NS);
		if (r == -EPIPE)
			break;
		ASSERT_EQ((int)sizeof(buf), r) TH_LOG("message %lu: %d", i, r);
		ASSERT_EQ(i, h->seq);
		late = now_ns() - h->sent_ns;
		sum += late;
		if (late > worst)
			worst = late;
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Every message whose send returned was received, and no other. */
	EXPECT_EQ(*done, i);
	EXPECT_LT(0, i);
	TH_LOG("%lu wakeups in at most %lu s: mean %.1f us, worst %.1f us after sending",
	       i, secs, i ? sum / 1000.0 / i : 0.0, worst / 1000.0);
	/* Not a speed check (a loaded machine makes single wakeups take
	 * 100+ ms): a lost wakeup that the bounded sleeps do not rescue
	 * shows as a message delivered never, or after seconds. */
	EXPECT_GT(5000000000ULL, worst);
	lzchan_close(rx);
	lzchan_unlink(name);
	munmap(done, 4096);
}

/*
 * A receiver armed on its event fd (lzchan_arm(), then poll() with no
 * bound of its own) gets every message: there a lost wakeup is not
 * rescued by a timed look, it is a hang.  A poll that waits 10 s is a
 * lost wakeup only if the sender had finished sending the message it
 * waits for (*done); else the machine is just slow, and it waits on.
 */
TEST(armed_receiver_never_misses_a_wakeup)
{
	unsigned long count = env_count("LZCHAN_WAKE_MSGS", 200000), i, *done, polls = 0;
	unsigned long secs = env_count("LZCHAN_WAKE_SECS", 20);
	unsigned char buf[64];
	struct msg_hdr *h = (void *)buf;
	const char *name = chan_name("wakefd");
	struct lzchan_opts o;
	struct pollfd pf;
	struct lzchan *rx;
	int status, r;
	pid_t pid;

	ASSERT_NE(NULL, done = shared_counter());
	lzchan_opts_init(&o);
	o.max_senders = 1;
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	pf.fd = lzchan_event_fd(rx);
	pf.events = POLLIN;
	r = lzchan_arm(rx);
	if (pf.fd < 0 || r == -ENOSYS) {
		lzchan_close(rx);
		lzchan_unlink(name);
		SKIP(return, "no event fd to wait on (%d, %d)", pf.fd, r);
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		wake_sender(name, count, secs, done);
	for (i = 0;;) {
		r = lzchan_recv(rx, buf, sizeof(buf), NULL);
		if (r == -EPIPE)
			break;
		if (r == -EAGAIN) {
			r = lzchan_arm(rx);
			if (r == -EAGAIN)
				continue;
			ASSERT_EQ(0, r);
			polls++;
			while (poll(&pf, 1, 10000) == 0) {
				/* Pairs with the sender's release store. */
				ASSERT_GE(i, __atomic_load_n(done, __ATOMIC_ACQUIRE))
					TH_LOG("message %lu was sent 10 s ago: its wakeup was lost", i);
			}
			continue;
		}
		ASSERT_EQ((int)sizeof(buf), r) TH_LOG("message %lu: %d", i, r);
		ASSERT_EQ(i, h->seq);
		i++;
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(*done, i);
	EXPECT_LT(0, i);
	TH_LOG("%lu messages in at most %lu s, %lu waits on the event fd (%s)", i, secs, polls,
	       lzchan_backend_name(rx));
	lzchan_close(rx);
	lzchan_unlink(name);
	munmap(done, 4096);
}

/* SIGKILL a sender mid-stream: every complete message, then the end. */
TEST(sender_killed_mid_stream)
{
	static unsigned char buf[8192];
	struct msg_hdr *h = (void *)buf;
	const char *name = chan_name("kill");
	struct lzchan_opts o;
	struct lzchan *rx;
	uint32_t next = 0, lane;
	int r, status;
	pid_t pid;

	lzchan_opts_init(&o);
	o.slot_count = 256;
	o.max_senders = 1;
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct lzchan *tx;
		uint32_t rng = 3, i;

		die_with_parent();
		if (lzchan_open(&tx, name, LZCHAN_SENDER, NULL))
			_exit(10);
		for (i = 0; ; i++) {
			uint32_t len = pick_len(&rng, 4000);

			fill(buf, 0, i, len);
			if (lzchan_send_wait(tx, buf, len, TIMEOUT_NS))
				_exit(12);	/* killed before this, normally */
		}
	}
	while (next < 20000) {
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, TIMEOUT_NS);
		ASSERT_LE((int)sizeof(*h), r);
		ASSERT_EQ(next, h->seq);
		next++;
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	for (;;) {
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, TIMEOUT_NS);
		if (r == -EPIPE)
			break;
		ASSERT_LE((int)sizeof(*h), r) TH_LOG("after the kill: %d", r);
		ASSERT_EQ((uint32_t)r, h->len);
		ASSERT_EQ(fnv(buf + sizeof(*h), r - sizeof(*h)), h->sum) TH_LOG("torn");
		ASSERT_EQ(next, h->seq);
		next++;
	}
	EXPECT_EQ(0, lane);
	EXPECT_EQ(-ETIMEDOUT, lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 1000000));
	lzchan_close(rx);
	lzchan_unlink(name);
}

/* SIGKILL the receiver: senders get -EPIPE instead of hanging. */
TEST(receiver_killed)
{
	const char *name = chan_name("rkill");
	struct lzchan_opts o;
	struct lzchan *tx;
	char buf[64] = "x";
	int ready[2], r, status;
	pid_t pid;

	lzchan_opts_init(&o);
	o.slot_count = 64;
	o.max_senders = 1;
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct lzchan *rx;

		die_with_parent();
		if (lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o))
			_exit(10);
		if (write(ready[1], "r", 1) != 1)
			_exit(11);
		for (;;)
			lzchan_recv_wait(rx, buf, sizeof(buf), NULL, -1);
	}
	ASSERT_EQ(1, read(ready[0], buf, 1));
	ASSERT_EQ(0, lzchan_open(&tx, name, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "a", 1));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* Keep sending: the ring fills, then the departure is noticed. */
	do {
		r = lzchan_send_wait(tx, buf, sizeof(buf), 10000000000LL);
	} while (r == 0);
	EXPECT_EQ(-EPIPE, r);
	lzchan_close(tx);
	lzchan_unlink(name);
}

TEST_HARNESS_MAIN
