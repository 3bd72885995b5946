// Ground truth for tests/test_bpe_tokenizer.py: dlib::bpe_tokenizer (dlib/tokenizer/bpe_tokenizer.h)
// trained, encoding, decoding and serialized, printed by dlib's own header.
// Not part of the parity driver: build and run it by hand (dlib's headers only, no library):
//   g++ -O1 -std=c++17 -I ~/.cache/dnnpy/dlib_cpp/src/dlib-20.0.1 tests/dlib_cpp/bpe_tokenizer.cpp -o /tmp/bpe_oracle
//   python -c "import dnnpy; open('/tmp/shakespeare.txt','w').write(dnnpy.datasets.load_shakespeare()[0])"
//   /tmp/bpe_oracle /tmp/shakespeare.txt
// (dlib 20.0.1 sdist, identical to dlib master's header; GCC on x86-64.) Its output is hard-coded
// in the tests (long lists as sha256 of the printed text).
#include <dlib/tokenizer/bpe_tokenizer.h>
#include <cstdio>
#include <fstream>
#include <sstream>
using namespace dlib;

static void print_ints(const char* name, const std::vector<int>& v) {
    printf("%s %zu:", name, v.size());
    for (int x : v) printf(" %d", x);
    printf("\n");
}

static std::string hex(const std::string& s) {
    std::string out; char buf[3];
    for (unsigned char c : s) { snprintf(buf, sizeof buf, "%02x", c); out += buf; }
    return out;
}

static void dump(const char* name, const bpe_tokenizer& tok) {
    std::ostringstream out;
    serialize(tok, out);
    printf("%s vocab %zu without_specials %zu specials %zu\n", name, tok.get_vocab_size(),
           tok.get_vocab_without_specials_size(), tok.get_specials_size());
    printf("%s bytes %s\n", name, hex(out.str()).c_str());
}

static void case_text(const char* name, const std::string& text, size_t vocab, size_t max_bytes,
                      bool verbose, const std::string& probe) {
    bpe_tokenizer tok;
    if (verbose) printf("---- verbose %s\n", name);
    tok.train(text, vocab, max_bytes, verbose);
    if (verbose) printf("---- end verbose\n");
    dump(name, tok);
    print_ints((std::string(name) + " encode_train").c_str(), tok.encode(text));
    print_ints((std::string(name) + " encode_probe").c_str(), tok.encode(probe));
}

int main(int argc, char** argv) {
    // small hand-made texts: overlapping pairs, ties, every delimiter, bytes >= 0x80
    const std::string small = "aaaa aaa\tbb\r\nabab abab aaa  ccc\n\nab\xc3\xa9\xc3\xa9 \xc3\xa9t\xc3\xa9";
    case_text("small300", small, 300, 0, true, "aaaaaaa abba <pad> \xc3\xa9");
    case_text("small290", small, 290, 0, false, "aaaaaaa abba");
    case_text("small284", small, 284, 0, true, "aaaa");
    case_text("small_maxbytes", small, 300, 12, false, "aaaa aaa\tbb");
    {   // decode: bytes, merges, specials shown or not, unknown ids; special ids
        bpe_tokenizer tok;
        tok.train(small, 290, 0, false);
        int v = (int)tok.get_vocab_size();
        std::vector<int> ids = {97, 256, v - 28, v - 1, v, -1, 65, 300};
        printf("decode_show %s\n", hex(tok.decode(ids, true)).c_str());
        printf("decode_hide %s\n", hex(tok.decode(ids, false)).c_str());
        printf("decode_one %s\n", hex(tok.decode(v - 2)).c_str());
        printf("special <text> %d <pad> %d <unk> %d\n", tok.get_special_token_id("<text>"),
               tok.get_special_token_id("<pad>"), tok.get_special_token_id("<unk>"));
        try { tok.get_special_token_id("<nope>"); } catch (std::exception& e) { printf("special_error %s\n", e.what()); }
        bpe_tokenizer fresh;
        printf("fresh <text> %d vocab %zu\n", fresh.get_special_token_id("<text>"), fresh.get_vocab_size());
        dump("fresh", fresh);
    }
    if (argc > 1) {
        std::ifstream f(argv[1], std::ios::binary);
        std::stringstream ss; ss << f.rdbuf();
        const std::string text = ss.str();
        const std::string probe = "ROMEO:\nBut soft, what light through yonder window breaks? \xc3\xa9";
        case_text("shakespeare400", text, 400, 0, true, probe);
        case_text("shakespeare1000", text, 1000, 0, false, probe);
    }
    return 0;
}
