/**
 * engine/vad: speech detection and the windows Whisper decodes. Silero VAD through onnxruntime-node
 * (default, streaming), whisper.cpp's own VAD as an alternative detector, and the pure planner that
 * turns speech spans into ≤ 30 s windows.
 */
export {
  detectSpeech,
  FRAME_SAMPLES,
  SAMPLE_RATE,
  type SileroLoadOptions,
  SileroVad,
  type SpeechSpan,
  sileroOnnxPath,
  type VadOptions,
  VadStream,
} from './silero.ts';
export {
  type SpanStream,
  type SpeechDetector,
  WhisperCppVad,
  type WhisperCppVadOptions,
  WhisperVadStream,
} from './whisper-vad.ts';
export { type AudioWindow, planWindows, type WindowOptions, WindowPlanner } from './windows.ts';
