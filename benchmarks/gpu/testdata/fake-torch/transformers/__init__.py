"""Stand-in for transformers (see ../README.md): only what peer-transformers.py calls."""
__version__ = "0.0.0+fake"


class WhisperConfig:
    def __init__(self, attn_implementation=None, decoder_start_token_id=50258, **kw):
        self.__dict__.update(kw)
        self.decoder_start_token_id = decoder_start_token_id
        self._attn_implementation = attn_implementation


class _Encoder:
    def __call__(self, feats):
        return feats


class WhisperForConditionalGeneration:
    def __init__(self, config):
        self.config = config

    @classmethod
    def _from_config(cls, config, attn_implementation=None, dtype=None):
        config._attn_implementation = attn_implementation
        return cls(config)

    def to(self, device=None, dtype=None):
        return self

    def eval(self):
        return self

    def get_encoder(self):
        return _Encoder()
