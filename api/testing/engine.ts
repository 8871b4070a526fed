/**
 * Test-only: the service's own transcriber (the in-process job queue and its worker, the real
 * engine) for tests whose subject is the API around it, not decoding: synthetic-micro with flash
 * attention, a third of the plain path's CPU on that model.
 */
import { createServiceTranscriber, type ServiceTranscriberOptions, type Transcriber } from '../transcriber.ts';

export function microTranscriber(options: Partial<ServiceTranscriberOptions> = {}): Promise<Transcriber> {
  return createServiceTranscriber({
    model: 'synthetic-micro',
    flashAttn: true,
    maxDurationSec: 600,
    threads: 2,
    ...options,
  });
}
