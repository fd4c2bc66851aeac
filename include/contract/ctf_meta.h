/*
 * The CTF 1.8 metadata text nftrace's recorder writes, generated from
 * schemas/events.def in one place (core/ctf_meta.c): the CTF writer writes it,
 * and the parser's pre-scan regenerates it from a session's variable parts to
 * tell a session nftrace wrote (read natively) from any other trace.
 */
#ifndef NFTRACE_CTF_META_H
#define NFTRACE_CTF_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One entry of the trace environment (the metadata's `env` block): KEY = an
 * integer (is_int, ival) or a string (sval, not owned). The CTF writer
 * (contract/ctf.h) takes these in its options; the parser's pre-scan reads
 * them back out of a session's metadata.
 */
struct nf_ctf_env_entry {
	const char *key;
	bool is_int;
	int64_t ival;
	const char *sval;
};

/*
 * The whole metadata: uuid_str is the trace (and clock) UUID as 36 lowercase
 * characters; env the environment, one line each ("\tKEY = 123;\n", or a
 * quoted string with '"' and '\\' escaped and control characters as spaces);
 * the CPU clock's frequency and offset; the truth stream's classes only when
 * truth_stream. Returns a malloc'ed string, NULL when out of memory.
 */
char *nf_ctf_meta_render(const char *uuid_str, const struct nf_ctf_env_entry *env, size_t n_env,
			 uint64_t cpu_frequency, uint64_t clock_offset, bool truth_stream);

#ifdef __cplusplus
}
#endif

#endif
