// SPDX-License-Identifier: GPL-2.0-only
/*
 * A hostile peer for lzchan-bridged (lzchan_bridge.sh).  Modes:
 *
 *   fuzz ADDR NAME KEY PEERPUB PEERNAME ROUNDS
 *	connects again and again and sends garbage: random bytes, valid
 *	headers with lying lengths, types and streams, a handshake out of
 *	order or with a forged tag, and, after a real handshake as NAME
 *	(KEY: its private key file), stream messages out of turn.  It never
 *	sends a message the bridge should deliver.
 *   forge ADDR CHANNEL
 *	holds no key: connects and sends OPEN and DATA for CHANNEL as if
 *	they came over other connections, rewriting the reply endpoint id
 *	UCX puts after each message (ids 1, 3, ... up to its own connection's
 *	and 64 beyond; the even ones make
 *	UCX 1.13 dereference the id as a pointer, lzchan-bridged(8)).
 *   storm ADDR NAME KEY PEERPUB PEERNAME -
 *	an honest handshake as NAME on one connection while another, with
 *	no key, sends frames claiming to be the first's (a refusal, HELLO,
 *	CHALLENGE and AUTH with made-up tags) before and between its steps;
 *	exit 0 if it is welcomed all the same.
 *   desync ADDR NAME KEY PEERPUB PEERNAME -
 *	through the handshake, then frames sealed one ahead (as if one was
 *	lost): exit 0 if the bridge closes the connection within 14 s.
 *   flood ADDR N SECONDS
 *	opens N connections that never say HELLO and holds them SECONDS.
 *   hello ADDR NAME KEY PEERPUB PEERNAME K
 *	K connections through the handshake as NAME, kept open; prints
 *	"welcomed W alive A" (A: not closed by the bridge a second after
 *	the last); exit 0 if W > 0.
 *   replay ADDR NAME KEY PEERPUB PEERNAME CHANNEL
 *	through the handshake, one stream into CHANNEL: "one", then that
 *	frame again (a replay), "two" sealed one frame ahead (sent before
 *	the frame due: reordered), "two-b" as due, "three" cut short by a
 *	byte, "three" whole, END.  The channel must get one, two-b, three.
 *
 *   datav ADDR NAME KEY PEERPUB PEERNAME CHANNEL
 *	three connections through the handshake as NAME, each one stream
 *	into CHANNEL: a good DATAV of "vKa", "vKb", then a DATAV whose
 *	records lie (K = 0: bytes after the last record; 1: a record longer
 *	than the frame; 2: padding that is not zero).  The channel must get
 *	the six good ones, and the bridge close each connection.
 *
 * ADDR is ADDR:PORT.  Exit 0 once done, unless said otherwise above.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <ucp/api/ucp.h>

#include "lzbr.h"

static ucp_worker_h worker;
static struct lzbr_challenge challenge;
static bool got_challenge, got_welcome, got_error;
static unsigned int replies;

/* ---- rewriting the reply endpoint id (forge, storm) ----
 * UCX's TCP transport sends with send() and sendmsg(); the executable's
 * definitions (exported: -rdynamic) come first.  UCX 1.13 sends a frame's
 * data, then its header (ours, 32 bytes), then its footer: the reply
 * endpoint id, 8 bytes.  The frame being sent is found by its header. */
static struct lzbr_hdr forge_hdr;
static bool forge_armed;		/* forge_hdr is the frame being sent */
static uint64_t forge_id;		/* 0: record the true id, change nothing */
static unsigned int forge_patched, forge_found_id;
static uint64_t forge_true_id;

static void forge_patch(uint8_t *buf, size_t len)
{
	size_t i;

	if (!forge_armed || len < sizeof(forge_hdr) + 8)
		return;
	for (i = 0; i + sizeof(forge_hdr) + 8 <= len; i++)
		if (!memcmp(buf + i, &forge_hdr, sizeof(forge_hdr))) {
			uint8_t *ftr = buf + i + sizeof(forge_hdr);

			if (getenv("FZ_DUMP")) {
				size_t k;

				fprintf(stderr, "len %zu at %zu:", len, i);
				for (k = i; k < len && k < i + 40; k++)
					fprintf(stderr, " %02x", buf[k]);
				fprintf(stderr, "\n");
			}
			memcpy(&forge_true_id, ftr, 8);
			forge_found_id += forge_true_id < 65536;
			if (forge_id) {
				memcpy(ftr, &forge_id, 8);
				forge_patched++;
			}
		}
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	uint8_t *copy;
	ssize_t r;

	if (!forge_armed)
		return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
	copy = malloc(len ? len : 1);
	if (!copy)
		return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
	memcpy(copy, buf, len);
	forge_patch(copy, len);
	r = syscall(SYS_sendto, fd, copy, len, flags, NULL, 0);
	free(copy);
	return r;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct msghdr m = *msg;
	struct iovec one;
	size_t total = 0, off = 0, i;
	uint8_t *flat;
	ssize_t r;

	if (!forge_armed)
		return syscall(SYS_sendmsg, fd, msg, flags);
	for (i = 0; i < msg->msg_iovlen; i++)
		total += msg->msg_iov[i].iov_len;
	flat = malloc(total ? total : 1);
	if (!flat)
		return syscall(SYS_sendmsg, fd, msg, flags);
	for (i = 0; i < msg->msg_iovlen; i++) {
		memcpy(flat + off, msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len);
		off += msg->msg_iov[i].iov_len;
	}
	forge_patch(flat, total);
	one.iov_base = flat;
	one.iov_len = total;
	m.msg_iov = &one;
	m.msg_iovlen = 1;
	r = syscall(SYS_sendmsg, fd, &m, flags);
	free(flat);
	return r;
}

/* ---- UCX ---- */

static ucs_status_t fz_recv(void *arg, const void *header, size_t header_length, void *data,
			    size_t length, const ucp_am_recv_param_t *param)
{
	struct lzbr_hdr h;

	(void)arg;
	replies++;
	if (header_length != sizeof(h))
		return UCS_OK;
	memcpy(&h, header, sizeof(h));
	if (h.type == LZBR_CHALLENGE && length == sizeof(challenge) &&
	    !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
		memcpy(&challenge, data, sizeof(challenge));
		got_challenge = true;
	}
	if (h.type == LZBR_WELCOME)
		got_welcome = true;
	if (h.type == LZBR_ERROR)
		got_error = true;
	return UCS_OK;
}

static unsigned int ep_errors;

static void fz_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	(void)ep;
	(void)status;
	if (arg)
		*(bool *)arg = true;
	ep_errors++;
}

static void fz_progress_ms(int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ucp_worker_progress(worker);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void fz_wait(ucs_status_ptr_t req)
{
	if (!req || UCS_PTR_IS_ERR(req))
		return;
	while (ucp_request_check_status(req) == UCS_INPROGRESS)
		ucp_worker_progress(worker);
	ucp_request_free(req);
}

static void fz_send_raw(ucp_ep_h ep, const void *hdr, size_t hlen, const void *data, size_t len)
{
	ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
				  .flags = UCP_AM_SEND_FLAG_REPLY };

	fz_wait(ucp_am_send_nbx(ep, LZBR_AM_ID, hdr, hlen, data, len, &p));
}

/* FZ_VERSION=1 speaks to a version 1 bridge (forge: to show what it let in). */
static uint8_t fz_version = LZBR_VERSION;

static struct lzbr_hdr fz_hdr(uint8_t type, uint32_t stream, uint64_t seq, uint64_t arg,
			      uint32_t len)
{
	return (struct lzbr_hdr){
		.magic = LZBR_MAGIC, .version = fz_version, .type = type,
		.stream = stream, .seq = seq, .arg = arg, .len = len,
	};
}

static void fz_send(ucp_ep_h ep, uint8_t type, uint32_t stream, uint64_t seq, uint64_t arg,
		    const void *data, uint32_t len)
{
	struct lzbr_hdr h = fz_hdr(type, stream, seq, arg, len);

	fz_send_raw(ep, &h, sizeof(h), data, len);
}

/* Send a frame whose reply endpoint id reads @id (0: as it is, noting
 * the true one in forge_true_id). */
static void fz_forged(ucp_ep_h ep, uint64_t id, uint8_t type, uint32_t stream, uint64_t seq,
		      uint64_t arg, const void *data, uint32_t len)
{
	forge_hdr = fz_hdr(type, stream, seq, arg, len);
	forge_id = id;
	forge_armed = true;
	fz_send_raw(ep, &forge_hdr, sizeof(forge_hdr), data, len);
	forge_armed = false;
}

/* A frame sealed as the session's next (or as @s says). */
static void fz_sealed(ucp_ep_h ep, struct lzbr_session *s, uint8_t type, uint32_t stream,
		      uint64_t seq, uint64_t arg, const void *data, uint32_t len)
{
	struct lzbr_hdr h = fz_hdr(type, stream, seq, arg, len);
	uint8_t *buf = malloc(len + LZBR_TAG_SIZE);

	if (!buf)
		return;
	lzbr_seal(s, &h, data, len, buf);
	fz_send_raw(ep, &h, sizeof(h), buf, len + LZBR_TAG_SIZE);
	free(buf);
}

static uint64_t storm_xid;
static ucp_ep_h storm_y;
static const char *storm_name;
static void fz_storm(ucp_ep_h y, uint64_t xid, const char *name);

struct identity {
	char name[LZBR_NAME_SIZE], peer[LZBR_NAME_SIZE];
	uint8_t sk[LZBR_KEY_SIZE], pk[LZBR_KEY_SIZE], peer_pk[LZBR_KEY_SIZE];
};

/* A real handshake: true once WELCOMEd, with the session in @s. */
static bool fz_handshake(ucp_ep_h ep, const struct identity *id, struct lzbr_session *s)
{
	struct lzbr_hello hi;
	struct lzbr_auth au;
	struct lzbr_hs hs;
	int k;

	got_challenge = got_welcome = got_error = false;
	if (lzbr_hs_hello(&hs, &hi, id->sk, id->pk, id->peer_pk, id->name, id->peer))
		return false;
	fz_send(ep, LZBR_HELLO, 0, 0, 0, &hi, sizeof(hi));
	/* An ERROR now proves nothing (unsealed: anyone's, as the bridge
	 * treats ours): wait for the answer or the deadline. */
	for (k = 0; k < 200 && !got_challenge; k++)
		fz_progress_ms(10);
	if (!got_challenge || lzbr_hs_finish(&hs, &au, s, &challenge, id->sk))
		return false;
	if (storm_y)
		fz_storm(storm_y, storm_xid, storm_name);
	fz_send(ep, LZBR_AUTH, 0, 0, 0, &au, sizeof(au));
	for (k = 0; k < 200 && !got_welcome; k++)
		fz_progress_ms(10);
	s->rx_n++;			/* WELCOME was the acceptor's first */
	return got_welcome;
}

static uint32_t rnd(uint32_t n)
{
	return n ? randombytes_uniform(n) : 0;
}

/* One round's garbage on a fresh endpoint. */
static void fz_round(ucp_ep_h ep, const struct identity *id, unsigned int round)
{
	struct lzbr_session s;
	uint8_t buf[512];
	struct lzbr_hdr h;
	struct lzbr_open o;
	int k;

	randombytes_buf(buf, sizeof(buf));
	switch (round % 6) {
	case 0:		/* random bytes, random lengths */
		for (k = 0; k < 8; k++)
			fz_send_raw(ep, buf, rnd(65), buf + 64, rnd(400));
		break;
	case 1:		/* a valid-looking header with lies in it */
		for (k = 0; k < 8; k++) {
			memset(&h, 0, sizeof(h));
			h.magic = LZBR_MAGIC;
			h.version = rnd(4) ? LZBR_VERSION : (uint8_t)rnd(256);
			h.type = (uint8_t)rnd(16);
			h.stream = rnd(3);
			h.seq = rnd(5);
			h.len = rnd(2) ? rnd(200) : (uint32_t)-1 - rnd(10);
			h.flags = rnd(8) ? 0 : rnd(100);
			fz_send_raw(ep, &h, sizeof(h), buf, rnd(200));
		}
		break;
	case 2:		/* the handshake out of order, or a forged tag */
		fz_send(ep, rnd(2) ? LZBR_AUTH : LZBR_WELCOME, 0, 0, 0, buf,
			rnd(2) ? sizeof(struct lzbr_auth) : 0);
		{
			struct lzbr_hello hi;

			memcpy(&hi, buf, sizeof(hi));
			memset(hi.name, 0, sizeof(hi.name));
			memcpy(hi.name, buf, rnd(2) ? sizeof(hi.name) : 8);	/* maybe no NUL */
			if (rnd(2))
				snprintf(hi.name, sizeof(hi.name), "%s", id->name);
			fz_send(ep, LZBR_HELLO, 0, 0, 0, &hi, sizeof(hi));
			fz_progress_ms(20);
			fz_send(ep, LZBR_AUTH, 0, 0, 0, buf, sizeof(struct lzbr_auth));
		}
		break;
	default:	/* authenticated, then stream messages out of turn */
		if (!fz_handshake(ep, id, &s))
			break;
		memset(&o, 0, sizeof(o));
		snprintf(o.channel, sizeof(o.channel), "%s", rnd(3) ? "orders" : "no/such");
		if (!rnd(4))
			memcpy(o.channel, buf, sizeof(o.channel));	/* no NUL */
		o.pad = rnd(5) ? 0 : 1;
		fz_sealed(ep, &s, LZBR_DATA, 7, 2, 0, buf, 10);	/* no OPEN (2: never one to deliver) */
		fz_sealed(ep, &s, LZBR_OPEN, 7, 0, 0, &o, sizeof(o));
		fz_progress_ms(20);
		switch (round % 3) {
		case 0:		/* sequence numbers that skip, or start at 0 */
			fz_sealed(ep, &s, LZBR_DATA, 7, rnd(2) ? 0 : 2 + rnd(5), 0, buf, 16);
			break;
		case 1:		/* past any credit */
			fz_sealed(ep, &s, LZBR_DATA, 7, 0, 0, buf, sizeof(buf));
			for (k = 0; k < 4; k++)
				fz_sealed(ep, &s, LZBR_CREDIT, 7, 0, (uint64_t)-1, NULL, 0);
			fz_sealed(ep, &s, LZBR_OPEN, 7, 0, 0, &o, sizeof(o));	/* twice */
			break;
		default:	/* an END that claims more than was sent */
			fz_sealed(ep, &s, LZBR_END, 7, 5, LZBR_CAUSE_CLOSED, NULL, 0);
			fz_sealed(ep, &s, LZBR_DATA, 7, 0, 0, buf, 1);
			break;
		}
	}
	fz_progress_ms(20);
}

static struct sockaddr_storage ss;
static socklen_t sl;

static ucp_ep_h fz_connect(bool *failed)
{
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
			      UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
		.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
		.sockaddr = { .addr = (const struct sockaddr *)&ss, .addrlen = sl },
		.err_handler = { .cb = fz_err, .arg = failed },
	};
	ucp_ep_h e;

	if (ucp_ep_create(worker, &ep, &e) != UCS_OK)
		return NULL;
	/* UCX 1.13's active messages can pass each other on a fresh
	 * endpoint: flush before the first. */
	fz_wait(ucp_ep_flush_nbx(e, &(ucp_request_param_t){ .op_attr_mask = 0 }));
	return e;
}

static void fz_close(ucp_ep_h e)
{
	ucp_request_param_t cp = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
				   .flags = UCP_EP_CLOSE_FLAG_FORCE };

	fz_wait(ucp_ep_close_nbx(e, &cp));
}

static int identity_load(struct identity *id, const char *name, const char *keyfile,
			 const char *peer_pub, const char *peer)
{
	char why[256];

	memset(id, 0, sizeof(*id));
	snprintf(id->name, sizeof(id->name), "%s", name);
	snprintf(id->peer, sizeof(id->peer), "%s", peer);
	if (lzbr_conf_read_key(keyfile, id->sk, why, sizeof(why)) ||
	    lzbr_key_public(id->pk, id->sk)) {
		fprintf(stderr, "%s\n", why);
		return -1;
	}
	if (lzbr_key_parse(peer_pub, id->peer_pk)) {
		fprintf(stderr, "%s: not a public key\n", peer_pub);
		return -1;
	}
	return 0;
}

static int mode_fuzz(const struct identity *id, unsigned int rounds)
{
	unsigned int r, connected = 0;

	for (r = 0; r < rounds; r++) {
		ucp_ep_h e = fz_connect(NULL);

		if (!e)
			continue;
		connected++;
		fz_round(e, id, r);
		fz_close(e);
	}
	printf("%u rounds, %u connections, %u replies\n", rounds, connected, replies);
	return connected ? 0 : 1;
}

static int mode_forge(const char *channel)
{
	struct lzbr_open o;
	char msg[64];
	ucp_ep_h e = fz_connect(NULL);
	uint64_t id;

	if (!e)
		return 1;
	fz_progress_ms(100);
	/* This connection's own id first (ids are handed out in order, odd):
	 * then every one up to it and 64 beyond. */
	fz_forged(e, 0, LZBR_DATA, 1, 1, 0, "id?", 3);
	for (id = 1; id < 64 || (id < forge_true_id + 64 && id < 65536); id += 2) {
		memset(&o, 0, sizeof(o));
		snprintf(o.channel, sizeof(o.channel), "%s", channel);
		o.uid = 4242;
		o.pid = 4242;
		o.max_msg = 4096;
		fz_forged(e, id, LZBR_OPEN, 0x7f000000 + (uint32_t)id, 0, 0, &o, sizeof(o));
		snprintf(msg, sizeof(msg), "forged %llu", (unsigned long long)id);
		fz_forged(e, id, LZBR_DATA, 0x7f000000 + (uint32_t)id, 1, 0, msg,
			  (uint32_t)strlen(msg));
		fz_progress_ms(5);
	}
	fz_progress_ms(200);
	printf("forged %u frames, found the reply endpoint id in %u (this connection's: %llu)\n",
	       forge_patched, forge_found_id, (unsigned long long)forge_true_id);
	fz_close(e);
	/* Not one id found: the footer was not where it was looked for. */
	return forge_found_id ? 0 : 1;
}

/* Frames from connection @y that claim to be @x's (id @xid): a refusal,
 * and a HELLO, CHALLENGE and AUTH with tags nobody made. */
static void fz_storm(ucp_ep_h y, uint64_t xid, const char *name)
{
	struct lzbr_hello hi;
	uint8_t junk[sizeof(struct lzbr_challenge)];

	randombytes_buf(&hi, sizeof(hi));
	memset(hi.name, 0, sizeof(hi.name));
	snprintf(hi.name, sizeof(hi.name), "%s", name);
	randombytes_buf(junk, sizeof(junk));
	fz_forged(y, xid, LZBR_ERROR, 0, 0, EACCES, NULL, 0);
	fz_forged(y, xid, LZBR_HELLO, 0, 0, 0, &hi, sizeof(hi));
	fz_forged(y, xid, LZBR_CHALLENGE, 0, 0, 0, junk, sizeof(struct lzbr_challenge));
	fz_forged(y, xid, LZBR_AUTH, 0, 0, 0, junk, sizeof(struct lzbr_auth));
	fz_progress_ms(50);
}

/* storm: an honest handshake on X while Y claims X's frames throughout. */
static int mode_storm(const struct identity *id)
{
	struct lzbr_session s;
	ucp_ep_h x = fz_connect(NULL), y = fz_connect(NULL);
	bool ok;

	if (!x || !y)
		return 1;
	fz_progress_ms(100);
	fz_forged(x, 0, LZBR_DATA, 1, 1, 0, "id?", 3);	/* dropped; tells X's id */
	if (!forge_found_id) {
		fprintf(stderr, "storm: X's reply endpoint id not found\n");
		return 1;
	}
	storm_xid = forge_true_id;
	storm_y = y;
	storm_name = id->name;
	fz_storm(y, storm_xid, id->name);		/* before X's HELLO */
	ok = fz_handshake(x, id, &s);		/* and between its steps */
	printf("storm on connection %llu: %s\n", (unsigned long long)storm_xid,
	       ok ? "welcomed" : "not welcomed");
	fz_close(x);
	fz_close(y);
	return ok ? 0 : 1;
}

static int mode_flood(unsigned int n, unsigned int seconds)
{
	ucp_ep_h *eps = calloc(n, sizeof(*eps));
	unsigned int i, made = 0;

	if (!eps)
		return 1;
	for (i = 0; i < n; i++)
		if ((eps[i] = fz_connect(NULL)))
			made++;
	fz_progress_ms((int)seconds * 1000);
	for (i = 0; i < n; i++)
		if (eps[i])
			fz_close(eps[i]);
	printf("%u connections held\n", made);
	free(eps);
	return 0;
}

static int mode_hello(const struct identity *id, unsigned int k)
{
	bool *failed = calloc(k, sizeof(bool));
	ucp_ep_h *eps = calloc(k, sizeof(*eps));
	struct lzbr_session s;
	unsigned int i, welcomed = 0, alive = 0;

	if (!failed || !eps)
		return 1;
	for (i = 0; i < k; i++) {
		eps[i] = fz_connect(&failed[i]);
		if (eps[i] && fz_handshake(eps[i], id, &s))
			welcomed++;
	}
	fz_progress_ms(1000);
	for (i = 0; i < k; i++) {
		alive += eps[i] && !failed[i];
		if (eps[i])
			fz_close(eps[i]);
	}
	printf("welcomed %u alive %u\n", welcomed, alive);
	free(eps);
	free(failed);
	return welcomed ? 0 : 1;
}

/* desync: through the handshake, then one frame sealed a frame ahead
 * (as if one were lost on the way), then a PING a second: none opens any
 * more.  Exit 0 if the bridge closes the connection within 14 s. */
static int mode_desync(const struct identity *id)
{
	struct lzbr_session s;
	bool failed = false;
	ucp_ep_h e = fz_connect(&failed);
	int k;

	if (!e || !fz_handshake(e, id, &s)) {
		fprintf(stderr, "desync: no handshake\n");
		return 2;
	}
	s.tx_n++;
	for (k = 0; k < 14 && !failed; k++) {
		fz_sealed(e, &s, LZBR_PING, 0, 0, 0, NULL, 0);
		fz_progress_ms(1000);
	}
	printf("desync: %s after %d s\n", failed ? "closed by the bridge" : "still open", k);
	fz_close(e);
	return failed ? 0 : 1;
}

/* Stream 1 into @channel, as this process (replay, datav). */
static void fz_open_stream(ucp_ep_h e, struct lzbr_session *s, const char *channel)
{
	struct lzbr_open o;

	memset(&o, 0, sizeof(o));
	snprintf(o.channel, sizeof(o.channel), "%s", channel);
	o.uid = (uint32_t)getuid();
	o.pid = (int32_t)getpid();
	o.max_msg = 4096;
	fz_sealed(e, s, LZBR_OPEN, 1, 0, 0, &o, sizeof(o));
	fz_progress_ms(300);
}

static int mode_replay(const struct identity *id, const char *channel)
{
	struct lzbr_session s, ahead;
	struct lzbr_hdr h;
	uint8_t frame[64];
	ucp_ep_h e = fz_connect(NULL);

	if (!e || !fz_handshake(e, id, &s)) {
		fprintf(stderr, "replay: no handshake\n");
		return 1;
	}
	fz_open_stream(e, &s, channel);
	/* "one", and the very same frame again. */
	h = fz_hdr(LZBR_DATA, 1, 1, 0, 3);
	lzbr_seal(&s, &h, "one", 3, frame);
	fz_send_raw(e, &h, sizeof(h), frame, 3 + LZBR_TAG_SIZE);
	fz_send_raw(e, &h, sizeof(h), frame, 3 + LZBR_TAG_SIZE);
	/* "two" sealed a frame ahead, sent before the one due. */
	ahead = s;
	ahead.tx_n++;
	fz_sealed(e, &ahead, LZBR_DATA, 1, 2, 0, "two", 3);
	fz_sealed(e, &s, LZBR_DATA, 1, 2, 0, "two-b", 5);
	/* "three" cut by a byte (header and all), then whole. */
	ahead = s;
	h = fz_hdr(LZBR_DATA, 1, 3, 0, 5);
	lzbr_seal(&ahead, &h, "three", 5, frame);
	h.len = 4;
	fz_send_raw(e, &h, sizeof(h), frame, 4 + LZBR_TAG_SIZE);
	h.len = 5;
	fz_send_raw(e, &h, sizeof(h), frame, 4 + LZBR_TAG_SIZE);
	fz_sealed(e, &s, LZBR_DATA, 1, 3, 0, "three", 5);
	fz_sealed(e, &s, LZBR_END, 1, 3, LZBR_CAUSE_CLOSED, NULL, 0);
	fz_progress_ms(500);
	fz_close(e);
	return 0;
}

/* Two records, "@a" and "@b", into @out: their size. */
static uint32_t fz_records(uint8_t *out, const char *a, const char *b)
{
	const char *m[2] = { a, b };
	uint32_t off = 0;
	int i;

	for (i = 0; i < 2; i++) {
		struct lzbr_rec rec = { .len = (uint32_t)strlen(m[i]) };
		uint32_t size = (uint32_t)LZBR_REC_SIZE(rec.len);

		memset(out + off, 0, size);
		memcpy(out + off, &rec, sizeof(rec));
		memcpy(out + off + sizeof(rec), m[i], rec.len);
		off += size;
	}
	return off;
}

static int mode_datav(const struct identity *id, const char *channel)
{
	int k, failed = 0;

	for (k = 0; k < 3; k++) {
		struct lzbr_session s;
		struct lzbr_rec rec;
		uint8_t frame[128];
		char a[8], b[8];
		uint32_t len;
		unsigned int errs = ep_errors;
		ucp_ep_h e = fz_connect(NULL);

		if (!e || !fz_handshake(e, id, &s)) {
			fprintf(stderr, "datav: no handshake (connection %d)\n", k);
			return 1;
		}
		fz_open_stream(e, &s, channel);
		snprintf(a, sizeof(a), "v%da", k);
		snprintf(b, sizeof(b), "v%db", k);
		len = fz_records(frame, a, b);
		fz_sealed(e, &s, LZBR_DATAV, 1, 1, 2, frame, len);
		len = fz_records(frame, "x1", "x2");
		switch (k) {
		case 0:		/* 8 bytes after the last record */
			memset(frame + len, 0, 8);
			len += 8;
			break;
		case 1:		/* the second record longer than the frame */
			memcpy(&rec, frame + 16, sizeof(rec));
			rec.len = 100;
			memcpy(frame + 16, &rec, sizeof(rec));
			break;
		default:	/* the first record's padding not zero */
			frame[sizeof(rec) + 2] = 'p';
			break;
		}
		fz_sealed(e, &s, LZBR_DATAV, 1, 3, 2, frame, len);
		fz_progress_ms(800);
		if (!got_error && ep_errors == errs) {
			fprintf(stderr, "datav: connection %d not closed\n", k);
			failed = 1;
		}
		got_error = false;
		fz_close(e);
	}
	return failed;
}

int main(int argc, char **argv)
{
	ucp_params_t up = { .field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_AM };
	ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
				   .thread_mode = UCS_THREAD_MODE_SINGLE };
	ucp_am_handler_param_t ap = {
		.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB,
		.id = LZBR_AM_ID, .cb = fz_recv,
	};
	struct identity id;
	ucp_config_t *cfg;
	ucp_context_h ctx;
	const char *mode = argc > 2 ? argv[1] : "";
	int ret;

	if (argc < 3 || lzbr_parse_addr(argv[2], &ss, &sl) || sodium_init() < 0) {
		fprintf(stderr, "usage: %s fuzz|forge|storm|desync|flood|hello|replay|datav ADDR:PORT ...\n",
			argv[0]);
		return 2;
	}
	if (!strcmp(mode, "fuzz") || !strcmp(mode, "hello") || !strcmp(mode, "replay") ||
	    !strcmp(mode, "storm") || !strcmp(mode, "desync") || !strcmp(mode, "datav")) {
		if (argc != 8 || identity_load(&id, argv[3], argv[4], argv[5], argv[6]))
			return 2;
	} else if (!((!strcmp(mode, "forge") && argc == 4) || (!strcmp(mode, "flood") && argc == 5))) {
		fprintf(stderr, "%s: bad mode or arguments\n", argv[0]);
		return 2;
	}
	if (getenv("FZ_VERSION"))
		fz_version = (uint8_t)atoi(getenv("FZ_VERSION"));
	/* Like the bridge: no rendezvous (it would drop such frames). */
	setenv("UCX_RNDV_THRESH", "inf", 0);
	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK || ucp_init(&up, cfg, &ctx) != UCS_OK ||
	    ucp_worker_create(ctx, &wp, &worker) != UCS_OK ||
	    ucp_worker_set_am_recv_handler(worker, &ap) != UCS_OK) {
		fprintf(stderr, "UCX set-up failed\n");
		return 1;
	}
	ucp_config_release(cfg);
	if (!strcmp(mode, "fuzz"))
		ret = mode_fuzz(&id, (unsigned int)strtoul(argv[7], NULL, 10));
	else if (!strcmp(mode, "hello"))
		ret = mode_hello(&id, (unsigned int)strtoul(argv[7], NULL, 10));
	else if (!strcmp(mode, "replay"))
		ret = mode_replay(&id, argv[7]);
	else if (!strcmp(mode, "datav"))
		ret = mode_datav(&id, argv[7]);
	else if (!strcmp(mode, "storm"))
		ret = mode_storm(&id);
	else if (!strcmp(mode, "desync"))
		ret = mode_desync(&id);
	else if (!strcmp(mode, "forge"))
		ret = mode_forge(argv[3]);
	else
		ret = mode_flood((unsigned int)strtoul(argv[3], NULL, 10),
				 (unsigned int)strtoul(argv[4], NULL, 10));
	ucp_worker_destroy(worker);
	ucp_cleanup(ctx);
	return ret;
}
