/* SPDX-License-Identifier: GPL-2.0-only */
/* lzchan-bridged: configuration (lzbr_conf.c) and what the parts share. */
#ifndef LZBR_H
#define LZBR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <lzchan.h>

#include "lzbr_wire.h"

#define LZBR_MAX_PEERS		64
#define LZBR_MAX_ROUTES		256
#define LZBR_MAX_ALLOWS		1024
#define LZBR_DEFAULT_PORT	13337
#define LZBR_DEFAULT_WINDOW	(256 * 1024)

struct lzbr_peer_conf {
	char name[LZBR_NAME_SIZE];
	struct sockaddr_storage addr;	/* where to connect (has_addr) */
	socklen_t addr_len;
	bool has_addr;
	uint8_t pk[LZBR_KEY_SIZE];	/* its public key (public-key=) */
};

/* A proxy channel "CHANNEL@PEER" here, for the channel CHANNEL on PEER. */
struct lzbr_route_conf {
	char channel[LZBR_NAME_SIZE];
	char proxy[LZBR_NAME_SIZE];
	int peer;			/* index in peers */
	struct lzchan_opts opts;	/* the proxy channel's geometry */
};

/* PEER's senders may feed the local channel CHANNEL ("*": any). */
struct lzbr_allow_conf {
	int peer;
	char channel[LZBR_NAME_SIZE];
};

/* poll-us's bound: a bridge never spins longer than this between sleeps. */
#define LZBR_MAX_POLL_US 10000

struct lzbr_conf {
	char name[LZBR_NAME_SIZE];	/* this bridge's, as peers know it */
	struct sockaddr_storage listen;
	socklen_t listen_len;
	bool has_listen;
	bool has_sk;
	uint8_t sk[LZBR_KEY_SIZE], pk[LZBR_KEY_SIZE];	/* private-key, and its public */
	char devices[256];		/* UCX_NET_DEVICES: "device", else derived */
	char transports[128];		/* UCX_TLS: "transports" (default tcp) */
	uint16_t data_lo, data_hi;	/* UCX's own listener's ports (UCX_TCP_PORT_RANGE) */
	bool trusted;			/* "fabric trusted": no tunnel wanted */
	uint64_t window;		/* credit per stream, bytes */
	int poll_us;			/* "poll-us"; -1: not said (the CPUs decide) */
	char status[256];		/* where to write the status (JSON), or "" */
	int npeers, nroutes, nallows;
	struct lzbr_peer_conf peers[LZBR_MAX_PEERS];
	struct lzbr_route_conf routes[LZBR_MAX_ROUTES];
	struct lzbr_allow_conf allows[LZBR_MAX_ALLOWS];
};

/* Read @path into @c: 0, or -1 with the reason (and line) in @err. */
int lzbr_conf_load(struct lzbr_conf *c, const char *path, char *err, size_t errlen);

/* A private key file (lzchan-bridged --genkey: base64, mode 0600) into
 * @sk: 0, or -1 with the reason in @why. */
int lzbr_conf_read_key(const char *file, uint8_t sk[LZBR_KEY_SIZE], char *why, size_t whylen);

/* A key in base64 (44 characters): 0, or -1. */
int lzbr_key_parse(const char *s, uint8_t key[LZBR_KEY_SIZE]);

/* @key in base64, NUL-terminated, into @out (at least 45 bytes). */
void lzbr_key_format(char *out, size_t outlen, const uint8_t key[LZBR_KEY_SIZE]);

/* The peer of that name, or -1. */
int lzbr_conf_peer(const struct lzbr_conf *c, const char *name);

/* May @peer's senders feed local channel @channel? */
bool lzbr_conf_allowed(const struct lzbr_conf *c, int peer, const char *channel);

/* "ADDR:PORT" or "[ADDR6]:PORT" (PORT defaults to LZBR_DEFAULT_PORT). */
int lzbr_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

#endif /* LZBR_H */
