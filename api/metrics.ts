/**
 * `GET /metrics` in Prometheus text, by prom-client, served only with METRICS=on (it tells
 * outsiders about load). One registry per app:
 *
 * - HTTP requests by route pattern, method and status, with latency histograms (the route's
 *   pattern, never the raw URL, so made-up paths cannot grow the series);
 * - the queue's depth and jobs in flight, by queue kind, and the API's transcriptions in flight;
 * - audio seconds transcribed and the real-time factor (wall time over audio time, queue wait included);
 * - batch occupancy (windows per decoder step), encoder ms per window and model load time, where
 *   the model runs in this process, and the batched decoder's self-check verdicts there;
 * - x402 payments verified, settled and refused;
 * - new passwords the breach corpus could not be asked about (the check failed open);
 * - Node's default process metrics.
 */

import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { batchSelfChecks } from '../engine/index.ts';
import type { BreachCheckFailure } from './auth/breach-check.ts';
import type { Transcriber } from './transcriber.ts';

export type PaymentOutcome = 'verified' | 'settled' | 'refused';

export class Metrics {
  readonly registry = new Registry();
  readonly #http: Counter<'method' | 'route' | 'status'>;
  readonly #latency: Histogram<'method' | 'route' | 'status'>;
  readonly #audio: Counter;
  readonly #rtf: Histogram;
  readonly #inFlight: Gauge;
  readonly #payments: Counter<'outcome'>;
  readonly #breachCheck: Counter<'reason'>;

  constructor(transcriber: Transcriber) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#http = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by route pattern, method and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.#latency = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request to response, by route pattern, method and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
      registers,
    });
    this.#audio = new Counter({
      name: 'transcribe_audio_seconds_total',
      help: 'Seconds of audio transcribed.',
      registers,
    });
    this.#rtf = new Histogram({
      name: 'transcribe_real_time_factor',
      help: 'Wall time of a transcription (queue wait included) over its audio duration.',
      buckets: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
      registers,
    });
    this.#inFlight = new Gauge({
      name: 'transcribe_requests_in_flight',
      help: 'Transcriptions this API process is waiting on.',
      registers,
    });
    this.#payments = new Counter({
      name: 'x402_payments_total',
      help: 'x402 payments by outcome: verified by the facilitator, settled, or refused (verify or settle).',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['verified', 'settled', 'refused'] as const) this.#payments.inc({ outcome }, 0);
    this.#breachCheck = new Counter({
      name: 'password_breach_check_unavailable_total',
      help: 'New passwords the breach corpus could not be asked about (timeout, unreachable, http_status, malformed): the check failed open.',
      labelNames: ['reason'],
      registers,
    });

    // Read from the queue and the engine on each scrape; nothing polls between scrapes.
    const depth = new Gauge({
      name: 'queue_jobs',
      help: 'Jobs in the queue by state (waiting, active) and queue kind.',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        const s = await transcriber.stats?.().catch(() => undefined);
        if (!s) return;
        this.set({ queue: s.queue, state: 'waiting' }, s.waiting);
        this.set({ queue: s.queue, state: 'active' }, s.active);
        engineStats = s.engine;
      },
    });
    let engineStats: Awaited<ReturnType<NonNullable<Transcriber['stats']>>>['engine'];
    new Gauge({
      name: 'model_load_seconds',
      help: 'Seconds the model took to load in this process.',
      registers,
      collect() {
        if (engineStats?.modelLoadSec !== undefined) this.set(engineStats.modelLoadSec);
      },
    });
    new Gauge({
      name: 'batch_windows_per_step',
      help: 'Batched decoder occupancy: decoder calls served per graph step, mean since load.',
      registers,
      collect() {
        const b = engineStats?.batch;
        if (b && b.steps > 0) this.set(b.sequences / b.steps);
      },
    });
    new Gauge({
      name: 'encoder_ms_per_window',
      help: 'Batched encoder: milliseconds per encoded window, mean since load.',
      registers,
      collect() {
        const b = engineStats?.batch;
        if (b && b.encodes > 0) this.set(b.encodeMs / b.encodes);
      },
    });
    new Gauge({
      name: 'batch_self_check',
      help:
        "The batched decoder's self-check per batched setup in this process (engine/asr/README.md, " +
        '"Self-check"): 1 for the setup\'s status (verified, fell-back: it decodes unbatched, inconclusive).',
      labelNames: ['setup', 'backend', 'status'],
      registers,
      collect() {
        this.reset();
        for (const v of batchSelfChecks()) this.set({ setup: v.key, backend: v.backend, status: v.status }, 1);
      },
    });
    // The depth gauge's collect runs first (registration order), so the engine gauges read fresh stats.
    void depth;
  }

  payment(outcome: PaymentOutcome): void {
    this.#payments.inc({ outcome });
  }

  breachCheckUnavailable(reason: BreachCheckFailure): void {
    this.#breachCheck.inc({ reason });
  }

  /** The transcriber every route uses, counting what passes through it. */
  meter(inner: Transcriber): Transcriber {
    const m = this;
    const metered: Transcriber = {
      async transcribe(req, signal, onProgress) {
        const started = performance.now();
        m.#inFlight.inc();
        try {
          const t = await inner.transcribe(req, signal, onProgress);
          m.#audio.inc(t.duration);
          if (t.duration > 0) m.#rtf.observe((performance.now() - started) / 1000 / t.duration);
          return t;
        } finally {
          m.#inFlight.dec();
        }
      },
      close: () => inner.close(),
    };
    if (inner.stats) metered.stats = () => inner.stats!();
    return metered;
  }

  /** Counts every answer (hooks at the root, so 404s and refusals count too) and serves /metrics. */
  install(app: FastifyInstance): void {
    app.addHook('onResponse', async (request, reply) => {
      const labels = {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: String(reply.statusCode),
      };
      this.#http.inc(labels);
      this.#latency.observe(labels, reply.elapsedTime / 1000);
    });
    app.get('/metrics', { schema: { hide: true }, config: { rateLimit: false } }, async (_request, reply) => {
      const text = await this.registry.metrics();
      return reply.type(this.registry.contentType).send(text);
    });
  }
}
