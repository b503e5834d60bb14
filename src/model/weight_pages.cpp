// Page arithmetic of packing in place. Tensor data is aligned to the file's alignment (32 bytes by
// default), not to pages, so a page at either end of a packed tensor may also hold the start or end
// of a tensor that is read in file layout (a norm vector, an unpacked matrix): such a page is kept.
// Only the first and last page of another tensor can meet a packed tensor's end pages (tensors do
// not overlap; if a hostile file makes them, a released page is only read from the file again).
#include "model/weight_pages.h"

#include <algorithm>

namespace qwenrt {

std::vector<PageRange> PackedOnlyPages(const gguf::File& file,
                                       const std::unordered_set<const uint8_t*>& packed,
                                       size_t page) {
  const auto page_of = [page](const uint8_t* p) { return reinterpret_cast<uintptr_t>(p) / page; };
  std::unordered_set<uintptr_t> kept;  // pages that hold bytes something reads in file layout
  const auto keep_header = [&](const gguf::File& f) {
    if (f.bytes() != nullptr && f.data_offset() > 0)
      kept.insert(page_of(f.bytes() + f.data_offset() - 1));
  };
  keep_header(file);
  for (const gguf::File& part : file.split_parts()) keep_header(part);
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [first, last] page of a packed tensor
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.nbytes == 0 || t.data == nullptr) continue;
    const uintptr_t first = page_of(t.data), last = page_of(t.data + t.nbytes - 1);
    if (packed.count(t.data) != 0) {
      spans.emplace_back(first, last);
    } else {
      kept.insert(first);
      kept.insert(last);
    }
  }
  std::sort(spans.begin(), spans.end());
  std::vector<PageRange> out;
  for (auto [first, last] : spans) {
    if (kept.count(first) != 0) ++first;
    if (kept.count(last) != 0) {
      if (last == 0) continue;
      --last;
    }
    if (first > last) continue;
    if (!out.empty()) {
      // Two packed tensors may share a page: give it to the first. (Not merged into one range:
      // the next tensor may lie in another split part's mapping, adjacent in the address space.)
      const uintptr_t prev_last = page_of(out.back().begin + out.back().bytes - 1);
      first = std::max(first, prev_last + 1);
      if (first > last) continue;
    }
    out.push_back(
        PageRange{reinterpret_cast<const uint8_t*>(first * page), (last - first + 1) * page});
  }
  return out;
}

size_t ReleasePages(const gguf::File& file, const std::vector<PageRange>& ranges) {
  size_t released = 0;
  for (const PageRange& r : ranges) {
    if (file.ReleasePages(r.begin, r.bytes)) released += r.bytes;
  }
  return released;
}

}  // namespace qwenrt
