// Runs nets that `dnnpy import` wrote in dlib's format from ONNX models, with the C++
// declarations dnnpy printed for them (tests/dlib_cpp/test_onnx_import_in_dlib.py checks that
// dnnpy still prints exactly these; regenerate them with python tests/dlib_cpp/onnx_models.py).
//
//   onnx_import lenet|resnet|inception|unet|transformer NET.dat INPUT.bin OUTPUT.bin
//
// INPUT.bin: int32 N, K, NR, NC, then the float32 tensor; OUTPUT.bin: the same layout, the
// output of the net below its loss layer (its scores).

#include <dlib/dnn.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>

// DECLARATION lenet
using lenet_type = dlib::loss_multiclass_log<dlib::fc<10,dlib::relu<dlib::fc<84,dlib::relu<dlib::fc<120,dlib::max_pool<2,2,2,2,dlib::relu<dlib::con<16,5,5,1,1,dlib::max_pool<2,2,2,2,dlib::relu<dlib::con<6,5,5,1,1,dlib::input_tensor>>>>>>>>>>>>;
// DECLARATION resnet
using resnet_type = dlib::loss_multiclass_log<dlib::fc<5,dlib::avg_pool_everything<dlib::relu<dlib::add_prev2<dlib::affine<dlib::con<16,1,1,2,2,dlib::skip1<dlib::tag2<dlib::affine<dlib::con<16,3,3,1,1,dlib::relu<dlib::affine<dlib::add_layer<dlib::con_<16,3,3,2,2,1,1>,dlib::tag1<dlib::relu<dlib::add_prev1<dlib::affine<dlib::con<8,3,3,1,1,dlib::relu<dlib::affine<dlib::con<8,3,3,1,1,dlib::tag1<dlib::relu<dlib::affine<dlib::con<8,3,3,1,1,dlib::input_tensor>>>>>>>>>>>>>>>>>>>>>>>>>>;
// DECLARATION inception
using inception_type = dlib::loss_multiclass_log<dlib::fc<5,dlib::resize_to<10,10,dlib::upsample<2,dlib::relu<dlib::concat3<dlib::tag4,dlib::tag5,dlib::tag6,dlib::tag6<dlib::skip3<dlib::tag5<dlib::con<5,3,3,1,1,dlib::relu<dlib::con<5,3,3,1,1,dlib::skip3<dlib::tag4<dlib::relu<dlib::con<4,1,1,1,1,dlib::tag3<dlib::relu<dlib::con<6,3,3,1,1,dlib::input_tensor>>>>>>>>>>>>>>>>>>>;
// DECLARATION unet
using unet_type = dlib::loss_multiclass_log<dlib::fc<5,dlib::con<3,3,3,1,1,dlib::concat2<dlib::tag4,dlib::tag5,dlib::tag5<dlib::skip3<dlib::tag4<dlib::cont<4,2,2,2,2,dlib::relu<dlib::con<4,3,3,1,1,dlib::concat2<dlib::tag4,dlib::tag5,dlib::tag5<dlib::skip1<dlib::tag4<dlib::cont<4,2,2,2,2,dlib::relu<dlib::add_prev2<dlib::con<4,3,3,1,1,dlib::tag2<dlib::relu<dlib::add_layer<dlib::con_<4,3,3,2,2,1,1>,dlib::tag1<dlib::relu<dlib::add_layer<dlib::con_<4,3,3,2,2,1,1>,dlib::tag3<dlib::relu<dlib::con<4,3,3,1,1,dlib::input_tensor>>>>>>>>>>>>>>>>>>>>>>>>>>>;
// DECLARATION transformer
using transformer_type = dlib::loss_multiclass_log<dlib::fc<5,dlib::add_prev1<dlib::linear<16,dlib::gelu<dlib::linear<64,dlib::rms_norm<dlib::tag1<dlib::add_prev1<dlib::linear<16,dlib::transpose<dlib::reshape_to<1,16,8,dlib::transpose<dlib::multm_prev3<dlib::softmaxm<dlib::tril_mask<dlib::affine<dlib::multm_prev4<dlib::transpose<dlib::reshape_to<4,4,8,dlib::transpose<dlib::slice<0,0,0,1,8,16,dlib::skip2<dlib::tag4<dlib::reshape_to<4,4,8,dlib::transpose<dlib::slice<0,0,16,1,8,16,dlib::tag2<dlib::skip2<dlib::tag3<dlib::transpose<dlib::reshape_to<4,4,8,dlib::transpose<dlib::slice<0,0,32,1,8,16,dlib::tag2<dlib::linear_no_bias<48,dlib::rms_norm<dlib::tag1<dlib::input<dlib::matrix<float>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>;

template <typename net_type>
int run(const char* dat, const char* in_path, const char* out_path)
{
    net_type net;
    dlib::deserialize(dat) >> net;
    std::ifstream in(in_path, std::ios::binary);
    int32_t dims[4];
    in.read(reinterpret_cast<char*>(dims), sizeof dims);
    dlib::resizable_tensor x(dims[0], dims[1], dims[2], dims[3]);
    in.read(reinterpret_cast<char*>(x.host()), x.size() * sizeof(float));
    if (!in)
    {
        std::cerr << "onnx_import: cannot read " << in_path << "\n";
        return 1;
    }
    const dlib::tensor& y = net.subnet().forward(x);
    std::ofstream out(out_path, std::ios::binary);
    const int32_t odims[4] = {static_cast<int32_t>(y.num_samples()), static_cast<int32_t>(y.k()),
                              static_cast<int32_t>(y.nr()), static_cast<int32_t>(y.nc())};
    out.write(reinterpret_cast<const char*>(odims), sizeof odims);
    out.write(reinterpret_cast<const char*>(y.host()), y.size() * sizeof(float));
    return out ? 0 : 1;
}

int main(int argc, char** argv)
{
    if (argc != 5)
    {
        std::cerr << "usage: onnx_import lenet|resnet|inception|unet|transformer NET.dat INPUT.bin OUTPUT.bin\n";
        return 2;
    }
    const std::string which = argv[1];
    if (which == "lenet")
        return run<lenet_type>(argv[2], argv[3], argv[4]);
    if (which == "resnet")
        return run<resnet_type>(argv[2], argv[3], argv[4]);
    if (which == "inception")
        return run<inception_type>(argv[2], argv[3], argv[4]);
    if (which == "unet")
        return run<unet_type>(argv[2], argv[3], argv[4]);
    if (which == "transformer")
        return run<transformer_type>(argv[2], argv[3], argv[4]);
    std::cerr << "onnx_import: no net named " << which << "\n";
    return 2;
}
