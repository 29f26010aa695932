/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the MDS's request handlers in process (mds/handlers.c and everything behind them:
 * the namespace, placement, leases, the writer's group commit), as a peer reaches them:
 * request frames over a loopback connection to a lode_server running lode_mds_on_request,
 * with the daemon's header bounds check.
 *
 * One MDS per process, its store in a temporary directory (removed at exit); the namespace
 * an input builds stays for the next ones, as it would on a live server. Input and checks:
 * frames_client.h.
 */
#include <errno.h>
#include <string.h>

#include "codec.h"
#include "fixture.h"
#include "frames_client.h"
#include "fuzz.h"
#include "handlers.h"
#include "server.h"

static char dir[64];
static struct lode_mds mds;
static struct lode_server *srv;
static char addr[128];

static int check_header(void *ctx, const struct lode_wire_hdr *hdr)
{
	(void)ctx;
	return lode_hdr_check_bounds(hdr);
}

static const struct lode_server_ops ops = {.on_request = lode_mds_on_request,
					   .check_header = check_header};

static void cleanup(void)
{
	lode_server_stop(srv);
	if (mds.st)
		lode_mds_fini(&mds);
	if (dir[0])
		fixture_tmpdir_remove(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct lode_mds_opts mo = {.map_size = 256ull << 20, .orphan_grace_ns = 0};
	struct lode_server_opts so = {
	    .listen = {"tcp://127.0.0.1:0"}, .threads = 1, .ops = &ops, .ctx = &mds};
	char why[256] = "";
	int rc;

	(void)argc, (void)argv;
	if (fixture_tmpdir_make(dir, sizeof(dir), "lode-fuzz-mds")) {
		fprintf(stderr, "fuzz_mds_handler: cannot make a directory in /tmp\n");
		exit(1);
	}
	atexit(cleanup);
	mo.dir = dir;
	if (lode_mds_init(&mds, &mo, why, sizeof(why))) {
		fprintf(stderr, "fuzz_mds_handler: lode_mds_init: %s\n", why);
		exit(1);
	}
	rc = lode_server_start(&srv, &so);
	if (rc) {
		fprintf(stderr, "fuzz_mds_handler: cannot start a server: %s\n", strerror(-rc));
		exit(rc == -ENOSYS || rc == -EPERM ? 77 : 1);
	}
	snprintf(addr, sizeof(addr), "%s", lode_server_address(srv, 0));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_frames_run(addr, data, size, NULL);
	fuzz_wait_idle(srv);
	return 0;
}
