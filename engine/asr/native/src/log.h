// Logging: whisper.cpp and ggml print to stderr by default; we keep them quiet unless asked.
#pragma once

namespace whisper_addon {

// Routes whisper.cpp's and ggml's log through a callback that drops everything until enabled.
void InstallLogCallback();
void SetLogEnabled(bool enabled);

}  // namespace whisper_addon
