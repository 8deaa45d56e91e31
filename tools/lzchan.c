// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan: inspect and drive lzchan channels from the shell.
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <lzchan.h>

#define EXIT_FAILED	1
#define EXIT_USAGE	2

static const char *prog = "lzchan";

static void usage(FILE *to)
{
	fprintf(to,
		"usage: %s [--version] [--help] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  features   show the ABI and features of the loaded module\n",
		prog);
}

/* One line: what failed, the errno's name, and what to do about it. */
static void report(const char *what, int err)
{
	const char *hint = "";

	if (err == ENOENT)
		hint = ": the lzchan module is not loaded (load it with 'modprobe lzchan')";
	else if (err == EACCES || err == EPERM)
		hint = ": ask an administrator to add you to the group that owns " LZCHAN_DEVICE_PATH;
	fprintf(stderr, "%s: %s: %s (%s)%s\n", prog, what, strerror(err),
		strerrorname_np(err) ? strerrorname_np(err) : "?", hint);
}

static int cmd_features(int argc, char **argv)
{
	struct lzchan_features f;
	int ret;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "%s: features takes no arguments\n", prog);
		return EXIT_USAGE;
	}
	ret = lzchan_dev_features(&f);
	if (ret < 0) {
		report(LZCHAN_DEVICE_PATH, -ret);
		return EXIT_FAILED;
	}
	printf("abi_version %u\npage_size %u\nfeatures 0x%llx\n",
	       f.abi_version, f.page_size, (unsigned long long)f.features);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("lzchan %d.%d\n", lzchan_version_major(),
		       lzchan_version_minor());
		return 0;
	}
	if (!strcmp(argv[1], "features"))
		return cmd_features(argc - 1, argv + 1);

	fprintf(stderr, "%s: unknown command '%s' (try '%s --help')\n", prog,
		argv[1], prog);
	return EXIT_USAGE;
}
