// The C library's malloc, for ASan and TSan builds only (bridge/allocator.h): those
// sanitizers replace malloc with their own, which must see every block.

#include <malloc.h>

#include <string>

#include "bridge/allocator.h"

namespace abx::bridge::allocator {

void ReleaseFreeMemory() { malloc_trim(0); }

std::string Name() { return "C library"; }

}  // namespace abx::bridge::allocator
