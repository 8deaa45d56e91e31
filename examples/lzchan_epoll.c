// SPDX-License-Identifier: MIT
/*
 * An epoll-driven receiver: one thread waits for channel messages, a timer
 * and signals in the same epoll_wait().
 *
 *   lzchan_epoll NAME [COUNT]
 *
 * It creates channel NAME, forks a sender process that sends COUNT numbered
 * messages (default 100000) in bursts and exits, and receives them in an
 * event loop that also prints progress once a second (timerfd) and stops
 * cleanly on SIGINT/SIGTERM (signalfd).  Every message is checked: in
 * order, none lost, none duplicated.
 *
 * The loop: receive until -EAGAIN; lzchan_arm(); if armed, epoll_wait().
 * Arming announces that the receiver is going to sleep, so that the next
 * sender wakes it through the channel's event fd.
 *
 * Both backends have the event fd (the module's eventfd, or the shm
 * backend's epoll set of Unix sockets).  Where there is none -- a shm
 * receiver that could not create its socket: lzchan_event_fd() returns
 * -EOPNOTSUPP -- or lzchan_arm() returns -ENOSYS (a kernel without
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)), this program says so and
 * falls back: it waits in lzchan_recv_wait() with a timeout no
 * longer than the time to its next timer tick, and looks at its other fds
 * without blocking (epoll_wait with timeout 0) in between.
 *
 * Exit status: 0 all messages checked, 1 failure, 2 usage.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lzchan.h>

#define TICK_NS		1000000000LL	/* progress once a second */

struct msg {
	uint64_t seq;
	uint64_t check;			/* ~seq: a torn message would show */
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "lzchan_epoll: %s: %s\n", what, strerror(-err));
	return 1;
}

/* The child: COUNT messages in bursts of 64, a pause between bursts so the
 * receiver runs out of work and parks now and then. */
static int sender(const char *name, uint64_t count)
{
	struct timespec pause = { .tv_nsec = 200000 };
	struct lzchan *tx;
	struct msg m;
	int r;

	r = lzchan_open(&tx, name, LZCHAN_SENDER, NULL);
	if (r)
		return fail("sender: open", r);
	for (m.seq = 0; m.seq < count; m.seq++) {
		m.check = ~m.seq;
		r = lzchan_send_wait(tx, &m, sizeof(m), 10LL * 1000000000LL);
		if (r) {
			lzchan_close(tx);
			return fail("sender: send", r);
		}
		if (m.seq % 64 == 63)
			nanosleep(&pause, NULL);
	}
	lzchan_close(tx);		/* the receiver gets end of stream */
	return 0;
}

struct state {
	uint64_t next;			/* the seq expected */
	uint64_t count;
	int done;			/* end of stream, or a failure */
	int err;
};

/* Check one result of a receive call. */
static void take(struct state *st, int n, const struct msg *m, uint32_t lane)
{
	if (n == -EPIPE) {			/* the sender is done */
		st->done = 1;
		if (st->next != st->count)
			st->err = -EPIPE;
	} else if (n < 0) {
		st->done = 1;
		st->err = n;
	} else if (n != sizeof(*m) || m->seq != st->next || m->check != ~m->seq) {
		fprintf(stderr, "lzchan_epoll: lane %u: got seq %llu, expected %llu\n",
			lane, (unsigned long long)m->seq, (unsigned long long)st->next);
		st->done = 1;
		st->err = -EBADMSG;
	} else {
		st->next++;
	}
}

/* Take everything the channel has now. */
static void drain(struct lzchan *rx, struct state *st)
{
	struct msg m;
	uint32_t lane;
	int n;

	while (!st->done && (n = lzchan_recv(rx, &m, sizeof(m), &lane)) != -EAGAIN)
		take(st, n, &m, lane);
}

/* The timer and signal fds: 1 to stop, else 0. */
static int other_fd(int fd, int tfd, const struct state *st)
{
	if (fd == tfd) {
		uint64_t ticks;

		if (read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks))
			printf("progress: %llu of %llu messages\n",
			       (unsigned long long)st->next, (unsigned long long)st->count);
		fflush(stdout);
		return 0;
	}
	fprintf(stderr, "lzchan_epoll: signal: stopping\n");
	return 1;
}

int main(int argc, char **argv)
{
	struct itimerspec tick = { .it_interval = { 1, 0 }, .it_value = { 1, 0 } };
	struct state st = { 0 };
	struct epoll_event ev, evs[4];
	struct lzchan *rx;
	int ep, tfd, sfd, cfd, r, i, n, status = 0, parks = 0, use_fd = 1;
	const char *name;
	sigset_t sigs;
	pid_t pid;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s NAME [COUNT]\n", argv[0]);
		return 2;
	}
	name = argv[1];
	st.count = argc == 3 ? strtoull(argv[2], NULL, 0) : 100000;

	r = lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, NULL);
	if (r)
		return fail(name, r);

	/* The other fds of the loop. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || tfd < 0 || ep < 0 || timerfd_settime(tfd, 0, &tick, NULL))
		return fail("epoll/timerfd/signalfd", -errno);
	ev.events = EPOLLIN;
	ev.data.fd = sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.fd = tfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);

	cfd = lzchan_event_fd(rx);
	if (cfd == -EOPNOTSUPP) {
		printf("no event fd on this backend (%s): falling back to lzchan_recv_wait()\n",
		       lzchan_backend_name(rx));
		use_fd = 0;
	} else if (cfd < 0) {
		return fail("lzchan_event_fd", cfd);
	} else {
		ev.data.fd = cfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
		printf("event fd %d on %s\n", cfd, lzchan_backend_name(rx));
	}
	fflush(stdout);

	pid = fork();
	if (pid < 0)
		return fail("fork", -errno);
	if (pid == 0) {
		/* The child is only a sender.  It leaves the receiver's handle
		 * alone: closing it here would tell the senders that the
		 * receiver is gone (see lzchan_close(3) on fork). */
		sigprocmask(SIG_UNBLOCK, &sigs, NULL);
		_exit(sender(name, st.count));
	}

	while (!st.done) {
		if (use_fd) {
			drain(rx, &st);
			if (st.done)
				break;
			r = lzchan_arm(rx);
			if (r == -EAGAIN)
				continue;	/* something came: receive it */
			if (r == -ENOSYS) {
				printf("no membarrier: cannot wait on the event fd alone, "
				       "falling back to lzchan_recv_wait()\n");
				use_fd = 0;
				continue;
			}
			if (r < 0)
				return fail("lzchan_arm", r);
			parks++;
			/* Bounded, as lzchan_recv_wait() bounds its sleeps. */
			n = epoll_wait(ep, evs, 4, 1000);
		} else {
			struct itimerspec left;
			struct msg m;
			uint32_t lane;

			/* Wait for a message no longer than until the next tick. */
			timerfd_gettime(tfd, &left);
			r = lzchan_recv_wait(rx, &m, sizeof(m), &lane,
					     left.it_value.tv_sec * 1000000000LL +
					     left.it_value.tv_nsec);
			if (r != -ETIMEDOUT) {
				take(&st, r, &m, lane);
				drain(rx, &st);
			}
			n = epoll_wait(ep, evs, 4, 0);	/* the other fds: a look */
		}
		for (i = 0; i < n; i++)
			if (evs[i].data.fd != cfd && other_fd(evs[i].data.fd, tfd, &st))
				st.done = 1;
		/* The event fd itself needs no handling: the next receive
		 * disarms and clears it. */
	}

	if (st.err || st.next != st.count)
		kill(pid, SIGTERM);	/* stopped early: the sender too */
	waitpid(pid, &status, 0);
	lzchan_close(rx);
	lzchan_unlink(name);
	if (st.err)
		return fail("receive", st.err);
	if (st.next != st.count) {
		fprintf(stderr, "lzchan_epoll: stopped after %llu of %llu messages\n",
			(unsigned long long)st.next, (unsigned long long)st.count);
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail("sender", -EIO);
	printf("received and checked %llu messages in order", (unsigned long long)st.next);
	if (use_fd)
		printf("; armed and waited %d times\n", parks);
	else
		printf(" (lzchan_recv_wait fallback)\n");
	return 0;
}
