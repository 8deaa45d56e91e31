// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A sender's two signals to its receiver: ring the bell (its lane's bit,
 * for a receiver that stopped polling the lane) and wake a parked
 * receiver (the module's eventfd, or on shm the doorbell socket or the
 * futex).
 *
 * Floor 2, below send and receive, above the doorbell socket (the floors:
 * Documentation/libchan/design.rst, "The library's floors").
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lzchan_internal.h"

void __lzchan_wake(struct lzchan *ch, uint32_t parked)
{
	uint32_t before = ch->f.woken_parked;

	ch->f.woken_parked = parked;
	if (ch->backend == LZCHAN_BACKEND_DEV) {
		/* 1 signalled, 0 no eventfd, EPIPE receiver gone: the next
		 * send reports the last. */
		(void)ioctl(ch->fd, LZCHAN_IOC_WAKE);
	} else {
		/* Pairs with the receiver's release store of parked, which
		 * follows its store of armed (lzchan_arm()): our caller loaded
		 * parked; this fence orders that load before the one of
		 * armed, so an episode of an armed receiver is seen armed. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__lz_load(&ch->f.rx->armed)) {
			/* It waits on its event fd: an armed receiver
			 * listens, so connect now if need be. */
			ch->sock_tried_ns = 0;
			if (__lzchan_sock_ring(ch) == 0) {
				/* Counted as the futex's wakes are (lzchan_stat()'s
				 * wakeups); relaxed: the armed receiver sleeps on
				 * its fd, not on this word. */
				__atomic_fetch_add(ch->wake_word, 1, __ATOMIC_RELAXED);
				return;
			}
			/* Not reached through the socket: through the file's
			 * inotify watch instead, and the futex below (for a
			 * receiver that disarmed meanwhile, or one parked on
			 * the futex).  Not counted as reached: the next send
			 * tries the socket again. */
			__lzchan_sock_touch(ch);
			ch->f.woken_parked = before;
		}
		/* Change the word the receiver waits on, then wake it: a wake
		 * landing before its futex wait then makes the wait return.
		 * Pairs with the acquire load of wake_word in
		 * __lz_prepare_park(). */
		__atomic_fetch_add(ch->wake_word, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, ch->wake_word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

/*
 * Ring the bell: toggle our lane's bit, for a receiver that stopped
 * polling the lane.  dev: the module toggles it (LZCHAN_IOC_RING: only it
 * writes the bell, so no co-sender can ring or undo ours), with a fully
 * ordered atomic after our stores, and wakes the receiver if it parked
 * (only the module reads the rx header for us); shm: a locked RMW here,
 * and our caller looks at the park word itself (__lz_tx_attn()).  Either
 * pairs with the receiver's acquire load of the bell word
 * (__lz_rx_bell_words()).
 */
void __lzchan_ring(struct lzchan *ch)
{
	if (ch->backend == LZCHAN_BACKEND_DEV)
		/* Fails only unbound, or revoked (EKEYREVOKED: our mappings
		 * went with it, which the guard reports). */
		(void)ioctl(ch->fd, LZCHAN_IOC_RING);
	else
		__atomic_fetch_xor(&ch->bell[ch->lane / 64], 1ULL << (ch->lane % 64),
				   __ATOMIC_SEQ_CST);
}
