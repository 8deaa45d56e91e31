// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Endpoints: one role on one channel as a file descriptor (the dev
 * backend, a module with LZCHAN_FEAT_ENDPOINT; on shm, the nearest the
 * fallback has: the channel file itself, see __lz_ep_shm_grant()).  lzchan_grant() asks the
 * module for one (LZCHAN_IOC_GRANT), lzchan_revoke() takes it back
 * (LZCHAN_IOC_REVOKE), lzchan_grant_send() and lzchan_endpoint_recv() pass
 * one over a Unix socket, lzchan_stat_peers() says who is on each lane
 * (LZCHAN_IOC_LANES).  lzchan_open_fd(), which makes a handle from an
 * endpoint, is with the other opens (lzchan_setup.c).
 *
 * The message lzchan_grant_send() sends is one struct __lz_ep_msg, with
 * the endpoint as its one SCM_RIGHTS descriptor.  lzchan_endpoint_recv()
 * trusts none of it: the peer may be anyone who can reach the socket.
 * Anything but exactly that -- the exact size, magic and version, a role
 * and a name that are valid, exactly one descriptor, nothing truncated,
 * and a descriptor that is an lzchan endpoint -- is -EPROTO, and every
 * descriptor that came with it is closed.
 *
 * Floor 4: above lzchan_file.c only, beside lzchan_stat.c, below opening
 * (the floors: Documentation/libchan/design.rst, "The library's floors").
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lzchan_internal.h"

#define LZ_EP_MAGIC	"LZCHANEP"	/* 8 bytes, no NUL */
#define LZ_EP_VERSION	1U

/* The endpoint message's bytes (host order: a Unix socket stays on the
 * host).  Fixed size; the name NUL-terminated and NUL-padded. */
struct __lz_ep_msg {
	char magic[8];			/* LZ_EP_MAGIC */
	uint32_t version;		/* LZ_EP_VERSION */
	uint32_t role;			/* one LZCHAN_OPEN_* */
	char name[LZCHAN_NAME_SIZE];	/* the channel's, as granted */
};

_Static_assert(sizeof(struct __lz_ep_msg) == 80, "the endpoint message is 80 bytes");

/* Descriptors one message may bring that we look at (and close) at most:
 * a control buffer for this many, so that a message with two or more is
 * seen as such rather than truncated. */
#define LZ_EP_FDS_MAX	16

/* A pidfd that SO_PASSPIDFD adds to every message (6.5): closed, known
 * to this library even where the headers it was built with are older. */
#ifndef SCM_PIDFD
#define SCM_PIDFD	0x04
#endif

/* /dev/lzchan, checked for endpoints: the fd, or -ENOENT (shm backend),
 * -EOPNOTSUPP (a module without them), or the error opening it. */
static int __lz_ep_dev(void)
{
	struct lzchan_features ft = { .size = sizeof(ft) };
	int fd = __lzchan_pick();

	if (fd < 0)
		return fd;
	if (ioctl(fd, LZCHAN_IOC_FEATURES, &ft) < 0 || !(ft.features & LZCHAN_FEAT_ENDPOINT)) {
		close(fd);
		return -EOPNOTSUPP;
	}
	return fd;
}

/* Does @hdr (read from a shm channel file) say a channel of the kind
 * @role takes?  0, -EPROTOTYPE (the other kind), -EPROTO (no channel). */
static int __lz_ep_shm_kind(const struct __lzchan_shm_file *hdr, unsigned int role)
{
	if (hdr->magic != SHM_FILE_MAGIC)
		return -EPROTO;
	if (!(hdr->flags & SHM_FILE_PUBSUB) != (role == LZCHAN_SENDER || role == LZCHAN_RECEIVER))
		return -EPROTOTYPE;
	return 0;
}

/*
 * shm: the nearest thing to an endpoint the fallback has is the channel
 * file itself, opened anew (an open file description of its own: the
 * holder's locks are its own).  It carries no role and no limit -- whoever
 * holds it may write the whole file, as every party of a shm channel may
 * -- and cannot be revoked.  The caller needs what opening it by name
 * needs (read and write by the file's mode).
 */
static int __lz_ep_shm_grant(const char *name, unsigned int role, unsigned int flags)
{
	struct __lzchan_shm_file hdr;
	char path[PATH_MAX];
	struct stat st;
	int fd, ret;

	ret = __lzchan_shm_path(path, sizeof(path), name);
	if (ret)
		return ret;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		  ((flags & LZCHAN_GRANT_INHERIT) ? 0 : O_CLOEXEC));
	if (fd < 0)
		return errno == EISDIR || errno == ELOOP ? -EPROTO : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		ret = -EPROTO;
	else if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		ret = -EPROTO;
	else
		ret = __lz_ep_shm_kind(&hdr, role);
	if (ret) {
		close(fd);
		return ret;
	}
	/* Non-blocking only for the open (a FIFO planted at the name). */
	if (fcntl(fd, F_SETFL, 0) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int lzchan_grant(const char *name, unsigned int role, unsigned int flags, uint64_t *id)
{
	struct lzchan_grant g = { .size = sizeof(g) };
	int ret = __lzchan_name_check(name), fd;

	if (ret)
		return ret;
	if (!__lzchan_open_flag(role) || (flags & ~LZCHAN_GRANT_INHERIT))
		return -EINVAL;
	fd = __lz_ep_dev();
	if (fd == -ENOENT) {
		if (id)
			*id = 0;	/* nothing to revoke on shm */
		return __lz_ep_shm_grant(name, role, flags);
	}
	if (fd < 0)
		return fd;
	memcpy(g.name, name, strlen(name) + 1);
	g.role = __lzchan_open_flag(role);
	g.flags = (flags & LZCHAN_GRANT_INHERIT) ? 0 : LZCHAN_GRANT_CLOEXEC;
	ret = ioctl(fd, LZCHAN_IOC_GRANT, &g) < 0 ? -errno : g.fd;
	close(fd);
	if (ret >= 0 && id)
		*id = g.id;
	return ret;
}

int lzchan_revoke(const char *name, uint64_t id)
{
	struct lzchan_revoke r = { .size = sizeof(r) };
	int ret = __lzchan_name_check(name), fd;

	if (ret)
		return ret;
	fd = __lz_ep_dev();
	if (fd < 0)
		return fd == -ENOENT ? -EOPNOTSUPP : fd;	/* shm: a file, not revocable */
	memcpy(r.name, name, strlen(name) + 1);
	r.id = id;
	r.flags = id ? 0 : LZCHAN_REVOKE_ALL;
	ret = ioctl(fd, LZCHAN_IOC_REVOKE, &r) < 0 ? -errno : (int)r.count;
	close(fd);
	return ret;
}

int lzchan_grant_send(int sock, const char *name, unsigned int role, uint64_t *id)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct __lz_ep_msg m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	uint64_t gid;
	ssize_t n;
	int fd, ret;

	if (sock < 0)
		return -EBADF;
	fd = lzchan_grant(name, role, 0, &gid);
	if (fd < 0)
		return fd;
	memset(&m, 0, sizeof(m));
	memcpy(m.magic, LZ_EP_MAGIC, sizeof(m.magic));
	m.version = LZ_EP_VERSION;
	m.role = __lzchan_open_flag(role);
	memcpy(m.name, name, strlen(name) + 1);
	memset(&ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	/* A short send (a stream socket cut off mid-message) reached nobody
	 * whole: the receiver refuses what it got. */
	ret = n < 0 ? -errno : (size_t)n == sizeof(m) ? 0 : -EPIPE;
	/* Our copy goes either way: the receiver holds its own now, or
	 * nobody does (an endpoint nobody holds is released unattached). */
	close(fd);
	if (!ret && id)
		*id = gid;
	return ret;
}

/* Is @fd an lzchan endpoint of role @role (LZCHAN_OPEN_*)?  On the module
 * it must answer LZCHAN_IOC_FEATURES with endpoints, and refuse
 * LZCHAN_IOC_LIST as an endpoint does (EPERM; a revoked one: EKEYREVOKED)
 * -- a plain /dev/lzchan descriptor lists.  On shm it is a regular file
 * that says it is a channel of the kind @role takes (and is then checked
 * whole by lzchan_open_fd(), as any channel file is). */
static bool __lz_ep_is_endpoint(int fd, uint32_t role)
{
	struct lzchan_features ft = { .size = sizeof(ft) };
	struct lzchan_list l = { .size = sizeof(l), .entry_size = sizeof(struct lzchan_chan_stat) };
	struct __lzchan_shm_file hdr;
	struct stat st;

	if (ioctl(fd, LZCHAN_IOC_FEATURES, &ft) < 0) {
		/* Open for reading and writing, as a granted file is. */
		return errno == ENOTTY && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR &&
		       fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		       pread(fd, &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
		       !__lz_ep_shm_kind(&hdr, __lzchan_role_of(role));
	}
	if (!(ft.features & LZCHAN_FEAT_ENDPOINT))
		return false;
	return ioctl(fd, LZCHAN_IOC_LIST, &l) < 0 && (errno == EPERM || errno == EKEYREVOKED);
}

/* The endpoint message in @m (@n bytes read, @fds its descriptors): 0 if
 * it is exactly one, else -EPROTO. */
static int __lz_ep_check(const struct __lz_ep_msg *m, ssize_t n, int nfds)
{
	if (n != (ssize_t)sizeof(*m) || nfds != 1 ||
	    memcmp(m->magic, LZ_EP_MAGIC, sizeof(m->magic)) || m->version != LZ_EP_VERSION ||
	    !__lzchan_role_of(m->role) || !memchr(m->name, 0, sizeof(m->name)) ||
	    __lzchan_name_check(m->name))
		return -EPROTO;
	return 0;
}

/* Milliseconds left until @deadline (CLOCK_MONOTONIC ns; UINT64_MAX:
 * forever, -1), for poll(). */
static int __lz_ms_left(uint64_t deadline)
{
	uint64_t now = __lzchan_now_ns(), ms;

	if (deadline == UINT64_MAX)
		return -1;
	if (now >= deadline)
		return 0;
	ms = (deadline - now + 999999) / 1000000;	/* rounded up: never early */
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

int lzchan_endpoint_recv(int sock, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * LZ_EP_FDS_MAX)];
		struct cmsghdr align;
	} ctl;
	/* One byte more than the message: a longer one shows as such. */
	char buf[sizeof(struct __lz_ep_msg) + 1];
	struct __lz_ep_msg m;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh;
	int fds[LZ_EP_FDS_MAX];
	uint64_t deadline;
	struct cmsghdr *c;
	int nfds = 0, i, ret;
	ssize_t n;

	if (sock < 0)
		return -EBADF;
	deadline = timeout_ms < 0 ? UINT64_MAX :
		   __lzchan_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };

		ret = poll(&p, 1, __lz_ms_left(deadline));
		if (ret < 0)
			return -errno;		/* -EINTR: a signal handler ran */
		if (ret == 0)
			return -ETIMEDOUT;
		if (p.revents & POLLNVAL)
			return -EBADF;
		memset(&mh, 0, sizeof(mh));
		memset(&ctl, 0, sizeof(ctl));
		memset(buf, 0, sizeof(buf));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		/* Received close-on-exec: nothing of it leaks into a child
		 * exec'd meanwhile.  Not waiting: another reader may have
		 * taken what poll() saw. */
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n >= 0)
			break;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
	}
	/* Every descriptor that came, whatever else is wrong. */
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_len < CMSG_LEN(0))
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (c->cmsg_type == SCM_RIGHTS) {
			for (k = 0; k < cnt; k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				if (nfds < LZ_EP_FDS_MAX)
					fds[nfds] = fd;
				else
					close(fd);	/* more than the buffer takes */
				nfds++;
			}
		}
		else if (c->cmsg_type == SCM_PIDFD && cnt == 1) {
			int fd;

			/* The caller's SO_PASSPIDFD: not ours to keep. */
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
			close(fd);
		}
	}
	if (n == 0 && nfds == 0)
		return -ECONNRESET;	/* the peer closed first */
	memcpy(&m, buf, sizeof(m));
	ret = (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ? -EPROTO : __lz_ep_check(&m, n, nfds);
	if (!ret && !__lz_ep_is_endpoint(fds[0], m.role))
		ret = -EPROTO;
	if (ret) {
		for (i = 0; i < nfds && i < LZ_EP_FDS_MAX; i++)
			close(fds[i]);
		return ret;
	}
	return fds[0];
}

int lzchan_stat_peers(const char *name, struct lzchan_lane_peer *lp, unsigned int n)
{
	struct lzchan_lanes q = { .size = sizeof(q), .entry_size = sizeof(*lp) };
	int ret = __lzchan_name_check(name), fd;

	if (ret)
		return ret;
	if (!lp && n)
		return -EINVAL;
	fd = __lz_ep_dev();
	if (fd < 0)
		return fd == -ENOENT ? -EOPNOTSUPP : fd;	/* shm: lzchan_stat_lanes() */
	memcpy(q.name, name, strlen(name) + 1);
	/* In one call when the module takes it; in more if it fills fewer
	 * than asked (as lzchan_stat_subscribers() asks for places).  With
	 * @n 0, one call that fills nothing and says the total. */
	do {
		q.count = n - q.start;
		q.entries = (uintptr_t)(lp ? lp + q.start : NULL);
		if (ioctl(fd, LZCHAN_IOC_LANES, &q) < 0) {
			ret = -errno;
			break;
		}
		q.start += q.count;
		ret = (int)q.total;
	} while (q.count && q.start < n);
	close(fd);
	return ret;
}
