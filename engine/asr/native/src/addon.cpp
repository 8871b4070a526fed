// whisper_addon: a thin N-API binding over whisper.cpp's C API (v1.9.1).
//
// Owns: loading a ggml model once (one whisper_context), running many jobs on it at the same
// time (each with its own whisper_state, on its own thread), language detection, whisper.cpp's
// built-in Silero VAD, and the plumbing between those threads and JavaScript (promises,
// progress, abort). It returns raw whisper.cpp data (centiseconds, token bytes); turning that
// into words, seconds and EngineErrors is engine/asr/model.ts's and words.ts's job.
//
// Threads: every job runs on a std::thread of its own rather than on libuv's pool, because a
// transcription holds its thread for seconds to minutes and four of them would otherwise starve
// every fs/dns/zlib call of the process. Results and progress come back through one
// thread-safe function per job; its finalizer is the only place a job's JS handles are released.
//
// Files: log (whisper.cpp's log switch), abort (the abort hook inside ggml graphs), job (a job
// on its own thread, settled through a thread-safe function), options (reading JS options),
// model_file (the model-file validator and DTW presets), model (load, info, free), transcribe
// (transcription and language detection), vad (whisper.cpp's Silero VAD, loaded once per detector). This file is the
// module's entry point.

#include <napi.h>
#include <ggml-backend.h>
#include <whisper.h>

#include <cstdint>

#include "log.h"
#include "model.h"
#include "vad.h"

#ifdef WHISPER_ADDON_CUDA
// patches/0008: ggml-cuda's CUDA-graph counters, in this order.
extern "C" int ggml_backend_cuda_graph_counters(uint64_t* out, int n);
#endif

namespace whisper_addon {
namespace {

// cudaGraphCounters(): what ggml-cuda did with CUDA graphs in this process (patches/0008), or
// undefined in a build without CUDA.
Napi::Value CudaGraphCounters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
#ifdef WHISPER_ADDON_CUDA
  static const char* const kNames[] = {"computes",     "captures",       "instantiations",
                                       "updates",      "updateFailures", "launches",
                                       "directDisabled", "directIncompatible", "directWarmup",
                                       "warmupResets"};
  constexpr int kCount = static_cast<int>(sizeof(kNames) / sizeof(kNames[0]));
  uint64_t values[kCount] = {};
  const int known = ggml_backend_cuda_graph_counters(values, kCount);
  Napi::Object o = Napi::Object::New(env);
  for (int i = 0; i < kCount && i < known; ++i) o.Set(kNames[i], static_cast<double>(values[i]));
  return o;
#else
  return env.Undefined();
#endif
}

Napi::Value SetLogging(const Napi::CallbackInfo& info) {
  SetLogEnabled(info[0].ToBoolean().Value());
  return info.Env().Undefined();
}

Napi::Value Languages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int n = whisper_lang_max_id() + 1;
  Napi::Array a = Napi::Array::New(env, n);
  for (int i = 0; i < n; ++i) a.Set(static_cast<uint32_t>(i), whisper_lang_str(i));
  return a;
}

// How many GPU devices ggml sees (0 in a CPU build): lets load() pick GPU defaults before loading.
Napi::Value GpuDevices(const Napi::CallbackInfo& info) {
  int n = 0;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    const auto type = ggml_backend_dev_type(ggml_backend_dev_get(i));
    if (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) ++n;
  }
  return Napi::Number::New(info.Env(), n);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  InstallLogCallback();

  auto* data = new AddonData();
  data->model_ctor = Napi::Persistent(Model::Define(env));
  data->vad_ctor = Napi::Persistent(VadModel::Define(env));
  env.SetInstanceData(data);

  exports.Set("load", Napi::Function::New(env, Load, "load"));
  exports.Set("vadLoad", Napi::Function::New(env, VadLoad, "vadLoad"));
  exports.Set("setLogging", Napi::Function::New(env, SetLogging, "setLogging"));
  exports.Set("languages", Napi::Function::New(env, Languages, "languages"));
  exports.Set("gpuDevices", Napi::Function::New(env, GpuDevices, "gpuDevices"));
  exports.Set("cudaGraphCounters", Napi::Function::New(env, CudaGraphCounters, "cudaGraphCounters"));
  exports.Set("version", Napi::String::New(env, whisper_version()));
  exports.Set("systemInfo", Napi::String::New(env, whisper_print_system_info()));
  exports.Set("sampleRate", Napi::Number::New(env, WHISPER_SAMPLE_RATE));
  return exports;
}

}  // namespace
}  // namespace whisper_addon

// NODE_API_MODULE pastes its argument into a name, so it needs an unqualified function.
static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return whisper_addon::Init(env, exports); }

NODE_API_MODULE(whisper_addon, InitModule)
