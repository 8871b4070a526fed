// A job: work on its own thread, settled on the JS thread.
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <utility>

#include "abort.h"

namespace whisper_addon {

// Errors cross into JS as Error objects with a `code` that job.ts maps to an EngineError.
struct Failure {
  std::string code;
  std::string message;
};

Napi::Error CodedError(Napi::Env env, const std::string& code, const std::string& message);

class Job {
 public:
  virtual ~Job() = default;

  // Worker thread. Fills the job's results or sets `failure_`.
  virtual void Run() = 0;
  // JS thread, after Run() succeeded.
  virtual Napi::Value Result(Napi::Env env) = 0;
  // JS thread, for each progress value sent with SendProgress().
  virtual void OnProgress(Napi::Env /*env*/, int /*value*/) {}
  // JS thread, in the finalizer: drop any JS references the job holds.
  virtual void ReleaseJsRefs() {}

  bool Aborted() const { return abort_->requested.load(std::memory_order_relaxed); }

  // Starts `job` and returns {promise, abort}. `abort()` may be called any number of times.
  static Napi::Object Start(Napi::Env env, std::shared_ptr<Job> job, const char* name);

 protected:
  explicit Job(Napi::Env env) : deferred_(Napi::Promise::Deferred::New(env)) {}

  void Fail(std::string code, std::string message) { failure_ = std::make_unique<Failure>(Failure{std::move(code), std::move(message)}); }

  // Worker thread. Dropped silently when the queue is closing (the environment is going away).
  void SendProgress(int value);

  std::shared_ptr<AbortState> abort_ = std::make_shared<AbortState>();
  std::unique_ptr<Failure> failure_;

 private:
  void RunAndSettle();

  Napi::Promise::Deferred deferred_;
  Napi::ThreadSafeFunction tsfn_;
  bool settled_ = false;  // JS thread only
};

// Drops a reference off the JS thread: freeing a model releases up to hundreds of MB. Jobs still
// running hold their own reference; the last one out frees.
class ReleaseJob : public Job {
 public:
  ReleaseJob(Napi::Env env, std::shared_ptr<void> held) : Job(env), held_(std::move(held)) {}
  void Run() override { held_.reset(); }
  Napi::Value Result(Napi::Env env) override { return env.Undefined(); }

 private:
  std::shared_ptr<void> held_;
};

}  // namespace whisper_addon
