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
	bool has_key;			/* its own key, else the global one */
	uint8_t key[LZBR_KEY_SIZE];
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

struct lzbr_conf {
	char name[LZBR_NAME_SIZE];	/* this bridge's, as peers know it */
	struct sockaddr_storage listen;
	socklen_t listen_len;
	bool has_listen;
	bool has_key;
	uint8_t key[LZBR_KEY_SIZE];
	uint64_t window;		/* credit per stream, bytes */
	char status[256];		/* where to write the status (JSON), or "" */
	int npeers, nroutes, nallows;
	struct lzbr_peer_conf peers[LZBR_MAX_PEERS];
	struct lzbr_route_conf routes[LZBR_MAX_ROUTES];
	struct lzbr_allow_conf allows[LZBR_MAX_ALLOWS];
};

/* Read @path into @c: 0, or -1 with the reason (and line) in @err. */
int lzbr_conf_load(struct lzbr_conf *c, const char *path, char *err, size_t errlen);

/* A key file's bytes, hashed to LZBR_KEY_SIZE; -1 with the reason in
 * @why for a file others may read, or one under 32 bytes. */
int lzbr_conf_read_key(const char *file, uint8_t key[LZBR_KEY_SIZE], char *why, size_t whylen);

/* The key a peer must prove it holds, or NULL (none configured). */
const uint8_t *lzbr_conf_key(const struct lzbr_conf *c, int peer);

/* The peer of that name, or -1. */
int lzbr_conf_peer(const struct lzbr_conf *c, const char *name);

/* May @peer's senders feed local channel @channel? */
bool lzbr_conf_allowed(const struct lzbr_conf *c, int peer, const char *channel);

/* "ADDR:PORT" or "[ADDR6]:PORT" (PORT defaults to LZBR_DEFAULT_PORT). */
int lzbr_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

#endif /* LZBR_H */
