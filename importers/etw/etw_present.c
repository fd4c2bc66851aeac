/*
 * Presents, flips and VSyncs of Windows ETW captures (see etw_present.h).
 * Per thread, the present in progress: started by its first DxgKrnl event,
 * told what it is by the ones that follow (a blit, a flip of a display
 * source and plane, a PresentHistory that hands it to DWM), ended by the
 * present packet the thread queues. Rows are written as presents start and
 * tied at finish, with SQL over queue_packets and the VSyncs kept in a
 * temporary table.
 */
#include "etw_present.h"
#include "contract/errors.h"
#include "contract/timeline_writer.h"
#include "contract/util_hash.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHO "etw: presents"
#define DXGKRNL "802ec45a-1e99-4b83-9920-87c98277ba9d"

enum { PM_UNKNOWN, PM_COPY, PM_COMPOSED, PM_FLIP };
static const char *const mode_name[] = { NULL, "copy", "composed", "flip" };

/* The present in progress on a thread. */
struct ew_open {
	int64_t id;
	int mode;
	bool redirected, history, confirmed, packet;
};

enum { PS_PRESENT, PS_MODE, PS_DISPLAY, PS_PACKET, PS_VSYNC, PS_DISP_NEW, PS_COUNT };

static const char *const ps_sql[PS_COUNT] = {
	[PS_PRESENT] = "INSERT INTO presents(id, display, process, thread, swapchain, present_ns, present_end_ns, "
		       "queue, op, ready_ns, sync_interval, mode, source) VALUES (?1, NULL, ?2, ?3, ?4, ?5, NULL, NULL, "
		       "NULL, NULL, ?6, ?7, ?8)",
	[PS_MODE] = "UPDATE presents SET mode = ?2 WHERE id = ?1",
	[PS_DISPLAY] = "UPDATE presents SET display = ?2, swapchain = 'VidPnSource ' || ?3 || ' layer ' || ?4, "
		       "sync_interval = coalesce(?5, sync_interval) WHERE id = ?1",
	[PS_PACKET] = "INSERT INTO temp.etw_ppk(present, packet, seq) VALUES (?1, ?2, ?3)",
	[PS_VSYNC] = "INSERT INTO temp.etw_vs(ts, seq, frame, display) VALUES (?1, ?2, ?3, ?4)",
	[PS_DISP_NEW] = "INSERT INTO displays(display, adapter, name, crtc, refresh_ns, process) "
			"VALUES (?1, NULL, 'VidPnSource ' || ?2 || ' layer ' || ?3, NULL, NULL, NULL)",
};

struct ew_presents {
	sqlite3 *db;
	sqlite3_stmt *st[PS_COUNT];
	struct nf_u64map open;      /* thread -> index in opens */
	struct ew_open *opens;
	size_t n_opens, cap_opens;
	struct nf_u64map displays;  /* source << 32 | layer -> display */
	int64_t next_present, next_display;
	bool any;
};

static int step(struct ew_presents *p, int id, struct nf_error *err)
{
	int rc = nf_writer_step(p->db, p->st[id], WHO, ps_sql[id], err);

	sqlite3_clear_bindings(p->st[id]); /* the rows bind some columns only when known */
	return rc;
}

struct ew_presents *ew_presents_create(sqlite3 *db, struct nf_error *err)
{
	struct ew_presents *p = calloc(1, sizeof(*p));

	if (!p) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		return NULL;
	}
	p->db = db;
	if (nf_writer_exec(db, WHO, "CREATE TEMP TABLE etw_ppk(present INTEGER PRIMARY KEY, packet INTEGER, seq INTEGER);"
			   "CREATE TEMP TABLE etw_vs(ts INTEGER, seq INTEGER, frame INTEGER, display INTEGER);", err))
		goto fail;
	for (int i = 0; i < PS_COUNT; i++)
		if (sqlite3_prepare_v2(db, ps_sql[i], -1, &p->st[i], NULL) != SQLITE_OK) {
			nf_writer_sql_error(db, WHO, ps_sql[i], err);
			goto fail;
		}
	return p;
fail:
	ew_presents_destroy(p);
	return NULL;
}

void ew_presents_destroy(struct ew_presents *p)
{
	if (!p)
		return;
	for (int i = 0; i < PS_COUNT; i++)
		sqlite3_finalize(p->st[i]);
	nf_u64map_free(&p->open);
	nf_u64map_free(&p->displays);
	free(p->opens);
	free(p);
}

int64_t ew_presents_display(struct ew_presents *p, uint32_t source, uint32_t layer, struct nf_error *err)
{
	uint64_t key = (uint64_t)source << 32 | layer;
	const uint64_t *d = nf_u64map_find(&p->displays, key);
	int64_t id;

	if (d)
		return (int64_t)*d;
	id = p->next_display++;
	sqlite3_bind_int64(p->st[PS_DISP_NEW], 1, id);
	sqlite3_bind_int64(p->st[PS_DISP_NEW], 2, source);
	sqlite3_bind_int64(p->st[PS_DISP_NEW], 3, layer);
	if (step(p, PS_DISP_NEW, err))
		return -1;
	if (nf_u64map_put(&p->displays, key, (uint64_t)id)) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		return -1;
	}
	return id;
}

/* The present in progress on the event's thread, started now when there is none. */
static struct ew_open *open_for(struct ew_presents *p, const struct nf_etwi_event *ev, const char *source,
				const char *swapchain, bool *fresh, struct nf_error *err)
{
	const uint64_t *i = nf_u64map_find(&p->open, ev->tid);
	struct ew_open *o;

	*fresh = false;
	/* one in progress, unless it has its packet and this event starts another */
	if (i && p->opens[*i].id &&
	    !(p->opens[*i].packet && (ev->id == 166 || ev->id == 168 || ev->id == 251)))
		return &p->opens[*i];
	if (!i) {
		if (p->n_opens == p->cap_opens) {
			size_t nc = p->cap_opens ? p->cap_opens * 2 : 16;
			struct ew_open *no = realloc(p->opens, nc * sizeof(*no));

			if (!no) {
				nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
				return NULL;
			}
			p->opens = no;
			p->cap_opens = nc;
		}
		if (nf_u64map_put(&p->open, ev->tid, p->n_opens)) {
			nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
			return NULL;
		}
		i = nf_u64map_find(&p->open, ev->tid);
		p->n_opens++;
	}
	o = &p->opens[*i];
	memset(o, 0, sizeof(*o));
	o->id = ++p->next_present;
	sqlite3_bind_int64(p->st[PS_PRESENT], 1, o->id);
	if (ev->pid)
		sqlite3_bind_int64(p->st[PS_PRESENT], 2, ev->pid);
	sqlite3_bind_int64(p->st[PS_PRESENT], 3, ev->tid);
	sqlite3_bind_text(p->st[PS_PRESENT], 4, swapchain, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(p->st[PS_PRESENT], 5, ev->ns);
	sqlite3_bind_text(p->st[PS_PRESENT], 8, source, -1, SQLITE_STATIC);
	if (step(p, PS_PRESENT, err))
		return NULL;
	p->any = true;
	*fresh = true;
	return o;
}

static int set_mode(struct ew_presents *p, struct ew_open *o, int mode, struct nf_error *err)
{
	if (o->mode == mode)
		return 0;
	o->mode = mode;
	sqlite3_bind_int64(p->st[PS_MODE], 1, o->id);
	sqlite3_bind_text(p->st[PS_MODE], 2, mode_name[mode], -1, SQLITE_STATIC);
	return step(p, PS_MODE, err);
}

int ew_presents_event(struct ew_presents *p, const struct nf_etwi_event *ev, struct nf_error *err)
{
	const struct nf_etwi_dx *d = ev->dxgkrnl > 0 ? ev->dx : NULL; /* NULL: its payload is not decoded */
	struct ew_open *o;
	bool fresh;
	char sc[64];

	if (strcmp(ev->provider, DXGKRNL) != 0)
		return 0;
	/* what starts or shapes a present is the presenting thread's (a VSync DPC is no thread's) */
	if (ev->id != 17 && (!ev->has_ids || !ev->tid))
		return 0;
	switch (ev->id) {
	case 166: /* Blit: the window's back buffer copied */
		if (!d)
			return 0;
		snprintf(sc, sizeof(sc), "hwnd 0x%" PRIx64, d->hwnd);
		if (!(o = open_for(p, ev, "DxgKrnl Blit (166)", sc, &fresh, err)))
			return err->code;
		o->redirected = d->redirected;
		return set_mode(p, o, d->redirected || o->history ? PM_COMPOSED : PM_COPY, err);
	case 171: case 215: { /* PresentHistory(Detailed)Start: a present in progress is handed to DWM */
		const uint64_t *i = nf_u64map_find(&p->open, ev->tid);

		if (!i || !p->opens[*i].id)
			return 0; /* none in progress (a GDI surface's history): not a present of its own */
		o = &p->opens[*i];
		o->history = true;
		return set_mode(p, o, PM_COMPOSED, err);
	}
	case 168: case 251: case 252: { /* Flip, PresentMultiPlaneOverlay, FlipMultiPlaneOverlay */
		if (!(o = open_for(p, ev, ev->id == 168 ? "DxgKrnl Flip (168)" : "DxgKrnl PresentMultiPlaneOverlay (251)",
				   NULL, &fresh, err))) /* a plane names it, when one is seen */
			return err->code;
		int rc = set_mode(p, o, PM_FLIP, err);

		if (rc || !d || !d->has_source || (ev->id == 252 && !fresh && o->confirmed))
			return rc;
		int64_t disp = ew_presents_display(p, d->source, ev->id == 252 ? d->layer : 0, err);

		if (disp < 0)
			return err->code;
		sqlite3_bind_int64(p->st[PS_DISPLAY], 1, o->id);
		sqlite3_bind_int64(p->st[PS_DISPLAY], 2, disp);
		sqlite3_bind_int64(p->st[PS_DISPLAY], 3, d->source);
		sqlite3_bind_int64(p->st[PS_DISPLAY], 4, ev->id == 252 ? d->layer : 0);
		if (d->has_interval)
			sqlite3_bind_int64(p->st[PS_DISPLAY], 5, d->interval);
		o->confirmed = true; /* the first plane names the present's display */
		return step(p, PS_DISPLAY, err);
	}
	case 184: /* Present: the kernel's present ends (after its blit or flip, packet and history) */
		snprintf(sc, sizeof(sc), "process %" PRIu32, ev->pid);
		if (!(o = open_for(p, ev, "DxgKrnl Present (184)", sc, &fresh, err)))
			return err->code;
		if (o->packet)
			o->id = 0; /* done: the thread's next DxgKrnl present event starts another */
		return 0;
	case 17: { /* VSyncDPC: which flip (its submit sequence) it shows */
		if (!d || !d->has_source || !(d->flip_fence >> 32))
			return 0;
		int64_t disp = ew_presents_display(p, d->source, 0, err);

		if (disp < 0)
			return err->code;
		sqlite3_bind_int64(p->st[PS_VSYNC], 1, ev->ns);
		sqlite3_bind_int64(p->st[PS_VSYNC], 2, (int64_t)(d->flip_fence >> 32));
		sqlite3_bind_int64(p->st[PS_VSYNC], 3, d->frame);
		sqlite3_bind_int64(p->st[PS_VSYNC], 4, disp);
		return step(p, PS_VSYNC, err);
	}
	default:
		return 0;
	}
}

int ew_presents_packet(struct ew_presents *p, uint32_t tid, int64_t packet, uint32_t seq, int64_t ns,
		       struct nf_error *err)
{
	const uint64_t *i = nf_u64map_find(&p->open, tid);
	struct ew_open *o;

	(void)ns;
	if (!i || !p->opens[*i].id)
		return 0; /* a present packet of no present seen (before the capture) */
	o = &p->opens[*i];
	if (o->packet)
		return 0; /* its first present packet is the present's */
	o->packet = true;
	sqlite3_bind_int64(p->st[PS_PACKET], 1, o->id);
	sqlite3_bind_int64(p->st[PS_PACKET], 2, packet);
	sqlite3_bind_int64(p->st[PS_PACKET], 3, seq);
	return step(p, PS_PACKET, err);
}

int ew_presents_finish(struct ew_presents *p, struct nf_error *err)
{
	static const char sql[] =
		"CREATE INDEX temp.etw_vs_seq ON etw_vs(seq, ts);"
		/* the frame's GPU work: its present packet, until it completed */
		"UPDATE presents SET queue = (SELECT qp.queue FROM temp.etw_ppk k JOIN queue_packets qp ON qp.id = k.packet "
		"  WHERE k.present = presents.id), "
		"ready_ns = (SELECT qp.end_ns FROM temp.etw_ppk k JOIN queue_packets qp ON qp.id = k.packet "
		"  WHERE k.present = presents.id);"
		"UPDATE presents SET mode = 'unknown' WHERE mode IS NULL;"
		/* flips: from its packet's queueing; shown at the VSync naming its submit sequence */
		"INSERT INTO flips(id, display, present, queued_ns, ready_ns, done_ns, vblank_ns, vblank_seq, status, detail) "
		"SELECT p.id, p.display, p.id, qp.queued_ns, qp.end_ns, v.ts, v.ts, v.frame, "
		"  CASE WHEN v.ts IS NULL THEN 'pending' ELSE 'shown' END, "
		"  CASE WHEN v.ts IS NULL THEN printf('no VSyncDPC named submit sequence %d (FlipFenceId)', k.seq) "
		"       ELSE printf('shown at the VSyncDPC whose FlipFenceId names submit sequence %d', k.seq) END "
		"FROM presents p JOIN temp.etw_ppk k ON k.present = p.id LEFT JOIN queue_packets qp ON qp.id = k.packet "
		"LEFT JOIN temp.etw_vs v ON v.rowid = (SELECT rowid FROM temp.etw_vs w WHERE w.seq = k.seq "
		"  AND w.ts >= coalesce(qp.queued_ns, p.present_ns) ORDER BY w.ts LIMIT 1) "
		"WHERE p.mode = 'flip';"
		/* a flip never shown while a later one of its display was: dropped */
		"UPDATE flips SET status = 'dropped', detail = detail || '; a later flip of its display was shown' "
		"WHERE status = 'pending' AND EXISTS (SELECT 1 FROM flips l WHERE l.display = flips.display "
		"  AND l.status = 'shown' AND l.queued_ns > flips.queued_ns);"
		/* a copy to the front buffer is on screen when its packet completed */
		"INSERT INTO flips(id, display, present, queued_ns, ready_ns, done_ns, vblank_ns, vblank_seq, status, detail) "
		"SELECT p.id, p.display, p.id, qp.queued_ns, qp.end_ns, qp.end_ns, NULL, NULL, "
		"  CASE WHEN qp.end_ns IS NULL THEN 'pending' ELSE 'shown' END, "
		"  'a copy to the front buffer: on screen when its present packet completed (no blank says more)' "
		"FROM presents p JOIN temp.etw_ppk k ON k.present = p.id LEFT JOIN queue_packets qp ON qp.id = k.packet "
		"WHERE p.mode = 'copy';"
		"DROP TABLE temp.etw_ppk; DROP TABLE temp.etw_vs;";

	if (!p->any)
		return nf_writer_exec(p->db, WHO, "DROP TABLE temp.etw_ppk; DROP TABLE temp.etw_vs;", err);
	return nf_writer_exec(p->db, WHO, sql, err);
}
