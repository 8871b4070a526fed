#include "model_file.h"

#include <ggml.h>

#include <climits>
#include <fstream>
#include <utility>

namespace whisper_addon {
namespace {

bool ValidFtype(int32_t ftype) {
  switch (static_cast<ggml_ftype>(ftype % GGML_QNT_VERSION_FACTOR)) {
    case GGML_FTYPE_ALL_F32: case GGML_FTYPE_MOSTLY_F16: case GGML_FTYPE_MOSTLY_BF16:
    case GGML_FTYPE_MOSTLY_Q4_0: case GGML_FTYPE_MOSTLY_Q4_1: case GGML_FTYPE_MOSTLY_Q1_0:
    case GGML_FTYPE_MOSTLY_Q5_0: case GGML_FTYPE_MOSTLY_Q5_1: case GGML_FTYPE_MOSTLY_Q8_0:
    case GGML_FTYPE_MOSTLY_MXFP4: case GGML_FTYPE_MOSTLY_NVFP4: case GGML_FTYPE_MOSTLY_Q2_K:
    case GGML_FTYPE_MOSTLY_Q3_K: case GGML_FTYPE_MOSTLY_Q4_K: case GGML_FTYPE_MOSTLY_Q5_K:
    case GGML_FTYPE_MOSTLY_Q6_K: case GGML_FTYPE_MOSTLY_IQ2_XXS: case GGML_FTYPE_MOSTLY_IQ2_XS:
    case GGML_FTYPE_MOSTLY_IQ3_XXS: case GGML_FTYPE_MOSTLY_IQ1_S: case GGML_FTYPE_MOSTLY_IQ1_M:
    case GGML_FTYPE_MOSTLY_IQ4_NL: case GGML_FTYPE_MOSTLY_IQ4_XS: case GGML_FTYPE_MOSTLY_IQ3_S:
    case GGML_FTYPE_MOSTLY_IQ2_S:
      return ftype >= 0;
    default:
      return false;
  }
}

std::string ModelTypeFromHeader(const GgmlHeader& h) {
  switch (h.n_audio_layer) {
    case 4: return "tiny";
    case 6: return "base";
    case 12: return "small";
    case 24: return "medium";
    case 32: return "large";
    default: return "";
  }
}

}  // namespace

bool ValidateModelFile(const std::string& path, GgmlHeader& h, std::string& why) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) {
    why = "cannot be opened";
    return false;
  }
  const int64_t size = static_cast<int64_t>(f.tellg());
  f.seekg(0);
  auto read_i32 = [&](int32_t& v) { return static_cast<bool>(f.read(reinterpret_cast<char*>(&v), sizeof v)); };
  auto skip = [&](int64_t n) {
    if (n < 0 || static_cast<int64_t>(f.tellg()) + n > size) return false;
    f.seekg(n, std::ios::cur);
    return static_cast<bool>(f);
  };
  auto in = [](int32_t v, int32_t lo, int32_t hi) { return v >= lo && v <= hi; };

  int32_t magic = 0;
  if (!read_i32(magic) || static_cast<uint32_t>(magic) != 0x67676d6c) {
    why = "is not a ggml whisper model (bad magic)";
    return false;
  }
  if (!f.read(reinterpret_cast<char*>(&h), sizeof h)) {
    why = "is truncated in its header";
    return false;
  }
  if (!in(h.n_vocab, 1, 1 << 20) || !in(h.n_audio_ctx, 1, 1 << 16) || !in(h.n_audio_state, 1, 1 << 14) ||
      !in(h.n_audio_head, 1, 1024) || !in(h.n_audio_layer, 1, 256) || !in(h.n_text_ctx, 1, 1 << 16) ||
      !in(h.n_text_state, 1, 1 << 14) || !in(h.n_text_head, 1, 1024) || !in(h.n_text_layer, 1, 256) ||
      !in(h.n_mels, 1, 512) || !ValidFtype(h.ftype)) {
    why = "has implausible hyper-parameters";
    return false;
  }
  int32_t n_mel = 0, n_fft = 0;
  if (!read_i32(n_mel) || !read_i32(n_fft) || !in(n_mel, 1, 4096) || !in(n_fft, 1, 4096) ||
      !skip(int64_t{n_mel} * n_fft * 4)) {
    why = "has a corrupt mel filter bank";
    return false;
  }
  int32_t n_tokens = 0;
  if (!read_i32(n_tokens) || !in(n_tokens, 0, 1 << 20)) {
    why = "has a corrupt vocabulary";
    return false;
  }
  for (int32_t i = 0; i < n_tokens; ++i) {
    int32_t len = 0;
    if (!read_i32(len) || !in(len, 0, 1 << 16) || !skip(len)) {
      why = "has a corrupt vocabulary";
      return false;
    }
  }
  // Tensors until the end of the file; whisper.cpp stops at a short read the same way.
  while (size - static_cast<int64_t>(f.tellg()) >= 12) {
    int32_t n_dims = 0, length = 0, ttype = 0;
    read_i32(n_dims);
    read_i32(length);
    read_i32(ttype);
    if (!in(n_dims, 1, 4) || !in(length, 1, 1024) || !in(ttype, 0, GGML_TYPE_COUNT - 1) ||
        ggml_blck_size(static_cast<ggml_type>(ttype)) <= 0) {
      why = "has a corrupt tensor header";
      return false;
    }
    int64_t nelements = 1;
    for (int32_t i = 0; i < n_dims; ++i) {
      int32_t ne = 0;
      if (!read_i32(ne) || !in(ne, 1, INT32_MAX)) {
        why = "has a corrupt tensor shape";
        return false;
      }
      nelements *= ne;
      if (nelements > INT32_MAX) {
        why = "has a corrupt tensor shape";
        return false;
      }
    }
    const auto type = static_cast<ggml_type>(ttype);
    const int64_t bytes = nelements / ggml_blck_size(type) * static_cast<int64_t>(ggml_type_size(type));
    if (!skip(length) || !skip(bytes)) {
      why = "is truncated (a tensor runs past the end of the file)";
      return false;
    }
  }
  return true;
}

std::string AutoDtwPreset(const GgmlHeader& h) {
  const std::string type = ModelTypeFromHeader(h);
  if (type.empty()) return "";
  if (type == "large") {
    // v1 and v2 share a shape; v2 is the one in use. v3 has 128 mel bins and one more token.
    if (h.n_vocab == 51866) return h.n_text_layer == 4 ? "large.v3.turbo" : "large.v3";
    return "large.v2";
  }
  return h.n_vocab == 51864 ? type + ".en" : type;
}

bool DtwPresetFromName(const std::string& name, whisper_alignment_heads_preset& out) {
  static const std::pair<const char*, whisper_alignment_heads_preset> kPresets[] = {
      {"tiny", WHISPER_AHEADS_TINY},         {"tiny.en", WHISPER_AHEADS_TINY_EN},
      {"base", WHISPER_AHEADS_BASE},         {"base.en", WHISPER_AHEADS_BASE_EN},
      {"small", WHISPER_AHEADS_SMALL},       {"small.en", WHISPER_AHEADS_SMALL_EN},
      {"medium", WHISPER_AHEADS_MEDIUM},     {"medium.en", WHISPER_AHEADS_MEDIUM_EN},
      {"large.v1", WHISPER_AHEADS_LARGE_V1}, {"large.v2", WHISPER_AHEADS_LARGE_V2},
      {"large.v3", WHISPER_AHEADS_LARGE_V3}, {"large.v3.turbo", WHISPER_AHEADS_LARGE_V3_TURBO},
  };
  for (const auto& p : kPresets) {
    if (name == p.first) {
      out = p.second;
      return true;
    }
  }
  return false;
}

}  // namespace whisper_addon
