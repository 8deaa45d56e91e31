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
_Static_assert(sizeof(struct lzbr_hello) == 96, "lzbr_hello");
_Static_assert(sizeof(struct lzbr_challenge) == 128, "lzbr_challenge");
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
		return -1;
	default:
		return 0;
	}
}

int lzbr_wire_check(const void *hdr, size_t hdr_len, size_t data_len, uint32_t max_data)
{
	struct lzbr_hdr h;
	long want;
	bool conn;

	if (hdr_len != sizeof(h))
		return -EPROTO;
	memcpy(&h, hdr, sizeof(h));	/* the header may be unaligned */
	if (h.magic != LZBR_MAGIC || h.version != LZBR_VERSION || h.flags ||
	    h.type < LZBR_HELLO || h.type > LZBR_TYPE_MAX)
		return -EPROTO;
	if (h.len != data_len)
		return -EPROTO;
	want = lzbr_wire_payload(h.type);
	if (want < 0) {
		if (data_len > max_data)
			return -EMSGSIZE;
	} else if (data_len != (size_t)want) {
		return -EPROTO;
	}
	/* The handshake and ERROR are the connection's; the rest a stream's. */
	conn = h.type <= LZBR_WELCOME || h.type == LZBR_ERROR;
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

void lzbr_wire_mac(uint8_t mac[LZBR_MAC_SIZE], const uint8_t *key, char role,
		   const uint8_t *nonce_i, const uint8_t *nonce_a, const char *name_i,
		   const char *name_a)
{
	static const char label[] = "lzchan-bridge v1";
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, LZBR_KEY_SIZE);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, sizeof(label));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)&role, 1);
	crypto_auth_hmacsha256_update(&st, nonce_i, LZBR_NONCE_SIZE);
	crypto_auth_hmacsha256_update(&st, nonce_a, LZBR_NONCE_SIZE);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)name_i, LZBR_NAME_SIZE);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)name_a, LZBR_NAME_SIZE);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}
