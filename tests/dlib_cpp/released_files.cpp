// Files in the layout of dlib's released model files, written by dlib itself, and dlib's own
// outputs on given images: the oracle of tests/dlib_cpp/test_released_files.py. Not part of the
// parity driver: build.py's build_program("released_files") compiles it (one object, cached)
// and links it with dlib_all.o.
//
//   released_files imagenet OUT IMAGE.raw NUM_CROPS
//       OUT/resnet34_1000_imagenet_classifier.dnn: `serialize << net << labels` with the
//       anet_type of dlib's dnn_imagenet_ex (affine layers in CONV_MODE, as the released file
//       and dlib's converted bn_con -> affine nets have; 1000 labels); then, as the example
//       does: `deserialize(file) >> net >> labels`, softmax<anet_type::subnet_type> snet with
//       net's subnet, NUM_CROPS crops of randomly_crop_images from a default-seeded dlib::rand,
//       and the averaged probabilities: OUT/imagenet_crops.raw (the crops' bytes) and
//       OUT/imagenet_p.txt (one probability a line, %.9g).
//   released_files mmod OUT VARIANT IMAGE.raw ...
//       VARIANT rear: mmod_rear_end_vehicle_detector.dat, written by the bn_con net_type of
//           dnn_mmod_train_find_cars_ex (the training program's type: bn_con records, running
//           statistics set), then a shape_predictor (dnn_mmod_find_cars_ex reads it with its
//           affine net_type);
//       VARIANT front_rear: mmod_front_and_rear_end_vehicle_detector.dat, written by the affine
//           net_type of dnn_mmod_find_cars2_ex itself (affine records), windows rear and front,
//           then a shape_predictor;
//       VARIANT dog: mmod_dog_hipsterizer.dat, bn_con net with 45-filter rcon5 layers, then a
//           shape_predictor, glasses and mustache (matrix<rgb_alpha_pixel>).
//       Each file is then read back as the example reads it (its affine net_type, `>> net >>
//       sp [>> glasses >> mustache]`) and `net(img)` runs on every image: OUT/VARIANT_dets.txt,
//       per image "image I N" then N lines "left top right bottom confidence label", and
//       OUT/VARIANT_sizes.txt "file_bytes net_bytes".
//
// IMAGE.raw: int32 rows, int32 cols (little-endian), then rows*cols*3 bytes RGB.
// Parameters: dlib's own initialisation (con_, fc_; std::rand-seeded, so deterministic), then
// every bn_/affine_ gamma in [0.6, 1.4] and beta in [-0.3, 0.3] from dlib::rand seeded 1 (so
// the normalisations are not the identity); the imagenet fc is scaled so the logits spread by
// about 3 (the probabilities are far from uniform and from one-hot), the detector's last con
// bias is shifted so about 2% of the first image's output positions score above 0.
#include <dlib/dnn.h>
#include <dlib/image_transforms.h>
#include <dlib/image_processing/shape_predictor.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
using namespace dlib;

// ---- dnn_imagenet_ex's anet_type ---------------------------------------------------------
template <template <int,template<typename>class,int,typename> class B, int N, template<typename>class BN, typename S>
using residual = add_prev1<B<N,BN,1,tag1<S>>>;
template <template <int,template<typename>class,int,typename> class B, int N, template<typename>class BN, typename S>
using residual_down = add_prev2<avg_pool<2,2,2,2,skip1<tag2<B<N,BN,2,tag1<S>>>>>>;
template <int N, template <typename> class BN, int stride, typename S>
using block = BN<con<N,3,3,1,1,relu<BN<con<N,3,3,stride,stride,S>>>>>;
template <int N, typename S> using ares      = relu<residual<block,N,affine,S>>;
template <int N, typename S> using ares_down = relu<residual_down<block,N,affine,S>>;
template <typename S> using level1 = ares<512,ares<512,ares_down<512,S>>>;
template <typename S> using level2 = ares<256,ares<256,ares<256,ares<256,ares<256,ares_down<256,S>>>>>>;
template <typename S> using level3 = ares<128,ares<128,ares<128,ares_down<128,S>>>>;
template <typename S> using level4 = ares<64,ares<64,ares<64,S>>>;
using anet_type = loss_multiclass_log<fc<1000,avg_pool_everything<level1<level2<level3<level4<
    max_pool<3,3,2,2,relu<affine<con<64,7,7,2,2,input_rgb_image_sized<227>>>>>>>>>>>>;

// ---- the MMOD detectors (dnn_mmod_find_cars_ex / _train_ / cars2 / dog_hipsterizer) --------
template <long N, typename S> using con5d = con<N,5,5,2,2,S>;
template <long N, typename S> using con5  = con<N,5,5,1,1,S>;
template <template <typename> class BN, typename S>
using downsampler = relu<BN<con5d<32, relu<BN<con5d<32, relu<BN<con5d<16,S>>>>>>>>>;
template <long N, template <typename> class BN, typename S> using rcon5 = relu<BN<con5<N,S>>>;
template <long N, template <typename> class BN>
using mmod_net = loss_mmod<con<1,9,9,1,1,rcon5<N,BN,rcon5<N,BN,rcon5<N,BN,
    downsampler<BN,input_rgb_image_pyramid<pyramid_down<6>>>>>>>>;

// ---- helpers -------------------------------------------------------------------------------
static matrix<rgb_pixel> read_raw(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    int32_t rc[2];
    if (!in.read(reinterpret_cast<char*>(rc), sizeof rc)) throw std::runtime_error("cannot read " + path);
    matrix<rgb_pixel> img(rc[0], rc[1]);
    if (!in.read(reinterpret_cast<char*>(&img(0, 0)), 3L * rc[0] * rc[1]))
        throw std::runtime_error("short image file " + path);
    return img;
}

// Sets every affine_ to CONV_MODE before the first forward (a default affine_ is FC_MODE; the
// released files' affine layers, converted from bn_con, are CONV_MODE).
struct conv_mode {
    void operator()(affine_& l) const { l = affine_(CONV_MODE); }
    template <typename T> void operator()(T&) const {}
};

// gamma in [0.6, 1.4], beta in [-0.3, 0.3] (gamma first, then beta, in bn_ and affine_ alike).
struct fill_norm {
    dlib::rand* rnd;
    void fill(tensor& p) const {
        float* d = p.host();
        const size_t half = p.size() / 2;
        for (size_t i = 0; i < p.size(); ++i)
            d[i] = i < half ? 0.6f + 0.8f * rnd->get_random_float() : -0.3f + 0.6f * rnd->get_random_float();
    }
    void operator()(affine_& l) const { fill(l.get_layer_params()); }
    void operator()(bn_<CONV_MODE>& l) const { fill(l.get_layer_params()); }
    template <typename T> void operator()(T&) const {}
};

// dnn_imagenet_ex's make_random_cropping_rect_resnet and randomly_crop_images, as written there
// (the point's two draws are one expression: GCC's argument order decides which is first).
static rectangle random_crop_rect(const matrix<rgb_pixel>& img, dlib::rand& rnd) {
    double mins = 0.466666666, maxs = 0.875;
    auto scale = mins + rnd.get_random_double() * (maxs - mins);
    auto size = scale * std::min(img.nr(), img.nc());
    rectangle rect(size, size);
    point offset(rnd.get_random_32bit_number() % (img.nc() - rect.width()),
                 rnd.get_random_32bit_number() % (img.nr() - rect.height()));
    return move_rect(rect, offset);
}

static void random_crops(const matrix<rgb_pixel>& img, dlib::array<matrix<rgb_pixel>>& crops,
                         dlib::rand& rnd, long num_crops) {
    std::vector<chip_details> dets;
    for (long i = 0; i < num_crops; ++i)
        dets.push_back(chip_details(random_crop_rect(img, rnd), chip_dims(227, 227)));
    extract_image_chips(img, dets, crops);
    for (auto&& c : crops) {
        if (rnd.get_random_double() > 0.5) c = fliplr(c);
        apply_random_color_offset(c, rnd);
    }
}

// ---- imagenet ------------------------------------------------------------------------------
static int imagenet(const std::string& out, const std::string& image, long num_crops) {
    const matrix<rgb_pixel> img = read_raw(image);
    dlib::array<matrix<rgb_pixel>> crops;
    dlib::rand rnd;
    random_crops(img, crops, rnd, num_crops);
    {
        std::ofstream f(out + "/imagenet_crops.raw", std::ios::binary);
        for (auto&& c : crops) f.write(reinterpret_cast<const char*>(&c(0, 0)), 3L * c.size());
    }
    {
        anet_type net;
        visit_computational_layers(net, conv_mode());
        resizable_tensor x;
        net.to_tensor(crops.begin(), crops.begin() + 1, x);
        net.subnet().forward(x);                       // sizes every layer
        dlib::rand prnd(1);
        visit_computational_layers(net, fill_norm{&prnd});
        const tensor& logits = net.subnet().forward(x);
        const float* z = logits.host();
        double mean = 0, var = 0;
        for (size_t i = 0; i < logits.size(); ++i) mean += z[i];
        mean /= logits.size();
        for (size_t i = 0; i < logits.size(); ++i) var += (z[i] - mean) * (z[i] - mean);
        const float s = 3.0 / std::sqrt(var / logits.size());
        tensor& fcp = net.subnet().layer_details().get_layer_params();
        fcp *= s;                                      // logits = s * (W x + b)
        std::vector<std::string> labels;
        for (int i = 0; i < 1000; ++i)
            labels.push_back("n" + std::to_string(1000 + i) + " class " + std::to_string(i) + ", a thing");
        net.clean();
        serialize(out + "/resnet34_1000_imagenet_classifier.dnn") << net << labels;
    }
    // what dnn_imagenet_ex does with the file
    std::vector<std::string> labels;
    anet_type net;
    deserialize(out + "/resnet34_1000_imagenet_classifier.dnn") >> net >> labels;
    softmax<anet_type::subnet_type> snet;
    snet.subnet() = net.subnet();
    matrix<float, 1, 1000> p = sum_rows(mat(snet(crops.begin(), crops.end()))) / num_crops;
    FILE* f = fopen((out + "/imagenet_p.txt").c_str(), "w");
    for (long i = 0; i < p.size(); ++i) fprintf(f, "%.9g\n", p(i));
    fclose(f);
    return 0;
}

// ---- mmod ----------------------------------------------------------------------------------
static shape_predictor small_shape_predictor(unsigned long parts, dlib::rand& rnd) {
    // one cascade of two depth-2 trees over 8 feature pixels: enough to give every field of
    // the serialization a non-trivial value (dnnpy does not read it: only skips its bytes)
    matrix<float, 0, 1> initial(2 * parts);
    for (long i = 0; i < initial.size(); ++i) initial(i) = rnd.get_random_float() - 0.5f;
    std::vector<dlib::vector<float, 2>> pixels;
    for (int i = 0; i < 8; ++i) pixels.push_back({rnd.get_random_float() - 0.5f, rnd.get_random_float() - 0.5f});
    std::vector<impl::regression_tree> trees(2);
    for (auto& t : trees) {
        for (int i = 0; i < 3; ++i)
            t.splits.push_back({rnd.get_random_32bit_number() % 8, rnd.get_random_32bit_number() % 8,
                                rnd.get_random_float() * 20 - 10});
        for (int i = 0; i < 4; ++i) {
            matrix<float, 0, 1> leaf(2 * parts);
            for (long j = 0; j < leaf.size(); ++j) leaf(j) = 0.1f * (rnd.get_random_float() - 0.5f);
            t.leaf_values.push_back(leaf);
        }
    }
    return shape_predictor(initial, {trees}, {pixels});
}

static matrix<rgb_alpha_pixel> small_rgba(long nr, long nc, dlib::rand& rnd) {
    matrix<rgb_alpha_pixel> m(nr, nc);
    for (long r = 0; r < nr; ++r)
        for (long c = 0; c < nc; ++c)
            m(r, c) = rgb_alpha_pixel(rnd.get_random_8bit_number(), rnd.get_random_8bit_number(),
                                      rnd.get_random_8bit_number(), rnd.get_random_8bit_number());
    return m;
}

template <typename written_type, typename example_type>
static int mmod(const std::string& out, const std::string& variant, const std::string& file,
                const std::vector<mmod_options::detector_window_details>& windows,
                unsigned long parts, bool hipster, const std::vector<matrix<rgb_pixel>>& images) {
    const std::string path = out + "/" + file;
    dlib::rand prnd(1);
    size_t net_bytes = 0;
    {
        mmod_options options;
        options.detector_windows = windows;
        written_type net(options);
        net.subnet().layer_details().set_num_filters(windows.size());
        visit_computational_layers(net, conv_mode());
        // two samples: sizes every layer and, in a bn_con net, sets the running statistics
        std::vector<matrix<rgb_pixel>> two = {images[0], fliplr(images[0])};
        resizable_tensor x;
        net.to_tensor(two.begin(), two.end(), x);
        net.subnet().forward(x);
        visit_computational_layers(net, fill_norm{&prnd});
        net.to_tensor(images.begin(), images.begin() + 1, x);
        const tensor& scores = net.subnet().forward(x);  // one sample: bn_ uses its running stats
        std::vector<float> v(scores.host(), scores.host() + scores.size());
        std::sort(v.begin(), v.end());
        const float q = v[size_t(0.98 * (v.size() - 1))];
        tensor& p = net.subnet().layer_details().get_layer_params();
        for (size_t k = 0; k < windows.size(); ++k) p.host()[p.size() - windows.size() + k] -= q;
        net.clean();
        std::ostringstream only_net;
        serialize(net, only_net);
        net_bytes = only_net.str().size();
        shape_predictor sp = small_shape_predictor(parts, prnd);
        if (hipster)
            serialize(path) << net << sp << small_rgba(12, 20, prnd) << small_rgba(6, 16, prnd);
        else
            serialize(path) << net << sp;
    }
    // what the example does with the file
    example_type net;
    shape_predictor sp;
    if (hipster) {
        matrix<rgb_alpha_pixel> glasses, mustache;
        deserialize(path) >> net >> sp >> glasses >> mustache;
    } else {
        deserialize(path) >> net >> sp;
    }
    FILE* f = fopen((out + "/" + variant + "_dets.txt").c_str(), "w");
    for (size_t i = 0; i < images.size(); ++i) {
        std::vector<mmod_rect> dets = net(images[i]);
        fprintf(f, "image %zu %zu\n", i, dets.size());
        for (auto&& d : dets)
            fprintf(f, "%ld %ld %ld %ld %.9g %s\n", d.rect.left(), d.rect.top(), d.rect.right(),
                    d.rect.bottom(), d.detection_confidence, d.label.c_str());
    }
    fclose(f);
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    f = fopen((out + "/" + variant + "_sizes.txt").c_str(), "w");
    fprintf(f, "%ld %zu\n", long(in.tellg()), net_bytes);
    fclose(f);
    return 0;
}

int main(int argc, char** argv) try {
    using dw = mmod_options::detector_window_details;
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "imagenet" && argc == 5)
        return imagenet(argv[2], argv[3], std::stol(argv[4]));
    if (mode == "mmod" && argc >= 5) {
        const std::string out = argv[2], variant = argv[3];
        std::vector<matrix<rgb_pixel>> images;
        for (int i = 4; i < argc; ++i) images.push_back(read_raw(argv[i]));
        if (variant == "rear")
            return mmod<mmod_net<55, bn_con>, mmod_net<55, affine>>(
                out, variant, "mmod_rear_end_vehicle_detector.dat", {dw(70, 30, "rear")}, 4, false, images);
        if (variant == "front_rear")
            return mmod<mmod_net<55, affine>, mmod_net<55, affine>>(
                out, variant, "mmod_front_and_rear_end_vehicle_detector.dat",
                {dw(70, 30, "rear"), dw(60, 34, "front")}, 4, false, images);
        if (variant == "dog")
            return mmod<mmod_net<45, bn_con>, mmod_net<45, affine>>(
                out, variant, "mmod_dog_hipsterizer.dat", {dw(40, 40, "")}, 6, true, images);
    }
    fprintf(stderr, "usage: released_files imagenet OUT IMAGE.raw NUM_CROPS | "
                    "released_files mmod OUT rear|front_rear|dog IMAGE.raw ...\n");
    return 2;
} catch (std::exception& e) {
    fprintf(stderr, "released_files: %s\n", e.what());
    return 1;
}
