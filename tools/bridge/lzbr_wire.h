/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lzchan-bridged's wire protocol: what two bridges say to each other over
 * one UCX endpoint, as active messages of one id.  Every message is this
 * fixed header (the active message's header) and a payload (its data) of
 * exactly hdr.len bytes.  Explicit widths, in the host's byte order (both
 * bridges little-endian: a big-endian peer's magic reads 0x5a4c, and it is
 * refused as malformed, never misread); a field this version does not use
 * must be 0.  The exchange is the order of enum lzbr_type below; what it
 * means for users is in lzchan-bridged(8).  Everything here is checked
 * before use (lzbr_wire.c).
 */
#ifndef LZBR_WIRE_H
#define LZBR_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define LZBR_AM_ID		0x4c5a		/* the one active message id */
#define LZBR_MAGIC		0x4c5a		/* "LZ" */
#define LZBR_VERSION		1

enum lzbr_type {
	/* The handshake, initiator (I) and acceptor (A), in this order. */
	LZBR_HELLO = 1,		/* I->A  payload struct lzbr_hello */
	LZBR_CHALLENGE = 2,	/* A->I  payload struct lzbr_challenge */
	LZBR_AUTH = 3,		/* I->A  payload struct lzbr_auth */
	LZBR_WELCOME = 4,	/* A->I  no payload */
	/* Streams: one per remote sender, opened by the initiator. */
	LZBR_OPEN = 5,		/* I->A  payload struct lzbr_open */
	LZBR_OPENED = 6,	/* A->I  arg: credit (bytes), seq: max_msg */
	LZBR_REFUSED = 7,	/* A->I  arg: errno */
	LZBR_DATA = 8,		/* I->A  seq: 1, 2, ...; payload: the message */
	LZBR_CREDIT = 9,	/* A->I  arg: credit returned (bytes) */
	LZBR_END = 10,		/* I->A  seq: the last DATA's; arg: enum lzbr_cause */
	LZBR_ENDED = 11,	/* A->I  the stream is over there; arg: errno */
	LZBR_ERROR = 12,	/* either way, then the connection closes; arg: errno */
	LZBR_TYPE_MAX = 12,
};

/* How a remote sender's stream ended (LZBR_END's arg). */
enum lzbr_cause {
	LZBR_CAUSE_CLOSED = 1,	/* the sender closed its handle */
	LZBR_CAUSE_LOST = 2,	/* it died, or exited without closing */
};

struct lzbr_hdr {
	uint16_t magic;		/* LZBR_MAGIC */
	uint8_t version;	/* LZBR_VERSION */
	uint8_t type;		/* enum lzbr_type */
	uint32_t stream;	/* stream id (0: the connection) */
	uint64_t seq;
	uint64_t arg;
	uint32_t len;		/* payload bytes (the active message's data) */
	uint32_t flags;		/* 0 */
};				/* 32 bytes */

#define LZBR_NAME_SIZE		64	/* bridge and channel names, NUL-padded */
#define LZBR_NONCE_SIZE		32
#define LZBR_MAC_SIZE		32	/* HMAC-SHA-256 */

struct lzbr_hello {
	uint8_t nonce[LZBR_NONCE_SIZE];
	char name[LZBR_NAME_SIZE];	/* the initiator's bridge name */
};

struct lzbr_challenge {
	uint8_t nonce[LZBR_NONCE_SIZE];
	char name[LZBR_NAME_SIZE];	/* the acceptor's bridge name */
	uint8_t mac[LZBR_MAC_SIZE];	/* proves the acceptor holds the key */
};

struct lzbr_auth {
	uint8_t mac[LZBR_MAC_SIZE];	/* proves the initiator holds the key */
};

struct lzbr_open {
	char channel[LZBR_NAME_SIZE];	/* the channel on the acceptor's host */
	uint32_t uid;			/* the remote sender's, as its host saw it */
	int32_t pid;
	uint32_t max_msg;		/* the largest message it may send */
	uint32_t pad;			/* 0 */
};

/*
 * What a message costs against a stream's credit: its payload and a fixed
 * 64 bytes (the receiving bridge's copy of the header and its queue entry).
 */
#define LZBR_COST(len)		((uint64_t)(len) + 64)

/* Check a received header and payload length: 0, or -EPROTO/-EMSGSIZE. */
int lzbr_wire_check(const void *hdr, size_t hdr_len, size_t data_len, uint32_t max_data);

/*
 * The handshake's proof: HMAC-SHA-256 with the peer's @key (LZBR_KEY_SIZE
 * bytes) over a label, who proves (@role 'A' acceptor, 'I' initiator),
 * both nonces and both names, in that fixed order.
 */
#define LZBR_KEY_SIZE		32
void lzbr_wire_mac(uint8_t mac[LZBR_MAC_SIZE], const uint8_t *key, char role,
		   const uint8_t *nonce_i, const uint8_t *nonce_a, const char *name_i,
		   const char *name_a);

/* A name field: NUL-terminated within its size, printable, not empty. */
int lzbr_wire_name_ok(const char *name, size_t size);

#endif /* LZBR_WIRE_H */
