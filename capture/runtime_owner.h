/*
 * What the engine offers whoever assembles a runtime around it: something the
 * runtime owns on its creator's behalf and closes when it ends. The engine
 * knows nothing of what that is; runtime_env.c attaches the CTF writer of a
 * runtime created from NFTRACE_RECORD_DIR (the engine does not include it, nor
 * the session environment, nor the writer).
 */
#ifndef NF_RUNTIME_OWNER_H
#define NF_RUNTIME_OWNER_H

#include "nftrace/nfence.h"

struct nf_runtime_owner {
	void *ctx;
	/* At nf_runtime_close()/nf_runtime_destroy(), once the runtime has
	 * emitted its last event (it is finished there first unless it failed
	 * or was finished already) and before its engine threads stop.
	 * failure is the runtime's own error (its first one, or the final
	 * finish's), NULL when it ended well. Frees ctx. Returns 0 or a
	 * negative NF_E* code with err filled (err may be NULL). */
	int (*close)(void *ctx, const struct nf_error *failure, struct nf_error *err);
	/* In a process forked from the creator's: frees this copy of ctx
	 * without writing anything (the files belong to the parent). */
	void (*abandon)(void *ctx);
	/* A forked process used the runtime (the first time only): msg is
	 * the line its call returns with NF_ESTATE. May be NULL. */
	void (*forked)(void *ctx, const char *msg);
};

/* Gives rt the owner (ctx and all): rt calls close or abandon exactly once.
 * Call right after nf_runtime_create, before any other call on rt. */
void nf_runtime_set_owner(nf_runtime *rt, const struct nf_runtime_owner *owner);

#endif
