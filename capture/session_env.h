/*
 * The session's CTF environment (tool version, source, seed, clocks, ...),
 * written the same way by `nftrace record` and by a program recording itself.
 */
#ifndef NF_SESSION_ENV_H
#define NF_SESSION_ENV_H

#include "contract/ctf.h"
#include "nftrace/nfence.h"

/* Creates the CTF writer for a session recorded with this runtime config.
 * adapters (n_adapters of them, may be 0) are the adapters known before the
 * run (a scenario's); a program's appear only as AdapterStart events. */
int nf_session_writer_create(const char *dir, const struct nf_runtime_config *cfg,
			     const char *source, const struct nf_adapter_desc *const *adapters,
			     size_t n_adapters, struct nf_ctf_writer **out, struct nf_error *err);

#endif
