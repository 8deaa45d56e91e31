// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan-bridged's keys: the handshake that proves who each side is, and
 * the sealing of every frame after it.  All of it is libsodium's: X25519
 * (crypto_scalarmult), BLAKE2b (crypto_generichash) as hash and keyed
 * derivation, ChaCha20-Poly1305 (IETF) as the AEAD.
 *
 * Initiator I (static s_i/S_i, ephemeral e_i/E_i) knows S_a; acceptor A
 * (s_a/S_a, e_a/E_a) knows S_i once HELLO names I:
 *
 *   h1  = H(label, S_i, S_a, name_i, name_a, E_i)
 *   ck1 = KDF(ck0, DH(e_i,S_a) | DH(s_i,S_a))      HELLO's tag: K(ck1) over h1
 *   h2  = H(h1, E_a)
 *   ck2 = KDF(ck1, DH(e_a,E_i) | DH(e_a,S_i))      CHALLENGE's tag: K(ck2) over h2
 *                                                  AUTH's tag: another K(ck2) over h2
 *   the session: K(ck2, "i>a") and K(ck2, "a>i")
 *
 * HELLO's tag needs s_i or s_a, so a host with neither cannot even get a
 * CHALLENGE.  CHALLENGE's needs ck1 (s_a: I only ever offered it to A) and
 * E_i (this handshake).  AUTH's needs DH(s_i,E_a): I's static key, now, for
 * this E_a, so a replayed HELLO leads nowhere.  ee makes the session keys
 * forward-secret; a stolen s_a does not let its thief pose as I to A (that
 * needs s_i), nor the other way round.
 *
 * Frames: the header is the additional data, the payload is encrypted,
 * the tag follows it; the nonce is the direction's frame counter, which
 * is never sent: the receiver opens a frame only as the next it expects.
 */
#include <string.h>

#include <sodium.h>

#include "lzbr_wire.h"

static const char lzbr_label[] = "lzchan-bridge 2 X25519 BLAKE2b ChaCha20-Poly1305";

_Static_assert(crypto_scalarmult_BYTES == LZBR_KEY_SIZE, "X25519 keys are 32 bytes");
_Static_assert(crypto_aead_chacha20poly1305_ietf_ABYTES == LZBR_TAG_SIZE, "the tag");
_Static_assert(crypto_aead_chacha20poly1305_ietf_KEYBYTES == LZBR_KEY_SIZE, "the key");
_Static_assert(crypto_aead_chacha20poly1305_ietf_NPUBBYTES == 12, "the nonce");

/* K(@ck, @label): a key for one use, derived from the chain. */
static void hs_key(uint8_t out[LZBR_KEY_SIZE], const uint8_t ck[LZBR_KEY_SIZE], const char *label)
{
	crypto_generichash(out, LZBR_KEY_SIZE, (const unsigned char *)label, strlen(label), ck,
			   LZBR_KEY_SIZE);
}

/* ck = KDF(ck, dh1 | dh2); -1 if either is the all-zero result of a
 * low-order point (libsodium refuses those). */
static int hs_mix(uint8_t ck[LZBR_KEY_SIZE], const uint8_t *sk1, const uint8_t *pk1,
		  const uint8_t *sk2, const uint8_t *pk2)
{
	uint8_t dh[2 * LZBR_KEY_SIZE];
	int r = -1;

	if (!crypto_scalarmult(dh, sk1, pk1) && !crypto_scalarmult(dh + LZBR_KEY_SIZE, sk2, pk2)) {
		crypto_generichash(ck, LZBR_KEY_SIZE, dh, sizeof(dh), ck, LZBR_KEY_SIZE);
		r = 0;
	}
	sodium_memzero(dh, sizeof(dh));
	return r;
}

/* A tag over @h with K(@ck, @label): an empty message sealed, nonce 0. */
static void hs_tag(uint8_t tag[LZBR_TAG_SIZE], const uint8_t ck[LZBR_KEY_SIZE], const char *label,
		   const uint8_t h[LZBR_KEY_SIZE])
{
	static const uint8_t nonce[12];
	uint8_t k[LZBR_KEY_SIZE], none[1] = { 0 };

	hs_key(k, ck, label);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, tag, NULL, none, 0, h,
							   LZBR_KEY_SIZE, NULL, nonce, k);
	sodium_memzero(k, sizeof(k));
}

static int hs_tag_ok(const uint8_t tag[LZBR_TAG_SIZE], const uint8_t ck[LZBR_KEY_SIZE],
		     const char *label, const uint8_t h[LZBR_KEY_SIZE])
{
	uint8_t want[LZBR_TAG_SIZE];

	hs_tag(want, ck, label, h);
	return crypto_verify_16(want, tag) ? -1 : 0;
}

static void hs_h1(struct lzbr_hs *hs, const uint8_t *pk_i, const uint8_t *pk_a, const char *name_i,
		  const char *name_a, const uint8_t *e_i)
{
	crypto_generichash_state st;

	crypto_generichash(hs->ck, LZBR_KEY_SIZE, (const unsigned char *)lzbr_label,
			   sizeof(lzbr_label), NULL, 0);
	crypto_generichash_init(&st, NULL, 0, LZBR_KEY_SIZE);
	crypto_generichash_update(&st, hs->ck, LZBR_KEY_SIZE);
	crypto_generichash_update(&st, pk_i, LZBR_KEY_SIZE);
	crypto_generichash_update(&st, pk_a, LZBR_KEY_SIZE);
	crypto_generichash_update(&st, (const unsigned char *)name_i, LZBR_NAME_SIZE);
	crypto_generichash_update(&st, (const unsigned char *)name_a, LZBR_NAME_SIZE);
	crypto_generichash_update(&st, e_i, LZBR_KEY_SIZE);
	crypto_generichash_final(&st, hs->h, LZBR_KEY_SIZE);
}

static void hs_h2(struct lzbr_hs *hs, const uint8_t *e_a)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, LZBR_KEY_SIZE);
	crypto_generichash_update(&st, hs->h, LZBR_KEY_SIZE);
	crypto_generichash_update(&st, e_a, LZBR_KEY_SIZE);
	crypto_generichash_final(&st, hs->h, LZBR_KEY_SIZE);
}

static void hs_session(struct lzbr_session *s, const struct lzbr_hs *hs, bool initiator)
{
	hs_key(initiator ? s->tx : s->rx, hs->ck, "i>a");
	hs_key(initiator ? s->rx : s->tx, hs->ck, "a>i");
	s->tx_n = s->rx_n = 0;
}

int lzbr_key_public(uint8_t pk[LZBR_KEY_SIZE], const uint8_t sk[LZBR_KEY_SIZE])
{
	return crypto_scalarmult_base(pk, sk) ? -1 : 0;
}

/* A name as the wire carries it: NUL-padded to LZBR_NAME_SIZE. */
static void hs_name(char out[LZBR_NAME_SIZE], const char *name)
{
	memset(out, 0, LZBR_NAME_SIZE);
	strncpy(out, name, LZBR_NAME_SIZE - 1);
}

int lzbr_hs_hello(struct lzbr_hs *hs, struct lzbr_hello *out, const uint8_t *sk_i,
		  const uint8_t *pk_i, const uint8_t *pk_a, const char *name_i,
		  const char *name_a)
{
	char ni[LZBR_NAME_SIZE], na[LZBR_NAME_SIZE];

	hs_name(ni, name_i);
	hs_name(na, name_a);
	crypto_box_keypair(hs->e_pk, hs->e_sk);	/* an X25519 pair */
	hs_h1(hs, pk_i, pk_a, ni, na, hs->e_pk);
	if (hs_mix(hs->ck, hs->e_sk, pk_a, sk_i, pk_a))
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out->eph, hs->e_pk, LZBR_KEY_SIZE);
	memcpy(out->name, ni, LZBR_NAME_SIZE);
	hs_tag(out->tag, hs->ck, "hello", hs->h);
	return 0;
}

int lzbr_hs_accept(struct lzbr_hs *hs, struct lzbr_challenge *out, struct lzbr_session *s,
		   const struct lzbr_hello *in, const uint8_t *sk_a, const uint8_t *pk_a,
		   const uint8_t *pk_i, const char *name_a)
{
	char na[LZBR_NAME_SIZE];

	hs_name(na, name_a);
	hs_h1(hs, pk_i, pk_a, in->name, na, in->eph);
	if (hs_mix(hs->ck, sk_a, in->eph, sk_a, pk_i) ||
	    hs_tag_ok(in->tag, hs->ck, "hello", hs->h))
		goto refuse;
	crypto_box_keypair(hs->e_pk, hs->e_sk);
	hs_h2(hs, hs->e_pk);
	if (hs_mix(hs->ck, hs->e_sk, in->eph, hs->e_sk, pk_i))
		goto refuse;
	memset(out, 0, sizeof(*out));
	memcpy(out->eph, hs->e_pk, LZBR_KEY_SIZE);
	hs_tag(out->tag, hs->ck, "challenge", hs->h);
	hs_session(s, hs, false);
	sodium_memzero(hs->e_sk, sizeof(hs->e_sk));	/* not needed again */
	return 0;
refuse:
	sodium_memzero(hs, sizeof(*hs));
	return -1;
}

int lzbr_hs_finish(struct lzbr_hs *hs, struct lzbr_auth *out, struct lzbr_session *s,
		   const struct lzbr_challenge *in, const uint8_t *sk_i)
{
	int r = -1;

	hs_h2(hs, in->eph);
	if (!hs_mix(hs->ck, hs->e_sk, in->eph, sk_i, in->eph) &&
	    !hs_tag_ok(in->tag, hs->ck, "challenge", hs->h)) {
		hs_tag(out->tag, hs->ck, "auth", hs->h);
		hs_session(s, hs, true);
		r = 0;
	}
	sodium_memzero(hs->e_sk, sizeof(hs->e_sk));
	return r;
}

int lzbr_hs_confirm(const struct lzbr_hs *hs, const struct lzbr_auth *in)
{
	return hs_tag_ok(in->tag, hs->ck, "auth", hs->h);
}

static void frame_nonce(uint8_t nonce[12], uint64_t n)
{
	int i;

	memset(nonce, 0, 12);
	for (i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(n >> (8 * i));
}

void lzbr_seal(struct lzbr_session *s, const struct lzbr_hdr *h, const void *in, size_t len,
	       void *out)
{
	uint8_t nonce[12];

	frame_nonce(nonce, s->tx_n++);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(out, (uint8_t *)out + len, NULL, in, len,
							   (const void *)h, sizeof(*h), NULL,
							   nonce, s->tx);
}

int lzbr_unseal(struct lzbr_session *s, const struct lzbr_hdr *h, const void *in, size_t len,
		void *out)
{
	uint8_t nonce[12];

	if (len < LZBR_TAG_SIZE)
		return -1;
	frame_nonce(nonce, s->rx_n);
	if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(out, NULL, in, len - LZBR_TAG_SIZE,
							       (const uint8_t *)in + len -
							       LZBR_TAG_SIZE, (const void *)h,
							       sizeof(*h), nonce, s->rx))
		return -1;
	s->rx_n++;
	return 0;
}
