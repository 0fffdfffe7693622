import '@xterm/xterm/css/xterm.css';
import './base.css';
import './panel.css';
