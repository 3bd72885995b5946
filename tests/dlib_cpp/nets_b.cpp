// Net types, part B: the per-pixel losses, the merge layers (tags, skips, add_prev, concat,
// scale, ...), the rearranging layers and a small attention block.
#include "parity.h"

using namespace dlib;

namespace
{
    using binary_per_pixel = loss_binary_log_per_pixel<con<1,1,1,1,1, resize_to<6,6, relu<con<2,3,3,2,2,
        input<matrix<float>>>>>>>;
    PARITY_NET("binary_per_pixel", binary_per_pixel);

    using multiclass_per_pixel = loss_multiclass_log_per_pixel<con<3,1,1,1,1, add_prev1<relu<con<3,3,3,1,1,
        tag1<con<3,3,3,1,1, input_rgb_image>>>>>>>;
    PARITY_NET("multiclass_per_pixel", multiclass_per_pixel);

    using multiclass_per_pixel_weighted = loss_multiclass_log_per_pixel_weighted<con<3,1,1,1,1,
        mult_prev2<htan<con<3,3,3,1,1, tag2<sig<con<3,3,3,1,1, input<matrix<float>>>>>>>>>>;
    PARITY_NET("multiclass_per_pixel_weighted", multiclass_per_pixel_weighted);

    using mean_squared_per_pixel = loss_mean_squared_per_pixel<con<1,1,1,1,1, resize_prev_to_tagged<tag1, 
        con<2,3,3,2,2, tag1<con<2,3,3,1,1, input<matrix<float>>>>>>>>;
    PARITY_NET("mean_squared_per_pixel", mean_squared_per_pixel);

    // tag3 sits directly on the input: skip3 and the con above it both send it gradient
    using per_channel_and_pixel = loss_mean_squared_per_channel_and_pixel<2, con<2,1,1,1,1,
        concat2<tag1, tag2, tag2<con<2,3,3,1,1, skip3<tag1<con<2,3,3,1,1, tag3<input<matrix<float>>>>>>>>>>>;
    PARITY_NET("per_channel_and_pixel", per_channel_and_pixel);

    // one attention head: x = positional_encodings(embeddings(tokens)); A = softmax_rows(
    // tril_mask(Q K^T)); out = rms_norm(A V + x)
    using attention = loss_multiclass_log<fc<3, rms_norm<add_prev1<
        multm_prev4<skip3<tag4<linear<8, skip1<
        tag3<softmaxm<tril_mask<
        multm_prev2<linear<8, skip1<
        tag2<transpose<linear_no_bias<8,
        tag1<positional_encodings<embeddings<10, 8, input<matrix<float>>>>>>>>>>>>>>>>>>>>>>>;
    PARITY_NET("attention", attention);

    using act_tril = loss_mean_squared_multioutput<fc<2, tril_diag<1,1,2, tril<act4<con<2,3,3,1,1,
        input<matrix<float>>>>>>>>;
    PARITY_NET("act_tril", act_tril);

    using rearrange = loss_mean_squared_multioutput<fc<4, flatten<2,2,2, extract<3,2,2,2,
        slice<0,1,1,4,2,2, reorg<con<2,3,3,1,1, input<matrix<float>>>>>>>>>;
    PARITY_NET("rearrange", rearrange);

    // squeeze-and-excitation with scale_, then scale_prev_
    using scale_se = loss_multiclass_log<fc<3,
        scale_prev2<con<4,1,1,1,1, skip4<
        tag2<htan<fc<4, max_pool_everything<
        tag4<scale1<sig<fc<4, avg_pool_everything<
        tag1<relu<con<4,3,3,1,1, input<matrix<float>>>>>>>>>>>>>>>>>>>;
    PARITY_NET("scale_se", scale_se);

    using softmax_reshape = loss_multiclass_log<fc<3, softmax_all<reshape_to<12,3,3, reshape_to<-1,6,6,
        softmax<con<3,3,3,1,1, input<matrix<float>>>>>>>>>;
    PARITY_NET("softmax_reshape", softmax_reshape);

    using dropout_multiply = loss_mean_squared<fc<1, multiply<dropout_rate<0, affine<fc<4,
        dropout<input<matrix<float>>>>>>>>>;
    PARITY_NET_CONFIGURED("dropout_multiply", dropout_multiply, [](dropout_multiply& net) {
        layer<6>(net).layer_details() = dropout_(0.0f);
    });
}
