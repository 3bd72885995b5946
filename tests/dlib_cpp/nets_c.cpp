// Net types, part C: repeat and tags on the input, bn_ -> affine_ and dropout_ -> multiply_
// conversions, loss_barlow_twins on image pairs, loss_mmod on image pyramids, loss_yolo.
#include "parity.h"

using namespace dlib;

namespace
{
    // tag5 sits at the bottom of every repeated copy (on repeat's input), tag7 on the input
    template <typename SUBNET> using res_block = relu<add_prev5<con<2,3,3,1,1, tag5<SUBNET>>>>;
    template <typename SUBNET> using con_block = htan<con<2,3,3,1,1, SUBNET>>;
    using repeat_tags = loss_mean_squared_multioutput<fc<2, repeat<2, con_block, repeat<2, res_block,
        add_prev7<con<2,3,3,1,1, tag7<input_rgb_image>>>>>>>;
    PARITY_NET("repeat_tags", repeat_tags);

    // trained with bn_ and dropout_, run as affine_ and multiply_ (dlib's converting reads)
    using bn_train = loss_multiclass_log<fc<3, dropout<bn_fc<fc<6, relu<bn_con<con<3,3,3,1,1,
        input<matrix<float>>>>>>>>>>;
    using bn_infer = loss_multiclass_log<fc<3, multiply<affine<fc<6, relu<affine<con<3,3,3,1,1,
        input<matrix<float>>>>>>>>>>;
    PARITY_NET_TWIN("bn_to_affine", bn_train, bn_infer);

    using barlow_twins = loss_barlow_twins<fc<3, relu<bn_fc<fc<4, input_rgb_image_pair>>>>>;
    PARITY_NET("barlow_twins", barlow_twins);

    // loss_mmod_ on image pyramids; the detector windows come from mmod_options' clustering of
    // these boxes (the same boxes as cases.py's MMOD_BOXES)
    std::vector<std::vector<mmod_rect>> mmod_boxes()
    {
        mmod_rect ignored(rectangle(1,14,8,21));
        ignored.ignore = true;
        return {{mmod_rect(rectangle(2,3,7,8)), mmod_rect(rectangle(12,2,23,13))},
                {mmod_rect(rectangle(4,4,9,7)), mmod_rect(rectangle(14,14,17,19)), ignored}};
    }

    // cases.py's _mmod_scores: the last con's filters scaled so the detector scores of the
    // forwarded batch have a standard deviation of 1.5 around a bias of -3.5 (a few percent
    // of positions pass the loss's threshold, about 1% to_label's)
    template <typename NET> void mmod_scores(NET& net)
    {
        const tensor& out = net.subnet().get_output();
        const long nw = net.loss_details().get_options().detector_windows.size();
        const long plane = out.nr() * out.nc();
        const float* p = out.host();
        double sum = 0, sum2 = 0, n = 0;
        for (long s = 0; s < out.num_samples(); ++s)
            for (long k = 0; k < nw; ++k)
                for (long i = 0; i < plane; ++i)
                {
                    const double v = p[(s * out.k() + k) * plane + i];
                    if (v != 0) { sum += v; sum2 += v * v; n += 1; }
                }
        const double sd = std::sqrt(sum2 / n - (sum / n) * (sum / n));
        auto& top = layer<1>(net).layer_details();
        tensor& params = top.get_layer_params();
        const long nf = top.num_filters();
        float* w = params.host();
        for (long i = 0; i + nf < (long)params.size(); ++i)
            w[i] *= (float)(1.5 / sd);
        for (long j = 0; j < nf; ++j)
            w[params.size() - nf + j] = j < nw ? -3.5f : 0.0f;
    }

    using mmod_rgb = loss_mmod<con<3,3,3,1,1, relu<con<4,3,3,1,1,
        input_rgb_image_pyramid<pyramid_down<2>>>>>>;
    PARITY_NET_PREPARED("mmod_rgb", mmod_rgb, [](mmod_rgb& net) {
        // integer channel means: an image corner of value 128 becomes exact zeros (cases.py)
        net.input_layer() = input_rgb_image_pyramid<pyramid_down<2>>(128, 128, 128);
        mmod_options opts(mmod_boxes(), 6, 4);
        opts.be_quiet = true;
        net.loss_details() = loss_mmod_(opts);
    }, mmod_scores<mmod_rgb>);

    using mmod_gray_bbr = loss_mmod<con<15,3,3,1,1, leaky_relu<con<4,5,5,1,1,
        input_grayscale_image_pyramid<pyramid_down<3>>>>>>;
    PARITY_NET_PREPARED("mmod_gray_bbr", mmod_gray_bbr, [](mmod_gray_bbr& net) {
        mmod_options opts(mmod_boxes(), 6, 4);
        opts.be_quiet = true;
        opts.use_bounding_box_regression = true;
        opts.bbr_lambda = 50;
        opts.overlaps_ignore = test_box_overlap(0.5, 0.95);
        net.loss_details() = loss_mmod_(opts);
    }, mmod_scores<mmod_gray_bbr>);

    // two yolo heads (strides 2 and 4), two classes, one anchor each
    using yolo = add_loss_layer<loss_yolo_<tag1, tag2>,
        tag2<sig<con<7,1,1,1,1, max_pool<2,2,2,2, skip3<
        tag1<sig<con<7,1,1,1,1,
        tag3<relu<con<4,3,3,2,2, input_rgb_image>>>>>>>>>>>>;
    PARITY_NET_CONFIGURED("yolo", yolo, [](yolo& net) {
        yolo_options opts;
        opts.labels = {"cat", "dog"};
        opts.add_anchors<tag1>({yolo_options::anchor_box_details(6, 6)});
        opts.add_anchors<tag2>({yolo_options::anchor_box_details(12, 10)});
        net.loss_details() = loss_yolo_<tag1, tag2>(opts);
    });
}
