/*
 * Loading ftrace event format descriptions into libtraceevent: header_page and
 * every `format` file of the named systems of an `events` directory (a tracefs
 * instance's, or a copy of one such as samples/kernel/formats).
 */
#include "kernel_int.h"
#include "contract/errors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Format files are small; this bounds what a strange file can make us read. */
#define NF_KFORMAT_MAX (1u << 20)

/* Reads a tracefs file (their size is not known in advance); malloc'd, NUL-terminated. */
static int slurp(const char *path, char **out, size_t *len, struct nf_error *err)
{
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int e = errno;

		free(buf);
		if (fd >= 0)
			close(fd);
		return nf_error_set(err, e == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path, strerror(e));
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb = cap >= NF_KFORMAT_MAX ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				close(fd);
				return nf_error_set(err, NF_EFORMAT, "%s: larger than %u bytes", path, NF_KFORMAT_MAX);
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int load_system(struct tep_handle *tep, const char *events_dir, const char *system,
		       struct nf_error *err)
{
	char path[4200];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", events_dir, system);
	if (!(d = opendir(path)))
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char fpath[4600], *text;
		size_t len;

		if (de->d_name[0] == '.' || de->d_type == DT_REG)
			continue;
		snprintf(fpath, sizeof(fpath), "%s/%s/format", path, de->d_name);
		if (access(fpath, F_OK) != 0)
			continue; /* enable, filter */
		if ((rc = slurp(fpath, &text, &len, err)))
			break;
		if (tep_parse_event(tep, text, len, system) != 0)
			rc = nf_error_set(err, NF_EFORMAT, "%s: libtraceevent cannot parse it", fpath);
		free(text);
	}
	closedir(d);
	return rc;
}

int nf_kformats_load(struct tep_handle *tep, const char *events_dir, const char *const *systems,
		     struct nf_error *err)
{
	char path[4200], *text;
	size_t len;
	int rc;

	snprintf(path, sizeof(path), "%s/header_page", events_dir);
	if ((rc = slurp(path, &text, &len, err)))
		return rc;
	rc = tep_parse_header_page(tep, text, len, (int)sizeof(long));
	free(text);
	if (rc != 0)
		return nf_error_set(err, NF_EFORMAT, "%s: libtraceevent cannot parse it", path);
	if (systems) {
		for (size_t i = 0; systems[i]; i++)
			if ((rc = load_system(tep, events_dir, systems[i], err)))
				return rc;
		return 0;
	}
	DIR *d = opendir(events_dir);
	struct dirent *de;

	if (!d)
		return nf_error_set(err, NF_EIO, "%s: %s", events_dir, strerror(errno));
	rc = 0;
	while (!rc && (de = readdir(d)))
		if (de->d_name[0] != '.' && de->d_type == DT_DIR)
			rc = load_system(tep, events_dir, de->d_name, err);
	closedir(d);
	return rc;
}
