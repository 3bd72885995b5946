// Ground truth for tests/test_random_cropper.py: dlib's random_cropper and jitter_image with a
// fixed seed, printed by dlib's own headers. Build and run by hand (headers only, no library):
//   git -C <dlib repo> archive HEAD dlib | tar -x -C /tmp/dlibsrc
//   g++ -O1 -std=c++14 -I/tmp/dlibsrc tests/dlib_cpp/random_cropper.cpp -o /tmp/rc && /tmp/rc
// (dlib master 3d40bf57, GCC on x86-64.) Its output is hard-coded in the tests.
// The crop plan is private in dlib: it is read by replaying the cropper's generator through a
// second cropper whose make_crop_plan is made reachable.
#include <sstream>
#include <mutex>
#include <vector>
#include <cstdio>
#include <dlib/threads.h>
#include <dlib/image_transforms/interpolation.h>
#include <dlib/image_processing/full_object_detection.h>
#include <dlib/rand.h>
#include <dlib/matrix.h>
#define class struct
#define private public
#include <dlib/image_transforms/random_cropper.h>
#undef private
#undef class
using namespace dlib;

static matrix<unsigned char> make_img(long nr, long nc, int k) {
    matrix<unsigned char> m(nr, nc);
    for (long r = 0; r < nr; ++r)
        for (long c = 0; c < nc; ++c) m(r, c) = (unsigned char)((r * 7 + c * 13 + k * 31) % 256);
    return m;
}

static void setup(random_cropper& c) {
    c.set_chip_dims(64, 80);
    c.set_min_object_size(30, 12);
    c.set_max_rotation_degrees(20);
    c.set_background_crops_fraction(0.3);
    c.set_translate_amount(0.2);
    c.set_max_object_size(0.6);
    c.set_min_object_coverage(0.9);
}

int main() {
    std::vector<matrix<unsigned char>> images = {make_img(120, 160, 0), make_img(90, 100, 1)};
    std::vector<std::vector<mmod_rect>> rects(2);
    rects[0].push_back(mmod_rect(rectangle(20, 30, 79, 69)));
    rects[0].push_back(mmod_rect(rectangle(100, 10, 139, 109)));
    rects[0].back().label = "tall";
    rects[0].push_back(mmod_rect(rectangle(140, 90, 170, 130)));  // partly outside the image
    rects[0].push_back(mmod_rect(rectangle(60, 80, 69, 89)));     // small
    rects[1].push_back(mmod_rect(rectangle(5, 5, 94, 84)));
    rects[1].back().ignore = true;
    rects[1].push_back(mmod_rect(rectangle(30, 40, 44, 49)));     // small, drives min_scale > 1

    random_cropper cropper, replay;
    setup(cropper);
    setup(replay);
    cropper.set_seed(7);
    for (int i = 0; i < 24; ++i) {
        replay.rnd = cropper.rnd;
        size_t idx = replay.rnd.get_integer(images.size());
        chip_details plan; bool flip;
        replay.make_crop_plan(images[idx], rects[idx], plan, flip);

        matrix<unsigned char> crop;
        std::vector<mmod_rect> out;
        cropper(images, rects, crop, out);
        long sum = 0;
        for (long r = 0; r < crop.nr(); ++r) for (long c = 0; c < crop.nc(); ++c) sum += crop(r, c);
        printf("(%zu, (%.17g, %.17g, %.17g, %.17g), %.17g, %d, %ld, [", idx, plan.rect.left(), plan.rect.top(),
               plan.rect.right(), plan.rect.bottom(), plan.angle, (int)flip, sum);
        for (auto& b : out)
            printf("(%ld, %ld, %ld, %ld, %d, \"%s\"), ", b.rect.left(), b.rect.top(), b.rect.right(),
                   b.rect.bottom(), (int)b.ignore, b.label.c_str());
        printf("]),\n");
    }
    // a background crop of a thin image, and the default settings' first crops
    random_cropper plain;
    matrix<unsigned char> bg = plain.operator()<matrix<unsigned char>, mmod_rect>(make_img(50, 400, 2));
    long sum = 0;
    for (long r = 0; r < bg.nr(); ++r) for (long c = 0; c < bg.nc(); ++c) sum += bg(r, c);
    printf("background %ld x %ld sum %ld\n", bg.nr(), bg.nc(), sum);
    printf("next u32 %u\n", plain.rnd.get_random_32bit_number());
}
