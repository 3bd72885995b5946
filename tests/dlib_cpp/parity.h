// The C++ side of dnnpy's parity suite (tests/dlib_cpp): one generic routine per net type,
// run by the driver (driver.cpp) as `parity_driver NAME DIR`.
//
// DIR holds what the Python harness wrote:
//   py.dat       the net written by dnnpy (dnnpy.serialize(net, f, format="dlib"))
//   inputs.bin   the input batch, labels.bin the training labels (blob encoding below)
//   config.bin   f64 learning rate, f32 sgd (weight_decay, momentum), f32 adam (weight_decay,
//                momentum1, momentum2), int64 steps (0: skip the solver steps)
// and the driver writes back:
//   rt.dat       py.dat read by dlib and written again at once (must be the same bytes)
//   fwd.bin      dlib's forward of inputs through py.dat's net: the loss layer's input tensor
//                and its to_label labels
//   sgd.dat, adam.dat, step.bin   py.dat after compute_parameter_gradients + one solver step
//                (step.bin: the two losses and the two final data gradients)
//   own.dat, own_fwd.bin, own.xml   a net dlib made itself (default constructed, configured,
//                forwarded once), its forward, and its net_to_xml
//   twin.dat, twin_fwd.bin  for a net registered with a twin type: py.dat read into the twin,
//                written back, and forwarded
//
// Blob encoding (the Python side is tests/dlib_cpp/blob.py): little-endian; integers int64,
// floats float32, doubles float64, strings and vectors a uint64 count first, matrices int64
// nr, nc then the elements row-major (rgb_pixel: 3 bytes), tensors int64 n, k, nr, nc then
// float32s, std::array<T,K>: K items.
#ifndef DNNPY_PARITY_H_
#define DNNPY_PARITY_H_

#include <dlib/dnn.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace parity
{
    using namespace dlib;

    // ------------------------------------------------------------------------------------
    // blob encoding

    template <typename T> void raw_read(std::istream& in, T& v)
    {
        in.read(reinterpret_cast<char*>(&v), sizeof(T));
        if (!in) throw std::runtime_error("blob: unexpected end of data");
    }
    template <typename T> void raw_write(std::ostream& out, const T& v)
    {
        out.write(reinterpret_cast<const char*>(&v), sizeof(T));
    }

    inline void rd(std::istream& in, long& v) { int64_t x; raw_read(in, x); v = x; }
    inline void rd(std::istream& in, unsigned long& v) { int64_t x; raw_read(in, x); v = x; }
    inline void rd(std::istream& in, float& v) { raw_read(in, v); }
    inline void rd(std::istream& in, double& v) { raw_read(in, v); }
    inline void rd(std::istream& in, unsigned char& v) { raw_read(in, v); }
    inline void rd(std::istream& in, uint16_t& v) { raw_read(in, v); }
    inline void rd(std::istream& in, rgb_pixel& p) { rd(in, p.red); rd(in, p.green); rd(in, p.blue); }
    inline void rd(std::istream& in, bool& v) { unsigned char c; raw_read(in, c); v = c != 0; }
    inline void rd(std::istream& in, std::string& s)
    {
        int64_t n; raw_read(in, n);
        s.resize(n);
        in.read(&s[0], n);
        if (!in) throw std::runtime_error("blob: unexpected end of data in a string");
    }
    inline void rd(std::istream& in, rectangle& r)
    {
        long l, t, rr, b; rd(in, l); rd(in, t); rd(in, rr); rd(in, b);
        r = rectangle(l, t, rr, b);
    }
    template <typename T> void rd(std::istream& in, weighted_label<T>& w)
    {
        long label; rd(in, label); w.label = label; rd(in, w.weight);
    }
    inline void rd(std::istream& in, mmod_rect& m)
    {
        rd(in, m.rect); rd(in, m.detection_confidence); rd(in, m.ignore); rd(in, m.label);
    }
    inline void rd(std::istream& in, yolo_rect& y)
    {
        double l, t, r, b; rd(in, l); rd(in, t); rd(in, r); rd(in, b);
        y.rect = drectangle(l, t, r, b);
        rd(in, y.detection_confidence); rd(in, y.ignore); rd(in, y.label);
    }
    template <typename T, long NR, long NC> void rd(std::istream& in, matrix<T, NR, NC>& m)
    {
        long nr, nc; rd(in, nr); rd(in, nc);
        m.set_size(nr, nc);
        for (long r = 0; r < nr; ++r)
            for (long c = 0; c < nc; ++c)
                rd(in, m(r, c));
    }
    template <typename T> void rd(std::istream& in, array2d<T>& m)
    {
        long nr, nc; rd(in, nr); rd(in, nc);
        m.set_size(nr, nc);
        for (long r = 0; r < nr; ++r)
            for (long c = 0; c < nc; ++c)
                rd(in, m[r][c]);
    }
    template <typename T, size_t K> void rd(std::istream& in, std::array<T, K>& a)
    {
        for (auto& x : a) rd(in, x);
    }
    template <typename A, typename B> void rd(std::istream& in, std::pair<A, B>& p)
    {
        rd(in, p.first); rd(in, p.second);
    }
    inline void rd(std::istream& in, std::map<std::string, std::string>& m)
    {
        int64_t n; raw_read(in, n);
        m.clear();
        for (int64_t i = 0; i < n; ++i) { std::string k, v; rd(in, k); rd(in, v); m[k] = v; }
    }
    inline void rd(std::istream& in, resizable_tensor& t)
    {
        long n, k, nr, nc; rd(in, n); rd(in, k); rd(in, nr); rd(in, nc);
        t.set_size(n, k, nr, nc);
        in.read(reinterpret_cast<char*>(t.host()), sizeof(float) * t.size());
        if (!in) throw std::runtime_error("blob: unexpected end of data in a tensor");
    }
    template <typename T> void rd(std::istream& in, std::vector<T>& v)
    {
        int64_t n; raw_read(in, n);
        v.resize(n);
        for (auto& x : v) rd(in, x);
    }

    inline void wr(std::ostream& out, long v) { raw_write(out, int64_t(v)); }
    inline void wr(std::ostream& out, unsigned long v) { raw_write(out, int64_t(v)); }
    inline void wr(std::ostream& out, float v) { raw_write(out, v); }
    inline void wr(std::ostream& out, double v) { raw_write(out, v); }
    inline void wr(std::ostream& out, uint16_t v) { raw_write(out, v); }
    inline void wr(std::ostream& out, bool v) { raw_write(out, (unsigned char)(v ? 1 : 0)); }
    inline void wr(std::ostream& out, const std::string& s)
    {
        raw_write(out, int64_t(s.size()));
        out.write(s.data(), s.size());
    }
    inline void wr(std::ostream& out, const tensor& t)
    {
        wr(out, long(t.num_samples())); wr(out, long(t.k())); wr(out, long(t.nr())); wr(out, long(t.nc()));
        out.write(reinterpret_cast<const char*>(t.host()), sizeof(float) * t.size());
    }
    inline void wr(std::ostream& out, const rectangle& r)
    {
        wr(out, r.left()); wr(out, r.top()); wr(out, r.right()); wr(out, r.bottom());
    }
    inline void wr(std::ostream& out, const mmod_rect& m)
    {
        wr(out, m.rect); wr(out, m.detection_confidence); wr(out, m.ignore); wr(out, m.label);
    }
    inline void wr(std::ostream& out, const yolo_rect& y)
    {
        wr(out, y.rect.left()); wr(out, y.rect.top()); wr(out, y.rect.right()); wr(out, y.rect.bottom());
        wr(out, y.detection_confidence); wr(out, y.ignore); wr(out, y.label);
        raw_write(out, int64_t(y.labels.size()));
        for (auto& p : y.labels) { wr(out, p.first); wr(out, p.second); }
    }
    template <typename T, long NR, long NC> void wr(std::ostream& out, const matrix<T, NR, NC>& m)
    {
        wr(out, long(m.nr())); wr(out, long(m.nc()));
        for (long r = 0; r < m.nr(); ++r)
            for (long c = 0; c < m.nc(); ++c)
                wr(out, m(r, c));
    }
    template <typename T, size_t K> void wr(std::ostream& out, const std::array<T, K>& a)
    {
        for (auto& x : a) wr(out, x);
    }
    inline void wr(std::ostream& out, const loss_multimulticlass_log_::classifier_output& c)
    {
        wr(out, static_cast<std::string>(c));
        raw_write(out, int64_t(c.num_classes()));
        for (size_t i = 0; i < c.num_classes(); ++i) { wr(out, c.label(i)); wr(out, c.probability_of_class(i)); }
    }
    template <typename V> void wr(std::ostream& out, const std::map<std::string, V>& m)
    {
        raw_write(out, int64_t(m.size()));
        for (auto& kv : m) { wr(out, kv.first); wr(out, kv.second); }
    }
    template <typename T> void wr(std::ostream& out, const std::vector<T>& v)
    {
        raw_write(out, int64_t(v.size()));
        for (auto& x : v) wr(out, x);
    }

    template <typename T> T read_file(const std::string& path)
    {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw std::runtime_error("cannot open " + path);
        T v;
        rd(in, v);
        return v;
    }

    // ------------------------------------------------------------------------------------
    // the generic run

    struct config
    {
        double lr = 0.01;
        float sgd_wd = 0.0005f, sgd_momentum = 0.9f;
        float adam_wd = 0.0005f, adam_m1 = 0.9f, adam_m2 = 0.999f;
        long steps = 1;   // 0: forward only (dlib's bn_ cannot back-propagate one sample)
    };

    inline config read_config(const std::string& path)
    {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw std::runtime_error("cannot open " + path);
        config c;
        rd(in, c.lr); rd(in, c.sgd_wd); rd(in, c.sgd_momentum);
        rd(in, c.adam_wd); rd(in, c.adam_m1); rd(in, c.adam_m2);
        rd(in, c.steps);
        return c;
    }

    // what a batch holds: the input type, or resizable_tensor for input_tensor's tensor
    template <typename T> struct container_of { using type = T; };
    template <> struct container_of<tensor> { using type = resizable_tensor; };
    template <typename NET> using input_of = typename container_of<typename NET::input_type>::type;
    template <typename NET> constexpr bool supervised()
    {
        return !std::is_same<typename NET::training_label_type, no_label_type>::value;
    }
    template <typename NET> constexpr bool has_labels_out()
    {
        return !std::is_same<typename NET::output_label_type, no_label_type>::value;
    }

    // the loss layer's input tensor and the labels of to_label
    template <typename NET>
    void write_forward(NET& net, const std::vector<input_of<NET>>& inputs, const std::string& path)
    {
        std::ofstream out(path, std::ios::binary);
        if constexpr (has_labels_out<NET>())
        {
            std::vector<typename NET::output_label_type> labels(inputs.size());
            net(inputs.begin(), inputs.end(), labels.begin());
            wr(out, net.subnet().get_output());
            wr(out, labels);
        }
        else
        {
            resizable_tensor x;
            net.to_tensor(inputs.begin(), inputs.end(), x);
            net.forward(x);
            wr(out, net.subnet().get_output());
        }
    }

    template <typename NET>
    double gradients(NET& net, const std::vector<input_of<NET>>& inputs, const std::string& dir)
    {
        if constexpr (supervised<NET>())
        {
            auto labels = read_file<std::vector<typename NET::training_label_type>>(dir + "/labels.bin");
            return net.compute_parameter_gradients(inputs.begin(), inputs.end(), labels.begin());
        }
        else
        {
            return net.compute_parameter_gradients(inputs.begin(), inputs.end());
        }
    }

    template <typename NET, typename SOLVER>
    double step(const std::string& dir, const std::vector<input_of<NET>>& inputs, SOLVER proto,
                double lr, const std::string& out_name, std::ostream& step_out)
    {
        NET net;
        deserialize(dir + "/py.dat") >> net;
        const double loss = gradients(net, inputs, dir);
        std::vector<SOLVER> solvers(NET::num_computational_layers, proto);
        net.update_parameters(solvers, lr);
        serialize(dir + "/" + out_name) << net;
        wr(step_out, loss);
        wr(step_out, net.get_final_data_gradient());
        return loss;
    }

    template <typename NET, typename TWIN = void>
    int run(const std::string& dir, const std::function<void(NET&)>& configure,
            const std::function<void(NET&)>& after_setup = {})
    {
        const auto inputs = read_file<std::vector<input_of<NET>>>(dir + "/inputs.bin");
        const config cfg = read_config(dir + "/config.bin");
        {
            // dnnpy's file: read, written back at once, then forwarded
            NET net;
            deserialize(dir + "/py.dat") >> net;
            serialize(dir + "/rt.dat") << net;
            write_forward(net, inputs, dir + "/fwd.bin");
        }
        if (cfg.steps)
        {
            std::ofstream step_out(dir + "/step.bin", std::ios::binary);
            step<NET>(dir, inputs, sgd(cfg.sgd_wd, cfg.sgd_momentum), cfg.lr, "sgd.dat", step_out);
            step<NET>(dir, inputs, adam(cfg.adam_wd, cfg.adam_m1, cfg.adam_m2), cfg.lr, "adam.dat", step_out);
        }
        {
            // a net dlib made itself
            NET net;
            if (configure) configure(net);
            write_forward(net, inputs, dir + "/own_fwd.bin");
            if (after_setup)
            {
                // change the parameters dlib initialised (as cases.py's prepare does)
                after_setup(net);
                write_forward(net, inputs, dir + "/own_fwd.bin");
            }
            serialize(dir + "/own.dat") << net;
            std::ofstream xml(dir + "/own.xml");
            net_to_xml(net, xml);
        }
        if constexpr (!std::is_void<TWIN>::value)
        {
            // py.dat read into another type (bn_ records into affine_, dropout_ into multiply_)
            TWIN twin;
            deserialize(dir + "/py.dat") >> twin;
            serialize(dir + "/twin.dat") << twin;
            write_forward(twin, inputs, dir + "/twin_fwd.bin");
        }
        return 0;
    }

    // ------------------------------------------------------------------------------------
    // registry

    using runner = std::function<int(const std::string& dir)>;

    inline std::map<std::string, runner>& registry()
    {
        static std::map<std::string, runner> r;
        return r;
    }

    // rewrite-only types (dlib's released model files): read IN, write OUT
    using rewriter = std::function<void(const std::string& in, const std::string& out)>;

    inline std::map<std::string, rewriter>& rewriters()
    {
        static std::map<std::string, rewriter> r;
        return r;
    }

    struct rewrite_registrar
    {
        template <typename NET>
        rewrite_registrar(const char* name, NET*)
        {
            rewriters()[name] = [](const std::string& in, const std::string& out) {
                NET net;
                deserialize(in) >> net;
                serialize(out) << net;
            };
        }
    };

    struct registrar
    {
        template <typename NET, typename TWIN = void>
        registrar(const char* name, NET*, std::function<void(NET&)> configure = {}, TWIN* = nullptr,
                  std::function<void(NET&)> after_setup = {})
        {
            registry()[name] = [configure, after_setup](const std::string& dir) {
                return run<NET, TWIN>(dir, configure, after_setup);
            };
        }
    };
}

#define PARITY_CAT2(a, b) a##b
#define PARITY_CAT(a, b) PARITY_CAT2(a, b)
// PARITY_NET("name", net_type); PARITY_NET_CONFIGURED("name", net_type, [](net_type& net) {...})
#define PARITY_NET(name, ...) \
    static ::parity::registrar PARITY_CAT(parity_reg_, __LINE__)(name, (__VA_ARGS__*)nullptr)
#define PARITY_NET_CONFIGURED(name, type, ...) \
    static ::parity::registrar PARITY_CAT(parity_reg_, __LINE__)(name, (type*)nullptr, std::function<void(type&)>(__VA_ARGS__))
// PARITY_REWRITE("name", net_type): `parity_driver rewrite name IN OUT` reads and writes a file
#define PARITY_REWRITE(name, ...) \
    static ::parity::rewrite_registrar PARITY_CAT(parity_rw_, __LINE__)(name, (__VA_ARGS__*)nullptr)
// PARITY_NET_PREPARED("name", net_type, configure, after_setup): dlib's own net is forwarded
// once, changed by after_setup(net), and forwarded again before it is written
#define PARITY_NET_PREPARED(name, type, configure, ...) \
    static ::parity::registrar PARITY_CAT(parity_reg_, __LINE__)(name, (type*)nullptr, \
        std::function<void(type&)>(configure), (void*)nullptr, std::function<void(type&)>(__VA_ARGS__))
// PARITY_NET_TWIN("name", net_type, twin_type): py.dat is also read into twin_type
#define PARITY_NET_TWIN(name, type, twin) \
    static ::parity::registrar PARITY_CAT(parity_reg_, __LINE__)(name, (type*)nullptr, std::function<void(type&)>(), (twin*)nullptr)

#endif
