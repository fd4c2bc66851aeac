/*
 * `nftrace record --kernel`: the recorder (a scenario or a program) runs while
 * a private tracefs instance records kernel events; they are appended to the
 * session it wrote as the `kernel` stream. The instance is always removed.
 */
#include "contract/kernel.h"
#include "contract/record.h"

#include <string.h>

struct finish_ctx {
	struct nf_kernel_trace *t;
	struct nf_kernel_stats *kst;
};

/* The kernel stream into the closed session, before it replaces another. */
static int finish_into(void *ctx, const char *dir, struct nf_error *err)
{
	struct finish_ctx *f = ctx;

	return nf_kernel_trace_finish(f->t, dir, f->kst, err);
}

int nf_kernel_record(const struct nf_record_options *ro, const char *events, const char *tracefs,
		     struct nf_record_result *res, struct nf_kernel_stats *kst, struct nf_error *err)
{
	struct nf_kernel_trace_options ko = { 0 };
	struct nf_kernel_trace *t = NULL;
	uint64_t origin;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(kst, 0, sizeof(*kst));
	ko.tracefs = tracefs;
	ko.events = events && strcmp(events, "default") ? events : NULL;
	if ((rc = nf_kernel_trace_start(&ko, &t, &origin, err)))
		return rc;
	/* Interrupted: the session was closed cleanly; the kernel events go in too. */
	struct finish_ctx fc = { t, kst };
	struct nf_record_options o = *ro;

	o.before_commit = finish_into;
	o.before_commit_ctx = &fc;
	rc = o.argv ? nf_record_program(&o, res, err) : nf_record_scenario(&o, res, err);
	nf_kernel_trace_destroy(t);
	return rc;
}
