// Net types, part A: the classification and regression losses over the plain inputs.
// Each PARITY_NET name is a case in test_dlib_parity.py, which declares the same type with
// dnnpy's brackets (see that module for the inputs, labels and what each case covers).
#include "parity.h"

using namespace dlib;

namespace
{
    using multiclass = loss_multiclass_log<fc<3, relu<fc<8, max_pool<2,2,2,2, relu<con<4,3,3,1,1,
        input<matrix<unsigned char>>>>>>>>>;
    PARITY_NET("multiclass", multiclass);

    using multiclass_rgb_matrix = loss_multiclass_log<fc<3, relu<con<2,3,3,1,1,
        input<matrix<rgb_pixel>>>>>>;
    PARITY_NET("multiclass_rgb_matrix", multiclass_rgb_matrix);

    using multiclass_weighted = loss_multiclass_log_weighted<fc_no_bias<3, avg_pool<2,2,2,2,
        prelu<con<3,3,3,1,1, input<matrix<float>>>>>>>;
    PARITY_NET("multiclass_weighted", multiclass_weighted);

    using binary_hinge = loss_binary_hinge<fc<1, htan<bn_fc<fc<6, input<std::array<matrix<float>,2>>>>>>>;
    PARITY_NET("binary_hinge", binary_hinge);

    using binary_log = loss_binary_log<fc<1, sig<bn_con<con<3,3,3,1,1, input<array2d<unsigned char>>>>>>>;
    PARITY_NET("binary_log", binary_log);
    // one sample: bn_ runs in inference mode (its running statistics)
    PARITY_NET("binary_log_one_sample", binary_log);

    using multimulticlass = loss_multimulticlass_log<fc<5, leaky_relu<fc<6, input_rgb_image>>>>;
    PARITY_NET_CONFIGURED("multimulticlass", multimulticlass, [](multimulticlass& net) {
        std::map<std::string, std::vector<std::string>> labels;
        labels["size"] = {"small", "large"};
        labels["color"] = {"red", "green", "blue"};
        net.loss_details() = loss_multimulticlass_log_(labels);
    });

    using multibinary = loss_multibinary_log<fc<3, mish<con<2,3,3,2,2, input_rgb_image_sized<7>>>>>;
    PARITY_NET_CONFIGURED("multibinary", multibinary, [](multibinary& net) {
        net.loss_details() = loss_multibinary_log_(1.5);
    });

    using metric = loss_metric<l2normalize<fc<4, gelu<con<3,3,3,1,1, input<matrix<float>>>>>>>;
    PARITY_NET("metric", metric);

    using ranking = loss_ranking<fc<1, silu<cont<2,3,3,2,2, input<matrix<float>>>>>>;
    PARITY_NET("ranking", ranking);

    using epsilon_insensitive = loss_epsilon_insensitive<fc<1, elu<layer_norm<con<3,3,3,1,1,
        input<matrix<float>>>>>>>;
    PARITY_NET_CONFIGURED("epsilon_insensitive", epsilon_insensitive, [](epsilon_insensitive& net) {
        net.loss_details() = loss_epsilon_insensitive_(0.1);
    });

    using mean_squared = loss_mean_squared<fc<1, clipped_relu<rms_norm<fc<5, input_tensor>>>>>;
    PARITY_NET_CONFIGURED("mean_squared", mean_squared, [](mean_squared& net) {
        layer<2>(net).layer_details() = clipped_relu_(0.5f);
    });

    using multioutput = loss_mean_squared_multioutput<fc<3, smelu<upsample<2, con<2,3,3,1,1,
        input<matrix<float>>>>>>>;
    PARITY_NET("multioutput", multioutput);

    using dot = loss_dot<fc<4, leaky_relu<con<2,3,3,1,1, input<matrix<unsigned char>>>>>>;
    PARITY_NET("dot", dot);
}
