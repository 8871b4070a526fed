#include "vad.h"

#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "job.h"
#include "model.h"
#include "options.h"

namespace whisper_addon {
namespace {

class VadLoadJob : public Job {
 public:
  VadLoadJob(Napi::Env env, std::string path, int threads) : Job(env), path_(std::move(path)), threads_(threads) {}

  void Run() override {
    whisper_vad_context_params cp = whisper_vad_default_context_params();
    cp.n_threads = threads_;
    cp.use_gpu = false;
    loaded_ = std::make_shared<VadContext>();
    {
      BackendAbortScope scope(&loaded_->relay);
      loaded_->ctx.reset(whisper_vad_init_from_file_with_params(path_.c_str(), cp));
    }
    if (!loaded_->ctx) Fail("MODEL_LOAD_FAILED", "whisper.cpp could not load the VAD model '" + path_ + "'.");
  }

  Napi::Value Result(Napi::Env env) override {
    auto* data = env.GetInstanceData<AddonData>();
    return data->vad_ctor.New({Napi::External<std::shared_ptr<VadContext>>::New(env, &loaded_)});
  }

 private:
  std::string path_;
  int threads_;
  std::shared_ptr<VadContext> loaded_;
};

class VadDetectJob : public Job {
 public:
  VadDetectJob(Napi::Env env, std::shared_ptr<VadContext> vad, std::vector<float> samples, whisper_vad_params params)
      : Job(env), vad_(std::move(vad)), samples_(std::move(samples)), params_(params) {}

  void Run() override {
    std::unique_lock<std::mutex> lock(vad_->mu);
    // Waits for its turn, giving up as soon as it is aborted (the turn may be a minute away).
    while (vad_->busy) {
      if (Aborted()) return;
      vad_->turn.wait_for(lock, std::chrono::milliseconds(20));
    }
    if (Aborted()) return;
    vad_->busy = true;
    lock.unlock();
    struct EndTurn {
      VadContext* v;
      ~EndTurn() {
        {
          std::lock_guard<std::mutex> g(v->mu);
          v->busy = false;
        }
        v->turn.notify_one();
      }
    } end_turn{vad_.get()};
    DetectOnTurn();
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Float32Array a = Napi::Float32Array::New(env, spans_.size());
    if (!spans_.empty()) std::memcpy(a.Data(), spans_.data(), spans_.size() * sizeof(float));
    return a;
  }

 private:
  void DetectOnTurn() {
    std::unique_ptr<whisper_vad_segments, void (*)(whisper_vad_segments*)> segs(nullptr, whisper_vad_free_segments);
    {
      // An abort stops the per-chunk graph; whisper.cpp then returns what it has, and the
      // flag (checked by the caller of Run) turns that into ABORTED.
      RelayTo relay(&vad_->relay, abort_.get());
      NodeAbortArmed armed(abort_.get());
      segs.reset(whisper_vad_segments_from_samples(vad_->ctx.get(), params_, samples_.data(),
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

  std::shared_ptr<VadContext> vad_;
  std::vector<float> samples_;
  whisper_vad_params params_;
  std::vector<float> spans_;  // centiseconds, [t0, t1, t0, t1, ...]
};

whisper_vad_params ParseVadParams(const Napi::Object& o) {
  whisper_vad_params p = whisper_vad_default_params();
  p.threshold = GetNumber<float>(o, "threshold", p.threshold);
  p.min_speech_duration_ms = GetNumber<int>(o, "minSpeechMs", p.min_speech_duration_ms);
  p.min_silence_duration_ms = GetNumber<int>(o, "minSilenceMs", p.min_silence_duration_ms);
  p.speech_pad_ms = GetNumber<int>(o, "speechPadMs", p.speech_pad_ms);
  p.max_speech_duration_s = GetNumber<float>(o, "maxSpeechSec", p.max_speech_duration_s);
  return p;
}

}  // namespace

Napi::Function VadModel::Define(Napi::Env env) {
  return DefineClass(env, "WhisperVadModelNative",
                     {
                         InstanceMethod<&VadModel::Detect>("detect"),
                         InstanceMethod<&VadModel::Free>("free"),
                     });
}

VadModel::VadModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VadModel>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "WhisperVadModelNative is created by vadLoad()");
  }
  vad_ = std::move(*info[0].As<Napi::External<std::shared_ptr<VadContext>>>().Data());
}

Napi::Value VadModel::Detect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!vad_) throw CodedError(env, "MODEL_CLOSED", "The VAD model has been closed.");
  std::vector<float> samples = CopySamples(info[0]);
  whisper_vad_params p = ParseVadParams(info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env));
  auto job = std::make_shared<VadDetectJob>(env, vad_, std::move(samples), p);
  return Job::Start(env, job, "whisper-vad");
}

Napi::Value VadModel::Free(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto job = std::make_shared<ReleaseJob>(env, std::move(vad_));
  vad_.reset();
  return Job::Start(env, job, "whisper-vad-free");
}

Napi::Value VadLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "modelPath must be a string");
  Napi::Object o = info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
  auto job = std::make_shared<VadLoadJob>(env, info[0].As<Napi::String>().Utf8Value(), GetNumber<int>(o, "threads", 1));
  return Job::Start(env, job, "whisper-vad-load");
}

}  // namespace whisper_addon
