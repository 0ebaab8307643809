// The one place a candidate is called. In process for now; issue #3 adds a
// worker-process runner behind the same interface.
#pragma once
#include <string>

#include "assay/abi.h"

namespace assay {

struct RunStatus {
  int code = 0;         // assay_run's return value
  std::string failure;  // set when the call itself blew up (exception escaped)
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual RunStatus run(const assay_call& call) = 0;
};

class InProcessRunner final : public Runner {
 public:
  explicit InProcessRunner(assay_run_fn fn) : fn_(fn) {}
  RunStatus run(const assay_call& call) override;

 private:
  assay_run_fn fn_;
};

}  // namespace assay
