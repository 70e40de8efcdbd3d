#include "bridge/core/exec/exec.h"

#include "bridge/base/error.h"
