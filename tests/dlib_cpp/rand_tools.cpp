// Ground truth for tests/test_rand_tools.py: dlib::rand's stream, randomize_samples, the colour
// jitter of random_color_transform.h and chinese_whispers, printed by dlib's own headers.
// Not part of the parity driver: build and run it by hand (dlib's headers only, no library):
//   git -C <dlib repo> archive HEAD dlib | tar -x -C /tmp/dlibsrc
//   g++ -O1 -std=c++14 -I/tmp/dlibsrc tests/dlib_cpp/rand_tools.cpp -o /tmp/rand_tools && /tmp/rand_tools
// (dlib master 3d40bf57, GCC on x86-64; -std=c++17 prints the same.) Its output is hard-coded in the tests.
// Draws are sequenced in separate statements: function-argument order is unspecified in C++.
#include <dlib/rand.h>
#include <dlib/svm/svm.h>
#include <dlib/image_transforms/random_color_transform.h>
#include <dlib/clustering/chinese_whispers.h>
#include <dlib/array2d.h>
#include <cstdio>
using namespace dlib;
int main() {
    const char* seeds[] = {"", "abc", "hello world", "\xe9t\xe9"};
    for (auto s : seeds) {
        dlib::rand r(s);
        printf("seed[%s] u32:", s);
        for (int i = 0; i < 5; ++i) printf(" %u", r.get_random_32bit_number());
        printf("\n u64: %llu\n", (unsigned long long)r.get_random_64bit_number());
        { unsigned a = r.get_random_16bit_number(); unsigned b = r.get_random_8bit_number(); printf(" u16: %u u8: %u\n", a, b); }
        printf(" dbl: %.17g\n", r.get_random_double());
        printf(" flt: %.9g\n", (double)r.get_random_float());
        printf(" gau:"); for (int i = 0; i < 3; ++i) printf(" %.17g", r.get_random_gaussian()); printf("\n");
        printf(" int:"); for (int i = 0; i < 3; ++i) printf(" %lld", r.get_integer_in_range(-5, 1000000007LL)); printf("\n");
        { long long a = r.get_integer(10); double b = r.get_double_in_range(-2, 3); printf(" int10: %lld dir: %.17g\n", a, b); }
    }
    { dlib::rand r((time_t)123); printf("time123 u32: %u\n", r.get_random_32bit_number()); }
    { dlib::rand r; printf("default u32: %u\n", r.get_random_32bit_number());
      r.get_random_gaussian(); r.clear(); printf("after clear gau: %.17g\n", r.get_random_gaussian()); }
    { // randomize_samples
      std::vector<int> a(10), b(10); for (int i=0;i<10;++i){a[i]=i;b[i]=i;}
      randomize_samples(a, b); printf("rs default:"); for (int v : a) printf(" %d", v); printf("\n");
      dlib::rand r("xyz"); for (int i=0;i<10;++i){a[i]=i;b[i]=i;}
      randomize_samples(a, b, r); printf("rs xyz:"); for (int v : a) printf(" %d", v); printf("\n");
      printf("rs xyz next: %u\n", r.get_random_32bit_number());
    }
    { // colour
      dlib::rand r("colors");
      matrix<rgb_pixel> img(3, 4); array2d<unsigned char> g(2, 3);
      for (long y=0;y<3;++y) for (long x=0;x<4;++x) img(y,x) = rgb_pixel(y*80+x*20, 255-x*60, (y*x*37)%256);
      for (long y=0;y<2;++y) for (long x=0;x<3;++x) g[y][x] = y*100+x*70;
      auto t = disturb_colors(img, r, 0.4, 0.2);
      printf("tform: %.17g %.17g %.17g %.17g\n", t.get_gamma(), t.get_red_scale(), t.get_green_scale(), t.get_blue_scale());
      printf("dc rgb:"); for (long y=0;y<3;++y) for (long x=0;x<4;++x) printf(" %d %d %d", img(y,x).red, img(y,x).green, img(y,x).blue); printf("\n");
      disturb_colors(g, r);
      printf("dc gray:"); for (long y=0;y<2;++y) for (long x=0;x<3;++x) printf(" %d", g[y][x]); printf("\n");
      apply_random_color_offset(img, r);
      printf("off rgb:"); for (long y=0;y<3;++y) for (long x=0;x<4;++x) printf(" %d %d %d", img(y,x).red, img(y,x).green, img(y,x).blue); printf("\n");
      apply_random_color_offset(g, r);
      printf("off gray:"); for (long y=0;y<2;++y) for (long x=0;x<3;++x) printf(" %d", g[y][x]); printf("\n");
      printf("colors next: %u\n", r.get_random_32bit_number());
    }
    { // chinese whispers on an ambiguous graph: i<j<20, edge if (i*i+3*j)%7==0 or j==i+1, weight ((i+j)%4+1)*0.25
      std::vector<sample_pair> e;
      for (int i = 0; i < 20; ++i) for (int j = i+1; j < 20; ++j)
          if ((i*i+3*j)%7==0 || j==i+1) e.push_back(sample_pair(j, i, ((i+j)%4+1)*0.25));
      std::vector<unsigned long> labels;
      auto n = chinese_whispers(e, labels); printf("cw default %lu:", n); for (auto l : labels) printf(" %lu", l); printf("\n");
      dlib::rand r("cw"); n = chinese_whispers(e, labels, 3, r); printf("cw seeded3 %lu:", n); for (auto l : labels) printf(" %lu", l); printf("\n");
      printf("cw next: %u\n", r.get_random_32bit_number());
      std::vector<ordered_sample_pair> o = {ordered_sample_pair(0,1), ordered_sample_pair(1,2,3.0), ordered_sample_pair(2,0), ordered_sample_pair(2,1)};
      dlib::rand r2; n = chinese_whispers(o, labels, 5, r2); printf("cw ordered %lu:", n); for (auto l : labels) printf(" %lu", l); printf("\n");
    }
    { // full lookup tables of one strong random transform, as sum_k (k+1)*table[c][k]
      dlib::rand r("tables");
      auto t = random_color_transform(r, 1.5, 0.9);
      printf("gamma %.17g\n", t.get_gamma());
      for (int c = 0; c < 3; ++c) { unsigned long long s = 0;
        for (int k = 0; k < 256; ++k) { rgb_pixel p(k,k,k); p = t(p); unsigned v = c==0?p.red:c==1?p.green:p.blue; s += (k+1ULL)*v; }
        printf("tablesum %d %llu\n", c, s); }
      // 12 random offsets: a 1x1 image at (128,128,128)
      printf("offsets:");
      for (int i = 0; i < 12; ++i) { matrix<rgb_pixel> im(1,1); im(0,0) = rgb_pixel(128,128,128);
        apply_random_color_offset(im, r); printf(" %d %d %d", im(0,0).red-128, im(0,0).green-128, im(0,0).blue-128); }
      printf("\n");
    }
}
