/*
 * Displays, presents, flips and vertical blanks of nftrace's own sessions
 * (DisplayStart, Present, DisplayFlip, VSyncDPC: schemas/events.def) into the
 * tables of the same names (schemas/timeline.sql, "Displays, presents, flips
 * and frames"). A present's GPU work is done when its queue executes the
 * signal of the present fence the Present announced (the FENCE_SIGNAL_QUEUED
 * right after it): that fence_ops row is presents.op, and its end the
 * present's and the flip's ready time.
 */
#include "builder_int.h"
#include "contract/errors.h"
#include "contract/timeline_writer.h"

#include <inttypes.h>
#include <stdio.h>

#define WHO "nftrace session: displays"

static int step(struct nf_timeline_builder *b, enum stmt_id id, const char *what, struct nf_error *err)
{
	int rc = nf_writer_step(b->db, b->st[id], WHO, what, err);

	sqlite3_clear_bindings(b->st[id]); /* the rows bind some columns only when known */
	return rc;
}

static uint64_t present_key(uint64_t display, uint64_t present)
{
	return display << 40 | (present & ((1ull << 40) - 1));
}

int nf_tb_display_event(struct nf_timeline_builder *b, const struct nf_event *ev, int64_t now,
			struct nf_error *err)
{
	const uint64_t *f = ev->f;
	sqlite3_stmt *s;

	switch (ev->id) {
	case NF_EV_DISPLAY_START: {
		uint64_t num = f[NFF_DISPLAY_START_refresh_num], den = f[NFF_DISPLAY_START_refresh_den];

		s = b->st[ST_DISPLAY];
		sqlite3_bind_int64(s, 1, (int64_t)f[NFF_DISPLAY_START_display]);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_DISPLAY_START_adapter]);
		if (ev->str)
			sqlite3_bind_text(s, 3, ev->str, -1, SQLITE_TRANSIENT);
		if (num && den)
			sqlite3_bind_double(s, 4, 1e9 * (double)den / (double)num);
		sqlite3_bind_int64(s, 5, (int64_t)f[NFF_DISPLAY_START_process]);
		return step(b, ST_DISPLAY, "a display", err);
	}
	case NF_EV_PRESENT: {
		int64_t id = ++b->next_present;
		int rc;

		s = b->st[ST_PRESENT];
		sqlite3_bind_int64(s, 1, id);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_PRESENT_display]);
		sqlite3_bind_int64(s, 3, (int64_t)f[NFF_PRESENT_process]);
		sqlite3_bind_int64(s, 4, (int64_t)f[NFF_PRESENT_thread]);
		sqlite3_bind_int64(s, 6, now);
		sqlite3_bind_int64(s, 7, (int64_t)f[NFF_PRESENT_hwqueue]);
		sqlite3_bind_int64(s, 8, (int64_t)f[NFF_PRESENT_sync_interval]);
		rc = step(b, ST_PRESENT, "a present", err);
		if (rc)
			return rc;
		s = b->st[ST_FLIP];
		sqlite3_bind_int64(s, 1, id);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_PRESENT_display]);
		sqlite3_bind_int64(s, 3, now);
		rc = step(b, ST_FLIP, "a flip", err);
		if (rc)
			return rc;
		if (nf_u64map_put(&b->presents, present_key(f[NFF_PRESENT_display], f[NFF_PRESENT_present_id]),
				  (uint64_t)id))
			return nf_tb_oom(err);
		b->present_armed = true;
		b->present_queue = (uint32_t)f[NFF_PRESENT_hwqueue];
		b->present_handle = (uint32_t)f[NFF_PRESENT_fence];
		b->present_value = (int64_t)f[NFF_PRESENT_value];
		b->present_row = id;
		return 0;
	}
	case NF_EV_DISPLAY_FLIP: {
		const uint64_t *id = nf_u64map_find(&b->presents, present_key(f[NFF_DISPLAY_FLIP_display],
									   f[NFF_DISPLAY_FLIP_present_id]));
		bool shown = f[NFF_DISPLAY_FLIP_status] == 0;
		char detail[160];

		if (!id)
			return 0; /* a flip of a present the session does not hold */
		s = b->st[ST_FLIP_DONE];
		sqlite3_bind_int64(s, 1, (int64_t)*id);
		if (shown) {
			sqlite3_bind_int64(s, 2, now);
			sqlite3_bind_int64(s, 3, (int64_t)f[NFF_DISPLAY_FLIP_vblank]);
			sqlite3_bind_text(s, 4, "shown", -1, SQLITE_STATIC);
			snprintf(detail, sizeof(detail), "shown from blank %" PRIu64 " on (DisplayFlip)",
				 f[NFF_DISPLAY_FLIP_vblank]);
		} else {
			sqlite3_bind_text(s, 4, "dropped", -1, SQLITE_STATIC);
			snprintf(detail, sizeof(detail),
				 "dropped at blank %" PRIu64 ": a newer ready flip of sync interval 0 replaced it",
				 f[NFF_DISPLAY_FLIP_vblank]);
		}
		sqlite3_bind_text(s, 5, detail, -1, SQLITE_TRANSIENT);
		return step(b, ST_FLIP_DONE, "a flip's end", err);
	}
	case NF_EV_VSYNC:
		s = b->st[ST_VBLANK];
		sqlite3_bind_int64(s, 1, now);
		sqlite3_bind_int64(s, 2, (int64_t)f[NFF_VSYNC_vblank]);
		sqlite3_bind_int64(s, 3, (int64_t)f[NFF_VSYNC_display]);
		return step(b, ST_VBLANK, "a vertical blank", err);
	default:
		return 0;
	}
}

int nf_tb_present_op(struct nf_timeline_builder *b, uint32_t hwqueue, uint32_t handle, int64_t value,
		     int64_t op, struct nf_error *err)
{
	sqlite3_stmt *s = b->st[ST_PRESENT_OP];

	if (hwqueue != b->present_queue || handle != b->present_handle || value != b->present_value)
		return 0;
	b->present_armed = false;
	sqlite3_bind_int64(s, 1, b->present_row);
	sqlite3_bind_int64(s, 2, op);
	return step(b, ST_PRESENT_OP, "a present's operation", err);
}

int nf_tb_displays_finish(struct nf_timeline_builder *b, struct nf_error *err)
{
	static const char sql[] =
		"UPDATE presents SET ready_ns = (SELECT end_ns FROM fence_ops f WHERE f.id = presents.op) "
		"WHERE op IS NOT NULL;"
		"UPDATE flips SET ready_ns = (SELECT ready_ns FROM presents p WHERE p.id = flips.present) "
		"WHERE present IS NOT NULL;"
		"UPDATE flips SET detail = detail || '; ready time unknown: its present fence signal has no "
		"known end (fence_ops.status)' WHERE ready_ns IS NULL AND present IS NOT NULL;";

	if (!b->next_present)
		return 0;
	return nf_writer_exec(b->db, WHO, sql, err);
}
