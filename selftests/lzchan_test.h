/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the /dev/lzchan selftests: raw ioctl wrappers that
 * return -errno, mapping of layout areas, sysfs and module parameters.
 * Include after kselftest_harness.h.
 */
#ifndef LZCHAN_TEST_H
#define LZCHAN_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/lzchan.h>

/*
 * The harness kills a test after TEST_TIMEOUT_DEFAULT (30 s in 6.1's
 * harness).  On the rig's debug kernel (KASAN, lockdep, kmemleak under
 * software emulation) a test that takes one second on a stock kernel can
 * take thirty, so every TEST()/TEST_F() defined after this header gets
 * four minutes: still far below a real hang's cost, since /init's
 * per-program timeout (selftests/settings) bounds the whole program too.
 */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 240
#endif

/* xorshift64*: the fuzzers' cheap random numbers, reproducible from a
 * printed seed; *s must not be 0. */
static inline uint64_t lz_xorshift(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* The VM rig promised the module (LZCHAN_EXPECT_DEV=1). */
static inline int lz_expect_dev(void)
{
	const char *e = getenv("LZCHAN_EXPECT_DEV");

	return e && *e == '1';
}

/*
 * First statement of every test that needs the module: SKIP on a machine
 * without it, but FAIL where the VM rig promised it (LZCHAN_EXPECT_DEV=1).
 * (A SKIP in FIXTURE_SETUP would not stop the body on 6.1's harness.)
 */
#define LZ_NEED_DEV() do {						\
	if (access(LZCHAN_DEVICE_PATH, F_OK)) {				\
		ASSERT_FALSE(lz_expect_dev())				\
			TH_LOG("%s missing in the VM", LZCHAN_DEVICE_PATH); \
		SKIP(return, "%s absent: lzchan.ko not loaded",	\
		     LZCHAN_DEVICE_PATH);				\
	}								\
} while (0)

#define LZ_SYSFS	"/sys/class/misc/lzchan/"
#define LZ_PARAMS	"/sys/module/lzchan/parameters/"

static inline int lz_dev(void)
{
	int fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline int lz_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* A name unique to this process and call. */
/* Library options with this geometry, the rest default (needs lzchan.h). */
/* Entries of @dir other than those starting with '.' (-1: unreadable):
 * files left in a directory, descriptors open in /proc/self/fd. */
static inline int lz_dir_entries(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

#ifdef LZCHAN_H
static inline struct lzchan_opts lz_opts(uint32_t size, uint32_t count, uint32_t senders)
{
	struct lzchan_opts o;

	lzchan_opts_init(&o);
	o.slot_size = size;
	o.slot_count = count;
	o.max_senders = senders;
	return o;
}
#endif

static inline const char *lz_name(const char *prefix)
{
	static char buf[8][LZCHAN_NAME_SIZE];
	static unsigned int n;
	char *b = buf[n % 8];

	snprintf(b, LZCHAN_NAME_SIZE, "%s.%d.%u", prefix, getpid(), n++);
	return b;
}

/* The caller's LIST entry for @name: 1 (filled *out, may be NULL), 0 if
 * not listed, or -1 when the list cannot be had. */
static inline int lz_list_entry(const char *name, struct lzchan_chan_stat *out)
{
	struct lzchan_chan_stat e[256];
	struct lzchan_list l = { .size = sizeof(l), .entry_size = sizeof(e[0]),
				 .count = 256, .entries = (__u64)(unsigned long)e };
	int fd = lz_dev(), ret = -1;
	__u32 i;

	if (fd < 0)
		return -1;
	if (!lz_ioctl(fd, LZCHAN_IOC_LIST, &l)) {
		ret = 0;
		/* count says how many exist; only 256 were written. */
		for (i = 0; i < l.count && i < 256; i++)
			if (!strncmp(e[i].name, name, LZCHAN_NAME_SIZE)) {
				if (out)
					*out = e[i];
				ret = 1;
			}
	}
	close(fd);
	return ret;
}

/* Is @name in the caller's IPC namespace's channel list?  1, 0, or -1
 * when the list cannot be had. */
static inline int lz_list_has(const char *name)
{
	return lz_list_entry(name, NULL);
}

struct lz_geom {
	__u32 slot_size, slot_count, max_senders, mode, flags;
	__s32 node;
};

#define LZ_GEOM_DEFAULT \
	((struct lz_geom){ .slot_size = 64, .slot_count = 64, .max_senders = 4, \
			   .mode = 0600, .node = LZCHAN_NODE_LOCAL })

/* Copy a name into an ioctl struct's name[] (truncating, always ended). */
static inline void lz_setname(char dst[LZCHAN_NAME_SIZE], const char *src)
{
	size_t n = strnlen(src, LZCHAN_NAME_SIZE - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

static inline int lz_create(const char *name, struct lz_geom g)
{
	struct lzchan_create c = {
		.size = sizeof(c), .flags = g.flags, .slot_size = g.slot_size,
		.slot_count = g.slot_count, .max_senders = g.max_senders,
		.numa_node = g.node, .mode = g.mode,
	};
	int fd = lz_dev(), ret;

	if (fd < 0)
		return fd;
	lz_setname(c.name, name);
	ret = lz_ioctl(fd, LZCHAN_IOC_CREATE, &c);
	close(fd);
	return ret;
}

static inline int lz_unlink(const char *name)
{
	struct lzchan_unlink u = { .size = sizeof(u) };
	int fd = lz_dev(), ret;

	if (fd < 0)
		return fd;
	lz_setname(u.name, name);
	ret = lz_ioctl(fd, LZCHAN_IOC_UNLINK, &u);
	close(fd);
	return ret;
}

/* Open @name in @role (LZCHAN_OPEN_*): the bound fd, or -errno. */
static inline int lz_open(const char *name, __u32 role, __u32 *lane)
{
	struct lzchan_open o = { .size = sizeof(o), .flags = role, .abi_version = LZCHAN_ABI_VERSION };
	int fd = lz_dev(), ret;

	if (fd < 0)
		return fd;
	lz_setname(o.name, name);
	ret = lz_ioctl(fd, LZCHAN_IOC_OPEN, &o);
	if (ret) {
		close(fd);
		return ret;
	}
	if (lane)
		*lane = o.lane;
	return fd;
}

static inline int lz_info(int fd, struct lzchan_info *in)
{
	memset(in, 0, sizeof(*in));
	in->size = sizeof(*in);
	return lz_ioctl(fd, LZCHAN_IOC_INFO, in);
}

/* Map [off, off + len) of a bound fd; NULL and errno set on failure. */
static inline void *lz_map(int fd, __u64 off, __u64 len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

static inline long lz_read_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 0) : -1;
}

static inline int lz_write_long(const char *path, long v)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CLOEXEC), n, ret;

	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%ld\n", v);
	ret = write(fd, buf, n) == n ? 0 : -errno;
	close(fd);
	return ret;
}

/* Pages held on @node according to /sys/class/misc/lzchan/node_pages. */
static inline long lz_node_pages(int node)
{
	FILE *f = fopen(LZ_SYSFS "node_pages", "re");
	long pages = -1, p;
	int n;

	if (!f)
		return -1;
	while (fscanf(f, "%d %ld", &n, &p) == 2)
		if (n == node)
			pages = p;
	fclose(f);
	return pages;
}

/* A module parameter set for one test, and put back after it. */
struct lz_param {
	const char *path;
	long old;
};

static inline int lz_param_set(struct lz_param *p, const char *path, long v)
{
	p->path = path;
	p->old = lz_read_long(path);
	return p->old < 0 ? -1 : lz_write_long(path, v);
}

static inline void lz_param_restore(struct lz_param *p)
{
	if (p->path && p->old >= 0)
		lz_write_long(p->path, p->old);
}

/* May host user @uid make a user namespace (and an IPC namespace in it),
 * as rootless container runtimes do? */
static inline int lz_have_userns(uid_t uid)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(setresuid(uid, uid, uid) ||
		      unshare(CLONE_NEWUSER | CLONE_NEWIPC) ? 1 : 0);
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       !WEXITSTATUS(st);
}

/*
 * Run @fn(@arg) in a child; return the signal that killed it, 0 if it
 * exited 0, or -1 otherwise.  For "this store must fault" checks.
 */
static inline int lz_child_signal(void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static inline void lz_store_u32(void *p)
{
	*(volatile __u32 *)p = 0x5a5a5a5a;
}

#endif /* LZCHAN_TEST_H */
