// The C library's malloc, for ASan and TSan builds only (bridge/daemon/allocator.h): those
// sanitizers replace malloc with their own, which must see every block.

#include <malloc.h>

#include <string>

#include "bridge/daemon/allocator.h"

namespace abx::daemon::allocator {

void ReleaseFreeMemory() { malloc_trim(0); }

std::string Name() { return "C library"; }

}  // namespace abx::daemon::allocator
