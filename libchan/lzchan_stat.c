// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Describing channels without attaching to them: lzchan_list(),
 * lzchan_stat(), lzchan_stat_lanes().
 *
 * dev: LZCHAN_IOC_LIST.
 * shm: the files themselves, read with pread() and never mapped, since
 *      anyone with write access can put anything in them (or truncate them
 *      under a mapping): every offset is computed from a header that is
 *      checked the way lzchan_open() checks it, and a short read is an
 *      invalid file, never a crash.
 *
 * Floor 4: above lzchan_file.c only, below opening (the floors:
 * Documentation/libchan/design.rst, "The library's floors").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lzchan_internal.h"

#define SHM_PREFIX	"lzchan."

static const char *__lz_shm_dir(void)
{
	const char *dir = getenv("LZCHAN_SHM_DIR");

	return dir && *dir ? dir : "/dev/shm";
}

/* Exactly @len bytes at @off, or -EPROTO (the file is shorter than its
 * header says: not a valid channel), or -errno. */
static int __lz_pread(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t r;

	if (off > (uint64_t)LLONG_MAX - len)
		return -EPROTO;
	r = pread(fd, buf, len, (off_t)off);
	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EPROTO;
}

/* Read and check the header page of an open channel file. */
static int __lz_shm_header(int fd, const struct stat *st, struct __lzchan_shm_file *h)
{
	uint64_t page = sysconf(_SC_PAGESIZE), total;
	struct lzchan_layout want;
	int ret;

	if ((uint64_t)st->st_size < page)
		return -EPROTO;
	ret = __lz_pread(fd, h, sizeof(*h), 0);
	if (ret)
		return ret;
	if (h->magic == SHM_FILE_MAGIC && (h->flags & SHM_FILE_PUBSUB))
		return 1;	/* a pub/sub channel: lzchan_pubsub.c reads on */
	if (h->magic != SHM_FILE_MAGIC || h->version != SHM_FILE_VERSION ||
	    h->page_size != page ||
	    __lzchan_geom_check(h->slot_size, h->slot_count, h->max_senders))
		return -EPROTO;
	__lzchan_shm_layout(&want, h->slot_size, h->slot_count, h->max_senders, page);
	if (memcmp(&want, &h->layout, sizeof(want)))
		return -EPROTO;
	total = page + want.lanes_off + want.lane_stride * h->max_senders;
	if ((uint64_t)st->st_size < total)
		return -EPROTO;
	return 0;
}

/*
 * Describe the channel file @fname in @dirfd.  With @ls, also its lanes
 * (up to @n): then an unreadable or invalid file is an error, and the
 * return value is the number of lanes.  Without, such a file is described
 * by its owner and mode alone.  -ENOENT: gone; -ENOTSUP: not a regular
 * file (never a channel).
 */
static int __lz_shm_describe(int dirfd, const char *fname, const char *name,
			     struct lzchan_chan_stat *out,
			     struct lzchan_lane_stat *ls, unsigned int n,
			     struct lzchan_sub_stat *ss, unsigned int nss)
{
	uint64_t page = sysconf(_SC_PAGESIZE), base;
	struct __lzchan_shm_file h;
	struct lzchan_shm_rx rx;
	struct stat st;
	uint32_t i, wake;
	int fd, ret;

	memset(out, 0, sizeof(*out));
	memcpy(out->name, name, strlen(name) + 1);
	out->numa_node = LZCHAN_NODE_LOCAL;

	fd = openat(dirfd, fname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			return ret;
		if (fstatat(dirfd, fname, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (!S_ISREG(st.st_mode))
			return -ENOTSUP;
		if (ls || ss)
			return ret;	/* typically -EACCES */
		goto owner_only;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOTSUP;
	}
	ret = __lz_shm_header(fd, &st, &h);
	if (ret == 1 && !ls) {
		ret = __lzchan_ps_describe(fd, &h, st.st_size, out, ss, nss);
		close(fd);
		if (ret < 0 && (ss || ret != -EPROTO))
			return ret;
		if (ret >= 0) {
			out->uid = out->cuid = st.st_uid;
			out->gid = out->cgid = st.st_gid;
			out->mode = st.st_mode & 0777;
			out->bytes = st.st_size;
			return ss ? ret : 0;
		}
		goto owner_only;
	}
	/* The other kind than asked for -- if it is a valid one at all. */
	if (ret == 1) {
		struct lzchan_chan_stat tmp;

		ret = __lzchan_ps_describe(fd, &h, st.st_size, &tmp, NULL, 0);
		ret = ret < 0 ? ret : -EPROTOTYPE;
	} else if (ret == 0 && ss) {
		ret = -EPROTOTYPE;
	}
	if (ret) {
		close(fd);
		if (ls || ss)
			return ret;
		goto owner_only;
	}

	out->uid = out->cuid = st.st_uid;
	out->gid = out->cgid = st.st_gid;
	out->mode = st.st_mode & 0777;
	out->bytes = st.st_size;
	out->slot_size = h.slot_size;
	out->slot_count = h.slot_count;
	out->max_senders = h.max_senders;
	out->numa_node = h.numa_node;
	if (h.flags & SHM_FILE_TEMP)
		out->create_flags |= LZCHAN_CREATE_TEMP;

	base = page;		/* the channel areas follow the header page */
	ret = __lz_pread(fd, &rx, sizeof(rx), base + h.layout.rx_off);
	if (!ret)
		ret = __lz_pread(fd, &wake, sizeof(wake), base + h.layout.bell_off +
				 h.layout.bell_size - LZCHAN_BELL_WAKE_BACK);
	if (ret)
		goto fail;
	out->rx_parked = rx.parked;
	out->wake_requests = out->wakeups = wake;
	ret = __lzchan_locked(fd, LOCK_BASE);
	if (ret < 0)
		goto fail;
	out->receiver = ret;

	for (i = 0; i < h.max_senders; i++) {
		struct lzchan_shm_rx_lane rxl;
		struct lzchan_shm_lane li;
		struct lzchan_shm_tx tx;
		int alive;

		ret = __lz_pread(fd, &li, sizeof(li), base + h.layout.info_off +
				 h.layout.info_lanes + (uint64_t)i * sizeof(li));
		if (!ret)
			ret = __lz_pread(fd, &tx, sizeof(tx), base + h.layout.lanes_off +
					 (uint64_t)i * h.layout.lane_stride);
		if (ret)
			goto fail;
		alive = __lzchan_locked(fd, LOCK_BASE + 1 + i);
		if (alive < 0) {
			ret = alive;
			goto fail;
		}
		out->senders += alive;
		out->sender_attaches += LZCHAN_STATUS_GEN(li.status);
		out->messages += tx.msgs;
		if (!ls || i >= n)
			continue;
		ret = __lz_pread(fd, &rxl, sizeof(rxl), base + h.layout.rx_off +
				 h.layout.rx_lanes + (uint64_t)i * h.layout.rx_lane_stride);
		if (ret)
			goto fail;
		memset(&ls[i], 0, sizeof(ls[i]));
		ls[i].state = LZCHAN_STATUS_STATE(li.status);
		ls[i].gen = LZCHAN_STATUS_GEN(li.status);
		ls[i].alive = alive;
		/* Odd while the receiver has the lane asleep; a lane that
		 * slept once and was woken has it even (it counts). */
		ls[i].sleepy = rxl.sleepy & 1;
		ls[i].tail = tx.tail;
		ls[i].head = rxl.head;
		ls[i].msgs = tx.msgs;
		ls[i].bytes = tx.bytes;
	}
	close(fd);
	return ls ? (int)h.max_senders : 0;

fail:
	close(fd);
	if (ls || ret != -EPROTO)
		return ret;
	/* Cut short since its header was read: describe it as invalid. */
	memset(out, 0, sizeof(*out));
	memcpy(out->name, name, strlen(name) + 1);
	out->numa_node = LZCHAN_NODE_LOCAL;

owner_only:
	out->uid = out->cuid = st.st_uid;
	out->gid = out->cgid = st.st_gid;
	out->mode = st.st_mode & 0777;
	out->bytes = st.st_size;
	return 0;
}

static int __lz_shm_list(struct lzchan_chan_stat *st, unsigned int n)
{
	struct dirent *d;
	unsigned int total = 0;
	DIR *dir;
	int ret = 0;

	dir = opendir(__lz_shm_dir());
	if (!dir)
		return -errno;
	while ((errno = 0, d = readdir(dir))) {
		struct lzchan_chan_stat tmp;
		const char *name = d->d_name + strlen(SHM_PREFIX);

		if (strncmp(d->d_name, SHM_PREFIX, strlen(SHM_PREFIX)) ||
		    __lzchan_name_check(name))
			continue;
		ret = __lz_shm_describe(dirfd(dir), d->d_name, name,
					total < n ? &st[total] : &tmp, NULL, 0, NULL, 0);
		if (ret == -ENOENT || ret == -ENOTSUP) {
			ret = 0;	/* removed meanwhile, or not a channel */
			continue;
		}
		if (ret)
			break;
		if (total == INT_MAX) {
			ret = -EOVERFLOW;
			break;
		}
		total++;
	}
	if (!d && errno)
		ret = -errno;
	closedir(dir);
	return ret ? ret : (int)total;
}

static int __lz_dev_list(int fd, struct lzchan_chan_stat *st, unsigned int n)
{
	struct lzchan_list l = {
		.size = sizeof(l),
		.entry_size = sizeof(*st),
		.count = n,
		.entries = (uintptr_t)st,
	};

	if (ioctl(fd, LZCHAN_IOC_LIST, &l) < 0)
		return -errno;
	return l.total > INT_MAX ? -EOVERFLOW : (int)l.total;
}

int lzchan_list(struct lzchan_chan_stat *st, unsigned int n, uint32_t *backend)
{
	int fd, ret;

	if (!st && n)
		return -EINVAL;
	fd = __lzchan_pick();
	if (fd >= 0) {
		if (backend)
			*backend = LZCHAN_BACKEND_DEV;
		ret = __lz_dev_list(fd, st, n);
		close(fd);
		return ret;
	}
	if (fd != -ENOENT)
		return fd;
	if (backend)
		*backend = LZCHAN_BACKEND_SHM;
	return __lz_shm_list(st, n);
}

static int __lz_dev_stat(int fd, const char *name, struct lzchan_chan_stat *out)
{
	struct lzchan_chan_stat *all = NULL;
	unsigned int room = 0;
	int ret, i;

	/* The list can grow between two calls: retry until it fits. */
	for (;;) {
		ret = __lz_dev_list(fd, all, room);
		if (ret < 0 || (unsigned int)ret <= room)
			break;
		free(all);
		room = ret + 16;
		all = calloc(room, sizeof(*all));
		if (!all)
			return -ENOMEM;
	}
	if (ret >= 0) {
		for (i = 0; i < ret; i++)
			if (!strncmp(all[i].name, name, LZCHAN_NAME_SIZE))
				break;
		if (i < ret) {
			*out = all[i];
			ret = 0;
		} else {
			ret = -ENOENT;
		}
	}
	free(all);
	return ret;
}

int lzchan_stat(const char *name, struct lzchan_chan_stat *st, uint32_t *backend)
{
	char path[PATH_MAX];
	int fd, ret;

	if (!st)
		return -EINVAL;
	ret = __lzchan_name_check(name);
	if (ret)
		return ret;
	fd = __lzchan_pick();
	if (fd >= 0) {
		if (backend)
			*backend = LZCHAN_BACKEND_DEV;
		ret = __lz_dev_stat(fd, name, st);
		close(fd);
		return ret;
	}
	if (fd != -ENOENT)
		return fd;
	if (backend)
		*backend = LZCHAN_BACKEND_SHM;
	ret = __lzchan_shm_path(path, sizeof(path), name);
	if (ret)
		return ret;
	ret = __lz_shm_describe(AT_FDCWD, path, name, st, NULL, 0, NULL, 0);
	return ret == -ENOTSUP ? -ENOENT : ret;
}

/* dev: up to @n subscriber places of pub/sub channel @name, from the
 * module (LZCHAN_IOC_PS_SUBS on unbound @fd); returns max_subscribers. */
static int __lz_dev_subs(int fd, const char *name, struct lzchan_sub_stat *ss, unsigned int n)
{
	struct lzchan_ps_sub_stat st[64];
	struct lzchan_ps_subs q = { .size = sizeof(q), .entry_size = sizeof(st[0]) };
	struct lzchan_features ft = { .size = sizeof(ft) };
	uint32_t i;

	if (ioctl(fd, LZCHAN_IOC_FEATURES, &ft) < 0)
		return -errno;
	if (!(ft.features & LZCHAN_FEAT_PUBSUB))
		return -EOPNOTSUPP;	/* a module older than pub/sub */
	memcpy(q.name, name, strlen(name) + 1);
	do {
		q.count = n - q.start < 64 ? n - q.start : 64;
		q.entries = (uintptr_t)st;
		if (ioctl(fd, LZCHAN_IOC_PS_SUBS, &q) < 0)
			return -errno;
		for (i = 0; i < q.count; i++) {
			struct lzchan_sub_stat *o = &ss[q.start + i];

			memset(o, 0, sizeof(*o));
			o->state = st[i].state;
			o->gen = st[i].gen;
			/* The module closes a place when its holder goes. */
			o->alive = st[i].state == LZCHAN_LANE_ATTACHED;
			o->detached = !!(st[i].flags & LZCHAN_PS_SUB_DETACHED);
			o->pos = st[i].pos;
			o->lag = st[i].lag;
			o->lost = st[i].lost;
		}
		q.start += q.count;
	} while (q.count && q.start < n);
	return (int)q.total;
}

/* lzchan_stat_lanes() (@ls) and lzchan_stat_subscribers() (@ss): up to @n
 * rows of the shm file of @name; the dev backend shows subscribers only. */
static int __lz_stat_rows(const char *name, struct lzchan_lane_stat *ls,
			  struct lzchan_sub_stat *ss, unsigned int n)
{
	struct lzchan_lane_stat none;
	struct lzchan_chan_stat st;
	char path[PATH_MAX];
	int fd, ret;

	ret = __lzchan_name_check(name);
	if (ret)
		return ret;
	fd = __lzchan_pick();
	if (fd >= 0 && ss) {
		ret = __lz_dev_subs(fd, name, ss, n);
		close(fd);
		return ret;
	}
	if (fd >= 0) {
		close(fd);
		return -EOPNOTSUPP;
	}
	if (fd != -ENOENT)
		return fd;
	ret = __lzchan_shm_path(path, sizeof(path), name);
	if (ret)
		return ret;
	/* NULL rows: only the count is wanted (n is 0: nothing is written). */
	if (ss)
		ret = __lz_shm_describe(AT_FDCWD, path, name, &st, NULL, 0, ss, n);
	else
		ret = __lz_shm_describe(AT_FDCWD, path, name, &st, ls ? ls : &none, n, NULL, 0);
	return ret == -ENOTSUP ? -ENOENT : ret;
}

int lzchan_stat_lanes(const char *name, struct lzchan_lane_stat *ls, unsigned int n)
{
	if (!ls && n)
		return -EINVAL;
	return __lz_stat_rows(name, ls, NULL, n);
}

int lzchan_stat_subscribers(const char *name, struct lzchan_sub_stat *ss, unsigned int n)
{
	struct lzchan_sub_stat none;

	if (!ss && n)
		return -EINVAL;
	return __lz_stat_rows(name, NULL, ss ? ss : &none, n);
}
