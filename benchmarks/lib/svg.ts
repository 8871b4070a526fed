/**
 * A line chart as a standalone SVG string: enough for "metric vs duration" plots, with no plotting
 * dependency. Each series is a list of points; the chart notes the command and machine at its foot so
 * the picture is never separated from where it came from.
 */

export interface Series {
  name: string;
  points: Array<[number, number]>;
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  footer?: string[];
  /** Log scale on x (durations from 1 to 180 min read better that way). */
  logX?: boolean;
  /** Start the y axis at 0 (default true). */
  yFromZero?: boolean;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceTicks(min: number, max: number, count = 5): number[] {
  const span = max - min || 1;
  const step0 = span / count;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => span / s <= count) ?? 10 * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

const fmt = (v: number) => (Math.abs(v) >= 1000 || Number.isInteger(v) ? String(Math.round(v)) : v.toPrecision(3));

export function lineChart(o: ChartOptions): string {
  const W = 760;
  const H = 440 + 16 * (o.footer?.length ?? 0);
  const L = 80;
  const R = 190;
  const T = 50;
  const B = 70 + 16 * (o.footer?.length ?? 0);
  const pw = W - L - R;
  const ph = H - T - B;
  const all = o.series.flatMap((s) => s.points);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  const tx = (v: number) => (o.logX ? Math.log10(v) : v);
  let x0 = Math.min(...xs.map(tx));
  let x1 = Math.max(...xs.map(tx));
  if (x0 === x1) {
    x0 -= 1;
    x1 += 1;
  }
  const y0 = o.yFromZero === false ? Math.min(...ys) : Math.min(0, ...ys);
  const y1 = Math.max(...ys) * 1.08 || 1;
  const X = (v: number) => L + ((tx(v) - x0) / (x1 - x0)) * pw;
  const Y = (v: number) => T + ph - ((v - y0) / (y1 - y0)) * ph;

  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(o.title)}</text>`,
  );
  for (const t of niceTicks(y0, y1)) {
    parts.push(
      `<line x1="${L}" x2="${L + pw}" y1="${Y(t)}" y2="${Y(t)}" stroke="#ddd"/>`,
      `<text x="${L - 6}" y="${Y(t) + 4}" text-anchor="end">${fmt(t)}</text>`,
    );
  }
  const xTicks = o.logX ? [...new Set(xs)].sort((a, b) => a - b) : niceTicks(Math.min(...xs), Math.max(...xs));
  for (const t of xTicks) {
    parts.push(
      `<line x1="${X(t)}" x2="${X(t)}" y1="${T}" y2="${T + ph}" stroke="#eee"/>`,
      `<text x="${X(t)}" y="${T + ph + 16}" text-anchor="middle">${fmt(t)}</text>`,
    );
  }
  parts.push(
    `<rect x="${L}" y="${T}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`,
    `<text x="${L + pw / 2}" y="${T + ph + 36}" text-anchor="middle">${esc(o.xLabel)}</text>`,
    `<text transform="translate(18 ${T + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`,
  );
  o.series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    parts.push(
      `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const [x, y] of pts)
      parts.push(`<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3.5" fill="${c}"/>`);
    const ly = T + 10 + i * 20;
    parts.push(
      `<line x1="${L + pw + 14}" x2="${L + pw + 34}" y1="${ly}" y2="${ly}" stroke="${c}" stroke-width="2"/>`,
      `<text x="${L + pw + 40}" y="${ly + 4}">${esc(s.name)}</text>`,
    );
  });
  (o.footer ?? []).forEach((line, i) => {
    parts.push(
      `<text x="10" y="${H - 10 - 16 * ((o.footer?.length ?? 0) - 1 - i)}" font-size="10" fill="#555">${esc(line)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
