/**
 * Grouped horizontal bars with a p25–p75 whisker, as a standalone SVG string: for "the same work,
 * side by side" results where lineChart (svg.ts) has no x axis to speak of. Like lineChart, the
 * command and machine go at the foot so the picture never loses where it came from.
 */

export interface Bar {
  label: string;
  median: number;
  p25?: number;
  p75?: number;
  /** Text after the bar (e.g. a ratio); defaults to the median. */
  note?: string;
}

export interface BarGroup {
  title: string;
  bars: Bar[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function barChart(o: { title: string; unit: string; groups: BarGroup[]; footer?: string[] }): string {
  const W = 820;
  const L = 230;
  const R = 150;
  const barH = 18;
  const gap = 6;
  const footer = o.footer ?? [];
  const rows = o.groups.reduce((n, g) => n + g.bars.length, 0);
  const H = 60 + o.groups.length * 28 + rows * (barH + gap) + 30 + 16 * footer.length;
  const pw = W - L - R;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(o.title)}</text>`,
  ];
  let y = 50;
  for (const g of o.groups) {
    const max = Math.max(...g.bars.map((b) => b.p75 ?? b.median)) * 1.05 || 1;
    const X = (v: number) => L + (v / max) * pw;
    parts.push(`<text x="10" y="${y + 14}" font-weight="bold">${esc(g.title)}</text>`);
    y += 24;
    g.bars.forEach((b, i) => {
      const c = COLORS[i % COLORS.length];
      parts.push(
        `<text x="${L - 8}" y="${y + barH - 5}" text-anchor="end">${esc(b.label)}</text>`,
        `<rect x="${L}" y="${y}" width="${(X(b.median) - L).toFixed(1)}" height="${barH}" fill="${c}" opacity="0.8"/>`,
      );
      if (b.p25 !== undefined && b.p75 !== undefined) {
        const my = y + barH / 2;
        parts.push(
          `<line x1="${X(b.p25).toFixed(1)}" x2="${X(b.p75).toFixed(1)}" y1="${my}" y2="${my}" stroke="#222" stroke-width="1.5"/>`,
          `<line x1="${X(b.p25).toFixed(1)}" x2="${X(b.p25).toFixed(1)}" y1="${my - 5}" y2="${my + 5}" stroke="#222"/>`,
          `<line x1="${X(b.p75).toFixed(1)}" x2="${X(b.p75).toFixed(1)}" y1="${my - 5}" y2="${my + 5}" stroke="#222"/>`,
        );
      }
      const label = b.note ?? `${b.median} ${o.unit}`;
      parts.push(`<text x="${Math.max(X(b.median), X(b.p75 ?? 0)) + 6}" y="${y + barH - 5}">${esc(label)}</text>`);
      y += barH + gap;
    });
    y += 4;
  }
  parts.push(
    `<text x="${L}" y="${y + 14}" font-size="11" fill="#555">bars: median; whiskers: 25th–75th percentile (${esc(o.unit)})</text>`,
  );
  footer.forEach((line, i) => {
    parts.push(
      `<text x="10" y="${H - 10 - 16 * (footer.length - 1 - i)}" font-size="10" fill="#555">${esc(line)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
