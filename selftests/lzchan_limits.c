// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module's limits (parameters under /sys/module/lzchan/parameters):
 * max_channels -> ENOSPC, max_channel_bytes -> EFBIG, max_user_bytes per
 * uid -> EDQUOT; memory is uncharged when channels go.
 */
#include <grp.h>

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

TEST_HARNESS_MAIN
