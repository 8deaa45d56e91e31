// SPDX-License-Identifier: GPL-2.0-only
/*
 * A hostile peer for lzchan-bridged (lzchan_bridge.sh): connects to a
 * bridge again and again and sends it garbage -- random bytes for a
 * header, valid headers with lying lengths, types and streams, a
 * handshake out of order or with a wrong proof, and, after a real
 * handshake (it holds the key), stream messages out of turn: data before
 * OPEN, data past credit, sequence numbers that skip, OPENs of bad names.
 * It never sends a message the bridge should deliver (every DATA's
 * sequence number or stream is wrong), so the channels behind the bridge
 * must hold only what honest senders sent.  Exit 0 once done: the test
 * then checks that the bridge is alive and still carries messages.
 *
 * usage: lzchan_bridge_fuzz ADDR:PORT KEYFILE NAME ROUNDS
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>
#include <ucp/api/ucp.h>

#include "lzbr.h"

static ucp_worker_h worker;
static struct lzbr_challenge challenge;
static bool got_challenge, got_welcome;
static unsigned int replies;

static ucs_status_t fz_recv(void *arg, const void *header, size_t header_length, void *data,
			    size_t length, const ucp_am_recv_param_t *param)
{
	struct lzbr_hdr h;

	(void)arg;
	(void)param;
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
	return UCS_OK;
}

static void fz_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	(void)arg;
	(void)ep;
	(void)status;
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

static void fz_send(ucp_ep_h ep, uint8_t type, uint32_t stream, uint64_t seq, uint64_t arg,
		    const void *data, uint32_t len)
{
	struct lzbr_hdr h = {
		.magic = LZBR_MAGIC, .version = LZBR_VERSION, .type = type,
		.stream = stream, .seq = seq, .arg = arg, .len = len,
	};

	fz_send_raw(ep, &h, sizeof(h), data, len);
}

/* A real handshake as @name with @key: true once WELCOMEd. */
static bool fz_handshake(ucp_ep_h ep, const uint8_t *key, const char *name)
{
	struct lzbr_hello hi;
	struct lzbr_auth au;
	int k;

	memset(&hi, 0, sizeof(hi));
	randombytes_buf(hi.nonce, sizeof(hi.nonce));
	snprintf(hi.name, sizeof(hi.name), "%s", name);
	got_challenge = got_welcome = false;
	fz_send(ep, LZBR_HELLO, 0, 0, 0, &hi, sizeof(hi));
	for (k = 0; k < 200 && !got_challenge; k++)
		fz_progress_ms(10);
	if (!got_challenge)
		return false;
	lzbr_wire_mac(au.mac, key, 'I', hi.nonce, challenge.nonce, hi.name, challenge.name);
	fz_send(ep, LZBR_AUTH, 0, 0, 0, &au, sizeof(au));
	for (k = 0; k < 200 && !got_welcome; k++)
		fz_progress_ms(10);
	return got_welcome;
}

static uint32_t rnd(uint32_t n)
{
	return n ? randombytes_uniform(n) : 0;
}

/* One round's garbage on a fresh endpoint. */
static void fz_round(ucp_ep_h ep, const uint8_t *key, const char *name, unsigned int round)
{
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
	case 2:		/* the handshake out of order, or a wrong proof */
		fz_send(ep, rnd(2) ? LZBR_AUTH : LZBR_WELCOME, 0, 0, 0, buf,
			rnd(2) ? sizeof(struct lzbr_auth) : 0);
		{
			struct lzbr_hello hi;

			memset(&hi, 0, sizeof(hi));
			memcpy(hi.name, buf, rnd(2) ? sizeof(hi.name) : 8);	/* maybe no NUL */
			if (rnd(2))
				snprintf(hi.name, sizeof(hi.name), "%s", name);
			fz_send(ep, LZBR_HELLO, 0, 0, 0, &hi, sizeof(hi));
			fz_progress_ms(20);
			fz_send(ep, LZBR_AUTH, 0, 0, 0, buf, sizeof(struct lzbr_auth));
		}
		break;
	default:	/* authenticated, then stream messages out of turn */
		if (!fz_handshake(ep, key, name))
			break;
		memset(&o, 0, sizeof(o));
		snprintf(o.channel, sizeof(o.channel), "%s", rnd(3) ? "orders" : "no/such");
		if (!rnd(4))
			memcpy(o.channel, buf, sizeof(o.channel));	/* no NUL */
		o.pad = rnd(5) ? 0 : 1;
		fz_send(ep, LZBR_DATA, 7, 2, 0, buf, 10);	/* no OPEN (2: never one to deliver) */
		fz_send(ep, LZBR_OPEN, 7, 0, 0, &o, sizeof(o));
		fz_progress_ms(20);
		switch (round % 3) {
		case 0:		/* sequence numbers that skip, or start at 0 */
			fz_send(ep, LZBR_DATA, 7, rnd(2) ? 0 : 2 + rnd(5), 0, buf, 16);
			break;
		case 1:		/* past any credit */
			fz_send(ep, LZBR_DATA, 7, 0, 0, buf, sizeof(buf));
			for (k = 0; k < 4; k++)
				fz_send(ep, LZBR_CREDIT, 7, 0, (uint64_t)-1, NULL, 0);
			fz_send(ep, LZBR_OPEN, 7, 0, 0, &o, sizeof(o));	/* twice */
			break;
		default:	/* an END that claims more than was sent */
			fz_send(ep, LZBR_END, 7, 5, LZBR_CAUSE_CLOSED, NULL, 0);
			fz_send(ep, LZBR_DATA, 7, 0, 0, buf, 1);
			break;
		}
	}
	fz_progress_ms(20);
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
	struct sockaddr_storage ss;
	uint8_t key[LZBR_KEY_SIZE];
	unsigned int rounds, r, connected = 0;
	ucp_config_t *cfg;
	ucp_context_h ctx;
	socklen_t sl;
	char why[256];

	if (argc != 5 || lzbr_parse_addr(argv[1], &ss, &sl) || sodium_init() < 0) {
		fprintf(stderr, "usage: %s ADDR:PORT KEYFILE NAME ROUNDS\n", argv[0]);
		return 2;
	}
	if (lzbr_conf_read_key(argv[2], key, why, sizeof(why))) {
		fprintf(stderr, "%s\n", why);
		return 2;
	}
	rounds = (unsigned int)strtoul(argv[4], NULL, 10);
	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK || ucp_init(&up, cfg, &ctx) != UCS_OK ||
	    ucp_worker_create(ctx, &wp, &worker) != UCS_OK ||
	    ucp_worker_set_am_recv_handler(worker, &ap) != UCS_OK) {
		fprintf(stderr, "UCX set-up failed\n");
		return 1;
	}
	ucp_config_release(cfg);
	for (r = 0; r < rounds; r++) {
		ucp_ep_params_t ep = {
			.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
				      UCP_EP_PARAM_FIELD_ERR_HANDLER |
				      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
			.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
			.err_mode = UCP_ERR_HANDLING_MODE_PEER,
			.sockaddr = { .addr = (const struct sockaddr *)&ss, .addrlen = sl },
			.err_handler = { .cb = fz_err },
		};
		ucp_request_param_t cp = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
					   .flags = UCP_EP_CLOSE_FLAG_FORCE };
		ucp_ep_h e;

		if (ucp_ep_create(worker, &ep, &e) != UCS_OK)
			continue;
		connected++;
		fz_round(e, key, argv[3], r);
		fz_wait(ucp_ep_close_nbx(e, &cp));
	}
	printf("%u rounds, %u connections, %u replies\n", rounds, connected, replies);
	ucp_worker_destroy(worker);
	ucp_cleanup(ctx);
	return connected ? 0 : 1;
}
