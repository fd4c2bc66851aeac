/* An input file opened as a regular file only (include/contract/infile.h). */
#include "contract/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nf_infile_open(const char *path, struct nf_error *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), fl;

	if (fd < 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return nf_error_set(err, NF_EFORMAT, "%s: not a regular file", path);
	}
	/* reads of a regular file never block anyway; no surprise for the caller */
	if ((fl = fcntl(fd, F_GETFL)) >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}
