// SPDX-License-Identifier: GPL-2.0-only
/*
 * lzchan: inspect and drive lzchan channels from the shell.
 *
 *   lzchan list | show NAME | create NAME ... | remove NAME
 *   lzchan send NAME | recv NAME | watch [NAME] | features
 *   lzchan grant NAME --role R --socket PATH | revoke NAME ID|--all
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error,
 * 3 timed out (recv/send --timeout).  See man/man1/lzchan.1.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <lzchan.h>

#define EXIT_FAILED	1
#define EXIT_USAGE	2
#define EXIT_TIMEOUT	3

/* The record prefix of send/recv --records: a 4-byte little-endian length. */
#define RECORD_PREFIX	4

static const char *prog = "lzchan";
static const char *cmdname = "";		/* for messages: "lzchan send" */
static const char *endpoint_path;	/* grant --socket, or --endpoint: an
					 * endpoint is in play (explain()) */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* ---- messages ---- */

static const char *errname(int err)
{
	const char *n = strerrorname_np(err);

	return n ? n : "?";
}

/* "lzchan CMD: WHAT: strerror (ENAME): HINT" -- one line on stderr. */
static void __attribute__((format(printf, 3, 4)))
fail(const char *what, int err, const char *hint, ...)
{
	va_list ap;

	fprintf(stderr, "%s%s%s: %s: %s (%s)", prog, *cmdname ? " " : "", cmdname,
		what, strerror(err), errname(err));
	if (hint && *hint) {
		fputs(": ", stderr);
		va_start(ap, hint);
		vfprintf(stderr, hint, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
}

static void __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s%s%s: ", prog, *cmdname ? " " : "", cmdname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s %s%s--help')\n", prog, cmdname, *cmdname ? " " : "");
}

static const char *shm_dir(void)
{
	const char *d = getenv("LZCHAN_SHM_DIR");

	return d && *d ? d : "/dev/shm";
}

static const char *backend_str(uint32_t backend)
{
	return backend == LZCHAN_BACKEND_DEV ? "dev" : "shm";
}

/* The backend lzchan_open() would pick, as text ("dev (/dev/lzchan)"). */
static void backend_where(uint32_t backend, char *buf, size_t len)
{
	if (backend == LZCHAN_BACKEND_DEV)
		snprintf(buf, len, "dev (%s)", LZCHAN_DEVICE_PATH);
	else
		snprintf(buf, len, "shm (%s)", shm_dir());
}

/*
 * Explain a failure to reach the channel machinery or a channel: the
 * errno name and what to do.  @name may be NULL.  @need: 'r' receiving,
 * 'w' sending, 0 otherwise.
 */
static void explain(const char *what, const char *name, int err, int need)
{
	struct lzchan_chan_stat st;
	struct stat ds;
	uint32_t be;

	switch (err) {
	case ENODEV:
		fail(what, err, "LZCHAN_BACKEND=dev but the lzchan module is not loaded: "
		     "load it with 'modprobe lzchan' (or unset LZCHAN_BACKEND to use %s)",
		     shm_dir());
		return;
	case ENOENT:
		if (name)
			fail(what, err, "no channel '%s' here: see 'lzchan list'", name);
		else
			fail(what, err, "%s does not exist: create it or set LZCHAN_SHM_DIR",
			     shm_dir());
		return;
	case EACCES:
	case EPERM:
		/* The device is in play unless the shm backend is forced. */
		if (!(getenv("LZCHAN_BACKEND") && !strcmp(getenv("LZCHAN_BACKEND"), "shm")) &&
		    stat(LZCHAN_DEVICE_PATH, &ds) == 0 &&
		    access(LZCHAN_DEVICE_PATH, R_OK | W_OK)) {
			fail(what, err, "%s is mode %04o, owner uid %u gid %u: ask an "
			     "administrator to add you to its group", LZCHAN_DEVICE_PATH,
			     ds.st_mode & 07777, ds.st_uid, ds.st_gid);
			return;
		}
		if (name && lzchan_stat(name, &st, &be) == 0) {
			if (need && be == LZCHAN_BACKEND_SHM)
				/* Every party maps the file read-write. */
				fail(what, err, "'%s' is mode %04o, owner uid %u gid %u; on the "
				     "shared-memory backend %s needs both the 'r' and the 'w' "
				     "bit for you (uid %u gid %u): ask its owner to change it",
				     name, st.mode, st.uid, st.gid,
				     need == 'r' ? "receiving" : "sending", getuid(), getgid());
			else if (need)
				fail(what, err, "'%s' is mode %04o, owner uid %u gid %u; %s needs "
				     "the '%c' bit for you (uid %u gid %u): ask its owner to "
				     "change it", name, st.mode, st.uid, st.gid,
				     need == 'r' ? "receiving" : "sending", need, getuid(), getgid());
			else if (be == LZCHAN_BACKEND_DEV)
				fail(what, err, "'%s' belongs to uid %u (creator uid %u): only "
				     "they or a process with CAP_SYS_ADMIN may do this", name,
				     st.uid, st.cuid);
			else
				fail(what, err, "'%s' belongs to uid %u: only its owner may "
				     "remove it from %s (or change it)", name, st.uid, shm_dir());
			return;
		}
		fail(what, err, "no permission: check the mode of %s and of %s",
		     LZCHAN_DEVICE_PATH, shm_dir());
		return;
	case EBUSY:
		fail(what, err, "a receiver is already attached to '%s' (one per channel): "
		     "stop it first", name ? name : "?");
		return;
	case EUSERS:
		fail(what, err, "every lane of '%s' is in use or holds undelivered messages: "
		     "let the receiver drain it, or recreate it with more --lanes",
		     name ? name : "?");
		return;
	case EEXIST:
		fail(what, err, "'%s' exists: remove it with 'lzchan remove %s', or pass "
		     "--exist-ok", name ? name : "?", name ? name : "?");
		return;
	case EPIPE:
		if (endpoint_path && !strcmp(cmdname, "grant"))
			fail(what, err, "the process that connected to %s closed the "
			     "connection before the endpoint reached it", endpoint_path);
		else if (endpoint_path)
			fail(what, err, "the peer of '%s' left, or the endpoint received from "
			     "%s was revoked by the channel's owner ('lzchan revoke'): ask "
			     "for a new one", name ? name : "?", endpoint_path);
		else
			fail(what, err, "the receiver of '%s' left: start one with 'lzchan "
			     "recv %s'", name ? name : "?", name ? name : "?");
		return;
	case EKEYREVOKED:
		fail(what, err, "the endpoint was revoked by the channel's owner ('lzchan "
		     "revoke'): ask for a new one");
		return;
	case EOPNOTSUPP:
		if (endpoint_path || !strcmp(cmdname, "revoke") || !strcmp(cmdname, "grant") ||
		    !strcmp(cmdname, "show")) {
			struct lzchan_features f;
			const char *b = getenv("LZCHAN_BACKEND");

			if (((b && !strcmp(b, "shm")) || lzchan_dev_features(&f) == -ENOENT) &&
			    !strcmp(cmdname, "revoke"))
				fail(what, err, "nothing to revoke on the shared-memory backend "
				     "(%s): what 'lzchan grant' gives there is the channel file "
				     "itself, with no role limit, and it stays its holder's until "
				     "closed; to shut holders out, remove the channel and create "
				     "it anew (they keep only the old file)", shm_dir());
			else if ((b && !strcmp(b, "shm")) || lzchan_dev_features(&f) == -ENOENT)
				fail(what, err, "not on the shared-memory backend (%s): an "
				     "endpoint there is the channel file itself, which carries no "
				     "role and is neither listed nor revocable (that takes the "
				     "lzchan module, %s)", shm_dir(), LZCHAN_DEVICE_PATH);
			else
				fail(what, err, "this lzchan module has no endpoints "
				     "(LZCHAN_FEAT_ENDPOINT): update it");
			return;
		}
		fail(what, err, NULL);
		return;
	case EISCONN:
		if (endpoint_path) {
			fail(what, err, "the endpoint from %s was attached already (one "
			     "attachment per endpoint, ever): ask for a new one", endpoint_path);
			return;
		}
		fail(what, err, NULL);
		return;
	case ENOTTY:
		if (endpoint_path) {
			fail(what, err, "the descriptor from %s is not an lzchan endpoint",
			     endpoint_path);
			return;
		}
		fail(what, err, NULL);
		return;
	case EPROTOTYPE: {
		struct lzchan_chan_stat st;
		bool ps = name && lzchan_stat(name, &st, NULL) == 0 &&
			  (st.flags & LZCHAN_STAT_PUBSUB);

		if (ps)
			fail(what, err, "'%s' is a publish/subscribe channel: use 'lzchan "
			     "publish %s' and 'lzchan subscribe %s'", name, name, name);
		else
			fail(what, err, "'%s' is a channel, not a publish/subscribe one: use "
			     "'lzchan send' and 'lzchan recv'", name ? name : "?");
		return;
	}
	case EPROTO:
		if (endpoint_path && strcmp(cmdname, "grant")) {
			fail(what, err, "what came over %s was not one lzchan endpoint "
			     "(refused and closed)", endpoint_path);
			return;
		}
		fail(what, err, "'%s' in %s is not a valid lzchan channel file: remove it "
		     "with 'lzchan remove %s'", name ? name : "?", shm_dir(), name ? name : "?");
		return;
	case ENOSPC:
		if (lzchan_list(NULL, 0, &be) >= 0 && be == LZCHAN_BACKEND_SHM)
			fail(what, err, "%s has no room for the whole channel (it is reserved "
			     "when made): remove channels there, or use fewer --slots/--lanes "
			     "or a smaller --slot-size", shm_dir());
		else
			fail(what, err, "the module's max_channels is reached: remove channels, "
			     "or raise /sys/module/lzchan/parameters/max_channels");
		return;
	case EFBIG:
		fail(what, err, "the channel is larger than the module's max_channel_bytes: "
		     "use fewer --slots/--lanes or a smaller --slot-size");
		return;
	case EDQUOT:
		fail(what, err, "your channels would exceed the module's max_user_bytes: "
		     "remove some, or ask to raise it");
		return;
	case ENOMEM:
		fail(what, err, "out of memory (with --strict: none on that node): use a "
		     "smaller channel or another --node");
		return;
	case EINVAL:
		if (getenv("LZCHAN_BACKEND")) {
			const char *b = getenv("LZCHAN_BACKEND");

			if (*b && strcmp(b, "dev") && strcmp(b, "shm") && strcmp(b, "auto")) {
				fail(what, err, "LZCHAN_BACKEND='%s' is not dev, shm or auto", b);
				return;
			}
		}
		fail(what, err, "invalid argument");
		return;
	case ENAMETOOLONG:
		fail(what, err, "channel names are at most %d bytes", LZCHAN_NAME_MAX);
		return;
	default:
		fail(what, err, NULL);
	}
}

/* ---- JSON ---- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* ---- numbers ---- */

static bool parse_u64(const char *s, int base, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_u32_opt(const char *opt, const char *s, uint32_t min, uint32_t max,
			  uint32_t *out)
{
	uint64_t v;

	if (!parse_u64(s, 10, UINT32_MAX, &v) || v < min || v > max) {
		usage_error("%s '%s' is not a whole number in %u..%u", opt, s, min, max);
		return false;
	}
	*out = v;
	return true;
}

/* Milliseconds (non-negative) to nanoseconds. */
static bool parse_ms(const char *s, int64_t *ns)
{
	uint64_t v;

	if (!parse_u64(s, 10, INT64_MAX / 1000000, &v)) {
		usage_error("--timeout '%s' is not a number of milliseconds", s);
		return false;
	}
	*ns = (int64_t)v * 1000000;
	return true;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static bool name_ok(const char *name)
{
	size_t len, i;

	if (!name) {
		usage_error("a channel NAME is required");
		return false;
	}
	len = strlen(name);
	if (!len || len > LZCHAN_NAME_MAX) {
		usage_error("channel name '%s' must be 1..%d bytes", name, LZCHAN_NAME_MAX);
		return false;
	}
	for (i = 0; i < len; i++)
		if (name[i] < '!' || name[i] > '~' || name[i] == '/') {
			usage_error("channel name '%s': only printable ASCII without spaces "
				    "or '/'", name);
			return false;
		}
	return true;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- commands ---- */

struct cmd {
	const char *name;
	const char *alias;
	int (*fn)(int argc, char **argv);
	const char *synopsis;
	const char *help;
};

static const struct cmd *find_cmd(const char *name);
static int help_for(const char *name, FILE *to);

/*
 * getopt_long over a subcommand's arguments (options may follow NAME).
 * Returns the option, -1 at the end, or '?' after printing a usage error.
 */
static int next_opt(int argc, char **argv, const char *shortopts,
		    const struct option *longopts)
{
	const struct option *o;
	const char *sc;
	int c;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	if (c != '?')
		return c;
	/*
	 * What went wrong is told by optopt alone (getopt does not say which
	 * argument, or where in a cluster like -jx, it stopped): 0 for an
	 * unknown (or ambiguous) long option, which getopt has just passed;
	 * else the option's character.
	 */
	if (!optopt) {
		const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";

		usage_error("unknown option '%.*s'", (int)strcspn(arg, "="), arg);
		return c;
	}
	sc = optopt != ':' ? strchr(shortopts, optopt) : NULL;
	if (!sc) {
		usage_error("unknown option '-%c'", isprint(optopt) ? optopt : '?');
		return c;
	}
	for (o = longopts; o && o->name; o++)
		if (o->val == optopt)
			break;
	if (sc[1] == ':')
		usage_error("option '-%c'%s%s%s needs a value", optopt,
			    o && o->name ? " ('--" : "", o && o->name ? o->name : "",
			    o && o->name ? "')" : "");
	else	/* only --name=VALUE can give a value to a flag */
		usage_error("option '--%s' takes no value", o && o->name ? o->name : "?");
	return c;
}

static int reset_opts(void)
{
	optind = 0;	/* glibc: full reinitialisation */
	return 0;
}

/* Positional arguments after options: exactly @want (0 or 1). */
static bool positional(int argc, char **argv, int min, int max, const char **name)
{
	int n = argc - optind;

	if (n < min) {
		usage_error("a channel NAME is required");
		return false;
	}
	if (n > max) {
		usage_error("unexpected argument '%s'", argv[optind + max]);
		return false;
	}
	*name = n ? argv[optind] : NULL;
	return true;
}

#define HELP_OPT	{ "help", no_argument, NULL, 'h' }
#define JSON_OPT	{ "json", no_argument, NULL, 'j' }

/* ---- list ---- */

static const char *rx_state(const struct lzchan_chan_stat *s)
{
	static char subs[24];

	if (s->flags & LZCHAN_STAT_PUBSUB) {
		snprintf(subs, sizeof(subs), "%u sub%s", s->receiver, s->receiver == 1 ? "" : "s");
		return subs;
	}
	if (!s->receiver)
		return "none";
	return (s->rx_parked & 1) ? "parked" : "attached";
}

/* Fetch every visible channel; *out is malloc'ed. */
static int fetch_all(struct lzchan_chan_stat **out, uint32_t *backend)
{
	struct lzchan_chan_stat *all = NULL;
	unsigned int room = 0;
	int ret;

	for (;;) {
		ret = lzchan_list(all, room, backend);
		if (ret < 0 || (unsigned int)ret <= room)
			break;
		free(all);
		room = ret + 16;
		all = calloc(room, sizeof(*all));
		if (!all)
			return -ENOMEM;
	}
	if (ret < 0) {
		free(all);
		return ret;
	}
	*out = all;
	return ret;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct lzchan_chan_stat *)a)->name,
		      ((const struct lzchan_chan_stat *)b)->name);
}

/* A channel's largest message, as libchan computes it (LZCHAN_MSG_MAX). */
static unsigned long long max_msg(const struct lzchan_chan_stat *s)
{
	if (s->flags & LZCHAN_STAT_PUBSUB)
		return s->slot_size - sizeof(struct lzchan_ps_slot);	/* one slot */
	unsigned long long m = (unsigned long long)(s->slot_count - 1) * s->slot_size -
			       sizeof(struct lzchan_slot_hdr);

	return m > LZCHAN_MSG_MAX ? LZCHAN_MSG_MAX : m;
}

static void json_chan(const struct lzchan_chan_stat *s)
{
	printf("{\"name\": ");
	json_str(s->name);
	printf(", \"kind\": \"%s\"", (s->flags & LZCHAN_STAT_PUBSUB) ? "pubsub" : "channel");
	printf(", \"uid\": %u, \"gid\": %u, \"cuid\": %u, \"cgid\": %u, \"mode\": \"%04o\""
	       ", \"numa_node\": %d, \"node_strict\": %s",
	       s->uid, s->gid, s->cuid, s->cgid, s->mode, s->numa_node,
	       (s->create_flags & LZCHAN_CREATE_NODE_STRICT) ? "true" : "false");
	if (s->slot_size)
		printf(", \"slot_size\": %u, \"slot_count\": %u, \"max_senders\": %u"
		       ", \"max_msg\": %llu", s->slot_size, s->slot_count, s->max_senders,
		       max_msg(s));
	else
		printf(", \"slot_size\": null, \"slot_count\": null, \"max_senders\": null"
		       ", \"max_msg\": null");
	if (s->flags & LZCHAN_STAT_HIDDEN) {
		/* The caller may not read it: no activity to show. */
		printf(", \"bytes\": %llu, \"hidden\": true, \"senders\": null"
		       ", \"receiver\": null, \"receiver_parked\": null, \"messages\": null"
		       ", \"wakeups\": null, \"wake_requests\": null"
		       ", \"sender_attaches\": null, \"peer_deaths\": null}",
		       (unsigned long long)s->bytes);
		return;
	}
	printf(", \"bytes\": %llu, \"hidden\": false, \"senders\": %u, \"receiver\": %s"
	       ", \"receiver_parked\": %s"
	       ", \"messages\": %llu, \"wakeups\": %llu, \"wake_requests\": %llu"
	       ", \"sender_attaches\": %llu, \"peer_deaths\": %llu",
	       (unsigned long long)s->bytes, s->senders, s->receiver ? "true" : "false",
	       s->receiver && (s->rx_parked & 1) ? "true" : "false",
	       (unsigned long long)s->messages, (unsigned long long)s->wakeups,
	       (unsigned long long)s->wake_requests, (unsigned long long)s->sender_attaches,
	       (unsigned long long)s->peer_deaths);
	if (s->flags & LZCHAN_STAT_PUBSUB)
		printf(", \"publisher\": %s, \"subscribers\": %u}", s->senders ? "true" : "false",
		       s->receiver);
	else
		printf("}");
}

static void fmt_node(const struct lzchan_chan_stat *s, char *buf, size_t len)
{
	if (s->numa_node < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%d%s", s->numa_node,
			 (s->create_flags & LZCHAN_CREATE_NODE_STRICT) ? "!" : "");
}

static int cmd_list(int argc, char **argv)
{
	static const struct option lo[] = { JSON_OPT, HELP_OPT, { 0 } };
	struct lzchan_chan_stat *all = NULL;
	bool json = false;
	const char *name;
	char where[PATH_MAX + 16];
	uint32_t backend = 0;
	int c, n, i;

	reset_opts();
	while ((c = next_opt(argc, argv, "jh", lo)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h')
			return help_for("list", stdout);
		else
			return EXIT_USAGE;
	}
	if (!positional(argc, argv, 0, 0, &name))
		return EXIT_USAGE;
	n = fetch_all(&all, &backend);
	if (n < 0) {
		explain("listing channels", NULL, -n, 0);
		return EXIT_FAILED;
	}
	qsort(all, n, sizeof(*all), cmp_name);
	backend_where(backend, where, sizeof(where));
	if (json) {
		printf("{\"backend\": \"%s\", \"where\": ", backend_str(backend));
		json_str(backend == LZCHAN_BACKEND_DEV ? LZCHAN_DEVICE_PATH : shm_dir());
		printf(", \"channels\": [");
		for (i = 0; i < n; i++) {
			printf(i ? ",\n  " : "\n  ");
			json_chan(&all[i]);
		}
		printf("%s]}\n", n ? "\n" : "");
	} else {
		printf("backend: %s\n", where);
		printf("%-20s %6s %6s %4s %4s %13s %7s %8s %12s %10s\n", "NAME", "UID", "GID",
		       "MODE", "NODE", "SLOTS", "SENDERS", "RECEIVER", "MESSAGES", "WAKEUPS");
		for (i = 0; i < n; i++) {
			const struct lzchan_chan_stat *s = &all[i];
			char slots[32], senders[24], node[16];

			if (s->slot_size) {
				snprintf(slots, sizeof(slots), "%ux%u", s->slot_count, s->slot_size);
				snprintf(senders, sizeof(senders), "%u/%u", s->senders, s->max_senders);
			} else {
				snprintf(slots, sizeof(slots), "?");
				snprintf(senders, sizeof(senders), "?");
			}
			fmt_node(s, node, sizeof(node));
			if (s->flags & LZCHAN_STAT_HIDDEN) {
				snprintf(senders, sizeof(senders), "-/%u", s->max_senders);
				printf("%-20s %6u %6u %04o %4s %13s %7s %8s %12s %10s\n", s->name,
				       s->uid, s->gid, s->mode, node, slots, senders, "-",
				       "-", "-");
				continue;
			}
			printf("%-20s %6u %6u %04o %4s %13s %7s %8s %12llu %10llu\n", s->name,
			       s->uid, s->gid, s->mode, node, slots, senders, rx_state(s),
			       (unsigned long long)s->messages, (unsigned long long)s->wakeups);
		}
	}
	free(all);
	return 0;
}

/* ---- show ---- */

static const char *lane_state(uint32_t st)
{
	switch (st) {
	case LZCHAN_LANE_FREE: return "free";
	case LZCHAN_LANE_ATTACHED: return "attached";
	case LZCHAN_LANE_CLOSED: return "closed";
	default: return "invalid";
	}
}

/* show: is lane @i of @name a remote sender's, by its holder's origin
 * record (lzchan_stat_origin(): the record as written; only an attached
 * receiver can check it against the lane's holder)? */
static bool lane_origin(const char *name, const struct lzchan_lane_stat *l, int i,
			struct lzchan_origin *o, int32_t *via)
{
	o->size = sizeof(*o);
	return l->state == LZCHAN_LANE_ATTACHED && l->alive &&
	       lzchan_stat_origin(name, (uint32_t)i, o, via) == 0;
}

static const char *sub_state(const struct lzchan_sub_stat *ss)
{
	if (ss->state == LZCHAN_LANE_ATTACHED && !ss->alive)
		return "dead";
	if (ss->state == LZCHAN_LANE_ATTACHED && ss->detached)
		return "detached";
	return lane_state(ss->state);
}

/* show, for a pub/sub channel: its subscribers, their lag and losses. */
static int show_pubsub(const char *name, const struct lzchan_chan_stat *s, uint32_t backend,
		       bool json)
{
	struct lzchan_sub_stat *ss;
	char where[PATH_MAX + 16];
	int n, i, first = 1;

	ss = calloc(LZCHAN_SUBSCRIBERS_MAX, sizeof(*ss));
	if (!ss) {
		fail(name, ENOMEM, NULL);
		return EXIT_FAILED;
	}
	n = lzchan_stat_subscribers(name, ss, LZCHAN_SUBSCRIBERS_MAX);
	if (n > LZCHAN_SUBSCRIBERS_MAX)
		n = LZCHAN_SUBSCRIBERS_MAX;
	backend_where(backend, where, sizeof(where));
	if (json) {
		printf("{\"backend\": \"%s\", \"channel\": ", backend_str(backend));
		json_chan(s);
		printf(", \"subscribers\": ");
		if (n < 0) {
			printf("null");
		} else {
			printf("[");
			for (i = 0; i < n; i++) {
				if (ss[i].state == LZCHAN_LANE_FREE && !ss[i].gen)
					continue;
				printf("%s{\"place\": %d, \"state\": \"%s\", \"gen\": %u"
				       ", \"alive\": %s, \"position\": %llu, \"lag\": %llu"
				       ", \"lost\": %llu}", first ? "" : ", ", i, sub_state(&ss[i]),
				       ss[i].gen, ss[i].alive ? "true" : "false",
				       (unsigned long long)ss[i].pos, (unsigned long long)ss[i].lag,
				       (unsigned long long)ss[i].lost);
				first = 0;
			}
			printf("]");
		}
		printf("}\n");
		free(ss);
		return 0;
	}
	printf("name:            %s (publish/subscribe)\n", s->name);
	printf("backend:         %s\n", where);
	printf("owner:           uid %u gid %u\n", s->uid, s->gid);
	printf("mode:            %04o\n", s->mode);
	printf("slots:           %u x %u bytes, one ring\n", s->slot_count, s->slot_size);
	printf("largest message: %llu bytes (one slot)\n", max_msg(s));
	printf("memory:          %llu bytes\n", (unsigned long long)s->bytes);
	if (s->flags & LZCHAN_STAT_HIDDEN) {
		printf("activity:        hidden (you may not read this channel)\n");
		free(ss);
		return 0;
	}
	printf("publisher:       %s\n", s->senders ? "attached" : "none");
	printf("subscribers:     %u attached\n", s->receiver);
	printf("messages:        %llu\n", (unsigned long long)s->messages);
	printf("wakeups:         %llu\n", (unsigned long long)s->wakeups);
	if (n < 0) {
		printf("places:          unavailable (%s)\n", errname(-n));
	} else {
		printf("%6s %-9s %6s %14s %12s %12s\n", "PLACE", "STATE", "GEN", "POSITION", "LAG",
		       "LOST");
		for (i = 0; i < n; i++) {
			if (ss[i].state == LZCHAN_LANE_FREE && !ss[i].gen)
				continue;
			printf("%6d %-9s %6u %14llu %12llu %12llu\n", i, sub_state(&ss[i]), ss[i].gen,
			       (unsigned long long)ss[i].pos, (unsigned long long)ss[i].lag,
			       (unsigned long long)ss[i].lost);
		}
	}
	free(ss);
	return 0;
}

/* show, dev: how a lane's sender came, as the module recorded it. */
static void peer_via(const struct lzchan_lane_peer *p, char *buf, size_t len)
{
	if (p->endpoint)
		snprintf(buf, len, "endpoint %llu", (unsigned long long)p->endpoint);
	else
		snprintf(buf, len, "by name");
}

static int cmd_show(int argc, char **argv)
{
	static const struct option lo[] = { JSON_OPT, HELP_OPT, { 0 } };
	struct lzchan_lane_peer *peers = NULL;
	struct lzchan_lane_stat *lanes = NULL;
	struct lzchan_chan_stat s;
	struct lzchan_origin org;
	const char *name;
	char where[PATH_MAX + 16], node[16];
	bool json = false;
	uint32_t backend = 0;
	int c, ret, nl = -1, np = -EOPNOTSUPP, i;
	char how[32];
	int32_t via;

	reset_opts();
	while ((c = next_opt(argc, argv, "jh", lo)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h')
			return help_for("show", stdout);
		else
			return EXIT_USAGE;
	}
	if (!positional(argc, argv, 1, 1, &name) || !name_ok(name))
		return EXIT_USAGE;
	ret = lzchan_stat(name, &s, &backend);
	if (ret < 0) {
		explain(name, name, -ret, 0);
		return EXIT_FAILED;
	}
	if (s.flags & LZCHAN_STAT_PUBSUB)
		return show_pubsub(name, &s, backend, json);
	if (s.max_senders) {
		lanes = calloc(s.max_senders, sizeof(*lanes));
		if (!lanes) {
			fail(name, ENOMEM, NULL);
			return EXIT_FAILED;
		}
		nl = lzchan_stat_lanes(name, lanes, s.max_senders);
		if (nl > (int)s.max_senders)	/* recreated meanwhile */
			nl = s.max_senders;
		/* dev: who is on each lane, as the module recorded it. */
		if (backend == LZCHAN_BACKEND_DEV) {
			peers = calloc(s.max_senders, sizeof(*peers));
			np = peers ? lzchan_stat_peers(name, peers, s.max_senders) : -ENOMEM;
			if (np > (int)s.max_senders)
				np = s.max_senders;
		}
	} else {
		/* Geometry unknown: the library's reason (EPROTO: not a
		 * channel; EACCES: unreadable), not a made-up one. */
		nl = lzchan_stat_lanes(name, NULL, 0);
		if (nl >= 0)
			nl = -EPROTO;	/* became a channel meanwhile */
	}
	backend_where(backend, where, sizeof(where));
	if (json) {
		printf("{\"backend\": \"%s\", \"channel\": ", backend_str(backend));
		json_chan(&s);
		printf(", \"lanes\": ");
		if (nl < 0) {
			printf("null");
		} else {
			printf("[");
			for (i = 0; i < nl; i++) {
				printf("%s{\"lane\": %d, \"state\": \"%s\", \"gen\": %u, \"alive\": %s"
				       ", \"sleepy\": %s, \"tail\": %u, \"head\": %u, \"pending\": %u"
				       ", \"messages\": %llu, \"bytes\": %llu, \"origin\": ", i ? ", " : "",
				       i, lane_state(lanes[i].state), lanes[i].gen,
				       lanes[i].alive ? "true" : "false",
				       lanes[i].sleepy ? "true" : "false", lanes[i].tail,
				       lanes[i].head, lanes[i].tail - lanes[i].head,
				       (unsigned long long)lanes[i].msgs,
				       (unsigned long long)lanes[i].bytes);
				if (lane_origin(name, &lanes[i], i, &org, &via)) {
					printf("{\"host\": ");
					json_str(org.host);
					printf(", \"uid\": %u, \"pid\": %d, \"via_pid\": %d}}", org.uid,
					       org.pid, via);
				} else {
					printf("null}");
				}
			}
			printf("]");
		}
		printf(", \"peers\": ");
		if (np < 0) {
			printf("null");
		} else {
			int first = 1;

			printf("[");
			for (i = 0; i < np; i++) {
				if (peers[i].state == LZCHAN_LANE_FREE && !peers[i].gen)
					continue;
				printf("%s{\"lane\": %d, \"state\": \"%s\", \"gen\": %u, "
				       "\"pid\": %d, \"uid\": %u, \"gid\": %u, \"endpoint\": ",
				       first ? "" : ", ", i, lane_state(peers[i].state), peers[i].gen,
				       peers[i].pid, peers[i].uid, peers[i].gid);
				if (peers[i].endpoint)
					printf("%llu}", (unsigned long long)peers[i].endpoint);
				else
					printf("null}");
				first = 0;
			}
			printf("]");
		}
		printf("}\n");
		free(lanes);
		free(peers);
		return 0;
	}
	snprintf(node, sizeof(node), "%d", s.numa_node);
	printf("name:            %s\n", s.name);
	printf("backend:         %s\n", where);
	printf("owner:           uid %u gid %u (creator uid %u gid %u)\n", s.uid, s.gid,
	       s.cuid, s.cgid);
	printf("mode:            %04o\n", s.mode);
	printf("numa node:       %s%s\n", s.numa_node < 0 ? "any (first touch)" : node,
	       (s.create_flags & LZCHAN_CREATE_NODE_STRICT) ? " (strict)" : "");
	if (s.slot_size) {
		printf("slots:           %u x %u bytes per lane\n", s.slot_count, s.slot_size);
		printf("largest message: %llu bytes%s\n", max_msg(&s),
		       max_msg(&s) == LZCHAN_MSG_MAX ? " (the most any channel carries)" : "");
		if (s.flags & LZCHAN_STAT_HIDDEN)
			printf("senders:         %u lanes\n", s.max_senders);
		else
			printf("senders:         %u attached, %u lanes\n", s.senders,
			       s.max_senders);
	} else {
		printf("slots:           unknown (the file is unreadable or not a channel)\n");
	}
	printf("memory:          %llu bytes\n", (unsigned long long)s.bytes);
	if (s.flags & LZCHAN_STAT_HIDDEN) {
		printf("activity:        hidden (you may not read this channel)\n");
		free(lanes);
		free(peers);
		return 0;
	}
	printf("receiver:        %s\n", rx_state(&s));
	printf("messages:        %llu\n", (unsigned long long)s.messages);
	printf("wake requests:   %llu\n", (unsigned long long)s.wake_requests);
	printf("wakeups:         %llu\n", (unsigned long long)s.wakeups);
	printf("sender attaches: %llu\n", (unsigned long long)s.sender_attaches);
	printf("peer deaths:     %llu\n", (unsigned long long)s.peer_deaths);
	if (nl == -EOPNOTSUPP && np >= 0) {
		/* dev: each lane's sender as the module recorded it at its
		 * open, in our namespaces (pid 0: not visible here). */
		printf("%5s %-8s %6s %8s %8s %8s  %s\n", "LANE", "STATE", "GEN", "PID", "UID",
		       "GID", "VIA");
		for (i = 0; i < np; i++) {
			if (peers[i].state == LZCHAN_LANE_FREE && !peers[i].gen)
				continue;
			peer_via(&peers[i], how, sizeof(how));
			printf("%5d %-8s %6u %8d %8u %8u  %s\n", i, lane_state(peers[i].state),
			       peers[i].gen, peers[i].pid, peers[i].uid, peers[i].gid, how);
		}
	} else if (nl == -EOPNOTSUPP && np != -EOPNOTSUPP) {
		printf("lanes:           unavailable (%s)\n", errname(-np));
	} else if (nl == -EOPNOTSUPP) {
		printf("lanes:           shown by the shm backend, or a module with "
		       "endpoints\n");
	} else if (nl < 0) {
		printf("lanes:           unavailable (%s)\n", errname(-nl));
	} else {
		printf("%5s %-8s %6s %5s %6s %10s %10s %8s %12s %14s\n", "LANE", "STATE", "GEN",
		       "ALIVE", "SLEEPY", "TAIL", "HEAD", "PENDING", "MESSAGES", "BYTES");
		for (i = 0; i < nl; i++) {
			if (lanes[i].state == LZCHAN_LANE_FREE && !lanes[i].gen)
				continue;
			printf("%5d %-8s %6u %5s %6s %10u %10u %8u %12llu %14llu\n", i,
			       lane_state(lanes[i].state), lanes[i].gen,
			       lanes[i].alive ? "yes" : "no", lanes[i].sleepy ? "yes" : "no",
			       lanes[i].tail, lanes[i].head, lanes[i].tail - lanes[i].head,
			       (unsigned long long)lanes[i].msgs,
			       (unsigned long long)lanes[i].bytes);
		}
		for (i = 0; i < nl; i++)
			if (lane_origin(name, &lanes[i], i, &org, &via))
				printf("remote lane %d:   uid %u pid %d on %s, through pid %d "
				       "(its record)\n", i, org.uid, org.pid, org.host, via);
	}
	free(lanes);
	free(peers);
	return 0;
}

/* ---- create / remove ---- */

static int cmd_create(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "slots", required_argument, NULL, 's' },
		{ "slot-size", required_argument, NULL, 'b' },
		{ "lanes", required_argument, NULL, 'l' },
		{ "senders", required_argument, NULL, 'l' },
		{ "mode", required_argument, NULL, 'm' },
		{ "node", required_argument, NULL, 'n' },
		{ "strict", no_argument, NULL, 'S' },
		{ "exist-ok", no_argument, NULL, 'e' },
		{ "pubsub", no_argument, NULL, 'p' },
		{ "subscribers", required_argument, NULL, 'u' },
		{ "policy", required_argument, NULL, 'P' },
		{ "stall", required_argument, NULL, 'T' },
		HELP_OPT, { 0 }
	};
	struct lzchan_opts o;
	struct lzchan_ps_opts po;
	const char *name;
	bool exist_ok = false, strict = false, node_set = false, pubsub = false;
	bool lanes_set = false, ps_set = false, size_set = false;
	uint64_t v;
	int c, ret;

	lzchan_opts_init(&o);
	lzchan_ps_opts_init(&po);
	reset_opts();
	while ((c = next_opt(argc, argv, "s:b:l:m:n:Seh", lo)) != -1) {
		switch (c) {
		case 'p':
			pubsub = true;
			break;
		case 'u':
			if (!parse_u32_opt("--subscribers", optarg, 1, LZCHAN_SUBSCRIBERS_MAX,
					   &po.max_subscribers))
				return EXIT_USAGE;
			ps_set = true;
			break;
		case 'P':
			if (!strcmp(optarg, "overwrite")) {
				po.policy = LZCHAN_PS_OVERWRITE;
			} else if (!strcmp(optarg, "backpressure") || !strcmp(optarg, "back-pressure")) {
				po.policy = LZCHAN_PS_BACKPRESSURE;
			} else {
				usage_error("--policy '%s' is neither 'overwrite' nor 'backpressure'",
					    optarg);
				return EXIT_USAGE;
			}
			ps_set = true;
			break;
		case 'T':
			if (!parse_u32_opt("--stall", optarg, 0, UINT32_MAX, &po.stall_ms))
				return EXIT_USAGE;
			ps_set = true;
			break;
		case 's':
			if (!parse_u32_opt("--slots", optarg, LZCHAN_SLOT_COUNT_MIN,
					   LZCHAN_SLOT_COUNT_MAX, &o.slot_count))
				return EXIT_USAGE;
			if (!is_pow2(o.slot_count)) {
				usage_error("--slots %u is not a power of two", o.slot_count);
				return EXIT_USAGE;
			}
			break;
		case 'b':
			if (!parse_u32_opt("--slot-size", optarg, LZCHAN_SLOT_SIZE_MIN,
					   LZCHAN_SLOT_SIZE_MAX, &o.slot_size))
				return EXIT_USAGE;
			if (!is_pow2(o.slot_size)) {
				usage_error("--slot-size %u is not a power of two", o.slot_size);
				return EXIT_USAGE;
			}
			size_set = true;
			break;
		case 'l':
			if (!parse_u32_opt("--lanes", optarg, 1, LZCHAN_SENDERS_MAX,
					   &o.max_senders))
				return EXIT_USAGE;
			lanes_set = true;
			break;
		case 'm':
			if (!parse_u64(optarg, 8, 0777, &v)) {
				usage_error("--mode '%s' is not octal permission bits (0..0777)",
					    optarg);
				return EXIT_USAGE;
			}
			o.mode = v;
			break;
		case 'n':
			if (!strcmp(optarg, "local")) {
				o.numa_node = LZCHAN_NODE_LOCAL;
			} else if (parse_u64(optarg, 10, INT32_MAX, &v)) {
				o.numa_node = v;
			} else {
				usage_error("--node '%s' is not a node number or 'local'", optarg);
				return EXIT_USAGE;
			}
			node_set = true;
			break;
		case 'S':
			strict = true;
			break;
		case 'e':
			exist_ok = true;
			break;
		case 'h':
			return help_for("create", stdout);
		default:
			return EXIT_USAGE;
		}
	}
	if (!positional(argc, argv, 1, 1, &name) || !name_ok(name))
		return EXIT_USAGE;
	if (strict && (!node_set || o.numa_node < 0)) {
		usage_error("--strict needs --node N");
		return EXIT_USAGE;
	}
	o.node_strict = strict;
	if (pubsub && lanes_set) {
		usage_error("--lanes is a channel's; a pub/sub channel has --subscribers");
		return EXIT_USAGE;
	}
	if (!pubsub && ps_set) {
		usage_error("--subscribers, --policy and --stall need --pubsub");
		return EXIT_USAGE;
	}
	if (pubsub) {
		po.slot_count = o.slot_count;
		if (size_set)
			po.slot_size = o.slot_size;
		po.mode = o.mode;
		po.numa_node = o.numa_node;
		po.node_strict = o.node_strict;
		ret = lzchan_ps_create(name, &po, exist_ok ? 0 : LZCHAN_EXCL);
	} else {
		ret = lzchan_create(name, &o, exist_ok ? 0 : LZCHAN_EXCL);
	}
	if (ret < 0) {
		if (ret == -EINVAL && node_set)
			fail(name, -ret, "node %d does not exist or has no memory "
			     "(see /sys/devices/system/node)", o.numa_node);
		else
			explain(name, name, -ret, 0);
		return EXIT_FAILED;
	}
	return 0;
}

static int cmd_remove(int argc, char **argv)
{
	static const struct option lo[] = { HELP_OPT, { 0 } };
	const char *name;
	int c, ret;

	reset_opts();
	while ((c = next_opt(argc, argv, "h", lo)) != -1) {
		if (c == 'h')
			return help_for("remove", stdout);
		return EXIT_USAGE;
	}
	if (!positional(argc, argv, 1, 1, &name) || !name_ok(name))
		return EXIT_USAGE;
	ret = lzchan_unlink(name);
	if (ret < 0) {
		explain(name, name, -ret, 0);
		return EXIT_FAILED;
	}
	return 0;
}

/* ---- endpoints ---- */

static const char *role_name(unsigned int role)
{
	return role == LZCHAN_SENDER ? "sender" : role == LZCHAN_RECEIVER ? "receiver" :
	       role == LZCHAN_PUBLISHER ? "publisher" : "subscriber";
}

/* A Unix socket address for @path, or false after a usage error. */
static bool unix_addr(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (!*path || strlen(path) >= sizeof(a->sun_path)) {
		usage_error("socket path '%s' must be 1..%zu bytes", path, sizeof(a->sun_path) - 1);
		return false;
	}
	memcpy(a->sun_path, path, strlen(path) + 1);
	return true;
}

/*
 * --endpoint PATH: instead of opening a channel by name, connect to the
 * Unix socket at PATH (served by 'lzchan grant'), receive one endpoint
 * (up to @timeout_ns, -1: forever) and make a handle of it in @role.
 * 0, or the exit status after saying why.  @label names the channel in
 * messages.
 */
static int open_endpoint(struct lzchan **chp, const char *path, unsigned int role,
			 const struct lzchan_opts *o, int64_t timeout_ns, const char *label)
{
	struct sockaddr_un a;
	int sock, fd, ret;

	if (!unix_addr(path, &a))
		return EXIT_USAGE;
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		fail("socket", errno, NULL);
		return EXIT_FAILED;
	}
	if (connect(sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		ret = errno;
		close(sock);
		fail(path, ret, ret == ENOENT || ret == ECONNREFUSED ?
		     "nobody serves endpoints there: start 'lzchan grant NAME --role %s "
		     "--socket %s' first" : NULL, role_name(role), path);
		return EXIT_FAILED;
	}
	fd = lzchan_endpoint_recv(sock, timeout_ns < 0 ? -1 :
				  timeout_ns / 1000000 > INT_MAX ? INT_MAX :
				  (int)(timeout_ns / 1000000));
	close(sock);
	if (fd == -ETIMEDOUT) {
		fail(path, ETIMEDOUT, "no endpoint came within --timeout");
		return EXIT_TIMEOUT;
	}
	if (fd == -ECONNRESET) {
		fail(path, ECONNRESET, "the granter closed the connection without sending "
		     "an endpoint (it may not grant this to you, or had no more to give)");
		return EXIT_FAILED;
	}
	if (fd < 0) {
		explain(path, label, -fd, 0);
		return EXIT_FAILED;
	}
	/* On shm the descriptor is the channel file, which carries no role:
	 * @role is what we attach as (lzchan_open_fd() must be told). */
	ret = lzchan_open_fd(chp, fd, role, o);
	if (ret == -EPERM) {
		fail(path, EPERM, "the endpoint from %s carries another role than %s",
		     path, role_name(role));
		return EXIT_FAILED;
	}
	if (ret == -EPROTOTYPE) {
		fail(path, EPROTOTYPE, "the endpoint from %s is of a %s, not one a %s "
		     "attaches to", path, role == LZCHAN_SENDER || role == LZCHAN_RECEIVER ?
		     "publish/subscribe channel" : "channel", role_name(role));
		return EXIT_FAILED;
	}
	if (ret < 0) {
		explain(path, label, -ret, 0);
		return EXIT_FAILED;
	}
	return 0;
}

/* send, recv, publish, subscribe: NAME, or with --endpoint an optional
 * NAME (a label for messages: the endpoint decides the channel). */
static bool name_or_endpoint(int argc, char **argv, const char **name)
{
	if (!positional(argc, argv, endpoint_path ? 0 : 1, 1, name))
		return false;
	if (!*name) {
		*name = endpoint_path;
		return true;
	}
	return name_ok(*name);
}

/* ---- grant / revoke ---- */

/* The socket file grant made (removed at its end if it is still that). */
static char grant_sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static dev_t grant_sock_dev;
static ino_t grant_sock_ino;

static void grant_sock_remove(void)
{
	struct stat st;

	if (*grant_sock_path && lstat(grant_sock_path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == grant_sock_dev && st.st_ino == grant_sock_ino)
		unlink(grant_sock_path);
	*grant_sock_path = 0;
}

/*
 * Listen on the Unix socket @a (mode @mode).  A socket file nobody listens
 * on any more (a grant that died) is removed first; a live one, or
 * anything that is not a socket, is left alone.  The fd, or -1 after
 * saying why.
 */
/* Is anyone serving the socket at @a?  1 yes (or too busy to say: its
 * backlog is full), 0 a stale one (refused), -errno cannot tell.  Never
 * waits: the probe does not block. */
static int grant_served(const struct sockaddr_un *a)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), e;

	if (s < 0)
		return -errno;
	e = connect(s, (const struct sockaddr *)a, sizeof(*a)) == 0 ? 0 : errno;
	close(s);
	if (!e || e == EAGAIN || e == EINPROGRESS)
		return 1;
	return e == ECONNREFUSED ? 0 : -e;
}

/* How long a granted peer has to hang up before its endpoint counts as
 * taken unseen (lzchan_endpoint_recv()'s callers close right after). */
#define GRANT_TAKEN_MS	1000

/*
 * Did the peer on @conn take the endpoint we sent it?  A Unix stream
 * socket closed with data unread resets its peer's (ECONNRESET): a peer
 * that hung up without reading -- a probe of whether the socket is served,
 * such as a second grant's look (grant_served()) -- took nothing, and the
 * endpoint went with its socket.  One that stays connected past
 * GRANT_TAKEN_MS counts as served: it may read it yet.
 */
static bool grant_taken(int conn)
{
	struct pollfd p = { .fd = conn, .events = POLLIN };
	socklen_t len = sizeof(int);
	int err = 0, r;

	do
		r = poll(&p, 1, GRANT_TAKEN_MS);
	while (r < 0 && errno == EINTR && !stop);
	if (r <= 0)
		return true;
	return getsockopt(conn, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != ECONNRESET;
}

/*
 * Listen at @a with permission bits @mode.  Two grants of one path are
 * serialised by a lock on its directory, from the look at what is there
 * to listen(): one cannot take the other's socket for a stale one between
 * its bind and its listen.  The mode is the socket's from its creation
 * (umask), never set afterwards through a name someone could swap.
 */
static int grant_listen(const struct sockaddr_un *a, mode_t mode)
{
	char dir[sizeof(a->sun_path)];
	const char *slash = strrchr(a->sun_path, '/');
	struct stat st;
	int s = -1, d, r;
	mode_t old;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == a->sun_path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - a->sun_path), a->sun_path);
	d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0 || flock(d, LOCK_EX) < 0) {
		fail(dir, errno, "cannot lock the socket's directory");
		if (d >= 0)
			close(d);
		return -1;
	}
	if (lstat(a->sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			fail(a->sun_path, EEXIST, "it exists and is not a socket: remove it, or "
			     "choose another --socket");
			goto out;
		}
		r = grant_served(a);
		if (r > 0) {
			fail(a->sun_path, EADDRINUSE, "another process serves that socket");
			goto out;
		}
		if (r < 0) {
			fail(a->sun_path, -r, "cannot tell whether that socket is still served: "
			     "remove it yourself if it is stale");
			goto out;
		}
		unlink(a->sun_path);	/* stale: nobody listens */
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		fail("socket", errno, NULL);
		goto out;
	}
	/* Who may connect is who may take an endpoint: the mode says. */
	old = umask(~mode & 0777);
	r = bind(s, (const struct sockaddr *)a, sizeof(*a));
	umask(old);
	if (r < 0) {
		fail(a->sun_path, errno, NULL);
		close(s);
		s = -1;
		goto out;
	}
	if (lstat(a->sun_path, &st) == 0) {
		memcpy(grant_sock_path, a->sun_path, strlen(a->sun_path) + 1);
		grant_sock_dev = st.st_dev;
		grant_sock_ino = st.st_ino;
	}
	if (listen(s, 16) < 0) {
		fail(a->sun_path, errno, NULL);
		grant_sock_remove();
		close(s);
		s = -1;
	}
out:
	close(d);		/* and its lock */
	return s;
}

/*
 * Can endpoints of @role on @name be granted here at all?  0, or the exit
 * status after saying why not (no such channel, a module without them, on
 * shm a channel of the other kind or a file the caller may not open
 * read-write).  *@shm: the channel is on the shm backend, where what is
 * granted is the channel file itself (no role carried, no id, nothing to
 * revoke).
 */
static int grant_possible(const char *name, unsigned int role, bool *shm)
{
	struct lzchan_features f;
	struct lzchan_chan_stat st;
	uint32_t be = 0;
	int ret, fd;

	*shm = false;
	ret = lzchan_stat(name, &st, &be);
	if (ret == 0 && be == LZCHAN_BACKEND_SHM) {
		/* A trial grant: a fresh open of the file, closed at once --
		 * nothing is recorded anywhere, and every refusal is said
		 * before a socket is made. */
		fd = lzchan_grant(name, role, 0, NULL);
		if (fd >= 0) {
			close(fd);
			*shm = true;
		} else {
			ret = fd;
		}
	} else if (ret == 0 && lzchan_dev_features(&f) == 0 &&
		   !(f.features & LZCHAN_FEAT_ENDPOINT)) {
		ret = -EOPNOTSUPP;
	}
	if (ret < 0) {
		explain(name, name, -ret, 0);
		return EXIT_FAILED;
	}
	return 0;
}

static int cmd_grant(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "role", required_argument, NULL, 'R' },
		{ "socket", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "mode", required_argument, NULL, 'm' },
		HELP_OPT, { 0 }
	};
	struct sockaddr_un a;
	const char *name, *sock_path = NULL;
	unsigned int role = 0;
	uint64_t want = 1, done = 0, v;
	int64_t timeout_ns = -1;
	mode_t mode = 0600;	/* whoever may connect gets an endpoint: the
				 * caller's own user unless told otherwise */
	bool shm;
	int c, ls, rc = 0;

	reset_opts();
	while ((c = next_opt(argc, argv, "R:s:c:t:m:h", lo)) != -1) {
		switch (c) {
		case 'R':
			role = !strcmp(optarg, "sender") ? LZCHAN_SENDER :
			       !strcmp(optarg, "receiver") ? LZCHAN_RECEIVER :
			       !strcmp(optarg, "publisher") ? LZCHAN_PUBLISHER :
			       !strcmp(optarg, "subscriber") ? LZCHAN_SUBSCRIBER : 0;
			if (!role) {
				usage_error("--role '%s' is not sender, receiver, publisher or "
					    "subscriber", optarg);
				return EXIT_USAGE;
			}
			break;
		case 's':
			sock_path = optarg;
			break;
		case 'c':
			if (!parse_u64(optarg, 10, UINT64_MAX, &want) || !want) {
				usage_error("--count '%s' is not a positive whole number", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (!parse_ms(optarg, &timeout_ns))
				return EXIT_USAGE;
			break;
		case 'm':
			if (!parse_u64(optarg, 8, 0777, &v)) {
				usage_error("--mode '%s' is not an octal mode in 0..0777", optarg);
				return EXIT_USAGE;
			}
			mode = (mode_t)v;
			break;
		case 'h':
			return help_for("grant", stdout);
		default:
			return EXIT_USAGE;
		}
	}
	if (!positional(argc, argv, 1, 1, &name) || !name_ok(name))
		return EXIT_USAGE;
	if (!role) {
		usage_error("--role sender|receiver|publisher|subscriber is required");
		return EXIT_USAGE;
	}
	if (!sock_path) {
		usage_error("--socket PATH is required");
		return EXIT_USAGE;
	}
	if (!unix_addr(sock_path, &a))
		return EXIT_USAGE;
	endpoint_path = sock_path;
	rc = grant_possible(name, role, &shm);
	if (rc)
		return rc;
	ls = grant_listen(&a, mode);
	if (ls < 0)
		return EXIT_FAILED;
	catch_signals();
	while (done < want && !stop) {
		struct pollfd p = { .fd = ls, .events = POLLIN };
		int64_t left_ms = -1;
		uint64_t id = 0;
		int conn, ret;

		if (timeout_ns >= 0)
			left_ms = timeout_ns / 1000000 > INT_MAX ? INT_MAX : timeout_ns / 1000000;
		ret = poll(&p, 1, (int)left_ms);
		if (ret < 0 && errno == EINTR)
			continue;	/* stop set: the loop ends */
		if (ret < 0) {
			fail("poll", errno, NULL);
			rc = EXIT_FAILED;
			break;
		}
		if (ret == 0) {
			fail(sock_path, ETIMEDOUT, "nobody connected within --timeout (%llu "
			     "granted)", (unsigned long long)done);
			rc = EXIT_TIMEOUT;
			break;
		}
		conn = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			fail("accept", errno, NULL);
			rc = EXIT_FAILED;
			break;
		}
		ret = lzchan_grant_send(conn, name, role, &id);
		if (!ret && !grant_taken(conn))
			ret = -ECONNRESET;
		close(conn);
		if (ret == -EPIPE || ret == -ECONNRESET) {
			/* That peer left first, or without reading what it was
			 * sent: its endpoint went with it, not counted. */
			fail(sock_path, -ret, "a peer hung up without taking its endpoint "
			     "(not counted)");
			continue;
		}
		if (ret < 0) {
			explain(name, name, -ret, 0);
			rc = EXIT_FAILED;
			break;
		}
		done++;
		if (shm && !id)
			/* No id: the file carries no role and nothing revokes it. */
			printf("granted %s endpoint of %s (shm: the channel file, no role "
			       "limit, not revocable)\n", role_name(role), name);
		else
			printf("granted %s endpoint %llu of %s\n", role_name(role),
			       (unsigned long long)id, name);
		if (fflush(stdout)) {
			fail("writing stdout", errno ? errno : EIO, NULL);
			rc = EXIT_FAILED;
			break;
		}
	}
	close(ls);
	grant_sock_remove();
	return rc;
}

static int cmd_revoke(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "all", no_argument, NULL, 'a' },
		HELP_OPT, { 0 }
	};
	struct lzchan_chan_stat st;
	const char *name;
	bool all = false;
	uint64_t id = 0;
	int c, ret;

	reset_opts();
	while ((c = next_opt(argc, argv, "ah", lo)) != -1) {
		if (c == 'a')
			all = true;
		else if (c == 'h')
			return help_for("revoke", stdout);
		else
			return EXIT_USAGE;
	}
	if (optind >= argc) {
		usage_error("a channel NAME is required");
		return EXIT_USAGE;
	}
	name = argv[optind];
	if (!name_ok(name))
		return EXIT_USAGE;
	if (all && optind + 1 < argc) {
		usage_error("give an endpoint ID or --all, not both");
		return EXIT_USAGE;
	}
	if (!all) {
		if (optind + 1 >= argc) {
			usage_error("an endpoint ID (as 'lzchan grant' printed it) or --all is "
				    "required");
			return EXIT_USAGE;
		}
		if (!parse_u64(argv[optind + 1], 10, UINT64_MAX, &id) || !id) {
			usage_error("endpoint ID '%s' is not a positive whole number",
				    argv[optind + 1]);
			return EXIT_USAGE;
		}
	}
	if (optind + 2 < argc) {
		usage_error("unexpected argument '%s'", argv[optind + 2]);
		return EXIT_USAGE;
	}
	ret = lzchan_revoke(name, id);
	if (ret == -ENOENT && id && lzchan_stat(name, &st, NULL) != -ENOENT) {
		fail(name, ENOENT, "'%s' has no endpoint %llu", name, (unsigned long long)id);
		return EXIT_FAILED;
	}
	if (ret == -EPERM) {
		fail(name, EPERM, "only who granted an endpoint, the channel's owner or "
		     "creator (or CAP_SYS_ADMIN) may revoke it");
		return EXIT_FAILED;
	}
	if (ret < 0) {
		explain(name, name, -ret, 0);
		return EXIT_FAILED;
	}
	printf("revoked %d endpoint%s of %s\n", ret, ret == 1 ? "" : "s", name);
	return 0;
}

/* ---- send ---- */

/* Exactly @len bytes from @f; returns the bytes read (< len only at EOF). */
static size_t read_full(FILE *f, void *buf, size_t len)
{
	return fread(buf, 1, len, f);
}

static int send_one(struct lzchan *ch, const char *name, const void *buf, size_t len,
		    int64_t timeout_ns)
{
	int ret = lzchan_send_wait(ch, buf, len, timeout_ns);

	if (ret == -ETIMEDOUT) {
		fail(name, ETIMEDOUT, "no room for the message within --timeout: is a "
		     "receiver draining '%s'?", name);
		return EXIT_TIMEOUT;
	}
	if (ret < 0) {
		explain(name, name, -ret, 'w');
		return EXIT_FAILED;
	}
	return 0;
}

/* send, and publish (@publish: as a pub/sub channel's publisher). */
static int send_cmd(int argc, char **argv, const char *cmd, bool publish)
{
	static const struct option lo[] = {
		{ "records", no_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "endpoint", required_argument, NULL, 'E' },
		HELP_OPT, { 0 }
	};
	struct lzchan_geom g;
	struct lzchan *ch;
	const char *name;
	bool records = false;
	int64_t timeout_ns = -1;
	uint64_t count = 0;
	char *buf = NULL;
	size_t cap = 0;
	int c, ret, rc = 0;

	reset_opts();
	while ((c = next_opt(argc, argv, "rt:E:h", lo)) != -1) {
		if (c == 'r')
			records = true;
		else if (c == 't') {
			if (!parse_ms(optarg, &timeout_ns))
				return EXIT_USAGE;
		} else if (c == 'E')
			endpoint_path = optarg;
		else if (c == 'h')
			return help_for(cmd, stdout);
		else
			return EXIT_USAGE;
	}
	if (!name_or_endpoint(argc, argv, &name))
		return EXIT_USAGE;
	if (endpoint_path) {
		rc = open_endpoint(&ch, endpoint_path, publish ? LZCHAN_PUBLISHER : LZCHAN_SENDER,
				   NULL, timeout_ns, name);
		if (rc)
			return rc;
	} else {
		ret = lzchan_open(&ch, name, publish ? LZCHAN_PUBLISHER : LZCHAN_SENDER, NULL);
		if (ret < 0) {
			explain(name, name, -ret, 'w');
			return EXIT_FAILED;
		}
	}
	lzchan_geometry(ch, &g);

	for (;;) {
		size_t len;

		count++;
		if (records) {
			unsigned char p[RECORD_PREFIX];
			size_t got = read_full(stdin, p, sizeof(p));

			if (got == 0 && feof(stdin))
				break;
			if (got != sizeof(p)) {
				if (ferror(stdin))
					goto read_error;
				fail(name, EBADMSG, "record %llu: stdin ended inside its %d-byte "
				     "length prefix (%zu bytes)", (unsigned long long)count,
				     RECORD_PREFIX, got);
				rc = EXIT_FAILED;
				break;
			}
			len = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 |
			      (size_t)p[3] << 24;
			if (len > g.max_msg) {
				fail(name, EMSGSIZE, "record %llu is %zu bytes, more than the "
				     "channel's largest message of %u bytes ((slots - 1) x "
				     "slot size - 8): recreate it with a larger --slot-size or "
				     "--slots", (unsigned long long)count, len, g.max_msg);
				rc = EXIT_FAILED;
				break;
			}
			if (len > cap) {
				char *nb = realloc(buf, len);

				if (!nb) {
					fail(name, ENOMEM, NULL);
					rc = EXIT_FAILED;
					break;
				}
				buf = nb;
				cap = len;
			}
			got = read_full(stdin, buf, len);
			if (got != len) {
				if (ferror(stdin))
					goto read_error;
				fail(name, EBADMSG, "record %llu: stdin ended after %zu of its "
				     "%zu bytes", (unsigned long long)count, got, len);
				rc = EXIT_FAILED;
				break;
			}
		} else {
			ssize_t r = getline(&buf, &cap, stdin);

			if (r < 0) {
				if (ferror(stdin))
					goto read_error;
				break;
			}
			len = r;
			if (len && buf[len - 1] == '\n')
				len--;
			if (len > g.max_msg) {
				fail(name, EMSGSIZE, "line %llu is %zu bytes, more than the "
				     "channel's largest message of %u bytes ((slots - 1) x "
				     "slot size - 8): recreate it with a larger --slot-size or "
				     "--slots", (unsigned long long)count, len, g.max_msg);
				rc = EXIT_FAILED;
				break;
			}
		}
		rc = send_one(ch, name, buf ? buf : "", len, timeout_ns);
		if (rc)
			break;
	}
	free(buf);
	if (!rc && !publish) {
		/* Status 0 means a receiver took it all (or none has come
		 * yet: then it waits for one), never that a receiver that
		 * went away was written to. */
		ret = lzchan_flush(ch, timeout_ns);
		if (ret == -ETIMEDOUT) {
			fail(name, ETIMEDOUT, "the receiver of '%s' did not take every message "
			     "within --timeout", name);
			rc = EXIT_TIMEOUT;
		} else if (ret < 0 && ret != -ENOTCONN) {
			explain(name, name, -ret, 'w');
			rc = EXIT_FAILED;
		}
	}
	lzchan_close(ch);
	return rc;

read_error:
	fail("reading stdin", errno ? errno : EIO, NULL);
	free(buf);
	lzchan_close(ch);
	return EXIT_FAILED;
}

static int cmd_send(int argc, char **argv)
{
	return send_cmd(argc, argv, "send", false);
}

static int cmd_publish(int argc, char **argv)
{
	return send_cmd(argc, argv, "publish", true);
}

/* ---- recv ---- */

#define NEXT_WRITE_ERROR	INT_MIN		/* stdout could not be flushed */
#define NEXT_STOPPED		(INT_MIN + 1)	/* SIGINT or SIGTERM */

/*
 * recv and subscribe: the next message into @buf, as lzchan_recv()
 * returns it; with nothing there, what was written so far goes out and we
 * wait (lzchan_recv_wait()) in slices of 100 ms, to see SIGINT/SIGTERM,
 * for at most @timeout_ns (-1: forever; then -ETIMEDOUT).
 */
static int next_msg(struct lzchan *ch, char *buf, uint32_t cap, uint32_t *lane,
		    int64_t timeout_ns)
{
	const int64_t slice_ns = 100 * 1000000LL;
	uint64_t start = now_ns();
	int ret;

	/* Stopped: before taking another message (one taken is written). */
	if (stop)
		return NEXT_STOPPED;
	ret = lzchan_recv(ch, buf, cap, lane);
	if (ret != -EAGAIN)
		return ret;
	/* About to wait: what was received is on its way. */
	if (fflush(stdout))
		return NEXT_WRITE_ERROR;
	for (;;) {
		int64_t left = slice_ns;

		if (stop)
			return NEXT_STOPPED;
		if (timeout_ns >= 0) {
			int64_t spent = now_ns() - start;

			if (spent >= timeout_ns)
				return -ETIMEDOUT;
			if (timeout_ns - spent < left)
				left = timeout_ns - spent;
		}
		ret = lzchan_recv_wait(ch, buf, cap, lane, left);
		if (ret == -EINTR && stop)
			return NEXT_STOPPED;
		if (ret != -ETIMEDOUT)
			return ret;
	}
}

static bool write_msg(const void *data, size_t len, bool records)
{
	if (records) {
		unsigned char p[RECORD_PREFIX] = {
			len & 0xff, (len >> 8) & 0xff, (len >> 16) & 0xff, (len >> 24) & 0xff,
		};

		if (fwrite(p, 1, sizeof(p), stdout) != sizeof(p))
			return false;
	}
	if (len && fwrite(data, 1, len, stdout) != len)
		return false;
	if (!records && putchar('\n') == EOF)
		return false;
	return true;
}

/* recv --who: who sends on @lane, on stderr -- the process the kernel
 * names, and the party it speaks for if it is a bridge's proxy lane. */
static void say_who(struct lzchan *ch, const char *name, uint32_t lane)
{
	struct lzchan_origin o = { .size = sizeof(o) };
	uint32_t uid;
	int32_t pid;
	int r = lzchan_peer(ch, lane, &pid, &uid, NULL);

	if (r) {
		fprintf(stderr, "lzchan recv: %s: lane %u: sender unknown (%s)\n", name, lane,
			strerror(-r));
		return;
	}
	r = lzchan_peer_origin(ch, lane, &o);
	if (!r)
		fprintf(stderr, "lzchan recv: %s: lane %u: remote sender uid %u pid %d on %s, "
			"through pid %d (uid %u)\n", name, lane, o.uid, o.pid, o.host, pid, uid);
	else if (r == -ENOENT)
		fprintf(stderr, "lzchan recv: %s: lane %u: sender pid %d uid %u\n", name, lane,
			pid, uid);
	else
		fprintf(stderr, "lzchan recv: %s: lane %u: sender pid %d uid %u (its origin: %s)\n",
			name, lane, pid, uid, r == -EPROTO ? "a malformed record" : strerror(-r));
}

static int cmd_recv(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "records", no_argument, NULL, 'r' },
		{ "eof", no_argument, NULL, 'e' },
		{ "spin-ns", required_argument, NULL, 'S' },
		{ "publish-every", required_argument, NULL, 'P' },
		{ "who", no_argument, NULL, 'w' },
		{ "endpoint", required_argument, NULL, 'E' },
		HELP_OPT, { 0 }
	};
	uint8_t *named = NULL;		/* --who: lanes whose sender was named */
	bool who = false;
	struct lzchan_opts o;
	struct lzchan_geom g;
	struct lzchan *ch;
	const char *name;
	bool records = false, eof = false;
	int64_t timeout_ns = -1;
	uint64_t want = 0, got = 0, v;
	char *buf;
	int c, ret, rc = 0;

	lzchan_opts_init(&o);
	reset_opts();
	while ((c = next_opt(argc, argv, "c:t:rewE:h", lo)) != -1) {
		switch (c) {
		case 'c':
			if (!parse_u64(optarg, 10, UINT64_MAX, &want) || !want) {
				usage_error("--count '%s' is not a positive whole number", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (!parse_ms(optarg, &timeout_ns))
				return EXIT_USAGE;
			break;
		case 'r':
			records = true;
			break;
		case 'e':
			eof = true;
			break;
		case 'w':
			who = true;
			break;
		case 'E':
			endpoint_path = optarg;
			break;
		case 'S':
			if (!parse_u32_opt("--spin-ns", optarg, 0, UINT32_MAX, &o.spin_ns))
				return EXIT_USAGE;
			break;
		case 'P':
			if (!parse_u64(optarg, 10, UINT32_MAX, &v)) {
				usage_error("--publish-every '%s' is not a whole number", optarg);
				return EXIT_USAGE;
			}
			o.publish_every = v;
			break;
		case 'h':
			return help_for("recv", stdout);
		default:
			return EXIT_USAGE;
		}
	}
	if (!name_or_endpoint(argc, argv, &name))
		return EXIT_USAGE;
	if (endpoint_path) {
		rc = open_endpoint(&ch, endpoint_path, LZCHAN_RECEIVER, &o, timeout_ns, name);
		if (rc)
			return rc;
	} else {
		ret = lzchan_open(&ch, name, LZCHAN_RECEIVER, &o);
		if (ret < 0) {
			explain(name, name, -ret, 'r');
			return EXIT_FAILED;
		}
	}
	lzchan_geometry(ch, &g);
	buf = malloc(g.max_msg ? g.max_msg : 1);
	if (who)
		named = calloc(g.max_senders, 1);
	if (!buf || (who && !named)) {
		fail(name, ENOMEM, NULL);
		free(buf);
		lzchan_close(ch);
		return EXIT_FAILED;
	}
	catch_signals();

	while (!want || got < want) {
		uint32_t lane = LZCHAN_LANE_NONE;

		ret = next_msg(ch, buf, g.max_msg, &lane, timeout_ns);
		if (ret == NEXT_WRITE_ERROR)
			goto write_error;
		if (ret == NEXT_STOPPED)
			break;
		if (ret >= 0) {
			if (who && lane < g.max_senders && !named[lane]) {
				named[lane] = 1;
				say_who(ch, name, lane);
			}
			if (!write_msg(buf, ret, records))
				goto write_error;
			got++;
			continue;
		}
		if (ret == -EPIPE && who && lane < g.max_senders)
			named[lane] = 0;	/* the next sender there is named anew */
		if (ret == -EPIPE && lane >= g.max_senders) {
			/* Nobody's end of stream: our own end (an endpoint
			 * revoked). */
			explain(name, name, EPIPE, 'r');
			rc = EXIT_FAILED;
			break;
		}
		if (ret == -EPIPE) {
			/* Said, not failed: all that reached the lane was
			 * received (a remote sender's messages still on the
			 * way when it was cut off never did). */
			if (lzchan_end_cause(ch, lane) == LZCHAN_END_LOST)
				fprintf(stderr, "lzchan recv: %s: lane %u: its sender died or was "
					"cut off (what reached the lane was received)\n", name, lane);
			if (eof)
				break;		/* a sender finished: end of stream */
			continue;
		}
		if (ret == -EBADMSG) {
			fail(name, EBADMSG, "lane %u held something that is not a message; "
			     "that lane is abandoned", lane);
			rc = EXIT_FAILED;
			continue;
		}
		if (ret == -ETIMEDOUT) {
			fail(name, ETIMEDOUT, "no message within --timeout (%llu received)",
			     (unsigned long long)got);
			rc = EXIT_TIMEOUT;
			break;
		}
		/* -EMSGSIZE cannot happen: the buffer holds the largest message. */
		explain(name, name, -ret, 'r');
		rc = EXIT_FAILED;
		break;
	}
	if (fflush(stdout))
		goto write_error;
	free(buf);
	free(named);
	lzchan_close(ch);
	return rc;

write_error:
	fail("writing stdout", errno ? errno : EIO, NULL);
	free(buf);
	lzchan_close(ch);
	return EXIT_FAILED;
}

/* ---- subscribe ---- */

static int cmd_subscribe(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "records", no_argument, NULL, 'r' },
		{ "history", required_argument, NULL, 'H' },
		{ "endpoint", required_argument, NULL, 'E' },
		HELP_OPT, { 0 }
	};
	struct lzchan_geom g;
	struct lzchan *ch;
	const char *name;
	bool records = false;
	int64_t timeout_ns = -1;
	uint64_t want = 0, got = 0, lost_all = 0, lost;
	uint32_t history = 0;
	bool history_set = false;
	char *buf;
	int c, ret, rc = 0;

	reset_opts();
	while ((c = next_opt(argc, argv, "c:t:rE:h", lo)) != -1) {
		switch (c) {
		case 'c':
			if (!parse_u64(optarg, 10, UINT64_MAX, &want) || !want) {
				usage_error("--count '%s' is not a positive whole number", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (!parse_ms(optarg, &timeout_ns))
				return EXIT_USAGE;
			break;
		case 'r':
			records = true;
			break;
		case 'H':
			if (!parse_u32_opt("--history", optarg, 0, UINT32_MAX, &history))
				return EXIT_USAGE;
			history_set = true;
			break;
		case 'E':
			endpoint_path = optarg;
			break;
		case 'h':
			return help_for("subscribe", stdout);
		default:
			return EXIT_USAGE;
		}
	}
	if (!name_or_endpoint(argc, argv, &name))
		return EXIT_USAGE;
	if (endpoint_path && history_set) {
		usage_error("--history does not apply with --endpoint (an endpoint's "
			    "subscriber starts at the newest message)");
		return EXIT_USAGE;
	}
	if (endpoint_path) {
		rc = open_endpoint(&ch, endpoint_path, LZCHAN_SUBSCRIBER, NULL, timeout_ns, name);
		if (rc)
			return rc;
	} else {
		ret = lzchan_subscribe(&ch, name, history, 0);
		if (ret < 0) {
			explain(name, name, -ret, 'r');
			return EXIT_FAILED;
		}
	}
	lzchan_geometry(ch, &g);
	buf = malloc(g.max_msg ? g.max_msg : 1);
	if (!buf) {
		fail(name, ENOMEM, NULL);
		lzchan_close(ch);
		return EXIT_FAILED;
	}
	catch_signals();
	while (!want || got < want) {
		ret = next_msg(ch, buf, g.max_msg, NULL, timeout_ns);
		if (ret == NEXT_WRITE_ERROR)
			goto write_error;
		if (ret == NEXT_STOPPED)
			break;
		if (ret >= 0) {
			if (!write_msg(buf, ret, records))
				goto write_error;
			got++;
			continue;
		}
		if (ret == -EOVERFLOW && lzchan_lost(ch, &lost) == 0) {
			/* Said, not failed: the stream goes on from the
			 * oldest message still there. */
			lost_all += lost;
			fprintf(stderr, "lzchan subscribe: %s: %llu message%s lost (overwritten "
				"before read; %llu so far)\n", name, (unsigned long long)lost,
				lost == 1 ? "" : "s", (unsigned long long)lost_all);
			continue;
		}
		if (ret == -EPIPE) {
			if (lzchan_end_cause(ch, 0) == LZCHAN_END_LOST) {
				fail(name, EPIPE, "the publisher died (what it published was "
				     "received)");
				rc = EXIT_FAILED;
			}
			break;		/* the publisher finished: end of stream */
		}
		if (ret == -ECONNRESET) {
			fail(name, ECONNRESET, "detached: this subscriber stood still longer "
			     "than the channel's stall time while the publisher waited");
			rc = EXIT_FAILED;
			break;
		}
		if (ret == -EBADMSG) {
			fail(name, EBADMSG, "a slot held something that is not a message; "
			     "skipped");
			rc = EXIT_FAILED;
			continue;
		}
		if (ret == -ETIMEDOUT) {
			fail(name, ETIMEDOUT, "no message within --timeout (%llu received)",
			     (unsigned long long)got);
			rc = EXIT_TIMEOUT;
			break;
		}
		explain(name, name, -ret, 'r');
		rc = EXIT_FAILED;
		break;
	}
	if (fflush(stdout))
		goto write_error;
	free(buf);
	lzchan_close(ch);
	return rc;

write_error:
	fail("writing stdout", errno ? errno : EIO, NULL);
	free(buf);
	lzchan_close(ch);
	return EXIT_FAILED;
}

/* ---- watch ---- */

struct sample {
	struct lzchan_chan_stat *chans;
	int n;
	uint64_t at_ns;
};

static int take_sample(struct sample *s, const char *only, uint32_t *backend)
{
	s->at_ns = now_ns();
	if (only) {
		int ret;

		s->chans = calloc(1, sizeof(*s->chans));
		if (!s->chans)
			return -ENOMEM;
		ret = lzchan_stat(only, s->chans, backend);
		if (ret < 0) {
			free(s->chans);
			s->chans = NULL;
			return ret;
		}
		s->n = 1;
		return 0;
	}
	s->n = fetch_all(&s->chans, backend);
	if (s->n < 0)
		return s->n;
	qsort(s->chans, s->n, sizeof(*s->chans), cmp_name);
	return 0;
}

static const struct lzchan_chan_stat *find_in(const struct sample *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->chans[i].name, name))
			return &s->chans[i];
	return NULL;
}

static void sleep_s(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - ts.tv_sec) * 1e9);
	while (!stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int cmd_watch(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "iterations", required_argument, NULL, 'n' },
		JSON_OPT, HELP_OPT, { 0 }
	};
	struct sample prev = { 0 }, cur = { 0 };
	const char *name;
	double interval = 1.0;
	bool json = false, tty = isatty(STDOUT_FILENO);
	uint64_t iters = 0, it;
	uint32_t backend = 0;
	char where[PATH_MAX + 16], *end;
	int c, ret, i, rc = 0;

	reset_opts();
	while ((c = next_opt(argc, argv, "i:n:jh", lo)) != -1) {
		switch (c) {
		case 'i':
			errno = 0;
			interval = strtod(optarg, &end);
			if (errno || *end || !*optarg || !isfinite(interval) ||
			    interval < 0.01 || interval > 86400) {
				usage_error("--interval '%s' is not a number of seconds in "
					    "0.01..86400", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
			if (!parse_u64(optarg, 10, UINT64_MAX, &iters) || !iters) {
				usage_error("--iterations '%s' is not a positive whole number",
					    optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			return help_for("watch", stdout);
		default:
			return EXIT_USAGE;
		}
	}
	if (!positional(argc, argv, 0, 1, &name) || (name && !name_ok(name)))
		return EXIT_USAGE;
	catch_signals();
	ret = take_sample(&prev, name, &backend);
	if (ret < 0) {
		explain(name ? name : "listing channels", name, -ret, 0);
		return EXIT_FAILED;
	}
	backend_where(backend, where, sizeof(where));
	if (json)
		printf("[");
	for (it = 0; !iters || it < iters; it++) {
		double dt;

		sleep_s(interval);
		if (stop)
			break;
		ret = take_sample(&cur, name, &backend);
		if (ret < 0) {
			explain(name ? name : "listing channels", name, -ret, 0);
			rc = EXIT_FAILED;
			break;
		}
		dt = (cur.at_ns - prev.at_ns) / 1e9;
		if (json) {
			printf("%s\n {\"backend\": \"%s\", \"interval_s\": %.3f, \"channels\": [",
			       it ? "," : "", backend_str(backend), dt);
			for (i = 0; i < cur.n; i++) {
				const struct lzchan_chan_stat *s = &cur.chans[i];
				const struct lzchan_chan_stat *p = find_in(&prev, s->name);

				printf("%s\n  {\"name\": ", i ? "," : "");
				json_str(s->name);
				printf(", \"messages\": %llu, \"wakeups\": %llu, \"senders\": %u"
				       ", \"receiver\": %s, \"receiver_parked\": %s",
				       (unsigned long long)s->messages,
				       (unsigned long long)s->wakeups, s->senders,
				       s->receiver ? "true" : "false",
				       s->receiver && (s->rx_parked & 1) ? "true" : "false");
				if (p && s->messages >= p->messages && s->wakeups >= p->wakeups)
					printf(", \"messages_per_s\": %.1f, \"wakeups_per_s\": %.1f}",
					       (s->messages - p->messages) / dt,
					       (s->wakeups - p->wakeups) / dt);
				else
					printf(", \"messages_per_s\": null, \"wakeups_per_s\": null}");
			}
			printf("%s]}", cur.n ? "\n " : "");
		} else {
			if (tty)
				printf("\033[H\033[2J");
			printf("lzchan watch: backend %s, every %.2f s\n", where, interval);
			printf("%-20s %7s %8s %12s %12s %12s %10s\n", "NAME", "SENDERS", "RECEIVER",
			       "MESSAGES", "MSGS/S", "WAKEUPS", "WAKEUPS/S");
			for (i = 0; i < cur.n; i++) {
				const struct lzchan_chan_stat *s = &cur.chans[i];
				const struct lzchan_chan_stat *p = find_in(&prev, s->name);
				char mr[32] = "-", wr[32] = "-";

				if (p && s->messages >= p->messages && s->wakeups >= p->wakeups) {
					snprintf(mr, sizeof(mr), "%.1f", (s->messages - p->messages) / dt);
					snprintf(wr, sizeof(wr), "%.1f", (s->wakeups - p->wakeups) / dt);
				}
				printf("%-20s %7u %8s %12llu %12s %12llu %10s\n", s->name, s->senders,
				       rx_state(s), (unsigned long long)s->messages, mr,
				       (unsigned long long)s->wakeups, wr);
			}
		}
		fflush(stdout);
		free(prev.chans);
		prev = cur;
		cur.chans = NULL;
	}
	if (json)
		printf("\n]\n");
	free(prev.chans);
	free(cur.chans);
	return rc;
}

/* ---- features ---- */

static int cmd_features(int argc, char **argv)
{
	static const struct option lo[] = { JSON_OPT, HELP_OPT, { 0 } };
	struct lzchan_features f;
	const char *name;
	bool json = false;
	int c, ret;

	reset_opts();
	while ((c = next_opt(argc, argv, "jh", lo)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h')
			return help_for("features", stdout);
		else
			return EXIT_USAGE;
	}
	if (!positional(argc, argv, 0, 0, &name))
		return EXIT_USAGE;
	ret = lzchan_dev_features(&f);
	if (ret < 0) {
		if (ret == -ENOENT)
			fail(LZCHAN_DEVICE_PATH, ENOENT, "the lzchan module is not loaded "
			     "(load it with 'modprobe lzchan')");
		else
			explain(LZCHAN_DEVICE_PATH, NULL, -ret, 0);
		return EXIT_FAILED;
	}
	if (json) {
		printf("{\"abi_version\": %u, \"page_size\": %u, \"features\": %llu, "
		       "\"numa\": %s, \"eventfd\": %s, \"peercred\": %s, "
		       "\"placement\": %s, \"nopin\": %s, \"usage\": %s, "
		       "\"departures\": %s, \"bye\": %s, \"temp\": %s, \"pubsub\": %s, "
		       "\"endpoint\": %s}\n",
		       f.abi_version, f.page_size, (unsigned long long)f.features,
		       (f.features & LZCHAN_FEAT_NUMA) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_EVENTFD) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_PEERCRED) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_PLACEMENT) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_NOPIN) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_USAGE) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_DEPARTURES) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_BYE) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_TEMP) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_PUBSUB) ? "true" : "false",
		       (f.features & LZCHAN_FEAT_ENDPOINT) ? "true" : "false");
		return 0;
	}
	printf("abi_version %u\npage_size %u\nfeatures 0x%llx\n",
	       f.abi_version, f.page_size, (unsigned long long)f.features);
	return 0;
}

/* ---- limits ---- */

static int cmd_limits(int argc, char **argv)
{
	static const struct option lo[] = { JSON_OPT, HELP_OPT, { 0 } };
	struct lzchan_usage u = { .size = sizeof(u) };
	const char *name;
	bool json = false;
	int c, fd;

	reset_opts();
	while ((c = next_opt(argc, argv, "jh", lo)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h')
			return help_for("limits", stdout);
		else
			return EXIT_USAGE;
	}
	if (!positional(argc, argv, 0, 0, &name))
		return EXIT_USAGE;
	fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			fail(LZCHAN_DEVICE_PATH, ENOENT, "the lzchan module is not loaded "
			     "(load it with 'modprobe lzchan'); the shm backend's "
			     "limits are those of /dev/shm");
		else
			explain(LZCHAN_DEVICE_PATH, NULL, errno, 0);
		return EXIT_FAILED;
	}
	if (ioctl(fd, LZCHAN_IOC_USAGE, &u)) {
		int e = errno;

		close(fd);
		if (e == ENOTTY)
			fail(LZCHAN_DEVICE_PATH, e, "this module has no per-tenant "
			     "limits (LZCHAN_FEAT_USAGE): see its max_* parameters");
		else
			explain(LZCHAN_DEVICE_PATH, NULL, e, 0);
		return EXIT_FAILED;
	}
	close(fd);
	if (json) {
		printf("{\"exempt\": %s, \"max_channel_bytes\": %llu, "
		       "\"machine\": {\"channels\": %u, \"max_channels\": %u}, "
		       "\"namespace\": {\"channels\": %u, \"max_channels\": %u, "
		       "\"bytes\": %llu, \"max_bytes\": %llu}, "
		       "\"user\": {\"channels\": %u, \"max_channels\": %u, "
		       "\"bytes\": %llu, \"max_bytes\": %llu}}\n",
		       (u.flags_out & LZCHAN_USAGE_EXEMPT) ? "true" : "false",
		       (unsigned long long)u.max_channel_bytes,
		       u.channels, u.max_channels,
		       u.ns_channels, u.max_ns_channels,
		       (unsigned long long)u.ns_bytes, (unsigned long long)u.max_ns_bytes,
		       u.user_channels, u.max_user_channels,
		       (unsigned long long)u.user_bytes, (unsigned long long)u.max_user_bytes);
		return 0;
	}
	printf("%-22s %12s %12s\n", "LIMIT", "USED", "MAX");
	printf("%-22s %12u %12u\n", "channels, machine", u.channels, u.max_channels);
	printf("%-22s %12u %12u\n", "channels, namespace", u.ns_channels, u.max_ns_channels);
	printf("%-22s %12llu %12llu\n", "bytes, namespace",
	       (unsigned long long)u.ns_bytes, (unsigned long long)u.max_ns_bytes);
	printf("%-22s %12u %12u\n", "channels, you", u.user_channels, u.max_user_channels);
	printf("%-22s %12llu %12llu\n", "bytes, you",
	       (unsigned long long)u.user_bytes, (unsigned long long)u.max_user_bytes);
	printf("%-22s %12s %12llu\n", "bytes, one channel", "-",
	       (unsigned long long)u.max_channel_bytes);
	if (u.flags_out & LZCHAN_USAGE_EXEMPT)
		printf("(CAP_SYS_RESOURCE: the namespace and user limits do not apply to you)\n");
	return 0;
}

/* ---- help ---- */

static int cmd_help(int argc, char **argv);

#define EXIT_HELP \
	"exit status: 0 success, 1 failed, 2 usage error, 3 timed out.\n"

static const struct cmd cmds[] = {
	{ "list", "ls", cmd_list, "list [--json]",
	  "List the channels visible to the caller, and the backend listed: name,\n"
	  "owner uid/gid, mode, NUMA node (! = strict), slots x slot size, senders\n"
	  "attached/lanes, receiver (none, attached, parked), messages and wakeups\n"
	  "('-' where the caller may not read the channel: activity is not shown).\n"
	  "  --json   one JSON object: backend, where, channels[]\n" },
	{ "show", NULL, cmd_show, "show NAME [--json]",
	  "Show one channel in detail: every counter, the geometry, the largest\n"
	  "message, and (shm backend) each lane's state, generation, positions\n"
	  "and counters; (dev, a module with endpoints) each lane's state,\n"
	  "generation and sender -- pid, uid, gid as the module recorded them at\n"
	  "its open, and whether it came by name or through endpoint N.\n"
	  "  --json   one JSON object: backend, channel, lanes[] (null on dev),\n"
	  "           peers[] (null on shm)\n" },
	{ "create", NULL, cmd_create,
	  "create NAME [--slots N] [--slot-size B] [--lanes N] [--mode OCTAL]\n"
	  "              [--node N|local [--strict]] [--exist-ok]\n"
	  "              [--pubsub [--subscribers N] [--policy overwrite|backpressure]\n"
	  "              [--stall MS]]",
	  "Create a channel without attaching to it.\n"
	  "  --slots N       slots per lane, a power of two in 2..16777216 (1024)\n"
	  "  --slot-size B   bytes per slot, a power of two in 64..65536 (64)\n"
	  "  --lanes N       most senders at once, 1..4096 (16); alias --senders\n"
	  "  --mode OCTAL    permission bits: r to receive, w to send (0600); on the\n"
	  "                  shared-memory backend both roles need r and w\n"
	  "  --node N        NUMA node of the memory, or 'local' (the default)\n"
	  "  --strict        only that node's memory, else fail with ENOMEM\n"
	  "  --exist-ok      an existing channel of that name is not an error\n"
	  "  --pubsub        a publish/subscribe channel: one publisher, many\n"
	  "                  subscribers, each getting every message (shm backend);\n"
	  "                  slot size 256 unless given\n"
	  "  --subscribers N most subscribers at once, 1..4096 (1024)\n"
	  "  --policy P      overwrite (the publisher never waits; a subscriber a ring\n"
	  "                  behind is told how many it lost) or backpressure (the\n"
	  "                  publisher waits for the slowest) (overwrite)\n"
	  "  --stall MS      backpressure: detach a subscriber the publisher waited on\n"
	  "                  MS ms, 0 never (1000)\n"
	  "The largest message is (slots - 1) x slot size - 8 bytes; a pub/sub\n"
	  "channel's is slot size - 16 (a message fits one slot).\n" },
	{ "remove", "rm", cmd_remove, "remove NAME",
	  "Remove a channel's name; processes attached keep using it until they\n"
	  "close.  Allowed to its owner or creator (dev: or CAP_SYS_ADMIN).\n" },
	{ "grant", NULL, cmd_grant,
	  "grant NAME --role sender|receiver|publisher|subscriber --socket PATH\n"
	  "              [--count N] [--timeout MS] [--mode OCTAL]",
	  "Serve endpoints of channel NAME over a Unix socket: listen at PATH and\n"
	  "give each process that connects one endpoint -- a descriptor that\n"
	  "carries exactly that role on that channel, with no /dev/lzchan and no\n"
	  "shared IPC namespace on its side ('--endpoint PATH' of send, recv,\n"
	  "publish and subscribe takes one).  Prints 'granted ROLE endpoint ID of\n"
	  "NAME' for each; 'lzchan revoke NAME ID' takes one back.  On the\n"
	  "shared-memory backend what is granted is the channel file itself: no\n"
	  "role limit (its holder may write the whole file, as any party there\n"
	  "may; the role is the one its --endpoint command takes), no ID, not\n"
	  "revocable; it prints 'granted ROLE endpoint of NAME (shm: ...)'.\n"
	  "The caller needs read and write access to the channel file there.\n"
	  "A socket file nobody serves any more is replaced; the socket is removed\n"
	  "at the end.\n"
	  "  --role R      the role each endpoint carries (required; on shm only\n"
	  "                the kind of channel is checked: none is carried)\n"
	  "  --socket PATH the Unix socket to listen at (required)\n"
	  "  --count N     grant N endpoints, one per connection, then end (1)\n"
	  "  --timeout MS  give up after MS ms without a connection: exit 3\n"
	  "  --mode OCTAL  the socket's permission bits: who may connect, and so\n"
	  "                take an endpoint (0600: the caller's own user, as a\n"
	  "                rootless container's root is)\n" },
	{ "revoke", NULL, cmd_revoke, "revoke NAME ID|--all",
	  "Revoke endpoint ID of channel NAME (as 'lzchan grant' printed it), or\n"
	  "with --all every endpoint of it, and print how many were revoked.  The\n"
	  "holder's lane (or role) ends as a departure; its calls fail with EPIPE.\n"
	  "Allowed to who granted it, the channel's owner or creator, and\n"
	  "CAP_SYS_ADMIN.  Needs the lzchan module: on the shared-memory backend\n"
	  "an endpoint is the channel file, which nothing revokes (EOPNOTSUPP);\n"
	  "remove the channel and create it anew to shut its holders out.\n" },
	{ "send", NULL, cmd_send, "send NAME [--records] [--timeout MS] [--endpoint PATH]",
	  "Send stdin to the channel: each line (without its newline) becomes one\n"
	  "message; with --records, each record: a 4-byte little-endian length,\n"
	  "then that many bytes (any data).  Waits for room rather than dropping\n"
	  "anything.  At the end of stdin it waits until the receiver has taken\n"
	  "every message, then ends with status 0 (at once if no receiver has\n"
	  "attached yet: the messages wait for one); a receiver that left or died\n"
	  "first is EPIPE (status 1).  A line or record longer than the channel's\n"
	  "largest message fails with EMSGSIZE naming the limit (what came before\n"
	  "it was sent).\n"
	  "  --records     length-prefixed records instead of lines\n"
	  "  --timeout MS  wait at most MS ms for room per message, and for the\n"
	  "                receiver to take the last ones, else exit 3\n"
	  "  --endpoint PATH  send through an endpoint: connect to the Unix socket\n"
	  "                PATH ('lzchan grant') and take the sender endpoint it\n"
	  "                gives (waiting up to --timeout), instead of opening\n"
	  "                NAME; NAME is then optional and only names the channel\n"
	  "                in messages.  EPIPE then also means the endpoint was\n"
	  "                revoked.  On the shared-memory backend what comes is\n"
	  "                the channel file itself, attached as its sender.\n" },
	{ "recv", NULL, cmd_recv,
	  "recv NAME [--count N] [--timeout MS] [--records] [--eof] [--who]\n"
	  "              [--spin-ns NS] [--publish-every N] [--endpoint PATH]",
	  "Receive messages to stdout as the channel's receiver: each message then\n"
	  "a newline, or with --records the 4-byte little-endian length then the\n"
	  "bytes.  Runs until --count, --eof, --timeout, or SIGINT/SIGTERM (exit 0).\n"
	  "  --count N          stop after N messages (no more are taken)\n"
	  "  --timeout MS       give up after MS ms without a message: exit 3\n"
	  "  --records          length-prefixed records instead of lines\n"
	  "  --eof              stop when a sender has closed and all it sent is out\n"
	  "  --who              name each lane's sender on stderr at its first message\n"
	  "                     (for a remote one, through lzchan-bridged: its host,\n"
	  "                     uid and pid there)\n"
	  "  --spin-ns NS       spin this long before parking (50000)\n"
	  "  --publish-every N  publish the read position every N slots\n"
	  "  --endpoint PATH    receive through a receiver endpoint from the Unix\n"
	  "                     socket PATH ('lzchan grant'), as send --endpoint\n"
	  "A sender that died, or was cut off (a remote one, through lzchan-bridged),\n"
	  "is named on stderr when its lane ends.\n" },
	{ "publish", NULL, cmd_publish, "publish NAME [--records] [--timeout MS] [--endpoint PATH]",
	  "Publish stdin to a pub/sub channel (create --pubsub), as its one\n"
	  "publisher: each line (or with --records each length-prefixed record) is\n"
	  "one message, which every subscriber gets.  Overwrite: never waits;\n"
	  "backpressure: waits for room (the slowest subscriber).  Ends at the end\n"
	  "of stdin (subscribers then see the end of the stream).\n"
	  "  --records     length-prefixed records instead of lines\n"
	  "  --timeout MS  wait at most MS ms for room per message, else exit 3\n"
	  "  --endpoint PATH  publish through a publisher endpoint from the Unix\n"
	  "                socket PATH ('lzchan grant'), as send --endpoint\n" },
	{ "subscribe", "sub", cmd_subscribe,
	  "subscribe NAME [--count N] [--timeout MS] [--records] [--history N]\n"
	  "              [--endpoint PATH]",
	  "Receive a pub/sub channel's messages to stdout as one of its\n"
	  "subscribers, from the newest on: each message then a newline, or with\n"
	  "--records the 4-byte little-endian length then the bytes.  Messages lost\n"
	  "(overwritten before read) are counted on stderr and the stream goes on.\n"
	  "Runs until --count, the publisher's end, --timeout, or SIGINT/SIGTERM.\n"
	  "A publisher that died is exit 1; a clean end exit 0.\n"
	  "  --count N     stop after N messages\n"
	  "  --timeout MS  give up after MS ms without a message: exit 3\n"
	  "  --records     length-prefixed records instead of lines\n"
	  "  --history N   start up to N messages before the newest still there\n"
	  "  --endpoint PATH  subscribe through a subscriber endpoint from the Unix\n"
	  "                socket PATH ('lzchan grant'), as send --endpoint (from\n"
	  "                the newest message: no --history)\n" },
	{ "watch", NULL, cmd_watch,
	  "watch [NAME] [--interval S] [--iterations N] [--json]",
	  "A refreshing view of message and wakeup rates per channel, like top\n"
	  "(the screen is cleared only when stdout is a terminal).\n"
	  "  --interval S     seconds between samples, 0.01..86400 (1)\n"
	  "  --iterations N   stop after N refreshes (default: until SIGINT)\n"
	  "  --json           a JSON array, one object per refresh\n" },
	{ "features", NULL, cmd_features, "features [--json]",
	  "Show the ABI version, page size and feature bits of the loaded module.\n" },
	{ "limits", NULL, cmd_limits, "limits [--json]",
	  "Show the module's limits on channels and channel memory and the\n"
	  "caller's use of each: the machine's, the caller's IPC namespace's, and\n"
	  "the caller's own (as a user of the user namespace owning that IPC\n"
	  "namespace; containers' users also count as the user who made them).\n"
	  "  --json   one JSON object: machine, namespace, user, exempt\n" },
	{ "help", NULL, cmd_help, "help [COMMAND]", "Show help for a command.\n" },
};

#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name) || (cmds[i].alias && !strcmp(cmds[i].alias, name)))
			return &cmds[i];
	return NULL;
}

static void usage(FILE *to)
{
	size_t i;

	fprintf(to, "usage: %s [--version] [--help] COMMAND [ARGS]\n\ncommands:\n", prog);
	for (i = 0; i < NCMDS; i++)
		fprintf(to, "  %s %s%s%s%s\n", prog, cmds[i].synopsis,
			cmds[i].alias ? "    (alias: " : "", cmds[i].alias ? cmds[i].alias : "",
			cmds[i].alias ? ")" : "");
	fprintf(to, "\n'%s help COMMAND' or '%s COMMAND --help' describes one.\n"
		"environment: LZCHAN_BACKEND=dev|shm|auto, LZCHAN_SHM_DIR (default /dev/shm)\n"
		EXIT_HELP, prog, prog);
}

static int help_for(const char *name, FILE *to)
{
	const struct cmd *c = find_cmd(name);

	if (!c) {
		usage_error("unknown command '%s'", name);
		return EXIT_USAGE;
	}
	fprintf(to, "usage: %s %s\n\n%s", prog, c->synopsis, c->help);
	if (c->alias)
		fprintf(to, "alias: %s\n", c->alias);
	fprintf(to, EXIT_HELP);
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	if (argc > 2) {
		usage_error("help takes one COMMAND");
		return EXIT_USAGE;
	}
	if (argc == 2 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")) {
		cmdname = "";
		return help_for(argv[1], stdout);
	}
	usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const struct cmd *c;
	const char *b = getenv("LZCHAN_BACKEND");

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
	c = find_cmd(argv[1]);
	if (!c) {
		fprintf(stderr, "%s: unknown command '%s' (try '%s --help')\n", prog,
			argv[1], prog);
		return EXIT_USAGE;
	}
	cmdname = c->name;
	if (b && *b && strcmp(b, "dev") && strcmp(b, "shm") && strcmp(b, "auto")) {
		fprintf(stderr, "%s: LZCHAN_BACKEND='%s' is not dev, shm or auto\n", prog, b);
		return EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
