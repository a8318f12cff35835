// Stands in for libFuzzer's main when the build has no fuzzing engine: runs
// the harness once on every file named (or found in a directory named) on
// the command line, so the committed corpora are replayed under whatever
// sanitizers the build uses. A crash or sanitizer report fails the run.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

bool is_dir(const std::string &p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void collect(const std::string &p, std::vector<std::string> *out) {
    if (!is_dir(p)) {
        out->push_back(p);
        return;
    }
    DIR *d = ::opendir(p.c_str());
    if (!d) return;
    while (dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == ".." || n[0] == '.') continue;
        out->push_back(p + "/" + n);
    }
    ::closedir(d);
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) collect(argv[i], &files);
    std::sort(files.begin(), files.end());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(""), 0);
    size_t n = 0;
    for (const auto &f : files) {
        std::ifstream in(f, std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "cannot read %s\n", f.c_str());
            return 2;
        }
        std::vector<char> buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        // A copy in a buffer of exactly its size, so ASan sees reads past it.
        std::vector<uint8_t> exact(buf.begin(), buf.end());
        LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
        ++n;
    }
    if (n == 0) {
        std::fprintf(stderr, "no corpus input found in the arguments\n");
        return 2;
    }
    std::printf("replayed %zu inputs\n", n);
    return 0;
}
