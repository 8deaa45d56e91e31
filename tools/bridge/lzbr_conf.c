// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan-bridged's configuration file (lzchan-bridged(8)): one directive
 * per line, '#' to the end of a line is a comment.
 *
 *   name NAME                   this bridge's name (peers know it by it)
 *   listen ADDR[:PORT]          accept peers there (else: connect only)
 *   private-key FILE            this bridge's key (--genkey; 0600)
 *   peer NAME [ADDR[:PORT]] public-key=BASE64
 *   device IFNAME[,IFNAME...]   the only interfaces UCX may use
 *   data-ports LO-HI            UCX's own listener (default: listen's + 1..64)
 *   transports LIST             UCX_TLS for bridge traffic (default tcp)
 *   fabric trusted              the network needs no tunnel (--check)
 *   route CHANNEL@PEER [slots=N] [slot_size=N] [senders=N] [mode=OCTAL]
 *   allow PEER CHANNEL...       ("*": every channel)
 *   window BYTES                credit per remote sender (default 256 KiB)
 *   poll-us USECONDS            poll this long after work before sleeping
 *                               (0-10000; default 50 with 4 CPUs or more, else 0)
 *   status FILE                 keep the bridge's counters there (JSON)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "lzbr.h"

#define LZBR_KEY_FILE_MAX	4096

static int conf_fail(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
{
	va_list ap;
	int n = line ? snprintf(err, errlen, "%s:%d: ", path, line) :
		       snprintf(err, errlen, "%s: ", path);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

int lzbr_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128];
	const char *port = NULL;
	unsigned long p = LZBR_DEFAULT_PORT;
	char *end;
	size_t n;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || (size_t)(close - s - 1) >= sizeof(host))
			return -EINVAL;
		n = (size_t)(close - s - 1);
		memcpy(host, s + 1, n);
		host[n] = 0;
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return -EINVAL;
	} else {
		const char *colon = strrchr(s, ':');

		n = colon ? (size_t)(colon - s) : strlen(s);
		if (n >= sizeof(host) || !n)
			return -EINVAL;
		memcpy(host, s, n);
		host[n] = 0;
		if (colon)
			port = colon + 1;
	}
	if (port) {
		errno = 0;
		p = strtoul(port, &end, 10);
		if (errno || !*port || *end || !p || p > 65535)
			return -EINVAL;
	}
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)p);
		*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

int lzbr_key_parse(const char *s, uint8_t key[LZBR_KEY_SIZE])
{
	size_t n;
	const char *end;

	if (strlen(s) != sodium_base64_ENCODED_LEN(LZBR_KEY_SIZE, sodium_base64_VARIANT_ORIGINAL) - 1)
		return -1;
	if (sodium_base642bin(key, LZBR_KEY_SIZE, s, strlen(s), NULL, &n, &end,
			      sodium_base64_VARIANT_ORIGINAL) || n != LZBR_KEY_SIZE || *end)
		return -1;
	return 0;
}

void lzbr_key_format(char *out, size_t outlen, const uint8_t key[LZBR_KEY_SIZE])
{
	sodium_bin2base64(out, outlen, key, LZBR_KEY_SIZE, sodium_base64_VARIANT_ORIGINAL);
}

/* The private key file: one base64 key (whitespace around it), readable by
 * its owner only. */
int lzbr_conf_read_key(const char *file, uint8_t sk[LZBR_KEY_SIZE], char *why, size_t whylen)
{
	char buf[LZBR_KEY_FILE_MAX], *p, *e;
	struct stat st;
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		snprintf(why, whylen, "key file %s: %s", file, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "key file %s: not a regular file", file);
		close(fd);
		return -1;
	}
	if (st.st_mode & 077) {
		snprintf(why, whylen, "key file %s: readable by others (mode %03o; want 0600)",
			 file, (unsigned int)(st.st_mode & 0777));
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		snprintf(why, whylen, "key file %s: %s", file, strerror(errno));
		return -1;
	}
	buf[n] = 0;
	for (p = buf; *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'; p++)
		;
	for (e = p + strlen(p); e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
					  e[-1] == '\r'); e--)
		;
	*e = 0;
	if (lzbr_key_parse(p, sk)) {
		snprintf(why, whylen, "key file %s: not a private key (one base64 key of %d bytes, "
			 "as 'lzchan-bridged --genkey' writes)", file, LZBR_KEY_SIZE);
		sodium_memzero(buf, sizeof(buf));
		return -1;
	}
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

static bool conf_name(char dst[LZBR_NAME_SIZE], const char *src)
{
	size_t n = strlen(src), i;

	if (!n || n >= LZBR_NAME_SIZE)
		return false;
	for (i = 0; i < n; i++)
		if (src[i] < '!' || src[i] > '~' || src[i] == '/')
			return false;
	memset(dst, 0, LZBR_NAME_SIZE);
	memcpy(dst, src, n);
	return true;
}

static bool conf_u32(const char *s, uint32_t *v)
{
	unsigned long long x;
	char *end;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || !*s || *end || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

int lzbr_conf_peer(const struct lzbr_conf *c, const char *name)
{
	int i;

	for (i = 0; i < c->npeers; i++)
		if (!strcmp(c->peers[i].name, name))
			return i;
	return -1;
}

bool lzbr_conf_allowed(const struct lzbr_conf *c, int peer, const char *channel)
{
	int i;

	for (i = 0; i < c->nallows; i++) {
		if (c->allows[i].peer != peer)
			continue;
		/* "*" is every channel but a proxy (NAME@PEER): a peer must
		 * not relay through us to a third bridge unless named. */
		if (!strcmp(c->allows[i].channel, "*") ? !strchr(channel, '@') :
		    !strcmp(c->allows[i].channel, channel))
			return true;
	}
	return false;
}

#define MAX_WORDS	64

int lzbr_conf_load(struct lzbr_conf *c, const char *path, char *err, size_t errlen)
{
	char line[1024], *w[MAX_WORDS], why[256], *save;
	FILE *f = fopen(path, "re");
	int lineno = 0, nw, i, ret = -1;

	memset(c, 0, sizeof(*c));
	c->window = LZBR_DEFAULT_WINDOW;
	c->poll_us = -1;
	if (!f)
		return conf_fail(err, errlen, path, 0, "%s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			conf_fail(err, errlen, path, lineno, "line longer than %zu bytes",
				  sizeof(line) - 2);
			goto out;
		}
		if (hash)
			*hash = 0;
		nw = 0;
		for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
			if (nw == MAX_WORDS) {
				conf_fail(err, errlen, path, lineno, "more than %d words", MAX_WORDS);
				goto out;
			}
			w[nw++] = t;
		}
		if (!nw)
			continue;
		if (!strcmp(w[0], "name") && nw == 2) {
			if (!conf_name(c->name, w[1])) {
				conf_fail(err, errlen, path, lineno, "bad name '%s'", w[1]);
				goto out;
			}
		} else if (!strcmp(w[0], "listen") && nw == 2) {
			if (lzbr_parse_addr(w[1], &c->listen, &c->listen_len)) {
				conf_fail(err, errlen, path, lineno, "bad address '%s' (ADDR[:PORT])", w[1]);
				goto out;
			}
			c->has_listen = true;
		} else if (!strcmp(w[0], "private-key") && nw == 2) {
			if (lzbr_conf_read_key(w[1], c->sk, why, sizeof(why)) ||
			    lzbr_key_public(c->pk, c->sk)) {
				conf_fail(err, errlen, path, lineno, "%s", why);
				goto out;
			}
			c->has_sk = true;
		} else if (!strcmp(w[0], "key")) {
			conf_fail(err, errlen, path, lineno, "'key' (one shared key) is gone: any holder "
				  "of a shared key can speak as any peer.  Give this bridge "
				  "'private-key FILE' (lzchan-bridged --genkey) and each peer "
				  "'public-key=' (lzchan-bridged --pubkey)");
			goto out;
		} else if (!strcmp(w[0], "device") && nw == 2) {
			if (strlen(w[1]) >= sizeof(c->devices) || strspn(w[1],
			    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:,") !=
			    strlen(w[1])) {
				conf_fail(err, errlen, path, lineno, "device wants IFNAME[,IFNAME...]");
				goto out;
			}
			strcpy(c->devices, w[1]);
		} else if (!strcmp(w[0], "transports") && nw == 2) {
			if (strlen(w[1]) >= sizeof(c->transports) || strspn(w[1],
			    "abcdefghijklmnopqrstuvwxyz0123456789_,") != strlen(w[1]) ||
			    strstr(w[1], "all") || strstr(w[1], "sm") || strstr(w[1], "self") ||
			    strstr(w[1], "cma") || strstr(w[1], "posix") || strstr(w[1], "sysv") ||
			    strstr(w[1], "xpmem") || strstr(w[1], "knem")) {
				conf_fail(err, errlen, path, lineno, "transports wants network transports "
					  "(tcp, rc, ud, dc...): shared memory and loopback would carry "
					  "bridge traffic past the network's keys");
				goto out;
			}
			strcpy(c->transports, w[1]);
		} else if (!strcmp(w[0], "data-ports") && nw == 2) {
			unsigned int lo, hi;
			int end = 0;

			if (sscanf(w[1], "%u-%u%n", &lo, &hi, &end) != 2 || w[1][end] || !lo ||
			    hi > 65535 || lo > hi) {
				conf_fail(err, errlen, path, lineno, "data-ports wants LO-HI (ports)");
				goto out;
			}
			c->data_lo = (uint16_t)lo;
			c->data_hi = (uint16_t)hi;
		} else if (!strcmp(w[0], "fabric") && nw == 2 && !strcmp(w[1], "trusted")) {
			c->trusted = true;
		} else if (!strcmp(w[0], "status") && nw == 2) {
			if (w[1][0] != '/' || strlen(w[1]) >= sizeof(c->status)) {
				conf_fail(err, errlen, path, lineno, "status wants an absolute path");
				goto out;
			}
			strcpy(c->status, w[1]);
		} else if (!strcmp(w[0], "window") && nw == 2) {
			uint32_t v;

			if (!conf_u32(w[1], &v) || v < 4096) {
				conf_fail(err, errlen, path, lineno, "window wants 4096 bytes or more");
				goto out;
			}
			c->window = v;
		} else if (!strcmp(w[0], "poll-us") && nw == 2) {
			uint32_t v;

			if (!conf_u32(w[1], &v) || v > LZBR_MAX_POLL_US) {
				conf_fail(err, errlen, path, lineno,
					  "poll-us wants 0 to %d microseconds", LZBR_MAX_POLL_US);
				goto out;
			}
			c->poll_us = (int)v;
		} else if (!strcmp(w[0], "peer") && nw >= 2 && nw <= 4) {
			struct lzbr_peer_conf *p = &c->peers[c->npeers];
			bool has_pk = false;

			if (c->npeers == LZBR_MAX_PEERS) {
				conf_fail(err, errlen, path, lineno, "more than %d peers", LZBR_MAX_PEERS);
				goto out;
			}
			memset(p, 0, sizeof(*p));
			if (!conf_name(p->name, w[1]) || lzbr_conf_peer(c, w[1]) >= 0) {
				conf_fail(err, errlen, path, lineno, "bad or repeated peer name '%s'", w[1]);
				goto out;
			}
			for (i = 2; i < nw; i++) {
				if (!strncmp(w[i], "public-key=", 11)) {
					if (lzbr_key_parse(w[i] + 11, p->pk)) {
						conf_fail(err, errlen, path, lineno, "peer '%s': public-key "
							  "wants the peer's key in base64 (lzchan-bridged "
							  "--pubkey)", p->name);
						goto out;
					}
					has_pk = true;
				} else if (!strncmp(w[i], "key=", 4)) {
					conf_fail(err, errlen, path, lineno, "peer '%s': 'key=' (a shared "
						  "key) is gone: give it 'public-key=' (lzchan-bridged "
						  "--pubkey on that host)", p->name);
					goto out;
				} else if (!p->has_addr && !lzbr_parse_addr(w[i], &p->addr, &p->addr_len)) {
					p->has_addr = true;
				} else {
					conf_fail(err, errlen, path, lineno, "peer: bad word '%s'", w[i]);
					goto out;
				}
			}
			if (!has_pk) {
				conf_fail(err, errlen, path, lineno, "peer '%s' has no public-key=", p->name);
				goto out;
			}
			for (i = 0; i < c->npeers; i++)
				if (!sodium_memcmp(c->peers[i].pk, p->pk, LZBR_KEY_SIZE)) {
					conf_fail(err, errlen, path, lineno, "peers '%s' and '%s' have the "
						  "same public key: a key is one identity", c->peers[i].name,
						  p->name);
					goto out;
				}
			c->npeers++;
		} else if (!strcmp(w[0], "route") && nw >= 2) {
			struct lzbr_route_conf *r = &c->routes[c->nroutes];
			char *at = strrchr(w[1], '@');

			if (c->nroutes == LZBR_MAX_ROUTES) {
				conf_fail(err, errlen, path, lineno, "more than %d routes", LZBR_MAX_ROUTES);
				goto out;
			}
			memset(r, 0, sizeof(*r));
			if (!conf_name(r->proxy, w[1]) || !at) {
				conf_fail(err, errlen, path, lineno, "route wants CHANNEL@PEER, not '%s'", w[1]);
				goto out;
			}
			*at = 0;
			r->peer = lzbr_conf_peer(c, at + 1);
			if (!conf_name(r->channel, w[1]) || r->peer < 0) {
				conf_fail(err, errlen, path, lineno, "route '%s@%s': %s", w[1], at + 1,
					  r->peer < 0 ? "no such peer (declare it first)" : "bad channel name");
				goto out;
			}
			if (!c->peers[r->peer].has_addr) {
				conf_fail(err, errlen, path, lineno, "route to peer '%s', which has no address",
					  at + 1);
				goto out;
			}
			lzchan_opts_init(&r->opts);
			for (i = 2; i < nw; i++) {
				if (!strncmp(w[i], "mode=", 5)) {
					char *end;
					unsigned long m = strtoul(w[i] + 5, &end, 8);

					if (!w[i][5] || *end || m > 0777) {
						conf_fail(err, errlen, path, lineno,
							  "route: mode wants octal permission bits, not '%s'",
							  w[i] + 5);
						goto out;
					}
					r->opts.mode = (uint32_t)m;
					continue;
				}
				uint32_t *dst = !strncmp(w[i], "slots=", 6) ? &r->opts.slot_count :
						!strncmp(w[i], "slot_size=", 10) ? &r->opts.slot_size :
						!strncmp(w[i], "senders=", 8) ? &r->opts.max_senders : NULL;

				if (!dst || !conf_u32(strchr(w[i], '=') + 1, dst)) {
					conf_fail(err, errlen, path, lineno, "route: bad option '%s'", w[i]);
					goto out;
				}
			}
			c->nroutes++;
		} else if (!strcmp(w[0], "allow") && nw >= 3) {
			int peer = lzbr_conf_peer(c, w[1]);

			if (peer < 0) {
				conf_fail(err, errlen, path, lineno, "allow: no such peer '%s' (declare it first)",
					  w[1]);
				goto out;
			}
			for (i = 2; i < nw; i++) {
				struct lzbr_allow_conf *a = &c->allows[c->nallows];

				if (c->nallows == LZBR_MAX_ALLOWS) {
					conf_fail(err, errlen, path, lineno, "more than %d allows", LZBR_MAX_ALLOWS);
					goto out;
				}
				a->peer = peer;
				if (!conf_name(a->channel, w[i])) {
					conf_fail(err, errlen, path, lineno, "allow: bad channel '%s'", w[i]);
					goto out;
				}
				c->nallows++;
			}
		} else {
			conf_fail(err, errlen, path, lineno, "unknown directive or wrong number of words: '%s'",
				  w[0]);
			goto out;
		}
	}
	if (!c->name[0]) {
		conf_fail(err, errlen, path, 0, "no 'name'");
		goto out;
	}
	if (c->npeers && !c->has_sk) {
		conf_fail(err, errlen, path, 0, "no 'private-key' (lzchan-bridged --genkey makes one)");
		goto out;
	}
	for (i = 0; i < c->npeers; i++)
		if (!sodium_memcmp(c->peers[i].pk, c->pk, LZBR_KEY_SIZE)) {
			conf_fail(err, errlen, path, 0, "peer '%s' has this bridge's own public key",
				  c->peers[i].name);
			goto out;
		}
	if (c->has_listen) {
		const struct sockaddr_in *in = (const void *)&c->listen;
		const struct sockaddr_in6 *in6 = (const void *)&c->listen;

		if ((in->sin_family == AF_INET && in->sin_addr.s_addr == htonl(INADDR_ANY)) ||
		    (in6->sin6_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))) {
			conf_fail(err, errlen, path, 0, "listen wants one interface's address (the "
				  "one peers reach, a WireGuard interface's for one), not the "
				  "wildcard: that would listen on every interface");
			goto out;
		}
		if (!c->data_lo) {
			unsigned int port = ntohs(in->sin_family == AF_INET ? in->sin_port :
						  in6->sin6_port);

			c->data_lo = (uint16_t)(port < 65535 - 64 ? port + 1 : port - 64);
			c->data_hi = (uint16_t)(c->data_lo + 63);
		}
	}
	/* A range, not one port: UCX cannot reuse an address its last run's
	 * connections still hold (TIME_WAIT), and tries the next. */
	if (!c->data_lo) {
		c->data_lo = LZBR_DEFAULT_PORT + 1;
		c->data_hi = LZBR_DEFAULT_PORT + 64;
	}
	if (!c->transports[0])
		strcpy(c->transports, "tcp");
	ret = 0;
out:
	fclose(f);
	return ret;
}
