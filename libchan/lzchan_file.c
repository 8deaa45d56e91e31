// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A channel's name and geometry, the backend choice, and the shm file:
 * its path, its layout and the locks that tell who is alive.
 *
 * Floor 0, below everything that opens, sends or receives (the floors:
 * Documentation/libchan/design.rst, "The library's floors"): nothing here
 * calls another file of libchan.
 *
 * Ownership of a shm channel is kept with open-file-description locks on
 * bytes far past the end of its file: the receiver holds byte LOCK_BASE,
 * the sender of lane i byte LOCK_BASE + 1 + i.  The kernel drops them
 * when the holder dies, which is how peers' deaths are seen without a
 * module.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lzchan_internal.h"

/* The same rule as the module's (see the UAPI header). */
int __lzchan_name_check(const char *name)
{
	size_t len, i;

	if (!name)
		return -EINVAL;
	len = strnlen(name, LZCHAN_NAME_SIZE);
	if (len == LZCHAN_NAME_SIZE)
		return -ENAMETOOLONG;
	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (name[i] < '!' || name[i] > '~' || name[i] == '/')
			return -EINVAL;
	return 0;
}

int __lzchan_geom_check(uint32_t slot_size, uint32_t slot_count,
			uint32_t max_senders)
{
	if (slot_size < LZCHAN_SLOT_SIZE_MIN || slot_size > LZCHAN_SLOT_SIZE_MAX ||
	    slot_size % LZCHAN_CACHELINE || (slot_size & (slot_size - 1)))
		return -EINVAL;
	if (slot_count < LZCHAN_SLOT_COUNT_MIN || slot_count > LZCHAN_SLOT_COUNT_MAX ||
	    (slot_count & (slot_count - 1)))
		return -EINVAL;
	if (!max_senders || max_senders > LZCHAN_SENDERS_MAX)
		return -EINVAL;
	return 0;
}

/* The largest message of a channel (see LZCHAN_MSG_MAX).  One slot is
 * kept free for the "not ready" marker (lzchan_ring.c). */
uint32_t __lzchan_max_msg(uint32_t slot_size, uint32_t slot_count)
{
	uint64_t m = (uint64_t)(slot_count - 1) * slot_size - sizeof(struct lzchan_slot_hdr);

	return m > LZCHAN_MSG_MAX ? LZCHAN_MSG_MAX : (uint32_t)m;
}

enum { BACKEND_AUTO, BACKEND_FORCE_DEV, BACKEND_FORCE_SHM };

static int __lzchan_backend_env(void)
{
	const char *e = getenv("LZCHAN_BACKEND");

	if (!e || !*e || !strcmp(e, "auto"))
		return BACKEND_AUTO;
	if (!strcmp(e, "dev"))
		return BACKEND_FORCE_DEV;
	if (!strcmp(e, "shm"))
		return BACKEND_FORCE_SHM;
	return -EINVAL;
}

/*
 * Which backend: the device if it exists (an existing device we may not
 * open is an error, not a reason to use another namespace of names), else
 * shared memory.  Returns the open device fd, or -ENOENT meaning "shm".
 */
int __lzchan_pick(void)
{
	int mode = __lzchan_backend_env(), fd;

	if (mode < 0)
		return mode;
	if (mode == BACKEND_FORCE_SHM)
		return -ENOENT;
	fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno == ENOENT && mode == BACKEND_AUTO)
		return -ENOENT;
	if (errno == ENOENT)
		return -ENODEV;		/* forced, but no module loaded */
	return -errno;
}

int __lzchan_shm_path(char *buf, size_t len, const char *name)
{
	const char *dir = getenv("LZCHAN_SHM_DIR");

	if (!dir || !*dir)
		dir = "/dev/shm";
	if ((size_t)snprintf(buf, len, "%s/lzchan.%s", dir, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

void __lzchan_shm_layout(struct lzchan_layout *l, uint32_t slot_size,
			 uint32_t slot_count, uint32_t max_senders, uint64_t page)
{
	uint64_t lane;

#define PG(x) (((x) + page - 1) / page * page)
	memset(l, 0, sizeof(*l));
	l->info_lanes = sizeof(struct lzchan_shm_hdr);
	/* Each lane's rx words on a page of their own, as the module has
	 * them (there only that lane's sender maps its page). */
	l->rx_lanes = page;
	l->rx_lane_stride = page;
	l->lane_slots = sizeof(struct lzchan_shm_tx);
	l->info_off = 0;
	l->info_size = PG(l->info_lanes + (uint64_t)max_senders * sizeof(struct lzchan_shm_lane));
	l->rx_off = l->info_size;
	l->rx_size = l->rx_lanes + (uint64_t)max_senders * l->rx_lane_stride;
	l->bell_off = l->rx_off + l->rx_size;
	l->bell_size = PG((max_senders + 63) / 64 * 8);
	l->lanes_off = l->bell_off + l->bell_size;
	lane = PG(l->lane_slots + (uint64_t)slot_count * slot_size);
	l->lane_stride = lane;
	l->lane_size = lane;
#undef PG
}

/* ---- the locks ---- */

int __lzchan_lock(int fd, int64_t byte)
{
	struct flock fl = {
		.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1,
	};

	return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

int __lzchan_unlock(int fd, int64_t byte)
{
	struct flock fl = {
		.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1,
	};

	return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

/* 1 if another open file description holds @byte, 0 if none, -errno. */
int __lzchan_locked(int fd, int64_t byte)
{
	struct flock fl = {
		.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1,
	};

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	return fl.l_type != F_UNLCK;
}

int __lzchan_shm_lane_alive(struct lzchan *ch, uint32_t lane)
{
	return __lzchan_locked(ch->fd, LOCK_BASE + 1 + lane);
}

int __lzchan_shm_rx_alive(struct lzchan *ch)
{
	return __lzchan_locked(ch->fd, LOCK_BASE);
}

/*
 * shm: is lane @i's sender dead?  Its lock says: a free lock on a lane whose
 * status says ATTACHED is a death, and the lane is marked CLOSED, as the
 * module would mark it (ch->departed then asks the receive to report the
 * end).  Slow paths only: a system call.  True if one was made.
 */
bool __lzchan_shm_lane_look(struct lzchan *ch, uint32_t i)
{
	struct __lzchan_rxlane *rl = &ch->f.lanes[i];
	/* Pairs with the shm sender's release store of its status. */
	uint64_t st = __lz_load_acq(&rl->info->status);

	if (ch->backend != LZCHAN_BACKEND_SHM ||
	    LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_ATTACHED)
		return false;
	if (__lzchan_shm_lane_alive(ch, i) == 0) {
		/* Its lock is free: mark the lane closed, as the module would.
		 * Pairs with the CAS in __lzchan_shm_claim(). */
		if (__atomic_compare_exchange_n(&((struct lzchan_shm_lane *)rl->info)->status,
				&st, LZCHAN_STATUS(LZCHAN_STATUS_GEN(st), LZCHAN_LANE_CLOSED),
				false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			ch->departed = true;
	}
	return true;		/* a system call was made */
}

/*
 * shm: lane @i's sender hung up its connection to our socket: it closed,
 * or died.  A death leaves its status ATTACHED, and only its lock tells;
 * look now (the event loop that woke for the hang-up may not look again
 * until something else wakes it).  True while the status still says
 * ATTACHED: the sender lives on, or is dying and has not yet closed the
 * channel file -- the caller looks again a little later.
 */
bool __lzchan_shm_hup_look(struct lzchan *ch, uint32_t i)
{
	/* Pairs with the release store of the lane status (the sender's
	 * close, a claimer's or our liveness CAS). */
	if (LZCHAN_STATUS_STATE(__lz_load_acq(&ch->f.lanes[i].info->status)) !=
	    LZCHAN_LANE_ATTACHED)
		return false;
	__lzchan_shm_lane_look(ch, i);
	/* As above: the CAS in __lzchan_shm_lane_look() stored CLOSED if dead. */
	return LZCHAN_STATUS_STATE(__lz_load_acq(&ch->f.lanes[i].info->status)) ==
	       LZCHAN_LANE_ATTACHED;
}
