/**
 * Jobs per second with 1, 2 and 3 worker processes on one Redis queue, in one run: does adding a
 * host add its share? Each worker is the real worker process (workers/worker.ts: env config,
 * BullMQ, signals) around the STAND-IN processor, whose job holds for `--job-ms` without using the
 * CPU, as a job on a GPU host leaves the host's CPU free. So what is measured is the queue and the
 * processes (pick-up, locks, results, events), not a model; the ideal is N × concurrency / job time.
 *
 *   node benchmarks/queue/scaling.ts [--jobs 120] [--job-ms 100] [--rounds 3] [--redis redis://127.0.0.1:6379] [--out FILE]
 *
 * The worker counts are interleaved (1, 2, 3, 1, 2, 3, ...) over `--rounds` so a change in the
 * machine's load hits each of them alike; each figure is the median of its rounds.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median } from '../../test-support/stats.ts';
import { createBullmqQueue } from '../../workers/index.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '120' },
    'job-ms': { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    out: { type: 'string' },
  },
});
const JOBS = Number(values.jobs);
const JOB_MS = Number(values['job-ms']);
const ROUNDS = Number(values.rounds);
const REDIS = values.redis!;
const WORKER = fileURLToPath(new URL('../../workers/testing/standin-worker.ts', import.meta.url));
const PREFIX = 'transcribe-bench';

function startWorker(queueName: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [WORKER], {
    env: {
      ...process.env,
      REDIS_URL: REDIS,
      QUEUE_NAME: queueName,
      QUEUE_PREFIX: PREFIX,
      WORKER_CONCURRENCY: '1',
      WORKER_SHUTDOWN_GRACE_MS: '5000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      buf += c;
      if (buf.includes('"event":"ready"')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`worker exited ${code} before ready`)));
  });
}

async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  await exited;
}

async function measure(workers: number): Promise<number> {
  const name = `scaling-${randomUUID().slice(0, 8)}`;
  const queue = await createBullmqQueue({ redisUrl: REDIS, name, prefix: PREFIX });
  const children = await Promise.all(Array.from({ length: workers }, () => startWorker(name)));
  try {
    const ids = Array.from({ length: JOBS }, (_, i) => `j${i}`);
    const started = performance.now();
    await Promise.all(ids.map((id) => queue.enqueue({ id, source: `standin:ok?ms=${JOB_MS}` })));
    await Promise.all(ids.map((id) => queue.wait(id)));
    return JOBS / ((performance.now() - started) / 1000);
  } finally {
    await Promise.all(children.map(stopWorker));
    await queue.obliterate();
    await queue.close();
  }
}

const counts = [1, 2, 3];
const samples: Record<number, number[]> = { 1: [], 2: [], 3: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const n of counts) {
    const jps = await measure(n);
    samples[n]!.push(jps);
    process.stderr.write(`round ${r + 1}: ${n} worker(s) ${jps.toFixed(1)} jobs/s\n`);
  }
}
const ideal1 = 1000 / JOB_MS;
const result = {
  what: 'jobs/s with 1, 2, 3 stand-in worker processes on one BullMQ queue (interleaved rounds, medians)',
  command: `node benchmarks/queue/scaling.ts --jobs ${JOBS} --job-ms ${JOB_MS} --rounds ${ROUNDS}`,
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    loadavgAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
    node: process.version,
  },
  jobs: JOBS,
  jobMs: JOB_MS,
  rounds: ROUNDS,
  results: counts.map((n) => ({
    workers: n,
    jobsPerSec: Math.round(median(samples[n]!) * 10) / 10,
    samples: samples[n]!.map((x) => Math.round(x * 10) / 10),
    ofIdeal: Math.round((median(samples[n]!) / (n * ideal1)) * 1000) / 1000,
    vsOneWorker: Math.round((median(samples[n]!) / median(samples[1]!)) * 1000) / 1000,
  })),
};
const text = `${JSON.stringify(result, null, 2)}\n`;
if (values.out) await writeFile(values.out, text);
process.stdout.write(text);
