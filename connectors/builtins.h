// The built-in connectors (FileStreamSource/Sink, DatagenSource, LogSink, BlackholeSink) as one
// plugin descriptor. The runtime registers it explicitly (src/runtime/builtins.cc); nothing here
// runs at load time.
//
// Thread-safety: the descriptor is immutable; builtinPlugins() is safe from any thread.
#pragma once

#include "ferry/plugin.h"

namespace ferry::connectors {

const ferry::PluginDescriptor& builtinPlugins();

}  // namespace ferry::connectors
