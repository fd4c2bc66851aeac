/*
 * nf_render: the viewer's entry point. Opens the timeline database read-only
 * in one read transaction, computes the layout, collects the scene, and has
 * cairo draw it to a PNG, SVG or PDF chosen by the output's extension. The
 * output is written through our own FILE so that every write error is seen,
 * and a failed render leaves no partial file behind. PDF dates are fixed so
 * that the same database and options always give the same bytes.
 */
#include "contract/outfile.h"
#include "contract/errors.h"
#include "contract/escape.h"
#include "contract/timeline.h"
#include "contract/render.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract/capbuf.h"

#include "svgtext.h"
#include "viewer.h"

enum format { FMT_PNG, FMT_SVG, FMT_PDF };

static int output_format(const char *path, enum format *fmt)
{
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return -1;
	if (strcasecmp(dot, ".png") == 0)
		*fmt = FMT_PNG;
	else if (strcasecmp(dot, ".svg") == 0)
		*fmt = FMT_SVG;
	else if (strcasecmp(dot, ".pdf") == 0)
		*fmt = FMT_PDF;
	else
		return -1;
	return 0;
}

/* An SVG page larger than this is refused (the level of detail keeps them small). */
#define NF_RENDER_MAX_SVG ((size_t)1 << 30)

/*
 * Where cairo's stream writes go; the first failure is kept. SVG is kept in
 * memory (buf) so that its ids can be renumbered before it is written.
 */
struct sink {
	FILE *f;
	int failed;
	char *buf;
	size_t len, cap;
	int buffered;
	const struct nf_svg_texts *texts;  /* SVG: the strings to write as <text> */
};

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int length)
{
	struct sink *s = closure;

	if (s->failed)
		return CAIRO_STATUS_WRITE_ERROR;
	if (s->buffered) {
		if (nf_array_reserve((void **)&s->buf, &s->cap, s->len + length, 1, 65536,
				     NF_RENDER_MAX_SVG)) {
			s->failed = 1;
			return CAIRO_STATUS_NO_MEMORY;
		}
		memcpy(s->buf + s->len, data, length);
		s->len += length;
		return CAIRO_STATUS_SUCCESS;
	}
	if (fwrite(data, 1, length, s->f) != length) {
		s->failed = 1;
		return CAIRO_STATUS_WRITE_ERROR;
	}
	return CAIRO_STATUS_SUCCESS;
}

/*
 * cairo names SVG groups after a process-wide surface counter ("surface217"),
 * so a second render in the same process would differ. Renumber them in order
 * of first appearance, then write the page.
 */
static int svg_write_normalized(struct sink *s)
{
	static const char tag[] = "surface";
	long map_old[64], map_new[64];
	size_t n_map = 0, i = 0, from = 0, end_tag = s->len;

	/*
	 * cairo sizes the page in points ("1600pt"), which a browser shows 4/3
	 * larger than asked; the page is sized in pixels, as --width says. The
	 * viewBox is unchanged, so the drawing scales with it.
	 */
	for (size_t k = 0; k + 12 < s->len && k < 1024; k++)
		if (!memcmp(s->buf + k, "pt\" height=\"", 12) || !memcmp(s->buf + k, "pt\" viewBox=", 12))
			s->buf[k + 1] = 'x';
	/* The strings go just before the closing tag, over the drawing. */
	for (size_t k = s->len; k >= 6; k--)
		if (!memcmp(s->buf + k - 6, "</svg>", 6)) {
			end_tag = k - 6;
			break;
		}

	while (i + sizeof(tag) - 1 < s->len) {
		char *end, num[24];
		long old, id = -1;

		if ((s->buf[i] != '"' && s->buf[i] != '#') ||
		    memcmp(s->buf + i + 1, tag, sizeof(tag) - 1) != 0 ||
		    !isdigit((unsigned char)s->buf[i + sizeof(tag)])) {
			i++;
			continue;
		}
		i += sizeof(tag);  /* at the digits */
		old = strtol(s->buf + i, &end, 10);
		for (size_t k = 0; k < n_map; k++)
			if (map_old[k] == old)
				id = map_new[k];
		if (id < 0 && n_map < 64) {
			map_old[n_map] = old;
			id = map_new[n_map] = (long)n_map + 1;
			n_map++;
		}
		if (id < 0)
			return -1;  /* more groups than we ever draw */
		snprintf(num, sizeof(num), "%ld", id);
		if (fwrite(s->buf + from, 1, i - from, s->f) != i - from ||
		    fputs(num, s->f) == EOF)
			return -1;
		i = (size_t)(end - s->buf);
		from = i;
	}
	if (end_tag < from)
		end_tag = from;
	if (fwrite(s->buf + from, 1, end_tag - from, s->f) != end_tag - from)
		return -1;
	if (s->texts && nf_render_svg_write(s->f, s->texts) < 0)
		return -1;
	if (fwrite(s->buf + end_tag, 1, s->len - end_tag, s->f) != s->len - end_tag)
		return -1;
	return 0;
}

static cairo_surface_t *create_surface(enum format fmt, const struct nf_render_layout *lay,
				       const struct nf_render_options *opts, struct sink *sk)
{
	cairo_surface_t *sf;
	char title[512];

	switch (fmt) {
	case FMT_SVG:
		sf = cairo_svg_surface_create_for_stream(sink_write, sk, lay->width, lay->height);
		cairo_svg_surface_restrict_to_version(sf, CAIRO_SVG_VERSION_1_1);
		return sf;
	case FMT_PDF:
		sf = cairo_pdf_surface_create_for_stream(sink_write, sk, lay->width, lay->height);
		/* Fixed dates: the bytes must not depend on when we ran. */
		cairo_pdf_surface_set_metadata(sf, CAIRO_PDF_METADATA_CREATE_DATE,
					       "2000-01-01T00:00:00Z");
		cairo_pdf_surface_set_metadata(sf, CAIRO_PDF_METADATA_MOD_DATE,
					       "2000-01-01T00:00:00Z");
		/* The PDF's metadata is UTF-16 text: a Latin-1 directory name or a
		 * noncharacter would drop the title. */
		nf_esc_text_buf(title, sizeof(title), opts->title && *opts->title ? opts->title : "nftrace session", 0);
		cairo_pdf_surface_set_metadata(sf, CAIRO_PDF_METADATA_TITLE, title);
		cairo_pdf_surface_set_metadata(sf, CAIRO_PDF_METADATA_CREATOR, "nftrace");
		return sf;
	case FMT_PNG:
	default:
		return cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)lay->width,
						  (int)lay->height);
	}
}

/* Draws the page and writes it to the open sink. */
static int draw_to(enum format fmt, const struct nf_render_layout *lay,
		   const struct nf_render_scene *scene, const struct nf_render_options *opts,
		   struct sink *sk, struct nf_error *err)
{
	cairo_surface_t *sf = create_surface(fmt, lay, opts, sk);
	cairo_status_t st = cairo_surface_status(sf);
	cairo_t *cr;
	int ret = 0;

	if (st != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(sf);
		return nf_error_set(err, st == CAIRO_STATUS_NO_MEMORY ? NF_ENOMEM : NF_EIO,
				    "creating the page: %s", cairo_status_to_string(st));
	}
	cr = cairo_create(sf);
	if (fmt == FMT_SVG && sk->texts)
		nf_render_svg_attach(cr, (struct nf_svg_texts *)sk->texts);
	ret = nf_render_paint(cr, opts, lay, scene, err);
	if (ret == 0 && sk->texts && sk->texts->failed)
		ret = nf_error_set(err, NF_ENOMEM, "too much text for one SVG page");
	cairo_destroy(cr);
	if (ret == 0 && fmt == FMT_PNG) {
		cairo_surface_flush(sf);
		st = cairo_surface_write_to_png_stream(sf, sink_write, sk);
	} else {
		cairo_surface_finish(sf);
		st = cairo_surface_status(sf);
	}
	cairo_surface_destroy(sf);
	if (ret == 0 && st == CAIRO_STATUS_NO_MEMORY)
		ret = nf_error_set(err, NF_ENOMEM, "the page is too large");
	if (ret == 0 && (st != CAIRO_STATUS_SUCCESS || sk->failed))
		ret = nf_error_set(err, NF_EIO, "writing: %s",
				   sk->failed ? strerror(errno) : cairo_status_to_string(st));
	if (ret == 0 && sk->buffered && svg_write_normalized(sk) < 0)
		ret = nf_error_set(err, NF_EIO, "writing: %s", strerror(errno));
	return ret;
}

/* Draws from db (db_path names it in errors); the operations from early when not NULL. */
static int render_db(sqlite3 *db, const char *db_path, const struct nf_early_timeline *early,
		     const struct nf_render_options *opts, enum format fmt, struct nf_error *err)
{
	struct nf_render_layout lay;
	struct nf_render_scene scene;
	struct sink sk;
	struct nf_svg_texts texts = { 0 };
	struct nf_outfile of;
	int ret;

	memset(&scene, 0, sizeof(scene));
	memset(&sk, 0, sizeof(sk));
	scene.early = early;
	/* One sub-lane per lane first; stacked (layout.h) only when something overlaps. */
	if ((ret = nf_render_layout_build_flat(db, opts, &lay, err)) < 0) {
		nf_error_prefix(err, "%s", db_path);
		return ret;
	}
	if ((ret = nf_render_collect(db, opts, &lay, &scene, err)) < 0) {
		nf_error_prefix(err, "%s", db_path);
		goto out_release;
	}
	if (scene.needs_stacking) {
		/* The flat scene's pass found the depths: the layout needs no pass of its own. */
		struct nf_render_depths known = scene.depths;

		memset(&scene.depths, 0, sizeof(scene.depths));
		nf_render_scene_release(&scene);
		memset(&scene, 0, sizeof(scene));
		scene.early = early;
		nf_render_layout_release(&lay);
		ret = nf_render_layout_build_known(db, opts, &lay, &known, err);
		free(known.queue);
		free(known.n_sub);
		free(known.shared);
		if (ret < 0) {
			nf_error_prefix(err, "%s", db_path);
			return ret;
		}
		if ((ret = nf_render_collect(db, opts, &lay, &scene, err)) < 0) {
			nf_error_prefix(err, "%s", db_path);
			goto out_release;
		}
	}
	/* SVG: each operation wide enough gets a tooltip (svgtext.h). */
	if (fmt == FMT_SVG && (ret = nf_render_svg_tips(db, opts, &lay, &texts, err)) < 0) {
		nf_error_prefix(err, "%s", db_path);
		goto out_release;
	}
	/* Written beside the name and renamed over it when whole: a failure
	 * leaves the previous picture, and no partial one. */
	if ((ret = nf_outfile_open(&of, opts->output, err)) < 0)
		goto out_release;
	sk.f = of.f;
	sk.buffered = fmt == FMT_SVG;
	sk.texts = fmt == FMT_SVG ? &texts : NULL;
	ret = draw_to(fmt, &lay, &scene, opts, &sk, err);
	nf_render_svg_release(&texts);
	free(sk.buf);
	if (ret < 0)
		nf_error_prefix(err, "%s", opts->output);
	{
		int crc = nf_outfile_close(&of, ret == 0, err);

		if (ret == 0)
			ret = crc;
	}
out_release:
	nf_render_svg_release(&texts);
	nf_render_scene_release(&scene);
	nf_render_layout_release(&lay);
	return ret;
}

int nf_render(const char *db_path, const struct nf_render_options *opts, struct nf_error *err)
{
	sqlite3 *db = NULL;
	enum format fmt;
	int ret;

	if (!db_path || !opts || !opts->output || !*opts->output)
		return nf_error_set(err, NF_EINVAL, "render: no database or no output file");
	if (output_format(opts->output, &fmt) < 0)
		return nf_error_set(err, NF_EINVAL,
				    "%s: unknown output format (use .png, .svg or .pdf)",
				    opts->output);
	if ((ret = nf_timeline_open_read(db_path, &db, err)) < 0)
		return ret;
	ret = render_db(db, db_path, NULL, opts, fmt, err);
	sqlite3_close(db);  /* ends the read transaction */
	return ret;
}

int nf_render_early(const struct nf_early_timeline *t, const char *name, const struct nf_render_options *opts,
		    struct nf_error *err)
{
	enum format fmt;

	if (!t || !t->db || !opts || !opts->output || !*opts->output)
		return nf_error_set(err, NF_EINVAL, "render: no timeline or no output file");
	if (output_format(opts->output, &fmt) < 0 || fmt == FMT_SVG)
		return nf_error_set(err, NF_EINVAL, "%s: a first picture is a .png or .pdf", opts->output);
	return render_db(t->db, name, t, opts, fmt, err);
}
