// The loaded model, shared by every job that runs on it.
#pragma once

#include <napi.h>
#include <whisper.h>

#include <atomic>
#include <memory>
#include <string>

#include "job.h"
#include "whisper-batch.h"

namespace whisper_addon {

using ContextPtr = std::shared_ptr<whisper_context>;
// The batcher computes with its context's weights: its deleter holds the context until it is freed.
// Jobs hold it too, so dropBatcher() (a self-check fallback) frees it once the last of them is done.
using BatcherPtr = std::shared_ptr<whisper_batcher>;

// Bytes the model's transcriptions hold in their states' own buffers (whisper_batch_state_bytes), now
// and at most, summed over the jobs in flight: what the allocator gave them, for the memory budget.
struct StateBytes {
  std::atomic<size_t> live{0};
  std::atomic<size_t> peak{0};
  void Add(size_t n) {
    const size_t now = live.fetch_add(n) + n;
    size_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
  void Sub(size_t n) { live.fetch_sub(n); }
};

struct ModelInfo {
  std::string type;
  bool multilingual = false;
  int n_mels = 0, n_vocab = 0, n_audio_layer = 0, n_text_layer = 0, n_text_ctx = 0;
  int token_eot = 0, token_beg = 0;
  std::string backend;
  std::string system;
  std::string dtw;  // preset name, empty when DTW is off
  bool flash_attn = false;
  std::string kv_type = "f16";  // the decoder's self- and cross-attention caches: "f16" or "q8_0" (patches/0010)
  int batch_size = 1;  // > 1: decoder steps of concurrent jobs share one graph (batch/whisper-batch.h)
  int encode_batch = 1;  // > 1: encoder passes of concurrent jobs share one graph
  std::string batch_attention = "none";  // "slotted" or "per-call" when batched
  int ftype = 0;  // the weights' file type (whisper_model_ftype: 0 f32, 1 f16, 2 q4_0, ...)
};

constexpr int kMaxBatch = 256;  // engine/asr/batching.ts MAX_BATCH

struct AddonData {
  Napi::FunctionReference model_ctor;
  Napi::FunctionReference vad_ctor;
};

class Model : public Napi::ObjectWrap<Model> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "WhisperModelNative",
                       {
                           InstanceMethod<&Model::Info>("info"),
                           InstanceMethod<&Model::Transcribe>("transcribe"),
                           InstanceMethod<&Model::DetectLanguage>("detectLanguage"),
                           InstanceMethod<&Model::Free>("free"),
                           InstanceMethod<&Model::BatchStats>("batchStats"),
                           InstanceMethod<&Model::ResetBatchStats>("resetBatchStats"),
                           InstanceMethod<&Model::ReleaseTestHold>("releaseTestHold"),
                           InstanceMethod<&Model::GateNextBatch>("gateNextBatch"),
                           InstanceMethod<&Model::LimitBatch>("limitBatch"),
                           InstanceMethod<&Model::ProfileNext>("profileNext"),
                           InstanceMethod<&Model::TakeProfiles>("takeProfiles"),
                           InstanceMethod<&Model::WindowBytes>("windowBytes"),
                           InstanceMethod<&Model::DropBatcher>("dropBatcher"),
                           InstanceMethod<&Model::MemoryBytes>("memoryBytes"),
                       });
  }

  // Constructed only from LoadJob::Result, with an External carrying the loaded context.
  explicit Model(const Napi::CallbackInfo& info);

  ContextPtr ctx_;
  ModelInfo info_;
  // Null when unbatched, after dropBatcher(), and once freed.
  BatcherPtr batcher_;
  std::shared_ptr<StateBytes> state_bytes_ = std::make_shared<StateBytes>();

 private:
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Transcribe(const Napi::CallbackInfo& info);
  Napi::Value DetectLanguage(const Napi::CallbackInfo& info);
  Napi::Value Free(const Napi::CallbackInfo& info);
  Napi::Value BatchStats(const Napi::CallbackInfo& info);
  Napi::Value WindowBytes(const Napi::CallbackInfo& info);
  Napi::Value ReleaseTestHold(const Napi::CallbackInfo& info);
  Napi::Value GateNextBatch(const Napi::CallbackInfo& info);
  Napi::Value LimitBatch(const Napi::CallbackInfo& info);
  Napi::Value ProfileNext(const Napi::CallbackInfo& info);
  Napi::Value TakeProfiles(const Napi::CallbackInfo& info);
  Napi::Value ResetBatchStats(const Napi::CallbackInfo& info);
  Napi::Value DropBatcher(const Napi::CallbackInfo& info);
  Napi::Value MemoryBytes(const Napi::CallbackInfo& info);

  ContextPtr Context(Napi::Env env) {
    if (!ctx_) throw CodedError(env, "MODEL_CLOSED", "The model has been closed.");
    return ctx_;
  }
};

// load(path, {useGpu, gpuDevice, flashAttn, dtw, batchSize, batchThreads, batchGatherUs, cpuBatchDefault})
//   → {promise<Model>, abort}
Napi::Value Load(const Napi::CallbackInfo& info);

}  // namespace whisper_addon
