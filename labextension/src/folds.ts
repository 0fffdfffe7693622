/**
 * A fold (`<details>`) a person opened or closed in a turn's view stays as they left it while
 * the kernel goes on sending that view.
 *
 * ipywidgets' HTML view replaces its content whole (`innerHTML`) on every change of its value,
 * and the kernel sends a group of tool-call rows again whenever one call of the group changes
 * (src/../acp_notebook/_widgets/_calls.py): a diff someone folded, or an input they opened,
 * went back to how the kernel wrote it as soon as another call moved.
 *
 * So a person's toggle is remembered for the turn it happened in, under a key that survives a
 * re-render: the tool call's name (`data-acp-call`, on a row or on a call's header) and the
 * fold's place among that call's folds, or, outside any call, its place among the turn's other
 * folds. The first toggle in a turn starts watching that turn's DOM; new content gets the
 * remembered states before it is painted (a MutationObserver's callback runs before the next
 * frame). Folds nobody touched stay as the kernel writes them, and a turn nobody touched costs
 * nothing.
 */

/** The element of one turn's view (ipywidgets adds the kernel's class to it). */
export const TURN = '.acp-turn';
/** A tool call: a row of a group, or the box of a call with widgets of its own. */
export const CALL = '.acp-tool-call';
/** Where the kernel names a tool call. */
export const CALL_NAME = 'data-acp-call';
/** Live terminals: their DOM changes all the time and never holds a fold of ours. */
const TERMINAL = '.xterm';

/** The smallest part of the DOM this module uses (what tests can stand in for). */
export interface IFoldLike {
  open: boolean;
  closest(selectors: string): IElementLike | null;
}

export interface IElementLike {
  closest(selectors: string): IElementLike | null;
  getAttribute(name: string): string | null;
  querySelector(selectors: string): IElementLike | null;
}

/** The name of the call a fold belongs to ('' outside any call, null for a call unnamed). */
function callOf(fold: IFoldLike): string | null {
  const call = fold.closest(CALL);
  if (call === null) {
    return '';
  }
  const named = call.getAttribute(CALL_NAME) !== null ? call : call.querySelector(`[${CALL_NAME}]`);
  const name = named?.getAttribute(CALL_NAME);
  return name === null || name === undefined ? null : `call:${name}`;
}

/**
 * The keys of a turn's folds, in document order: `<call>#<n>` for the n-th fold of a call,
 * `#<n>` for the n-th fold outside any call; null for a fold of a call with no name.
 */
export function foldKeys(folds: Iterable<IFoldLike>): (string | null)[] {
  const seen = new Map<string, number>();
  const keys: (string | null)[] = [];
  for (const fold of folds) {
    const owner = callOf(fold);
    if (owner === null) {
      keys.push(null);
      continue;
    }
    const n = seen.get(owner) ?? 0;
    seen.set(owner, n + 1);
    keys.push(`${owner}#${n}`);
  }
  return keys;
}

/** What people toggled in one turn, and the observer that puts it back. */
class Kept {
  readonly states = new Map<string, boolean>();
  private readonly observer: MutationObserver;

  constructor(private readonly turn: Element) {
    this.observer = new MutationObserver(records => this.changed(records));
    this.observer.observe(turn, { childList: true, subtree: true });
  }

  /** Remember `fold`'s state as a person left it. */
  remember(fold: HTMLDetailsElement): void {
    const folds = this.folds();
    const key = foldKeys(folds)[folds.indexOf(fold)];
    if (key !== null && key !== undefined) {
      this.states.set(key, fold.open);
    }
  }

  private folds(): HTMLDetailsElement[] {
    return Array.from(this.turn.querySelectorAll('details'));
  }

  private changed(records: MutationRecord[]): void {
    const relevant = records.some(
      record => record.target instanceof Element && record.target.closest(TERMINAL) === null
    );
    if (relevant) {
      this.restore();
    }
  }

  /** Give every remembered fold the state a person left it in. */
  restore(): void {
    const folds = this.folds();
    foldKeys(folds).forEach((key, i) => {
      const state = key === null ? undefined : this.states.get(key);
      if (state !== undefined && folds[i].open !== state) {
        folds[i].open = state;
      }
    });
  }
}

const kept = new WeakMap<Element, Kept>();
/** Folds whose summary a person just clicked (a toggle of ours or of the kernel's is not one). */
const touched = new WeakSet<Element>();

const KEEPING = Symbol.for('acp-notebook:keeps-folds');

/**
 * Keep the folds people toggle in turns' views of `root` (the page's document). Listens once;
 * returns whether it started listening now.
 */
export function keepFolds(root: Document): boolean {
  const marked = root as Document & { [KEEPING]?: boolean };
  if (marked[KEEPING]) {
    return false;
  }
  marked[KEEPING] = true;
  // a person toggles a fold with its summary: a click, or a key that makes one
  root.addEventListener(
    'click',
    event => {
      const target = event.target instanceof Element ? event.target : null;
      const fold = target?.closest('summary')?.parentElement;
      if (fold instanceof HTMLDetailsElement && fold.closest(TURN) !== null) {
        touched.add(fold);
      }
    },
    true
  );
  // `toggle` does not bubble, but a listener that captures sees it
  root.addEventListener(
    'toggle',
    event => {
      const fold = event.target;
      if (!(fold instanceof HTMLDetailsElement) || !touched.has(fold)) {
        return;
      }
      touched.delete(fold);
      const turn = fold.closest(TURN);
      if (turn === null) {
        return;
      }
      let turnKept = kept.get(turn);
      if (turnKept === undefined) {
        turnKept = new Kept(turn);
        kept.set(turn, turnKept);
      }
      turnKept.remember(fold);
    },
    true
  );
  return true;
}
