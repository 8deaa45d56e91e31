// SPDX-License-Identifier: GPL-2.0-only
/*
 * Threads: T sender threads, each with its own handle and so its own lane
 * (the library takes no lock), into one receiver thread.  Every message
 * arrives once, in order per thread.  Also run under ThreadSanitizer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"

#define THREADS	4

static char name[64];
static unsigned long count;

static void *sender(void *arg)
{
	uint32_t id = (uintptr_t)arg, msg[4];
	struct lzchan *tx;
	unsigned long i;

	if (lzchan_open(&tx, name, LZCHAN_SENDER, NULL))
		return (void *)1;
	for (i = 0; i < count; i++) {
		msg[0] = id;
		msg[1] = i;
		msg[2] = id ^ i;
		if (lzchan_send_wait(tx, msg, sizeof(msg) - (i % 3) * 4, 30000000000LL))
			return (void *)2;
	}
	lzchan_close(tx);
	return NULL;
}

TEST(threads_own_lanes)
{
	const char *e = getenv("LZCHAN_THREAD_MSGS");
	uint32_t next[THREADS] = { 0 }, buf[4], lane;
	pthread_t t[THREADS];
	struct lzchan_opts o;
	struct lzchan *rx;
	int i, ended = 0, r;
	void *ret;

	count = e ? strtoul(e, NULL, 0) : 200000;
	snprintf(name, sizeof(name), "threads.%d", getpid());
	lzchan_opts_init(&o);
	o.max_senders = THREADS;
	o.slot_count = 256;
	ASSERT_EQ(0, lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o));
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, sender, (void *)(uintptr_t)i));
	while (ended < THREADS) {
		r = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 30000000000LL);
		if (r == -EPIPE) {
			ended++;
			continue;
		}
		ASSERT_LE(8, r) TH_LOG("recv %d", r);
		ASSERT_LT(buf[0], THREADS);
		ASSERT_EQ(next[buf[0]], buf[1]);
		if (r >= 12)
			ASSERT_EQ(buf[0] ^ buf[1], buf[2]);
		next[buf[0]]++;
	}
	for (i = 0; i < THREADS; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &ret));
		EXPECT_EQ(NULL, ret);
		EXPECT_EQ(count, next[i]);
	}
	lzchan_close(rx);
	lzchan_unlink(name);
}

TEST_HARNESS_MAIN
