// Batched decoding across whisper_full calls: the public face of whisper-batch-impl.inc.
//
// A batcher belongs to one whisper_context. Every thread that runs whisper_full_with_state while
// attached to it (WhisperBatchScope) hands its decoder steps to the batcher instead of computing
// them alone; the batcher's own thread computes the steps of all attached calls that are waiting
// in one ggml graph (one set of weight reads for every sequence) and hands each call its logits.
// With encode_batch > 1 a second thread does the same for encoder passes: several windows' mel in one
// encoder graph, each window's cross K/V left in its own state.
// Everything else, sampling, suppression, timestamp rules, seeking, temperature fallback, beams,
// stays whisper_full's own code running on the caller's thread, so each window decodes exactly as
// it would alone (see engine/asr/README.md, "Batched decoding").
#pragma once

#include <whisper.h>

#include <cstdint>
#include <string>
#include <vector>

struct whisper_batcher;

struct whisper_batcher_params {
  int n_threads = 4;          // threads for the batched graph (CPU backend)
  int max_sequences = 8;      // whisper_full calls whose steps share one graph, at most
  int gather_wait_us = 10000;  // how long a step waits for an attached call that is between steps
  // How the calls of a step attend:
  //  "per-call": each call against its own state's caches, with whisper.cpp's own ops: logits are
  //              bit-identical to decoding alone (on the CPU backend).
  //  "slotted":  every call's caches mirrored in one tensor with a slot dimension; one flash-attention
  //              op per layer serves all calls, and the graph keeps its shape from step to step, so
  //              CUDA graphs can replay. Needs the model loaded with flash attention; calls with more
  //              than one decoder (beam search, best-of) still attend per call.
  //  "auto":     slotted on a GPU with flash attention, per-call otherwise.
  std::string attention = "auto";
  // Batched encoder: up to this many windows' encoder passes (conv, encoder, cross K/V) in one graph,
  // on the batcher's second thread (its own backend, so encoding overlaps the decoder steps). The
  // thread waits for every attached call that is not decoding to queue its pass, at most
  // encode_gather_wait_us. 1: each call encodes alone on its own thread, as whisper.cpp does.
  // 0: auto, min(max_sequences, 16) on a GPU and 1 on the CPU (where a pass is compute-bound).
  int encode_batch = 1;
  int encode_gather_wait_us = 50000;
  // Fault injection, for the self-check's tests only: every step that serves two or more calls hands
  // the second one its logits negated, as a batching bug that corrupts one slot's result would.
  bool fault_perturb_slot = false;
  // Tests only: neither thread takes a step or an encoder pass until whisper_batcher_test_release, so a
  // test can cancel a call while its request is queued, as an event rather than a race.
  bool test_hold = false;
  // Tests only: the batcher's graphs (the batched encoder and per-call decoder steps; no slotted
  // attention) attend without flash attention while the caches keep flash attention's layout, so a
  // flash-attention context decodes what a non-flash one does. The DTW parity test uses it to hold
  // the DTW pass (patches/0006), which reads those caches, to whisper-cli's own DTW on the same tokens.
  bool test_plain_attention = false;
  // Tests only: the first decoder step's graph stops at its first node and waits there until
  // whisper_batcher_test_release, or until every call it serves is cancelled (then it is aborted
  // between nodes, abortedGraphs): a test can cancel a graph that is running, as an event.
  bool test_pause_in_graph = false;
  // Benchmarks: the batched encoder graph's variant (native/README.md, "Encoder variants"). Each is the
  // same arithmetic on the CPU backend (bit-identical), and may differ on a GPU in kernels and speed:
  //  enc_flatten:    each weight product over the windows' activations viewed as [n_state, n_ctx*B]
  //                  (one GEMM) instead of [n_state, n_ctx, B] (a GEMM per window, or a batched one);
  //  enc_f16_act:    the products' inputs cast to f16 once (f16 weights only), as the CPU's product
  //                  converts them anyway, so the activations cross memory at half the bytes;
  //  enc_plain_attn: the encoder attends with KQ/softmax/KQV instead of flash attention (the caches
  //                  keep flash attention's layout);
  //  enc_prec_f32:   the weight products ask ggml for 32-bit accumulation (GGML_PREC_F32).
  bool enc_flatten = false;
  bool enc_f16_act = false;
  bool enc_plain_attn = false;
  bool enc_prec_f32 = false;
  // Shared compute (whisper-batch-shared.inc): the states of attached calls reserve no compute buffers
  // and borrow the batcher's one set for the passes they compute themselves (an encoder pass alone, the
  // DTW pass, language detection), one pass at a time. A window then costs its caches alone, not a
  // whole whisper_state. False: every state reserves its own, as whisper.cpp does.
  bool share_compute = true;
  // How many sets it lends at once: passes beyond that wait for one. 0: auto, 1 on a GPU (the batched
  // encoder takes the encoder passes; DTW and detection are short) and on the CPU as many as the batch
  // and the machine's cores allow, so windows still encode side by side there.
  int compute_sets = 0;
};

// A call's cancellation poll (WhisperBatchScope): true once the call should stop. Read by the call while
// it waits for a step or an encoder pass, and by a graph's threads between nodes while that graph
// serves only calls whose polls say true. Must be cheap and thread-safe (an atomic load).
typedef bool (*whisper_batch_cancel_poll)(void * data);

struct whisper_batcher_stats {
  uint64_t steps = 0;          // batched graphs computed
  uint64_t sequences = 0;      // decoder calls served (sum over steps)
  uint64_t tokens = 0;         // tokens those calls carried
  uint64_t max_in_step = 0;    // the most calls one graph served
  uint64_t compute_us = 0;     // time spent building and computing the graphs
  uint64_t slotted = 0;        // calls served by slotted attention (the rest attended per call)
  uint64_t shared_cross = 0;   // states whose cross K/V cache is their slot's memory (whisper_batch_adopt_state)
  uint64_t shared_self = 0;    // states whose self-attention cache is their slot's memory (same)
  uint64_t same_graph = 0;     // steps whose graph had the same nodes, shapes and addresses as the last
                               // one built in the same memory: ggml-cuda can replay those as a CUDA graph
  uint64_t cancelled_waiting = 0; // steps and passes a cancelled call left while still queued
  uint64_t aborted_graphs = 0;    // graphs stopped between nodes because every call they served was cancelled
  uint64_t pending_steps = 0;     // decoder steps queued now (not a counter: a snapshot)
  uint64_t pending_encodes = 0;   // encoder passes queued now (a snapshot)
  uint64_t lent = 0;              // passes computed on the shared compute buffers (share_compute)
  uint64_t in_graph = 0;          // calls served by the decoder graph computing now (a snapshot)
  uint64_t encode_graphs = 0;  // batched encoder graphs computed
  uint64_t encodes = 0;        // windows they encoded
  uint64_t max_in_encode = 0;  // the most windows one encoder graph carried
  uint64_t encode_us = 0;      // time spent building and computing them
};

// One op type's share of a profiled graph (whisper_batcher_profile_next).
struct whisper_batch_op_profile {
  std::string op;              // ggml_op_desc, lower case: "mul_mat", "flash_attn_ext", "gelu", ...
  uint64_t count = 0;          // nodes of this type
  uint64_t ns = 0;             // their summed time, each node computed and waited for alone
  uint64_t bytes_read = 0;     // what their sources span (get_rows: the rows taken); views: 0
  uint64_t bytes_written = 0;  // their destinations (set_rows: the rows written); views: 0
  std::string backend;         // the backend the scheduler ran them on (ggml_backend_name: "CPU", "CUDA0")
  std::string types;           // "src0,src1->dst" type names (one entry per op, backend and types)
  std::string shape;           // the first such node's shape, "ne0xne1xne2xne3"
};

// A per-op profile of one batcher graph (benchmarks; whisper-batch-profile.inc says how it is taken).
struct whisper_batch_profile {
  std::string graph;          // "encoder" (a batched encoder graph) or "decoder-step" (a generation step)
  int windows = 0;            // the windows (encoder) or calls (step) it carried
  int tokens = 0;             // the real tokens of a step (the encoder: 0)
  int nodes = 0;              // nodes computed, views included
  uint64_t graph_ns = 0;      // the same graph computed as usual, unprofiled (build and inputs excluded)
  uint64_t profiled_ns = 0;   // the profiled pass's wall time: the nodes plus the scheduler's work between
  uint64_t node_ns = 0;       // the nodes' summed times
  int splits = 0;             // the scheduler's graph splits (one per run of nodes on one backend)
  int copies = 0;             // the scheduler's input copies (ggml_backend_sched_get_n_copies)
  uint64_t copy_bytes = 0;    // bytes of the sources it copied between backends (host <-> device)
  int copied_tensors = 0;     // how many such sources
  std::vector<whisper_batch_op_profile> ops; // by time, longest first
};

// nullptr when the backends or the graph scheduler cannot be created.
whisper_batcher* whisper_batcher_init(whisper_context* ctx, whisper_batcher_params params);
// Waits for nothing: every attached call must have detached before.
void whisper_batcher_free(whisper_batcher* b);
whisper_batcher_stats whisper_batcher_get_stats(whisper_batcher* b);
// The parameters in force (auto values resolved; attention is "slotted" or "per-call").
whisper_batcher_params whisper_batcher_get_params(whisper_batcher* b);
// Zeroes the counters (the engine's self-check decodes a canary before the model serves anyone).
void whisper_batcher_reset_stats(whisper_batcher* b);
// Wakes every attached call that waits for a step or an encoder pass, so that one whose cancellation
// poll now says true leaves: at once if its request is still queued, at the end of the graph that
// serves it otherwise (that graph writes into its state). Call it after setting what the poll reads.
void whisper_batcher_wake(whisper_batcher* b);
// The self-check's canary: the next decoder step, and (with encode_batch > 1) the next encoder pass,
// wait until `n` requests are queued for them, or at most `timeout_ms`, so that the canary's windows
// meet in one graph by construction rather than by timing (on a GPU a short window can finish before a
// long one has encoded). One-shot: later steps and passes gather as usual.
void whisper_batcher_gate_next(whisper_batcher* b, int n, int timeout_ms);
// The self-check's licence: no decoder step carries more than `max_step` calls and no encoder graph more
// than `max_encode` windows (each at most what params allow; 0: params' width), the widest the canary
// compared. Steps are formed from what is queued, so windows beyond the width wait for the next step.
void whisper_batcher_limit(whisper_batcher* b, int max_step, int max_encode);
// Benchmarks: profile the next batched encoder graph that carries at least `encode_windows` windows and
// the next generation step (every call one token) that carries at least `step_calls` calls (0: none),
// each computed once as usual and once node by node (whisper-batch-profile.inc). Like gate_next, the
// next encoder pass waits for `encode_windows` queued passes and the next step for `step_calls`
// requests, at most `timeout_ms`, so that they meet. Read the results with whisper_batcher_take_profiles.
void whisper_batcher_profile_next(whisper_batcher* b, int encode_windows, int step_calls, int timeout_ms);
// The profiles taken since the last call, in the order they were taken.
std::vector<whisper_batch_profile> whisper_batcher_take_profiles(whisper_batcher* b);
// Tests only: ends params.test_hold; queued steps and passes go ahead.
void whisper_batcher_test_release(whisper_batcher* b);
// How many windows to keep in flight: on a GPU, as many whisper_states (plus, when `slotted`, their
// slots in the batcher's caches) as fit in 85 % of the free device memory (a state measured by
// creating one); on the CPU, `cpu_default`. Clamped to [1, max_size].
// `shared_compute`: the states borrow the batcher's compute buffers, so a window costs its caches only.
int whisper_batcher_auto_size(whisper_context* ctx, int cpu_default, int max_size, bool slotted, bool shared_compute);
// Bytes the batcher holds in device and host buffers from the allocator: the slot caches, the lent
// compute sets, both graph schedulers' buffers and the pinned logits copy.
size_t whisper_batcher_bytes(whisper_batcher* b);
// Batchers alive in this process (created and not yet freed).
int whisper_batcher_live();
// Bytes a state holds in its own buffers (caches, compute buffers, kv_pad), from the allocator: a
// state that adopted its slot or borrows the batcher's compute counts none of those.
size_t whisper_batch_state_bytes(whisper_state* state);
// Bytes one more window in flight holds in whisper.cpp's buffers (its caches, plus its compute buffers
// unless shared), and one compute set that a batcher lends (its fixed share is compute_sets of them),
// from the allocator's sizes.
struct whisper_batch_window_bytes {
  size_t per_window = 0;
  size_t shared = 0;
};
whisper_batch_window_bytes whisper_batcher_window_bytes(whisper_context* ctx, bool slotted, bool shared_compute);

// Call on an attached thread before the state's whisper_full, after any language detection: with
// slotted attention and a slot, the state's cross-attention K/V cache and its self-attention cache
// become that slot's memory (their own buffers are freed), so the encoder's output lands where the
// slotted steps read it, with no copy, and a window holds one copy of each cache, not two (about
// 250 + 84 MB per window for large-v3). Does nothing otherwise.
void whisper_batch_adopt_state(whisper_state* state);

// Lends a state the batcher's shared compute buffers while in scope, for whisper.cpp's public functions
// that compute on a state outside whisper_full (language detection), which the dispatchers do not see.
// Call on a thread attached to the state's batcher. No-op for a state with its own buffers. ok() is
// false when the state has none and none could be lent (the thread is not attached).
class WhisperBatchCompute {
 public:
  WhisperBatchCompute(whisper_state* state, whisper_batch_cancel_poll cancelled, void* cancel_data);
  ~WhisperBatchCompute();
  WhisperBatchCompute(const WhisperBatchCompute&) = delete;
  WhisperBatchCompute& operator=(const WhisperBatchCompute&) = delete;
  bool ok() const;

 private:
  void* lend_;
};

// Attaches the calling thread (and the whisper_full it is about to run) to `b` while in scope.
class WhisperBatchScope {
 public:
  // `cancelled` (may be null) is this call's cancellation poll, read while it waits (see above).
  explicit WhisperBatchScope(whisper_batcher* b, whisper_batch_cancel_poll cancelled = nullptr,
                             void* cancel_data = nullptr);
  ~WhisperBatchScope();
  WhisperBatchScope(const WhisperBatchScope&) = delete;
  WhisperBatchScope& operator=(const WhisperBatchScope&) = delete;

 private:
  whisper_batcher* b_;
};
