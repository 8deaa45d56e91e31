// SPDX-License-Identifier: GPL-2.0-only
/*
 * A hostile tenant beside an honest one.  Two tenants' containers
 * (lzchan_ctr.h), each made by its own unprivileged host user as rootless
 * runtimes make them, share tenant A's IPC namespace (a pod, or
 * --ipc=container:A).  Tenant A runs a service channel that anyone there
 * may send to (mode 0622) and an honest sender (A's uid 1000).  Tenant B is
 * hostile, in several processes at once, for as long as A works:
 *   - it squats a name A will want, and floods the namespace with channels
 *     until the kernel refuses;
 *   - it attaches to the service channel and scribbles over everything it
 *     may write (its lane), rings its bell, forges messages that look like
 *     A's, leaves garbage at the receiver's head, and plays the "empty slot
 *     at the published head" trick before it leaves;
 *   - it races open, close, send, fork (a child keeping the mapping) and
 *     exit on the service channel, tries to pin lane pages (vmsplice), to
 *     map the receiver's areas (rx header, another lane's rx page, bell),
 *     to unlink or receive from A's channel, and creates and drops its own.
 * The honest tenant's messages must arrive exactly once, in order, each on
 * a lane the kernel attributes to A's uid 1000, and its own channel
 * operations must succeed (or refuse a squatted name precisely); every one
 * of B's attempts must get exactly the refusal the ABI promises.  A's
 * owner keeps its channel allowance in its other containers however much
 * B floods the namespace they share.
 */
#include <sys/uio.h>
#include <time.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"
#include "lzchan_ctr.h"
#include "lzchan.h"

#define OWNER_A		1000		/* host user who runs tenant A */
#define OWNER_B		1001		/* host user who runs tenant B */
#define HONEST_UID	1000		/* A's sender, inside A */
#define LANES		8
#define SESSIONS	4		/* the honest sender attaches anew for each */
#define MSGS		200		/* messages per session */
#define MAGIC		0x4c5a4f4bU
#define FLOOD_LIMIT	32		/* max_user_channels for the test */
#define NS_LIMIT	128		/* max_ns_channels for the test */
#define RUN_NS		(200LL * 1000000000)	/* hang guard, not a timing */

/* Shared by every process of the test (an anonymous MAP_SHARED page). */
struct board {
	volatile int stop;		/* test -> hostile workers */
	volatile int fail_line;		/* first failure: where, and why */
	char why[200];
	volatile long hostile_msgs, hostile_bad, hostile_ends, unattributed;
	volatile long honest_msgs, euser_waits, refusals, floods, pins;
	volatile int b_flooded;		/* channels B got, its squat aside */
	volatile long attacks;		/* B's attach-attack-leave rounds */
	volatile int a_done;		/* A has read everything: B, stop */
	volatile int workers;		/* B's workers still running */
};

struct run {
	struct board *b;
	char svc[LZCHAN_NAME_SIZE];	/* A's service channel */
	char squat[LZCHAN_NAME_SIZE];	/* the name B takes first */
	char side[LZCHAN_NAME_SIZE];	/* a channel A makes amid the flood */
	int rx_ready[2];		/* A receiver -> test */
	int sess_done[2];		/* A receiver -> A sender: session read */
	int b_ready[2];			/* B -> test: squatted and flooded */
	int b_go[2];			/* test -> B: drop the flood, attack */
	int tx_ops[2];			/* A sender -> test: its channel ops done */
	int tx_go[2];			/* test -> A sender: stream */
};

/* In a container: close every end of the test's pipes but the @keep ones,
 * so that a reader sees EOF as soon as its writer dies. */
static void only(struct run *r, int keep0, int keep1, int keep2)
{
	int *fds[] = { r->rx_ready, r->sess_done, r->b_ready, r->b_go, r->tx_ops, r->tx_go };
	unsigned int i, k;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		for (k = 0; k < 2; k++)
			if (fds[i][k] != keep0 && fds[i][k] != keep1 && fds[i][k] != keep2)
				close(fds[i][k]);
}

/* Record the first failure (any process) and return @code. */
#define BAD(r, code, ...) ({							\
	if (!__sync_val_compare_and_swap(&(r)->b->fail_line, 0, __LINE__))	\
		snprintf((r)->b->why, sizeof((r)->b->why), __VA_ARGS__);	\
	(code);									\
})

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- the honest tenant's messages ---- */

struct hmsg {
	uint32_t magic, session, n, len;
	unsigned char body[];
};

static uint32_t hmsg_len(uint32_t s, uint32_t n)
{
	/* 16 to 215 bytes: one slot to four. */
	return sizeof(struct hmsg) + (s * 53 + n * 37) % 200;
}

static void hmsg_fill(struct hmsg *m, uint32_t s, uint32_t n)
{
	uint32_t i, len = hmsg_len(s, n);

	m->magic = MAGIC;
	m->session = s;
	m->n = n;
	m->len = len;
	for (i = 0; i < len - sizeof(*m); i++)
		m->body[i] = (unsigned char)(s * 131 + n * 7 + i);
}

static bool hmsg_ok(const void *buf, int len, uint32_t s, uint32_t n)
{
	union { struct hmsg m; unsigned char b[256]; } want;

	if ((uint32_t)len != hmsg_len(s, n))
		return false;
	hmsg_fill(&want.m, s, n);
	return !memcmp(buf, &want, len);
}

/* ---- tenant A: the receiver (A's root) ---- */

static int rx_main(void *arg)
{
	struct run *r = arg;
	uint32_t next_n[SESSIONS] = { 0 }, lane, ugid, uuid, s, i;
	int uid[LANES], sess[LANES], ended = 0, len, ret;
	bool known[LANES] = { false };
	static unsigned char buf[1 << 16];
	struct lzchan_opts o;
	struct lzchan_geom g;
	struct lzchan *rx;
	int64_t deadline = now_ns() + RUN_NS;
	int32_t pid;

	only(r, r->rx_ready[1], r->sess_done[1], -1);
	signal(SIGPIPE, SIG_IGN);	/* a sender that died: EPIPE, not death */
	setenv("LZCHAN_BACKEND", "dev", 1);
	lzchan_opts_init(&o);
	o.slot_size = 64;
	o.slot_count = 256;
	o.max_senders = LANES;
	o.mode = 0622;		/* anyone here may send; only A reads */
	ret = lzchan_open(&rx, r->svc, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL |
			  LZCHAN_OWNED, &o);
	if (ret)
		return BAD(r, 10, "A: creating the service channel: %s", strerror(-ret));
	if (lzchan_geometry(rx, &g) || g.backend != LZCHAN_BACKEND_DEV || !g.created)
		return BAD(r, 11, "A: the service channel is not ours on the module");
	for (i = 0; i < LANES; i++)
		sess[i] = -1;
	if (ctr_signal(r->rx_ready[1]))
		return 12;

	while (ended < SESSIONS) {
		if (r->b->fail_line)
			return 13;		/* someone else failed: stop */
		if (now_ns() > deadline)
			return BAD(r, 14, "A: still waiting after %lld s: %ld honest messages",
				   RUN_NS / 1000000000, r->b->honest_msgs);
		len = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 100000000);
		if (len == -ETIMEDOUT || len == -EAGAIN)
			continue;
		if (lane >= LANES)
			return BAD(r, 15, "A: verdict %d on lane %u", len, lane);
		if (len == -EPIPE) {
			/* The end of the lane's sender: one honest session's
			 * end comes after all of its messages. */
			if (known[lane] && uid[lane] == HONEST_UID) {
				if (sess[lane] < 0 || next_n[sess[lane]] != MSGS)
					return BAD(r, 16, "A: honest lane %u ended early", lane);
				ended++;
			} else {
				r->b->hostile_ends++;
			}
			known[lane] = false;
			sess[lane] = -1;
			continue;
		}
		if (len == -EBADMSG) {
			if (known[lane] && uid[lane] == HONEST_UID)
				return BAD(r, 17, "A: garbage on the honest lane %u", lane);
			r->b->hostile_bad++;
			continue;
		}
		if (len < 0)
			return BAD(r, 18, "A: receive: %s", strerror(-len));
		/* Who sent it: the kernel's word for the lane's current
		 * sender, which stays until we take its end. */
		if (!known[lane]) {
			if (lzchan_peer(rx, lane, &pid, &uuid, &ugid)) {
				r->b->unattributed++;	/* gone already: not A's */
				continue;
			}
			known[lane] = true;
			uid[lane] = uuid;
			if (uuid == HONEST_UID && ugid != HONEST_UID)
				return BAD(r, 19, "A: honest lane %u with gid %u", lane, ugid);
		}
		if (uid[lane] != HONEST_UID) {
			r->b->hostile_msgs++;
			continue;
		}
		if (len < (int)sizeof(struct hmsg))
			return BAD(r, 20, "A: %d bytes on the honest lane %u", len, lane);
		memcpy(&s, buf + offsetof(struct hmsg, session), sizeof(s));
		if (s >= SESSIONS || (sess[lane] >= 0 && (uint32_t)sess[lane] != s))
			return BAD(r, 21, "A: session %u on lane %u (of session %d)",
				   s, lane, sess[lane]);
		sess[lane] = s;
		if (next_n[s] >= MSGS || !hmsg_ok(buf, len, s, next_n[s]))
			return BAD(r, 22, "A: session %u: message %u expected, got %u (%d bytes)",
				   s, next_n[s], ((struct hmsg *)buf)->n, len);
		next_n[s]++;
		r->b->honest_msgs++;
		if (next_n[s] == MSGS && ctr_signal(r->sess_done[1]))
			return 23;
	}
	lzchan_close(rx);
	/* B stops before A drops the channel (else B's refusals would turn
	 * into ENOENT).  Bounded: a worker that hangs is reported by B. */
	r->b->a_done = 1;
	for (i = 0; i < 100000 && r->b->workers; i++)
		usleep(1000);
	ret = lzchan_unlink(r->svc);
	return ret ? BAD(r, 25, "A: unlinking its channel: %s", strerror(-ret)) : 0;
}

/* ---- tenant A: the honest sender (A's uid 1000) ---- */

/* Until B has done @n more attack rounds (or 10 s passed: B may be done). */
static void await_attacks(struct run *r, long n)
{
	long want = r->b->attacks + n;
	int k;

	for (k = 0; k < 10000 && r->b->attacks < want && !r->b->fail_line; k++)
		usleep(1000);
}

static int tx_main(void *arg)
{
	struct run *r = arg;
	union { struct hmsg m; unsigned char b[256]; } msg;
	struct lzchan_opts o;
	struct lzchan_geom g;
	struct lzchan *c;
	uint32_t s, n;
	int64_t until;
	int ret;

	only(r, r->tx_ops[1], r->tx_go[0], r->sess_done[0]);
	setenv("LZCHAN_BACKEND", "dev", 1);
	/* Its channel operations, amid B's squat and flood: the safe open
	 * refuses the squatted name precisely, and a channel of its own
	 * comes and goes. */
	lzchan_opts_init(&o);
	ret = lzchan_open(&c, r->squat, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_OWNED, &o);
	if (ret != -EPERM)
		return BAD(r, 30, "A: safe open of a squatted name: %d, not -EPERM", ret);
	ret = lzchan_open(&c, r->squat, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
	if (ret != -EEXIST)
		return BAD(r, 31, "A: exclusive create of a squatted name: %d", ret);
	ret = lzchan_open(&c, r->side, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL |
			  LZCHAN_OWNED, &o);
	if (ret)
		return BAD(r, 32, "A: creating a channel while B floods: %s", strerror(-ret));
	if (lzchan_geometry(c, &g) || !g.created)
		return BAD(r, 33, "A: its new channel is not reported as created");
	lzchan_close(c);
	ret = lzchan_unlink(r->side);
	if (ret)
		return BAD(r, 34, "A: unlinking its channel: %s", strerror(-ret));
	if (ctr_signal(r->tx_ops[1]) || ctr_read(r->tx_go[0]))
		return 35;

	for (s = 0; s < SESSIONS; s++) {
		/* B's lanes come and go: a lane is free again once the
		 * receiver took its sender's end. */
		until = now_ns() + RUN_NS / 2;
		while ((ret = lzchan_open(&c, r->svc, LZCHAN_SENDER, NULL)) == -EUSERS &&
		       now_ns() < until) {
			r->b->euser_waits++;
			usleep(1000);
		}
		if (ret)
			return BAD(r, 36, "A: session %u: opening a lane: %s", s, strerror(-ret));
		for (n = 0; n < MSGS; n++) {
			/* Under fire: a few of B's rounds land inside each
			 * session (waited for, not timed; bounded). */
			if (n % (MSGS / 4) == 0)
				await_attacks(r, 2);
			hmsg_fill(&msg.m, s, n);
			ret = lzchan_send_wait(c, &msg, msg.m.len, RUN_NS);
			if (ret)
				return BAD(r, 37, "A: session %u message %u: %s", s, n,
					   strerror(-ret));
		}
		/* Stay attached until the receiver has read (and attributed)
		 * the session: then leave, and come back on a new lane. */
		if (ctr_read(r->sess_done[0]))
			return BAD(r, 38, "A: session %u not confirmed", s);
		lzchan_close(c);
	}
	return 0;
}

/* ---- tenant B: hostile ---- */

static uint64_t rng_state;

static uint32_t rnd(void)
{
	return (uint32_t)lz_xorshift(&rng_state);
}

/* What a sender may map, by hand: its lane, and its lane's rx page (the
 * receiver's published head, read-only). */
struct raw {
	int fd;
	uint32_t lane;
	struct lzchan_info in;
	char *lane_map;
	char *rx_map;
};

static int raw_open(struct run *r, struct raw *w)
{
	memset(w, 0, sizeof(*w));
	w->fd = lz_open(r->svc, LZCHAN_OPEN_SENDER, &w->lane);
	if (w->fd < 0)
		return w->fd;
	if (lz_info(w->fd, &w->in))
		return -EPROTO;
	w->lane_map = lz_map(w->fd, w->in.layout.lanes_off + w->lane * w->in.layout.lane_stride,
			     w->in.layout.lane_size, PROT_READ | PROT_WRITE);
	w->rx_map = lz_map(w->fd, w->in.layout.rx_off + w->in.layout.rx_lanes +
			   (uint64_t)w->lane * w->in.layout.rx_lane_stride,
			   sysconf(_SC_PAGESIZE), PROT_READ);
	return w->lane_map && w->rx_map ? 0 : -errno;
}

static void raw_close(struct raw *w)
{
	if (w->lane_map)
		munmap(w->lane_map, w->in.layout.lane_size);
	if (w->rx_map)
		munmap(w->rx_map, sysconf(_SC_PAGESIZE));
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/* Map one page of @w's channel at @off, read-only: 0 (unmapped again),
 * or -errno. */
static int raw_map_try(const struct raw *w, uint64_t off)
{
	long ps = sysconf(_SC_PAGESIZE);
	void *p = lz_map(w->fd, off, ps, PROT_READ);

	if (!p)
		return -errno;
	munmap(p, ps);
	return 0;
}

static uint32_t raw_head(const struct raw *w)
{
	return __atomic_load_n(&((struct lzchan_shm_rx_lane *)w->rx_map)->head,
			       __ATOMIC_ACQUIRE);
}

static struct lzchan_slot_hdr *raw_slot(const struct raw *w, uint32_t pos)
{
	uint32_t S = w->in.stat.slot_size, N = w->in.stat.slot_count;

	return (void *)(w->lane_map + w->in.layout.lane_slots + (size_t)(pos & (N - 1)) * S);
}

/* A message that looks like A's, at position @pos. */
static void raw_forge(const struct raw *w, uint32_t pos, uint32_t s, uint32_t n)
{
	struct lzchan_slot_hdr *h = raw_slot(w, pos);
	union { struct hmsg m; unsigned char b[256]; } msg;
	uint32_t len = sizeof(struct hmsg) + 8;

	hmsg_fill(&msg.m, s, n);
	msg.m.len = len;
	memcpy(h + 1, &msg, len);
	__atomic_store_n(&h->len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&h->seq, pos + 1, __ATOMIC_RELEASE);
}

/* Is B still at it? */
static bool b_running(const struct run *r)
{
	return !r->b->stop && !r->b->a_done;
}

/* Attach to A's channel by hand: 1, or 0 when every lane is taken (after a
 * pause: try again), or -errno. */
static int raw_attach(struct run *r, struct raw *w)
{
	int ret = raw_open(r, w);

	if (ret == -EUSERS) {
		raw_close(w);
		usleep(500);
		return 0;
	}
	return ret ? BAD(r, ret, "B: attaching as a sender: %s", strerror(-ret)) : 1;
}

/* Attach, scribble over everything a sender may write, leave. */
static int scribbler(struct run *r)
{
	struct raw w;
	int k, ret;

	while (b_running(r)) {
		ret = raw_attach(r, &w);
		if (ret < 0)
			return 40;
		if (!ret)
			continue;
		for (k = 0; k < 400 && b_running(r); k++) {
			uint32_t head = raw_head(&w);
			struct lzchan_slot_hdr *h = raw_slot(&w, head);

			switch (rnd() % 6) {
			case 0:
				w.lane_map[rnd() % w.in.layout.lane_size] = rnd();
				break;
			case 1:		/* a forgery of A's next message */
				raw_forge(&w, head, rnd() % SESSIONS, rnd() % MSGS);
				break;
			case 2:		/* "ready", with an impossible length */
				h->len = rnd();
				__atomic_store_n(&h->seq, head + 1, __ATOMIC_RELEASE);
				break;
			case 3:		/* the bell: read-only; our own bit, by the module */
				(void)ioctl(w.fd, LZCHAN_IOC_RING);
				break;
			case 4:		/* the statistics line */
				memset(w.lane_map, rnd(), 64);
				break;
			default:
				raw_slot(&w, rnd())->seq = rnd();
				break;
			}
			if (!(k % 16))
				usleep(100);
		}
		raw_close(&w);
		__sync_fetch_and_add(&r->b->attacks, 1);
	}
	return 0;
}

/* Forge a few messages, let them be read, make the slot at the published
 * head look empty, leave (lzchan_hostile's hostile_close_... trick). */
static int trickster(struct run *r)
{
	struct raw w;
	uint32_t h0, k;
	int ret, spins;

	while (b_running(r)) {
		ret = raw_attach(r, &w);
		if (ret < 0)
			return 41;
		if (!ret)
			continue;
		h0 = raw_head(&w);
		for (k = 0; k < 3; k++)
			raw_forge(&w, h0 + k, 0, k);
		(void)ioctl(w.fd, LZCHAN_IOC_RING);	/* the bell, for our lane */
		/* Until the receiver has read past the first one (it may
		 * publish only later: that is the point). */
		for (spins = 0; spins < 200 && !r->b->stop; spins++) {
			if (__atomic_load_n(&raw_slot(&w, h0)->seq, __ATOMIC_ACQUIRE) != h0 + 1 ||
			    raw_head(&w) != h0)
				break;
			usleep(200);
		}
		__atomic_store_n(&raw_slot(&w, h0)->seq, h0, __ATOMIC_RELEASE);
		raw_close(&w);
		__sync_fetch_and_add(&r->b->attacks, 1);
		usleep(1000);
	}
	return 0;
}

/* One refusal that must be exactly @want. */
#define REFUSED(r, got, want, what) ({						\
	int __g = (got);							\
	if (__g != (want))							\
		return BAD(r, 42, "B: %s: %d, expected %d", what, __g, want);	\
	(r)->b->refusals++;							\
})

/* Race the lifecycle calls, try what B may not do, pin what it may map. */
static int racer(struct run *r)
{
	struct lz_geom geo = LZ_GEOM_DEFAULT;
	union { struct hmsg m; unsigned char b[256]; } msg;
	char own[LZCHAN_NAME_SIZE];
	struct lzchan *c;
	struct raw w;
	struct iovec iov;
	int i = 0, ret, p[2], st;
	pid_t pid;

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
		return BAD(r, 43, "B: pipe");
	while (b_running(r)) {
		i++;
		/* A sender that forks: the child keeps the lane mapped and
		 * sends, the parent closes at once, the child exits. */
		ret = lzchan_open(&c, r->svc, LZCHAN_SENDER, NULL);
		if (ret && ret != -EUSERS)
			return BAD(r, 44, "B: library open: %s", strerror(-ret));
		if (!ret) {
			hmsg_fill(&msg.m, 0, 0);
			lzchan_send(c, &msg, msg.m.len);
			pid = fork();
			if (pid == 0) {
				hmsg_fill(&msg.m, 1, 0);
				lzchan_send(c, &msg, msg.m.len);
				_exit(0);
			}
			lzchan_close(c);
			if (pid > 0)
				waitpid(pid, &st, 0);
		}
		/* What B may not do to A's channel. */
		REFUSED(r, lz_unlink(r->svc), -EPERM, "unlink A's channel");
		REFUSED(r, lz_open(r->svc, LZCHAN_OPEN_RECEIVER, NULL), -EACCES,
			"receive from A's channel");
		geo.flags = LZCHAN_CREATE_EXCL;
		REFUSED(r, lz_create(r->svc, geo), -EEXIST, "create A's name");
		/* Pinning its own lane: refused, the page never reaches a pipe. */
		ret = raw_open(r, &w);
		if (!ret) {
			iov.iov_base = w.lane_map;
			iov.iov_len = 4096;
			REFUSED(r, vmsplice(p[1], &iov, 1, 0) < 0 ? -errno : 0, -EFAULT,
				"vmsplice of a lane page");
			r->b->pins++;
			/* Nor may it read the receiver's areas. */
			REFUSED(r, raw_map_try(&w, w.in.layout.rx_off), -EACCES,
				"map the rx header");
			REFUSED(r, raw_map_try(&w, w.in.layout.rx_off + w.in.layout.rx_lanes +
					       (uint64_t)((w.lane + 1) % w.in.stat.max_senders) *
					       w.in.layout.rx_lane_stride), -EACCES,
				"map another lane's rx page");
			REFUSED(r, raw_map_try(&w, w.in.layout.bell_off), -EACCES,
				"map the bell");
			/* A child inherits the mappings and exits first. */
			pid = fork();
			if (pid == 0)
				_exit(0);
			if (pid > 0)
				waitpid(pid, &st, 0);
		} else if (ret != -EUSERS) {
			raw_close(&w);
			return BAD(r, 45, "B: raw open: %s", strerror(-ret));
		}
		raw_close(&w);
		/* Its own channels come and go (the flooder may hold B's
		 * whole allowance: then the kernel says so). */
		snprintf(own, sizeof(own), "b.own.%d.%d", getpid(), i);
		geo.flags = LZCHAN_CREATE_EXCL;
		ret = lz_create(own, geo);
		if (ret == 0) {
			int fd = lz_open(own, LZCHAN_OPEN_RECEIVER, NULL);

			REFUSED(r, lz_unlink(own), 0, "unlink its own channel");
			if (fd >= 0)
				close(fd);
		} else if (ret != -ENOSPC && ret != -EDQUOT) {
			return BAD(r, 46, "B: creating its own channel: %s", strerror(-ret));
		}
		usleep(500);
	}
	close(p[0]);
	close(p[1]);
	return 0;
}

/* Create channels until refused (@names of them, or all B may have),
 * returning how many, or -1 on an unexpected answer. */
static int flood(struct run *r, const char *tag, int max)
{
	struct lz_geom geo = LZ_GEOM_DEFAULT;
	char name[LZCHAN_NAME_SIZE];
	int n, ret = 0;

	geo.flags = LZCHAN_CREATE_EXCL;
	for (n = 0; n < max; n++) {
		snprintf(name, sizeof(name), "b.%s.%d", tag, n);
		ret = lz_create(name, geo);
		if (ret)
			break;
	}
	if (n < max && ret != -ENOSPC && ret != -EDQUOT)
		return BAD(r, -1, "B: flooding: %s after %d", strerror(-ret), n);
	return n;
}

static int unflood(struct run *r, const char *tag, int n)
{
	char name[LZCHAN_NAME_SIZE];
	int ret;

	while (n-- > 0) {
		snprintf(name, sizeof(name), "b.%s.%d", tag, n);
		ret = lz_unlink(name);
		if (ret)
			return BAD(r, -1, "B: unlinking its %s: %s", name, strerror(-ret));
	}
	return 0;
}

static int flooder(struct run *r)
{
	char tag[32];
	int n;

	snprintf(tag, sizeof(tag), "f%d", getpid());
	while (b_running(r)) {
		n = flood(r, tag, 4 * NS_LIMIT);
		if (n < 0 || unflood(r, tag, n))
			return 47;
		r->b->floods++;
		usleep(2000);
	}
	return 0;
}

static int (*const hostile_workers[])(struct run *) = {
	scribbler, trickster, racer, flooder,
};
#define NWORKERS	(sizeof(hostile_workers) / sizeof(hostile_workers[0]))

static int b_main(void *arg)
{
	struct run *r = arg;
	struct lz_geom geo = LZ_GEOM_DEFAULT;
	pid_t pid[NWORKERS];
	int n, ret, worst = 0, st;
	unsigned int i;

	only(r, r->b_ready[1], r->b_go[0], -1);
	setenv("LZCHAN_BACKEND", "dev", 1);
	/* Squat the name A will want, then take all B may have. */
	geo.mode = 0666;
	geo.flags = LZCHAN_CREATE_EXCL;
	ret = lz_create(r->squat, geo);
	if (ret)
		return BAD(r, 50, "B: squatting: %s", strerror(-ret));
	n = flood(r, "hold", 4 * NS_LIMIT);
	if (n < 0)
		return 51;
	r->b->b_flooded = n;
	if (ctr_signal(r->b_ready[1]) || ctr_read(r->b_go[0]))
		return 53;
	if (unflood(r, "hold", n))
		return 54;

	r->b->workers = NWORKERS;
	for (i = 0; i < NWORKERS; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			rng_state = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid() << 17;
			ret = hostile_workers[i](r);
			__sync_fetch_and_sub(&r->b->workers, 1);
			_exit(ret);
		}
		if (pid[i] < 0)
			__sync_fetch_and_sub(&r->b->workers, 1);
	}
	for (i = 0; i < NWORKERS; i++) {
		if (pid[i] < 0 || waitpid(pid[i], &st, 0) != pid[i])
			worst = 60;
		else if (!WIFEXITED(st) || WEXITSTATUS(st))
			worst = WIFEXITED(st) ? WEXITSTATUS(st) : 61;
	}
	ret = lz_unlink(r->squat);
	if (ret)
		return BAD(r, 62, "B: unlinking its squat: %s", strerror(-ret));
	return worst;
}

/* ---- tenant A's owner, in another container of its own ---- */

static int a2_main(void *arg)
{
	struct run *r = arg;
	struct lz_geom geo = LZ_GEOM_DEFAULT;
	char name[LZCHAN_NAME_SIZE];
	int i, ret;

	only(r, -1, -1, -1);
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "a2.%d", i);
		geo.flags = LZCHAN_CREATE_EXCL;
		ret = lz_create(name, geo);
		if (ret)
			return BAD(r, 70, "A's other container: channel %d: %s "
				   "(B's flood spent A's owner's allowance)", i, strerror(-ret));
	}
	return 0;
}

static int pipes(struct run *r)
{
	return pipe2(r->rx_ready, O_CLOEXEC) || pipe2(r->sess_done, O_CLOEXEC) ||
	       pipe2(r->b_ready, O_CLOEXEC) || pipe2(r->b_go, O_CLOEXEC) ||
	       pipe2(r->tx_ops, O_CLOEXEC) || pipe2(r->tx_go, O_CLOEXEC) ? -1 : 0;
}

TEST(hostile_tenant_changes_nothing_for_an_honest_one)
{
	struct ctr_spec arx = { .map = 100000, .owner = OWNER_A, .group = CTR_NOGROUP,
				.fn = rx_main };
	struct ctr_spec atx = { .map = 100000, .owner = OWNER_A, .uid = HONEST_UID,
				.gid = HONEST_UID, .group = CTR_NOGROUP, .fn = tx_main };
	struct ctr_spec a2 = { .map = 100000, .owner = OWNER_A, .group = CTR_NOGROUP,
			       .fn = a2_main };
	struct ctr_spec b = { .map = 200000, .owner = OWNER_B, .group = CTR_NOGROUP,
			      .fn = b_main };
	struct lz_param user_ch = { 0 }, ns_ch = { 0 };
	struct run r;
	pid_t prx, ptx, pb;
	int srx, stx, sb;

	LZ_NEED_DEV();
	signal(SIGPIPE, SIG_IGN);	/* a container that died: EPIPE, not death */
	if (!lz_have_userns(OWNER_A))
		SKIP(return, "no unprivileged user namespaces");
	memset(&r, 0, sizeof(r));
	r.b = mmap(NULL, sizeof(*r.b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r.b);
	ASSERT_EQ(0, pipes(&r));
	lz_setname(r.svc, lz_name("svc"));
	lz_setname(r.squat, lz_name("want"));
	lz_setname(r.side, lz_name("side"));
	arx.arg = atx.arg = a2.arg = b.arg = &r;
	/* Small allowances, so that a flood is quick. */
	ASSERT_EQ(0, lz_param_set(&user_ch, LZ_PARAMS "max_user_channels", FLOOD_LIMIT));
	ASSERT_EQ(0, lz_param_set(&ns_ch, LZ_PARAMS "max_ns_channels", NS_LIMIT));

	/* A's service. */
	prx = ctr_start(&arx);
	ASSERT_LT(0, prx);
	close(r.rx_ready[1]);	/* each writer's end lives only in its writer */
	close(r.sess_done[1]);
	ASSERT_EQ(0, ctr_read(r.rx_ready[0])) TH_LOG("A's receiver: %d %s", ctr_wait(prx), r.b->why);
	/* B joins A's IPC namespace, squats and floods. */
	b.join_ipc = prx;
	pb = ctr_start(&b);
	ASSERT_LT(0, pb);
	close(r.b_ready[1]);
	close(r.b_go[0]);
	ASSERT_EQ(0, ctr_read(r.b_ready[0])) TH_LOG("B: %d %s", ctr_wait(pb), r.b->why);
	/* While B holds all it may: A's owner, in another container of its
	 * own, and A's sender in the shared namespace, still get channels. */
	EXPECT_EQ(FLOOD_LIMIT - 1, r.b->b_flooded)
		TH_LOG("B's allowance is %d channels, its squat one of them", FLOOD_LIMIT);
	EXPECT_EQ(0, ctr_wait(ctr_start(&a2))) TH_LOG("%s", r.b->why);
	atx.join_ipc = prx;
	ptx = ctr_start(&atx);
	ASSERT_LT(0, ptx);
	close(r.tx_ops[1]);
	close(r.tx_go[0]);
	close(r.sess_done[0]);
	EXPECT_EQ(0, ctr_read(r.tx_ops[0])) TH_LOG("A's sender: %s", r.b->why);
	/* Then B attacks while A streams. */
	ASSERT_EQ(0, ctr_signal(r.b_go[1]));
	ASSERT_EQ(0, ctr_signal(r.tx_go[1]));
	stx = ctr_wait(ptx);
	srx = ctr_wait(prx);
	r.b->stop = 1;
	sb = ctr_wait(pb);
	close(r.rx_ready[0]);
	close(r.b_ready[0]);
	close(r.b_go[1]);
	close(r.tx_ops[0]);
	close(r.tx_go[1]);
	lz_param_restore(&ns_ch);
	lz_param_restore(&user_ch);
	TH_LOG("honest: %ld messages (%d sessions), %ld waits for a lane",
	       r.b->honest_msgs, SESSIONS, r.b->euser_waits);
	TH_LOG("hostile: %ld attack rounds; read: %ld messages as B's, %ld garbage, %ld ends, "
	       "%ld unattributed; %ld refusals, %ld pins refused, %ld floods",
	       r.b->attacks, r.b->hostile_msgs, r.b->hostile_bad, r.b->hostile_ends,
	       r.b->unattributed, r.b->refusals, r.b->pins, r.b->floods);
	EXPECT_EQ(0, r.b->fail_line) TH_LOG("line %d: %s", r.b->fail_line, r.b->why);
	EXPECT_EQ(0, stx);
	EXPECT_EQ(0, srx);
	EXPECT_EQ(0, sb);
	EXPECT_EQ(SESSIONS * MSGS, r.b->honest_msgs);
	EXPECT_LT(0, r.b->refusals);
}

TEST_HARNESS_MAIN
