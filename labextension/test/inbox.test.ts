import { describe, expect, it } from 'vitest';

import {
  badgeDataset,
  goneNote,
  isExpanded,
  orderSections,
  panelCaption,
  panelHeader,
  pendingTotals,
  sectionLabel,
  sectionState,
  widenedSizes
} from '../src/inbox';

describe('the badge and the header', () => {
  it('count the pending requests of every notebook', () => {
    expect(pendingTotals([2, 0, 1])).toEqual({ pending: 3, waiting: 2 });
    expect(pendingTotals([])).toEqual({ pending: 0, waiting: 0 });
    expect(panelHeader(3, 2)).toBe('ACP agents · 3 pending in 2 notebooks');
    expect(panelHeader(1, 1)).toBe('ACP agents · 1 pending');
    expect(panelHeader(0, 0)).toBe('ACP agents');
    expect(panelCaption(2)).toBe('ACP agents (2 pending)');
    expect(panelCaption(0)).toBe('ACP agents');
  });

  it("set only the panel's own keys of the tab's dataset", () => {
    const shell = { id: 'acp-notebook-panel', jptablabel: 'ACP' };
    expect(badgeDataset(shell, 2)).toEqual({ ...shell, 'acp-badge': '2' });
    expect(badgeDataset({ ...shell, 'acp-badge': '2', 'acp-pending': '2' }, 0)).toEqual(shell);
    expect(shell).toEqual({ id: 'acp-notebook-panel', jptablabel: 'ACP' }); // not changed
  });
});

describe('a kernel section', () => {
  it('is named by its notebook, else its kernel', () => {
    expect(sectionLabel('work/demo.ipynb', 'abc')).toBe('demo.ipynb');
    expect(sectionLabel('', '0123456789abcdef')).toBe('kernel 01234567');
    expect(sectionLabel('', '')).toBe('this kernel');
  });

  it('says how many requests wait there, or why it is gone', () => {
    expect(sectionState(null, 2)).toBe('2 pending');
    expect(sectionState(null, 0)).toBe('no pending requests');
    expect(sectionState('kernel restarted', 3)).toBe('kernel restarted');
    expect(goneNote('kernel stopped')).toMatch(/^kernel stopped: .*`%acp connect` again\.$/);
  });

  it("comes first when it is the active notebook's, the others keep their order", () => {
    expect(orderSections(['a', 'b', 'c'], 'b')).toEqual(['b', 'a', 'c']);
    expect(orderSections(['a', 'b'], null)).toEqual(['a', 'b']);
  });

  it('puts every notebook with requests waiting first, the active one first among them', () => {
    const waiting: Record<string, number> = { a: 0, b: 0, c: 2, d: 1 };
    const pending = (s: string): number => waiting[s];
    expect(orderSections(['a', 'b', 'c', 'd'], 'b', pending)).toEqual(['c', 'd', 'b', 'a']);
    waiting.b = 1;
    expect(orderSections(['a', 'b', 'c', 'd'], 'b', pending)).toEqual(['b', 'c', 'd', 'a']);
  });

  it('is open as chosen, else when active, waiting, or alone', () => {
    expect(isExpanded(false, true, 5, 1)).toBe(false);
    expect(isExpanded(true, false, 0, 3)).toBe(true);
    expect(isExpanded(undefined, true, 0, 3)).toBe(true);
    expect(isExpanded(undefined, false, 1, 3)).toBe(true);
    expect(isExpanded(undefined, false, 0, 1)).toBe(true);
    expect(isExpanded(undefined, false, 0, 2)).toBe(false);
  });
});

describe('widenedSizes', () => {
  it('gives the panel its width and shrinks the others in proportion', () => {
    const sizes = widenedSizes([0.1, 0.6, 0.3], 2, 1200, 360, 380);
    expect(sizes).not.toBeNull();
    const [left, main, right] = sizes!;
    expect(right).toBeCloseTo(380 / 1200);
    expect(left + main + right).toBeCloseTo(1);
    expect(main / left).toBeCloseTo(6);
  });

  it('changes nothing when wide enough, the window too narrow, or the part unknown', () => {
    expect(widenedSizes([0.5, 0.5], 1, 1200, 400, 380)).toBeNull();
    expect(widenedSizes([0.5, 0.5], 1, 700, 300, 380)).toBeNull();
    expect(widenedSizes([0.5, 0.5], -1, 1200, 300, 380)).toBeNull();
    expect(widenedSizes([0, 1], 1, 1200, 300, 380)).toBeNull();
  });
});
