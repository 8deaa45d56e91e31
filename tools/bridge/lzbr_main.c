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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <ucp/api/ucp.h>

#include "lzbr.h"

#define HANDSHAKE_NS		5000000000ULL	/* a peer that says nothing goes */
#define RECONNECT_NS		1000000000ULL
#define PROXY_RETRY_NS		1000000000ULL
#define QUEUE_RETRY_MS		1		/* a full local lane: look again */
#define BLOCKED_MS		10		/* a proxy waiting for credit */
#define INQ_SLACK		(1U << 20)	/* received, not yet processed */
#define HANDSHAKE_INQ		4096		/* ... before the handshake */
#define MAX_HALF_OPEN		64		/* connections not yet through it */
#define INFLIGHT_MAX		(16U << 20)	/* bytes UCX holds for one peer */
#define CREDIT_MAX		(1ULL << 30)	/* the most credit we believe */
#define STATUS_EVERY_NS		1000000000ULL	/* the status file, at most */

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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A message as received (or queued for a local lane): header and payload. */
struct msgbuf {
	struct msgbuf *next;
	struct lzbr_hdr h;
	bool pending;			/* rendezvous data still arriving */
	bool failed;			/* ... and it failed */
	struct conn *conn;
	uint8_t data[];
};

/* A message being sent: kept until UCX is done with it. */
struct sendbuf {
	struct conn *conn;
	struct lzbr_hdr h;
	uint8_t data[];
};

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
	uint8_t nonce[LZBR_NONCE_SIZE], their_nonce[LZBR_NONCE_SIZE];
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
};

struct route {
	const struct lzbr_route_conf *rc;
	struct lzchan *rx;		/* the proxy, while its peer is up */
	struct conn *conn;
	struct ostream *lanes;
	uint32_t nlanes;
	uint32_t max_msg;		/* the proxy's */
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
	uint64_t credit_stalls;		/* a lane of ours waited for its credit */
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
} br;

static void conn_fail(struct conn *c, int err, const char *why);
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

static int conn_send(struct conn *c, uint8_t type, uint32_t stream, uint64_t seq, uint64_t arg,
		     const void *data, uint32_t len)
{
	struct sendbuf *sb;
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_FLAGS,
		.flags = UCP_AM_SEND_FLAG_REPLY,
	};
	ucs_status_ptr_t req;

	if (c->state == C_CLOSING)
		return -EPIPE;
	sb = malloc(sizeof(*sb) + len);
	if (!sb) {
		conn_fail(c, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	sb->conn = c;
	sb->h = (struct lzbr_hdr){
		.magic = LZBR_MAGIC, .version = LZBR_VERSION, .type = type,
		.stream = stream, .seq = seq, .arg = arg, .len = len,
	};
	if (len)
		memcpy(sb->data, data, len);
	p.cb.send = send_done;
	p.user_data = sb;
	req = ucp_am_send_nbx(c->ep, LZBR_AM_ID, &sb->h, sizeof(sb->h), sb->data, len, &p);
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

static void rndv_done(void *request, ucs_status_t status, size_t length, void *user_data)
{
	struct msgbuf *m = user_data;

	(void)length;
	m->pending = false;
	m->failed = status != UCS_OK;
	ucp_request_free(request);
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

static ucs_status_t am_recv(void *arg, const void *header, size_t header_length, void *data,
			    size_t length, const ucp_am_recv_param_t *param)
{
	struct conn *c = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ?
			 conn_of_ep(param->reply_ep) : NULL;
	struct msgbuf *m;
	int r;

	(void)arg;
	if (!c)
		return UCS_OK;		/* a connection being closed: dropped */
	r = lzbr_wire_check(header, header_length, length, LZCHAN_MSG_MAX);
	if (r) {
		conn_fail(c, -r, "a malformed message");
		return UCS_OK;
	}
	if (c->state != C_UP && ((const struct lzbr_hdr *)header)->type > LZBR_WELCOME &&
	    ((const struct lzbr_hdr *)header)->type != LZBR_ERROR) {
		conn_fail(c, EPROTO, "a stream message before the handshake");
		return UCS_OK;
	}
	if (c->inq_bytes + sizeof(*m) + length > inq_limit(c)) {
		conn_fail(c, EPROTO, "sent past its credit");
		return UCS_OK;
	}
	m = malloc(sizeof(*m) + length);
	if (!m) {
		conn_fail(c, ENOMEM, "out of memory");
		return UCS_OK;
	}
	memcpy(&m->h, header, sizeof(m->h));
	m->pending = m->failed = false;
	if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
		ucp_request_param_t p = {
			.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
			.user_data = m,
		};
		ucs_status_ptr_t req;

		p.cb.recv_am = rndv_done;
		m->pending = true;
		req = ucp_am_recv_data_nbx(br.worker, data, m->data, length, &p);
		if (req == NULL) {
			m->pending = false;
		} else if (UCS_PTR_IS_ERR(req)) {
			free(m);
			conn_fail(c, EIO, ucs_status_string(UCS_PTR_STATUS(req)));
			return UCS_OK;
		}
	} else if (length) {
		memcpy(m->data, data, length);
	}
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
	c->deadline = now_ns() + HANDSHAKE_NS;
	randombytes_buf(c->nonce, sizeof(c->nonce));
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

static void conn_request(ucp_conn_request_h req, void *arg)
{
	struct conn *c = conn_new(false, -1);
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
			      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
		.conn_request = req,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
	};
	ucs_status_t st;

	struct conn *o;
	unsigned int half = 0;

	(void)arg;
	for (o = br.conns; o; o = o->next)
		half += !o->initiator && o->state != C_UP && o->state != C_CLOSING;
	if (!c || half > MAX_HALF_OPEN) {
		if (c)
			c->state = C_CLOSING, c->closed = true;
		ucp_listener_reject(br.listener, req);
		return;
	}
	ep.err_handler.cb = ep_error;
	ep.err_handler.arg = c;
	c->state = C_AWAIT_HELLO;
	st = ucp_ep_create(br.worker, &ep, &c->ep);
	if (st != UCS_OK) {
		c->ep = NULL;
		conn_fail(c, ECONNABORTED, ucs_status_string(st));
		return;
	}
	dbg("a peer connects");
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

	/* OWNED: a channel of that name someone else made is not ours to
	 * receive (nor to remove later). */
	ret = lzchan_open(&r->rx, r->rc->proxy, LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_OWNED,
			  &r->rc->opts);
	if (!ret)
		ret = lzchan_geometry(r->rx, &g);
	if (ret) {
		say("proxy '%s': %s", r->rc->proxy, strerror(-ret));
		goto fail;
	}
	r->nlanes = g.max_senders;
	r->max_msg = g.max_msg;
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

		if (os->has_pend)
			lzchan_release(r->rx, &os->pend);
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
	free(r->lanes);
	r->lanes = NULL;
	r->conn = NULL;
}

/* Forward what the proxy's lanes hold, as far as credit goes. */
static void route_pump(struct route *r)
{
	struct conn *c = r->conn;
	uint32_t l;

	r->blocked = false;
	for (l = 0; l < r->nlanes && r->rx; l++) {
		struct ostream *os = &r->lanes[l];

		for (;;) {
			if (c->err)
				return;
			if (c->inflight_bytes > INFLIGHT_MAX) {
				r->blocked = true;	/* the peer reads slowly */
				return;
			}
			if (!os->has_pend && !os->eos) {
				int ret = lzchan_peek_lane(r->rx, l, &os->pend);

				if (ret == -EAGAIN || (ret == -EBADMSG && os->broken))
					break;
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
					route_down(r, why, true);
					r->retry_at = now_ns() + PROXY_RETRY_NS;
					return;
				}
			}
			if (os->state == OS_NONE) {
				struct lzbr_open o = { .pid = -1, .uid = (uint32_t)-1 };

				if (!os->has_pend) {
					os->eos = false;	/* came and went, silent */
					continue;
				}
				memcpy(o.channel, r->rc->channel, sizeof(o.channel));
				lzchan_peer(r->rx, l, &o.pid, &o.uid, NULL);
				o.max_msg = r->max_msg;
				os->id = c->next_stream++;
				if (!c->next_stream)
					c->next_stream = 1;
				if (conn_send(c, LZBR_OPEN, os->id, 0, 0, &o, sizeof(o)))
					return;
				os->state = OS_OPENING;
				os->seq = 0;
				br.ps[c->peer].streams++;
				r->blocked = true;
				break;
			}
			if (os->state == OS_OPENING) {
				r->blocked = true;
				break;
			}
			if (os->has_pend) {
				uint64_t cost = LZBR_COST(os->pend.len);

				if (os->pend.len > os->max_msg) {
					route_down(r, "a message longer than the channel there takes", false);
					r->retry_at = now_ns() + PROXY_RETRY_NS;
					return;
				}
				if (cost > os->credit) {
					if (!os->stalled)
						br.ps[c->peer].credit_stalls++;
					os->stalled = true;
					r->blocked = true;
					break;
				}
				os->stalled = false;
				if (conn_send(c, LZBR_DATA, os->id, os->seq + 1, 0, os->pend.data,
					      os->pend.len))
					return;		/* the connection goes; so will the proxy */
				os->credit -= cost;
				os->seq++;
				br.ps[c->peer].sent_msgs++;
				br.ps[c->peer].sent_bytes += os->pend.len;
				lzchan_release(r->rx, &os->pend);
				os->has_pend = false;
				continue;
			}
			/* os->eos: the END, after its last message. */
			if (conn_send(c, LZBR_END, os->id, os->seq, (uint64_t)os->cause, NULL, 0))
				return;
			{
				bool broken = os->broken;

				memset(os, 0, sizeof(*os));
				os->broken = broken;
			}
		}
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
	int i;

	c->state = C_UP;
	br.ps[c->peer].connects++;
	say("peer %s: %s", peer_name(c), c->initiator ? "connected" : "accepted");
	if (!c->initiator)
		return;
	for (i = 0; i < br.conf.nroutes; i++)
		if (br.routes[i].rc->peer == c->peer && !br.routes[i].rx)
			route_up(&br.routes[i], c);
}

/* One received message, in order. */
static void conn_handle(struct conn *c, struct msgbuf *m)
{
	const uint8_t *key;
	uint8_t mac[LZBR_MAC_SIZE];
	bool keep = false;

	switch (m->h.type) {
	case LZBR_HELLO: {
		const struct lzbr_hello *hi = (const void *)m->data;
		struct lzbr_challenge ch;

		memset(&ch, 0, sizeof(ch));

		if (c->initiator || c->state != C_AWAIT_HELLO ||
		    !lzbr_wire_name_ok(hi->name, sizeof(hi->name))) {
			conn_error(c, EPROTO, "an unexpected HELLO");
			break;
		}
		c->peer = lzbr_conf_peer(&br.conf, hi->name);
		key = lzbr_conf_key(&br.conf, c->peer);
		if (c->peer < 0 || !key) {
			say("a bridge calling itself '%s' is not a configured peer", hi->name);
			c->peer = -1;
			conn_error(c, EACCES, "refused");
			break;
		}
		memcpy(c->their_nonce, hi->nonce, sizeof(c->their_nonce));
		memcpy(ch.nonce, c->nonce, sizeof(ch.nonce));
		memcpy(ch.name, br.conf.name, sizeof(ch.name));
		lzbr_wire_mac(ch.mac, key, 'A', c->their_nonce, c->nonce, hi->name, br.conf.name);
		c->state = C_CHALLENGED;
		conn_send(c, LZBR_CHALLENGE, 0, 0, 0, &ch, sizeof(ch));
		break;
	}
	case LZBR_CHALLENGE: {
		const struct lzbr_challenge *ch = (const void *)m->data;
		struct lzbr_auth au;

		if (!c->initiator || c->state != C_HELLO_SENT) {
			conn_error(c, EPROTO, "an unexpected CHALLENGE");
			break;
		}
		key = lzbr_conf_key(&br.conf, c->peer);
		lzbr_wire_mac(mac, key, 'A', c->nonce, ch->nonce, br.conf.name,
		       br.conf.peers[c->peer].name);
		if (memcmp(ch->name, br.conf.peers[c->peer].name, LZBR_NAME_SIZE) ||
		    crypto_verify_32(mac, ch->mac)) {
			conn_error(c, EACCES, "the peer could not prove it holds the key "
				   "(or is not who it should be)");
			break;
		}
		lzbr_wire_mac(au.mac, key, 'I', c->nonce, ch->nonce, br.conf.name,
		       br.conf.peers[c->peer].name);
		c->state = C_AUTH_SENT;
		conn_send(c, LZBR_AUTH, 0, 0, 0, &au, sizeof(au));
		break;
	}
	case LZBR_AUTH: {
		const struct lzbr_auth *au = (const void *)m->data;

		if (c->initiator || c->state != C_CHALLENGED) {
			conn_error(c, EPROTO, "an unexpected AUTH");
			break;
		}
		lzbr_wire_mac(mac, lzbr_conf_key(&br.conf, c->peer), 'I', c->their_nonce, c->nonce,
		       br.conf.peers[c->peer].name, br.conf.name);
		if (crypto_verify_32(mac, au->mac)) {
			say("peer %s: wrong key", peer_name(c));
			conn_error(c, EACCES, "refused: wrong key");
			break;
		}
		conn_send(c, LZBR_WELCOME, 0, 0, 0, NULL, 0);
		conn_up(c);
		break;
	}
	case LZBR_WELCOME:
		if (!c->initiator || c->state != C_AUTH_SENT) {
			conn_error(c, EPROTO, "an unexpected WELCOME");
			break;
		}
		conn_up(c);
		break;
	case LZBR_ERROR:
		conn_fail(c, m->h.arg && m->h.arg < 4096 ? (int)m->h.arg : EPROTO,
			  m->h.arg == EACCES ? "the peer refused us (wrong key, or not its peer)" :
			  "the peer reported an error");
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

static void conn_step(struct conn *c)
{
	struct msgbuf *m;
	struct istream *s, *next;

	if (c->state == C_CLOSING)
		return;
	if (c->initiator && c->state == C_HELLO_DUE && c->flushed && !c->err) {
		struct lzbr_hello hi;

		memcpy(hi.nonce, c->nonce, sizeof(hi.nonce));
		memcpy(hi.name, br.conf.name, sizeof(hi.name));
		c->state = C_HELLO_SENT;
		conn_send(c, LZBR_HELLO, 0, 0, 0, &hi, sizeof(hi));
		br.work = true;
	}
	/* The acceptor answers only once its first flush is done. */
	while (!c->err && (c->initiator || c->flushed) && (m = c->inq) && !m->pending) {
		c->inq = m->next;
		if (!c->inq)
			c->inq_tail = &c->inq;
		c->inq_bytes -= sizeof(*m) + m->h.len;
		c->msgs_in++;
		c->bytes_in += m->h.len;
		br.work = true;
		if (m->failed) {
			free(m);
			conn_fail(c, EIO, "a message's data did not arrive");
			break;
		}
		conn_handle(c, m);
	}
	for (s = c->istreams; s && !c->err; s = next) {
		next = s->next;
		if (s->q)
			istream_pump(c, s);
	}
	if (!c->err && c->state != C_UP && now_ns() > c->deadline)
		conn_fail(c, ETIMEDOUT, "the handshake did not finish in time");
	if (c->err)
		conn_close(c);
}

static void conn_reap(void)
{
	struct conn **pp = &br.conns, *c;
	struct msgbuf *m;

	while ((c = *pp)) {
		bool pending = false;

		for (m = c->inq; m; m = m->next)
			pending |= m->pending;
		if (c->state == C_CLOSING && c->closed && !c->inflight && !pending) {
			*pp = c->next;
			while ((m = c->inq)) {
				c->inq = m->next;
				free(m);
			}
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
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
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
		for (s = c->istreams; s; s = s->next)
			if (s->q)
				return QUEUE_RETRY_MS;
	}
	for (i = 0; i < br.conf.nroutes; i++) {
		if (br.routes[i].rx && br.routes[i].blocked)
			return BLOCKED_MS;
		if (!br.routes[i].rx && br.routes[i].retry_at > now && br.routes[i].retry_at < next)
			next = br.routes[i].retry_at;
	}
	for (i = 0; i < br.conf.npeers; i++)
		if (!br.out[i] && br.reconnect_at[i] > now && br.reconnect_at[i] < next)
			next = br.reconnect_at[i];
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
		if (br.work)
			br.status_dirty = true;
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
			if (evs[i].data.ptr == &br.sigfd) {
				struct signalfd_siginfo si;

				while (read(br.sigfd, &si, sizeof(si)) == sizeof(si))
					br.stop = true;
				if (br.stop)
					say("stopping");
			}
	}
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: lzchan-bridged [-v] -c CONFIG\n"
		"       lzchan-bridged --check -c CONFIG\n"
		"       lzchan-bridged --status -c CONFIG\n"
		"Carries lzchan channels to and from other hosts over UCX (lzchan-bridged(8)).\n"
		"  -c, --config FILE   the configuration (default /etc/lzchan/bridged.conf)\n"
		"  --check             read the configuration, say what is wrong, exit\n"
		"  --status            print the running bridge's counters (JSON; 'status FILE')\n"
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
		{ 0 }
	};
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
	if (check) {
		printf("%s: bridge '%s', %d peers, %d routes, %d access entries\n", config,
		       br.conf.name, br.conf.npeers, br.conf.nroutes, br.conf.nallows);
		return 0;
	}
	if (setup())
		return 1;
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
