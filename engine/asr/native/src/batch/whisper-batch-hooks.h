// Included by engine/asr/native/patches/0001 into the patched copy of whisper.cpp's src/whisper.cpp,
// just before whisper_full_with_state, whose decoder and encoder calls that patch routes through
// these two functions (defined in whisper-batch-dispatch.inc, included at the end of the file).
static bool whisper_batch_decode_dispatch(whisper_context & wctx, whisper_state & wstate,
                                          const whisper_batch & batch, int n_threads,
                                          ggml_abort_callback abort_callback, void * abort_callback_data);
static bool whisper_batch_encode_dispatch(whisper_context & wctx, whisper_state & wstate, int mel_offset,
                                          int n_threads, ggml_abort_callback abort_callback,
                                          void * abort_callback_data);
