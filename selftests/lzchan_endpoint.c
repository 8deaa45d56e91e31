// SPDX-License-Identifier: GPL-2.0-only
/*
 * Endpoints (LZCHAN_IOC_GRANT, LZCHAN_IOC_REVOKE, LZCHAN_IOC_LANES): one
 * role on one channel as a file descriptor, for a process that has no
 * /dev/lzchan and no share of the channel's IPC namespace.
 *
 *   - a "container" (user, mount and IPC namespaces of its own, uid/gid 0
 *     mapped to CTR_MAP_A, an empty tmpfs over /dev: run without --device
 *     and without --ipc=), made by root or by an unprivileged host user as
 *     rootless runtimes do, receives a sender endpoint over a socket made
 *     before it started and delivers messages with libchan
 *     (lzchan_open_fd()); the host's receiver gets them in order and sees
 *     the container's process with its host pid and host ids, and the
 *     endpoint it attached through (lzchan_peer(), LZCHAN_IOC_LANES);
 *   - inside, it has exactly what was granted: no channel by name, no
 *     other role, no command that names or makes a channel, no other
 *     lane's memory, none of the receiver's areas (the rx header, other
 *     lanes' rx pages, the bell), no write access to anything but its own
 *     lane;
 *   - revocation ends the holder's lane as a departure (the receiver gets
 *     everything sent before, then the end, LOST); the holder's mappings
 *     fault (SIGBUS; libchan: -EPIPE) and its ioctls say EKEYREVOKED;
 *   - who may revoke; endpoints passed on, attached or not; SIGKILL of
 *     holders mid-send leaks nothing; a subscriber's endpoint; revocation
 *     racing faults, mappings and ioctls of the holder.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "kselftest_harness.h"
#include "lzchan.h"
#include "lzchan_test.h"
#include "lzchan_ctr.h"

#define WAIT_NS		((int64_t)CTR_WAIT_MS * 1000000)	/* hang guard */

/* ---- raw helpers ---- */

static __u64 lz_features(void)
{
	struct lzchan_features f = { .size = sizeof(f) };
	int fd = lz_dev();
	__u64 feat = 0;

	if (fd < 0)
		return 0;
	if (!lz_ioctl(fd, LZCHAN_IOC_FEATURES, &f))
		feat = f.features;
	close(fd);
	return feat;
}

#define LZ_NEED_EP() do {						\
	LZ_NEED_DEV();							\
	if (!(lz_features() & LZCHAN_FEAT_ENDPOINT))			\
		SKIP(return, "the module has no endpoints (LZCHAN_FEAT_ENDPOINT)"); \
} while (0)

/* GRANT on @fd (@name NULL or empty: the channel @fd is bound to): the
 * endpoint, or -errno. */
static int ep_grant_on(int fd, const char *name, __u32 role, __u32 flags, __u64 *id)
{
	struct lzchan_grant g = { .size = sizeof(g), .flags = flags, .role = role };
	int ret;

	if (name)
		lz_setname(g.name, name);
	ret = lz_ioctl(fd, LZCHAN_IOC_GRANT, &g);
	if (ret)
		return ret;
	if (id)
		*id = g.id;
	return g.fd;
}

/* GRANT by name on a fresh /dev/lzchan fd (close-on-exec). */
static int ep_grant(const char *name, __u32 role, __u64 *id)
{
	int fd = lz_dev(), ret;

	if (fd < 0)
		return fd;
	ret = ep_grant_on(fd, name, role, LZCHAN_GRANT_CLOEXEC, id);
	close(fd);
	return ret;
}

/* REVOKE by name: how many were revoked, or -errno. */
static int ep_revoke(const char *name, __u64 id, __u32 flags)
{
	struct lzchan_revoke r = { .size = sizeof(r), .flags = flags, .id = id };
	int fd = lz_dev(), ret;

	if (fd < 0)
		return fd;
	lz_setname(r.name, name);
	ret = lz_ioctl(fd, LZCHAN_IOC_REVOKE, &r);
	close(fd);
	return ret ? ret : (int)r.count;
}

/* OPEN on an endpoint: no name, @role (0: the one it carries). */
static int ep_attach(int ep, __u32 role, __u32 *lane)
{
	struct lzchan_open o = { .size = sizeof(o), .flags = role,
				 .abi_version = LZCHAN_ABI_VERSION };
	int ret = lz_ioctl(ep, LZCHAN_IOC_OPEN, &o);

	if (!ret && lane)
		*lane = o.lane;
	return ret;
}

/* LANES of @name from lane 0: the number of lanes, or -errno. */
static int ep_lanes(const char *name, struct lzchan_lane_peer *rows, __u32 n)
{
	struct lzchan_lanes s = { .size = sizeof(s), .entry_size = sizeof(rows[0]),
				  .count = n, .entries = (__u64)(unsigned long)rows };
	int fd = lz_dev(), ret;

	if (fd < 0)
		return fd;
	lz_setname(s.name, name);
	memset(rows, 0, n * sizeof(rows[0]));
	ret = lz_ioctl(fd, LZCHAN_IOC_LANES, &s);
	close(fd);
	return ret ? ret : (int)s.total;
}

static int lz_peer(int fd, __u32 lane, struct lzchan_peer *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->lane = lane;
	return lz_ioctl(fd, LZCHAN_IOC_PEER, p);
}

/* Pass @fd over Unix socket @sock (one byte, SCM_RIGHTS). */
static int fd_send(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte = 'E';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;

	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* The descriptor fd_send() passed (close-on-exec), or -1. */
static int fd_recv(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct pollfd p = { .fd = sock, .events = POLLIN };
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int fd;

	if (poll(&p, 1, CTR_WAIT_MS) != 1 || recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* A 32-bit value over a pipe or socket, with ctr_read()'s bound. */
static int put_u32(int fd, __u32 v)
{
	return write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

static int get_u32(int fd, __u32 *v)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, CTR_WAIT_MS) != 1)
		return -1;
	return read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -1;
}

/* Run @fn(@arg) in a child as @uid/@gid (no capabilities left): its exit
 * status, or -1. */
static int run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
			_exit(99);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Touch @p (a load, or a store with @store) and say which signal it
 * raised: 0 (none), SIGBUS, SIGSEGV.  Per thread.
 */
static __thread sigjmp_buf touch_jmp;
static __thread volatile sig_atomic_t touch_sig;

static void touch_handler(int sig)
{
	touch_sig = sig;
	siglongjmp(touch_jmp, 1);
}

static void touch_catch(void)
{
	struct sigaction sa = { .sa_handler = touch_handler, .sa_flags = SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

static int touch(void *p, bool store)
{
	touch_sig = 0;
	if (!sigsetjmp(touch_jmp, 1)) {
		if (store)
			*(volatile __u32 *)p = 0x5a5a5a5a;
		else
			(void)*(volatile __u32 *)p;
	}
	return touch_sig;
}

/* Log what a child got wrong, and return its code. */
#define CHILD_WANT(cond, code) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "# %s:%d: child: %s failed (errno %d)\n", \
			__func__, __LINE__, #cond, errno);		\
		return code;						\
	}								\
} while (0)

/* ---- the container: no device, only an endpoint ---- */

struct job {
	char name[LZCHAN_NAME_SIZE];
	int fds[2];		/* endpoints: host [0] -> container [1] */
	int ctl[2];		/* handshakes: host [0] <-> container [1] */
	unsigned int msgs;	/* messages to send */
	bool revoke;		/* the host revokes rather than waits */
	uid_t uid;		/* the container's uid and gid inside */
	gid_t gid;
};

struct msg {
	__u32 magic;
	__u32 seq;
	__u64 check;
};

#define MSG_MAGIC	0x6c7a6570

static __u64 msg_check(__u32 seq)
{
	return (__u64)seq * 0x9e3779b97f4a7c15ULL ^ 0x0123456789abcdefULL;
}

/* What makes a process a confined one: no /dev/lzchan, no channel by
 * name (the library's and the raw way). */
static int no_device(const char *name)
{
	struct lzchan *ch;

	CHILD_WANT(access(LZCHAN_DEVICE_PATH, F_OK) && errno == ENOENT, 60);
	CHILD_WANT(open(LZCHAN_DEVICE_PATH, O_RDWR) < 0 && errno == ENOENT, 61);
	CHILD_WANT(lzchan_open(&ch, name, LZCHAN_SENDER, NULL) < 0, 62);
	CHILD_WANT(lzchan_open(&ch, name, LZCHAN_RECEIVER, NULL) < 0, 63);
	return 0;
}

/* Inside: take the endpoint, send with libchan, then close cleanly or,
 * once revoked, see the library's calls fail as after a departure. */
static int ctr_sender(void *arg)
{
	struct job *j = arg;
	struct lzchan_geom geo;
	struct lzchan *tx;
	struct msg m = { .magic = MSG_MAGIC };
	int ep, r;

	close(j->fds[0]);
	close(j->ctl[0]);
	r = no_device(j->name);
	if (r)
		return r;
	ep = lzchan_endpoint_recv(j->fds[1], CTR_WAIT_MS);
	CHILD_WANT(ep >= 0, 10);
	r = lzchan_open_fd(&tx, ep, LZCHAN_SENDER, NULL);
	CHILD_WANT(r == 0, 11);
	CHILD_WANT(!lzchan_geometry(tx, &geo) && geo.backend == LZCHAN_BACKEND_DEV, 12);
	for (m.seq = 0; m.seq < j->msgs; m.seq++) {
		m.check = msg_check(m.seq);
		r = lzchan_send_wait(tx, &m, sizeof(m), WAIT_NS);
		CHILD_WANT(r == 0, 13);
	}
	CHILD_WANT(!ctr_signal(j->ctl[1]), 14);		/* all sent */
	CHILD_WANT(!ctr_read(j->ctl[1]), 15);		/* checked, or revoked */
	if (j->revoke) {
		/* The lane was torn down under us: the library's SIGBUS
		 * guard makes that the end of the receiver, as it were. */
		r = lzchan_send(tx, &m, sizeof(m));
		CHILD_WANT(r == -EPIPE, 16);
		r = lzchan_send_wait(tx, &m, sizeof(m), WAIT_NS);
		CHILD_WANT(r == -EPIPE, 17);
	}
	lzchan_close(tx);
	return 0;
}

FIXTURE(ctr) {
	struct job j;
	struct ctr_spec s;
	struct lzchan *rx;
};

FIXTURE_VARIANT(ctr) {
	uid_t owner;		/* host user that makes it (0: root) */
	uid_t uid;		/* uid/gid inside */
};

/* 'docker run' (root's namespaces), container root. */
FIXTURE_VARIANT_ADD(ctr, root) { .owner = 0, .uid = 0 };
/* Rootless Podman: the namespaces belong to host user 1000. */
FIXTURE_VARIANT_ADD(ctr, rootless) { .owner = 1000, .uid = 0 };
/* Rootless, and 'USER 1000' inside. */
FIXTURE_VARIANT_ADD(ctr, rootless_user) { .owner = 1000, .uid = 1000 };

FIXTURE_SETUP(ctr)
{
	memset(&self->j, 0, sizeof(self->j));
	self->rx = NULL;
	self->j.fds[0] = self->j.fds[1] = self->j.ctl[0] = self->j.ctl[1] = -1;
	self->j.uid = variant->uid;
	self->j.gid = variant->uid;
	self->s = (struct ctr_spec){ .map = CTR_MAP_A, .owner = variant->owner,
				     .uid = variant->uid, .gid = variant->uid,
				     .group = CTR_NOGROUP, .no_device = true,
				     .arg = &self->j };
	if (access(LZCHAN_DEVICE_PATH, F_OK))
		return;		/* the body skips */
	setenv("LZCHAN_BACKEND", "dev", 1);
	lz_setname(self->j.name, lz_name("ep.ctr"));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, self->j.fds));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, self->j.ctl));
}

FIXTURE_TEARDOWN(ctr)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (self->j.fds[i] >= 0)
			close(self->j.fds[i]);
		if (self->j.ctl[i] >= 0)
			close(self->j.ctl[i]);
	}
	if (self->rx)
		lzchan_close(self->rx);
	if (self->j.name[0])
		lz_unlink(self->j.name);
}

/* Start the container; the host keeps its ends of the sockets only. */
static pid_t ctr_go(struct ctr_spec *s, struct job *j, int (*fn)(void *))
{
	pid_t pid;

	s->fn = fn;
	pid = ctr_start(s);
	close(j->fds[1]);
	close(j->ctl[1]);
	j->fds[1] = j->ctl[1] = -1;
	return pid;
}

#define NEED_OWNER(v) do {						\
	if ((v)->owner && !lz_have_userns((v)->owner))			\
		SKIP(return, "host user %u may not make user namespaces", (v)->owner); \
} while (0)

/* Receive @n messages in order from one lane: that lane, or ~0. */
static __u32 recv_in_order(struct lzchan *rx, unsigned int n, int *err)
{
	__u32 lane = LZCHAN_LANE_NONE, l, i;
	struct msg m;
	int r;

	*err = 0;
	for (i = 0; i < n; i++) {
		r = lzchan_recv_wait(rx, &m, sizeof(m), &l, WAIT_NS);
		if (r != sizeof(m) || m.magic != MSG_MAGIC || m.seq != i ||
		    m.check != msg_check(i) || (lane != LZCHAN_LANE_NONE && l != lane)) {
			*err = r < 0 ? r : -EBADMSG;
			fprintf(stderr, "# message %u: got %d, seq %u, lane %u (want lane %u)\n",
				i, r, r == sizeof(m) ? m.seq : 0, l, lane);
			return LZCHAN_LANE_NONE;
		}
		lane = l;
	}
	return lane;
}

TEST_F(ctr, sends_with_credentials_seen_from_the_host)
{
	struct lzchan_opts o = lz_opts(64, 256, 4);
	struct lzchan_lane_peer rows[4];
	struct msg m;
	uid_t host_uid = CTR_MAP_A + variant->uid;
	__u32 lane, l;
	int32_t pid;
	uint32_t uid, gid;
	uint64_t id = 0;
	pid_t cpid;
	int err;

	LZ_NEED_EP();
	NEED_OWNER(variant);
	self->j.msgs = 2000;	/* several rings' worth */
	ASSERT_EQ(0, lzchan_open(&self->rx, self->j.name,
				 LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	cpid = ctr_go(&self->s, &self->j, ctr_sender);
	ASSERT_LT(0, cpid);
	/* Granted on the host, sent into the container. */
	ASSERT_EQ(0, lzchan_grant_send(self->j.fds[0], self->j.name, LZCHAN_SENDER, &id));
	EXPECT_EQ(1, id);	/* the channel's first endpoint */

	lane = recv_in_order(self->rx, self->j.msgs, &err);
	ASSERT_EQ(0, err) TH_LOG("container: %d", ctr_wait(cpid));
	ASSERT_EQ(0, ctr_read(self->j.ctl[0]));	/* all sent, still attached */

	/* Who sent them, as the host sees it: the container's process by
	 * its host pid, its ids mapped to the host's. */
	ASSERT_EQ(0, lzchan_peer(self->rx, lane, &pid, &uid, &gid));
	EXPECT_EQ(cpid, pid);
	EXPECT_EQ(host_uid, uid);
	EXPECT_EQ(host_uid, gid);
	ASSERT_EQ(4, lzchan_stat_peers(self->j.name, rows, 4));
	EXPECT_EQ(LZCHAN_LANE_ATTACHED, rows[lane].state);
	EXPECT_EQ(cpid, rows[lane].pid);
	EXPECT_EQ(host_uid, rows[lane].uid);
	EXPECT_EQ(host_uid, rows[lane].gid);
	EXPECT_EQ(id, rows[lane].endpoint);
	EXPECT_EQ(1, rows[lane].gen);
	for (l = 0; l < 4; l++) {
		if (l != lane)
			EXPECT_EQ(LZCHAN_LANE_FREE, rows[l].state);
	}

	/* It closes: a clean end. */
	ASSERT_EQ(0, ctr_signal(self->j.ctl[0]));
	EXPECT_EQ(-EPIPE, lzchan_recv_wait(self->rx, &m, sizeof(m), &l, WAIT_NS));
	EXPECT_EQ(lane, l);
	EXPECT_EQ(LZCHAN_END_CLOSED, lzchan_end_cause(self->rx, lane));
	EXPECT_EQ(0, ctr_wait(cpid));
}

TEST_F(ctr, revoked_holder_fails_as_after_a_departure)
{
	struct lzchan_opts o = lz_opts(64, 1024, 4);
	struct lzchan_lane_peer rows[4];
	struct msg m;
	__u32 lane, l;
	uint64_t id = 0;
	pid_t cpid;
	int err;

	LZ_NEED_EP();
	NEED_OWNER(variant);
	self->j.msgs = 300;	/* fits the ring: all in flight at the revocation */
	self->j.revoke = true;
	ASSERT_EQ(0, lzchan_open(&self->rx, self->j.name,
				 LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	cpid = ctr_go(&self->s, &self->j, ctr_sender);
	ASSERT_LT(0, cpid);
	ASSERT_EQ(0, lzchan_grant_send(self->j.fds[0], self->j.name, LZCHAN_SENDER, &id));
	ASSERT_EQ(0, ctr_read(self->j.ctl[0])) TH_LOG("container: %d", ctr_wait(cpid));

	ASSERT_EQ(1, lzchan_revoke(self->j.name, id));
	EXPECT_EQ(0, lzchan_revoke(self->j.name, id));	/* once is enough */
	ASSERT_EQ(0, ctr_signal(self->j.ctl[0]));
	/* Everything sent before is delivered, then the end: a departure
	 * without a goodbye. */
	lane = recv_in_order(self->rx, self->j.msgs, &err);
	ASSERT_EQ(0, err);
	EXPECT_EQ(-EPIPE, lzchan_recv_wait(self->rx, &m, sizeof(m), &l, WAIT_NS));
	EXPECT_EQ(lane, l);
	EXPECT_EQ(LZCHAN_END_LOST, lzchan_end_cause(self->rx, lane));
	ASSERT_EQ(4, lzchan_stat_peers(self->j.name, rows, 4));
	EXPECT_EQ(LZCHAN_LANE_CLOSED, rows[lane].state);
	EXPECT_EQ(0, ctr_wait(cpid));
	/* Its file went with the container: nothing by that id now. */
	EXPECT_EQ(-ENOENT, lzchan_revoke(self->j.name, id));
}

/* Arguments to @cmd as a /dev/lzchan fd takes them, about @name. */
union ioc_arg {
	struct lzchan_create c;
	struct lzchan_unlink u;
	struct lzchan_list l;
	struct lzchan_usage us;
	struct lzchan_grant g;
	struct lzchan_revoke r;
	struct lzchan_lanes la;
	struct lzchan_ps_subs ps;
};

static struct lzchan_chan_stat ioc_stat[4];

static void ioc_args(union ioc_arg *a, unsigned long cmd, const char *name)
{
	memset(a, 0, sizeof(*a));
	switch (cmd) {
	case LZCHAN_IOC_CREATE:
		a->c = (struct lzchan_create){ .size = sizeof(a->c), .slot_size = 64,
					       .slot_count = 64, .max_senders = 1,
					       .numa_node = LZCHAN_NODE_LOCAL, .mode = 0600 };
		lz_setname(a->c.name, name[0] ? name : "ep.made.inside");
		break;
	case LZCHAN_IOC_UNLINK:
		a->u.size = sizeof(a->u);
		lz_setname(a->u.name, name);
		break;
	case LZCHAN_IOC_LIST:
		a->l = (struct lzchan_list){ .size = sizeof(a->l), .entry_size = sizeof(ioc_stat[0]),
					     .count = 4, .entries = (__u64)(unsigned long)ioc_stat };
		break;
	case LZCHAN_IOC_USAGE:
		a->us.size = sizeof(a->us);
		break;
	case LZCHAN_IOC_GRANT:
		a->g = (struct lzchan_grant){ .size = sizeof(a->g), .role = LZCHAN_OPEN_SENDER };
		lz_setname(a->g.name, name);
		break;
	case LZCHAN_IOC_REVOKE:
		a->r = (struct lzchan_revoke){ .size = sizeof(a->r), .flags = LZCHAN_REVOKE_ALL };
		lz_setname(a->r.name, name);
		break;
	case LZCHAN_IOC_LANES:
		a->la = (struct lzchan_lanes){ .size = sizeof(a->la),
					       .entry_size = sizeof(struct lzchan_lane_peer),
					       .count = 1,
					       .entries = (__u64)(unsigned long)ioc_stat };
		lz_setname(a->la.name, name);
		break;
	case LZCHAN_IOC_PS_SUBS:
		a->ps = (struct lzchan_ps_subs){ .size = sizeof(a->ps),
						 .entry_size = sizeof(struct lzchan_ps_sub_stat),
						 .count = 1,
						 .entries = (__u64)(unsigned long)ioc_stat };
		lz_setname(a->ps.name, name);
		break;
	}
}

/* Inside, by hand: exactly what a sender endpoint grants, no more. */
static int ctr_confined(void *arg)
{
	struct job *j = arg;
	union ioc_arg a;
	static const unsigned long refused[] = {
		LZCHAN_IOC_CREATE, LZCHAN_IOC_LIST, LZCHAN_IOC_UNLINK, LZCHAN_IOC_USAGE,
		LZCHAN_IOC_GRANT, LZCHAN_IOC_REVOKE, LZCHAN_IOC_LANES, LZCHAN_IOC_PS_SUBS,
	};
	struct lzchan_open o = { .size = sizeof(o), .abi_version = LZCHAN_ABI_VERSION };
	struct lzchan_features f = { .size = sizeof(f) };
	struct lzchan_info in;
	struct lzchan_peer p;
	struct lzchan_layout *ly = &in.layout;
	volatile struct lzchan_shm_rx_lane *rxl;
	__u32 lane, lane2, k, i;
	__u64 own;
	void *rx, *mine;
	long ps;
	int ep, r, pass;

	close(j->fds[0]);
	close(j->ctl[0]);
	touch_catch();
	r = no_device(j->name);
	if (r)
		return r;
	ep = fd_recv(j->fds[1]);
	CHILD_WANT(ep >= 0, 10);
	CHILD_WANT(!lz_ioctl(ep, LZCHAN_IOC_FEATURES, &f) &&
		   (f.features & LZCHAN_FEAT_ENDPOINT), 11);

	/* Every command that names, makes or lists a channel: EPERM, before
	 * attaching and after, with arguments that would do on a /dev/lzchan
	 * fd (the name ours, or empty: our own channel). */
	for (pass = 0; pass < 4; pass++) {
		for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			ioc_args(&a, refused[i], pass & 1 ? "" : j->name);
			CHILD_WANT(lz_ioctl(ep, refused[i], &a) == -EPERM, 20 + i);
		}
		if (pass & 1)
			continue;
		/* Another role, or a name: EPERM. */
		o.flags = LZCHAN_OPEN_RECEIVER;
		CHILD_WANT(lz_ioctl(ep, LZCHAN_IOC_OPEN, &o) == -EPERM, 30);
		o.flags = LZCHAN_OPEN_PUBLISHER;
		CHILD_WANT(lz_ioctl(ep, LZCHAN_IOC_OPEN, &o) == -EPERM, 31);
		o.flags = LZCHAN_OPEN_SUBSCRIBER;
		CHILD_WANT(lz_ioctl(ep, LZCHAN_IOC_OPEN, &o) == -EPERM, 32);
		o.flags = LZCHAN_OPEN_SENDER;
		lz_setname(o.name, j->name);
		CHILD_WANT(lz_ioctl(ep, LZCHAN_IOC_OPEN, &o) == -EPERM, 33);
		memset(o.name, 0, sizeof(o.name));
		if (pass)
			continue;
		/* Unattached, it has nothing to describe. */
		CHILD_WANT(lz_info(ep, &in) == -EBADFD, 34);
		/* Attach: its own role, given or implied. */
		CHILD_WANT(ep_attach(ep, 0, &lane) == 0, 35);
	}
	/* One attachment, ever. */
	CHILD_WANT(ep_attach(ep, LZCHAN_OPEN_SENDER, &lane2) == -EISCONN, 36);
	CHILD_WANT(ep_attach(ep, 0, &lane2) == -EISCONN, 37);
	CHILD_WANT(lz_info(ep, &in) == 0, 38);
	CHILD_WANT(in.role == LZCHAN_OPEN_SENDER && in.lane == lane, 39);
	CHILD_WANT(!strcmp(in.stat.name, j->name), 40);

	/* Credentials: its own as stamped, in its own namespaces; the
	 * receiver (host root) is not mapped here; other lanes: none of
	 * its business. */
	CHILD_WANT(lz_peer(ep, lane, &p) == 0, 41);
	CHILD_WANT(p.pid == getpid() && p.uid == j->uid && p.gid == j->gid, 42);
	CHILD_WANT(lz_peer(ep, LZCHAN_LANE_NONE, &p) == 0, 43);
	CHILD_WANT(p.uid == (__u32)lz_read_long("/proc/sys/kernel/overflowuid"), 44);
	CHILD_WANT(lz_peer(ep, (lane + 1) % in.stat.max_senders, &p) == -EPERM, 45);

	/* Its memory: a sender's, exactly.  It cannot read the receiver's
	 * areas: the rx header, the other lanes' rx pages, the bell. */
	ps = sysconf(_SC_PAGESIZE);
	own = ly->rx_off + ly->rx_lanes + (__u64)lane * ly->rx_lane_stride;
	CHILD_WANT(!lz_map(ep, ly->info_off, ly->info_size, PROT_READ | PROT_WRITE) &&
		   errno == EACCES, 50);
	CHILD_WANT(!lz_map(ep, ly->rx_off, ps, PROT_READ) && errno == EACCES, 51);
	CHILD_WANT(!lz_map(ep, ly->rx_off, ly->rx_size, PROT_READ) && errno == EACCES, 52);
	for (k = 0; k < in.stat.max_senders; k++) {
		if (k == lane)
			continue;
		CHILD_WANT(!lz_map(ep, ly->rx_off + ly->rx_lanes + (__u64)k * ly->rx_lane_stride,
				   ps, PROT_READ) && errno == EACCES, 53);
	}
	/* Its own page with the one before it (the header, or a lane's). */
	CHILD_WANT(!lz_map(ep, own - ps, 2 * ps, PROT_READ) && errno == EACCES, 54);
	CHILD_WANT(!lz_map(ep, ly->bell_off, ly->bell_size, PROT_READ) && errno == EACCES, 55);
	CHILD_WANT(!lz_map(ep, ly->bell_off, ly->bell_size, PROT_READ | PROT_WRITE) &&
		   errno == EACCES, 56);
	/* Its own lane's rx page: readable (its flow control reads it),
	 * never writable, not even later. */
	CHILD_WANT(!lz_map(ep, own, ps, PROT_READ | PROT_WRITE) && errno == EACCES, 57);
	rx = lz_map(ep, own, ps, PROT_READ);
	CHILD_WANT(rx, 58);
	CHILD_WANT(mprotect(rx, ps, PROT_READ | PROT_WRITE) && errno == EACCES, 59);
	CHILD_WANT(touch(rx, true) == SIGSEGV, 60);
	CHILD_WANT(!lz_map(ep, ly->info_off, ly->info_size, PROT_READ | PROT_EXEC) &&
		   errno == EPERM, 61);
	for (k = 0; k < in.stat.max_senders; k++) {
		if (k == lane)
			continue;
		CHILD_WANT(!lz_map(ep, ly->lanes_off + k * ly->lane_stride, ly->lane_size,
				   PROT_READ) && errno == EACCES, 62);
	}
	mine = lz_map(ep, ly->lanes_off + lane * ly->lane_stride, ly->lane_size,
		      PROT_READ | PROT_WRITE);
	CHILD_WANT(mine, 63);
	CHILD_WANT(touch((char *)mine + offsetof(struct lzchan_shm_tx, pad1), true) == 0, 64);
	munmap(mine, ly->lane_size);

	/* Attached: the host looks at who we are, writes each lane's rx
	 * words, then lets us go.  We read ours on our page. */
	CHILD_WANT(!put_u32(j->ctl[1], lane), 70);
	CHILD_WANT(!ctr_read(j->ctl[1]), 71);
	rxl = rx;
	CHILD_WANT(rxl->head == 100 + lane && rxl->attn == 200 + lane, 72);
	munmap(rx, ps);
	close(ep);
	return 0;
}

TEST_F(ctr, holds_exactly_what_was_granted)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_lane_peer rows[4];
	struct lzchan_peer p;
	uid_t host_uid = CTR_MAP_A + variant->uid;
	struct lzchan_info in;
	char *rxa;
	__u64 id;
	__u32 lane, k;
	pid_t cpid;
	int rxfd, ep;

	LZ_NEED_EP();
	NEED_OWNER(variant);
	g.flags = LZCHAN_CREATE_EXCL;
	ASSERT_EQ(0, lz_create(self->j.name, g));
	rxfd = lz_open(self->j.name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rxfd);
	ep = ep_grant(self->j.name, LZCHAN_OPEN_SENDER, &id);
	ASSERT_LE(0, ep);
	cpid = ctr_go(&self->s, &self->j, ctr_confined);
	ASSERT_LT(0, cpid);
	ASSERT_EQ(0, fd_send(self->j.fds[0], ep));
	close(ep);
	ASSERT_EQ(0, get_u32(self->j.ctl[0], &lane)) TH_LOG("container: %d", ctr_wait(cpid));
	ASSERT_GT(4, lane);

	ASSERT_EQ(4, ep_lanes(self->j.name, rows, 4));
	EXPECT_EQ(LZCHAN_LANE_ATTACHED, rows[lane].state);
	EXPECT_EQ(cpid, rows[lane].pid);
	EXPECT_EQ(host_uid, rows[lane].uid);
	EXPECT_EQ(host_uid, rows[lane].gid);
	EXPECT_EQ(id, rows[lane].endpoint);
	ASSERT_EQ(0, lz_peer(rxfd, lane, &p));
	EXPECT_EQ(cpid, p.pid);
	EXPECT_EQ(host_uid, p.uid);
	EXPECT_EQ(host_uid, p.gid);

	/* Each lane's rx words, distinct: the container checks its own. */
	ASSERT_EQ(0, lz_info(rxfd, &in));
	rxa = lz_map(rxfd, in.layout.rx_off, in.layout.rx_size, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, rxa);
	for (k = 0; k < 4; k++) {
		struct lzchan_shm_rx_lane *w =
			(void *)(rxa + in.layout.rx_lanes + k * in.layout.rx_lane_stride);

		w->head = 100 + k;
		w->attn = 200 + k;
	}
	ASSERT_EQ(0, ctr_signal(self->j.ctl[0]));
	EXPECT_EQ(0, ctr_wait(cpid));
	munmap(rxa, in.layout.rx_size);
	/* Its close was a departure like any other. */
	ASSERT_EQ(4, ep_lanes(self->j.name, rows, 4));
	EXPECT_EQ(LZCHAN_LANE_CLOSED, rows[lane].state);
	close(rxfd);
}

/* ---- granting ---- */

static int grant_as_other(void *arg)
{
	const char *name = arg;
	int ep;

	/* 0644: "other" may read (receiver), not write (sender). */
	CHILD_WANT(ep_grant(name, LZCHAN_OPEN_SENDER, NULL) == -EACCES, 10);
	ep = ep_grant(name, LZCHAN_OPEN_RECEIVER, NULL);
	CHILD_WANT(ep >= 0, 11);
	close(ep);
	return 0;
}

TEST(grant_rules)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_create c = { .size = sizeof(c), .flags = LZCHAN_CREATE_TEMP,
				   .slot_size = 64, .slot_count = 64, .max_senders = 2,
				   .numa_node = LZCHAN_NODE_LOCAL, .mode = 0600 };
	char name[LZCHAN_NAME_SIZE], temp[LZCHAN_NAME_SIZE], ps[LZCHAN_NAME_SIZE];
	struct lzchan_ps_opts po;
	struct lzchan_info in;
	struct lzchan_features f = { .size = sizeof(f) };
	union ioc_arg a;
	__u64 id1, id2, id3;
	int dev, rxfd, e1, e2, e3, fl;

	LZ_NEED_EP();
	lz_setname(name, lz_name("ep.grant"));
	lz_setname(temp, lz_name("ep.temp"));
	lz_setname(ps, lz_name("ep.ps"));
	g.mode = 0644;
	ASSERT_EQ(0, lz_create(name, g));

	/* Ids count from 1 per channel; close-on-exec as asked. */
	dev = lz_dev();
	ASSERT_LE(0, dev);
	e1 = ep_grant_on(dev, name, LZCHAN_OPEN_SENDER, 0, &id1);
	ASSERT_LE(0, e1);
	e2 = ep_grant_on(dev, name, LZCHAN_OPEN_SENDER, LZCHAN_GRANT_CLOEXEC, &id2);
	ASSERT_LE(0, e2);
	EXPECT_EQ(1, id1);
	EXPECT_EQ(2, id2);
	fl = fcntl(e1, F_GETFD);
	EXPECT_EQ(0, fl & FD_CLOEXEC);
	fl = fcntl(e2, F_GETFD);
	EXPECT_EQ(FD_CLOEXEC, fl & FD_CLOEXEC);

	/* What GRANT refuses. */
	EXPECT_EQ(-ENOENT, ep_grant_on(dev, "ep.no.such.channel", LZCHAN_OPEN_SENDER, 0, NULL));
	EXPECT_EQ(-EINVAL, ep_grant_on(dev, name, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, ep_grant_on(dev, name, LZCHAN_OPEN_SENDER | LZCHAN_OPEN_RECEIVER, 0, NULL));
	EXPECT_EQ(-EINVAL, ep_grant_on(dev, name, LZCHAN_OPEN_SENDER, 1U << 7, NULL));
	EXPECT_EQ(-EPROTOTYPE, ep_grant_on(dev, name, LZCHAN_OPEN_PUBLISHER, 0, NULL));
	EXPECT_EQ(-EPROTOTYPE, ep_grant_on(dev, name, LZCHAN_OPEN_SUBSCRIBER, 0, NULL));
	EXPECT_EQ(-EBADFD, ep_grant_on(dev, "", LZCHAN_OPEN_SENDER, 0, NULL));
	/* Nor does an endpoint grant anything. */
	EXPECT_EQ(-EPERM, ep_grant_on(e1, name, LZCHAN_OPEN_SENDER, 0, NULL));
	EXPECT_EQ(-EPERM, ep_grant_on(e1, "", LZCHAN_OPEN_SENDER, 0, NULL));

	/* A bound fd grants on its own channel, by no name. */
	rxfd = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rxfd);
	e3 = ep_grant_on(rxfd, "", LZCHAN_OPEN_SENDER, LZCHAN_GRANT_CLOEXEC, &id3);
	ASSERT_LE(0, e3);
	EXPECT_EQ(3, id3);
	EXPECT_EQ(-EISCONN, ep_grant_on(rxfd, name, LZCHAN_OPEN_SENDER, 0, NULL));

	/* The mode bits, as for OPEN. */
	EXPECT_EQ(0, run_as(3000, 3000, grant_as_other, name));

	/* A temporary channel's receiver is its creator's: not grantable. */
	ASSERT_EQ(0, lz_ioctl(dev, LZCHAN_IOC_CREATE, (lz_setname(c.name, temp), &c)));
	EXPECT_EQ(-EINVAL, ep_grant(temp, LZCHAN_OPEN_RECEIVER, NULL));
	fl = ep_grant(temp, LZCHAN_OPEN_SENDER, NULL);
	EXPECT_LE(0, fl);
	if (fl >= 0)
		close(fl);

	/* The other kind of channel's roles. */
	lzchan_ps_opts_init(&po);
	po.max_subscribers = 2;
	ASSERT_EQ(1, lzchan_ps_create(ps, &po, LZCHAN_EXCL));
	EXPECT_EQ(-EPROTOTYPE, ep_grant(ps, LZCHAN_OPEN_SENDER, NULL));
	EXPECT_EQ(-EPROTOTYPE, ep_grant(ps, LZCHAN_OPEN_RECEIVER, NULL));
	/* A publisher's endpoint lists its own channel's subscribers (its
	 * flush needs them), by no name; by name, nothing. */
	fl = ep_grant(ps, LZCHAN_OPEN_PUBLISHER, NULL);
	ASSERT_LE(0, fl);
	EXPECT_EQ(0, ep_attach(fl, LZCHAN_OPEN_PUBLISHER, NULL));
	ioc_args(&a, LZCHAN_IOC_PS_SUBS, "");
	EXPECT_EQ(0, lz_ioctl(fl, LZCHAN_IOC_PS_SUBS, &a));
	EXPECT_EQ(2, a.ps.total);
	ioc_args(&a, LZCHAN_IOC_PS_SUBS, ps);
	EXPECT_EQ(-EPERM, lz_ioctl(fl, LZCHAN_IOC_PS_SUBS, &a));
	close(fl);

	/* An endpoint that never attached goes with its last fd: nothing
	 * to revoke then. */
	close(e2);
	EXPECT_EQ(-ENOENT, ep_revoke(name, id2, 0));
	EXPECT_EQ(1, ep_revoke(name, id1, 0));
	/* Revoked before attaching: it never will. */
	EXPECT_EQ(-EKEYREVOKED, ep_attach(e1, 0, NULL));
	EXPECT_EQ(-EKEYREVOKED, ep_attach(e1, LZCHAN_OPEN_SENDER, NULL));
	EXPECT_EQ(-EKEYREVOKED, lz_info(e1, &in));
	EXPECT_EQ(0, lz_ioctl(e1, LZCHAN_IOC_FEATURES, &f));
	close(e1);
	close(e3);
	close(rxfd);
	close(dev);
	EXPECT_EQ(0, lz_unlink(name));
	lz_unlink(temp);
	EXPECT_EQ(0, lz_unlink(ps));
}

/* ---- revoking ---- */

struct holder {
	int ep;
	int ctl;		/* holder's end */
	bool receiver;
};

/* A raw sender: attach, map everything a sender may (info, its own rx
 * page, its lane), then after the revocation find every mapping gone and
 * every command refused. */
static int raw_holder(void *arg)
{
	struct holder *h = arg;
	struct lzchan_features f = { .size = sizeof(f) };
	struct lzchan_info in;
	struct lzchan_peer p;
	struct lzchan_layout l, *ly = &l;
	long ps = sysconf(_SC_PAGESIZE);
	void *info, *rx, *lane_p;
	__u32 lane;

	touch_catch();
	CHILD_WANT(ep_attach(h->ep, LZCHAN_OPEN_SENDER, &lane) == 0, 10);
	CHILD_WANT(lz_info(h->ep, &in) == 0, 11);
	l = in.layout;
	info = lz_map(h->ep, ly->info_off, ly->info_size, PROT_READ);
	rx = lz_map(h->ep, ly->rx_off + ly->rx_lanes + (__u64)lane * ly->rx_lane_stride, ps,
		    PROT_READ);
	lane_p = lz_map(h->ep, ly->lanes_off + lane * ly->lane_stride, ly->lane_size,
			PROT_READ | PROT_WRITE);
	CHILD_WANT(info && rx && lane_p, 12);
	CHILD_WANT(touch(info, false) == 0 && touch(rx, false) == 0, 13);
	CHILD_WANT(touch((char *)lane_p + offsetof(struct lzchan_shm_tx, pad1), true) == 0, 14);
	CHILD_WANT(lz_ioctl(h->ep, LZCHAN_IOC_RING, NULL) == 0, 15);
	CHILD_WANT(!put_u32(h->ctl, lane), 16);
	CHILD_WANT(!ctr_read(h->ctl), 17);		/* revoked now */

	CHILD_WANT(lz_info(h->ep, &in) == -EKEYREVOKED, 20);
	CHILD_WANT(ep_attach(h->ep, 0, NULL) == -EKEYREVOKED, 21);
	CHILD_WANT(lz_ioctl(h->ep, LZCHAN_IOC_RING, NULL) == -EKEYREVOKED, 22);
	CHILD_WANT(lz_ioctl(h->ep, LZCHAN_IOC_WAKE, NULL) == -EKEYREVOKED, 23);
	CHILD_WANT(lz_ioctl(h->ep, LZCHAN_IOC_BYE, NULL) == -EKEYREVOKED, 24);
	CHILD_WANT(lz_peer(h->ep, lane, &p) == -EKEYREVOKED, 25);
	CHILD_WANT(lz_ioctl(h->ep, LZCHAN_IOC_CREATE, NULL) == -EKEYREVOKED, 26);
	CHILD_WANT(lz_ioctl(h->ep, LZCHAN_IOC_FEATURES, &f) == 0, 27);
	CHILD_WANT(!lz_map(h->ep, ly->info_off, ly->info_size, PROT_READ) &&
		   errno == EKEYREVOKED, 28);
	/* Every mapping it had, gone: loads and stores fault. */
	CHILD_WANT(touch(info, false) == SIGBUS, 30);
	CHILD_WANT(touch(rx, false) == SIGBUS, 31);
	CHILD_WANT(touch(lane_p, false) == SIGBUS, 33);
	CHILD_WANT(touch((char *)lane_p + offsetof(struct lzchan_shm_tx, pad1), true) == SIGBUS, 34);
	close(h->ep);
	return 0;
}

static pid_t spawn(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(arg));
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;

	if (pid <= 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static __u64 status_load(const void *p)
{
	return __atomic_load_n((const __u64 *)p, __ATOMIC_ACQUIRE);
}

TEST(revoked_sender_departs_and_faults)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_lane_peer rows[4];
	struct lzchan_set_eventfd se = { .size = sizeof(se) };
	struct lzchan_info in;
	struct lzchan_shm_hdr *hdr;
	struct lzchan_shm_lane *lanes;
	struct holder h;
	struct pollfd pf;
	char name[LZCHAN_NAME_SIZE];
	__u64 id, v, departures;
	__u32 lane;
	int rxfd, efd, sv[2];
	pid_t pid;

	LZ_NEED_EP();
	lz_setname(name, lz_name("ep.revoke"));
	g.flags = LZCHAN_CREATE_EXCL;
	ASSERT_EQ(0, lz_create(name, g));
	rxfd = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rxfd);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	se.fd = efd;
	ASSERT_EQ(0, lz_ioctl(rxfd, LZCHAN_IOC_SET_EVENTFD, &se));
	ASSERT_EQ(0, lz_info(rxfd, &in));
	hdr = lz_map(rxfd, in.layout.info_off, in.layout.info_size, PROT_READ);
	ASSERT_NE(NULL, hdr);
	lanes = (void *)((char *)hdr + in.layout.info_lanes);

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	h.ep = ep_grant(name, LZCHAN_OPEN_SENDER, &id);
	ASSERT_LE(0, h.ep);
	h.ctl = sv[1];
	pid = spawn(raw_holder, &h);
	ASSERT_LT(0, pid);
	close(h.ep);
	close(sv[1]);
	ASSERT_EQ(0, get_u32(sv[0], &lane)) TH_LOG("holder: %d", wait_status(pid));
	ASSERT_GT(4, lane);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_ATTACHED), status_load(&lanes[lane].status));
	departures = status_load(&hdr->departures);
	while (read(efd, &v, sizeof(v)) == sizeof(v))
		;

	ASSERT_EQ(1, ep_revoke(name, id, 0));
	/* A departure without a goodbye: CLOSED, counted, the receiver woken. */
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_CLOSED), status_load(&lanes[lane].status));
	EXPECT_EQ(departures + 1, status_load(&hdr->departures));
	EXPECT_NE(1, lanes[lane].bye);
	pf = (struct pollfd){ .fd = efd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pf, 1, CTR_WAIT_MS));
	EXPECT_EQ(sizeof(v), read(efd, &v, sizeof(v)));
	ASSERT_EQ(4, ep_lanes(name, rows, 4));
	EXPECT_EQ(LZCHAN_LANE_CLOSED, rows[lane].state);
	EXPECT_EQ(0, rows[lane].endpoint);	/* shown for attached lanes */
	ASSERT_EQ(0, lz_info(rxfd, &in));
	EXPECT_EQ(0, in.stat.senders);
	EXPECT_LE(1, in.stat.peer_deaths);
	/* Once is enough. */
	EXPECT_EQ(0, ep_revoke(name, id, 0));
	EXPECT_EQ(0, ep_revoke(name, 0, LZCHAN_REVOKE_ALL));

	ASSERT_EQ(0, ctr_signal(sv[0]));
	EXPECT_EQ(0, wait_status(pid));
	/* The holder's exit changes nothing more. */
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_CLOSED), status_load(&lanes[lane].status));
	EXPECT_EQ(departures + 1, status_load(&hdr->departures));
	close(sv[0]);
	close(efd);
	munmap(hdr, in.layout.info_size);
	close(rxfd);
	EXPECT_EQ(0, lz_unlink(name));
}

/* A raw receiver: attach, map its rx area writable; after the
 * revocation it faults and is refused. */
static int raw_rx_holder(void *arg)
{
	struct holder *h = arg;
	struct lzchan_set_eventfd se = { .size = sizeof(se), .fd = -1 };
	struct lzchan_info in;
	void *rx;

	touch_catch();
	CHILD_WANT(ep_attach(h->ep, LZCHAN_OPEN_SENDER, NULL) == -EPERM, 9);
	CHILD_WANT(ep_attach(h->ep, LZCHAN_OPEN_RECEIVER, NULL) == 0, 10);
	CHILD_WANT(lz_info(h->ep, &in) == 0 && in.role == LZCHAN_OPEN_RECEIVER, 11);
	rx = lz_map(h->ep, in.layout.rx_off, in.layout.rx_size, PROT_READ | PROT_WRITE);
	CHILD_WANT(rx, 12);
	CHILD_WANT(touch(rx, true) == 0, 13);
	CHILD_WANT(!put_u32(h->ctl, 0), 14);
	CHILD_WANT(!ctr_read(h->ctl), 15);
	CHILD_WANT(touch(rx, true) == SIGBUS, 20);
	CHILD_WANT(lz_ioctl(h->ep, LZCHAN_IOC_SET_EVENTFD, &se) == -EKEYREVOKED, 21);
	close(h->ep);
	return 0;
}

TEST(revoked_receiver_is_gone)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_info in;
	struct lzchan_shm_hdr *hdr;
	struct holder h;
	char name[LZCHAN_NAME_SIZE];
	__u64 id, rxs;
	__u32 z;
	int txfd, rx2, sv[2];
	pid_t pid;

	LZ_NEED_EP();
	lz_setname(name, lz_name("ep.rxrev"));
	g.flags = LZCHAN_CREATE_EXCL;
	ASSERT_EQ(0, lz_create(name, g));
	txfd = lz_open(name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, txfd);
	ASSERT_EQ(0, lz_info(txfd, &in));
	hdr = lz_map(txfd, in.layout.info_off, in.layout.info_size, PROT_READ);
	ASSERT_NE(NULL, hdr);

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	h.ep = ep_grant(name, LZCHAN_OPEN_RECEIVER, &id);
	ASSERT_LE(0, h.ep);
	h.ctl = sv[1];
	pid = spawn(raw_rx_holder, &h);
	ASSERT_LT(0, pid);
	close(h.ep);
	close(sv[1]);
	ASSERT_EQ(0, get_u32(sv[0], &z)) TH_LOG("holder: %d", wait_status(pid));
	rxs = status_load(&hdr->rx_status);
	EXPECT_EQ(LZCHAN_RX_ATTACHED, LZCHAN_STATUS_STATE(rxs));
	/* Only one receiver at a time, by name or not. */
	EXPECT_EQ(-EBUSY, lz_open(name, LZCHAN_OPEN_RECEIVER, NULL));

	ASSERT_EQ(1, ep_revoke(name, id, 0));
	EXPECT_EQ(LZCHAN_STATUS(LZCHAN_STATUS_GEN(rxs), LZCHAN_RX_GONE),
		  status_load(&hdr->rx_status));
	EXPECT_EQ(-EPIPE, lz_ioctl(txfd, LZCHAN_IOC_WAKE, NULL));
	/* The role is free again for whoever may take it. */
	rx2 = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	EXPECT_LE(0, rx2);

	ASSERT_EQ(0, ctr_signal(sv[0]));
	EXPECT_EQ(0, wait_status(pid));
	if (rx2 >= 0)
		close(rx2);
	close(sv[0]);
	munmap(hdr, in.layout.info_size);
	close(txfd);
	EXPECT_EQ(0, lz_unlink(name));
}

/* Who may revoke: the granter (same euid), the channel's owner or
 * creator, CAP_SYS_ADMIN; nobody else. */
struct perm {
	char name[LZCHAN_NAME_SIZE];
	__u64 id;
	int want;
	__u32 flags;
	int sock;		/* grant_and_pass: where to pass the endpoint */
	__u64 *id_out;
};

static int revoke_as(void *arg)
{
	struct perm *p = arg;
	int r = ep_revoke(p->name, p->id, p->flags);

	if (r != p->want)
		fprintf(stderr, "# revoke of %llu (flags %u) as uid %d: %d, want %d\n",
			(unsigned long long)p->id, p->flags, (int)getuid(), r, p->want);
	return r == p->want ? 0 : 10;
}

static int create_as(void *arg)
{
	struct perm *p = arg;
	struct lz_geom g = LZ_GEOM_DEFAULT;

	g.mode = 0666;
	g.flags = LZCHAN_CREATE_EXCL;
	return lz_create(p->name, g) ? 10 : 0;
}

/* Grant a sender endpoint, pass it (and its id) to the test, which
 * keeps it: the endpoint lives with its fd. */
static int grant_and_pass(void *arg)
{
	struct perm *p = arg;
	__u64 id;
	int ep = ep_grant(p->name, LZCHAN_OPEN_SENDER, &id);

	CHILD_WANT(ep >= 0, 10);
	CHILD_WANT(!fd_send(p->sock, ep), 11);
	CHILD_WANT(write(p->sock, &id, sizeof(id)) == sizeof(id), 12);
	return 0;
}

static int take_grant(int sock, __u64 *id)
{
	struct pollfd pf = { .fd = sock, .events = POLLIN };
	int ep = fd_recv(sock);

	if (ep < 0 || poll(&pf, 1, CTR_WAIT_MS) != 1 ||
	    read(sock, id, sizeof(*id)) != sizeof(*id))
		return -1;
	return ep;
}

TEST(revoke_permissions)
{
	struct perm p;
	char owned_by_5000[LZCHAN_NAME_SIZE];
	__u64 id_a, id_b, id_c, id_d;
	int sv[2], ep_a, ep_b, ep_c, ep_d;

	LZ_NEED_EP();
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	memset(&p, 0, sizeof(p));
	lz_setname(p.name, lz_name("ep.perm"));
	{
		struct lz_geom g = LZ_GEOM_DEFAULT;

		g.mode = 0666;
		ASSERT_EQ(0, lz_create(p.name, g));	/* root's */
	}
	/* uid 2000 grants (it may open the channel as a sender). */
	p.sock = sv[1];
	ASSERT_EQ(0, run_as(2000, 2000, grant_and_pass, &p));
	ep_a = take_grant(sv[0], &id_a);
	ASSERT_LE(0, ep_a);
	ep_b = ep_grant(p.name, LZCHAN_OPEN_SENDER, &id_b);	/* root's grant */
	ASSERT_LE(0, ep_b);

	/* uid 3000: neither granter, owner nor creator. */
	p.id = id_a;
	p.want = -EPERM;
	EXPECT_EQ(0, run_as(3000, 3000, revoke_as, &p));
	p.id = 0;
	p.flags = LZCHAN_REVOKE_ALL;
	EXPECT_EQ(0, run_as(3000, 3000, revoke_as, &p));
	/* Malformed, or no such endpoint (for anyone). */
	p.flags = 0;
	p.id = 0;
	p.want = -EINVAL;
	EXPECT_EQ(0, run_as(3000, 3000, revoke_as, &p));
	p.id = 12345;
	p.flags = LZCHAN_REVOKE_ALL;
	EXPECT_EQ(0, run_as(3000, 3000, revoke_as, &p));
	p.flags = 0;
	p.want = -ENOENT;
	EXPECT_EQ(0, run_as(3000, 3000, revoke_as, &p));
	EXPECT_EQ(-ENOENT, ep_revoke(p.name, 12345, 0));
	/* uid 2000 may revoke its own grant, not root's. */
	p.id = id_b;
	p.want = -EPERM;
	EXPECT_EQ(0, run_as(2000, 2000, revoke_as, &p));
	/* ALL revokes what it may: its own. */
	p.id = 0;
	p.flags = LZCHAN_REVOKE_ALL;
	p.want = 1;
	EXPECT_EQ(0, run_as(2000, 2000, revoke_as, &p));
	EXPECT_EQ(-EKEYREVOKED, ep_attach(ep_a, 0, NULL));
	EXPECT_EQ(0, ep_attach(ep_b, 0, NULL));		/* untouched */
	/* The owner revokes anyone's. */
	EXPECT_EQ(1, ep_revoke(p.name, id_b, 0));
	close(ep_a);
	close(ep_b);
	EXPECT_EQ(0, lz_unlink(p.name));

	/* A channel of uid 5000's: its owner revokes uid 2000's grant;
	 * root (CAP_SYS_ADMIN) too. */
	lz_setname(owned_by_5000, lz_name("ep.perm5000"));
	memcpy(p.name, owned_by_5000, sizeof(p.name));
	ASSERT_EQ(0, run_as(5000, 5000, create_as, &p));
	ASSERT_EQ(0, run_as(2000, 2000, grant_and_pass, &p));
	ep_c = take_grant(sv[0], &id_c);
	ASSERT_LE(0, ep_c);
	ASSERT_EQ(0, run_as(2000, 2000, grant_and_pass, &p));
	ep_d = take_grant(sv[0], &id_d);
	ASSERT_LE(0, ep_d);
	EXPECT_NE(id_c, id_d);
	p.id = id_c;
	p.flags = 0;
	p.want = -EPERM;
	EXPECT_EQ(0, run_as(3000, 3000, revoke_as, &p));
	p.want = 1;
	EXPECT_EQ(0, run_as(5000, 5000, revoke_as, &p));
	EXPECT_EQ(1, ep_revoke(p.name, id_d, 0));
	EXPECT_EQ(-EKEYREVOKED, ep_attach(ep_c, 0, NULL));
	EXPECT_EQ(-EKEYREVOKED, ep_attach(ep_d, 0, NULL));
	close(ep_c);
	close(ep_d);
	close(sv[0]);
	close(sv[1]);
	EXPECT_EQ(0, lz_unlink(p.name));
}

/* ---- passing an endpoint on ---- */

struct relay {
	int in;			/* receive the endpoint here */
	int out;		/* pass it on here (middle), or -1 */
	int ctl;		/* report here */
	const char *name;
	bool attached;		/* it arrives attached already */
	__u32 lane;		/* ... on this lane */
};

/* Pass it on without touching it. */
static int relay_middle(void *arg)
{
	struct relay *r = arg;
	int ep = fd_recv(r->in);

	CHILD_WANT(ep >= 0, 10);
	CHILD_WANT(!fd_send(r->out, ep), 11);
	close(ep);
	return 0;
}

/* The last holder: attach (or find it attached), report, stay. */
static int relay_last(void *arg)
{
	struct relay *r = arg;
	struct lzchan_info in;
	struct lzchan_layout *ly = &in.layout;
	__u32 lane;
	void *p;
	int ep = fd_recv(r->in);

	CHILD_WANT(ep >= 0, 10);
	if (r->attached) {
		/* The same lane, not a second one. */
		CHILD_WANT(ep_attach(ep, 0, &lane) == -EISCONN, 11);
		CHILD_WANT(lz_info(ep, &in) == 0, 12);
		CHILD_WANT(in.role == LZCHAN_OPEN_SENDER && in.lane == r->lane, 13);
		lane = in.lane;
	} else {
		CHILD_WANT(ep_attach(ep, 0, &lane) == 0, 14);
		CHILD_WANT(lz_info(ep, &in) == 0, 15);
	}
	p = lz_map(ep, ly->lanes_off + lane * ly->lane_stride, ly->lane_size,
		   PROT_READ | PROT_WRITE);
	CHILD_WANT(p, 16);
	munmap(p, ly->lane_size);
	CHILD_WANT(!lz_map(ep, ly->lanes_off + ((lane + 1) % in.stat.max_senders) *
			   ly->lane_stride, ly->lane_size, PROT_READ) && errno == EACCES, 17);
	CHILD_WANT(!put_u32(r->ctl, lane), 18);
	CHILD_WANT(!ctr_read(r->ctl), 19);
	close(ep);
	return 0;
}

/* The first holder of an endpoint that it attaches, then passes on. */
static int relay_first_attach(void *arg)
{
	struct relay *r = arg;
	__u32 lane;
	int ep = fd_recv(r->in);

	CHILD_WANT(ep >= 0, 10);
	CHILD_WANT(ep_attach(ep, LZCHAN_OPEN_SENDER, &lane) == 0, 11);
	CHILD_WANT(!put_u32(r->ctl, lane), 12);
	CHILD_WANT(!fd_send(r->out, ep), 13);
	close(ep);
	return 0;
}

/* The channel's mode keeps this user out by name. */
static int open_refused(void *arg)
{
	return lz_open(arg, LZCHAN_OPEN_SENDER, NULL) == -EACCES ? 0 : 10;
}

static pid_t spawn_as(uid_t uid, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(99);
		_exit(fn(arg));
	}
	return pid;
}

TEST(passed_on_unattached_attaches_as_its_last_holder)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_lane_peer rows[4];
	struct lzchan_peer pr;
	struct relay mid, last;
	char name[LZCHAN_NAME_SIZE];
	int a[2], b[2], c[2], rxfd, ep;
	pid_t pm, pl;
	__u64 id;
	__u32 lane;

	LZ_NEED_EP();
	lz_setname(name, lz_name("ep.pass"));
	g.flags = LZCHAN_CREATE_EXCL;
	ASSERT_EQ(0, lz_create(name, g));	/* 0600, root's */
	rxfd = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rxfd);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c));
	/* root grants; uid 3000 relays; uid 4000, which could not open the
	 * channel itself, attaches. */
	mid = (struct relay){ .in = a[1], .out = b[0], .ctl = -1, .name = name };
	last = (struct relay){ .in = b[1], .out = -1, .ctl = c[1], .name = name };
	pm = spawn_as(3000, relay_middle, &mid);
	ASSERT_LT(0, pm);
	pl = spawn_as(4000, relay_last, &last);
	ASSERT_LT(0, pl);
	ep = ep_grant(name, LZCHAN_OPEN_SENDER, &id);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, fd_send(a[0], ep));
	close(ep);
	EXPECT_EQ(0, wait_status(pm));
	ASSERT_EQ(0, get_u32(c[0], &lane)) TH_LOG("last holder: %d", wait_status(pl));
	ASSERT_GT(4, lane);

	/* Stamped at attach: the last holder's credentials. */
	ASSERT_EQ(4, ep_lanes(name, rows, 4));
	EXPECT_EQ(LZCHAN_LANE_ATTACHED, rows[lane].state);
	EXPECT_EQ(pl, rows[lane].pid);
	EXPECT_EQ(4000, rows[lane].uid);
	EXPECT_EQ(4000, rows[lane].gid);
	EXPECT_EQ(id, rows[lane].endpoint);
	ASSERT_EQ(0, lz_peer(rxfd, lane, &pr));
	EXPECT_EQ(pl, pr.pid);
	EXPECT_EQ(4000, pr.uid);
	/* By name it still may not. */
	EXPECT_EQ(0, run_as(4000, 4000, open_refused, name));

	ASSERT_EQ(0, ctr_signal(c[0]));
	EXPECT_EQ(0, wait_status(pl));
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(c[0]);
	close(c[1]);
	close(rxfd);
	EXPECT_EQ(0, lz_unlink(name));
}

TEST(passed_on_attached_is_the_same_lane)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_lane_peer rows[4];
	struct lzchan_info in;
	struct lzchan_shm_lane *lanes;
	struct relay first, last;
	char name[LZCHAN_NAME_SIZE];
	int a[2], b[2], c[2], d[2], rxfd, ep;
	void *hdr;
	pid_t pf, pl;
	__u32 lane, lane2;

	LZ_NEED_EP();
	lz_setname(name, lz_name("ep.pass2"));
	g.flags = LZCHAN_CREATE_EXCL;
	ASSERT_EQ(0, lz_create(name, g));
	rxfd = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rxfd);
	ASSERT_EQ(0, lz_info(rxfd, &in));
	hdr = lz_map(rxfd, in.layout.info_off, in.layout.info_size, PROT_READ);
	ASSERT_NE(NULL, hdr);
	lanes = (void *)((char *)hdr + in.layout.info_lanes);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d));
	first = (struct relay){ .in = a[1], .out = b[0], .ctl = c[1], .name = name };
	pf = spawn_as(3000, relay_first_attach, &first);
	ASSERT_LT(0, pf);
	ep = ep_grant(name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, fd_send(a[0], ep));
	close(ep);
	ASSERT_EQ(0, get_u32(c[0], &lane)) TH_LOG("first holder: %d", wait_status(pf));
	ASSERT_GT(4, lane);
	last = (struct relay){ .in = b[1], .out = -1, .ctl = d[1], .name = name,
			       .attached = true, .lane = lane };
	pl = spawn_as(4000, relay_last, &last);
	ASSERT_LT(0, pl);
	ASSERT_EQ(0, get_u32(d[0], &lane2)) TH_LOG("last holder: %d", wait_status(pl));
	EXPECT_EQ(lane, lane2);
	EXPECT_EQ(0, wait_status(pf));

	/* The first holder is gone; the lane lives on in the file the last
	 * one holds, still stamped with who attached it. */
	ASSERT_EQ(4, ep_lanes(name, rows, 4));
	EXPECT_EQ(LZCHAN_LANE_ATTACHED, rows[lane].state);
	EXPECT_EQ(3000, rows[lane].uid);
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_ATTACHED), status_load(&lanes[lane].status));
	ASSERT_EQ(0, ctr_signal(d[0]));
	EXPECT_EQ(0, wait_status(pl));
	/* Its last holder closed it: one departure. */
	EXPECT_EQ(LZCHAN_STATUS(1, LZCHAN_LANE_CLOSED), status_load(&lanes[lane].status));
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(c[0]);
	close(c[1]);
	close(d[0]);
	close(d[1]);
	munmap(hdr, in.layout.info_size);
	close(rxfd);
	EXPECT_EQ(0, lz_unlink(name));
}

/* ---- SIGKILL mid-send ---- */

#define KILL_SENDERS	4

struct kmsg {
	__u32 sender;
	__u32 seq;
};

static void kill_sender(int ep, __u32 me)
{
	struct kmsg m = { .sender = me };
	struct lzchan *tx;

	if (lzchan_open_fd(&tx, ep, LZCHAN_SENDER, NULL))
		_exit(10);
	/* Until killed: the receiver drains what it can. */
	for (;; m.seq++)
		if (lzchan_send_wait(tx, &m, sizeof(m), WAIT_NS))
			_exit(11);
}

/* Wait (a hang guard, no timing asserted) for a module counter to read @want. */
static long counter_settles(const char *file, long want)
{
	long v = -1;
	int i;

	for (i = 0; i < 1000; i++) {
		v = lz_read_long(file);
		if (v == want)
			break;
		usleep(10000);
	}
	return v;
}

TEST(sigkill_mid_send_leaks_nothing)
{
	struct lzchan_opts o = lz_opts(64, 128, KILL_SENDERS);
	__u32 next[KILL_SENDERS] = { 0 }, lane_of[KILL_SENDERS], ended = 0, i, lane;
	pid_t pid[KILL_SENDERS];
	char name[LZCHAN_NAME_SIZE];
	struct lzchan *rx;
	struct kmsg m;
	long pages0, chans0;
	int fds0, r, victim, ep, st;
	__u32 threshold;
	bool killed = false, all_killed = false;
	uint64_t seed;

	LZ_NEED_EP();
	setenv("LZCHAN_BACKEND", "dev", 1);
	pages0 = lz_read_long(LZ_SYSFS "pages");
	chans0 = lz_read_long(LZ_SYSFS "channels");
	fds0 = lz_dir_entries("/proc/self/fd");
	ASSERT_LE(0, pages0);
	seed = ((uint64_t)time(NULL) << 20) ^ getpid() ^ 0x9e3779b97f4a7c15ULL;
	victim = lz_xorshift(&seed) % KILL_SENDERS;
	threshold = 100 + lz_xorshift(&seed) % 1500;
	TH_LOG("victim sender %d, killed after %u or more of its messages, once every sender sent", victim, threshold);

	lz_setname(name, lz_name("ep.kill"));
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	for (i = 0; i < KILL_SENDERS; i++) {
		lane_of[i] = LZCHAN_LANE_NONE;
		ep = lzchan_grant(name, LZCHAN_SENDER, 0, NULL);
		ASSERT_LE(0, ep);
		pid[i] = fork();
		if (pid[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			kill_sender(ep, i);
		}
		ASSERT_LT(0, pid[i]);
		close(ep);
	}

	while (ended < KILL_SENDERS) {
		r = lzchan_recv_wait(rx, &m, sizeof(m), &lane, WAIT_NS);
		if (r == -EPIPE) {
			/* Only the killed end, each once, each a death. */
			ASSERT_TRUE(killed);
			if (!all_killed)
				ASSERT_EQ(lane_of[victim], lane);
			EXPECT_EQ(LZCHAN_END_LOST, lzchan_end_cause(rx, lane));
			ended++;
			if (!all_killed) {
				/* The others, mid-send too. */
				for (i = 0; i < KILL_SENDERS; i++)
					if ((int)i != victim)
						kill(pid[i], SIGKILL);
				all_killed = true;
			}
			continue;
		}
		ASSERT_EQ(sizeof(m), r) TH_LOG("receive: %d", r);
		ASSERT_GT(KILL_SENDERS, m.sender);
		ASSERT_EQ(next[m.sender], m.seq);
		if (lane_of[m.sender] == LZCHAN_LANE_NONE)
			lane_of[m.sender] = lane;
		ASSERT_EQ(lane_of[m.sender], lane);
		next[m.sender]++;
		/* Not before every sender attached and sent: one killed
		 * before its attach leaves no lane, and no end to wait for
		 * (a slow machine gets there). */
		for (i = 0; i < KILL_SENDERS && next[i]; i++)
			;
		if (!killed && i == KILL_SENDERS && next[victim] >= threshold) {
			kill(pid[victim], SIGKILL);
			killed = true;
		}
	}
	for (i = 0; i < KILL_SENDERS; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	lzchan_close(rx);
	EXPECT_EQ(0, lzchan_unlink(name));
	/* Every endpoint's file went with its process, the channel with the
	 * last of them: nothing held. */
	EXPECT_EQ(pages0, counter_settles(LZ_SYSFS "pages", pages0));
	EXPECT_EQ(chans0, counter_settles(LZ_SYSFS "channels", chans0));
	EXPECT_EQ(fds0, lz_dir_entries("/proc/self/fd"));
}

/* ---- publish/subscribe ---- */

#define PS_MSGS	100

static int ps_subscriber(void *arg)
{
	struct holder *h = arg;
	struct lzchan *sub;
	__u32 i, lane, v;
	int r;

	CHILD_WANT(lzchan_open_fd(&sub, h->ep, LZCHAN_SUBSCRIBER, NULL) == 0, 10);
	CHILD_WANT(!put_u32(h->ctl, 0), 11);
	for (i = 0; i < PS_MSGS; i++) {
		r = lzchan_recv_wait(sub, &v, sizeof(v), &lane, WAIT_NS);
		CHILD_WANT(r == sizeof(v) && v == i * 7 + 1, 12);
	}
	CHILD_WANT(!put_u32(h->ctl, i), 13);
	CHILD_WANT(!ctr_read(h->ctl), 14);		/* revoked */
	/* Its place was closed and its mappings torn down: an end. */
	r = lzchan_recv(sub, &v, sizeof(v), &lane);
	CHILD_WANT(r == -EPIPE || r == -EIO, 15);
	r = lzchan_recv(sub, &v, sizeof(v), &lane);
	CHILD_WANT(r == -EPIPE || r == -EIO, 16);
	lzchan_close(sub);
	return 0;
}

static int ps_subs(const char *name, struct lzchan_ps_sub_stat *s, __u32 n)
{
	struct lzchan_ps_subs q = { .size = sizeof(q), .entry_size = sizeof(s[0]),
				    .count = n, .entries = (__u64)(unsigned long)s };
	int fd = lz_dev(), ret;

	if (fd < 0)
		return fd;
	lz_setname(q.name, name);
	ret = lz_ioctl(fd, LZCHAN_IOC_PS_SUBS, &q);
	close(fd);
	return ret ? ret : (int)q.total;
}

TEST(subscriber_endpoint_receives_until_revoked)
{
	struct lzchan_ps_sub_stat subs[2];
	struct lzchan_ps_opts po;
	struct lzchan *pub;
	struct holder h;
	char name[LZCHAN_NAME_SIZE];
	__u32 i, v, place = 0, got;
	uint64_t id;
	int sv[2];
	pid_t pid;

	LZ_NEED_EP();
	setenv("LZCHAN_BACKEND", "dev", 1);
	lz_setname(name, lz_name("ep.ps"));
	lzchan_ps_opts_init(&po);
	po.slot_size = 64;
	po.slot_count = 256;		/* more than PS_MSGS: nothing overwritten */
	po.max_subscribers = 2;
	ASSERT_EQ(1, lzchan_ps_create(name, &po, LZCHAN_EXCL));
	ASSERT_EQ(0, lzchan_open(&pub, name, LZCHAN_PUBLISHER, NULL));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	h.ep = lzchan_grant(name, LZCHAN_SUBSCRIBER, 0, &id);
	ASSERT_LE(0, h.ep);
	h.ctl = sv[1];
	pid = spawn(ps_subscriber, &h);
	ASSERT_LT(0, pid);
	close(h.ep);
	close(sv[1]);
	ASSERT_EQ(0, get_u32(sv[0], &v)) TH_LOG("subscriber: %d", wait_status(pid));
	for (i = 0; i < PS_MSGS; i++) {
		v = i * 7 + 1;
		ASSERT_EQ(0, lzchan_send(pub, &v, sizeof(v)));
	}
	ASSERT_EQ(0, get_u32(sv[0], &got)) TH_LOG("subscriber: %d", wait_status(pid));
	EXPECT_EQ(PS_MSGS, got);
	ASSERT_EQ(2, ps_subs(name, subs, 2));
	for (i = 0; i < 2; i++)
		if (subs[i].state == LZCHAN_LANE_ATTACHED)
			place = i;
	EXPECT_EQ(LZCHAN_LANE_ATTACHED, subs[place].state);
	EXPECT_EQ(pid, subs[place].pid);

	ASSERT_EQ(1, lzchan_revoke(name, id));
	ASSERT_EQ(2, ps_subs(name, subs, 2));
	EXPECT_EQ(LZCHAN_LANE_CLOSED, subs[place].state);
	/* Nothing else changes: the publisher goes on. */
	v = 0;
	EXPECT_EQ(0, lzchan_send(pub, &v, sizeof(v)));
	ASSERT_EQ(0, ctr_signal(sv[0]));
	EXPECT_EQ(0, wait_status(pid));
	close(sv[0]);
	lzchan_close(pub);
	EXPECT_EQ(0, lzchan_unlink(name));
}

/* ---- revocation racing the holder ---- */

struct race {
	int ep;
	__u32 lane;
	struct lzchan_layout ly;
	void *held;		/* a mapping kept across the revocation */
	int mapped, faults, bad;	/* the mapper's */
	int bad_ioctl;			/* the other thread's */
};

/* Map, touch, unmap the lane until mmap says it is revoked. */
static void *race_mapper(void *arg)
{
	struct race *r = arg;
	__u64 off = r->ly.lanes_off + r->lane * r->ly.lane_stride;
	char *p;
	int sig;

	touch_catch();
	for (;;) {
		p = lz_map(r->ep, off, r->ly.lane_size, PROT_READ | PROT_WRITE);
		if (!p) {
			if (errno != EKEYREVOKED)
				r->bad++;
			break;
		}
		__atomic_add_fetch(&r->mapped, 1, __ATOMIC_RELEASE);
		sig = touch(p + offsetof(struct lzchan_shm_tx, pad1), true);
		if (sig == SIGBUS)
			r->faults++;
		else if (sig)
			r->bad++;
		sig = touch(r->held, false);
		if (sig == SIGBUS)
			r->faults++;
		else if (sig)
			r->bad++;
		munmap(p, r->ly.lane_size);
	}
	return NULL;
}

static void *race_ioctls(void *arg)
{
	struct race *r = arg;
	struct lzchan_info in;
	int ret;

	/* Ring and ask until refused. */
	do {
		ret = lz_ioctl(r->ep, LZCHAN_IOC_RING, NULL);
		if (!ret)
			ret = lz_info(r->ep, &in);
	} while (!ret);
	if (ret != -EKEYREVOKED)
		r->bad_ioctl++;
	return NULL;
}

/*
 * Each round: a fresh endpoint attached here, one thread mapping and
 * touching its lane (and touching a mapping kept across the round),
 * another ringing and asking, while this one revokes once the mapper is
 * under way.  At least 200 rounds, and on for LZCHAN_RACE_SECONDS when
 * the rig sets it (the debug kernel: its checkers watch the races).
 */
static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

TEST(revocation_races_faults_maps_and_ioctls)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	char name[LZCHAN_NAME_SIZE];
	const char *env = getenv("LZCHAN_RACE_SECONDS");
	double until = now_s() + (env ? atof(env) : 0), t0;
	int round, spin, k;
	long maps = 0, faults = 0;
	uint64_t seed = 0x5eed0000ULL ^ getpid();
	pthread_t t1, t2;
	struct lzchan_info in;
	struct race r;
	__u64 id;

	LZ_NEED_EP();
	lz_setname(name, lz_name("ep.race"));
	g.flags = LZCHAN_CREATE_EXCL;
	g.max_senders = 2;
	ASSERT_EQ(0, lz_create(name, g));
	touch_catch();
	for (round = 0; round < 200 || now_s() < until; round++) {
		memset(&r, 0, sizeof(r));
		r.ep = ep_grant(name, LZCHAN_OPEN_SENDER, &id);
		ASSERT_LE(0, r.ep);
		/* No receiver: a closed lane is taken again at once. */
		ASSERT_EQ(0, ep_attach(r.ep, 0, &r.lane)) TH_LOG("round %d", round);
		ASSERT_EQ(0, lz_info(r.ep, &in));
		r.ly = in.layout;
		r.held = lz_map(r.ep, r.ly.info_off, r.ly.info_size, PROT_READ);
		ASSERT_NE(NULL, r.held);
		ASSERT_EQ(0, pthread_create(&t1, NULL, race_mapper, &r));
		ASSERT_EQ(0, pthread_create(&t2, NULL, race_ioctls, &r));
		/* Once the mapper is at it (a hang guard bounds the wait),
		 * a random while more, then revoke. */
		t0 = now_s();
		while (!__atomic_load_n(&r.mapped, __ATOMIC_ACQUIRE) && now_s() < t0 + 60)
			sched_yield();
		spin = lz_xorshift(&seed) % 2000;
		for (k = 0; k < spin; k++)
			if (!(k & 63))
				sched_yield();
		ASSERT_EQ(1, ep_revoke(name, id, 0));
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
		EXPECT_EQ(0, r.bad) TH_LOG("round %d", round);
		EXPECT_EQ(0, r.bad_ioctl) TH_LOG("round %d", round);
		EXPECT_LT(0, r.mapped);
		maps += r.mapped;
		faults += r.faults;
		/* Whatever raced, afterwards every mapping faults. */
		EXPECT_EQ(SIGBUS, touch(r.held, false));
		munmap(r.held, r.ly.info_size);
		close(r.ep);
	}
	TH_LOG("%d rounds: %ld mappings made, %ld accesses faulted on revoked mappings",
	       round, maps, faults);
	EXPECT_EQ(0, lz_unlink(name));
}

TEST_HARNESS_MAIN
