/**
 * JupyterLab whose kernels run behind a Kernel Gateway 3 on 127.0.0.1 (tests/test_browser.py's
 * server `gateway`, the gateway's stock settings): the turn in gateway_turn.ts. The server's config
 * has the relay fix of docs/gateway_relay_config.py, as docs/deploying.md tells an operator to
 * add: without it a new kernel's first connection hung now and then (docs/gateway-relay.md).
 */
import { gatewayTurn } from './gateway_turn';
import { test } from './galata';
import { NO_OWN_SERVER, ownServer } from './own_server';

const server = ownServer('gateway');
test.use({ baseURL: server });
test.skip(!server, NO_OWN_SERVER);

gatewayTurn('a Kernel Gateway');
