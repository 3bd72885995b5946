// The patterned test images of the hand-run oracle tools (geometry_tools.cpp, fhog_tool.cpp);
// the Python tests build the same arrays with numpy.
#ifndef DNNPY_TEST_IMAGES_H
#define DNNPY_TEST_IMAGES_H
#include <dlib/array2d.h>
#include <dlib/pixel.h>

static void gray(dlib::array2d<unsigned char>& im, long nr, long nc) {
    im.set_size(nr, nc);
    for (long r = 0; r < nr; ++r) for (long c = 0; c < nc; ++c) im[r][c] = (r*37 + c*11 + (r*c) % 13) & 255;
}
static void rgb(dlib::array2d<dlib::rgb_pixel>& im, long nr, long nc) {
    im.set_size(nr, nc);
    for (long r = 0; r < nr; ++r) for (long c = 0; c < nc; ++c) {
        unsigned char v[3];
        for (int k = 0; k < 3; ++k) v[k] = (r*37 + c*11 + k*71 + (r*c*(k+1)) % 17) & 255;
        im[r][c] = dlib::rgb_pixel(v[0], v[1], v[2]);
    }
}
#endif
