#include "job.h"

#include <exception>
#include <thread>
#include <utility>

namespace whisper_addon {

Napi::Error CodedError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

Napi::Object Job::Start(Napi::Env env, std::shared_ptr<Job> job, const char* name) {
  Napi::Object handle = Napi::Object::New(env);
  handle.Set("promise", job->deferred_.Promise());
  std::shared_ptr<AbortState> flag = job->abort_;
  handle.Set("abort", Napi::Function::New(
                          env,
                          [flag](const Napi::CallbackInfo& info) -> Napi::Value {
                            flag->Request();
                            return info.Env().Undefined();
                          },
                          "abort"));

  auto* holder = new std::shared_ptr<Job>(job);
  job->tsfn_ = Napi::ThreadSafeFunction::New(
      env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}), name, 0, 1, holder,
      [](Napi::Env, std::shared_ptr<Job>* h) {
        (*h)->ReleaseJsRefs();
        delete h;
      });

  std::thread([job]() { job->RunAndSettle(); }).detach();
  return handle;
}

void Job::SendProgress(int value) {
  Job* self = this;
  tsfn_.NonBlockingCall([self, value](Napi::Env env, Napi::Function) {
    if (!self->settled_) self->OnProgress(env, value);
  });
}

void Job::RunAndSettle() {
  try {
    Run();
  } catch (const std::exception& e) {
    // Nothing whisper.cpp reports throws: an exception here (bad_alloc, a bug) is unexpected.
    Fail("INTERNAL_ERROR", std::string("native exception: ") + e.what());
  }
  if (!failure_ && Aborted()) Fail("ABORTED", "The operation was cancelled.");

  Napi::ThreadSafeFunction tsfn = tsfn_;
  Job* self = this;  // alive until the finalizer, which runs after this call
  tsfn.BlockingCall([self](Napi::Env env, Napi::Function) {
    self->settled_ = true;
    if (self->failure_) {
      self->deferred_.Reject(CodedError(env, self->failure_->code, self->failure_->message).Value());
      return;
    }
    try {
      self->deferred_.Resolve(self->Result(env));
    } catch (const Napi::Error& e) {
      self->deferred_.Reject(e.Value());
    }
  });
  tsfn.Release();
}

}  // namespace whisper_addon
