// Replays a corpus through LLVMFuzzerTestOneInput without libFuzzer (for gcc builds and CTest):
// every regular file under the given folders (or the given files) is fed once. A crash, sanitizer
// report or abort fails the test; the corpus keeps its regression inputs.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::size_t n = 0;
  auto feed = [&](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    ++n;
  };
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path root(argv[i]);
    if (std::filesystem::is_directory(root)) {
      for (auto& e : std::filesystem::recursive_directory_iterator(root))
        if (e.is_regular_file()) feed(e.path());
    } else if (std::filesystem::exists(root)) {
      feed(root);
    } else {
      std::fprintf(stderr, "no such corpus: %s\n", argv[i]);
      return 2;
    }
  }
  // Also some generated inputs, so an empty corpus still exercises the target.
  std::vector<std::uint8_t> buf;
  for (std::size_t len = 0; len < 512; len += 7) {
    buf.resize(len);
    for (std::size_t k = 0; k < len; ++k) buf[k] = static_cast<std::uint8_t>((k * 131 + len * 17) & 0xFF);
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
    ++n;
  }
  std::printf("replayed %zu inputs\n", n);
  return 0;
}
