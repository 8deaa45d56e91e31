// SPDX-License-Identifier: MIT
/*
 * One publisher, many subscribers: a publisher process publishes MSGS
 * ticks into a publish/subscribe channel; SUBSCRIBERS processes each get
 * every one and check it.
 *
 *   lzchan_pubsub NAME [SUBSCRIBERS [MSGS [overwrite|backpressure]]]
 *                                   (default 4 subscribers, 100000 ticks,
 *                                    backpressure)
 *
 * The publisher writes each tick once, into one slot; every subscriber
 * reads it there, at its own pace.  With back-pressure the publisher waits
 * for the slowest subscriber, so every subscriber must see every tick, in
 * order.  With overwrite the publisher never waits: a subscriber that falls
 * a ring behind is told how many ticks it lost (-EOVERFLOW, lzchan_lost()),
 * and what it received plus what it was told it lost must be every tick.
 * Subscribers read in place (lzchan_peek) and check, with
 * lzchan_release_check(), that what they read was not overwritten while
 * they read it.  The publisher's close ends every subscriber's stream
 * (-EPIPE, a clean end).
 *
 * Exit status: 0 every tick accounted for by every subscriber, 1 failure,
 * 2 usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lzchan.h>

#define TIMEOUT_NS	(10LL * 1000000000LL)

struct tick {
	uint64_t seq;
	uint64_t check;			/* derived from seq */
	char symbol[16];
};

static uint64_t tick_check(uint64_t seq)
{
	return seq * 0x9e3779b97f4a7c15ULL ^ 0x5bd1e995;
}

static int fail(const char *who, const char *what, int err)
{
	fprintf(stderr, "lzchan_pubsub: %s: %s: %s\n", who, what, strerror(-err));
	return 1;
}

static int subscriber(const char *name, unsigned int id, uint64_t msgs, int ready)
{
	uint64_t next = 0, got = 0, lost_all = 0, lost;
	struct lzchan_msg m;
	struct lzchan *sub;
	char who[32];
	int r;

	snprintf(who, sizeof(who), "subscriber %u", id);
	r = lzchan_subscribe(&sub, name, 0, 0);
	if (r)
		return fail(who, "lzchan_subscribe", r);
	/* Attached: tell the parent, which starts the publisher after all. */
	if (write(ready, "s", 1) != 1)
		return fail(who, "write", -errno);
	for (;;) {
		struct tick t;

		r = lzchan_peek(sub, &m);
		if (r == -EAGAIN) {
			/* Nothing yet: sleep until the publisher publishes. */
			r = lzchan_recv_wait(sub, &t, sizeof(t), NULL, TIMEOUT_NS);
			if (r == (int)sizeof(t))
				goto check;
			if (r >= 0) {
				lzchan_close(sub);
				return fail(who, "a tick of the wrong size", -EBADMSG);
			}
		}
		if (r == -EOVERFLOW) {
			/* Overwritten before we read them: counted, and the
			 * stream goes on from the oldest tick still there. */
			lzchan_lost(sub, &lost);
			next += lost;
			lost_all += lost;
			continue;
		}
		if (r == -EPIPE)
			break;			/* the publisher's end */
		if (r < 0) {
			lzchan_close(sub);
			return fail(who, "receive", r);
		}
		if (m.len != sizeof(t)) {
			lzchan_close(sub);
			return fail(who, "a tick of the wrong size", -EBADMSG);
		}
		/* Copy out, then make sure the copy was whole: with overwrite
		 * the publisher may have written over the slot meanwhile. */
		memcpy(&t, m.data, sizeof(t));
		if (lzchan_release_check(sub, &m) == -ESTALE) {
			lzchan_lost(sub, &lost);	/* this one: 1 */
			next += lost;
			lost_all += lost;
			continue;
		}
check:
		if (t.seq != next || t.check != tick_check(t.seq)) {
			fprintf(stderr, "lzchan_pubsub: %s: tick %llu where %llu was due\n", who,
				(unsigned long long)t.seq, (unsigned long long)next);
			lzchan_close(sub);
			return 1;
		}
		next++;
		got++;
	}
	if (lzchan_end_cause(sub, 0) != LZCHAN_END_CLOSED) {
		lzchan_close(sub);
		return fail(who, "the publisher did not close cleanly", -EPIPE);
	}
	lzchan_close(sub);
	if (next != msgs) {
		fprintf(stderr, "lzchan_pubsub: %s: %llu ticks accounted for, not %llu\n", who,
			(unsigned long long)next, (unsigned long long)msgs);
		return 1;
	}
	printf("subscriber %u: %llu ticks received and checked, %llu lost (told)\n", id,
	       (unsigned long long)got, (unsigned long long)lost_all);
	fflush(stdout);			/* the caller _exit()s */
	return 0;
}

static int publisher(const char *name, uint64_t msgs)
{
	struct lzchan *pub;
	uint64_t seq;
	int r;

	r = lzchan_open(&pub, name, LZCHAN_PUBLISHER, NULL);
	if (r)
		return fail("publisher", "lzchan_open", r);
	for (seq = 0; seq < msgs; seq++) {
		struct tick t = { .seq = seq, .check = tick_check(seq) };

		snprintf(t.symbol, sizeof(t.symbol), "LZC%llu", (unsigned long long)(seq % 100));
		/* Back-pressure: waits for room; overwrite: never waits. */
		r = lzchan_send_wait(pub, &t, sizeof(t), TIMEOUT_NS);
		if (r) {
			lzchan_close(pub);
			return fail("publisher", "lzchan_send_wait", r);
		}
	}
	lzchan_close(pub);		/* every subscriber's stream ends */
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int subs = argc > 2 ? (unsigned int)atoi(argv[2]) : 4, i;
	uint64_t msgs = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
	struct lzchan_ps_opts o;
	int ready[2], st, failed = 0, r;
	pid_t pub, *pids;
	char b;

	if (argc < 2 || argc > 5 || !subs || subs > 1024 || !msgs ||
	    (argc == 5 && strcmp(argv[4], "overwrite") && strcmp(argv[4], "backpressure"))) {
		fprintf(stderr, "usage: %s NAME [SUBSCRIBERS [MSGS [overwrite|backpressure]]]\n",
			argv[0]);
		return 2;
	}
	lzchan_ps_opts_init(&o);
	o.slot_size = 64;		/* a tick is 32 bytes */
	o.slot_count = 1024;
	o.max_subscribers = subs;
	o.policy = argc == 5 && !strcmp(argv[4], "overwrite") ? LZCHAN_PS_OVERWRITE :
								 LZCHAN_PS_BACKPRESSURE;
	r = lzchan_ps_create(argv[1], &o, LZCHAN_EXCL);
	if (r < 0)
		return fail("main", "lzchan_ps_create", r);
	pids = calloc(subs, sizeof(*pids));
	if (!pids || pipe(ready))
		return fail("main", "setup", -ENOMEM);
	for (i = 0; i < subs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(subscriber(argv[1], i, msgs, ready[1]));
	}
	/* Every subscriber attached: they start at the newest tick. */
	for (i = 0; i < subs; i++)
		if (read(ready[0], &b, 1) != 1)
			failed = 1;
	pub = fork();
	if (pub == 0)
		_exit(failed ? 1 : publisher(argv[1], msgs));
	waitpid(pub, &st, 0);
	failed |= !WIFEXITED(st) || WEXITSTATUS(st);
	for (i = 0; i < subs; i++) {
		waitpid(pids[i], &st, 0);
		failed |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	lzchan_unlink(argv[1]);
	free(pids);
	if (!failed)
		printf("%u subscribers, %llu ticks each, every one accounted for\n", subs,
		       (unsigned long long)msgs);
	return failed;
}
