// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Opening and closing channels on both backends.
 *
 * dev: /dev/lzchan creates the memory and maps each area with the
 *      protections of our role (see Documentation/userspace-api/lzchan.rst).
 * shm: a file /dev/shm/lzchan.<name> holding a small header page (the
 *      geometry and layout) followed by the same layout the module uses,
 *      with the locks of lzchan_file.c telling who owns what.
 *
 * Floor 5, above send and receive (lzchan_ring.c) and lzchan_stat(), below
 * waiting (the floors: Documentation/libchan/design.rst, "The library's
 * floors").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lzchan_internal.h"

int lzchan_version_major(void)
{
	return LZCHAN_VERSION_MAJOR;
}

int lzchan_version_minor(void)
{
	return LZCHAN_VERSION_MINOR;
}

void lzchan_opts_init(struct lzchan_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->slot_size = 64;
	o->slot_count = 1024;
	o->max_senders = 16;
	o->numa_node = LZCHAN_NODE_LOCAL;
	o->mode = 0600;
	o->spin_ns = 50000;
}

void lzchan_ps_opts_init(struct lzchan_ps_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->slot_size = 256;
	o->slot_count = 1024;
	o->max_subscribers = 1024;
	o->policy = LZCHAN_PS_OVERWRITE;
	o->stall_ms = 1000;
	o->numa_node = LZCHAN_NODE_LOCAL;
	o->mode = 0600;
}

static void __lzchan_set_geom(struct lzchan *ch, uint32_t slot_size,
			      uint32_t slot_count, uint32_t max_senders)
{
	ch->f.slot_size = slot_size;
	ch->f.slot_shift = __builtin_ctz(slot_size);
	ch->f.slot_count = slot_count;
	ch->f.mask = slot_count - 1;
	ch->f.max_senders = max_senders;
	ch->max_msg = __lzchan_max_msg(slot_size, slot_count);
}

/* A publish/subscribe role? */
static bool __lz_ps_role(uint32_t role)
{
	return role == LZCHAN_PUBLISHER || role == LZCHAN_SUBSCRIBER;
}

/* ---- the mappings ---- */

/* Point the handle's area pointers at a channel area starting at @base
 * (shm: one mapping) -- or map each area at its offset in the range
 * reserved for them (dev: @base NULL; __lzchan_dev_map()). */
static int __lzchan_map_areas(struct lzchan *ch, char *base)
{
	const struct lzchan_layout *l = &ch->layout;
	bool rx = ch->f.role == LZCHAN_RECEIVER;
	char *info, *rxa, *bell;
	uint32_t i;

	if (base) {
		info = base + l->info_off;
		rxa = base + l->rx_off;
		bell = base + l->bell_off;
	} else {
		info = __lzchan_dev_map(ch, l->info_off, l->info_size, PROT_READ);
		if (!info)
			return -errno;
		/* A sender maps neither the rx header and the other lanes'
		 * rx pages nor the bell (the module refuses them): only its
		 * own lane's rx page, below.  The module rings the bell for
		 * it (LZCHAN_IOC_RING) and wakes a parked receiver there. */
		rxa = bell = NULL;
		if (rx) {
			rxa = __lzchan_dev_map(ch, l->rx_off, l->rx_size, PROT_READ | PROT_WRITE);
			bell = __lzchan_dev_map(ch, l->bell_off, l->bell_size, PROT_READ);
			if (!rxa || !bell)
				return -errno;
		}
	}
	ch->f.hdr = (struct lzchan_shm_hdr *)info;
	ch->lane_info = (struct lzchan_shm_lane *)(info + l->info_lanes);
	ch->f.rx = (struct lzchan_shm_rx *)rxa;
	ch->rx_lanes = rxa ? rxa + l->rx_lanes : NULL;
	ch->bell = (uint64_t *)bell;
	ch->wake_word = bell ? (uint32_t *)(bell + l->bell_size - LZCHAN_BELL_WAKE_BACK) : NULL;
	ch->bell_words = (ch->f.max_senders + 63) / 64;

	if (rx) {
		ch->f.lanes = calloc(ch->f.max_senders, sizeof(*ch->f.lanes));
		ch->f.active = calloc(ch->f.max_senders, sizeof(*ch->f.active));
		ch->bell_seen = calloc(ch->bell_words, sizeof(*ch->bell_seen));
		ch->watch = calloc(ch->f.max_senders, sizeof(*ch->watch));
		if (!ch->f.lanes || !ch->f.active || !ch->bell_seen || !ch->watch)
			return -ENOMEM;
		for (i = 0; i < ch->f.max_senders; i++) {
			char *lane = base ? base + l->lanes_off + i * l->lane_stride :
				     __lzchan_dev_map(ch, l->lanes_off + i * l->lane_stride,
						      l->lane_size, PROT_READ);

			if (!lane)
				return -errno;
			ch->f.lanes[i].slots = lane + l->lane_slots;
			ch->f.lanes[i].rxl = __lzchan_rxl(ch, i);
			ch->f.lanes[i].info = &ch->lane_info[i];
		}
	} else if (!base) {
		/* dev: the module chose our lane at OPEN.  (shm: the lane is
		 * claimed after mapping; __lzchan_shm_open() points at it.) */
		char *lane = __lzchan_dev_map(ch, l->lanes_off + ch->lane * l->lane_stride,
					      l->lane_size, PROT_READ | PROT_WRITE);
		/* Our lane's rx words, alone on their page. */
		char *rxl = __lzchan_dev_map(ch, l->rx_off + l->rx_lanes +
					     (uint64_t)ch->lane * l->rx_lane_stride,
					     (uint64_t)sysconf(_SC_PAGESIZE), PROT_READ);

		if (!lane || !rxl)
			return -errno;
		ch->f.tx = (struct lzchan_shm_tx *)lane;
		ch->f.slots = lane + l->lane_slots;
		ch->f.my_rxl = (struct lzchan_shm_rx_lane *)rxl;
		ch->cont = calloc((ch->f.slot_count + 7) / 8, 1);
		if (!ch->cont)
			return -ENOMEM;
	}
	return 0;
}

/* ---- dev backend ---- */

/* LZCHAN_IOC_CREATE on @fd: channel @o, or with @ps a pub/sub channel;
 * @cflags: LZCHAN_CREATE_EXCL, _TEMP.  1: created, 0: it existed, -errno. */
static int __lzchan_dev_create(int fd, const char *name, uint32_t cflags,
			       const struct lzchan_opts *o, const struct lzchan_ps_opts *ps)
{
	struct lzchan_create c = { .size = sizeof(c), .flags = cflags };

	if (ps) {
		c.flags |= LZCHAN_CREATE_PUBSUB | (ps->node_strict ? LZCHAN_CREATE_NODE_STRICT : 0);
		c.slot_size = ps->slot_size;
		c.slot_count = ps->slot_count;
		c.max_senders = ps->max_subscribers;	/* the places */
		c.numa_node = ps->numa_node;
		c.mode = ps->mode;
		c.policy = ps->policy;
		c.stall_ms = ps->policy == LZCHAN_PS_BACKPRESSURE ? ps->stall_ms : 0;
	} else {
		c.flags |= o->node_strict ? LZCHAN_CREATE_NODE_STRICT : 0;
		c.slot_size = o->slot_size;
		c.slot_count = o->slot_count;
		c.max_senders = o->max_senders;
		c.numa_node = o->numa_node;
		c.mode = o->mode;
	}
	memcpy(c.name, name, strlen(name) + 1);
	return ioctl(fd, LZCHAN_IOC_CREATE, &c) < 0 ? -errno : (int)c.created;
}

/*
 * The module behind @ch->fd (a /dev/lzchan fd, or an endpoint): its
 * features into @ft, and whether this library can use it.  A module of
 * another ABI keeps other shared-memory rules (it would refuse our open
 * too, or take it without keeping attn): -EPROTO.
 */
static int __lzchan_dev_check(struct lzchan *ch, struct lzchan_features *ft)
{
	memset(ft, 0, sizeof(*ft));
	ft->size = sizeof(*ft);
	if (ioctl(ch->fd, LZCHAN_IOC_FEATURES, ft) < 0)
		return -errno;
	if (ft->abi_version != LZCHAN_ABI_VERSION)
		return -EPROTO;
	ch->backend = LZCHAN_BACKEND_DEV;
	/* Does the module record clean closes (lzchan_end_cause())? */
	ch->bye_known = !!(ft->features & LZCHAN_FEAT_BYE);
	return 0;
}

/*
 * @ch->fd is bound (LZCHAN_IOC_OPEN, by name or as an endpoint) in role
 * ch->f.role, which @in (LZCHAN_IOC_INFO) describes, as sender of lane
 * @lane (generation @gen) or subscriber of that place: map the areas with
 * our role's protections, in one guarded range (a revoked endpoint's
 * calls then fail instead of the process: lzchan_guard.c), and set up the
 * wakeups.  @owned: LZCHAN_OWNED; @history: a subscriber's.
 */
static int __lzchan_dev_attach(struct lzchan *ch, const struct lzchan_info *in, uint32_t lane,
			       uint32_t gen, bool owned, uint32_t history)
{
	int ret;

	/* LZCHAN_OWNED: the channel we are bound to (not the name, which its
	 * owner may have removed and made again) is the caller's.  The module
	 * never changes a channel's owner and reports it in the caller's user
	 * namespace, as geteuid() does.  Nothing is mapped yet; closing the
	 * file detaches us again. */
	if (owned && in->stat.uid != geteuid())
		return -EPERM;
	ch->lane = lane;
	ch->lane_gen = gen;
	ch->numa_node = in->stat.numa_node;
	if (__lz_ps_role(ch->f.role))
		return __lzchan_ps_attach_dev(ch, in, history);
	/* Slots are addressed by shifting: a geometry this library cannot
	 * use (an older module took any multiple of 64) is refused here. */
	if (__lzchan_geom_check(in->stat.slot_size, in->stat.slot_count, in->stat.max_senders))
		return -EPROTO;
	ch->layout = in->layout;
	__lzchan_set_geom(ch, in->stat.slot_size, in->stat.slot_count, in->stat.max_senders);
	/* The rx_status the SIGBUS handler writes is the info area's. */
	ret = __lzchan_dev_reserve(ch, in->stat.bytes, in->layout.info_off);
	if (ret)
		return ret;
	ret = __lzchan_map_areas(ch, NULL);
	if (ret)
		return ret;

	if (ch->f.role == LZCHAN_RECEIVER) {
		struct lzchan_set_eventfd e = { .size = sizeof(e) };

		ch->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ch->evfd < 0)
			return -errno;
		e.fd = ch->evfd;
		if (ioctl(ch->fd, LZCHAN_IOC_SET_EVENTFD, &e) < 0)
			return __lzchan_dev_err(errno);
	}
	return 0;
}

/* @ps, @history: a pub/sub role's (as for __lzchan_shm_open()). */
static int __lzchan_dev_open(struct lzchan *ch, const char *name,
			     unsigned int flags, const struct lzchan_opts *o,
			     const struct lzchan_ps_opts *ps, uint32_t history)
{
	struct lzchan_open op = { .size = sizeof(op), .abi_version = LZCHAN_ABI_VERSION };
	struct lzchan_info in = { .size = sizeof(in) };
	struct lzchan_features ft;
	int ret;

	ret = __lzchan_dev_check(ch, &ft);
	if (ret)
		return ret;
	if (ps && !(ft.features & LZCHAN_FEAT_PUBSUB))
		return -EOPNOTSUPP;	/* a module without pub/sub channels */
	if (flags & LZCHAN_CREATE) {
		ret = __lzchan_dev_create(ch->fd, name,
					  ((flags & LZCHAN_EXCL) ? LZCHAN_CREATE_EXCL : 0) |
					  ((flags & LZCHAN_TEMP) ? LZCHAN_CREATE_TEMP : 0), o, ps);
		/* An older module refuses the flag it does not know. */
		if (ret == -EINVAL && (flags & LZCHAN_TEMP) && !(ft.features & LZCHAN_FEAT_TEMP))
			return -EOPNOTSUPP;
		if (ret < 0)
			return ret;
		ch->created = ret;
	}
	/* Bind the fd to the channel in our role, then attach as any bound
	 * fd (lzchan_open_fd() binds an endpoint instead). */
	memcpy(op.name, name, strlen(name) + 1);
	op.flags = __lzchan_open_flag(ch->f.role);
	if (ioctl(ch->fd, LZCHAN_IOC_OPEN, &op) < 0)
		return -errno;
	if (ioctl(ch->fd, LZCHAN_IOC_INFO, &in) < 0)
		return -errno;
	return __lzchan_dev_attach(ch, &in, op.lane, op.lane_gen, flags & LZCHAN_OWNED, history);
}

/* ---- shm backend ---- */

static int __lzchan_mbind(void *p, size_t len, int node, bool strict)
{
	unsigned long mask[16] = { 0 };
	/* MPOL_PREFERRED 1, MPOL_BIND 2 (linux/mempolicy.h) */
	int mode = strict ? 2 : 1;

	if (node < 0)
		return 0;		/* first touch: the creator's node */
	if (node >= (int)(sizeof(mask) * 8))
		return -EINVAL;
	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
	if (syscall(SYS_mbind, p, len, mode, mask, sizeof(mask) * 8, 0) < 0)
		return strict || errno != ENOSYS ? -errno : 0;
	return 0;
}

/*
 * A new, nameless file in @path's directory, for a channel to be made in
 * before it is published at @path.  Where the file system cannot make
 * nameless files (O_TMPFILE), a uniquely named one, whose name goes into
 * @tmp (else @tmp is "").  Returns the fd or -errno.
 */
static int __lzchan_shm_tmpfile(const char *path, mode_t mode, char *tmp, size_t len)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int fd, i;

	*tmp = 0;
	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, slash - path);
	dir[slash - path] = 0;
	fd = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, mode);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : -errno;
	for (i = 0; i < 100; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		/* "lzchan..": no channel name starts with a dot. */
		if ((size_t)snprintf(tmp, len, "%s/lzchan..new.%d.%ld", dir, (int)getpid(),
				     ts.tv_nsec + i) >= len) {
			*tmp = 0;
			return -ENAMETOOLONG;
		}
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			break;
	}
	*tmp = 0;
	return -errno;
}

/* Give the finished channel file @fd its name @path; -EEXIST if taken.
 * @tmp: its temporary name, if it has one (removed). */
static int __lzchan_shm_publish(int fd, char *tmp, const char *path)
{
	char proc[64];
	int ret = 0;

	if (*tmp) {
		if (link(tmp, path) < 0)
			ret = -errno;
		unlink(tmp);
		*tmp = 0;
		return ret;
	}
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc does not. */
	if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno == EEXIST)
		return -EEXIST;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) < 0)
		return -errno;
	return 0;
}

/* Create the channel file; *@made (if not NULL) identifies it.  @ps: a
 * pub/sub channel of that geometry (@o's geometry is then unused). */
static int __lzchan_shm_create(const char *path, const struct lzchan_opts *o,
			       const struct lzchan_ps_opts *ps, bool temp, bool *created,
			       struct stat *made)
{
	struct __lzchan_shm_file *f;
	uint64_t page = sysconf(_SC_PAGESIZE);
	struct __lzchan_guard *guard = NULL;
	struct lzchan_ps_layout psl;
	struct lzchan_layout l;
	char tmp[PATH_MAX];
	bool lost;
	size_t total;
	int fd, ret;

	if (ps)
		ret = __lzchan_ps_geom_check(ps->slot_size, ps->slot_count, ps->max_subscribers,
					     ps->policy);
	else
		ret = __lzchan_geom_check(o->slot_size, o->slot_count, o->max_senders);
	if (ret)
		return ret;
	if (o->mode & ~0777U)
		return -EINVAL;
	/* Made whole without a name, then given one in a single step (link):
	 * nobody ever opens a channel half made, so a file without a valid
	 * header is never "still being created" -- it is not a channel. */
	fd = __lzchan_shm_tmpfile(path, o->mode, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	/* open() applied the umask; channels get exactly the mode asked for. */
	if (fchmod(fd, o->mode) < 0)
		goto fail_errno;

	if (ps) {
		memset(&l, 0, sizeof(l));
		__lzchan_ps_layout(&psl, ps->slot_size, ps->slot_count, ps->max_subscribers, page);
		total = __lzchan_ps_file_size(&psl, page);
	} else {
		__lzchan_shm_layout(&l, o->slot_size, o->slot_count, o->max_senders, page);
		total = page + l.lanes_off + l.lane_stride * o->max_senders;
	}
	if (ftruncate(fd, (off_t)total) < 0)
		goto fail_errno;
	f = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED)
		goto fail_errno;
	/* The placement first (tmpfs keeps it with the file), then reserve
	 * every page: a channel that does not fit fails here with ENOSPC, not
	 * later with SIGBUS in whoever touches a page the file system cannot
	 * supply.  (A file system without fallocate keeps a sparse file.) */
	ret = __lzchan_mbind(f, total, o->numa_node, o->node_strict);
	if (!ret && fallocate(fd, 0, 0, (off_t)total) < 0 && errno != EOPNOTSUPP)
		ret = -errno;
	/* Anyone who may write the file may cut it short while we fill in
	 * the header. */
	if (!ret && !(guard = __lzchan_guard_add(f, total, SIZE_MAX)))
		ret = -errno;
	if (ret) {
		munmap(f, total);
		goto fail;
	}
	f->version = ps ? SHM_PS_FILE_VERSION : SHM_FILE_VERSION;
	f->page_size = page;
	f->numa_node = o->numa_node;
	f->layout = l;
	if (ps) {
		struct lzchan_ps_hdr *h = (void *)((char *)f + page + psl.info_off);

		f->slot_size = ps->slot_size;
		f->slot_count = ps->slot_count;
		f->flags = SHM_FILE_PUBSUB;
		f->max_subscribers = ps->max_subscribers;
		f->policy = ps->policy;
		f->stall_ms = ps->stall_ms;
		f->ps = psl;
		h->magic = LZCHAN_PS_MAGIC;
		h->abi_version = LZCHAN_ABI_VERSION;
		h->slot_size = ps->slot_size;
		h->slot_count = ps->slot_count;
		h->max_subscribers = ps->max_subscribers;
		h->policy = ps->policy;
		h->stall_ms = ps->stall_ms;
	} else {
		struct lzchan_shm_hdr *h = (void *)((char *)f + page);

		f->slot_size = o->slot_size;
		f->slot_count = o->slot_count;
		f->max_senders = o->max_senders;
		f->flags = temp ? SHM_FILE_TEMP : 0;
		h->magic = LZCHAN_SHM_MAGIC;
		h->abi_version = LZCHAN_ABI_VERSION;
		h->slot_size = o->slot_size;
		h->slot_count = o->slot_count;
		h->max_senders = o->max_senders;
	}
	/* Pairs with the acquire load of magic in __lzchan_shm_attach(): an
	 * opener that sees it sees the whole header. */
	__lz_store_rel(&f->magic, SHM_FILE_MAGIC);
	lost = __lzchan_guard_lost(guard);
	__lzchan_guard_retire(guard);
	munmap(f, total);
	if (lost) {
		ret = -EIO;
		goto fail;
	}
	if (made && fstat(fd, made) < 0)
		goto fail_errno;
	ret = __lzchan_shm_publish(fd, tmp, path);
	if (ret)
		goto fail;
	close(fd);
	*created = true;
	return 0;

fail_errno:
	ret = -errno;
fail:
	close(fd);
	if (*tmp)
		unlink(tmp);
	return ret;
}

/*
 * The channel file header of @fd, or -EPROTO: not a channel.  Channels are
 * published whole (__lzchan_shm_create()), so a file without the header is
 * not one being made -- it is not a channel at all.  Read, not mapped: a
 * file cut short gives a short read, not SIGBUS.
 */
static int __lzchan_shm_read_hdr(int fd, struct __lzchan_shm_file *hdr)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EPROTO;
	if (pread(fd, hdr, sizeof(*hdr), 0) != (ssize_t)sizeof(*hdr) ||
	    hdr->magic != SHM_FILE_MAGIC)
		return -EPROTO;
	return 0;
}

/*
 * Remove @path if it still names the file @was (dev and inode), never
 * another.  Checking and then unlinking the name would race with a
 * channel published there in between (after another party's
 * lzchan_unlink()), so the name is first moved aside to a private one,
 * which nobody else can publish at, and checked there: that file is
 * unlinked, anything else is put back (never over a newer file).
 * 1: removed; 0: @path names another file, or none; -errno.
 */
static int __lzchan_shm_remove_if(const char *path, const struct stat *was)
{
	static unsigned int seq;
	char aside[PATH_MAX];
	const char *slash;
	struct stat b;

	/* Beside the name, in the same directory (rename stays inside one
	 * file system), not named like a channel (lzchan_list skips it).
	 * The counter is relaxed: it only makes names unique, orders nothing. */
	slash = strrchr(path, '/');
	if (!slash || snprintf(aside, sizeof(aside), "%.*s/.lzchan-aside.%d.%u",
			       (int)(slash - path), path, (int)getpid(),
			       __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED)) >= (int)sizeof(aside))
		return -ENAMETOOLONG;
	if (rename(path, aside) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (stat(aside, &b) == 0 && b.st_dev == was->st_dev && b.st_ino == was->st_ino) {
		unlink(aside);
		__lzchan_sock_unlink(path, &b);
		return 1;
	}
	/* The name had been given to another file meanwhile: put it back,
	 * unless yet another took the name; then that one stands. */
	if (renameat2(AT_FDCWD, aside, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		if (errno == EEXIST)
			unlink(aside);		/* its name is someone else's now */
		else
			rename(aside, path);	/* no RENAME_NOREPLACE here */
	}
	return 0;
}

/*
 * @path is not a channel (-EPROTO from the header).  If it is a regular
 * file of the caller's, remove it so that a channel can be made there:
 * left by a crash of an older library, or plain garbage.  Concurrent
 * repairers remove it once: each locks the file and removes the name only
 * if it still names that file.  Checking and then unlinking the name
 * would race with a channel published there in between (after another
 * party's lzchan_unlink()), so the name is first moved aside to a private
 * one, which nobody else can publish at, and checked there: the file we
 * locked is unlinked, anything else is put back (never over a newer
 * file).  0: gone (try again), -EPROTO: left alone (another user's, or
 * not a regular file).
 */
static int __lzchan_shm_repair(const char *path)
{
	struct flock fl = {
		.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LOCK_BASE - 1, .l_len = 1,
	};
	struct __lzchan_shm_file hdr;
	struct stat a;
	int fd, ret = -EPROTO;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -EPROTO;
	if (fstat(fd, &a) < 0 || !S_ISREG(a.st_mode) || a.st_uid != geteuid())
		goto out;
	if (fcntl(fd, F_OFD_SETLKW, &fl) < 0)
		goto out;
	if (__lzchan_shm_read_hdr(fd, &hdr) == 0) {
		ret = 0;	/* a channel after all: look again */
		goto out;
	}
	ret = __lzchan_shm_remove_if(path, &a) < 0 ? -EPROTO : 0;
out:
	close(fd);
	return ret;
}

/* Is @path a channel?  0, -EPROTO (not one), -errno. */
static int __lzchan_shm_probe(const char *path)
{
	struct __lzchan_shm_file hdr;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), ret;

	if (fd < 0)
		return errno == EISDIR || errno == ELOOP ? -EPROTO : -errno;
	ret = __lzchan_shm_read_hdr(fd, &hdr);
	close(fd);
	return ret;
}

/*
 * Open and map the channel file.  @made: the file this lzchan_open()
 * created, if it did (ch->created stays only if that is the file opened);
 * @owned: LZCHAN_OWNED.
 */
static int __lzchan_shm_attach_fd(struct lzchan *ch, const struct stat *made, bool owned,
				  uint32_t history);

static int __lzchan_shm_attach(struct lzchan *ch, const char *path,
			       const struct stat *made, bool owned, uint32_t history)
{
	/* A name is never a symbolic link: one planted by another user could
	 * point at a file of the caller's, which LZCHAN_OWNED would pass. */
	ch->fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (ch->fd < 0)
		/* A directory or a symbolic link is not a channel. */
		return errno == EISDIR || errno == ELOOP ? -EPROTO : -errno;
	return __lzchan_shm_attach_fd(ch, made, owned, history);
}

/* ... the channel file open on ch->fd (by its name, or handed over:
 * lzchan_open_fd()), checked as the file anyone may write that it is. */
static int __lzchan_shm_attach_fd(struct lzchan *ch, const struct stat *made, bool owned,
				  uint32_t history)
{
	struct __lzchan_shm_file hdr;
	struct lzchan_layout want;
	uint64_t page = sysconf(_SC_PAGESIZE);
	struct stat st;
	int ret;

	if (fstat(ch->fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EPROTO;
	/* LZCHAN_OWNED: the file opened (whatever the name means by now) is
	 * the caller's. */
	if (owned && st.st_uid != geteuid())
		return -EPERM;
	if (made && (st.st_dev != made->st_dev || st.st_ino != made->st_ino))
		ch->created = false;	/* removed and made again meanwhile */
	ch->file_dev = st.st_dev;
	ch->file_ino = st.st_ino;
	ret = __lzchan_shm_read_hdr(ch->fd, &hdr);
	if (ret)
		return ret;
	/* One kind of channel opened as the other kind: said as such. */
	if (!(hdr.flags & SHM_FILE_PUBSUB) != !__lz_ps_role(ch->f.role))
		return -EPROTOTYPE;
	if (hdr.flags & SHM_FILE_PUBSUB)
		return __lzchan_ps_attach(ch, &hdr, (uint64_t)st.st_size, history);
	ch->temp = hdr.flags & SHM_FILE_TEMP;
	/* The file is anyone's with write access: trust nothing in it. */
	if (hdr.version != SHM_FILE_VERSION || hdr.page_size != page)
		return -EPROTO;
	ret = __lzchan_geom_check(hdr.slot_size, hdr.slot_count, hdr.max_senders);
	if (ret)
		return -EPROTO;
	__lzchan_shm_layout(&want, hdr.slot_size, hdr.slot_count, hdr.max_senders, page);
	if (memcmp(&want, &hdr.layout, sizeof(want)))
		return -EPROTO;
	ch->map_len = page + want.lanes_off + want.lane_stride * hdr.max_senders;
	if ((uint64_t)st.st_size < ch->map_len)
		return -EPROTO;
	ch->layout = want;
	ch->numa_node = hdr.numa_node;
	__lzchan_set_geom(ch, hdr.slot_size, hdr.slot_count, hdr.max_senders);
	ch->map_base = mmap(NULL, ch->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, ch->fd, 0);
	if (ch->map_base == MAP_FAILED) {
		ch->map_base = NULL;
		return -errno;
	}
	/* From now on a peer that cuts the file short costs us the channel
	 * (-EIO), not the process (lzchan_guard.c).  The inline send learns
	 * of a cut by attn_seen, the inline receive by its span's count
	 * borrowing (lzchan_fast.h). */
	ret = __lzchan_guard_handle(ch, page);
	if (ret)
		return ret;
	return __lzchan_map_areas(ch, (char *)ch->map_base + page);
}

/* A closed lane may take a new sender once nothing of the old one can
 * reach the receiver: acknowledged, or -- with no receiver there -- nothing
 * ready at the published head (the module's rule and its reasons, in
 * lzchan_lane_reusable()). */
static bool __lzchan_shm_lane_reusable(struct lzchan *ch, uint32_t i, uint32_t gen)
{
	struct lzchan_shm_rx_lane *rxl = __lzchan_rxl(ch, i);
	char *slots = (char *)ch->map_base + sysconf(_SC_PAGESIZE) +
		      ch->layout.lanes_off + i * ch->layout.lane_stride + ch->layout.lane_slots;
	uint32_t head;

	/* Pairs with the receiver's release store of close_ack. */
	if (__lz_load_acq(&rxl->close_ack) == gen)
		return true;
	/* A live receiver (its lock held; an error counts as one) may be
	 * ahead of the head it published: only its acknowledgement counts.
	 * One that attaches after this look starts at the published head. */
	if (__lzchan_shm_rx_alive(ch) != 0)
		return false;
	/* Relaxed: the old sender is dead (we hold its lock), nothing of it
	 * changes any more; head only ever grows, and a stale one errs on
	 * the side of "not reusable". */
	head = __lz_load(&rxl->head);
	return __lz_load(&__lzchan_slot(ch, slots, head)->seq) != head + 1;
}

static int __lzchan_shm_claim(struct lzchan *ch)
{
	uint32_t i;

	if (ch->f.role == LZCHAN_RECEIVER) {
		uint64_t st;

		if (__lzchan_lock(ch->fd, LOCK_BASE))
			return -EBUSY;
		ch->claimed = true;
		/* The doorbell socket before ATTACHED: a sender that sees us
		 * there finds us listening.  Without one (the directory takes
		 * no new name from us, say) there is no event fd and no
		 * credentials; the rest works. */
		if (__lzchan_sock_listen(ch)) {
			__lzchan_sock_close(ch);
			if (ch->evfd >= 0)
				close(ch->evfd);
			ch->evfd = -1;
		}
		/* Relaxed: we hold the receiver lock, no one else writes it. */
		st = __lz_load(&ch->f.hdr->rx_status);
		/* Pairs with the senders' acquire loads of rx_status. */
		__lz_store_rel(&ch->f.hdr->rx_status,
			       LZCHAN_STATUS(LZCHAN_STATUS_GEN(st) + 1, LZCHAN_RX_ATTACHED));
		return 0;
	}

	for (i = 0; i < ch->f.max_senders; i++) {
		__u64 *status = &ch->lane_info[i].status;
		uint64_t st;
		uint32_t gen;

		if (__lzchan_lock(ch->fd, LOCK_BASE + 1 + i))
			continue;
		/* We hold the lane's lock: an ATTACHED status is a dead
		 * owner's.  Pairs with the receiver's CAS of the same word. */
		st = __lz_load_acq(status);
		if (LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_ATTACHED &&
		    __atomic_compare_exchange_n(status, &st,
				LZCHAN_STATUS(LZCHAN_STATUS_GEN(st), LZCHAN_LANE_CLOSED),
				false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			/* Tell the receiver, which only then acknowledges the
			 * lane (until it does we go on to the next).  Pairs
			 * with its acquire load in __lz_rx_bell(). */
			__atomic_fetch_add(&ch->f.hdr->departures, 1, __ATOMIC_RELEASE);
		st = __lz_load_acq(status);
		gen = LZCHAN_STATUS_GEN(st);
		if (LZCHAN_STATUS_STATE(st) == LZCHAN_LANE_CLOSED) {
			if (!__lzchan_shm_lane_reusable(ch, i, gen)) {
				__lzchan_unlock(ch->fd, LOCK_BASE + 1 + i);
				continue;
			}
			/* Nothing of the old sender may pass for ours. */
			__lzchan_scrub_lane((char *)ch->map_base + sysconf(_SC_PAGESIZE) +
					    ch->layout.lanes_off + i * ch->layout.lane_stride +
					    ch->layout.lane_slots, ch->f.slot_count, ch->f.slot_size);
		} else if (LZCHAN_STATUS_STATE(st) != LZCHAN_LANE_FREE) {
			__lzchan_unlock(ch->fd, LOCK_BASE + 1 + i);
			continue;
		}
		/* Pairs with the receiver's acquire load of the lane status:
		 * the scrub above is visible before the new generation. */
		__lz_store_rel(status, LZCHAN_STATUS(gen + 1, LZCHAN_LANE_ATTACHED));
		ch->lane = i;
		ch->lane_gen = gen + 1;
		ch->claimed = true;
		return 0;
	}
	return -EUSERS;
}

/*
 * Before making a temporary channel: remove the caller's temporary
 * channels in the same directory whose receiver died (a closing one
 * removes its name itself), or never came within a minute of creation.
 * Each is read, never mapped (a file is trusted in nothing), and removed
 * only if it is still the file looked at.
 */
static void __lzchan_shm_sweep(const char *path)
{
	const char *slash = strrchr(path, '/');
	uint64_t page = sysconf(_SC_PAGESIZE);
	char dir[PATH_MAX], p[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return;
	memcpy(dir, path, slash - path);
	dir[slash - path] = 0;
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct __lzchan_shm_file h;
		struct lzchan_shm_hdr sh;
		struct stat st;
		int fd;

		if (strncmp(e->d_name, "lzchan.", 7) ||
		    (size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p))
			continue;
		fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		    __lzchan_shm_read_hdr(fd, &h) == 0 && (h.flags & SHM_FILE_TEMP) &&
		    h.page_size == page &&
		    pread(fd, &sh, sizeof(sh), (off_t)(page + h.layout.info_off)) ==
			    (ssize_t)sizeof(sh) &&
		    __lzchan_locked(fd, LOCK_BASE) == 0 &&
		    (LZCHAN_STATUS_STATE(sh.rx_status) != LZCHAN_RX_NONE ||
		     time(NULL) - st.st_mtime > 60))
			(void)__lzchan_shm_remove_if(p, &st);
		close(fd);
	}
	closedir(d);
}

/* Remove @ch's name if it still names @ch's file (a temporary channel
 * whose receiver has gone). */
static void __lzchan_shm_remove_temp(struct lzchan *ch)
{
	struct stat was = { .st_dev = ch->file_dev, .st_ino = ch->file_ino };
	char path[PATH_MAX];

	/* A handle made from a descriptor knows no name (lzchan_open_fd()). */
	if (ch->name[0] && !__lzchan_shm_path(path, sizeof(path), ch->name))
		(void)__lzchan_shm_remove_if(path, &was);
}

static int __lzchan_shm_start(struct lzchan *ch, const char *path);

static int __lzchan_shm_open(struct lzchan *ch, const char *name, unsigned int flags,
			     const struct lzchan_opts *o, const struct lzchan_ps_opts *ps,
			     uint32_t history)
{
	char path[PATH_MAX];
	bool created = false;
	struct stat made;
	int ret, tries;

	ch->backend = LZCHAN_BACKEND_SHM;
	ret = __lzchan_shm_path(path, sizeof(path), name);
	if (ret)
		return ret;
	for (tries = 0; ; tries++) {
		if (flags & LZCHAN_CREATE) {
			if (flags & LZCHAN_TEMP)
				__lzchan_shm_sweep(path);
			ret = __lzchan_shm_create(path, o, ps, flags & LZCHAN_TEMP, &created, &made);
			if (ret == -EEXIST && !(flags & LZCHAN_EXCL))
				ret = 0;
			if (ret)
				return ret;
		}
		ch->created = created;
		ret = __lzchan_shm_attach(ch, path, created ? &made : NULL, flags & LZCHAN_OWNED,
					  history);
		/* LZCHAN_CREATE over a file of ours that is not a channel:
		 * replace it. */
		if (ret == -EPROTO && (flags & LZCHAN_CREATE) && !(flags & LZCHAN_EXCL) &&
		    !created && tries < 3 && __lzchan_shm_repair(path) == 0) {
			close(ch->fd);
			ch->fd = -1;
			continue;
		}
		if (ret)
			return ret;
		break;
	}
	return __lzchan_shm_start(ch, path);
}

/*
 * The channel file of @path (NULL: handed over as a descriptor, no name
 * here) is attached: take our role in it.  A handle made from a
 * descriptor has no directory to find the receiver's doorbell socket in
 * (__lz_sock_addr()): a receiver goes without its event fd and its
 * senders' credentials, a sender wakes an armed receiver through the
 * file's times; the rest works.
 */
static int __lzchan_shm_start(struct lzchan *ch, const char *path)
{
	int ret;

	if (ch->ps)
		return 0;		/* attached, its place taken */
	/* A temporary channel whose receiver has come and gone (died: a
	 * closing one removes the name itself) is gone: remove what it
	 * left (by its name, where we know it), for everyone.  Pairs with
	 * the receiver's release store of rx_status. */
	if (ch->temp && !ch->created &&
	    LZCHAN_STATUS_STATE(__lz_load_acq(&ch->f.hdr->rx_status)) != LZCHAN_RX_NONE &&
	    __lzchan_shm_rx_alive(ch) == 0) {
		struct stat was = { .st_dev = ch->file_dev, .st_ino = ch->file_ino };

		if (path)
			(void)__lzchan_shm_remove_if(path, &was);
		return -ENOENT;
	}
	/* The lane is chosen only now: map it once we know which. */
	ret = __lzchan_shm_claim(ch);
	if (ret)
		return ret;
	ch->bye_known = true;		/* closes store their bye (lzchan_close()) */
	if (ch->f.role == LZCHAN_SENDER) {
		char *lane = (char *)ch->map_base + sysconf(_SC_PAGESIZE) +
			     ch->layout.lanes_off + ch->lane * ch->layout.lane_stride;

		ch->f.tx = (struct lzchan_shm_tx *)lane;
		ch->f.slots = lane + ch->layout.lane_slots;
		ch->f.my_rxl = __lzchan_rxl(ch, ch->lane);
		/* Make ourselves known to a receiver that is there (a later
		 * one hears from us at the first wake it is owed).  Pairs
		 * with the receiver's release store of rx_status. */
		uint32_t rxs = LZCHAN_STATUS_STATE(__lz_load_acq(&ch->f.hdr->rx_status));

		/* A receiver has been here: a later NONE is a lie (see
		 * __lz_tx_rx_dead()). */
		ch->rx_seen = rxs != LZCHAN_RX_NONE;
		if (rxs == LZCHAN_RX_ATTACHED)
			(void)__lzchan_sock_connect(ch);
	}
	return 0;
}

/* ---- the public calls ---- */

/*
 * lzchan_open() failed with @err.  With LZCHAN_OWNED, a refusal that comes
 * from the channel being another user's (no permission for the role, its
 * receiver or its lanes taken) says so: -EPERM.
 */
static int __lzchan_owned_err(const char *name, unsigned int flags, int err)
{
	struct lzchan_chan_stat st;

	if (!(flags & LZCHAN_OWNED) || (err != -EACCES && err != -EBUSY && err != -EUSERS))
		return err;
	if (lzchan_stat(name, &st, NULL) == 0 && st.uid != geteuid())
		return -EPERM;
	return err;
}

/* A new handle in @role (0: learnt later, lzchan_open_fd()), before it
 * is opened: nothing mapped, no descriptor, nobody's turn.  NULL: no
 * memory. */
static struct lzchan *__lz_new(unsigned int role, const struct lzchan_opts *o)
{
	struct lzchan *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->f.role = role;
	ch->f.lost = &ch->never_lost;	/* the guard's word, once mapped */
	ch->lost_err = -EIO;		/* __lzchan_guard_handle() chooses */
	ch->fd = -1;
	ch->evfd = -1;
	ch->lsock = -1;
	ch->wakefd = -1;
	ch->closefd = -1;
	ch->spare = -1;
	ch->hupfd = -1;
	ch->sock = -1;
	ch->lane = LZCHAN_LANE_NONE;
	/* Nobody's turn (lzchan_fast.h's release reads cur): the handle's own
	 * lane, which no view can match (its head and peek stay 0). */
	ch->f.cur = &ch->no_turn;
	ch->f.cur_lane = LZCHAN_LANE_NONE;
	ch->spin_ns = o->spin_ns;
	return ch;
}

/* @ch is attached, its areas mapped: the role's own state (a pub/sub
 * handle's is made by its attach).  0 or -ENOMEM. */
static int __lz_ready(struct lzchan *ch, const struct lzchan_opts *o)
{
	if (ch->ps)
		return 0;
	ch->f.publish_every = o->publish_every && o->publish_every <= ch->f.slot_count ?
			    o->publish_every : (ch->f.slot_count / 4 ? ch->f.slot_count / 4 : 1);
	if (ch->f.role == LZCHAN_RECEIVER) {
		ch->have_membarrier = __lzchan_query_barrier();
		__lzchan_rx_init_lanes(ch);
		return 0;
	}
	ch->f.fence_each_send = !__lzchan_register_sender_barrier();
	if (!ch->cont)
		ch->cont = calloc((ch->f.slot_count + 7) / 8, 1);
	if (!ch->cont)
		return -ENOMEM;
	__lzchan_tx_init(ch);
	return 0;
}

/* lzchan_open() and lzchan_subscribe(); @ps: a publisher's creation
 * (LZCHAN_CREATE), @history: a subscriber's. */
static int __lz_open(struct lzchan **chp, const char *name, unsigned int flags,
		     const struct lzchan_opts *opts, const struct lzchan_ps_opts *ps,
		     uint32_t history)
{
	unsigned int role = flags & (LZCHAN_RECEIVER | LZCHAN_SENDER | LZCHAN_PUBLISHER |
				     LZCHAN_SUBSCRIBER);
	struct lzchan_opts o;
	struct lzchan *ch;
	int ret, devfd;

	if (!chp || (role != LZCHAN_RECEIVER && role != LZCHAN_SENDER && !__lz_ps_role(role)) ||
	    (flags & ~(role | LZCHAN_CREATE | LZCHAN_EXCL | LZCHAN_OWNED | LZCHAN_TEMP)) ||
	    ((flags & LZCHAN_EXCL) && !(flags & LZCHAN_CREATE)) ||
	    ((flags & LZCHAN_TEMP) && (!(flags & LZCHAN_CREATE) || role != LZCHAN_RECEIVER)) ||
	    ((flags & LZCHAN_CREATE) && role == LZCHAN_SUBSCRIBER) ||
	    (role == LZCHAN_PUBLISHER && opts))	/* a subscriber's: spin_ns */
		return -EINVAL;
	if (flags & LZCHAN_TEMP)
		flags |= LZCHAN_EXCL;	/* a temporary channel is always a new one */
	ret = __lzchan_name_check(name);
	if (ret)
		return ret;
	if (opts)
		o = *opts;
	else
		lzchan_opts_init(&o);

	ch = __lz_new(role, &o);
	if (!ch)
		return -ENOMEM;
	memcpy(ch->name, name, strlen(name) + 1);

	devfd = __lzchan_pick();
	if (devfd >= 0) {
		ch->fd = devfd;
		ret = __lzchan_dev_open(ch, name, flags, &o, __lz_ps_role(role) ? ps : NULL,
					history);
	} else if (devfd == -ENOENT) {
		if (__lz_ps_role(role)) {
			o.mode = ps->mode;
			o.numa_node = ps->numa_node;
			o.node_strict = ps->node_strict;
		}
		ret = __lzchan_shm_open(ch, name, flags, &o, __lz_ps_role(role) ? ps : NULL,
					history);
	} else {
		ret = devfd;
	}
	if (ret) {
		ret = __lzchan_owned_err(name, flags, ret);
		goto fail;
	}
	ret = __lz_ready(ch, &o);
	if (ret)
		goto fail;
	*chp = ch;
	return 0;
fail:
	lzchan_close(ch);
	return ret;
}

int lzchan_open(struct lzchan **chp, const char *name, unsigned int flags,
		const struct lzchan_opts *opts)
{
	struct lzchan_ps_opts ps;

	lzchan_ps_opts_init(&ps);
	return __lz_open(chp, name, flags, opts, &ps, 0);
}

int lzchan_subscribe(struct lzchan **chp, const char *name, uint32_t history,
		     unsigned int flags)
{
	struct lzchan_ps_opts ps;

	if (flags & ~LZCHAN_OWNED)
		return -EINVAL;
	lzchan_ps_opts_init(&ps);
	return __lz_open(chp, name, LZCHAN_SUBSCRIBER | flags, NULL, &ps, history);
}

/* Is @fd a regular file (a shm channel file, perhaps)? */
static bool __lzchan_shm_file_fd(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* Does open file description @fd hold a lock (an OFD lock: a handle's
 * role) already?  /proc/self/fdinfo lists them; without it, assume not. */
static bool __lzchan_shm_fd_locked(int fd)
{
	char path[64], line[256];
	bool locked = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!locked && fgets(line, sizeof(line), f))
		locked = !strncmp(line, "lock:", 5);
	fclose(f);
	return locked;
}

/*
 * A handle's roles are locks of its open file description, which never
 * conflict with themselves: two handles on one description (a dup, a
 * descriptor passed on, a copy a parent kept) would each think the other's
 * lane free, and a death would hide behind a living copy.  So a handle
 * made from a descriptor gets a description of its own, the same file
 * opened anew through /proc; where that is refused (the file's mode does
 * not let us open it by name, or no /proc), the one given is used only if
 * it holds no lock yet.  0, or -EISCONN.
 */
static int __lzchan_shm_own_fd(struct lzchan *ch)
{
	struct stat was, now;
	char proc[64];
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", ch->fd);
	fd = open(proc, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0 && fstat(fd, &now) == 0 && fstat(ch->fd, &was) == 0 &&
	    now.st_dev == was.st_dev && now.st_ino == was.st_ino) {
		close(ch->fd);
		ch->fd = fd;
		return 0;
	}
	if (fd >= 0)
		close(fd);
	return __lzchan_shm_fd_locked(ch->fd) ? -EISCONN : 0;
}

/* lzchan_open_fd() of a shm channel file: attached as lzchan_open()
 * attaches one by name, less what needs the name (see
 * __lzchan_shm_start()), on a description of its own. */
static int __lzchan_shm_open_fd(struct lzchan *ch, const struct lzchan_opts *o)
{
	int ret;

	ch->backend = LZCHAN_BACKEND_SHM;
	ret = __lzchan_shm_own_fd(ch);
	if (!ret)
		ret = __lzchan_shm_attach_fd(ch, NULL, false, 0);
	if (!ret)
		ret = __lzchan_shm_start(ch, NULL);
	if (!ret)
		ret = __lz_ready(ch, o);
	return ret;
}

/*
 * A handle from endpoint @fd (LZCHAN_IOC_GRANT, received or inherited):
 * the handle takes the fd at once, and closes it on failure too.  The fd
 * must answer LZCHAN_IOC_FEATURES (a module of our ABI); it is then bound
 * by LZCHAN_IOC_OPEN with an empty name -- no name lookup, no permission
 * asked: the grant was the permission -- in the role it carries, which
 * LZCHAN_IOC_INFO names, and attached as a fd bound by name is.
 */
int lzchan_open_fd(struct lzchan **chp, int fd, unsigned int flags,
		   const struct lzchan_opts *opts)
{
	struct lzchan_open op = { .size = sizeof(op), .abi_version = LZCHAN_ABI_VERSION };
	struct lzchan_info in = { .size = sizeof(in) };
	struct lzchan_features ft;
	struct lzchan_opts o;
	struct lzchan *ch;
	uint32_t role;
	int ret;

	if (fd < 0)
		return -EBADF;
	if (!chp || (flags && !__lzchan_open_flag(flags))) {
		close(fd);
		return -EINVAL;
	}
	if (opts)
		o = *opts;
	else
		lzchan_opts_init(&o);
	ch = __lz_new(flags, &o);
	if (!ch) {
		close(fd);
		return -ENOMEM;
	}
	ch->fd = fd;			/* ours now: lzchan_close() closes it */
	ret = __lzchan_dev_check(ch, &ft);
	if (ret == -ENOTTY && __lzchan_shm_file_fd(fd)) {
		/* shm: the channel file itself (lzchan_grant() there), which
		 * carries no role: the caller names it. */
		ret = flags ? __lzchan_shm_open_fd(ch, &o) : -EINVAL;
		if (ret)
			goto fail;
		*chp = ch;
		return 0;
	}
	if (ret)
		goto fail;		/* -ENOTTY: not an lzchan fd at all */
	if (!(ft.features & LZCHAN_FEAT_ENDPOINT)) {
		ret = -EPROTO;		/* a module without endpoints: not one */
		goto fail;
	}
	op.flags = __lzchan_open_flag(flags);	/* 0: the role it carries */
	if (ioctl(ch->fd, LZCHAN_IOC_OPEN, &op) < 0) {
		/* Our request is well formed: EINVAL says the fd is a
		 * /dev/lzchan fd that is no endpoint (it needs a name). */
		ret = errno == EINVAL ? -EPROTO : __lzchan_dev_err(errno);
		goto fail;
	}
	if (ioctl(ch->fd, LZCHAN_IOC_INFO, &in) < 0) {
		ret = __lzchan_dev_err(errno);
		goto fail;
	}
	role = __lzchan_role_of(in.role);
	if (!role) {
		ret = -EPROTO;
		goto fail;
	}
	/* The module refused another role already; believe it only once. */
	if (flags && role != flags) {
		ret = -EPERM;
		goto fail;
	}
	ch->f.role = role;
	/* The channel's name, if it still has one (it may have been
	 * unlinked: the endpoint is the channel's, not the name's). */
	in.stat.name[LZCHAN_NAME_SIZE - 1] = 0;
	memcpy(ch->name, in.stat.name, strlen(in.stat.name) + 1);
	ret = __lzchan_dev_attach(ch, &in, op.lane, op.lane_gen, false, 0);
	if (!ret)
		ret = __lz_ready(ch, &o);
	if (ret)
		goto fail;
	*chp = ch;
	return 0;
fail:
	/* A revocation that came between the attach and a mapping. */
	if (ret == -EKEYREVOKED)
		ret = -EPIPE;
	lzchan_close(ch);
	return ret;
}

/*
 * Closing a shm handle whose mapping was lost (lzchan_guard.c): its words
 * would go to the private memory that replaced it, where no peer looks.
 * Map the file's control areas again, if the file still holds them, and
 * point the handle's header and lane statuses there, so that the close
 * says CLOSED or GONE where the peers look.  Returns that mapping (to be
 * unmapped, guarded like the first: the file may be cut again), or NULL.
 */
static void *__lzchan_shm_reach(struct lzchan *ch, size_t *len, struct __lzchan_guard **g)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = page + ch->layout.lanes_off;
	struct stat st;
	char *p;

	if (fstat(ch->fd, &st) < 0 || (uint64_t)st.st_size < n)
		return NULL;
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, ch->fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	*g = __lzchan_guard_add(p, n, page + ch->layout.info_off);
	if (!*g) {
		munmap(p, n);
		return NULL;
	}
	*len = n;
	ch->f.hdr = (struct lzchan_shm_hdr *)(p + page + ch->layout.info_off);
	ch->lane_info = (struct lzchan_shm_lane *)(p + page + ch->layout.info_off +
						   ch->layout.info_lanes);
	/* The rx and bell areas too: a closing sender looks whether the
	 * receiver is parked (rx->parked, rx->armed) and wakes it there
	 * (wake_word); a closing receiver clears armed. */
	ch->f.rx = (struct lzchan_shm_rx *)(p + page + ch->layout.rx_off);
	ch->rx_lanes = p + page + ch->layout.rx_off + ch->layout.rx_lanes;
	ch->bell = (uint64_t *)(p + page + ch->layout.bell_off);
	ch->wake_word = (uint32_t *)(p + page + ch->layout.bell_off + ch->layout.bell_size -
				     LZCHAN_BELL_WAKE_BACK);
	return p;
}

/* Close @ch; @clean: record a clean close (lzchan_end_cause() says
 * CLOSED), else leave it unrecorded, as a death leaves it (LOST). */
static void __lz_close(struct lzchan *ch, bool clean)
{
	struct __lzchan_guard *reach_guard = NULL;
	size_t reach_len = 0;
	void *reach = NULL;

	if (!ch)
		return;
	__lzchan_ps_close(ch, clean);	/* a pub/sub handle's own part */
	/* A sender's counts are exact once it has closed (the inline send
	 * publishes them in steps), unless its memory was lost. */
	if (ch->f.role == LZCHAN_SENDER && ch->f.tx && !__lzchan_guard_lost(ch->guard))
		__lzchan_tx_stats(ch);
	if (ch->backend == LZCHAN_BACKEND_SHM && ch->f.hdr && __lzchan_guard_lost(ch->guard))
		reach = __lzchan_shm_reach(ch, &reach_len, &reach_guard);
	if (ch->backend == LZCHAN_BACKEND_SHM && ch->f.role == LZCHAN_RECEIVER)
		__lzchan_sock_close(ch);	/* before GONE: no new doorbell */
	/* shm: only a handle that holds its role speaks for it (a second
	 * receiver refused with -EBUSY must not say GONE for the first). */
	if (ch->backend == LZCHAN_BACKEND_SHM && ch->f.hdr && ch->claimed) {
		/* The module does this for the dev backend when our file goes. */
		if (ch->f.role == LZCHAN_RECEIVER && ch->f.lanes) {
			uint64_t st = __lz_load(&ch->f.hdr->rx_status);

			__lzchan_rx_publish_all(ch);
			/* Not armed any more (a next receiver starts with its
			 * own futex), and a clean close (lzchan_end_cause());
			 * relaxed: published by the release store of GONE. */
			__lz_store(&ch->f.rx->armed, 0);
			if (clean)
				__lz_store(&ch->f.hdr->rx_bye, LZCHAN_STATUS_GEN(st));
			/* Pairs with the senders' acquire loads of rx_status. */
			__lz_store_rel(&ch->f.hdr->rx_status,
				       LZCHAN_STATUS(LZCHAN_STATUS_GEN(st), LZCHAN_RX_GONE));
			/* Each sender loads only attn on each send. */
			__lzchan_rx_attn_all(ch);
			/* A temporary channel's name goes with us (before
			 * our lock: a newcomer must not find it alive). */
			if (ch->temp)
				__lzchan_shm_remove_temp(ch);
			/* Senders believe GONE only once our lock is free
			 * (anyone can write the word): free it now rather than
			 * at close(). */
			__lzchan_unlock(ch->fd, LOCK_BASE);
		} else if (ch->f.role == LZCHAN_SENDER && ch->f.tx &&
			   ch->lane != LZCHAN_LANE_NONE) {
			__u64 *status = &ch->lane_info[ch->lane].status;
			uint64_t st = __lz_load(status);
			uint32_t parked;

			/* A clean close (lzchan_end_cause()); relaxed:
			 * published by the release store of CLOSED. */
			if (clean)
				__lz_store(&ch->lane_info[ch->lane].bye, LZCHAN_STATUS_GEN(st));
			/* Pairs with the receiver's acquire load of the lane
			 * status: our last messages are visible before CLOSED. */
			__lz_store_rel(status, LZCHAN_STATUS(LZCHAN_STATUS_GEN(st),
							     LZCHAN_LANE_CLOSED));
			/* Pairs with the receiver's acquire load of departures
			 * in __lz_rx_bell(): it follows the status above. */
			__atomic_fetch_add(&ch->f.hdr->departures, 1, __ATOMIC_RELEASE);
			/* The receiver believes CLOSED only once our lock is
			 * free: free it, then wake a receiver that parked
			 * meanwhile.  Relaxed: the unlock and the receiver's
			 * lock test meet under the kernel's lock; one that saw
			 * the lock held had stored parked before (and issued
			 * its heavy barrier), so this load sees it. */
			__lzchan_unlock(ch->fd, LOCK_BASE + 1 + ch->lane);
			parked = __lz_load(&ch->f.rx->parked);
			if (parked & 1)
				__lzchan_wake(ch, parked);
			/* A temporary channel whose receiver died while we
			 * held it (a closing one removes the name itself):
			 * its name goes with our handle, as the module's does
			 * with its receiver.  Believed only on its free lock. */
			if (ch->temp && __lzchan_shm_rx_alive(ch) == 0)
				__lzchan_shm_remove_temp(ch);
		}
	} else if (ch->f.role == LZCHAN_RECEIVER && ch->f.lanes) {
		__lzchan_rx_publish_all(ch);
	}
	/* A sender's connection goes after its CLOSED: its hang-up then
	 * finds the receiver with the status to read. */
	if (ch->backend == LZCHAN_BACKEND_SHM)
		__lzchan_sock_close(ch);
	/* dev: a clean close, for the module to record (old modules:
	 * ENOTTY, nothing recorded). */
	if (clean && ch->backend == LZCHAN_BACKEND_DEV && ch->fd >= 0)
		(void)ioctl(ch->fd, LZCHAN_IOC_BYE);
	if (reach) {
		__lzchan_guard_retire(reach_guard);
		munmap(reach, reach_len);
	}
	/* The whole mapping at once: shm's file, or dev's reserved range
	 * with every area in it. */
	__lzchan_guard_retire(ch->guard);
	if (ch->map_base)
		munmap(ch->map_base, ch->map_len);
	if (ch->evfd >= 0)
		close(ch->evfd);
	if (ch->fd >= 0)
		close(ch->fd);		/* drops the module binding / our locks */
	free(ch->f.lanes);
	free(ch->f.active);
	free(ch->bell_seen);
	free(ch->watch);
	free(ch->cont);
	free(ch);
}

void lzchan_close(struct lzchan *ch)
{
	__lz_close(ch, true);
}

void lzchan_close_lost(struct lzchan *ch)
{
	__lz_close(ch, false);
}

int lzchan_unlink(const char *name)
{
	char path[PATH_MAX];
	int ret = __lzchan_name_check(name), fd;

	if (ret)
		return ret;
	fd = __lzchan_pick();
	if (fd >= 0) {
		struct lzchan_unlink u = { .size = sizeof(u) };

		memcpy(u.name, name, strlen(name) + 1);
		ret = ioctl(fd, LZCHAN_IOC_UNLINK, &u) < 0 ? -errno : 0;
		close(fd);
		return ret;
	}
	if (fd != -ENOENT)
		return fd;
	ret = __lzchan_shm_path(path, sizeof(path), name);
	if (ret)
		return ret;
	{
		int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		struct stat st;

		/* A receiver that died left its socket: it goes too (a live
		 * one's stays: handles keep working after an unlink). */
		if (f >= 0 && fstat(f, &st) == 0 && S_ISREG(st.st_mode) &&
		    __lzchan_locked(f, LOCK_BASE) == 0)
			__lzchan_sock_unlink(path, &st);
		if (f >= 0)
			close(f);
	}
	return unlink(path) < 0 ? -errno : 0;
}

/* lzchan_create(), and lzchan_ps_create() with @ps. */
static int __lz_create(const char *name, const struct lzchan_opts *opts,
		       const struct lzchan_ps_opts *ps, unsigned int flags)
{
	char path[PATH_MAX];
	struct lzchan_opts o;
	bool created = false;
	int ret, fd, tries;

	if (flags & ~LZCHAN_EXCL)
		return -EINVAL;
	ret = __lzchan_name_check(name);
	if (ret)
		return ret;
	if (opts)
		o = *opts;
	else
		lzchan_opts_init(&o);
	if (ps) {
		o.mode = ps->mode;
		o.numa_node = ps->numa_node;
		o.node_strict = ps->node_strict;
	}
	fd = __lzchan_pick();
	if (fd >= 0) {
		struct lzchan_features ft = { .size = sizeof(ft) };

		ret = ioctl(fd, LZCHAN_IOC_FEATURES, &ft) < 0 ? -errno :
		      ps && !(ft.features & LZCHAN_FEAT_PUBSUB) ? -EOPNOTSUPP :
		      __lzchan_dev_create(fd, name, (flags & LZCHAN_EXCL) ? LZCHAN_CREATE_EXCL : 0,
					  &o, ps);
		close(fd);
		return ret;
	}
	if (fd != -ENOENT)
		return fd;
	ret = __lzchan_shm_path(path, sizeof(path), name);
	if (ret)
		return ret;
	for (tries = 0; ; tries++) {
		ret = __lzchan_shm_create(path, &o, ps, false, &created, NULL);
		if (ret != -EEXIST || (flags & LZCHAN_EXCL))
			return ret ? ret : 1;
		/* The name is taken: by a channel (fine), or by something
		 * else, which is replaced if it is a file of ours. */
		ret = __lzchan_shm_probe(path);
		if (ret == -ENOENT && tries < 3)
			continue;	/* removed meanwhile: make it */
		if (ret != -EPROTO || tries == 3)
			return ret;
		ret = __lzchan_shm_repair(path);
		if (ret)
			return ret;
	}
}

int lzchan_create(const char *name, const struct lzchan_opts *opts,
		  unsigned int flags)
{
	return __lz_create(name, opts, NULL, flags);
}

int lzchan_ps_create(const char *name, const struct lzchan_ps_opts *opts,
		     unsigned int flags)
{
	struct lzchan_ps_opts o;
	unsigned int i;

	lzchan_ps_opts_init(&o);
	if (opts) {
		/* What the caller knows of the struct; the rest defaults. */
		if (opts->size < offsetof(struct lzchan_ps_opts, reserved) ||
		    opts->size > sizeof(o))
			return -EINVAL;
		memcpy(&o, opts, opts->size);
		o.size = sizeof(o);
		for (i = 0; i < sizeof(o.reserved) / sizeof(o.reserved[0]); i++)
			if (o.reserved[i])
				return -EINVAL;
	}
	return __lz_create(name, NULL, &o, flags);
}

int lzchan_geometry(const struct lzchan *ch, struct lzchan_geom *g)
{
	if (!ch || !g)
		return -EINVAL;
	memset(g, 0, sizeof(*g));
	g->slot_size = ch->f.slot_size;
	g->slot_count = ch->f.slot_count;
	g->max_senders = ch->f.max_senders;
	g->max_msg = ch->max_msg;
	g->lane = ch->f.role == LZCHAN_SENDER ? ch->lane :
		  ch->f.role == LZCHAN_PUBLISHER ? 0 : LZCHAN_LANE_NONE;
	g->backend = ch->backend;
	g->numa_node = ch->numa_node;
	g->created = ch->created;
	return 0;
}

const char *lzchan_backend_name(const struct lzchan *ch)
{
	if (!ch)
		return "none";
	return ch->backend == LZCHAN_BACKEND_DEV ? "dev (" LZCHAN_DEVICE_PATH ")" :
	       "shm (/dev/shm, futex)";
}

int lzchan_peer(struct lzchan *ch, uint32_t lane, int32_t *pid, uint32_t *uid,
		uint32_t *gid)
{
	struct lzchan_peer p = { .size = sizeof(p), .lane = lane };

	if (!ch)
		return -EINVAL;
	if (ch->ps)
		return -EOPNOTSUPP;	/* shm pub/sub has no credentials to say */
	if (ch->backend == LZCHAN_BACKEND_SHM) {
		struct ucred c = { .pid = getpid(), .uid = geteuid(), .gid = getegid() };
		int ret = 0;

		if (lane != LZCHAN_LANE_NONE && lane >= ch->f.max_senders)
			return -EINVAL;
		if (ch->f.role == LZCHAN_SENDER && lane != LZCHAN_LANE_NONE && lane != ch->lane)
			return -EPERM;
		if (ch->f.role == LZCHAN_RECEIVER && lane != LZCHAN_LANE_NONE) {
			if (ch->lsock < 0)
				return -EOPNOTSUPP;	/* no socket to learn it from */
			ret = __lzchan_sock_peer(ch, lane, &c);
		} else if (ch->f.role == LZCHAN_SENDER && lane == LZCHAN_LANE_NONE) {
			/* Pairs with the receiver's release store of
			 * rx_status; the lock says whether it is still there. */
			if (LZCHAN_STATUS_STATE(__lz_load_acq(&ch->f.hdr->rx_status)) !=
			    LZCHAN_RX_ATTACHED || __lzchan_shm_rx_alive(ch) != 1)
				return -ENOTCONN;
			if (ch->sock >= 0 && send(ch->sock, "", 0, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
			    errno != EAGAIN) {
				close(ch->sock);	/* the receiver we knew left */
				ch->sock = -1;
			}
			ch->sock_tried_ns = 0;
			if (__lzchan_sock_connect(ch))
				return -ENOTCONN;
			c = ch->rx_cred;
		}
		if (ret)
			return ret;
		p.pid = c.pid;
		p.uid = c.uid;
		p.gid = c.gid;
	} else if (ioctl(ch->fd, LZCHAN_IOC_PEER, &p) < 0) {
		return __lzchan_dev_err(errno);
	}
	if (pid)
		*pid = p.pid;
	if (uid)
		*uid = p.uid;
	if (gid)
		*gid = p.gid;
	return 0;
}

/*
 * The origin records of proxies (lzchan_peer_origin(3)): a file
 * DIR/CHANNEL.LANE, written by the process that holds the lane, one line:
 *   lzchan-origin 1 pid=PID start=START channel=CHANNEL lane=LANE host=HOST uid=UID rpid=RPID
 * START is the writer's start time (field 22 of /proc/PID/stat), so a
 * record outlives neither its writer nor its pid's reuse.  Believed (by
 * lzchan_peer_origin()) only when it is a plain file with one link, owned
 * by the lane holder's uid, naming the holder's pid and start time, this
 * channel and this lane.
 */
#define __LZ_ORIGIN_MAX		256	/* bytes in a record, at most */

static int __lz_origin_path(char *buf, size_t len, const char *name, uint32_t lane)
{
	const char *dir = getenv("LZCHAN_ORIGIN_DIR");

	if (!dir || !*dir)
		dir = LZCHAN_ORIGIN_DIR_DEFAULT;
	if ((size_t)snprintf(buf, len, "%s/%s.%u", dir, name, lane) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Process @pid's start time (clock ticks after boot), as /proc says:
 * 0, or -ENOENT (no such process, or no /proc to ask). */
static int __lz_proc_start(int32_t pid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	int fd, field;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ENOENT;
	buf[n] = 0;
	/* The name (field 2) may hold anything: count after its last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -ENOENT;
	for (field = 2; field < 21; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -ENOENT;
	}
	return sscanf(p + 1, "%llu", start) == 1 ? 0 : -ENOENT;
}

struct __lz_origin {
	struct lzchan_origin o;
	int32_t pid;			/* the writer */
	unsigned long long start;	/* ... and its start time */
	char channel[LZCHAN_NAME_SIZE];
	uint32_t lane;
};

/* Parse a record (@len bytes at @buf, NUL-terminated) into @r: 0, or
 * -EPROTO for anything but exactly the canonical line -- each field
 * printed back must give the record byte for byte (so no signs, leading
 * zeros, other spaces or out-of-range numbers), with a host of 1 to 63
 * printable characters other than space (a bridge's peer name) and a
 * valid channel name. */
static int __lz_origin_parse(const char *buf, size_t len, struct __lz_origin *r)
{
	char host[sizeof(r->o.host)], chan[__LZ_ORIGIN_MAX], again[__LZ_ORIGIN_MAX + 1];
	unsigned long long start;
	unsigned int uid, lane;
	int wpid, rpid;

	if (len == 0 || len > __LZ_ORIGIN_MAX || buf[len - 1] != '\n' || strlen(buf) != len)
		return -EPROTO;
	if (sscanf(buf, "lzchan-origin 1 pid=%d start=%llu channel=%255[!-~] lane=%u "
		   "host=%63[!-~] uid=%u rpid=%d", &wpid, &start, chan, &lane, host, &uid,
		   &rpid) != 7 || wpid <= 0 || rpid < 0 || __lzchan_name_check(chan))
		return -EPROTO;
	if ((size_t)snprintf(again, sizeof(again),
			     "lzchan-origin 1 pid=%d start=%llu channel=%s lane=%u host=%s "
			     "uid=%u rpid=%d\n", wpid, start, chan, lane, host, uid, rpid) != len ||
	    memcmp(again, buf, len))
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	memcpy(r->o.host, host, strlen(host));
	r->o.uid = uid;
	r->o.pid = rpid;
	r->pid = wpid;
	r->start = start;
	memcpy(r->channel, chan, strlen(chan));
	r->lane = lane;
	return 0;
}

/* Read and parse lane @lane of channel @name's record into @r, with the
 * file's owner: 0, -ENOENT (none, not a plain file of one link, or the
 * record of another channel or lane), -EPROTO, or the error reading it.
 * *@owner is set whenever the file was opened. */
static int __lz_origin_read(const char *name, uint32_t lane, struct __lz_origin *r,
			    uint32_t *owner)
{
	char path[PATH_MAX], buf[__LZ_ORIGIN_MAX + 2];
	struct stat st;
	ssize_t n;
	int fd, ret;

	ret = __lz_origin_path(path, sizeof(path), name, lane);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? -ENOENT : -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out_close;
	}
	*owner = st.st_uid;
	/* A hard link could give another lane's record this name. */
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_size > __LZ_ORIGIN_MAX) {
		ret = -ENOENT;
		goto out_close;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		ret = -errno;
		goto out_close;
	}
	buf[n] = 0;
	ret = __lz_origin_parse(buf, (size_t)n, r);
	if (!ret && (strcmp(r->channel, name) || r->lane != lane))
		ret = -ENOENT;
out_close:
	close(fd);
	return ret;
}

/* Is the record's writer still the process that wrote it (alive, and
 * not a later process with its pid)? */
static bool __lz_origin_live(const struct __lz_origin *r)
{
	unsigned long long start;

	return !__lz_proc_start(r->pid, &start) && start == r->start;
}

/* Copy @r's origin into the caller's @o, as much as o->size takes. */
static void __lz_origin_out(struct lzchan_origin *o, struct __lz_origin *r)
{
	r->o.size = o->size < sizeof(r->o) ? o->size : (uint32_t)sizeof(r->o);
	r->o.reserved = 0;
	memcpy(o, &r->o, r->o.size);
}

int lzchan_peer_origin(struct lzchan *ch, uint32_t lane, struct lzchan_origin *o)
{
	struct __lz_origin r;
	uint32_t uid, owner = 0;
	int32_t pid;
	int ret;

	if (!ch || ch->f.role != LZCHAN_RECEIVER)
		return -EBADF;
	if (!o || o->size < LZCHAN_ORIGIN_SIZE_V1 || lane >= ch->f.max_senders)
		return -EINVAL;
	/* Who holds the lane, as the kernel says. */
	ret = lzchan_peer(ch, lane, &pid, &uid, NULL);
	if (ret)
		return ret;
	ret = __lz_origin_read(ch->name, lane, &r, &owner);
	/* Only what the lane's holder wrote: its uid's file (another's,
	 * malformed or not, is nobody's claim for this lane) ... */
	if ((!ret || ret == -EPROTO) && owner != uid)
		return -ENOENT;
	if (ret)
		return ret;
	/* ... naming it, pid and start time (a record of an earlier holder
	 * of the lane, even one whose pid came round again, or of one in
	 * another pid namespace, says nothing about this one). */
	if (r.pid != pid || !__lz_origin_live(&r))
		return -ENOENT;
	__lz_origin_out(o, &r);
	return 0;
}

int lzchan_stat_origin(const char *name, uint32_t lane, struct lzchan_origin *o, int32_t *pid)
{
	struct __lz_origin r;
	uint32_t owner;
	int ret = __lzchan_name_check(name);

	if (ret)
		return ret;
	if (!o || o->size < LZCHAN_ORIGIN_SIZE_V1)
		return -EINVAL;
	ret = __lz_origin_read(name, lane, &r, &owner);
	if (ret)
		return ret;
	/* A writer that is gone left a stale record. */
	if (!__lz_origin_live(&r))
		return -ENOENT;
	__lz_origin_out(o, &r);
	if (pid)
		*pid = r.pid;
	return 0;
}

int lzchan_dev_features(struct lzchan_features *out)
{
	struct lzchan_features f;
	int fd, ret = 0;

	fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	if (ioctl(fd, LZCHAN_IOC_FEATURES, &f) < 0)
		ret = -errno;
	else
		*out = f;
	close(fd);
	return ret;
}
