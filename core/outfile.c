/* An output file renamed into place when complete (include/contract/outfile.h). */
#include "contract/outfile.h"
#include "contract/errors.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nf_outfile_open(struct nf_outfile *of, const char *path, struct nf_error *err)
{
	struct stat sb;
	int fd;

	memset(of, 0, sizeof(*of));
	if (!(of->path = strdup(path)))
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", path);
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		if (S_ISDIR(sb.st_mode)) {
			nf_outfile_close(of, false, NULL);
			return nf_error_set(err, NF_EINVAL, "%s: is a directory", path);
		}
		if (!(of->f = fopen(path, "wb"))) {
			int e = errno;

			nf_outfile_close(of, false, NULL);
			return nf_error_set(err, NF_EIO, "%s: cannot open: %s", path, strerror(e));
		}
		return 0;
	}
	if (!(of->tmp = malloc(strlen(path) + 16))) {
		nf_outfile_close(of, false, NULL);
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", path);
	}
	sprintf(of->tmp, "%s.tmp-XXXXXX", path);
	if ((fd = mkstemp(of->tmp)) < 0) {
		int e = errno;

		free(of->tmp);
		of->tmp = NULL;
		nf_outfile_close(of, false, NULL);
		return nf_error_set(err, e == ENOENT ? NF_ENOENT : NF_EIO, "%s: cannot create: %s", path,
				    strerror(e));
	}
	(void)fchmod(fd, 0644); /* mkstemp makes it 0600: as fopen would, less the umask's say */
	if (!(of->f = fdopen(fd, "wb"))) {
		int e = errno;

		close(fd);
		nf_outfile_close(of, false, NULL);
		return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(e));
	}
	return 0;
}

int nf_outfile_close(struct nf_outfile *of, bool keep, struct nf_error *err)
{
	int rc = 0;

	if (of->f) {
		if (keep && (fflush(of->f) != 0 || ferror(of->f)))
			rc = nf_error_set(err, NF_EIO, "%s: write failed: %s", of->path, strerror(errno));
		if (fclose(of->f) != 0 && keep && rc == 0)
			rc = nf_error_set(err, NF_EIO, "%s: write failed: %s", of->path, strerror(errno));
		of->f = NULL;
	}
	if (of->tmp) {
		if (keep && rc == 0 && rename(of->tmp, of->path) != 0)
			rc = nf_error_set(err, NF_EIO, "%s: cannot rename into place: %s", of->path,
					  strerror(errno));
		if (!keep || rc)
			unlink(of->tmp);
	}
	free(of->tmp);
	free(of->path);
	of->tmp = of->path = NULL;
	return rc;
}
