/*
 * i915's legacy page flips: i915_flip_request(plane, obj) when a flip is
 * queued (the page-flip ioctl: the application's present) and
 * i915_flip_complete(plane, obj) when the display latched it. A request is
 * paired with the next completion of the same plane and object (a flip
 * completes once, in order); the vblank it was shown at is the
 * drm_vblank_event of the CRTC of the plane's index at or after the
 * completion and within 1 ms (i915 sends the flip's event from that blank's
 * handler: in igt-i915-flip-2014.dat it follows 1 to 3 us later). On the
 * GPUs these events exist for, plane N scans out on pipe N (CRTC N).
 */
#include "kernel_flips.h"
#include "contract/errors.h"
#include "contract/timeline_writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"

#define WHO "kernel events: flips"
#define MAX_FLIP_EVENTS (1u << 24)
/* A flip's blank follows its completion within this (i915: microseconds). */
#define VBLANK_AFTER_NS 1000000

int nf_kflips_add(struct nf_kflips *k, int64_t ns, int64_t tid, int32_t plane, uint64_t obj, int kind,
		  struct nf_error *err)
{
	if (k->n >= MAX_FLIP_EVENTS)
		return nf_error_set(err, NF_ENOMEM, "timeline: more than %u flip events", MAX_FLIP_EVENTS);
	if (nf_array_reserve((void **)&k->v, &k->cap, k->n + 1, sizeof(*k->v), 256, 0))
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory (flips)");
	k->v[k->n++] = (struct nf_kflip_rec){ ns, tid, plane, obj, kind };
	return 0;
}

void nf_kflips_free(struct nf_kflips *k)
{
	free(k->v);
	memset(k, 0, sizeof(*k));
}

static int cmp_rec(const void *x, const void *y)
{
	const struct nf_kflip_rec *a = x, *b = y;

	return a->ns < b->ns ? -1 : a->ns > b->ns ? 1 : 0;
}

static int step(sqlite3 *db, sqlite3_stmt *s, const char *what, struct nf_error *err)
{
	int rc = nf_writer_step(db, s, WHO, what, err);

	sqlite3_clear_bindings(s); /* the rows bind some columns only when known */
	return rc;
}

int nf_kflips_write(struct nf_kflips *k, sqlite3 *db, struct nf_error *err)
{
	static const char ins_present[] =
		"INSERT INTO presents(id, display, process, thread, swapchain, present_ns, present_end_ns, queue, op, "
		"ready_ns, sync_interval, mode, source) VALUES (?1, ?2, (SELECT process FROM kernel_threads WHERE "
		"thread = ?3), ?3, 'plane ' || ?2, ?4, NULL, NULL, NULL, NULL, NULL, 'flip_request', 'i915_flip_request')";
	static const char ins_flip[] =
		"INSERT INTO flips(id, display, present, queued_ns, ready_ns, done_ns, vblank_ns, vblank_seq, status, "
		"detail) VALUES (?1, ?2, ?3, ?4, NULL, ?5, NULL, NULL, ?6, ?7)";
	static const char displays_sql[] =
		"INSERT OR IGNORE INTO displays(display, adapter, name, crtc, refresh_ns, process) "
		"SELECT DISTINCT crtc, NULL, 'crtc ' || crtc, crtc, NULL, NULL FROM vblanks WHERE crtc IS NOT NULL;"
		"UPDATE vblanks SET display = crtc WHERE crtc IS NOT NULL;";
	static const char tie_sql[] =
		"UPDATE flips SET vblank_ns = (SELECT min(v.ts_ns) FROM vblanks v WHERE v.crtc = flips.display "
		"AND v.ts_ns >= flips.done_ns AND v.ts_ns <= flips.done_ns + ?1) WHERE done_ns IS NOT NULL;"
		"UPDATE flips SET vblank_seq = (SELECT v.seq FROM vblanks v WHERE v.crtc = flips.display "
		"AND v.ts_ns = flips.vblank_ns) WHERE vblank_ns IS NOT NULL;"
		"UPDATE flips SET detail = detail || printf('; no drm_vblank_event of crtc %d within 1 ms of the "
		"completion: the blank it was shown at is not in the capture', display) "
		"WHERE done_ns IS NOT NULL AND vblank_ns IS NULL;";
	sqlite3_stmt *sd = NULL, *sp = NULL, *sf = NULL;
	int64_t next = 1;
	bool *used = NULL;
	int rc;

	if ((rc = nf_writer_exec(db, WHO, displays_sql, err)))
		return rc;
	if (!k->n)
		return 0;
	qsort(k->v, k->n, sizeof(*k->v), cmp_rec); /* stable enough: one CPU's events are in order */
	used = calloc(k->n, sizeof(*used));
	if (!used)
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory (flips)");
	if (sqlite3_prepare_v2(db, "INSERT INTO displays(display, adapter, name, crtc, refresh_ns, process) "
			       "VALUES (?1, NULL, 'plane ' || ?1, ?1, NULL, NULL) ON CONFLICT(display) DO UPDATE SET "
			       "name = 'plane ' || ?1 || ' (crtc ' || ?1 || ')'", -1, &sd, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, ins_present, -1, &sp, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, ins_flip, -1, &sf, NULL) != SQLITE_OK) {
		rc = nf_writer_sql_error(db, WHO, "preparing", err);
		goto out;
	}
	/* the displays of the planes flipped */
	for (size_t i = 0; i < k->n && !rc; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = k->v[j].plane == k->v[i].plane;
		if (seen)
			continue;
		sqlite3_bind_int64(sd, 1, k->v[i].plane);
		rc = step(db, sd, "a display", err);
	}
	/* each request with the next completion of its plane and object */
	for (size_t i = 0; i < k->n && !rc; i++) {
		const struct nf_kflip_rec *r = &k->v[i];
		const struct nf_kflip_rec *c = NULL;
		int64_t id;
		char detail[200];

		if (r->kind != 1)
			continue;
		id = next++;
		for (size_t j = i + 1; j < k->n; j++) {
			const struct nf_kflip_rec *x = &k->v[j];

			if (x->plane != r->plane || x->obj != r->obj)
				continue;
			if (x->kind == 1)
				break; /* requested again before a completion: this one never completed */
			if (!used[j]) {
				used[j] = true;
				c = x;
			}
			break;
		}
		sqlite3_bind_int64(sp, 1, id);
		sqlite3_bind_int64(sp, 2, r->plane);
		sqlite3_bind_int64(sp, 3, r->tid);
		sqlite3_bind_int64(sp, 4, r->ns);
		rc = step(db, sp, "a present", err);
		if (rc)
			break;
		sqlite3_bind_int64(sf, 1, id);
		sqlite3_bind_int64(sf, 2, r->plane);
		sqlite3_bind_int64(sf, 3, id);
		sqlite3_bind_int64(sf, 4, r->ns);
		if (c) {
			sqlite3_bind_int64(sf, 5, c->ns);
			sqlite3_bind_text(sf, 6, "shown", -1, SQLITE_STATIC);
			snprintf(detail, sizeof(detail), "i915_flip_request paired with the next i915_flip_complete of "
				 "plane %d, object 0x%" PRIx64, (int)r->plane, r->obj);
		} else {
			sqlite3_bind_text(sf, 6, "pending", -1, SQLITE_STATIC);
			snprintf(detail, sizeof(detail), "no i915_flip_complete of plane %d, object 0x%" PRIx64
				 " followed before the capture ended", (int)r->plane, r->obj);
		}
		sqlite3_bind_text(sf, 7, detail, -1, SQLITE_TRANSIENT);
		rc = step(db, sf, "a flip", err);
	}
	/* completions of requests made before the capture began: flips of no present */
	for (size_t j = 0; j < k->n && !rc; j++) {
		const struct nf_kflip_rec *x = &k->v[j];
		char detail[200];

		if (x->kind != 2 || used[j])
			continue;
		sqlite3_bind_int64(sf, 1, next++);
		sqlite3_bind_int64(sf, 2, x->plane);
		sqlite3_bind_int64(sf, 5, x->ns);
		sqlite3_bind_text(sf, 6, "shown", -1, SQLITE_STATIC);
		snprintf(detail, sizeof(detail), "an i915_flip_complete of plane %d, object 0x%" PRIx64
			 " whose request is not in the capture", (int)x->plane, x->obj);
		sqlite3_bind_text(sf, 7, detail, -1, SQLITE_TRANSIENT);
		rc = step(db, sf, "a flip", err);
	}
	if (!rc) {
		sqlite3_stmt *t = NULL;
		const char *tail = tie_sql;

		while (!rc && *tail) {
			if (sqlite3_prepare_v2(db, tail, -1, &t, &tail) != SQLITE_OK) {
				rc = nf_writer_sql_error(db, WHO, "tying flips to vblanks", err);
				break;
			}
			if (!t)
				break;
			if (sqlite3_bind_parameter_count(t))
				sqlite3_bind_int64(t, 1, VBLANK_AFTER_NS);
			rc = step(db, t, "tying flips to vblanks", err);
			sqlite3_finalize(t);
		}
	}
out:
	free(used);
	sqlite3_finalize(sd);
	sqlite3_finalize(sp);
	sqlite3_finalize(sf);
	return rc;
}
