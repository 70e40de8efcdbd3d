#include "bridge/core/cache.h"
#include "bridge/core/exec/exec.h"
