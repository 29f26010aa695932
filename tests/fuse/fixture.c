/* SPDX-License-Identifier: MIT */
/*
 * The cluster fixture (tests/integration/cluster.c) as a command, for the shell tests of
 * lode-fuse, so that they start, mount and stop clusters exactly as the C tests do.
 *
 *   lode-test-fixture up NOSS [LODECTL-OPTS]   prints "DIR MDS"
 *   lode-test-fixture down DIR
 *   lode-test-fixture mount DIR MDS MNT [OPTS] prints the daemon's pid; exits 77 if FUSE
 *                                              cannot be used here
 *   lode-test-fixture umount MNT PID
 *   lode-test-fixture usable                   exits 0, or 77 saying why not
 *   lode-test-fixture pattern SEED SIZE        writes the fixture's pattern to stdout
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"

static int pattern(uint64_t seed, uint64_t size)
{
	static char buf[1 << 20];

	for (uint64_t off = 0; off < size;) {
		size_t n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);

		pattern_fill(buf, n, seed, off);
		if (fwrite(buf, 1, n, stdout) != n)
			return 1;
		off += n;
	}
	return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct test_cluster tc;
	char why[256];
	int pid, rc;

	if (argc >= 3 && !strcmp(argv[1], "up")) {
		if (cluster_up_opts(&tc, atoi(argv[2]), argc > 3 ? argv[3] : ""))
			return 1;
		printf("%s %s\n", tc.dir, tc.mds);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "down")) {
		memset(&tc, 0, sizeof(tc));
		snprintf(tc.dir, sizeof(tc.dir), "%s", argv[2]);
		cluster_down(&tc);
		return 0;
	}
	if (argc >= 5 && !strcmp(argv[1], "mount")) {
		memset(&tc, 0, sizeof(tc));
		snprintf(tc.dir, sizeof(tc.dir), "%s", argv[2]);
		snprintf(tc.mds, sizeof(tc.mds), "%s", argv[3]);
		rc = cluster_mount(&tc, argv[4], argc > 5 ? argv[5] : NULL, NULL, &pid);
		if (rc == 0)
			printf("%d\n", pid);
		return rc ? (rc == 77 ? 77 : 1) : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "umount"))
		return cluster_unmount(argv[2], atoi(argv[3])) ? 1 : 0;
	if (argc == 2 && !strcmp(argv[1], "usable")) {
		rc = cluster_fuse_usable(why, sizeof(why));
		if (rc)
			printf("%s\n", why);
		return rc;
	}
	if (argc == 4 && !strcmp(argv[1], "pattern"))
		return pattern(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
	fprintf(stderr,
		"usage: %s up NOSS [OPTS] | down DIR | mount DIR MDS MNT [OPTS] | "
		"umount MNT PID | usable | pattern SEED SIZE\n",
		argv[0]);
	return 2;
}
