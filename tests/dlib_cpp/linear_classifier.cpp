// Oracle for dnnpy.multiclass_linear_decision_function's files (tests/dlib_cpp/test_dlib_linear_classifier_files.py):
// dlib's own serialize/deserialize of multiclass_linear_decision_function<linear_kernel<...>, unsigned long>.
//   linear_classifier write OUT     writes a fixed 3-class, 4-feature function (labels 0, 5, 9)
//   linear_classifier read IN       reads one, then for each line of 4 numbers on stdin prints
//                                   "label score" (dlib's predict: the best of w.x - b)
#include <dlib/svm.h>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
using namespace dlib;

typedef matrix<double, 0, 1> sample_type;
typedef multiclass_linear_decision_function<linear_kernel<sample_type>, unsigned long> df_type;

int main(int argc, char** argv) {
    if (argc != 3) { std::cerr << "usage: linear_classifier write|read FILE\n"; return 2; }
    std::string mode = argv[1];
    df_type df;
    if (mode == "write") {
        df.weights.set_size(3, 4);
        for (long r = 0; r < 3; ++r)
            for (long c = 0; c < 4; ++c) df.weights(r, c) = (r + 1) * 0.25 - c * 0.125 + r * c * 0.0625;
        df.b.set_size(3);
        df.b = 0.5, -0.25, 0.125;
        df.labels = {0, 5, 9};
        serialize(argv[2]) << df;
        return 0;
    }
    deserialize(argv[2]) >> df;
    sample_type x(4);
    while (std::cin >> x(0) >> x(1) >> x(2) >> x(3)) {
        std::pair<unsigned long, double> p = df.predict(x);
        printf("%lu %.17g\n", p.first, p.second);
    }
    return 0;
}
