// SPDX-License-Identifier: GPL-2.0-only
/*
 * remote: lzchan between two hosts through two lzchan-bridged, next to
 * UCX's own active messages over the same link in the same run.
 *
 * The two hosts are network namespaces joined by a veth pair (root, ip),
 * each with its own directory of channels; the bridges speak UCX over TCP
 * on the veth.  Measured, in this order:
 *   ucx_perftest ucp_am_lat and ucp_am_bw between the namespaces (the
 *     engine's own limit on this link);
 *   the local ping-pong half round trip (one host's hop, processes);
 *   the remote ping-pong: a process on A sends to ping@hostB, one on B
 *     answers to pong@hostA; half the round trip;
 *   the remote one-way rate: N messages A -> B, timed at A from the first
 *     send to B's answer after the last.
 * The targets (issue 14): remote latency <= 1.3 x (UCX's + two local hops),
 * remote rate >= 0.8 x UCX's.  Without root, ip, lzchan-bridged or
 * ucx_perftest the table says n/a and why.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lzb.h"

#define RM_PORT		14301
#define RM_PERF_PORT	14299	/* below RM_PORT: its data ports follow it */
#define RM_TIMEOUT_NS	20000000000LL
#ifndef RM_SPIN_NS
#define RM_SPIN_NS	20000		/* the measuring processes' receivers */
#endif

struct rm {
	char tmp[64], ns_a[32], ns_b[32], bridged[4096];
	pid_t bridge[2];
	char why[256];
	char extra[64];		/* more configuration for both bridges */
};

static int rm_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int rm_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Where this program is, for lzchan-bridged beside it. */
static bool rm_find_bridged(struct rm *r)
{
	ssize_t k = readlink("/proc/self/exe", r->bridged, sizeof(r->bridged) - 32);
	char *slash;

	if (k <= 0)
		return false;
	r->bridged[k] = 0;
	slash = strrchr(r->bridged, '/');
	if (!slash)
		return false;
	strcpy(slash + 1, "lzchan-bridged");
	return access(r->bridged, X_OK) == 0;
}

static pid_t rm_spawn(const char *ns, const char *shm, char *const argv[], const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		char env_shm[160];
		int fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		snprintf(env_shm, sizeof(env_shm), "LZCHAN_SHM_DIR=%s", shm);
		putenv(env_shm);
		setenv("UCX_TLS", "tcp", 1);
		setenv("LZCHAN_BACKEND", "shm", 1);
		{
			char *args[16] = { "ip", "netns", "exec", (char *)ns };
			int i;

			for (i = 0; argv[i] && i < 11; i++)
				args[4 + i] = argv[i];
			args[4 + i] = NULL;
			execvp("ip", args);
		}
		_exit(127);
	}
	return pid;
}

static void rm_down(struct rm *r)
{
	int i;

	for (i = 0; i < 2; i++)
		if (r->bridge[i] > 0) {
			kill(r->bridge[i], SIGTERM);
			waitpid(r->bridge[i], NULL, 0);
		}
	rm_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null; rm -rf %s",
	      r->ns_a, r->ns_b, r->tmp);
}

static bool rm_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Two hosts, their bridges, and the proxies ping@hostB and pong@hostA. */
static bool rm_up(struct rm *r)
{
	char path[256];
	uint64_t t0;
	int i;

	if (geteuid()) {
		snprintf(r->why, sizeof(r->why), "network namespaces need root");
		return false;
	}
	if (!rm_find_bridged(r)) {
		snprintf(r->why, sizeof(r->why), "no lzchan-bridged beside this program");
		return false;
	}
	if (rm_sh("command -v ucx_perftest >/dev/null && command -v ip >/dev/null")) {
		snprintf(r->why, sizeof(r->why), "ucx_perftest or ip missing (apt-get install ucx-utils iproute2)");
		return false;
	}
	snprintf(r->tmp, sizeof(r->tmp), "/tmp/lzb-remote.%d", (int)getpid());
	snprintf(r->ns_a, sizeof(r->ns_a), "lzbra%d", (int)getpid());
	snprintf(r->ns_b, sizeof(r->ns_b), "lzbrb%d", (int)getpid());
	if (rm_sh("set -e; mkdir -p %1$s/A %1$s/B; umask 077\n"
		  "%5$s --genkey > %1$s/A.key; %5$s --genkey > %1$s/B.key\n"
		  "pa=$(%5$s --pubkey < %1$s/A.key); pb=$(%5$s --pubkey < %1$s/B.key)\n"
		  "ip netns add %2$s; ip netns add %3$s\n"
		  "ip link add %2$sv type veth peer name %3$sv\n"
		  "ip link set %2$sv netns %2$s; ip link set %3$sv netns %3$s\n"
		  "ip -n %2$s addr add 10.233.0.1/24 dev %2$sv; ip -n %2$s link set %2$sv up; ip -n %2$s link set lo up\n"
		  "ip -n %3$s addr add 10.233.0.2/24 dev %3$sv; ip -n %3$s link set %3$sv up; ip -n %3$s link set lo up\n"
		  "printf 'name hostA\\nlisten 10.233.0.1:%4$d\\nprivate-key %1$s/A.key\\n"
		  "peer hostB 10.233.0.2:%4$d public-key=%%s\\n"
		  "route ping@hostB slots=1024\\nallow hostB pong\\n%6$s' \"$pb\" > %1$s/A.conf\n"
		  "printf 'name hostB\\nlisten 10.233.0.2:%4$d\\nprivate-key %1$s/B.key\\n"
		  "peer hostA 10.233.0.1:%4$d public-key=%%s\\n"
		  "route pong@hostA slots=1024\\nallow hostA ping\\n%6$s' \"$pa\" > %1$s/B.conf\n",
		  r->tmp, r->ns_a, r->ns_b, RM_PORT, r->bridged, r->extra)) {
		snprintf(r->why, sizeof(r->why), "could not make two network namespaces here");
		return false;
	}
	for (i = 0; i < 2; i++) {
		char conf[128], shm[96], log[128];
		char *argv[] = { r->bridged, "-c", conf, NULL };

		snprintf(conf, sizeof(conf), "%s/%c.conf", r->tmp, 'A' + i);
		snprintf(shm, sizeof(shm), "%s/%c", r->tmp, 'A' + i);
		snprintf(log, sizeof(log), "%s/%c.log", r->tmp, 'A' + i);
		r->bridge[i] = rm_spawn(i ? r->ns_b : r->ns_a, shm, argv, log);
	}
	snprintf(path, sizeof(path), "%s/B/lzchan.pong@hostA", r->tmp);
	for (t0 = lzb_now_ns(); lzb_now_ns() - t0 < 10000000000ULL; lzb_sleep_ns(10000000)) {
		char pa[256];

		snprintf(pa, sizeof(pa), "%s/A/lzchan.ping@hostB", r->tmp);
		if (rm_exists(path) && rm_exists(pa))
			return true;
	}
	snprintf(r->why, sizeof(r->why), "the bridges did not connect (see %s/*.log)", r->tmp);
	return false;
}

/* ucx_perftest TEST between the namespaces: the "Final:" line's field
 * @col (1: iterations; lat: 3 average usec; bw: 7 overall msg/s). */
static double rm_perftest(struct rm *r, const char *test, uint32_t size, uint64_t n, int col)
{
	char cmd[1024], line[512];
	double v = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "ip netns exec %s env UCX_TLS=tcp ucx_perftest -p %d >/dev/null 2>&1 & s=$!; sleep 0.5; "
		 "ip netns exec %s env UCX_TLS=tcp ucx_perftest 10.233.0.2 -p %d -t %s -s %u -n %llu 2>&1; "
		 "wait $s",
		 r->ns_b, RM_PERF_PORT, r->ns_a, RM_PERF_PORT, test, size, (unsigned long long)n);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		double x[8];

		if (!strncmp(line, "Final:", 6) &&
		    sscanf(line + 6, "%lf %lf %lf %lf %lf %lf %lf %lf", &x[0], &x[1], &x[2], &x[3],
			   &x[4], &x[5], &x[6], &x[7]) == 8)
			v = x[col - 1];
	}
	if (f)
		pclose(f);
	return v;
}

/* Side A (@a) or B: open its receiver, say so on @ready, wait for @go,
 * open its sender (the other side's receiver is there by then).  B
 * answers each ping on pong@hostA (ping-pong), or counts @n and answers
 * once (one-way); A times it.  Returns A's elapsed ns. */
static double rm_side(struct rm *r, bool a, bool pingpong, uint32_t size, uint64_t n,
		      int ready, int go, int peer_ready, int peer_go)
{
	uint64_t k, warm = pingpong ? n / 10 : 0, t0 = 0;
	char shm[96], buf[4096] = { 0 }, c = 'r';
	struct lzchan *rx, *tx;
	int ret;

	snprintf(shm, sizeof(shm), "%s/%c", r->tmp, a ? 'A' : 'B');
	setenv("LZCHAN_SHM_DIR", shm, 1);
	setenv("LZCHAN_BACKEND", "shm", 1);
	{
		/* Park soon: the two bridges need CPUs too (a receiver that
		 * spins for a second takes one from them on a small machine). */
		struct lzchan_opts o;

		lzchan_opts_init(&o);
		o.slot_count = 1024;
		o.max_senders = 4;
		o.spin_ns = RM_SPIN_NS;
		ret = lzchan_open(&rx, a ? "pong" : "ping", LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
		if (ret)
			lzb_die("remote: creating %s: %s", a ? "pong" : "ping", strerror(-ret));
	}
	if (a) {	/* A: B's receiver is there; let B open its sender */
		if (read(peer_ready, &c, 1) != 1 || write(peer_go, &c, 1) != 1)
			lzb_die("remote: side B failed");
	} else if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1) {
		lzb_die("remote: pipe");
	}
	ret = lzchan_open_wait(&tx, a ? "ping@hostB" : "pong@hostA", LZCHAN_SENDER, NULL,
			       RM_TIMEOUT_NS);
	if (ret)
		lzb_die("remote: the proxy: %s", strerror(-ret));
	for (k = 0; k < warm + n; k++) {
		if (a && k == warm)
			t0 = lzb_now_ns();
		if (a) {
			ret = lzchan_send_wait(tx, buf, size, RM_TIMEOUT_NS);
			if (!ret && pingpong)
				ret = lzchan_recv_wait(rx, buf, sizeof(buf), NULL, RM_TIMEOUT_NS);
		} else {
			ret = lzchan_recv_wait(rx, buf, sizeof(buf), NULL, RM_TIMEOUT_NS);
			if (ret >= 0 && pingpong)
				ret = lzchan_send_wait(tx, buf, size, RM_TIMEOUT_NS);
		}
		if (ret < 0)
			lzb_die("remote: message %llu: %s", (unsigned long long)k, strerror(-ret));
	}
	/* One-way: B's one answer after the last message stops A's clock. */
	if (!pingpong) {
		ret = a ? lzchan_recv_wait(rx, buf, sizeof(buf), NULL, RM_TIMEOUT_NS) :
			  lzchan_send_wait(tx, buf, 1, RM_TIMEOUT_NS);
		if (ret < 0)
			lzb_die("remote: the answer: %s", strerror(-ret));
	}
	k = lzb_now_ns() - t0;
	lzchan_close(tx);
	lzchan_close(rx);
	lzchan_unlink(a ? "pong" : "ping");	/* the next measurement makes its own */
	return (double)k;
}

/* One measurement: half a round trip (ns), or messages/s one way. */
static double rm_measure(struct rm *r, bool pingpong, uint32_t size, uint64_t n)
{
	int ready[2], go[2], st;
	double ns;
	pid_t pid;

	if (pipe(ready) || pipe(go))
		lzb_die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		lzb_die("fork: %s", strerror(errno));
	if (!pid) {
		rm_side(r, false, pingpong, size, n, ready[1], go[0], -1, -1);
		_exit(0);
	}
	ns = rm_side(r, true, pingpong, size, n, -1, -1, ready[0], go[1]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		lzb_die("remote: side B failed");
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	return pingpong ? ns / (2.0 * (double)n) : (double)n / (ns / 1e9);
}

int lzb_cmd_remote(int argc, char **argv)
{
	uint64_t n = 20000, size = 56;
	struct lzb_table *t;
	struct rm r = { .bridge = { -1, -1 } };
	double ucx_lat = -1, ucx_rate = -1, local = -1, lat = -1, rate = -1;
	int c, poll = -1;
	char pollstr[16];

	while ((c = getopt_long(argc, argv, "n:s:p:h",
				(const struct option[]){ { "messages", required_argument, NULL, 'n' },
							 { "size", required_argument, NULL, 's' },
							 { "poll-us", required_argument, NULL, 'p' },
							 LZB_COMMON_OPTS, { 0 } }, NULL)) != -1) {
		if (lzb_common_opt(c, optarg))
			continue;
		switch (c) {
		case 'n':
			if (!lzb_parse_size(optarg, &n) || n < 100)
				lzb_usage_error("remote", "--messages wants 100 or more");
			break;
		case 's':
			if (!lzb_parse_size(optarg, &size) || !size || size > 4096)
				lzb_usage_error("remote", "--size wants 1..4096");
			break;
		case 'p': {
			uint64_t us;

			if (!lzb_parse_size(optarg, &us) && strcmp(optarg, "0"))
				lzb_usage_error("remote", "--poll-us wants 0..10000");
			if (!strcmp(optarg, "0"))
				us = 0;
			if (us > 10000)
				lzb_usage_error("remote", "--poll-us wants 0..10000");
			snprintf(r.extra, sizeof(r.extra), "poll-us %llu\\n", (unsigned long long)us);
			poll = (int)us;
			break;
		}
		case 'h':
			printf("usage: lzchan-bench remote [--messages N] [--size BYTES] [--poll-us US] [OPTIONS]\n"
			       "lzchan across two network namespaces through two lzchan-bridged,\n"
			       "next to ucx_perftest's active messages over the same veth (root).\n"
			       "--poll-us: both bridges' poll-us (default: theirs, by the CPUs).\n"
			       LZB_COMMON_HELP);
			return 0;
		default:
			lzb_usage_error("remote", "bad option");
		}
	}
	if (lzb.quick)
		n = 500;
	lzb_begin("remote");
	t = lzb_table_new("remote", "Remote: two hosts (network namespaces, veth) through lzchan-bridged");
	lzb_table_col(t, "measure", "", 0);
	lzb_table_col(t, "UCX alone", "", 2);
	lzb_table_col(t, "lzchan remote", "", 2);
	lzb_table_col(t, "ratio", "", 2);
	lzb_table_col(t, "target", "", 0);
	if (rm_up(&r)) {
		lzb_progress("remote: ucx_perftest");
		ucx_lat = rm_perftest(&r, "ucp_am_lat", (uint32_t)size, n, 3) * 1000.0;
		ucx_rate = rm_perftest(&r, "ucp_am_bw", (uint32_t)size, n * 5, 7);
		lzb_progress("remote: local ping-pong");
		local = lzb_lat_pingpong_ns((uint32_t)size, n, true, 0);
		lzb_progress("remote: remote ping-pong");
		lat = rm_measure(&r, true, (uint32_t)size, n);
		lzb_progress("remote: remote one-way");
		rate = rm_measure(&r, false, (uint32_t)size, n * 5);
		lzb_progress(NULL);
	}
	rm_down(&r);
	lzb_table_row(t);
	lzb_cell_str(t, "half round trip (ns)");
	if (ucx_lat > 0) lzb_cell_num(t, ucx_lat); else lzb_cell_na(t);
	if (lat > 0) lzb_cell_num(t, lat); else lzb_cell_na(t);
	if (lat > 0 && ucx_lat > 0 && local > 0)
		lzb_cell_num(t, lat / (ucx_lat + 2 * local));
	else
		lzb_cell_na(t);
	lzb_cell_str(t, "<= 1.3 x (UCX + 2 local hops)");
	lzb_table_row(t);
	lzb_cell_str(t, "one-way rate (msgs/s)");
	if (ucx_rate > 0) lzb_cell_num(t, ucx_rate); else lzb_cell_na(t);
	if (rate > 0) lzb_cell_num(t, rate); else lzb_cell_na(t);
	if (rate > 0 && ucx_rate > 0) lzb_cell_num(t, rate / ucx_rate); else lzb_cell_na(t);
	lzb_cell_str(t, ">= 0.8 x UCX");
	if (r.why[0])
		lzb_table_note(t, "n/a: %s", r.why);
	else
		lzb_table_note(t, "%llu round trips, %llu one-way messages of %llu bytes; local hop (processes): %.0f ns; "
			       "UCX_TLS=tcp over a veth pair; bridges' poll-us: %s", (unsigned long long)n,
			       (unsigned long long)(n * 5), (unsigned long long)size, local,
			       poll < 0 ? "default" : (snprintf(pollstr, sizeof(pollstr), "%d", poll), pollstr));
	lzb_emit(t);
	return 0;
}
