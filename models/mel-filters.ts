/**
 * Whisper's mel filter bank from its formula, so that generating a synthetic model needs no data file:
 * librosa.filters.mel(sr=16000, n_fft=400, n_mels) with its defaults (Slaney mel scale, Slaney area
 * normalisation, float32), which is how openai/whisper made its assets/mel_filters.npz. The same
 * float64 steps and the same two roundings to float32 as librosa give the npz's values bit for bit
 * (checked in synthetic.test.ts for both 80 and 128 bins).
 */

const SAMPLE_RATE = 16_000;
const N_FFT = 400;
export const N_FFT_BINS = 1 + N_FFT / 2;

// Slaney's scale: linear below 1 kHz, logarithmic above.
const F_SP = 200 / 3;
const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOGSTEP = Math.log(6.4) / 27;

function hzToMel(hz: number): number {
  return hz >= MIN_LOG_HZ ? MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOGSTEP : hz / F_SP;
}

function melToHz(mel: number): number {
  return mel >= MIN_LOG_MEL ? MIN_LOG_HZ * Math.exp(LOGSTEP * (mel - MIN_LOG_MEL)) : F_SP * mel;
}

/** The `nMels` × 201 filter bank, row-major, as whisper.cpp's model files carry it. */
export function melFilters(nMels: number): Float32Array {
  // np.fft.rfftfreq(400, 1/16000)
  const binHz = 1 / (N_FFT * (1 / SAMPLE_RATE));
  const fft = Array.from({ length: N_FFT_BINS }, (_, i) => i * binHz);
  // np.linspace(min_mel, max_mel, n_mels + 2): i * step + start, the last point set to stop exactly.
  const n = nMels + 2;
  const minMel = hzToMel(0);
  const maxMel = hzToMel(SAMPLE_RATE / 2);
  const step = (maxMel - minMel) / (n - 1);
  const edges = Array.from({ length: n }, (_, i) => melToHz(i === n - 1 ? maxMel : i * step + minMel));

  const out = new Float32Array(nMels * N_FFT_BINS);
  for (let i = 0; i < nMels; i++) {
    const lo = edges[i]!;
    const mid = edges[i + 1]!;
    const hi = edges[i + 2]!;
    const enorm = 2 / (hi - lo);
    for (let j = 0; j < N_FFT_BINS; j++) {
      const lower = -(lo - fft[j]!) / (mid - lo);
      const upper = (hi - fft[j]!) / (hi - mid);
      // np.minimum/np.maximum as numpy's SIMD loops run them (a tie, ±0, goes to the second operand: the
      // npz has -0.0 at [0][0]); librosa stores the triangle in a float32 array, then scales it in place
      // (float64 product, float32 result).
      // biome-ignore lint/complexity/useMathMinMax: Math.min/max order ±0 differently from numpy
      const m = lower < upper ? lower : upper;
      // biome-ignore lint/complexity/useMathMinMax: as above (this keeps the npz's -0.0)
      const w = Math.fround(0 > m ? 0 : m);
      out[i * N_FFT_BINS + j] = Math.fround(w * enorm);
    }
  }
  return out;
}
