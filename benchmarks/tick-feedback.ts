/**
 * Whether `process.nextTick` stays on V8's fast path in the service (see api/tick-maps.ts): starts
 * the service as a checkout's `npm start` runs it, several times, loads `GET /api/health` with
 * autocannon, then asks V8 for nextTick's feedback. The stores of its object literal are either
 * MONOMORPHIC (fast) or megamorphic (every tick through V8's runtime, for the life of the process).
 *
 *   node benchmarks/tick-feedback.ts [--runs 8] [--duration 4] [--dir DIR ...] [--out FILE]
 *
 * `--dir` (repeatable, default this checkout) names the checkouts to start, in turns.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { autocannon, npmStartArgs, ROOT } from './lib/servers.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '8' },
    duration: { type: 'string', default: '4' },
    dir: { type: 'string', multiple: true },
    out: { type: 'string' },
  },
});
const dirs = (values.dir ?? [ROOT]).map((d) => resolve(d));
const PROBE = join(ROOT, 'benchmarks/lib/tick-feedback-probe.ts');

/** The feedback slots of nextTick's literal in V8's print, in order: MONOMORPHIC, MEGAMORPHIC, … */
function literalSlots(stdout: string): string[] {
  const start = stdout.indexOf('DebugPrint:');
  if (start < 0) return [];
  const lines = stdout.slice(start).split('\n');
  const slots: string[] = [];
  lines.forEach((line, i) => {
    const m = / - slot #\d+ DefineKeyedOwnPropertyInLiteral (\w+)/.exec(line);
    if (!m) return;
    const next = lines[i + 1] ?? '';
    if (next.includes('megamorphic_symbol')) slots.push('MEGAMORPHIC');
    else if (next.includes('[cleared]')) slots.push('CLEARED');
    else slots.push(m[1]!);
  });
  return slots;
}

async function once(dir: string) {
  const work = await mkdtemp(join(tmpdir(), 'tick-feedback-'));
  // V8 prints through C's stdio: into a pipe, part of it never arrives; into a file, all of it does.
  const stdoutPath = join(work, 'stdout');
  const stdout = await open(stdoutPath, 'w');
  const child = spawn(process.execPath, ['--allow-natives-syntax', '--import', PROBE, ...npmStartArgs(dir)], {
    cwd: dir,
    env: { ...process.env, PORT: '0', DATA_DIR: join(work, 'data'), LOG_LEVEL: 'info' },
    stdio: ['ignore', stdout.fd, 'pipe'],
  });
  const closed = new Promise((done) => child.once('close', done));
  let rps: number;
  try {
    const port = await new Promise<number>((ok, fail) => {
      let err = '';
      child.stderr!.on('data', (b: Buffer) => {
        err += b.toString();
        const m = /serving http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
        if (m) ok(Number(m[1]));
      });
      child.once('exit', (code) => fail(new Error(`exited ${code}: ${err}`)));
    });
    const opts = { connections: '20', duration: values.duration! };
    await autocannon(port, opts);
    rps = (await autocannon(port, opts)).rps;
    child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    child.kill('SIGTERM');
    await closed;
    await stdout.close();
  }
  const slots = literalSlots(await readFile(stdoutPath, 'utf8'));
  await rm(work, { recursive: true, force: true });
  if (slots.length === 0) throw new Error(`no literal slots in nextTick's feedback (${stdoutPath})`);
  return { dir, rps: Math.round(rps), slots, megamorphic: slots.some((s) => s === 'MEGAMORPHIC') };
}

const runs: Array<Awaited<ReturnType<typeof once>>> = [];
for (let r = 0; r < Number(values.runs); r++) {
  for (const dir of dirs) {
    const run = await once(dir);
    runs.push(run);
    process.stderr.write(`${dir}: ${run.rps} req/s, ${run.megamorphic ? 'megamorphic' : 'fast'} (${run.slots})\n`);
  }
}
const result = {
  what: "nextTick's object literal stores after GET /api/health load: fast (monomorphic) or megamorphic",
  command: `node benchmarks/tick-feedback.ts --runs ${values.runs} --duration ${values.duration}${dirs.map((d) => ` --dir ${d}`).join('')}`,
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    loadavgAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
    node: process.version,
  },
  runs,
  summary: Object.fromEntries(
    dirs.map((dir) => {
      const mine = runs.filter((r) => r.dir === dir);
      return [dir, { runs: mine.length, megamorphic: mine.filter((r) => r.megamorphic).length }];
    }),
  ),
};
const text = `${JSON.stringify(result, null, 2)}\n`;
if (values.out) await writeFile(values.out, text);
process.stdout.write(text);
