import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { nearestOption, unknownOptionMessage } from './args.ts';

const KNOWN = ['model', 'language', 'format', 'out', 'threads', 'max-duration', 'no-vad', 'self-check', 'help'];

function messageFor(args: string[]): string | null {
  try {
    parseArgs({ args, allowPositionals: true, options: { format: { type: 'string' } } });
  } catch (err) {
    return unknownOptionMessage(err, KNOWN);
  }
  return 'parsed';
}

describe('unknown options', () => {
  it.each([
    ['--formats', 'format'],
    ['--fromat', 'format'],
    ['--lang', 'language'],
    ['--max-durations', 'max-duration'],
    ['--thread', 'threads'],
    ['--novad', 'no-vad'],
  ])('%s → --%s', (typed, near) => {
    expect(nearestOption(typed, KNOWN)).toBe(near);
  });

  it('suggests nothing for an option far from every known one', () => {
    expect(nearestOption('--banana', KNOWN)).toBeNull();
  });

  it('quotes the option as typed, once, and says what to do', () => {
    expect(messageFor(['--formats', 'srt'])).toBe('unknown option --formats; did you mean --format?');
    expect(messageFor(['--formats=srt'])).toBe('unknown option --formats; did you mean --format?');
    expect(messageFor(['--zzzzzz'])).toBe('unknown option --zzzzzz (see --help)');
    expect(messageFor(['--format', 'srt'])).toBe('parsed');
  });
});
