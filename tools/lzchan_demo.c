// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan-demo: the main job in two unrelated processes.
 *
 *   lzchan-demo serve NAME      answers requests on NAME.req until told to stop
 *   lzchan-demo client NAME     ping-pongs with the server, then streams to it
 *
 * Each side creates the channel it receives on; they meet by name only.
 * Exit status: 0 success, 1 failure, 2 usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lzchan.h>

#define TIMEOUT_NS	(10LL * 1000000000LL)
#define PINGS		200000
#define STREAM		2000000
#define MSG		64

enum { OP_PING = 1, OP_DATA, OP_STOP };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "lzchan-demo: %s: %s\n", what, strerror(-err));
	return 1;
}

/* Open @name as @role, creating it; the other side may come first or not. */
static int open_rx(struct lzchan **ch, const char *name)
{
	struct lzchan_opts o;

	lzchan_opts_init(&o);
	o.slot_count = 4096;
	o.max_senders = 2;
	o.spin_ns = 200000;
	return lzchan_open(ch, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o);
}

static int open_tx(struct lzchan **ch, const char *name)
{
	uint64_t end = now_ns() + TIMEOUT_NS;
	int r;

	/* Wait for the other process to create its channel. */
	while ((r = lzchan_open(ch, name, LZCHAN_SENDER, NULL)) == -ENOENT && now_ns() < end) {
		struct timespec ts = { .tv_nsec = 1000000 };

		nanosleep(&ts, NULL);
	}
	return r;
}

static int serve(const char *base)
{
	char req[LZCHAN_NAME_SIZE], rsp[LZCHAN_NAME_SIZE];
	unsigned char buf[MSG];
	struct lzchan *rx, *tx = NULL;
	unsigned long pings = 0, data = 0;
	int r;

	snprintf(req, sizeof(req), "%s.req", base);
	snprintf(rsp, sizeof(rsp), "%s.rsp", base);
	r = open_rx(&rx, req);
	if (r)
		return fail(req, r);
	for (;;) {
		r = lzchan_recv_wait(rx, buf, sizeof(buf), NULL, 3 * TIMEOUT_NS);
		if (r == -EPIPE)
			continue;	/* a client left; another may come */
		if (r < 1)
			return fail("receive", r);
		if (buf[0] == OP_DATA) {
			data++;
			continue;
		}
		if (buf[0] == OP_STOP)
			break;
		if (!tx) {
			r = open_tx(&tx, rsp);
			if (r)
				return fail(rsp, r);
		}
		r = lzchan_send_wait(tx, buf, r, TIMEOUT_NS);
		if (r)
			return fail("reply", r);
		pings++;
	}
	printf("server: answered %lu requests, took %lu one-way messages\n", pings, data);
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(req);
	return 0;
}

static int client(const char *base)
{
	char req[LZCHAN_NAME_SIZE], rsp[LZCHAN_NAME_SIZE];
	unsigned char buf[MSG] = { 0 };
	struct lzchan *rx, *tx;
	struct lzchan_geom g;
	uint64_t t0, t1;
	unsigned long i;
	int r;

	snprintf(req, sizeof(req), "%s.req", base);
	snprintf(rsp, sizeof(rsp), "%s.rsp", base);
	r = open_rx(&rx, rsp);
	if (r)
		return fail(rsp, r);
	r = open_tx(&tx, req);
	if (r)
		return fail(req, r);
	lzchan_geometry(tx, &g);
	printf("backend: %s%s\n", lzchan_backend_name(tx),
	       g.backend == LZCHAN_BACKEND_SHM ?
	       " -- the fallback: " LZCHAN_DEVICE_PATH " is not loaded here" : "");

	/* Request/response: 64-byte messages there and back. */
	buf[0] = OP_PING;
	t0 = now_ns();
	for (i = 0; i < PINGS; i++) {
		memcpy(buf + 8, &i, sizeof(i));
		r = lzchan_send_wait(tx, buf, MSG, TIMEOUT_NS);
		if (!r)
			r = lzchan_recv_wait(rx, buf, sizeof(buf), NULL, TIMEOUT_NS);
		if (r < 0)
			return fail("ping-pong", r);
		if (memcmp(buf + 8, &i, sizeof(i)))
			return fail("ping-pong: wrong reply", -EBADMSG);
	}
	t1 = now_ns();
	printf("ping-pong: %d round trips of %d bytes, %.0f ns half round trip\n",
	       PINGS, MSG, (t1 - t0) / 2.0 / PINGS);

	/* One way: as fast as the server takes them. */
	buf[0] = OP_DATA;
	t0 = now_ns();
	for (i = 0; i < STREAM; i++) {
		r = lzchan_send_wait(tx, buf, MSG, TIMEOUT_NS);
		if (r)
			return fail("stream", r);
	}
	buf[0] = OP_STOP;
	r = lzchan_send_wait(tx, buf, MSG, TIMEOUT_NS);
	t1 = now_ns();
	if (r)
		return fail("stop", r);
	printf("stream: %d messages of %d bytes, %.1f M msgs/s, %.2f GB/s\n",
	       STREAM, MSG, STREAM / ((t1 - t0) / 1e3), STREAM * (double)MSG / (t1 - t0));
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(rsp);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "client"))
		return client(argv[2]);
	fprintf(stderr, "usage: lzchan-demo serve|client NAME\n");
	return 2;
}
