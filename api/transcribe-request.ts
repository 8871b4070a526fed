/**
 * The shared pieces of every transcription route (/api/transcribe, the paid agent route, /v1):
 * the body schema, the prompt check, the transcript schema and the link between a client that
 * goes away and the work it started.
 */

import type { FastifyReply, FastifyRequest } from 'fastify';
import { checkPrompt, PROMPT_MAX_BYTES, PROMPT_MAX_TOKENS } from '../engine/index.ts';
import type { Progress, Transcript } from '../engine/types.ts';
import { ApiError } from './errors.ts';
import type { TranscribeRequest, Transcriber } from './transcriber.ts';

export const transcribeBody = {
  type: 'object',
  required: ['sourceUrl'],
  additionalProperties: false,
  properties: {
    sourceUrl: { type: 'string', minLength: 1, maxLength: 4096, description: 'https URL of the media' },
    word_timestamps: { type: 'boolean', default: true },
    language: { type: 'string', pattern: '^[a-z]{2}$', description: 'ISO-639-1 hint; omit to detect' },
    prompt: {
      type: 'string',
      maxLength: PROMPT_MAX_BYTES,
      description: `Text the model is conditioned on before the audio (names, spelling, style): whisper's ${PROMPT_MAX_TOKENS}-token prompt window, at most ${PROMPT_MAX_BYTES} bytes of UTF-8.`,
    },
  },
} as const;

export interface TranscribeBody {
  sourceUrl: string;
  word_timestamps: boolean;
  language?: string;
  prompt?: string;
}

/** The body's prompt, checked against whisper's window before any work or payment (400). */
export function checkedPrompt(body: TranscribeBody): string | undefined {
  try {
    return checkPrompt(body.prompt === '' ? undefined : body.prompt);
  } catch (err) {
    throw new ApiError(400, 'VALIDATION_FAILED', (err as Error).message, { details: { param: 'prompt' } });
  }
}

const wordSchema = {
  type: 'object',
  required: ['start', 'end', 'text'],
  properties: { start: { type: 'number' }, end: { type: 'number' }, text: { type: 'string' }, p: { type: 'number' } },
} as const;

export const transcriptSchema = {
  type: 'object',
  required: ['segments', 'language', 'duration'],
  properties: {
    segments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['start', 'end', 'text'],
        properties: {
          start: { type: 'number' },
          end: { type: 'number' },
          text: { type: 'string' },
          words: { type: 'array', items: wordSchema },
        },
      },
    },
    language: { type: 'string' },
    languageProbability: { type: 'number' },
    duration: { type: 'number' },
  },
} as const;

/**
 * Runs the transcription with a signal that fires when the client disconnects before the
 * answer is sent, so the fetch, ffmpeg and the inference stop with it.
 */
export async function transcribeForClient(
  transcriber: Transcriber,
  request: FastifyRequest,
  reply: FastifyReply,
  req: TranscribeRequest,
  /** Also stop at this signal (the paid route's settlement deadline). */
  deadline?: AbortSignal,
  onProgress?: (progress: Progress) => void,
): Promise<Transcript> {
  const controller = new AbortController();
  const onDeadline = () => controller.abort(deadline?.reason);
  deadline?.addEventListener('abort', onDeadline, { once: true });
  if (deadline?.aborted) onDeadline();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected'));
  };
  reply.raw.on('close', onClose);
  // A socket that closed while the body was read has already emitted close. (Not
  // `request.raw.destroyed`: a request is destroyed once its body is consumed.)
  if (request.raw.socket?.destroyed) onClose();
  try {
    const t = await transcriber.transcribe(req, controller.signal, onProgress);
    return req.wordTimestamps ? t : { ...t, segments: t.segments.map(({ words: _w, ...s }) => s) };
  } finally {
    reply.raw.off('close', onClose);
    deadline?.removeEventListener('abort', onDeadline);
  }
}
