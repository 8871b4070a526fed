"""Stand-in for torch (see ../README.md): only what peer-transformers.py calls."""
import contextlib
import os

if os.environ.get("FAKE_TORCH_MISSING") == "1":
    raise ImportError("No module named 'torch' (fake)")

__version__ = "0.0.0+fake"
float16 = "float16"
float32 = "float32"
long = "int64"


class _Cuda:
    @staticmethod
    def is_available():
        return os.environ.get("FAKE_TORCH_CUDA") == "1"

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def get_device_name(_index=0):
        return "Fake GPU"

    @staticmethod
    def empty_cache():
        pass


cuda = _Cuda()


class Tensor:
    def __init__(self, shape):
        self.shape = tuple(shape)


def manual_seed(_seed):
    pass


def randn(*shape, dtype=None, device=None):
    return Tensor(shape)


def full(shape, _value, dtype=None, device=None):
    return Tensor(shape)


@contextlib.contextmanager
def device(_name):
    yield


@contextlib.contextmanager
def inference_mode():
    yield
