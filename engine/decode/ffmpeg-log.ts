/**
 * Reads ffmpeg's stderr (at `-loglevel info`) as it arrives: the input's container, its claimed duration and
 * its audio streams from the header dump, and a bounded tail of the log for error reports. Memory stays
 * bounded whatever ffmpeg prints: one partial line of at most MAX_LINE characters and a tail of MAX_TAIL.
 */

const MAX_LINE = 4096;
const MAX_TAIL = 16 * 1024;

export interface LogEvents {
  /** The input's header dump gave a duration (seconds) or said N/A (null). */
  onDuration?: (seconds: number | null) => void;
  /** ffmpeg has printed the output header: everything about the input is known. */
  onHeaderDone?: () => void;
}

type Section = 'start' | 'input' | 'mapping' | 'output';

export class FfmpegLog {
  /** The demuxer's name list as ffmpeg prints it, e.g. 'mov,mp4,m4a,3gp,3g2,mj2'. */
  format: string | undefined;
  /** Undefined until the header dump printed one; null when it said N/A. */
  durationSec: number | null | undefined;
  /** Streams of the input by kind ('Audio', 'Video', 'Subtitle', 'Data', ...). */
  readonly streams: Record<string, number> = {};
  headerDone = false;

  /** The input has a real video or subtitle stream and no audio one (a truncated or corrupt index shows
   * only unrecognised "Data: none" streams, which is a corrupt file, not a silent video). */
  get hasOnlyNonAudio(): boolean {
    return !this.streams.Audio && Boolean(this.streams.Video || this.streams.Subtitle);
  }

  private section: Section = 'start';
  private partial = '';
  private tail = '';
  private readonly events: LogEvents;

  constructor(events: LogEvents = {}) {
    this.events = events;
  }

  push(text: string): void {
    this.tail = (this.tail + text).slice(-MAX_TAIL);
    const parts = (this.partial + text).split(/\r\n|\r|\n/);
    this.partial = (parts.pop() ?? '').slice(0, MAX_LINE);
    for (const line of parts) this.line(line.slice(0, MAX_LINE));
  }

  /** Flushes a final line that had no newline. */
  end(): void {
    if (this.partial) this.line(this.partial);
    this.partial = '';
  }

  /** True when some line of the (tail of the) log matches. */
  saw(pattern: RegExp): boolean {
    return pattern.test(this.tail);
  }

  /** The last lines of the log, for an error's cause (never shown to API callers). */
  lastLines(n = 12): string {
    return this.tail
      .split(/\r\n|\r|\n/)
      .filter(Boolean)
      .slice(-n)
      .join('\n');
  }

  private line(line: string): void {
    if (this.section === 'output') return;
    const input = /^Input #0, (.+?), from /.exec(line);
    if (input) {
      this.section = 'input';
      this.format = input[1];
      return;
    }
    if (line.startsWith('Stream mapping:')) {
      this.section = 'mapping';
      return;
    }
    if (line.startsWith('Output #0')) {
      this.section = 'output';
      this.headerDone = true;
      this.events.onHeaderDone?.();
      return;
    }
    if (this.section !== 'input') return;
    const duration = /^\s+Duration: (?:(\d+):(\d\d):(\d\d(?:\.\d+)?)|N\/A)/.exec(line);
    if (duration && this.durationSec === undefined) {
      this.durationSec =
        duration[1] === undefined ? null : Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]);
      this.events.onDuration?.(this.durationSec);
      return;
    }
    const stream = /^\s+Stream #0:\d+\S*: (\w+):/.exec(line);
    if (stream) this.streams[stream[1]!] = (this.streams[stream[1]!] ?? 0) + 1;
  }
}
