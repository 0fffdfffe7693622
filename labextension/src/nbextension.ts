/**
 * The widget module for front ends that load widgets with RequireJS instead of JupyterLab
 * extensions: the classic notebook (nbclassic) and VS Code with a local kernel. nbextension.mjs
 * bundles this file into one AMD module, `share/jupyter/nbextensions/acp-notebook/index.js`,
 * which needs only `@jupyter-widgets/base` from the page.
 *
 * It carries the live terminal (the same view as in JupyterLab) and a side panel model with no
 * sidebar: the model tells the kernel that this front end renders the extension's views but
 * cannot show the panel, so `%acp panel` prints its text and cards stay in their cells.
 */
import { DOMWidgetModel, IBackboneModelOptions } from '@jupyter-widgets/base';
import xtermCss from '@xterm/xterm/css/xterm.css';

import baseCss from '../style/base.css';
import classicCss from '../style/classic.css';
import { keepFolds } from './folds';
import { isClassicNotebook, pageUnstyled, setUnstyledPage } from './page';
import { IPanelRendered } from './protocol';
import { TerminalModel, TerminalView } from './terminal';
import { panelModelDefaults } from './version';

const STYLE_ID = 'acp-notebook-nbextension-style';

/** Add the stylesheets once per page (a module may be loaded again by another manager). */
export function addStyles(doc: Document): void {
  if (doc.getElementById(STYLE_ID)) {
    return;
  }
  const style = doc.createElement('style');
  style.id = STYLE_ID;
  style.textContent = [xtermCss, baseCss, classicCss].join('\n');
  doc.head.appendChild(style);
}

type ModelAttributes = ReturnType<DOMWidgetModel['defaults']>;

/** The side panel's model where there is no sidebar: says so once, renders nothing. */
export class AgentPanelModel extends DOMWidgetModel {
  defaults(): ModelAttributes {
    return {
      ...super.defaults(),
      ...panelModelDefaults()
    };
  }

  initialize(attributes: ModelAttributes, options: IBackboneModelOptions): void {
    super.initialize(attributes, options);
    const rendered: IPanelRendered = { type: 'rendered', sidebar: false };
    if (pageUnstyled()) {
      rendered.unstyled = true; // VS Code: a turn with no terminal must show once too
    }
    this.send({ ...rendered }, {});
  }
}

const classic = isClassicNotebook(window);
setUnstyledPage(!classic);
addStyles(document);
// from when this module loads (the first view of ours), as in JupyterLab (src/folds.ts)
keepFolds(document);

export { TerminalModel, TerminalView };
