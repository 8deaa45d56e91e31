/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * lzchan: shared-memory message channels between unrelated processes.
 *
 * Userspace ABI of /dev/lzchan, and the layout of a channel's shared memory.
 * Shared by the kernel module and libchan; a client written without libchan
 * needs only this header (see Documentation/userspace-api/lzchan.rst).
 *
 * Conventions (the io_uring/iommufd way):
 *  - every ioctl argument struct starts with __u32 size: the size of the
 *    struct as the caller knows it.  The kernel accepts any size from the
 *    first published version of the struct upwards; bytes it does not know
 *    must be zero (else -E2BIG), and it writes back at most @size bytes.
 *  - all fields have explicit widths; reserved fields and unknown flag bits
 *    must be zero (else -EINVAL).
 *  - ioctl numbers carry no size (_IO), so a struct can grow without
 *    changing its command number.  Unknown commands fail with -ENOTTY.
 */
#ifndef _UAPI_LINUX_LZCHAN_H
#define _UAPI_LINUX_LZCHAN_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define LZCHAN_DEVICE_PATH	"/dev/lzchan"

/*
 * Bumped only for incompatible changes; features grow through bits.
 * 2: lzchan_shm_rx_lane.attn (the one receiver-written word a sender loads
 * per send), which every party must keep: LZCHAN_IOC_OPEN takes the
 * caller's abi_version and refuses any other (EPROTO).
 * 3: the bell area is the kernel's: every party maps it read-only, and a
 * sender rings its own lane's bit with LZCHAN_IOC_RING, so no sender can
 * ring or undo another lane's.
 * 4: each lane's receiver-written words (lzchan_shm_rx_lane) on a page of
 * their own (lzchan_layout.rx_lane_stride), which only that lane's sender
 * maps, with a copy of the receiver's park word (parked); a sender maps
 * neither the rx header nor the bell, and LZCHAN_IOC_RING wakes a parked
 * receiver.
 */
#define LZCHAN_ABI_VERSION	4

#define LZCHAN_IOC_MAGIC	0xC1

/* Channel names: 1..LZCHAN_NAME_MAX bytes of '!'..'~' except '/', NUL-ended. */
#define LZCHAN_NAME_MAX		63
#define LZCHAN_NAME_SIZE	(LZCHAN_NAME_MAX + 1)

/* Geometry limits (the module's parameters may lower the byte limits). */
#define LZCHAN_CACHELINE	64
#define LZCHAN_SLOT_SIZE_MIN	64
#define LZCHAN_SLOT_SIZE_MAX	65536
#define LZCHAN_SLOT_COUNT_MIN	2
#define LZCHAN_SLOT_COUNT_MAX	(1U << 24)
#define LZCHAN_SENDERS_MAX	4096

/* Control words that different parties write are at least this far apart. */
#define LZCHAN_CTRL_STRIDE	128

/* ------------------------------------------------------------------ */
/* ioctls                                                              */
/* ------------------------------------------------------------------ */

/*
 * LZCHAN_IOC_FEATURES (any fd): what the loaded module supports.
 * in:  size, flags (0), reserved (0)
 * out: abi_version, features (LZCHAN_FEAT_* bits), page_size
 */
struct lzchan_features {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 page_size;
	__u64 features;
	__u64 reserved[4];
};

#define LZCHAN_FEAT_NUMA	(1ULL << 0)	/* create: numa_node, NODE_STRICT */
#define LZCHAN_FEAT_EVENTFD	(1ULL << 1)	/* SET_EVENTFD / WAKE */
#define LZCHAN_FEAT_PEERCRED	(1ULL << 2)	/* PEER */
#define LZCHAN_FEAT_PLACEMENT	(1ULL << 3)	/* PLACEMENT */
#define LZCHAN_FEAT_NOPIN	(1ULL << 4)	/* mappings refuse every pin */
#define LZCHAN_FEAT_USAGE	(1ULL << 5)	/* USAGE; per-tenant limits */
#define LZCHAN_FEAT_DEPARTURES	(1ULL << 6)	/* lzchan_shm_hdr.departures */
#define LZCHAN_FEAT_BYE		(1ULL << 7)	/* BYE; rx_bye, lzchan_shm_lane.bye */
#define LZCHAN_FEAT_TEMP	(1ULL << 8)	/* LZCHAN_CREATE_TEMP */
#define LZCHAN_FEAT_PUBSUB	(1ULL << 9)	/* LZCHAN_CREATE_PUBSUB, the
						 * publisher and subscriber roles,
						 * PS_PARK, PS_DETACH, PS_SUBS */
#define LZCHAN_FEAT_ENDPOINT	(1ULL << 10)	/* GRANT, REVOKE, LANES; OPEN
						 * of an endpoint (empty name) */
#define LZCHAN_FEAT_ALL		(LZCHAN_FEAT_NUMA | LZCHAN_FEAT_EVENTFD | \
				 LZCHAN_FEAT_PEERCRED | LZCHAN_FEAT_PLACEMENT | \
				 LZCHAN_FEAT_NOPIN | LZCHAN_FEAT_USAGE | \
				 LZCHAN_FEAT_DEPARTURES | LZCHAN_FEAT_BYE | \
				 LZCHAN_FEAT_TEMP | LZCHAN_FEAT_PUBSUB | \
				 LZCHAN_FEAT_ENDPOINT)

/*
 * LZCHAN_IOC_CREATE (any fd): create a named channel in the caller's IPC
 * namespace.  The fd stays unbound: open the channel with LZCHAN_IOC_OPEN.
 * Without LZCHAN_CREATE_EXCL an existing channel of that name is not an
 * error: @created reads 0 and the existing geometry stands (read it with
 * LZCHAN_IOC_INFO after opening).
 *
 * Errors: EINVAL (bad name, geometry, node, mode, flags or reserved),
 * ENAMETOOLONG (no NUL within name[]), EEXIST (EXCL and the name exists),
 * ENOSPC (a channel count limit reached: max_channels, max_ns_channels or
 * max_user_channels; see LZCHAN_IOC_USAGE), EFBIG (over max_channel_bytes),
 * EDQUOT (a byte limit reached: max_ns_bytes or max_user_bytes), ENOMEM (no
 * memory; with NODE_STRICT: none on that node).
 */
struct lzchan_create {
	__u32 size;
	__u32 flags;			/* LZCHAN_CREATE_* */
	char name[LZCHAN_NAME_SIZE];
	__u32 slot_size;		/* power of two, 64..65536 */
	__u32 slot_count;		/* power of two, 2..2^24 */
	__u32 max_senders;		/* lanes, 1..LZCHAN_SENDERS_MAX; with
					 * LZCHAN_CREATE_PUBSUB the subscriber
					 * places, 1..LZCHAN_SUBSCRIBERS_MAX */
	__s32 numa_node;		/* node id, or LZCHAN_NODE_LOCAL */
	__u32 mode;			/* permission bits, 0..0777 */
	__u32 created;			/* out: 1 if this call created it */
	__u32 policy;			/* LZCHAN_CREATE_PUBSUB: LZCHAN_PS_*;
					 * else 0 */
	__u32 stall_ms;			/* LZCHAN_CREATE_PUBSUB with
					 * LZCHAN_PS_BACKPRESSURE: see
					 * lzchan_ps_hdr; else 0 */
	__u64 reserved[3];
};

#define LZCHAN_CREATE_EXCL		(1U << 0)	/* fail if the name exists */
#define LZCHAN_CREATE_NODE_STRICT	(1U << 1)	/* no fallback to other nodes */
#define LZCHAN_CREATE_TEMP		(1U << 2)	/* the name goes with the
							 * receiver (LZCHAN_FEAT_TEMP) */
#define LZCHAN_CREATE_PUBSUB		(1U << 3)	/* a publish/subscribe
							 * channel (LZCHAN_FEAT_PUBSUB;
							 * never with TEMP) */
#define LZCHAN_CREATE_FLAGS		(LZCHAN_CREATE_EXCL | LZCHAN_CREATE_NODE_STRICT | \
					 LZCHAN_CREATE_TEMP | LZCHAN_CREATE_PUBSUB)

/*
 * LZCHAN_CREATE_TEMP: when a receiver of the channel lets go of it (closes,
 * or dies), the kernel removes the channel's name, as LZCHAN_IOC_UNLINK
 * would: open handles keep working, nobody new finds it, and its memory
 * goes with the last handle.  Meant for a channel whose receiver opens it
 * on the same file right after creating it (libchan's LZCHAN_TEMP), such
 * as a client's reply channel: it cannot outlive the client.  Until that
 * OPEN the name goes with the creating file (if no receiver is attached
 * when it goes).  Only an unbound file creates one (EISCONN), one at a
 * time (EBUSY).
 */

#define LZCHAN_NODE_LOCAL	(-1)	/* the node of the CPU running create */

/*
 * LZCHAN_IOC_OPEN (unbound fd): bind this fd to the named channel in one
 * role.  A receiver needs read permission, a sender write permission.
 * A channel has at most one receiver at a time; each sender gets a lane of
 * its own.  The binding lasts until the fd's last reference (the fd and any
 * mapping of it) is gone.
 *
 * The caller states the layout rules it keeps (abi_version, in): the
 * shared memory is only safe between parties that keep the same ones.
 *
 * A publish/subscribe channel (LZCHAN_CREATE_PUBSUB) is opened as its one
 * publisher (write permission) or as one of its subscribers (read
 * permission), each subscriber in a place of its own (@lane: the place).
 *
 * Errors: ENOENT (no such name here), EACCES (mode bits), EINVAL (flags),
 * EISCONN (fd already bound), EBUSY (a receiver, or publisher, is
 * attached), EUSERS (every lane is attached or holds a closed sender's
 * messages not yet drained; every subscriber place is taken), EPROTOTYPE
 * (a channel role for a pub/sub channel, or the other way round), EPROTO
 * (abi_version is not LZCHAN_ABI_VERSION: a library built for another
 * version of this ABI).
 *
 * An endpoint (LZCHAN_IOC_GRANT) is opened with @name empty and @flags its
 * granted role, or 0 for whatever role it carries (LZCHAN_IOC_INFO then
 * says which): no permission is asked, the grant was the permission.  The
 * kernel records the caller (pid, euid, egid) on the lane as for any open.
 * An endpoint attaches once, ever.  Errors there: EPERM (a name, or
 * another role), EISCONN (attached already), EKEYREVOKED (revoked), and
 * those of attaching above.
 */
struct lzchan_open {
	__u32 size;
	__u32 flags;			/* exactly one LZCHAN_OPEN_* role */
	char name[LZCHAN_NAME_SIZE];
	__u32 lane;			/* out: sender's lane; receiver: ~0 */
	__u32 lane_gen;			/* out: sender's lane generation */
	__u32 abi_version;		/* in: LZCHAN_ABI_VERSION (since 2) */
	__u32 pad;			/* 0 */
	__u64 reserved[3];
};

#define LZCHAN_OPEN_RECEIVER	(1U << 0)
#define LZCHAN_OPEN_SENDER	(1U << 1)
#define LZCHAN_OPEN_PUBLISHER	(1U << 2)	/* LZCHAN_FEAT_PUBSUB */
#define LZCHAN_OPEN_SUBSCRIBER	(1U << 3)	/* LZCHAN_FEAT_PUBSUB */

#define LZCHAN_LANE_NONE	0xffffffffU

/*
 * LZCHAN_IOC_UNLINK (any fd): remove a name.  The channel lives on while
 * any fd or mapping uses it.  Allowed to the owner or creator, or with
 * CAP_IPC_OWNER in the user namespace that owns the IPC namespace.
 * Errors: ENOENT, EPERM, EINVAL, ENAMETOOLONG.
 */
struct lzchan_unlink {
	__u32 size;
	__u32 flags;			/* 0 */
	char name[LZCHAN_NAME_SIZE];
	__u64 reserved[2];
};

/* Channel description: in LZCHAN_IOC_INFO and in LZCHAN_IOC_LIST entries. */
struct lzchan_chan_stat {
	char name[LZCHAN_NAME_SIZE];	/* empty once unlinked */
	__u32 uid;			/* owner, in the caller's user ns */
	__u32 gid;
	__u32 cuid;			/* creator */
	__u32 cgid;
	__u32 mode;
	__u32 slot_size;
	__u32 slot_count;
	__u32 max_senders;
	__s32 numa_node;		/* requested (LZCHAN_NODE_LOCAL resolved) */
	__u32 create_flags;
	__u32 senders;			/* lanes attached now */
	__u32 receiver;			/* 1 while a receiver is attached */
	__u32 rx_parked;		/* the receiver's park word, as read */
	__u32 flags;			/* LZCHAN_STAT_* */
	__u64 bytes;			/* memory of the channel */
	__u64 sender_attaches;		/* counters since creation */
	__u64 peer_deaths;
	__u64 wake_requests;
	__u64 wakeups;
	__u64 messages;			/* sum of lanes' lzchan_shm_tx.msgs */
	__u64 reserved[3];
};

/*
 * LZCHAN_STAT_HIDDEN: in a LIST entry, the caller may not read the channel
 * (mode bits, as for opening it as receiver); in INFO, the fd is a
 * channel's sender.  The activity fields (senders,
 * receiver, rx_parked, messages and the counters) read 0.  Names, ids,
 * mode, geometry and bytes are visible to every caller, as ipcs(1) shows.
 */
#define LZCHAN_STAT_HIDDEN	(1U << 0)
#define LZCHAN_STAT_PUBSUB	(1U << 1)	/* a publish/subscribe channel */

/*
 * A pub/sub channel's description: senders is 1 while its publisher is
 * attached, receiver counts the subscribers attached, max_senders is 1,
 * messages is the publisher's tail, rx_parked counts the parked
 * subscribers, sender_attaches the publishers there have been; its
 * subscriber places are described by LZCHAN_IOC_PS_SUBS.
 */

/*
 * The mmap layout: byte offsets (page-aligned) to pass to mmap() and sizes.
 * Each area must be mapped on its own, MAP_SHARED, within its bounds.
 *
 *   area       receiver   sender of lane i
 *   info       read       read           written by the kernel only
 *   rx         read/write not mappable   the receiver's control lines
 *   rx page j  read/write read if j == i, else not mappable
 *   bell       read       not mappable   the doorbell words (LZCHAN_IOC_RING)
 *   lane j     read       read/write if j == i, else not mappable
 *
 * "rx page j" is the page of the rx area that holds lane j's
 * lzchan_shm_rx_lane (at rx_off + rx_lanes + j * rx_lane_stride): since
 * ABI 4 each lane's are alone on their page (rx_lane_stride is the page
 * size), so a sender reads only what the receiver writes for it.
 */
struct lzchan_layout {
	__u64 info_off;
	__u64 info_size;
	__u64 rx_off;
	__u64 rx_size;
	__u64 bell_off;
	__u64 bell_size;
	__u64 lanes_off;		/* lane i at lanes_off + i * lane_stride */
	__u64 lane_stride;
	__u64 lane_size;
	__u32 info_lanes;		/* offset of lzchan_shm_lane[0] in info */
	__u32 rx_lanes;			/* offset of lzchan_shm_rx_lane[0] in rx */
	__u32 lane_slots;		/* offset of slot 0 in a lane area */
	__u32 rx_lane_stride;		/* lane i's lzchan_shm_rx_lane at rx_lanes
					 * + i * rx_lane_stride in rx (ABI 4:
					 * the page size) */
	__u64 reserved[2];
};

/*
 * A publish/subscribe channel's layout (see "Publish/subscribe channels"
 * below for the areas and who writes them).
 */
struct lzchan_ps_layout {
	__u64 info_off;			/* struct lzchan_ps_hdr */
	__u64 info_size;
	__u64 pub_off;			/* struct lzchan_ps_pub */
	__u64 pub_size;
	__u64 wake_off;			/* struct lzchan_ps_wake */
	__u64 wake_size;
	__u64 subs_off;			/* subscriber i at subs_off + i * sub_stride */
	__u64 sub_stride;
	__u64 subs_size;
	__u64 ring_off;			/* slot p % slot_count at ring_off +
					 * (p % slot_count) * slot_size */
	__u64 ring_size;
	__u64 places_off;		/* struct lzchan_ps_place[max_subscribers]
					 * (the module's); a size of 0: each
					 * place's words are on its subscriber's
					 * page (libchan's shm file) */
	__u64 places_size;
	__u64 reserved[3];
};

/*
 * LZCHAN_IOC_INFO (bound fd): the channel, this fd's role, and the layout.
 * A channel's sender gets no activity (LZCHAN_STAT_HIDDEN, since ABI 4): the
 * receiver's park state now and the other lanes' traffic are not a
 * sender's to read.  A pub/sub channel (stat.flags has LZCHAN_STAT_PUBSUB) has no channel
 * layout (zeros): its areas are in ps_layout (since LZCHAN_FEAT_PUBSUB;
 * a caller that passes the shorter struct gets the channel's part).
 * Errors: EBADFD (fd not bound).
 */
struct lzchan_info {
	__u32 size;
	__u32 flags;			/* 0 */
	__u32 role;			/* LZCHAN_OPEN_* */
	__u32 lane;			/* sender's lane, subscriber's place,
					 * else LZCHAN_LANE_NONE */
	struct lzchan_chan_stat stat;
	struct lzchan_layout layout;
	__u64 reserved[4];
	/* since LZCHAN_FEAT_PUBSUB: a pub/sub channel's */
	struct lzchan_ps_layout ps_layout;
	__u32 max_subscribers;
	__u32 policy;			/* LZCHAN_PS_* */
	__u32 stall_ms;
	__u32 reserved1;
};

/*
 * LZCHAN_IOC_LIST (any fd): the channels named in the caller's IPC
 * namespace, in no particular order; activity only where the caller may
 * read (see LZCHAN_STAT_HIDDEN).  @entries points to @count entries of
 * @entry_size bytes each (the struct lzchan_chan_stat the caller knows,
 * at least up to @messages).  The kernel fills min(count, total) entries,
 * skipping the first @start, and sets @count and @total.
 * Errors: EINVAL, EFAULT.
 */
struct lzchan_list {
	__u32 size;
	__u32 flags;			/* 0 */
	__u32 entry_size;
	__u32 count;			/* in: room; out: filled */
	__u32 start;			/* in: skip this many */
	__u32 total;			/* out: channels visible */
	__u64 entries;			/* user pointer */
	__u64 reserved[2];
};

/*
 * LZCHAN_IOC_SET_EVENTFD (receiver fd): the eventfd that LZCHAN_IOC_WAKE
 * and peer deaths signal; -1 removes it.
 * Errors: EBADFD (fd not bound), EPERM (a sender's fd), EBADF (no such
 * fd), EINVAL (not an eventfd).
 */
struct lzchan_set_eventfd {
	__u32 size;
	__u32 flags;			/* 0 */
	__s32 fd;
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * LZCHAN_IOC_WAKE (sender fd, no argument): signal the receiver's eventfd.
 * A sender calls it only after seeing the receiver parked (see the
 * protocol in Documentation); with no eventfd registered it does nothing.
 * Returns 1 if an eventfd was signalled, 0 if none is registered.
 * Errors: EBADFD (fd not bound), EPERM (the receiver's fd), EPIPE (no
 * receiver attached).
 */

/*
 * LZCHAN_IOC_PEER (bound fd): who is on a lane, as the kernel saw it when
 * the sender opened (pid, euid, egid), translated into the caller's pid and
 * user namespaces (pid 0: not visible there).  @lane LZCHAN_LANE_NONE asks
 * for the receiver.  A sender may ask about its own lane and the receiver.
 * Errors: EBADFD (fd not bound), EINVAL (lane out of range), EPERM
 * (another sender's lane), ENOTCONN (nobody attached there now).
 */
struct lzchan_peer {
	__u32 size;
	__u32 flags;			/* 0 */
	__u32 lane;
	__u32 gen;			/* out: lane generation */
	__s32 pid;			/* out */
	__u32 uid;			/* out */
	__u32 gid;			/* out */
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * LZCHAN_IOC_PLACEMENT (bound fd): the NUMA node of each page of the
 * channel, as the module placed it.  Channel memory is mapped as raw page
 * frames (no page behind a mapping can be pinned or looked up by
 * move_pages(2) or get_mempolicy(2)), so this is where placement is read.
 * @offset: a page-aligned byte offset into the channel (as for mmap());
 * @count: in, room in @nodes (__s32 each); out, pages filled, fewer where
 * the channel ends.
 * Errors: EBADFD (fd not bound), EINVAL (flags, reserved, @offset not
 * page-aligned or past the end), EFAULT.
 */
struct lzchan_placement {
	__u32 size;
	__u32 flags;			/* 0 */
	__u64 offset;
	__u32 count;
	__u32 reserved0;
	__u64 nodes;			/* user pointer to __s32[count] */
	__u64 reserved[2];
};

/*
 * LZCHAN_IOC_USAGE (any fd): the limits, and the caller's use of them.
 * Channels are charged, at creation, to the machine (max_channels), to the
 * caller's IPC namespace (max_ns_*), and to the creating user as seen in
 * the user namespace that owns that IPC namespace and again as the owner
 * of each user namespace above it (max_user_*).  @user_* is the caller's
 * first level; @ns_* its IPC namespace's.  LZCHAN_USAGE_EXEMPT: the caller
 * has CAP_SYS_RESOURCE in the initial user namespace, which lifts the
 * namespace and user limits (never max_channels).
 * Errors: EINVAL (flags or reserved).
 */
struct lzchan_usage {
	__u32 size;
	__u32 flags;			/* 0 */
	__u32 flags_out;		/* out: LZCHAN_USAGE_* */
	__u32 channels;			/* out: channels on the machine */
	__u32 max_channels;		/* out: the limits */
	__u32 max_ns_channels;
	__u64 max_channel_bytes;
	__u64 max_ns_bytes;
	__u64 max_user_bytes;
	__u32 max_user_channels;
	__u32 ns_channels;		/* out: the caller's IPC namespace */
	__u64 ns_bytes;
	__u32 user_channels;		/* out: the caller, as a user there (the
					 * host user in the host's namespace) */
	__u32 reserved0;
	__u64 user_bytes;
	__u64 reserved[4];
};

#define LZCHAN_USAGE_EXEMPT	(1U << 0)

/*
 * LZCHAN_IOC_GRANT (LZCHAN_FEAT_ENDPOINT; a /dev/lzchan fd, not an
 * endpoint): a new fd, an endpoint, that carries one role (@role, one
 * LZCHAN_OPEN_*) on one channel -- @name on an unbound fd, or with @name
 * empty the channel the fd is bound to -- for another process to use
 * (SCM_RIGHTS, or inherited across exec).  The caller must be allowed to
 * open the channel in that role (the mode bits, as for OPEN).
 *
 * The endpoint refers to the channel itself, not to its name (which may go
 * or name another channel later).  Its holder attaches with
 * LZCHAN_IOC_OPEN, @name empty, and then has exactly what an fd bound in
 * that role has: its own lane (place), mapped with its role's protections.
 * The policy is one attachment per endpoint, ever: its file binds at most
 * one lane, however many processes share the fd, and closing it is a
 * departure.  An endpoint refuses everything that names or makes a
 * channel, or lists other parties -- CREATE, OPEN by name, UNLINK, LIST,
 * USAGE, GRANT, REVOKE, LANES, and PS_SUBS but a publisher's of its own
 * channel -- with EPERM, and the role it was not given.  A receiver's or
 * publisher's role may be granted while someone holds it: the attach then
 * fails with EBUSY, as an OPEN would.  A temporary channel's receiver
 * role is never granted (EINVAL): it is the file that made it.
 *
 * @flags: LZCHAN_GRANT_CLOEXEC (the new fd is close-on-exec).
 * out: @fd, @id (the endpoint's number on this channel, from 1, never
 * reused: what LZCHAN_IOC_REVOKE and LZCHAN_IOC_LANES name).
 * Errors: ENOENT, EACCES, EPROTOTYPE (a role of the other kind of
 * channel), EINVAL (flags, role, reserved), EPERM (the fd is an
 * endpoint), EBADFD (empty name on an unbound fd), EISCONN (a name on a
 * bound fd), EMFILE, ENFILE, ENOMEM.
 */
struct lzchan_grant {
	__u32 size;
	__u32 flags;			/* LZCHAN_GRANT_* */
	char name[LZCHAN_NAME_SIZE];
	__u32 role;			/* one LZCHAN_OPEN_* */
	__s32 fd;			/* out: the endpoint */
	__u64 id;			/* out */
	__u64 reserved[4];
};

#define LZCHAN_GRANT_CLOEXEC	(1U << 0)
#define LZCHAN_GRANT_FLAGS	LZCHAN_GRANT_CLOEXEC

/*
 * LZCHAN_IOC_REVOKE (LZCHAN_FEAT_ENDPOINT; a /dev/lzchan fd, not an
 * endpoint): revoke endpoint @id of channel @name (with @name empty, of
 * the channel the fd is bound to), or with LZCHAN_REVOKE_ALL (@id 0)
 * every endpoint of it.  Allowed to whoever granted it (the same euid),
 * to the channel's owner or creator, and with CAP_SYS_ADMIN in the user
 * namespace that owns its IPC namespace.
 *
 * A revoked endpoint's attachment ends as a departure (what closing it
 * without LZCHAN_IOC_BYE does: the lane CLOSED, the receiver woken; a
 * receiver's GONE; a place closed).  Its holder's mappings are torn down:
 * a later access to them faults (SIGBUS), a new mmap() and every ioctl on
 * it but FEATURES fail with EKEYREVOKED, and an eventfd it waits on is
 * signalled.  Nothing else changes -- in particular the endpoint's file,
 * like any fd of a channel, keeps the channel's memory (never its name or
 * a lane) until its holder closes it.
 * out: @count, the endpoints revoked now (one already revoked is not
 * counted again).  With LZCHAN_REVOKE_ALL, those of the channel's
 * endpoints the caller may revoke; EPERM only when it may revoke none of
 * several.
 * Errors: ENOENT (no such name, or no such endpoint there), EPERM,
 * EINVAL, EBADFD, EISCONN (as for GRANT).
 */
struct lzchan_revoke {
	__u32 size;
	__u32 flags;			/* LZCHAN_REVOKE_* */
	char name[LZCHAN_NAME_SIZE];
	__u64 id;
	__u32 count;			/* out */
	__u32 reserved0;
	__u64 reserved[2];
};

#define LZCHAN_REVOKE_ALL	(1U << 0)

/*
 * LZCHAN_IOC_LANES (LZCHAN_FEAT_ENDPOINT): who is on each lane of a
 * channel (not pub/sub: PS_SUBS), for whoever may read it (read
 * permission): @name on an unbound fd, or with @name empty the channel the
 * fd is bound to.  @entries points to @count entries of @entry_size bytes
 * (the struct lzchan_lane_peer the caller knows); the kernel fills
 * min(count, max_senders - start) of them from lane @start and sets @count
 * and @total (max_senders).  pid, uid and gid are the sender's as the
 * kernel recorded them at its open, in the caller's namespaces (pid 0:
 * not visible there); @endpoint, the endpoint it attached through (0: it
 * opened the channel by name).
 * Errors: ENOENT, EACCES, EPROTOTYPE (a pub/sub channel), EINVAL, EFAULT,
 * EISCONN (a name given on a bound fd), EPERM (an endpoint's fd).
 */
struct lzchan_lane_peer {
	__u32 state;			/* LZCHAN_LANE_FREE/ATTACHED/CLOSED */
	__u32 gen;
	__s32 pid;
	__u32 uid;
	__u32 gid;
	__u32 flags;			/* 0 */
	__u64 endpoint;
	__u64 msgs;			/* as the senders published (unchecked) */
	__u64 reserved[2];
};

struct lzchan_lanes {
	__u32 size;
	__u32 flags;			/* 0 */
	char name[LZCHAN_NAME_SIZE];
	__u32 entry_size;
	__u32 count;			/* in: room; out: filled */
	__u32 start;			/* in: first lane */
	__u32 total;			/* out: max_senders */
	__u64 entries;			/* user pointer */
	__u64 reserved[2];
};

#define LZCHAN_IOC_FEATURES	_IO(LZCHAN_IOC_MAGIC, 0x00)
#define LZCHAN_IOC_CREATE	_IO(LZCHAN_IOC_MAGIC, 0x01)
#define LZCHAN_IOC_OPEN		_IO(LZCHAN_IOC_MAGIC, 0x02)
#define LZCHAN_IOC_UNLINK	_IO(LZCHAN_IOC_MAGIC, 0x03)
#define LZCHAN_IOC_INFO		_IO(LZCHAN_IOC_MAGIC, 0x04)
#define LZCHAN_IOC_LIST		_IO(LZCHAN_IOC_MAGIC, 0x05)
#define LZCHAN_IOC_SET_EVENTFD	_IO(LZCHAN_IOC_MAGIC, 0x06)
#define LZCHAN_IOC_WAKE		_IO(LZCHAN_IOC_MAGIC, 0x07)
#define LZCHAN_IOC_PEER		_IO(LZCHAN_IOC_MAGIC, 0x08)
#define LZCHAN_IOC_PLACEMENT	_IO(LZCHAN_IOC_MAGIC, 0x09)
#define LZCHAN_IOC_USAGE	_IO(LZCHAN_IOC_MAGIC, 0x0a)
#define LZCHAN_IOC_BYE		_IO(LZCHAN_IOC_MAGIC, 0x0b)
#define LZCHAN_IOC_RING		_IO(LZCHAN_IOC_MAGIC, 0x0c)
#define LZCHAN_IOC_PS_PARK	_IO(LZCHAN_IOC_MAGIC, 0x0d)
#define LZCHAN_IOC_PS_DETACH	_IO(LZCHAN_IOC_MAGIC, 0x0e)
#define LZCHAN_IOC_PS_SUBS	_IO(LZCHAN_IOC_MAGIC, 0x0f)
#define LZCHAN_IOC_GRANT	_IO(LZCHAN_IOC_MAGIC, 0x10)
#define LZCHAN_IOC_REVOKE	_IO(LZCHAN_IOC_MAGIC, 0x11)
#define LZCHAN_IOC_LANES	_IO(LZCHAN_IOC_MAGIC, 0x12)

/*
 * LZCHAN_IOC_BYE (bound fd, no argument): the caller is about to close it
 * cleanly.  When the binding goes, its generation is then stored in
 * rx_bye (receiver) or its lane's bye (sender), before the GONE or CLOSED
 * status: a peer tells a clean close from a crash (or an exit without
 * closing), which is what peer_deaths then counts.  EBADFD: unbound.
 *
 * LZCHAN_IOC_RING (sender fd, no argument): toggle the caller's lane bit
 * in the bell area (a fully ordered atomic: the caller's earlier stores
 * are seen before it).  Only the kernel writes the bell, and only this
 * lane's bit for this fd.  Then, since ABI 4, if the receiver's park word
 * (lzchan_shm_rx.parked, loaded after the bit) is odd, signal its eventfd
 * as LZCHAN_IOC_WAKE would: a sender never reads the rx header, and a
 * receiver that parks after its last look at the bell finds the bit when
 * woken.  Returns 0 (whether the receiver was parked is not told).
 * EPERM: a receiver's fd; EBADFD: unbound; EKEYREVOKED: a revoked
 * endpoint.
 */

/* ------------------------------------------------------------------ */
/* Shared memory                                                       */
/* ------------------------------------------------------------------ */

/*
 * info area, written by the kernel (or, in libchan's shared-memory
 * backend, by the creator), read-only to everyone else.
 */
#define LZCHAN_SHM_MAGIC	0x6c7a6368U	/* "lzch" */

struct lzchan_shm_hdr {
	__u32 magic;
	__u32 abi_version;
	__u32 slot_size;
	__u32 slot_count;
	__u32 max_senders;
	__u32 rx_bye;			/* gen of the last receiver that closed
					 * cleanly (LZCHAN_FEAT_BYE) */
	__u32 pad0[2];
	__u64 rx_status;		/* LZCHAN_STATUS(gen, LZCHAN_RX_*) */
	__u64 departures;		/* senders gone; see below */
	__u64 pad1[10];
};					/* 128 bytes */

/*
 * departures counts senders that left (closed, or died): it moves after
 * their lane's status says CLOSED (release order), so a receiver that
 * sees it move finds every such lane by its status, including lanes it
 * had stopped polling.  Only the module writes it on the dev backend
 * (LZCHAN_FEAT_DEPARTURES; 0 on a module without it); on the shm backend
 * a closing sender and a claimer that finds a dead sender's lane do.
 */

/* A 64-bit status word: generation in the high half, state in the low. */
#define LZCHAN_STATUS(gen, state)	(((__u64)(gen) << 32) | (__u32)(state))
#define LZCHAN_STATUS_GEN(s)		((__u32)((s) >> 32))
#define LZCHAN_STATUS_STATE(s)		((__u32)(s))

#define LZCHAN_RX_NONE		0	/* no receiver has attached yet */
#define LZCHAN_RX_ATTACHED	1
#define LZCHAN_RX_GONE		2	/* the receiver's last reference went */

struct lzchan_shm_lane {
	__u64 status;			/* LZCHAN_STATUS(gen, LZCHAN_LANE_*) */
	__u32 bye;			/* gen of the last sender that closed
					 * cleanly (LZCHAN_FEAT_BYE) */
	__u32 pad0;
	__u64 pad[6];
};					/* 64 bytes, one per lane */

#define LZCHAN_LANE_FREE	0	/* never attached */
#define LZCHAN_LANE_ATTACHED	1
#define LZCHAN_LANE_CLOSED	2	/* sender gone; drain, then ack */

/*
 * rx area, written by the receiver: this header, read by the kernel (and,
 * on libchan's shared-memory backend, by the senders), then one
 * lzchan_shm_rx_lane a lane, each read by its lane's sender.
 */
struct lzchan_shm_rx {
	__u32 parked;			/* odd while the receiver sleeps (a
					 * count of park episodes) */
	__u32 armed;			/* libchan's shm backend: the receiver
					 * waits on its event fd (0 with the
					 * module, which never reads it) */
	__u32 pad[30];
};					/* 128 bytes */

/*
 * head, which the receiver rewrites as it goes, and the word the sender
 * reads on every send (attn) sit on different cache lines, so that
 * publishing progress does not cost the sender a miss per message.
 *
 * attn (ABI 2) is the only receiver-written word a sender loads on every
 * send: it changes (any new value; it only counts) whenever the sender must
 * look closer -- the receiver stopped polling this lane (sleepy), it is
 * about to sleep (parked), or it went (rx_status GONE).  It is stored after
 * the word it announces, with release order; the memory-ordering argument
 * is in Documentation/libchan/design.rst.
 *
 * parked (ABI 4) is lzchan_shm_rx.parked as the receiver last stored it
 * before moving this lane's attn: a sender that sees attn move reads the
 * receiver's park state here, on its own page.  A receiver that parks
 * moves the attn of the lanes it polls; a lane it does not poll (sleepy)
 * is woken through its bell instead (LZCHAN_IOC_RING wakes a parked
 * receiver).
 */
struct lzchan_shm_rx_lane {
	__u32 head;			/* messages consumed (lazily published) */
	__u32 pad0[15];
	__u32 sleepy;			/* receiver stopped polling this lane */
	__u32 close_ack;		/* = lane gen once its close was drained */
	__u32 broken;			/* = lane gen once the receiver gave the
					 * lane up (-EBADMSG): its sender's full
					 * ring then says -EBADMSG too */
	__u32 attn;			/* see above (ABI 2) */
	__u32 parked;			/* see above (ABI 4) */
	__u32 pad1[11];
};					/* 128 bytes, one a lane, each at
					 * the start of a page (ABI 4) */

/*
 * bell area: bit i of word i/64 is toggled for lane i's sender, by the
 * kernel (LZCHAN_IOC_RING, sender fd, no argument; since ABI 3) or, on libchan's
 * shared-memory backend, by the sender itself; the last 64
 * bytes (at bell_size - LZCHAN_BELL_WAKE_BACK) hold a counter that senders
 * increment before a futex wake (libchan's shared-memory backend), so that
 * a wake between the receiver's last look and its futex wait is not lost.
 */
#define LZCHAN_BELL_WAKE_BACK	64

/* lane area: the sender's line, then slot_count slots of slot_size bytes. */
struct lzchan_shm_tx {
	__u32 tail;			/* next position the sender will write */
	__u32 pad0;
	__u64 msgs;			/* messages sent (statistics; libchan
					 * may publish it every 256 messages) */
	__u64 bytes;			/* payload bytes sent (statistics) */
	__u64 pad1[13];
};					/* 128 bytes */

/*
 * A message starts at a slot with this header and runs contiguously over
 * ceil((8 + len) / slot_size) slots.  Position p (counting from 0) is ready
 * when the slot's seq == p + 1 (mod 2^32); pages start zeroed, so no slot
 * is ready at first.  seq is written last, with release order.
 */
struct lzchan_slot_hdr {
	__u32 seq;
	__u32 len;			/* payload bytes, plus LZCHAN_SLOT_* flags */
};

#define LZCHAN_SLOT_PAD		(1U << 31)	/* filler up to the ring's end */
#define LZCHAN_SLOT_LEN_MASK	0x7fffffffU

/*
 * The largest message on any channel: len has 31 bits (the top one is
 * LZCHAN_SLOT_PAD), and libchan returns a message's length as an int.  A
 * channel's own limit is the smaller of this and what its lane holds,
 * (slot_count - 1) * slot_size - 8 (one slot stays free), computed in 64
 * bits: a lane may be larger than 4 GiB.
 */
#define LZCHAN_MSG_MAX		0x7fffffffU

/* ------------------------------------------------------------------ */
/* Publish/subscribe channels                                          */
/* ------------------------------------------------------------------ */

/*
 * A publish/subscribe channel has one publisher and up to max_subscribers
 * subscribers.  The publisher writes each message once, into one slot of
 * one ring; every subscriber reads it there, in place or copied, keeping
 * its own position.  The memory-ordering argument is in
 * Documentation/libchan/design.rst ("Publish/subscribe").  The module
 * makes them with LZCHAN_CREATE_PUBSUB (LZCHAN_FEAT_PUBSUB); libchan's
 * shared-memory backend keeps the same layout in its channel file.
 *
 *   area    publisher       subscriber i      written by
 *   info    read            read              the kernel (shm: the creator,
 *                                             the publisher)
 *   pub     read/write      read              the publisher (tail)
 *   wake    read            read              the kernel (sleepers,
 *                                             LZCHAN_IOC_PS_PARK); shm: the
 *                                             subscribers, and the publisher
 *                                             (wake, a futex word)
 *   places  read, with      not mappable      the kernel (status, detached
 *           back-pressure                     of every place; module only)
 *           only
 *   subs    read, with      its own page,     subscriber i (pos, lost); the
 *           back-pressure   read/write        kernel (its copy of status and
 *           only; else                        detached; shm: the words
 *           not mappable                      themselves, written by the
 *                                             subscriber and the publisher)
 *   ring    read/write      read              the publisher
 *
 * With the module a subscriber's place is a page of its own (sub_stride
 * is the page size): no subscriber can map another's, and the publisher
 * sees positions only where back-pressure needs them.  Whether a place
 * counts (attached, not detached) the publisher reads from the kernel's
 * places area, which no subscriber can write; what subscriber i writes
 * on its page (its position) misleads at most the back-pressure
 * publisher's wait, as reading slowly would, until it is detached for
 * standing still, and itself.
 */
#define LZCHAN_PS_MAGIC		0x6c7a7073U	/* "lzps" */
#define LZCHAN_SUBSCRIBERS_MAX	4096

#define LZCHAN_PS_OVERWRITE	0	/* the publisher never waits: a
					 * subscriber that falls a ring behind
					 * loses the oldest, and is told so */
#define LZCHAN_PS_BACKPRESSURE	1	/* the publisher waits for the slowest
					 * attached subscriber (one stalled
					 * for stall_ms is detached) */


struct lzchan_ps_hdr {
	__u32 magic;			/* LZCHAN_PS_MAGIC */
	__u32 abi_version;
	__u32 slot_size;
	__u32 slot_count;
	__u32 max_subscribers;
	__u32 policy;			/* LZCHAN_PS_* */
	__u32 stall_ms;			/* back-pressure: 0 never detaches */
	__u32 pub_bye;			/* gen of the last publisher that
					 * closed cleanly */
	__u64 pub_status;		/* LZCHAN_STATUS(gen, LZCHAN_RX_*): the
					 * publisher's NONE, ATTACHED, GONE */
	__u64 pad[11];
};					/* 128 bytes */

struct lzchan_ps_pub {
	__u64 tail;			/* positions published: every position
					 * below it was made ready (release,
					 * after the slot's seq) */
	__u64 scan_at;			/* back-pressure: the publisher's tail
					 * at its scan for room in progress */
	__u64 room_floor;		/* ... the least position its last
					 * finished scan found (its room is
					 * that plus a ring) */
	__u32 scan_seq;			/* odd while a scan is in progress */
	__u32 pad0;
	__u64 pad[12];
};					/* 128 bytes */

struct lzchan_ps_wake {
	__u32 sleepers;			/* bumped by a subscriber before it
					 * parks: the publisher loads it once
					 * per publish and wakes on a change */
	__u32 pad0[15];
	__u32 wake;			/* the futex word: bumped by the
					 * publisher before each wake */
	__u32 watchers;			/* shm: subscribers with an event fd
					 * (lzchan_event_fd()); the publisher's
					 * wake then touches the file's times,
					 * which their inotify sees (module: 0,
					 * each has its eventfd) */
	__u32 pad1[14];
};					/* 128 bytes */

struct lzchan_ps_sub {
	__u64 pos;			/* next position to read, published
					 * lazily (back-pressure's room, lag) */
	__u64 status;			/* LZCHAN_STATUS(gen, LZCHAN_LANE_*);
					 * module: a copy of its place's */
	__u32 detached;			/* = gen once detached for stalling;
					 * module: a copy of its place's */
	__u32 pad0;
	__u64 lost;			/* messages lost so far (statistics) */
	__u64 pad[12];
};					/* 128 bytes, one per subscriber */

/* The module's words for place i (the places area): what a back-pressure
 * publisher believes about who counts.  The same two words, at the same
 * distance, as status and detached in struct lzchan_ps_sub. */
struct lzchan_ps_place {
	__u64 status;			/* LZCHAN_STATUS(gen, LZCHAN_LANE_*) */
	__u32 detached;			/* = gen once detached for stalling */
	__u32 pad0;
};					/* 16 bytes */

/*
 * A pub/sub slot: this header, then the payload (up to slot_size - 16
 * bytes: a message never spans slots).  Position p (from 0, 64 bits, never
 * wrapping) lives in slot p % slot_count and is ready when seq == p + 1.
 * The publisher overwriting a slot first stores LZCHAN_PS_WRITING | (p + 1),
 * then (after a release fence) the payload and len, then p + 1 with
 * release: a reader that finds seq unchanged after its copy read an
 * intact message (a seqlock per slot).
 */
struct lzchan_ps_slot {
	__u64 seq;
	__u32 len;
	__u32 pad;
};

#define LZCHAN_PS_WRITING	(1ULL << 63)

/*
 * Pub/sub ioctls (LZCHAN_FEAT_PUBSUB).
 *
 * LZCHAN_IOC_SET_EVENTFD on a subscriber's fd registers the eventfd that
 * LZCHAN_IOC_WAKE and the publisher's departure signal for it.
 *
 * LZCHAN_IOC_PS_PARK (subscriber fd, no argument): the caller is about to
 * sleep on its eventfd.  The kernel marks its place parked and bumps
 * lzchan_ps_wake.sleepers (a full barrier after), which the publisher
 * loads once per publish.  The caller then looks at its next slot once
 * more before it sleeps (the protocol: the design page).  EINVAL: no
 * eventfd registered; EPERM: the publisher's fd; EPROTOTYPE: a channel's.
 *
 * LZCHAN_IOC_WAKE on the publisher's fd (no argument): signal the eventfd
 * of every parked subscriber, which is then no longer parked.  Returns how
 * many were signalled.
 *
 * LZCHAN_IOC_PS_DETACH (publisher fd, back-pressure): subscriber @place of
 * generation @gen has stood in the way stall_ms; the kernel stores @gen
 * in its detached word and signals its eventfd.  ESRCH: nobody of that
 * generation is there now; EPERM: an overwrite channel, or not the
 * publisher; EINVAL: @place out of range, flags, reserved.
 */
struct lzchan_ps_detach {
	__u32 size;
	__u32 flags;			/* 0 */
	__u32 place;
	__u32 gen;
	__u64 reserved[2];
};

/*
 * LZCHAN_IOC_PS_SUBS: the subscriber places of a pub/sub channel, for
 * whoever may read it (read permission, as for subscribing): @name on an
 * unbound fd, or, with @name empty, the channel the fd is bound to.
 * @entries points to @count entries of @entry_size bytes (the struct
 * lzchan_ps_sub_stat the caller knows); the kernel fills min(count,
 * max_subscribers - start) entries from place @start, and sets @count and
 * @total (max_subscribers).  Positions and losses are what each
 * subscriber last published (lazily, unchecked).
 * Errors: ENOENT, EACCES, EPROTOTYPE (not a pub/sub channel), EINVAL,
 * EFAULT, EISCONN (a name given on a bound fd), EPERM (an endpoint's fd,
 * but a publisher's asking of its own channel).
 */
struct lzchan_ps_sub_stat {
	__u32 state;			/* LZCHAN_LANE_FREE/ATTACHED/CLOSED */
	__u32 gen;
	__u64 pos;			/* published position */
	__u64 lag;			/* the publisher's tail less pos */
	__u64 lost;			/* as the subscriber counts */
	__s32 pid;			/* attached: who, in the caller's
					 * namespaces (0: not visible) */
	__u32 uid;
	__u32 gid;
	__u32 flags;			/* LZCHAN_PS_SUB_* */
	__u64 reserved[2];
};

#define LZCHAN_PS_SUB_PARKED	(1U << 0)
#define LZCHAN_PS_SUB_DETACHED	(1U << 1)

struct lzchan_ps_subs {
	__u32 size;
	__u32 flags;			/* 0 */
	char name[LZCHAN_NAME_SIZE];
	__u32 entry_size;
	__u32 count;			/* in: room; out: filled */
	__u32 start;			/* in: first place */
	__u32 total;			/* out: max_subscribers */
	__u64 entries;			/* user pointer */
	__u64 tail;			/* out: the publisher's tail */
	__u64 reserved[2];
};

#endif /* _UAPI_LINUX_LZCHAN_H */
