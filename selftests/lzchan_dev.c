// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/lzchan ioctl ABI and channel semantics: argument sizing, reserved
 * fields, unknown commands; create/open/unlink/list/info and their errors.
 */
#include <stddef.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

/* ---- the ioctl ABI ---- */

TEST(features)
{
	struct lzchan_features f = { .size = sizeof(f) };
	int fd;

	LZ_NEED_DEV();
	fd = lz_dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &f));
	EXPECT_EQ(sizeof(f), f.size);
	EXPECT_EQ(LZCHAN_ABI_VERSION, f.abi_version);
	EXPECT_EQ(sysconf(_SC_PAGESIZE), f.page_size);
	EXPECT_EQ(LZCHAN_FEAT_ALL, f.features);
	/* Output fields passed back in are simply overwritten. */
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &f));
	close(fd);
}

TEST(struct_size_too_small)
{
	struct lzchan_features f = { .size = offsetof(struct lzchan_features, features) };
	struct lzchan_create c = { .size = 8 };
	int fd;

	LZ_NEED_DEV();
	fd = lz_dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &f));
	f.size = 0;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &f));
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_CREATE, &c));
	close(fd);
}

/* A newer caller's larger struct works if the bytes we do not know are 0. */
TEST(struct_grown)
{
	struct {
		struct lzchan_features f;
		__u64 future[3];
	} big;
	int fd;

	LZ_NEED_DEV();
	fd = lz_dev();
	ASSERT_LE(0, fd);
	memset(&big, 0, sizeof(big));
	big.f.size = sizeof(big);
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &big));
	EXPECT_EQ(LZCHAN_ABI_VERSION, big.f.abi_version);
	EXPECT_EQ(0, big.future[0] | big.future[1] | big.future[2]);
	big.future[2] = 1;
	EXPECT_EQ(-E2BIG, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &big));
	close(fd);
}

TEST(flags_and_reserved_rejected)
{
	struct lzchan_features f = { .size = sizeof(f), .flags = 1 };
	struct lzchan_create c;
	struct lzchan_unlink u = { .size = sizeof(u), .flags = 1, .name = "x" };
	int fd;

	LZ_NEED_DEV();
	fd = lz_dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &f));
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.reserved[3] = 1;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_FEATURES, &f));

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	strcpy(c.name, lz_name("rsv"));
	c.slot_size = 64;
	c.slot_count = 4;
	c.max_senders = 1;
	c.numa_node = LZCHAN_NODE_LOCAL;
	c.flags = 1U << 7;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_CREATE, &c));
	c.flags = 0;
	c.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_CREATE, &c));
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_UNLINK, &u));
	close(fd);
}

TEST(bad_pointer)
{
	int fd;

	LZ_NEED_DEV();
	fd = lz_dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EFAULT, lz_ioctl(fd, LZCHAN_IOC_FEATURES, NULL));
	EXPECT_EQ(-EFAULT, lz_ioctl(fd, LZCHAN_IOC_CREATE, (void *)16));
	EXPECT_EQ(-EFAULT, lz_ioctl(fd, LZCHAN_IOC_LIST, (void *)-4096L));
	close(fd);
}

TEST(unknown_commands)
{
	struct lzchan_features f = { .size = sizeof(f) };
	const unsigned long bad[] = {
		_IO(LZCHAN_IOC_MAGIC, 0xff),
		_IO(LZCHAN_IOC_MAGIC, 0x1f),
		_IO(LZCHAN_IOC_MAGIC, 0x13),	/* the first after LZCHAN_IOC_LANES */
		_IO(LZCHAN_IOC_MAGIC + 1, 0x00),
		_IOWR(LZCHAN_IOC_MAGIC, 0x00, struct lzchan_features),
		_IOR(LZCHAN_IOC_MAGIC, 0x01, __u32),
		0,
	};
	size_t i;
	int fd;

	LZ_NEED_DEV();
	fd = lz_dev();
	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned long cmd = bad[i];

		EXPECT_EQ(-ENOTTY, lz_ioctl(fd, cmd, &f)) TH_LOG("cmd 0x%lx", cmd);
	}
	/* Known, but for bound files only. */
	EXPECT_EQ(-EBADFD, lz_ioctl(fd, LZCHAN_IOC_BYE, NULL));
	EXPECT_EQ(-EBADFD, lz_ioctl(fd, LZCHAN_IOC_WAKE, NULL));
	EXPECT_EQ(-EBADFD, lz_ioctl(fd, LZCHAN_IOC_PS_PARK, NULL));
	EXPECT_EQ(-EBADFD, lz_ioctl(fd, LZCHAN_IOC_RING, NULL));
	close(fd);
}

/* ---- create ---- */

TEST(create_open_unlink)
{
	const char *name = lz_name("basic");
	struct lzchan_info in;
	__u32 lane = 7;
	int rx, tx;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(name, LZ_GEOM_DEFAULT));
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, &lane);
	ASSERT_LE(0, rx);
	EXPECT_EQ(LZCHAN_LANE_NONE, lane);
	tx = lz_open(name, LZCHAN_OPEN_SENDER, &lane);
	ASSERT_LE(0, tx);
	EXPECT_EQ(0, lane);

	ASSERT_EQ(0, lz_info(rx, &in));
	EXPECT_EQ(LZCHAN_OPEN_RECEIVER, in.role);
	EXPECT_STREQ(name, in.stat.name);
	EXPECT_EQ(64, in.stat.slot_size);
	EXPECT_EQ(64, in.stat.slot_count);
	EXPECT_EQ(4, in.stat.max_senders);
	EXPECT_EQ(0600, in.stat.mode);
	EXPECT_EQ(getuid(), in.stat.uid);
	EXPECT_EQ(1, in.stat.senders);
	EXPECT_EQ(1, in.stat.receiver);
	EXPECT_EQ(1, in.stat.sender_attaches);

	ASSERT_EQ(0, lz_info(tx, &in));
	EXPECT_EQ(LZCHAN_OPEN_SENDER, in.role);
	EXPECT_EQ(0, in.lane);

	/* Unlink removes the name; the channel lives on for its fds. */
	ASSERT_EQ(0, lz_unlink(name));
	EXPECT_EQ(-ENOENT, lz_unlink(name));
	EXPECT_EQ(-ENOENT, lz_open(name, LZCHAN_OPEN_SENDER, NULL));
	ASSERT_EQ(0, lz_info(rx, &in));
	EXPECT_STREQ("", in.stat.name);
	EXPECT_EQ(1, in.stat.senders);
	close(tx);
	close(rx);
}

TEST(create_exists)
{
	const char *name = lz_name("excl");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_create c = { .size = sizeof(c) };
	struct lzchan_info in;
	int fd, rx;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(name, g));
	g.flags = LZCHAN_CREATE_EXCL;
	EXPECT_EQ(-EEXIST, lz_create(name, g));

	/* Without EXCL: success, created = 0, the first geometry stands. */
	fd = lz_dev();
	ASSERT_LE(0, fd);
	strcpy(c.name, name);
	c.slot_size = 128;
	c.slot_count = 8;
	c.max_senders = 1;
	c.numa_node = LZCHAN_NODE_LOCAL;
	c.created = 1;
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_CREATE, &c));
	EXPECT_EQ(0, c.created);
	close(fd);
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx);
	ASSERT_EQ(0, lz_info(rx, &in));
	EXPECT_EQ(64, in.stat.slot_size);
	close(rx);
	EXPECT_EQ(0, lz_unlink(name));
}

TEST(create_bad_geometry)
{
	struct lz_geom g;
	int i;
	static const struct { __u32 size, count, senders, mode; __s32 node; } bad[] = {
		{ 0, 64, 1, 0600, -1 },		/* slot size 0 */
		{ 32, 64, 1, 0600, -1 },	/* below a cache line */
		{ 96, 64, 1, 0600, -1 },	/* not a multiple of 64 */
		{ 192, 64, 1, 0600, -1 },	/* a multiple of 64, not a power of two */
		{ 131072, 64, 1, 0600, -1 },	/* over 64 KiB */
		{ 64, 0, 1, 0600, -1 },
		{ 64, 1, 1, 0600, -1 },		/* below 2 */
		{ 64, 100, 1, 0600, -1 },	/* not a power of two */
		{ 64, 1U << 25, 1, 0600, -1 },	/* over 2^24 */
		{ 64, 64, 0, 0600, -1 },	/* no lanes */
		{ 64, 64, LZCHAN_SENDERS_MAX + 1, 0600, -1 },
		{ 64, 64, 1, 01000, -1 },	/* not a permission bit */
		{ 64, 64, 1, 0600, -2 },	/* bad node */
		{ 64, 64, 1, 0600, 4096 },	/* no such node */
	};

	LZ_NEED_DEV();
	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		g = (struct lz_geom){ bad[i].size, bad[i].count, bad[i].senders,
				      bad[i].mode, 0, bad[i].node };
		EXPECT_EQ(-EINVAL, lz_create(lz_name("geom"), g)) {
			TH_LOG("case %d", i);
		}
	}
}

TEST(names)
{
	struct lzchan_create c = { .size = sizeof(c), .slot_size = 64,
				   .slot_count = 4, .max_senders = 1,
				   .numa_node = LZCHAN_NODE_LOCAL, .mode = 0600 };
	char longest[LZCHAN_NAME_SIZE];
	int fd;

	LZ_NEED_DEV();
	EXPECT_EQ(-EINVAL, lz_create("", LZ_GEOM_DEFAULT));
	EXPECT_EQ(-EINVAL, lz_create("a/b", LZ_GEOM_DEFAULT));
	EXPECT_EQ(-EINVAL, lz_create("a b", LZ_GEOM_DEFAULT));
	EXPECT_EQ(-EINVAL, lz_create("tab\there", LZ_GEOM_DEFAULT));
	EXPECT_EQ(-EINVAL, lz_create("\x7f", LZ_GEOM_DEFAULT));

	/* 63 bytes is the longest name; 64 with no NUL is too long. */
	memset(longest, 'n', LZCHAN_NAME_MAX);
	longest[LZCHAN_NAME_MAX] = 0;
	snprintf(longest, 12, "%010d", getpid());
	longest[10] = 'n';
	ASSERT_EQ(0, lz_create(longest, LZ_GEOM_DEFAULT));
	EXPECT_EQ(0, lz_unlink(longest));

	fd = lz_dev();
	ASSERT_LE(0, fd);
	memset(c.name, 'x', sizeof(c.name));
	EXPECT_EQ(-ENAMETOOLONG, lz_ioctl(fd, LZCHAN_IOC_CREATE, &c));
	close(fd);
}

/* ---- open ---- */

TEST(open_errors)
{
	const char *name = lz_name("open");
	struct lzchan_open o = { .size = sizeof(o), .abi_version = LZCHAN_ABI_VERSION };
	struct lzchan_info in;
	int fd, rx, rx2;

	LZ_NEED_DEV();
	EXPECT_EQ(-ENOENT, lz_open(lz_name("nosuch"), LZCHAN_OPEN_RECEIVER, NULL));
	ASSERT_EQ(0, lz_create(name, LZ_GEOM_DEFAULT));

	fd = lz_dev();
	ASSERT_LE(0, fd);
	strcpy(o.name, name);
	o.flags = 0;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	o.flags = LZCHAN_OPEN_RECEIVER | LZCHAN_OPEN_SENDER;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	o.flags = LZCHAN_OPEN_SENDER;
	/* A library of another ABI (1: no attn; 3: its senders map the
	 * whole rx area and the bell; 0: one that predates the field; the
	 * next) is refused, and the fd stays unbound. */
	o.abi_version = 1;
	EXPECT_EQ(-EPROTO, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	o.abi_version = 3;
	EXPECT_EQ(-EPROTO, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	o.abi_version = 0;
	EXPECT_EQ(-EPROTO, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	o.abi_version = LZCHAN_ABI_VERSION + 1;
	EXPECT_EQ(-EPROTO, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	o.abi_version = LZCHAN_ABI_VERSION;
	o.pad = 1;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	o.pad = 0;
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	/* A bound fd stays bound. */
	EXPECT_EQ(-EISCONN, lz_ioctl(fd, LZCHAN_IOC_OPEN, &o));
	close(fd);

	/* One receiver at a time; another may come once it is gone. */
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx);
	EXPECT_EQ(-EBUSY, lz_open(name, LZCHAN_OPEN_RECEIVER, NULL));
	close(rx);
	rx2 = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx2);
	close(rx2);

	/* Unbound fds have no channel to describe. */
	fd = lz_dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EBADFD, lz_info(fd, &in));
	close(fd);
	EXPECT_EQ(0, lz_unlink(name));
}

TEST(lane_exhaustion_and_reuse)
{
	const char *name = lz_name("lanes");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	__u32 lane;
	int a, b, c;

	LZ_NEED_DEV();
	g.max_senders = 2;
	ASSERT_EQ(0, lz_create(name, g));
	a = lz_open(name, LZCHAN_OPEN_SENDER, &lane);
	ASSERT_LE(0, a);
	EXPECT_EQ(0, lane);
	b = lz_open(name, LZCHAN_OPEN_SENDER, &lane);
	ASSERT_LE(0, b);
	EXPECT_EQ(1, lane);
	EXPECT_EQ(-EUSERS, lz_open(name, LZCHAN_OPEN_SENDER, NULL));

	/* Lane 0's sender leaves having sent nothing: the lane is reused. */
	close(a);
	c = lz_open(name, LZCHAN_OPEN_SENDER, &lane);
	ASSERT_LE(0, c);
	EXPECT_EQ(0, lane);
	close(b);
	close(c);
	EXPECT_EQ(0, lz_unlink(name));
}

/* ---- list ---- */

static int list_has(struct lzchan_chan_stat *e, __u32 n, const char *name)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (!strcmp(e[i].name, name))
			return 1;
	return 0;
}

TEST(list)
{
	const char *n1 = lz_name("list"), *n2 = lz_name("list");
	struct lzchan_chan_stat e[64];
	struct lzchan_list l = { .size = sizeof(l) };
	int fd;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(n1, LZ_GEOM_DEFAULT));
	ASSERT_EQ(0, lz_create(n2, LZ_GEOM_DEFAULT));
	fd = lz_dev();
	ASSERT_LE(0, fd);

	/* Count only. */
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_LIST, &l));
	EXPECT_LE(2, l.total);
	EXPECT_EQ(0, l.count);

	l.entries = (__u64)(unsigned long)e;
	l.entry_size = sizeof(e[0]);
	l.count = 64;
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_LIST, &l));
	EXPECT_EQ(l.total, l.count);
	EXPECT_TRUE(list_has(e, l.count, n1));
	EXPECT_TRUE(list_has(e, l.count, n2));

	/* Paging: start past the end gives nothing. */
	l.start = l.total;
	l.count = 64;
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_LIST, &l));
	EXPECT_EQ(0, l.count);

	/* Entry size below the first version, or absurd, is refused. */
	l.start = 0;
	l.count = 1;
	l.entry_size = 16;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_LIST, &l));
	l.entry_size = 1 << 20;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_LIST, &l));
	l.entry_size = sizeof(e[0]);
	l.entries = 8;
	EXPECT_EQ(-EFAULT, lz_ioctl(fd, LZCHAN_IOC_LIST, &l));

	close(fd);
	EXPECT_EQ(0, lz_unlink(n1));
	EXPECT_EQ(0, lz_unlink(n2));
}

/* ---- temporary channels ---- */

/* LZCHAN_IOC_CREATE of a temporary channel @name on @fd: 0 or -errno. */
static int temp_create(int fd, const char *name)
{
	struct lzchan_create c = {
		.size = sizeof(c), .flags = LZCHAN_CREATE_TEMP | LZCHAN_CREATE_EXCL,
		.slot_size = 64, .slot_count = 64, .max_senders = 2,
		.numa_node = LZCHAN_NODE_LOCAL, .mode = 0600,
	};

	lz_setname(c.name, name);
	return lz_ioctl(fd, LZCHAN_IOC_CREATE, &c);
}

/* lz_open() on a given unbound @fd. */
static int open_on(int fd, const char *name, __u32 role)
{
	struct lzchan_open o = { .size = sizeof(o), .flags = role, .abi_version = LZCHAN_ABI_VERSION };

	lz_setname(o.name, name);
	return lz_ioctl(fd, LZCHAN_IOC_OPEN, &o);
}

/*
 * A temporary channel's name goes with its receiver -- and, until a
 * receiver opens it, with the file that created it: a creator that dies
 * between CREATE and OPEN leaves no name behind.  One per unbound file.
 */
TEST(temp_goes_with_its_creator)
{
	const char *name = lz_name("tmpc"), *other = lz_name("tmpo");
	int fd, rx, tx, bound;

	LZ_NEED_DEV();
	/* Created, never opened: the name goes with the creating file. */
	fd = lz_dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, temp_create(fd, name));
	EXPECT_EQ(1, lz_list_has(name));
	EXPECT_EQ(-EBUSY, temp_create(fd, other));	/* one at a time */
	close(fd);
	EXPECT_EQ(0, lz_list_has(name));
	EXPECT_EQ(-ENOENT, lz_open(name, LZCHAN_OPEN_SENDER, NULL));

	/* A bound file cannot make one (it could never receive on it). */
	ASSERT_EQ(0, lz_create(other, LZ_GEOM_DEFAULT));
	bound = lz_open(other, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, bound);
	EXPECT_EQ(-EISCONN, temp_create(bound, name));
	close(bound);
	EXPECT_EQ(0, lz_unlink(other));

	/* The creator opens it as a sender, another file receives: the
	 * creator's close leaves it to the receiver, whose close removes it. */
	fd = lz_dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, temp_create(fd, name));
	ASSERT_EQ(0, open_on(fd, name, LZCHAN_OPEN_SENDER));
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx);
	close(fd);
	EXPECT_EQ(1, lz_list_has(name));
	close(rx);
	EXPECT_EQ(0, lz_list_has(name));

	/* The usual way: create, open as receiver on the same file. */
	fd = lz_dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, temp_create(fd, name));
	ASSERT_EQ(0, open_on(fd, name, LZCHAN_OPEN_RECEIVER));
	tx = lz_open(name, LZCHAN_OPEN_SENDER, NULL);
	ASSERT_LE(0, tx);
	close(fd);
	EXPECT_EQ(0, lz_list_has(name));
	EXPECT_EQ(-ENOENT, lz_open(name, LZCHAN_OPEN_RECEIVER, NULL));
	close(tx);
}

/*
 * A receiver that attaches to a temporary channel while its receiver
 * closes must not keep the channel without its name: it either finds the
 * channel taken (EBUSY) or gone (ENOENT), never a receiver nobody can
 * reach.  (The name used to be removed after the closing receiver had let
 * go of the channel: a newcomer could attach in between and lose it.)
 */
TEST(temp_receiver_race)
{
	int round, st, fd, bad = 0, won = 0;
	int go[2];
	pid_t pid;
	char b;

	LZ_NEED_DEV();
	for (round = 0; round < 300; round++) {
		const char *name = lz_name("tmpr");

		fd = lz_dev();
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, temp_create(fd, name));
		ASSERT_EQ(0, open_on(fd, name, LZCHAN_OPEN_RECEIVER));
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			int r;

			close(fd);
			if (write(go[1], "g", 1) != 1)
				_exit(3);
			do
				r = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
			while (r == -EBUSY);
			if (r < 0)
				_exit(r == -ENOENT ? 0 : 4);
			/* Attached: the name must still be there. */
			_exit(lz_list_has(name) == 1 ? 1 : 2);
		}
		ASSERT_EQ(1, read(go[0], &b, 1));
		close(fd);
		close(go[0]);
		close(go[1]);
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		ASSERT_TRUE(WIFEXITED(st));
		if (WEXITSTATUS(st) == 1)
			won++;
		else if (WEXITSTATUS(st) == 2)
			bad++;
		else
			ASSERT_EQ(0, WEXITSTATUS(st));
		lz_unlink(name);
	}
	EXPECT_EQ(0, bad) TH_LOG("%d receivers attached to a channel whose name then went", bad);
	TH_LOG("%d of 300 newcomers attached with the name kept, the rest found it gone", won);
}

/* ---- fdinfo ---- */

TEST(fdinfo)
{
	const char *name = lz_name("fdinfo");
	char path[64], buf[2048], want[128];
	ssize_t n;
	int rx, fd;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(name, LZ_GEOM_DEFAULT));
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", rx);
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	ASSERT_LT(0, n);
	buf[n] = 0;
	close(fd);
	snprintf(want, sizeof(want), "lzchan-channel:\t%s\n", name);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "lzchan-role:\treceiver\n"));
	EXPECT_NE(NULL, strstr(buf, "lzchan-geometry:\t64 x 64, 4 senders max\n"));
	close(rx);
	EXPECT_EQ(0, lz_unlink(name));
}

/* ---- module-wide counters ---- */

TEST(sysfs_counters)
{
	const char *name = lz_name("sysfs");
	struct lzchan_info in;
	long ch0, pg0, ch1, pg1;
	int rx;

	LZ_NEED_DEV();
	ch0 = lz_read_long(LZ_SYSFS "channels");
	pg0 = lz_read_long(LZ_SYSFS "pages");
	ASSERT_LE(0, ch0);
	ASSERT_LE(0, pg0);
	ASSERT_EQ(0, lz_create(name, LZ_GEOM_DEFAULT));
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, rx);
	ASSERT_EQ(0, lz_info(rx, &in));
	ch1 = lz_read_long(LZ_SYSFS "channels");
	pg1 = lz_read_long(LZ_SYSFS "pages");
	EXPECT_EQ(ch0 + 1, ch1);
	EXPECT_EQ(pg0 + (long)(in.stat.bytes / sysconf(_SC_PAGESIZE)), pg1);
	EXPECT_EQ(in.layout.lanes_off + in.layout.lane_stride * 4, in.stat.bytes);

	/* Unlinked but open: still there; closed too: gone. */
	ASSERT_EQ(0, lz_unlink(name));
	EXPECT_EQ(ch1, lz_read_long(LZ_SYSFS "channels"));
	close(rx);
	EXPECT_EQ(ch0, lz_read_long(LZ_SYSFS "channels"));
	EXPECT_EQ(pg0, lz_read_long(LZ_SYSFS "pages"));
}

TEST_HARNESS_MAIN
