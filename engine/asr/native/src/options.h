// Reading an options object from JS, and the transcription parameters it carries.
#pragma once

#include <napi.h>

#include <string>
#include <vector>

namespace whisper_addon {

template <typename T>
T GetNumber(const Napi::Object& o, const char* key, T fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? static_cast<T>(v.As<Napi::Number>().DoubleValue()) : fallback;
}

bool GetBool(const Napi::Object& o, const char* key, bool fallback);
std::string GetString(const Napi::Object& o, const char* key, const std::string& fallback);
// A copy: the caller may reuse, transfer or detach its buffer while the job runs.
std::vector<float> CopySamples(const Napi::Value& v);

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
  // The self-check's canary only: end-of-text and timestamp tokens are suppressed until a pass holds
  // this many text tokens (except where whisper's timestamp rule wants a closing timestamp), so the
  // canary compares enough tokens on any weights; whisper's own rules decide from there.
  int min_text_tokens = 0;
  // Decode on whisper.cpp's own path even when the model is batched: the self-check's reference
  // and, once it has fallen back, every transcription of the process.
  bool no_batch = false;
};

TranscribeParams ParseTranscribeParams(const Napi::Object& o);

}  // namespace whisper_addon
