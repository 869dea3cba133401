// Applying pipelines (control/pipeline.h) to a Herder: the REST routes `/pipelines` and the
// pipeline files a worker is started with (`ferry standalone worker.properties pipeline.json`)
// share these, so a pipeline is validated, created, replaced and deleted the same way whoever
// asks.
//
// A pipeline is the set of connectors whose `pipeline` key names it. Every operation validates
// all of its connectors before it changes any, and undoes what it did when a later step fails:
//  create   AlreadyExists when the pipeline or one of the connector names it needs exists;
//           a failure while creating deletes the connectors created so far.
//  apply    creates, or replaces an existing pipeline: connectors the new definition no longer
//           has are deleted, the others created or updated (hidden secrets kept, as
//           PUT /connectors/x/config does). A failure puts every connector back as it was
//           (configs restored, deleted ones re-created, new ones deleted) as far as the herder
//           lets it; the error says what could not be undone.
//  remove   deletes every connector of the pipeline; NotFound when it has none.
//
// Thread-safety: functions over the Herder, which serialises its own writes; two writers of the
// same pipeline at once are not coordinated (as two PUTs of one connector config are not).
#pragma once

#include <string>
#include <vector>

#include "control/herder.h"
#include "control/pipeline.h"

namespace ferry::control {

// The connectors whose `pipeline` key is `name`, with their configs (as stored: secrets hidden
// as the herder stores them, never masked).
std::vector<PipelineConnector> pipelineConnectors(const Herder& herder, const std::string& name);

// The names of every pipeline, sorted.
std::vector<std::string> pipelineNames(const Herder& herder);

// Validates every connector of the pipeline with the herder's validation; errors are named in the
// pipeline's terms (source.x, sinks[1].y, transforms.z). InvalidArgument listing every error.
Status validatePipeline(const Herder& herder, const PipelineSpec& spec,
                        const std::vector<PipelineConnector>& connectors);

enum class PipelineWrite { kCreate, kCreateOrReplace };

// Creates or replaces the pipeline (see above). Returns true when it was created.
Result<bool> applyPipeline(Herder& herder, const PipelineSpec& spec, PipelineWrite write);

// Deletes every connector of the pipeline.
Status removePipeline(Herder& herder, const std::string& name);

}  // namespace ferry::control
