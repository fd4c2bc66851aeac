/*
 * nftrace frames: what decided each frame (frames/, `nftrace frames`).
 *
 * From the generic tables of a timeline (schemas/timeline.sql: displays,
 * presents, flips, vblanks/vsyncs through the display_vblanks view, markers,
 * and the GPU work of fence_ops, jobs and dma_packets) it writes frames (one
 * row per present, or per user marker matching a regular expression, with
 * PresentMon's metrics), frame_gpu (each frame's GPU work per queue, ring or
 * node) and frame_path (each frame's critical path, from the previous frame's
 * present to the blank it was shown at, adding up exactly), and a one-line
 * blame per frame. One algorithm for every source: the importers only put
 * presents, flips and blanks into the timeline.
 */
#ifndef NF_CONTRACT_FRAMES_H
#define NF_CONTRACT_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the frames tables' content (meta frames_version): a timeline
 * whose frames were computed by another version gets them again. */
#define NF_FRAMES_VERSION 5

struct nf_frames_options {
	/* A POSIX extended regular expression: every user marker (markers.text)
	 * it matches starts a frame (SteamVR's "\[Compositor\] Present\(\)").
	 * NULL: no marker frames, unless the frames were last computed with one
	 * (meta frames_marker), which is then kept. "" forgets the marker. */
	const char *frame_marker;
};

/* What a computation found. */
struct nf_frames_summary {
	int64_t frames, displayed, dropped, pending, late;
	int64_t presents, flips, markers; /* the inputs it read */
};

/*
 * Makes sure the session's timeline (nf_timeline_ensure) holds frames,
 * frame_gpu and frame_path of this NF_FRAMES_VERSION and this frame marker,
 * computing them when missing or stale, under the timeline's lock (several
 * processes asking at once compute once). Writes the database path to
 * db_path. opts may be NULL (no marker). Returns 0; any code of
 * nf_timeline_ensure; NF_EINVAL (a frame marker that is not a valid regular
 * expression: the message says why); NF_ESQL; NF_EIO (lock); NF_ENOMEM.
 */
int nf_frames_ensure(const char *session_dir, const struct nf_frames_options *opts, char *db_path,
		     size_t db_path_len, struct nf_error *err);

/*
 * Computes the frames of the timeline at db_path (opened read-write; the
 * caller holds whatever lock it needs) into its frames, frame_gpu and
 * frame_path tables (emptied first) in one transaction, and sets meta
 * frames_version and frames_marker. *sum (may be NULL) gets what it found.
 * Returns 0, NF_EINVAL (bad regular expression), NF_ENOENT (no such file),
 * NF_EFORMAT (not a timeline of this version: a table is missing), NF_ESQL,
 * NF_ENOMEM.
 */
int nf_frames_compute(const char *db_path, const struct nf_frames_options *opts,
		      struct nf_frames_summary *sum, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
