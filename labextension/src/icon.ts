import { LabIcon } from '@jupyterlab/ui-components';

/** ACP icon: a speech bubble holding a prompt chevron (drawn for this project). */
const ACP_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2h-7l-5 4v-4H4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm2.3 4.2-1.1 1.1L7.9 11l-2.7 2.7 1.1 1.1L10.1 11 6.3 7.2zM11 13.5v1.6h6v-1.6h-6z"/>
</svg>`;

export const acpIcon = new LabIcon({ name: 'acp-notebook:acp', svgstr: ACP_SVG });
