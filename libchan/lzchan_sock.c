// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * liblzchan: the shm backend's doorbell socket.
 *
 * Floor 1: above the clock and the shm file only (the floors:
 * Documentation/libchan/design.rst, "The library's floors").
 *
 * The module gives a receiver an eventfd that senders signal through it
 * (LZCHAN_IOC_WAKE), and tells who is on each lane (LZCHAN_IOC_PEER).  The
 * shm backend gets both from a Unix socket the receiver listens on, named
 * after the channel file (.lzchan-<dev>-<ino>.sock beside it, as writable
 * as the file: whoever may open the channel may connect):
 *
 * - A sender connects (at its open when a receiver is there, else at the
 *   first wake it owes one) and says hello: its lane, with the channel
 *   file descriptor attached (SCM_RIGHTS).  The receiver believes the lane
 *   only if that open file description is the one holding the lane's lock
 *   (F_OFD_GETLK: the lock conflicts for the receiver's own descriptor,
 *   not for the holder's), and takes the sender's credentials from the
 *   kernel (SO_PEERCRED), never from the message.  The sender takes the
 *   receiver's the same way.
 * - The receiver's event fd is an epoll set of the listening socket,
 *   every connection, an eventfd that lzchan_wake() writes, and an
 *   inotify watch on the channel file: a writer's close (a sender that
 *   dies without ever having connected -- it attached before the
 *   receiver and has not sent since -- shows then, in its lock), a cut
 *   (IN_MODIFY), and the ring of a sender that cannot connect (it sets
 *   the file's times: IN_ATTRIB).  lzchan_arm() stores rx->armed before announcing
 *   "parked"; a sender that owes a parked receiver a wake sends one byte
 *   on its connection when it is armed (the futex otherwise): one system
 *   call either way, and only when the receiver sleeps.  Receiving
 *   disarms and drains the bytes.
 *
 * Everything read from a socket is checked like shared memory: a peer
 * that sends garbage is disconnected, never believed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "lzchan_internal.h"

#define HELLO_MAGIC	0x6c7a6862U	/* "lzhb" */
/* epoll data: a connection's is lane | fd << 32 (fd < 2^31, so bit 63 is
 * clear); the others have bit 63 set. */
#define TAG_LISTEN	UINT64_MAX	/* the listening socket */
#define TAG_WAKE	(UINT64_MAX - 1)	/* the wake eventfd */
#define TAG_HUP		(UINT64_MAX - 2)	/* the hang-up timerfd */
#define TAG_CLOSE	(UINT64_MAX - 3)	/* the channel file's inotify */
/* After a sender's connection hangs up with its lane still ATTACHED, its
 * lock is looked at again this often, this many times (a dying process
 * closes the channel file just after the socket). */
#define HUP_RETRY_NS	10000000L
#define HUP_LOOKS	20
/* Without a close watch (inotify), how often an armed receiver looks at
 * the senders' locks. */
#define SWEEP_NOTIFY_NS	100000000L
#define TAG_PENDING	(1ULL << 63)	/* | fd: accepted, no hello yet */
#define RETRY_NS	1000000ULL	/* a sender retries connecting after 1 ms */
/* A connection with no hello after this long is dropped: an honest sender
 * sends its hello right after connecting, so only a stranger (or a sender
 * stopped mid-open, which connects again) is that slow, and the
 * LZCHAN_SOCK_PENDING places must not stay strangers' for ever. */
#define PENDING_NS	1000000000ULL

struct __lz_hello {
	uint32_t magic;
	uint32_t lane;
};

/* The socket's address for the channel file at @path (dev, ino): beside
 * it, named after its inode. */
static int __lz_sock_addr_of(const char *path, uint64_t dev, uint64_t ino,
			     struct sockaddr_un *a)
{
	const char *slash = strrchr(path, '/');
	int n;

	if (!slash)
		return -1;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "%.*s/.lzchan-%llx-%llx.sock",
		     (int)(slash - path), path, (unsigned long long)dev,
		     (unsigned long long)ino);
	return n > 0 && (size_t)n < sizeof(a->sun_path) ? 0 : -1;
}

static int __lz_sock_addr(const struct lzchan *ch, struct sockaddr_un *a)
{
	char path[PATH_MAX];
	struct stat st;

	if (fstat(ch->fd, &st) < 0 || __lzchan_shm_path(path, sizeof(path), ch->name))
		return -1;
	/* A handle made from a descriptor (lzchan_open_fd()) knows no name:
	 * its doorbell is the one beside the file only if our shm directory
	 * is the file's file system at all (another mount namespace has a
	 * /dev/shm of its own, where a socket of that name is a stranger's). */
	if (!ch->name[0]) {
		struct stat dir;
		char *slash = strrchr(path, '/');

		if (!slash)
			return -1;
		*slash = 0;
		if (stat(path, &dir) < 0 || dir.st_dev != st.st_dev)
			return -1;
		*slash = '/';
	}
	return __lz_sock_addr_of(path, st.st_dev, st.st_ino, a);
}

/* The channel file at @path (@st) is being removed: so is its socket,
 * which a receiver that died left behind. */
void __lzchan_sock_unlink(const char *path, const struct stat *st)
{
	struct sockaddr_un a;

	if (!__lz_sock_addr_of(path, st->st_dev, st->st_ino, &a))
		unlink(a.sun_path);
}

/* ---- receiver ---- */

/* Listen for the senders (at the receiver's open; failure only costs the
 * event fd and the credentials). */
int __lzchan_sock_listen(struct lzchan *ch)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_LISTEN };
	struct sockaddr_un a;
	char proc[32];
	struct stat st;
	uint32_t i;
	int r, pf;

	ch->conn = malloc(ch->f.max_senders * sizeof(*ch->conn));
	for (i = 0; ch->conn && i < ch->f.max_senders; i++)
		ch->conn[i] = -1;	/* before any return: the close walks it */
	ch->conn_gen = calloc(ch->f.max_senders, sizeof(*ch->conn_gen));
	ch->cred = calloc(ch->f.max_senders, sizeof(*ch->cred));
	if (!ch->conn || !ch->conn_gen || !ch->cred)
		return -ENOMEM;
	if (__lz_sock_addr(ch, &a))
		return -ENAMETOOLONG;
	ch->evfd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->evfd < 0)
		return -errno;
	ch->lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ch->lsock < 0)
		return -errno;
	/* We hold the receiver lock: a socket there is a dead receiver's
	 * (or a squatter's, which the sticky directory keeps: then bind
	 * fails and we go without; senders check whom they talk to). */
	unlink(a.sun_path);
	if (bind(ch->lsock, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -errno;
	ch->sock_bound = true;
	/* Anyone may connect (mode 0666): a stranger can only wake us for
	 * nothing, and is believed about a lane only with that lane's lock
	 * (__lz_sock_hello()).  Through an O_PATH descriptor of the socket
	 * itself, never a name someone could have swapped for a link. */
	pf = open(a.sun_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pf < 0)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pf);
	r = fstat(pf, &st) == 0 && S_ISSOCK(st.st_mode) && chmod(proc, 0666) == 0 ? 0 : -EPERM;
	close(pf);
	if (r)
		return r;
	if (listen(ch->lsock, 64) < 0 || epoll_ctl(ch->evfd, EPOLL_CTL_ADD, ch->lsock, &ev) < 0)
		return -errno;
	/* lzchan_wake() makes the event fd readable through this, as the
	 * module's eventfd is after LZCHAN_IOC_WAKE. */
	ch->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev.data.u64 = TAG_WAKE;
	if (ch->wakefd < 0 || epoll_ctl(ch->evfd, EPOLL_CTL_ADD, ch->wakefd, &ev) < 0)
		return -errno;
	/* A hang-up's later looks (__lz_sock_hup()) wake the event fd. */
	ch->hupfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	ev.data.u64 = TAG_HUP;
	if (ch->hupfd < 0 || epoll_ctl(ch->evfd, EPOLL_CTL_ADD, ch->hupfd, &ev) < 0)
		return -errno;
	/* So does a writer's close of the channel file (every sender holds
	 * it open for writing: a death closes it), a cut (truncate: nobody
	 * write()s the file, they map it) and a ring of last resort (a
	 * sender that cannot reach the socket touches the file's times:
	 * __lzchan_sock_touch()): the file we hold, by its /proc/self/fd
	 * link (inotify follows it to the inode). */
	ch->closefd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", ch->fd);
	ev.data.u64 = TAG_CLOSE;
	if (ch->closefd >= 0 && (inotify_add_watch(ch->closefd, proc,
						   IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB) < 0 ||
				 epoll_ctl(ch->evfd, EPOLL_CTL_ADD, ch->closefd, &ev) < 0)) {
		close(ch->closefd);
		ch->closefd = -1;
	}
	/* Without it (the user's inotify instances or watches run out: 128
	 * instances by default), an armed receiver looks at the locks every
	 * SWEEP_NOTIFY_NS instead (__lzchan_sock_armed()). */
	ch->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
}

/* Make the event fd readable in @ns (< 1 s) through the hang-up timer,
 * unless it already will sooner (a hang-up's look, every HUP_RETRY_NS,
 * does this one too). */
static void __lz_sock_timer(struct lzchan *ch, long ns)
{
	struct itimerspec its = { .it_value.tv_nsec = ns }, now;

	if (ch->hupfd < 0)
		return;
	if (timerfd_gettime(ch->hupfd, &now) == 0 &&
	    (now.it_value.tv_sec || now.it_value.tv_nsec) && !now.it_value.tv_sec &&
	    now.it_value.tv_nsec <= its.it_value.tv_nsec)
		return;
	timerfd_settime(ch->hupfd, 0, &its, NULL);
}

/* The look a close still owes (__lz_sock_closed()), HUP_RETRY_NS after
 * the last: by the timer, so that a receiver asleep on its event fd has
 * it too. */
static void __lz_sock_sweep_owed(struct lzchan *ch)
{
	uint64_t since = __lzchan_now_ns() - ch->swept_ns;

	__lz_sock_timer(ch, since < HUP_RETRY_NS ? (long)(HUP_RETRY_NS - since) : 1);
}

/* The receiver arms (lzchan_arm(), after a service): the timer for the
 * look a close still owes, or, without the close watch, for a look at the
 * locks now and then while it sleeps. */
void __lzchan_sock_armed(struct lzchan *ch)
{
	if (ch->sweep_again) {
		__lz_sock_sweep_owed(ch);
	} else if (ch->closefd >= 0) {
		return;
	} else {
		ch->sweep_again = true;
		__lz_sock_timer(ch, SWEEP_NOTIFY_NS);
	}
}

/* Close the socket side of @ch: the receiver's name goes with it.  Every
 * field is reset, so a second call (or a later ring) finds nothing. */
void __lzchan_sock_close(struct lzchan *ch)
{
	struct sockaddr_un a;
	uint32_t i;

	if (ch->sock_bound && __lz_sock_addr(ch, &a) == 0)
		unlink(a.sun_path);
	ch->sock_bound = false;
	for (i = 0; ch->conn && i < ch->f.max_senders; i++)
		if (ch->conn[i] >= 0)
			close(ch->conn[i]);
	for (i = 0; i < ch->npending; i++)
		close(ch->pending[i]);
	ch->npending = 0;
	if (ch->lsock >= 0)
		close(ch->lsock);
	ch->lsock = -1;
	if (ch->wakefd >= 0)
		close(ch->wakefd);
	ch->wakefd = -1;
	if (ch->hupfd >= 0)
		close(ch->hupfd);
	ch->hupfd = -1;
	if (ch->closefd >= 0)
		close(ch->closefd);
	ch->closefd = -1;
	if (ch->spare >= 0)
		close(ch->spare);
	ch->spare = -1;
	if (ch->sock >= 0)
		close(ch->sock);
	ch->sock = -1;
	free(ch->conn);
	free(ch->conn_gen);
	free(ch->cred);
	ch->conn = NULL;
	ch->conn_gen = NULL;
	ch->cred = NULL;
}

static void __lz_sock_drop(struct lzchan *ch, int fd)
{
	epoll_ctl(ch->evfd, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
}

/* Read the hello on @fd (@watched: already in the epoll set).  1:
 * registered; 0: not there yet; -1: bad (the caller drops the
 * connection). */
static int __lz_sock_hello(struct lzchan *ch, int fd, bool watched)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct __lz_hello h;
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct epoll_event ev = { .events = EPOLLIN };
	struct cmsghdr *c;
	struct stat a, b;
	socklen_t cl = sizeof(struct ucred);
	struct ucred cred;
	int64_t byte;
	ssize_t n;
	int sfd = -1, nfds = 0, ok = -1;

	n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	/* Every descriptor that came is ours to close: keep one, only if it
	 * came alone. */
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int x;

			memcpy(&x, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (!nfds++)
				sfd = x;
			else
				close(x);
		}
	}
	if (n != (ssize_t)sizeof(h) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    nfds != 1 || h.magic != HELLO_MAGIC || h.lane >= ch->f.max_senders)
		goto out;
	/* The same file, and the open file description that holds the
	 * lane's lock: its lock conflicts with ours, not with its own. */
	byte = LOCK_BASE + 1 + h.lane;
	if (fstat(sfd, &a) < 0 || fstat(ch->fd, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino || __lzchan_locked(ch->fd, byte) != 1 ||
	    __lzchan_locked(sfd, byte) != 0)
		goto out;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		goto out;
	/* Watched under a tag naming lane and descriptor, before it is
	 * published: an event for a predecessor is then told apart. */
	ev.data.u64 = h.lane | (uint64_t)(uint32_t)fd << 32;
	if (epoll_ctl(ch->evfd, watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) < 0)
		goto out;
	if (ch->conn[h.lane] >= 0)
		__lz_sock_drop(ch, ch->conn[h.lane]);	/* the lane's previous sender */
	ch->conn[h.lane] = fd;
	ch->cred[h.lane] = cred;
	/* The generation it spoke for (lzchan_peer() answers for it only).
	 * Pairs with the release store of the lane status. */
	ch->conn_gen[h.lane] = LZCHAN_STATUS_GEN(__lz_load_acq(&ch->lane_info[h.lane].status));
	ok = 1;
out:
	if (sfd >= 0)
		close(sfd);
	return ok;
}

/*
 * Senders whose connection hung up while their lane said ATTACHED: look at
 * their locks (__lzchan_shm_hup_look()), and while any look is still owed,
 * set the timer that wakes the event fd for the next.  A dead sender's end
 * is then found even by an event loop that sleeps until its fd fires.
 */
static void __lz_sock_hup(struct lzchan *ch)
{
	struct itimerspec its = { .it_value.tv_nsec = HUP_RETRY_NS };
	bool owed = false;
	uint32_t i;

	for (i = 0; i < ch->f.max_senders; i++) {
		struct __lzchan_rxwatch *w = &ch->watch[i];

		if (!w->hup_looks)
			continue;
		if (__lzchan_shm_hup_look(ch, i) && --w->hup_looks)
			owed = true;
		else
			w->hup_looks = 0;
	}
	if (owed && ch->hupfd >= 0)
		timerfd_settime(ch->hupfd, 0, &its, NULL);
}

/*
 * A writer closed the channel file (@fresh), perhaps a sender that died
 * without a connection to hang up; or a look it owes is due.  Look at the
 * lock of every lane that says ATTACHED, now and once more at least
 * HUP_RETRY_NS later (the kernel tells of the close just before it lets
 * the closer's lock go): at the next service, or, if the receiver arms
 * before, by the timer (__lzchan_sock_armed()).  At most once every
 * HUP_RETRY_NS, however often the file is opened and closed.
 */
static void __lz_sock_closed(struct lzchan *ch, uint64_t now, bool fresh)
{
	uint32_t i;

	if (now - ch->swept_ns < HUP_RETRY_NS) {
		ch->sweep_again |= fresh;	/* too soon: later */
	} else {
		ch->swept_ns = now;
		for (i = 0; i < ch->f.max_senders; i++)
			(void)__lzchan_shm_hup_look(ch, i);
		ch->sweep_again = fresh;
	}
	/* Whichever service took the news (an arm's, a look's at the bell,
	 * a sleeping receiver's look), the next look comes by the timer. */
	if (ch->sweep_again)
		__lz_sock_sweep_owed(ch);
}

/* Take new connections and hellos, and drain the wake bytes. */
void __lzchan_sock_service(struct lzchan *ch)
{
	struct epoll_event evs[32];
	char junk[64];
	int n, k, fd, said;
	uint32_t lane, i;
	uint64_t now;
	bool hup = false, closed = false;

	if (ch->lsock < 0)
		return;
	now = __lzchan_now_ns();
	for (i = 0; i < ch->npending;) {
		if (now - ch->pending_ns[i] < PENDING_NS) {
			i++;
			continue;
		}
		__lz_sock_drop(ch, ch->pending[i]);	/* no hello in time */
		ch->npending--;
		ch->pending[i] = ch->pending[ch->npending];
		ch->pending_ns[i] = ch->pending_ns[ch->npending];
	}
	do {
		n = epoll_wait(ch->evfd, evs, 32, 0);
		for (k = 0; k < n; k++) {
			uint64_t tag = evs[k].data.u64;

			if (tag == TAG_HUP) {
				uint64_t cnt;

				if (read(ch->hupfd, &cnt, sizeof(cnt)) < 0)
					(void)0;	/* drained already: fine */
				hup = true;
			} else if (tag == TAG_CLOSE) {
				char ev[sizeof(struct inotify_event) + NAME_MAX + 1];

				while (read(ch->closefd, ev, sizeof(ev)) > 0)
					;	/* which writer does not matter */
				closed = true;
			} else if (tag == TAG_WAKE) {
				uint64_t cnt;

				if (read(ch->wakefd, &cnt, sizeof(cnt)) < 0)
					(void)0;	/* drained already: fine */
			} else if (tag == TAG_LISTEN) {
				while ((fd = accept4(ch->lsock, NULL, NULL,
						     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					struct epoll_event ev = {
						.events = EPOLLIN,
						.data.u64 = TAG_PENDING | (uint32_t)fd,
					};

					/* Its hello is usually there already. */
					said = __lz_sock_hello(ch, fd, false);
					if (said > 0)
						continue;
					if (said < 0 || ch->npending >= LZCHAN_SOCK_PENDING ||
					    epoll_ctl(ch->evfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
						close(fd);	/* bad, or too many strangers */
						continue;
					}
					ch->pending_ns[ch->npending] = now;
					ch->pending[ch->npending++] = fd;
				}
				/* Out of descriptors: the connection would stay
				 * queued and the socket readable for ever.  Refuse
				 * it with the one held back (the sender then rings
				 * through the file: __lzchan_sock_touch()). */
				if ((errno == EMFILE || errno == ENFILE) && ch->spare >= 0) {
					close(ch->spare);
					fd = accept4(ch->lsock, NULL, NULL, SOCK_CLOEXEC);
					if (fd >= 0)
						close(fd);
					ch->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
				}
			} else if (tag & TAG_PENDING) {
				fd = (int)(uint32_t)tag;
				for (i = 0; i < ch->npending && ch->pending[i] != fd; i++)
					;
				if (i == ch->npending)
					continue;	/* already handled */
				said = __lz_sock_hello(ch, fd, true);
				if (!said && !(evs[k].events & (EPOLLHUP | EPOLLERR)))
					continue;
				ch->npending--;
				ch->pending[i] = ch->pending[ch->npending];
				ch->pending_ns[i] = ch->pending_ns[ch->npending];
				if (said <= 0)
					__lz_sock_drop(ch, fd);
			} else {
				lane = (uint32_t)tag;
				fd = (int)(uint32_t)(tag >> 32);
				if (lane >= ch->f.max_senders || ch->conn[lane] != fd)
					continue;	/* a predecessor's event */
				if (!(evs[k].events & (EPOLLHUP | EPOLLERR))) {
					ssize_t got;

					while ((got = recv(fd, junk, sizeof(junk), MSG_DONTWAIT)) > 0)
						;
					/* 0: the sender shut its side down (or
					 * sent an empty record, which no honest one
					 * does): readable for ever, so a hang-up. */
					if (got < 0)
						continue;
				}
				__lz_sock_drop(ch, ch->conn[lane]);
				ch->conn[lane] = -1;
				ch->watch[lane].hup_looks = HUP_LOOKS;
				hup = true;
			}
		}
	} while (n == 32);
	if (closed || ch->sweep_again)
		__lz_sock_closed(ch, __lzchan_now_ns(), closed);
	if (hup)
		__lz_sock_hup(ch);
}

/* Who is on @lane, as the kernel told us at its hello. */
int __lzchan_sock_peer(struct lzchan *ch, uint32_t lane, struct ucred *out)
{
	if (lane >= ch->f.max_senders)
		return -EINVAL;
	__lzchan_sock_service(ch);
	/* Its sender must still be the one that said hello: the lock is
	 * held by that connection's file (checked again: it may have left). */
	if (ch->conn[lane] < 0 || __lzchan_shm_lane_alive(ch, lane) != 1 ||
	    /* Pairs with the release store of the lane status. */
	    ch->conn_gen[lane] != LZCHAN_STATUS_GEN(__lz_load_acq(&ch->lane_info[lane].status)))
		return -ENOTCONN;
	*out = ch->cred[lane];
	return 0;
}

/* May the process @c open the channel file read-write (as its receiver
 * does)?  By the file's mode, as the kernel would judge its open. */
static bool __lz_may_receive(const struct lzchan *ch, const struct ucred *c)
{
	gid_t groups[64];
	socklen_t gl = sizeof(groups);
	struct stat st;
	unsigned int i, n;

	if (fstat(ch->fd, &st) < 0)
		return false;
	if (c->uid == 0)
		return true;
	if (c->uid == st.st_uid)
		return (st.st_mode & 0600) == 0600;
	if (c->gid == st.st_gid)
		return (st.st_mode & 060) == 060;
	if (getsockopt(ch->sock, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0)
		for (i = 0, n = gl / sizeof(gid_t); i < n; i++)
			if (groups[i] == st.st_gid)
				return (st.st_mode & 060) == 060;
	return (st.st_mode & 06) == 06;
}

/* ---- sender ---- */

/* Connect to the receiver and say hello.  0, or -1 (none to reach now). */
int __lzchan_sock_connect(struct lzchan *ch)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct __lz_hello h = { .magic = HELLO_MAGIC, .lane = ch->lane };
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	socklen_t cl = sizeof(ch->rx_cred);
	struct sockaddr_un a;
	struct cmsghdr *c;
	uint64_t now = __lzchan_now_ns();

	if (ch->sock >= 0)
		return 0;
	if (ch->sock_tried_ns && now - ch->sock_tried_ns < RETRY_NS)
		return -1;
	ch->sock_tried_ns = now;
	if (__lz_sock_addr(ch, &a))
		return -1;
	ch->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ch->sock < 0)
		return -1;
	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &ch->fd, sizeof(int));
	/* Our channel file goes to whoever listens there: only to a process
	 * that may open the channel as its receiver anyway (read and write
	 * by the file's mode), never to a stranger who took the name. */
	if (connect(ch->sock, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockopt(ch->sock, SOL_SOCKET, SO_PEERCRED, &ch->rx_cred, &cl) < 0 ||
	    !__lz_may_receive(ch, &ch->rx_cred) ||
	    sendmsg(ch->sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
		close(ch->sock);
		ch->sock = -1;
		return -1;
	}
	return 0;
}

/* Ring an armed receiver that our connection cannot reach (no descriptor
 * to connect with, its backlog full, a receiver we may not talk to): set
 * the channel file's times, which its inotify watch reports (IN_ATTRIB).
 * We opened the file for writing, so this needs no permission more. */
void __lzchan_sock_touch(struct lzchan *ch)
{
	(void)futimens(ch->fd, NULL);
}

/* Ring an armed receiver: one byte on our connection.  0, or -1 (use the
 * futex). */
int __lzchan_sock_ring(struct lzchan *ch)
{
	int tries;

	for (tries = 0; tries < 2; tries++) {
		if (__lzchan_sock_connect(ch))
			return -1;
		if (send(ch->sock, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ||
		    errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;	/* full: it is readable anyway */
		/* The receiver we knew left: the new one, once. */
		close(ch->sock);
		ch->sock = -1;
		ch->sock_tried_ns = 0;
	}
	return -1;
}
