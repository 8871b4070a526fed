"""Stand-in for transformers.generation (see ../../README.md)."""
import os

from torch import Tensor


class GenerationMixin:
    @staticmethod
    def generate(model, input_features, decoder_input_ids, do_sample, num_beams, min_new_tokens, max_new_tokens):
        assert not do_sample and num_beams == 1 and min_new_tokens == max_new_tokens
        assert decoder_input_ids.shape[0] == input_features.shape[0]
        if str(input_features.shape[0]) == os.environ.get("FAKE_TORCH_OOM_BATCH"):
            raise RuntimeError("CUDA out of memory (fake)")
        return Tensor((input_features.shape[0], decoder_input_ids.shape[1] + max_new_tokens))
