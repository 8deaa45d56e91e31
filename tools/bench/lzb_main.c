// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan-bench: rerun the seeds' experiments on libchan and, in the same
 * run, on the baselines they compare against.
 *
 * Exit status: 0 success, 1 a run failed, 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lzb.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *what;
} cmds[] = {
	{ "headline", lzb_cmd_headline, "the summary in under a minute (make run prints it)" },
	{ "c2c", lzb_cmd_c2c, "core-to-core roofline: flag ping-pong matrix, 32 KiB bandwidth (+CLDEMOTE)" },
	{ "ring", lzb_cmd_ring, "N senders -> 1 receiver: classic, lazy, lazy+CLDEMOTE rings vs libchan" },
	{ "lat", lzb_cmd_lat, "ping-pong latency by size, with K idle lanes, sendrecv ring of P processes" },
	{ "msgrate", lzb_cmd_msgrate, "Sandia real-world message rate (cold cache, peers, four patterns)" },
	{ "threads", lzb_cmd_threads, "T threads: a lane each vs one lane behind a lock (UCX paper)" },
	{ "wakeup", lzb_cmd_wakeup, "waking a parked receiver vs eventfd and futex ping-pong; idle CPU" },
	{ "ipm", lzb_cmd_ipm, "instructions per message, counted by callgrind, vs the lazy ring" },
	{ "pubsub", lzb_cmd_pubsub, "publisher instructions per message, 1 to 1024 subscribers (callgrind)" },
	{ "alt", lzb_cmd_alt, "what users pick instead: pipe, AF_UNIX, POSIX mqueue vs libchan" },
	{ "remote", lzb_cmd_remote, "two hosts (netns) through lzchan-bridged vs UCX alone (root)" },
	{ "plot", lzb_cmd_plot, "turn a --csv sweep into a PNG with gnuplot" },
};

static void usage(FILE *to)
{
	size_t i;

	fprintf(to,
		"usage: lzchan-bench COMMAND [OPTIONS]\n"
		"       lzchan-bench COMMAND --help\n"
		"\n"
		"Every figure is measured next to its baseline in the same run, so\n"
		"ratios hold on a noisy machine.  Commands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(to, "  %-9s %s\n", cmds[i].name, cmds[i].what);
	fprintf(to, "\nOptions every command takes:\n" LZB_COMMON_HELP
		"\nEnvironment: LZCHAN_BACKEND=dev|shm|auto picks libchan's backend.\n"
		"Exit status: 0 success, 1 a run failed, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	size_t i;
	int ret;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		setvbuf(stdout, NULL, _IOLBF, 0);
		ret = cmds[i].fn(argc - 1, argv + 1);
		lzb_finish();
		return ret;
	}
	fprintf(stderr, "lzchan-bench: unknown command '%s' (try 'lzchan-bench --help')\n", argv[1]);
	return 2;
}
