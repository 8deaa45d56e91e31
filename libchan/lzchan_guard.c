// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * liblzchan: shm mappings that survive their file being cut short.
 *
 * A shm channel is a file that every party with write access may also
 * truncate (or punch holes in, on a full file system).  A page of a shared
 * mapping past the file's end, or one the file system cannot supply, kills
 * whoever touches it with SIGBUS.  No OS mechanism stops a writer of a
 * named tmpfs file from truncating it (seals need memfd_create), so the
 * library contains the damage instead: a SIGBUS handler, installed when the
 * first shm channel is mapped, recognises faults inside channel mappings,
 * replaces the whole mapping with private zeroed memory (so the faulting
 * access completes harmlessly), says "receiver gone" in the replacement's
 * header (so the inline send path turns to the library) and marks the
 * mapping lost.  From then on every call on the handle fails with -EIO:
 * the loss is reported, never silent.  Faults anywhere else go to the
 * handler that was there before (the default one kills, as it would have).
 *
 * dev: the module tears down the mappings of an endpoint whose grant is
 * revoked (LZCHAN_IOC_REVOKE), and a later access to them gets SIGBUS.  So
 * a dev handle maps all its areas inside one reserved range, guarded the
 * same way (__lzchan_dev_reserve()): a revoked holder's calls then fail as
 * a departed peer's do (-EPIPE, the handle's lost_err), never its process.
 * On dev a SIGBUS in the range can only mean that.
 *
 * The handler only reads the list of guarded mappings.  Entries are
 * changed under a mutex and never freed, only reused, so a handler walking
 * the list never follows a freed pointer; each has a sequence count, odd
 * while it changes, so a handler never acts on a range half rewritten.
 *
 * Floor 0: calls no other file of libchan (the floors:
 * Documentation/libchan/design.rst, "The library's floors").
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lzchan_internal.h"

static struct __lzchan_guard *__lz_guards;	/* newest first */
static pthread_mutex_t __lz_guard_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t __lz_guard_once = PTHREAD_ONCE_INIT;
static struct sigaction __lz_guard_old;
static int __lz_guard_err;

static void __lz_guard_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	struct __lzchan_guard *g;

	/* Only a fault has an address: a SIGBUS sent by kill() or sigqueue()
	 * (si_code <= 0) goes to the old handler as it is. */
	if (si->si_code <= 0)
		goto not_ours;
	/* Pairs with the release store of __lz_guards in __lzchan_guard_add():
	 * an entry reached is fully written. */
	for (g = __atomic_load_n(&__lz_guards, __ATOMIC_ACQUIRE); g; g = g->next) {
		/* Pairs with the release increment that ends a change in
		 * __lz_guard_set(). */
		uint32_t seq = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
		uintptr_t start = __atomic_load_n(&g->start, __ATOMIC_RELAXED);
		size_t len = __atomic_load_n(&g->len, __ATOMIC_RELAXED);

		/* Pairs with the release fence after the increment that
		 * begins a change: the fields above predate it. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if ((seq & 1) || __atomic_load_n(&g->seq, __ATOMIC_RELAXED) != seq)
			continue;	/* being changed: not a live range */
		if (!start || a < start || a - start >= len)
			continue;
		/* No reserve: a dev range is the whole channel (up to
		 * max_channel_bytes), and strict overcommit must not turn
		 * the containment into the kill it prevents. */
		if (mmap((void *)start, len, PROT_READ | PROT_WRITE,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED)
			break;		/* cannot contain it: the old handler's turn */
		if (g->hdr_off != SIZE_MAX) {
			struct lzchan_shm_hdr *h = (void *)(start + g->hdr_off);

			/* Read by the send paths with acquire (they turn to
			 * the library, which says -EIO); nothing else of the
			 * replacement matters. */
			__atomic_store_n(&h->rx_status, __LZCHAN_STATUS_LOST,
					 __ATOMIC_RELEASE);
		}
		/* Relaxed: read by the same call (__lzchan_cut(), after
		 * the access that faulted, on this thread) or a later one. */
		__atomic_store_n(&g->lost, 1, __ATOMIC_RELAXED);
		/* The handle's own copy of that mark, which __lzchan_cut()
		 * reads (one load where g->lost through f.lost is two).
		 * Relaxed, as lost. */
		{
			uint32_t *c = __atomic_load_n(&g->cut, __ATOMIC_RELAXED);

			if (c)
				__atomic_store_n(c, 1, __ATOMIC_RELAXED);
		}
		/* A sender's attn_seen: the replacement's attn reads 0, so
		 * the inline send's check after publishing (a relaxed load
		 * after its signal fence, on this thread) sees them differ
		 * and asks the library, which says -EIO; so does every later
		 * gate.  A receiver's span, zeroed: the inline receive's
		 * count of it after its copy (after its signal fence) borrows
		 * and says -EIO; every later call goes to the library.
		 * Relaxed, as lost. */
		{
			/* The word, then its value: stored the other way
			 * round, on this thread, with a signal fence between
			 * (__lzchan_guard_poison()). */
			uint32_t *p = __atomic_load_n(&g->poison, __ATOMIC_RELAXED);

			if (p)
				__atomic_store_n(p, __atomic_load_n(&g->poison_val,
								    __ATOMIC_RELAXED),
						 __ATOMIC_RELAXED);
		}
		return;
	}
not_ours:
	if (__lz_guard_old.sa_flags & SA_SIGINFO) {
		__lz_guard_old.sa_sigaction(sig, si, uc);
	} else if (__lz_guard_old.sa_handler == SIG_IGN) {
		return;
	} else if (__lz_guard_old.sa_handler == SIG_DFL) {
		/* The default action, as if we were not here: a fault
		 * faults again once we return, a sent signal is raised
		 * again (blocked until we return); either kills. */
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGBUS, &dfl, NULL);
		if (si->si_code <= 0)
			raise(SIGBUS);
	} else {
		__lz_guard_old.sa_handler(sig);
	}
}

static void __lz_guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = __lz_guard_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &__lz_guard_old) < 0)
		__lz_guard_err = -errno;
}

/* Rewrite entry @g under the sequence count (and __lz_guard_lock). */
static void __lz_guard_set(struct __lzchan_guard *g, uintptr_t start, size_t len,
			   size_t hdr_off)
{
	/* Odd: a handler that reads the fields below ignores the entry. */
	__atomic_store_n(&g->seq, g->seq + 1, __ATOMIC_RELAXED);
	/* Pairs with the handler's acquire fence: it sees the odd count or
	 * the fields as they were. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&g->start, start, __ATOMIC_RELAXED);
	__atomic_store_n(&g->len, len, __ATOMIC_RELAXED);
	g->hdr_off = hdr_off;
	/* Relaxed, as the other fields: the odd count keeps a handler off. */
	__atomic_store_n(&g->poison, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&g->cut, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&g->lost, 0, __ATOMIC_RELAXED);
	/* Pairs with the handler's acquire load of seq: the fields are in
	 * place before the even count says so. */
	__atomic_store_n(&g->seq, g->seq + 1, __ATOMIC_RELEASE);
}

/*
 * Guard [start, start + len), a mapping of a shm channel file (or a dev
 * handle's reserved range: __lzchan_dev_reserve()); @hdr_off is
 * where its struct lzchan_shm_hdr lies in it (SIZE_MAX: none).  Returns the
 * entry to pass to __lzchan_guard_retire(), or NULL with errno set.
 * LZCHAN_NO_SIGBUS_GUARD=1 in the environment leaves SIGBUS alone (for
 * programs with a SIGBUS handler of their own): the entry is still made,
 * but a truncated file then kills as before.
 */
struct __lzchan_guard *__lzchan_guard_add(void *start, size_t len, size_t hdr_off)
{
	const char *off = getenv("LZCHAN_NO_SIGBUS_GUARD");
	struct __lzchan_guard *g;

	if (!off || strcmp(off, "1")) {
		pthread_once(&__lz_guard_once, __lz_guard_install);
		if (__lz_guard_err) {
			errno = -__lz_guard_err;
			return NULL;
		}
	}
	pthread_mutex_lock(&__lz_guard_lock);
	for (g = __lz_guards; g; g = g->next)
		if (!g->start)
			break;
	if (g) {
		__lz_guard_set(g, (uintptr_t)start, len, hdr_off);
	} else {
		g = calloc(1, sizeof(*g));
		if (!g) {
			pthread_mutex_unlock(&__lz_guard_lock);
			return NULL;
		}
		g->start = (uintptr_t)start;
		g->len = len;
		g->hdr_off = hdr_off;
		g->next = __lz_guards;
		/* Pairs with the handler's acquire load of the list head:
		 * the entry is whole before it is reachable. */
		__atomic_store_n(&__lz_guards, g, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&__lz_guard_lock);
	return g;
}

/* Word @word is to be set to @val when the mapping is replaced: a sender
 * handle's attn_seen to LZCHAN_ATTN_POISON, a receiver's span to 0
 * (lzchan_fast.h).  Only the handle's own thread makes the accesses that
 * fault; relaxed, as the handler reads them (the value first: the
 * handler takes a word it finds with the value stored before it). */
void __lzchan_guard_poison(struct __lzchan_guard *g, uint32_t *word, uint32_t val)
{
	if (!g)
		return;
	__atomic_store_n(&g->poison_val, val, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* val before word, for the handler */
	__atomic_store_n(&g->poison, word, __ATOMIC_RELAXED);
}

/* Word @word (the handle's f.cut, which __lzchan_cut() reads) is to be
 * set to 1 when the mapping is replaced.  Relaxed, as the handler reads
 * it (the handle's own thread makes the accesses that fault). */
void __lzchan_guard_cut_word(struct __lzchan_guard *g, uint32_t *word)
{
	if (g)
		__atomic_store_n(&g->cut, word, __ATOMIC_RELAXED);
}

/* Was the guarded mapping replaced (its file cut short under it)? */
bool __lzchan_guard_lost(const struct __lzchan_guard *g)
{
	/* Relaxed: set by the SIGBUS handler, on this thread or earlier. */
	return g && __atomic_load_n(&g->lost, __ATOMIC_RELAXED);
}

/* The mapping is about to be unmapped: stop guarding it.  The entry is
 * kept for reuse (a handler may be reading it). */
void __lzchan_guard_retire(struct __lzchan_guard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&__lz_guard_lock);
	__lz_guard_set(g, 0, 0, SIZE_MAX);
	pthread_mutex_unlock(&__lz_guard_lock);
}

/*
 * Guard handle @ch's mapping, [map_base, map_base + map_len), whose struct
 * lzchan_shm_hdr is at @hdr_off (SIZE_MAX: none, a pub/sub channel's), and
 * point the handle's words at the guard: f.lost, the cut word the handler
 * sets (__lzchan_cut() reads it), and the word it poisons -- a sender's
 * attn_seen (the inline send then asks the library), a receiver's span
 * (the inline receive's count borrows).  What the calls then say is
 * lost_err: -EIO on shm, -EPIPE on dev.  0 or -errno.
 */
int __lzchan_guard_handle(struct lzchan *ch, size_t hdr_off)
{
	ch->lost_err = ch->backend == LZCHAN_BACKEND_DEV ? -EPIPE : -EIO;
	ch->guard = __lzchan_guard_add(ch->map_base, ch->map_len, hdr_off);
	if (!ch->guard)
		return -errno;
	ch->f.lost = &ch->guard->lost;	/* earlier 0.3 headers read it */
	__lzchan_guard_cut_word(ch->guard, &ch->f.cut);
	if (ch->f.role == LZCHAN_SENDER)
		__lzchan_guard_poison(ch->guard, &ch->f.attn_seen, LZCHAN_ATTN_POISON);
	else if (ch->f.role == LZCHAN_RECEIVER)
		__lzchan_guard_poison(ch->guard, &ch->f.span, 0);
	return 0;
}

/*
 * dev: reserve @bytes of address space (the channel's size: every area's
 * offset lies below it) for @ch's areas, each mapped later at its own
 * offset in it (__lzchan_dev_map()), and guard the range (@hdr_off as for
 * __lzchan_guard_handle()).  Inaccessible and backed by nothing until an
 * area is mapped over it; the close unmaps the whole range at once.
 * 0 or -errno.
 */
int __lzchan_dev_reserve(struct lzchan *ch, uint64_t bytes, size_t hdr_off)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	void *p;

	if (!bytes || bytes % page || bytes > SIZE_MAX ||
	    (hdr_off != SIZE_MAX && hdr_off > bytes - sizeof(struct lzchan_shm_hdr)))
		return -EPROTO;
	p = mmap(NULL, (size_t)bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	ch->map_base = p;
	ch->map_len = (size_t)bytes;
	return __lzchan_guard_handle(ch, hdr_off);
}

/* dev: map [@off, @off + @len) of @ch's channel with @prot at its place in
 * the reserved range.  The area, or NULL with errno set (EPROTO: it does
 * not lie inside the channel). */
void *__lzchan_dev_map(struct lzchan *ch, uint64_t off, uint64_t len, int prot)
{
	void *p;

	if (!ch->map_base || !len || off > ch->map_len || len > ch->map_len - off) {
		errno = EPROTO;
		return NULL;
	}
	p = mmap((char *)ch->map_base + off, (size_t)len, prot, MAP_SHARED | MAP_FIXED, ch->fd,
		 (off_t)off);
	if (p != MAP_FAILED)
		return p;
	/* An older kernel may have unmapped that part of the reservation
	 * before the module refused: reserve it again, unless another
	 * thread's mapping landed in the hole meanwhile -- then the range
	 * ends before it (our close must not unmap what is not ours): what
	 * lies past it, ours, goes now.  (The handle fails either way.) */
	{
		char *hole = (char *)ch->map_base + off;
		int e = errno;
		void *q = mmap(hole, (size_t)len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			       MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);

		if (q != hole) {
			if (q != MAP_FAILED)	/* a kernel that took it as a hint */
				munmap(q, (size_t)len);
			munmap(hole + len, ch->map_len - off - len);
			ch->map_len = off;
		}
		errno = e;
	}
	return NULL;
}
