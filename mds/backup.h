/* SPDX-License-Identifier: MIT */
/* Online backups of the MDS's store for `lodectl mds backup` (BACKUP_START, BACKUP_READ). */
#ifndef LODE_MDS_BACKUP_H
#define LODE_MDS_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#include "wire_spec.h"

struct lode_store;
struct lode_mds_backup;

/* For the store st, whose data directory dir holds the copies being made (an unnamed
 * temporary file: nothing is left behind by a crash). Returns 0 or -errno. */
int lode_mds_backup_create(struct lode_mds_backup **out, struct lode_store *st, const char *dir);
/* Waits for a copy being made and frees everything. Call before the store closes. NULL is
 * accepted. */
void lode_mds_backup_destroy(struct lode_mds_backup *b);

/* Begins a copy on a thread of its own; *id names it. -EBUSY while another is made. */
int lode_mds_backup_start(struct lode_mds_backup *b, uint64_t *id);
/* One page of copy q->backup_id into *data (malloc'd, *len bytes; NULL while it is not
 * ready): see struct lode_wire_backup_read_req. Returns 0, -ESTALE for a copy that is not
 * (any longer) the current one, or the error that failed the copy. */
int lode_mds_backup_read(struct lode_mds_backup *b, const struct lode_wire_backup_read_req *q,
			 struct lode_wire_backup_read_rep *rep, void **data, size_t *len);

#endif
