// SPDX-License-Identifier: MIT
/*
 * Many senders, one receiver: SENDERS processes each send MSGS messages of
 * varying sizes into one channel; the receiver checks every one.
 *
 *   lzchan_fanin NAME [SENDERS [MSGS]]      (default 4 senders, 100000 each)
 *
 * Each sender owns a lane, so senders never contend with one another and
 * need no lock; the receiver serves the lanes in turn.  What is checked:
 * per sender, messages arrive in order, none lost or duplicated, each
 * payload intact (a pattern derived from sender and sequence number); each
 * sender's end is reported once (-EPIPE) after its last message.
 *
 * The senders use the zero-copy path (lzchan_reserve/lzchan_commit: the
 * message is written straight into the lane); the receiver takes batches
 * of messages in place (lzchan_recv_batch), and sleeps in lzchan_recv_wait()
 * when there is nothing to do.
 *
 * Exit status: 0 all messages checked, 1 failure, 2 usage.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lzchan.h>

#define TIMEOUT_NS	(10LL * 1000000000LL)
#define MAX_PAYLOAD	200		/* bytes after the header: 1 to 4 slots */

struct msg {
	uint32_t sender;		/* 0 .. SENDERS-1 */
	uint32_t len;			/* payload bytes that follow */
	uint64_t seq;
	uint8_t payload[];
};

static uint8_t pattern(uint32_t sender, uint64_t seq, uint32_t i)
{
	return (uint8_t)(sender * 31 + seq * 7 + i);
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "lzchan_fanin: %s: %s\n", what, strerror(-err));
	return 1;
}

static int sender(const char *name, uint32_t id, uint64_t msgs)
{
	struct lzchan *tx;
	uint64_t seq;
	int r;

	r = lzchan_open(&tx, name, LZCHAN_SENDER, NULL);
	if (r)
		return fail("sender: open", r);
	for (seq = 0; seq < msgs && !r; seq++) {
		uint32_t len = (seq * 13 + id) % (MAX_PAYLOAD + 1), i;
		size_t size = sizeof(struct msg) + len;
		struct msg *m;
		void *p;

		/* Room for the message, straight in the lane; wait if full. */
		while ((r = lzchan_reserve(tx, size, &p)) == -EAGAIN)
			sched_yield();
		if (r)
			break;
		m = p;
		m->sender = id;
		m->len = len;
		m->seq = seq;
		for (i = 0; i < len; i++)
			m->payload[i] = pattern(id, seq, i);
		r = lzchan_commit(tx, size);
	}
	lzchan_close(tx);		/* our lane ends: the receiver drains it */
	return r ? fail("sender: send", r) : 0;
}

/* Check one message in place; 0 if good. */
static int check(const struct lzchan_msg *v, uint64_t *next, uint32_t senders,
		 uint32_t *lane_of)
{
	struct msg m;
	uint32_t i;

	/* Copy the header out: the sender's lane is the sender's memory. */
	if (v->len < sizeof(m))
		return -EBADMSG;
	memcpy(&m, v->data, sizeof(m));
	if (m.sender >= senders || v->len != sizeof(m) + m.len ||
	    m.seq != next[m.sender])
		return -EBADMSG;
	/* One sender, one lane, for its whole life. */
	if (lane_of[m.sender] == LZCHAN_LANE_NONE)
		lane_of[m.sender] = v->lane;
	if (lane_of[m.sender] != v->lane)
		return -EBADMSG;
	for (i = 0; i < m.len; i++)
		if (((const uint8_t *)v->data)[sizeof(m) + i] != pattern(m.sender, m.seq, i))
			return -EBADMSG;
	next[m.sender]++;
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t senders = 4, ended = 0, i, lane, *lane_of;
	uint64_t msgs = 100000, *next, total = 0;
	struct lzchan_msg batch[32];
	struct lzchan_opts o;
	struct lzchan *rx;
	char buf[sizeof(struct msg) + MAX_PAYLOAD];
	int r, k, failed = 0;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: %s NAME [SENDERS [MSGS]]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		senders = strtoul(argv[2], NULL, 0);
	if (argc > 3)
		msgs = strtoull(argv[3], NULL, 0);
	if (!senders || senders > 256) {
		fprintf(stderr, "lzchan_fanin: SENDERS must be 1 to 256\n");
		return 2;
	}

	lzchan_opts_init(&o);
	o.max_senders = senders;	/* a lane each */
	r = lzchan_open(&rx, argv[1], LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
	if (r)
		return fail(argv[1], r);
	next = calloc(senders, sizeof(*next));
	lane_of = malloc(senders * sizeof(*lane_of));
	if (!next || !lane_of)
		return fail("malloc", -ENOMEM);
	for (i = 0; i < senders; i++)
		lane_of[i] = LZCHAN_LANE_NONE;

	for (i = 0; i < senders; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return fail("fork", -errno);
		if (pid == 0)		/* leave the receiver's handle alone */
			_exit(sender(argv[1], i, msgs));
	}

	while (ended < senders && !failed) {
		/* Up to 32 messages of one lane, in place. */
		k = lzchan_recv_batch(rx, batch, 32);
		if (k > 0) {
			for (r = 0; r < k && !failed; r++)
				if (check(&batch[r], next, senders, lane_of)) {
					fprintf(stderr, "lzchan_fanin: lane %u: bad message\n",
						batch[r].lane);
					failed = 1;
				}
			total += k;
			lzchan_release(rx, &batch[k - 1]);	/* all k at once */
			continue;
		}
		if (k == -EAGAIN) {
			/* Nothing now: sleep until something comes.  What
			 * wakes us is received (copied) here. */
			k = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, TIMEOUT_NS);
			if (k >= 0) {
				struct lzchan_msg v = { .data = buf, .len = k, .lane = lane };

				if (check(&v, next, senders, lane_of)) {
					fprintf(stderr, "lzchan_fanin: lane %u: bad message\n", lane);
					failed = 1;
				}
				total++;
				continue;
			}
		}
		if (k == -EPIPE) {	/* one sender's end of stream */
			ended++;
			continue;
		}
		failed = 1;
		fail("receive", k);
	}

	/* Closing first ends the senders still running (after a failure):
	 * their next send fails with -EPIPE. */
	lzchan_close(rx);
	lzchan_unlink(argv[1]);
	while (wait(&r) > 0)
		if (!WIFEXITED(r) || WEXITSTATUS(r))
			failed = 1;
	for (i = 0; i < senders; i++)
		if (next[i] != msgs) {
			fprintf(stderr, "lzchan_fanin: sender %u: %llu of %llu messages\n",
				i, (unsigned long long)next[i], (unsigned long long)msgs);
			failed = 1;
		}
	if (failed)
		return 1;
	printf("%u senders, %llu messages received and checked, %u ends of stream\n",
	       senders, (unsigned long long)total, ended);
	return 0;
}
