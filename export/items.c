/*
 * The items of the timeline (views items, lanes, item_kinds, item_links), in
 * one pass, kind after kind in id order. An item's part from queued to
 * started is a slice "KIND wait" on its lane's "LANE waiting" track ("KIND
 * queued", an instant, when it never started); its part from started to ended
 * is a slice named by its label on its lane's track ("LABEL WHAT", as the view
 * lanes has them, or WHAT alone without a label); a part with one time only,
 * or an item whose end is unknown or only bounded, is an instant at the time
 * known (no end is invented); a point in time is an instant. An item on no
 * lane is on its thread's track (the session's when it names none). A lane's
 * tracks are in its adapter's process when the timeline has that adapter,
 * else in a process of its group ("GPU jobs", "Display"). The category is
 * the item's kind, the arguments its detail's fields in their order (null
 * ones left out; {"hex": n} as a handle). Each item link whose two items are
 * written is a flow, id = items_flow_base + its link (above every
 * operation's flow), from the item waited for (its run, else its queued part)
 * to the item that waited (its queued part, else its run). The queue and
 * fence filters keep the items of those queues and fences.
 */
#include "walk.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A lane's track (wait 0) or its queued parts' (wait 1), found by the lane's key. */
struct xgroup {
	char *key;
	int wait;
	struct lanes lanes;
};

/* Group processes ("GPU jobs", "Display"), by lanes.grp_ord. */
#define GROUPS_MAX 16
#define PID_GROUP0 2

/* A string kept for the whole export (argument keys, categories): writers may know it by its address. */
static const char *keep(struct exporter *x, const char *s)
{
	for (size_t i = 0; i < x->n_kept; i++)
		if (!strcmp(x->kept[i], s))
			return x->kept[i];
	if (x->n_kept == x->cap_kept) {
		size_t ncap = x->cap_kept ? x->cap_kept * 2 : 32;
		char **nk = realloc(x->kept, ncap * sizeof(*nk));

		if (!nk)
			return NULL;
		x->kept = nk;
		x->cap_kept = ncap;
	}
	if (!(x->kept[x->n_kept] = strdup(s)))
		return NULL;
	return x->kept[x->n_kept++];
}

/* The process of a lane's tracks: its adapter's, else its group's (described on first use). */
static int lane_process(struct exporter *x, sqlite3_stmt *st, const struct nf_xtrack **out)
{
	struct xadapter *a = col_null(st, 12) ? NULL : find_adapter(x, sqlite3_column_int64(st, 12));
	int64_t g = col_or(st, 14, GROUPS_MAX - 1);
	struct nf_xtrack *t;
	int ret;

	if (a) {
		if ((ret = adapter_process(x, a)) < 0)
			return ret;
		*out = &a->t;
		return 0;
	}
	if (g < 0 || g >= GROUPS_MAX)
		g = GROUPS_MAX - 1;
	t = &x->group_proc[g];
	if (!t->uuid) {
		const char *name = col_null(st, 13) ? "items" : (const char *)sqlite3_column_text(st, 13);

		if (!(x->group_name[g] = strdup(name)))
			return oom(x);
		t->kind = NF_XT_PROCESS;
		t->uuid = x->next_uuid++;
		t->pid = PID_GROUP0 + (int32_t)g;
		t->sort = 999000 + (int32_t)g;
		t->name = x->group_name[g];
		if ((ret = describe(x, t)) < 0)
			return ret;
	}
	*out = t;
	return 0;
}

/*
 * The track of a lane (wait: of its queued parts) for a part from start to
 * end (lanes when they overlap). Columns of st: 2 lane, 10 lane label, 11
 * what its items are, 12 adapter, 13 group, 14 group's place (frames.c reads
 * its rows in the same columns).
 */
int group_track(struct exporter *x, sqlite3_stmt *st, int wait, int64_t start, int64_t end,
		const struct nf_xtrack **out)
{
	const char *key = (const char *)sqlite3_column_text(st, 2);
	struct xgroup *g = NULL;
	int ret;

	for (size_t i = 0; i < x->n_groups && !g; i++)
		if (x->groups[i].wait == wait && !strcmp(x->groups[i].key, key))
			g = &x->groups[i];
	if (!g) {
		const char *label = col_null(st, 10) ? NULL : (const char *)sqlite3_column_text(st, 10);
		const char *what = col_null(st, 11) ? "items" : (const char *)sqlite3_column_text(st, 11);
		const struct nf_xtrack *parent = NULL;
		struct nf_xtrack base;
		char nm[NAME_MAX_LEN + 64];

		if ((ret = lane_process(x, st, &parent)) < 0)
			return ret;
		if (x->n_groups == x->cap_groups) {
			size_t ncap = x->cap_groups ? x->cap_groups * 2 : 16;
			struct xgroup *ng = realloc(x->groups, ncap * sizeof(*ng));

			if (!ng)
				return oom(x);
			x->groups = ng;
			x->cap_groups = ncap;
		}
		if (wait)
			snprintf(nm, sizeof(nm), "%.*s%swaiting", NAME_MAX_LEN, label ? label : "", label ? " " : "");
		else
			snprintf(nm, sizeof(nm), "%.*s%s%.*s", NAME_MAX_LEN, label ? label : "", label ? " " : "", 48, what);
		g = &x->groups[x->n_groups];
		memset(g, 0, sizeof(*g));
		g->wait = wait;
		g->key = strdup(key);
		g->lanes.name = strdup(nm);
		x->n_groups++;
		if (!g->key || !g->lanes.name)
			return oom(x);
		memset(&base, 0, sizeof(base));
		base.kind = NF_XT_PLAIN;
		base.parent = parent->uuid;
		base.pid = parent->pid;
		base.tid = new_tid(x, base.pid);
		base.sort = (int32_t)x->n_groups;
		if ((ret = lanes_add(x, &g->lanes, &base)) < 0)
			return ret;
	}
	return lanes_pick(x, &g->lanes, start, end, out);
}

void items_release(struct exporter *x)
{
	for (size_t i = 0; i < x->n_groups; i++) {
		free(x->groups[i].key);
		lanes_release(&x->groups[i].lanes);
	}
	free(x->groups);
	for (int i = 0; i < GROUPS_MAX; i++)
		free(x->group_name[i]);
	for (size_t i = 0; i < x->n_kept; i++)
		free(x->kept[i]);
	free(x->kept);
}

/* An item's fields as arguments: the args of e from detail (kept in buf until e is written). */
struct args_buf {
	char *s[NF_XARGS_MAX];
};

static void args_free(struct args_buf *b)
{
	for (int i = 0; i < NF_XARGS_MAX; i++) {
		free(b->s[i]);
		b->s[i] = NULL;
	}
}

static int item_args(struct exporter *x, sqlite3_stmt *js, const char *detail, struct nf_xevent *e,
		     struct args_buf *b)
{
	int rc;

	if (!detail)
		return 0;
	sqlite3_reset(js);
	sqlite3_bind_text(js, 1, detail, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(js)) == SQLITE_ROW && e->n_args < NF_XARGS_MAX) {
		const char *type = (const char *)sqlite3_column_text(js, 1);
		const char *key = (const char *)sqlite3_column_text(js, 0);
		int i = e->n_args;

		if (!type || !key || !strcmp(type, "null"))
			continue;
		if (!(key = keep(x, key)))
			return oom(x);
		if (!strcmp(type, "integer")) {
			arg_int(e, key, sqlite3_column_int64(js, 2));
		} else if (!strcmp(type, "object")) {
			if (col_null(js, 3))
				continue;
			arg_hex(e, key, sqlite3_column_int64(js, 3));
		} else {
			const char *v = (const char *)sqlite3_column_text(js, 2);

			if (!(b->s[i] = strdup(v ? v : "")))
				return oom(x);
			arg_str(e, key, b->s[i]);
		}
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return nf_error_set(x->err, NF_ESQL, "reading items' detail: %s", sqlite3_errmsg(x->db2));
	return 0;
}

/* The link cursors of one kind: links out of its items (by dep id) and into them (by id). */
static int links_open(struct exporter *x, const char *kind, struct edge_cursor *by_dep, struct edge_cursor *by_item)
{
	static const char q[] = "SELECT d.%s, d.link + %lld FROM item_links d "
				"JOIN items a ON a.kind = d.dep_kind AND a.id = d.dep_id "
				"JOIN items b ON b.kind = d.kind AND b.id = d.id WHERE d.%s = %Q%s%s ORDER BY 1, 2";
	sqlite3_stmt *st = NULL;
	int any = 0, ret;

	sqlite3_finalize(by_dep->st);
	sqlite3_finalize(by_item->st);
	memset(by_dep, 0, sizeof(*by_dep));
	memset(by_item, 0, sizeof(*by_item));
	by_dep->done = by_item->done = 1;
	if (!has_table(x->db, "item_links"))
		return 0;
	if (sqlite3_prepare_v2(x->db, "SELECT 1 FROM item_links WHERE kind = ?1 OR dep_kind = ?1 LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK)
		return sql_fail(x, "reading item_links");
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	any = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (!any)
		return 0;
	if ((ret = cursor_open(x->err, by_dep, x->db2,
			       sqlite3_mprintf(q, "dep_id", (long long)x->items_flow_base - 1, "dep_kind", kind,
					       x->item_pred_a, x->item_pred_b))) < 0)
		return ret;
	return cursor_open(x->err, by_item, x->db3,
			   sqlite3_mprintf(q, "id", (long long)x->items_flow_base - 1, "kind", kind, x->item_pred_a,
					   x->item_pred_b));
}

/* The item's name (its label, cut at NAME_MAX_LEN bytes, not inside a UTF-8 sequence). */
static void item_name(char *nm, size_t len, const char *label)
{
	if (snprintf(nm, len, "%s", label) >= (int)len) {
		size_t n = len - 1;  /* label[n]: the first byte left out */

		while (n > 0 && ((unsigned char)label[n] & 0xc0) == 0x80)
			n--;
		nm[n] = '\0';
	}
}

/*
 * One part of an item (wait: its queued part, on the lane's waiting track;
 * else its run) from a to b as an event named name, with its detail's
 * arguments and the flows out of it (fout) and into it (fin), each NULL for
 * none. Columns of st as pass_items reads them.
 */
static int emit_part(struct exporter *x, sqlite3_stmt *st, sqlite3_stmt *js, struct args_buf *ab, int wait, int64_t a,
		     int64_t b, int instant, const char *name, const char *cat, const struct flowbuf *fout,
		     const struct flowbuf *fin)
{
	struct nf_xevent e;
	int ret;

	memset(&e, 0, sizeof(e));
	e.stall_ts = -1;
	e.instant = instant;
	ret = !col_null(st, 2) ? group_track(x, st, wait, a, b, &e.track)
	      : col_null(st, 3) ? session_track(x, a, b, &e.track)
	      : thread_track(x, sqlite3_column_int64(st, 3), a, b, &e.track);
	if (ret < 0)
		return ret;
	e.ts = a;
	e.end = b;
	e.name = name;
	e.cat = cat;
	if ((ret = item_args(x, js, (const char *)sqlite3_column_text(st, 9), &e, ab)) < 0)
		return ret;
	if (fout) {
		e.flows_out = fout->v;
		e.n_flows_out = fout->n;
	}
	if (fin) {
		e.flows_in = fin->v;
		e.n_flows_in = fin->n;
	}
	ret = emit(x, &e);
	args_free(ab);
	return ret;
}

int pass_items(struct exporter *x)
{
	struct flowbuf fout = { x->err, NULL, 0, 0 }, fbin = { x->err, NULL, 0, 0 };
	struct edge_cursor by_dep, by_item;
	struct args_buf ab;
	sqlite3_stmt *st = NULL, *js = NULL;
	char *sql, cur_kind[64] = "";
	int rc, ret = 0;

	memset(&by_dep, 0, sizeof(by_dep));
	memset(&by_item, 0, sizeof(by_item));
	memset(&ab, 0, sizeof(ab));
	if (!has_table(x->db, "items"))
		return 0;
	sql = sqlite3_mprintf("SELECT i.kind, i.id, i.lane, i.thread, i.queued_ns, i.start_ns, i.end_ns, i.instant, "
			      "i.label, i.detail, l.label, l.what, l.adapter, l.grp, l.grp_ord FROM items i "
			      "JOIN item_kinds k ON k.kind = i.kind LEFT JOIN lanes l ON l.lane = i.lane WHERE 1%s "
			      "ORDER BY k.ord, i.id",
			      x->item_pred_i);
	if ((ret = prepare_owned(x, x->db, sql, &st, "reading items")) < 0)
		return ret;
	if (sqlite3_prepare_v2(x->db2, "SELECT key, type, atom, CASE WHEN type = 'object' THEN json_extract(value, '$.hex') END FROM json_each(?1)", -1,
			       &js, NULL) != SQLITE_OK) {
		ret = nf_error_set(x->err, NF_ESQL, "reading items' detail: %s", sqlite3_errmsg(x->db2));
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		int64_t id = sqlite3_column_int64(st, 1);
		int has_sub = !col_null(st, 4), has_start = !col_null(st, 5), has_fin = !col_null(st, 6);
		int64_t sub = sqlite3_column_int64(st, 4), start = sqlite3_column_int64(st, 5);
		int64_t done = sqlite3_column_int64(st, 6);
		int has_run = has_start || has_fin, has_wait = has_sub;
		const char *label = col_null(st, 8) ? kind : (const char *)sqlite3_column_text(st, 8);
		const char *cat;
		char nm[NAME_MAX_LEN + 1], wname[96];
	
		if (!kind)
			continue;
		if (strncmp(kind, cur_kind, sizeof(cur_kind))) {
			snprintf(cur_kind, sizeof(cur_kind), "%s", kind);
			if ((ret = links_open(x, cur_kind, &by_dep, &by_item)) < 0)
				goto out;
		}
		if (!(cat = keep(x, cur_kind))) {
			ret = oom(x);
			goto out;
		}
		if ((ret = cursor_collect(&fout, &by_dep, id)) < 0 || (ret = cursor_collect(&fbin, &by_item, id)) < 0)
			goto out;
		if (has_wait) {
			int64_t a = sub, b = has_start ? start : sub;

			snprintf(wname, sizeof(wname), "%.60s %s", cur_kind, has_start ? "wait" : "queued");
			/* its flows: into it, and out of it when the item never ran */
			if ((ret = emit_part(x, st, js, &ab, 1, b < a ? b : a, b < a ? a : b, !has_start, wname, cat,
					     !has_run ? &fout : NULL, &fbin)) < 0)
				goto out;
		}
		if (has_run) {
			int64_t a = has_start ? start : done, b = has_fin ? done : a;

			item_name(nm, sizeof(nm), label);
			/* its flows: out of it, and into it when it had no queued part */
			if ((ret = emit_part(x, st, js, &ab, 0, b < a ? b : a, b < a ? start : b,
					     sqlite3_column_int(st, 7) || !(has_start && has_fin), nm, cat, &fout,
					     !has_wait ? &fbin : NULL)) < 0)
				goto out;
		}
	}
	if (rc != SQLITE_DONE)
		ret = sql_fail(x, "reading items");
out:
	args_free(&ab);
	sqlite3_finalize(js);
	sqlite3_finalize(st);
	sqlite3_finalize(by_dep.st);
	sqlite3_finalize(by_item.st);
	free(fout.v);
	free(fbin.v);
	return ret;
}

/* The first flow id of item links: above every fence_ops flow (wait id + 1). */
int items_flows_base(struct exporter *x)
{
	sqlite3_stmt *st;
	int ret = 0;

	if (sqlite3_prepare_v2(x->db, "SELECT coalesce(max(id), 0) FROM fence_ops", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(x, "reading fence_ops");
	if (sqlite3_step(st) == SQLITE_ROW)
		x->items_flow_base = sqlite3_column_int64(st, 0) + 2;
	else
		ret = sql_fail(x, "reading fence_ops");
	sqlite3_finalize(st);
	return ret;
}
