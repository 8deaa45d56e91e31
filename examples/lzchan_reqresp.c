// SPDX-License-Identifier: MIT
/*
 * Request/response over lzchan: a server answers numbered requests from
 * any number of clients.
 *
 *   lzchan_reqresp server NAME [CLIENTS]   answer on channel NAME; exit
 *                                          after CLIENTS clients (default:
 *                                          never)
 *   lzchan_reqresp client NAME [COUNT]     send COUNT requests (default
 *                                          1000), check every reply
 *
 * A channel carries messages one way, to its receiver.  So the server
 * receives on NAME, and each client receives its replies on a channel of
 * its own, NAME.<pid>, whose name it sends in its first message.  That
 * channel is temporary (LZCHAN_TEMP): its name goes with the client, even
 * one that is killed.  The server tells clients apart by their lane: each
 * sender has its own, and the lane a message came from is reported with
 * it.  When a client goes the server gets an end of stream (-EPIPE) for
 * its lane and forgets it (lzchan_end_cause() says whether it crashed).
 *
 * Exit status: 0 all replies checked, 1 failure, 2 usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lzchan.h>

#define TIMEOUT_NS	(10LL * 1000000000LL)	/* give up on a silent peer */

enum { OP_HELLO = 1, OP_SQUARE };

struct request {
	uint32_t op;
	uint32_t id;
	uint64_t x;
	char reply_to[LZCHAN_NAME_SIZE];	/* OP_HELLO: reply channel */
};

struct reply {
	uint32_t id;
	uint32_t pad;
	uint64_t square;
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "lzchan_reqresp: %s: %s\n", what, strerror(-err));
	return 1;
}

/* Open @name as a sender, waiting up to TIMEOUT_NS for it to be created. */
static int open_sender(struct lzchan **ch, const char *name)
{
	return lzchan_open_wait(ch, name, LZCHAN_SENDER, NULL, TIMEOUT_NS);
}

static int server(const char *name, long clients)
{
	struct lzchan *rx, **reply_to;
	struct lzchan_geom g;
	struct lzchan_opts o;
	struct request req;
	long done = 0;
	uint32_t lane;
	int n, r = 0;

	lzchan_opts_init(&o);
	o.slot_size = 128;			/* a request fits one slot */
	o.max_senders = 64;			/* clients at once */
	r = lzchan_open(&rx, name, LZCHAN_RECEIVER | LZCHAN_CREATE, &o);
	if (r)
		return fail(name, r);
	lzchan_geometry(rx, &g);
	reply_to = calloc(g.max_senders, sizeof(*reply_to));
	if (!reply_to)
		return fail("calloc", -ENOMEM);
	printf("server: on '%s' (%s), %u lanes\n", name, lzchan_backend_name(rx),
	       g.max_senders);
	fflush(stdout);

	while (clients <= 0 || done < clients) {
		n = lzchan_recv_wait(rx, &req, sizeof(req), &lane, -1);
		if (n == -EPIPE) {		/* that client is gone */
			if (lzchan_end_cause(rx, lane) == LZCHAN_END_LOST)
				fprintf(stderr, "server: lane %u: the client died\n", lane);
			lzchan_close(reply_to[lane]);
			reply_to[lane] = NULL;
			done++;
			continue;
		}
		if (n == -EMSGSIZE) {		/* not a request: drop it */
			struct lzchan_msg m;

			if (lzchan_peek_lane(rx, lane, &m) == 0)
				lzchan_release(rx, &m);
			continue;
		}
		if (n == -EBADMSG) {
			/* A broken client corrupts only its own lane. */
			fprintf(stderr, "server: lane %u: %s, ignored\n", lane, strerror(-n));
			continue;
		}
		if (n < 0) {
			r = n;
			break;
		}
		if (req.op == OP_HELLO) {
			req.reply_to[sizeof(req.reply_to) - 1] = '\0';
			lzchan_close(reply_to[lane]);	/* a previous client's */
			r = open_sender(&reply_to[lane], req.reply_to);
			if (r)
				fprintf(stderr, "server: reply channel %s: %s\n",
					req.reply_to, strerror(-r));
			continue;
		}
		if (req.op == OP_SQUARE && reply_to[lane]) {
			struct reply rep = { .id = req.id, .square = req.x * req.x };

			r = lzchan_send_wait(reply_to[lane], &rep, sizeof(rep), TIMEOUT_NS);
			if (r && r != -EPIPE)	/* EPIPE: the client left; fine */
				fprintf(stderr, "server: reply: %s\n", strerror(-r));
		}
	}
	printf("server: %ld client(s) served\n", done);
	for (lane = 0; lane < g.max_senders; lane++)
		lzchan_close(reply_to[lane]);
	free(reply_to);
	lzchan_close(rx);
	lzchan_unlink(name);
	return r ? fail("receive", r) : 0;
}

static int client(const char *name, long count)
{
	struct request req = { .op = OP_HELLO };
	struct lzchan *tx, *rx;
	struct reply rep;
	long i;
	int r;

	/* Our reply channel first, so the server can open it; temporary, so
	 * that it goes with us however we end. */
	snprintf(req.reply_to, sizeof(req.reply_to), "%.40s.%d", name, (int)getpid());
	r = lzchan_open(&rx, req.reply_to, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_TEMP, NULL);
	if (r)
		return fail(req.reply_to, r);
	r = open_sender(&tx, name);
	if (r) {
		lzchan_close(rx);
		return fail(name, r);
	}
	r = lzchan_send_wait(tx, &req, sizeof(req), TIMEOUT_NS);

	for (i = 0; i < count && !r; i++) {
		/* The reply channel name is only needed once: send less. */
		req.op = OP_SQUARE;
		req.id = i;
		req.x = 1000 + i;
		r = lzchan_send_wait(tx, &req, offsetof(struct request, reply_to), TIMEOUT_NS);
		if (r)
			break;
		r = lzchan_recv_wait(rx, &rep, sizeof(rep), NULL, TIMEOUT_NS);
		if (r == (int)sizeof(rep))
			r = 0;
		else if (r >= 0)
			r = -EBADMSG;		/* not a reply of ours */
		if (!r && (rep.id != req.id || rep.square != req.x * req.x)) {
			fprintf(stderr, "client: reply %u = %llu, expected %u = %llu\n",
				rep.id, (unsigned long long)rep.square, req.id,
				(unsigned long long)(req.x * req.x));
			r = -EBADMSG;
		}
	}
	lzchan_close(tx);		/* the server sees our end of stream */
	lzchan_close(rx);		/* and the reply channel's name goes */
	if (r)
		return fail(r == -ETIMEDOUT ? "no reply from the server" : "request", r);
	printf("client: %ld requests answered and checked\n", count);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && argc <= 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argc == 4 ? atol(argv[3]) : 0);
	if (argc >= 3 && argc <= 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argc == 4 ? atol(argv[3]) : 1000);
	fprintf(stderr, "usage: %s server NAME [CLIENTS] | client NAME [COUNT]\n", argv[0]);
	return 2;
}
