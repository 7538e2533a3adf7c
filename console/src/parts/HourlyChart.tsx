import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface HourCounts {
  hour: string;
  allowed: number;
  denied: number;
  awaitingApproval: number;
}

const SERIES = [
  { key: 'allowed', label: 'allowed', color: '#1d6b32' },
  { key: 'denied', label: 'denied', color: '#a4161a' },
  { key: 'awaitingApproval', label: 'awaiting approval', color: '#b36b00' },
] as const;

/**
 * Checks per hour as stacked bars (uPlot, on a canvas: no inline style or script, so it runs under
 * the console's Content-Security-Policy). The canvas is an image to assistive technology, named by
 * a summary; the table below it holds every number, for screen readers and for anyone.
 */
export function HourlyChart({ hours, title }: { hours: HourCounts[]; title: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return undefined;
    const x = hours.map((h) => Date.parse(h.hour) / 1000);
    // Stacked: each series drawn is the sum of itself and those below it, the tallest first.
    let running = hours.map(() => 0);
    const stacked = SERIES.map((series) => (running = running.map((sum, i) => sum + hours[i]![series.key])));
    const bars = uPlot.paths.bars!({ size: [0.8, 40], align: 0 });
    const chart = new uPlot(
      {
        width: Math.max(280, element.clientWidth),
        height: 220,
        legend: { show: false },
        cursor: { show: false },
        // Half an hour either side, so the first and the last hour's bars are whole.
        scales: {
          x: { time: true, range: (_u, min, max) => [min - 1800, max + 1800] },
          y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] },
        },
        axes: [{ stroke: '#4d5561' }, { stroke: '#4d5561', size: 48 }],
        series: [
          {},
          ...SERIES.map((series) => ({
            label: series.label,
            fill: series.color,
            stroke: series.color,
            paths: bars,
            points: { show: false },
          })).reverse(),
        ],
      },
      [x, ...stacked.slice().reverse()],
      element,
    );
    const resized = new ResizeObserver(() => chart.setSize({ width: Math.max(280, element.clientWidth), height: 220 }));
    resized.observe(element);
    return () => {
      resized.disconnect();
      chart.destroy();
    };
  }, [hours]);

  const totals = SERIES.map((series) => hours.reduce((sum, h) => sum + h[series.key], 0));
  const summary = `${title}: ${SERIES.map((series, i) => `${totals[i]} ${series.label}`).join(', ')}, over ${hours.length} hours`;
  return (
    <figure className="chart">
      <figcaption>
        <span className="legend">
          {SERIES.map((series) => (
            <span key={series.key} className={`key-${series.key}`}>
              {series.label}
            </span>
          ))}
        </span>
      </figcaption>
      <div ref={box} className="chart-canvas" role="img" aria-label={summary} />
      <details>
        <summary>The numbers, hour by hour</summary>
        <div className="table-wrap">
          <table>
            <caption className="sr-only">{title}, hour by hour</caption>
            <thead>
              <tr>
                <th scope="col">Hour (UTC)</th>
                {SERIES.map((series) => (
                  <th scope="col" key={series.key}>
                    {series.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {hours.map((h) => (
                <tr key={h.hour}>
                  <th scope="row">{h.hour.slice(0, 13).replace('T', ' ')}:00</th>
                  <td>{h.allowed}</td>
                  <td>{h.denied}</td>
                  <td>{h.awaitingApproval}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
