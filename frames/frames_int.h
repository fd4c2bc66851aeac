/*
 * nftrace frames, private: the in-memory frames the module computes
 * (frames.c: loading, metrics, writing; frames_gpu.c: each frame's GPU work;
 * frames_path.c: each frame's critical path and its blame).
 */
#ifndef NF_FRAMES_INT_H
#define NF_FRAMES_INT_H

#include "contract/frames.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "contract/analysis.h"
#include "contract/util_hash.h"

/* A time or an id that may be unknown. */
struct fr_opt {
	int64_t v;
	bool known;
};

static inline struct fr_opt fr_some(int64_t v)
{
	return (struct fr_opt){ v, true };
}

static const struct fr_opt fr_none = { 0, false };

struct fr_display {
	int64_t display;
	char name[64];
	double refresh_ns;      /* 0: none */
	bool refresh_stated;    /* else measured from its blanks */
	int64_t *blanks;        /* its blank times, ascending */
	size_t n_blanks, cap_blanks;
};

/* A segment of a frame's critical path (frame_path): numbers only; its words
 * are made when needed (fr_seg_text, and the frame_path view). */
#define FR_NONE INT64_MIN
enum fr_kind { FK_EXECUTE, FK_WAIT, FK_QUEUE, FK_JOB_WAIT, FK_GPU, FK_DISPLAY, FK_CPU, FK_COUNT };
extern const char *const fr_kind_name[FK_COUNT];

struct fr_seg {
	int64_t start, end;
	int64_t queue, thread, display, op, job, fence, value, release_op, by_queue, by_thread;
	int64_t extra;          /* queue: the CPU signal it ended with; job_wait: the job it waited for;
				   display: the blank's number; FR_NONE */
	int32_t ring;           /* index in fr_ctx.rings, -1 */
	uint8_t kind;           /* enum fr_kind */
	uint8_t sub;            /* job_wait: 1 released by the job's start (its scheduled fence);
				   cpu: 1 a marker frame */
};

struct fr_frame {
	int64_t frame;          /* 1, 2, ... */
	struct fr_opt present, marker, display, process, thread;
	char swapchain[128];
	int32_t chain;          /* index of its swap chain */
	int32_t prev;           /* the previous frame of its chain, -1 none */
	int64_t seq;
	int64_t present_ns;
	struct fr_opt present_end, cpu_start, gpu_start, ready, screen, vblank_seq;
	struct fr_opt queue, op;
	struct fr_opt sync_interval;
	const char *status;     /* 'displayed', 'dropped', 'pending', 'unknown' */
	char flip_detail[160];  /* why the flip's blank is unknown, when it is */
	/* GPU work (frames_gpu.c) */
	int64_t busy_ns, wait_ns, items, timed; /* timed: items with a start and an end */
	int64_t last_end;
	bool any_work;
	struct fr_opt last_op, last_job;   /* its work that ended last: a fence_ops row, a job */
	int64_t last_op_end, last_job_end;
	/* results */
	struct fr_opt interval_ns, late, missed, late_ns;
	double refresh_ns;      /* 0: none */
	struct fr_seg *path;
	size_t n_path;
	int32_t blame_seg;      /* index in path, -1 none */
	int32_t blame_long;     /* index in path of the segment blame_ns times (the longest), -1 none */
	struct fr_seg blame_at; /* a copy of that segment (the path is written and freed as it is made) */
	int64_t blame_ns;       /* the time on the path the blame line speaks of */
	char blame[768];
	char *reasons;          /* malloc'ed, '; '-separated */
	size_t reasons_len;
};

/* Per frame and lane: its GPU work there (frame_gpu). */
struct fr_lane_acc {
	int32_t frame, lane;
	int64_t items, first_start, last_end, busy, wait;
	int64_t timed, waits;   /* items with a start and an end; items whose wait is measured */
};

struct fr_lane {
	char name[160];
	struct fr_opt queue;
	char ring[64];
};

struct fr_ctx {
	sqlite3 *db;
	const char *db_path;
	struct nf_error *err;
	struct fr_display *displays;
	size_t n_displays;
	struct fr_frame *frames;
	size_t n_frames, cap_frames;
	int32_t n_chains;
	bool has_jobs, has_dma, has_threads;
	struct nf_u64map thread_process; /* thread -> process (kernel_threads) */
	struct fr_lane *lanes;
	size_t n_lanes, cap_lanes;
	struct fr_lane_acc *accs;
	size_t n_accs, cap_accs;
	struct nf_u64map acc_map;        /* frame << 24 | lane -> index in accs */
	struct nf_analysis *an;          /* the loaded model: fence operation paths, queue names */
	struct nf_analysis *jobs_an;     /* a lazy model for GPU jobs' paths (jobpath.c reads on demand) */
	char (*rings)[64];               /* ring names of job segments */
	size_t n_rings, cap_rings;
	sqlite3_stmt *st_queued;         /* a fence_ops row's queued time (blame) */
	sqlite3_stmt *st_path;           /* frame_path_blocks' insert (frames.c) */
	void *jbuf;                      /* its JSON text (frames.c) */
	struct nf_frames_summary sum;
};

/* frames.c */
int fr_grow(void **arr, size_t *cap, size_t need, size_t sz);
int fr_sql(struct fr_ctx *c, const char *what);
void fr_reason(struct fr_ctx *c, struct fr_frame *f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool fr_col(sqlite3_stmt *s, int col, int64_t *v);
int fr_has_table(sqlite3 *db, const char *name, bool *has);

/* frames_gpu.c: each frame's GPU work from fence_ops, jobs or dma_packets. */
int fr_gpu_work(struct fr_ctx *c);

/* Writes a frame's path (f->path) as its frame_path_blocks row. 0, NF_ESQL, NF_ENOMEM. */
int fr_write_path(struct fr_ctx *c, const struct fr_frame *f);

/* frames_path.c: each frame's critical path and its blame line; each path is
 * written (fr_write_path) and freed once its blame is known. */
int fr_paths(struct fr_ctx *c);
/* A segment in words ("queue 0x40000040 (Render) executing op 3") into buf. */
void fr_seg_text(const struct fr_ctx *c, const struct fr_seg *g, char *buf, size_t len);

#endif
