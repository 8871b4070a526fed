#include "options.h"

namespace whisper_addon {

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
  return std::vector<float>(a.Data(), a.Data() + a.ElementLength());
}

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
  p.min_text_tokens = GetNumber<int>(o, "minTextTokens", p.min_text_tokens);
  p.no_batch = GetBool(o, "noBatch", p.no_batch);
  if (o.Get("initialPrompt").IsString()) {
    p.has_prompt = true;
    p.initial_prompt = GetString(o, "initialPrompt", "");
  }
  return p;
}

}  // namespace whisper_addon
