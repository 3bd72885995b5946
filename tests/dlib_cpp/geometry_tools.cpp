// Ground truth for tests/test_image_geometry.py: flips, rotate_image, letterbox_image,
// pyramid_up, upsample_image_dataset and find_affine_transform (dlib's own SVD-based pinv),
// printed by dlib's own headers. Not part of the parity driver: build and run it by hand:
//   git -C <dlib repo> archive HEAD dlib | tar -x -C /tmp/dlibsrc
//   g++ -O1 -std=c++14 -I/tmp/dlibsrc tests/dlib_cpp/geometry_tools.cpp -o /tmp/geometry_tools && /tmp/geometry_tools
// (dlib master 3d40bf57, GCC on x86-64, no LAPACK, as dlib-bin.) Its output is hard-coded in
// the tests. Images are FNV-1a 64 hashes of their row-major bytes.
#include <dlib/image_transforms.h>
#include <dlib/image_processing/full_object_detection.h>
#include <dlib/image_processing.h>
#include <dlib/array2d.h>
#include <dlib/array.h>
#include <cstdio>
using namespace dlib;
#include "test_images.h"

static unsigned long long fnv(const unsigned char* p, size_t n, unsigned long long h = 1469598103934665603ULL) {
    for (size_t i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}
template <typename img> unsigned long long hash_img(const img& im) {
    unsigned long long h = 1469598103934665603ULL;
    for (long r = 0; r < im.nr(); ++r) h = fnv((const unsigned char*)&im[r][0], im.nc() * sizeof(im[0][0]), h);
    return h;
}
static void pt(const char* name, const point_transform_affine& t) {
    printf("%s %.17g %.17g %.17g %.17g %.17g %.17g\n", name, t.get_m()(0,0), t.get_m()(0,1), t.get_m()(1,0),
           t.get_m()(1,1), t.get_b()(0), t.get_b()(1));
}
static void pr(const rectangle& r) { printf(" %ld %ld %ld %ld", r.left(), r.top(), r.right(), r.bottom()); }

int main() {
    long sizes[][2] = {{5, 7}, {12, 9}, {31, 64}, {480, 640}, {1, 1}, {17, 2}};
    for (auto& s : sizes) {  // flip transforms (find_affine_transform over the 4 corners)
        array2d<unsigned char> a, b; gray(a, s[0], s[1]);
        char name[64]; sprintf(name, "flip %ld %ld", s[0], s[1]);
        pt(name, flip_image_left_right(a, b));
    }
    {   // find_affine_transform on general points (3 and 5 pairs)
        std::vector<dpoint> f = {dpoint(1.5, 2.25), dpoint(40.1, 3.7), dpoint(7.3, 55.9)};
        std::vector<dpoint> t = {dpoint(0, 0), dpoint(31, 0.5), dpoint(2, 29)};
        pt("affine3", find_affine_transform(f, t));
        f.push_back(dpoint(20, 20)); t.push_back(dpoint(15.5, 13)); f.push_back(dpoint(-3, 8)); t.push_back(dpoint(-2, 5));
        pt("affine5", find_affine_transform(f, t));
    }
    {   // add_image_left_right_flips / flip_image_dataset_left_right on mmod_rects and rectangles
        dlib::array<array2d<unsigned char>> imgs(2); gray(imgs[0], 20, 30); gray(imgs[1], 15, 11);
        std::vector<std::vector<mmod_rect>> objs(2);
        objs[0].push_back(mmod_rect(rectangle(3, 4, 10, 12))); objs[0].push_back(mmod_rect(rectangle(0, 0, 29, 19)));
        objs[0].push_back(mmod_rect(rectangle(-5, 2, 7, 30))); objs[1].push_back(mmod_rect(rectangle(2, 3, 5, 6)));
        objs[1].push_back(mmod_rect(rectangle(4, 1, 8, 2)));
        objs[0][1].ignore = true; objs[1][0].label = "x";
        add_image_left_right_flips(imgs, objs);
        printf("addflips %lu", imgs.size());
        for (auto& v : objs) { printf(" |"); for (auto& o : v) pr(o.rect); }
        printf(" %llx\n", hash_img(imgs[2]));
        dlib::array<array2d<unsigned char>> imgs2(1); gray(imgs2[0], 20, 30);
        std::vector<std::vector<rectangle>> r2(1); r2[0] = {rectangle(3, 4, 10, 12), rectangle(-5, 2, 7, 30), rectangle(2, 3, 5, 6)};
        flip_image_dataset_left_right(imgs2, r2);
        printf("dsflip"); for (auto& o : r2[0]) pr(o); printf(" %llx\n", hash_img(imgs2[0]));
    }
    {   // rotate_image (quadratic and bilinear), gray and rgb
        double angles[] = {0.3, -1.1, 3.14159, 0.0};
        for (double a : angles) {
            array2d<unsigned char> g, go; gray(g, 23, 31);
            point_transform_affine t = rotate_image(g, go, a);
            printf("rot gray %g %ld %ld %llx", a, go.nr(), go.nc(), hash_img(go)); pt("", t);
            array2d<rgb_pixel> c, co; rgb(c, 18, 13);
            t = rotate_image(c, co, a, interpolate_bilinear());
            printf("rot rgb %g %ld %ld %llx", a, co.nr(), co.nc(), hash_img(co)); pt("", t);
        }
    }
    {   // letterbox_image
        long outs[][2] = {{64, 64}, {40, 100}, {100, 40}, {23, 31}, {17, 50}};
        for (auto& o : outs) {
            array2d<unsigned char> g, go(o[0], o[1]); gray(g, 23, 31);
            point_transform_affine t = letterbox_image(g, go);
            printf("lb gray %ld %ld %llx", o[0], o[1], hash_img(go)); pt("", t);
            array2d<rgb_pixel> c, co(o[0], o[1]); rgb(c, 18, 13);
            t = letterbox_image(c, co);
            printf("lb rgb %ld %ld %llx", o[0], o[1], hash_img(co)); pt("", t);
        }
    }
    {   // pyramid_up and upsample_image_dataset<pyramid_down<2>>
        array2d<unsigned char> g, go; gray(g, 23, 31); pyramid_up(g, go, pyramid_down<2>());
        printf("pyrup gray %ld %ld %llx\n", go.nr(), go.nc(), hash_img(go));
        array2d<rgb_pixel> c, co; rgb(c, 18, 13); pyramid_up(c, co, pyramid_down<2>());
        printf("pyrup rgb %ld %ld %llx\n", co.nr(), co.nc(), hash_img(co));
        array2d<unsigned char> g3, g3o; gray(g3, 23, 31); pyramid_up(g3, g3o, pyramid_down<3>());
        printf("pyrup3 gray %ld %ld %llx\n", g3o.nr(), g3o.nc(), hash_img(g3o));
        dlib::array<array2d<unsigned char>> imgs(2); gray(imgs[0], 20, 30); gray(imgs[1], 15, 11);
        std::vector<std::vector<mmod_rect>> objs(2);
        objs[0].push_back(mmod_rect(rectangle(3, 4, 10, 12))); objs[0].push_back(mmod_rect(rectangle(-5, 2, 7, 30)));
        objs[1].push_back(mmod_rect(rectangle(2, 3, 5, 6)));
        upsample_image_dataset<pyramid_down<2>>(imgs, objs);
        printf("upds"); for (auto& v : objs) { printf(" |"); for (auto& o : v) pr(o.rect); }
        printf(" %ld %ld %llx %ld %ld %llx\n", imgs[0].nr(), imgs[0].nc(), hash_img(imgs[0]), imgs[1].nr(), imgs[1].nc(), hash_img(imgs[1]));
        std::vector<std::vector<mmod_rect>> objs3(1); objs3[0].push_back(mmod_rect(rectangle(3, 4, 10, 12)));
        dlib::array<array2d<unsigned char>> imgs3(1); gray(imgs3[0], 20, 30);
        upsample_image_dataset<pyramid_down<3>>(imgs3, objs3);
        printf("upds3"); pr(objs3[0][0].rect); printf(" %ld %ld\n", imgs3[0].nr(), imgs3[0].nc());
    }
    return 0;
}
