#include "abort.h"

#include <ggml-backend.h>
#include <ggml-cpu.h>

namespace whisper_addon {
namespace {

bool CpuNodeAbort(void* data) {
  const auto* a = static_cast<const AbortState*>(data);
  return a->node_abort_armed.load(std::memory_order_relaxed) && a->requested.load(std::memory_order_relaxed);
}

bool RelayNodeAbort(void* data) {
  AbortState* a = static_cast<AbortRelay*>(data)->current.load(std::memory_order_relaxed);
  return a != nullptr && CpuNodeAbort(a);
}

// What a CPU backend created on this thread polls; unset outside a BackendAbortScope.
struct CreatingFor {
  ggml_abort_callback poll = nullptr;
  void* data = nullptr;
};
thread_local CreatingFor t_creating_for;

}  // namespace

void AbortState::Request() {
  requested.store(true, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lk(mu);
  if (batcher != nullptr) whisper_batcher_wake(batcher);
}

bool CancelPoll(void* abort_state) {
  return static_cast<const AbortState*>(abort_state)->requested.load(std::memory_order_relaxed);
}

AttachedTo::AttachedTo(AbortState* a, whisper_batcher* b) : a_(a) {
  std::lock_guard<std::mutex> lk(a_->mu);
  a_->batcher = b;
}

AttachedTo::~AttachedTo() {
  std::lock_guard<std::mutex> lk(a_->mu);
  a_->batcher = nullptr;
}

BackendAbortScope::BackendAbortScope(AbortState* a) { t_creating_for = {CpuNodeAbort, a}; }
BackendAbortScope::BackendAbortScope(AbortRelay* relay) { t_creating_for = {RelayNodeAbort, relay}; }
BackendAbortScope::~BackendAbortScope() { t_creating_for = {}; }

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

}  // namespace whisper_addon

#ifdef WHISPER_ADDON_WRAP_BACKEND_INIT
extern "C" ggml_backend_t __real_ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char* params);
extern "C" ggml_backend_t __wrap_ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char* params) {
  ggml_backend_t b = __real_ggml_backend_init_by_type(type, params);
  const whisper_addon::CreatingFor& f = whisper_addon::t_creating_for;
  if (b != nullptr && type == GGML_BACKEND_DEVICE_TYPE_CPU && f.poll != nullptr) {
    ggml_backend_cpu_set_abort_callback(b, f.poll, f.data);
  }
  return b;
}
#endif
