/* nftrace export: a session's timeline as a Perfetto trace or Chrome trace JSON. */
#include "cli.h"
#include "contract/escape.h"
#include "contract/sessiondir.h"

#include "contract/export.h"
#include "contract/frames.h"
#include "contract/render.h"
#include "contract/session.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { O_OUTPUT, O_FROM, O_TO, O_QUEUE, O_FENCE, O_FORMAT };

static const struct nf_cli_option options[] = {
	[O_OUTPUT] = { .name = "output", .short_name = 'o', .arg = "FILE", .flags = NF_OPT_REQUIRED,
		       .complete = NF_COMPLETE_FILE, .exts = "pb|perfetto-trace|json",
		       .help = "file to write (replaced when complete)" },
	NF_CLI_WINDOW_OPTIONS,
	[O_FORMAT] = { .name = "format", .arg = "FORMAT", .values = "perfetto|chrome-json", .flags = NF_OPT_REQUIRED,
		       .help = "perfetto (protobuf) or chrome-json" },
	{ 0 },
};

struct export_state {
	struct nf_export_options eo;
	struct nf_cli_window win;       /* eo's selection: its queues and fences */
};

/* Usage checks, before the session is read or its timeline built. */
static int export_prepare(struct nf_cli *c)
{
	struct export_state *st = c->state;
	struct nf_export_options *eo = &st->eo;
	struct nf_cli_window *win = &st->win;
	struct nf_error err;
	int r;

	nf_error_clear(&err);
	eo->output = nf_cli_get(c, O_OUTPUT);
	if (nf_export_parse_format(nf_cli_get(c, O_FORMAT), &eo->format, &err))
		return nf_cli_usage_error("export", "--format: %s", err.msg);
	if ((r = nf_cli_window(c, O_FROM, win)))
		return r;
	eo->sel = win->sel;
	/* an output inside the session would be read as part of it: refused
	 * before its timeline is built */
	if (nf_session_output_check(c->args[0], eo->output, &err))
		return nf_cli_fail("export", &err);
	return 0;
}

static int export_run(struct nf_cli *c)
{
	struct export_state *st = c->state;
	struct nf_export_options *eo = &st->eo;
	struct nf_export_stats es;
	struct nf_error err;
	char db[NF_CLI_PATH_MAX];

	nf_error_clear(&err);
	/* the timeline with its frames (exported as tracks), computed once and kept */
	if (nf_frames_ensure(c->args[0], NULL, db, sizeof(db), &err) || nf_export(db, eo, &es, &err))
		return nf_cli_fail("export", &err);
	char shown[4200];

	printf("%s: %" PRIu64 " slices (%" PRIu64 " stalls), %" PRIu64 " instants, %" PRIu64
	       " flows, %" PRIu64 " counter values, %" PRIu64 " tracks, %" PRIu64 " bytes",
	       nf_esc_text_buf(shown, sizeof(shown), eo->output, 0), es.slices, es.stalls, es.instants, es.flows, es.counters, es.tracks, es.bytes);
	if (es.skipped)
		printf(" (%" PRIu64 " operations with no time left out)", es.skipped);
	printf("\n");
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_export = {
	.options = options,
	.args = "session DIR",
	.min_args = 1,
	.max_args = 1,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis =
		"nftrace export DIR -o FILE --format perfetto|chrome-json [--from T] [--to T]\n"
		"               [--queue Q]... [--fence F]...\n",
	.description =
		"Writes the session's timeline for Perfetto UI (ui.perfetto.dev: Open trace file),\n"
		"trace_processor or chrome://tracing: a process per adapter with a track per hardware\n"
		"queue, a thread track per CPU thread, each GPU wait and signal a slice from queued to\n"
		"end (the stall nested), CPU waits, a flow from each signal to each wait it released,\n"
		"lost spans and anomalies as instants, lost entries per log as counters; for imported\n"
		"captures also GPU jobs per ring (their dependencies as flows), vblanks, markers, ETW\n"
		"DMA packets per node and VSyncs (--fence leaves these out, --queue all but the\n"
		"queue's DMA packets).\n",
	.state_size = sizeof(struct export_state),
	.prepare = export_prepare,
	.run = export_run,
};
