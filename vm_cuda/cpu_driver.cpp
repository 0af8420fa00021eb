/* Standalone driver of the CPU build (spec §8.6), used for the sanitizer runs:
 *   amk_driver IMAGE_IN IMAGE_OUT THREADS
 * reads an ABI image written by vm_cuda.pack, relocates its buffer pointers to where it
 * was loaded (vm_cuda.pack.relocate does the same in Python), runs it, turns the pointers
 * back into image-relative offsets and writes the image (data and status) to IMAGE_OUT.
 * Exit status: 0 launched (the launch's own result is in the status record), 2 bad usage
 * or unreadable image.
 */
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "megakernel.cu"

static void amk_shift_pointers(unsigned char* image, int64_t delta) {
  const amk_image_header_t* hdr = reinterpret_cast<const amk_image_header_t*>(image);
  amk_buffer_t* table = reinterpret_cast<amk_buffer_t*>(image + hdr->buffers_off);
  for (int32_t i = 0; i < hdr->n_buffers; ++i)
    table[i].ptr = reinterpret_cast<void*>(reinterpret_cast<intptr_t>(table[i].ptr) + delta);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s IMAGE_IN IMAGE_OUT THREADS\n", argv[0]);
    return 2;
  }
  std::FILE* in = std::fopen(argv[1], "rb");
  if (!in) return 2;
  std::vector<unsigned char> bytes;
  unsigned char chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, in)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  std::fclose(in);
  if (bytes.size() < sizeof(amk_image_header_t)) return 2;
  /* 256-aligned copy, as cuMemAlloc would give */
  std::vector<unsigned char> store(bytes.size() + AMK_IMAGE_ALIGN);
  const intptr_t raw = reinterpret_cast<intptr_t>(store.data());
  unsigned char* image = store.data() + ((AMK_IMAGE_ALIGN - raw % AMK_IMAGE_ALIGN) % AMK_IMAGE_ALIGN);
  for (size_t i = 0; i < bytes.size(); ++i) image[i] = bytes[i];
  const amk_image_header_t* hdr = reinterpret_cast<const amk_image_header_t*>(image);
  if (static_cast<size_t>(hdr->image_bytes) != bytes.size()) return 2;
  amk_shift_pointers(image, reinterpret_cast<intptr_t>(image));
  const int rc = amk_cpu_launch(image, std::atoi(argv[3]));
  amk_shift_pointers(image, -reinterpret_cast<intptr_t>(image));
  if (rc != 0) return 2;
  std::FILE* out = std::fopen(argv[2], "wb");
  if (!out) return 2;
  std::fwrite(image, 1, bytes.size(), out);
  std::fclose(out);
  return 0;
}
