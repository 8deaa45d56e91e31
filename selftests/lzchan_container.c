// SPDX-License-Identifier: GPL-2.0-only
/*
 * Containers: /dev/lzchan passed through the way a container runtime does
 * it for 'docker run --device /dev/lzchan' or 'podman run --device' with
 * user namespaces: each "container" gets a new user, mount and IPC
 * namespace (or joins another container's IPC namespace, as with
 * --ipc=container:NAME), its uid/gid 0 mapped to an unprivileged host
 * range, and a /dev of its own (a tmpfs) holding nothing but the
 * bind-mounted device node.  Then:
 *   - two containers with their own IPC namespaces do not see each other's
 *     channels (list, open, unlink: ENOENT), nor does the host;
 *   - two containers sharing an IPC namespace exchange messages (libchan);
 *   - a container's users get what each channel's mode allows, and a
 *     container root with another id map gets no more than "other".
 * Documentation/admin/guide.rst describes the recipe this follows.
 */
#include "kselftest_harness.h"
#include "lzchan_test.h"
#include "lzchan_ctr.h"
#include "lzchan.h"

/* Handshake pipes between the test and a long-lived container. */
struct hold {
	const char *name;
	int ready[2];		/* container -> test: set up */
	int done[2];		/* test -> container: may exit */
	unsigned int modes[4];	/* channels name.<i>, mode modes[i] (0: end) */
};

static int hold_init(struct hold *h, const char *name)
{
	memset(h, 0, sizeof(*h));
	h->name = name;
	return pipe(h->ready) || pipe(h->done) ? -1 : 0;
}

static void hold_release(struct hold *h)
{
	ctr_signal(h->done[1]);
	close(h->ready[0]);
	close(h->ready[1]);
	close(h->done[0]);
	close(h->done[1]);
}

static const char *chan_name(const char *base, int i)
{
	static char buf[4][LZCHAN_NAME_SIZE];

	snprintf(buf[i % 4], LZCHAN_NAME_SIZE, "%s.%d", base, i);
	return buf[i % 4];
}

/* Container root: create the channels, report, stay until told. */
static int hold_channels(void *arg)
{
	struct hold *h = arg;
	struct lz_geom g = LZ_GEOM_DEFAULT;
	int i;

	for (i = 0; i < 4 && h->modes[i]; i++) {
		g.mode = h->modes[i];
		g.flags = LZCHAN_CREATE_EXCL;
		if (lz_create(chan_name(h->name, i), g))
			return 10 + i;
		if (lz_list_has(chan_name(h->name, i)) != 1)
			return 20 + i;
	}
	if (ctr_signal(h->ready[1]) || ctr_read(h->done[0]))
		return 30;
	return 0;
}

/* ---- separate IPC namespaces ---- */

/* Another tenant's container: none of A's channels exist here. */
static int cannot_see(void *arg)
{
	const struct hold *h = arg;
	const char *name = chan_name(h->name, 0);
	struct lz_geom g = LZ_GEOM_DEFAULT;

	if (lz_list_has(name) != 0)
		return 10;
	if (lz_open(name, LZCHAN_OPEN_SENDER, NULL) != -ENOENT)
		return 11;
	if (lz_open(name, LZCHAN_OPEN_RECEIVER, NULL) != -ENOENT)
		return 12;
	if (lz_unlink(name) != -ENOENT)
		return 13;
	g.flags = LZCHAN_CREATE_EXCL;	/* the same name is free here */
	if (lz_create(name, g))
		return 14;
	return lz_list_has(name) == 1 ? 0 : 15;
}

TEST(separate_ipc_namespaces_isolated)
{
	struct hold h;
	struct ctr_spec a = { .map = CTR_MAP_A, .group = CTR_NOGROUP,
			      .fn = hold_channels, .arg = &h };
	struct ctr_spec b = { .map = CTR_MAP_B, .group = CTR_NOGROUP,
			      .fn = cannot_see, .arg = &h };
	struct ctr_spec b2 = b;
	pid_t pa;

	LZ_NEED_DEV();
	ASSERT_EQ(0, hold_init(&h, lz_name("ctr")));
	h.modes[0] = 0666;	/* open to all: only the namespace hides it */
	pa = ctr_start(&a);
	ASSERT_LT(0, pa);
	ASSERT_EQ(0, ctr_read(h.ready[0])) TH_LOG("container A: %d", ctr_wait(pa));
	/* B: another tenant, its own IPC namespace and id range. */
	EXPECT_EQ(0, ctr_wait(ctr_start(&b)));
	/* B2: the same id range as A, still its own IPC namespace. */
	b2.map = CTR_MAP_A;
	EXPECT_EQ(0, ctr_wait(ctr_start(&b2)));
	/* Nor does the host see A's channel. */
	EXPECT_EQ(0, lz_list_has(chan_name(h.name, 0)));
	EXPECT_EQ(-ENOENT, lz_open(chan_name(h.name, 0), LZCHAN_OPEN_SENDER, NULL));
	hold_release(&h);
	EXPECT_EQ(0, ctr_wait(pa));
}

/* ---- a shared IPC namespace (--ipc=container:A) ---- */

struct talk {
	char name[LZCHAN_NAME_SIZE];
	int ready[2];		/* receiver -> test: channel created */
	int seen[2];		/* receiver -> sender: checked you, may go */
};

static const char talk_msg[] = "hello from container B";

static int talk_receiver(void *arg)
{
	struct talk *t = arg;
	struct lzchan_opts o;
	struct lzchan_geom geo;
	struct lzchan *rx;
	char buf[128];
	uint32_t lane, uid, gid;
	int32_t pid;
	int len;

	lzchan_opts_init(&o);
	o.mode = 0600;		/* owner only: B's root is the same host id */
	if (lzchan_open(&rx, t->name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o))
		return 10;
	if (lzchan_geometry(rx, &geo) || geo.backend != LZCHAN_BACKEND_DEV)
		return 11;
	if (ctr_signal(t->ready[1]))
		return 12;
	len = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, (int64_t)CTR_WAIT_MS * 1000000);
	if (len != (int)sizeof(talk_msg) || memcmp(buf, talk_msg, len))
		return 13;
	/* The sender as this container sees it: its root. */
	if (lzchan_peer(rx, lane, &pid, &uid, &gid) || uid != 0 || gid != 0)
		return 14;
	if (ctr_signal(t->seen[1]))
		return 15;
	lzchan_close(rx);
	return 0;
}

static int talk_sender(void *arg)
{
	struct talk *t = arg;
	struct lzchan *tx;

	if (lzchan_open(&tx, t->name, LZCHAN_SENDER, NULL))
		return 20;
	if (lzchan_send_wait(tx, talk_msg, sizeof(talk_msg), (int64_t)CTR_WAIT_MS * 1000000))
		return 21;
	/* Stay on the lane until the receiver has looked at who we are. */
	if (ctr_read(t->seen[0]))
		return 22;
	lzchan_close(tx);
	return 0;
}

TEST(shared_ipc_namespace_talks)
{
	struct talk t;
	struct ctr_spec a = { .map = CTR_MAP_A, .group = CTR_NOGROUP,
			      .fn = talk_receiver, .arg = &t };
	struct ctr_spec b = { .map = CTR_MAP_A, .group = CTR_NOGROUP,
			      .fn = talk_sender, .arg = &t };
	pid_t pa;

	LZ_NEED_DEV();
	setenv("LZCHAN_BACKEND", "dev", 1);
	lz_setname(t.name, lz_name("talk"));
	ASSERT_EQ(0, pipe(t.ready));
	ASSERT_EQ(0, pipe(t.seen));
	pa = ctr_start(&a);
	ASSERT_LT(0, pa);
	ASSERT_EQ(0, ctr_read(t.ready[0])) TH_LOG("container A: %d", ctr_wait(pa));
	EXPECT_EQ(-ENOENT, lz_open(t.name, LZCHAN_OPEN_SENDER, NULL));	/* host */
	b.join_ipc = pa;
	EXPECT_EQ(0, ctr_wait(ctr_start(&b)));
	EXPECT_EQ(0, ctr_wait(pa));
	close(t.ready[0]);
	close(t.ready[1]);
	close(t.seen[0]);
	close(t.seen[1]);
}

/* ---- what a container user may do ---- */

struct probe {
	const struct hold *h;
	int want[4][2];		/* per channel: receiver, sender open result */
	int want_unlink;	/* unlink of channel 3 */
};

static int probe_access(void *arg)
{
	const struct probe *p = arg;
	int i, r, fd;

	for (i = 0; i < 4 && p->h->modes[i]; i++) {
		for (r = 0; r < 2; r++) {
			fd = lz_open(chan_name(p->h->name, i),
				     r ? LZCHAN_OPEN_SENDER : LZCHAN_OPEN_RECEIVER, NULL);
			if ((fd < 0 ? fd : 0) != p->want[i][r])
				return 10 + 2 * i + r;
			if (fd >= 0)
				close(fd);
		}
	}
	return lz_unlink(chan_name(p->h->name, 3)) == p->want_unlink ? 0 : 30;
}

TEST(container_users_get_the_channel_mode)
{
	struct hold h;
	struct probe p = { .h = &h };
	struct ctr_spec a = { .map = CTR_MAP_A, .group = CTR_NOGROUP,
			      .fn = hold_channels, .arg = &h };
	struct ctr_spec u = { .map = CTR_MAP_A, .fn = probe_access, .arg = &p };
	pid_t pa;

	LZ_NEED_DEV();
	ASSERT_EQ(0, hold_init(&h, lz_name("cmode")));
	/* Made by the container's root (uid 0, gid 0 inside). */
	h.modes[0] = 0600;
	h.modes[1] = 0660;
	h.modes[2] = 0606;	/* other: read and write, group nothing */
	h.modes[3] = 0666;
	pa = ctr_start(&a);
	ASSERT_LT(0, pa);
	ASSERT_EQ(0, ctr_read(h.ready[0])) TH_LOG("container A: %d", ctr_wait(pa));
	u.join_ipc = pa;

	/* 'docker exec -u 1000:1000': another uid, no capabilities. */
	u.uid = 1000;
	u.gid = 1000;
	u.group = CTR_NOGROUP;
	p = (struct probe){ &h, { { -EACCES, -EACCES }, { -EACCES, -EACCES },
				  { 0, 0 }, { 0, 0 } }, -EPERM };
	EXPECT_EQ(0, ctr_wait(ctr_start(&u)));

	/* The same user in the channels' group (gid 0): 0660 opens,
	 * 0606 does not (group bits win over other, as for SysV IPC). */
	u.group = 0;
	p = (struct probe){ &h, { { -EACCES, -EACCES }, { 0, 0 },
				  { -EACCES, -EACCES }, { 0, 0 } }, -EPERM };
	EXPECT_EQ(0, ctr_wait(ctr_start(&u)));

	/* Another tenant's root (other id map) joining this IPC namespace:
	 * root only in its own user namespace, so just "other" here. */
	u.map = CTR_MAP_B;
	u.uid = 0;
	u.gid = 0;
	u.group = CTR_NOGROUP;
	p = (struct probe){ &h, { { -EACCES, -EACCES }, { -EACCES, -EACCES },
				  { 0, 0 }, { 0, 0 } }, -EPERM };
	EXPECT_EQ(0, ctr_wait(ctr_start(&u)));

	/* The container's own root (same map): owner of everything, may unlink. */
	u.map = CTR_MAP_A;
	p = (struct probe){ &h, { { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 } }, 0 };
	EXPECT_EQ(0, ctr_wait(ctr_start(&u)));

	hold_release(&h);
	EXPECT_EQ(0, ctr_wait(pa));
}

TEST_HARNESS_MAIN
