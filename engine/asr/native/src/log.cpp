#include "log.h"

#include <ggml.h>
#include <whisper.h>

#include <atomic>
#include <cstdio>

namespace whisper_addon {
namespace {

std::atomic<bool> g_log_enabled{false};

void LogCallback(enum ggml_log_level /*level*/, const char* text, void* /*user_data*/) {
  if (g_log_enabled.load(std::memory_order_relaxed) && text != nullptr) {
    std::fputs(text, stderr);
  }
}

}  // namespace

void InstallLogCallback() { whisper_log_set(LogCallback, nullptr); }

void SetLogEnabled(bool enabled) { g_log_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace whisper_addon
