// A POST /rules/test body (parseRuleTrial) must be parsed or refused, never crash; its records'
// keys and values (strings re-parsed as JSON for the answer) must render without deep recursion.
// Invariant: the answer holds one entry per record, and rendering it twice gives the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "rest/rule_trial.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  using namespace ferry::rest;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto trial = parseRuleTrial(body);
  if (!trial.isOk()) return 0;
  if (trial->records.empty() || trial->records.size() > kMaxTrialRecords) std::abort();
  // As if a one-step chain kept every record unchanged (the answer renders keys and values).
  std::vector<std::vector<runtime::TransformChain::StepTrace>> traces;
  for (const auto& r : trial->records) {
    runtime::TransformChain::StepTrace step;
    step.alias = "t";
    step.type = "Identity";
    step.after = r;
    traces.push_back({step});
  }
  const Json answer = ruleTrialJson(traces, trial->records);
  if (!answer.contains("records") || answer["records"].size() != trial->records.size()) std::abort();
  const std::string text = dumpJson(answer);
  if (dumpJson(ruleTrialJson(traces, trial->records)) != text) std::abort();
  return 0;
}
