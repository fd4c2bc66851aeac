/*
 * Private to the HTML report: the state of one page being written (struct
 * html: the connection, the output, the rows, the window and the detail cut)
 * and what its files share: html.c (the entry: meta, window, the page around
 * its data), write.c (JSON values into the page), rows.c (queue, thread and
 * lane rows), ops.c (the GPU operations' summaries and details, CPU waits and
 * signals, anomalies), items.c (the timeline's items, their links, the
 * threads' runs) and frames.c (the frames' display rows, plot and paths).
 */
#ifndef NF_HTML_INT_H
#define NF_HTML_INT_H

#include "contract/html.h"
#include "contract/errors.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Fine histogram of start times, for finding the detail cut. */
#define HIST_BINS 65536
/* Anomalies (lost spans, timestamp marks) written at most. */
#define MAX_ANOMALIES 50000
/* Rows at most (queues + threads + lanes). */
#define MAX_ROWS 20000
/* Item kinds the page keeps (view item_kinds). */
#define MAX_KINDS 16

/* Rows: queues first, then threads (sorted by id), then lanes (view lanes). */
enum row_kind { ROW_QUEUE, ROW_THREAD, ROW_LANE };

struct row {
	enum row_kind kind;
	int64_t id;          /* queue handle, thread id, or a lane's place among the lane rows */
	int64_t adapter, node, engine;
	int64_t process;     /* threads: its process (the timeline's, else of a handle it used), -1 unknown */
	int64_t count;       /* lanes: items on it */
	int own;             /* lanes: 1 a lane of its own (a row of its group), 0 a node's (its node's head) */
	char name[96];       /* queue name, thread's name, lane's label */
	char group[96];      /* queues: their adapter group's title; lanes of their own: their group */
	char pname[96];      /* threads: the process's name when known; lanes: what their items are */
	char noun[48];       /* lanes: what one of their items is */
	char *lane;          /* lanes: lanes.lane (malloc'd) */
	uint32_t *bins;      /* NF_HTML_BINS x 3: waits, signals, CPU waits starting in the bin */
};

/* An item kind (view item_kinds) and what the page wrote of it. */
struct hkind {
	char kind[32], noun[48], plural[48], legend[128];
	char colour[16], edge[16], wait[16];
	const char *shape;   /* "span" (on a lane's row), "line" (across the rows), "tick" (on a thread's row) */
	int64_t n;           /* items written */
	int64_t lo_id, hi_id;
	int cut;             /* more than NF_HTML_MAX_EXTRA: the rest left out */
};

struct html {
	sqlite3 *db;
	FILE *f;
	const struct nf_html_options *o;
	struct nf_error *err;
	int64_t t0, t1, session_end;
	int has_duration;
	char source[64], mode[64], seed[32], scenario[96];
	struct row *rows;
	size_t n_rows, n_queues, threads_end;  /* threads are rows [n_queues, threads_end), lanes after */
	int64_t threads_left_out;  /* threads that only ran, not shown (see nf_html_options) */
	struct hkind kinds[MAX_KINDS];
	int n_kinds;
	int64_t n_links, n_runs;
	char cut_kinds[256];       /* the kinds cut at NF_HTML_MAX_EXTRA, comma-separated */
	/* handle -> process, sorted by handle */
	int64_t (*handles)[2];
	size_t n_handles;
	uint32_t *hist;
	int64_t *hist_id;       /* per histogram bin: lowest and highest operation id in it */
	int64_t lo_id, hi_id;   /* ids of the detailed operations lie in [lo_id, hi_id] */
	int64_t n_ops, n_detail, n_cpu_waits, n_cpu_signals, n_anomalies;
	int64_t cut, next_to;   /* details cover [t0, cut); the next window [cut, next_to) */
	int64_t detail_full;    /* 1 when every operation of the window is detailed */
	char *in_q, *in_f;      /* " AND queue IN (...)" filters or "" */
};

/* The helpers keep their short names inside the module; linked as nf_hw_NAME. */
#define sql_fail nf_hw_sql_fail
#define prepare_owned nf_hw_prepare_owned
#define copy_col nf_hw_copy_col
#define put nf_hw_put
#define put_i64 nf_hw_put_i64
#define put_big nf_hw_put_big
#define put_col nf_hw_put_col
#define put_time nf_hw_put_time
#define put_str nf_hw_put_str
#define put_json nf_hw_put_json
#define build_rows nf_hw_build_rows
#define find_row nf_hw_find_row
#define load_handles nf_hw_load_handles
#define handle_process nf_hw_handle_process
#define write_rows nf_hw_write_rows
#define pass_counts nf_hw_pass_counts
#define find_cut nf_hw_find_cut
#define pass_details nf_hw_pass_details
#define write_cpu nf_hw_write_cpu
#define write_anomalies nf_hw_write_anomalies
#define write_gaps nf_hw_write_gaps
#define load_kinds nf_hw_load_kinds
#define write_items nf_hw_write_items
#define write_kinds nf_hw_write_kinds
#define write_frames nf_hw_write_frames

/* html.c */
int sql_fail(struct html *h, const char *what);
int prepare_owned(struct html *h, char *sql, sqlite3_stmt **st, const char *what);
void copy_col(char *dst, size_t len, sqlite3_stmt *st, int col);

/* write.c */
void put(struct html *h, const char *s);
void put_i64(struct html *h, int64_t v);
void put_big(struct html *h, int64_t v);
void put_col(struct html *h, sqlite3_stmt *st, int col);
void put_time(struct html *h, sqlite3_stmt *st, int col);
void put_str(struct html *h, const char *s);
void put_shell_word(struct html *h, const char *path);
void put_json(struct html *h, const char *json);

/* rows.c */
int build_rows(struct html *h);
int64_t find_row(const struct html *h, enum row_kind kind, int64_t id, size_t *hint);
int load_handles(struct html *h);
int64_t handle_process(const struct html *h, int64_t handle);
void write_rows(struct html *h);

/* ops.c */
int pass_counts(struct html *h);
void find_cut(struct html *h, int64_t max_ops);
int pass_details(struct html *h, int64_t max_ops);
int write_cpu(struct html *h);
int write_anomalies(struct html *h);
int write_gaps(struct html *h);

/* items.c */
int load_kinds(struct html *h);
int write_items(struct html *h);
void write_kinds(struct html *h);

/* frames.c: the display rows, the frame plot and the frames' paths */
int write_frames(struct html *h);

#endif
