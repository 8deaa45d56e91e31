// SPDX-License-Identifier: GPL-2.0-only
/*
 * The wire protocol's checks (lzbr_wire.h): everything a peer sends is
 * checked here before any of it is used -- the header's every field, and
 * the payload's length against what its type carries.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "lzbr_wire.h"

_Static_assert(sizeof(struct lzbr_hdr) == 32, "the wire header is 32 bytes");
_Static_assert(sizeof(struct lzbr_hello) == 112, "lzbr_hello");
_Static_assert(sizeof(struct lzbr_challenge) == 48, "lzbr_challenge");
_Static_assert(sizeof(struct lzbr_auth) == 16, "lzbr_auth");
_Static_assert(sizeof(struct lzbr_open) == 80, "lzbr_open");

/* The payload each type carries: its exact size, or -1 (DATA: up to max). */
static long lzbr_wire_payload(unsigned int type)
{
	switch (type) {
	case LZBR_HELLO:
		return sizeof(struct lzbr_hello);
	case LZBR_CHALLENGE:
		return sizeof(struct lzbr_challenge);
	case LZBR_AUTH:
		return sizeof(struct lzbr_auth);
	case LZBR_OPEN:
		return sizeof(struct lzbr_open);
	case LZBR_DATA:
	case LZBR_DATAV:
		return -1;
	default:
		return 0;
	}
}

static bool lzbr_wire_handshake(unsigned int type)
{
	return type == LZBR_HELLO || type == LZBR_CHALLENGE || type == LZBR_AUTH;
}

int lzbr_wire_check(const void *hdr, size_t hdr_len, size_t data_len, uint32_t max_data,
		    int sealed)
{
	struct lzbr_hdr h;
	size_t tag;
	long want;
	bool conn;

	if (hdr_len != sizeof(h))
		return -EPROTO;
	memcpy(&h, hdr, sizeof(h));	/* the header may be unaligned */
	if (h.magic != LZBR_MAGIC || h.version != LZBR_VERSION || h.flags ||
	    h.type < LZBR_HELLO || h.type > LZBR_TYPE_MAX)
		return -EPROTO;
	/* The handshake is never sealed, everything after it always; an
	 * ERROR before the keys (a refusal) is the one frame that may be
	 * either. */
	tag = sealed && !lzbr_wire_handshake(h.type) ? LZBR_TAG_SIZE : 0;
	if (!sealed && !lzbr_wire_handshake(h.type) && h.type != LZBR_ERROR)
		return -EPROTO;
	if (data_len < tag || h.len != data_len - tag)
		return -EPROTO;
	want = lzbr_wire_payload(h.type);
	if (want < 0) {
		if (h.len > max_data)
			return -EMSGSIZE;
	} else if (h.len != (size_t)want) {
		return -EPROTO;
	}
	/* DATAV: 2 to LZBR_BATCH_MSGS records, within LZBR_BATCH_BYTES (the
	 * records themselves are checked once the frame is open). */
	if (h.type == LZBR_DATAV &&
	    (h.arg < 2 || h.arg > LZBR_BATCH_MSGS || h.len > LZBR_BATCH_BYTES ||
	     h.len < h.arg * sizeof(struct lzbr_rec)))
		return -EPROTO;
	/* The handshake, ERROR and PING are the connection's; the rest a stream's. */
	conn = h.type <= LZBR_WELCOME || h.type == LZBR_ERROR || h.type == LZBR_PING;
	if (conn != (h.stream == 0))
		return -EPROTO;
	return 0;
}

int lzbr_wire_name_ok(const char *name, size_t size)
{
	size_t n = strnlen(name, size), i;

	if (!n || n == size)
		return 0;
	for (i = 0; i < n; i++)
		if (name[i] < '!' || name[i] > '~')
			return 0;
	/* NUL-padded: nothing after the terminator. */
	for (i = n; i < size; i++)
		if (name[i])
			return 0;
	return 1;
}
