// Abort inside a graph.
//
// whisper.cpp 1.9.1 polls abort_callback only between graphs: after a whole encoder pass, which
// takes seconds on a busy CPU. ggml's CPU backend can poll between nodes, but whisper.cpp never
// hands it a callback. When the addon is linked with --wrap=ggml_backend_init_by_type (Linux,
// see CMakeLists.txt), every CPU backend whisper_init_state creates on a job's thread gets the
// job's AbortState. Node-level aborts are armed only while the encoder runs (or during our own
// language detection): the DTW pass after a segment asserts that its decoder graph succeeds, so
// an abort there would take the process down; decoder graphs are short anyway.
#pragma once

#include <whisper.h>

#include <atomic>
#include <mutex>

#include "whisper-batch.h"

namespace whisper_addon {

struct AbortState {
  std::atomic<bool> requested{false};
  std::atomic<bool> node_abort_armed{false};

  // Sets `requested` and wakes the batcher the job waits in, if any, so that a job whose decoder step
  // or encoder pass is queued there leaves at once rather than when its turn comes.
  void Request();
  // The batcher a job is attached to (AttachedTo), under `mu`: Request() may run on the JS thread
  // while the job detaches on its own.
  std::mutex mu;
  whisper_batcher* batcher = nullptr;
};

// whisper_batch_cancel_poll over an AbortState: its `requested` flag.
bool CancelPoll(void* abort_state);

// Tells `a` which batcher its job waits in while in scope (null: none).
class AttachedTo {
 public:
  AttachedTo(AbortState* a, whisper_batcher* b);
  ~AttachedTo();
  AttachedTo(const AttachedTo&) = delete;
  AttachedTo& operator=(const AttachedTo&) = delete;

 private:
  AbortState* a_;
};

// A CPU backend that outlives the job that created it (a VAD context serves every detection of
// its detector) polls whichever job is using it now; `current` is null between jobs.
struct AbortRelay {
  std::atomic<AbortState*> current{nullptr};
};

// Points `relay` at `a` for the duration of a scope.
class RelayTo {
 public:
  RelayTo(AbortRelay* relay, AbortState* a) : relay_(relay) { relay_->current.store(a); }
  ~RelayTo() { relay_->current.store(nullptr); }
  RelayTo(const RelayTo&) = delete;
  RelayTo& operator=(const RelayTo&) = delete;

 private:
  AbortRelay* relay_;
};

// Arms CPU backends created on this thread (by whisper_init_state, whisper_vad_init_*) with `a`,
// or with whichever job `relay` points at, while in scope.
class BackendAbortScope {
 public:
  explicit BackendAbortScope(AbortState* a);
  explicit BackendAbortScope(AbortRelay* relay);
  ~BackendAbortScope();
  BackendAbortScope(const BackendAbortScope&) = delete;
  BackendAbortScope& operator=(const BackendAbortScope&) = delete;
};

// Arms node-level abort for the duration of a scope.
class NodeAbortArmed {
 public:
  explicit NodeAbortArmed(AbortState* a) : a_(a) { a_->node_abort_armed.store(true); }
  ~NodeAbortArmed() { a_->node_abort_armed.store(false); }
  NodeAbortArmed(const NodeAbortArmed&) = delete;
  NodeAbortArmed& operator=(const NodeAbortArmed&) = delete;

 private:
  AbortState* a_;
};

// whisper.cpp's abort_callback: called at the end of every encoder pass and decoder step.
bool AbortCallback(void* user_data);
// whisper.cpp's encoder_begin_callback: called before each 30 s window's encoder pass.
bool EncoderBeginCallback(whisper_context*, whisper_state*, void* user_data);

}  // namespace whisper_addon
