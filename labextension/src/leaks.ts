/**
 * A widget model that is closed lets go of its comm's callbacks, so that a closed model, its
 * views and their DOM can be collected.
 *
 * JupyterLab 4.6's comm (`CommHandler` in @jupyterlab/services) connects a slot to its
 * kernel's `statusChanged` when it is made and never disconnects it: every comm a kernel
 * connection had stays reachable for as long as the connection lives, with its `onMsg` and
 * `onClose`, which ipywidgets binds to the model. A closed model then keeps every view it ever
 * had (each view subscribes to its model's `msg:custom` and never unsubscribes), DOM and all.
 * A cell re-run closes its widgets and makes new ones: the tab kept the old views, some 13,000
 * DOM nodes for each run of a turn of 1,000 tool calls (bench/bench_browser_toolcalls.py).
 *
 * A closed model's comm gets no further message, so its two callbacks are replaced by no-ops
 * once `close` has run: the comm object alone stays where JupyterLab keeps it.
 */

/** The comm callbacks JupyterLab keeps (`Kernel.IComm`), as far as releasing them goes. */
export interface IKernelCommLike {
  onMsg?: unknown;
  onClose?: unknown;
}

/** A widget model as this module sees it: its comm (ipywidgets' shim around JupyterLab's). */
export interface IClosableModel {
  comm?: { jsServicesComm?: IKernelCommLike } | null;
  close(...args: unknown[]): unknown;
}

const RELEASING = Symbol.for('acp-notebook:releases-closed-comms');

function ignore(): void {
  // a closed model's comm: nothing more to deliver
}

/**
 * Make `prototype.close` (ipywidgets' `WidgetModel.prototype`, shared by every widget of the
 * page) release the model's comm callbacks after closing it. Patches once; returns whether it
 * patched now.
 */
export function releaseClosedComms(prototype: IClosableModel): boolean {
  const marked = prototype as IClosableModel & { [RELEASING]?: boolean };
  if (marked[RELEASING]) {
    return false;
  }
  const close = prototype.close;
  marked[RELEASING] = true;
  prototype.close = function (this: IClosableModel, ...args: unknown[]): unknown {
    const comm = this.comm?.jsServicesComm; // ipywidgets deletes `comm` while closing
    const result = close.apply(this, args);
    if (comm) {
      comm.onMsg = ignore;
      comm.onClose = ignore;
    }
    return result;
  };
  return true;
}
