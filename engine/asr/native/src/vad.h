// whisper.cpp's built-in Silero VAD: weights loaded once per detector, freed by free().
#pragma once

#include <napi.h>
#include <whisper.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "abort.h"

namespace whisper_addon {

// One loaded VAD context. It carries the LSTM state of the detection running on it, so
// detections take turns on it; whisper.cpp resets that state at the start of each one.
struct VadContext {
  std::unique_ptr<whisper_vad_context, void (*)(whisper_vad_context*)> ctx{nullptr, whisper_vad_free};
  AbortRelay relay;  // its CPU backend polls the detection running now
  std::mutex mu;
  std::condition_variable turn;
  bool busy = false;  // guarded by mu
};

class VadModel : public Napi::ObjectWrap<VadModel> {
 public:
  static Napi::Function Define(Napi::Env env);

  // Constructed only from the load job's Result, with an External carrying the loaded context.
  explicit VadModel(const Napi::CallbackInfo& info);

 private:
  // detect(samples, {threshold, minSpeechMs, minSilenceMs, speechPadMs, maxSpeechSec})
  //   → {promise<Float32Array of centiseconds [t0, t1, ...]>, abort}
  Napi::Value Detect(const Napi::CallbackInfo& info);
  Napi::Value Free(const Napi::CallbackInfo& info);

  std::shared_ptr<VadContext> vad_;
};

// vadLoad(modelPath, {threads}) → {promise<VadModel>, abort}
Napi::Value VadLoad(const Napi::CallbackInfo& info);

}  // namespace whisper_addon
