// whisper.cpp's built-in Silero VAD.
#pragma once

#include <napi.h>

namespace whisper_addon {

// vadDetect(samples, modelPath, {threshold, minSpeechMs, minSilenceMs, speechPadMs, maxSpeechSec, threads})
Napi::Value VadDetect(const Napi::CallbackInfo& info);

}  // namespace whisper_addon
