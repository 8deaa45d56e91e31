/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * liblzchan: shared-memory message channels between processes.
 *
 * A channel has one receiver and up to max_senders senders.  Each sender
 * owns a lane, a single-producer ring in shared memory; sending and
 * receiving touch only that memory (no system call and no locked
 * instruction per message while the receiver is awake).  A receiver that
 * finds nothing to do spins a while, then parks; only then does a sender
 * make a system call, once, to wake it.
 *
 * Backends: /dev/lzchan (the lzchan kernel module) when it is there, else
 * named shared memory in /dev/shm with futex wakeups.  LZCHAN_BACKEND=dev,
 * shm or auto (the default) in the environment forces one.
 *
 * Conventions: every function returns 0 (or a count or length) on success
 * and a negative errno on failure; errno itself is never the error channel.
 * No global state: any number of channels may be open in one process.
 *
 * Threads: a handle belongs to one thread at a time (lzchan_wake()
 * excepted); the library takes no lock.  Many threads sending to one receiver each open their own sender
 * handle, hence their own lane -- per-thread endpoints, never a shared one
 * behind a lock.  The receiver's handle is likewise one thread's.
 */
#ifndef LZCHAN_H
#define LZCHAN_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <linux/lzchan.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LZCHAN_VERSION_MAJOR	0
#define LZCHAN_VERSION_MINOR	3

/* Version of the library actually linked (may differ from the header's). */
int lzchan_version_major(void);
int lzchan_version_minor(void);

struct lzchan;

/* lzchan_open() flags: exactly one role, plus creation flags. */
#define LZCHAN_RECEIVER		(1U << 0)
#define LZCHAN_SENDER		(1U << 1)
#define LZCHAN_CREATE		(1U << 2)	/* create the channel if absent */
#define LZCHAN_EXCL		(1U << 3)	/* with CREATE: fail if it exists */
#define LZCHAN_OWNED		(1U << 4)	/* fail (-EPERM) unless the channel's
						 * owner is the caller's euid */
#define LZCHAN_TEMP		(1U << 5)	/* with CREATE, as RECEIVER: a new
						 * channel whose name goes with its
						 * receiver */
#define LZCHAN_PUBLISHER	(1U << 6)	/* a pub/sub channel's publisher
						 * (see "publish/subscribe") */
#define LZCHAN_SUBSCRIBER	(1U << 7)	/* ... one of its subscribers */

/* Channel options, for creation (and the receiver's tunables). */
struct lzchan_opts {
	uint32_t slot_size;	/* bytes per slot, power of two >= 64 (default 64) */
	uint32_t slot_count;	/* slots per lane, power of two (default 1024) */
	uint32_t max_senders;	/* lanes (default 16) */
	int32_t numa_node;	/* node, or LZCHAN_NODE_LOCAL (default) */
	uint32_t mode;		/* permission bits (default 0600) */
	uint32_t node_strict;	/* 1: pages only from numa_node */
	uint32_t spin_ns;	/* receiver: spin this long before parking
				 * (default 50 us; 0 parks at once) */
	uint32_t publish_every;	/* receiver: publish its position every this
				 * many slots (default slot_count / 4) */
};

/* Fill @o with the defaults above. */
void lzchan_opts_init(struct lzchan_opts *o);

/*
 * Open channel @name as receiver or sender (@flags), creating it first
 * with LZCHAN_CREATE (geometry from @opts, or defaults when NULL).
 * Without EXCL an existing channel is opened, whoever made it: add
 * LZCHAN_OWNED to accept only a channel the caller owns (a name someone
 * else created first is -EPERM), and see lzchan_geometry()'s created.
 * Errors: -ENOENT (no such channel), -EEXIST (CREATE|EXCL and it exists),
 * -EPERM (OWNED and another user's channel), -EBUSY (a receiver is
 * attached), -EUSERS (no free lane), -EACCES, -EINVAL, -ENOMEM, and the
 * backend's errors (see the man pages).
 */
int lzchan_open(struct lzchan **chp, const char *name, unsigned int flags,
		const struct lzchan_opts *opts);

/*
 * As lzchan_open(), but while the channel does not exist yet (-ENOENT)
 * wait for it, up to @timeout_ns (-1: forever; -ETIMEDOUT), looking every
 * 1 ms, then every 10 ms after 20 ms.  -EINTR if a signal handler ran.
 */
int lzchan_open_wait(struct lzchan **chp, const char *name, unsigned int flags,
		     const struct lzchan_opts *opts, int64_t timeout_ns);

/*
 * Sender: wait until a receiver is attached to the channel, up to
 * @timeout_ns (-1: forever).  0, -ETIMEDOUT, -EINTR (lzchan_wake() or a
 * signal), -EIO, -EBADF (not a sender).
 */
int lzchan_wait_receiver(struct lzchan *ch, int64_t timeout_ns);

/* Close: a sender's lane ends (the receiver drains it, then sees
 * end-of-stream); a receiver's departure makes senders' calls fail with
 * -EPIPE.  Messages already in the ring stay there. */
void lzchan_close(struct lzchan *ch);

/*
 * Close as lzchan_close() does, but as a death, not a clean close: the
 * peer's lzchan_end_cause() then says LZCHAN_END_LOST.  For a proxy whose
 * own party died or was cut off (lzchan-bridged, for a remote sender that
 * died).  Messages already sent are still delivered first.
 */
void lzchan_close_lost(struct lzchan *ch);

/*
 * How the peer whose end was last reported left.  Receiver: @lane's last
 * sender whose -EPIPE was delivered; sender: the receiver (@lane is
 * LZCHAN_LANE_NONE).  0: no end yet; LZCHAN_END_CLOSED: it closed its
 * handle (lzchan_close()); LZCHAN_END_LOST: it died, or exited without
 * closing; LZCHAN_END_UNKNOWN: the module does not record it (one
 * without LZCHAN_FEAT_BYE).  -EINVAL (bad lane), -EBADF.  On shm the
 * answer is read from the channel file, which any party can write.
 */
#define LZCHAN_END_CLOSED	1
#define LZCHAN_END_LOST		2
#define LZCHAN_END_UNKNOWN	3
int lzchan_end_cause(struct lzchan *ch, uint32_t lane);

/* Remove the name; open handles keep working. */
int lzchan_unlink(const char *name);

enum lzchan_backend {
	LZCHAN_BACKEND_DEV = 1,		/* /dev/lzchan */
	LZCHAN_BACKEND_SHM = 2,		/* /dev/shm + futex */
};

struct lzchan_geom {
	uint32_t slot_size;
	uint32_t slot_count;
	uint32_t max_senders;
	uint32_t max_msg;	/* largest message, bytes (<= LZCHAN_MSG_MAX) */
	uint32_t lane;		/* sender: its lane; receiver: LZCHAN_LANE_NONE */
	uint32_t backend;	/* enum lzchan_backend */
	int32_t numa_node;	/* node the memory was asked from */
	uint32_t created;	/* 1: this handle's lzchan_open() created the
				 * channel (LZCHAN_CREATE); 0: it existed */
};

int lzchan_geometry(const struct lzchan *ch, struct lzchan_geom *g);
const char *lzchan_backend_name(const struct lzchan *ch);

/* ---- sending ---- */

/*
 * Copy @len bytes as one message.  0, or -EAGAIN (ring full), -EMSGSIZE
 * (len > max_msg), -EPIPE (the receiver is gone), -EBADF (not a sender).
 */
#if defined(__LZCHAN_LIBRARY) || defined(LZCHAN_NO_INLINE)
int lzchan_send(struct lzchan *ch, const void *buf, size_t len);
#else /* inline, in <lzchan_fast.h> */
static inline int lzchan_send(struct lzchan *ch, const void *buf, size_t len);
#endif

/* As lzchan_send, waiting for room up to @timeout_ns (-1: forever):
 * -ETIMEDOUT when it runs out, -EINTR on lzchan_wake() or a signal. */
int lzchan_send_wait(struct lzchan *ch, const void *buf, size_t len,
		     int64_t timeout_ns);

/*
 * Wait up to @timeout_ns (-1: forever) until the receiver has taken every
 * message sent on this handle.  0; -ENOTCONN (no receiver has attached yet:
 * the messages wait for the first), -EPIPE (the receiver left, or died,
 * before taking them), -ETIMEDOUT, -EINTR (lzchan_wake() or a signal),
 * -EIO, -EBADF.
 */
int lzchan_flush(struct lzchan *ch, int64_t timeout_ns);

/* Send @n messages, one per iovec; returns how many were sent (the first
 * failure stops the batch), or a negative errno if none was. */
int lzchan_send_batch(struct lzchan *ch, const struct iovec *msgs, unsigned int n);

/*
 * Zero copy: reserve room for a message of up to @len bytes and get where
 * to write it; then lzchan_commit() with the actual length (<= @len)
 * publishes it.  Nothing else may be sent in between.
 */
#if defined(__LZCHAN_LIBRARY) || defined(LZCHAN_NO_INLINE)
int lzchan_reserve(struct lzchan *ch, size_t len, void **buf);
int lzchan_commit(struct lzchan *ch, size_t len);
#else /* inline, in <lzchan_fast.h> */
static inline int lzchan_reserve(struct lzchan *ch, size_t len, void **buf);
static inline int lzchan_commit(struct lzchan *ch, size_t len);
#endif

/* ---- receiving ---- */

/*
 * A message in place, valid until released.  A sender can overwrite its own
 * lane's memory at any time: copy what must not change under you.
 */
struct lzchan_msg {
	const void *data;
	uint32_t len;
	uint32_t lane;
	uint32_t __end;		/* private */
	uint32_t __gen;		/* private */
};

/*
 * Receive one message, copied into @buf, from any lane (lzchan_recv) or
 * from @lane (lzchan_recv_lane).  Returns its length, or:
 *   -EAGAIN     nothing there now;
 *   -EPIPE      end of stream: *lane's sender is gone and everything it
 *               sent was received (reported once per sender);
 *   -EMSGSIZE   the message is longer than @cap (left in place; *lane set);
 *   -EBADMSG    the lane holds something that is not a valid message (its
 *               sender wrote garbage); that lane is abandoned, and once
 *               that sender has gone its -EPIPE follows (the lane then
 *               takes a new sender);
 *   -EBADF      not a receiver.
 */
#if defined(__LZCHAN_LIBRARY) || defined(LZCHAN_NO_INLINE)
int lzchan_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane);
#else /* inline, in <lzchan_fast.h> */
static inline int lzchan_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane);
#endif
int lzchan_recv_lane(struct lzchan *ch, uint32_t lane, void *buf, size_t cap);

/* As lzchan_recv, blocking: spin for the spin time, then park until a
 * message comes or @timeout_ns passes (-1: forever; -ETIMEDOUT).
 * -EINTR: lzchan_wake() was called, or a signal handler ran while it was
 * parked. */
int lzchan_recv_wait(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane,
		     int64_t timeout_ns);

/*
 * Make a thread blocked in lzchan_recv_wait(), lzchan_send_wait(),
 * lzchan_flush() or lzchan_wait_receiver() on @ch return -EINTR (if none is, the next such call that
 * would block does).
 * The one call that may be made on a handle another thread is using; it
 * is async-signal-safe.  0, or -EBADF (NULL).
 */
int lzchan_wake(struct lzchan *ch);

/*
 * Zero copy: the next message (any lane, or one lane) without copying; the
 * same errors as lzchan_recv.  Release it (and with it every earlier
 * message of its lane) with lzchan_release().  Until then, peeking again
 * returns the messages after it in the same lane.
 */
#if defined(__LZCHAN_LIBRARY) || defined(LZCHAN_NO_INLINE)
int lzchan_peek(struct lzchan *ch, struct lzchan_msg *m);
#else /* inline, in <lzchan_fast.h> */
static inline int lzchan_peek(struct lzchan *ch, struct lzchan_msg *m);
#endif
int lzchan_peek_lane(struct lzchan *ch, uint32_t lane, struct lzchan_msg *m);
#if defined(__LZCHAN_LIBRARY) || defined(LZCHAN_NO_INLINE)
void lzchan_release(struct lzchan *ch, const struct lzchan_msg *m);
#else /* inline, in <lzchan_fast.h> */
static inline void lzchan_release(struct lzchan *ch, const struct lzchan_msg *m);
#endif

/* Up to @n messages from one lane, in place; returns how many (then
 * release the last), or an error as lzchan_peek. */
#if defined(__LZCHAN_LIBRARY) || defined(LZCHAN_NO_INLINE)
int lzchan_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n);
#else /* inline, in <lzchan_fast.h> */
static inline int lzchan_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n);
#endif

/* ---- event loops ---- */

/*
 * A file descriptor that becomes readable when the receiver (or a
 * subscriber) should look at the channel, for epoll/poll/io_uring.  Before
 * waiting on it call lzchan_arm(): 0 means armed (wait), -EAGAIN means
 * messages are waiting (receive them first).  Receiving disarms.  The
 * module's eventfd, or on shm an epoll set over the receiver's Unix socket
 * (lzchan_sock.c) -- a subscriber's: over an inotify watch of the channel
 * file, whose times the publisher's wake touches; each of its arms parks
 * it again.  Errors: -EBADF for a sender or a publisher; -EOPNOTSUPP on
 * shm when the receiver could not create its socket; -EMFILE, -ENOSPC,
 * -ENOENT (no /proc) for a shm subscriber's descriptors; -ENOSYS (arm)
 * without membarrier.
 */
int lzchan_event_fd(struct lzchan *ch);
int lzchan_arm(struct lzchan *ch);

/* Who is on @lane (LZCHAN_LANE_NONE: the receiver), as the kernel saw it
 * (the module at open; on shm SO_PEERCRED of the sender's connection to
 * the receiver's socket).  -ENOTCONN when nobody is there (or, on shm, the
 * sender has not connected yet); -EOPNOTSUPP on shm without the socket. */
int lzchan_peer(struct lzchan *ch, uint32_t lane, int32_t *pid, uint32_t *uid,
		uint32_t *gid);

/*
 * Where a lane's sender speaks for a party elsewhere (lzchan-bridged, for
 * a sender on another host): who that is, as the proxy reports it.
 * Fills @o (set o->size to sizeof(*o) first) from the origin record the
 * lane's sender wrote (in $LZCHAN_ORIGIN_DIR, default
 * /run/lzchan-bridged/origin), believed only when the kernel says that
 * very process holds the lane (lzchan_peer(): pid, uid; /proc: its start
 * time), the file is its uid's and names this channel and lane.
 * 0; -ENOENT: the lane's sender claims no origin (a local sender);
 * -ENOTCONN: nobody on the lane; -EPROTO: a malformed record; -EBADF (not
 * a receiver), -EINVAL, and lzchan_peer()'s errors.
 */
#define LZCHAN_ORIGIN_DIR_DEFAULT	"/run/lzchan-bridged/origin"
struct lzchan_origin {
	uint32_t size;		/* in: sizeof(struct lzchan_origin) */
	uint32_t uid;		/* the remote sender's uid, on its host */
	int32_t pid;		/* ... and its pid there */
	uint32_t reserved;	/* 0 */
	char host[64];		/* its host, as the local bridge names the peer */
};
#define LZCHAN_ORIGIN_SIZE_V1	80
int lzchan_peer_origin(struct lzchan *ch, uint32_t lane, struct lzchan_origin *o);

/*
 * Ask the loaded kernel module what it supports.
 * Returns 0 and fills @out, or -ENOENT when /dev/lzchan does not exist (the
 * module is not loaded), -EACCES when the caller may not open it, or the
 * module's error.
 */
int lzchan_dev_features(struct lzchan_features *out);

/* ---- endpoints: one role on one channel, as a file descriptor ---- */

/*
 * An endpoint is a file descriptor that carries exactly one role on one
 * channel (the dev backend, a module with LZCHAN_FEAT_ENDPOINT).  A
 * process that may open the channel in that role grants it; another
 * process -- in a container with no /dev/lzchan and no shared IPC
 * namespace -- receives it over a Unix socket (or inherits it) and builds
 * a complete handle from it.  One attachment per endpoint, ever: the
 * kernel records the process that attaches (lzchan_peer(), lzchan show).
 * The channel's owner may revoke it: the holder's handle then fails as one
 * whose peer departed (-EPIPE, on every call; a receiver's with *lane
 * LZCHAN_LANE_NONE, nobody's end of stream; the call that meets the
 * revocation while a receive takes from its span may say -EIO), and its
 * lane ends as a departure.
 *
 * On the shm backend the nearest thing is the channel file itself:
 * lzchan_grant() opens it anew (O_RDWR, its own open file description),
 * and the same calls pass it.  It carries no role and no limit -- its
 * holder may write the whole file (every lane, the receiver's areas), as
 * every shm party may, attach as often and in whatever role it names to
 * lzchan_open_fd(), and pass it on -- and nothing revokes it (id 0;
 * lzchan_revoke() and lzchan_stat_peers() say -EOPNOTSUPP).  Its handle
 * finds the receiver's doorbell socket in the shm directory it sees
 * (named after the file's device and inode): without the channel's
 * directory there (another mount namespace) its sends still arrive, an
 * armed receiver is woken through the file's times, and the receiver's
 * lzchan_peer() for its lane says -ENOTCONN.
 * See lzchan_grant(3) and the admin guide.
 *
 * lzchan_grant - an endpoint for @role (LZCHAN_SENDER, LZCHAN_RECEIVER,
 * LZCHAN_PUBLISHER or LZCHAN_SUBSCRIBER) of channel @name: returns the fd
 * (close-on-exec unless @flags has LZCHAN_GRANT_INHERIT) and, with @id
 * non-NULL, its number on the channel (for lzchan_revoke()).  On shm the
 * fd is the channel file opened anew read-write (the caller needs the
 * file's r and w bits), *@id is 0 (nothing to revoke), and @role only
 * picks the kind of channel.  Errors: -EOPNOTSUPP (a module without
 * endpoints), -ENOENT, -EACCES, -EPROTOTYPE (a role of the other kind of
 * channel), -EPROTO (shm: not a channel file), -EINVAL, -EMFILE.
 */
#define LZCHAN_GRANT_INHERIT	(1U << 0)	/* the fd survives exec */
int lzchan_grant(const char *name, unsigned int role, unsigned int flags, uint64_t *id);

/*
 * lzchan_revoke - revoke endpoint @id of channel @name (0: every endpoint
 * of it).  Returns how many were revoked, or -ENOENT (no such channel or
 * endpoint), -EPERM (neither its granter nor the channel's owner or
 * creator), -EOPNOTSUPP (shm backend: its endpoints are the channel file,
 * which nothing revokes; or a module without endpoints).
 */
int lzchan_revoke(const char *name, uint64_t id);

/*
 * lzchan_grant_send - grant an endpoint (as lzchan_grant()) and send it
 * over connected Unix socket @sock (SCM_RIGHTS), with its role and the
 * channel's name (an 80-byte message: lzchan_grant_send(3)); the
 * caller's copy is closed, sent or not.  On shm what is sent is the
 * channel file (lzchan_grant() there), in the same message.  0, or
 * lzchan_grant()'s errors and sendmsg()'s (-EPIPE, -ENOTSOCK, ...).
 */
int lzchan_grant_send(int sock, const char *name, unsigned int role, uint64_t *id);

/*
 * lzchan_endpoint_recv - receive one endpoint sent by lzchan_grant_send()
 * over @sock, waiting up to @timeout_ms (-1: forever).  Returns the fd
 * (close-on-exec), or -ETIMEDOUT, -ECONNRESET (the peer closed first),
 * -EPROTO (not an endpoint message, or not exactly one descriptor, or one
 * that is not an lzchan endpoint -- on shm, a regular file whose header
 * says a channel of the kind the message's role takes is one: whatever
 * came is closed), -errno.
 */
int lzchan_endpoint_recv(int sock, int timeout_ms);

/*
 * lzchan_open_fd - a complete handle from endpoint @fd (mapping, wakeups,
 * credentials, as lzchan_open() gives), with no /dev/lzchan node and no
 * name lookup.  @flags: the role expected (one of LZCHAN_RECEIVER,
 * LZCHAN_SENDER, LZCHAN_PUBLISHER, LZCHAN_SUBSCRIBER), or 0 for the one it
 * carries.  @opts: a receiver's or subscriber's spin_ns, or NULL.  The
 * handle owns @fd from then on, success or not (lzchan_close() closes it).
 * On shm @fd is a channel file (lzchan_grant() there), which carries no
 * role: @flags must name one (0: -EINVAL), any role of the file's kind
 * attaches, as by name, and the file may be attached again (a dup()):
 * each handle opens the file anew through /proc for a description of its
 * own (a role is a lock of it), or, where that is refused, uses @fd only
 * if no handle holds a role on it yet (-EISCONN).
 * Such a handle knows no name: it finds the receiver's doorbell socket
 * only in the shm directory it sees (see above).
 * Errors: -EPERM (another role), -EISCONN (attached already: one
 * attachment per endpoint), -EPIPE (revoked), -ENOTTY (not an lzchan
 * descriptor at all, nor a regular file), -EPROTO (an lzchan descriptor
 * that is no endpoint, or a module of another ABI; on shm, a file that is
 * no channel), -EBADF (@fd negative), -EINVAL, and lzchan_open()'s
 * (on shm: -EPROTOTYPE, -EBUSY, -EUSERS, ...).
 */
int lzchan_open_fd(struct lzchan **chp, int fd, unsigned int flags,
		   const struct lzchan_opts *opts);

/*
 * lzchan_stat_peers - who is on each lane of channel @name (dev backend):
 * fills min(@n, lanes) entries (struct lzchan_lane_peer of the UAPI:
 * state, gen, pid, uid, gid in the caller's namespaces, the endpoint it
 * attached through or 0) and returns the number of lanes.  -EOPNOTSUPP on
 * shm (nothing records who holds the file: lzchan_peer() from the
 * receiver, lzchan_stat_lanes()), -EPROTOTYPE (pub/sub:
 * lzchan_stat_subscribers()), -EACCES, -ENOENT.
 */
int lzchan_stat_peers(const char *name, struct lzchan_lane_peer *lp, unsigned int n);

/* ---- managing and inspecting channels ---- */

/*
 * lzchan_create - create channel @name without attaching to it.
 * @opts:  geometry, mode and node (NULL: the defaults); the receiver's
 *         tunables are ignored
 * @flags: 0, or LZCHAN_EXCL to fail when the name exists
 *
 * Returns 1 if this call created the channel, 0 if it existed already
 * (without LZCHAN_EXCL; the existing geometry stands), or -EEXIST (EXCL),
 * -EINVAL (bad name, geometry, mode, node or flags), -ENAMETOOLONG, -EACCES
 * (may not open /dev/lzchan, or create in the shm directory), -ENODEV
 * (LZCHAN_BACKEND=dev but no module), the module's limits (-ENOSPC,
 * -EFBIG, -EDQUOT) or -ENOMEM.
 */
int lzchan_create(const char *name, const struct lzchan_opts *opts,
		  unsigned int flags);

/*
 * lzchan_list - describe the channels visible to the caller.
 * @st:      room for @n descriptions (may be NULL when @n is 0)
 * @n:       entries in @st
 * @backend: if not NULL, set to the backend listed (enum lzchan_backend)
 *
 * The backend is chosen as lzchan_open() chooses it (LZCHAN_BACKEND).
 * dev: the channels named in the caller's IPC namespace, as the module
 * describes them (LZCHAN_IOC_LIST), whatever their mode.  shm: the files
 * lzchan.<name> in /dev/shm (LZCHAN_SHM_DIR overrides); see lzchan_stat()
 * for what such a description holds.  Entries come in no particular order.
 *
 * Returns the number of channels visible (fills min(@n, that) entries;
 * call again with more room if it is larger than @n), or -ENODEV (dev
 * forced but no module), -EACCES (may not open /dev/lzchan), -ENOENT (the
 * shm directory does not exist), -ENOMEM, or another negative errno.
 */
int lzchan_list(struct lzchan_chan_stat *st, unsigned int n, uint32_t *backend);

/*
 * lzchan_stat - describe channel @name without attaching to it.
 *
 * Fills @st as LZCHAN_IOC_LIST does and sets *@backend (if not NULL).
 * On the shm backend the file is read, never mapped, and trusted in
 * nothing: uid, gid and mode are the file's (cuid, cgid: the same);
 * senders counts lanes whose sender process is alive, receiver whether
 * the receiver's process is; sender_attaches sums the lanes' generations;
 * wake_requests and wakeups both count the senders' futex wakes (a 32-bit
 * counter); peer_deaths is 0 (not recorded).  A file that is not a valid
 * channel, or that the caller may not read, is still described (owner,
 * mode, bytes) with slot_size 0 meaning "geometry unknown".
 *
 * Returns 0, or -ENOENT (no such channel: see lzchan_list()), -EINVAL or
 * -ENAMETOOLONG (bad name), and the errors of lzchan_list().
 */
int lzchan_stat(const char *name, struct lzchan_chan_stat *st, uint32_t *backend);

/* One lane as lzchan_stat_lanes() sees it. */
struct lzchan_lane_stat {
	uint32_t state;		/* LZCHAN_LANE_FREE, _ATTACHED or _CLOSED */
	uint32_t gen;		/* senders that attached to this lane so far */
	uint32_t alive;		/* 1: the sender's process holds the lane */
	uint32_t sleepy;	/* 1: the receiver stopped polling the lane */
	uint32_t tail;		/* positions (slots) written by the sender */
	uint32_t head;		/* positions the receiver has published as read */
	uint64_t msgs;		/* messages sent on this lane (by its senders) */
	uint64_t bytes;		/* payload bytes sent */
	uint64_t reserved[2];
};

/*
 * lzchan_stat_lanes - per-lane state of channel @name.
 * Fills min(@n, lanes) entries of @ls and returns the channel's number of
 * lanes (max_senders), or -EOPNOTSUPP on the dev backend (the module
 * shows lanes only to attached processes), -EPROTO (the file is not a
 * valid channel), -EACCES, and the errors of lzchan_stat().
 */
int lzchan_stat_lanes(const char *name, struct lzchan_lane_stat *ls, unsigned int n);

/* One subscriber place of a pub/sub channel, as lzchan_stat_subscribers()
 * sees it (shm: read from the file, which every party can write). */
struct lzchan_sub_stat {
	uint32_t state;		/* LZCHAN_LANE_FREE, _ATTACHED or _CLOSED */
	uint32_t gen;		/* subscribers that took this place so far */
	uint32_t alive;		/* 1: the subscriber's process holds it */
	uint32_t detached;	/* 1: detached for stalling (back-pressure) */
	uint64_t pos;		/* its position, as it last published it */
	uint64_t lag;		/* the publisher's tail less pos */
	uint64_t lost;		/* messages it lost so far */
	uint64_t reserved[2];
};

/*
 * lzchan_stat_subscribers - each subscriber place of pub/sub channel @name.
 * Fills min(@n, places) entries of @ss and returns max_subscribers, or
 * -EPROTOTYPE (@name is a channel), -EOPNOTSUPP (a module older than
 * pub/sub), -EPROTO (not
 * a valid channel file), -ENOENT, -EACCES, -EINVAL.  lzchan_stat() and
 * lzchan_list() describe a pub/sub channel too, with LZCHAN_STAT_PUBSUB in
 * flags: senders is then its publisher (0 or 1), receiver the subscribers
 * attached, max_senders 1, messages the messages published.
 */
int lzchan_stat_subscribers(const char *name, struct lzchan_sub_stat *ss, unsigned int n);

/*
 * lzchan_stat_origin - lane @lane of channel @name's origin record (see
 * lzchan_peer_origin()) as its writer left it, without attaching.
 * Unverified: with no handle there is no kernel to ask who holds the
 * lane, so only the writer, *@pid, vouches for it (lzchan show marks
 * remote lanes with it).  0; -ENOENT (no record, or its writer is gone),
 * -EPROTO (malformed), -EINVAL, -ENAMETOOLONG.
 */
int lzchan_stat_origin(const char *name, uint32_t lane, struct lzchan_origin *o, int32_t *pid);

/* ---- publish/subscribe ----
 *
 * A pub/sub channel has one publisher and up to max_subscribers
 * subscribers, each of which gets every message (one write, read in place
 * by all).  The publisher opens it with LZCHAN_PUBLISHER and sends with
 * lzchan_send(), lzchan_reserve()/lzchan_commit() and lzchan_send_wait();
 * a subscriber opens it with LZCHAN_SUBSCRIBER (or lzchan_subscribe())
 * and receives with lzchan_recv(), lzchan_recv_wait(), lzchan_peek(),
 * lzchan_recv_batch() and lzchan_release() (views: lane 0).  A message
 * fits one slot: at most slot_size - 16 bytes (lzchan_geometry()'s
 * max_msg).  Opening a channel as one kind and a pub/sub channel as the
 * other fails with -EPROTOTYPE.  Both backends (a module older than
 * pub/sub channels refuses them: -EOPNOTSUPP from lzchan_ps_create()).
 * An event loop waits on lzchan_event_fd() after lzchan_arm(), as a
 * receiver does.
 *
 * What a subscriber's calls return besides the channel's:
 *   -EOVERFLOW   (LZCHAN_PS_OVERWRITE) the publisher overwrote messages
 *                before we read them: lzchan_lost() says how many; the
 *                next call goes on from the oldest message still there;
 *   -ECONNRESET  (LZCHAN_PS_BACKPRESSURE) we were detached for standing
 *                still stall_ms while the publisher waited: close;
 *   -EPIPE       the publisher left, and everything it published was
 *                read (once per publisher; lzchan_end_cause(ch, 0) says
 *                how it left); a next publisher's messages follow.
 */
struct lzchan_ps_opts {
	uint32_t size;		/* sizeof(struct lzchan_ps_opts) */
	uint32_t slot_size;	/* bytes per slot, power of two >= 64 (default 256) */
	uint32_t slot_count;	/* slots in the ring, power of two (default 1024) */
	uint32_t max_subscribers; /* 1..LZCHAN_SUBSCRIBERS_MAX (default 1024) */
	uint32_t policy;	/* LZCHAN_PS_OVERWRITE (default), _BACKPRESSURE */
	uint32_t stall_ms;	/* back-pressure: detach a subscriber the
				 * publisher waited on this long (default
				 * 1000; 0: never) */
	int32_t numa_node;	/* node, or LZCHAN_NODE_LOCAL (default) */
	uint32_t mode;		/* permission bits (default 0600) */
	uint32_t node_strict;	/* 1: pages only from numa_node */
	uint32_t reserved[7];	/* 0 */
};

void lzchan_ps_opts_init(struct lzchan_ps_opts *o);

/* Create pub/sub channel @name; as lzchan_create() (1 created, 0 existed,
 * -EEXIST with LZCHAN_EXCL, -EINVAL, ...), and -EOPNOTSUPP with a module
 * older than pub/sub channels (no LZCHAN_FEAT_PUBSUB). */
int lzchan_ps_create(const char *name, const struct lzchan_ps_opts *opts,
		     unsigned int flags);

/* Subscribe to @name, starting at its newest message and up to @history
 * older ones still in the ring (at most slot_count - 1).  @flags: 0 or
 * LZCHAN_OWNED.  As lzchan_open(); -EUSERS when every place is taken. */
int lzchan_subscribe(struct lzchan **chp, const char *name, uint32_t history,
		     unsigned int flags);

/* Subscriber: how many messages were lost since the last call (*@lost;
 * 0 when none), then counting starts again.  0, -EBADF, -EINVAL. */
int lzchan_lost(struct lzchan *ch, uint64_t *lost);

/*
 * Subscriber: release view @m as lzchan_release() does, and say whether
 * it stayed intact while held: 0, or -ESTALE -- the publisher overwrote it
 * (LZCHAN_PS_OVERWRITE), so what was read from it must be dropped (it
 * counts as lost), or it was no view held any more.  -EBADF, -EINVAL.
 */
int lzchan_release_check(struct lzchan *ch, const struct lzchan_msg *m);


/* The inline calls' definitions and the handle prefix they use. */
#include "lzchan_fast.h"

#ifdef __cplusplus
}
#endif

#endif /* LZCHAN_H */
