/* nfb_time: run a command, report its wall time and peak resident memory.
 *
 *   nfb_time [-o FILE] [-i INPUT] [-O OUTPUT] [-w PATH] -- PROGRAM [ARGS...]
 *
 * Prints "<seconds> <maxrss_kib> <exit_status> <cpu_seconds> <seen_seconds>" on one line to
 * FILE (default stderr). -i/-O redirect the child's stdin/stdout (default /dev/null for both,
 * so a text dump is measured without a terminal in the way). -w: seen_seconds is when PATH
 * came to exist (polled every millisecond; a file renamed into place when whole, as
 * nftrace's outputs are), -1 when it never did; without -w, seconds again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *in_path = "/dev/null", *out_path = "/dev/null", *watch = NULL;
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "nfb_time: %s needs a value\n", argv[i]);
			return 2;
		}
		if (strcmp(argv[i], "-o") == 0)
			out = argv[++i];
		else if (strcmp(argv[i], "-i") == 0)
			in_path = argv[++i];
		else if (strcmp(argv[i], "-O") == 0)
			out_path = argv[++i];
		else if (strcmp(argv[i], "-w") == 0)
			watch = argv[++i];
		else {
			fprintf(stderr, "nfb_time: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: nfb_time [-o FILE] [-i IN] [-O OUT] -- PROGRAM [ARGS...]\n");
		return 2;
	}
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "nfb_time: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		int fi = open(in_path, O_RDONLY);
		int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fi < 0 || fo < 0 || dup2(fi, 0) < 0 || dup2(fo, 1) < 0)
			_exit(126);
		execvp(argv[i], argv + i);
		fprintf(stderr, "nfb_time: %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	double seen = -1;
	pid_t w;
	/* With -w: poll for the file while the command runs. */
	while ((w = wait4(pid, &status, watch && seen < 0 ? WNOHANG : 0, &ru)) == 0) {
		if (access(watch, F_OK) == 0)
			seen = now_s() - t0;
		else
			usleep(1000);
	}
	if (w < 0) {
		fprintf(stderr, "nfb_time: wait4: %s\n", strerror(errno));
		return 1;
	}
	double t = now_s() - t0;
	if (watch && seen < 0 && access(watch, F_OK) == 0)
		seen = t;
	if (!watch)
		seen = t;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	FILE *f = out ? fopen(out, "w") : stderr;
	if (!f) {
		fprintf(stderr, "nfb_time: %s: %s\n", out, strerror(errno));
		return 1;
	}
	/* 4th field: the command's CPU seconds (user + sys), for ratios on a loaded machine. */
	fprintf(f, "%.6f %ld %d %.6f %.6f\n", t, ru.ru_maxrss, code,
		(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6, seen);
	if (out)
		fclose(f);
	return code;
}
