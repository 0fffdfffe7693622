import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IJupyterWidgetRegistry, WidgetModel } from '@jupyter-widgets/base';

import { keepFolds } from './folds';
import { highlightAcpCells } from './highlight';
import { identityName, setUserName } from './identity';
import { IClosableModel, releaseClosedComms } from './leaks';
import { AgentPanelModel, AgentPanelView, getSidePanel, IShellLike } from './panel';
import { TerminalModel, TerminalView } from './terminal';
import { MODULE_NAME, MODULE_VERSION } from './version';

const SHOW_PANEL = 'acp-notebook:show-panel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'acp-notebook:plugin',
  description: 'Live terminals and the agent side panel for acp_notebook.',
  autoStart: true,
  requires: [IJupyterWidgetRegistry],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    registry: IJupyterWidgetRegistry,
    palette: ICommandPalette | null
  ) => {
    // a re-run cell's closed widgets would otherwise stay in the tab (src/leaks.ts)
    releaseClosedComms(WidgetModel.prototype as unknown as IClosableModel);
    // a fold someone toggled in a turn stays so when the kernel sends it again (src/folds.ts)
    keepFolds(document);

    registry.registerWidget({
      name: MODULE_NAME,
      version: MODULE_VERSION,
      exports: { TerminalModel, TerminalView, AgentPanelModel, AgentPanelView }
    });

    // the kernel says who clicked a card from the messages' username (src/identity.ts)
    const user = app.serviceManager.user;
    void user.ready.then(() => setUserName(identityName(user.identity)));

    const panel = getSidePanel();
    const shell = app.shell as unknown as IShellLike;
    panel.setShell(shell);
    shell.add(panel, 'right', { rank: 600 });
    highlightAcpCells(shell);

    app.commands.addCommand(SHOW_PANEL, {
      label: 'ACP: Show agent panel',
      caption: 'Open the ACP agent panel in the right sidebar',
      icon: args => (args['isPalette'] ? undefined : panel.title.icon),
      execute: () => panel.reveal()
    });
    palette?.addItem({ command: SHOW_PANEL, category: 'ACP' });
  }
};

export default plugin;
