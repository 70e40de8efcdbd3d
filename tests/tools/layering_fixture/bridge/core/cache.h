#pragma once
#include <string>

#include "bridge/base/error.h"
struct Cache {};
