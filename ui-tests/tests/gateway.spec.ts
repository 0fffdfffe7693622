/**
 * JupyterLab whose kernels run behind a Kernel Gateway 3 on 127.0.0.1 (tests/test_browser.py's
 * server `gateway`, stock settings): the turn in gateway_turn.ts.
 */
import { gatewayTurn } from './gateway_turn';
import { test } from './galata';
import { ownServer } from './own_server';

test.use({ baseURL: ownServer('gateway') });

gatewayTurn('a Kernel Gateway');
