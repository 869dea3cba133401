// simdjson's read-only DOM for the transforms: core/json_fast.h, re-exported here.
#pragma once

#include "core/json_fast.h"
#include "transforms/json_util.h"

namespace ferry::transforms {

using core::boundedFastParser;
using core::toJson;

}  // namespace ferry::transforms
