// Included by engine/asr/native/patches/0001 into the patched copy of whisper.cpp's src/whisper.cpp,
// just before whisper_full_with_state, whose decoder and encoder calls that patch routes through
// these functions (defined in whisper-batch-dispatch.inc and whisper-batch-shared.inc, included at the end
// of the file).
static bool whisper_batch_decode_dispatch(whisper_context & wctx, whisper_state & wstate,
                                          const whisper_batch & batch, int n_threads,
                                          ggml_abort_callback abort_callback, void * abort_callback_data);
static bool whisper_batch_encode_dispatch(whisper_context & wctx, whisper_state & wstate, int mel_offset,
                                          int n_threads, ggml_abort_callback abort_callback,
                                          void * abort_callback_data);
// patches/0005: the DTW pass after a window's segments (whisper-batch-shared.inc).
static void whisper_batch_dtw_dispatch(whisper_context * ctx, whisper_state * state, whisper_full_params params,
                                       int i_segment, size_t n_segments, int seek, int n_frames, int medfilt_width,
                                       int n_threads);
