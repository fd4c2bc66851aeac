/*
 * The picture of `nftrace diff -o FILE.png`: the viewer draws each session's
 * timeline over the same window (nf_render, with the changed waits as
 * separate marks on their queue rows), and the two pages are stacked into
 * one PNG, A above B. The file is replaced only when complete.
 */
#include "diff_int.h"

#include "contract/outfile.h"
#include "contract/render.h"

#include <cairo.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* cairo's largest image side. */
#define PIC_MAX_SIDE 32767

static cairo_status_t png_write(void *closure, const unsigned char *data, unsigned int length)
{
	return fwrite(data, 1, length, closure) == length ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* A temporary .png name (the file exists, empty): 0 or NF_EIO. */
static int temp_png(char *buf, size_t len, struct nf_error *err)
{
	const char *base = getenv("TMPDIR");
	int fd;

	snprintf(buf, len, "%s/nftrace-diff-XXXXXX.png", base && *base ? base : "/tmp");
	if ((fd = mkstemps(buf, 4)) < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", buf, strerror(errno));
	close(fd);
	return 0;
}

static int render_side(const struct nf_diff *d, int k, const struct nf_diff_picture_options *o, const char *path,
		       struct nf_error *err)
{
	struct nf_render_options ro = { 0 };
	struct nf_render_mark *marks = NULL;
	size_t max = o->max_marks ? o->max_marks : 500, n = 0;
	char title[1200], path_title[160];
	int rc;

	if (d->n_ops && !(marks = calloc(d->n_ops < max ? d->n_ops : max, sizeof(*marks))))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	for (size_t i = 0; i < d->n_ops && n < max; i++) {
		const struct nf_diff_op *op = &d->ops[i];
		int64_t s = k ? op->start_b : op->start_a, e = k ? op->end_b : op->end_a;

		if (s == DD_NONE || e == DD_NONE)
			continue;
		marks[n].kind = NF_MARK_WAIT;
		marks[n].queue = k ? op->queue_b : op->queue_a;
		marks[n].start_ns = s;
		marks[n].end_ns = e;
		n++;
	}
	snprintf(title, sizeof(title), "%s: %.1000s", k ? "B" : "A", d->info[k].dir);
	snprintf(path_title, sizeof(path_title), "changed waits outlined in blue: %zu (of %zu changed, the most changed "
		 "first)", n, d->n_ops);
	ro.output = path;
	ro.title = title;
	ro.width = o->width;
	ro.from_ns = o->from_ns;
	ro.to_ns = o->to_ns;
	if (o->to_ns < 0) {
		int64_t da = d->info[0].duration_ns, db = d->info[1].duration_ns;

		ro.to_ns = da >= 0 && db >= 0 ? (da > db ? da : db) : -1;
		if (ro.to_ns >= 0 && o->from_ns >= ro.to_ns)
			ro.to_ns = -1; /* nf_render says what is wrong with the window */
	}
	ro.marks = marks;
	ro.n_marks = (int)n;
	ro.marks_apart = 1;
	ro.path_title = n ? path_title : NULL;
	rc = nf_render(d->s[k].db, &ro, err);
	free(marks);
	if (rc)
		nf_error_prefix(err, "%s", d->info[k].dir);
	return rc;
}

int nf_diff_picture(const struct nf_diff *d, const struct nf_diff_picture_options *o, struct nf_error *err)
{
	const char *dot = strrchr(o->output, '.');
	char tmp[2][4200] = { "", "" };
	cairo_surface_t *img[2] = { NULL, NULL }, *page = NULL;
	struct nf_outfile of = { 0 };
	int rc = 0, w = 0, h = 0;

	if (!dot || strchr(dot, '/') || strcasecmp(dot, ".png"))
		return nf_error_set(err, NF_EINVAL, "%s: the diff's picture is a PNG (.png)", o->output);
	if (!d->opts.ops)
		return nf_error_set(err, NF_ESTATE, "the picture marks the aligned waits: compare with ops");
	for (int k = 0; k < 2 && !rc; k++) {
		if ((rc = temp_png(tmp[k], sizeof(tmp[k]), err)) || (rc = render_side(d, k, o, tmp[k], err)))
			break;
		img[k] = cairo_image_surface_create_from_png(tmp[k]);
		if (cairo_surface_status(img[k]) != CAIRO_STATUS_SUCCESS) {
			rc = nf_error_set(err, NF_EIO, "%s: cannot read back the picture", tmp[k]);
			break;
		}
		int iw = cairo_image_surface_get_width(img[k]);

		w = iw > w ? iw : w;
		h += cairo_image_surface_get_height(img[k]);
	}
	if (!rc && h + 8 > PIC_MAX_SIDE)
		rc = nf_error_set(err, NF_EINVAL, "%s: the two timelines are %d px high together, more than %d: narrow "
				  "the window (--from, --to)", o->output, h + 8, PIC_MAX_SIDE);
	if (!rc) {
		page = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h + 8);
		cairo_t *cr = cairo_create(page);

		cairo_set_source_rgb(cr, 0.55, 0.55, 0.6);
		cairo_paint(cr);
		cairo_set_source_surface(cr, img[0], 0, 0);
		cairo_paint(cr);
		cairo_set_source_surface(cr, img[1], 0, cairo_image_surface_get_height(img[0]) + 8);
		cairo_paint(cr);
		rc = cairo_status(cr) == CAIRO_STATUS_SUCCESS ? 0 : nf_error_set(err, NF_ENOMEM, "cannot draw the page");
		cairo_destroy(cr);
	}
	if (!rc && !(rc = nf_outfile_open(&of, o->output, err))) {
		bool ok = cairo_surface_write_to_png_stream(page, png_write, of.f) == CAIRO_STATUS_SUCCESS;

		if (!ok)
			nf_error_set(err, NF_EIO, "%s: write failed", o->output);
		rc = nf_outfile_close(&of, ok, err);
		if (!ok && !rc)
			rc = NF_EIO;
	}
	for (int k = 0; k < 2; k++) {
		if (img[k])
			cairo_surface_destroy(img[k]);
		if (tmp[k][0])
			unlink(tmp[k]);
	}
	if (page)
		cairo_surface_destroy(page);
	return rc;
}
