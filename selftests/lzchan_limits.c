// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module's limits (parameters under /sys/module/lzchan/parameters):
 * max_channels -> ENOSPC, max_channel_bytes -> EFBIG, max_user_bytes per
 * uid -> EDQUOT; memory is uncharged when channels go.
 */
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

/* Set a parameter for the length of one test. */
struct param {
	const char *path;
	long old;
};

static int param_set(struct param *p, const char *path, long v)
{
	p->path = path;
	p->old = lz_read_long(path);
	return p->old < 0 ? -1 : lz_write_long(path, v);
}

static void param_restore(struct param *p)
{
	lz_write_long(p->path, p->old);
}

static __u64 bytes_of(const char *name)
{
	struct lzchan_info in;
	int fd = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	__u64 b = 0;

	if (fd >= 0 && !lz_info(fd, &in))
		b = in.stat.bytes;
	if (fd >= 0)
		close(fd);
	return b;
}

TEST(max_channels)
{
	const char *a = lz_name("lim"), *b = lz_name("lim"), *c = lz_name("lim");
	struct param p;
	long now;

	LZ_NEED_DEV();
	now = lz_read_long(LZ_SYSFS "channels");
	ASSERT_LE(0, now);
	ASSERT_EQ(0, param_set(&p, LZ_PARAMS "max_channels", now + 2));
	EXPECT_EQ(0, lz_create(a, LZ_GEOM_DEFAULT));
	EXPECT_EQ(0, lz_create(b, LZ_GEOM_DEFAULT));
	EXPECT_EQ(-ENOSPC, lz_create(c, LZ_GEOM_DEFAULT));
	EXPECT_EQ(0, lz_unlink(a));
	EXPECT_EQ(0, lz_create(c, LZ_GEOM_DEFAULT));
	param_restore(&p);
	EXPECT_EQ(0, lz_unlink(b));
	EXPECT_EQ(0, lz_unlink(c));
}

TEST(max_channel_bytes)
{
	const char *a = lz_name("lim"), *b = lz_name("lim");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct param p;
	__u64 small;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(a, g));
	small = bytes_of(a);
	ASSERT_LT(0, small);
	EXPECT_EQ(0, lz_unlink(a));

	ASSERT_EQ(0, param_set(&p, LZ_PARAMS "max_channel_bytes", small));
	EXPECT_EQ(0, lz_create(a, g));		/* exactly at the limit */
	g.slot_count *= 2;
	EXPECT_EQ(-EFBIG, lz_create(b, g));
	param_restore(&p);
	EXPECT_EQ(0, lz_create(b, g));
	EXPECT_EQ(0, lz_unlink(a));
	EXPECT_EQ(0, lz_unlink(b));
}

struct quota_names {
	const char *a, *b, *c;
};

static int quota_as_user(void *arg)
{
	const struct quota_names *n = arg;

	if (setresgid(4321, 4321, 4321) || setgroups(0, NULL) ||
	    setresuid(4321, 4321, 4321))
		return 10;
	if (lz_create(n->a, LZ_GEOM_DEFAULT))
		return 11;
	if (lz_create(n->b, LZ_GEOM_DEFAULT))
		return 12;
	if (lz_create(n->c, LZ_GEOM_DEFAULT) != -EDQUOT)
		return 13;
	if (lz_unlink(n->a))		/* gives its bytes back */
		return 14;
	if (lz_create(n->c, LZ_GEOM_DEFAULT))
		return 15;
	return 0;
}

TEST(max_user_bytes)
{
	struct quota_names n = { lz_name("quota"), lz_name("quota"), lz_name("quota") };
	const char *probe = lz_name("probe");
	struct param p;
	int status;
	__u64 one;
	pid_t pid;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(probe, LZ_GEOM_DEFAULT));
	one = bytes_of(probe);
	/* Root's own channel does not count against uid 4321. */
	ASSERT_EQ(0, param_set(&p, LZ_PARAMS "max_user_bytes", 2 * one + one / 2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(quota_as_user(&n));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	param_restore(&p);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-ENOENT, lz_unlink(n.a));
	EXPECT_EQ(0, lz_unlink(n.b));
	EXPECT_EQ(0, lz_unlink(n.c));
	EXPECT_EQ(0, lz_unlink(probe));
}

/* ---- memory cgroup ---- */

#define CG	"/sys/fs/cgroup"
#define CGT	CG "/lzchan-test"

static int cg_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), n = strlen(text), ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, text, n) == n;
	close(fd);
	return ok ? 0 : -errno;
}

/* In the test cgroup: the channel's pages are charged to it; over its
 * memory.max the create fails with ENOMEM and nobody is OOM-killed. */
static int in_cgroup(const char *name, const char *name2)
{
	char pid[32];
	struct lz_geom g = LZ_GEOM_DEFAULT;
	long before, after;

	snprintf(pid, sizeof(pid), "%d", getpid());
	if (cg_write(CGT "/cgroup.procs", pid))
		return 1;
	g.slot_size = 4096;
	g.slot_count = 256;		/* 4 lanes of 1 MiB */
	before = lz_read_long(CGT "/memory.current");
	if (lz_create(name, g))
		return 2;
	after = lz_read_long(CGT "/memory.current");
	if (after - before < 4L << 20)
		return 3;
	snprintf(pid, sizeof(pid), "%ld", after + (1L << 20));
	if (cg_write(CGT "/memory.max", pid))
		return 4;
	if (lz_create(name2, g) != -ENOMEM)
		return 5;
	if (lz_unlink(name))
		return 6;
	if (lz_read_long(CGT "/memory.current") > after - (4L << 20))
		return 7;
	return 0;
}

TEST(memcg_charged_and_limited)
{
	const char *name = lz_name("memcg"), *name2 = lz_name("memcg");
	struct stat st;
	int status;
	pid_t pid;

	LZ_NEED_DEV();
	if (stat(CG "/cgroup.controllers", &st)) {
		mkdir(CG, 0755);
		if (mount("cgroup2", CG, "cgroup2", 0, NULL))
			SKIP(return, "no cgroup2 here");
	}
	if (cg_write(CG "/cgroup.subtree_control", "+memory"))
		SKIP(return, "memory controller unavailable");
	rmdir(CGT);
	ASSERT_EQ(0, mkdir(CGT, 0755));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(in_cgroup(name, name2));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("child killed by signal %d", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	lz_unlink(name);
	lz_unlink(name2);
	EXPECT_EQ(0, rmdir(CGT));
}

TEST_HARNESS_MAIN
