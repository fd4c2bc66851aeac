/*
 * Build aside, then swap: how every nftrace command that writes a session
 * directory (`import`, `record`) replaces one. The new session is made in a
 * directory beside the target (OUT.<what>-XXXXXX, same filesystem), locked
 * with flock while it is built; only when it is complete does it take OUT's
 * place (the old session renamed aside first, so its files are never
 * missing, then removed). A failure or a signal at any moment leaves OUT as
 * it was; what a killed run left beside OUT is recognised by its free lock
 * and removed by the next run.
 */
#include "contract/sessiondir.h"
#include "contract/errors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Removes the plain files of dir, then dir (a directory this code made: it
 * holds only what a build wrote there, never a subdirectory). */
static void remove_built(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX + 256];

	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
				unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* OUT without trailing slashes ("out/" and "out" are one directory). */
static int normalise(const char *out_dir, char *out, size_t cap, struct nf_error *err)
{
	size_t n = strlen(out_dir);

	if (n == 0)
		return nf_error_set(err, NF_EINVAL, "the output directory is an empty name");
	while (n > 1 && out_dir[n - 1] == '/')
		n--;
	if (n >= cap)
		return nf_error_set(err, NF_EINVAL, "%s: path too long", out_dir);
	memcpy(out, out_dir, n);
	out[n] = '\0';
	if (!strcmp(out, "/") || !strcmp(out, ".") || !strcmp(out, ".."))
		return nf_error_set(err, NF_EINVAL, "%s: not a session directory name", out_dir);
	return 0;
}

/* Whether the directory path is a build nobody holds (its builder died). */
static bool dead_build(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool dead = false;

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		dead = true;
		flock(fd, LOCK_UN);
	}
	close(fd);
	return dead;
}

/*
 * Removes what killed runs left beside out: builds (OUT.import-*,
 * OUT.record-*) whose lock nobody holds, and old sessions moved aside
 * (OUT.old-*) once OUT itself is a session again (the swap went through); an
 * old session whose swap died before the new one took its place (OUT is
 * missing) is put back as OUT.
 */
static void remove_leftovers(const char *out)
{
	char parent[PATH_MAX], base[PATH_MAX], path[PATH_MAX * 2];
	const char *slash = strrchr(out, '/');
	DIR *d;
	struct dirent *de;
	size_t blen;

	if (slash) {
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash == out ? 1 : slash - out), out);
		snprintf(base, sizeof(base), "%s", slash + 1);
	} else {
		snprintf(parent, sizeof(parent), ".");
		snprintf(base, sizeof(base), "%s", out);
	}
	blen = strlen(base);
	if (!(d = opendir(parent)))
		return;
	while ((de = readdir(d))) {
		const char *rest;

		if (strncmp(de->d_name, base, blen) != 0 || de->d_name[blen] != '.')
			continue;
		rest = de->d_name + blen + 1;
		if (strncmp(rest, "import-", 7) && strncmp(rest, "record-", 7) && strncmp(rest, "old-", 4))
			continue;
		if (strlen(strchr(rest, '-') + 1) != 6) /* mkdtemp's XXXXXX */
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", parent, de->d_name) >= sizeof(path))
			continue;
		if (!strncmp(rest, "old-", 4)) {
			struct nf_error e;
			struct stat st;
			int kind;

			nf_error_clear(&e);
			if (!dead_build(path))
				continue;
			/* a swap that died between its renames: the old session goes back */
			if (lstat(out, &st) != 0 && errno == ENOENT) {
				rename(path, out);
				continue;
			}
			if (nf_session_dir_kind(out) == NF_SESSION_NONE)
				continue;
			kind = nf_session_dir_check(path, &e);
			if (kind > 0 && nf_session_dir_clear(path, (enum nf_session_kind)kind, &e) == 0)
				rmdir(path);
			continue;
		}
		if (dead_build(path))
			remove_built(path);
	}
	closedir(d);
}

int nf_aside_begin(const char *out_dir, bool force, const char *what, struct nf_aside *a,
		   struct nf_error *err)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	bool empty = true;
	int rc;

	memset(a, 0, sizeof(*a));
	a->lock_fd = -1;
	if ((rc = normalise(out_dir, a->out, sizeof(a->out), err)))
		return rc;
	remove_leftovers(a->out);
	a->old = NF_SESSION_NONE;
	if (lstat(a->out, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return nf_error_set(err, NF_EEXIST, "%s: exists and is not a directory", a->out);
		if (!(d = opendir(a->out)))
			return nf_error_set(err, NF_EIO, "%s: %s", a->out, strerror(errno));
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				empty = false;
		closedir(d);
		if (!empty && !force)
			return nf_error_set(err, NF_EEXIST,
					    "%s: already exists (use --force to replace the session)", a->out);
		if (!empty) {
			if ((rc = nf_session_dir_check(a->out, err)) < 0)
				return rc;
			a->old = (enum nf_session_kind)rc;
		}
	} else if (errno != ENOENT) {
		return nf_error_set(err, NF_EIO, "%s: %s", a->out, strerror(errno));
	}
	if ((size_t)snprintf(a->tmp, sizeof(a->tmp), "%s.%s-XXXXXX", a->out, what) >= sizeof(a->tmp))
		return nf_error_set(err, NF_EINVAL, "%s: path too long", a->out);
	if (!mkdtemp(a->tmp))
		return nf_error_set(err, NF_EIO, "%s: cannot create a directory beside it: %s", a->out,
				    strerror(errno));
	/* mkdtemp makes it 0700: a session is as readable as a recorded one. */
	{
		mode_t um = umask(0);

		umask(um);
		chmod(a->tmp, 0777 & ~um);
	}
	a->lock_fd = open(a->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (a->lock_fd < 0 || flock(a->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		rc = nf_error_set(err, NF_EIO, "%s: cannot lock: %s", a->tmp, strerror(errno));
		nf_aside_abort(a);
		return rc;
	}
	return 0;
}

int nf_aside_commit(struct nf_aside *a, struct nf_error *err)
{
	char aside[PATH_MAX + 16];
	struct nf_error e2;
	int rc = 0, fd = -1;

	if (a->old == NF_SESSION_NONE) {
		/* rename() replaces an empty directory, and makes a missing one */
		if (rename(a->tmp, a->out) != 0)
			rc = nf_error_set(err, NF_EIO, "%s: cannot rename %s to it: %s", a->out, a->tmp,
					  strerror(errno));
		goto out;
	}
	if ((size_t)snprintf(aside, sizeof(aside), "%s.old-XXXXXX", a->out) >= sizeof(aside)) {
		rc = nf_error_set(err, NF_EINVAL, "%s: path too long", a->out);
		goto out;
	}
	if (!mkdtemp(aside)) {
		rc = nf_error_set(err, NF_EIO, "%s: cannot create a directory beside it: %s", a->out,
				  strerror(errno));
		goto out;
	}
	/* The old session's own directory, locked while it is aside: a run
	 * starting meanwhile leaves it alone. */
	fd = open(a->out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		flock(fd, LOCK_EX | LOCK_NB);
	/* rename onto the empty directory aside replaces it */
	if (rename(a->out, aside) != 0) {
		int e = errno;

		rmdir(aside);
		rc = nf_error_set(err, NF_EIO, "%s: cannot move the old session aside: %s", a->out, strerror(e));
		goto out;
	}
	if (rename(a->tmp, a->out) != 0) {
		int e = errno;

		if (rename(aside, a->out) != 0)
			rc = nf_error_set(err, NF_EIO, "%s: cannot rename %s to it (%s); the old session is in %s",
					  a->out, a->tmp, strerror(e), aside);
		else
			rc = nf_error_set(err, NF_EIO, "%s: cannot rename %s to it: %s", a->out, a->tmp,
					  strerror(e));
		goto out;
	}
	nf_error_clear(&e2);
	if (nf_session_dir_clear(aside, a->old, &e2) == 0)
		rmdir(aside);
out:
	if (fd >= 0)
		close(fd);
	if (rc) {
		nf_aside_abort(a);
		return rc;
	}
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	a->lock_fd = -1;
	a->tmp[0] = '\0';
	return 0;
}

void nf_aside_abort(struct nf_aside *a)
{
	if (!a)
		return;
	if (a->tmp[0])
		remove_built(a->tmp);
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	a->lock_fd = -1;
	a->tmp[0] = '\0';
}
