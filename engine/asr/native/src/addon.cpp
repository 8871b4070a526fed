// whisper_addon: a thin N-API binding over whisper.cpp's C API (v1.9.1).
//
// Owns: loading a ggml model once (one whisper_context), running many jobs on it at the same
// time (each with its own whisper_state, on its own thread), language detection, whisper.cpp's
// built-in Silero VAD, and the plumbing between those threads and JavaScript (promises,
// progress, abort). It returns raw whisper.cpp data (centiseconds, token bytes); turning that
// into words, seconds and EngineErrors is engine/asr/index.ts's job.
//
// Threads: every job runs on a std::thread of its own rather than on libuv's pool, because a
// transcription holds its thread for seconds to minutes and four of them would otherwise starve
// every fs/dns/zlib call of the process. Results and progress come back through one
// thread-safe function per job; its finalizer is the only place a job's JS handles are released.

#include <napi.h>

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <whisper.h>

#include "whisper-batch.h"

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr int kSampleRate = WHISPER_SAMPLE_RATE;
constexpr int kMaxBatch = 256;  // engine/asr/index.ts MAX_BATCH

// ---------------------------------------------------------------------------------------------
// Logging: whisper.cpp and ggml print to stderr by default; we keep them quiet unless asked.

std::atomic<bool> g_log_enabled{false};

void LogCallback(enum ggml_log_level /*level*/, const char* text, void* /*user_data*/) {
  if (g_log_enabled.load(std::memory_order_relaxed) && text != nullptr) {
    std::fputs(text, stderr);
  }
}

// ---------------------------------------------------------------------------------------------
// Abort inside a graph.
//
// whisper.cpp 1.9.1 polls abort_callback only between graphs: after a whole encoder pass, which
// takes seconds on a busy CPU. ggml's CPU backend can poll between nodes, but whisper.cpp never
// hands it a callback. When the addon is linked with --wrap=ggml_backend_init_by_type (Linux,
// see CMakeLists.txt), every CPU backend whisper_init_state creates on a job's thread gets the
// job's AbortState. Node-level aborts are armed only while the encoder runs (or during our own
// language detection): the DTW pass after a segment asserts that its decoder graph succeeds, so
// an abort there would take the process down; decoder graphs are short anyway.

struct AbortState {
  std::atomic<bool> requested{false};
  std::atomic<bool> node_abort_armed{false};
};

bool CpuNodeAbort(void* data) {
  const auto* a = static_cast<const AbortState*>(data);
  return a->node_abort_armed.load(std::memory_order_relaxed) && a->requested.load(std::memory_order_relaxed);
}

thread_local AbortState* t_creating_state_for = nullptr;

// Arms CPU backends created on this thread (by whisper_init_state) with `a` while in scope.
class BackendAbortScope {
 public:
  explicit BackendAbortScope(AbortState* a) { t_creating_state_for = a; }
  ~BackendAbortScope() { t_creating_state_for = nullptr; }
  BackendAbortScope(const BackendAbortScope&) = delete;
  BackendAbortScope& operator=(const BackendAbortScope&) = delete;
};

// Arms node-level abort for the duration of a scope.
class NodeAbortArmed {
 public:
  explicit NodeAbortArmed(AbortState* a) : a_(a) { a_->node_abort_armed.store(true); }
  ~NodeAbortArmed() { a_->node_abort_armed.store(false); }
  NodeAbortArmed(const NodeAbortArmed&) = delete;
  NodeAbortArmed& operator=(const NodeAbortArmed&) = delete;

 private:
  AbortState* a_;
};

}  // namespace

#ifdef WHISPER_ADDON_WRAP_BACKEND_INIT
extern "C" ggml_backend_t __real_ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char* params);
extern "C" ggml_backend_t __wrap_ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char* params) {
  ggml_backend_t b = __real_ggml_backend_init_by_type(type, params);
  if (b != nullptr && type == GGML_BACKEND_DEVICE_TYPE_CPU && t_creating_state_for != nullptr) {
    ggml_backend_cpu_set_abort_callback(b, CpuNodeAbort, t_creating_state_for);
  }
  return b;
}
#endif

namespace {

// ---------------------------------------------------------------------------------------------
// Errors cross into JS as Error objects with a `code` that index.ts maps to an EngineError.

struct Failure {
  std::string code;
  std::string message;
};

Napi::Error CodedError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

// ---------------------------------------------------------------------------------------------
// A job: work on its own thread, settled on the JS thread.

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
  static Napi::Object Start(Napi::Env env, std::shared_ptr<Job> job, const char* name) {
    Napi::Object handle = Napi::Object::New(env);
    handle.Set("promise", job->deferred_.Promise());
    std::shared_ptr<AbortState> flag = job->abort_;
    handle.Set("abort", Napi::Function::New(
                            env,
                            [flag](const Napi::CallbackInfo& info) -> Napi::Value {
                              flag->requested.store(true, std::memory_order_relaxed);
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

 protected:
  explicit Job(Napi::Env env) : deferred_(Napi::Promise::Deferred::New(env)) {}

  void Fail(std::string code, std::string message) { failure_ = std::make_unique<Failure>(Failure{std::move(code), std::move(message)}); }

  // Worker thread. Dropped silently when the queue is closing (the environment is going away).
  void SendProgress(int value) {
    Job* self = this;
    tsfn_.NonBlockingCall([self, value](Napi::Env env, Napi::Function) {
      if (!self->settled_) self->OnProgress(env, value);
    });
  }

  std::shared_ptr<AbortState> abort_ = std::make_shared<AbortState>();
  std::unique_ptr<Failure> failure_;

 private:
  void RunAndSettle() {
    try {
      Run();
    } catch (const std::exception& e) {
      Fail("ASR_FAILED", std::string("native exception: ") + e.what());
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

  Napi::Promise::Deferred deferred_;
  Napi::ThreadSafeFunction tsfn_;
  bool settled_ = false;  // JS thread only
};

// ---------------------------------------------------------------------------------------------
// Small helpers for reading an options object.

template <typename T>
T GetNumber(const Napi::Object& o, const char* key, T fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? static_cast<T>(v.As<Napi::Number>().DoubleValue()) : fallback;
}

bool GetBool(const Napi::Object& o, const char* key, bool fallback) {
  Napi::Value v = o.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : fallback;
}

std::string GetString(const Napi::Object& o, const char* key, const std::string& fallback) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : fallback;
}

std::vector<float> CopySamples(const Napi::Value& v) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    throw Napi::TypeError::New(v.Env(), "samples must be a Float32Array");
  }
  Napi::Float32Array a = v.As<Napi::Float32Array>();
  // A copy: the caller may reuse, transfer or detach its buffer while the job runs.
  return std::vector<float>(a.Data(), a.Data() + a.ElementLength());
}

// ---------------------------------------------------------------------------------------------
// Model file: checked before whisper.cpp loads it; its header also lets dtw:'auto' pick a preset.

struct GgmlHeader {
  int32_t n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
  int32_t n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype;
};

bool ValidFtype(int32_t ftype) {
  switch (static_cast<ggml_ftype>(ftype % GGML_QNT_VERSION_FACTOR)) {
    case GGML_FTYPE_ALL_F32: case GGML_FTYPE_MOSTLY_F16: case GGML_FTYPE_MOSTLY_BF16:
    case GGML_FTYPE_MOSTLY_Q4_0: case GGML_FTYPE_MOSTLY_Q4_1: case GGML_FTYPE_MOSTLY_Q1_0:
    case GGML_FTYPE_MOSTLY_Q5_0: case GGML_FTYPE_MOSTLY_Q5_1: case GGML_FTYPE_MOSTLY_Q8_0:
    case GGML_FTYPE_MOSTLY_MXFP4: case GGML_FTYPE_MOSTLY_NVFP4: case GGML_FTYPE_MOSTLY_Q2_K:
    case GGML_FTYPE_MOSTLY_Q3_K: case GGML_FTYPE_MOSTLY_Q4_K: case GGML_FTYPE_MOSTLY_Q5_K:
    case GGML_FTYPE_MOSTLY_Q6_K: case GGML_FTYPE_MOSTLY_IQ2_XXS: case GGML_FTYPE_MOSTLY_IQ2_XS:
    case GGML_FTYPE_MOSTLY_IQ3_XXS: case GGML_FTYPE_MOSTLY_IQ1_S: case GGML_FTYPE_MOSTLY_IQ1_M:
    case GGML_FTYPE_MOSTLY_IQ4_NL: case GGML_FTYPE_MOSTLY_IQ4_XS: case GGML_FTYPE_MOSTLY_IQ3_S:
    case GGML_FTYPE_MOSTLY_IQ2_S:
      return ftype >= 0;
    default:
      return false;
  }
}

// Walks the whole ggml model file (header, mel filters, vocabulary, tensor headers) before
// whisper.cpp sees it. whisper.cpp trusts these fields: a bad ftype hits a GGML_ASSERT (abort()
// of the whole process), n_dims > 4 overruns a stack array, a huge vocabulary count loops for
// hours. Shapes and names are left to whisper.cpp, which rejects mismatches cleanly.
bool ValidateModelFile(const std::string& path, GgmlHeader& h, std::string& why) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) {
    why = "cannot be opened";
    return false;
  }
  const int64_t size = static_cast<int64_t>(f.tellg());
  f.seekg(0);
  auto read_i32 = [&](int32_t& v) { return static_cast<bool>(f.read(reinterpret_cast<char*>(&v), sizeof v)); };
  auto skip = [&](int64_t n) {
    if (n < 0 || static_cast<int64_t>(f.tellg()) + n > size) return false;
    f.seekg(n, std::ios::cur);
    return static_cast<bool>(f);
  };
  auto in = [](int32_t v, int32_t lo, int32_t hi) { return v >= lo && v <= hi; };

  int32_t magic = 0;
  if (!read_i32(magic) || static_cast<uint32_t>(magic) != 0x67676d6c) {
    why = "is not a ggml whisper model (bad magic)";
    return false;
  }
  if (!f.read(reinterpret_cast<char*>(&h), sizeof h)) {
    why = "is truncated in its header";
    return false;
  }
  if (!in(h.n_vocab, 1, 1 << 20) || !in(h.n_audio_ctx, 1, 1 << 16) || !in(h.n_audio_state, 1, 1 << 14) ||
      !in(h.n_audio_head, 1, 1024) || !in(h.n_audio_layer, 1, 256) || !in(h.n_text_ctx, 1, 1 << 16) ||
      !in(h.n_text_state, 1, 1 << 14) || !in(h.n_text_head, 1, 1024) || !in(h.n_text_layer, 1, 256) ||
      !in(h.n_mels, 1, 512) || !ValidFtype(h.ftype)) {
    why = "has implausible hyper-parameters";
    return false;
  }
  int32_t n_mel = 0, n_fft = 0;
  if (!read_i32(n_mel) || !read_i32(n_fft) || !in(n_mel, 1, 4096) || !in(n_fft, 1, 4096) ||
      !skip(int64_t{n_mel} * n_fft * 4)) {
    why = "has a corrupt mel filter bank";
    return false;
  }
  int32_t n_tokens = 0;
  if (!read_i32(n_tokens) || !in(n_tokens, 0, 1 << 20)) {
    why = "has a corrupt vocabulary";
    return false;
  }
  for (int32_t i = 0; i < n_tokens; ++i) {
    int32_t len = 0;
    if (!read_i32(len) || !in(len, 0, 1 << 16) || !skip(len)) {
      why = "has a corrupt vocabulary";
      return false;
    }
  }
  // Tensors until the end of the file; whisper.cpp stops at a short read the same way.
  while (size - static_cast<int64_t>(f.tellg()) >= 12) {
    int32_t n_dims = 0, length = 0, ttype = 0;
    read_i32(n_dims);
    read_i32(length);
    read_i32(ttype);
    if (!in(n_dims, 1, 4) || !in(length, 1, 1024) || !in(ttype, 0, GGML_TYPE_COUNT - 1) ||
        ggml_blck_size(static_cast<ggml_type>(ttype)) <= 0) {
      why = "has a corrupt tensor header";
      return false;
    }
    int64_t nelements = 1;
    for (int32_t i = 0; i < n_dims; ++i) {
      int32_t ne = 0;
      if (!read_i32(ne) || !in(ne, 1, INT32_MAX)) {
        why = "has a corrupt tensor shape";
        return false;
      }
      nelements *= ne;
      if (nelements > INT32_MAX) {
        why = "has a corrupt tensor shape";
        return false;
      }
    }
    const auto type = static_cast<ggml_type>(ttype);
    const int64_t bytes = nelements / ggml_blck_size(type) * static_cast<int64_t>(ggml_type_size(type));
    if (!skip(length) || !skip(bytes)) {
      why = "is truncated (a tensor runs past the end of the file)";
      return false;
    }
  }
  return true;
}

std::string ModelTypeFromHeader(const GgmlHeader& h) {
  switch (h.n_audio_layer) {
    case 4: return "tiny";
    case 6: return "base";
    case 12: return "small";
    case 24: return "medium";
    case 32: return "large";
    default: return "";
  }
}

// The same names whisper-cli's --dtw accepts.
std::string AutoDtwPreset(const GgmlHeader& h) {
  const std::string type = ModelTypeFromHeader(h);
  if (type.empty()) return "";
  if (type == "large") {
    // v1 and v2 share a shape; v2 is the one in use. v3 has 128 mel bins and one more token.
    if (h.n_vocab == 51866) return h.n_text_layer == 4 ? "large.v3.turbo" : "large.v3";
    return "large.v2";
  }
  return h.n_vocab == 51864 ? type + ".en" : type;
}

bool DtwPresetFromName(const std::string& name, whisper_alignment_heads_preset& out) {
  static const std::pair<const char*, whisper_alignment_heads_preset> kPresets[] = {
      {"tiny", WHISPER_AHEADS_TINY},         {"tiny.en", WHISPER_AHEADS_TINY_EN},
      {"base", WHISPER_AHEADS_BASE},         {"base.en", WHISPER_AHEADS_BASE_EN},
      {"small", WHISPER_AHEADS_SMALL},       {"small.en", WHISPER_AHEADS_SMALL_EN},
      {"medium", WHISPER_AHEADS_MEDIUM},     {"medium.en", WHISPER_AHEADS_MEDIUM_EN},
      {"large.v1", WHISPER_AHEADS_LARGE_V1}, {"large.v2", WHISPER_AHEADS_LARGE_V2},
      {"large.v3", WHISPER_AHEADS_LARGE_V3}, {"large.v3.turbo", WHISPER_AHEADS_LARGE_V3_TURBO},
  };
  for (const auto& p : kPresets) {
    if (name == p.first) {
      out = p.second;
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// The loaded model, shared by every job that runs on it.

using ContextPtr = std::shared_ptr<whisper_context>;

struct ModelInfo {
  std::string type;
  bool multilingual = false;
  int n_mels = 0, n_vocab = 0, n_audio_layer = 0, n_text_layer = 0, n_text_ctx = 0;
  int token_eot = 0, token_beg = 0;
  std::string backend;
  std::string system;
  std::string dtw;  // preset name, empty when DTW is off
  bool flash_attn = false;
  int batch_size = 1;  // > 1: decoder steps of concurrent jobs share one graph (batch/whisper-batch.h)
};

struct AddonData {
  Napi::FunctionReference model_ctor;
};

class LoadJob;
class TranscribeJob;
class DetectLanguageJob;

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
                       });
  }

  // Constructed only from LoadJob::Result, with an External carrying the loaded context.
  explicit Model(const Napi::CallbackInfo& info);

  ContextPtr ctx_;
  ModelInfo info_;
  // Owned by ctx_'s deleter (freed just before the context); valid while ctx_ is.
  whisper_batcher* batcher_ = nullptr;

 private:
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Transcribe(const Napi::CallbackInfo& info);
  Napi::Value DetectLanguage(const Napi::CallbackInfo& info);
  Napi::Value Free(const Napi::CallbackInfo& info);
  Napi::Value BatchStats(const Napi::CallbackInfo& info);

  ContextPtr Context(Napi::Env env) {
    if (!ctx_) throw CodedError(env, "INVALID_OPTIONS", "The model has been closed.");
    return ctx_;
  }
};

struct LoadedModel {
  ContextPtr ctx;
  ModelInfo info;
  whisper_batcher* batcher = nullptr;
};

class LoadJob : public Job {
 public:
  // batch_size 0: auto (whisper_batcher_auto_size), with `cpu_batch_default` on the CPU backend.
  LoadJob(Napi::Env env, std::string path, whisper_context_params cparams, std::string dtw, int batch_size,
          int cpu_batch_default, whisper_batcher_params bparams)
      : Job(env), path_(std::move(path)), cparams_(cparams), dtw_(std::move(dtw)), batch_size_(batch_size),
        cpu_batch_default_(cpu_batch_default), bparams_(bparams) {}

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
    whisper_batcher* batcher = nullptr;
    if (batch_size_ == 0) batch_size_ = whisper_batcher_auto_size(raw, cpu_batch_default_, kMaxBatch);
    if (batch_size_ > 1) {
      bparams_.max_sequences = batch_size_;
      batcher = whisper_batcher_init(raw, bparams_);
      if (batcher == nullptr) {
        whisper_free(raw);
        Fail("MODEL_LOAD_FAILED", "The batched decoder could not be set up for '" + path_ + "'.");
        return;
      }
    }
    // The batcher computes with the context's weights: it goes first, once the last job is done.
    loaded_.ctx = ContextPtr(raw, [batcher](whisper_context* c) {
      whisper_batcher_free(batcher);
      whisper_free(c);
    });
    loaded_.batcher = batcher;
    loaded_.info.batch_size = batcher != nullptr ? batch_size_ : 1;

    ModelInfo& mi = loaded_.info;
    mi.type = whisper_model_type_readable(raw);
    mi.multilingual = whisper_is_multilingual(raw) != 0;
    mi.n_mels = whisper_model_n_mels(raw);
    mi.n_vocab = whisper_model_n_vocab(raw);
    mi.n_audio_layer = whisper_model_n_audio_layer(raw);
    mi.n_text_layer = whisper_model_n_text_layer(raw);
    mi.n_text_ctx = whisper_model_n_text_ctx(raw);
    mi.token_eot = whisper_token_eot(raw);
    mi.token_beg = whisper_token_beg(raw);
    mi.system = whisper_print_system_info();
    // whisper.cpp turns DTW off when flash attention is on.
    mi.dtw = cparams_.flash_attn ? "" : preset_name;
    mi.flash_attn = cparams_.flash_attn;
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
  LoadedModel loaded_;
};

Model::Model(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Model>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "WhisperModelNative is created by load()");
  }
  LoadedModel* loaded = info[0].As<Napi::External<LoadedModel>>().Data();
  ctx_ = std::move(loaded->ctx);
  info_ = loaded->info;
  batcher_ = loaded->batcher;
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
  if (!info_.dtw.empty()) o.Set("dtw", info_.dtw);
  o.Set("batchSize", info_.batch_size);
  return o;
}

// Counters of the batched decoder (undefined when the model decodes unbatched or is closed).
Napi::Value Model::BatchStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!ctx_ || batcher_ == nullptr) return env.Undefined();
  const whisper_batcher_stats st = whisper_batcher_get_stats(batcher_);
  Napi::Object o = Napi::Object::New(env);
  o.Set("steps", static_cast<double>(st.steps));
  o.Set("sequences", static_cast<double>(st.sequences));
  o.Set("tokens", static_cast<double>(st.tokens));
  o.Set("maxInStep", static_cast<double>(st.max_in_step));
  o.Set("computeMs", static_cast<double>(st.compute_us) / 1000.0);
  return o;
}

// ---------------------------------------------------------------------------------------------
// Transcription.

struct TranscribeParams {
  std::string language;  // empty: detect
  bool detect_language = true;
  bool translate = false;
  bool token_timestamps = true;
  bool no_context = true;
  bool single_segment = false;
  int max_tokens = 0;
  int threads = 4;
  int beam_size = 1;
  int best_of = 1;
  float temperature = 0.0f;
  float temperature_inc = 0.2f;
  float entropy_thold = 2.4f;
  float logprob_thold = -1.0f;
  float no_speech_thold = 0.6f;
  bool has_prompt = false;
  std::string initial_prompt;
  // Benchmarks only: decode exactly this many text tokens per window (no timestamps, end-of-text
  // suppressed, no fallback), as the transformers peer does with min = max new tokens.
  int exact_tokens = 0;
};

TranscribeParams ParseTranscribeParams(const Napi::Object& o) {
  TranscribeParams p;
  p.language = GetString(o, "language", "");
  p.detect_language = p.language.empty() || p.language == "auto";
  p.translate = GetBool(o, "translate", p.translate);
  p.token_timestamps = GetBool(o, "tokenTimestamps", p.token_timestamps);
  p.no_context = GetBool(o, "noContext", p.no_context);
  p.single_segment = GetBool(o, "singleSegment", p.single_segment);
  p.max_tokens = GetNumber<int>(o, "maxTokens", p.max_tokens);
  p.threads = GetNumber<int>(o, "threads", p.threads);
  p.beam_size = GetNumber<int>(o, "beamSize", p.beam_size);
  p.best_of = GetNumber<int>(o, "bestOf", p.best_of);
  p.temperature = GetNumber<float>(o, "temperature", p.temperature);
  p.temperature_inc = GetNumber<float>(o, "temperatureInc", p.temperature_inc);
  p.entropy_thold = GetNumber<float>(o, "entropyThold", p.entropy_thold);
  p.logprob_thold = GetNumber<float>(o, "logprobThold", p.logprob_thold);
  p.no_speech_thold = GetNumber<float>(o, "noSpeechThold", p.no_speech_thold);
  p.exact_tokens = GetNumber<int>(o, "exactTokens", p.exact_tokens);
  if (o.Get("initialPrompt").IsString()) {
    p.has_prompt = true;
    p.initial_prompt = GetString(o, "initialPrompt", "");
  }
  return p;
}

struct StateDeleter {
  void operator()(whisper_state* s) const { whisper_free_state(s); }
};
using StatePtr = std::unique_ptr<whisper_state, StateDeleter>;

// whisper.cpp calls this at the end of every encoder pass and decoder step: the encoder is
// over, so node-level aborts are disarmed until the next encoder_begin.
bool AbortCallback(void* user_data) {
  auto* a = static_cast<AbortState*>(user_data);
  a->node_abort_armed.store(false, std::memory_order_relaxed);
  return a->requested.load(std::memory_order_relaxed);
}

bool EncoderBeginCallback(whisper_context*, whisper_state*, void* user_data) {
  auto* a = static_cast<AbortState*>(user_data);
  if (a->requested.load(std::memory_order_relaxed)) return false;
  a->node_abort_armed.store(true, std::memory_order_relaxed);
  return true;
}

StatePtr InitState(whisper_context* ctx, AbortState* abort) {
  BackendAbortScope scope(abort);
  return StatePtr(whisper_init_state(ctx));
}

// Detects the language of the first 30 s; the mel spectrogram must already be in `state`.
bool DetectOnState(whisper_context* ctx, whisper_state* state, int threads, int& lang_id, float& prob) {
  std::vector<float> probs(whisper_lang_max_id() + 1, 0.0f);
  lang_id = whisper_lang_auto_detect_with_state(ctx, state, 0, threads, probs.data());
  if (lang_id < 0) return false;
  prob = probs[lang_id];
  return true;
}

class TranscribeJob : public Job {
 public:
  TranscribeJob(Napi::Env env, ContextPtr ctx, whisper_batcher* batcher, std::vector<float> samples,
                TranscribeParams params, Napi::Function on_progress)
      : Job(env), ctx_(std::move(ctx)), batcher_(batcher), samples_(std::move(samples)), params_(std::move(params)) {
    if (!on_progress.IsEmpty()) on_progress_ = Napi::Persistent(on_progress);
  }

  void Run() override {
    whisper_context* ctx = ctx_.get();
    StatePtr state = InitState(ctx, abort_.get());
    if (!state) {
      Fail("ASR_FAILED", "whisper.cpp could not allocate a decoding state (out of memory?).");
      return;
    }
    const int n = static_cast<int>(samples_.size());

    std::string language = params_.language;
    if (!whisper_is_multilingual(ctx)) {
      language = "en";
    } else if (params_.detect_language) {
      // Detected here rather than inside whisper_full so the probability can be reported.
      if (whisper_pcm_to_mel_with_state(ctx, state.get(), samples_.data(), n, params_.threads) != 0) {
        Fail("ASR_FAILED", "whisper.cpp could not compute the mel spectrogram.");
        return;
      }
      if (Aborted()) return;
      int lang_id = -1;
      float prob = 0.0f;
      bool detected;
      {
        NodeAbortArmed armed(abort_.get());
        detected = DetectOnState(ctx, state.get(), params_.threads, lang_id, prob);
      }
      if (Aborted()) return;
      if (!detected) {
        Fail("ASR_FAILED", "whisper.cpp could not detect the language.");
        return;
      }
      language = whisper_lang_str(lang_id);
      language_probability_ = prob;
      has_language_probability_ = true;
    }
    if (Aborted()) return;

    const bool beam = params_.beam_size > 1;
    whisper_full_params wp = whisper_full_default_params(beam ? WHISPER_SAMPLING_BEAM_SEARCH : WHISPER_SAMPLING_GREEDY);
    wp.n_threads = params_.threads;
    wp.print_progress = false;
    wp.print_realtime = false;
    wp.print_timestamps = false;
    wp.print_special = false;
    wp.language = language.c_str();
    wp.detect_language = false;
    wp.translate = params_.translate;
    wp.no_context = params_.no_context;
    wp.single_segment = params_.single_segment;
    wp.max_tokens = params_.max_tokens;
    wp.token_timestamps = params_.token_timestamps;
    wp.greedy.best_of = params_.best_of;
    wp.beam_search.beam_size = params_.beam_size;
    wp.temperature = params_.temperature;
    wp.temperature_inc = params_.temperature_inc;
    wp.entropy_thold = params_.entropy_thold;
    wp.logprob_thold = params_.logprob_thold;
    wp.no_speech_thold = params_.no_speech_thold;
    if (params_.has_prompt) wp.initial_prompt = params_.initial_prompt.c_str();
    if (params_.exact_tokens > 0) {
      wp.no_timestamps = true;
      wp.single_segment = true;
      wp.max_tokens = params_.exact_tokens;
      wp.temperature_inc = 0.0f;
      wp.logits_filter_callback = [](whisper_context* c, whisper_state*, const whisper_token_data*, int, float* logits,
                                     void*) { logits[whisper_token_eot(c)] = -INFINITY; };
    }

    wp.progress_callback = [](whisper_context*, whisper_state*, int progress, void* user_data) {
      static_cast<TranscribeJob*>(user_data)->SendProgress(progress);
    };
    wp.progress_callback_user_data = this;
    // encoder_begin (before each 30 s window) arms the node-level abort for the encoder;
    // abort_callback (after each encoder pass and decoder step) disarms it and stops whisper_full.
    wp.abort_callback = AbortCallback;
    wp.abort_callback_user_data = abort_.get();
    wp.encoder_begin_callback = EncoderBeginCallback;
    wp.encoder_begin_callback_user_data = abort_.get();

    int rc;
    {
      // With a batcher, this call's decoder steps are computed together with those of every other
      // job on this model; its tokens are the same as alone (engine/asr/README.md).
      WhisperBatchScope batched(batcher_);
      rc = whisper_full_with_state(ctx, state.get(), wp, samples_.data(), n);
    }
    // An abort can make whisper_full return 0 with partial output: the flag decides.
    if (Aborted()) return;
    if (rc != 0) {
      Fail("ASR_FAILED", "whisper_full failed with status " + std::to_string(rc) + ".");
      return;
    }
    Collect(ctx, state.get());
    language_ = whisper_lang_str(whisper_full_lang_id_from_state(state.get()));
    if (language_.empty()) language_ = language;
    SendProgress(100);
  }

  void OnProgress(Napi::Env env, int value) override {
    if (!on_progress_.IsEmpty()) on_progress_.Call({Napi::Number::New(env, value)});
  }

  void ReleaseJsRefs() override { on_progress_.Reset(); }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object r = Napi::Object::New(env);
    r.Set("language", language_);
    if (has_language_probability_) r.Set("languageProbability", language_probability_);
    r.Set("nSamples", static_cast<double>(samples_.size()));

    const size_t ns = seg_t0_.size();
    Napi::Array segs = Napi::Array::New(env, ns);
    for (size_t i = 0; i < ns; ++i) {
      Napi::Object s = Napi::Object::New(env);
      s.Set("t0", static_cast<double>(seg_t0_[i]));
      s.Set("t1", static_cast<double>(seg_t1_[i]));
      s.Set("text", seg_text_[i]);
      s.Set("tokenStart", seg_tok_start_[i]);
      s.Set("tokenCount", seg_tok_count_[i]);
      s.Set("noSpeechProb", seg_no_speech_[i]);
      segs.Set(static_cast<uint32_t>(i), s);
    }
    r.Set("segments", segs);

    const size_t nt = tok_id_.size();
    Napi::Object t = Napi::Object::New(env);
    t.Set("id", CopyOut<Napi::Int32Array>(env, tok_id_));
    t.Set("p", CopyOut<Napi::Float32Array>(env, tok_p_));
    t.Set("t0", CopyOut<Napi::Int32Array>(env, tok_t0_));
    t.Set("t1", CopyOut<Napi::Int32Array>(env, tok_t1_));
    t.Set("tDtw", CopyOut<Napi::Int32Array>(env, tok_tdtw_));
    t.Set("byteOffsets", CopyOut<Napi::Uint32Array>(env, tok_byte_off_));
    t.Set("bytes", Napi::Buffer<char>::Copy(env, token_bytes_.data(), token_bytes_.size()));
    t.Set("count", static_cast<double>(nt));
    r.Set("tokens", t);
    return r;
  }

 private:
  template <typename TA, typename V>
  static TA CopyOut(Napi::Env env, const std::vector<V>& v) {
    TA a = TA::New(env, v.size());
    if (!v.empty()) std::memcpy(a.Data(), v.data(), v.size() * sizeof(V));
    return a;
  }

  void Collect(whisper_context* ctx, whisper_state* state) {
    const int ns = whisper_full_n_segments_from_state(state);
    tok_byte_off_.push_back(0);
    for (int i = 0; i < ns; ++i) {
      seg_t0_.push_back(whisper_full_get_segment_t0_from_state(state, i));
      seg_t1_.push_back(whisper_full_get_segment_t1_from_state(state, i));
      const char* text = whisper_full_get_segment_text_from_state(state, i);
      seg_text_.emplace_back(text ? text : "");
      seg_no_speech_.push_back(whisper_full_get_segment_no_speech_prob_from_state(state, i));
      const int nt = whisper_full_n_tokens_from_state(state, i);
      seg_tok_start_.push_back(static_cast<uint32_t>(tok_id_.size()));
      seg_tok_count_.push_back(static_cast<uint32_t>(nt));
      for (int j = 0; j < nt; ++j) {
        const whisper_token_data d = whisper_full_get_token_data_from_state(state, i, j);
        tok_id_.push_back(d.id);
        tok_p_.push_back(d.p);
        tok_t0_.push_back(static_cast<int32_t>(d.t0));
        tok_t1_.push_back(static_cast<int32_t>(d.t1));
        tok_tdtw_.push_back(static_cast<int32_t>(d.t_dtw));
        const char* s = whisper_token_to_str(ctx, d.id);
        if (s) token_bytes_.append(s);
        tok_byte_off_.push_back(static_cast<uint32_t>(token_bytes_.size()));
      }
    }
  }

  ContextPtr ctx_;
  whisper_batcher* batcher_;
  std::vector<float> samples_;
  TranscribeParams params_;
  Napi::FunctionReference on_progress_;

  std::string language_;
  float language_probability_ = 0.0f;
  bool has_language_probability_ = false;
  std::vector<int64_t> seg_t0_, seg_t1_;
  std::vector<std::string> seg_text_;
  std::vector<float> seg_no_speech_;
  std::vector<uint32_t> seg_tok_start_, seg_tok_count_;
  std::vector<int32_t> tok_id_, tok_t0_, tok_t1_, tok_tdtw_;
  std::vector<float> tok_p_;
  std::vector<uint32_t> tok_byte_off_;
  std::string token_bytes_;
};

Napi::Value Model::Transcribe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ContextPtr ctx = Context(env);
  std::vector<float> samples = CopySamples(info[0]);
  TranscribeParams params = ParseTranscribeParams(info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env));
  Napi::Function on_progress = info[2].IsFunction() ? info[2].As<Napi::Function>() : Napi::Function();
  auto job = std::make_shared<TranscribeJob>(env, std::move(ctx), batcher_, std::move(samples), std::move(params),
                                             on_progress);
  return Job::Start(env, job, "whisper-transcribe");
}

// ---------------------------------------------------------------------------------------------
// Language detection alone.

class DetectLanguageJob : public Job {
 public:
  DetectLanguageJob(Napi::Env env, ContextPtr ctx, std::vector<float> samples, int threads)
      : Job(env), ctx_(std::move(ctx)), samples_(std::move(samples)), threads_(threads) {}

  void Run() override {
    whisper_context* ctx = ctx_.get();
    if (!whisper_is_multilingual(ctx)) {
      language_ = "en";
      prob_ = 1.0f;
      return;
    }
    StatePtr state = InitState(ctx, abort_.get());
    if (!state) {
      Fail("ASR_FAILED", "whisper.cpp could not allocate a decoding state (out of memory?).");
      return;
    }
    if (whisper_pcm_to_mel_with_state(ctx, state.get(), samples_.data(), static_cast<int>(samples_.size()), threads_) !=
        0) {
      Fail("ASR_FAILED", "whisper.cpp could not compute the mel spectrogram.");
      return;
    }
    if (Aborted()) return;
    int lang_id = -1;
    bool detected;
    {
      NodeAbortArmed armed(abort_.get());
      detected = DetectOnState(ctx, state.get(), threads_, lang_id, prob_);
    }
    if (Aborted()) return;
    if (!detected) {
      Fail("ASR_FAILED", "whisper.cpp could not detect the language.");
      return;
    }
    language_ = whisper_lang_str(lang_id);
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object r = Napi::Object::New(env);
    r.Set("language", language_);
    r.Set("probability", prob_);
    return r;
  }

 private:
  ContextPtr ctx_;
  std::vector<float> samples_;
  int threads_;
  std::string language_;
  float prob_ = 0.0f;
};

Napi::Value Model::DetectLanguage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ContextPtr ctx = Context(env);
  std::vector<float> samples = CopySamples(info[0]);
  const int threads = info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : 4;
  auto job = std::make_shared<DetectLanguageJob>(env, std::move(ctx), std::move(samples), threads);
  return Job::Start(env, job, "whisper-detect-language");
}

// ---------------------------------------------------------------------------------------------
// Freeing: drops the model's reference off the JS thread (whisper_free releases hundreds of MB
// for large models). Jobs still running hold their own reference; the last one out frees.

class FreeJob : public Job {
 public:
  FreeJob(Napi::Env env, ContextPtr ctx) : Job(env), ctx_(std::move(ctx)) {}
  void Run() override { ctx_.reset(); }
  Napi::Value Result(Napi::Env env) override { return env.Undefined(); }

 private:
  ContextPtr ctx_;
};

Napi::Value Model::Free(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto job = std::make_shared<FreeJob>(env, std::move(ctx_));
  ctx_.reset();
  batcher_ = nullptr;
  return Job::Start(env, job, "whisper-free");
}

// ---------------------------------------------------------------------------------------------
// whisper.cpp's built-in Silero VAD.

class VadJob : public Job {
 public:
  VadJob(Napi::Env env, std::string model_path, std::vector<float> samples, whisper_vad_params params, int threads)
      : Job(env), model_path_(std::move(model_path)), samples_(std::move(samples)), params_(params), threads_(threads) {}

  void Run() override {
    whisper_vad_context_params cp = whisper_vad_default_context_params();
    cp.n_threads = threads_;
    cp.use_gpu = false;
    std::unique_ptr<whisper_vad_context, void (*)(whisper_vad_context*)> vctx(nullptr, whisper_vad_free);
    {
      BackendAbortScope scope(abort_.get());
      vctx.reset(whisper_vad_init_from_file_with_params(model_path_.c_str(), cp));
    }
    if (!vctx) {
      Fail("MODEL_LOAD_FAILED", "whisper.cpp could not load the VAD model '" + model_path_ + "'.");
      return;
    }
    if (Aborted()) return;
    std::unique_ptr<whisper_vad_segments, void (*)(whisper_vad_segments*)> segs(nullptr, whisper_vad_free_segments);
    {
      // An abort stops the per-chunk graph; whisper.cpp then returns what it has, and the
      // flag (checked by the caller of Run) turns that into ABORTED.
      NodeAbortArmed armed(abort_.get());
      segs.reset(whisper_vad_segments_from_samples(vctx.get(), params_, samples_.data(),
                                                   static_cast<int>(samples_.size())));
    }
    if (Aborted()) return;
    if (!segs) {
      Fail("VAD_FAILED", "whisper.cpp's VAD failed on these samples.");
      return;
    }
    const int n = whisper_vad_segments_n_segments(segs.get());
    for (int i = 0; i < n; ++i) {
      spans_.push_back(whisper_vad_segments_get_segment_t0(segs.get(), i));
      spans_.push_back(whisper_vad_segments_get_segment_t1(segs.get(), i));
    }
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Float32Array a = Napi::Float32Array::New(env, spans_.size());
    if (!spans_.empty()) std::memcpy(a.Data(), spans_.data(), spans_.size() * sizeof(float));
    return a;
  }

 private:
  std::string model_path_;
  std::vector<float> samples_;
  whisper_vad_params params_;
  int threads_;
  std::vector<float> spans_;  // centiseconds, [t0, t1, t0, t1, ...]
};

// vadDetect(samples, modelPath, {threshold, minSpeechMs, minSilenceMs, speechPadMs, maxSpeechSec, threads})
Napi::Value VadDetect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<float> samples = CopySamples(info[0]);
  if (!info[1].IsString()) throw Napi::TypeError::New(env, "modelPath must be a string");
  Napi::Object o = info[2].IsObject() ? info[2].As<Napi::Object>() : Napi::Object::New(env);
  whisper_vad_params p = whisper_vad_default_params();
  p.threshold = GetNumber<float>(o, "threshold", p.threshold);
  p.min_speech_duration_ms = GetNumber<int>(o, "minSpeechMs", p.min_speech_duration_ms);
  p.min_silence_duration_ms = GetNumber<int>(o, "minSilenceMs", p.min_silence_duration_ms);
  p.speech_pad_ms = GetNumber<int>(o, "speechPadMs", p.speech_pad_ms);
  p.max_speech_duration_s = GetNumber<float>(o, "maxSpeechSec", p.max_speech_duration_s);
  const int threads = GetNumber<int>(o, "threads", 1);
  auto job = std::make_shared<VadJob>(env, info[1].As<Napi::String>().Utf8Value(), std::move(samples), p, threads);
  return Job::Start(env, job, "whisper-vad");
}

// ---------------------------------------------------------------------------------------------
// Module functions.

// load(path, {useGpu, gpuDevice, flashAttn, dtw, batchSize, batchThreads, batchGatherUs}) → {promise<Model>, abort}
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
  auto job = std::make_shared<LoadJob>(env, info[0].As<Napi::String>().Utf8Value(), cp, dtw, batch_size, cpu_batch_default, bp);
  return Job::Start(env, job, "whisper-load");
}

Napi::Value SetLogging(const Napi::CallbackInfo& info) {
  g_log_enabled.store(info[0].ToBoolean().Value(), std::memory_order_relaxed);
  return info.Env().Undefined();
}

Napi::Value Languages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int n = whisper_lang_max_id() + 1;
  Napi::Array a = Napi::Array::New(env, n);
  for (int i = 0; i < n; ++i) a.Set(static_cast<uint32_t>(i), whisper_lang_str(i));
  return a;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  whisper_log_set(LogCallback, nullptr);

  auto* data = new AddonData();
  data->model_ctor = Napi::Persistent(Model::Define(env));
  env.SetInstanceData(data);

  exports.Set("load", Napi::Function::New(env, Load, "load"));
  exports.Set("vadDetect", Napi::Function::New(env, VadDetect, "vadDetect"));
  exports.Set("setLogging", Napi::Function::New(env, SetLogging, "setLogging"));
  exports.Set("languages", Napi::Function::New(env, Languages, "languages"));
  exports.Set("version", Napi::String::New(env, whisper_version()));
  exports.Set("systemInfo", Napi::String::New(env, whisper_print_system_info()));
  exports.Set("sampleRate", Napi::Number::New(env, kSampleRate));
  return exports;
}

}  // namespace

NODE_API_MODULE(whisper_addon, Init)
