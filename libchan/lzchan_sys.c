// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The clock and the memory barriers.
 *
 * Floor 0 (the floors: Documentation/libchan/design.rst, "The library's
 * floors"): nothing here calls another file of libchan.
 *
 * The store->load race (Dekker): a sender stores a message's seq then loads
 * its lane's attn (and, if it moved, the copy of parked stored before it);
 * the receiver stores parked and the polled lanes' attn, then loads the
 * seqs.  Without a
 * full barrier on both sides each could miss the other's store and the
 * receiver would sleep on a message.  We put the whole cost on the parking
 * side: senders register for MEMBARRIER_CMD_GLOBAL_EXPEDITED once, and keep
 * only a compiler barrier between their store and load; the receiver, after
 * storing parked, calls membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which
 * returns only once every running thread of every registered process has
 * executed a full memory barrier.  The proof is in
 * Documentation/libchan/design.rst.  Without membarrier (old or locked-down
 * kernels) senders fence every send and the receiver never sleeps longer
 * than 1 ms at a time (lzchan_wait.c), so no wakeup is ever lost.
 */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lzchan_internal.h"

uint64_t __lzchan_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int __lz_membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

bool __lzchan_query_barrier(void)
{
	int r = __lz_membarrier(MEMBARRIER_CMD_QUERY);

	return r >= 0 && (r & MEMBARRIER_CMD_GLOBAL_EXPEDITED);
}

bool __lzchan_register_sender_barrier(void)
{
	return __lz_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

/* Full barrier on every running thread of every sender; 0, or -1 if we
 * fell back to a local fence (then sleeps must be bounded). */
int __lzchan_heavy_barrier(struct lzchan *ch)
{
	/* Pairs with the compiler barrier in __lz_tx_notify() and in the
	 * inline __lzchan_fast_publish(), before their load of attn. */
	if (ch->have_membarrier && __lz_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0)
		return 0;
	ch->have_membarrier = false;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return -1;
}
