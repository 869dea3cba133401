// ferry connector SDK — everything a connector author needs, in one include.
// Only the C++ standard library is used here.
#pragma once

#include "ferry/config.h"
#include "ferry/connector.h"
#include "ferry/plugin.h"
#include "ferry/push_source.h"
#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/schema.h"
#include "ferry/status.h"
#include "ferry/transform.h"
