/*
 * nftrace CTF writer: writes events as a CTF 1.8 trace directory (a TSDL
 * `metadata` file generated from schemas/events.def, and one binary stream file
 * per stream), directly, the way LTTng and barectf do.
 *
 * Crash safety: the metadata is renamed into place complete before the first
 * event. Events go out in whole packets to a committer process (forked by
 * nf_ctf_writer_create, reaped by nf_ctf_writer_close) that appends them to the
 * stream files; if the calling process is killed, even by SIGKILL, the
 * committer drops any packet it got only in part, syncs and exits, so the
 * trace stays readable up to its last complete packet. A failed write (disk
 * full, file size limit) cuts the stream back to its last complete packet, and
 * once the committer's report is in (the writer reads it at least every 2 MiB
 * of packets, and at each flush and close), emit, flush and close return
 * NF_EIO with the file and the offset.
 * (A writer from nf_ctf_writer_open_append writes in-process, one write()
 * per packet, with no committer.)
 */
#ifndef NFTRACE_CTF_H
#define NFTRACE_CTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/ctf_meta.h"
#include "contract/errors.h"
#include "nftrace/events.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nf_ctf_writer_options {
	uint64_t cpu_frequency;            /* CTF clock frequency */
	uint64_t clock_offset;             /* ticks of the clock at the origin, 0 */
	bool truth_stream;                 /* also open the ground-truth stream */
	uint32_t packet_size;              /* bytes per packet, 0: default (256 KiB) */
	const struct nf_ctf_env_entry *env;/* trace environment */
	size_t n_env;
};

struct nf_ctf_writer;

/* Creates DIR (must not exist, or be empty), writes the metadata and starts
 * the committer process. The committer holds an exclusive flock(2) on
 * DIR/metadata until the session files are final (even when the caller was
 * killed): nf_ctf_session_wait waits for it. Returns 0 and *out (the
 * caller's: nf_ctf_writer_close); NF_EINVAL (no directory or clock frequency,
 * a name too long); NF_EEXIST (DIR is a file or a directory that is not
 * empty); NF_EIO (DIR or a file cannot be created or written, the committer
 * cannot start); NF_ENOMEM. */
int nf_ctf_writer_create(const char *dir, const struct nf_ctf_writer_options *opts,
			 struct nf_ctf_writer **out, struct nf_error *err);

/* Opens a session this writer created earlier to add a stream it has not
 * written yet (the `kernel` stream of `nftrace record --kernel`): takes the
 * trace UUID from DIR/metadata and writes no metadata. The metadata declares
 * every stream but `truth` unconditionally. Emitting into a stream whose file
 * already exists fails at its first flush. Returns 0, NF_ENOENT, NF_EIO,
 * NF_EFORMAT (not our metadata) or NF_ENOMEM. */
int nf_ctf_writer_open_append(const char *dir, struct nf_ctf_writer **out, struct nf_error *err);

/* Waits until no committer writes the session in DIR any more (a shared
 * flock on DIR/metadata). Returns 0, or NF_ENOENT when there is no metadata. */
int nf_ctf_session_wait(const char *dir, struct nf_error *err);

/* Appends an event (copied: ev is borrowed for the call). Timestamps must not
 * decrease within a stream. Returns 0; NF_EINVAL (an unknown event id, or a
 * timestamp before the stream's previous one); NF_EIO once a
 * packet could not be written (see above); NF_ENOMEM. The first error is
 * kept (nf_ctf_writer_error) and returned by every later call. Not
 * thread-safe: one thread at a time per writer (the runtime calls its sink
 * under its lock). */
int nf_ctf_writer_emit(struct nf_ctf_writer *w, const struct nf_event *ev);

/* The writer as an event sink for the runtime. */
struct nf_event_sink nf_ctf_writer_sink(struct nf_ctf_writer *w);

/* Flushes the current packets (ends them early) and hands them to the
 * committer. Returns 0, or NF_EIO / NF_ENOMEM as emit. */
int nf_ctf_writer_flush(struct nf_ctf_writer *w);

/* Counters, for the progress line. */
struct nf_ctf_writer_stats {
	uint64_t events;
	uint64_t bytes;
	uint64_t packets;
};
/* Copies the counters into *st; never fails. */
void nf_ctf_writer_get_stats(const struct nf_ctf_writer *w, struct nf_ctf_writer_stats *st);

/* The first error the writer hit (its emit returns only the code): borrowed,
 * valid until close; code NF_OK when there was none. */
const struct nf_error *nf_ctf_writer_error(const struct nf_ctf_writer *w);

/* Ends the session and frees the writer (w is invalid afterwards, whatever
 * the result): flushes the last packets, waits for the committer to write
 * them, syncs and closes the stream files and marks the recording ended in
 * the metadata. Returns 0, or the first error seen while writing or here
 * (NF_EIO with the file and the offset: disk full, a file size limit), with
 * err filled. NULL: returns 0. */
int nf_ctf_writer_close(struct nf_ctf_writer *w, struct nf_error *err);

/* Frees a writer in a process forked after it was created: nothing is
 * written, flushed or sent (the files, the committer and its socket are the
 * parent's); only this process's descriptors and memory go. NULL: no-op. */
void nf_ctf_writer_abandon(struct nf_ctf_writer *w);

/* Generates the TSDL metadata text for these options (malloc'd; NULL on ENOMEM). */
char *nf_ctf_metadata_text(const struct nf_ctf_writer_options *opts, const char *uuid_str);

#ifdef __cplusplus
}
#endif

#endif
