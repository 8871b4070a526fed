#include "model.h"

#include <ggml-backend.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "model_file.h"

#if defined(WHISPER_ADDON_CUDA_LEAN)
namespace {
// Whether ggml sees a GPU: without one a CUDA build computes on the CPU, where every head size works.
bool LeanCudaSeesGpu() {
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    if (ggml_backend_dev_type(ggml_backend_dev_get(i)) == GGML_BACKEND_DEVICE_TYPE_GPU) return true;
  }
  return false;
}
}  // namespace
#endif
#include "options.h"

// patches/0010: the type of the decoder's caches for the states a context makes (F16, or Q8_0 with flash
// attention); false when refused. Defined in the patched whisper.cpp (whisper_batched).
bool whisper_addon_set_kv_type(struct whisper_context* ctx, enum ggml_type type);

namespace whisper_addon {
namespace {

struct LoadedModel {
  ContextPtr ctx;
  ModelInfo info;
  BatcherPtr batcher;
};

class LoadJob : public Job {
 public:
  // batch_size 0: auto (whisper_batcher_auto_size), with `cpu_batch_default` on the CPU backend.
  LoadJob(Napi::Env env, std::string path, whisper_context_params cparams, std::string dtw, int batch_size,
          int cpu_batch_default, whisper_batcher_params bparams, std::string kv_type)
      : Job(env), path_(std::move(path)), cparams_(cparams), dtw_(std::move(dtw)), batch_size_(batch_size),
        cpu_batch_default_(cpu_batch_default), bparams_(bparams), kv_type_(std::move(kv_type)) {}

  void Run() override {
    GgmlHeader h{};
    std::string why;
    if (!ValidateModelFile(path_, h, why)) {
      Fail("MODEL_LOAD_FAILED", "The model file '" + path_ + "' " + why + ".");
      return;
    }
    std::string preset_name;
    if (dtw_ == "auto") {
      preset_name = AutoDtwPreset(h);
    } else if (!dtw_.empty()) {
      preset_name = dtw_;
    }
    if (!preset_name.empty()) {
      whisper_alignment_heads_preset preset;
      if (!DtwPresetFromName(preset_name, preset)) {
        Fail("INVALID_OPTIONS", "Unknown DTW alignment-head preset '" + preset_name + "'.");
        return;
      }
      cparams_.dtw_token_timestamps = true;
      cparams_.dtw_aheads_preset = preset;
    }

    if (Aborted()) return;
    whisper_context* raw = nullptr;
    try {
      raw = whisper_init_from_file_with_params_no_state(path_.c_str(), cparams_);
    } catch (const std::exception& e) {
      Fail("MODEL_LOAD_FAILED", "whisper.cpp could not load the model file '" + path_ + "': " + e.what());
      return;
    }
    if (raw == nullptr) {
      Fail("MODEL_LOAD_FAILED", "whisper.cpp could not load the model file '" + path_ + "'.");
      return;
    }
#if defined(WHISPER_ADDON_CUDA_LEAN)
    // The lean CUDA build (patches/0009) has flash-attention kernels for head size 64 only, every
    // Whisper model's; ggml would run any other's attention on the CPU, with copies each way. Refused.
    if (cparams_.use_gpu && cparams_.flash_attn && LeanCudaSeesGpu()) {
      const int audio = whisper_model_n_audio_state(raw) / std::max(1, whisper_model_n_audio_head(raw));
      const int text = whisper_model_n_text_state(raw) / std::max(1, whisper_model_n_text_head(raw));
      if (audio != 64 || text != 64) {
        whisper_free(raw);
        Fail("MODEL_LOAD_FAILED", "The model file '" + path_ + "' attends with head size " + std::to_string(audio) +
                                      "/" + std::to_string(text) + "; this CUDA build's flash attention has kernels for " +
                                      "head size 64 only (every Whisper model's). Load it with flashAttn: false, or " +
                                      "build with -DWHISPER_ADDON_CUDA_LEAN=OFF.");
        return;
      }
    }
#endif
    // Before any state or batcher slot exists: both allocate their caches in this type.
    if (kv_type_ == "q8_0" && !whisper_addon_set_kv_type(raw, GGML_TYPE_Q8_0)) {
      // Refused for one of two reasons (patches/0010): no flash attention, or a text head that is not
      // whole q8_0 blocks of 32 values (ggml's q8_0 kernels read whole blocks; every Whisper model's
      // head is 64 wide, synthetic-micro's 16).
      const int head = whisper_model_n_text_state(raw) / std::max(1, whisper_model_n_text_head(raw));
      whisper_free(raw);
      Fail("INVALID_OPTIONS", head % 32 != 0 ? "kvType 'q8_0' needs a head size that is a multiple of 32 (q8_0's block); "
                                               "the model file '" + path_ + "' attends with head size " +
                                               std::to_string(head) + ". Load it with kvType: 'f16'."
                                             : std::string("kvType 'q8_0' needs flash attention (load with flashAttn: true)."));
      return;
    }
    whisper_batcher* batcher = nullptr;
    if (batch_size_ == 0) {
      // 'auto' attention is slotted on a GPU with flash attention (the only place auto-size measures).
      const bool slotted = cparams_.flash_attn && bparams_.attention != "per-call";
      batch_size_ = whisper_batcher_auto_size(raw, cpu_batch_default_, kMaxBatch, slotted, bparams_.share_compute);
    }
    if (batch_size_ > 1) {
      bparams_.max_sequences = batch_size_;
      batcher = whisper_batcher_init(raw, bparams_);
      if (batcher == nullptr) {
        whisper_free(raw);
        Fail("MODEL_LOAD_FAILED", "The batched decoder could not be set up for '" + path_ + "'.");
        return;
      }
    }
    loaded_.ctx = ContextPtr(raw, [](whisper_context* c) { whisper_free(c); });
    // The batcher computes with the context's weights: its deleter holds the context until it is freed.
    if (batcher != nullptr) {
      loaded_.batcher = BatcherPtr(batcher, [ctx = loaded_.ctx](whisper_batcher* b) { whisper_batcher_free(b); });
    }
    loaded_.info.batch_size = batcher != nullptr ? batch_size_ : 1;
    loaded_.info.encode_batch = batcher != nullptr ? whisper_batcher_get_params(batcher).encode_batch : 1;
    loaded_.info.batch_attention = batcher != nullptr ? whisper_batcher_get_params(batcher).attention : "none";

    ModelInfo& mi = loaded_.info;
    mi.type = whisper_model_type_readable(raw);
    mi.ftype = whisper_model_ftype(raw);
    mi.multilingual = whisper_is_multilingual(raw) != 0;
    mi.n_mels = whisper_model_n_mels(raw);
    mi.n_vocab = whisper_model_n_vocab(raw);
    mi.n_audio_layer = whisper_model_n_audio_layer(raw);
    mi.n_text_layer = whisper_model_n_text_layer(raw);
    mi.n_text_ctx = whisper_model_n_text_ctx(raw);
    mi.token_eot = whisper_token_eot(raw);
    mi.token_beg = whisper_token_beg(raw);
    mi.system = whisper_print_system_info();
    // With flash attention too: patches/0006 computes the alignment heads' weights beside it.
    mi.dtw = preset_name;
    mi.flash_attn = cparams_.flash_attn;
    mi.kv_type = kv_type_ == "q8_0" ? "q8_0" : "f16";
    // Mirrors whisper.cpp's own device choice (whisper_backend_init_gpu): the n-th GPU device
    // when use_gpu is set; ggml-cuda is the only GPU backend we build.
    mi.backend = "cpu";
    if (cparams_.use_gpu) {
      int gpus = 0;
      for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        const auto type = ggml_backend_dev_type(ggml_backend_dev_get(i));
        if (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) ++gpus;
      }
      if (gpus > cparams_.gpu_device) mi.backend = "cuda";
    }
  }

  Napi::Value Result(Napi::Env env) override {
    auto* data = env.GetInstanceData<AddonData>();
    return data->model_ctor.New({Napi::External<LoadedModel>::New(env, &loaded_)});
  }

 private:
  std::string path_;
  whisper_context_params cparams_;
  std::string dtw_;
  int batch_size_;
  int cpu_batch_default_;
  whisper_batcher_params bparams_;
  std::string kv_type_;
  LoadedModel loaded_;
};

}  // namespace

Model::Model(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Model>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "WhisperModelNative is created by load()");
  }
  LoadedModel* loaded = info[0].As<Napi::External<LoadedModel>>().Data();
  ctx_ = std::move(loaded->ctx);
  info_ = loaded->info;
  batcher_ = std::move(loaded->batcher);
}

Napi::Value Model::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", info_.type);
  o.Set("multilingual", info_.multilingual);
  o.Set("nMels", info_.n_mels);
  o.Set("nVocab", info_.n_vocab);
  o.Set("nAudioLayer", info_.n_audio_layer);
  o.Set("nTextLayer", info_.n_text_layer);
  o.Set("nTextCtx", info_.n_text_ctx);
  o.Set("tokenEot", info_.token_eot);
  o.Set("tokenBeg", info_.token_beg);
  o.Set("backend", info_.backend);
  o.Set("system", info_.system);
  o.Set("flashAttn", info_.flash_attn);
  o.Set("kvType", info_.kv_type);
  if (!info_.dtw.empty()) o.Set("dtw", info_.dtw);
  o.Set("batchSize", info_.batch_size);
  o.Set("encodeBatch", info_.encode_batch);
  o.Set("batchAttention", info_.batch_attention);
  o.Set("ftype", info_.ftype);
  return o;
}

// Counters of the batched decoder (undefined when the model decodes unbatched or is closed).
Napi::Value Model::BatchStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!ctx_ || batcher_ == nullptr) return env.Undefined();
  const whisper_batcher_stats st = whisper_batcher_get_stats(batcher_.get());
  Napi::Object o = Napi::Object::New(env);
  o.Set("steps", static_cast<double>(st.steps));
  o.Set("sequences", static_cast<double>(st.sequences));
  o.Set("tokens", static_cast<double>(st.tokens));
  o.Set("maxInStep", static_cast<double>(st.max_in_step));
  o.Set("computeMs", static_cast<double>(st.compute_us) / 1000.0);
  o.Set("slotted", static_cast<double>(st.slotted));
  o.Set("sameGraphSteps", static_cast<double>(st.same_graph));
  o.Set("sharedCross", static_cast<double>(st.shared_cross));
  o.Set("sharedSelf", static_cast<double>(st.shared_self));
  o.Set("encodeGraphs", static_cast<double>(st.encode_graphs));
  o.Set("encodes", static_cast<double>(st.encodes));
  o.Set("maxInEncode", static_cast<double>(st.max_in_encode));
  o.Set("encodeMs", static_cast<double>(st.encode_us) / 1000.0);
  o.Set("cancelledWaiting", static_cast<double>(st.cancelled_waiting));
  o.Set("abortedGraphs", static_cast<double>(st.aborted_graphs));
  o.Set("pendingSteps", static_cast<double>(st.pending_steps));
  o.Set("pendingEncodes", static_cast<double>(st.pending_encodes));
  o.Set("lent", static_cast<double>(st.lent));
  o.Set("inGraph", static_cast<double>(st.in_graph));
  return o;
}

// What one more window in flight holds in whisper.cpp's buffers, and the batcher's fixed share, from the
// allocator's sizes (whisper_batcher_window_bytes). Creates and frees a whole state on the JS thread:
// for benchmarks and diagnostics, not for a request path.
Napi::Value Model::WindowBytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!ctx_) return env.Undefined();
  const bool slotted = batcher_ != nullptr && whisper_batcher_get_params(batcher_.get()).attention == "slotted";
  const bool shared = batcher_ != nullptr && whisper_batcher_get_params(batcher_.get()).share_compute;
  whisper_batch_window_bytes b = whisper_batcher_window_bytes(ctx_.get(), slotted, shared);
  if (shared) b.shared *= static_cast<size_t>(whisper_batcher_get_params(batcher_.get()).compute_sets);
  Napi::Object o = Napi::Object::New(env);
  o.Set("perWindow", static_cast<double>(b.per_window));
  o.Set("shared", static_cast<double>(b.shared));
  return o;
}

Napi::Value Model::ReleaseTestHold(const Napi::CallbackInfo& info) {
  if (ctx_ && batcher_ != nullptr) whisper_batcher_test_release(batcher_.get());
  return info.Env().Undefined();
}

// gateNextBatch(n, timeoutMs): the self-check's gate (whisper_batcher_gate_next).
Napi::Value Model::GateNextBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "gateNextBatch(n, timeoutMs) takes two numbers").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (ctx_ && batcher_ != nullptr) {
    whisper_batcher_gate_next(batcher_.get(), info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value());
  }
  return env.Undefined();
}

// limitBatch(maxStep, maxEncode): the self-check's licence (whisper_batcher_limit).
Napi::Value Model::LimitBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "limitBatch(maxStep, maxEncode) takes two numbers").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (ctx_ && batcher_ != nullptr) {
    whisper_batcher_limit(batcher_.get(), info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value());
  }
  return env.Undefined();
}

// profileNext(encodeWindows, stepCalls, timeoutMs): benchmarks' per-op profiles (whisper_batcher_profile_next).
Napi::Value Model::ProfileNext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber()) {
    Napi::TypeError::New(env, "profileNext(encodeWindows, stepCalls, timeoutMs) takes three numbers")
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (ctx_ && batcher_ != nullptr) {
    whisper_batcher_profile_next(batcher_.get(), info[0].As<Napi::Number>().Int32Value(),
                                 info[1].As<Napi::Number>().Int32Value(), info[2].As<Napi::Number>().Int32Value());
  }
  return env.Undefined();
}

// takeProfiles(): the profiles taken since the last call, times in ms (empty without a batcher).
Napi::Value Model::TakeProfiles(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<whisper_batch_profile> profiles;
  if (ctx_ && batcher_ != nullptr) profiles = whisper_batcher_take_profiles(batcher_.get());
  Napi::Array out = Napi::Array::New(env, profiles.size());
  for (size_t i = 0; i < profiles.size(); ++i) {
    const whisper_batch_profile& p = profiles[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("graph", p.graph);
    o.Set("windows", p.windows);
    o.Set("tokens", p.tokens);
    o.Set("nodes", p.nodes);
    o.Set("graphMs", static_cast<double>(p.graph_ns) / 1e6);
    o.Set("profiledMs", static_cast<double>(p.profiled_ns) / 1e6);
    o.Set("nodeMs", static_cast<double>(p.node_ns) / 1e6);
    o.Set("splits", p.splits);
    o.Set("copies", p.copies);
    o.Set("copyBytes", static_cast<double>(p.copy_bytes));
    o.Set("copiedTensors", p.copied_tensors);
    Napi::Array ops = Napi::Array::New(env, p.ops.size());
    for (size_t j = 0; j < p.ops.size(); ++j) {
      Napi::Object op = Napi::Object::New(env);
      op.Set("op", p.ops[j].op);
      op.Set("count", static_cast<double>(p.ops[j].count));
      op.Set("ms", static_cast<double>(p.ops[j].ns) / 1e6);
      op.Set("bytesRead", static_cast<double>(p.ops[j].bytes_read));
      op.Set("bytesWritten", static_cast<double>(p.ops[j].bytes_written));
      op.Set("backend", p.ops[j].backend);
      op.Set("types", p.ops[j].types);
      op.Set("shape", p.ops[j].shape);
      ops.Set(static_cast<uint32_t>(j), op);
    }
    o.Set("ops", ops);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

Napi::Value Model::ResetBatchStats(const Napi::CallbackInfo& info) {
  if (ctx_ && batcher_ != nullptr) whisper_batcher_reset_stats(batcher_.get());
  return info.Env().Undefined();
}

Napi::Value Model::Free(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // The batcher's deleter holds the context: dropping both frees the batcher, then the context.
  auto held = std::make_shared<std::pair<BatcherPtr, ContextPtr>>(std::move(batcher_), std::move(ctx_));
  auto job = std::make_shared<ReleaseJob>(env, std::move(held));
  ctx_.reset();
  batcher_.reset();
  return Job::Start(env, job, "whisper-free");
}

// dropBatcher(): the self-check's fallback. Later transcriptions decode unbatched; the batcher (its slot
// caches, lent compute sets, graph buffers and threads) is freed off the JS thread, or by the last job
// still holding it. {promise, abort}.
Napi::Value Model::DropBatcher(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto job = std::make_shared<ReleaseJob>(env, std::move(batcher_));
  batcher_.reset();
  info_.batch_size = 1;
  info_.encode_batch = 1;
  info_.batch_attention = "none";
  return Job::Start(env, job, "whisper-drop-batcher");
}

// memoryBytes(): from the allocator, what the batcher holds (0 without one), and what the transcriptions'
// states hold in their own buffers now and at most since load (undefined once closed).
Napi::Value Model::MemoryBytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!ctx_) return env.Undefined();
  Napi::Object o = Napi::Object::New(env);
  o.Set("batcher", static_cast<double>(batcher_ ? whisper_batcher_bytes(batcher_.get()) : 0));
  o.Set("states", static_cast<double>(state_bytes_->live.load()));
  o.Set("peakStates", static_cast<double>(state_bytes_->peak.load()));
  o.Set("liveBatchers", whisper_batcher_live());
  return o;
}

Napi::Value Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "path must be a string");
  Napi::Object o = info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
  whisper_context_params cp = whisper_context_default_params();
  cp.use_gpu = GetBool(o, "useGpu", cp.use_gpu);
  cp.gpu_device = GetNumber<int>(o, "gpuDevice", cp.gpu_device);
  cp.flash_attn = GetBool(o, "flashAttn", cp.flash_attn);
  cp.dtw_token_timestamps = false;
  const std::string dtw = GetString(o, "dtw", "");
  const int batch_size = GetNumber<int>(o, "batchSize", 1);  // 0: auto
  const int cpu_batch_default = GetNumber<int>(o, "cpuBatchDefault", 1);
  whisper_batcher_params bp;
  bp.n_threads = GetNumber<int>(o, "batchThreads", bp.n_threads);
  bp.gather_wait_us = GetNumber<int>(o, "batchGatherUs", bp.gather_wait_us);
  bp.attention = GetString(o, "batchAttention", "auto");
  bp.encode_batch = GetNumber<int>(o, "encodeBatch", 1);  // 0: auto
  bp.encode_gather_wait_us = GetNumber<int>(o, "encodeGatherUs", bp.encode_gather_wait_us);
  bp.fault_perturb_slot = GetString(o, "testFault", "") == "perturb-slot";
  bp.test_hold = GetString(o, "testFault", "") == "hold";
  bp.test_plain_attention = GetString(o, "testFault", "") == "plain-attention";
  bp.test_pause_in_graph = GetString(o, "testFault", "") == "pause-in-graph";
  bp.share_compute = GetBool(o, "shareCompute", bp.share_compute);
  bp.enc_flatten = GetBool(o, "encFlatten", false);
  bp.enc_f16_act = GetBool(o, "encF16Act", false);
  bp.enc_plain_attn = GetBool(o, "encPlainAttn", false);
  bp.enc_prec_f32 = GetBool(o, "encPrecF32", false);
  auto job = std::make_shared<LoadJob>(env, info[0].As<Napi::String>().Utf8Value(), cp, dtw, batch_size,
                                       cpu_batch_default, bp, GetString(o, "kvType", "f16"));
  return Job::Start(env, job, "whisper-load");
}

}  // namespace whisper_addon
