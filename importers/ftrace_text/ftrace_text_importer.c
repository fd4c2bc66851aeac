/*
 * The ftrace text importer: `nftrace import FILE.txt` converts the text that
 * `trace-cmd report` prints, or tracefs' `trace` file, into a CTF session
 * whose `kernel` stream holds the decoded events (kernel/text.c, through the
 * trace.dat path's decoder). That stream is the kernel importer's: the CTF
 * importer hands its events to the handler the table finds for it, so this
 * source has no timeline code of its own.
 */
#include "../importers_int.h"
#include "contract/errors.h"
#include "contract/kernel.h"

#include <stdio.h>

static int ftrace_text_convert(const char *file, const char *tmp, volatile int *interrupt,
			       struct nf_import_result *res, struct nf_error *err)
{
	struct nf_kernel_stats st;
	int rc = nf_kernel_import_text(file, tmp, interrupt, &st, err);

	if (rc)
		return rc;
	nf_kernel_stats_summary(&st, "ftrace text lines of events", res->summary, sizeof(res->summary));
	snprintf(res->note, sizeof(res->note), "%s", st.note);
	return 0;
}

const struct nf_importer nf_importer_ftrace_text = {
	.name = "ftrace_text",
	.file_is = nf_kernel_text_file_is,
	.file_named = nf_kernel_text_file_named,
	.convert = ftrace_text_convert,
};
