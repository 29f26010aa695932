/* SPDX-License-Identifier: MIT */
/*
 * Config files of the Lode daemons (lode-mds, lode-oss, lode-fuse): `--config FILE`.
 *
 * A file is lines of `key = value`; a key is the long name of one of the program's options,
 * without the dashes, so every option the program has, also one added later, works in the
 * file. A switch (an option without a value) is `key` alone or `key = true|false`. Blank
 * lines and lines starting with `#` are ignored; a value may be put in double quotes to keep
 * spaces at its ends. A key may repeat where the option may (`listen`). docs/config.md is the
 * user's description.
 *
 * The file's lines become options placed before the command line's, and a key also given on
 * the command line is dropped from the file: the command line overrides the file, also for
 * options that repeat.
 */
#ifndef LODE_PROTO_CONF_H
#define LODE_PROTO_CONF_H

#include <getopt.h>
#include <stddef.h>

/*
 * Finds `--config FILE` (or `--config=FILE`, or an abbreviation getopt_long would take) in the
 * arguments, reads FILE and replaces argc and argv with: argv[0], the file's options as
 * `--key=value` or `--key` elements, then the command line's elements unchanged (`--config`
 * among them: the program accepts and ignores it). opts is the program's getopt_long table,
 * which says which keys exist and which take a value; `config`, `help` and `version` are not
 * taken from a file. The new array and its strings live until the process exits.
 *
 * Returns 0 (also when there is no --config; nothing changes then), or -errno with why set
 * to a one-line reason: "FILE: No such file or directory", "FILE:LINE: unknown key 'x'", ...
 */
int lode_conf_load(const struct option *opts, int *argc, char ***argv, char *why, size_t why_len);

/* "FILE:LINE: " when arg is an element lode_conf_load() made from that line of the file,
 * else "": what an error about the option's value starts with. */
const char *lode_conf_where(const char *arg);

/* lode_conf_where() of the element getopt_long() consumed last, argv[optind - 1], in the
 * argv lode_conf_load() made: for a bad_args() of a getopt loop. */
const char *lode_conf_where_getopt(void);

#endif
