/* SPDX-License-Identifier: MIT */
/* lodectl load (load.c): argv[0] is "load". Returns the exit code. */
#ifndef LODE_TOOLS_LOAD_H
#define LODE_TOOLS_LOAD_H

struct lode_client;

int lodectl_load(struct lode_client *c, int argc, char **argv);

#endif
