// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan-bridged: carries lzchan channels between hosts over UCX.
 *
 * One bridge per host.  For each configured route CHANNEL@PEER it is the
 * receiver of a local proxy channel named "CHANNEL@PEER": each lane of the
 * proxy (one local sender) becomes a stream to PEER's bridge, which
 * attaches as an ordinary sender to its local channel CHANNEL.  Streams
 * carry sequence numbers and are paced by credit: the receiving bridge
 * queues at most its window per stream, so a slow receiver fills the
 * proxy lane and the local sender sees a full ring.  The protocol is in
 * lzbr_wire.h; lzchan-bridged(8) and the admin guide describe it for users.
 *
 * Single-threaded: an epoll loop over UCX's worker fd, the proxies' event
 * fds, a timer and a signalfd.  Idle, it sleeps.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <ucp/api/ucp.h>

#include "lzbr.h"

#define HANDSHAKE_NS		2000000000ULL	/* a peer that says nothing goes */
#define RECONNECT_NS		1000000000ULL
#define PROXY_RETRY_NS		1000000000ULL
#define QUEUE_RETRY_MS		1		/* a full local lane: look again */
#define BLOCKED_MS		10		/* a proxy waiting for credit */
#define INQ_SLACK		(1U << 20)	/* received, not yet processed */
#define HANDSHAKE_INQ		4096		/* ... before the handshake */
#define MAX_HALF_OPEN		64		/* connections not yet through it */
#define MAX_HALF_OPEN_SOURCE	4		/* ... from one address */
#define INFLIGHT_MAX		(16U << 20)	/* bytes UCX holds for one peer */
#define CREDIT_MAX		(1ULL << 30)	/* the most credit we believe */
#define STATUS_EVERY_NS		1000000000ULL	/* the status file, at most */
/* A connection through its handshake sends a sealed PING when it has sent
 * nothing else for PING_NS, and is closed when nothing authenticated came
 * for SILENT_NS: a peer that went away, or whose frames no longer open
 * (one lost or altered on the way, and every later one fails: the
 * counters never meet again).  Frames that do not open are dropped
 * without touching the connection they name, so this is what ends one
 * that has gone wrong. */
#define PING_NS			2000000000ULL
#define SILENT_NS		10000000000ULL

static int verbose;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("lzchan-bridged: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

#define dbg(...) do { if (verbose) say(__VA_ARGS__); } while (0)

static uint64_t now_ns(void);

/* What hosts that have proven nothing make us say: at most 20 lines a
 * second, then how many were left out. */
static void say_limited(const char *fmt, ...)
{
	static uint64_t second;
	static unsigned int said, dropped;
	uint64_t now = now_ns();
	va_list ap;

	if (now - second >= 1000000000ULL) {
		if (dropped)
			say("(%u more lines of unauthenticated connections left out)", dropped);
		second = now;
		said = dropped = 0;
	}
	if (said++ >= 20) {
		dropped++;
		return;
	}
	va_start(ap, fmt);
	fputs("lzchan-bridged: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* @ss's port (host order; 0 for a family without one). */
static unsigned int port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/* "ADDR:PORT" for the log. */
static void addr_str(char *out, size_t len, const struct sockaddr_storage *ss)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, a, sizeof(a));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, a, sizeof(a));
	snprintf(out, len, ss->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, port_of(ss));
}

/* A message as received (or queued for a local lane): header and payload. */
struct msgbuf {
	struct msgbuf *next;
	struct lzbr_hdr h;
	struct conn *conn;
	uint8_t data[];
};

/* A message being sent: kept until UCX is done with it. */
struct sendbuf {
	struct conn *conn;
	struct lzbr_hdr h;
	uint8_t data[];
};

/* What the handshake has to send next (conn_step sends it, once the
 * endpoint's first flush is done). */
enum conn_due { D_NONE, D_CHALLENGE, D_AUTH, D_WELCOME };

enum conn_state {
	C_HELLO_DUE,		/* initiator: flushing, then HELLO */
	C_HELLO_SENT,		/* initiator: waiting for CHALLENGE */
	C_AUTH_SENT,		/* initiator: waiting for WELCOME */
	C_AWAIT_HELLO,		/* acceptor */
	C_CHALLENGED,		/* acceptor: waiting for AUTH */
	C_UP,
	C_CLOSING,		/* ep closing; freed once it and its sends are done */
};

/* A stream in (acceptor): one remote sender, as a local sender here. */
struct istream {
	struct istream *next;
	uint32_t id;
	struct lzchan *tx;
	char channel[LZBR_NAME_SIZE];
	uint32_t uid;
	int32_t pid;
	uint32_t max_msg;
	uint64_t expect;		/* the next DATA's seq */
	bool stalled;			/* the local lane is full (counted once) */
	uint64_t window;		/* its credit: the window, or one
					 * message of max_msg if that is more */
	uint64_t granted;		/* bytes the peer may still send */
	uint64_t owed;			/* bytes delivered, credit not yet returned */
	struct msgbuf *q, **qtail;	/* arrived, the local lane was full */
	uint64_t qbytes;
	bool end_pending;
	uint32_t lane;			/* its lane in the local channel */
	bool origin;			/* its origin record is written */
	bool clean;			/* its END said the sender closed: the
					 * lane ends as a clean close once all
					 * it sent is in the lane, else as a
					 * death (lzchan_close_lost()) */
	uint64_t msgs, bytes;
};

struct conn {
	struct conn *next;
	ucp_ep_h ep;
	bool initiator;
	bool flushed;			/* the first flush is done: may send */
	int peer;			/* index in conf peers, -1 until known */
	enum conn_state state;
	uint64_t deadline;		/* handshake */
	uint64_t born;			/* when it came (the oldest half-open goes first) */
	struct sockaddr_storage addr;	/* the other end (acceptor: as UCX says) */
	char where[INET6_ADDRSTRLEN + 8];	/* ... for the log */
	struct lzbr_hs hs;
	enum conn_due due;
	struct lzbr_challenge ch_out;
	struct lzbr_auth au_out;
	bool keyed;			/* sess is set: every frame is sealed */
	struct lzbr_session sess;
	uint64_t unauth;		/* frames naming it that did not open */
	bool told_refused;		/* an unsealed ERROR was logged */
	uint64_t rx_ok_ns, tx_ns;	/* the last frame opened, and sent */
	bool refuse_sent, refuse_due;	/* our refusal: once, sent by conn_step */
	struct msgbuf *inq, **inq_tail;
	uint64_t inq_bytes;
	unsigned int inflight;		/* sends UCX holds */
	uint64_t inflight_bytes;	/* ... and their bytes */
	unsigned int peak_streams;	/* the most istreams open at once */
	bool closed;			/* the ep close completed */
	bool force;			/* the transport failed: no flush at close */
	int err;			/* why it goes (0: a clean close) */
	uint32_t next_stream;
	struct istream *istreams;
	uint64_t msgs_in, bytes_in, msgs_out, bytes_out;
};

enum ostream_state { OS_NONE, OS_OPENING, OS_OPEN };

/* A stream out (initiator): one lane of a proxy channel. */
struct ostream {
	uint32_t id;
	enum ostream_state state;
	uint64_t credit;
	uint64_t seq;			/* the last DATA sent */
	uint32_t max_msg;
	struct lzchan_msg pend;		/* taken from the lane, not yet sent */
	bool has_pend;
	bool eos;			/* the lane's sender left (after pend) */
	bool broken;			/* the lane held garbage: ended, until
					 * its sender goes (-EPIPE) */
	bool stalled;			/* waiting for credit (counted once) */
	int cause;
	/* Sent, not yet delivered there: kept in the proxy's lane (views,
	 * in order) until the far bridge's credit says they are in the
	 * channel there.  So a sender's lzchan_flush() returns only once
	 * its messages are delivered, and -EPIPE when the far side refused
	 * or lost them. */
	struct unacked *ua;		/* a ring of ua_cap (the lane's slots) */
	uint32_t ua_head, ua_n;
	uint32_t ua_slots;		/* ... and the lane's slots they fill */
	bool ack_stalled;		/* the lane is full of them (counted once) */
	uint64_t acked;			/* credit back, not yet matched to messages */
};

struct unacked {
	struct lzchan_msg view;
	uint64_t cost;
	uint32_t slots;
};

struct route {
	const struct lzbr_route_conf *rc;
	struct lzchan *rx;		/* the proxy, while its peer is up */
	struct conn *conn;
	struct ostream *lanes;
	uint32_t nlanes;
	uint32_t max_msg;		/* the proxy's */
	uint32_t slots;			/* ... and its slots per lane */
	uint32_t slot_size;
	bool blocked;
	bool fd_off;			/* its event fd out of epoll's set */			/* a lane waits for OPENED or credit */
	uint64_t retry_at;
};

/* Per configured peer, over all its connections (the status file). */
struct peer_stats {
	uint64_t connects;		/* handshakes completed */
	uint64_t refused;		/* handshakes refused (either side) */
	uint64_t sent_msgs, sent_bytes;	/* our senders' messages, to it */
	uint64_t recv_msgs, recv_bytes;	/* its senders', into our channels */
	uint64_t credit_stalls;		/* a lane of ours waited for its credit, or
					 * was full of messages not yet acknowledged */
	uint64_t lane_stalls;		/* one of our channels' lanes was full */
	uint64_t stream_errors;		/* streams ended by an error */
	uint64_t streams;		/* streams opened, both ways */
};

static struct {
	struct lzbr_conf conf;
	struct peer_stats ps[LZBR_MAX_PEERS];
	bool status_dirty;
	uint64_t status_ns;
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_listener_h listener;
	int efd, epfd, sigfd;
	struct conn *conns;
	struct conn *out[LZBR_MAX_PEERS];	/* initiator connections, by peer */
	uint64_t reconnect_at[LZBR_MAX_PEERS];
	struct route routes[LZBR_MAX_ROUTES];
	bool stop;
	bool work;			/* this round did something */
	struct {			/* one lane's messages for one frame (route_pump) */
		uint32_t n, len;	/* messages, their records' bytes */
		uint64_t seq;		/* the first's */
		const void *first;	/* the first (a view, held till acknowledged) */
		uint32_t first_len;
		uint8_t buf[LZBR_BATCH_BYTES];
	} batch;
	uint64_t work_ns;		/* when a round last did something */
	uint64_t poll_ns;		/* poll-us: how long to poll after that */
	uint64_t unauth;		/* frames that did not authenticate */
	uint64_t unauth_said;		/* when that was last logged */
	uint64_t evicted;		/* half-open connections evicted */
} br;

static void conn_fail(struct conn *c, int err, const char *why);
static void conn_error(struct conn *c, int err, const char *why);
static const char *peer_name(const struct conn *c);
static void route_down(struct route *r, const char *why, bool lost);

/* ---------- sending ---------- */

static void send_done(void *request, ucs_status_t status, void *user_data)
{
	struct sendbuf *sb = user_data;
	struct conn *c = sb->conn;

	c->inflight--;
	c->inflight_bytes -= sb->h.len;
	if (status != UCS_OK && status != UCS_ERR_CANCELED && c->state != C_CLOSING) {
		c->force = true;
		conn_fail(c, EIO, ucs_status_string(status));
	}
	free(sb);
	ucp_request_free(request);
}

/* Send one frame: sealed once the connection has its keys (all but the
 * handshake's, and a refusal sent before them). */
static int conn_send(struct conn *c, uint8_t type, uint32_t stream, uint64_t seq, uint64_t arg,
		     const void *data, uint32_t len)
{
	struct sendbuf *sb;
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_FLAGS,
		.flags = UCP_AM_SEND_FLAG_REPLY,
	};
	bool seal = c->keyed && type != LZBR_HELLO && type != LZBR_CHALLENGE && type != LZBR_AUTH;
	size_t wire = len + (seal ? LZBR_TAG_SIZE : 0);
	ucs_status_ptr_t req;

	if (c->state == C_CLOSING)
		return -EPIPE;
	sb = malloc(sizeof(*sb) + wire);
	if (!sb) {
		conn_fail(c, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	sb->conn = c;
	sb->h = (struct lzbr_hdr){
		.magic = LZBR_MAGIC, .version = LZBR_VERSION, .type = type,
		.stream = stream, .seq = seq, .arg = arg, .len = len,
	};
	if (seal)
		lzbr_seal(&c->sess, &sb->h, data, len, sb->data);
	else if (len)
		memcpy(sb->data, data, len);
	p.cb.send = send_done;
	p.user_data = sb;
	req = ucp_am_send_nbx(c->ep, LZBR_AM_ID, &sb->h, sizeof(sb->h), sb->data, wire, &p);
	if (req == NULL) {
		free(sb);
	} else if (UCS_PTR_IS_ERR(req)) {
		free(sb);
		c->force = true;
		conn_fail(c, EIO, ucs_status_string(UCS_PTR_STATUS(req)));
		return -EIO;
	} else {
		c->inflight++;
		c->inflight_bytes += len;
	}
	c->msgs_out++;
	c->bytes_out += len;
	c->tx_ns = now_ns();
	return 0;
}

/* ---------- receiving: the active message handler queues, the loop acts ---------- */

static struct conn *conn_of_ep(ucp_ep_h ep)
{
	struct conn *c;

	for (c = br.conns; c; c = c->next)
		if (c->ep == ep && c->state != C_CLOSING)
			return c;
	return NULL;
}

static void inq_add(struct conn *c, struct msgbuf *m)
{
	m->next = NULL;
	m->conn = c;
	*c->inq_tail = m;
	c->inq_tail = &m->next;
	c->inq_bytes += sizeof(*m) + m->h.len;
}

/* The most a connection may have received and not yet processed: every
 * stream's window, and some for control messages. */
static uint64_t inq_limit(const struct conn *c)
{
	uint64_t max_window = br.conf.window;
	const struct istream *s;

	if (c->state != C_UP)
		return HANDSHAKE_INQ;
	for (s = c->istreams; s; s = s->next)
		if (s->window > max_window)
			max_window = s->window;
	/* The most streams ever open at once, not those open now: an ended
	 * stream's data may still be on its way. */
	return (uint64_t)(c->peak_streams + 1) * (max_window + 64 * sizeof(struct msgbuf)) +
	       INQ_SLACK;
}

/*
 * A frame that did not authenticate: dropped, counted, and logged at most
 * once a second.  It does nothing to the connection it names: UCX takes
 * that from a field the sender writes (the reply endpoint's id), so it
 * may be any connection's (lzchan-bridged(8), "Security").
 */
static void unauth(struct conn *c, const char *what)
{
	uint64_t now = now_ns();

	br.unauth++;
	if (c)
		c->unauth++;
	if (br.unauth_said && now - br.unauth_said < 1000000000ULL)
		return;
	br.unauth_said = now;
	if (c)
		say("dropped %s naming the connection %s %s (%s): %llu unauthenticated frames so far",
		    what, c->initiator ? "to" : "from", c->where, c->peer >= 0 ?
		    br.conf.peers[c->peer].name : "not yet authenticated",
		    (unsigned long long)br.unauth);
	else
		say("dropped %s naming no connection: %llu unauthenticated frames so far", what,
		    (unsigned long long)br.unauth);
}

/*
 * A handshake message that does not prove what it should.  It may be the
 * peer's (a wrong key pair) or anyone's, naming any connection: the
 * connection goes on (its deadline ends it), the peer is told once with
 * an unsealed ERROR (a refusal it can only log), the line is said once
 * per connection and rate-limited.
 */
static void hs_refuse(struct conn *c, int peer, const char *fmt, ...)
{
	char line[300];
	va_list ap;

	if (peer >= 0)
		br.ps[peer].refused++;
	unauth(c, "a handshake message that does not authenticate");
	if (c->refuse_sent)
		return;
	c->refuse_sent = true;
	c->refuse_due = true;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say_limited("%s", line);
}

/* A handshake message, checked here (in UCX's callback) so that nothing
 * unauthenticated is ever queued or acted on; conn_step sends the answer. */
static void hs_recv(struct conn *c, const struct lzbr_hdr *h, const void *data)
{
	int peer;

	switch (h->type) {
	case LZBR_HELLO: {
		struct lzbr_hello hi;

		memcpy(&hi, data, sizeof(hi));
		if (c->initiator || c->state != C_AWAIT_HELLO || c->due != D_NONE) {
			unauth(c, "an unexpected HELLO");
			return;
		}
		if (!lzbr_wire_name_ok(hi.name, sizeof(hi.name)) ||
		    (peer = lzbr_conf_peer(&br.conf, hi.name)) < 0) {
			hs_refuse(c, -1, "%s: a bridge calling itself '%.*s' is not a configured peer: "
				  "refused", c->where, lzbr_wire_name_ok(hi.name, sizeof(hi.name)) ?
				  LZBR_NAME_SIZE : 0, hi.name);
			return;
		}
		if (lzbr_hs_accept(&c->hs, &c->ch_out, &c->sess, &hi, br.conf.sk, br.conf.pk,
				   br.conf.peers[peer].pk, br.conf.name)) {
			hs_refuse(c, peer, "%s: a HELLO as '%s' that does not prove its key (wrong key "
				  "pair, or not that peer): refused", c->where, hi.name);
			return;
		}
		c->peer = peer;
		c->keyed = true;
		c->state = C_CHALLENGED;
		c->due = D_CHALLENGE;
		return;
	}
	case LZBR_CHALLENGE: {
		struct lzbr_challenge ch;
		struct lzbr_hs hs = c->hs;	/* a failed check leaves c's as it was */

		memcpy(&ch, data, sizeof(ch));
		if (!c->initiator || c->state != C_HELLO_SENT || c->due != D_NONE) {
			unauth(c, "an unexpected CHALLENGE");
			return;
		}
		if (lzbr_hs_finish(&hs, &c->au_out, &c->sess, &ch, br.conf.sk)) {
			sodium_memzero(&hs, sizeof(hs));
			hs_refuse(c, c->peer, "peer %s (%s): a CHALLENGE that does not prove its key "
				  "(a wrong key pair there, or not who it should be): refused",
				  peer_name(c), c->where);
			return;
		}
		sodium_memzero(&hs, sizeof(hs));
		sodium_memzero(&c->hs, sizeof(c->hs));
		c->keyed = true;
		c->state = C_AUTH_SENT;
		c->due = D_AUTH;
		return;
	}
	case LZBR_AUTH: {
		struct lzbr_auth au;

		memcpy(&au, data, sizeof(au));
		if (c->initiator || c->state != C_CHALLENGED || c->due != D_NONE) {
			unauth(c, "an unexpected AUTH");
			return;
		}
		if (lzbr_hs_confirm(&c->hs, &au)) {
			hs_refuse(c, c->peer, "peer %s (%s): an AUTH that does not prove its key: "
				  "refused", peer_name(c), c->where);
			return;
		}
		c->due = D_WELCOME;
		return;
	}
	}
}

static ucs_status_t am_recv(void *arg, const void *header, size_t header_length, void *data,
			    size_t length, const ucp_am_recv_param_t *param)
{
	struct conn *c = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ?
			 conn_of_ep(param->reply_ep) : NULL;
	struct lzbr_hdr h;
	struct msgbuf *m;

	(void)arg;
	if (!c || c->err) {
		if (!c)
			unauth(NULL, "a frame");
		return UCS_OK;		/* none, or one being closed: dropped */
	}
	if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
		unauth(c, "a rendezvous frame (bridges send none)");
		return UCS_OK;
	}
	if (lzbr_wire_check(header, header_length, length, LZCHAN_MSG_MAX, c->keyed)) {
		/* A refusal sent before the sender had keys is the one frame
		 * that is not sealed once we have ours. */
		if (c->state != C_UP && !lzbr_wire_check(header, header_length, length, 0, 0)) {
			memcpy(&h, header, sizeof(h));
			if (h.type == LZBR_ERROR)
				goto refused;
		}
		unauth(c, "a malformed frame");
		return UCS_OK;
	}
	memcpy(&h, header, sizeof(h));	/* UCX's header may be unaligned */
	if (h.type == LZBR_HELLO || h.type == LZBR_CHALLENGE || h.type == LZBR_AUTH) {
		hs_recv(c, &h, data);
		return UCS_OK;
	}
	if (!c->keyed) {
refused:
		/* An ERROR before the keys: the peer's refusal, or anyone's
		 * forgery (it may name any connection).  Said, not acted on:
		 * the handshake's deadline ends the connection if it was the
		 * peer's. */
		if (!c->told_refused)
			say("%s %s: an unauthenticated refusal (%s) naming this connection: the "
			    "peer refused us (wrong key pair, or not its peer), or a forgery; "
			    "the handshake goes on until its deadline", c->initiator ? "peer" :
			    "from", c->initiator ? peer_name(c) : c->where,
			    h.arg < 4096 ? strerror((int)h.arg) : "?");
		c->told_refused = true;
		unauth(c, "an unauthenticated ERROR");
		return UCS_OK;
	}
	/* Not more than the connection may hold, and only what memory
	 * allows: a frame that could not be kept is dropped, as one that
	 * does not open (it may name any connection). */
	if (c->inq_bytes + sizeof(*m) + h.len > inq_limit(c) ||
	    !(m = malloc(sizeof(*m) + h.len))) {
		unauth(c, "a frame larger than the connection may hold");
		return UCS_OK;
	}
	if (lzbr_unseal(&c->sess, &h, data, length, m->data)) {
		free(m);
		unauth(c, "a frame that does not authenticate (forged, replayed, reordered or cut)");
		return UCS_OK;
	}
	/* From here on the frame is the peer's own, and next in order. */
	c->rx_ok_ns = now_ns();
	if (c->state != C_UP && h.type != LZBR_WELCOME && h.type != LZBR_ERROR) {
		free(m);
		conn_fail(c, EPROTO, "a stream message before the handshake");
		return UCS_OK;
	}
	m->h = h;
	inq_add(c, m);
	return UCS_OK;
}

/* ---------- the handshake ---------- */

static void flush_done(void *request, ucs_status_t status, void *user_data)
{
	struct conn *c = user_data;

	c->inflight--;
	if (status == UCS_OK)
		c->flushed = true;
	else if (c->state != C_CLOSING)
		conn_fail(c, EIO, ucs_status_string(status));
	ucp_request_free(request);
}

/* UCX 1.13's active messages can pass each other on a fresh endpoint:
 * flush before the first message. */
static void conn_flush(struct conn *c)
{
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.user_data = c,
	};
	ucs_status_ptr_t req;

	p.cb.send = flush_done;
	req = ucp_ep_flush_nbx(c->ep, &p);
	if (req == NULL)
		c->flushed = true;
	else if (UCS_PTR_IS_ERR(req))
		conn_fail(c, EIO, ucs_status_string(UCS_PTR_STATUS(req)));
	else
		c->inflight++;
}

static const char *peer_name(const struct conn *c)
{
	return c->peer >= 0 ? br.conf.peers[c->peer].name : "(unknown peer)";
}

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	struct conn *c = arg;

	(void)ep;
	c->force = true;
	if (c->state != C_CLOSING)
		conn_fail(c, ECONNRESET, ucs_status_string(status));
}

static struct conn *conn_new(bool initiator, int peer)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->initiator = initiator;
	c->peer = peer;
	c->inq_tail = &c->inq;
	c->next_stream = 1;
	c->born = now_ns();
	c->deadline = c->born + HANDSHAKE_NS;
	strcpy(c->where, "?");
	c->next = br.conns;
	br.conns = c;
	return c;
}

static void conn_connect(int peer)
{
	const struct lzbr_peer_conf *pc = &br.conf.peers[peer];
	struct conn *c = conn_new(true, peer);
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
			      UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
		.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
	};
	ucs_status_t st;

	if (!c) {
		say("peer %s: out of memory", pc->name);
		return;
	}
	ep.sockaddr.addr = (const struct sockaddr *)&pc->addr;
	ep.sockaddr.addrlen = pc->addr_len;
	ep.err_handler.cb = ep_error;
	ep.err_handler.arg = c;
	c->state = C_HELLO_DUE;
	c->addr = pc->addr;
	addr_str(c->where, sizeof(c->where), &c->addr);
	br.out[peer] = c;
	st = ucp_ep_create(br.worker, &ep, &c->ep);
	if (st != UCS_OK) {
		c->ep = NULL;
		conn_fail(c, ECONNREFUSED, ucs_status_string(st));
		return;
	}
	dbg("peer %s: connecting", pc->name);
	conn_flush(c);
}

/* Is @c a connection accepted here and not yet through the handshake? */
static bool half_open(const struct conn *c)
{
	return !c->initiator && c->state != C_UP && c->state != C_CLOSING && !c->err;
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)	/* a /64: one host's to take many of */
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 8);
	return true;		/* no address: one bucket */
}

/*
 * Make room for a connection from @from before its handshake: at most
 * MAX_HALF_OPEN_SOURCE from one address and MAX_HALF_OPEN in all.  The
 * oldest goes, not the newcomer: a host that opens connections and never
 * finishes them crowds out only itself, and an honest peer's attempt is
 * never the one refused.  When all slots are full, the oldest of the
 * address holding the most goes.
 */
static void half_open_room(const struct sockaddr_storage *from)
{
	struct conn *o, *oldest_here = NULL, *oldest_top = NULL;
	unsigned int here = 0, total = 0, top = 0;

	for (o = br.conns; o; o = o->next) {
		if (!half_open(o))
			continue;
		total++;
		if (same_host(&o->addr, from)) {
			here++;
			if (!oldest_here || o->born < oldest_here->born)
				oldest_here = o;
		}
	}
	if (here >= MAX_HALF_OPEN_SOURCE) {
		oldest_top = oldest_here;
	} else if (total >= MAX_HALF_OPEN) {
		for (o = br.conns; o; o = o->next) {
			struct conn *p, *first = NULL;
			unsigned int k = 0;

			if (!half_open(o))
				continue;
			for (p = br.conns; p; p = p->next)
				if (half_open(p) && same_host(&p->addr, &o->addr)) {
					k++;
					if (!first || p->born < first->born)
						first = p;
				}
			if (k > top || (k == top && first->born < oldest_top->born)) {
				top = k;
				oldest_top = first;
			}
		}
	}
	if (oldest_top) {
		br.evicted++;
		oldest_top->force = true;
		conn_fail(oldest_top, ETIMEDOUT, "evicted before its handshake finished (too many "
			  "half-open connections)");
	}
}

static void conn_request(ucp_conn_request_h req, void *arg)
{
	ucp_conn_request_attr_t attr = { .field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR };
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
			      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
		.conn_request = req,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
	};
	struct conn *c;
	ucs_status_t st;

	(void)arg;
	if (ucp_conn_request_query(req, &attr) != UCS_OK)
		memset(&attr.client_address, 0, sizeof(attr.client_address));
	half_open_room(&attr.client_address);
	c = conn_new(false, -1);
	if (!c) {
		ucp_listener_reject(br.listener, req);
		return;
	}
	c->addr = attr.client_address;
	addr_str(c->where, sizeof(c->where), &c->addr);
	ep.err_handler.cb = ep_error;
	ep.err_handler.arg = c;
	c->state = C_AWAIT_HELLO;
	st = ucp_ep_create(br.worker, &ep, &c->ep);
	if (st != UCS_OK) {
		c->ep = NULL;
		conn_fail(c, ECONNABORTED, ucs_status_string(st));
		return;
	}
	dbg("%s connects", c->where);
	conn_flush(c);
}

/* ---------- streams in (acceptor) ---------- */

static struct istream *istream_find(struct conn *c, uint32_t id)
{
	struct istream *s;

	for (s = c->istreams; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

/* ---------- origin records (lzchan_peer_origin(3)) ----------
 *
 * For each remote sender's lane, a file $LZCHAN_ORIGIN_DIR/CHANNEL.LANE
 * (default LZCHAN_ORIGIN_DIR_DEFAULT) saying which peer, uid and pid it
 * carries.  A receiver believes it only because the kernel says this
 * process holds the lane and the file is this uid's; so it is written
 * after the lane is ours and removed before we let it go.
 */
static const char *origin_dir(void)
{
	const char *d = getenv("LZCHAN_ORIGIN_DIR");

	return d && *d ? d : LZCHAN_ORIGIN_DIR_DEFAULT;
}

static unsigned long long origin_start;	/* our start time, as /proc says */

/* Our start time (field 22 of /proc/self/stat), which a reader compares
 * with the lane holder's: 0, or -1 without /proc. */
static int origin_self_start(void)
{
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	int field;
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');	/* after the name, which may hold anything */
	for (field = 2; p && field < 21; field++)
		p = strchr(p + 1, ' ');
	return p && sscanf(p + 1, "%llu", &origin_start) == 1 ? 0 : -1;
}

/* At start: the directory, if it is missing (its parent is the unit's
 * RuntimeDirectory), rid of the records an earlier bridge of our uid left
 * (one bridge per directory).  Only said when it cannot be made: the streams
 * go on without records. */
static bool origin_on;

/* Is @name in directory @dfd a record (or a half-written one) that a
 * bridge of our uid left?  Only those go: LZCHAN_ORIGIN_DIR may name a
 * directory that holds other files. */
static bool origin_stale(int dfd, const char *name)
{
	static const char magic[] = "lzchan-origin 1 ";
	char head[sizeof(magic) - 1];
	struct stat st;
	bool ours;
	int fd;

	if (name[0] == '.')
		return false;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	ours = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) &&
	       !memcmp(head, magic, sizeof(head));
	close(fd);
	return ours;
}

static void origin_setup(void)
{
	const char *d = origin_dir();
	char parent[PATH_MAX];
	struct dirent *e;
	char *slash;
	DIR *dir;

	if (origin_self_start()) {
		say("origin records off: no /proc/self/stat to date them by");
		return;
	}
	if (mkdir(d, 0755) < 0 && errno != EEXIST) {
		/* Its parent too, once (the default's, outside systemd). */
		if (errno != ENOENT || strlen(d) >= sizeof(parent))
			goto fail;
		strcpy(parent, d);
		slash = strrchr(parent, '/');
		if (!slash || slash == parent)
			goto fail;
		*slash = 0;
		if ((mkdir(parent, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(d, 0755) < 0 && errno != EEXIST))
			goto fail;
	}
	dir = opendir(d);
	if (!dir)
		goto fail;
	while ((e = readdir(dir)))
		if (origin_stale(dirfd(dir), e->d_name))
			unlinkat(dirfd(dir), e->d_name, 0);
	closedir(dir);
	origin_on = true;
	return;
fail:
	say("origin records off: cannot create %s: %s", d, strerror(errno));
}

static void origin_write(struct conn *c, struct istream *s)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	int fd, n, ok;
	char line[400];

	if (!origin_on || (size_t)snprintf(path, sizeof(path), "%s/%s.%u", origin_dir(),
					    s->channel, s->lane) >= sizeof(path))
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	n = snprintf(line, sizeof(line), "lzchan-origin 1 pid=%d start=%llu channel=%s lane=%u "
		     "host=%s uid=%u rpid=%d\n", (int)getpid(), origin_start, s->channel, s->lane,
		     peer_name(c), s->uid, s->pid < 0 ? 0 : s->pid);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	ok = fd >= 0;
	if (ok) {
		ok = write(fd, line, (size_t)n) == n;
		ok = !close(fd) && ok;
	}
	/* Whole, or not there: a reader never sees half a line, nor an
	 * earlier holder's record under this name. */
	if (!ok || rename(tmp, path) < 0) {
		dbg("origin record %s: %s", path, strerror(errno));
		unlink(tmp);
		unlink(path);
		return;
	}
	s->origin = true;
}

static void origin_remove(struct istream *s)
{
	char path[PATH_MAX];

	if (!s->origin)
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.%u", origin_dir(), s->channel,
			     s->lane) < sizeof(path))
		unlink(path);
	s->origin = false;
}

static void istream_free(struct conn *c, struct istream *s)
{
	/* Clean only when the sender closed and all it sent is in the lane:
	 * a queue still holding messages (the connection went, the bridge
	 * stops, the lane failed) loses them, which is no clean close. */
	bool clean = s->clean && !s->q;
	struct istream **pp;
	struct msgbuf *m;

	for (pp = &c->istreams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	while ((m = s->q)) {
		s->q = m->next;
		free(m);
	}
	/* Before the lane goes: a next holder's record is its own. */
	origin_remove(s);
	/* Its lane ends: the receiver drains it, then sees end-of-stream,
	 * and lzchan_end_cause() says CLOSED only when the remote sender
	 * closed; LOST when it died, its stream broke off or the connection
	 * to its host went. */
	if (clean)
		lzchan_close(s->tx);
	else
		lzchan_close_lost(s->tx);
	free(s);
}

/* The stream is over here (@err: why, 0 after its END): tell the peer. */
static void istream_end(struct conn *c, struct istream *s, int err)
{
	if (err) {
		br.ps[c->peer].stream_errors++;
		say("peer %s: stream %u into '%s' ends: %s", peer_name(c), s->id, s->channel,
		    strerror(err));
		conn_send(c, LZBR_ENDED, s->id, 0, (uint64_t)err, NULL, 0);
	}
	istream_free(c, s);
}

static void istream_open(struct conn *c, const struct lzbr_hdr *h, const struct lzbr_open *o)
{
	struct lzchan_geom g;
	struct istream *s;
	int r;

	if (!lzbr_wire_name_ok(o->channel, sizeof(o->channel)) || o->pad ||
	    istream_find(c, h->stream)) {
		conn_fail(c, EPROTO, "a malformed OPEN");
		return;
	}
	if (!lzbr_conf_allowed(&br.conf, c->peer, o->channel)) {
		say("peer %s: refused: channel '%s' is not on its access list", peer_name(c),
		    o->channel);
		conn_send(c, LZBR_REFUSED, h->stream, 0, EACCES, NULL, 0);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		conn_send(c, LZBR_REFUSED, h->stream, 0, ENOMEM, NULL, 0);
		return;
	}
	r = lzchan_open(&s->tx, o->channel, LZCHAN_SENDER, NULL);
	if (!r)
		r = lzchan_geometry(s->tx, &g);
	if (r) {
		say("peer %s: channel '%s': %s", peer_name(c), o->channel, strerror(-r));
		if (s->tx)
			lzchan_close(s->tx);
		free(s);
		conn_send(c, LZBR_REFUSED, h->stream, 0, (uint64_t)-r, NULL, 0);
		return;
	}
	s->id = h->stream;
	memcpy(s->channel, o->channel, sizeof(s->channel));
	s->uid = o->uid;
	s->pid = o->pid;
	s->max_msg = g.max_msg;
	s->expect = 1;
	/* Enough for one message of the largest size, whatever the window. */
	s->window = br.conf.window > LZBR_COST(s->max_msg) ? br.conf.window :
		    LZBR_COST(s->max_msg);
	s->granted = s->window;
	s->qtail = &s->q;
	s->next = c->istreams;
	c->istreams = s;
	{
		unsigned int k = 0;
		struct istream *t;

		for (t = c->istreams; t; t = t->next)
			k++;
		if (k > c->peak_streams)
			c->peak_streams = k;
	}
	s->lane = g.lane;
	origin_write(c, s);
	say("peer %s: uid %u pid %d sends into '%s' (lane %u)", peer_name(c), o->uid, o->pid,
	    o->channel, g.lane);
	br.ps[c->peer].streams++;
	conn_send(c, LZBR_OPENED, s->id, s->max_msg, s->granted, NULL, 0);
}

/* Move queued messages into the local lane while it has room; return
 * credit.  -1: the stream ended. */
static int istream_pump(struct conn *c, struct istream *s)
{
	struct msgbuf *m;
	int r;

	while ((m = s->q)) {
		r = lzchan_send(s->tx, m->data, m->h.len);
		if (r == -EAGAIN) {
			if (!s->stalled)
				br.ps[c->peer].lane_stalls++;
			s->stalled = true;
			break;
		}
		s->stalled = false;
		br.ps[c->peer].recv_msgs++;
		br.ps[c->peer].recv_bytes += m->h.len;
		if (r) {
			istream_end(c, s, -r);
			return -1;
		}
		s->q = m->next;
		if (!s->q)
			s->qtail = &s->q;
		s->qbytes -= m->h.len;
		s->owed += LZBR_COST(m->h.len);
		s->msgs++;
		s->bytes += m->h.len;
		free(m);
		br.work = true;
	}
	/* Credit back in quarters of the window, or whatever is owed once
	 * the queue is empty. */
	if (s->owed && (s->owed >= s->window / 4 || !s->q)) {
		conn_send(c, LZBR_CREDIT, s->id, 0, s->owed, NULL, 0);
		s->granted += s->owed;
		s->owed = 0;
	}
	if (!s->q && s->end_pending) {
		dbg("peer %s: stream %u into '%s' ends after %llu messages", peer_name(c), s->id,
		    s->channel, (unsigned long long)s->msgs);
		istream_end(c, s, 0);
		return -1;
	}
	return 0;
}

static void istream_data(struct conn *c, struct msgbuf *m)
{
	struct istream *s = istream_find(c, m->h.stream);
	uint64_t cost = LZBR_COST(m->h.len);
	int r;

	if (!s || s->end_pending) {
		/* One we refused or ended: its data may still be on the way. */
		free(m);
		return;
	}
	if (cost > s->granted) {
		free(m);
		conn_fail(c, EPROTO, "sent past its credit");
		return;
	}
	s->granted -= cost;
	if (m->h.seq != s->expect || m->h.len > s->max_msg) {
		say("peer %s: stream %u into '%s': %s (seq %llu, expected %llu)", peer_name(c),
		    s->id, s->channel, m->h.len > s->max_msg ? "message too long" :
		    "out of sequence", (unsigned long long)m->h.seq,
		    (unsigned long long)s->expect);
		r = m->h.len > s->max_msg ? EMSGSIZE : EPROTO;
		free(m);
		istream_end(c, s, r);
		return;
	}
	s->expect++;
	m->next = NULL;
	*s->qtail = m;
	s->qtail = &m->next;
	s->qbytes += m->h.len;
	istream_pump(c, s);
}

/*
 * DATAV: its records checked whole first (a peer's frame, authenticated,
 * but no more trusted for that), then each taken as the DATA frame it
 * stands for, seq after seq.
 */
static void istream_datav(struct conn *c, struct msgbuf *m)
{
	const uint8_t *p = m->data, *end = m->data + m->h.len;
	uint64_t i, n = m->h.arg;	/* 2..LZBR_BATCH_MSGS: lzbr_wire_check() */

	for (i = 0; i < n; i++) {
		struct lzbr_rec rec;
		uint64_t size;
		size_t k;

		if ((size_t)(end - p) < sizeof(rec))
			goto bad;
		memcpy(&rec, p, sizeof(rec));
		size = LZBR_REC_SIZE(rec.len);
		if (rec.zero || size > (uint64_t)(end - p))
			goto bad;
		for (k = sizeof(rec) + rec.len; k < size; k++)
			if (p[k])
				goto bad;
		p += size;
	}
	if (p != end)
		goto bad;
	for (i = 0, p = m->data; i < n && !c->err; i++) {
		struct lzbr_rec rec;
		struct msgbuf *one;

		memcpy(&rec, p, sizeof(rec));
		one = malloc(sizeof(*one) + rec.len);
		if (!one) {
			conn_fail(c, ENOMEM, "out of memory");
			break;
		}
		one->h = m->h;
		one->h.type = LZBR_DATA;
		one->h.seq = m->h.seq + i;
		one->h.arg = 0;
		one->h.len = rec.len;
		memcpy(one->data, p + sizeof(rec), rec.len);
		istream_data(c, one);
		p += LZBR_REC_SIZE(rec.len);
	}
	free(m);
	return;
bad:
	free(m);
	conn_error(c, EPROTO, "a DATAV frame whose records do not fill it");
}

static void istream_end_msg(struct conn *c, const struct lzbr_hdr *h)
{
	struct istream *s = istream_find(c, h->stream);

	if (!s)
		return;
	if (h->seq != s->expect - 1) {
		say("peer %s: stream %u into '%s' ended at seq %llu, %llu received: messages lost",
		    peer_name(c), s->id, s->channel, (unsigned long long)h->seq,
		    (unsigned long long)(s->expect - 1));
		istream_end(c, s, EPROTO);
		return;
	}
	if (h->arg == LZBR_CAUSE_LOST)
		say("peer %s: the sender (uid %u pid %d) into '%s' died", peer_name(c), s->uid,
		    s->pid, s->channel);
	s->clean = h->arg == LZBR_CAUSE_CLOSED;
	s->end_pending = true;
	istream_pump(c, s);
}

/* ---------- streams out (initiator) ---------- */

static struct route *route_of_stream(struct conn *c, uint32_t id, struct ostream **os)
{
	int i;
	uint32_t l;

	for (i = 0; i < br.conf.nroutes; i++) {
		struct route *r = &br.routes[i];

		if (r->conn != c || !r->rx)
			continue;
		for (l = 0; l < r->nlanes; l++)
			if (r->lanes[l].id == id && r->lanes[l].state != OS_NONE) {
				*os = &r->lanes[l];
				return r;
			}
	}
	return NULL;
}

/* Credit came back for @bytes delivered there: release the messages it
 * covers (in order: each costs what it took of the credit). */
static void ostream_acked(struct route *r, struct ostream *os, uint64_t bytes)
{
	struct lzchan_msg last;
	bool any = false;

	os->acked += bytes;
	while (os->ua_n && os->ua[os->ua_head].cost <= os->acked) {
		os->acked -= os->ua[os->ua_head].cost;
		os->ua_slots -= os->ua[os->ua_head].slots;
		os->ack_stalled = false;
		last = os->ua[os->ua_head].view;
		any = true;
		os->ua_head = (os->ua_head + 1) % r->slots;
		os->ua_n--;
	}
	if (any)
		lzchan_release(r->rx, &last);	/* and every earlier one */
}

/* The lane's stream is over: what it still holds unacknowledged is left
 * (its views are stale once the lane's sender is gone). */
static void ostream_reset(struct ostream *os)
{
	struct unacked *ua = os->ua;
	bool broken = os->broken;

	memset(os, 0, sizeof(*os));
	os->broken = broken;
	os->ua = ua;
}

static void ostream_reply(struct conn *c, const struct lzbr_hdr *h)
{
	struct ostream *os = NULL;
	struct route *r = route_of_stream(c, h->stream, &os);
	char why[96];

	if (!r)
		return;			/* a stream of a proxy since closed */
	switch (h->type) {
	case LZBR_OPENED:
		if (os->state != OS_OPENING || !h->arg || h->arg > CREDIT_MAX) {
			conn_fail(c, EPROTO, "an unexpected OPENED");
			return;
		}
		os->state = OS_OPEN;
		os->credit = h->arg;
		os->max_msg = h->seq > UINT32_MAX ? UINT32_MAX : (uint32_t)h->seq;
		break;
	case LZBR_CREDIT:
		if (os->state != OS_OPEN || h->arg > CREDIT_MAX || os->credit + h->arg > CREDIT_MAX) {
			conn_fail(c, EPROTO, "an unexpected CREDIT");
			return;
		}
		os->credit += h->arg;
		ostream_acked(r, os, h->arg);
		break;
	case LZBR_REFUSED:
	case LZBR_ENDED:
		br.ps[c->peer].stream_errors++;
		snprintf(why, sizeof(why), "%s '%s' there: %s",
			 h->type == LZBR_REFUSED ? "refused" : "ended by",
			 r->rc->channel, strerror(h->arg < 4096 ? (int)h->arg : EPROTO));
		/* An orderly answer of the far bridge's: not a loss. */
		route_down(r, why, false);
		r->retry_at = now_ns() + PROXY_RETRY_NS;
		return;
	}
	br.work = true;
}

/* The proxy for route @r, now that its peer is up. */
static void route_up(struct route *r, struct conn *c)
{
	struct lzchan_geom g;
	struct epoll_event ev = { .events = EPOLLIN };
	int ret, fd;

	/* A proxy of ours that is there already is an earlier bridge's, left
	 * behind when it was killed: never adopted (what its lanes hold
	 * was sent to a bridge that is gone, some of it forwarded already,
	 * from senders we cannot name), but ended -- its senders get EPIPE
	 * -- and removed.  OWNED: a channel of that name someone else made
	 * is not ours to receive, nor to remove. */
	ret = lzchan_open(&r->rx, r->rc->proxy, LZCHAN_RECEIVER | LZCHAN_OWNED, NULL);
	if (!ret) {
		say("proxy '%s': ended the one an earlier bridge left; its senders' messages "
		    "there are not forwarded (they get EPIPE)", r->rc->proxy);
		lzchan_unlink(r->rc->proxy);
		lzchan_close_lost(r->rx);
		r->rx = NULL;
	} else if (ret != -ENOENT) {
		say("proxy '%s': %s", r->rc->proxy, ret == -EPERM ?
		    "a channel of that name is another user's" : ret == -EBUSY ?
		    "another process receives a channel of that name" : strerror(-ret));
		r->rx = NULL;
		goto fail;
	}
	ret = lzchan_open(&r->rx, r->rc->proxy,
			  LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL | LZCHAN_OWNED, &r->rc->opts);
	if (!ret)
		ret = lzchan_geometry(r->rx, &g);
	if (ret) {
		say("proxy '%s': %s", r->rc->proxy, strerror(-ret));
		goto fail;
	}
	r->nlanes = g.max_senders;
	r->max_msg = g.max_msg;
	r->slots = g.slot_count;
	r->slot_size = g.slot_size;
	r->lanes = calloc(r->nlanes, sizeof(*r->lanes));
	fd = lzchan_event_fd(r->rx);
	ev.data.ptr = r;
	if (!r->lanes || fd < 0 || epoll_ctl(br.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		say("proxy '%s': %s", r->rc->proxy, !r->lanes ? "out of memory" :
		    fd < 0 ? strerror(-fd) : strerror(errno));
		goto fail;
	}
	r->conn = c;
	r->blocked = false;
	r->fd_off = false;
	say("proxy '%s' open: senders there reach '%s' on %s", r->rc->proxy, r->rc->channel,
	    br.conf.peers[r->rc->peer].name);
	return;
fail:
	free(r->lanes);
	r->lanes = NULL;
	if (r->rx) {
		lzchan_close(r->rx);
		lzchan_unlink(r->rc->proxy);
	}
	r->rx = NULL;
	r->retry_at = now_ns() + PROXY_RETRY_NS;
}

/* The proxy goes (its peer went, or refused): its senders get -EPIPE, and
 * the name goes with it until the peer is back.  @why is for the log;
 * @lost: its senders' lzchan_end_cause() says LOST (the far side was cut
 * off), else CLOSED. */
static void route_down(struct route *r, const char *why, bool lost)
{
	uint32_t l;

	if (!r->rx)
		return;
	say("proxy '%s' closed: %s", r->rc->proxy, why);
	lzchan_unlink(r->rc->proxy);	/* first: no new sender finds it */
	for (l = 0; l < r->nlanes; l++) {
		struct ostream *os = &r->lanes[l];

		/* Nothing undelivered is released (os->pend, os->ua): the
		 * senders' lzchan_flush() says -EPIPE for it. */
		/* The peer still holds the lane's stream: end it there (its
		 * sender's last messages are lost with the proxy). */
		if (os->state != OS_NONE && r->conn && r->conn->state == C_UP && !r->conn->err)
			conn_send(r->conn, LZBR_END, os->id, os->seq, LZBR_CAUSE_LOST, NULL, 0);
	}
	if (!r->fd_off)
		epoll_ctl(br.epfd, EPOLL_CTL_DEL, lzchan_event_fd(r->rx), NULL);
	if (lost)
		lzchan_close_lost(r->rx);
	else
		lzchan_close(r->rx);
	r->rx = NULL;
	for (l = 0; l < r->nlanes; l++)
		free(r->lanes[l].ua);
	free(r->lanes);
	r->lanes = NULL;
	r->conn = NULL;
}

/* A record of @len bytes at @off of the batch. */
static void batch_put(uint32_t off, const void *data, uint32_t len)
{
	struct lzbr_rec rec = { .len = len };
	uint8_t *at = br.batch.buf + off;

	memcpy(at, &rec, sizeof(rec));
	memcpy(at + sizeof(rec), data, len);
	memset(at + sizeof(rec) + len, 0, LZBR_REC_SIZE(len) - sizeof(rec) - len);
}

/* The batch empty again: nothing of it counts any more (its length went
 * into INFLIGHT_MAX's check: a lone message's, more than 16 MiB, left
 * there stopped every route for good). */
static void batch_drop(void)
{
	br.batch.n = 0;
	br.batch.len = 0;
}

/* Send what the batch holds on stream @id: one message as DATA (from its
 * view, uncopied), more as one DATAV.  0, or the connection failed. */
static int batch_flush(struct conn *c, uint32_t id)
{
	uint32_t n = br.batch.n, len = br.batch.len;

	if (!n)
		return 0;
	batch_drop();
	if (n == 1)
		return conn_send(c, LZBR_DATA, id, br.batch.seq, 0, br.batch.first,
				 br.batch.first_len);
	return conn_send(c, LZBR_DATAV, id, br.batch.seq, n, br.batch.buf, len);
}

/* Message @seq of stream @id into the batch, sending the batch first when
 * it would not fit.  0, or the connection failed. */
static int batch_add(struct conn *c, uint32_t id, uint64_t seq, const void *data, uint32_t len)
{
	uint64_t size = LZBR_REC_SIZE(len);

	if (br.batch.n && (br.batch.n == LZBR_BATCH_MSGS ||
			   br.batch.len + size > LZBR_BATCH_BYTES) && batch_flush(c, id))
		return -1;
	if (!br.batch.n) {
		br.batch.seq = seq;
		br.batch.first = data;
		br.batch.first_len = len;
		br.batch.len = 0;
	} else {
		/* The first is copied only once a second joins it; both fit
		 * (the check above). */
		if (br.batch.n == 1)
			batch_put(0, br.batch.first, br.batch.first_len);
		batch_put(br.batch.len, data, len);
	}
	br.batch.len += size;	/* > LZBR_BATCH_BYTES only for a lone message */
	br.batch.n++;
	return 0;
}

static bool lane_pump(struct route *r, struct ostream *os, uint32_t l);

/* route_down() from lane_pump(): what the batch holds goes first (they
 * were taken in order and are owed to the far side before the end). */
static void lane_down(struct route *r, struct ostream *os, const char *why, bool lost)
{
	if (!r->conn->err)
		batch_flush(r->conn, os->id);
	batch_drop();
	route_down(r, why, lost);
}

/* Forward what the proxy's lanes hold, as far as credit goes: each lane's
 * run of messages in as few frames as LZBR_BATCH_* allow. */
static void route_pump(struct route *r)
{
	struct conn *c = r->conn;
	uint32_t l;

	r->blocked = false;
	for (l = 0; l < r->nlanes && r->rx; l++) {
		struct ostream *os = &r->lanes[l];
		bool stop = lane_pump(r, os, l);

		/* What the lane gave goes now, before the next lane's or
		 * a later END (a route taken down sent its own already; a
		 * failed connection takes the route down). */
		if (r->rx && !c->err && batch_flush(c, os->id))
			return;
		batch_drop();
		if (stop)
			return;
	}
}

/* route_pump()'s work on lane @l: messages into the batch, OPEN and END
 * as they fall due.  true: stop pumping this route. */
static bool lane_pump(struct route *r, struct ostream *os, uint32_t l)
{
	struct conn *c = r->conn;
	uint32_t k;

	for (;;) {
		if (c->err)
			return true;
		if (c->inflight_bytes + br.batch.len > INFLIGHT_MAX) {
			r->blocked = true;	/* the peer reads slowly */
			return true;
		}
		if (!os->has_pend && !os->eos) {
			int ret = lzchan_peek_lane(r->rx, l, &os->pend);

			if (ret == -EAGAIN || (ret == -EBADMSG && os->broken))
				return false;
			br.work = true;
			if (ret == -EPIPE && os->broken) {
				os->broken = false;	/* its END went already */
				continue;
			}
			if (ret == 0) {
				os->has_pend = true;
			} else if (ret == -EPIPE || ret == -EBADMSG) {
				/* -EPIPE: its sender left; -EBADMSG: its
				 * lane held garbage, abandoned (as lost)
				 * until that sender goes. */
				os->eos = true;
				os->broken = ret == -EBADMSG;
				os->cause = ret == -EPIPE &&
					    lzchan_end_cause(r->rx, l) != LZCHAN_END_LOST ?
					    LZBR_CAUSE_CLOSED : LZBR_CAUSE_LOST;
			} else {
				char why[96];

				snprintf(why, sizeof(why), "lane %u: %s", l, strerror(-ret));
				lane_down(r, os, why, true);
				r->retry_at = now_ns() + PROXY_RETRY_NS;
				return true;
			}
		}
		if (os->state == OS_NONE) {
			struct lzbr_open o = { .pid = -1, .uid = (uint32_t)-1 };

			if (!os->has_pend) {
				os->eos = false;	/* came and went, silent */
				continue;
			}
			if (!os->ua && !(os->ua = calloc(r->slots, sizeof(*os->ua)))) {
				lane_down(r, os, "out of memory", true);
				r->retry_at = now_ns() + PROXY_RETRY_NS;
				return true;
			}
			memcpy(o.channel, r->rc->channel, sizeof(o.channel));
			lzchan_peer(r->rx, l, &o.pid, &o.uid, NULL);
			o.max_msg = r->max_msg;
			os->id = c->next_stream++;
			if (!c->next_stream)
				c->next_stream = 1;
			if (conn_send(c, LZBR_OPEN, os->id, 0, 0, &o, sizeof(o)))
				return true;
			os->state = OS_OPENING;
			os->seq = 0;
			br.ps[c->peer].streams++;
			r->blocked = true;
			return false;
		}
		if (os->state == OS_OPENING) {
			r->blocked = true;
			return false;
		}
		if (os->has_pend) {
			uint64_t cost = LZBR_COST(os->pend.len);

			if (os->pend.len > os->max_msg) {
				lane_down(r, os, "a message longer than the channel there takes", false);
				r->retry_at = now_ns() + PROXY_RETRY_NS;
				return true;
			}
			if (cost > os->credit || os->ua_n == r->slots) {
				if (!os->stalled)
					br.ps[c->peer].credit_stalls++;
				os->stalled = true;
				r->blocked = true;
				return false;
			}
			os->stalled = false;
			if (batch_add(c, os->id, os->seq + 1, os->pend.data, os->pend.len))
				return true;		/* the connection goes; so will the proxy */
			os->credit -= cost;
			os->seq++;
			br.ps[c->peer].sent_msgs++;
			br.ps[c->peer].sent_bytes += os->pend.len;
			k = (os->pend.len + 8 + r->slot_size - 1) / r->slot_size;
			os->ua[(os->ua_head + os->ua_n) % r->slots] =
				(struct unacked){ .view = os->pend, .cost = cost, .slots = k };
			os->ua_n++;
			os->ua_slots += k;
			/* The lane nearly full of what the far end has not
			 * acknowledged: its sender waits on the far side. */
			if (os->ua_slots >= r->slots - r->slots / 8 && !os->ack_stalled) {
				br.ps[c->peer].credit_stalls++;
				os->ack_stalled = true;
			}
			os->has_pend = false;
			continue;
		}
		/* os->eos: the END, after its last message. */
		if (batch_flush(c, os->id) ||
		    conn_send(c, LZBR_END, os->id, os->seq, (uint64_t)os->cause, NULL, 0))
			return true;
		ostream_reset(os);
	}
}

/* A blocked route is not armed; its event fd (level-triggered, and on shm
 * readable while a new sender's connection waits) leaves epoll's set until
 * it is unblocked, or the loop would spin.  Credit, or the timer, wakes it. */
static void route_fd(struct route *r)
{
	struct epoll_event ev = { .events = r->blocked ? 0 : EPOLLIN, .data.ptr = r };

	if (!r->rx || r->fd_off == r->blocked)
		return;
	if (epoll_ctl(br.epfd, EPOLL_CTL_MOD, lzchan_event_fd(r->rx), &ev) == 0)
		r->fd_off = r->blocked;
}

/* ---------- connections ---------- */

static void conn_fail(struct conn *c, int err, const char *why)
{
	if (c->state == C_CLOSING || c->err)
		return;
	c->err = err ? err : EIO;
	if (c->peer >= 0 && c->state != C_UP && err == EACCES)
		br.ps[c->peer].refused++;
	if (!c->initiator && c->state != C_UP)	/* nobody proven: a flood may be */
		say_limited("%s: connection closed before its handshake: %s", c->where, why);
	else
		say("peer %s: connection closed: %s", peer_name(c), why);
}

static void ep_close_done(void *request, ucs_status_t status, void *user_data)
{
	struct conn *c = user_data;

	(void)status;
	c->closed = true;
	ucp_request_free(request);
}

/* Close @c's endpoint (flushed when clean) and everything that rode it. */
static void conn_close(struct conn *c)
{
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_FLAGS,
		.flags = c->force ? UCP_EP_CLOSE_FLAG_FORCE : 0,
		.user_data = c,
	};
	ucs_status_ptr_t req;
	int i;

	for (i = 0; i < br.conf.nroutes; i++)
		if (br.routes[i].conn == c) {
			route_down(&br.routes[i], "its peer's connection closed", true);
			br.routes[i].retry_at = 0;
		}
	while (c->istreams)
		istream_free(c, c->istreams);
	if (c->initiator && c->peer >= 0 && br.out[c->peer] == c) {
		br.out[c->peer] = NULL;
		br.reconnect_at[c->peer] = now_ns() + RECONNECT_NS;
	}
	c->state = C_CLOSING;
	if (!c->ep) {
		c->closed = true;
		return;
	}
	p.cb.send = ep_close_done;
	req = ucp_ep_close_nbx(c->ep, &p);
	if (req == NULL || UCS_PTR_IS_ERR(req))
		c->closed = true;
}

static void conn_error(struct conn *c, int err, const char *why)
{
	conn_send(c, LZBR_ERROR, 0, 0, (uint64_t)err, NULL, 0);
	conn_fail(c, err, why);
}

static void conn_up(struct conn *c)
{
	struct conn *o;
	int i;

	c->state = C_UP;
	c->rx_ok_ns = now_ns();
	br.ps[c->peer].connects++;
	say("peer %s: %s (%s)", peer_name(c), c->initiator ? "connected" : "accepted", c->where);
	if (!c->initiator) {
		/* One connection from a peer: the newest replaces the oldest
		 * (a restarted peer's, or one whose old path is dead). */
		for (o = br.conns; o; o = o->next)
			if (o != c && !o->initiator && o->peer == c->peer && o->state == C_UP &&
			    !o->err) {
				say("peer %s: its newer connection replaces the one from %s",
				    peer_name(c), o->where);
				conn_error(o, ECONNRESET, "replaced by the peer's newer connection");
			}
		return;
	}
	for (i = 0; i < br.conf.nroutes; i++)
		if (br.routes[i].rc->peer == c->peer && !br.routes[i].rx)
			route_up(&br.routes[i], c);
}

/* One received message, authenticated and in order. */
static void conn_handle(struct conn *c, struct msgbuf *m)
{
	bool keep = false;

	switch (m->h.type) {
	case LZBR_WELCOME:
		if (!c->initiator || c->state != C_AUTH_SENT) {
			conn_error(c, EPROTO, "an unexpected WELCOME");
			break;
		}
		conn_up(c);
		break;
	case LZBR_ERROR:
		conn_fail(c, m->h.arg && m->h.arg < 4096 ? (int)m->h.arg : EPROTO,
			  "the peer reported an error");
		break;
	case LZBR_PING:			/* alive: its arrival was the point */
		break;
	default:
		if (c->state != C_UP) {
			conn_error(c, EPROTO, "a stream message before the handshake");
			break;
		}
		if (c->initiator) {
			if (m->h.type == LZBR_OPENED || m->h.type == LZBR_CREDIT ||
			    m->h.type == LZBR_REFUSED || m->h.type == LZBR_ENDED)
				ostream_reply(c, &m->h);
			else
				conn_error(c, EPROTO, "a message only an initiator sends");
			break;
		}
		switch (m->h.type) {
		case LZBR_OPEN:
			istream_open(c, &m->h, (const void *)m->data);
			break;
		case LZBR_DATA:
			istream_data(c, m);
			keep = true;		/* queued, or freed there */
			break;
		case LZBR_DATAV:
			istream_datav(c, m);
			keep = true;		/* freed there */
			break;
		case LZBR_END:
			istream_end_msg(c, &m->h);
			break;
		default:
			conn_error(c, EPROTO, "a message only an acceptor sends");
		}
	}
	if (!keep)
		free(m);
}

/* What the handshake has to send, once the endpoint may send. */
static void conn_handshake(struct conn *c)
{
	struct lzbr_hello hi;

	if (!c->flushed || c->err)
		return;
	if (c->initiator && c->state == C_HELLO_DUE) {
		const struct lzbr_peer_conf *pc = &br.conf.peers[c->peer];

		if (lzbr_hs_hello(&c->hs, &hi, br.conf.sk, br.conf.pk, pc->pk, br.conf.name,
				  pc->name)) {
			conn_fail(c, EINVAL, "its public key is no X25519 key");
			return;
		}
		c->state = C_HELLO_SENT;
		conn_send(c, LZBR_HELLO, 0, 0, 0, &hi, sizeof(hi));
		br.work = true;
		return;
	}
	if (c->refuse_due) {
		bool keyed = c->keyed;

		c->refuse_due = false;
		c->keyed = false;		/* a refusal goes unsealed */
		conn_send(c, LZBR_ERROR, 0, 0, EACCES, NULL, 0);
		c->keyed = keyed;
		br.work = true;
	}
	switch (c->due) {
	case D_NONE:
		return;
	case D_CHALLENGE:
		conn_send(c, LZBR_CHALLENGE, 0, 0, 0, &c->ch_out, sizeof(c->ch_out));
		break;
	case D_AUTH:
		conn_send(c, LZBR_AUTH, 0, 0, 0, &c->au_out, sizeof(c->au_out));
		break;
	case D_WELCOME:
		conn_send(c, LZBR_WELCOME, 0, 0, 0, NULL, 0);
		if (!c->err)
			conn_up(c);
		break;
	}
	if (c->due != D_CHALLENGE)	/* the acceptor checks AUTH with it */
		sodium_memzero(&c->hs, sizeof(c->hs));
	c->due = D_NONE;
	br.work = true;
}

static void conn_step(struct conn *c)
{
	struct msgbuf *m;
	struct istream *s, *next;

	if (c->state == C_CLOSING)
		return;
	conn_handshake(c);
	while (!c->err && (m = c->inq)) {
		c->inq = m->next;
		if (!c->inq)
			c->inq_tail = &c->inq;
		c->inq_bytes -= sizeof(*m) + m->h.len;
		c->msgs_in++;
		c->bytes_in += m->h.len;
		br.work = true;
		conn_handle(c, m);
	}
	for (s = c->istreams; s && !c->err; s = next) {
		next = s->next;
		if (s->q)
			istream_pump(c, s);
	}
	if (!c->err && c->state != C_UP && now_ns() > c->deadline)
		conn_fail(c, ETIMEDOUT, "the handshake did not finish in time");
	if (!c->err && c->state == C_UP) {
		uint64_t now = now_ns();

		if (now - c->rx_ok_ns > SILENT_NS)
			conn_fail(c, ETIMEDOUT, "nothing authenticated from the peer for 10 s (it "
				  "stopped, or its frames no longer open)");
		else if (now - c->tx_ns >= PING_NS)
			conn_send(c, LZBR_PING, 0, 0, 0, NULL, 0);
	}
	if (c->err)
		conn_close(c);
}

static void conn_reap(void)
{
	struct conn **pp = &br.conns, *c;
	struct msgbuf *m;

	while ((c = *pp)) {
		if (c->state == C_CLOSING && c->closed && !c->inflight) {
			*pp = c->next;
			while ((m = c->inq)) {
				c->inq = m->next;
				free(m);
			}
			sodium_memzero(c, sizeof(*c));	/* its keys with it */
			free(c);
			continue;
		}
		pp = &c->next;
	}
}

/* ---------- the status file ---------- */

/* Write the counters (status FILE), whole or not at all: a new file,
 * renamed over the old. */
static void status_write(void)
{
	char tmp[300];
	FILE *f;
	int i;

	br.status_dirty = false;
	br.status_ns = now_ns();
	if (!br.conf.status[0])
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d", br.conf.status, (int)getpid());
	f = fopen(tmp, "we");
	if (!f) {
		say("status %s: %s", tmp, strerror(errno));
		return;
	}
	fprintf(f, "{\"bridge\": \"%s\", \"pid\": %d, \"peers\": [", br.conf.name, (int)getpid());
	for (i = 0; i < br.conf.npeers; i++) {
		const struct peer_stats *p = &br.ps[i];
		bool up = br.out[i] && br.out[i]->state == C_UP;
		struct conn *c;

		for (c = br.conns; c && !up; c = c->next)
			up = !c->initiator && c->peer == i && c->state == C_UP;
		fprintf(f, "%s\n  {\"name\": \"%s\", \"connected\": %s, \"connects\": %llu, "
			"\"refused\": %llu, \"streams\": %llu, \"stream_errors\": %llu, "
			"\"sent\": {\"messages\": %llu, \"bytes\": %llu}, "
			"\"received\": {\"messages\": %llu, \"bytes\": %llu}, "
			"\"credit_stalls\": %llu, \"lane_stalls\": %llu}",
			i ? "," : "", br.conf.peers[i].name, up ? "true" : "false",
			(unsigned long long)p->connects, (unsigned long long)p->refused,
			(unsigned long long)p->streams, (unsigned long long)p->stream_errors,
			(unsigned long long)p->sent_msgs, (unsigned long long)p->sent_bytes,
			(unsigned long long)p->recv_msgs, (unsigned long long)p->recv_bytes,
			(unsigned long long)p->credit_stalls, (unsigned long long)p->lane_stalls);
	}
	fprintf(f, "\n], \"routes\": [");
	for (i = 0; i < br.conf.nroutes; i++)
		fprintf(f, "%s\n  {\"proxy\": \"%s\", \"peer\": \"%s\", \"open\": %s}",
			i ? "," : "", br.conf.routes[i].proxy,
			br.conf.peers[br.conf.routes[i].peer].name, br.routes[i].rx ? "true" : "false");
	fprintf(f, "\n]}\n");
	if (fclose(f) || rename(tmp, br.conf.status)) {
		say("status %s: %s", br.conf.status, strerror(errno));
		unlink(tmp);
	}
}

/* ---------- the loop ---------- */

/* ---------- pinning UCX to the configured network ---------- */

static bool addr_is(const struct sockaddr *ifa, const struct sockaddr_storage *a)
{
	if (!ifa || ifa->sa_family != a->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ifa)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)a)->sin_addr.s_addr;
	return a->ss_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)ifa)->sin6_addr,
		       &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
}

/* The interface that holds address @a, into @out: 0, or -1. */
static int iface_holding(const struct sockaddr_storage *a, char *out, size_t len)
{
	struct ifaddrs *ifs, *i;
	int r = -1;

	if (getifaddrs(&ifs) < 0)
		return -1;
	for (i = ifs; i; i = i->ifa_next)
		if (addr_is(i->ifa_addr, a) && strlen(i->ifa_name) < len) {
			strcpy(out, i->ifa_name);
			r = 0;
			break;
		}
	freeifaddrs(ifs);
	return r;
}

/* The interface the kernel sends to @a through (a UDP socket connected to
 * it, which sends nothing): 0, or -1. */
static int iface_towards(const struct sockaddr_storage *a, socklen_t alen, char *out, size_t len)
{
	struct sockaddr_storage me;
	socklen_t mlen = sizeof(me);
	int fd = socket(a->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = -1;

	if (fd < 0)
		return -1;
	if (!connect(fd, (const struct sockaddr *)a, alen) &&
	    !getsockname(fd, (struct sockaddr *)&me, &mlen))
		r = iface_holding(&me, out, len);
	close(fd);
	return r;
}

/* Add @dev to the comma-separated @list, once. */
static void devices_add(char *list, size_t len, const char *dev)
{
	char hay[300], needle[IF_NAMESIZE + 3];

	snprintf(hay, sizeof(hay), ",%s,", list);
	snprintf(needle, sizeof(needle), ",%s,", dev);
	if (strstr(hay, needle) || strlen(list) + strlen(dev) + 2 > len)
		return;
	if (*list)
		strcat(list, ",");
	strcat(list, dev);
}

/*
 * The interfaces bridge traffic may use: 'device', else the one holding
 * the listen address and those the kernel routes the peers through.
 * "lo" is never among the derived ones.  0, or -1 with the reason said.
 */
static int lzbr_devices(const struct lzbr_conf *c, char *out, size_t len)
{
	char dev[IF_NAMESIZE + 1];
	int i;

	*out = 0;
	if (c->devices[0]) {
		snprintf(out, len, "%s", c->devices);
		return 0;
	}
	if (c->has_listen) {
		char a[80];

		if (iface_holding(&c->listen, dev, sizeof(dev))) {
			addr_str(a, sizeof(a), &c->listen);
			say("listen %s: no interface here has that address", a);
			return -1;
		}
		devices_add(out, len, dev);
	}
	for (i = 0; i < c->npeers; i++) {
		const struct lzbr_peer_conf *p = &c->peers[i];
		char a[80];

		if (!p->has_addr)
			continue;
		if (iface_towards(&p->addr, p->addr_len, dev, sizeof(dev))) {
			addr_str(a, sizeof(a), &p->addr);
			say("peer %s: no route to %s (give 'device IFNAME')", p->name, a);
			return -1;
		}
		if (strcmp(dev, "lo"))
			devices_add(out, len, dev);
	}
	if (!*out) {
		say("no interface for bridge traffic: give 'listen ADDR', a peer's address, or "
		    "'device IFNAME'");
		return -1;
	}
	return 0;
}

/*
 * A port of data-ports that nothing holds, for UCX's own listener: 0, or
 * -1.  UCX binds without SO_REUSEADDR and, when the port it tries is
 * taken, tries another of the range -- for ever if every one is (a
 * bridge restarted in a loop leaves its connections' ports in TIME_WAIT):
 * seen spinning inside ucp_worker_create().  So the bridge finds one
 * first, with a wildcard bind (which conflicts with anything on the port,
 * TIME_WAIT included, so a port it takes UCX can take), and gives UCX
 * that one alone.
 */
static int pick_data_port(unsigned int *port)
{
	unsigned int p;

	for (p = br.conf.data_lo; p <= br.conf.data_hi; p++) {
		struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p) };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

		if (fd < 0)
			return -1;
		ok = !bind(fd, (struct sockaddr *)&in, sizeof(in));
		close(fd);
		if (ok) {
			*port = p;
			return 0;
		}
	}
	return -1;
}

/* Is @dev one of the comma-separated @devices (an RDMA device's ":port"
 * ignored)? */
static bool devices_have(const char *devices, const char *dev)
{
	size_t n = strlen(dev);
	const char *p = devices;

	while (*p) {
		size_t len = strcspn(p, ",");
		size_t name = strcspn(p, ",:");

		if (name > len)
			name = len;
		if (name == n && !strncmp(p, dev, n))
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

/*
 * UCX's listening sockets -- the listen address's, and its own on the data
 * port it was given -- bound to the interface their address is on
 * (SO_BINDTODEVICE).  Linux takes a connection for a local address
 * arriving on any interface (the weak host model): without this, a host
 * on another network of this machine, the underlay of a WireGuard tunnel
 * say, that routes the listen address here reaches UCX's parser although
 * the configuration names only the tunnel.  They are found among the
 * process's fds by what they listen on (a listening socket the bridge
 * inherited is left alone); one on an address that no configured
 * interface holds, or the listen address's not found, stops the bridge.
 * 0, or -1 with the reason said.
 */
static int bind_listeners(const char *devices, unsigned int dport)
{
	unsigned int lport = br.conf.has_listen ? port_of(&br.conf.listen) : 0;
	bool listen_bound = false;
	struct dirent *e;
	int r = 0;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d) {
		say("cannot list /proc/self/fd to find UCX's listeners: %s", strerror(errno));
		return -1;
	}
	while (!r && (e = readdir(d))) {
		struct sockaddr_storage me;
		socklen_t len = sizeof(int), mlen = sizeof(me);
		char dev[IF_NAMESIZE + 1], a[80];
		int fd, on = 0, proto = 0;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		if (fd == dirfd(d) ||
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) || !on ||
		    (len = sizeof(int), getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len)) ||
		    proto != IPPROTO_TCP || getsockname(fd, (struct sockaddr *)&me, &mlen) ||
		    (me.ss_family != AF_INET && me.ss_family != AF_INET6) ||
		    (port_of(&me) != dport && port_of(&me) != lport))
			continue;
		addr_str(a, sizeof(a), &me);
		if (iface_holding(&me, dev, sizeof(dev)) || !devices_have(devices, dev)) {
			say("UCX listens on %s, which no configured interface (%s) holds", a,
			    devices);
			r = -1;
		} else if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, strlen(dev) + 1)) {
			say("cannot bind UCX's listener on %s to %s: %s", a, dev, strerror(errno));
			r = -1;
		} else {
			dbg("UCX's listener on %s takes connections from %s only", a, dev);
			listen_bound |= lport && port_of(&me) == lport &&
					addr_is((const struct sockaddr *)&me, &br.conf.listen);
		}
	}
	closedir(d);
	if (!r && br.conf.has_listen && !listen_bound) {
		char a[80];

		addr_str(a, sizeof(a), &br.conf.listen);
		say("UCX's listener on %s not found, so not bound to its interface", a);
		r = -1;
	}
	return r;
}

/* poll-us, or its default: 50 us where the bridge can have a CPU to
 * itself (4 or more it may run on), none where polling takes the CPU a
 * sender or receiver needs (measured on 2 CPUs: performance page). */
static int poll_us(const struct lzbr_conf *c)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t cpus;

	if (c->poll_us >= 0)
		return c->poll_us;
	/* The CPUs it may run on (a container's, taskset's), not the host's. */
	if (!sched_getaffinity(0, sizeof(cpus), &cpus))
		n = CPU_COUNT(&cpus);
	return n >= 4 ? 50 : 0;
}

/* Set UCX variable @name (before UCX reads them), saying when it replaces
 * the environment's. */
static void ucx_pin(const char *name, const char *value)
{
	const char *was = getenv(name);

	if (was && strcmp(was, value))
		say("%s=%s from the environment replaced by %s (the configuration decides)", name,
		    was, value);
	setenv(name, value, 1);
}

static int setup(void)
{
	ucp_params_t up = {
		.field_mask = UCP_PARAM_FIELD_FEATURES,
		.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
	};
	ucp_worker_params_t wp = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucp_am_handler_param_t ap = {
		.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
			      UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
		.id = LZBR_AM_ID,
		.flags = UCP_AM_FLAG_WHOLE_MSG,
		.cb = am_recv,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	ucp_config_t *cfg;
	ucs_status_t st;
	sigset_t sigs;
	int i;

	char devices[256], port[32];
	unsigned int dport = 0;

	/* First, before UCX starts any thread: every thread of this process
	 * then blocks them too, and they reach only the signalfd. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* UCX on the configured network only: its transports, its
	 * interfaces, its own listener on one known port; and every frame
	 * whole in one active message (no rendezvous), so that it is
	 * authenticated before anything is kept of it. */
	if (lzbr_devices(&br.conf, devices, sizeof(devices)))
		return -1;
	if (pick_data_port(&dport)) {
		say("no free port in data-ports %u-%u (an earlier run's connections in TIME_WAIT "
		    "hold them for a minute): wait, or give a wider range", br.conf.data_lo,
		    br.conf.data_hi);
		return -1;
	}
	snprintf(port, sizeof(port), "%u-%u", dport, dport);
	ucx_pin("UCX_TLS", br.conf.transports);
	ucx_pin("UCX_NET_DEVICES", devices);
	ucx_pin("UCX_TCP_PORT_RANGE", port);
	ucx_pin("UCX_RNDV_THRESH", "inf");
	dbg("UCX: transports %s, devices %s, its listener on a port in %s", br.conf.transports,
	    devices, port);
	st = ucp_config_read(NULL, NULL, &cfg);
	/* A bridge restarted must listen again at once, whatever its last
	 * connections left in TIME_WAIT (unless UCX_CM_REUSEADDR says). */
	if (st == UCS_OK && !getenv("UCX_CM_REUSEADDR") && !getenv("UCX_TCP_CM_REUSEADDR"))
		st = ucp_config_modify(cfg, "CM_REUSEADDR", "y");
	if (st == UCS_OK) {
		st = ucp_init(&up, cfg, &br.ctx);
		ucp_config_release(cfg);
	}
	if (st == UCS_OK)
		st = ucp_worker_create(br.ctx, &wp, &br.worker);
	if (st == UCS_OK)
		st = ucp_worker_get_efd(br.worker, &br.efd);
	if (st == UCS_OK)
		st = ucp_worker_set_am_recv_handler(br.worker, &ap);
	if (st != UCS_OK) {
		say("UCX: %s", ucs_status_string(st));
		return -1;
	}
	if (br.conf.has_listen) {
		ucp_listener_params_t lp = {
			.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
				      UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
			.sockaddr = { .addr = (const struct sockaddr *)&br.conf.listen,
				      .addrlen = br.conf.listen_len },
			.conn_handler = { .cb = conn_request },
		};

		st = ucp_listener_create(br.worker, &lp, &br.listener);
		if (st != UCS_OK) {
			say("cannot listen: %s", ucs_status_string(st));
			return -1;
		}
	}
	if (bind_listeners(devices, dport))
		return -1;
	br.sigfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	br.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (br.sigfd < 0 || br.epfd < 0 ||
	    epoll_ctl(br.epfd, EPOLL_CTL_ADD, br.efd, &ev) < 0 ||
	    (ev.data.ptr = &br.sigfd, epoll_ctl(br.epfd, EPOLL_CTL_ADD, br.sigfd, &ev)) < 0) {
		say("epoll: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < br.conf.nroutes; i++)
		br.routes[i].rc = &br.conf.routes[i];
	return 0;
}

static void step(void)
{
	struct conn *c, *next;
	uint64_t now = now_ns();
	int i;

	for (i = 0; i < br.conf.npeers; i++) {
		bool wanted = false;
		int k;

		for (k = 0; k < br.conf.nroutes; k++)
			wanted |= br.conf.routes[k].peer == i;
		if (wanted && !br.out[i] && now >= br.reconnect_at[i] && !br.stop)
			conn_connect(i);
	}
	for (c = br.conns; c; c = next) {
		next = c->next;
		conn_step(c);
	}
	for (i = 0; i < br.conf.nroutes; i++) {
		struct route *r = &br.routes[i];
		struct conn *up = br.out[r->rc->peer];

		if (!r->rx && up && up->state == C_UP && now >= r->retry_at && !br.stop)
			route_up(r, up);
		if (r->rx) {
			route_pump(r);
			route_fd(r);
		}
	}
	conn_reap();
}

/* How long the loop may sleep (ms; -1: until an event). */
static int sleep_ms(void)
{
	uint64_t now = now_ns(), next = UINT64_MAX;
	struct conn *c;
	struct istream *s;
	int i;

	for (c = br.conns; c; c = c->next) {
		if (c->state != C_UP && c->state != C_CLOSING && c->deadline < next)
			next = c->deadline;
		if (c->state == C_UP && c->tx_ns + PING_NS < next)
			next = c->tx_ns + PING_NS;
		if (c->state == C_UP && c->rx_ok_ns + SILENT_NS < next)
			next = c->rx_ok_ns + SILENT_NS;
		for (s = c->istreams; s; s = s->next)
			if (s->q)
				return QUEUE_RETRY_MS;
	}
	/* Timers that are due count too (0 ms): one that fell due between
	 * step()'s look and this one was left out, and the loop slept for
	 * ever -- a route whose first connect failed never came up (seen
	 * with two bridges routing to each other, started together). */
	for (i = 0; i < br.conf.nroutes; i++) {
		const struct route *r = &br.routes[i];
		const struct conn *up = br.out[r->rc->peer];

		if (r->rx && r->blocked)
			return BLOCKED_MS;
		if (!r->rx && up && up->state == C_UP && r->retry_at < next)
			next = r->retry_at;
		if (!br.out[r->rc->peer] && br.reconnect_at[r->rc->peer] < next)
			next = br.reconnect_at[r->rc->peer];	/* a peer routes go to */
	}
	if (br.status_dirty && br.status_ns + STATUS_EVERY_NS < next)
		next = br.status_ns + STATUS_EVERY_NS;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now) / 1000000 + 1);
}

static bool all_closed(void)
{
	return !br.conns;
}

/* SIGTERM or SIGINT, through the signalfd (non-blocking): stop. */
static void read_signals(void)
{
	struct signalfd_siginfo si;
	bool was = br.stop;

	while (read(br.sigfd, &si, sizeof(si)) == sizeof(si))
		br.stop = true;
	if (br.stop && !was)
		say("stopping");
}

static int loop(void)
{
	struct epoll_event evs[16];
	uint64_t stop_deadline = 0;
	int i, n, r;

	for (;;) {
		br.work = false;
		while (ucp_worker_progress(br.worker))
			br.work = true;
		step();
		if (br.work) {
			br.status_dirty = true;
			br.work_ns = now_ns();
		}
		if (br.status_dirty && now_ns() - br.status_ns >= STATUS_EVERY_NS)
			status_write();
		if (br.stop) {
			struct conn *c;

			if (!stop_deadline) {
				for (i = 0; i < br.conf.nroutes; i++)
					route_down(&br.routes[i], "the bridge stops", false);
				for (c = br.conns; c; c = c->next)
					if (c->state != C_CLOSING)
						conn_close(c);
				stop_deadline = now_ns() + 2000000000ULL;
			}
			if (all_closed() || now_ns() > stop_deadline)
				return 0;
		}
		if (br.work)
			continue;
		/* poll-us: a frame or message that follows soon is taken
		 * without the wakeup's cost (a sleep, a wake across CPUs);
		 * bounded, as the loop then arms and sleeps. */
		if (br.poll_ns && !br.stop && now_ns() - br.work_ns < br.poll_ns) {
			read_signals();	/* a loop that never sleeps still hears them */
			continue;
		}
		if (ucp_worker_arm(br.worker) == UCS_ERR_BUSY)
			continue;
		for (i = 0; i < br.conf.nroutes; i++) {
			struct route *rt = &br.routes[i];

			if (rt->rx && !rt->blocked && (r = lzchan_arm(rt->rx)) < 0) {
				if (r != -EAGAIN) {
					char why[96];

					snprintf(why, sizeof(why), "cannot wait for it: %s",
						 strerror(-r));
					route_down(rt, why, true);
					rt->retry_at = now_ns() + PROXY_RETRY_NS;
				}
				br.work = true;
			}
		}
		if (br.work)
			continue;
		n = epoll_wait(br.epfd, evs, 16, br.stop ? 10 : sleep_ms());
		for (i = 0; i < n; i++)
			if (evs[i].data.ptr == &br.sigfd)
				read_signals();
	}
}

/* --genkey, --pubkey: as wg(8) does, base64 on one line. */
static int key_tool(bool gen)
{
	uint8_t sk[LZBR_KEY_SIZE], pk[LZBR_KEY_SIZE];
	char line[128], out[64];
	size_t n;

	if (gen) {
		randombytes_buf(sk, sizeof(sk));
		lzbr_key_format(out, sizeof(out), sk);
	} else {
		if (!fgets(line, sizeof(line), stdin)) {
			say("--pubkey: no private key on standard input");
			return 2;
		}
		n = strcspn(line, " \t\r\n");
		line[n] = 0;
		if (lzbr_key_parse(line, sk) || lzbr_key_public(pk, sk)) {
			say("--pubkey: not a private key (base64, as --genkey writes)");
			sodium_memzero(line, sizeof(line));
			sodium_memzero(sk, sizeof(sk));
			return 2;
		}
		sodium_memzero(line, sizeof(line));
		lzbr_key_format(out, sizeof(out), pk);
	}
	sodium_memzero(sk, sizeof(sk));
	puts(out);
	sodium_memzero(out, sizeof(out));
	return fflush(stdout) ? 1 : 0;
}

/* Is @dev a WireGuard interface (its uevent says DEVTYPE=wireguard)? */
static bool dev_wireguard(const char *dev)
{
	char path[128], line[128];
	bool wg = false;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/uevent", dev);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		wg |= !strcmp(line, "DEVTYPE=wireguard\n");
	fclose(f);
	return wg;
}

/*
 * --check: the configuration read, and what the bridge would expose.
 * Bridge traffic on an interface that is not WireGuard's reaches UCX from
 * anyone who can reach that interface (UCX is not hardened against them:
 * lzchan-bridged(8), "Security"): a warning unless 'fabric trusted'.
 */
static int check_conf(const char *config)
{
	char devices[256], *dev, *save;

	printf("%s: bridge '%s', %d peers, %d routes, %d access entries\n", config,
	       br.conf.name, br.conf.npeers, br.conf.nroutes, br.conf.nallows);
	if (lzbr_devices(&br.conf, devices, sizeof(devices)))
		return 2;
	printf("%s: UCX on %s over %s; its own listener on a port in %u-%u\n", config, devices,
	       br.conf.transports, br.conf.data_lo, br.conf.data_hi);
	printf("%s: polls %d us after work before it sleeps\n", config, poll_us(&br.conf));
	for (dev = strtok_r(devices, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(dev, ':');

		if (colon)
			*colon = 0;	/* an RDMA device's port */
		if (dev_wireguard(dev) || br.conf.trusted)
			continue;
		printf("%s: warning: %s is not a WireGuard interface: any host that reaches it "
		       "reaches UCX, which a hostile host can crash; run bridge traffic over "
		       "WireGuard, or say 'fabric trusted' if only trusted hosts reach it\n",
		       config, dev);
	}
	return 0;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bridged [-v] [-c CONFIG]\n"
		"       lzchan-bridged --check [-c CONFIG]\n"
		"       lzchan-bridged --status [-c CONFIG]\n"
		"       lzchan-bridged --genkey > PRIVATE    (then chmod 600 PRIVATE)\n"
		"       lzchan-bridged --pubkey < PRIVATE\n"
		"Carries lzchan channels to and from other hosts over UCX (lzchan-bridged(8)).\n"
		"  -c, --config FILE   the configuration (default /etc/lzchan/bridged.conf)\n"
		"  --check             read the configuration, say what is wrong or unsafe, exit\n"
		"  --status            print the running bridge's counters (JSON; 'status FILE')\n"
		"  --genkey            print a new private key (base64)\n"
		"  --pubkey            print the public key of the private key on stdin\n"
		"  -v, --verbose       say more\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'C' },
		{ "status", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "genkey", no_argument, NULL, 'G' },
		{ "pubkey", no_argument, NULL, 'P' },
		{ 0 }
	};
	bool genkey = false, pubkey = false;
	const char *config = "/etc/lzchan/bridged.conf";
	bool check = false, status = false;
	char err[512];
	int c, i, ret;

	while ((c = getopt_long(argc, argv, "c:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'C':
			check = true;
			break;
		case 'S':
			status = true;
			break;
		case 'G':
			genkey = true;
			break;
		case 'P':
			pubkey = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (sodium_init() < 0) {
		say("libsodium failed to initialise");
		return 1;
	}
	if (genkey || pubkey)
		return key_tool(genkey);
	if (lzbr_conf_load(&br.conf, config, err, sizeof(err))) {
		say("%s", err);
		return 2;
	}
	if (status) {
		char buf[4096];
		size_t n;
		FILE *f;

		if (!br.conf.status[0]) {
			say("%s: no 'status FILE': the bridge keeps no counters to show", config);
			return 1;
		}
		f = fopen(br.conf.status, "re");
		if (!f) {
			say("%s: %s (is the bridge running?)", br.conf.status, strerror(errno));
			return 1;
		}
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, stdout);
		fclose(f);
		return 0;
	}
	if (check)
		return check_conf(config);
	if (setup())
		return 1;
	br.poll_ns = (uint64_t)poll_us(&br.conf) * 1000;
	dbg("polling %d us after work before sleeping", poll_us(&br.conf));
	origin_setup();
	say("bridge '%s' up%s", br.conf.name, br.conf.has_listen ? ", listening" : "");
	status_write();
	ret = loop();
	for (i = 0; i < br.conf.nroutes; i++)
		route_down(&br.routes[i], "the bridge stops", false);
	status_write();
	if (br.listener)
		ucp_listener_destroy(br.listener);
	ucp_worker_destroy(br.worker);
	ucp_cleanup(br.ctx);
	return ret;
}
