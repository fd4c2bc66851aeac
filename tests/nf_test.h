/*
 * Helpers shared by the check(3) test programs: temporary directories, paths
 * into the source and build trees, running the nftrace CLI with an argument
 * list (no shell: nf_test_nftrace_run) and recording a sample (nf_test_record).
 */
#ifndef NF_TEST_H
#define NF_TEST_H

#include <check.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The directory temporary files go in: $TMPDIR, or /tmp when unset or empty. */
static inline const char *nf_test_tmpbase(void)
{
	const char *base = getenv("TMPDIR");

	return base && *base ? base : "/tmp";
}

/*
 * The directories nf_test_tmpdir made in this process (check forks one per
 * test), removed at exit when still empty: a test that stops before writing
 * anything (a failed assertion, a skip) left an empty nftrace-test-* behind;
 * one with content is kept for a look, and the teardown removes the rest.
 */
#define NF_TEST_MAX_TMPDIRS 32
static struct {
	pid_t pid;
	char path[4096];
} nf_test_tmpdirs[NF_TEST_MAX_TMPDIRS];
static int nf_test_n_tmpdirs;

static inline void nf_test_rmdir_empty(void)
{
	for (int i = 0; i < nf_test_n_tmpdirs; i++)
		if (nf_test_tmpdirs[i].pid == getpid())
			rmdir(nf_test_tmpdirs[i].path); /* fails, as it should, unless empty */
}

/* A fresh directory under nf_test_tmpbase(); the test removes it or leaves it. */
static inline void nf_test_tmpdir(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/nftrace-test-XXXXXX", nf_test_tmpbase());

	ck_assert_msg(n > 0 && (size_t)n < len, "temporary directory name too long");
	ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp failed");
	if (nf_test_n_tmpdirs < NF_TEST_MAX_TMPDIRS && strlen(buf) < sizeof(nf_test_tmpdirs[0].path)) {
		if (nf_test_n_tmpdirs == 0)
			atexit(nf_test_rmdir_empty);
		nf_test_tmpdirs[nf_test_n_tmpdirs].pid = getpid();
		strcpy(nf_test_tmpdirs[nf_test_n_tmpdirs].path, buf);
		nf_test_n_tmpdirs++;
	}
}


/* A path in the source tree: NF_SOURCE_DIR/rel (set by ctest). */
static inline void nf_test_source_path(char *buf, size_t len, const char *rel)
{
	const char *src = getenv("NF_SOURCE_DIR");

	snprintf(buf, len, "%s/%s", src ? src : ".", rel);
}

/* The nftrace binary (set by ctest), or "nftrace". */
static inline const char *nf_test_nftrace(void)
{
	const char *p = getenv("NF_NFTRACE");

	return p ? p : "nftrace";
}

/* A NULL-terminated argument list in place: NF_TEST_ARGV("check", "--json", dir). */
#define NF_TEST_ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The capture files of one command: two files under nf_test_tmpbase(). */
struct nf_test_capture {
	char out[4096], err[4096];
};

/* 0, or -1 when they cannot be made (none is left behind). */
static inline int nf_test_capture_open(struct nf_test_capture *c)
{
	int fo, fe;

	snprintf(c->out, sizeof(c->out), "%s/nftrace-out-XXXXXX", nf_test_tmpbase());
	snprintf(c->err, sizeof(c->err), "%s/nftrace-err-XXXXXX", nf_test_tmpbase());
	fo = mkstemp(c->out);
	fe = mkstemp(c->err);
	if (fo >= 0)
		close(fo);
	if (fe >= 0)
		close(fe);
	if (fo < 0 || fe < 0) {
		fprintf(stderr, "mkstemp in %s failed\n", nf_test_tmpbase());
		if (fo >= 0)
			unlink(c->out);
		if (fe >= 0)
			unlink(c->err);
		return -1;
	}
	return 0;
}

/* Reads a capture file into buf (truncated to len-1 bytes, NUL-terminated). */
static inline void nf_test_capture_read(const char *path, char *buf, size_t len)
{
	FILE *f;
	size_t n;

	if (!buf || !len)
		return;
	f = fopen(path, "r");
	n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* Reads both captures into the caller's buffers (either may be NULL) and removes them. */
static inline void nf_test_capture_close(struct nf_test_capture *c, char *out, size_t out_len,
					 char *err, size_t err_len)
{
	nf_test_capture_read(c->out, out, out_len);
	nf_test_capture_read(c->err, err, err_len);
	unlink(c->out);
	unlink(c->err);
}

/*
 * Runs argv[0] (a path, or a name looked up in PATH) with the arguments argv,
 * without a shell: nothing is quoted or split, so a path with spaces or quotes
 * is passed as it is. env: NULL, or a NULL-terminated list of "NAME=value"
 * set in the child ("NAME" alone unsets it). stdin is /dev/null; stdout and
 * stderr are captured into out and err (each truncated to len-1 bytes; NULL
 * discards). Returns the exit status, 128+signal when the child died of a
 * signal, 127 when argv[0] could not be run, -1 when no child could be
 * started (the reason on stderr). Asserts nothing: usable outside a test.
 */
extern char **environ;

/* The name part of "NAME=value" (or all of "NAME") equals that of e. */
static inline int nf_test_env_same_name(const char *a, const char *e)
{
	size_t n = strcspn(a, "=");

	return strncmp(a, e, n) == 0 && (e[n] == '=' || e[n] == '\0');
}

static inline int nf_test_exec(const char *const env[], const char *const argv[], char *out,
			       size_t out_len, char *err, size_t err_len)
{
	struct nf_test_capture c;
	size_t n_env = 0, n_new = 0, k = 0;
	char **envp;
	pid_t pid;
	int st;

	/* The child's environment is made here: after fork, in a process that may
	 * have threads, the child only calls what is async-signal-safe. */
	while (environ[n_env])
		n_env++;
	while (env && env[n_new])
		n_new++;
	envp = calloc(n_env + n_new + 1, sizeof(*envp));
	if (!envp)
		return -1;
	for (size_t i = 0; i < n_env; i++) {
		bool replaced = false;

		for (size_t j = 0; j < n_new && !replaced; j++)
			replaced = nf_test_env_same_name(env[j], environ[i]);
		if (!replaced)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < n_new; j++)
		if (strchr(env[j], '='))
			envp[k++] = (char *)(uintptr_t)env[j];
	envp[k] = NULL;
	if (nf_test_capture_open(&c) != 0) {
		free(envp);
		return -1;
	}
	fflush(NULL); /* nothing buffered is written twice */
	pid = fork();
	if (pid < 0) {
		perror("fork");
		free(envp);
		nf_test_capture_close(&c, NULL, 0, NULL, 0);
		return -1;
	}
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int fo = open(c.out, O_WRONLY | O_TRUNC);
		int fe = open(c.err, O_WRONLY | O_TRUNC);

		if (in < 0 || fo < 0 || fe < 0 || dup2(in, 0) < 0 || dup2(fo, 1) < 0 ||
		    dup2(fe, 2) < 0)
			_exit(127);
		environ = envp; /* execvp passes environ on */
		/* execvp's argv is char *const[] for historical reasons; it does not write it. */
		execvp(argv[0], (char *const *)(uintptr_t)argv);
		/* write(2) only: the reason is the exit status, the line is for people */
		if (write(2, "cannot run ", 11) == 11 && write(2, argv[0], strlen(argv[0])) > 0)
			(void)!write(2, "\n", 1);
		_exit(127);
	}
	free(envp);
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			nf_test_capture_close(&c, NULL, 0, NULL, 0);
			return -1;
		}
	}
	nf_test_capture_close(&c, out, out_len, err, err_len);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/*
 * Runs the nftrace binary (nf_test_nftrace()) with the arguments args, e.g.
 * NF_TEST_ARGV("check", "--json", dir), and env as nf_test_exec takes it:
 * no shell, stdout and stderr captured, the exit status or 128+signal.
 */
static inline int nf_test_nftrace_env(const char *const env[], const char *const args[],
				      char *out, size_t out_len, char *err, size_t err_len)
{
	size_t n = 0;

	while (args[n])
		n++;
	const char **argv = calloc(n + 2, sizeof(*argv));
	if (!argv)
		return -1;
	argv[0] = nf_test_nftrace();
	memcpy(argv + 1, args, n * sizeof(*argv));
	int st = nf_test_exec(env, argv, out, out_len, err, err_len);
	free(argv);
	return st;
}

/* nf_test_nftrace_env without environment changes. */
static inline int nf_test_nftrace_run(const char *const args[], char *out, size_t out_len,
				      char *err, size_t err_len)
{
	return nf_test_nftrace_env(NULL, args, out, out_len, err, err_len);
}

/*
 * Runs a shell script for what needs a shell (ulimit, pipes, background jobs),
 * with the paths it works on as positional parameters: args become "$1", "$2",
 * ... and the nftrace binary is "$NF", so no path is ever quoted into the
 * script's text. shell: "sh" or "bash". Captures and status as nf_test_exec.
 */
static inline int nf_test_shell(const char *shell, const char *script, const char *const args[],
				char *out, size_t out_len, char *err, size_t err_len)
{
	const char *argv[32] = { shell, "-c", script, shell };
	char nf[4200];
	size_t n = 4;

	for (size_t i = 0; args && args[i]; i++) {
		if (n >= 31)
			return -1;
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	snprintf(nf, sizeof(nf), "NF=%s", nf_test_nftrace());
	return nf_test_exec(NF_TEST_ARGV(nf), argv, out, out_len, err, err_len);
}

/* nf_test_shell with sh (dash on Debian: ulimit -f counts 512-byte blocks, bash's 1024). */
static inline int nf_test_sh(const char *script, const char *const args[], char *out,
			     size_t out_len, char *err, size_t err_len)
{
	return nf_test_shell("sh", script, args, out, out_len, err, err_len);
}

/*
 * Records a scenario of the source tree (rel: "samples/overrun.nfs") into the
 * session directory dir with `nftrace record OPTS -o DIR SCENARIO`; opts: NULL
 * or NF_TEST_ARGV("--seed", "7", ...). Fails the test, with nftrace's stderr,
 * when record does not exit 0.
 */
static inline void nf_test_record(const char *rel, const char *dir, const char *const opts[])
{
	const char *argv[64] = { "record" };
	char src[4096], err[4096];
	size_t n = 1;

	nf_test_source_path(src, sizeof(src), rel);
	for (size_t i = 0; opts && opts[i]; i++) {
		ck_assert_msg(n < 60, "too many record options");
		argv[n++] = opts[i];
	}
	argv[n++] = "-o";
	argv[n++] = dir;
	argv[n++] = src;
	argv[n] = NULL;
	int st = nf_test_nftrace_run(argv, NULL, 0, err, sizeof(err));
	ck_assert_msg(st == 0, "record %s into %s: exit %d: %.1500s", rel, dir, st, err);
}

/*
 * Checks that text is JSON with `python3 -m json.tool` (the text in a file
 * under nf_test_tmpbase(), removed after): its exit status, 0 when valid,
 * the reformatted text in out (NULL discards) and Python's complaint in err.
 */
static inline int nf_test_json_tool(const char *text, char *out, size_t out_len, char *err,
				    size_t err_len)
{
	char path[4096];
	int fd, st;

	snprintf(path, sizeof(path), "%s/nftrace-json-XXXXXX", nf_test_tmpbase());
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	int ok = write(fd, text, len) == (ssize_t)len;
	close(fd);
	st = ok ? nf_test_exec(NULL, NF_TEST_ARGV("python3", "-m", "json.tool", path), out, out_len,
			       err, err_len) : -1;
	unlink(path);
	return st;
}

/* Removes a directory tree made by a test. */
static inline void nf_test_rmtree(const char *dir)
{
	if (nf_test_exec(NULL, NF_TEST_ARGV("rm", "-rf", "--", dir), NULL, 0, NULL, 0) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

/*
 * Runs a shell command line as it is. Only for a command with no path or
 * other outside text in it: nftrace runs with nf_test_nftrace_run, and a
 * script that needs paths takes them as parameters (nf_test_sh). Captures
 * stdout and stderr (each truncated to len-1 bytes; the captures are files
 * under nf_test_tmpbase(), removed after).
 * Returns the exit status, or 128+signal when it died of a signal.
 */
static inline int nf_test_run(const char *cmd, char *out, size_t out_len, char *errbuf,
			      size_t err_len)
{
	struct nf_test_capture c;
	int st;

	ck_assert_msg(nf_test_capture_open(&c) == 0, "cannot make capture files");
	size_t need = strlen(cmd) + strlen(c.out) + strlen(c.err) + 32;
	char *full = malloc(need);
	ck_assert(full != NULL);
	snprintf(full, need, "( %s ) >'%s' 2>'%s' </dev/null", cmd, c.out, c.err);
	st = system(full);
	free(full);
	nf_test_capture_close(&c, out, out_len, errbuf, err_len);
	if (st == -1)
		return -1;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	/* system() runs sh: a child killed by a signal shows as 128+sig. */
	return WEXITSTATUS(st);
}

/* Counts the lines of a string. */
static inline int nf_test_count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* Runs a check suite and returns the process exit status. */
static inline int nf_test_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
