// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Waiting: the receiver spins, then parks until a sender wakes it
 * (lzchan_wake.c), a sender leaves, or its deadline; a sender waits for
 * room; lzchan_arm() and the event fd let an event loop do the parking.
 * Why no wakeup is lost (the asymmetric barrier, lzchan_sys.c) is argued
 * in the design page.
 *
 * Floor 6, the top, above opening (the floors:
 * Documentation/libchan/design.rst, "The library's floors").
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lzchan_internal.h"

#define DEGRADED_SLEEP_NS	1000000ULL	/* no membarrier: re-check each ms */
/*
 * Upper bounds on one sleep.  No wakeup is ever lost without them; they
 * bound the damage where the platform delays one.  Seen on a paravirtual
 * host: after membarrier IPIs, a futex waiter that FUTEX_WAKE reported
 * woken ran only at its CPU's next timer (reproduced without lzchan: see
 * Documentation/libchan/design.rst).  One extra wakeup in 10 s, with no
 * spin after it, costs a parked receiver next to nothing; on such a
 * platform a delayed wake then costs up to 10 s.
 */
#define MAX_SLEEP_NS		10000000000ULL
/* shm without a doorbell socket: nothing tells a sleeping receiver that a
 * sender died, so it looks at the locks this often. */
#define SHM_BLIND_SLEEP_NS	50000000ULL

static void __lz_set_parked(struct lzchan *ch, bool parked)
{
	if ((ch->parked & 1) == parked)
		return;
	ch->parked++;
	/* Release: a sender that sees this episode sees rx->armed as it was
	 * set for it (pairs with the acquire fence in __lzchan_wake()).
	 * When parking, __lzchan_heavy_barrier() follows; when unparking, a
	 * late wake is harmless. */
	__lz_store_rel(&ch->f.rx->parked, ch->parked);
	if (!parked)
		__lzchan_rx_unpark_copies(ch);
}

/* Announce parked and make sure nothing is pending; -EAGAIN if something
 * is, 0 if safe to sleep, 1 if safe only for a bounded time. */
static int __lz_prepare_park(struct lzchan *ch)
{
	uint32_t activations;
	int degraded;

	/* shm: sample the wake counter *before* announcing "parked".  A sender
	 * wakes an episode at most once, after seeing it announced, so its
	 * increment then always postdates this sample and the futex wait
	 * returns at once.  (Sampled after the announcement, a wake sent for
	 * a message we had already taken could be counted in the sample and
	 * spent, and the sender would not wake this episode again.)  The
	 * acquire keeps the announcement after the sample; it pairs with the
	 * senders' seq_cst increment in __lzchan_wake(). */
	ch->wake_seen = __lz_load_acq(ch->wake_word);
	__lz_set_parked(ch, true);
	/* Senders load only attn on each send: move it on every lane we
	 * poll (after parked, which it publishes). */
	__lzchan_rx_attn_active(ch);
	__lzchan_rx_publish_all(ch);		/* senders see all the room */
	degraded = __lzchan_heavy_barrier(ch);
	/* A lane the look below wakes (its bell rang) had its attn moved
	 * after the barrier, not before: its sender may have missed that
	 * and "parked" both.  Do not sleep on it: the next try's R2 covers
	 * it (Documentation/libchan/design.rst). */
	activations = ch->activations;
	if (__lzchan_rx_pending(ch) || ch->activations != activations) {
		/* (Inline empty verdicts granted before were taken back by
		 * what found the news: __lzchan_rx_quiet_revoke().) */
		__lz_set_parked(ch, false);
		return -EAGAIN;
	}
	return degraded ? 1 : 0;
}

/* Sleep until woken or @ns pass: 1 woken (or the futex word moved), 0 the
 * time passed, -EINTR a signal handler ran. */
static int __lz_sleep(struct lzchan *ch, uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ULL, .tv_nsec = ns % 1000000000ULL };
	int r;

	if (ch->backend == LZCHAN_BACKEND_DEV || ch->f.armed) {
		/* The module's eventfd, or (shm, armed) the epoll set of the
		 * doorbell socket: a sender's byte, a departure, lzchan_wake(),
		 * a look the hang-up timer owes.  shm: the next arm drains it
		 * (__lzchan_sock_service()). */
		struct pollfd p = { .fd = ch->evfd, .events = POLLIN };
		uint64_t cnt;

		r = ppoll(&p, 1, &ts, NULL);
		if (r == 1 && !ch->f.armed && read(ch->evfd, &cnt, sizeof(cnt)) < 0)
			(void)0;	/* drained by someone: fine */
		if (r >= 0)
			return r;
	} else {
		/* Returns at once if a sender woke us since wake_seen was
		 * read, else at its wake or the timeout. */
		r = (int)syscall(SYS_futex, ch->wake_word, FUTEX_WAIT, ch->wake_seen, &ts, NULL, 0);
		if (r == 0 || errno == EAGAIN)
			return 1;
		if (errno == ETIMEDOUT)
			return 0;
	}
	return errno == EINTR ? -EINTR : 1;
}

/*
 * Sleep parked until woken or @deadline (or a stalled lane's verdict is
 * due: the receive that follows gives it).  Where every departure wakes the
 * sleep too (the module; shm armed), a sleep that times out stays parked:
 * a sender that published after the park's barrier saw this episode and
 * woke it, so one look at the lanes (for a wake the platform delayed)
 * does, with no new barrier.  Elsewhere (shm without the doorbell socket:
 * nobody tells of a death; or without membarrier) each sleep is bounded
 * by @cap and ends the episode.  0, or -EINTR.
 */
static int __lz_sleep_parked(struct lzchan *ch, uint64_t deadline, uint64_t cap, bool stay)
{
	uint64_t now = __lzchan_now_ns(), due;
	int r;

	/* A stalled lane's verdict is owed by then: the receive gives it. */
	due = __lzchan_rx_verdict_due(ch, now);
	if (due < deadline)
		deadline = due;
	for (;;) {
		uint64_t ns = deadline > now ? deadline - now : 0;

		if (ns > cap)
			ns = cap;
		/* After the wake_word sample and the store of parked (and
		 * armed): a request stored after this test is followed by a
		 * wake (the futex, or wakefd in the epoll set) that ends the
		 * sleep. */
		r = __lzchan_woken(ch) ? -EINTR : __lz_sleep(ch, ns);
		if (r != 0 || !stay)
			break;
		now = __lzchan_now_ns();
		/* A cut the look met (or the guard saw) is the receive's
		 * error (-EIO; dev: -EPIPE, a revocation), not a reason to
		 * sleep on. */
		if (now >= deadline || __lzchan_rx_pending(ch) || __lzchan_cut(&ch->f) ||
		    __lzchan_guard_lost(ch->guard))
			break;
	}
	/* The receive after a sleep looks in full (a verdict, an end),
	 * never just at the lane whose turn it was. */
	ch->look_due = true;
	return r < 0 ? r : 0;
}

/*
 * Park until a sender wakes us or @deadline.  shm with a doorbell socket
 * parks armed, on the event fd, so that a sender's departure wakes it too
 * (its hang-up, or inotify's report of its close).  0 (woken, timed out or
 * refused: receive again), or -EINTR.
 */
static int __lz_park(struct lzchan *ch, uint64_t deadline)
{
	uint64_t cap = MAX_SLEEP_NS;
	int r;

	if (ch->backend == LZCHAN_BACKEND_SHM && ch->lsock >= 0) {
		r = lzchan_arm(ch);
		if (r == -EAGAIN)
			return 0;	/* something came: receive it */
		if (r == 0) {
			r = __lz_sleep_parked(ch, deadline, cap, true);
			__lzchan_rx_disarm(ch, false);	/* the next arm drains */
			return r;
		}
		/* -ENOSYS: without membarrier a sender may miss "parked";
		 * the futex with bounded sleeps below is safe. */
	}
	r = __lz_prepare_park(ch);
	if (r < 0)
		return 0;
	if (r == 1)
		cap = DEGRADED_SLEEP_NS;
	else if (ch->backend == LZCHAN_BACKEND_SHM)
		cap = SHM_BLIND_SLEEP_NS;
	r = __lz_sleep_parked(ch, deadline, cap, r == 0 && ch->backend == LZCHAN_BACKEND_DEV);
	__lz_set_parked(ch, false);
	return r;
}

/*
 * Make a thread blocked in lzchan_recv_wait() or lzchan_send_wait() on @ch
 * return -EINTR; if none is blocked, the next such call that would block
 * does.  Callable from any thread and from a signal handler (it makes only
 * async-signal-safe system calls).
 */
int lzchan_wake(struct lzchan *ch)
{
	if (!ch)
		return -EBADF;
	/* Pairs with the acquire exchange in __lzchan_woken(). */
	__atomic_store_n(&ch->wake_req, 1, __ATOMIC_RELEASE);
	if (ch->ps) {
		__lzchan_ps_kick(ch);	/* a subscriber's futex */
		return 0;
	}
	if (ch->f.role != LZCHAN_RECEIVER)
		return 0;	/* lzchan_send_wait() sleeps 20 us at most */
	if (ch->backend == LZCHAN_BACKEND_DEV) {
		uint64_t one = 1;

		/* The eventfd the receiver sleeps on (and an event loop waits
		 * on: it sees the fd readable, as after any wake). */
		if (ch->evfd >= 0 && write(ch->evfd, &one, sizeof(one)) < 0)
			(void)0;	/* EAGAIN: the counter is full, so readable */
	} else if (ch->wake_word) {
		uint64_t one = 1;

		/* An event loop waiting on our event fd sees it readable (the
		 * eventfd in its set; __lzchan_sock_service() drains it). */
		if (ch->wakefd >= 0 && write(ch->wakefd, &one, sizeof(one)) < 0)
			(void)0;	/* EAGAIN: the counter is full, so readable */
		/* As a sender's wake.  Seq_cst, after the request: a receiver
		 * whose acquire sample of wake_word (__lz_prepare_park()) sees
		 * it also sees the request; one that samples before it has
		 * its futex wait return at once. */
		__atomic_fetch_add(ch->wake_word, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, ch->wake_word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	return 0;
}

int lzchan_recv_wait(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane,
		     int64_t timeout_ns)
{
	uint64_t now = __lzchan_now_ns(), deadline, spin_end;
	bool slept = false;
	int r, i;

	if (ch && ch->ps)
		return __lzchan_ps_recv_wait(ch, buf, cap, lane, timeout_ns);
	deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;
	for (;;) {
		r = lzchan_recv(ch, buf, cap, lane);
		if (r != -EAGAIN)
			return r;
		/* Spin once, before the first sleep: a wake that brought
		 * nothing (a bound, a stranger's byte) parks again at once,
		 * so an idle receiver costs one wakeup in 10 s. */
		spin_end = slept ? now : now + ch->spin_ns;
		while (now < spin_end && now < deadline) {
			for (i = 0; i < 64; i++) {
				r = lzchan_recv(ch, buf, cap, lane);
				if (r != -EAGAIN)
					return r;
				__lz_cpu_relax();
			}
			if (__lzchan_woken(ch))
				return -EINTR;
			now = __lzchan_now_ns();
		}
		if (now >= deadline)
			return -ETIMEDOUT;
		r = __lz_park(ch, deadline);
		if (r == -EINTR)
			return r;
		slept = true;
		now = __lzchan_now_ns();
	}
}

int lzchan_send_wait(struct lzchan *ch, const void *buf, size_t len,
		     int64_t timeout_ns)
{
	uint64_t start = __lzchan_now_ns(), now, deadline;
	unsigned int tries = 0;
	int r;

	deadline = timeout_ns < 0 ? UINT64_MAX : start + (uint64_t)timeout_ns;
	for (;;) {
		r = lzchan_send(ch, buf, len);
		if (r != -EAGAIN)
			return r;
		now = __lzchan_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (__lzchan_woken(ch))
			return -EINTR;
		/* The ring is full: the receiver is working.  Spin briefly,
		 * then give it the CPU, then sleep a little. */
		if (++tries < 64) {
			__lz_cpu_relax();
		} else if (now - start < 1000000) {
			sched_yield();
		} else {
			struct timespec ts = { .tv_nsec = 20000 };

			if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
				return -EINTR;
		}
	}
}

int lzchan_event_fd(struct lzchan *ch)
{
	if (ch && ch->f.role == LZCHAN_SUBSCRIBER)
		return __lzchan_ps_event_fd(ch);
	if (!ch || ch->f.role != LZCHAN_RECEIVER)
		return -EBADF;
	if (ch->backend == LZCHAN_BACKEND_SHM && ch->lsock < 0)
		return -EOPNOTSUPP;	/* no doorbell socket (lzchan_sock.c) */
	return ch->evfd;
}

int lzchan_arm(struct lzchan *ch)
{
	int r;

	if (ch && ch->f.role == LZCHAN_SUBSCRIBER)
		return __lzchan_ps_arm(ch);
	if (!ch || ch->f.role != LZCHAN_RECEIVER)
		return -EBADF;
	if (ch->backend == LZCHAN_BACKEND_SHM && ch->lsock < 0)
		return -EOPNOTSUPP;
	if (ch->f.armed)
		return 0;
	/* The inline receives go to the library from now on, armed or not:
	 * what the looks below find (an arm refused with -EAGAIN) is not
	 * hidden behind inline "empty" verdicts, and the next receive
	 * settles and grants afresh. */
	__lzchan_rx_quiet_revoke(ch);
	ch->f.span = 0;
	if (ch->backend == LZCHAN_BACKEND_SHM) {
		/* New senders' hellos in, old wake bytes out; then "armed",
		 * published by the release store of parked that follows. */
		__lzchan_sock_service(ch);
		__lzchan_sock_armed(ch);
		__lz_store(&ch->f.rx->armed, 1);
	}
	r = __lz_prepare_park(ch);
	if (r == 1) {
		/* Without membarrier a sender may miss "parked": waiting on
		 * the fd alone could wait forever. */
		__lz_set_parked(ch, false);
		r = -ENOSYS;
	}
	if (r < 0) {
		if (ch->backend == LZCHAN_BACKEND_SHM)
			__lz_store(&ch->f.rx->armed, 0);	/* relaxed: read after parked */
		return r;
	}
	ch->f.armed = true;
	return 0;
}

/* Sleep a little while waiting for something outside the channel: 1 ms,
 * growing to 10 ms.  -EINTR if a signal handler ran. */
static int __lz_wait_nap(unsigned int *round)
{
	struct timespec ts = { .tv_nsec = *round < 20 ? 1000000 : 10000000 };

	++*round;
	return nanosleep(&ts, NULL) < 0 && errno == EINTR ? -EINTR : 0;
}

int lzchan_open_wait(struct lzchan **chp, const char *name, unsigned int flags,
		     const struct lzchan_opts *opts, int64_t timeout_ns)
{
	uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : __lzchan_now_ns() + (uint64_t)timeout_ns;
	unsigned int round = 0;
	int r;

	for (;;) {
		r = lzchan_open(chp, name, flags, opts);
		if (r != -ENOENT)
			return r;
		if (__lzchan_now_ns() >= deadline)
			return -ETIMEDOUT;
		r = __lz_wait_nap(&round);
		if (r)
			return r;
	}
}

int lzchan_wait_receiver(struct lzchan *ch, int64_t timeout_ns)
{
	uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : __lzchan_now_ns() + (uint64_t)timeout_ns;
	unsigned int round = 0;
	int r;

	if (!ch || ch->f.role != LZCHAN_SENDER)
		return -EBADF;
	for (;;) {
		/* Pairs with the receiver's (or the module's) release store
		 * of rx_status. */
		uint64_t st = __lz_load_acq(&ch->f.hdr->rx_status);

		if (__lzchan_guard_lost(ch->guard))
			return ch->lost_err;
		/* shm: ATTACHED is believed only with the receiver's lock
		 * held (a dead one leaves ATTACHED behind). */
		if (LZCHAN_STATUS_STATE(st) == LZCHAN_RX_ATTACHED &&
		    (ch->backend != LZCHAN_BACKEND_SHM || __lzchan_shm_rx_alive(ch) == 1))
			return 0;
		if (__lzchan_now_ns() >= deadline)
			return -ETIMEDOUT;
		if (__lzchan_woken(ch))
			return -EINTR;
		r = __lz_wait_nap(&round);
		if (r)
			return r;
	}
}
