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
#include <stdbool.h>
#include <stdint.h>

#define LZBR_AM_ID		0x4c5a		/* the one active message id */
#define LZBR_MAGIC		0x4c5a		/* "LZ" */
#define LZBR_VERSION		3		/* 1: shared keys, no sealing; 2: no DATAV */

enum lzbr_type {
	/* The handshake, initiator (I) and acceptor (A), in this order. */
	LZBR_HELLO = 1,		/* I->A  payload struct lzbr_hello */
	LZBR_CHALLENGE = 2,	/* A->I  payload struct lzbr_challenge */
	LZBR_AUTH = 3,		/* I->A  payload struct lzbr_auth */
	LZBR_WELCOME = 4,	/* A->I  no payload; the first sealed frame */
	/* Streams: one per remote sender, opened by the initiator. */
	LZBR_OPEN = 5,		/* I->A  payload struct lzbr_open */
	LZBR_OPENED = 6,	/* A->I  arg: credit (bytes), seq: max_msg */
	LZBR_REFUSED = 7,	/* A->I  arg: errno */
	LZBR_DATA = 8,		/* I->A  seq: 1, 2, ...; payload: the message */
	LZBR_CREDIT = 9,	/* A->I  arg: credit returned (bytes) */
	LZBR_END = 10,		/* I->A  seq: the last DATA's; arg: enum lzbr_cause */
	LZBR_ENDED = 11,	/* A->I  the stream is over there; arg: errno */
	LZBR_ERROR = 12,	/* either way, then the connection closes; arg: errno */
	LZBR_PING = 13,		/* either way, sealed: nothing else was sent for a while */
	LZBR_DATAV = 14,	/* I->A  seq: the first's; arg: how many (2..LZBR_BATCH_MSGS);
				 * payload: that many struct lzbr_rec, each with its
				 * message; as many DATA frames, seq, seq + 1, ... */
	LZBR_TYPE_MAX = 14,
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
	uint32_t len;		/* payload bytes, before sealing */
	uint32_t flags;		/* 0 */
};				/* 32 bytes */

/*
 * DATAV: consecutive messages of one stream in one frame, so that one
 * seal, one open and one UCX message carry them all.  Each is a record:
 * this header, its len bytes, zeros up to the next multiple of 8.  The
 * records fill the payload exactly; a message whose record alone would
 * pass LZBR_BATCH_BYTES goes as DATA.
 */
struct lzbr_rec {
	uint32_t len;		/* the message's bytes */
	uint32_t zero;		/* 0 */
};
#define LZBR_BATCH_MSGS		64
#define LZBR_BATCH_BYTES	16384
#define LZBR_REC_SIZE(len)	(sizeof(struct lzbr_rec) + (((uint64_t)(len) + 7) & ~7ULL))

#define LZBR_NAME_SIZE		64	/* bridge and channel names, NUL-padded */
#define LZBR_KEY_SIZE		32	/* X25519 keys, session keys, hashes */
#define LZBR_TAG_SIZE		16	/* ChaCha20-Poly1305's tag */

/*
 * The handshake (lzbr_crypto.c; the argument is in lzchan-bridged(8) and
 * Documentation/admin/guide.rst): each bridge has a static X25519 key
 * pair and knows its peers' public keys.  Both sides' ephemeral keys and
 * four Diffie-Hellman results feed a BLAKE2b chain; each message's tag
 * proves its sender holds its static private key for this handshake only.
 */
struct lzbr_hello {
	uint8_t eph[LZBR_KEY_SIZE];	/* the initiator's ephemeral public key */
	char name[LZBR_NAME_SIZE];	/* the initiator's bridge name */
	uint8_t tag[LZBR_TAG_SIZE];	/* es and ss: it holds its static key */
};

struct lzbr_challenge {
	uint8_t eph[LZBR_KEY_SIZE];	/* the acceptor's ephemeral public key */
	uint8_t tag[LZBR_TAG_SIZE];	/* ee and se: the acceptor, now */
};

struct lzbr_auth {
	uint8_t tag[LZBR_TAG_SIZE];	/* the initiator, now */
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

/*
 * Check a received header and the active message's data length: 0, or
 * -EPROTO/-EMSGSIZE.  @sealed: the connection's session keys are set, so
 * every frame but the handshake's carries a tag after its payload.
 */
int lzbr_wire_check(const void *hdr, size_t hdr_len, size_t data_len, uint32_t max_data,
		    int sealed);

/* A name field: NUL-terminated within its size, printable, not empty. */
int lzbr_wire_name_ok(const char *name, size_t size);

/* ---- keys and the handshake (lzbr_crypto.c) ---- */

/* One connection's handshake so far. */
struct lzbr_hs {
	uint8_t ck[LZBR_KEY_SIZE];	/* the chaining key */
	uint8_t h[LZBR_KEY_SIZE];	/* the transcript's hash */
	uint8_t e_sk[LZBR_KEY_SIZE], e_pk[LZBR_KEY_SIZE];
};

/* A connection's keys once through: one per direction, and the counters
 * that are the frames' nonces (never sent: a frame is opened only as the
 * next one expected, so a replayed, reordered, dropped or truncated frame
 * fails). */
struct lzbr_session {
	uint8_t tx[LZBR_KEY_SIZE], rx[LZBR_KEY_SIZE];
	uint64_t tx_n, rx_n;
};

/* @pk from @sk; -1 for a key that is no X25519 private key's. */
int lzbr_key_public(uint8_t pk[LZBR_KEY_SIZE], const uint8_t sk[LZBR_KEY_SIZE]);

/* Initiator @name_i (@sk_i, @pk_i) to acceptor @name_a (@pk_a): HELLO. */
int lzbr_hs_hello(struct lzbr_hs *hs, struct lzbr_hello *out, const uint8_t *sk_i,
		  const uint8_t *pk_i, const uint8_t *pk_a, const char *name_i,
		  const char *name_a);

/* Acceptor: check @in from the peer whose key is @pk_i (named in it);
 * CHALLENGE in @out and the session in @s.  0, or -1: not that peer. */
int lzbr_hs_accept(struct lzbr_hs *hs, struct lzbr_challenge *out, struct lzbr_session *s,
		   const struct lzbr_hello *in, const uint8_t *sk_a, const uint8_t *pk_a,
		   const uint8_t *pk_i, const char *name_a);

/* Initiator: check CHALLENGE @in; AUTH in @out, the session in @s.  0, or
 * -1: the acceptor is not who @pk_a says. */
int lzbr_hs_finish(struct lzbr_hs *hs, struct lzbr_auth *out, struct lzbr_session *s,
		   const struct lzbr_challenge *in, const uint8_t *sk_i);

/* Acceptor: check AUTH: 0, or -1. */
int lzbr_hs_confirm(const struct lzbr_hs *hs, const struct lzbr_auth *in);

/* Seal @len bytes of @in after header @h into @out (@len + LZBR_TAG_SIZE
 * bytes; @in may be @out), as the session's next frame. */
void lzbr_seal(struct lzbr_session *s, const struct lzbr_hdr *h, const void *in, size_t len,
	       void *out);

/* Open the next frame: header @h, @len sealed bytes @in (payload and tag)
 * into @out (@len - LZBR_TAG_SIZE bytes).  0, or -1 (and nothing
 * written, the counter where it was). */
int lzbr_unseal(struct lzbr_session *s, const struct lzbr_hdr *h, const void *in, size_t len,
		void *out);

#endif /* LZBR_WIRE_H */
