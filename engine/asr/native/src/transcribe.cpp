// Transcription and language detection: one whisper_state per job on the shared context.
#include <whisper.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "abort.h"
#include "job.h"
#include "model.h"
#include "options.h"

namespace whisper_addon {
namespace {

struct StateDeleter {
  void operator()(whisper_state* s) const { whisper_free_state(s); }
};
using StatePtr = std::unique_ptr<whisper_state, StateDeleter>;

StatePtr InitState(whisper_context* ctx, AbortState* abort) {
  BackendAbortScope scope(abort);
  return StatePtr(whisper_init_state(ctx));
}

// TranscribeParams::min_text_tokens' filter (whisper_full_params::logits_filter_callback). It runs before
// whisper's timestamp rules, which only suppress more: end-of-text and timestamps are suppressed while
// the pass holds fewer text tokens than asked, except right after a lone timestamp, where the pair rule
// allows timestamps and end-of-text only (suppressing them too would leave nothing to sample).
void MinTextTokensFilter(whisper_context* c, whisper_state*, const whisper_token_data* tokens, int n, float* logits,
                         void* user_data) {
  const int need = *static_cast<const int*>(user_data);
  const whisper_token eot = whisper_token_eot(c);
  const whisper_token beg = whisper_token_beg(c);
  int text = 0;
  for (int i = 0; i < n; ++i) text += tokens[i].id < eot;
  if (text >= need) return;
  const bool last_ts = n > 0 && tokens[n - 1].id >= beg;
  const bool penultimate_ts = n < 2 || tokens[n - 2].id >= beg;
  if (last_ts && !penultimate_ts) return;
  logits[eot] = -INFINITY;
  for (int i = beg; i < whisper_n_vocab(c); ++i) logits[i] = -INFINITY;
}

// Adds a state's own bytes to the model's count while in scope (memoryBytes()).
class CountedBytes {
 public:
  CountedBytes(std::shared_ptr<StateBytes> counter, size_t n) : counter_(std::move(counter)), n_(n) { counter_->Add(n_); }
  ~CountedBytes() { counter_->Sub(n_); }
  CountedBytes(const CountedBytes&) = delete;
  CountedBytes& operator=(const CountedBytes&) = delete;

 private:
  std::shared_ptr<StateBytes> counter_;
  size_t n_;
};

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
  TranscribeJob(Napi::Env env, ContextPtr ctx, BatcherPtr batcher, std::shared_ptr<StateBytes> bytes,
                std::vector<float> samples, TranscribeParams params, Napi::Function on_progress)
      : Job(env), ctx_(std::move(ctx)), batcher_(std::move(batcher)), bytes_(std::move(bytes)),
        samples_(std::move(samples)), params_(std::move(params)) {
    if (!on_progress.IsEmpty()) on_progress_ = Napi::Persistent(on_progress);
  }

  void Run() override {
    whisper_context* ctx = ctx_.get();
    // With a batcher, this call's decoder steps (and encoder passes, with encodeBatch > 1) are computed
    // together with those of every other job on this model; its tokens are the same as alone
    // (engine/asr/README.md). Attached from the start, so that a batched encoder pass waits for this
    // call while it allocates its state and computes its mel spectrogram; detached as soon as
    // whisper_full returns, so that no decoder step waits for it while it builds its result.
    std::optional<WhisperBatchScope> batched;
    std::optional<AttachedTo> attached;  // before `batched`'s end: an abort wakes the batcher while attached
    if (!params_.no_batch && batcher_ != nullptr) {
      attached.emplace(abort_.get(), batcher_.get());
      batched.emplace(batcher_.get(), CancelPoll, abort_.get());
    }
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
        // A batched window's state has no compute buffers of its own: it borrows the batcher's.
        WhisperBatchCompute compute(state.get(), CancelPoll, abort_.get());
        detected = compute.ok() && DetectOnState(ctx, state.get(), params_.threads, lang_id, prob);
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
    // After language detection, which encodes and decodes on the state's own caches: from here on
    // they are its slot's memory, which the batched steps read (whisper-batch.h).
    whisper_batch_adopt_state(state.get());
    const CountedBytes counted(bytes_, whisper_batch_state_bytes(state.get()));

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
    } else if (params_.min_text_tokens > 0) {
      wp.logits_filter_callback = MinTextTokensFilter;
      wp.logits_filter_callback_user_data = &params_.min_text_tokens;
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
    rc = whisper_full_with_state(ctx, state.get(), wp, samples_.data(), n);
    attached.reset();
    batched.reset();
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
  BatcherPtr batcher_;
  std::shared_ptr<StateBytes> bytes_;
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

}  // namespace

Napi::Value Model::Transcribe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ContextPtr ctx = Context(env);
  std::vector<float> samples = CopySamples(info[0]);
  TranscribeParams params = ParseTranscribeParams(info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env));
  Napi::Function on_progress = info[2].IsFunction() ? info[2].As<Napi::Function>() : Napi::Function();
  auto job = std::make_shared<TranscribeJob>(env, std::move(ctx), batcher_, state_bytes_, std::move(samples),
                                             std::move(params), on_progress);
  return Job::Start(env, job, "whisper-transcribe");
}

Napi::Value Model::DetectLanguage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ContextPtr ctx = Context(env);
  std::vector<float> samples = CopySamples(info[0]);
  const int threads = info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : 4;
  auto job = std::make_shared<DetectLanguageJob>(env, std::move(ctx), std::move(samples), threads);
  return Job::Start(env, job, "whisper-detect-language");
}

}  // namespace whisper_addon
