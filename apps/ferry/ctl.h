// `ferry ctl`: the command-line client of a worker's REST API.
//
//   ferry ctl [--url URL] list|get|create|apply|status|pause|resume|stop|delete|restart|offsets|
//                         plugins|validate ...
//
// --url defaults to $FERRY_URL, else http://127.0.0.1:8082. Read commands take `-o json` to print
// the server's JSON instead of a table. https:// URLs take --cacert FILE (CAs of the worker's
// certificate), --cert FILE and --key FILE (a client certificate); --user NAME[:PASSWORD]
// (or $FERRY_REST_USER / $FERRY_REST_PASSWORD) sends HTTP basic credentials, --token TOKEN (or
// $FERRY_REST_TOKEN) a bearer token. The HTTP client is libcurl.
// Exit codes: 0 success; 1 the server answered an error (its message is printed) or, for
// `validate`, the config has errors; 2 usage error (bad arguments, unreadable definition file);
// 3 the server cannot be reached (the URL is named).
//
// Thread-safety: run() is meant for main(); the render functions are pure.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/properties.h"
#include "ferry/result.h"

namespace ferry::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitServerError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;

// argv[0] is "ctl". Writes results to std::cout and errors to std::cerr.
int run(int argc, char** argv);
// The same, writing to `out` and `err` (for tests).
int run(int argc, char** argv, std::ostream& out, std::ostream& err);

// --- pure helpers, exposed for tests

// Columns aligned to their widest cell (counted in UTF-8 code points), separated by two spaces,
// with no trailing spaces. Rows shorter than the header are padded with empty cells.
std::string renderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

// Reads a connector definition (JSON {name, config} or flat map, YAML, or .properties) from
// `path`; `nameOverride`, when non-empty, replaces the name. InvalidArgument when the file cannot
// be read or parsed, or when `requireName` and neither the file nor the override names it.
Result<core::ConnectorDefinition> loadDefinition(const std::string& path,
                                                 const std::string& nameOverride,
                                                 bool requireName = true);

// Renderers of server answers (the JSON as GET returned it).
// GET /connectors?expand=status&expand=info -> NAME TYPE STATE TASKS WORKER.
std::string renderConnectorList(const nlohmann::json& expanded);
// GET /connectors/{name}/status -> header lines, a task table, and traces of FAILED parts.
std::string renderStatus(const nlohmann::json& status);
// GET /connectors/{name} -> name, type, tasks and a KEY VALUE table of the config.
std::string renderConnector(const nlohmann::json& info);
// GET /connectors/{name}/offsets -> PARTITION OFFSET.
std::string renderOffsets(const nlohmann::json& offsets);
// GET /connector-plugins -> CLASS TYPE VERSION.
std::string renderPlugins(const nlohmann::json& plugins);
// GET /pipelines/{name}: name, mode, topic, then its connectors with their states.
std::string renderPipeline(const nlohmann::json& pipeline);
// PUT .../config/validate -> "N errors" and a KEY ERROR table.
std::string renderValidation(const nlohmann::json& configInfos);

}  // namespace ferry::ctl
