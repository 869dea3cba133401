#pragma once
// One backbone producer for many writers - the source tasks of a worker. Kafka Connect gives every
// task its own producer; at thousands of tasks per worker that is thousands of client instances,
// their threads and their broker connections. Here a worker has one, created on first use, and
// each task writes through a view whose flush() waits for the view's own sends only (a task's
// position commit does not wait for its neighbours' records). Records of one view keep their order
// per queue, as they would on a producer of their own.
#include <memory>
#include <mutex>

#include "backbone/backbone.h"

namespace ferry::backbone {

class SharedProducer {
 public:
  explicit SharedProducer(Backbone& backbone) : backbone_(backbone) {}
  // A view for one writer; the shared producer is created on the first call (an error here is the
  // backbone's refusal to create it, returned to every caller until a later call succeeds).
  Result<std::unique_ptr<Producer>> view();

 private:
  Backbone& backbone_;
  std::mutex mu_;
  std::shared_ptr<Producer> producer_;  // views keep it alive while their callbacks may run
};

}  // namespace ferry::backbone
