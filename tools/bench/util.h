/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the benchmark's C programs: size parsing with bounds, a
 * monotonic clock, a watchdog so that no helper outlives a stuck file system, and the
 * one-line result format that tools/bench/run.sh parses ("key=value key=value").
 */
#ifndef LODE_BENCH_UTIL_H
#define LODE_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Parses "123", "64K", "16M", "4G", "1T" (powers of two) into *out if it lies in
 * [min, max]; returns 0, or -1 after printing why to stderr. */
int bench_parse_size(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);
/* Kills the process with a message after `seconds` (SIGALRM), so a hung file system
 * request cannot hang the benchmark; 0 disarms. */
void bench_watchdog(unsigned seconds);
/* Prints a message and exits with status 1. */
__attribute__((noreturn, format(printf, 1, 2))) void bench_die(const char *fmt, ...);
/* Fills buf with a reproducible, incompressible pattern derived from seed. */
void bench_fill(void *buf, size_t len, uint64_t seed);
/* Allocates len bytes aligned to 4 KiB (for O_DIRECT) and touches every page, or dies. */
void *bench_alloc(size_t len);

#endif
