#pragma once
#include "bridge/core/cache.h"
struct Exec {};
