#!/usr/bin/env python3
"""The transformers peer for the GPU harness (benchmarks/gpu/run.sh runs it beside our addon).

Hugging Face transformers' WhisperForConditionalGeneration with random weights of the large-v3 shape
(WhisperConfig with large-v3's dimensions; nothing is downloaded), fp16, SDPA attention, greedy decoding
through GenerationMixin.generate (WhisperGenerationMixin.generate wants a real checkpoint's generation
config), exactly N new tokens per 30 s window (min_new_tokens = max_new_tokens = N, default 100).
For each batch size: a warm-up, then --runs timed runs, median wall; the encoder alone timed the same
way. s of GPU per audio-hour = wall_s / (batch x 30 s) x 3600.

Rows carry the fields of results/gpu-h100-2026-11-22/hf-anchor-*.json (batch, tokens, wall_s,
encoder_s, ms_per_step, sec_per_audio_hour) plus the runs and encoder ms per window.

  python3 benchmarks/gpu/peer-transformers.py --batch-sizes 1,8,24,64 [--tokens 100] [--runs 3]
      [--warmup 1] [--device cuda|cpu] [--shape large-v3|tiny] [--out FILE]
--device cpu (default shape tiny, fp32) is a dry run of the script, not a measurement.

JSON on stdout and in --out. Exit codes: 0 measured (a batch size that failed, e.g. out of memory, is
a row {"batch", "error"}); 2 bad arguments; 3 torch or transformers missing; 4 CUDA asked for and not
available; 5 the measurement failed (the model, or every batch size). On failure the message goes to
stderr and, when --out is given, {"ok": false, "error": ...} to the file, so the harness can say why.
"""

import argparse
import json
import platform
import statistics
import sys
import time

SHAPES = {
    # openai/whisper-large-v3: 32 + 32 layers, d_model 1280, 20 heads, 128 mel bins, 51866 tokens.
    "large-v3": dict(d_model=1280, encoder_layers=32, decoder_layers=32, encoder_attention_heads=20,
                     decoder_attention_heads=20, encoder_ffn_dim=5120, decoder_ffn_dim=5120,
                     num_mel_bins=128, vocab_size=51866),
    # openai/whisper-tiny: for a dry run on a CPU.
    "tiny": dict(d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                 decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
                 num_mel_bins=80, vocab_size=51865),
}
WINDOW_S = 30.0
FRAMES = 3000  # mel frames per 30 s window


def fail(code, message, out):
    print(f"peer-transformers: {message}", file=sys.stderr)
    if out:
        with open(out, "w") as f:
            json.dump({"ok": False, "exitCode": code, "error": message}, f, indent=1)
            f.write("\n")
    sys.exit(code)


def median_timed(fn, sync, warmup, runs):
    for _ in range(warmup):
        fn()
    sync()
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        sync()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), walls, result


def measure(torch, GenerationMixin, model, encoder, config, b, dtype, sync, a):
    """One batch size: the encoder alone, then generate with exactly a.tokens new tokens; medians."""
    feats = torch.randn(b, config.num_mel_bins, FRAMES, dtype=dtype, device=a.device)
    # One start token per window, given explicitly so the prompt length is known (no forced ids).
    start = torch.full((b, 1), config.decoder_start_token_id, dtype=torch.long, device=a.device)
    with torch.inference_mode():
        enc_s, enc_runs, _ = median_timed(lambda: encoder(feats), sync, a.warmup, a.runs)
        wall_s, walls, out = median_timed(
            lambda: GenerationMixin.generate(model, input_features=feats, decoder_input_ids=start,
                                             do_sample=False, num_beams=1,
                                             min_new_tokens=a.tokens, max_new_tokens=a.tokens),
            sync, a.warmup, a.runs)
    seqs = out.sequences if hasattr(out, "sequences") else out
    new_tokens = int(seqs.shape[1]) - int(start.shape[1])
    if new_tokens != a.tokens:
        raise RuntimeError(f"generate made {new_tokens} new tokens, not {a.tokens}")
    row = {
        "batch": b,
        "tokens": new_tokens,
        "wall_s": round(wall_s, 4),
        "encoder_s": round(enc_s, 4),
        "ms_per_step": round((wall_s - enc_s) / new_tokens * 1000, 3),
        "sec_per_audio_hour": round(wall_s / (b * WINDOW_S) * 3600, 2),
        "encoder_ms_per_window": round(enc_s / b * 1000, 2),
        "wall_s_runs": [round(w, 4) for w in walls],
        "encoder_s_runs": [round(w, 4) for w in enc_runs],
    }
    print(f"peer-transformers: batch {b}: {row['wall_s']} s, {row['sec_per_audio_hour']} s/h, "
          f"encoder {row['encoder_ms_per_window']} ms/window", file=sys.stderr)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch-sizes", default="1,8,24,64")
    ap.add_argument("--tokens", type=int, default=100, help="new tokens per window (min = max)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--shape", choices=sorted(SHAPES), help="default: large-v3 on cuda, tiny on cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        batches = [int(b) for b in a.batch_sizes.split(",") if b.strip()]
    except ValueError:
        batches = []
    if not batches or min(batches) < 1 or a.tokens < 1 or a.runs < 1 or a.warmup < 0:
        fail(2, f"bad arguments: --batch-sizes {a.batch_sizes!r} --tokens {a.tokens} --runs {a.runs}", a.out)
    shape = a.shape or ("large-v3" if a.device == "cuda" else "tiny")

    try:
        import torch
    except ImportError as e:
        fail(3, f"PyTorch is not installed here ({e}); this peer needs torch and transformers", a.out)
    try:
        import transformers
        from transformers import WhisperConfig, WhisperForConditionalGeneration
        from transformers.generation import GenerationMixin
    except ImportError as e:
        fail(3, f"transformers is not installed here or lacks Whisper ({e})", a.out)
    if a.device == "cuda" and not torch.cuda.is_available():
        fail(4, f"CUDA is not available to torch {torch.__version__} (run with --device cpu for a dry run)", a.out)

    dtype = torch.float16 if a.device == "cuda" else torch.float32
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    try:
        torch.manual_seed(a.seed)
        config = WhisperConfig(**SHAPES[shape], max_source_positions=FRAMES // 2, max_target_positions=448,
                               attn_implementation="sdpa")
        with torch.device(a.device):
            try:
                model = WhisperForConditionalGeneration._from_config(config, attn_implementation="sdpa", dtype=dtype)
            except TypeError:  # transformers < 4.56 spells it torch_dtype
                model = WhisperForConditionalGeneration._from_config(config, attn_implementation="sdpa",
                                                                     torch_dtype=dtype)
        model = model.to(device=a.device, dtype=dtype).eval()
        attn = getattr(model.config, "_attn_implementation", None)
        if attn != "sdpa":
            fail(5, f"the model runs attention '{attn}', not sdpa", a.out)
        encoder = model.get_encoder()
        rows = []
        for b in batches:
            try:
                rows.append(measure(torch, GenerationMixin, model, encoder, config, b, dtype, sync, a))
            except Exception as e:  # out of memory at a large batch: keep the other batch sizes
                rows.append({"batch": b, "error": f"{type(e).__name__}: {e}"})
                print(f"peer-transformers: batch {b} failed: {type(e).__name__}: {e}", file=sys.stderr)
            if a.device == "cuda":
                torch.cuda.empty_cache()
        if not any("error" not in r for r in rows):
            fail(5, "every batch size failed: " + "; ".join(f"{r['batch']}: {r['error']}" for r in rows), a.out)
    except SystemExit:
        raise
    except Exception as e:  # out of memory, an API that moved: say which, as data
        fail(5, f"measurement failed: {type(e).__name__}: {e}", a.out)

    result = {
        "ok": True,
        "anchor": f"transformers WhisperForConditionalGeneration {shape} shape, "
                  f"{'fp16' if dtype == torch.float16 else 'fp32'}, sdpa, greedy",
        "shape": shape,
        "dims": SHAPES[shape],
        "device": a.device,
        "gpu": torch.cuda.get_device_name(0) if a.device == "cuda" else None,
        "dryRun": a.device != "cuda",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "method": "GenerationMixin.generate, greedy, min_new_tokens = max_new_tokens; random input features; "
                  f"{a.warmup} warm-up + {a.runs} timed runs, median; "
                  "sec_per_audio_hour = wall_s / (batch x 30 s) x 3600",
        "command": " ".join(["python3"] + sys.argv),
        "rows": rows,
    }
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
