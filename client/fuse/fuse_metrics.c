/* SPDX-License-Identifier: MIT */
/*
 * lode-fuse's metrics (--metrics HOST:PORT, docs/metrics.md): reads and writes through the
 * mount, their bytes and read latency, the share of read bytes liblode's read-ahead had
 * ready, whether opens kept the kernel's page cache, the kernel's requests by opcode, and
 * error replies by errno.
 *
 * Request threads count with relaxed atomic adds (a few per read or write of up to 1 MiB,
 * each counter on its own cache line); the scrape, on the HTTP thread, reads them. Counting
 * is always on: it costs less than the request's own locks, and the mount need not know
 * whether anyone scrapes.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "lode_fuse.h"
#include "metrics.h"

#define LAT_BOUNDS 15
#define ERRNO_MAX  256
#define OPCODE_MAX 64 /* FUSE's opcodes run to 52 today; others count as "other" */

/* FUSE's request names, by opcode (linux/fuse.h), as the metric's op label */
static const char *const op_names[OPCODE_MAX] = {
    [1] = "LOOKUP",	   [2] = "FORGET",     [3] = "GETATTR",
    [4] = "SETATTR",	   [5] = "READLINK",   [6] = "SYMLINK",
    [8] = "MKNOD",	   [9] = "MKDIR",      [10] = "UNLINK",
    [11] = "RMDIR",	   [12] = "RENAME",    [13] = "LINK",
    [14] = "OPEN",	   [15] = "READ",      [16] = "WRITE",
    [17] = "STATFS",	   [18] = "RELEASE",   [20] = "FSYNC",
    [21] = "SETXATTR",	   [22] = "GETXATTR",  [23] = "LISTXATTR",
    [24] = "REMOVEXATTR",  [25] = "FLUSH",     [26] = "INIT",
    [27] = "OPENDIR",	   [28] = "READDIR",   [29] = "RELEASEDIR",
    [30] = "FSYNCDIR",	   [31] = "GETLK",     [32] = "SETLK",
    [33] = "SETLKW",	   [34] = "ACCESS",    [35] = "CREATE",
    [36] = "INTERRUPT",	   [37] = "BMAP",      [38] = "DESTROY",
    [39] = "IOCTL",	   [40] = "POLL",      [41] = "NOTIFY_REPLY",
    [42] = "BATCH_FORGET", [43] = "FALLOCATE", [44] = "READDIRPLUS",
    [45] = "RENAME2",	   [46] = "LSEEK",     [47] = "COPY_FILE_RANGE",
    [50] = "SYNCFS",	   [51] = "TMPFILE",   [52] = "STATX",
};

static const double lat_bounds[LAT_BOUNDS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

struct counter {
	_Atomic uint64_t v;
} __attribute__((aligned(64)));

static struct {
	struct counter reads, read_bytes, ra_bytes, read_ns;
	struct counter read_lat[LAT_BOUNDS + 1];
	struct counter writes, write_bytes;
	struct counter opens_kept, opens_dropped, opens_deferred;
	_Atomic uint64_t errors[ERRNO_MAX];	   /* rare: one line for many */
	_Atomic uint64_t requests[OPCODE_MAX + 1]; /* [OPCODE_MAX]: unnamed opcodes */
	_Atomic uint64_t request_ns[OPCODE_MAX + 1], timed[OPCODE_MAX + 1];
} st;

static void add(struct counter *c, uint64_t v)
{
	atomic_fetch_add_explicit(&c->v, v, memory_order_relaxed);
}

static uint64_t get(const struct counter *c)
{
	return atomic_load_explicit(&c->v, memory_order_relaxed);
}

uint64_t lf_metrics_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void lf_metrics_read(uint64_t bytes, uint64_t readahead_bytes, uint64_t start_ns)
{
	uint64_t ns = lf_metrics_now_ns() - start_ns;
	double s = (double)ns / 1e9;
	unsigned b = 0;

	while (b < LAT_BOUNDS && s > lat_bounds[b])
		b++;
	add(&st.reads, 1);
	add(&st.read_bytes, bytes);
	add(&st.ra_bytes, readahead_bytes);
	add(&st.read_ns, ns);
	add(&st.read_lat[b], 1);
}

void lf_metrics_write(uint64_t bytes)
{
	add(&st.writes, 1);
	add(&st.write_bytes, bytes);
}

void lf_metrics_open_cache(bool kept)
{
	add(kept ? &st.opens_kept : &st.opens_dropped, 1);
}

void lf_metrics_open_deferred(void)
{
	add(&st.opens_deferred, 1);
}

void lf_metrics_error(int err)
{
	if (err > 0 && err < ERRNO_MAX)
		atomic_fetch_add_explicit(&st.errors[err], 1, memory_order_relaxed);
}

static uint32_t op_slot(uint32_t opcode)
{
	return opcode < OPCODE_MAX && op_names[opcode] ? opcode : OPCODE_MAX;
}

void lf_metrics_request(uint32_t opcode)
{
	atomic_fetch_add_explicit(&st.requests[op_slot(opcode)], 1, memory_order_relaxed);
}

void lf_metrics_request_done(uint32_t opcode, uint64_t ns)
{
	opcode = op_slot(opcode);
	atomic_fetch_add_explicit(&st.request_ns[opcode], ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&st.timed[opcode], 1, memory_order_relaxed);
}

/* A counter family by FUSE opcode: the ops whose v[] is not 0, counted or (ns) as seconds. */
static void collect_by_op(struct lode_metrics_buf *b, const char *name, const char *help,
			  _Atomic uint64_t *v, bool ns)
{
	char l[64];

	lode_metrics_family(b, name, "counter", help);
	for (unsigned op = 0; op <= OPCODE_MAX; op++) {
		uint64_t n = atomic_load_explicit(&v[op], memory_order_relaxed);
		const char *kv[2] = {"op", op < OPCODE_MAX ? op_names[op] : "other"};

		if (!n)
			continue;
		lode_metrics_labels(l, sizeof(l), 1, kv);
		if (ns)
			lode_metrics_sample(b, name, l, (double)n / 1e9);
		else
			lode_metrics_sample_u64(b, name, l, n);
	}
}

static void collect_requests(struct lode_metrics_buf *b)
{
	collect_by_op(b, "lode_fuse_requests_total",
		      "Requests the kernel sent this mount, by FUSE opcode (one per round trip "
		      "through lode-fuse, whether or not it went on to a server).",
		      st.requests, false);
	collect_by_op(b, "lode_fuse_request_seconds_total",
		      "Seconds requests spent in lode-fuse, from the read of each to its reply, "
		      "by FUSE opcode; of the requests counted in lode_fuse_requests_timed_total.",
		      st.request_ns, true);
	collect_by_op(b, "lode_fuse_requests_timed_total",
		      "Requests answered by the thread that read them, by FUSE opcode: those "
		      "lode_fuse_request_seconds_total timed (not FORGETs, which have no reply, "
		      "nor deferred replies).",
		      st.timed, false);
}

void lf_metrics_collect(void *arg, struct lode_metrics_buf *b)
{
	const char *kv[4] = {"program", "lode-fuse", "version", LODE_VERSION};
	uint64_t lat[LAT_BOUNDS + 1], threads, handoffs, kicks;
	char l[96];

	(void)arg;
	lode_metrics_labels(l, sizeof(l), 2, kv);
	lode_metrics_family(b, "lode_build_info", "gauge",
			    "Always 1; the labels say which program and version this is.");
	lode_metrics_sample(b, "lode_build_info", l, 1);

	lode_metrics_family(b, "lode_fuse_reads_total", "counter", "Reads answered with data.");
	lode_metrics_sample_u64(b, "lode_fuse_reads_total", NULL, get(&st.reads));
	lode_metrics_family(b, "lode_fuse_read_bytes_total", "counter", "Bytes returned by reads.");
	lode_metrics_sample_u64(b, "lode_fuse_read_bytes_total", NULL, get(&st.read_bytes));
	lode_metrics_family(b, "lode_fuse_readahead_hit_bytes_total", "counter",
			    "Bytes of reads served from liblode's read-ahead (already fetched when "
			    "asked for); the rest was fetched for the read itself.");
	lode_metrics_sample_u64(b, "lode_fuse_readahead_hit_bytes_total", NULL, get(&st.ra_bytes));
	for (unsigned i = 0; i <= LAT_BOUNDS; i++)
		lat[i] = get(&st.read_lat[i]);
	lode_metrics_family(
	    b, "lode_fuse_read_duration_seconds", "histogram",
	    "Time a read took in lode-fuse, from the kernel's request to the reply.");
	lode_metrics_histogram(b, "lode_fuse_read_duration_seconds", NULL, lat_bounds, LAT_BOUNDS,
			       lat, (double)get(&st.read_ns) / 1e9);
	lode_metrics_family(b, "lode_fuse_writes_total", "counter", "Writes accepted.");
	lode_metrics_sample_u64(b, "lode_fuse_writes_total", NULL, get(&st.writes));
	lode_metrics_family(b, "lode_fuse_written_bytes_total", "counter",
			    "Bytes accepted by writes.");
	lode_metrics_sample_u64(b, "lode_fuse_written_bytes_total", NULL, get(&st.write_bytes));
	lode_metrics_family(
	    b, "lode_fuse_page_cache_opens_total", "counter",
	    "Opens of files, by whether the kernel's cached pages were kept (the file "
	    "had not changed since this mount last opened it) or dropped.");
	lode_metrics_sample_u64(b, "lode_fuse_page_cache_opens_total", "result=\"kept\"",
				get(&st.opens_kept));
	lode_metrics_sample_u64(b, "lode_fuse_page_cache_opens_total", "result=\"dropped\"",
				get(&st.opens_dropped));
	lode_metrics_family(b, "lode_fuse_opens_deferred_total", "counter",
			    "Opens and creates finished on one of the mount's own threads, not a "
			    "request thread: their file's open lock was taken, or they may hand "
			    "the kernel a grown file's last byte (either may wait for a READ "
			    "that only a request thread answers).");
	lode_metrics_sample_u64(b, "lode_fuse_opens_deferred_total", NULL, get(&st.opens_deferred));
	collect_requests(b);
	lode_metrics_family(b, "lode_fuse_kernel_feature", "gauge",
			    "1 where the kernel took the feature in the mount's INIT exchange: "
			    "direct_io_mmap (O_DIRECT opens bypass the page cache in FUSE's "
			    "direct_io mode, and can still be mapped), io_uring (requests over "
			    "io_uring, -o io_uring), killpriv_v2 (no GETXATTR of "
			    "security.capability before every write), parallel_dirops (lookups "
			    "in one directory run in parallel).");
	lode_metrics_sample(b, "lode_fuse_kernel_feature", "feature=\"direct_io_mmap\"",
			    lf_dio_mmap());
	lode_metrics_sample(b, "lode_fuse_kernel_feature", "feature=\"io_uring\"", lf_io_uring());
	lode_metrics_sample(b, "lode_fuse_kernel_feature", "feature=\"killpriv_v2\"",
			    lf_killpriv_v2());
	lode_metrics_sample(b, "lode_fuse_kernel_feature", "feature=\"parallel_dirops\"",
			    lf_parallel_dirops());
	lf_uring_counts(&threads, &handoffs, &kicks);
	lode_metrics_family(b, "lode_fuse_uring_threads", "gauge",
			    "Threads serving the kernel's io_uring queues (-o io_uring): each "
			    "CPU's queue starts with a few and gets more while fewer than 4 of "
			    "its entries wait for a request, and one for each request handed "
			    "off.");
	lode_metrics_sample_u64(b, "lode_fuse_uring_threads", NULL, threads);
	lode_metrics_family(b, "lode_fuse_uring_handoffs_total", "counter",
			    "Requests over io_uring handed, with their entry, to a thread started "
			    "for them: their queue had no other entry waiting (calls stuck on a "
			    "server, or a burst), or their thread had another entry.");
	lode_metrics_sample_u64(b, "lode_fuse_uring_handoffs_total", NULL, handoffs);
	lode_metrics_family(b, "lode_fuse_uring_kicks_total", "counter",
			    "GETATTRs of the mount's root that lode-fuse makes from a CPU whose "
			    "io_uring queue grew, so that the kernel hands out the requests it "
			    "queued there meanwhile.");
	lode_metrics_sample_u64(b, "lode_fuse_uring_kicks_total", NULL, kicks);
	lode_metrics_family(b, "lode_fuse_errors_total", "counter",
			    "Requests of any kind answered with an error, by errno (ENOENT of a "
			    "lookup included).");
	for (int e = 1; e < ERRNO_MAX; e++) {
		uint64_t n = atomic_load_explicit(&st.errors[e], memory_order_relaxed);
		const char *name = strerrorname_np(e);
		char num[16];
		const char *ekv[2] = {"errno", name ? name : num};

		if (!n)
			continue;
		snprintf(num, sizeof(num), "%d", e);
		lode_metrics_labels(l, sizeof(l), 1, ekv);
		lode_metrics_sample_u64(b, "lode_fuse_errors_total", l, n);
	}
}
