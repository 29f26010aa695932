/* SPDX-License-Identifier: MIT */
/*
 * lodectl's insides: the command table's row, the state every command gets, and the
 * shared helpers (argument parsing, output, progress) each command file uses.
 *
 * Adding a command: write `int cmd_NAME(struct lodectl *ctl, int argc, char **argv)` in a
 * file of its own (or its group's), declare it below, and add one row to `commands[]` in
 * main.c. The handler parses its arguments with lodectl_parse() (which answers --help and
 * refuses unknown flags and extra arguments), does its work on ctl->client, puts its
 * result into ctl->out with the json helpers, prints its text form unless ctl->json, and
 * returns an exit status (0, 1 on failure, 2 on bad usage) from lodectl_fail() and co.
 */
#ifndef LODE_TOOLS_LODECTL_H
#define LODE_TOOLS_LODECTL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lode/lode.h"

#define LODECTL_EXIT_FAIL  1
#define LODECTL_EXIT_USAGE 2

struct lodectl;
typedef int (*lodectl_fn)(struct lodectl *ctl, int argc, char **argv);

/* One row of the command table (main.c). */
struct lodectl_cmd {
	const char *name;    /* "put", "local up" */
	lodectl_fn run;	     /* argv[0] is the command's name */
	const char *summary; /* one line, for `lodectl --help` */
	const char *usage;   /* the full help: first line "NAME ARGS", then options */
	bool cluster;	     /* connect to the MDS before run() */
};

struct lodectl {
	const struct lodectl_cmd *cmd;
	const char *mds_addr;	    /* --mds or $LODE_MDS */
	unsigned timeout_ms;	    /* --timeout; 0: liblode's default */
	const char *key_file;	    /* --key FILE; "" for --insecure; NULL: $LODE_KEY_FILE */
	bool json;		    /* --json: one JSON document on stdout */
	bool quiet;		    /* --quiet: no progress, no summary lines */
	struct lode_client *client; /* connected when cmd->cluster */
	json_object *out;	    /* the JSON document's top-level object */
	bool failed;		    /* an error is recorded in out */
	int exit;		    /* what to exit with when lodectl_parse() returns -1 */
};

/* Connects ctl->client to ctl->mds_addr; on failure reports why in words (a bad address,
 * nothing listening, not an MDS) and returns 1. main.c. */
int lodectl_connect(struct lodectl *ctl);

/* ---- arguments (args.c) ---- */

enum lodectl_opt_kind {
	LODECTL_OPT_FLAG, /* bool *dest = true */
	LODECTL_OPT_UINT, /* uint64_t *dest, decimal, in [min, max] */
	LODECTL_OPT_SIZE, /* uint64_t *dest, decimal with an optional K/M/G suffix, in [min, max] */
	LODECTL_OPT_STRING /* const char **dest */
};

struct lodectl_opt {
	const char *name;  /* "--mirrors" */
	const char *alias; /* "-r", or NULL */
	enum lodectl_opt_kind kind;
	void *dest;
	uint64_t min, max; /* for numbers */
};

/*
 * Parses a command's argv (argv[0] its name): options from opts (a NULL-name-terminated
 * array, may be NULL) anywhere before a "--", plus the options every command takes
 * (--help, --json, --quiet, --mds, --timeout), and between min_pos and max_pos positional
 * arguments, stored in pos[] (room for max_pos). "-" is a positional argument. Then, for a
 * command whose row says cluster, connects ctl->client (lodectl_connect).
 * Returns the number of positional arguments (>= 0), or -1 when the command is done and
 * should return ctl->exit: 0 after printing its --help, 2 after reporting bad usage, 1
 * when the MDS could not be reached.
 */
int lodectl_parse(struct lodectl *ctl, int argc, char **argv, const struct lodectl_opt *opts,
		  int min_pos, int max_pos, char **pos);
/* A number as --timeout and co take them: decimal digits only, in [min, max], optionally
 * with a K/M/G suffix (binary) when size. Returns 0 or -EINVAL / -ERANGE. */
int lodectl_parse_number(const char *s, bool size, uint64_t min, uint64_t max, uint64_t *out);
/* Refuses a cluster path that is not absolute: reports it (usage error) and returns false. */
bool lodectl_cluster_path_ok(struct lodectl *ctl, const char *path);

/* ---- output (output.c) ---- */

/* Reports a failure: "lodectl CMD: MESSAGE: strerror" on stderr, or the JSON error member
 * {"code": "ENOENT", "errno": 2, "message": ...}; rc is a negative errno (0: no errno
 * part). Returns LODECTL_EXIT_FAIL. Only the first error of a command is kept in JSON. */
int lodectl_fail(struct lodectl *ctl, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As lodectl_fail, with a message that says why itself: no strerror appended. */
int lodectl_fail_as(struct lodectl *ctl, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As lodectl_fail for bad usage: code "EUSAGE", and "see lodectl CMD --help". Returns
 * LODECTL_EXIT_USAGE. */
int lodectl_usage_error(struct lodectl *ctl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A line for a person (not in --json or --quiet mode), on stderr. */
void lodectl_note(struct lodectl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the JSON document (ctl->out) to stdout when in --json mode. */
void lodectl_json_print(struct lodectl *ctl);

/* JSON helpers: add a member to obj (never fail: json-c aborts on out of memory). */
void json_add_str(json_object *obj, const char *key, const char *val);
void json_add_u64(json_object *obj, const char *key, uint64_t val);
void json_add_i64(json_object *obj, const char *key, int64_t val);
void json_add_bool(json_object *obj, const char *key, bool val);
void json_add_double(json_object *obj, const char *key, double val);
void json_add_null(json_object *obj, const char *key);
/* "file", "directory", "symlink" or "other", from a mode's S_IFMT bits. */
const char *lodectl_type_name(uint32_t mode);
/* "drwxr-xr-x" into s (11 bytes). */
void lodectl_mode_string(uint32_t mode, char *s);
/* A name as a terminal may show it: control bytes, DEL and backslash as \xNN. */
const char *lodectl_shown_name(const char *name, char *buf, size_t size);
/* ns since the epoch as "YYYY-MM-DD HH:MM" (local time) or, iso, "YYYY-MM-DDTHH:MM:SSZ". */
void lodectl_time_string(int64_t ns, bool iso, char *buf, size_t size);
/* 1536 -> "1.5 KiB" */
void lodectl_bytes_string(uint64_t bytes, char *buf, size_t size);
/* seconds on the monotonic clock */
double lodectl_now(void);

/* ---- progress (progress.c) ---- */

/*
 * A byte counter for put, get and repair, shown on stderr: a bar with bytes, rate and ETA,
 * redrawn at most 10 times a second, when stderr is a terminal; otherwise a plain line
 * every LODECTL_PROGRESS_INTERVAL seconds (default 5) and none for a shorter transfer.
 * Silent under --quiet and --json. progress_add() may be called from many threads.
 */
struct lodectl_progress;
struct lodectl_progress *lodectl_progress_start(struct lodectl *ctl, const char *verb,
						uint64_t total);
/* The same for a count of things, shown as "N unit" and N/s instead of bytes. */
struct lodectl_progress *lodectl_progress_start_count(struct lodectl *ctl, const char *verb,
						      const char *unit, uint64_t total);
void lodectl_progress_add(struct lodectl_progress *p, uint64_t bytes);
/* Raises the total (a file found larger than announced, or more work found). */
void lodectl_progress_total(struct lodectl_progress *p, uint64_t total);
/* Clears the bar and frees p (NULL accepted). */
void lodectl_progress_end(struct lodectl_progress *p);

/* ---- commands ---- */

/* One page of the MDS's FSCK listing `what` (LODE_FSCK_*) from cursor, at most max records,
 * into data (cap bytes) and *rep (fsck.c; rebalance and scrub read the same pages). Returns
 * the data's length or -errno (-EPROTO for a reply of the wrong shape). */
struct lode_rpc_conn;
struct lode_wire_fsck_rep;
int lodectl_fsck_page(struct lode_rpc_conn *mds, uint32_t what, uint64_t cursor, uint32_t max,
		      struct lode_wire_fsck_rep *rep, void *data, size_t cap);

int cmd_put(struct lodectl *ctl, int argc, char **argv);	    /* files.c */
int cmd_get(struct lodectl *ctl, int argc, char **argv);	    /* files.c */
int cmd_ls(struct lodectl *ctl, int argc, char **argv);		    /* files.c */
int cmd_stat(struct lodectl *ctl, int argc, char **argv);	    /* files.c */
int cmd_rm(struct lodectl *ctl, int argc, char **argv);		    /* files.c */
int cmd_mkdir(struct lodectl *ctl, int argc, char **argv);	    /* namespace.c */
int cmd_rmdir(struct lodectl *ctl, int argc, char **argv);	    /* namespace.c */
int cmd_mv(struct lodectl *ctl, int argc, char **argv);		    /* namespace.c */
int cmd_ln(struct lodectl *ctl, int argc, char **argv);		    /* namespace.c */
int cmd_status(struct lodectl *ctl, int argc, char **argv);	    /* admin.c */
int cmd_df(struct lodectl *ctl, int argc, char **argv);		    /* admin.c */
int cmd_repair(struct lodectl *ctl, int argc, char **argv);	    /* admin.c */
int cmd_load(struct lodectl *ctl, int argc, char **argv);	    /* load.c */
int cmd_key_generate(struct lodectl *ctl, int argc, char **argv);   /* key.c */
int cmd_key_derive(struct lodectl *ctl, int argc, char **argv);	    /* key.c */
int cmd_local_up(struct lodectl *ctl, int argc, char **argv);	    /* local.c */
int cmd_local_add_oss(struct lodectl *ctl, int argc, char **argv);  /* local.c */
int cmd_mds_backup(struct lodectl *ctl, int argc, char **argv);	    /* mds.c */
int cmd_local_down(struct lodectl *ctl, int argc, char **argv);	    /* local.c */
int cmd_local_kill(struct lodectl *ctl, int argc, char **argv);	    /* local.c */
int cmd_fsck(struct lodectl *ctl, int argc, char **argv);	    /* fsck.c */
int cmd_scrub(struct lodectl *ctl, int argc, char **argv);	    /* scrub.c */
int cmd_drain(struct lodectl *ctl, int argc, char **argv);	    /* move.c */
int cmd_rebalance(struct lodectl *ctl, int argc, char **argv);	    /* move.c */
int cmd_target_list(struct lodectl *ctl, int argc, char **argv);    /* move.c */
int cmd_target_remove(struct lodectl *ctl, int argc, char **argv);  /* move.c */
int cmd_target_undrain(struct lodectl *ctl, int argc, char **argv); /* move.c */

/* For lodectl status (scrub.c): each target's current or last scrub, asked of the OSS.
 * open() returns NULL when it cannot (then peek_target adds "scrub": null); peek_target
 * adds member "scrub" to the target's JSON object and keeps a line for close(), which
 * prints them (text mode) and frees p (NULL accepted). */
struct lodectl_scrub_peek;
struct lodectl_scrub_peek *lodectl_scrub_peek_open(struct lodectl *ctl);
void lodectl_scrub_peek_target(struct lodectl_scrub_peek *p, uint32_t id, const char *addr, bool up,
			       json_object *target);
void lodectl_scrub_peek_close(struct lodectl_scrub_peek *p);

#endif
