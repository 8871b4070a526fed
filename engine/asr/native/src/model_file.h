// Model file: checked before whisper.cpp loads it; its header also lets dtw:'auto' pick a preset.
#pragma once

#include <whisper.h>

#include <cstdint>
#include <string>

namespace whisper_addon {

struct GgmlHeader {
  int32_t n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
  int32_t n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype;
};

// Walks the whole ggml model file (header, mel filters, vocabulary, tensor headers) before
// whisper.cpp sees it. whisper.cpp trusts these fields: a bad ftype hits a GGML_ASSERT (abort()
// of the whole process), n_dims > 4 overruns a stack array, a huge vocabulary count loops for
// hours. Shapes and names are left to whisper.cpp, which rejects mismatches cleanly.
bool ValidateModelFile(const std::string& path, GgmlHeader& h, std::string& why);

// The name of the alignment-head preset for this model's shape, the same names whisper-cli's
// --dtw accepts; empty when the shape is not a known Whisper size.
std::string AutoDtwPreset(const GgmlHeader& h);

bool DtwPresetFromName(const std::string& name, whisper_alignment_heads_preset& out);

}  // namespace whisper_addon
