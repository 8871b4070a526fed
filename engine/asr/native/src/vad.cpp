#include "vad.h"

#include <whisper.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "abort.h"
#include "job.h"
#include "options.h"

namespace whisper_addon {
namespace {

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


}  // namespace

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

}  // namespace whisper_addon
