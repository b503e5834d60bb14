// The mapped pages of a loaded file that hold nothing but the file-layout rows of packed matrices,
// and their release: once a matrix is packed (packed_weights.h) the CPU matmul reads only the
// packed copy, so keeping the file's pages resident as well would hold the weights twice
// (docs/memory.md, "Packed in place"). The pages stay mapped: whatever still reads the file's rows
// (the reference backend, the CUDA upload) loads them from the file again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "qwenrt/gguf.hpp"

namespace qwenrt {

struct PageRange {
  const uint8_t* begin = nullptr;  // page-aligned
  size_t bytes = 0;                // a multiple of the page size
};

// The page-aligned ranges, disjoint and in address order (one per packed tensor), that lie wholly
// inside the data of the tensors whose data pointer is in `packed` (and the alignment padding
// between them) and share no page with any other tensor's data or with a file header (metadata
// views point there). `page` is the page size (a power of two).
std::vector<PageRange> PackedOnlyPages(const gguf::File& file,
                                       const std::unordered_set<const uint8_t*>& packed,
                                       size_t page);

// Releases `ranges` (gguf::File::ReleasePages) and returns the bytes released: 0 for a file that
// was read or copied into memory, whose pages cannot be read again.
size_t ReleasePages(const gguf::File& file, const std::vector<PageRange>& ranges);

}  // namespace qwenrt
