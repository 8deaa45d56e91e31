// SPDX-License-Identifier: GPL-2.0-only
/*
 * Namespaces and permissions: IPC namespaces do not see each other's
 * channels; a namespace's channels die with it; SysV-style owner/group/
 * other checks; a user namespace gets what its mapped ids allow.
 */
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sched.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

/* Run @fn in a child and return its exit status (or 255 on a signal). */
static int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 255;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

struct names {
	const char *parent, *child;
};

/* In a new IPC namespace: the parent's channel is invisible; ours is new. */
static int other_ns(void *arg)
{
	const struct names *n = arg;
	struct lz_geom g = LZ_GEOM_DEFAULT;

	if (unshare(CLONE_NEWIPC))
		return 1;
	if (lz_list_has(n->parent) != 0)
		return 2;
	if (lz_open(n->parent, LZCHAN_OPEN_SENDER, NULL) != -ENOENT)
		return 3;
	if (lz_unlink(n->parent) != -ENOENT)
		return 4;
	g.flags = LZCHAN_CREATE_EXCL;	/* same name, another namespace */
	if (lz_create(n->parent, g))
		return 5;
	if (lz_create(n->child, g))
		return 6;
	if (lz_list_has(n->child) != 1)
		return 7;
	return 0;		/* exits: the namespace and its channels die */
}

TEST(ipc_namespaces_isolated)
{
	struct names n = { lz_name("nsp"), lz_name("nsc") };
	long before;
	int fd;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(n.parent, LZ_GEOM_DEFAULT));
	before = lz_read_long(LZ_SYSFS "channels");
	ASSERT_EQ(0, in_child(other_ns, &n));
	EXPECT_EQ(1, lz_list_has(n.parent));
	EXPECT_EQ(0, lz_list_has(n.child));
	EXPECT_EQ(-ENOENT, lz_open(n.child, LZCHAN_OPEN_SENDER, NULL));
	/* The child's namespace died with it; the next name operation
	 * (list_has above) reaped its two channels. */
	EXPECT_EQ(before, lz_read_long(LZ_SYSFS "channels"));
	fd = lz_open(n.parent, LZCHAN_OPEN_RECEIVER, NULL);
	EXPECT_LE(0, fd);
	close(fd);
	EXPECT_EQ(0, lz_unlink(n.parent));
}

/* Two processes sharing a new IPC namespace talk through it. */
static int shared_ns(void *arg)
{
	const char *name = arg;
	struct lzchan_info in;
	volatile __u32 *rxlane;
	int rx, status, i;
	pid_t pid;

	if (unshare(CLONE_NEWIPC) || lz_create(name, LZ_GEOM_DEFAULT))
		return 1;
	rx = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	if (rx < 0 || lz_info(rx, &in))
		return 2;
	rxlane = lz_map(rx, in.layout.lanes_off, in.layout.lane_size, PROT_READ);
	if (!rxlane)
		return 3;
	pid = fork();
	if (pid == 0) {
		int tx = lz_open(name, LZCHAN_OPEN_SENDER, NULL);
		volatile __u32 *lane;

		if (tx < 0)
			_exit(1);
		lane = lz_map(tx, in.layout.lanes_off, in.layout.lane_size,
			      PROT_READ | PROT_WRITE);
		if (!lane)
			_exit(2);
		lane[in.layout.lane_slots / 4 + 1] = 77;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 4;
	for (i = 0; i < 100 && rxlane[in.layout.lane_slots / 4 + 1] != 77; i++)
		usleep(1000);
	return rxlane[in.layout.lane_slots / 4 + 1] == 77 ? 0 : 5;
}

TEST(shared_ipc_namespace_talks)
{
	char name[LZCHAN_NAME_SIZE];

	LZ_NEED_DEV();
	lz_setname(name, lz_name("share"));
	EXPECT_EQ(0, in_child(shared_ns, name));
	EXPECT_EQ(0, lz_list_has(name));
}

/* ---- SysV-style permissions ---- */

struct access_case {
	const char *name;
	uid_t uid;
	gid_t gid;
	int want_rx, want_tx, want_unlink;
};

static int try_access(void *arg)
{
	const struct access_case *a = arg;
	int fd;

	if (setresgid(a->gid, a->gid, a->gid) || setgroups(0, NULL) ||
	    setresuid(a->uid, a->uid, a->uid))
		return 10;
	fd = lz_open(a->name, LZCHAN_OPEN_RECEIVER, NULL);
	if ((fd >= 0 ? 0 : fd) != a->want_rx)
		return 11;
	if (fd >= 0)
		close(fd);
	fd = lz_open(a->name, LZCHAN_OPEN_SENDER, NULL);
	if ((fd >= 0 ? 0 : fd) != a->want_tx)
		return 12;
	if (fd >= 0)
		close(fd);
	if (lz_unlink(a->name) != a->want_unlink)
		return 13;
	return 0;
}

TEST(permissions)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	const char *name = lz_name("perm");
	struct access_case a = { .name = name };
	int fd;

	LZ_NEED_DEV();
	/* owner rw, group r, other nothing; created by root (0:0) */
	g.mode = 0640;
	ASSERT_EQ(0, lz_create(name, g));
	a = (struct access_case){ name, 1234, 1234, -EACCES, -EACCES, -EPERM };
	EXPECT_EQ(0, in_child(try_access, &a));
	a = (struct access_case){ name, 1234, 0, 0, -EACCES, -EPERM };
	EXPECT_EQ(0, in_child(try_access, &a));
	EXPECT_EQ(0, lz_unlink(name));

	/* other: write only -> may send, may not receive */
	g.mode = 0602;
	ASSERT_EQ(0, lz_create(name, g));
	a = (struct access_case){ name, 1234, 1234, -EACCES, 0, -EPERM };
	EXPECT_EQ(0, in_child(try_access, &a));
	EXPECT_EQ(0, lz_unlink(name));

	/* mode 0: only CAP_IPC_OWNER (root here) gets in */
	g.mode = 0;
	ASSERT_EQ(0, lz_create(name, g));
	fd = lz_open(name, LZCHAN_OPEN_SENDER, NULL);
	EXPECT_LE(0, fd);
	close(fd);
	EXPECT_EQ(0, lz_unlink(name));
}

/*
 * Removal follows SysV IPC_RMID: the owner, the creator, or CAP_SYS_ADMIN
 * in the namespace's user namespace.  CAP_IPC_OWNER overrides the mode
 * bits only: with it a stranger may open a mode-0 channel, never unlink it.
 */
struct cap_case {
	const char *name;
	unsigned int cap;
	int want_open, want_unlink;
};

static int with_one_cap(void *arg)
{
	const struct cap_case *c = arg;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	int fd;

	/* A stranger (uid 1234) that kept exactly one capability. */
	if (prctl(PR_SET_KEEPCAPS, 1) || setresgid(1234, 1234, 1234) ||
	    setgroups(0, NULL) || setresuid(1234, 1234, 1234))
		return 10;
	d[c->cap / 32].effective = d[c->cap / 32].permitted = 1U << (c->cap % 32);
	if (syscall(SYS_capset, &h, d))
		return 11;
	fd = lz_open(c->name, LZCHAN_OPEN_SENDER, NULL);
	if ((fd >= 0 ? 0 : fd) != c->want_open)
		return 12;
	if (fd >= 0)
		close(fd);
	if (lz_unlink(c->name) != c->want_unlink)
		return 13;
	return 0;
}

TEST(unlink_needs_owner_or_sys_admin)
{
	struct lz_geom g = LZ_GEOM_DEFAULT;
	const char *name = lz_name("rmid");
	struct cap_case c;

	LZ_NEED_DEV();
	g.mode = 0;
	ASSERT_EQ(0, lz_create(name, g));
	c = (struct cap_case){ name, CAP_IPC_OWNER, 0, -EPERM };
	EXPECT_EQ(0, in_child(with_one_cap, &c));
	EXPECT_EQ(1, lz_list_has(name));	/* still there */
	c = (struct cap_case){ name, CAP_SYS_ADMIN, -EACCES, 0 };
	EXPECT_EQ(0, in_child(with_one_cap, &c));
	EXPECT_EQ(-ENOENT, lz_unlink(name));
}

/* ---- user namespaces ---- */

static int write_file(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, n = strlen(text), ok;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, text, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

struct userns_names {
	const char *root_0600, *root_0602, *own;
};

/*
 * Inside a new user namespace where we are "root" (uid 0 mapped to 1234):
 * root's channels in the parent IPC namespace give only what "other" gets;
 * our own channel is ours, reported as uid 0 here and 1234 outside.
 */
static int in_userns(const struct userns_names *n, int go_fd)
{
	struct lzchan_info in;
	char b;
	int fd;

	if (read(go_fd, &b, 1) != 1)	/* wait for the id maps */
		return 20;
	if (geteuid() != 0)
		return 21;
	if (lz_open(n->root_0600, LZCHAN_OPEN_RECEIVER, NULL) != -EACCES)
		return 22;
	if (lz_open(n->root_0600, LZCHAN_OPEN_SENDER, NULL) != -EACCES)
		return 23;
	if (lz_unlink(n->root_0600) != -EPERM)
		return 24;
	if (lz_open(n->root_0602, LZCHAN_OPEN_RECEIVER, NULL) != -EACCES)
		return 25;
	fd = lz_open(n->root_0602, LZCHAN_OPEN_SENDER, NULL);
	if (fd < 0)
		return 26;
	close(fd);
	if (lz_create(n->own, LZ_GEOM_DEFAULT))
		return 27;
	fd = lz_open(n->own, LZCHAN_OPEN_RECEIVER, NULL);
	if (fd < 0 || lz_info(fd, &in))
		return 28;
	if (in.stat.uid != 0 || in.stat.cuid != 0)
		return 29;
	close(fd);
	return 0;
}

TEST(user_namespace_mapped_ids)
{
	struct userns_names n = { lz_name("uroot"), lz_name("uroot2"), lz_name("uown") };
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_info in;
	int go[2], status, fd;
	pid_t pid;

	LZ_NEED_DEV();
	g.mode = 0600;
	ASSERT_EQ(0, lz_create(n.root_0600, g));
	g.mode = 0602;
	ASSERT_EQ(0, lz_create(n.root_0602, g));
	ASSERT_EQ(0, pipe(go));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		/* Become uid 1234 here, then "root" of a new user namespace
		 * whose uid 0 maps back to 1234. */
		if (setresgid(1234, 1234, 1234) || setgroups(0, NULL) ||
		    setresuid(1234, 1234, 1234))
			_exit(31);
		if (unshare(CLONE_NEWUSER))
			_exit(30);
		_exit(in_userns(&n, go[0]));
	}
	close(go[0]);
	usleep(100000);		/* let it unshare */
	ASSERT_EQ(0, write_file(pid, "uid_map", "0 1234 1"));
	ASSERT_EQ(0, write_file(pid, "setgroups", "deny"));
	ASSERT_EQ(0, write_file(pid, "gid_map", "0 1234 1"));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* Seen from here, the namespace's root is uid 1234. */
	fd = lz_open(n.own, LZCHAN_OPEN_RECEIVER, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, lz_info(fd, &in));
	EXPECT_EQ(1234, in.stat.uid);
	EXPECT_EQ(1234, in.stat.gid);
	close(fd);
	EXPECT_EQ(0, lz_unlink(n.own));
	EXPECT_EQ(0, lz_unlink(n.root_0600));
	EXPECT_EQ(0, lz_unlink(n.root_0602));
}

/* What uid 4321 (no group in common) sees of a busy channel: 0 all as
 * expected; else the step that differed. */
static int list_as_other(const char *name, int want_hidden)
{
	struct lzchan_chan_stat e;

	if (setresgid(4321, 4321, 4321) || setgroups(0, NULL) ||
	    setresuid(4321, 4321, 4321))
		return 10;
	if (lz_list_entry(name, &e) != 1)
		return 11;
	if (e.mode != (want_hidden ? 0602 : 0604) || e.uid != 0 || !e.bytes ||
	    e.max_senders != 4)
		return 12;			/* names, ids, geometry: for all */
	if (want_hidden)
		return e.flags == LZCHAN_STAT_HIDDEN && !e.senders && !e.receiver &&
		       !e.sender_attaches && !e.messages && !e.peer_deaths ? 0 : 13;
	return !e.flags && e.senders == 1 && e.receiver == 1 &&
	       e.sender_attaches == 1 ? 0 : 14;
}

/*
 * LIST shows every channel's name, ids, mode and geometry, as ipcs does,
 * but its activity (who is attached, message and wakeup counts, parked)
 * only to callers who may read the channel.
 */
TEST(list_hides_activity_from_non_readers)
{
	const char *hidden = lz_name("hid"), *open_ = lz_name("vis");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lzchan_chan_stat e;
	int fds[4], i, status;
	pid_t pid;

	LZ_NEED_DEV();
	g.mode = 0602;
	ASSERT_EQ(0, lz_create(hidden, g));
	g.mode = 0604;
	ASSERT_EQ(0, lz_create(open_, g));
	fds[0] = lz_open(hidden, LZCHAN_OPEN_RECEIVER, NULL);
	fds[1] = lz_open(hidden, LZCHAN_OPEN_SENDER, NULL);
	fds[2] = lz_open(open_, LZCHAN_OPEN_RECEIVER, NULL);
	fds[3] = lz_open(open_, LZCHAN_OPEN_SENDER, NULL);
	for (i = 0; i < 4; i++)
		ASSERT_LE(0, fds[i]);
	/* The owner sees everything. */
	ASSERT_EQ(1, lz_list_entry(hidden, &e));
	EXPECT_EQ(0, e.flags);
	EXPECT_EQ(1, e.senders);
	EXPECT_EQ(1, e.receiver);

	for (i = 0; i < 2; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(list_as_other(i ? open_ : hidden, !i));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("%s", i ? "readable" : "hidden");
	}
	for (i = 0; i < 4; i++)
		close(fds[i]);
	EXPECT_EQ(0, lz_unlink(hidden));
	EXPECT_EQ(0, lz_unlink(open_));
}

TEST_HARNESS_MAIN
