/*
 * nftrace viewer: draws a session's timeline the way GPUView draws native
 * fences (a row per hardware queue, light pink waits, dark pink signals) with
 * cairo, to PNG, SVG or PDF. It reads the timeline through the SQL schema only.
 */
#ifndef NFTRACE_RENDER_H
#define NFTRACE_RENDER_H

#include <stdint.h>

#include "nftrace/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum nf_render_theme { NF_THEME_LIGHT, NF_THEME_DARK };

struct nf_render_options {
	const char *output;        /* file; format from its extension: .png .svg .pdf */
	const char *title;         /* session name shown in the title, may be NULL */
	int width;                 /* pixels (points for PDF/SVG), 0: default */
	int64_t from_ns, to_ns;    /* time window; -1: session start / end */
	const int64_t *queues;     /* only these queues (NULL: all) */
	int n_queues;
	const int64_t *fences;     /* only operations on these fences (NULL: all) */
	int n_fences;
	enum nf_render_theme theme;
};

/* Renders the timeline database at db_path. */
int nf_render(const char *db_path, const struct nf_render_options *opts, struct nf_error *err);

/*
 * Parses a time as a user types it ("12.5ms", "300us", "2s", "1500ns", "42")
 * into nanoseconds; a bare number is nanoseconds. Returns 0 or NF_EINVAL.
 */
int nf_parse_duration(const char *text, int64_t *ns_out, struct nf_error *err);

#ifdef __cplusplus
}
#endif

#endif
