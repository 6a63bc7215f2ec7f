import { describe, expect, test } from 'bun:test';
import { renderExposition } from '../../../src/core/metrics/exposition';
import { newHistogram, observe } from '../../../src/core/metrics/histogram';
import { parseExposition } from '../../helpers/prometheus';

describe('the Prometheus text exposition', () => {
  test('counters, gauges and histograms, labels escaped, buckets cumulative', () => {
    const h = newHistogram([0.1, 1]);
    for (const v of [0.05, 0.1, 0.5, 3]) observe(h, v);
    const text = renderExposition([
      { name: 'x_requests_total', help: 'Requests.\nBy route.', type: 'counter', samples: [{ labels: { route: '/a/"b"\\c', status: '200' }, value: 3 }, { labels: { route: '/d', status: '404' }, value: 1 }] },
      { name: 'x_up', help: 'Up.', type: 'gauge', samples: [{ value: 1 }] },
      { name: 'x_seconds', help: 'Durations.', type: 'histogram', samples: [{ labels: { kind: 'load' }, value: h }] },
    ]);
    expect(text).toBe(
      [
        '# HELP x_requests_total Requests.\\nBy route.',
        '# TYPE x_requests_total counter',
        'x_requests_total{route="/a/\\"b\\"\\\\c",status="200"} 3',
        'x_requests_total{route="/d",status="404"} 1',
        '# HELP x_up Up.',
        '# TYPE x_up gauge',
        'x_up 1',
        '# HELP x_seconds Durations.',
        '# TYPE x_seconds histogram',
        'x_seconds_bucket{kind="load",le="0.1"} 2',
        'x_seconds_bucket{kind="load",le="1"} 3',
        'x_seconds_bucket{kind="load",le="+Inf"} 4',
        'x_seconds_sum{kind="load"} 3.65',
        'x_seconds_count{kind="load"} 4',
        '',
      ].join('\n'),
    );
    const parsed = parseExposition(text);
    expect(parsed.value('x_requests_total', { route: '/a/"b"\\c' })).toBe(3);
    expect(parsed.value('x_seconds_bucket', { le: '+Inf' })).toBe(4);
  });

  test('an empty family is its HELP and TYPE only', () => {
    expect(renderExposition([{ name: 'x_total', help: 'None yet.', type: 'counter', samples: [] }])).toBe('# HELP x_total None yet.\n# TYPE x_total counter\n');
  });
});
