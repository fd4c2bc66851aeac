/*
 * The recorder behind `nftrace record`: prepares the session directory, runs a
 * scenario through a runtime whose sink is the CTF writer (or runs a program
 * that records itself through NFTRACE_RECORD_DIR), reports progress to the
 * caller's callback, and closes the session cleanly on SIGINT. A session that
 * replaces another (--force) is recorded beside it and swapped in when
 * complete (contract/sessiondir.h): a failed recording keeps the old one.
 */
#define _GNU_SOURCE /* pipe2 */
#include "contract/record.h"
#include "contract/errors.h"

#include "contract/ctf.h"
#include "contract/sessiondir.h"
#include "scenario.h"
#include "session_env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int nf_record_prepare_dir(const char *dir, bool force, struct nf_error *err)
{
	/* Everything in a session is checked first (core/session_dir.c): any
	 * entry nftrace does not write refuses the whole replacement before a
	 * single file is removed; links with our names are unlinked, never
	 * followed. */
	int kind = nf_session_dir_target(dir, force, err);

	if (kind <= 0)
		return kind;
	return nf_session_dir_clear(dir, (enum nf_session_kind)kind, err);
}

struct progress_ctx {
	const struct nf_record_options *opts;
	struct nf_ctf_writer *w;
	nf_runtime *rt;
};

static void report_progress(const struct progress_ctx *pc, uint64_t ops, bool done)
{
	struct nf_ctf_writer_stats ws;
	struct nf_runtime_stats rs;

	if (!pc->opts->progress)
		return;
	nf_ctf_writer_get_stats(pc->w, &ws);
	nf_runtime_get_stats(pc->rt, &rs);
	struct nf_record_progress p = { ops, ws.events, ws.bytes, rs.log_entries_lost, done };
	pc->opts->progress(pc->opts->progress_ctx, &p);
}

static bool interrupted(const struct nf_record_options *opts)
{
	return opts->interrupted && *opts->interrupted;
}

static int progress_tick(void *ctx, uint64_t ops)
{
	struct progress_ctx *pc = ctx;

	if (interrupted(pc->opts))
		return NF_EINTR;
	report_progress(pc, ops, false);
	return 0;
}

/*
 * Where a recording goes (core/aside.c's rule): a session that replaces
 * another is recorded beside it (DIR.record-XXXXXX) and swapped in when
 * complete; with nothing to replace it is recorded in DIR itself, so that a
 * killed recorder leaves what it wrote (the temporary made to check DIR goes
 * at once).
 */
struct rec_target {
	struct nf_aside a;
	bool replace;     /* a.tmp replaces a session */
	const char *dir;  /* where to write: a.tmp or a.out */
};

static int record_begin(const struct nf_record_options *opts, struct rec_target *t, struct nf_error *err)
{
	int rc = nf_aside_begin(opts->out_dir, opts->force, "record", &t->a, err);

	if (rc)
		return rc;
	t->replace = t->a.old != NF_SESSION_NONE;
	if (!t->replace)
		nf_aside_abort(&t->a);
	t->dir = t->replace ? t->a.tmp : t->a.out;
	return 0;
}

/* An error names DIR, not the temporary that is about to go. */
static void name_dir(const struct rec_target *t, struct nf_error *err)
{
	char msg[NF_ERROR_MSG_MAX], tmp[sizeof(t->a.tmp)];
	char *at;

	snprintf(tmp, sizeof(tmp), "%s", t->a.tmp);
	if (!err || !err->code || !t->replace || !tmp[0] || !(at = strstr(err->msg, tmp)))
		return;
	if (snprintf(msg, sizeof(msg), "%.*s%s%s", (int)(at - err->msg), err->msg, t->a.out, at + strlen(tmp)) >= 0)
		memcpy(err->msg, msg, sizeof(msg));
}

/*
 * The end of a recording in t->dir: a finished or interrupted one (closed
 * cleanly) gets the caller's last word (opts->before_commit: the kernel
 * stream) and is swapped in; a failed one is removed, the previous session
 * kept (written in DIR itself: what was written stays). Returns rc, or the
 * first error of the hook and the swap.
 */
static int record_end(struct rec_target *t, const struct nf_record_options *opts, int rc, bool interrupted,
		      struct nf_error *err)
{
	if ((!rc || interrupted) && opts->before_commit) {
		int r2 = opts->before_commit(opts->before_commit_ctx, t->dir, rc ? NULL : err);

		if (!rc)
			rc = r2;
	}
	if (!t->replace)
		return rc;
	if (rc && !interrupted) {
		name_dir(t, err);
		nf_aside_abort(&t->a);
		return rc;
	}
	int c = nf_aside_commit(&t->a, rc ? NULL : err);

	return rc ? rc : c;
}

int nf_record_scenario(const struct nf_record_options *opts, struct nf_record_result *res,
		       struct nf_error *err)
{
	struct rec_target aside;
	struct nf_scenario *sc = NULL;
	struct nf_runtime_config cfg;
	struct nf_ctf_writer *w = NULL;
	nf_runtime *rt = NULL;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = nf_scenario_load(opts->scenario, &sc, err);
	if (rc)
		return rc;
	nf_runtime_config_init(&cfg);
	cfg.mode = opts->mode;
	cfg.ground_truth = opts->ground_truth;
	nf_scenario_apply_settings(sc, &cfg);
	if (opts->seed_set)
		cfg.seed = opts->seed;
	rc = record_begin(opts, &aside, err);
	if (rc)
		goto out_scenario;
	const struct nf_adapter_desc *adapters[16];
	size_t n_adapters = nf_scenario_adapters(sc, adapters, 16);
	rc = nf_session_writer_create(aside.dir, &cfg, opts->scenario, adapters,
				      n_adapters, &w, err);
	if (rc) {
		rc = record_end(&aside, opts, rc, false, err);
		goto out_scenario;
	}
	cfg.sink = nf_ctf_writer_sink(w);
	/* Threaded advances, CPU waits and the drain stop early on SIGINT. */
	cfg.interrupt = opts->interrupted;
	rc = nf_runtime_create(&cfg, &rt, err);
	if (rc)
		goto out_writer;
	struct progress_ctx pc = { opts, w, rt };
	struct nf_scenario_progress prog = { &pc, progress_tick };
	rc = nf_scenario_run(sc, rt, &prog, err);
	/* The flag may be set after the scenario's last look at it (the last
	 * statements, the drain): any phase counts. */
	if (rc == NF_EINTR || (!rc && interrupted(opts))) {
		res->interrupted = true;
		rc = 0;
	}
	if (!rc && !res->interrupted) {
		rc = nf_runtime_finish(rt, err);
		if (rc == NF_EINTR || (!rc && interrupted(opts))) {
			res->interrupted = true;
			rc = 0;
		}
	}
	if (res->interrupted)
		nf_error_clear(err);
	if (rc && nf_ctf_writer_error(w)->code) {
		/* The engine only knows its sink failed; the writer knows which file
		 * and why (disk full, file size limit): that is the message. */
		nf_error_clear(err);
		nf_error_set(err, nf_ctf_writer_error(w)->code, "%s", nf_ctf_writer_error(w)->msg);
	}
	struct nf_runtime_stats rs;
	nf_runtime_get_stats(rt, &rs);
	report_progress(&pc, rs.operations, true);
	res->operations = rs.operations;
	res->lost_entries = rs.log_entries_lost;
	nf_runtime_destroy(rt);
out_writer: {
		struct nf_ctf_writer_stats ws;
		nf_ctf_writer_get_stats(w, &ws);
		res->events = ws.events;
		res->bytes = ws.bytes;
		int rc2 = nf_ctf_writer_close(w, err);
		if (!rc)
			rc = rc2;
		rc = record_end(&aside, opts, rc, rc == 0 && res->interrupted, err);
	}
out_scenario:
	nf_scenario_destroy(sc);
	if (!rc && res->interrupted)
		rc = NF_EINTR;
	return rc;
}

static int record_program(const struct nf_record_options *opts, const char *dir,
			  struct nf_record_result *res, struct nf_error *err);

int nf_record_program(const struct nf_record_options *opts, struct nf_record_result *res,
		      struct nf_error *err)
{
	struct rec_target aside;
	int rc;

	memset(res, 0, sizeof(*res));
	if (!opts->argv || !opts->argv[0])
		return nf_error_set(err, NF_EINVAL, "record: no program given after --");
	rc = record_begin(opts, &aside, err);
	if (rc)
		return rc;
	rc = record_program(opts, aside.dir, res, err);
	/* interrupted: what the program recorded up to then is the session */
	int end = record_end(&aside, opts, rc == NF_EINTR ? 0 : rc, rc == NF_EINTR, err);

	return end ? end : rc;
}

/* Runs the program recording into dir (the session or its temporary). */
static int record_program(const struct nf_record_options *opts, const char *dir,
			  struct nf_record_result *res, struct nf_error *err)
{
	char seed[32], meta[4200];
	pid_t pid;
	int st;
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)(opts->seed_set ? opts->seed : 1));
	/* The session's `source`: the command line, words joined by spaces. */
	char cmdline[2048] = "";
	size_t used = 0;
	for (char *const *a = opts->argv; *a && used + 1 < sizeof(cmdline); a++) {
		int k = snprintf(cmdline + used, sizeof(cmdline) - used, "%s%s",
				 a == opts->argv ? "" : " ", *a);
		if (k < 0)
			break;
		used += (size_t)k;
	}
	/* The runtime in the program tells a failed recording on this pipe
	 * (runtime_env.c): the program's exit status does not say it. */
	int status[2], execp[2];
	if (pipe2(status, O_CLOEXEC) != 0)
		return nf_error_set(err, NF_EIO, "record: pipe: %s", strerror(errno));
	/* A failed exec writes its errno here; a successful one closes it
	 * (O_CLOEXEC): so a program that runs and exits 127 is not taken for
	 * one that could not run. */
	if (pipe2(execp, O_CLOEXEC) != 0) {
		int e = errno;
		close(status[0]);
		close(status[1]);
		return nf_error_set(err, NF_EIO, "record: pipe: %s", strerror(e));
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(status[0]);
		close(status[1]);
		close(execp[0]);
		close(execp[1]);
		return nf_error_set(err, NF_EIO, "record: fork: %s", strerror(e));
	}
	if (pid == 0) {
		char fdv[16];

		snprintf(fdv, sizeof(fdv), "%d", status[1]);
		if (fcntl(status[1], F_SETFD, 0) == 0)
			setenv("NFTRACE_STATUS_FD", fdv, 1);
		setenv("NFTRACE_RECORD_DIR", dir, 1);
		setenv("NFTRACE_SEED", seed, 1);
		setenv("NFTRACE_GROUND_TRUTH", opts->ground_truth ? "1" : "0", 1);
		setenv("NFTRACE_MODE", opts->mode == NF_MODE_THREADED ? "threaded" : "deterministic", 1);
		setenv("NFTRACE_SOURCE", cmdline, 1);
		execvp(opts->argv[0], opts->argv);
		int e = errno;
		if (write(execp[1], &e, sizeof(e)) != (ssize_t)sizeof(e)) {
			/* the exit status still says it */
		}
		_exit(127);
	}
	close(status[1]);
	close(execp[1]);
	int exec_errno = 0;
	{
		ssize_t n;

		while ((n = read(execp[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR)
			;
		if (n != (ssize_t)sizeof(exec_errno))
			exec_errno = 0;
		close(execp[0]);
	}
	/* A SIGINT or SIGTERM sent to nftrace alone is forwarded to the program
	 * (once), unless the program ends by itself within 200 ms (Ctrl-C
	 * reaches the whole foreground group: it has its own). */
	bool forwarded = false;
	int waited_ms = 0;
	for (;;) {
		bool stop = opts->interrupted && *opts->interrupted;
		pid_t w = waitpid(pid, &st, stop && !forwarded ? WNOHANG : 0);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			close(status[0]);
			return nf_error_set(err, NF_EIO, "record: waitpid: %s", strerror(errno));
		}
		if (w == 0 && !forwarded) {
			if (waited_ms < 200) {
				struct timespec ts = { 0, 10000000 };

				nanosleep(&ts, NULL);
				waited_ms += 10;
				continue;
			}
			int sig = *opts->interrupted;
			kill(pid, sig == SIGINT || sig == SIGTERM || sig == SIGHUP ? sig : SIGTERM);
			forwarded = true;
		}
	}
	if (exec_errno) {
		close(status[0]);
		return nf_error_set(err, NF_ENOENT, "%s: cannot run program: %s", opts->argv[0],
				    strerror(exec_errno));
	}
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	/* The runtime's committer process may outlive the program (killed, or
	 * exited without closing its runtime): wait until the files are final. */
	bool recorded = access(meta, F_OK) == 0 && nf_ctf_session_wait(dir, NULL) == 0;
	/* What the runtime said about the recording (nothing when it went well);
	 * the committer may still hold the pipe's write end: do not block. */
	char failed[600] = "";
	if (fcntl(status[0], F_SETFL, O_NONBLOCK) == 0) {
		ssize_t n = read(status[0], failed, sizeof(failed) - 1);

		failed[n > 0 ? n : 0] = '\0';
		failed[strcspn(failed, "\n")] = '\0';
	}
	close(status[0]);
	if (failed[0])
		return nf_error_set(err, NF_EIO, "%s", failed);
	/* Ctrl-C reaches the whole process group: the program stops, and what
	 * it recorded up to then is the session. */
	if (recorded && ((opts->interrupted && *opts->interrupted) ||
			 (WIFSIGNALED(st) && (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM)))) {
		res->interrupted = true;
		return NF_EINTR;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return nf_error_set(err, NF_EIO, "%s: program %s %d", opts->argv[0],
				    WIFEXITED(st) ? "exited with status" : "was killed by signal",
				    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	if (!recorded)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: the program recorded nothing (does it create its runtime with nf_runtime_create_from_env?)",
				    opts->argv[0]);
	return 0;
}
