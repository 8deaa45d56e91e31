// SPDX-License-Identifier: GPL-2.0-only
/*
 * iceoryx classic beside lzchan's pub/sub (lzchan-bench pubsub): the same
 * shape -- one publisher, S subscribers in one process, rounds of 256
 * messages of the same length, each subscriber taking every round -- on
 * iceoryx 2.0 through its C binding (Debian's libiceoryx-binding-c-dev),
 * with its RouDi daemon (iox-roudi) started here for the run.
 *
 * Built with iceoryx when its headers are installed (the Makefile defines
 * LZB_HAVE_ICEORYX); without it every call says why not.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lzb.h"

#ifdef LZB_HAVE_ICEORYX
#include <iceoryx_binding_c/chunk.h>
#include <iceoryx_binding_c/log.h>
#include <iceoryx_binding_c/publisher.h>
#include <iceoryx_binding_c/runtime.h>
#include <iceoryx_binding_c/subscriber.h>

/* iceoryx's compile-time cap (IOX_MAX_SUBSCRIBERS_PER_PUBLISHER). */
#define IOX_SUBS_CAP	256

static pid_t iox_roudi = -1;

/* Start iox-roudi for this run; NULL, or why not. */
const char *lzb_iox_start(void)
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return "fork failed";
	if (!pid) {
		int fd = open("/dev/null", O_WRONLY);

		/* Its banner goes to stdout whatever its log level. */
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("iox-roudi", "iox-roudi", "-l", "off", "-m", "off", (char *)NULL);
		_exit(127);
	}
	/* RouDi sets its shared memory up in well under a second; a
	 * runtime that comes before it waits for it anyway. */
	usleep(500000);
	if (waitpid(pid, &st, WNOHANG) == pid)
		return WIFEXITED(st) && WEXITSTATUS(st) == 127 ?
		       "iox-roudi is not installed (apt-get install iceoryx)" :
		       "iox-roudi exited at once (is another RouDi running?)";
	iox_roudi = pid;
	return NULL;
}

void lzb_iox_stop(void)
{
	if (iox_roudi > 0) {
		kill(iox_roudi, SIGTERM);
		waitpid(iox_roudi, NULL, 0);
		iox_roudi = -1;
	}
}

unsigned int lzb_iox_max_subs(void)
{
	return IOX_SUBS_CAP;
}

/* The publisher's one call per message (callgrind collects inside):
 * loan a chunk, write the message, publish it to every subscriber. */
__attribute__((noinline, used)) int lzb_iox_publish(iox_pub_t pub, const void *buf, size_t len)
{
	void *chunk;

	if (iox_pub_loan_chunk(pub, &chunk, (uint32_t)len) != AllocationResult_SUCCESS)
		return -ENOMEM;
	memcpy(chunk, buf, len);
	iox_pub_publish_chunk(pub, chunk);
	return 0;
}

/* The run (under callgrind, or timed: *@ns_per_msg, the publishes' time
 * only). */
int lzb_iox_inner(unsigned int nsubs, uint64_t n, size_t len, double *ns_per_msg)
{
	iox_sub_storage_t *ss = calloc(nsubs, sizeof(*ss));
	iox_sub_t *subs = calloc(nsubs, sizeof(*subs));
	iox_pub_storage_t ps;
	iox_pub_options_t po;
	iox_sub_options_t so;
	char name[64], msg[256];
	uint64_t done, spent = 0;
	unsigned int i, k;
	iox_pub_t pub;

	if (!ss || !subs || nsubs > IOX_SUBS_CAP || len > sizeof(msg))
		lzb_die("iceoryx: bad run");
	memset(msg, 'p', sizeof(msg));
	snprintf(name, sizeof(name), "lzb-iox-%d", getpid());
	iox_set_loglevel(Iceoryx_LogLevel_Off);
	iox_runtime_init(name);
	iox_pub_options_init(&po);
	po.historyCapacity = 0;
	pub = iox_pub_init(&ps, "lzb", name, "ticks", &po);
	iox_sub_options_init(&so);
	so.queueCapacity = 256;		/* a round: nobody overflows */
	so.historyRequest = 0;
	for (i = 0; i < nsubs; i++)
		subs[i] = iox_sub_init(&ss[i], "lzb", name, "ticks", &so);
	/* Connected: RouDi wires each subscriber to the publisher. */
	for (k = 0; k < 5000; k++) {
		for (i = 0; i < nsubs; i++)
			if (iox_sub_get_subscription_state(subs[i]) != SubscribeState_SUBSCRIBED)
				break;
		if (i == nsubs)
			break;
		usleep(1000);
	}
	if (k == 5000)
		lzb_die("iceoryx: subscribers not connected after 5 s");
	for (done = 0; done < n; done += 256) {
		uint64_t t0 = ns_per_msg ? lzb_now_ns() : 0;

		for (k = 0; k < 256; k++)
			if (lzb_iox_publish(pub, msg, len))
				lzb_die("iceoryx: loan failed (the mempool ran out)");
		if (ns_per_msg)
			spent += lzb_now_ns() - t0;
		for (i = 0; i < nsubs; i++)
			for (k = 0; k < 256; k++) {
				const void *c;

				if (iox_sub_take_chunk(subs[i], &c) != ChunkReceiveResult_SUCCESS)
					lzb_die("iceoryx: subscriber %u lost a message", i);
				iox_sub_release_chunk(subs[i], c);
			}
	}
	if (ns_per_msg)
		*ns_per_msg = (double)spent / (double)n;
	for (i = 0; i < nsubs; i++)
		iox_sub_deinit(subs[i]);
	iox_pub_deinit(pub);
	/* No iox_runtime_shutdown(): under valgrind the process then never
	 * exits (its runtime thread stays in recvfrom()).  The process
	 * ends here, its ports given back above (RouDi runs without
	 * monitoring: a valgrind-slowed process would look dead to it). */
	free(subs);
	free(ss);
	return 0;
}

const char *lzb_iox_version(void)
{
	return "iceoryx 2.0.3 (Debian; C binding)";
}
#else
const char *lzb_iox_start(void)
{
	return "lzchan-bench was built without iceoryx (apt-get install libiceoryx-binding-c-dev iceoryx)";
}

void lzb_iox_stop(void)
{
}

unsigned int lzb_iox_max_subs(void)
{
	return 0;
}

int lzb_iox_inner(unsigned int nsubs, uint64_t n, size_t len, double *ns_per_msg)
{
	(void)nsubs;
	(void)n;
	(void)len;
	(void)ns_per_msg;
	lzb_die("built without iceoryx");
}

const char *lzb_iox_version(void)
{
	return "iceoryx (not built)";
}
#endif
