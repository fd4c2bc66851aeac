/*
 * Private to the viewer: what an imported Windows ETW capture adds to the
 * picture (the ETW block of schemas/timeline.sql), GPUView's way: each node
 * (engine) header row carries the node's DMA packets (dma_packets, from
 * submission to the hardware to completion), the context rows below it their
 * waits and signals as for any queue, and every VSync is a thin vertical line
 * across the rows.
 */
#ifndef NF_VIEWER_ETW_ROWS_H
#define NF_VIEWER_ETW_ROWS_H

#include "viewer.h"

/* Names the node rows of an ETW capture from etw_nodes ("Node N" or the
 * NodeMetadata's friendly name). Returns 0 or NF_ESQL. */
int nf_render_etw_node_names(sqlite3 *db, struct nf_render_layout *lay, struct nf_error *err);

/* Adds the DMA packet boxes and the VSync lines (nothing unless lay->etw).
 * Returns 0 or a negative NF_E* code (NF_ESQL, NF_ENOMEM). */
int nf_render_collect_etw(sqlite3 *db, const struct nf_render_options *opts,
			  const struct nf_render_layout *lay, struct nf_render_scene *s,
			  struct nf_error *err);

#endif
