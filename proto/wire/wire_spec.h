/* SPDX-License-Identifier: MIT */
/*
 * Lode wire format, version 1.
 *
 * Every message is a frame:
 *
 *   struct lode_wire_hdr      40 bytes, fixed
 *   body                      hdr.body_len bytes: the opcode's fixed struct, then its names
 *   bulk data                 hdr.data_len bytes (object data; reads, writes, readdir pages)
 *
 * All integers are little-endian. Every struct below has a _Static_assert on its size and
 * explicit reserved fields that a sender sets to zero and a receiver rejects when non-zero,
 * so that later versions can give them a meaning. Names (file names, xattr names, symlink
 * targets, addresses) follow the fixed struct in the order the struct lists their lengths;
 * they are not NUL-terminated on the wire.
 *
 * Decoders never trust a length: proto/codec.c checks every one against what was received
 * and against the limits below before touching the bytes.
 */
#ifndef LODE_PROTO_WIRE_SPEC_H
#define LODE_PROTO_WIRE_SPEC_H

#include <stdint.h>

#define LODE_WIRE_MAGIC	  0x45444f4cu /* "LODE" read as a little-endian u32 */
#define LODE_WIRE_VERSION 2

/* Hard limits: a frame beyond any of them is a protocol error. */
#define LODE_NAME_MAX		255  /* one path component */
#define LODE_SYMLINK_MAX	4095 /* symlink target */
#define LODE_XATTR_NAME_MAX	255
#define LODE_XATTR_VALUE_MAX	65536
#define LODE_ADDR_MAX		127	   /* "tcp://host:port" */
#define LODE_BODY_MAX		8192	   /* fixed struct plus names */
#define LODE_DATA_MAX		(4u << 20) /* bulk data of one frame */
#define LODE_LAYOUT_TARGETS_MAX 64	   /* stripe_count * mirror_count */
#define LODE_READDIR_MAX	1024	   /* entries in one readdir page */
#define LODE_OBJLIST_MAX	1024	   /* objects in one listing page */
#define LODE_TARGETS_MAX	256	   /* storage targets in one cluster */

/* Object data is checksummed in chunks of this size (xxh3-64 of the whole chunk, with
 * bytes past the object's end counted as zero). Object writes are chunk aligned. */
#define LODE_CHUNK_SHIFT 16
#define LODE_CHUNK_SIZE	 (1u << LODE_CHUNK_SHIFT)

/* hdr.flags */
#define LODE_WIRE_F_REPLY 0x0001u
/* A request whose body ends with a struct lode_wire_cap (the capability the MDS signed
 * for the object's file): object data requests only. The server takes it off the body
 * before the opcode's decoder sees it, so bodies keep their shapes. */
#define LODE_WIRE_F_CAP 0x0002u
/* A namespace change the client lets the MDS answer before it is durable (a mount's lazy
 * namespace, docs/fuse.md): it is made durable by the next request without this flag, a
 * SYNC, or the MDS within a second. MDS namespace changes only (lode_op_may_be_lazy). */
#define LODE_WIRE_F_LAZY 0x0004u
/*
 * Directory grants (docs/design.md, "Directory grants"): while a client holds one for a
 * directory it made, no other client adds a name to it, so the client answers lookups of
 * names it knows are missing there itself. Requests that add a name (lode_op_adds_name) may
 * carry the flag: hdr.grant is then the token of the client's grant for the directory the
 * name goes in (0: it holds none), and a MKDIR with it asks for a grant of the new
 * directory. Their replies carry it when the token's grant was renewed for another
 * LODE_GRANT_MS from the request; a MKDIR reply's hdr.grant is the new directory's token
 * (0: none given). Any other frame has hdr.grant 0.
 */
#define LODE_WIRE_F_GRANT 0x0008u
/* How long a grant lasts past the request that made or renewed it. Another client's name
 * in the directory waits at the MDS until the grant has lapsed (mds/grant.h), or until
 * its holder, told so by a reply that did not renew it, gives it back (GRANT_RETURN). */
#define LODE_GRANT_MS 100u

enum lode_opcode {
	/* any server */
	LODE_OP_HELLO = 1,
	LODE_OP_PING = 2,
	LODE_OP_AUTH = 3, /* the connection handshake (proto/net/auth.h); first frame of all */

	/* metadata server */
	LODE_OP_LOOKUP = 10,
	LODE_OP_GETATTR = 11,
	LODE_OP_SETATTR = 12,
	LODE_OP_CREATE = 13, /* create + open, returns attr, layout and handle */
	LODE_OP_MKDIR = 14,
	LODE_OP_UNLINK = 15,
	LODE_OP_RMDIR = 16,
	LODE_OP_RENAME = 17,
	LODE_OP_LINK = 18,
	LODE_OP_SYMLINK = 19,
	LODE_OP_READLINK = 20,
	LODE_OP_READDIR = 21,
	LODE_OP_STATFS = 22,
	LODE_OP_SETXATTR = 23,
	LODE_OP_GETXATTR = 24,
	LODE_OP_LISTXATTR = 25,
	LODE_OP_REMOVEXATTR = 26,
	LODE_OP_OPEN = 27,
	LODE_OP_CLOSE = 28,  /* release a handle (and its lease), committing size/mtime if asked */
	LODE_OP_COMMIT = 29, /* commit size/mtime of a write handle, renew its lease */
	LODE_OP_TARGET_REGISTER = 30,
	LODE_OP_TARGET_HEARTBEAT = 31,
	LODE_OP_TARGET_LIST = 32,
	LODE_OP_ORPHAN_LIST = 33, /* objects of deleted files a target should remove */
	LODE_OP_ORPHAN_DONE = 34,
	LODE_OP_REPORT_COPY = 35,     /* a client found a copy that failed or holds bad data */
	LODE_OP_LAYOUT_GET = 36,      /* layout and degraded copies of a file */
	LODE_OP_LAYOUT_SET_COPY = 37, /* repair: a copy now lives on another target */
	LODE_OP_MKNOD = 38,	      /* a FIFO, socket or device node */
	LODE_OP_FSCK = 39,	      /* admin only: one page of the namespace check */
	LODE_OP_FSCK_FIX = 40,	      /* admin only: repair one finding of FSCK */
	LODE_OP_SCRUB_REPORT = 41,    /* OSS only: its scrub found a copy with bad data */
	LODE_OP_BACKUP_START = 42,    /* admin only: begin a compacted copy of the namespace */
	LODE_OP_BACKUP_READ = 43,     /* admin only: one page of that copy */
	LODE_OP_CAP_GET = 47,	      /* a capability for a file's objects (proto/net/cap.h) */
	LODE_OP_MOVE = 44,	      /* admin only: move one copy (begin, commit, abort) */
	LODE_OP_TARGET_STATE = 45,    /* admin only: drain, undrain or remove a target */
	LODE_OP_MOVE_LIST = 46,	      /* admin only: moves begun and never finished */
	LODE_OP_SYNC = 48,	      /* every change answered so far is durable */
	LODE_OP_CLOSE_MANY = 49,      /* release write handles whose commits are done */
	LODE_OP_GRANT_RETURN = 60,    /* a directory grant the holder dropped (grant.h) */

	/* object storage server */
	LODE_OP_OBJ_WRITE = 50,
	LODE_OP_OBJ_READ = 51,
	LODE_OP_OBJ_TRUNCATE = 52,
	LODE_OP_OBJ_REMOVE = 53,
	LODE_OP_OBJ_STAT = 54,
	LODE_OP_OBJ_LIST = 55,
	LODE_OP_OBJ_FSYNC = 56,
	LODE_OP_OBJ_ALLOCATE = 57,     /* reserve disk space for a range, size unchanged */
	LODE_OP_OBJ_SCRUB = 58,	       /* admin only: start or cancel the target's scrub */
	LODE_OP_OBJ_SCRUB_STATUS = 59, /* admin only: the scrub's progress or last result */

	LODE_OP_MAX_ = 64,
};

struct lode_wire_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t opcode;
	uint16_t flags;
	uint64_t req_id;
	int32_t status;	   /* replies: 0 or a positive LODE_S_* code; requests: 0 */
	uint32_t body_len; /* <= LODE_BODY_MAX */
	uint64_t data_len; /* <= LODE_DATA_MAX */
	uint64_t grant;	   /* a directory grant's token (LODE_WIRE_F_GRANT), else 0 */
};
_Static_assert(sizeof(struct lode_wire_hdr) == 40, "wire header");

/*
 * Wire status codes. They carry the Linux errno numbers by value, but only the ones in
 * lode_status_to_errno()'s table cross the wire; anything else becomes LODE_S_EIO. A
 * reply whose status is non-zero has an empty body and no data unless stated.
 */
#define LODE_S_OK 0

/* ---- common sub-structs ---- */

struct lode_wire_attr {
	uint64_t ino;
	uint64_t size;
	uint64_t blocks; /* 512-byte units allocated (approximated from size for files) */
	int64_t atime_ns;
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint32_t mode; /* S_IFMT bits plus permissions */
	uint32_t uid;
	uint32_t gid;
	uint32_t nlink;
	uint64_t generation; /* layout generation; 0 for directories and symlinks */
	uint32_t rdev;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_attr) == 80, "wire attr");

/* Layout: stripe i, mirror m lives on targets[i * mirror_count + m]. */
struct lode_wire_layout {
	uint32_t stripe_size; /* multiple of LODE_CHUNK_SIZE */
	uint16_t stripe_count;
	uint16_t mirror_count;
	uint64_t generation;
	uint32_t targets[LODE_LAYOUT_TARGETS_MAX];
};
_Static_assert(sizeof(struct lode_wire_layout) == 16 + 4 * LODE_LAYOUT_TARGETS_MAX, "layout");

/* Caller identity for permission checks: uid, primary gid and up to
 * LODE_CRED_GROUPS_MAX supplementary groups (groups[0..ngroups), the rest zero). A caller
 * with more groups sends the first LODE_CRED_GROUPS_MAX; the MDS then grants nothing
 * through the others. */
#define LODE_CRED_GROUPS_MAX 32
struct lode_wire_cred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngroups;
	uint32_t reserved;
	uint32_t groups[LODE_CRED_GROUPS_MAX];
};
_Static_assert(sizeof(struct lode_wire_cred) == 16 + 4 * LODE_CRED_GROUPS_MAX, "cred");

/* ---- HELLO / PING ---- */

/* Roles a connection holds (its AUTH handshake proves it) and HELLO names. */
#define LODE_ROLE_CLIENT 1
#define LODE_ROLE_OSS	 2 /* a storage target */
#define LODE_ROLE_ADMIN	 3

/*
 * AUTH: the handshake every connection starts with (proto/net/auth.h has the proofs).
 * Step 1: the client's role and fresh nonce (flags LODE_AUTH_F_NOKEY when it holds no key),
 * and in place of the proof the client group whose key it holds (auth.h; NUL padded, role
 * client only) or zeros. The reply (request id 0 is the handshake's) carries the server's nonce and
 * proof, or LODE_AUTH_F_INSECURE from a server run without a key; a server that needs a key
 * answers a keyless client with EACCES and serves that connection nothing more. Step 2:
 * the client's proof (nonce zero); the client sends its calls right behind it, without
 * waiting for its reply (empty, status 0): a wrong proof closes the connection before any
 * of them is read.
 */
#define LODE_AUTH_F_NOKEY    0x1u /* step 1: the client holds no key */
#define LODE_GROUP_NAME_MAX  32u  /* a client group's name, its NUL included */
#define LODE_AUTH_F_INSECURE 0x1u /* reply: the server runs without a key (--insecure) */

struct lode_wire_auth_req {
	uint32_t step; /* 1 or 2 */
	uint32_t role; /* LODE_ROLE_*; step 2: the same as step 1 */
	uint32_t flags;
	uint32_t reserved;
	uint8_t nonce[32];
	union {
		uint8_t proof[32]; /* step 2 */
		char group[32];	   /* step 1: a client group's name, NUL padded, or zeros */
	};
};
_Static_assert(sizeof(struct lode_wire_auth_req) == 80, "auth req");

struct lode_wire_auth_rep {
	uint32_t flags;
	uint32_t reserved;
	uint8_t nonce[32];
	uint8_t proof[32];
};
_Static_assert(sizeof(struct lode_wire_auth_rep) == 72, "auth rep");

struct lode_wire_hello_req {
	uint64_t client_id; /* random, chosen by the client once per process */
	uint32_t role;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_hello_req) == 16, "hello req");

struct lode_wire_hello_rep {
	uint64_t
	    cluster_id; /* MDS: its cluster id; OSS: the cluster it belongs to (0 if none yet) */
	uint32_t server_role; /* 1 = MDS, 2 = OSS */
	uint32_t target_id;   /* OSS: its target id, MDS: 0 */
};
_Static_assert(sizeof(struct lode_wire_hello_rep) == 16, "hello rep");

/* ---- namespace ---- */

/* LOOKUP: body = req + name. Reply: lode_wire_attr. */
struct lode_wire_lookup_req {
	uint64_t parent;
	struct lode_wire_cred cred;
	uint16_t name_len;
	uint16_t reserved0;
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_lookup_req) == 160, "lookup req");

/* GETATTR: reply lode_wire_attr. */
struct lode_wire_getattr_req {
	uint64_t ino;
};
_Static_assert(sizeof(struct lode_wire_getattr_req) == 8, "getattr req");

#define LODE_SETATTR_MODE      0x01u
#define LODE_SETATTR_UID       0x02u
#define LODE_SETATTR_GID       0x04u
#define LODE_SETATTR_SIZE      0x08u
#define LODE_SETATTR_ATIME     0x10u
#define LODE_SETATTR_MTIME     0x20u
#define LODE_SETATTR_ATIME_NOW 0x40u
#define LODE_SETATTR_MTIME_NOW 0x80u
#define LODE_SETATTR_CTIME     0x100u
#define LODE_SETATTR_ALL_      0x1ffu

/* SETATTR: reply lode_wire_attr (after the change). Size changes of regular files only
 * touch the metadata: the client truncates the objects first. */
struct lode_wire_setattr_req {
	uint64_t ino;
	struct lode_wire_cred cred;
	uint32_t valid; /* LODE_SETATTR_* */
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	int64_t atime_ns;
	int64_t mtime_ns;
	int64_t ctime_ns;
};
_Static_assert(sizeof(struct lode_wire_setattr_req) == 200, "setattr req");

/* OPEN flags (subset of O_*, wire values fixed here) */
#define LODE_OPEN_READ	 0x01u
#define LODE_OPEN_WRITE	 0x02u
#define LODE_OPEN_TRUNC	 0x04u /* metadata size to 0; client truncates objects */
#define LODE_OPEN_EXCL	 0x08u /* CREATE: fail with EEXIST if the name exists */
#define LODE_OPEN_CREATE 0x10u /* CREATE: open the existing file if the name exists */
/* OPEN with LODE_OPEN_WRITE: the file's only writer (EBUSY while another write handle is
 * open, and every other write open gets EBUSY while this one is): what a repair holds so
 * that no write races its copy. Without it a file may have many writers at once. */
#define LODE_OPEN_EXCLUSIVE 0x20u
#define LODE_OPEN_ALL_	    0x3fu

/* CREATE: body = req + name. Creates a regular file (or opens an existing one when
 * LODE_OPEN_CREATE without LODE_OPEN_EXCL). If layout.stripe_count != 0 the file gets that
 * layout (targets chosen by the MDS unless targets[0] != 0xffffffff... see has_targets),
 * otherwise the parent directory's default. Reply: lode_wire_open_rep. */
struct lode_wire_create_req {
	uint64_t parent;
	struct lode_wire_cred cred;
	uint32_t mode;	/* permission bits; S_IFREG implied */
	uint32_t flags; /* LODE_OPEN_* */
	uint16_t name_len;
	uint16_t has_layout;  /* 1: layout below sets stripe_size/count/mirror_count */
	uint16_t has_targets; /* 1: layout.targets are chosen by the caller */
	uint16_t reserved;
	struct lode_wire_layout layout;
};
_Static_assert(sizeof(struct lode_wire_create_req) == 168 + sizeof(struct lode_wire_layout),
	       "create req");

/* OPEN: by inode number. ESTALE when the inode is gone or no name leads to it any more
 * (unlinked, or renamed over, by any client): the caller looks its name up again. */
struct lode_wire_open_req {
	uint64_t ino;
	struct lode_wire_cred cred;
	uint32_t flags; /* LODE_OPEN_* */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_open_req) == 160, "open req");

/* Capabilities (proto/net/cap.h). */

#define LODE_CAP_READ  0x1u
#define LODE_CAP_WRITE 0x2u
#define LODE_CAP_ALL_  0x3u

/*
 * What the MDS allows on one file's objects, signed with the capability key that only the
 * MDS and the OSS hold (derived from the cluster key): rights on the objects of (ino,
 * generation) until expiry_ms (wall clock, ms since the epoch). mac = keyed BLAKE2b-256 of
 * the 32 bytes before it. The OSS verifies it locally, without asking the MDS.
 */
struct lode_wire_cap {
	uint64_t ino;
	uint64_t generation; /* the layout generation */
	uint64_t expiry_ms;
	uint32_t rights; /* LODE_CAP_* */
	uint32_t reserved;
	uint8_t mac[32];
};
_Static_assert(sizeof(struct lode_wire_cap) == 64, "cap");

/* A capability and how long it was issued for: CAP_GET's reply, and part of OPEN's. */
struct lode_wire_cap_rep {
	struct lode_wire_cap cap;
	uint32_t lifetime_ms; /* how long it was issued for (the client renews before) */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_cap_rep) == 72, "cap rep");

/* Reply of OPEN and CREATE. A write handle holds a write lease (shared with the file's
 * other writers, unless one of them is LODE_OPEN_EXCLUSIVE) until CLOSE or until lease_ms
 * pass without a COMMIT. degraded: bit i set when the copy in
 * layout.targets[i] is known to miss data (a write to it failed, or it returned bad data)
 * until a repair replaces it; readers skip it and writers leave it alone. */
struct lode_wire_open_rep {
	struct lode_wire_attr attr;
	struct lode_wire_layout layout;
	uint64_t handle;
	uint32_t lease_ms; /* 0 for read handles */
	uint32_t reserved;
	uint64_t degraded;
	struct lode_wire_cap_rep cap; /* for the handle's rights, as CAP_GET would answer */
	/* CREATE: the parent directory's attributes after it (its mtime and ctime moved; a
	 * client may answer for the directory with them, as with any reply's attributes);
	 * OPEN: zero (ino 0) */
	struct lode_wire_attr parent;
};
_Static_assert(sizeof(struct lode_wire_open_rep) ==
		   2 * sizeof(struct lode_wire_attr) + sizeof(struct lode_wire_layout) + 24 + 72,
	       "open rep");
_Static_assert(LODE_LAYOUT_TARGETS_MAX <= 64, "degraded is a 64-bit mask");

/* COMMIT and CLOSE. commit LODE_COMMIT_SET: the size becomes exactly the one given (a
 * truncate is authoritative); LODE_COMMIT_EXTEND: the size becomes the larger of the one
 * given and the one stored (a writer commits the largest end it wrote; the file's other
 * writers may have written further). Either sets mtime (0: now). Reply: lode_wire_attr,
 * the file's attributes after the commit. */
struct lode_wire_commit_req {
	uint64_t ino;
	uint64_t handle;
	uint64_t size;
	int64_t mtime_ns;
	uint32_t commit; /* 0: only renew (or close); else LODE_COMMIT_* */
	uint32_t reserved;
	/* with commit: 1 + the 512-byte blocks one copy of the file takes on its targets, as
	 * the writer measured them (OBJ_STAT); 0: not measured, the MDS keeps what it had */
	uint64_t blocks_p1;
};
_Static_assert(sizeof(struct lode_wire_commit_req) == 48, "commit req");
#define LODE_COMMIT_SET	   1u
#define LODE_COMMIT_EXTEND 2u

/* CLOSE_MANY: an empty body; data = 1..LODE_CLOSE_MANY_MAX lode_wire_close_ref. Releases
 * write handles (and their leases) with nothing left to commit: a client's closes,
 * batched (client/closer.c). A handle the MDS does not know (closed already, or from
 * before its restart) is skipped. Reply: empty. */
struct lode_wire_close_ref {
	uint64_t ino;
	uint64_t handle; /* as OPEN or CREATE gave it */
};
_Static_assert(sizeof(struct lode_wire_close_ref) == 16, "close ref");
#define LODE_CLOSE_MANY_MAX 64

/* MKDIR: body = req + name. Reply: lode_wire_attr. */
struct lode_wire_mkdir_req {
	uint64_t parent;
	struct lode_wire_cred cred;
	uint32_t mode;
	uint16_t name_len;
	uint16_t reserved;
};
_Static_assert(sizeof(struct lode_wire_mkdir_req) == 160, "mkdir req");

/* MKNOD: body = req + name. mode holds the type (S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK) and
 * the permissions; rdev (devices only, else 0) as Linux's 32-bit encoding. Reply:
 * lode_wire_attr. */
struct lode_wire_mknod_req {
	uint64_t parent;
	struct lode_wire_cred cred;
	uint32_t mode;
	uint32_t rdev;
	uint16_t name_len;
	uint16_t reserved0;
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_mknod_req) == 168, "mknod req");

/* UNLINK, RMDIR: body = lode_wire_lookup_req + name. Reply: lode_wire_dirs_rep (dir[0]:
 * the parent). */

/* The directories a change moved the mtime and ctime of, as they are after it: a client
 * may answer for them with these, as with any reply's attributes. An unused one is zero
 * (ino 0). */
struct lode_wire_dirs_rep {
	struct lode_wire_attr dir[2];
};
_Static_assert(sizeof(struct lode_wire_dirs_rep) == 160, "dirs rep");

#define LODE_RENAME_NOREPLACE 0x1u
#define LODE_RENAME_EXCHANGE  0x2u

/* RENAME: body = req + old name + new name. Reply: lode_wire_dirs_rep (dir[0]: the old
 * parent, dir[1]: the new one when it is another). */
struct lode_wire_rename_req {
	uint64_t old_parent;
	uint64_t new_parent;
	struct lode_wire_cred cred;
	uint16_t old_name_len;
	uint16_t new_name_len;
	uint32_t flags; /* LODE_RENAME_* */
};
_Static_assert(sizeof(struct lode_wire_rename_req) == 168, "rename req");

/* LINK: body = req + new name. Reply: lode_wire_attr of ino. */
struct lode_wire_link_req {
	uint64_t ino;
	uint64_t new_parent;
	struct lode_wire_cred cred;
	uint16_t name_len;
	uint16_t reserved0;
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_link_req) == 168, "link req");

/* SYMLINK: body = req + name + target. Reply: lode_wire_attr. */
struct lode_wire_symlink_req {
	uint64_t parent;
	struct lode_wire_cred cred;
	uint16_t name_len;
	uint16_t target_len; /* 1..LODE_SYMLINK_MAX */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_symlink_req) == 160, "symlink req");

/* READLINK: body = getattr req. Reply: data = target bytes. */

/* READDIR: returns entries with cookie > req.cookie in cookie order. Cookies are per
 * directory, assigned at link time and never reused, so a listing is stable across
 * concurrent changes: an entry present for the whole listing is returned exactly once.
 * Reply body: lode_wire_readdir_rep; data: count records of lode_wire_dirent + name, or
 * with LODE_READDIR_ATTRS of lode_wire_direntplus + name (each entry's attributes, read in
 * the same snapshot as the listing: `ls -l` costs one call per page, not one per entry). */
#define LODE_READDIR_ATTRS 0x1u
struct lode_wire_readdir_req {
	uint64_t ino;
	uint64_t cookie; /* 0 to start */
	struct lode_wire_cred cred;
	uint32_t max_entries; /* 1..LODE_READDIR_MAX */
	uint32_t flags;	      /* LODE_READDIR_ATTRS or 0 */
};
_Static_assert(sizeof(struct lode_wire_readdir_req) == 168, "readdir req");

struct lode_wire_readdir_rep {
	uint32_t count;
	uint32_t eof;
};
_Static_assert(sizeof(struct lode_wire_readdir_rep) == 8, "readdir rep");

struct lode_wire_dirent {
	uint64_t ino;
	uint64_t cookie;
	uint32_t mode; /* S_IFMT bits of the entry */
	uint16_t name_len;
	uint16_t reserved;
};
_Static_assert(sizeof(struct lode_wire_dirent) == 24, "dirent");

struct lode_wire_direntplus {
	struct lode_wire_attr attr; /* attr.ino == d.ino */
	struct lode_wire_dirent d;
};
_Static_assert(sizeof(struct lode_wire_direntplus) == 104, "direntplus");

/* STATFS: empty body. */
struct lode_wire_statfs_rep {
	uint64_t bytes_total;
	uint64_t bytes_free;
	uint64_t files;
	uint64_t files_free;
	uint32_t targets_up;
	uint32_t targets_total;
	uint32_t name_max;
	uint32_t block_size;
};
_Static_assert(sizeof(struct lode_wire_statfs_rep) == 48, "statfs rep");

#define LODE_XATTR_CREATE  0x1u
#define LODE_XATTR_REPLACE 0x2u

/* SETXATTR: body = req + name; data = value. GETXATTR: body = req + name (value_len 0);
 * reply data = value. If req.size is 0 the reply carries only the value's length in
 * lode_wire_xattr_rep; if it is smaller than the value, ERANGE. LISTXATTR: body = req
 * (name_len 0); reply data = NUL-terminated names, same size rules. REMOVEXATTR: body =
 * req + name. */
struct lode_wire_xattr_req {
	uint64_t ino;
	struct lode_wire_cred cred;
	uint32_t flags; /* LODE_XATTR_* */
	uint32_t size;	/* get/list: caller's buffer size */
	uint16_t name_len;
	uint16_t reserved0;
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_xattr_req) == 168, "xattr req");

struct lode_wire_xattr_rep {
	uint32_t size; /* value or list length */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_xattr_rep) == 8, "xattr rep");

/* ---- storage targets ---- */

#define LODE_TARGET_UP	 1
#define LODE_TARGET_DOWN 2

/* TARGET_REGISTER: body = req + address ("tcp://host:port" where clients reach the OSS).
 * The MDS keeps the uuid -> target id mapping durable, so a restarted OSS gets its id
 * back. Reply: lode_wire_hello_rep (cluster_id, target_id). */
struct lode_wire_target_register_req {
	uint8_t uuid[16];
	uint64_t bytes_total;
	uint64_t bytes_free;
	uint16_t addr_len;
	uint16_t reserved0;
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_target_register_req) == 40, "target register");

/* TARGET_HEARTBEAT: reply empty (ENOENT: unknown target, register again). */
struct lode_wire_target_heartbeat_req {
	uint32_t target_id;
	uint32_t reserved;
	uint64_t bytes_total;
	uint64_t bytes_free;
	uint64_t objects;
};
_Static_assert(sizeof(struct lode_wire_target_heartbeat_req) == 32, "heartbeat");

/* TARGET_LIST: empty body. Reply body: lode_wire_target_list_rep; data: count records of
 * lode_wire_target + address. */
struct lode_wire_target_list_rep {
	uint32_t count;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_target_list_rep) == 8, "target list rep");

struct lode_wire_target {
	uint32_t target_id;
	uint32_t state; /* LODE_TARGET_* */
	uint64_t bytes_total;
	uint64_t bytes_free;
	uint64_t objects;
	uint64_t last_seen_ms; /* milliseconds since the last heartbeat */
	uint16_t addr_len;
	uint16_t admin; /* LODE_TARGET_ACTIVE, _DRAINING or _REMOVED (lodectl drain) */
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_target) == 48, "target");

/* A target that reports less free than this (one chunk; bytes_free is already less the
 * OSS's reserve, lode-oss --reserve) is full: no new file is placed on it (the MDS), and
 * no copy is moved or repaired onto it (lodectl drain and rebalance, lode_repair). */
#define LODE_TARGET_FULL_BYTES (64u << 10)

/* A target's administrative state, apart from liveness: new files are placed only on
 * ACTIVE targets, and copies are moved only to them. A DRAINING target is still read from
 * (and its copies moved off it); a REMOVED one held nothing when it was removed. */
#define LODE_TARGET_ACTIVE   0
#define LODE_TARGET_DRAINING 1
#define LODE_TARGET_REMOVED  2

/* TARGET_STATE (admin only): sets a target's administrative state. ACTIVE and DRAINING
 * any time; REMOVED only from DRAINING once no layout names the target and no move to or
 * from it is unfinished (EBUSY otherwise). Reply empty. */
struct lode_wire_target_state_req {
	uint32_t target_id;
	uint32_t admin;
};
_Static_assert(sizeof(struct lode_wire_target_state_req) == 8, "target state req");

/* ORPHAN_LIST: objects a target should delete (of files whose last link went away).
 * Reply body: lode_wire_orphan_list_rep; data: count lode_wire_objid. ORPHAN_DONE: body
 * = req; data = the lode_wire_objid entries deleted. */
struct lode_wire_orphan_req {
	uint32_t target_id;
	uint32_t max;
};
_Static_assert(sizeof(struct lode_wire_orphan_req) == 8, "orphan req");

struct lode_wire_orphan_list_rep {
	uint32_t count;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_orphan_list_rep) == 8, "orphan list rep");

/* ---- copies: reports and repair ---- */

#define LODE_REPORT_WRITE_FAILED 1 /* a write (or fsync) to the copy failed */
#define LODE_REPORT_BAD_DATA	 2 /* the copy returned data that fails its checksums */

/* REPORT_COPY: body = req. The MDS marks the copy of (ino, stripe) on target_id degraded.
 * ENOENT if the file or that copy no longer exists (a repair may have replaced it), ESTALE
 * for another generation, EBUSY (nothing marked) if it is the stripe's last copy not
 * degraded: writers skip degraded copies, so that one holds every acknowledged byte.
 * Reply: empty. */
struct lode_wire_report_req {
	uint64_t ino;
	uint64_t generation;
	uint32_t stripe;
	uint32_t target_id;
	uint32_t kind; /* LODE_REPORT_* */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_report_req) == 32, "report req");

/* LAYOUT_GET: body = lode_wire_getattr_req. Reply: lode_wire_layout_rep. */
struct lode_wire_layout_rep {
	struct lode_wire_attr attr;
	struct lode_wire_layout layout;
	uint64_t degraded; /* as in lode_wire_open_rep */
};
_Static_assert(sizeof(struct lode_wire_layout_rep) ==
		   sizeof(struct lode_wire_attr) + sizeof(struct lode_wire_layout) + 8,
	       "layout rep");

/* LAYOUT_SET_COPY: the copy layout.targets[index] (which held old_target) now lives on
 * new_target, complete: the bit is cleared from degraded. The caller must hold the file's
 * write lease (handle), so that no write races the copy. new_target may equal old_target
 * (a target that came back and was refilled); it must not hold another copy of the same
 * stripe. Reply: lode_wire_layout_rep. */
struct lode_wire_set_copy_req {
	uint64_t ino;
	uint64_t handle;
	uint32_t index;
	uint32_t old_target;
	uint32_t new_target;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_set_copy_req) == 32, "set copy req");

/* ---- moving copies (admin only; lodectl drain and rebalance) ---- */

/*
 * MOVE: one copy of one stripe, layout.targets[index], from old_target to new_target, in
 * three steps (docs/design.md, "Moving copies"):
 * - BEGIN records the intent (the destination object may exist from now on) after checking
 *   that the layout still has old_target there and new_target may take the copy; the reply
 *   carries the layout's move sequence, which COMMIT must present;
 * - COMMIT, by the holder of the file's write lease (handle), after the copy was written and
 *   verified: if generation, old_target and seq are still what BEGIN saw, the layout names
 *   new_target, seq goes up, the intent is dropped and the old object is left to its target
 *   to delete after the orphan grace (like a deleted file's); else ESTALE and nothing changes;
 * - ABORT drops the intent (the caller removed the destination object first) and gives
 *   back the write lease BEGIN's mover held (a killed mover's would keep the file busy).
 */
enum lode_move_phase {
	LODE_MOVE_BEGIN = 1,
	LODE_MOVE_COMMIT = 2,
	LODE_MOVE_ABORT = 3,
};

struct lode_wire_move_req {
	uint64_t ino;
	uint64_t handle;     /* BEGIN, COMMIT: the mover's write handle */
	uint64_t generation; /* the layout generation the mover read */
	uint64_t seq;	     /* COMMIT: the move sequence BEGIN answered */
	uint32_t phase;	     /* enum lode_move_phase */
	uint32_t index;	     /* the copy: layout.targets[index] (ABORT: the stripe) */
	uint32_t old_target;
	uint32_t new_target;
};
_Static_assert(sizeof(struct lode_wire_move_req) == 48, "move req");

struct lode_wire_move_rep {
	uint64_t seq; /* the layout's move sequence (after COMMIT: the new one) */
	uint64_t reserved;
};
_Static_assert(sizeof(struct lode_wire_move_rep) == 16, "move rep");

/* MOVE_LIST: up to max unfinished moves (BEGIN without COMMIT or ABORT), for a new run to
 * clean up; with LODE_MOVE_LIST_OLD also the old copies of finished moves that their
 * targets have yet to delete (what fsck must not call strays). ino != 0: only the moves of
 * object (ino, generation). Reply body: lode_wire_orphan_list_rep (count); data: count
 * records. */
#define LODE_MOVE_LIST_OLD 1u
struct lode_wire_move_list_req {
	uint32_t max;	/* 1..LODE_OBJLIST_MAX */
	uint32_t flags; /* LODE_MOVE_LIST_* */
	uint64_t ino;
	uint64_t generation;
};
_Static_assert(sizeof(struct lode_wire_move_list_req) == 24, "move list req");

/* GRANT_RETURN: the client holds no grant of dir with this token any more, and answers no
 * lookup there from it. The reply has no body. */
struct lode_wire_grant_return_req {
	uint64_t dir;
	uint64_t token;
};
_Static_assert(sizeof(struct lode_wire_grant_return_req) == 16, "grant return req");

struct lode_wire_move_entry {
	uint64_t ino;
	uint64_t generation;
	uint32_t stripe;
	uint32_t target; /* where the destination object may be */
};
_Static_assert(sizeof(struct lode_wire_move_entry) == 24, "move entry");

/* ---- fsck (admin only; lodectl fsck) ---- */

/* FSCK: one page of one of the MDS's answers, in inode order from `cursor` (0: the start).
 * Each page is read in one read-only transaction; the reply's `next` is the cursor of the
 * next page and eof says none follows. */
enum lode_fsck_what {
	LODE_FSCK_NAMESPACE = 1, /* data: lode_wire_fsck_finding records + name, 8-aligned */
	LODE_FSCK_FILES = 2,	 /* data: lode_wire_fsck_file records (regular files) */
	LODE_FSCK_ORPHANS = 3,	 /* data: lode_wire_fsck_file records (deleted files' objects) */
	LODE_FSCK_PATH = 4,	 /* data: a path of inode `cursor`, no NUL ("" if none) */
};

struct lode_wire_fsck_req {
	uint32_t what; /* enum lode_fsck_what */
	uint32_t max;  /* records wanted, 1..LODE_FSCK_MAX (NAMESPACE: findings) */
	uint64_t cursor;
	uint64_t reserved[2];
};
_Static_assert(sizeof(struct lode_wire_fsck_req) == 32, "fsck req");

#define LODE_FSCK_MAX 8192

struct lode_wire_fsck_rep {
	uint32_t count; /* records in data */
	uint32_t eof;
	uint64_t next;	   /* cursor of the next page */
	uint64_t next_ino; /* the next inode number the MDS hands out, at this page */
	uint64_t checked;  /* inodes (or orphan records) this page looked at */
};
_Static_assert(sizeof(struct lode_wire_fsck_rep) == 32, "fsck rep");

/* What the namespace check finds (lode_wire_fsck_finding.kind). */
enum lode_fsck_kind {
	LODE_FSCK_DANGLING = 1,	   /* entry (parent, name, cookie) leads to no inode `ino` */
	LODE_FSCK_NLINK = 2,	   /* inode's nlink `found`, entries say `expected` */
	LODE_FSCK_UNLINKED = 3,	   /* inode with links but no entry (an orphaned inode) */
	LODE_FSCK_BAD_PARENT = 4,  /* directory whose parent is missing, not a dir, or a cycle */
	LODE_FSCK_COOKIE = 5,	   /* readdir cookie index disagrees with the entries */
	LODE_FSCK_BAD_TARGET = 6,  /* layout copy `index` names unknown target `found` */
	LODE_FSCK_SAME_TARGET = 7, /* two copies of one stripe on target `found` */
	LODE_FSCK_BAD_MASK = 8,	   /* degraded mask `found` has bits past the layout */
	LODE_FSCK_BAD_LAYOUT = 9,  /* stripe/mirror counts or stripe size impossible */
	LODE_FSCK_BAD_ORPHAN = 10, /* orphan record inconsistent (`found`: its pending mask) */
};

struct lode_wire_fsck_finding {
	uint32_t kind;
	uint16_t name_len; /* DANGLING, COOKIE: the entry's name follows */
	uint16_t reserved;
	uint64_t ino;
	uint64_t parent; /* DANGLING, COOKIE: the directory */
	uint64_t cookie; /* DANGLING: the entry's cookie */
	uint64_t expected;
	uint64_t found;
	uint32_t index; /* BAD_TARGET, SAME_TARGET: the copy */
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_fsck_finding) == 56, "fsck finding");

/* A regular file's (or an orphan record's) objects, for the cross-check with the OSSes:
 * followed by n = stripe_count * mirror_count u32 target ids, padded to 8 bytes. */
struct lode_wire_fsck_file {
	uint64_t ino;
	uint64_t size;
	uint64_t generation;
	uint64_t degraded;
	uint32_t stripe_size;
	uint16_t stripe_count;
	uint16_t mirror_count;
	uint32_t nlink;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_fsck_file) == 48, "fsck file");

/* FSCK_FIX: repairs one finding in a write transaction, after checking it again there (a
 * finding that is gone is answered 0). Reply body: lode_wire_fsck_fix_rep. */
enum lode_fsck_fix_action {
	LODE_FSCK_FIX_NLINK = 1,    /* ino: set nlink to the entries counted */
	LODE_FSCK_FIX_DANGLING = 2, /* parent, cookie: remove the entry if its inode is gone */
	LODE_FSCK_FIX_RELINK = 3,   /* ino: link it as /lost+found.INO (no entry leads to it) */
	LODE_FSCK_FIX_DEGRADE = 4,  /* ino, index: mark the copy degraded (an unknown target) */
};

struct lode_wire_fsck_fix_req {
	uint32_t action; /* enum lode_fsck_fix_action */
	uint32_t index;
	uint64_t ino;
	uint64_t parent;
	uint64_t cookie;
};
_Static_assert(sizeof(struct lode_wire_fsck_fix_req) == 32, "fsck fix req");

struct lode_wire_fsck_fix_rep {
	uint32_t fixed; /* 1: changed; 0: nothing (no longer) to fix */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_fsck_fix_rep) == 8, "fsck fix rep");

/* ---- backup (admin only; lodectl mds backup) ---- */

/* BACKUP_START: the MDS begins a compacted copy of its LMDB store (one read transaction,
 * so writers go on) into a temporary file of its own, on a thread. One copy at a time:
 * -EBUSY while one is being made; a new one replaces a finished one. */
struct lode_wire_backup_start_req {
	uint64_t reserved[2];
};
_Static_assert(sizeof(struct lode_wire_backup_start_req) == 16, "backup start req");

struct lode_wire_backup_start_rep {
	uint64_t backup_id; /* names the copy in BACKUP_READ */
	uint64_t reserved;
};
_Static_assert(sizeof(struct lode_wire_backup_start_rep) == 16, "backup start rep");

/* BACKUP_READ: up to `max` bytes of the copy from `offset` as data, once it is ready (until
 * then: ready 0 and no data; ask again). Reading its last byte releases the copy; a
 * backup_id that is not the current copy's is -ESTALE. */
struct lode_wire_backup_read_req {
	uint64_t backup_id;
	uint64_t offset;
	uint32_t max; /* 1..LODE_BACKUP_PAGE_MAX */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_backup_read_req) == 24, "backup read req");

#define LODE_BACKUP_PAGE_MAX (1u << 20)

struct lode_wire_backup_read_rep {
	uint32_t ready; /* 1: the copy is complete; size and hash are set */
	uint32_t reserved;
	uint64_t size;	  /* bytes in the whole copy */
	uint8_t hash[32]; /* BLAKE2b-256 of the whole copy */
};
_Static_assert(sizeof(struct lode_wire_backup_read_rep) == 48, "backup read rep");
/* ---- capabilities (the types are with OPEN above) ---- */

/* CAP_GET: a capability for the objects of the file ino at layout generation (0: the
 * current one; an older one for a reader that opened before the objects moved; ESTALE for
 * one newer than the file's). Read needs read permission (cred); write needs the file's
 * write lease (handle) and the current generation, and its holder also gets read. An
 * admin gets any. */
struct lode_wire_cap_req {
	uint64_t ino;
	struct lode_wire_cred cred;
	uint64_t handle; /* write: the lease's handle */
	uint32_t rights; /* LODE_CAP_*, at least one */
	uint32_t reserved;
	uint64_t generation;
};
_Static_assert(sizeof(struct lode_wire_cap_req) == 176, "cap req");

/* ---- objects ---- */

/* Object identity: numbers only; an OSS derives its file name from them. ino is never 0
 * and reserved must be 0 (decoders reject both). */
struct lode_wire_objid {
	uint64_t ino;
	uint64_t generation;
	uint32_t stripe;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_objid) == 24, "objid");

/* OBJ_WRITE: body = req + nchunks u64 checksums (nchunks = ceil(data_len / CHUNK));
 * data = bytes. offset is chunk aligned; data_len is a multiple of LODE_CHUNK_SIZE unless
 * the write ends the object's current data. Each checksum is xxh3-64 of its chunk padded
 * with zeros to LODE_CHUNK_SIZE. The OSS verifies every checksum before storing anything
 * (EBADMSG on mismatch). Reply: lode_wire_obj_rep. With LODE_OBJ_F_CHAIN a
 * lode_wire_chain follows the checksums, and the reply is lode_wire_obj_chain_rep. */
struct lode_wire_obj_write_req {
	struct lode_wire_objid obj;
	uint64_t offset;
	uint32_t flags; /* LODE_OBJ_F_* */
	uint32_t nchunks;
};
_Static_assert(sizeof(struct lode_wire_obj_write_req) == 40, "obj write");

#define LODE_OBJ_F_SYNC	 0x1u /* make durable before answering */
#define LODE_OBJ_F_CHAIN 0x2u /* a forwarding chain follows the checksums */
/* The bytes cover part of a chunk at either end: offset may be anywhere, and the OSS merges
 * them into the chunks already stored (under its per-object serialization) and sums the
 * merged chunks itself. nchunks counts the chunks [offset, offset + data_len) touches;
 * checksum i is of the request's bytes that fall in the i-th (zero padded, as always), so
 * the data is still verified end to end before it is merged. */
#define LODE_OBJ_F_MERGE 0x4u
/* The writer syncs no data (a data=lazy client): the OSS may leave the write's writeback to
 * the kernel instead of starting it at once, as no fsync will wait for it (a small
 * object's, oss/objio.c). */
#define LODE_OBJ_F_LAZY 0x8u
#define LODE_OBJ_F_ALL_ 0xfu

/* OBJ_READ: offset chunk aligned, length <= LODE_DATA_MAX. Reply body: lode_wire_obj_read_rep
 * + nchunks u64 checksums; data: the bytes that exist (data_len <= length; shorter at the
 * object's end; an object never written reads as empty). Checksums cover whole padded
 * chunks. EBADMSG when the object's checksums say a chunk of the range was written that its
 * data file does not hold (deleted or cut short on disk): never zeros for lost data. */
struct lode_wire_obj_read_req {
	struct lode_wire_objid obj;
	uint64_t offset;
	uint32_t length;
	uint32_t flags; /* LODE_OBJ_READ_* */
};
_Static_assert(sizeof(struct lode_wire_obj_read_req) == 40, "obj read");

/* Read bytes and checksums from one moment: the OSS holds the chunks against writes (as a
 * write holds them) while it reads them into memory, and sends that copy. Without it the
 * bytes go from the page cache to the socket without a copy, and a write of the same
 * chunks landing meanwhile can pair its bytes with the checksums read before it. A client
 * reads a chunk that did not match once more with this flag before it takes the copy for
 * bad. */
#define LODE_OBJ_READ_HELD 0x1u
#define LODE_OBJ_READ_ALL_ 0x1u

struct lode_wire_obj_read_rep {
	uint64_t object_size;
	uint32_t nchunks;
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_obj_read_rep) == 16, "obj read rep");

/* OBJ_TRUNCATE: set the object's size (creating it empty if absent). Reply: obj_rep. */
struct lode_wire_obj_truncate_req {
	struct lode_wire_objid obj;
	uint64_t size;
};
_Static_assert(sizeof(struct lode_wire_obj_truncate_req) == 32, "obj truncate");

/* OBJ_ALLOCATE: reserve disk space for [offset, offset + length) of the object (creating
 * it empty if absent) without changing its size or data: fallocate(2) with KEEP_SIZE, so
 * that later writes there cannot fail for want of space. Reply: obj_rep. */
struct lode_wire_obj_allocate_req {
	struct lode_wire_objid obj;
	uint64_t offset;
	uint64_t length;
};
_Static_assert(sizeof(struct lode_wire_obj_allocate_req) == 40, "obj allocate");

/* OBJ_REMOVE, OBJ_STAT, OBJ_FSYNC: body = lode_wire_objid. Reply: obj_rep (REMOVE of an
 * absent object succeeds with size 0; STAT of an absent object is ENOENT). A chained
 * OBJ_FSYNC is lode_wire_objid + lode_wire_chain + hops (told apart by its length), and
 * answers lode_wire_obj_chain_rep. */
struct lode_wire_obj_rep {
	uint64_t object_size;
	uint64_t bytes_stored; /* allocated on the OSS's disk */
};
_Static_assert(sizeof(struct lode_wire_obj_rep) == 16, "obj rep");

/*
 * Chained replication. A chained OBJ_WRITE or OBJ_FSYNC carries the copies after the
 * receiver's own: the receiver applies the operation to its object and, at the same time,
 * sends the same request to hops[0] with hops[1..] as that one's chain, then answers once
 * both are done, with one status per copy (its own first, then the hops in order). So one
 * request from the client reaches every copy, each OSS sending the data on once.
 *
 * A receiver waits at most timeout_ms for its downstream and gives its own downstream
 * less (three quarters), so a dead or slow hop turns into a per-copy ETIMEDOUT before the
 * caller's own deadline. A copy's status is ECANCELED when the request did not reach it
 * through the chain (a hop before it refused or broke the connection, or answered an error,
 * which a hop does only before it forwards): the caller may send it again, the same bytes,
 * so a copy that did get them from a hop that died meanwhile holds them either way. A hop
 * that timed out may be alive and forward late, after a newer write of the same range: so
 * every copy after it reports ETIMEDOUT too, and the caller treats it as failed.
 *
 * Addresses are those the targets registered; self_target names the target the request is
 * meant for (0: unchecked), so a stale address cannot write into the wrong target (ESTALE).
 */
#define LODE_CHAIN_MAX	       7       /* hops one request carries: 8 copies in all */
#define LODE_CHAIN_TIMEOUT_MAX 600000u /* ms */

struct lode_wire_chain_hop {
	uint32_t target_id; /* != 0, distinct within a chain */
	uint16_t addr_len;  /* 1..LODE_ADDR_MAX */
	uint16_t reserved;
	char addr[LODE_ADDR_MAX + 1]; /* addr_len printable bytes, then zeros */
};
_Static_assert(sizeof(struct lode_wire_chain_hop) == 8 + LODE_ADDR_MAX + 1, "chain hop");

/* Followed by count hops. count 0: the receiver is the chain's tail (it still answers
 * with a lode_wire_obj_chain_rep, for its own copy). */
struct lode_wire_chain {
	uint32_t self_target;
	uint16_t count; /* 0..LODE_CHAIN_MAX */
	uint16_t reserved0;
	uint32_t timeout_ms; /* 1..LODE_CHAIN_TIMEOUT_MAX */
	uint32_t reserved1;
};
_Static_assert(sizeof(struct lode_wire_chain) == 16, "chain");

/* Reply of a chained request (hdr.status 0 whenever the request was well formed, whatever
 * happened to the copies). status[i]: wire status of copy i (0: the receiver, then the hops
 * in order); count = 1 + the request's chain count; entries past count are zero. obj is the
 * receiver's own result (zero when its own copy failed). */
struct lode_wire_obj_chain_rep {
	struct lode_wire_obj_rep obj;
	uint16_t count;
	uint16_t reserved0;
	uint32_t reserved1;
	int32_t status[LODE_CHAIN_MAX + 1];
};
_Static_assert(sizeof(struct lode_wire_obj_chain_rep) == 24 + 4 * (LODE_CHAIN_MAX + 1),
	       "obj chain rep");
_Static_assert(sizeof(struct lode_wire_obj_write_req) + 8 * (LODE_DATA_MAX / LODE_CHUNK_SIZE + 1) +
		       sizeof(struct lode_wire_chain) +
		       LODE_CHAIN_MAX * sizeof(struct lode_wire_chain_hop) <=
		   LODE_BODY_MAX,
	       "a chained write of the largest size fits in a body");

/* OBJ_LIST: objects with id greater than `after` in (ino, generation, stripe) order.
 * Reply body: lode_wire_obj_list_rep; data: count lode_wire_objinfo. */
struct lode_wire_obj_list_req {
	struct lode_wire_objid after;
	uint32_t max; /* 1..LODE_OBJLIST_MAX */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_obj_list_req) == 32, "obj list");

struct lode_wire_obj_list_rep {
	uint32_t count;
	uint32_t eof;
};
_Static_assert(sizeof(struct lode_wire_obj_list_rep) == 8, "obj list rep");

struct lode_wire_objinfo {
	struct lode_wire_objid obj;
	uint64_t size;
};
_Static_assert(sizeof(struct lode_wire_objinfo) == 32, "objinfo");

/* ---- scrub (lodectl scrub): each OSS verifies its objects' checksums at rest ---- */

/* SCRUB_REPORT (OSS only): the scrub of target_id found chunks of obj whose data fails its
 * checksums (or a chunk with a checksum and no data). The MDS marks that copy degraded as
 * REPORT_COPY with LODE_REPORT_BAD_DATA does, with its statuses (ENOENT: the file or the
 * copy is gone; ESTALE: another generation; EBUSY: the stripe's last good copy, left as
 * it is). Reply: empty. */
struct lode_wire_scrub_report_req {
	struct lode_wire_objid obj;
	uint32_t target_id;  /* != 0 */
	uint32_t bad_chunks; /* >= 1 */
	uint64_t first_bad;  /* chunk index of the first bad chunk */
};
_Static_assert(sizeof(struct lode_wire_scrub_report_req) == 40, "scrub report req");

enum lode_scrub_action {
	LODE_SCRUB_START = 1,  /* EBUSY if one is running */
	LODE_SCRUB_CANCEL = 2, /* stops a running scrub (its result says cancelled) */
};

/* OBJ_SCRUB (admin only): body = req. Reply body: lode_wire_scrub_status (no data). */
struct lode_wire_scrub_req {
	uint32_t action; /* enum lode_scrub_action */
	uint32_t reserved;
	uint64_t rate; /* START: bytes read per second at most; 0: unthrottled */
	uint64_t reserved1[2];
};
_Static_assert(sizeof(struct lode_wire_scrub_req) == 32, "scrub req");

enum lode_scrub_state {
	LODE_SCRUB_NEVER = 0, /* no scrub since the OSS started */
	LODE_SCRUB_RUNNING = 1,
	LODE_SCRUB_DONE = 2, /* every object was read */
	LODE_SCRUB_CANCELLED = 3,
	LODE_SCRUB_FAILED = 4, /* stopped by an error (`error`) */
};

/* OBJ_SCRUB_STATUS (admin only): body = req. Reply body: lode_wire_scrub_status; data:
 * `count` lode_wire_scrub_bad records, the first at most `max` of the bad objects the
 * current (or last) scrub found, in the order found. */
struct lode_wire_scrub_status_req {
	uint32_t max; /* 0..LODE_SCRUB_BAD_MAX */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_scrub_status_req) == 8, "scrub status req");

#define LODE_SCRUB_BAD_MAX 1024 /* bad objects an OSS remembers per scrub */

struct lode_wire_scrub_status {
	uint32_t state;		/* enum lode_scrub_state */
	int32_t error;		/* FAILED: the wire status that stopped it */
	uint64_t run;		/* scrubs started since the OSS started (this one's number) */
	uint64_t started;	/* wall-clock ns since the epoch; 0: never */
	uint64_t finished;	/* ns since the epoch; 0 while running */
	uint64_t rate;		/* as asked (0: unthrottled) */
	uint64_t objects_total; /* objects and bytes listed when the scrub began */
	uint64_t bytes_total;
	uint64_t objects_checked;
	uint64_t bytes_checked;
	uint64_t bad_objects; /* objects with at least one bad chunk */
	uint64_t bad_chunks;
	uint64_t reported; /* bad copies the MDS marked degraded */
	uint32_t count;	   /* records in the reply's data */
	uint32_t reserved;
};
_Static_assert(sizeof(struct lode_wire_scrub_status) == 104, "scrub status");

struct lode_wire_scrub_bad {
	struct lode_wire_objid obj;
	uint64_t first_bad; /* chunk index */
	uint32_t bad_chunks;
	int32_t report; /* wire status of SCRUB_REPORT (0: marked degraded) */
};
_Static_assert(sizeof(struct lode_wire_scrub_bad) == 40, "scrub bad");

#endif
