// SPDX-License-Identifier: GPL-2.0-only
/*
 * liblzchan's management calls: lzchan_create, lzchan_list,
 * lzchan_stat, lzchan_stat_lanes.  Runs on the host (shm backend, in a
 * private LZCHAN_SHM_DIR) and in the VM rig (dev backend).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"
#include "lzchan_test.h"

/*
 * Each test (a child of the harness) lists a directory of its own, under
 * one that the harness's process makes first and removes at its exit.
 */
static char base_dir[64], shm_dir[96];
static pid_t base_pid;

static void __attribute__((constructor)) make_base_dir(void)
{
	snprintf(base_dir, sizeof(base_dir), "/tmp/lzchan_stat.XXXXXX");
	if (!mkdtemp(base_dir))
		abort();
	base_pid = getpid();
}

static void __attribute__((destructor)) drop_base_dir(void)
{
	char cmd[128];

	if (getpid() != base_pid)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base_dir);
	if (system(cmd) != 0)
		return;
}

static void private_shm_dir(void)
{
	snprintf(shm_dir, sizeof(shm_dir), "%s/t.XXXXXX", base_dir);
	if (!mkdtemp(shm_dir))
		abort();
	setenv("LZCHAN_SHM_DIR", shm_dir, 1);
}

static void put_file(const char *fname, const void *data, size_t len, off_t size)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", shm_dir, fname);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len ||
	    (size >= 0 && ftruncate(fd, size)))
		abort();
	close(fd);
}

/* Find @n in a list of @cnt entries. */
static const struct lzchan_chan_stat *in_list(const struct lzchan_chan_stat *st,
					      int cnt, const char *n)
{
	int i;

	for (i = 0; i < cnt; i++)
		if (!strcmp(st[i].name, n))
			return &st[i];
	return NULL;
}

TEST(version)
{
	EXPECT_EQ(0, lzchan_version_major());
	EXPECT_EQ(3, lzchan_version_minor());
}

TEST(create)
{
	struct lzchan_opts o = lz_opts(128, 16, 3);
	const char *n = lz_name("cr"), *d = lz_name("cr");
	struct lzchan_chan_stat st;
	char longname[LZCHAN_NAME_SIZE + 1];

	private_shm_dir();
	ASSERT_EQ(1, lzchan_create(n, &o, LZCHAN_EXCL));
	EXPECT_EQ(-EEXIST, lzchan_create(n, &o, LZCHAN_EXCL));
	/* Without EXCL: no error, and the first geometry stands. */
	o.slot_size = 256;
	EXPECT_EQ(0, lzchan_create(n, &o, 0));
	ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
	EXPECT_EQ(128, st.slot_size);
	EXPECT_EQ(-EINVAL, lzchan_create(n, &o, LZCHAN_CREATE));
	o = lz_opts(96, 16, 1);
	EXPECT_EQ(-EINVAL, lzchan_create(lz_name("cr"), &o, 0));
	o = lz_opts(64, 3, 1);
	EXPECT_EQ(-EINVAL, lzchan_create(lz_name("cr"), &o, 0));
	o = lz_opts(64, 4, 0);
	EXPECT_EQ(-EINVAL, lzchan_create(lz_name("cr"), &o, 0));
	o = lz_opts(64, 4, 1);
	o.mode = 01000;
	EXPECT_EQ(-EINVAL, lzchan_create(lz_name("cr"), &o, 0));
	EXPECT_EQ(-EINVAL, lzchan_create("a b", NULL, 0));
	EXPECT_EQ(-EINVAL, lzchan_create("", NULL, 0));
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	EXPECT_EQ(-ENAMETOOLONG, lzchan_create(longname, NULL, 0));
	/* NULL opts: the defaults. */
	ASSERT_EQ(1, lzchan_create(d, NULL, 0));
	ASSERT_EQ(0, lzchan_stat(d, &st, NULL));
	EXPECT_EQ(64, st.slot_size);
	EXPECT_EQ(1024, st.slot_count);
	EXPECT_EQ(16, st.max_senders);
	EXPECT_EQ(0600, st.mode);
	EXPECT_EQ(0, lzchan_unlink(d));
	EXPECT_EQ(0, lzchan_unlink(n));
}

TEST(stat_counts)
{
	struct lzchan_opts o = lz_opts(64, 32, 4);
	struct lzchan *rx, *tx1, *tx2;
	struct lzchan_chan_stat st;
	const char *n = lz_name("st");
	uint32_t be = 0;
	char buf[64];
	int i;

	private_shm_dir();
	o.mode = 0640;
	ASSERT_EQ(1, lzchan_create(n, &o, LZCHAN_EXCL));
	ASSERT_EQ(0, lzchan_stat(n, &st, &be));
	EXPECT_EQ(lz_expect_dev() ? LZCHAN_BACKEND_DEV : LZCHAN_BACKEND_SHM, be);
	EXPECT_STREQ(n, st.name);
	EXPECT_EQ(getuid(), st.uid);
	EXPECT_EQ(getgid(), st.gid);
	EXPECT_EQ(0640, st.mode);
	EXPECT_EQ(64, st.slot_size);
	EXPECT_EQ(32, st.slot_count);
	EXPECT_EQ(4, st.max_senders);
	EXPECT_EQ(0, st.senders);
	EXPECT_EQ(0, st.receiver);
	EXPECT_EQ(0, st.messages);
	EXPECT_NE(0, st.bytes);

	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER, NULL));
	ASSERT_EQ(0, lzchan_open(&tx1, n, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_open(&tx2, n, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx1, "one", 3));
	ASSERT_EQ(0, lzchan_send(tx1, "two", 3));
	ASSERT_EQ(0, lzchan_send(tx2, "three", 5));
	ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
	EXPECT_EQ(2, st.senders);
	EXPECT_EQ(1, st.receiver);
	/* A live sender's counts lag by less than LZCHAN_STAT_EVERY. */
	EXPECT_LE(st.messages, 3);
	EXPECT_EQ(2, st.sender_attaches);
	EXPECT_EQ(0, st.rx_parked & 1);
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, lzchan_send(tx1, "more", 4));
		ASSERT_LT(0, lzchan_recv(rx, buf, sizeof(buf), NULL));
	}
	ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
	EXPECT_LE(st.messages, 203);
	EXPECT_GE(st.messages + 2 * (LZCHAN_STAT_EVERY - 1), 203);

	lzchan_close(tx1);
	lzchan_close(tx2);
	ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
	EXPECT_EQ(0, st.senders);
	EXPECT_EQ(1, st.receiver);
	EXPECT_EQ(203, st.messages);	/* exact once closed; they outlive the senders */
	lzchan_close(rx);
	ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
	EXPECT_EQ(0, st.receiver);

	EXPECT_EQ(0, lzchan_unlink(n));
	EXPECT_EQ(-ENOENT, lzchan_stat(n, &st, NULL));
	EXPECT_EQ(-EINVAL, lzchan_stat("bad/name", &st, NULL));
	EXPECT_EQ(-EINVAL, lzchan_stat(n, NULL, NULL));
}

/*
 * A busy sender's counts, on a ring so large that the inline send never
 * runs out of room: each look lags the messages sent by less than
 * LZCHAN_STAT_EVERY (the inline send's gate stops there for the library
 * to store them), and they are exact at lzchan_flush().
 */
TEST(counts_lag_less_than_stat_every)
{
	struct lzchan_opts o = lz_opts(64, 1024, 1);
	const char *n = lz_name("lag");
	struct lzchan_lane_stat ls;
	struct lzchan_geom g;
	char *big;
	struct lzchan_chan_stat st;
	struct lzchan *rx, *tx;
	uint64_t sent;

	private_shm_dir();
	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, n, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_geometry(tx, &g));
	big = calloc(1, g.max_msg + 1);
	ASSERT_NE(NULL, big);
	for (sent = 1; sent <= 700; sent++) {
		ASSERT_EQ(0, lzchan_send(tx, "a message of some length", 24));
		/* At the gate's stop (the first send is the library's, which
		 * stores the counts; the gate then lets LZCHAN_STAT_EVERY - 1
		 * inline sends through), a send the library refuses: it must
		 * leave the gate shut until a send stores the counts. */
		if (!(sent % LZCHAN_STAT_EVERY))
			ASSERT_EQ(-EMSGSIZE, lzchan_send(tx, big, g.max_msg + 1));
		ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
		ASSERT_LE(st.messages, sent);
		ASSERT_GT(st.messages + LZCHAN_STAT_EVERY, sent) TH_LOG("%llu sent",
									(unsigned long long)sent);
		/* The bytes with them (shm only: the module shows no lanes). */
		if (lzchan_stat_lanes(n, &ls, 1) == 1) {
			ASSERT_EQ(st.messages, ls.msgs);
			ASSERT_EQ(24 * ls.msgs, ls.bytes);
		}
	}
	ASSERT_EQ(-ETIMEDOUT, lzchan_flush(tx, 0));
	ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
	EXPECT_EQ(700, st.messages);
	if (lzchan_stat_lanes(n, &ls, 1) == 1)
		EXPECT_EQ(700 * 24, ls.bytes);
	free(big);
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(n);
}

/*
 * A batch stores the counts exactly, with the inline sends' before it
 * (which it counts, one message a position): after each batch, the
 * counts are the messages and bytes sent so far, whatever mix of inline
 * sends and batches they came in.
 */
TEST(counts_exact_after_a_batch)
{
	struct lzchan_opts o = lz_opts(64, 1024, 1);
	const char *n = lz_name("bat");
	struct lzchan_lane_stat ls;
	struct lzchan_chan_stat st;
	struct lzchan *rx, *tx;
	struct iovec iov[5];
	uint64_t sent = 0, bytes = 0;
	int round, k;

	private_shm_dir();
	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER | LZCHAN_CREATE, &o));
	ASSERT_EQ(0, lzchan_open(&tx, n, LZCHAN_SENDER, NULL));
	for (k = 0; k < 5; k++) {
		iov[k].iov_base = "batched";
		iov[k].iov_len = 1 + k;
	}
	for (round = 0; round < 100; round++) {
		for (k = 0; k < round % 4; k++) {
			ASSERT_EQ(0, lzchan_send(tx, "an inline one", 13));
			sent++;
			bytes += 13;
		}
		ASSERT_EQ(5, lzchan_send_batch(tx, iov, 5));
		sent += 5;
		bytes += 1 + 2 + 3 + 4 + 5;
		ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
		ASSERT_EQ(sent, st.messages) TH_LOG("round %d", round);
		if (lzchan_stat_lanes(n, &ls, 1) == 1) {
			ASSERT_EQ(sent, ls.msgs);
			ASSERT_EQ(bytes, ls.bytes) TH_LOG("round %d", round);
		}
	}
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(n);
}

TEST(list)
{
	struct lzchan_chan_stat st[64], one;
	const char *names[3];
	uint32_t be = 0;
	int i, total;

	private_shm_dir();
	for (i = 0; i < 3; i++) {
		struct lzchan_opts o = lz_opts(64, 4 << i, 1);

		names[i] = lz_name("ls");
		ASSERT_EQ(1, lzchan_create(names[i], &o, LZCHAN_EXCL));
	}
	total = lzchan_list(NULL, 0, &be);
	ASSERT_LE(3, total);
	if (!lz_expect_dev())
		EXPECT_EQ(3, total);	/* our directory holds exactly these */
	EXPECT_EQ(lz_expect_dev() ? LZCHAN_BACKEND_DEV : LZCHAN_BACKEND_SHM, be);
	ASSERT_GE(64, total);
	ASSERT_EQ(total, lzchan_list(st, 64, NULL));
	for (i = 0; i < 3; i++) {
		const struct lzchan_chan_stat *s = in_list(st, total, names[i]);

		ASSERT_NE(NULL, s) TH_LOG("%s not listed", names[i]);
		EXPECT_EQ(4U << i, s->slot_count);
		EXPECT_EQ(1, s->max_senders);
	}
	/* Less room than channels: fills what fits, says how many there are. */
	memset(&one, 0xa5, sizeof(one));
	EXPECT_EQ(total, lzchan_list(&one, 1, NULL));
	EXPECT_NE(0, one.slot_size);
	EXPECT_EQ(-EINVAL, lzchan_list(NULL, 1, NULL));

	EXPECT_EQ(0, lzchan_unlink(names[1]));
	ASSERT_EQ(total - 1, lzchan_list(st, 64, NULL));
	EXPECT_EQ(NULL, in_list(st, total - 1, names[1]));
	EXPECT_EQ(0, lzchan_unlink(names[0]));
	EXPECT_EQ(0, lzchan_unlink(names[2]));
}

TEST(lanes)
{
	struct lzchan_opts o = lz_opts(64, 16, 3);
	struct lzchan_lane_stat ls[3];
	struct lzchan *rx, *tx;
	const char *n = lz_name("ln");
	char buf[64];

	private_shm_dir();
	ASSERT_EQ(1, lzchan_create(n, &o, LZCHAN_EXCL));
	if (lz_expect_dev()) {
		EXPECT_EQ(-EOPNOTSUPP, lzchan_stat_lanes(n, ls, 3));
		lzchan_unlink(n);
		return;
	}
	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER, NULL));
	ASSERT_EQ(0, lzchan_open(&tx, n, LZCHAN_SENDER, NULL));
	ASSERT_EQ(0, lzchan_send(tx, "hello", 5));
	ASSERT_EQ(0, lzchan_send(tx, "world!", 6));
	EXPECT_EQ(3, lzchan_stat_lanes(n, NULL, 0));
	ASSERT_EQ(3, lzchan_stat_lanes(n, ls, 3));
	EXPECT_EQ(LZCHAN_LANE_ATTACHED, ls[0].state);
	EXPECT_EQ(1, ls[0].gen);
	EXPECT_EQ(1, ls[0].alive);
	EXPECT_LE(ls[0].msgs, 2);	/* live: behind by less than LZCHAN_STAT_EVERY */
	EXPECT_LE(ls[0].bytes, 11);
	EXPECT_EQ(2, ls[0].tail);	/* exact */
	EXPECT_EQ(LZCHAN_LANE_FREE, ls[1].state);
	EXPECT_EQ(0, ls[1].alive);
	lzchan_close(tx);
	ASSERT_EQ(3, lzchan_stat_lanes(n, ls, 1));
	EXPECT_EQ(LZCHAN_LANE_CLOSED, ls[0].state);
	EXPECT_EQ(0, ls[0].alive);
	EXPECT_EQ(2, ls[0].msgs);	/* exact once closed */
	EXPECT_EQ(11, ls[0].bytes);
	EXPECT_EQ(5, lzchan_recv(rx, buf, sizeof(buf), NULL));
	EXPECT_EQ(6, lzchan_recv(rx, buf, sizeof(buf), NULL));
	lzchan_close(rx);		/* publishes the head */
	ASSERT_EQ(3, lzchan_stat_lanes(n, ls, 1));
	EXPECT_EQ(ls[0].tail, ls[0].head);
	EXPECT_EQ(-EINVAL, lzchan_stat_lanes(n, NULL, 1));
	EXPECT_EQ(0, lzchan_unlink(n));
	EXPECT_EQ(-ENOENT, lzchan_stat_lanes(n, ls, 3));
}

/* A lane shows as sleepy only while the receiver has it asleep: its
 * sleepy word odd (a lane that slept once and was woken has it even). */
TEST(sleepy_only_while_asleep)
{
	struct lzchan_opts o = lz_opts(64, 16, 1);
	struct lzchan_lane_stat ls;
	struct __lzchan_fast *f;
	struct lzchan *rx, *tx;
	const char *n = lz_name("sl");
	uint32_t v;

	private_shm_dir();
	ASSERT_EQ(1, lzchan_create(n, &o, LZCHAN_EXCL));
	if (lz_expect_dev()) {
		lzchan_unlink(n);
		SKIP(return, "lzchan_stat_lanes() is the shm backend's");
	}
	ASSERT_EQ(0, lzchan_open(&rx, n, LZCHAN_RECEIVER, NULL));
	ASSERT_EQ(0, lzchan_open(&tx, n, LZCHAN_SENDER, NULL));
	f = (struct __lzchan_fast *)rx;
	for (v = 1; v <= 6; v++) {
		/* As __lz_rx_sleep() and the bell leave it: odd asleep. */
		__atomic_store_n(&f->lanes[0].rxl->sleepy, v, __ATOMIC_RELEASE);
		ASSERT_EQ(1, lzchan_stat_lanes(n, &ls, 1));
		EXPECT_EQ(v & 1, ls.sleepy) TH_LOG("sleepy word %u", v);
	}
	lzchan_close(tx);
	lzchan_close(rx);
	EXPECT_EQ(0, lzchan_unlink(n));
}

/* A parked receiver shows as parked; a send wakes it and is counted. */
TEST(parked_and_wakeups)
{
	struct lzchan_opts o = lz_opts(64, 16, 1);
	struct lzchan_chan_stat st;
	struct lzchan *tx;
	const char *n = lz_name("pk");
	int status, i;
	pid_t pid;

	private_shm_dir();
	ASSERT_EQ(1, lzchan_create(n, &o, LZCHAN_EXCL));
	/* The sender attaches first: its arrival, which wakes a parked
	 * receiver too (a departure must), then comes before the park, and
	 * the one wake counted below is the send's. */
	ASSERT_EQ(0, lzchan_open(&tx, n, LZCHAN_SENDER, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct lzchan_opts ro = o;
		struct lzchan *rx;
		char buf[64];

		ro.spin_ns = 0;
		if (lzchan_open(&rx, n, LZCHAN_RECEIVER, &ro))
			_exit(2);
		_exit(lzchan_recv_wait(rx, buf, sizeof(buf), NULL, 30000000000LL) == 4 ? 0 : 1);
	}
	for (i = 0; i < 2000; i++) {
		ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
		if (st.receiver && (st.rx_parked & 1))
			break;
		usleep(10000);
	}
	EXPECT_TRUE(st.receiver && (st.rx_parked & 1)) TH_LOG("receiver never parked");
	EXPECT_EQ(0, st.wakeups);
	EXPECT_EQ(0, lzchan_send(tx, "ping", 4));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(0, lzchan_stat(n, &st, NULL));
	EXPECT_LE(1, st.wakeups);
	EXPECT_LE(1, st.wake_requests);
	EXPECT_EQ(0, st.receiver);
	lzchan_close(tx);
	EXPECT_EQ(0, lzchan_unlink(n));
}

/* shm: the files are anyone's; nothing in them may crash or mislead. */
TEST(hostile_files)
{
	struct lzchan_chan_stat st[16], s;
	struct lzchan_lane_stat ls[4];
	struct lzchan_opts o = lz_opts(64, 16, 4);
	const char *n = lz_name("ok");
	char path[PATH_MAX], junk[8192], *copy;
	struct stat sb;
	int total, fd;

	if (lz_expect_dev())
		SKIP(return, "shm backend only");
	private_shm_dir();
	ASSERT_EQ(1, lzchan_create(n, &o, LZCHAN_EXCL));
	memset(junk, 0x5a, sizeof(junk));
	put_file("lzchan.garbage", junk, sizeof(junk), -1);
	put_file("lzchan.empty", junk, 0, -1);
	put_file("lzchan.huge", junk, 16, 1LL << 40);	/* sparse */
	put_file("notlzchan.x", junk, 16, -1);
	put_file("lzchan.bad name", junk, 16, -1);
	snprintf(path, sizeof(path), "%s/lzchan.dir", shm_dir);
	ASSERT_EQ(0, mkdir(path, 0700));
	snprintf(path, sizeof(path), "%s/lzchan.link", shm_dir);
	ASSERT_EQ(0, symlink("/etc/passwd", path));
	/* A valid channel cut short: its header promises more than is there. */
	snprintf(path, sizeof(path), "%s/lzchan.%s", shm_dir, n);
	ASSERT_EQ(0, stat(path, &sb));
	copy = malloc(sb.st_size);
	ASSERT_NE(NULL, copy);
	fd = open(path, O_RDONLY);
	ASSERT_EQ(sb.st_size, read(fd, copy, sb.st_size));
	close(fd);
	put_file("lzchan.cut", copy, sb.st_size - 4096, -1);	/* a lane short */
	put_file("lzchan.cut2", copy, sb.st_size - 64, -1);	/* some slots short */
	free(copy);

	total = lzchan_list(st, 16, NULL);
	/* the channel, garbage, empty, huge, cut, cut2 -- not dir, link, bad names */
	ASSERT_EQ(6, total);
	EXPECT_NE(NULL, in_list(st, total, n));
	EXPECT_EQ(NULL, in_list(st, total, "dir"));
	EXPECT_EQ(NULL, in_list(st, total, "link"));
	EXPECT_EQ(64, in_list(st, total, n)->slot_size);
	EXPECT_EQ(0, in_list(st, total, "garbage")->slot_size);
	EXPECT_EQ(0644, in_list(st, total, "garbage")->mode);
	EXPECT_EQ(sizeof(junk), in_list(st, total, "garbage")->bytes);
	EXPECT_EQ(0, in_list(st, total, "empty")->slot_size);
	EXPECT_EQ(0, in_list(st, total, "huge")->slot_size);
	EXPECT_EQ(0, in_list(st, total, "cut")->slot_size);
	EXPECT_EQ(0, in_list(st, total, "cut2")->slot_size);

	EXPECT_EQ(0, lzchan_stat("garbage", &s, NULL));
	EXPECT_EQ(0, s.slot_size);
	EXPECT_EQ(-EPROTO, lzchan_stat_lanes("garbage", ls, 4));
	EXPECT_EQ(-EPROTO, lzchan_stat_lanes("cut", ls, 4));
	EXPECT_EQ(-EPROTO, lzchan_stat_lanes("cut2", ls, 4));
	EXPECT_EQ(-EPROTO, lzchan_stat_lanes("empty", ls, 4));
	EXPECT_EQ(-ENOENT, lzchan_stat("dir", &s, NULL));
	EXPECT_EQ(-ENOENT, lzchan_stat("link", &s, NULL));
	EXPECT_EQ(4, lzchan_stat_lanes(n, ls, 4));
}

TEST_HARNESS_MAIN
