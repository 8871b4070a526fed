/**
 * The shared fixtures the workers' tests read, through the one checked resolver (test-support/fixtures.ts).
 */
import { fixture } from '../../test-support/fixtures.ts';

export async function jfkWav(): Promise<string> {
  return fixture('speech/jfk/jfk.wav');
}
