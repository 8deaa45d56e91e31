// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module's limits (parameters under /sys/module/lzchan/parameters):
 * max_channels -> ENOSPC, max_channel_bytes -> EFBIG, max_user_bytes per
 * uid -> EDQUOT; memory is uncharged when channels go.  Tenants: a count
 * and bytes per IPC namespace and per user (counted as a user of the IPC
 * namespace -- in the host's, as the host user -- and as each owner of the
 * creator's user namespaces above it), so that no container or user can
 * deny channels to the others.
 */
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

/* Set a parameter for the length of one test. */
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
	struct lz_param p;
	long now;

	LZ_NEED_DEV();
	now = lz_read_long(LZ_SYSFS "channels");
	ASSERT_LE(0, now);
	ASSERT_EQ(0, lz_param_set(&p, LZ_PARAMS "max_channels", now + 2));
	EXPECT_EQ(0, lz_create(a, LZ_GEOM_DEFAULT));
	EXPECT_EQ(0, lz_create(b, LZ_GEOM_DEFAULT));
	EXPECT_EQ(-ENOSPC, lz_create(c, LZ_GEOM_DEFAULT));
	EXPECT_EQ(0, lz_unlink(a));
	EXPECT_EQ(0, lz_create(c, LZ_GEOM_DEFAULT));
	lz_param_restore(&p);
	EXPECT_EQ(0, lz_unlink(b));
	EXPECT_EQ(0, lz_unlink(c));
}

TEST(max_channel_bytes)
{
	const char *a = lz_name("lim"), *b = lz_name("lim");
	struct lz_geom g = LZ_GEOM_DEFAULT;
	struct lz_param p;
	__u64 small;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(a, g));
	small = bytes_of(a);
	ASSERT_LT(0, small);
	EXPECT_EQ(0, lz_unlink(a));

	ASSERT_EQ(0, lz_param_set(&p, LZ_PARAMS "max_channel_bytes", small));
	EXPECT_EQ(0, lz_create(a, g));		/* exactly at the limit */
	g.slot_count *= 2;
	EXPECT_EQ(-EFBIG, lz_create(b, g));
	lz_param_restore(&p);
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
	struct lz_param p;
	int status;
	__u64 one;
	pid_t pid;

	LZ_NEED_DEV();
	ASSERT_EQ(0, lz_create(probe, LZ_GEOM_DEFAULT));
	one = bytes_of(probe);
	/* Root's own channel does not count against uid 4321. */
	ASSERT_EQ(0, lz_param_set(&p, LZ_PARAMS "max_user_bytes", 2 * one + one / 2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(quota_as_user(&n));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	lz_param_restore(&p);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-ENOENT, lz_unlink(n.a));
	EXPECT_EQ(0, lz_unlink(n.b));
	EXPECT_EQ(0, lz_unlink(n.c));
	EXPECT_EQ(0, lz_unlink(probe));
}

/* ---- tenants ---- */

#define TENANT_MAX	200	/* a bound on channels one tenant tries */

/*
 * A tenant: a process that makes a user namespace (owned by host uid
 * @owner, ids 0.. mapped to @map.. for @ids ids; no user namespace when
 * @ids is 0) and an IPC namespace, then runs @procs processes as in-ns
 * uids 0..procs-1, each creating channels until refused.  It reports the
 * total it made, then holds them until told to go.
 */
struct tenant {
	uid_t owner, map, ids;
	int procs;
	bool no_resource;	/* without a user namespace: drop
				 * CAP_SYS_RESOURCE, as Docker does */
	int up[2], down[2];
	pid_t pid;
};

/* Create channels until refused; the count, or -1 if not by ENOSPC. */
static int tenant_flood(const char *tag)
{
	int n = 0, r = 0;

	while (n < TENANT_MAX) {
		char name[LZCHAN_NAME_SIZE];

		snprintf(name, sizeof(name), "tn.%s.%d.%d", tag, getpid(), n);
		r = lz_create(name, LZ_GEOM_DEFAULT);
		if (r)
			break;
		n++;
	}
	return r == -ENOSPC ? n : -1;
}

/* Lose CAP_SYS_RESOURCE for good (bounding, permitted, effective and
 * inheritable sets), keeping the rest: a container's root as Docker
 * starts it, which the module's limits apply to. */
static int drop_sys_resource(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	const unsigned int k = CAP_TO_INDEX(CAP_SYS_RESOURCE);

	if (prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0) ||
	    syscall(SYS_capget, &h, d))
		return -1;
	d[k].effective &= ~CAP_TO_MASK(CAP_SYS_RESOURCE);
	d[k].permitted &= ~CAP_TO_MASK(CAP_SYS_RESOURCE);
	d[k].inheritable &= ~CAP_TO_MASK(CAP_SYS_RESOURCE);
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

static int tenant_child(struct tenant *t)
{
	int i, n, total = 0;
	char b;

	/* With a user namespace: made by the unprivileged owner, as rootless
	 * runtimes do.  Without: root makes the IPC namespace and its users
	 * are host uids. */
	if (t->ids && (setresgid(t->owner, t->owner, t->owner) || setgroups(0, NULL) ||
		       setresuid(t->owner, t->owner, t->owner)))
		return 1;
	if (unshare(CLONE_NEWIPC | (t->ids ? CLONE_NEWUSER : 0)))
		return 2;
	if (t->no_resource && drop_sys_resource())
		return 4;
	if (write(t->up[1], "u", 1) != 1 || read(t->down[0], &b, 1) != 1)
		return 3;
	/* One process per in-namespace uid, one after the other: their
	 * channels stay (names live with the IPC namespace). */
	for (i = 0; i < t->procs; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			uid_t u = t->ids ? (uid_t)i : t->owner + i;

			if (setresuid(u, u, u))
				_exit(255);
			n = tenant_flood("t");
			_exit(n < 0 ? 255 : n);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) == 255)
			return 5;
		total += WEXITSTATUS(st);
	}
	b = (char)total;
	if (write(t->up[1], &b, 1) != 1)
		return 6;
	return read(t->down[0], &b, 1) == 1 ? 0 : 7;	/* hold until told */
}

static int tenant_start(struct tenant *t)
{
	char path[64], map[64];
	int fd, ok = 1;
	char b;

	if (pipe(t->up) || pipe(t->down))
		return -1;
	t->pid = fork();
	if (t->pid < 0)
		return -1;
	if (t->pid == 0)
		_exit(tenant_child(t));
	if (read(t->up[0], &b, 1) != 1)
		return -1;
	if (t->ids) {
		/* The runtime (root) writes the maps, as newuidmap does. */
		snprintf(map, sizeof(map), "0 %u %u\n", t->map, t->ids);
		snprintf(path, sizeof(path), "/proc/%d/uid_map", t->pid);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		ok = fd >= 0 && write(fd, map, strlen(map)) == (ssize_t)strlen(map);
		if (fd >= 0)
			close(fd);
	}
	if (!ok || write(t->down[1], "g", 1) != 1)
		return -1;
	/* The total it made. */
	return read(t->up[0], &b, 1) == 1 ? (unsigned char)b : -1;
}

static int tenant_stop(struct tenant *t)
{
	int st;

	if (write(t->down[1], "q", 1) != 1)
		kill(t->pid, SIGKILL);
	close(t->up[0]);
	close(t->up[1]);
	close(t->down[0]);
	close(t->down[1]);
	if (waitpid(t->pid, &st, 0) != t->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A host user's channel: 0 if it could make (and remove) one. */
static int host_user_creates(uid_t uid)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		const char *name = lz_name("host");
		int r;

		if (setresgid(uid, uid, uid) || setgroups(0, NULL) ||
		    setresuid(uid, uid, uid))
			_exit(100);
		r = lz_create(name, LZ_GEOM_DEFAULT);
		if (!r)
			lz_unlink(name);
		_exit(-r);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}


struct tenant_limits {
	struct lz_param total, ns_ch, user_ch;
};

static int tenant_limits_set(struct tenant_limits *l, long total, long ns, long user)
{
	long now = lz_read_long(LZ_SYSFS "channels");

	if (now < 0)
		return -1;
	/* The tenant limits are set where the module has them: on one
	 * without, the tests below show what a tenant then does. */
	lz_param_set(&l->ns_ch, LZ_PARAMS "max_ns_channels", ns);
	lz_param_set(&l->user_ch, LZ_PARAMS "max_user_channels", user);
	return lz_param_set(&l->total, LZ_PARAMS "max_channels", now + total);
}

static void tenant_limits_restore(struct tenant_limits *l)
{
	if (l->user_ch.old >= 0)
		lz_param_restore(&l->user_ch);
	if (l->ns_ch.old >= 0)
		lz_param_restore(&l->ns_ch);
	lz_param_restore(&l->total);
}

/*
 * A container (its own user and IPC namespaces) floods channels: it is
 * stopped at its user limit, far from the machine's, and the host's users
 * and another container still create.  (The module before tenant limits
 * let it take every channel of the machine: ENOSPC for everyone.)
 */
TEST(container_cannot_exhaust_others)
{
	struct tenant a = { .owner = 1000, .map = 100000, .ids = 1, .procs = 1 };
	struct tenant c = { .owner = 1002, .map = 300000, .ids = 1, .procs = 1 };
	struct tenant_limits l;

	LZ_NEED_DEV();
	if (!lz_have_userns(1000))
		SKIP(return, "no unprivileged user namespaces");
	ASSERT_EQ(0, tenant_limits_set(&l, 40, 24, 16));
	EXPECT_EQ(16, tenant_start(&a));
	EXPECT_EQ(0, host_user_creates(2000));
	EXPECT_EQ(0, host_user_creates(0));
	EXPECT_EQ(16, tenant_start(&c));
	EXPECT_EQ(0, host_user_creates(2000));
	EXPECT_EQ(0, tenant_stop(&a));
	EXPECT_EQ(0, tenant_stop(&c));
	tenant_limits_restore(&l);
}

/*
 * A user with a subordinate id range: its container's uids are each a
 * user there, and all of them together are the host user who owns the
 * user namespace.  (Before: 65,536 buckets.)
 */
TEST(subordinate_ids_count_as_their_owner)
{
	struct tenant b = { .owner = 1001, .map = 200000, .ids = 65536, .procs = 3 };
	struct tenant_limits l;

	LZ_NEED_DEV();
	if (!lz_have_userns(1000))
		SKIP(return, "no unprivileged user namespaces");
	/* Three in-container uids of 10 each would make 30. */
	ASSERT_EQ(0, tenant_limits_set(&l, 100, 100, 10));
	EXPECT_EQ(10, tenant_start(&b));
	EXPECT_EQ(0, host_user_creates(2000));
	EXPECT_EQ(0, tenant_stop(&b));
	tenant_limits_restore(&l);
}

/*
 * A container without a user namespace (host uids, its own IPC namespace):
 * its users together stop at the namespace's limit; the host namespace
 * keeps its own.
 */
TEST(ipc_namespace_limit)
{
	struct tenant n = { .owner = 3000, .ids = 0, .procs = 3 };
	struct tenant_limits l;

	LZ_NEED_DEV();
	ASSERT_EQ(0, tenant_limits_set(&l, 100, 24, 10));
	/* 10 + 10 + 4: the namespace's 24. */
	EXPECT_EQ(24, tenant_start(&n));
	EXPECT_EQ(0, host_user_creates(2000));
	EXPECT_EQ(0, tenant_stop(&n));
	tenant_limits_restore(&l);
}

/*
 * Two containers without user namespaces running the same host uid, each
 * in its own IPC namespace: each gets its own user allowance there, so
 * neither can deny the other channels.  Docker's default is root without
 * CAP_SYS_RESOURCE; an ordinary uid likewise.  (Before, both were charged
 * as the one host user: the first took the whole allowance and the second
 * got ENOSPC at once.)  The host user of that uid keeps its own, too.
 */
TEST(same_host_uid_in_two_containers)
{
	struct tenant x = { .owner = 3000, .procs = 1 }, y = { .owner = 3000, .procs = 1 };
	struct tenant rx = { .owner = 0, .procs = 1, .no_resource = true };
	struct tenant ry = { .owner = 0, .procs = 1, .no_resource = true };
	struct tenant_limits l;

	LZ_NEED_DEV();
	ASSERT_EQ(0, tenant_limits_set(&l, 100, 24, 10));
	EXPECT_EQ(10, tenant_start(&x));
	EXPECT_EQ(10, tenant_start(&y));
	EXPECT_EQ(0, host_user_creates(3000));
	EXPECT_EQ(0, tenant_stop(&x));
	EXPECT_EQ(0, tenant_stop(&y));
	EXPECT_EQ(10, tenant_start(&rx));
	EXPECT_EQ(10, tenant_start(&ry));
	EXPECT_EQ(0, tenant_stop(&rx));
	EXPECT_EQ(0, tenant_stop(&ry));
	tenant_limits_restore(&l);
}

/*
 * /sys/class/misc/lzchan/tenants lists every tenant; when they do not fit
 * in a page (any user can make many), it ends in whole lines and "...".
 */
TEST(tenants_file)
{
	struct tenant n = { .owner = 3000, .ids = 0, .procs = 200 };
	struct tenant_limits l;
	char buf[8192], line[64];
	ssize_t len;
	int fd, ours = 0;
	char *p, *nl;

	LZ_NEED_DEV();
	/* 200 host uids, one channel each: some 6 KiB of "user" lines. */
	ASSERT_EQ(0, tenant_limits_set(&l, 400, 300, 1));
	EXPECT_EQ(200, tenant_start(&n));
	fd = open(LZ_SYSFS "tenants", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	EXPECT_LT(0, len);
	buf[len < 0 ? 0 : len] = 0;
	EXPECT_GT(4096, len);
	for (p = buf; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		EXPECT_NE(NULL, nl) TH_LOG("a line cut short: '%s'", p);
		if (!nl)
			break;		/* the tenant is still to be stopped */
		snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
		if (!strcmp(line, "...")) {
			EXPECT_EQ(0, nl[1]) TH_LOG("'...' is not last");
			continue;
		}
		EXPECT_TRUE(!strncmp(line, "ns ", 3) || !strncmp(line, "user ", 5) ||
			    !strncmp(line, "ipcuser ", 8))
			TH_LOG("unexpected line '%s'", line);
		/* Its users are users of its IPC namespace. */
		if (!strncmp(line, "ipcuser ", 8) && strstr(line, " 1 "))
			ours++;
	}
	EXPECT_LT(50, ours);
	EXPECT_NE(NULL, strstr(buf, "\n...\n"));
	EXPECT_EQ(0, tenant_stop(&n));
	tenant_limits_restore(&l);
}

/* LZCHAN_IOC_USAGE: the caller's view of the limits and its use. */
TEST(usage)
{
	struct lzchan_usage u = { .size = sizeof(u) }, v;
	const char *name = lz_name("usage");
	int fd;

	LZ_NEED_DEV();
	fd = lz_dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_USAGE, &u));
	EXPECT_EQ(lz_read_long(LZ_PARAMS "max_channels"), u.max_channels);
	EXPECT_EQ(lz_read_long(LZ_PARAMS "max_user_channels"), u.max_user_channels);
	EXPECT_EQ(lz_read_long(LZ_PARAMS "max_ns_channels"), u.max_ns_channels);
	EXPECT_EQ(LZCHAN_USAGE_EXEMPT, u.flags_out);	/* root on the host */
	ASSERT_EQ(0, lz_create(name, LZ_GEOM_DEFAULT));
	v = (struct lzchan_usage){ .size = sizeof(v) };
	ASSERT_EQ(0, lz_ioctl(fd, LZCHAN_IOC_USAGE, &v));
	EXPECT_EQ(u.channels + 1, v.channels);
	EXPECT_EQ(u.ns_channels + 1, v.ns_channels);
	EXPECT_EQ(u.user_channels + 1, v.user_channels);
	EXPECT_EQ(bytes_of(name), v.user_bytes - u.user_bytes);
	EXPECT_EQ(bytes_of(name), v.ns_bytes - u.ns_bytes);
	EXPECT_EQ(0, lz_unlink(name));
	v.flags = 1;
	EXPECT_EQ(-EINVAL, lz_ioctl(fd, LZCHAN_IOC_USAGE, &v));
	close(fd);
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
	/* The 4 MiB are uncharged at once.  memory.current also counts
	 * what memcg charged ahead into each CPU's stock (up to
	 * MEMCG_CHARGE_BATCH, 64 pages, per CPU: the refused create above
	 * may have left some on a CPU we moved to), so allow that much. */
	if (lz_read_long(CGT "/memory.current") >
	    after - (4L << 20) + 64L * sysconf(_SC_PAGESIZE) * sysconf(_SC_NPROCESSORS_ONLN))
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
