/*
 * The replay driver for the fuzz targets in a normal (gcc) build: a main()
 * that runs LLVMFuzzerTestOneInput on every file of the seed corpus, then on
 * a bounded number of deterministic pseudo-random mutations of them (bit
 * flips, interesting bytes and integers, inserted, deleted, duplicated and
 * spliced ranges), so that ctest exercises each target under ASan+UBSan in
 * a few seconds. A crash aborts the process (the sanitizers print it); the
 * same --seed and iteration replay it exactly (--save writes each input to a
 * file before it runs). With clang and -DNF_FUZZ=ON the targets link with
 * libFuzzer instead and this file is not used.
 *
 *   fuzz_TARGET [--iterations N] [--seconds S] [--seed X] [--save FILE] CORPUS_DIR|FILE...
 *
 * --seconds only stops mutating early on a slow machine; it never fails a run.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

#define FD_MAX_INPUTS 4096u
#define FD_MAX_INPUT_SIZE (1u << 20)
#define FD_MAX_MUTANT_SIZE (1u << 18)

struct fd_input {
	uint8_t *data;
	size_t size;
};

static struct fd_input fd_inputs[FD_MAX_INPUTS];
static size_t fd_n_inputs;
static const char *fd_save_path;

static uint64_t fd_rng_state;

static uint64_t fd_rand(void)
{
	/* xorshift64*: deterministic for a given --seed. */
	fd_rng_state ^= fd_rng_state >> 12;
	fd_rng_state ^= fd_rng_state << 25;
	fd_rng_state ^= fd_rng_state >> 27;
	return fd_rng_state * 0x2545f4914f6cdd1dULL;
}

static size_t fd_below(size_t n)
{
	return n ? (size_t)(fd_rand() % n) : 0;
}

static void fd_add_file(const char *path)
{
	struct stat st;
	FILE *f;

	if (fd_n_inputs >= FD_MAX_INPUTS) {
		fprintf(stderr, "fuzz driver: more than %u corpus files, ignoring %s\n", FD_MAX_INPUTS, path);
		return;
	}
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > FD_MAX_INPUT_SIZE) {
		fprintf(stderr, "fuzz driver: skipping %s (not a file, or larger than %u bytes)\n", path,
			FD_MAX_INPUT_SIZE);
		return;
	}
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	struct fd_input *in = &fd_inputs[fd_n_inputs];
	in->size = (size_t)st.st_size;
	in->data = malloc(in->size ? in->size : 1);
	if (!in->data || fread(in->data, 1, in->size, f) != in->size) {
		fprintf(stderr, "fuzz driver: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	fd_n_inputs++;
}

static int fd_cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds a file, or every file of a directory in name order (deterministic). */
static void fd_add_path(const char *path)
{
	struct stat st;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	if (!S_ISDIR(st.st_mode)) {
		fd_add_file(path);
		return;
	}
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				exit(1);
		}
		size_t len = strlen(path) + strlen(de->d_name) + 2;
		names[n] = malloc(len);
		if (!names[n])
			exit(1);
		snprintf(names[n], len, "%s/%s", path, de->d_name);
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), fd_cmp_names);
	for (size_t i = 0; i < n; i++) {
		fd_add_file(names[i]);
		free(names[i]);
	}
	free(names);
}

static void fd_run(const uint8_t *data, size_t size)
{
	if (fd_save_path) {
		FILE *f = fopen(fd_save_path, "wb");

		if (f) {
			fwrite(data, 1, size, f);
			fclose(f);
		}
	}
	LLVMFuzzerTestOneInput(data, size);
}

/* One mutation of buf[0..*size) in place; cap is the buffer's room. */
static void fd_mutate_once(uint8_t *buf, size_t *size, size_t cap)
{
	static const uint64_t interesting[] = {
		0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000u,
		0xffffffffu, 0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull, UINT64_MAX,
	};
	size_t n = *size, pos, len;

	switch (fd_below(8)) {
	case 0: /* flip a bit */
		if (n)
			buf[fd_below(n)] ^= (uint8_t)(1u << fd_below(8));
		break;
	case 1: /* a random byte */
		if (n)
			buf[fd_below(n)] = (uint8_t)fd_rand();
		break;
	case 2: { /* an interesting integer, 1/2/4/8 bytes little-endian */
		uint64_t v = interesting[fd_below(sizeof(interesting) / sizeof(interesting[0]))];
		size_t w = (size_t)1 << fd_below(4);

		if (n >= w) {
			pos = fd_below(n - w + 1);
			for (size_t i = 0; i < w; i++)
				buf[pos + i] = (uint8_t)(v >> (8 * i));
		}
		break;
	}
	case 3: /* insert random bytes */
		len = 1 + fd_below(16);
		if (n + len <= cap) {
			pos = fd_below(n + 1);
			memmove(buf + pos + len, buf + pos, n - pos);
			for (size_t i = 0; i < len; i++)
				buf[pos + i] = (uint8_t)fd_rand();
			*size = n + len;
		}
		break;
	case 4: /* delete a range */
		if (n) {
			pos = fd_below(n);
			len = 1 + fd_below(n - pos < 64 ? n - pos : 64);
			memmove(buf + pos, buf + pos + len, n - pos - len);
			*size = n - len;
		}
		break;
	case 5: /* duplicate a range (up to 256 bytes) somewhere else */
		if (n) {
			uint8_t tmp[256];
			size_t to;

			pos = fd_below(n);
			len = 1 + fd_below(n - pos < sizeof(tmp) ? n - pos : sizeof(tmp));
			if (len > sizeof(tmp) || n + len > cap)
				break;
			memcpy(tmp, buf + pos, len);
			to = fd_below(n + 1);
			if (to > n)
				break;
			memmove(buf + to + len, buf + to, n - to);
			memcpy(buf + to, tmp, len);
			*size = n + len;
		}
		break;
	case 6: /* splice in a range of another input */
		if (fd_n_inputs) {
			const struct fd_input *o = &fd_inputs[fd_below(fd_n_inputs)];

			if (o->size) {
				size_t from = fd_below(o->size);

				len = 1 + fd_below(o->size - from < 512 ? o->size - from : 512);
				pos = fd_below(n + 1);
				if (pos + len > cap)
					break;
				memcpy(buf + pos, o->data + from, len);
				if (pos + len > n)
					*size = pos + len;
			}
		}
		break;
	default: /* truncate */
		if (n)
			*size = fd_below(n);
		break;
	}
}

static double fd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long iterations = 2000, done = 0;
	double seconds = 5, start;
	uint64_t seed = 0x6e6674726163ULL; /* "nftrac" */
	uint8_t *buf;
	int i;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			iterations = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--save") && i + 1 < argc)
			fd_save_path = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--iterations N] [--seconds S] [--seed X] [--save FILE] CORPUS...\n",
				argv[0]);
			return 2;
		}
	}
	if (i == argc) {
		fprintf(stderr, "%s: no corpus given\n", argv[0]);
		return 2;
	}
	for (; i < argc; i++)
		fd_add_path(argv[i]);
	if (fd_n_inputs == 0) {
		fprintf(stderr, "%s: the corpus is empty\n", argv[0]);
		return 1;
	}
	fd_rng_state = seed ? seed : 1;
	start = fd_now();
	for (size_t k = 0; k < fd_n_inputs; k++)
		fd_run(fd_inputs[k].data, fd_inputs[k].size);
	buf = malloc(FD_MAX_MUTANT_SIZE);
	if (!buf)
		return 1;
	for (; done < iterations && fd_now() - start < seconds; done++) {
		const struct fd_input *in = &fd_inputs[fd_below(fd_n_inputs)];
		size_t size = in->size < FD_MAX_MUTANT_SIZE ? in->size : FD_MAX_MUTANT_SIZE;
		unsigned rounds = 1 + (unsigned)fd_below(8);

		memcpy(buf, in->data, size);
		for (unsigned r = 0; r < rounds; r++)
			fd_mutate_once(buf, &size, FD_MAX_MUTANT_SIZE);
		fd_run(buf, size);
	}
	printf("%s: %zu corpus inputs and %llu mutations in %.1f s, no crash\n", argv[0], fd_n_inputs,
	       done, fd_now() - start);
	free(buf);
	for (size_t k = 0; k < fd_n_inputs; k++)
		free(fd_inputs[k].data);
	return 0;
}
