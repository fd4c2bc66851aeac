/*
 * The Linux kernel importer: `nftrace import TRACE.DAT` converts a trace-cmd
 * file into a CTF session whose `kernel` stream holds the decoded events
 * (kernel/, libtracecmd and libtraceevent); the CTF importer hands that
 * stream's events (and those `record --kernel` appends) to kernel_ingest.c,
 * which writes the kernel tables and the dma_fence operations.
 */
#include "kernel_ingest.h"
#include "../importers_int.h"
#include "contract/errors.h"
#include "contract/kernel.h"

#include <stdio.h>
#include <string.h>

static int kernel_stream_event(void **state, sqlite3 *db, struct nf_bulk *bulk, int64_t ns,
			       const struct nf_event *ev, struct nf_error *err)
{
	return nf_timeline_kernel_ingest_event((struct nf_timeline_kernel_ingest **)state, db, bulk, ns, ev, err);
}

static int kernel_stream_finish(void *state, struct nf_error *err)
{
	return nf_timeline_kernel_ingest_finish(state, err);
}

static void kernel_stream_destroy(void *state)
{
	nf_timeline_kernel_ingest_destroy(state);
}

static const struct nf_importer_stream kernel_stream = {
	NF_STREAM_KERNEL, kernel_stream_event, kernel_stream_finish, kernel_stream_destroy,
};

static int kernel_convert(const char *file, const char *tmp, volatile int *interrupt,
			  struct nf_import_result *res, struct nf_error *err)
{
	struct nf_kernel_stats st;
	int rc = nf_kernel_import(file, tmp, interrupt, &st, err);

	if (rc)
		return rc;
	nf_kernel_stats_summary(&st, "kernel records", res->summary, sizeof(res->summary));
	snprintf(res->note, sizeof(res->note), "%s", st.note);
	return 0;
}

const struct nf_importer nf_importer_kernel = {
	.name = "kernel",
	.file_is = nf_kernel_file_is,
	.convert = kernel_convert,
	.stream = &kernel_stream,
};
