// The web console's files, built from web/console at build time and compiled into the binary
// (web/embed_assets.py writes the table). A build without Node has none and says why.
#pragma once

#include <span>
#include <string_view>

#include "rest/console.h"

namespace ferry::web {

std::span<const rest::ConsoleAsset> consoleAssets();
// Empty when the console is built in; otherwise why not (for the log and GET /ui/).
std::string_view consoleMissingReason();

using rest::ConsoleAsset;

}  // namespace ferry::web
