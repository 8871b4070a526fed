#include "model.h"

#include <ggml-backend.h>

#include <exception>
#include <utility>

#include "model_file.h"
#include "options.h"

namespace whisper_addon {
namespace {

struct LoadedModel {
  ContextPtr ctx;
  ModelInfo info;
};

class LoadJob : public Job {
 public:
  LoadJob(Napi::Env env, std::string path, whisper_context_params cparams, std::string dtw)
      : Job(env), path_(std::move(path)), cparams_(cparams), dtw_(std::move(dtw)) {}

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
    loaded_.ctx = ContextPtr(raw, whisper_free);

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
  return o;
}

Napi::Value Model::Free(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto job = std::make_shared<ReleaseJob>(env, std::move(ctx_));
  ctx_.reset();
  return Job::Start(env, job, "whisper-free");
}

// load(path, {useGpu, gpuDevice, flashAttn, dtw}) → {promise<Model>, abort}
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
  auto job = std::make_shared<LoadJob>(env, info[0].As<Napi::String>().Utf8Value(), cp, dtw);
  return Job::Start(env, job, "whisper-load");
}

}  // namespace whisper_addon
