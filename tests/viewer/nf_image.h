/* Reading rendered PNGs in the viewer tests: load, pixel, colour distance. */
#ifndef NF_TEST_IMAGE_H
#define NF_TEST_IMAGE_H

#include <cairo.h>
#include <check.h>
#include <stddef.h>
#include <stdint.h>

struct nf_image {
	cairo_surface_t *sf;
	int w, h, stride;
	const unsigned char *px;
};

static inline void nf_image_load(struct nf_image *im, const char *path)
{
	im->sf = cairo_image_surface_create_from_png(path);
	ck_assert_msg(cairo_surface_status(im->sf) == CAIRO_STATUS_SUCCESS, "%s: not a PNG: %s",
		      path, cairo_status_to_string(cairo_surface_status(im->sf)));
	cairo_surface_flush(im->sf);
	im->w = cairo_image_surface_get_width(im->sf);
	im->h = cairo_image_surface_get_height(im->sf);
	im->stride = cairo_image_surface_get_stride(im->sf);
	im->px = cairo_image_surface_get_data(im->sf);
}

/* The pixel at (x, y) as 0xRRGGBB; (x, y) must be inside the image. */
static inline uint32_t nf_image_pixel(const struct nf_image *im, int x, int y)
{
	ck_assert_msg(x >= 0 && x < im->w && y >= 0 && y < im->h, "pixel (%d, %d) outside %dx%d",
		      x, y, im->w, im->h);
	return *(const uint32_t *)(const void *)(im->px + (size_t)y * (size_t)im->stride +
						 (size_t)x * 4) & 0xFFFFFF;
}

/* Whether every channel of a and b differs by at most tol. */
static inline int nf_image_near(uint32_t a, uint32_t b, int tol)
{
	for (int sh = 0; sh <= 16; sh += 8) {
		int d = (int)((a >> sh) & 0xFF) - (int)((b >> sh) & 0xFF);

		if (d > tol || d < -tol)
			return 0;
	}
	return 1;
}

#endif
