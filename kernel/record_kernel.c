/*
 * `nftrace record --kernel`: the recorder (a scenario or a program) runs while
 * a private tracefs instance records kernel events; they are appended to the
 * session it wrote as the `kernel` stream. The instance is always removed.
 */
#include "contract/kernel.h"
#include "contract/record.h"

#include <string.h>

int nf_kernel_record(const struct nf_record_options *ro, const char *events, const char *tracefs,
		     struct nf_record_result *res, struct nf_kernel_stats *kst, struct nf_error *err)
{
	struct nf_kernel_trace_options ko = { 0 };
	struct nf_kernel_trace *t = NULL;
	uint64_t origin;
	int rc, rc2;

	memset(res, 0, sizeof(*res));
	memset(kst, 0, sizeof(*kst));
	ko.tracefs = tracefs;
	ko.events = events && strcmp(events, "default") ? events : NULL;
	if ((rc = nf_kernel_trace_start(&ko, &t, &origin, err)))
		return rc;
	rc = ro->argv ? nf_record_program(ro, res, err) : nf_record_scenario(ro, res, err);
	if (rc && rc != NF_EINTR) {
		nf_kernel_trace_destroy(t);
		return rc;
	}
	/* Interrupted: the session was closed cleanly; keep the kernel events too. */
	rc2 = nf_kernel_trace_finish(t, ro->out_dir, kst, rc ? NULL : err);
	nf_kernel_trace_destroy(t);
	return rc ? rc : rc2;
}
