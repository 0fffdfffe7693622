/**
 * The side panel's words and numbers, without a browser: what a kernel's section and the
 * panel's header say, the sidebar tab's badge, the order of the sections, which are open, and
 * the sidebar's first width.
 */

/** Why a kernel's part of the panel is no longer live. */
export type GoneReason = 'kernel restarted' | 'kernel stopped' | 'kernel changed';

/** A section's name: its notebook's file name, else its kernel's id, else 'this kernel'. */
export function sectionLabel(path: string, kernelId: string): string {
  if (path) {
    const parts = path.split('/');
    return parts[parts.length - 1] || path;
  }
  return kernelId ? `kernel ${kernelId.slice(0, 8)}` : 'this kernel';
}

/** What a section's header says on its right. */
export function sectionState(gone: GoneReason | null, pending: number): string {
  if (gone) {
    return gone;
  }
  return pending > 0 ? `${pending} pending` : 'no pending requests';
}

/** What a gone section says instead of its views. */
export function goneNote(reason: GoneReason): string {
  return (
    `${reason}: its agents, sessions, pending requests and terminals are gone. ` +
    'Run `%load_ext acp_notebook` and `%acp connect` again.'
  );
}

/** Pending requests of all sections, and how many sections have any. */
export function pendingTotals(pendings: readonly number[]): { pending: number; waiting: number } {
  return {
    pending: pendings.reduce((sum, n) => sum + n, 0),
    waiting: pendings.filter(n => n > 0).length
  };
}

/** The panel's header line. */
export function panelHeader(pending: number, waiting: number): string {
  if (pending <= 0) {
    return 'ACP agents';
  }
  return `ACP agents · ${pending} pending` + (waiting > 1 ? ` in ${waiting} notebooks` : '');
}

/** The sidebar tab's tooltip. */
export function panelCaption(pending: number): string {
  return pending > 0 ? `ACP agents (${pending} pending)` : 'ACP agents';
}

/**
 * The tab's dataset with the badge set (or removed): whatever else the shell put there
 * (data-id, data-jptablabel) stays. The badge is drawn from data-acp-badge by panel.css.
 */
export function badgeDataset(
  dataset: Readonly<Record<string, string>>,
  pending: number
): Record<string, string> {
  const next: Record<string, string> = { ...dataset };
  delete next['acp-badge'];
  delete next['acp-pending'];
  if (pending > 0) {
    next['acp-badge'] = String(pending);
  }
  return next;
}

/**
 * The sections with requests waiting first (a request in another notebook must not sit below
 * the active notebook's log), the active notebook's first among equals, then the others in the
 * order they came.
 */
export function orderSections<T>(
  sections: readonly T[],
  active: T | null,
  pending: (section: T) => number = () => 0
): T[] {
  const first = active ? [active, ...sections.filter(s => s !== active)] : [...sections];
  return [...first.filter(s => pending(s) > 0), ...first.filter(s => !(pending(s) > 0))];
}

/**
 * Whether a section is open: as the person chose, else when it is the active notebook's, has
 * pending requests, or is the only one.
 */
export function isExpanded(
  chosen: boolean | undefined,
  active: boolean,
  pending: number,
  sections: number
): boolean {
  if (chosen !== undefined) {
    return chosen;
  }
  return active || pending > 0 || sections === 1;
}

/**
 * New relative sizes of a split panel whose `index`th part (now `mine` px of `total`) should
 * get `wide` px, the others shrinking in proportion; null when nothing should change (already
 * wide enough, or the window too narrow to give that much).
 */
export function widenedSizes(
  sizes: readonly number[],
  index: number,
  total: number,
  mine: number,
  wide: number
): number[] | null {
  if (index < 0 || index >= sizes.length || mine >= wide || total < 2 * wide) {
    return null;
  }
  const share = wide / total;
  const others = 1 - sizes[index];
  if (others <= 0) {
    return null;
  }
  return sizes.map((size, i) => (i === index ? share : (size * (1 - share)) / others));
}
