// Ground truth for tests/test_fhog.py: dlib's extract_fhog_features (dlib/image_transforms/fhog.h)
// on deterministic images (patterns and an LCG's noise, the same generators as the test's), every
// feature printed with 9 significant digits. Not part of the parity driver: build and run it by hand:
//   git -C <dlib repo> archive HEAD dlib | tar -x -C /tmp/dlibsrc
//   g++ -O1 -std=c++14 -I/tmp/dlibsrc tests/dlib_cpp/fhog_tool.cpp -o /tmp/fhog_tool
//   /tmp/fhog_tool | gzip -9 > tests/data/fhog_dlib.txt.gz
// (dlib master 3d40bf579, GCC on x86-64, SSE2 as dlib-bin.)
#include <dlib/image_transforms.h>
#include <dlib/array2d.h>
#include <cstdio>
using namespace dlib;
#include "test_images.h"
static unsigned long lcg_state = 12345;
static unsigned char lcg() { lcg_state = (lcg_state * 1103515245UL + 12345UL) & 0x7fffffffUL; return (lcg_state >> 16) & 255; }
static void noise_gray(array2d<unsigned char>& im, long nr, long nc) {
    im.set_size(nr, nc);
    for (long r = 0; r < nr; ++r) for (long c = 0; c < nc; ++c) im[r][c] = lcg();
}
static void noise_rgb(array2d<rgb_pixel>& im, long nr, long nc) {
    im.set_size(nr, nc);
    for (long r = 0; r < nr; ++r) for (long c = 0; c < nc; ++c) { unsigned char a = lcg(), b = lcg(), d = lcg(); im[r][c] = rgb_pixel(a, b, d); }
}
template <typename img_t> void run(const char* name, const img_t& img, int cell, int pr, int pc) {
    array2d<matrix<float,31,1> > hog;
    extract_fhog_features(img, hog, cell, pr, pc);
    printf("%s %d %d %d %ld %ld\n", name, cell, pr, pc, hog.nr(), hog.nc());
    for (long r = 0; r < hog.nr(); ++r) for (long c = 0; c < hog.nc(); ++c) {
        for (int k = 0; k < 31; ++k) printf("%.9g ", hog[r][c](k));
        printf("\n");
    }
}
int main() {
    array2d<unsigned char> g; gray(g, 37, 45);
    array2d<rgb_pixel> c; rgb(c, 50, 61);
    run("gray", g, 8, 1, 1);
    run("gray", g, 4, 1, 1);
    run("gray", g, 8, 3, 5);
    run("rgb", c, 8, 1, 1);
    run("rgb", c, 6, 1, 1);
    array2d<unsigned char> g2; gray(g2, 90, 123);
    run("gray_big", g2, 8, 1, 1);
    lcg_state = 12345; array2d<unsigned char> n1; noise_gray(n1, 71, 53);
    run("noise_gray", n1, 8, 1, 1);
    run("noise_gray", n1, 5, 2, 2);
    array2d<rgb_pixel> n2; noise_rgb(n2, 64, 80);
    run("noise_rgb", n2, 8, 1, 1);
}
